"""Subset sum by the parallel two-list algorithm of Wan, Li, Liu & Li (Concurrency and Computation, 2014).

``solve(weights, target)`` finds a subset of non-negative integers summing exactly to ``target`` (or
proves that none exists, returning the closest sum below it as a witness); ``maximize(weights,
capacity)`` finds the largest subset sum that does not exceed ``capacity``. Both return the subset
(indices in the caller's order) in a checked :class:`gpudp.Solution`.

The two-list method (Horowitz & Sahni) on the GPU, as in Wan et al.:

* generation (their IGS): the usable items (0 < w <= capacity) are sorted non-increasingly and dealt
  alternately into two halves; each half's list of subset sums is built item by item by merging the
  sorted list A with A + w (a merge-path merge, :mod:`gpudp.primitives`), and the sums that exceed
  the capacity are never formed (only the prefix of A with a <= capacity - w is shifted). Each sum
  carries a uint32 bit mask of its items, so the subset is recovered, not only the answer.
* pruning (their IPS): list A is cut into blocks of ``e`` sums, and the second list is read as
  C = capacity - B, ascending. A-block i owns the values [A[i e], A[(i+1) e]); it is paired only with
  the C-blocks whose value range meets that interval, found with two binary searches; the pairs form a
  staircase, at most kA + kC - 1 of them.
* search (their ISS): for each pair, four binary searches narrow the C-block to the values the A-block
  owns and the A-block to the predecessors of those values; one thread then walks the two narrowed
  runs, finding for each c the largest a <= c. The least gap c - a over all pairs gives the best sum
  capacity - gap; gap 0 means an exact hit. ``solve`` is ``maximize`` with capacity = target.

The CPU backend (numba) runs the same functions; zero weights never change a sum and are left out of
the lists (and of the returned subset).
"""

from __future__ import annotations

import functools
import math
import re
import time
from math import comb

import numpy as np
from numba import prange

from gpudp import memory
from gpudp import primitives as pr
from gpudp.backends import device_name, resolve
from gpudp.backends.cpu import njit
from gpudp.cache import jit_generated
from gpudp.codegen import compile_source
from gpudp.errors import InputError
from gpudp.inputs import read_text
from gpudp.solution import Solution, Stats

__all__ = ["solve", "maximize", "generate_list", "prune_pairs", "narrow_cpu", "plan_memory", "MAX_ITEMS"]

MAX_ITEMS = 64  # two halves of at most 32 items: one uint32 mask per sum
INT64_MAX = 2**63 - 1
BYTES_PER_SUM = 12  # int64 sum + uint32 mask
BLOCK_CUDA = 256
BLOCK_CPU = 2048
SEARCH_THREADS = 256

# numba.cuda, bound on first use of the GPU kernels (importing it is not free).
cuda = None


# ----------------------------------------------------------------------------------------------------
# The block functions, one source for the CPU (njit) and the GPU (cuda device functions).
# C[q] = cap - B[nb - 1 - q] is the second list read ascending; it is never materialised.
#
# Everything is generated source with its constants and callees as globals (numba cannot cache
# closures): the block functions are compiled in memory (the kernels inline them), the kernels through
# the persistent cache (gpudp.cache on the CPU, gpudp.backends.cuda.generated_kernel on the GPU), so a
# second process loads the kernels instead of compiling them.

_OWNED = '''
def owned(a, na, cap, e, i):
    """The values [lo, hi) whose predecessor in A lies in A-block i."""
    nxt = (i + 1) * e
    hi = cap + 1
    if nxt < na:
        hi = a[nxt]
    return a[i * e], hi
'''


_C_LOWER = '''
def c_lower(b, nb, cap, lo, hi, v):
    """First q in [lo, hi) with C[q] >= v (hi when none)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if cap - b[nb - 1 - mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo
'''


_IPS = '''
def ips(a, na, b, nb, cap, e, i):
    """IPS: the C-blocks [jlo, jlo + count) whose values meet A-block i's owned interval."""
    lo, hi = owned(a, na, cap, e, i)
    kc = (nb + e - 1) // e
    x = 0
    y = kc
    while x < y:  # first C-block whose last value >= lo
        mid = (x + y) >> 1
        last = (mid + 1) * e
        if last > nb:
            last = nb
        if cap - b[nb - last] < lo:
            x = mid + 1
        else:
            y = mid
    jlo = x
    y = kc
    while x < y:  # first C-block whose first value >= hi
        mid = (x + y) >> 1
        if cap - b[nb - 1 - mid * e] < hi:
            x = mid + 1
        else:
            y = mid
    return jlo, x - jlo
'''


_NARROW = '''
def narrow(a, na, b, nb, cap, e, i, j):
    """ISS: four binary searches. C-block j is cut to [q0, q1), the values A-block i owns; A-block
    i is cut to [a0, a1), from the predecessor of C[q0] to that of C[q1 - 1] (empty: q0 == q1)."""
    lo, hi = owned(a, na, cap, e, i)
    qe = (j + 1) * e
    if qe > nb:
        qe = nb
    q0 = c_lower(b, nb, cap, j * e, qe, lo)
    q1 = c_lower(b, nb, cap, q0, qe, hi)
    if q0 == q1:
        return q0, q1, i * e, i * e
    ae = (i + 1) * e
    if ae > na:
        ae = na
    a0 = upper_bound(a, i * e, ae, cap - b[nb - 1 - q0]) - 1
    a1 = upper_bound(a, a0 + 1, ae, cap - b[nb - q1])
    return q0, q1, a0, a1
'''


_PAIR_SEARCH = '''
def pair_search(a, na, b, nb, cap, e, i, j):
    """The two-list walk of one block pair: least gap C[q] - a (>= 0) over its narrowed runs, with
    where it is; gap INT64_MAX when the pair holds nothing."""
    q0, q1, ia, a1 = narrow(a, na, b, nb, cap, e, i, j)
    best = INT64_MAX
    bi = -1
    bq = -1
    for q in range(q0, q1):
        c = cap - b[nb - 1 - q]
        while ia + 1 < a1 and a[ia + 1] <= c:
            ia += 1
        g = c - a[ia]
        if g < best:
            best = g
            bi = ia
            bq = q
            if g == 0:
                break
    return best, bi, bq
'''


#: in dependency order: each is a global of those after it
_BLOCK_FUNCS = (_OWNED, _C_LOWER, _IPS, _NARROW, _PAIR_SEARCH)


def _build(jit, upper_bound):
    """The block functions compiled with ``jit`` (each a global of the next): a namespace holding
    them, ``upper_bound`` and ``INT64_MAX``."""
    ns = {"upper_bound": upper_bound, "INT64_MAX": INT64_MAX}
    for src in _BLOCK_FUNCS:
        name = src.split("(", 1)[0].split()[-1]
        ns[name] = jit(compile_source(src, name, dict(ns)))
    return ns


_SEARCH_CPU = """
def search(a, na, b, nb, cap, e, out_g, out_i, out_q, out_cnt):
    ka = (na + e - 1) // e
    for i in prange(ka):
        jlo, cnt = ips(a, na, b, nb, cap, e, i)
        best = INT64_MAX
        bi = -1
        bq = -1
        for j in range(jlo, jlo + cnt):
            g, gi, gq = pair_search(a, na, b, nb, cap, e, i, j)
            if g < best:
                best = g
                bi = gi
                bq = gq
        out_g[i] = best
        out_i[i] = bi
        out_q[i] = bq
        out_cnt[i] = cnt
"""

_PRUNE_CPU = """
def prune(a, na, b, nb, cap, e, out_jlo, out_cnt):
    for i in prange((na + e - 1) // e):
        out_jlo[i], out_cnt[i] = ips(a, na, b, nb, cap, e, i)
"""

_NARROW_HOST = """
def narrow_host(a, na, b, nb, cap, e, i, j):
    return narrow(a, na, b, nb, cap, e, i, j)
"""


@functools.cache
def _cpu_funcs():
    ns = _build(njit, pr.upper_bound_cpu)
    ns["prange"] = prange
    search = jit_generated(_SEARCH_CPU, "search", ns, njit, "cpu", parallel=True)
    prune = jit_generated(_PRUNE_CPU, "prune", ns, njit, "cpu", parallel=True)
    narrow = jit_generated(_NARROW_HOST, "narrow_host", ns, njit, "cpu")
    return ns["ips"], narrow, search, prune


def _geometry():
    """(merge threads, merge items, scan threads, search threads): small under the simulator so that
    tiny instances still span several blocks."""
    from gpudp.backends.cuda import is_simulator

    if is_simulator():
        return 4, 3, 8, 8
    return pr.MERGE_THREADS, pr.MERGE_ITEMS, pr.SCAN_THREADS, SEARCH_THREADS


_START_LIST = """
def start_list(keys, pay, lens):
    if cuda.grid(1) == 0:
        keys[0] = 0
        pay[0] = 0
        lens[0] = 1
"""

_GENERATE_STEP = """
def generate_step(keys, pay, lens, s, w, bit, cap, outk, outp):
    # IGS step s: merge list A = keys[0:lens[s]] with A[0:k] + w, k = #{a <= cap - w}, into out;
    # the lengths stay on the device (no host round trip per item); blocks past the end idle.
    skey = cuda.shared.array(TILE, int64)
    spay = cuda.shared.array(TILE, uint32)
    src = cuda.shared.array(TILE, int32)
    cut = cuda.shared.array(3, int64)
    m = lens[s]
    if cuda.threadIdx.x == 0:
        cut[2] = ub(keys, 0, m, cap - w)
    cuda.syncthreads()
    k = cut[2]
    d0 = int64(cuda.blockIdx.x) * TILE
    if d0 < m + k:
        merge_tile_at(keys, pay, m, keys, pay, k, w, bit, outk, outp, d0, skey, spay, src, cut)
    if cuda.grid(1) == 0:
        lens[s + 1] = m + k
"""

_PRUNE_CUDA = """
def prune(a, na, b, nb, cap, e, ka, out_jlo, out_cnt):
    i = cuda.grid(1)
    if i < ka:
        out_jlo[i], out_cnt[i] = ips(a, na, b, nb, cap, e, i)
"""

_SEARCH_CUDA = """
def search(a, na, b, nb, cap, e, off, jlo, ka, npairs, out_g, out_i, out_q):
    # One thread per surviving block pair; the block keeps its least gap (shared-memory reduction).
    sg = cuda.shared.array(THREADS, int64)
    si = cuda.shared.array(THREADS, int64)
    sq = cuda.shared.array(THREADS, int64)
    t = cuda.threadIdx.x
    p = cuda.grid(1)
    g = INT64_MAX
    gi = -1
    gq = -1
    if p < npairs:
        i = ub(off, 0, ka, p) - 1
        g, gi, gq = pair_search(a, na, b, nb, cap, e, i, jlo[i] + p - off[i])
    sg[t] = g
    si[t] = gi
    sq[t] = gq
    cuda.syncthreads()
    s = THREADS // 2
    while s > 0:
        if t < s and sg[t + s] < sg[t]:
            sg[t] = sg[t + s]
            si[t] = si[t + s]
            sq[t] = sq[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        out_g[cuda.blockIdx.x] = sg[0]
        out_i[cuda.blockIdx.x] = si[0]
        out_q[cuda.blockIdx.x] = sq[0]
"""


@functools.cache
def _cuda_funcs():
    global cuda  # the host code below allocates with it
    from types import SimpleNamespace

    from numba import int32, int64, uint32

    from gpudp.backends.cuda import cuda, generated_kernel

    mt, mi, st, threads = _geometry()
    prim = pr.cuda_kernels(mt, mi, st)
    ns = _build(cuda.jit(device=True), prim.upper_bound)
    ns.update(cuda=cuda, int32=int32, int64=int64, uint32=uint32, ub=prim.upper_bound)
    ns.update(TILE=int(prim.tile), THREADS=int(threads), merge_tile_at=prim.merge_tile_at)
    return SimpleNamespace(
        prim=prim,
        start_list=generated_kernel(_START_LIST, "start_list", {"cuda": cuda}),
        generate_step=generated_kernel(_GENERATE_STEP, "generate_step", dict(ns)),
        prune=generated_kernel(_PRUNE_CUDA, "prune", dict(ns)),
        search=generated_kernel(_SEARCH_CUDA, "search", dict(ns)),
        threads=threads,
    )


def narrow_cpu(a, b, cap, e, i, j):
    """ISS narrowing of block pair (i, j) on the CPU: (q0, q1, a0, a1); see the module docstring."""
    return _cpu_funcs()[1](a, np.int64(len(a)), b, np.int64(len(b)), np.int64(cap), np.int64(e), i, j)


# ----------------------------------------------------------------------------------------------------
# Input checking and memory planning


def _int_list(values, field):
    """The weights as a list of Python ints (exact), each >= 0 and their sum within int64; anything
    else raises InputError naming ``field``."""
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise InputError(
                field, f"must be a 1-D sequence of integers, got an array of shape {values.shape}"
            )
        if values.dtype.kind not in "iuO":
            raise InputError(field, f"must be integers, got an array of dtype {values.dtype}")
        values = values.tolist()
    if isinstance(values, str | bytes | bytearray | memoryview | set | frozenset | dict):
        raise InputError(
            field, f"must be a sequence (list, tuple or 1-D array) of integers, got {type(values).__name__}"
        )
    try:
        values = list(values)
    except TypeError:
        raise InputError(field, f"must be a sequence of integers, got {type(values).__name__}") from None
    out = []
    for k, v in enumerate(values):
        if isinstance(v, bool | np.bool_) or not isinstance(v, int | np.integer):
            raise InputError(field, f"item {k} is {_short(v)}: weights must be integers")
        v = int(v)
        if v < 0:
            raise InputError(field, f"item {k} is {v}: weights must be non-negative")
        out.append(v)
    if sum(out) > INT64_MAX:
        raise InputError(field, "the weights sum past 2**63 - 1 (int64 sums)")
    return out


def _short(v, width=40):
    text = repr(v)
    return text if len(text) <= width else text[: width - 3] + "..."


def _int_scalar(v, field):
    if isinstance(v, bool | np.bool_) or not isinstance(v, int | np.integer):
        raise InputError(field, f"must be an integer, got {_short(v)}")
    v = int(v)
    if v < 0:
        raise InputError(field, f"must be non-negative, got {_short(v)}")
    if v > INT64_MAX:
        raise InputError(field, "must be below 2**63")
    return v


MAX_BLOCK = 2**31 - 1


def _block(block):
    """The pruning block size: None (the backend's default) or an integer 1 .. 2**31 - 1."""
    if block is None:
        return None
    if isinstance(block, bool | np.bool_) or not isinstance(block, int | np.integer):
        raise InputError("block", f"must be an integer, got {_short(block)}")
    if not 1 <= int(block) <= MAX_BLOCK:
        raise InputError("block", f"must be 1 .. {MAX_BLOCK}, got {_short(int(block))}")
    return int(block)


def _list_bound(ws, cap):
    """Upper bound on the list length of one half (sums <= cap): no more subsets than those of at most
    r items, r the most of the smallest weights that fit; 2**h when all fit."""
    r = 0
    total = 0
    for w in sorted(ws):
        if total + w > cap:
            break
        total += w
        r += 1
    return sum(comb(len(ws), k) for k in range(r + 1))


def plan_memory(wa, wb, cap, e):
    """Bytes the two-list run needs at its peak: list A kept, list B double-buffered while it grows
    (ping-pong buffers of the last two steps' bounds), and the per-block pruning arrays."""

    def buffers(ws):
        if not ws:
            return 1, 0
        return _list_bound(ws, cap), min(_list_bound(ws[:-1], cap), 2 ** (len(ws) - 1))

    fa, oa = buffers(wa)
    fb, ob = buffers(wb)
    ka = -(-fa // e)
    gen_a = BYTES_PER_SUM * (fa + oa)
    peak = BYTES_PER_SUM * fa + max(BYTES_PER_SUM * (fb + ob), BYTES_PER_SUM * fb + 3 * 8 * ka)
    return {"peak": max(gen_a, peak), "a_buffers": (fa, oa), "b_buffers": (fb, ob)}


def _free_memory(backend, need=0):
    """(free bytes, where) for the backend's memory: the GPU's free memory, or what this process may
    still allocate on the host (:func:`gpudp.memory.available_memory`: the OS's figure, the cgroup's
    memory.max and ulimit -v / -d, the least of them)."""
    if backend == "cuda":
        from gpudp.backends.cuda import cuda as _cuda

        ctx = _cuda.current_context()
        free, _total = ctx.get_memory_info()
        pending = getattr(ctx, "deallocations", None)
        if free < need and pending is not None:  # numba frees device arrays lazily: flush, count again
            pending.clear()
            free, _total = ctx.get_memory_info()
        if math.isfinite(free):
            return int(free), "on the GPU"
    return memory.available_memory(), f"in host memory for this process ({memory.describe()})"


def _largest_n(free):
    """The largest n whose worst case (no sum pruned) fits in ``free`` bytes, as plan_memory counts."""

    def peak(n):
        ha, hb = (n + 1) // 2, n // 2
        return BYTES_PER_SUM * (2**ha + max(2 ** (ha - 1), 2**hb + 2 ** max(hb - 1, 0)))

    n = 1
    while n < MAX_ITEMS and peak(n + 1) <= free:
        n += 1
    return n


# ----------------------------------------------------------------------------------------------------
# The two stages on each backend


def _halves(weights, cap):
    """Usable items (0 < w <= cap), non-increasing, dealt alternately into two halves of (index, w)."""
    items = sorted(((w, k) for k, w in enumerate(weights) if 0 < w <= cap), key=lambda t: (-t[0], t[1]))
    if len(items) > MAX_ITEMS:
        raise InputError(
            "weights",
            f"{len(items)} non-zero weights <= {cap}; at most {MAX_ITEMS} are supported (a uint32 mask "
            "per sum in each half)",
        )
    half_a = [(k, w) for w, k in items[0::2]]
    half_b = [(k, w) for w, k in items[1::2]]
    return half_a, half_b


def _generate_cpu(ws, cap, sizes):
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
    return src[0][:n], src[1][:n]


def _generate_cuda(ws, cap, sizes, k):
    final, other = sizes
    bufs = [(cuda.device_array(final, np.int64), cuda.device_array(final, np.uint32))]
    bufs.append((cuda.device_array(max(other, 1), np.int64), cuda.device_array(max(other, 1), np.uint32)))
    h = len(ws)
    lens = cuda.device_array(h + 1, np.int64)
    src = bufs[h % 2]
    k.start_list[1, 1](src[0], src[1], lens)
    tile = k.prim.tile
    for s, w in enumerate(ws):
        dst = bufs[(h - s - 1) % 2]
        blocks = -(-min(2 ** (s + 1), final) // tile)  # enough for the longest list step s can make
        k.generate_step[blocks, k.prim.threads](
            src[0], src[1], lens, s, np.int64(w), np.uint32(1 << s), np.int64(cap), dst[0], dst[1]
        )
        src = dst
    n = int(lens[h : h + 1].copy_to_host()[0])
    return src[0][:n], src[1][:n]


def _two_list(half_a, half_b, cap, backend, block):
    """Run the three stages; returns (gap, mask_a, mask_b, stats dict)."""
    wa = [w for _, w in half_a]
    wb = [w for _, w in half_b]
    e = _block(block) or (BLOCK_CUDA if backend == "cuda" else BLOCK_CPU)
    plan = plan_memory(wa, wb, cap, e)
    free, where = _free_memory(backend, plan["peak"])
    if plan["peak"] > free:
        raise InputError(
            "weights",
            f"{len(wa) + len(wb)} usable items need up to {plan['peak'] / 2**30:.2f} GiB for the two lists "
            f"but {free / 2**30:.2f} GiB are free {where}; the limit here is about n = {_largest_n(free)} "
            "(fewer when the capacity prunes little)",
        )
    stages = {}
    if backend == "cpu":
        t0 = time.perf_counter()
        try:
            a, am = _generate_cpu(wa, cap, plan["a_buffers"])
            b, bm = _generate_cpu(wb, cap, plan["b_buffers"])
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
        _cpu_funcs()[2](a, len(a), b, len(b), cap, e, out_g, out_i, out_q, out_cnt)
        best = int(np.argmin(out_g))
        gap, ia, q = int(out_g[best]), int(out_i[best]), int(out_q[best])
        pairs = int(out_cnt.sum())
        stages = {"generate_s": t1 - t0, "prune_search_s": time.perf_counter() - t1}
        mask_a, mask_b = int(am[ia]), int(bm[len(b) - 1 - q])
        na, nb = len(a), len(b)
    else:
        k = _cuda_funcs()
        ev = [cuda.event() for _ in range(4)]
        ev[0].record()
        a, am = _generate_cuda(wa, cap, plan["a_buffers"], k)
        b, bm = _generate_cuda(wb, cap, plan["b_buffers"], k)
        ev[1].record()
        na, nb = a.shape[0], b.shape[0]
        ka = -(-na // e)
        jlo = cuda.device_array(ka, np.int64)
        cnt = cuda.device_array(ka, np.int64)
        off = cuda.device_array(ka, np.int64)
        k.prune[-(-ka // 256), 256](a, na, b, nb, cap, e, ka, jlo, cnt)
        pairs = pr.exclusive_scan_cuda(cnt, ka, off, k.prim)
        ev[2].record()
        blocks = -(-pairs // k.threads)
        out = [cuda.device_array(blocks, np.int64) for _ in range(3)]
        k.search[blocks, k.threads](a, na, b, nb, cap, e, off, jlo, ka, pairs, *out)
        g, gi, gq = (o.copy_to_host() for o in out)
        ev[3].record()
        ev[3].synchronize()
        best = int(np.argmin(g))
        gap, ia, q = int(g[best]), int(gi[best]), int(gq[best])
        mask_a = int(am[ia : ia + 1].copy_to_host()[0])
        mask_b = int(bm[nb - 1 - q : nb - q].copy_to_host()[0])
        stages = {
            "generate_s": ev[0].elapsed_time(ev[1]) / 1e3,
            "prune_s": ev[1].elapsed_time(ev[2]) / 1e3,
            "search_s": ev[2].elapsed_time(ev[3]) / 1e3,
        }
    if gap == INT64_MAX or q < 0:
        raise RuntimeError("two-list search found no pair: the empty subset should always be one")
    info = {
        "list_sizes": [int(na), int(nb)],
        "halves": [len(wa), len(wb)],
        "block": e,
        "pairs": int(pairs),
        "memory_bytes": int(plan["peak"]),
        "stages": stages,
    }
    return gap, mask_a, mask_b, info


def _unmask(half, mask):
    return [half[s][0] for s in range(len(half)) if mask >> s & 1]


# ----------------------------------------------------------------------------------------------------
# Public API


def _best_subset(weights, cap, backend, block):
    """Largest subset sum <= cap: (sum, indices, info or None when settled without lists)."""
    usable = [k for k, w in enumerate(weights) if 0 < w <= cap]
    total = sum(weights[k] for k in usable)
    if total <= cap:
        return total, usable, None
    hit = next((k for k in usable if weights[k] == cap), None)
    if hit is not None:
        return cap, [hit], None
    half_a, half_b = _halves(weights, cap)
    gap, mask_a, mask_b, info = _two_list(half_a, half_b, cap, backend, block)
    return cap - gap, sorted(_unmask(half_a, mask_a) + _unmask(half_b, mask_b)), info


def _subset_fault(weights, subset, expected, limit):
    if subset is None:
        return "no subset given"
    if any(not isinstance(k, int) or k < 0 or k >= len(weights) for k in subset):
        return f"subset {subset} has indices outside 0..{len(weights) - 1}"
    if len(set(subset)) != len(subset):
        return f"subset {subset} repeats an index"
    s = sum(weights[k] for k in subset)
    if s != expected:
        return f"subset sums to {s}, not {expected}"
    if s > limit:
        return f"subset sum {s} exceeds {limit}"
    return None


def _stats(backend, info, t0):
    stats = Stats(backend=backend, device=device_name(backend), seconds=time.perf_counter() - t0)
    if info:
        stats.cells = sum(info["list_sizes"])
        stats.kernel_seconds = sum(info["stages"].values())
        stats.extra.update(info)
    return stats


def solve(weights, target, backend: str = "auto", block: int | None = None) -> Solution:
    """A subset of ``weights`` summing exactly to ``target``, or proof that none exists.

    ``solution`` is the sorted list of indices (zero weights are never included) and ``value`` the
    target; when no subset exists, ``value`` and ``solution`` are None and ``details`` holds the
    closest sum below the target (``closest_sum``) with its subset (``closest``), the witness that the
    whole search ran. ``block`` is the pruning block size ``e`` (default 256 on the GPU).
    """
    t0 = time.perf_counter()
    ws = _int_list(weights, "weights")
    m = _int_scalar(target, "target")
    block = _block(block)
    backend = resolve(backend)
    best, subset, info = _best_subset(ws, m, backend, block)
    feasible = best == m
    details = {"feasible": feasible, "target": m}
    if not feasible:
        details.update(closest_sum=best, closest=subset)

    def check(sol):
        if sol.details["feasible"]:
            return _subset_fault(ws, sol.solution, m, m)
        if sol.solution is not None or sol.value is not None:
            return "an infeasible answer carries a subset"
        cs = sol.details["closest_sum"]
        return _subset_fault(ws, sol.details["closest"], cs, m - 1)

    sol = Solution(
        problem="subset-sum",
        value=m if feasible else None,
        solution=subset if feasible else None,
        stats=_stats(backend, info, t0),
        details=details,
        _checker=check,
    )
    sol.check()
    return sol


def maximize(weights, capacity, backend: str = "auto", block: int | None = None) -> Solution:
    """The largest subset sum not above ``capacity`` (``value``) with its subset (``solution``)."""
    t0 = time.perf_counter()
    ws = _int_list(weights, "weights")
    cap = _int_scalar(capacity, "capacity")
    block = _block(block)
    backend = resolve(backend)
    best, subset, info = _best_subset(ws, cap, backend, block)

    def check(sol):
        return _subset_fault(ws, sol.solution, sol.value, cap)

    sol = Solution(
        problem="subset-sum-max",
        value=best,
        solution=subset,
        stats=_stats(backend, info, t0),
        details={"capacity": cap},
        _checker=check,
    )
    sol.check()
    return sol


def generate_list(weights, cap, backend: str = "cpu"):
    """The sorted subset sums <= cap of ``weights`` (taken in the given order) with their bit masks,
    as the generation stage builds them (host numpy arrays); for tests and inspection."""
    ws = _int_list(weights, "weights")
    cap = _int_scalar(cap, "capacity")
    if any(w == 0 or w > cap for w in ws) or len(ws) > MAX_ITEMS // 2:
        raise InputError("weights", f"must be 1..{cap}, at most {MAX_ITEMS // 2} of them")
    backend = resolve(backend)
    sizes = (_list_bound(ws, cap), min(_list_bound(ws[:-1], cap), 2 ** max(len(ws) - 1, 0)))
    if backend == "cpu":
        a, m = _generate_cpu(ws, cap, sizes)
        return a.copy(), m.copy()
    k = _cuda_funcs()
    a, m = _generate_cuda(ws, cap, sizes, k)
    return a.copy_to_host(), m.copy_to_host()


def prune_pairs(a, b, cap, e, backend: str = "cpu"):
    """IPS on sorted lists a and b (ascending, values <= cap): per A-block, (first C-block, count)."""
    a = np.ascontiguousarray(a, np.int64)
    b = np.ascontiguousarray(b, np.int64)
    backend = resolve(backend)
    ka = -(-len(a) // e)
    if backend == "cpu":
        jlo = np.empty(ka, np.int64)
        cnt = np.empty(ka, np.int64)
        _cpu_funcs()[3](a, len(a), b, len(b), cap, e, jlo, cnt)
        return jlo, cnt
    k = _cuda_funcs()
    jlo = cuda.device_array(ka, np.int64)
    cnt = cuda.device_array(ka, np.int64)
    k.prune[-(-ka // 256), 256](cuda.to_device(a), len(a), cuda.to_device(b), len(b), cap, e, ka, jlo, cnt)
    return jlo.copy_to_host(), cnt.copy_to_host()


# ----------------------------------------------------------------------------------------------------
# CLI


#: the most numbers one instance file may hold (the solver uses at most 64 non-zero weights <= target)
MAX_FILE_NUMBERS = 10_000_000
_REAL = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|nan|inf|infinity)", re.I)


def _parse_number(text, where):
    """One non-negative integer written in ASCII digits (an optional '+'), parsed exactly."""
    body = text[1:] if text[:1] in "+-" else text
    if body.isascii() and body.isdigit():
        digits = body.lstrip("0")
        if text[0] == "-" and digits:
            raise InputError(
                "file", f"{where}: {_short(text)} is negative: the target and the weights are >= 0"
            )
        if len(digits) > 19 or int(digits or "0") > INT64_MAX:
            raise InputError("file", f"{where}: {_short(text)} is above 2**63 - 1 (int64 sums)")
        return int(digits or "0")
    if _REAL.fullmatch(text):
        raise InputError("file", f"{where}: {_short(text)} is not an integer (reals are not accepted)")
    raise InputError("file", f"{where}: {_short(text)} is not an integer (one integer a line, # comments)")


def read_instance(path):
    """One integer a line (blank lines and # comments skipped): the target (or capacity) first.

    Integers are ASCII digits with an optional ``+``, parsed exactly (never through a float);
    negative numbers, reals, NaN, numbers above 2**63 - 1, several numbers on a line, binary data
    and undecodable text raise :class:`~gpudp.InputError` with the line. A UTF-8 byte-order mark and
    LF, CRLF or CR line ends are accepted; at most ``MAX_FILE_NUMBERS`` numbers.
    """
    text = read_text(path, "file")
    nums = []
    for lineno, line in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), 1):
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        if len(nums) == MAX_FILE_NUMBERS:
            raise InputError(
                "file",
                f"{path} holds more than {MAX_FILE_NUMBERS:,} numbers (the solver uses at most {MAX_ITEMS} "
                "non-zero weights not above the target)",
            )
        nums.append(_parse_number(body, f"{path}:{lineno}"))
    if not nums:
        raise InputError("file", f"{path} holds no target (one integer a line: the target, then the weights)")
    return nums[0], nums[1:]


def summary(sol):
    """One human line for ``gpudp solve subset-sum``."""
    if sol.problem == "subset-sum-max":
        return f"best sum {sol.value} <= {sol.details['capacity']}: items {sol.solution}"
    if sol.details["feasible"]:
        return f"subset summing to {sol.value}: items {sol.solution}"
    return (
        f"no subset sums to {sol.details['target']}; closest below: {sol.details['closest_sum']} "
        f"(items {sol.details['closest']})"
    )


def cli_arguments(parser):
    parser.add_argument("file", help="one integer a line: the target first, then the weights")
    parser.add_argument(
        "--maximize", action="store_true", help="the largest subset sum <= the first number (a capacity)"
    )
    parser.add_argument("--block", type=int, default=None, help="pruning block size e (default: per backend)")


def cli_solve(args):
    target, weights = read_instance(args.file)
    if args.maximize:
        return maximize(weights, target, backend=args.backend, block=args.block)
    return solve(weights, target, backend=args.backend, block=args.block)


# ----------------------------------------------------------------------------------------------------
# Benchmark: Wan et al.'s Table II and Table V set-ups, with a numpy two-list as the CPU peer

# The paper's figures quoted in issue 5 (Tesla C2050; w_i uniform in [1, 10^8], M = sum / 2).
PAPER = {
    "source": "Wan, Li, Liu & Li, Concurrency and Computation 2014, Table II (as quoted in gpudp issue 5)",
    "table_ii": {"54": {"gpu_tesla_c2050_s": 2.27, "sequential_two_list_s": 16.1, "sequential_dp_s": 33.9}},
}


def bench_instance(n, seed, percent=50):
    """Wan et al.'s random instance: n weights uniform in [1, 10^8], target = percent% of their sum."""
    rng = np.random.default_rng([seed, n])
    w = rng.integers(1, 10**8, n, endpoint=True).tolist()
    return w, sum(w) * percent // 100


def numpy_two_list(weights, target):
    """The CPU peer: two-list with numpy only (lists by sorting, search by np.searchsorted).
    Returns the largest subset sum <= target."""
    ws = sorted((w for w in weights if 0 < w <= target), reverse=True)

    def sums(half):
        a = np.zeros(1, np.int64)
        for w in half:
            k = np.searchsorted(a, target - w, side="right")
            a = np.sort(np.concatenate([a, a[:k] + w]), kind="stable")  # timsort merges the two runs
        return a

    a, b = sums(ws[0::2]), sums(ws[1::2])
    c = target - b
    return int(target - (c - a[np.searchsorted(a, c, side="right") - 1]).min())


def bench_arguments(parser):
    parser.add_argument("--n-min", type=int, default=36)
    parser.add_argument("--n-max", type=int, default=54)
    parser.add_argument("--n-step", type=int, default=2)
    parser.add_argument("--instances", type=int, default=5, help="seeded instances per n")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per instance (median)")
    parser.add_argument("--alpha-n", type=int, default=46, help="n of the capacity sweep (Table V)")
    parser.add_argument("--alphas", default="20,25,30,35,40,45,50,55", help="targets, percent of the sum")
    parser.add_argument("--cpu-max-n", type=int, default=44, help="largest n timed on the CPU backends")
    parser.add_argument("--large", default="60,62,64", help="extra n, one instance, GPU only ('' for none)")
    parser.add_argument("--block", type=int, default=None, help="pruning block size e")
    parser.add_argument("--time-budget", type=float, default=300.0, help="seconds; later cases are skipped")


def _time_case(w, m, backend, repeats, block):
    runs = []
    for _ in range(repeats):
        sol = solve(w, m, backend=backend, block=block)
        runs.append(sol)
    walls = sorted(s.stats.seconds for s in runs)
    st = runs[0].stats.extra
    out = {
        "median_s": float(np.median(walls)),
        "runs_s": walls,
        "feasible": runs[0].details["feasible"],
        "list_sizes": st.get("list_sizes"),
        "pairs": st.get("pairs"),
        "memory_bytes": st.get("memory_bytes"),
    }
    if st.get("stages"):
        for key in st["stages"]:
            out[key] = float(np.median([s.stats.extra["stages"][key] for s in runs]))
    best = m if runs[0].details["feasible"] else runs[0].details["closest_sum"]
    return out, best


def cli_bench(args):
    from gpudp.backends import cuda_usable

    want = [b.strip() for b in args.backends.split(",") if b.strip()]
    if want == ["auto"]:
        want = (["cuda"] if cuda_usable() else []) + ["cpu"]
    backends = [resolve(b) for b in want]
    t_start = time.perf_counter()
    for b in backends:  # warm-up: JIT compilation stays out of the figures
        solve(*bench_instance(20, 99), backend=b, block=args.block)
    result = {
        "problem": "subset-sum",
        "devices": {b: device_name(b) for b in backends},
        "method": "wall seconds of solve() (median of --repeats after a warm-up); stage seconds from CUDA "
        "events (cuda) or perf_counter (cpu); numpy peer timed once",
        "paper": PAPER,
        "table_ii": [],
        "table_v": [],
        "large": [],
    }

    def case(n, seed, percent, backends_here, repeats):
        w, m = bench_instance(n, seed, percent)
        row = {"n": n, "seed": seed, "percent": percent, "target": m}
        bests = {}
        for b in backends_here:
            if time.perf_counter() - t_start > args.time_budget:
                row[b] = "skipped: time budget"
                continue
            if b == "cpu" and n > args.cpu_max_n:
                continue
            row[b], bests[b] = _time_case(w, m, b, repeats, args.block)
        if n <= args.cpu_max_n and time.perf_counter() - t_start <= args.time_budget:
            t0 = time.perf_counter()
            bests["numpy"] = numpy_two_list(w, m)
            row["numpy_peer_s"] = time.perf_counter() - t0
        row["agree"] = len(set(bests.values())) <= 1
        return row

    for n in range(args.n_min, args.n_max + 1, args.n_step):
        rows = [case(n, s, 50, backends, args.repeats) for s in range(args.instances)]
        summary = {"n": n, "instances": rows}
        for key in backends:
            med = [r[key]["median_s"] for r in rows if isinstance(r.get(key), dict)]
            if med:
                summary[f"{key}_median_s"] = float(np.median(med))
        peer = [r["numpy_peer_s"] for r in rows if "numpy_peer_s" in r]
        if peer:
            summary["numpy_peer_median_s"] = float(np.median(peer))
        result["table_ii"].append(summary)
    for pct in (int(x) for x in args.alphas.split(",") if x.strip()):
        rows = [case(args.alpha_n, s, pct, backends, args.repeats) for s in range(args.instances)]
        entry = {"n": args.alpha_n, "alpha": pct / 100, "instances": rows}
        for key in backends:
            med = [r[key]["median_s"] for r in rows if isinstance(r.get(key), dict)]
            if med:
                entry[f"{key}_median_s"] = float(np.median(med))
        result["table_v"].append(entry)
    gpu = [b for b in backends if b == "cuda"]
    for n in (int(x) for x in args.large.split(",") if x.strip()):
        if not gpu:
            result["large"].append({"n": n, "skipped": "no GPU"})
            continue
        try:
            result["large"].append(case(n, 0, 50, gpu, args.repeats))
        except InputError as e:  # the memory check's verdict is a result too
            result["large"].append({"n": n, "refused": str(e)})
    result["total_bench_s"] = time.perf_counter() - t_start
    return result
