"""The branch-and-bound frontier engine: branch, bound, prune, compact, swap.

A *problem* is a maximisation over ``n_vars`` 0/1 decisions, taken in order (level ``k`` decides
variable ``k``). A node at level ``k`` has decided variables ``0 .. k-1``; it is two numbers
``(f0, f1)`` of the problem's value dtype plus its decisions, packed 32 to a ``uint32`` word. The
problem gives one plain Python function

    child(level, f0, f1, take, data, n_vars) -> (ok, c0, c1, upper, lower)

that makes the son of a node of ``level`` with variable ``level`` set to ``take`` (0 or 1): ``ok``
False when the son is infeasible, its fields ``c0, c1``, an upper bound on every completion of it,
and the value ``lower`` of one feasible completion (which the problem can rebuild from the son's
fields afterwards). ``data`` is one 2-D array of the value dtype holding whatever the function reads.
The engine compiles ``child`` for the CPU (numba ``njit``) and the GPU (a CUDA device function
inlined into the kernels below) and knows nothing else of the problem.

The search is breadth first and level synchronous (Lalami & El Baz): every node of level ``k`` is
expanded before level ``k+1``. Sons whose upper bound cannot beat the incumbent (``upper <= best -
slack``; ``slack`` = 0 for exact integer data) are pruned; the sons of the last level are leaves
and only feed the incumbent. Interchangeable variables (``symmetric[k]``: variable ``k`` is a copy
of variable ``k-1``, e.g. identical knapsack items) are branched in order only: a node that set
``k-1`` to 0 does not get the son with ``k`` set to 1 (that solution is reached with the copies
swapped), which removes the factorial duplication of identical items.

Where the nodes live (Shen, Shigeoka, Ino & Hagihara):

- a level of fewer than ``cpu_threshold`` nodes is expanded on the host (the GPU would be idle);
- a level of at most ``batch`` nodes stays resident on the GPU between levels (in core);
- larger levels live in a host circular buffer (:class:`Ring`, pinned memory) and stream through
  the GPU in batches of ``batch`` nodes on two CUDA streams (double buffering: the copies of one
  batch overlap the kernels of the other); the survivors go back to the ring's tail.

Per GPU batch: ``expand_count`` (sons, bounds, per-block survivor count and best lower bound),
``scan_blocks`` (exclusive scan of the block counts, the batch's best lower bound and its son),
``scatter`` (sons again, block-local scan, write survivors to a separate output array: Shen's
"separated" compaction; and the best son's node for the incumbent). The ring never outgrows
``host_budget_bytes``: when it would, or when ``time_limit`` passes, the search stops and the
result says so (``complete`` False): the incumbent is then a feasible solution, not a proven optimum.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .backends import cpu as _cpu

__all__ = ["BranchProblem", "FrontierResult", "Ring", "RingFull", "solve", "compact", "exclusive_scan"]

DEFAULT_CPU_THRESHOLD = 1024  # measured on the H100: see docs/knapsack_bb.md
DEFAULT_BATCH = 1 << 20
DEFAULT_THREADS = 256


@dataclass
class BranchProblem:
    """What the engine needs to know of a 0/1 maximisation problem (see the module doc)."""

    n_vars: int
    data: np.ndarray
    child: Callable
    slack: float = 0.0
    root: tuple = (0, 0)
    symmetric: np.ndarray | None = None
    key_bits: int = 0

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype


@dataclass
class FrontierResult:
    best: float | int | None
    level: int
    fields: tuple
    bits: np.ndarray
    complete: bool
    message: str
    stats: dict = field(default_factory=dict)

    def decisions(self) -> np.ndarray:
        """The incumbent node's 0/1 decisions of variables ``0 .. level`` (its whole path)."""
        k = np.arange(self.level + 1)
        return ((self.bits[k >> 5] >> (k & 31).astype(np.uint32)) & 1).astype(np.int8)


def _neg(dtype):
    dtype = np.dtype(dtype)
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


class RingFull(Exception):
    """A push would take the ring past its capacity."""


class _TimeUp(Exception):
    pass


class Ring:
    """A FIFO circular buffer of nodes in structure-of-arrays form: ``f0[cap]``, ``f1[cap]``,
    ``bits[words, cap]``.

    ``pop`` hands out up to two contiguous segments (two when the region wraps) that stay reserved
    until ``release``: an asynchronous copy may still be reading them. ``push`` raises
    :class:`RingFull` rather than overwrite. The storage grows by doubling up to ``max_cap``.
    """

    def __init__(self, dtype, words: int, max_cap: int, alloc=np.empty, initial: int = 1 << 16):
        if max_cap < 1:
            raise RingFull("the host budget holds not even one node")
        self.dtype, self.words, self.max_cap, self._alloc = np.dtype(dtype), int(words), int(max_cap), alloc
        self.start = self.head = self.tail = 0  # monotone counters; positions are taken mod cap
        self._allocate(min(int(initial), self.max_cap))

    def _allocate(self, cap):
        self.cap = cap
        self.f0 = self._alloc(cap, self.dtype)
        self.f1 = self._alloc(cap, self.dtype)
        self.bits = self._alloc((self.words, cap), np.uint32)

    @property
    def available(self) -> int:
        """Nodes pushed and not yet popped."""
        return self.tail - self.head

    @property
    def used(self) -> int:
        """Slots taken: popped-but-unreleased and available nodes."""
        return self.tail - self.start

    @property
    def bytes_per_node(self) -> int:
        return 2 * self.dtype.itemsize + 4 * self.words

    def _segments(self, first, count):
        a = first % self.cap
        n1 = min(count, self.cap - a)
        segs = [(a, a + n1)]
        if count > n1:
            segs.append((0, count - n1))
        return segs

    def reserve(self, count: int, before_grow=None):
        """Room for ``count`` more nodes, growing the storage if needed; RingFull if impossible."""
        need = self.used + count
        if need <= self.cap:
            return
        if need > self.max_cap:
            raise RingFull(f"{need} nodes needed, the host budget holds {self.max_cap}")
        if before_grow is not None:
            before_grow()
        new_cap = min(self.max_cap, max(need, 2 * self.cap))
        old = (self.f0, self.f1, self.bits)
        segs = self._segments(self.start, self.used)
        self._allocate(new_cap)
        o = 0
        for a, b in segs:
            self.f0[o : o + b - a] = old[0][a:b]
            self.f1[o : o + b - a] = old[1][a:b]
            self.bits[:, o : o + b - a] = old[2][:, a:b]
            o += b - a
        self.head -= self.start
        self.tail -= self.start
        self.start = 0

    def push_segments(self, count: int):
        """Reserve ``count`` slots at the tail and return their segments (the caller fills them)."""
        self.reserve(count)
        segs = self._segments(self.tail, count)
        self.tail += count
        return segs

    def push(self, f0, f1, bits, words_used: int | None = None):
        count = len(f0)
        wu = self.words if words_used is None else words_used
        o = 0
        for a, b in self.push_segments(count):
            self.f0[a:b] = f0[o : o + b - a]
            self.f1[a:b] = f1[o : o + b - a]
            self.bits[:wu, a:b] = bits[:wu, o : o + b - a]
            o += b - a

    def pop(self, count: int):
        """Take up to ``count`` nodes from the head; returns their segments (reserved until release)."""
        count = min(count, self.available)
        segs = self._segments(self.head, count) if count else []
        self.head += count
        return segs

    def release(self, count: int):
        """Free the oldest ``count`` popped slots."""
        if count > self.head - self.start:
            raise ValueError("release of nodes that were not popped")
        self.start += count
        if self.start == self.tail:  # empty: restart at 0 (fewer wrapped segments)
            self.start = self.head = self.tail = 0

    def gather(self, segs, words_used=None):
        """Copies of the nodes in ``segs`` (host side, contiguous)."""
        wu = self.words if words_used is None else words_used
        f0 = np.concatenate([self.f0[a:b] for a, b in segs]) if segs else np.empty(0, self.dtype)
        f1 = np.concatenate([self.f1[a:b] for a, b in segs]) if segs else np.empty(0, self.dtype)
        bits = np.zeros((self.words, len(f0)), np.uint32)
        o = 0
        for a, b in segs:
            bits[:wu, o : o + b - a] = self.bits[:wu, a:b]
            o += b - a
        return f0, f1, bits


# --------------------------------------------------------------------------------------------
# CPU path


_CPU_CACHE: dict = {}


_GOLDEN = np.uint64(11400714819323198485)


def _key(c0, c1, bit, kb):
    """One int64 of a node's fields (``c1`` takes ``kb`` bits) and one decision bit."""
    return (np.int64(c0) << (kb + 1)) | (np.int64(c1) << 1) | bit


def _hash(key, mask):
    return np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(32)) & mask


_key_c = _cpu.njit(_key)
_hash_c = _cpu.njit(_hash)


def _cpu_kernels(child):
    if child in _CPU_CACHE:
        return _CPU_CACHE[child]
    child_c = _cpu.njit(child)

    def expand(m, level, best, slack, f0, f1, bits, data, nvars, sym, kb, table, used, o0, o1, obits):
        """Expand ``m`` nodes of ``level``; write the survivors; return (count, best, best son)."""
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
            blocked = sym[level] != 0 and ((bits[pw, i] >> pb) & 1) == 0
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
                        obits[w, cnt] = bits[w, i]
                    prev = bits[wl, i] if bp != 0 else 0
                    obits[wl, cnt] = prev | (take << bp)
                    cnt += 1
        for j in range(nused):
            table[used[j]] = -1
        return cnt, best, barg

    kern = (_cpu.njit(expand), child_c)
    _CPU_CACHE[child] = kern
    return kern


# --------------------------------------------------------------------------------------------
# GPU path

_CUDA_CACHE: dict = {}
cuda = None  # numba.cuda, bound on first use by _cuda_kernels (importing it is not free)


def _cuda_kernels(child, dtype, tpb):
    key = (child, np.dtype(dtype), tpb)
    if key in _CUDA_CACHE:
        return _CUDA_CACHE[key]
    global cuda  # a module global: the CUDA simulator swaps it inside kernels (closures it cannot)
    import numba

    from .backends.cuda import cuda

    vt = numba.from_dtype(np.dtype(dtype))
    neg = _neg(dtype)
    child_d = cuda.jit(device=True)(child)
    key_d = cuda.jit(device=True)(_key)
    hash_d = cuda.jit(device=True)(_hash)

    @cuda.jit(device=True)
    def block_inclusive_scan(s, tid):
        off = 1
        while off < tpb:
            t = s[tid - off] if tid >= off else 0
            cuda.syncthreads()
            s[tid] += t
            cuda.syncthreads()
            off *= 2

    @cuda.jit(device=True)
    def reduce_best(s_best, s_arg, tid):
        """Tree reduction into slot 0: the largest ``s_best``, ties to the lowest non-negative
        ``s_arg`` (the son with the best lower bound, chosen the same way whatever the block order)."""
        half = tpb // 2
        while half > 0:
            if tid < half:
                ob = s_best[tid + half]
                oa = s_arg[tid + half]
                if ob > s_best[tid] or (
                    ob == s_best[tid] and oa >= 0 and (s_arg[tid] < 0 or oa < s_arg[tid])
                ):
                    s_best[tid] = ob
                    s_arg[tid] = oa
            cuda.syncthreads()
            half //= 2

    @cuda.jit
    def expand_count(
        m, level, cut, f0, f1, bits, data, nvars, sym, kb, keep, table, block_count, block_best, block_arg
    ):
        tid = cuda.threadIdx.x
        i = cuda.blockIdx.x * tpb + tid
        s_cnt = cuda.shared.array(tpb, numba.int32)
        s_best = cuda.shared.array(tpb, vt)
        s_arg = cuda.shared.array(tpb, numba.int64)
        cnt = 0
        best = neg
        arg = -1
        if i < m:
            last = level + 1 >= nvars
            blocked = sym[level] != 0 and ((bits[(level - 1) >> 5, i] >> ((level - 1) & 31)) & 1) == 0
            for t in range(2):
                ok, c0, c1, u, lo = child_d(level, f0[i], f1[i], 1 - t, data, nvars)
                if t == 0 and blocked:
                    ok = False
                flag = 0
                if ok:
                    if lo > best:
                        best = lo
                        arg = 2 * i + t
                    if not last and u > cut:
                        flag = 1
                        if kb > 0:  # insert (fields, next-copy bit) in the table; a duplicate is dropped
                            key = key_d(c0, c1, (1 - t) if sym[level + 1] != 0 else 0, kb)
                            mask = table.shape[0] - 1
                            slot = hash_d(key, mask)
                            while True:
                                old = cuda.atomic.cas(table, slot, -1, key)
                                if old == -1:
                                    flag = slot + 2
                                    break
                                if old == key:
                                    flag = 0
                                    break
                                slot = (slot + 1) & mask
                        if flag != 0:
                            cnt += 1
                keep[2 * i + t] = flag
        s_cnt[tid] = cnt
        s_best[tid] = best
        s_arg[tid] = arg
        cuda.syncthreads()
        block_inclusive_scan(s_cnt, tid)
        reduce_best(s_best, s_arg, tid)
        if tid == 0:
            block_count[cuda.blockIdx.x] = s_cnt[tpb - 1]
            block_best[cuda.blockIdx.x] = s_best[0]
            block_arg[cuda.blockIdx.x] = s_arg[0]

    @cuda.jit
    def scan_blocks(nblocks, block_count, block_best, block_arg, block_offset, res_i, res_v):
        """One block: exclusive scan of the block counts; total, best lower bound and its son."""
        tid = cuda.threadIdx.x
        s = cuda.shared.array(tpb, numba.int64)
        s_best = cuda.shared.array(tpb, vt)
        s_arg = cuda.shared.array(tpb, numba.int64)
        carry = 0
        best = neg
        arg = -1
        for base in range(0, nblocks, tpb):
            j = base + tid
            v = 0
            if j < nblocks:
                v = block_count[j]
                b = block_best[j]
                if b > best or (b == best and block_arg[j] >= 0 and arg < 0):
                    best = b
                    arg = block_arg[j]
            s[tid] = v
            cuda.syncthreads()
            block_inclusive_scan(s, tid)
            if j < nblocks:
                block_offset[j] = carry + s[tid] - v
            carry += s[tpb - 1]
            cuda.syncthreads()
        s_best[tid] = best
        s_arg[tid] = arg
        cuda.syncthreads()
        reduce_best(s_best, s_arg, tid)
        if tid == 0:
            res_i[0] = carry
            res_i[1] = s_arg[0]
            res_v[0] = s_best[0]

    @cuda.jit
    def scatter(
        m, level, f0, f1, bits, data, nvars, keep, table, block_offset, res_i, o0, o1, obits, inc_f, inc_bits
    ):
        tid = cuda.threadIdx.x
        i = cuda.blockIdx.x * tpb + tid
        s = cuda.shared.array(tpb, numba.int64)
        wl = level >> 5
        bp = level & 31
        k1 = False
        k0 = False
        a0 = b0 = f0[0]
        a1 = b1 = f1[0]
        u = f0[0]
        if i < m:  # the sons again (cheaper than storing them); expand_count decided which stay
            ok1, a0, a1, u, lo = child_d(level, f0[i], f1[i], 1, data, nvars)
            ok0, b0, b1, u, lo = child_d(level, f0[i], f1[i], 0, data, nvars)
            g1 = keep[2 * i]
            g0 = keep[2 * i + 1]
            k1 = g1 != 0
            k0 = g0 != 0
            if g1 >= 2:  # leave the table empty for the next batch
                table[g1 - 2] = -1
            if g0 >= 2:
                table[g0 - 2] = -1
        c = 0
        if k1:
            c += 1
        if k0:
            c += 1
        s[tid] = c
        cuda.syncthreads()
        block_inclusive_scan(s, tid)
        pos = block_offset[cuda.blockIdx.x] + s[tid] - c
        if i < m:
            prev = bits[wl, i] if bp != 0 else 0
            if k1:
                o0[pos] = a0
                o1[pos] = a1
                for w in range(wl):
                    obits[w, pos] = bits[w, i]
                obits[wl, pos] = prev | (1 << bp)
                pos += 1
            if k0:
                o0[pos] = b0
                o1[pos] = b1
                for w in range(wl):
                    obits[w, pos] = bits[w, i]
                obits[wl, pos] = prev
            arg = res_i[1]
            if arg >= 0 and arg // 2 == i:
                take = 1 - arg % 2
                inc_f[0] = a0 if take == 1 else b0
                inc_f[1] = a1 if take == 1 else b1
                for w in range(wl):
                    inc_bits[w] = bits[w, i]
                inc_bits[wl] = prev | (take << bp)

    @cuda.jit
    def compact_kernel(m, values, flags, block_offset, out):
        """Stand-alone separated compaction (used by :func:`compact`): out[rank] = values[i]."""
        tid = cuda.threadIdx.x
        i = cuda.blockIdx.x * tpb + tid
        s = cuda.shared.array(tpb, numba.int64)
        c = 0
        if i < m and flags[i] != 0:
            c = 1
        s[tid] = c
        cuda.syncthreads()
        block_inclusive_scan(s, tid)
        if c:
            out[block_offset[cuda.blockIdx.x] + s[tid] - 1] = values[i]

    @cuda.jit
    def count_flags(m, flags, block_count):
        tid = cuda.threadIdx.x
        i = cuda.blockIdx.x * tpb + tid
        s = cuda.shared.array(tpb, numba.int64)
        s[tid] = 1 if (i < m and flags[i] != 0) else 0
        cuda.syncthreads()
        block_inclusive_scan(s, tid)
        if tid == tpb - 1:
            block_count[cuda.blockIdx.x] = s[tid]

    kern = {
        "expand_count": expand_count,
        "scan_blocks": scan_blocks,
        "scatter": scatter,
        "compact": compact_kernel,
        "count_flags": count_flags,
    }
    _CUDA_CACHE[key] = kern
    return kern


def _default_threads():
    from .backends.cuda import is_simulator

    return 32 if is_simulator() else DEFAULT_THREADS


def _dummy_child(level, f0, f1, take, data, nvars):
    return True, f0, f1, f0, f1


def exclusive_scan(counts: np.ndarray, threads: int | None = None) -> tuple[np.ndarray, int]:
    """Exclusive scan of int64 ``counts`` on the GPU (the block-offset kernel); (offsets, total)."""
    from .backends.cuda import cuda

    counts = np.ascontiguousarray(counts, np.int64)
    n = len(counts)
    if n == 0:
        return np.zeros(0, np.int64), 0
    tpb = threads or _default_threads()
    k = _cuda_kernels(_dummy_child, np.int64, tpb)
    d_off = cuda.device_array(n, np.int64)
    res_i = cuda.device_array(2, np.int64)
    res_v = cuda.device_array(1, np.int64)
    best = cuda.to_device(np.zeros(n, np.int64))
    arg = cuda.to_device(np.full(n, -1, np.int64))
    k["scan_blocks"][1, tpb](n, cuda.to_device(counts), best, arg, d_off, res_i, res_v)
    return d_off.copy_to_host(), int(res_i.copy_to_host()[0])


def compact(values: np.ndarray, flags: np.ndarray, backend: str = "cuda", threads: int | None = None):
    """``values[flags != 0]`` in order, by the engine's scan-based separated compaction."""
    values = np.ascontiguousarray(values)
    flags = np.ascontiguousarray(flags, np.int8)
    if backend == "cpu":
        return values[flags != 0]
    from .backends.cuda import cuda

    tpb = threads or _default_threads()
    k = _cuda_kernels(_dummy_child, np.int64, tpb)
    m = len(values)
    if m == 0:
        return values[:0].copy()
    nb = (m + tpb - 1) // tpb
    d_v, d_f = cuda.to_device(values), cuda.to_device(flags)
    d_cnt = cuda.device_array(nb, np.int64)
    k["count_flags"][nb, tpb](m, d_f, d_cnt)
    zeros = cuda.to_device(np.zeros(nb, np.int64))
    d_off = cuda.device_array(nb, np.int64)
    res_i = cuda.device_array(2, np.int64)
    res_v = cuda.device_array(1, np.int64)
    k["scan_blocks"][1, tpb](nb, d_cnt, zeros, cuda.to_device(np.full(nb, -1, np.int64)), d_off, res_i, res_v)
    total = int(res_i.copy_to_host()[0])
    d_out = cuda.device_array(max(total, 1), values.dtype)
    k["compact"][nb, tpb](m, d_v, d_f, d_off, d_out)
    return d_out.copy_to_host()[:total]


# --------------------------------------------------------------------------------------------
# The search


_LANES: dict = {}


class _Lane:
    """Device buffers of one stream: input and output node arrays, block scratch, results."""

    def __init__(self, cuda, dtype, words, cap, nblocks, stream, table_size):
        self.stream = stream
        self.keep = cuda.device_array(cap, np.int64)
        self.table = cuda.to_device(np.full(table_size, -1, np.int64))
        self.a = [
            cuda.device_array(cap, dtype),
            cuda.device_array(cap, dtype),
            cuda.device_array((words, cap), np.uint32),
        ]
        self.b = [
            cuda.device_array(cap, dtype),
            cuda.device_array(cap, dtype),
            cuda.device_array((words, cap), np.uint32),
        ]
        self.block_count = cuda.device_array(nblocks, np.int64)
        self.block_best = cuda.device_array(nblocks, dtype)
        self.block_arg = cuda.device_array(nblocks, np.int64)
        self.block_offset = cuda.device_array(nblocks, np.int64)
        from .backends.cuda import mapped_empty

        # The kernels write the batch's results straight into mapped host memory: no copies.
        self.res_i = mapped_empty(2, np.int64)
        self.res_v = mapped_empty(1, dtype)
        self.inc_f = mapped_empty(2, dtype)
        self.inc_bits = mapped_empty(words, np.uint32)
        self.m = 0  # nodes of the batch in flight (streamed levels)


class _Search:
    def __init__(self, problem, backend, host_budget_bytes, batch, cpu_threshold, threads, time_limit):
        self.p = problem
        self.backend = backend
        self.n = int(problem.n_vars)
        self.words = max(1, (self.n + 31) // 32)
        self.dtype = np.dtype(problem.dtype)
        self.slack = self.dtype.type(problem.slack)
        self.key_bits = int(problem.key_bits)
        self.sym = np.zeros(self.n, np.uint8)
        if problem.symmetric is not None:
            self.sym[:] = np.asarray(problem.symmetric, bool)
            self.sym[0] = 0
        self.batch = int(batch)
        self.cpu_threshold = int(cpu_threshold)
        self.time_limit = time_limit
        self.best = _neg(self.dtype)
        self.inc = None  # (level, f0, f1, bits)
        self._cpu_out = None
        bpn = 2 * self.dtype.itemsize + 4 * self.words
        self.max_nodes = int(host_budget_bytes // bpn)
        self.st = {
            "nodes_explored": 0,
            "largest_frontier": 1,
            "bytes_h2d": 0,
            "bytes_d2h": 0,
            "gpu_batches": 0,
            "gpu_levels": 0,
            "cpu_levels": 0,
            "streamed_levels": 0,
            "seconds_gpu": 0.0,
            "seconds_cpu": 0.0,
            "seconds_swap": 0.0,
            "bytes_per_node": bpn,
            "host_budget_bytes": int(host_budget_bytes),
            "host_budget_nodes": self.max_nodes,
            "largest_host_buffer": 0,
        }
        alloc = np.empty
        self.cuda = None
        if backend == "cuda":
            from .backends.cuda import cuda, pinned_empty

            self.cuda = cuda
            alloc = pinned_empty
            self.tpb = threads or _default_threads()
            self.k = _cuda_kernels(problem.child, self.dtype, self.tpb)
        self.cpu_expand, self.child_c = _cpu_kernels(problem.child)
        if self.max_nodes < 1:
            raise RingFull(f"host budget {host_budget_bytes} B is less than one node ({bpn} B)")
        self.ring = Ring(self.dtype, self.words, self.max_nodes, alloc, initial=min(1 << 16, self.batch * 2))
        self.t0 = time.perf_counter()

    # -- helpers -------------------------------------------------------------------------
    def _timed_out(self):
        return self.time_limit is not None and time.perf_counter() - self.t0 > self.time_limit

    def _offer(self, value, level, f0, f1, bits):
        if value > self.best:
            self.best = value
            self.inc = (level, f0, f1, np.array(bits, np.uint32, copy=True))

    def _wu(self, level):
        """Bit words in use by the nodes of ``level`` (decisions 0 .. level-1)."""
        return (level + 31) // 32

    def _cpu_level(self, level, count):
        """Expand ``count`` ring nodes of ``level`` on the host; sons go to the ring's tail."""
        t = time.perf_counter()
        chunk = 1 << 16
        if self._cpu_out is None:
            self._cpu_out = (
                np.empty(2 * chunk, self.dtype),
                np.empty(2 * chunk, self.dtype),
                np.empty((self.words, 2 * chunk), np.uint32),
                np.full(8 * chunk if self.key_bits else 1, -1, np.int64),
                np.empty(2 * chunk, np.int64),
            )
        out_f0, out_f1, out_bits, table, used = self._cpu_out
        wu = self._wu(level)
        done = 0
        while done < count:
            if level and self._timed_out():
                raise _TimeUp()
            for a, b in self.ring.pop(min(chunk, count - done)):
                f0, f1, bits = self.ring.f0[a:b], self.ring.f1[a:b], self.ring.bits[:, a:b]
                cnt, best, barg = self.cpu_expand(
                    b - a,
                    level,
                    self.best,
                    self.slack,
                    f0,
                    f1,
                    bits,
                    self.p.data,
                    self.n,
                    self.sym,
                    self.key_bits,
                    table,
                    used,
                    out_f0,
                    out_f1,
                    out_bits,
                )
                if barg >= 0 and best > self.best:
                    i, take = barg // 2, 1 - barg % 2
                    _, c0, c1, _, _ = self.child_c(level, f0[i], f1[i], take, self.p.data, self.n)
                    inc = np.zeros(self.words, np.uint32)
                    inc[:wu] = bits[:wu, i]
                    inc[level >> 5] |= np.uint32(take << (level & 31))
                    self._offer(best, level, c0, c1, inc)
                self.ring.release(b - a)
                done += b - a
                self.st["nodes_explored"] += b - a
                self.ring.push(out_f0[:cnt], out_f1[:cnt], out_bits, self._wu(level + 1))
        self.st["seconds_cpu"] += time.perf_counter() - t

    # -- GPU -----------------------------------------------------------------------------
    def _launch(self, lane, src, dst, m, level):
        k, tpb, s = self.k, self.tpb, lane.stream
        nb = (m + tpb - 1) // tpb
        cut = self._cut()
        k["expand_count"][nb, tpb, s](
            m,
            level,
            cut,
            src[0],
            src[1],
            src[2],
            self.d_data,
            self.n,
            self.d_sym,
            self.key_bits,
            lane.keep,
            lane.table,
            lane.block_count,
            lane.block_best,
            lane.block_arg,
        )
        k["scan_blocks"][1, tpb, s](
            nb, lane.block_count, lane.block_best, lane.block_arg, lane.block_offset, lane.res_i, lane.res_v
        )
        k["scatter"][nb, tpb, s](
            m,
            level,
            src[0],
            src[1],
            src[2],
            self.d_data,
            self.n,
            lane.keep,
            lane.table,
            lane.block_offset,
            lane.res_i,
            dst[0],
            dst[1],
            dst[2],
            lane.inc_f,
            lane.inc_bits,
        )
        self.st["gpu_batches"] += 1
        self.st["nodes_explored"] += m

    def _cut(self):
        b = self.best
        if self.dtype.kind == "f":
            return float(b - self.slack) if math.isfinite(b) else -np.inf
        return int(b)

    def _finish(self, lane, level):
        """After the lane's stream has synchronised: the incumbent; returns the survivors' count."""
        total = int(lane.res_i[0])
        if lane.res_i[1] >= 0 and lane.res_v[0] > self.best:
            self._offer(
                lane.res_v[0].copy(), level, lane.inc_f[0].copy(), lane.inc_f[1].copy(), lane.inc_bits
            )
        return total

    def _h2d(self, lane, dst, segs, wu):
        o = 0
        s = lane.stream
        for a, b in segs:
            dst[0][o : o + b - a].copy_to_device(self.ring.f0[a:b], stream=s)
            dst[1][o : o + b - a].copy_to_device(self.ring.f1[a:b], stream=s)
            for w in range(wu):
                dst[2][w, o : o + b - a].copy_to_device(self.ring.bits[w, a:b], stream=s)
            o += b - a
        self.st["bytes_h2d"] += o * (2 * self.dtype.itemsize + 4 * wu)

    def _d2h_push(self, lane, src, count, wu):
        """Sons on the device -> ring tail (synchronous at the end)."""
        t = time.perf_counter()
        self.ring.reserve(count, before_grow=self._sync_all)
        o = 0
        s = lane.stream
        for a, b in self.ring.push_segments(count):
            src[0][o : o + b - a].copy_to_host(self.ring.f0[a:b], stream=s)
            src[1][o : o + b - a].copy_to_host(self.ring.f1[a:b], stream=s)
            for w in range(wu):
                src[2][w, o : o + b - a].copy_to_host(self.ring.bits[w, a:b], stream=s)
            o += b - a
        s.synchronize()
        self.st["bytes_d2h"] += count * (2 * self.dtype.itemsize + 4 * wu)
        self.st["seconds_swap"] += time.perf_counter() - t

    def _sync_all(self):
        for lane in self.lanes:
            lane.stream.synchronize()

    def _gpu_setup(self):
        from .backends.cuda import stream

        cuda = self.cuda
        self.d_data = cuda.to_device(np.ascontiguousarray(self.p.data))
        self.d_sym = cuda.to_device(self.sym)
        dedupe = self.key_bits > 0
        key = (self.dtype, self.words, self.batch, self.tpb, dedupe)
        if key not in _LANES:  # kept for the next search of the same shape (allocation is slow)
            _LANES.clear()
            cap = 2 * self.batch
            nb = (self.batch + self.tpb - 1) // self.tpb
            table = 1 << (4 * self.batch - 1).bit_length() if dedupe else 1
            _LANES[key] = [_Lane(cuda, self.dtype, self.words, cap, nb, stream(), table) for _ in range(2)]
        self.lanes = _LANES[key]

    def _gpu_resident_level(self, level, m):
        lane = self.lanes[0]
        t = time.perf_counter()
        self._launch(lane, lane.a, lane.b, m, level)
        lane.stream.synchronize()
        total = self._finish(lane, level)
        self.st["seconds_gpu"] += time.perf_counter() - t
        lane.a, lane.b = lane.b, lane.a
        return total

    def _gpu_streamed_level(self, level, count):
        """Stream ``count`` ring nodes through the GPU in batches on two lanes; sons to the ring."""
        wu_in, wu_out = self._wu(level), self._wu(level + 1)
        t = time.perf_counter()
        remaining = count
        pending = []
        nxt = 0
        while remaining > 0 or pending:
            while remaining > 0 and len(pending) < 2:
                if self._timed_out():
                    self._sync_all()
                    raise _TimeUp()
                lane = self.lanes[nxt]
                nxt ^= 1
                segs = self.ring.pop(min(self.batch, remaining))
                m = sum(b - a for a, b in segs)
                remaining -= m
                self._h2d(lane, lane.a, segs, wu_in)
                lane.m = m
                self._launch(lane, lane.a, lane.b, m, level)
                pending.append(lane)
            lane = pending.pop(0)
            lane.stream.synchronize()
            self.ring.release(lane.m)
            total = self._finish(lane, level)
            if total:
                self._d2h_push(lane, lane.b, total, wu_out)
        self.st["seconds_gpu"] += time.perf_counter() - t

    # -- driver --------------------------------------------------------------------------
    def run(self):
        p = self.p
        root_f0 = np.array([p.root[0]], self.dtype)
        root_f1 = np.array([p.root[1]], self.dtype)
        self.ring.push(root_f0, root_f1, np.zeros((self.words, 1), np.uint32), 0)
        where = "ring"  # or "device": the level's nodes are resident in lanes[0].a
        m = 1
        complete, message = True, "search complete: the incumbent is optimal"
        if self.backend == "cuda":
            self._gpu_setup()
        level = 0
        try:
            for level in range(self.n):
                if m == 0:
                    break
                if level and self._timed_out():  # the root is always expanded: an incumbent
                    raise _TimeUp()
                self.st["largest_frontier"] = max(self.st["largest_frontier"], m)
                use_gpu = self.backend == "cuda" and m >= self.cpu_threshold
                if not use_gpu:
                    if where == "device":
                        self._d2h_push(self.lanes[0], self.lanes[0].a, m, self._wu(level))
                        where = "ring"
                    self.st["cpu_levels"] += 1
                    self._cpu_level(level, m)
                    m = self.ring.available
                elif where == "device" or m <= self.batch:
                    if where == "ring":
                        lane = self.lanes[0]
                        segs = self.ring.pop(m)
                        self._h2d(lane, lane.a, segs, self._wu(level))
                        lane.stream.synchronize()
                        self.ring.release(m)
                        where = "device"
                    self.st["gpu_levels"] += 1
                    m = self._gpu_resident_level(level, m)
                    if m > self.batch:
                        self._d2h_push(self.lanes[0], self.lanes[0].a, m, self._wu(level + 1))
                        where = "ring"
                else:
                    self.st["gpu_levels"] += 1
                    self.st["streamed_levels"] += 1
                    self._gpu_streamed_level(level, m)
                    m = self.ring.available
                self.st["largest_host_buffer"] = max(self.st["largest_host_buffer"], self.ring.used)
        except _TimeUp:
            complete = False
            message = f"time limit of {self.time_limit} s reached at level {level}: open nodes remain"
        except RingFull as e:
            complete = False
            message = (
                f"host budget exceeded at level {level}: {e} "
                f"({self.st['bytes_per_node']} B per node, budget {self.st['host_budget_bytes']} B); "
                "open nodes remained, so the incumbent is the best found, not a proven optimum"
            )
        self.st["seconds"] = time.perf_counter() - self.t0
        if self.inc is None:
            return FrontierResult(None, -1, (), np.zeros(self.words, np.uint32), complete, message, self.st)
        lvl, f0, f1, bits = self.inc
        return FrontierResult(self.best, lvl, (f0, f1), bits, complete, message, self.st)


def solve(
    problem: BranchProblem,
    backend: str = "cpu",
    host_budget_bytes: int = 1 << 30,
    batch: int = DEFAULT_BATCH,
    cpu_threshold: int = DEFAULT_CPU_THRESHOLD,
    threads: int | None = None,
    time_limit: float | None = None,
) -> FrontierResult:
    """Run the breadth-first branch and bound of ``problem`` on ``backend`` (``cpu`` or ``cuda``).

    ``batch``: the most nodes the GPU expands in one launch (the device holds 4 node arrays of
    ``2 * batch``); ``cpu_threshold``: levels with fewer nodes run on the host; ``host_budget_bytes``:
    the most the host circular buffer may take. Returns the incumbent (the best son seen, whose
    ``lower`` completion the problem rebuilds) and whether the search completed.
    """
    if problem.n_vars < 1:
        raise ValueError("a branching problem needs at least one variable")
    if batch < 1:
        raise ValueError("batch must be >= 1")
    return _Search(problem, backend, host_budget_bytes, batch, cpu_threshold, threads, time_limit).run()
