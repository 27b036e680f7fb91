"""The two-list stages on the CPU (numba, parallel over the A-blocks)."""

from __future__ import annotations

import time

import numpy as np
from numba import prange

from gpudp import memory
from gpudp import primitives as pr
from gpudp.cache import jit_generated
from gpudp.errors import InputError
from gpudp.jit import njit
from gpudp.kernel import factory, load

from . import cpu_code
from .kernels import INT64_MAX, build

#: the pruning block size ``e`` unless the caller gives one
BLOCK = 2048


@factory("subset_sum.cpu")
def _cpu_funcs():
    ns = build(njit, pr.upper_bound_cpu)
    ns["prange"] = prange
    search = load(cpu_code.search, ns, jit_generated, jit=njit, kind="cpu", parallel=True)
    prune = load(cpu_code.prune, ns, jit_generated, jit=njit, kind="cpu", parallel=True)
    narrow = load(cpu_code.narrow_host, ns, jit_generated, jit=njit, kind="cpu")
    return ns["ips"], narrow, search, prune


def narrow_cpu(a, b, cap, e, i, j):
    """ISS narrowing of block pair (i, j) on the CPU: (q0, q1, a0, a1); see the module docstring."""
    return _cpu_funcs()[1](a, np.int64(len(a)), b, np.int64(len(b)), np.int64(cap), np.int64(e), i, j)


#: sums of list A the search takes between two looks at the time limit and the progress bar
SEARCH_CHUNK_SUMS = 1 << 22


def generate(ws, cap, sizes, tick=None):
    """List of the subset sums <= cap of ``ws`` with their masks; ``tick(k)`` after each item's merge
    (``k`` sums added): the progress bar and the time limit."""
    final, other = sizes
    bufs = [(np.empty(final, np.int64), np.empty(final, np.uint32))]
    bufs.append((np.empty(max(other, 1), np.int64), np.empty(max(other, 1), np.uint32)))
    h = len(ws)
    src = bufs[h % 2]
    src[0][0] = 0
    src[1][0] = 0
    n = 1
    for s, w in enumerate(ws):
        dst = bufs[(h - s - 1) % 2]
        k = pr.upper_bound_cpu(src[0], 0, n, cap - w)
        pr.merge_shifted_cpu(src[0], src[1], n, src[0], src[1], k, w, np.uint32(1 << s), dst[0], dst[1])
        n += k
        src = dst
        if tick is not None:
            tick(k)
    return src[0][:n], src[1][:n]


def generate_host(ws, cap, sizes):
    """:func:`generate`'s list and masks as arrays of their own (not views of its buffers)."""
    a, m = generate(ws, cap, sizes)
    return a.copy(), m.copy()


def free_memory(need=0) -> tuple[int, str]:
    """(free bytes, where): what this process may still allocate on the host
    (:func:`gpudp.memory.available_memory`: the OS's figure, the cgroup's memory.max and ulimit -v /
    -d, the least of them); ``need`` is not asked for here."""
    return memory.available_memory(), f"in host memory for this process ({memory.describe()})"


def prune_pairs(a, b, cap, e):
    ka = -(-len(a) // e)
    jlo = np.empty(ka, np.int64)
    cnt = np.empty(ka, np.int64)
    _cpu_funcs()[3](a, len(a), b, len(b), cap, e, jlo, cnt)
    return jlo, cnt


def two_list(wa, wb, cap, e, plan, tick=None):
    """Generate both lists, prune and search: ``(gap, mask_a, mask_b, pairs, (na, nb), stages)``.

    ``tick(k)`` is called after each generation step and each chunk of the search (``k`` sums done):
    when it raises (a time limit), the search's best pair so far goes with the exception as
    ``stop.partial = (gap, mask_a, mask_b)`` (a sum found, not proven the best)."""
    t0 = time.perf_counter()
    try:
        a, am = generate(wa, cap, plan["a_buffers"], tick)
        b, bm = generate(wb, cap, plan["b_buffers"], tick)
        t1 = time.perf_counter()
        ka = -(-len(a) // e)
        out_g = np.empty(ka, np.int64)
        out_i = np.empty(ka, np.int64)
        out_q = np.empty(ka, np.int64)
        out_cnt = np.empty(ka, np.int64)
    except MemoryError:  # the plan fitted, but the memory went elsewhere meanwhile
        raise InputError(
            "weights",
            f"out of host memory building the lists ({plan['peak'] / 2**30:.2f} GiB planned; "
            f"{memory.describe()})",
        ) from None
    step = max(SEARCH_CHUNK_SUMS // e, 1)  # A-blocks a chunk
    for i0 in range(0, ka, step):
        i1 = min(i0 + step, ka)
        _cpu_funcs()[2](a, len(a), b, len(b), cap, e, i0, i1, out_g, out_i, out_q, out_cnt)
        if tick is not None and i1 < ka:
            try:
                tick(min(i1 * e, len(a)) - i0 * e)
            except BaseException as stop:
                stop.partial = _best_pair(out_g[:i1], out_i, out_q, am, bm)
                raise
    gap, mask_a, mask_b = _best_pair(out_g, out_i, out_q, am, bm)
    stages = {"generate_s": t1 - t0, "prune_search_s": time.perf_counter() - t1}
    return gap, mask_a, mask_b, int(out_cnt.sum()), (len(a), len(b)), stages


def _best_pair(out_g, out_i, out_q, am, bm):
    """``(gap, mask_a, mask_b)`` of the least gap among the searched A-blocks ``out_g`` covers;
    ``(INT64_MAX, 0, 0)`` when none found a pair."""
    best = int(np.argmin(out_g)) if len(out_g) else 0
    if not len(out_g) or int(out_q[best]) < 0:
        return INT64_MAX, 0, 0
    return int(out_g[best]), int(am[int(out_i[best])]), int(bm[len(bm) - 1 - int(out_q[best])])
