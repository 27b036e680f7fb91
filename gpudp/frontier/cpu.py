"""The frontier engine's CPU path: the host ``expand`` kernel and the problem's ``child`` called
from the host.

The kernels are generated source compiled through the persistent cache (:mod:`gpudp.cache`): numba
cannot cache closures, so the problem's ``child`` is a global of the generated module (its code, and
that of everything it calls, is in the cache entry's hash), and a second process loads the compiled
kernels instead of compiling them.
"""

from __future__ import annotations

from ..cache import jit_generated
from ..jit import njit
from ..kernel import factory, load
from . import cpu_code
from .nodes import node_hash, node_key

__all__ = ["kernels"]

key_c = njit(node_key, cache=True)
hash_c = njit(node_hash, cache=True)


@factory("frontier.cpu")
def kernels(child):
    """``expand`` and ``child_host`` for the problem's ``child`` (:mod:`gpudp.frontier.cpu_code`)."""
    ns = {"child_c": njit(child), "_key_c": key_c, "_hash_c": hash_c}
    return (
        load(cpu_code.expand, ns, jit_generated, jit=njit, kind="cpu"),
        load(cpu_code.child_host, {"child_c": ns["child_c"]}, jit_generated, jit=njit, kind="cpu"),
    )
