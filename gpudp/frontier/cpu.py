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
from .nodes import node_hash, node_key

__all__ = ["kernels"]

#: ``child`` -> (expand, child_host)
CACHE: dict = {}

key_c = njit(node_key, cache=True)
hash_c = njit(node_hash, cache=True)

_EXPAND_CPU = '''
def expand(m, level, best, slack, f0, f1, bits, data, nvars, sym, kb, table, used, o0, o1, obits):
    """Expand ``m`` nodes of ``level``; write the survivors; return (count, best, best son).

    ``bits`` and ``obits`` are node-major: ``bits[i, w]`` is word ``w`` of node ``i``."""
    last = level + 1 >= nvars
    mask = len(table) - 1
    nused = 0
    wl = level >> 5
    bp = level & 31
    pw = (level - 1) >> 5
    pb = (level - 1) & 31
    cnt = 0
    barg = -1
    for i in range(m):
        blocked = sym[level] != 0 and ((bits[i, pw] >> pb) & 1) == 0
        for t in range(2):
            take = 1 - t
            if take == 1 and blocked:
                continue
            ok, c0, c1, u, lo = child_c(level, f0[i], f1[i], take, data, nvars)
            if not ok:
                continue
            if lo > best:
                best = lo
                barg = 2 * i + t
            if not last and u > best - slack:
                if kb > 0:  # drop exact duplicates (same fields, same next-copy bit)
                    key = _key_c(c0, c1, take if sym[level + 1] != 0 else 0, kb)
                    slot = _hash_c(key, mask)
                    while table[slot] != -1 and table[slot] != key:
                        slot = (slot + 1) & mask
                    if table[slot] == key:
                        continue
                    table[slot] = key
                    used[nused] = slot
                    nused += 1
                o0[cnt] = c0
                o1[cnt] = c1
                for w in range(wl):
                    obits[cnt, w] = bits[i, w]
                prev = bits[i, wl] if bp != 0 else 0
                obits[cnt, wl] = prev | (take << bp)
                cnt += 1
    for j in range(nused):
        table[used[j]] = -1
    return cnt, best, barg
'''

# the problem's child called from the host (the incumbent's fields): a kernel of its own, so that it
# is cached too (the child itself, made by exec, cannot be)
_CHILD_HOST = """
def child_host(level, f0, f1, take, data, nvars):
    return child_c(level, f0, f1, take, data, nvars)
"""


def kernels(child):
    """``expand`` and ``child_host`` for the problem's ``child`` (see :data:`_EXPAND_CPU`)."""
    if child in CACHE:
        return CACHE[child]
    ns = {"child_c": njit(child), "_key_c": key_c, "_hash_c": hash_c}
    kern = (
        jit_generated(_EXPAND_CPU, "expand", ns, njit, "cpu"),
        jit_generated(_CHILD_HOST, "child_host", {"child_c": ns["child_c"]}, njit, "cpu"),
    )
    CACHE[child] = kern
    return kern
