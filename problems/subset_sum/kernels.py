"""The two-list block functions (:mod:`.block_code`), one code for the CPU (njit) and the GPU (cuda
device functions), compiled by each backend's module of this package."""

from __future__ import annotations

from gpudp.codegen import compile_source
from gpudp.kernel import load

from . import block_code
from .block_code import INT64_MAX

#: in dependency order: each is a global of those after it
_BLOCK_FUNCS = (
    block_code.owned,
    block_code.c_lower,
    block_code.ips,
    block_code.narrow,
    block_code.pair_search,
)


def build(jit, upper_bound):
    """The block functions compiled with ``jit`` (each a global of the next): a namespace holding
    them, ``upper_bound`` and ``INT64_MAX``."""
    ns = {"upper_bound": upper_bound, "INT64_MAX": INT64_MAX}
    for fn in _BLOCK_FUNCS:
        ns[fn.__name__] = jit(load(fn, dict(ns), compile_source))
    return ns
