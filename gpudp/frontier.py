"""The branch-and-bound frontier engine: branch, bound, prune, compact, swap.

A *problem* is a maximisation over ``n_vars`` 0/1 decisions, taken in order (level ``k`` decides
variable ``k``). A node at level ``k`` has decided variables ``0 .. k-1``; it is two numbers
``(f0, f1)`` of the problem's value dtype plus its decisions, packed 32 to a ``uint32`` word. Node
arrays are ``f0[m]``, ``f1[m]`` and node-major ``bits[m, stride]``, ``stride`` = the words in use
at the nodes' level (at least one): a run of nodes is one contiguous range of each array. The
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
- larger levels live in a host FIFO (:class:`Ring`: page-locked blocks of a process-wide pool,
  taken and given back as it grows and shrinks) and stream through the GPU in batches of ``batch``
  nodes on two CUDA streams: three asynchronous copies per ring segment each way, and the host
  waits for a lane's kernels only, so that the copies of one lane overlap the work of the other;
  the survivors go back to the ring's tail.

Per GPU batch: ``expand_count`` (sons, bounds, per-block survivor count and best lower bound),
``scan_blocks`` (exclusive scan of the block counts, the batch's best lower bound and its son),
``scatter`` (sons again, block-local scan, write survivors to a separate output array: Shen's
"separated" compaction, the block's decision words written together so that they coalesce; and the
best son's node for the incumbent). The ring never outgrows
``host_budget_bytes``: when it would, or when ``time_limit`` passes, the search stops and the
result says so (``complete`` False): the incumbent is then a feasible solution, not a proven optimum.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .jit import njit

__all__ = [
    "BlockPool",
    "BranchProblem",
    "FrontierResult",
    "Ring",
    "RingFull",
    "Segment",
    "compact",
    "exclusive_scan",
    "pinned_pool",
    "solve",
]

DEFAULT_CPU_THRESHOLD = 1024  # measured on the H100: see docs/knapsack_bb.md
DEFAULT_BATCH = 1 << 20
DEFAULT_THREADS = 256
BLOCK_BYTES = 64 << 20  # the smallest host block of a search (see _block_bytes)


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
    """A push would take the ring past its host budget."""


class _TimeUp(Exception):
    pass


class BlockPool:
    """Spare host blocks by byte size, kept for reuse.

    The cuda backend's pool (:func:`pinned_pool`) lives as long as the process: page-locking
    gigabytes takes seconds, so each block is locked once and every later ring, in the same solve or
    the next, takes it for free.
    """

    def __init__(self, alloc=np.empty):
        self.alloc = alloc
        self.spare: dict[int, list] = {}

    @property
    def nbytes(self) -> int:
        return sum(size * len(bufs) for size, bufs in self.spare.items())

    def take(self, nbytes: int):
        """A block of ``nbytes`` bytes, and whether it was allocated now (rather than reused)."""
        bufs = self.spare.get(nbytes)
        if bufs:
            return bufs.pop(), False
        return self.alloc(nbytes, np.uint8), True

    def give(self, buf):
        self.spare.setdefault(buf.nbytes, []).append(buf)

    def trim(self, keep: int, size: int | None = None):
        """Free spare blocks until at most ``keep`` bytes remain, those not of ``size`` bytes first."""
        for nbytes in sorted(self.spare, key=lambda b: b == size):
            bufs = self.spare[nbytes]
            while bufs and self.nbytes > keep:
                bufs.pop()
            if not bufs:
                del self.spare[nbytes]


_PINNED: list = []


def pinned_pool() -> BlockPool:
    """The process-wide pool of page-locked host blocks that the cuda backend's rings draw from.

    It holds at most the host budget of the latest ring; ``pinned_pool().trim(0)`` gives all of it
    back to the system.
    """
    if not _PINNED:
        from .backends.cuda import pinned_empty

        _PINNED.append(BlockPool(pinned_empty))
    return _PINNED[0]


class Segment(NamedTuple):
    """Consecutive nodes of one ring block: views of its storage, ``bits`` of shape ``(count, stride)``."""

    f0: np.ndarray
    f1: np.ndarray
    bits: np.ndarray


class _Block:
    """One host block: ``f0[cap]``, ``f1[cap]`` and node-major ``bits[cap, stride]`` in one buffer,
    holding the ring's nodes ``first .. first + filled - 1`` (sequence numbers)."""

    __slots__ = ("buf", "stride", "cap", "first", "filled", "f0", "f1", "bits")

    def __init__(self, buf, dtype, stride, first):
        self.buf, self.stride, self.first, self.filled = buf, stride, first, 0
        self.cap = buf.nbytes // (2 * dtype.itemsize + 4 * stride)
        n = self.cap * dtype.itemsize
        self.f0 = buf[:n].view(dtype)
        self.f1 = buf[n : 2 * n].view(dtype)
        self.bits = buf[2 * n : 2 * n + 4 * stride * self.cap].view(np.uint32).reshape(self.cap, stride)

    def segment(self, a, b) -> Segment:
        return Segment(self.f0[a:b], self.f1[a:b], self.bits[a:b])


class Ring:
    """A FIFO of nodes in host blocks of ``block_bytes`` bytes taken from a :class:`BlockPool`: at
    most ``max_cap`` nodes of ``words`` bit words in bytes (the host budget), in whole blocks.

    A block holds nodes of one *stride*, the bit words in use at their level (``push`` takes it from
    the width of ``bits``), so a run of nodes is one contiguous range of each of its three arrays and
    only the words in use are stored and copied. Pushes fill the last block and take a new one when it
    is full or the stride changes: growing costs one block from the pool, nothing is copied or
    re-allocated. ``pop`` hands out segments, each within one block, that stay reserved until
    ``release`` (an asynchronous copy may still read them); a block goes back to the pool once all its
    nodes are released. ``push`` raises :class:`RingFull` rather than exceed the budget; partly
    released or partly filled blocks count whole against it.
    """

    def __init__(self, dtype, words: int, max_cap: int, block_bytes: int | None = None, pool=None):
        if max_cap < 1:
            raise RingFull("the host budget holds not even one node")
        self.dtype, self.words = np.dtype(dtype), int(words)
        self.budget = int(max_cap) * self.bytes_per_node
        block = BLOCK_BYTES if block_bytes is None else int(block_bytes)
        self.block_bytes = max(self.bytes_per_node, min(block, self.budget))
        self.max_blocks = self.budget // self.block_bytes
        self.pool = BlockPool() if pool is None else pool
        self.pool.trim(self.budget, self.block_bytes)
        self.blocks: deque[_Block] = deque()
        self.start = self.head = self.tail = 0  # sequence numbers: released, popped, pushed so far
        self.new_blocks = self.reused_blocks = self.largest_bytes = 0
        self.seconds_alloc = 0.0

    @property
    def bytes_per_node(self) -> int:
        """Bytes of a node of all ``words`` bit words."""
        return 2 * self.dtype.itemsize + 4 * self.words

    @property
    def available(self) -> int:
        """Nodes pushed and not yet popped."""
        return self.tail - self.head

    @property
    def used(self) -> int:
        """Nodes held: popped-but-unreleased and available."""
        return self.tail - self.start

    @property
    def nbytes(self) -> int:
        """Bytes of the blocks held."""
        return len(self.blocks) * self.block_bytes

    def _take(self, stride):
        t = time.perf_counter()
        buf, new = self.pool.take(self.block_bytes)
        self.seconds_alloc += time.perf_counter() - t
        self.new_blocks += new
        self.reused_blocks += not new
        block = _Block(buf, self.dtype, stride, self.tail)
        self.blocks.append(block)
        self.largest_bytes = max(self.largest_bytes, self.nbytes)
        return block

    def push_segments(self, count: int, stride: int) -> list[Segment]:
        """Reserve ``count`` slots of ``stride`` bit words at the tail; their segments, to be filled."""
        last = self.blocks[-1] if self.blocks else None
        room = last.cap - last.filled if last is not None and last.stride == stride else 0
        if count > room:
            per_block = self.block_bytes // (2 * self.dtype.itemsize + 4 * stride)
            need = len(self.blocks) + -(-(count - room) // per_block)
            if need > self.max_blocks:
                raise RingFull(
                    f"{self.used + count} nodes would take {need} blocks of {self.block_bytes} B, "
                    f"the host budget holds {self.max_blocks}"
                )
        segs = []
        while count > 0:
            if room == 0:
                last = self._take(stride)
                room = last.cap
            n = min(count, room)
            segs.append(last.segment(last.filled, last.filled + n))
            last.filled += n
            self.tail += n
            count -= n
            room -= n
        return segs

    def push(self, f0, f1, bits):
        """Append nodes; ``bits`` is ``(count, stride)``: each node's decision words in use."""
        o = 0
        for seg in self.push_segments(len(f0), bits.shape[1]):
            n = len(seg.f0)
            seg.f0[:] = f0[o : o + n]
            seg.f1[:] = f1[o : o + n]
            seg.bits[:] = bits[o : o + n]
            o += n

    def pop(self, count: int) -> list[Segment]:
        """Take up to ``count`` nodes from the head: their segments, reserved until ``release``."""
        count = min(count, self.available)
        segs = []
        for block in self.blocks:
            if count == 0:
                break
            a = self.head - block.first
            n = min(count, block.filled - a)
            if n > 0:
                segs.append(block.segment(a, a + n))
                self.head += n
                count -= n
        return segs

    def release(self, count: int):
        """Free the oldest ``count`` popped slots; blocks left with none go back to the pool."""
        if count > self.head - self.start:
            raise ValueError("release of nodes that were not popped")
        self.start += count
        while self.blocks and self.blocks[0].first + self.blocks[0].filled <= self.start:
            self.pool.give(self.blocks.popleft().buf)

    def close(self):
        """Give every block back to the pool; the ring is empty afterwards. No copy may still use them."""
        while self.blocks:
            self.pool.give(self.blocks.popleft().buf)
        self.start = self.head = self.tail
        self.pool.trim(self.budget, self.block_bytes)

    def gather(self, segs):
        """Host copies of the nodes of ``segs``: ``f0``, ``f1`` and ``bits[count, words]`` (zero past
        each segment's stride)."""
        count = sum(len(seg.f0) for seg in segs)
        f0, f1 = np.empty(count, self.dtype), np.empty(count, self.dtype)
        bits = np.zeros((count, self.words), np.uint32)
        o = 0
        for seg in segs:
            n, stride = seg.bits.shape
            f0[o : o + n], f1[o : o + n], bits[o : o + n, :stride] = seg.f0, seg.f1, seg.bits
            o += n
        return f0, f1, bits


# --------------------------------------------------------------------------------------------
# CPU path
#
# The kernels are generated source compiled through the persistent cache (gpudp.cache): numba
# cannot cache closures, so the problem's ``child`` is a global of the generated module (its code,
# and that of everything it calls, is in the cache entry's hash), and a second process loads the
# compiled kernels instead of compiling them.


_CPU_CACHE: dict = {}


_GOLDEN = np.uint64(11400714819323198485)


def _key(c0, c1, bit, kb):
    """One int64 of a node's fields (``c1`` takes ``kb`` bits) and one decision bit."""
    return (np.int64(c0) << (kb + 1)) | (np.int64(c1) << 1) | bit


def _hash(key, mask):
    return np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(32)) & mask


_key_c = njit(_key, cache=True)
_hash_c = njit(_hash, cache=True)


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


def _cpu_kernels(child):
    """``expand`` and ``child_host`` for the problem's ``child`` (see :data:`_EXPAND_CPU`)."""
    if child in _CPU_CACHE:
        return _CPU_CACHE[child]
    from .cache import jit_generated

    ns = {"child_c": njit(child), "_key_c": _key_c, "_hash_c": _hash_c}
    kern = (
        jit_generated(_EXPAND_CPU, "expand", ns, njit, "cpu"),
        jit_generated(_CHILD_HOST, "child_host", {"child_c": ns["child_c"]}, njit, "cpu"),
    )
    _CPU_CACHE[child] = kern
    return kern


# --------------------------------------------------------------------------------------------
# GPU path
#
# Generated source too (:func:`gpudp.backends.cuda.generated_kernel`: cached on disk on a real GPU,
# compiled in memory under the simulator). The block size ``TPB``, ``SONS`` = 2 * TPB (a constant
# for cuda.shared.array, which takes no expression), the value type ``VT`` and its lowest value
# ``NEG`` are globals of the generated module; so is ``cuda``, which the simulator swaps inside
# kernels (it cannot swap a closure's).

_CUDA_CACHE: dict = {}

_BLOCK_SCAN = """
def block_inclusive_scan(s, tid):
    off = 1
    while off < TPB:
        t = s[tid - off] if tid >= off else 0
        cuda.syncthreads()
        s[tid] += t
        cuda.syncthreads()
        off *= 2
"""

_REDUCE_BEST = '''
def reduce_best(s_best, s_arg, tid):
    """Tree reduction into slot 0: the largest ``s_best``, ties to the lowest non-negative
    ``s_arg`` (the son with the best lower bound, chosen the same way whatever the block order)."""
    half = TPB // 2
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
'''

_EXPAND_COUNT = """
def expand_count(
    m, level, cut, f0, f1, bits, data, nvars, sym, kb, keep, table, block_count, block_best, block_arg
):
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * TPB + tid
    s_cnt = cuda.shared.array(TPB, numba.int32)
    s_best = cuda.shared.array(TPB, VT)
    s_arg = cuda.shared.array(TPB, numba.int64)
    cnt = 0
    best = NEG
    arg = -1
    if i < m:
        last = level + 1 >= nvars
        blocked = sym[level] != 0 and ((bits[i, (level - 1) >> 5] >> ((level - 1) & 31)) & 1) == 0
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
        block_count[cuda.blockIdx.x] = s_cnt[TPB - 1]
        block_best[cuda.blockIdx.x] = s_best[0]
        block_arg[cuda.blockIdx.x] = s_arg[0]
"""

_SCAN_BLOCKS = '''
def scan_blocks(nblocks, block_count, block_best, block_arg, block_offset, res_i, res_v):
    """One block: exclusive scan of the block counts; total, best lower bound and its son."""
    tid = cuda.threadIdx.x
    s = cuda.shared.array(TPB, numba.int64)
    s_best = cuda.shared.array(TPB, VT)
    s_arg = cuda.shared.array(TPB, numba.int64)
    carry = 0
    best = NEG
    arg = -1
    for base in range(0, nblocks, TPB):
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
        carry += s[TPB - 1]
        cuda.syncthreads()
    s_best[tid] = best
    s_arg[tid] = arg
    cuda.syncthreads()
    reduce_best(s_best, s_arg, tid)
    if tid == 0:
        res_i[0] = carry
        res_i[1] = s_arg[0]
        res_v[0] = s_best[0]
'''

_SCATTER = """
def scatter(
    m, level, f0, f1, bits, data, nvars, keep, table, block_offset, res_i, o0, o1, obits, inc_f, inc_bits
):
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * TPB + tid
    s = cuda.shared.array(TPB, numba.int64)
    son = cuda.shared.array(SONS, numba.int32)  # by rank in the block: 2 * thread + (1 - take)
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
    r = s[tid] - c  # the rank of this thread's first son among the block's
    base = block_offset[cuda.blockIdx.x]
    if i < m:
        pos = base + r
        if k1:
            o0[pos] = a0
            o1[pos] = a1
            son[r] = 2 * tid
            pos += 1
            r += 1
        if k0:
            o0[pos] = b0
            o1[pos] = b1
            son[r] = 2 * tid + 1
        arg = res_i[1]
        if arg >= 0 and arg // 2 == i:
            take = 1 - arg % 2
            inc_f[0] = a0 if take == 1 else b0
            inc_f[1] = a1 if take == 1 else b1
            for w in range(wl):
                inc_bits[w] = bits[i, w]
            inc_bits[wl] = (bits[i, wl] if bp != 0 else 0) | (take << bp)
    cuda.syncthreads()
    # The block's sons take one contiguous run of node-major words (wl + 1 per son): the block
    # writes it together, word q by thread q mod TPB, so that a warp writes consecutive words.
    nw = wl + 1
    q = tid
    while q < s[TPB - 1] * nw:
        r = q // nw
        w = q - r * nw
        p = cuda.blockIdx.x * TPB + (son[r] >> 1)
        if w < wl:
            obits[base + r, w] = bits[p, w]
        else:
            prev = bits[p, wl] if bp != 0 else 0
            obits[base + r, w] = prev | ((1 - (son[r] & 1)) << bp)
        q += TPB
"""

_COMPACT = '''
def compact_kernel(m, values, flags, block_offset, out):
    """Stand-alone separated compaction (used by :func:`compact`): out[rank] = values[i]."""
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * TPB + tid
    s = cuda.shared.array(TPB, numba.int64)
    c = 0
    if i < m and flags[i] != 0:
        c = 1
    s[tid] = c
    cuda.syncthreads()
    block_inclusive_scan(s, tid)
    if c:
        out[block_offset[cuda.blockIdx.x] + s[tid] - 1] = values[i]
'''

_COUNT_FLAGS = """
def count_flags(m, flags, block_count):
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * TPB + tid
    s = cuda.shared.array(TPB, numba.int64)
    s[tid] = 1 if (i < m and flags[i] != 0) else 0
    cuda.syncthreads()
    block_inclusive_scan(s, tid)
    if tid == TPB - 1:
        block_count[cuda.blockIdx.x] = s[tid]
"""


def _cuda_block_funcs(tpb):
    """The namespace every frontier kernel of ``tpb`` threads starts from: ``cuda``, ``numba``,
    ``TPB`` and the block-wide device functions (compiled in memory: the kernels inline them)."""
    key = ("block", tpb)
    if key in _CUDA_CACHE:
        return _CUDA_CACHE[key]
    import numba

    from .backends.cuda import cuda
    from .codegen import compile_source

    ns = {"cuda": cuda, "numba": numba, "TPB": int(tpb)}
    ns["block_inclusive_scan"] = cuda.jit(device=True)(
        compile_source(_BLOCK_SCAN, "block_inclusive_scan", dict(ns))
    )
    ns["reduce_best"] = cuda.jit(device=True)(compile_source(_REDUCE_BEST, "reduce_best", dict(ns)))
    _CUDA_CACHE[key] = ns
    return ns


def _cuda_kernels(child, dtype, tpb):
    key = (child, np.dtype(dtype), tpb)
    if key in _CUDA_CACHE:
        return _CUDA_CACHE[key]
    import numba

    from .backends.cuda import cuda, generated_kernel

    base = _cuda_block_funcs(tpb)
    typed = dict(base, VT=numba.from_dtype(np.dtype(dtype)), NEG=_neg(dtype))
    sons = dict(typed, SONS=2 * int(tpb), child_d=cuda.jit(device=True)(child))
    sons.update(key_d=cuda.jit(device=True)(_key), hash_d=cuda.jit(device=True)(_hash))
    kern = {
        "expand_count": generated_kernel(_EXPAND_COUNT, "expand_count", dict(sons)),
        "scan_blocks": generated_kernel(_SCAN_BLOCKS, "scan_blocks", dict(typed)),
        "scatter": generated_kernel(_SCATTER, "scatter", dict(sons)),
        "compact": generated_kernel(_COMPACT, "compact_kernel", dict(base)),
        "count_flags": generated_kernel(_COUNT_FLAGS, "count_flags", dict(base)),
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


def _stride(level: int) -> int:
    """Bit words stored per node of ``level``: those in use (decisions 0 .. level-1), at least one."""
    return max(1, (level + 31) // 32)


def _block_bytes(budget: int, batch: int, bpn: int) -> int:
    """Host block size of a search: the smallest power of two from BLOCK_BYTES up that holds a batch of
    full-width nodes (``bpn`` bytes each), but at most an eighth of the budget (coarse blocks would
    waste much of a small one)."""
    want = max(BLOCK_BYTES, 1 << (batch * bpn - 1).bit_length())
    return max(bpn, min(want, budget // 8))


class _Lane:
    """One CUDA stream and its device buffers: input and output node arrays (``bits`` flat, viewed
    per stride), block scratch, results in mapped memory, and the events the host waits on."""

    def __init__(self, cuda, dtype, words, cap, nblocks, stream, table_size):
        from .backends.cuda import mapped_empty

        self.stream = stream
        self.cap = cap
        self.keep = cuda.device_array(cap, np.int64)
        self.table = cuda.to_device(np.full(table_size, -1, np.int64))
        self.a = [
            cuda.device_array(cap, dtype),
            cuda.device_array(cap, dtype),
            cuda.device_array(cap * words, np.uint32),
        ]
        self.b = [
            cuda.device_array(cap, dtype),
            cuda.device_array(cap, dtype),
            cuda.device_array(cap * words, np.uint32),
        ]
        self.block_count = cuda.device_array(nblocks, np.int64)
        self.block_best = cuda.device_array(nblocks, dtype)
        self.block_arg = cuda.device_array(nblocks, np.int64)
        self.block_offset = cuda.device_array(nblocks, np.int64)
        # The kernels write the batch's results straight into mapped host memory: no copies.
        self.res_i = mapped_empty(2, np.int64)
        self.res_v = mapped_empty(1, dtype)
        self.inc_f = mapped_empty(2, dtype)
        self.inc_bits = mapped_empty(words, np.uint32)
        self.done = cuda.event()  # recorded after a batch's kernels
        self.copies = []  # (start, end) events of this stream's copies, timed once they have run
        self.m = 0  # nodes of the batch in flight (streamed levels)

    def rows(self, flat, stride):
        """``flat`` (a node array's bits) as ``[cap, stride]``: node-major words of ``stride`` per node."""
        return flat[: self.cap * stride].reshape(self.cap, stride)


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
            "seconds_streamed": 0.0,
            "bytes_per_node": bpn,
            "host_budget_bytes": int(host_budget_bytes),
            "host_budget_nodes": self.max_nodes,
            "largest_host_buffer": 0,
        }
        pool = BlockPool()  # the cpu backend's blocks live as long as the search
        self.cuda = None
        self.lanes = []
        if backend == "cuda":
            from .backends.cuda import cuda

            self.cuda = cuda
            pool = pinned_pool()
            self.tpb = threads or _default_threads()
            self.k = _cuda_kernels(problem.child, self.dtype, self.tpb)
        self.cpu_expand, self.child_c = _cpu_kernels(problem.child)
        if self.max_nodes < 1:
            raise RingFull(f"host budget {host_budget_bytes} B is less than one node ({bpn} B)")
        block = _block_bytes(self.max_nodes * bpn, self.batch, bpn)
        self.ring = Ring(self.dtype, self.words, self.max_nodes, block, pool)
        self.st["host_block_bytes"] = self.ring.block_bytes
        self.t0 = time.perf_counter()

    # -- helpers -------------------------------------------------------------------------
    def _timed_out(self):
        return self.time_limit is not None and time.perf_counter() - self.t0 > self.time_limit

    def _offer(self, value, level, f0, f1, bits):
        if value > self.best:
            self.best = value
            self.inc = (level, f0, f1, np.array(bits, np.uint32, copy=True))

    def _cpu_level(self, level, count):
        """Expand ``count`` ring nodes of ``level`` on the host; sons go to the ring's tail."""
        t = time.perf_counter()
        chunk = 1 << 16
        if self._cpu_out is None:
            self._cpu_out = (
                np.empty(2 * chunk, self.dtype),
                np.empty(2 * chunk, self.dtype),
                np.empty(2 * chunk * self.words, np.uint32),
                np.full(8 * chunk if self.key_bits else 1, -1, np.int64),
                np.empty(2 * chunk, np.int64),
            )
        out_f0, out_f1, out_flat, table, used = self._cpu_out
        s_out = _stride(level + 1)
        out_bits = out_flat[: 2 * chunk * s_out].reshape(2 * chunk, s_out)
        wu = (level + 31) // 32
        done = 0
        while done < count:
            if level and self._timed_out():
                raise _TimeUp()
            for seg in self.ring.pop(min(chunk, count - done)):
                m = len(seg.f0)
                cnt, best, barg = self.cpu_expand(
                    m,
                    level,
                    self.best,
                    self.slack,
                    seg.f0,
                    seg.f1,
                    seg.bits,
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
                    _, c0, c1, _, _ = self.child_c(level, seg.f0[i], seg.f1[i], take, self.p.data, self.n)
                    inc = np.zeros(self.words, np.uint32)
                    inc[:wu] = seg.bits[i, :wu]
                    inc[level >> 5] |= np.uint32(take << (level & 31))
                    self._offer(best, level, c0, c1, inc)
                self.ring.release(m)
                done += m
                self.st["nodes_explored"] += m
                self.ring.push(out_f0[:cnt], out_f1[:cnt], out_bits[:cnt])
        self.st["seconds_cpu"] += time.perf_counter() - t

    # -- GPU -----------------------------------------------------------------------------
    def _launch(self, lane, src, dst, m, level):
        k, tpb, s = self.k, self.tpb, lane.stream
        nb = (m + tpb - 1) // tpb
        cut = self._cut()
        bits, obits = lane.rows(src[2], _stride(level)), lane.rows(dst[2], _stride(level + 1))
        k["expand_count"][nb, tpb, s](
            m,
            level,
            cut,
            src[0],
            src[1],
            bits,
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
            bits,
            self.d_data,
            self.n,
            lane.keep,
            lane.table,
            lane.block_offset,
            lane.res_i,
            dst[0],
            dst[1],
            obits,
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
        """After the lane's kernels have finished: the incumbent; returns the survivors' count."""
        total = int(lane.res_i[0])
        if lane.res_i[1] >= 0 and lane.res_v[0] > self.best:
            self._offer(
                lane.res_v[0].copy(), level, lane.inc_f[0].copy(), lane.inc_f[1].copy(), lane.inc_bits
            )
        return total

    def _mark(self, lane):
        ev = self.cuda.event()
        ev.record(lane.stream)
        return ev

    def _h2d(self, lane, dst, segs, stride):
        """Ring segments -> the lane's node arrays, asynchronously: three copies per segment."""
        s = lane.stream
        bits = lane.rows(dst[2], stride)
        start = self._mark(lane)
        o = 0
        for seg in segs:
            n = len(seg.f0)
            dst[0][o : o + n].copy_to_device(seg.f0, stream=s)
            dst[1][o : o + n].copy_to_device(seg.f1, stream=s)
            bits[o : o + n].copy_to_device(seg.bits, stream=s)
            o += n
        lane.copies.append((start, self._mark(lane)))
        self.st["bytes_h2d"] += o * (2 * self.dtype.itemsize + 4 * stride)

    def _d2h_push(self, lane, src, count, stride):
        """The lane's ``count`` sons -> the ring's tail, asynchronously: the caller waits for the lane
        before the host or another stream reads them."""
        s = lane.stream
        bits = lane.rows(src[2], stride)
        segs = self.ring.push_segments(count, stride)
        start = self._mark(lane)
        o = 0
        for seg in segs:
            n = len(seg.f0)
            src[0][o : o + n].copy_to_host(seg.f0, stream=s)
            src[1][o : o + n].copy_to_host(seg.f1, stream=s)
            bits[o : o + n].copy_to_host(seg.bits, stream=s)
            o += n
        lane.copies.append((start, self._mark(lane)))
        self.st["bytes_d2h"] += count * (2 * self.dtype.itemsize + 4 * stride)

    def _wait(self, lane):
        """Wait for everything issued on the lane; add its copies' device time to ``seconds_swap``."""
        lane.stream.synchronize()
        for start, end in lane.copies:  # the simulator's events carry no time (elapsed -1)
            self.st["seconds_swap"] += max(0.0, start.elapsed_time(end)) / 1e3
        lane.copies.clear()

    def _sync_all(self):
        for lane in self.lanes:
            self._wait(lane)

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

    def _issue(self, lane, level, todo):
        """Pop the lane's next batch (at most ``todo`` nodes), copy it in and launch its kernels."""
        segs = self.ring.pop(min(self.batch, todo))
        lane.m = sum(len(seg.f0) for seg in segs)
        self._h2d(lane, lane.a, segs, _stride(level))
        self._launch(lane, lane.a, lane.b, lane.m, level)
        lane.done.record(lane.stream)
        return lane.m

    def _gpu_streamed_level(self, level, count):
        """Stream ``count`` ring nodes through the GPU in batches on the lanes; sons to the ring's tail.

        Each lane's stream runs copy in, kernels, copy out, next copy in, ... The host waits only for
        a lane's kernels (the survivors' count is then in mapped memory), issues the copy out to the
        ring and the lane's next batch, and turns to the other lane: one lane's copies overlap the
        other's copies and kernels. A batch's ring slots are released once its kernels have run (its
        copy in is then done); the sons pushed during the level are read at the next level only, after
        the final wait for every lane.
        """
        t = time.perf_counter()
        todo = count
        queue = deque()
        for lane in self.lanes:
            if todo:
                todo -= self._issue(lane, level, todo)
                queue.append(lane)
        while queue:
            lane = queue.popleft()
            lane.done.synchronize()
            self.ring.release(lane.m)
            total = self._finish(lane, level)
            if total:
                self._d2h_push(lane, lane.b, total, _stride(level + 1))
            if todo:
                if self._timed_out():
                    raise _TimeUp()
                todo -= self._issue(lane, level, todo)
                queue.append(lane)
        self._sync_all()
        dt = time.perf_counter() - t
        self.st["seconds_gpu"] += dt
        self.st["seconds_streamed"] += dt

    # -- driver --------------------------------------------------------------------------
    def run(self):
        p = self.p
        root_f0 = np.array([p.root[0]], self.dtype)
        root_f1 = np.array([p.root[1]], self.dtype)
        self.ring.push(root_f0, root_f1, np.zeros((1, 1), np.uint32))
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
                        self._d2h_push(self.lanes[0], self.lanes[0].a, m, _stride(level))
                        self._wait(self.lanes[0])
                        where = "ring"
                    self.st["cpu_levels"] += 1
                    self._cpu_level(level, m)
                    m = self.ring.available
                elif where == "device" or m <= self.batch:
                    if where == "ring":
                        lane = self.lanes[0]
                        self._h2d(lane, lane.a, self.ring.pop(m), _stride(level))
                        self._wait(lane)
                        self.ring.release(m)
                        where = "device"
                    self.st["gpu_levels"] += 1
                    m = self._gpu_resident_level(level, m)
                    if m > self.batch:
                        self._d2h_push(self.lanes[0], self.lanes[0].a, m, _stride(level + 1))
                        self._wait(self.lanes[0])
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
        finally:
            self._sync_all()  # no copy may still use a block when the ring gives them back
            self.st["largest_host_bytes"] = self.ring.largest_bytes
            self.st["host_blocks_new"] = self.ring.new_blocks
            self.st["host_blocks_reused"] = self.ring.reused_blocks
            self.st["seconds_host_alloc"] = self.ring.seconds_alloc
            self.ring.close()
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
    the most the host ring's blocks may take. Returns the incumbent (the best son seen, whose
    ``lower`` completion the problem rebuilds) and whether the search completed.
    """
    if problem.n_vars < 1:
        raise ValueError("a branching problem needs at least one variable")
    if batch < 1:
        raise ValueError("batch must be >= 1")
    return _Search(problem, backend, host_budget_bytes, batch, cpu_threshold, threads, time_limit).run()
