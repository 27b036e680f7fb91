"""The knapsack batch on the GPU (:func:`launch`): one thread block per instance, the DP row in shared
memory, the 0/1 vectors walked back on the device. Imported only when the cuda backend runs; the
host side (intake, the int32/int64 rule, checks, results) is :mod:`gpudp.problems.knapsack.batch`.

The DP kernel (``knapsack_rows``)
---------------------------------
Block ``k`` solves instance ``k`` of its launch. The row ``f(0..C)`` lives in shared memory (dynamic,
``(C + 1)`` values; in device memory, one slice per instance, when it does not fit a block's shared
memory) and is updated *in place*, item after item: for item ``t`` the block runs down the row in
strips of ``UNROLL * THREADS`` capacities from the top, every thread computing its cells of the strip
(``max(f(c), f(c - w_t) + p_t)``) before a barrier and storing them after it. A cell reads only
itself and cells below it, and the next strip's reads lie below this strip's stores, so one barrier
a strip is enough (the engine's blocked kernel does the same, docs/architecture.md section 5).
Threads of a warp take 32 consecutive, 32-aligned capacities: the shared-memory loads are
conflict-free, and the warp's 32 decision bits ("item ``t`` improved capacity ``c``") are gathered
with ``ballot_sync`` into one word that lane 0 writes: ``n * ceil((C + 1) / 32)`` uint32 words an
instance, in device memory. Indices are cast to unsigned where they are used (``U32``, ``U64``), so
that numba emits no negative-index wraparound in the inner loop (three 64-bit operations an access
fewer; 27 registers a thread for sm_90 by ptxas, no spills).

Items with a profit <= 0 or heavier than ``C`` are skipped (never taken). Of the others, item ``t``
computes only the capacities ``lo_t .. hi_t`` that can matter (the single DP's two trims,
docs/knapsack_dp.md): ``hi_t = min(C, S_t)``, ``S_t`` the weight of the items up to ``t``, since
``f_t(c) = f_t(S_t)`` above it (a cell reads the row at ``min(c, S_{t-1})``); and
``lo_t = max(0, hi_t - R_t)``, ``R_t`` the weight of the items after ``t``, since the walk back from
``C`` never goes below. On the issue-15 workload (capacity half the weights) that skips about half
of the ``n (C + 1)`` cells.

The walk back (``knapsack_walk``) is a second kernel, one thread an instance: from ``c = C`` and the
last item down, ``c = min(c, S_t)``, take item ``t`` when its bit at ``c`` is set (``c -= w_t``). It
runs apart from the DP so that no block idles through a serial walk; the decision words stay on the
device and only the 0/1 vectors (one byte an item) and the optima come back.

Values, chunks, launches
------------------------
- **int32 or int64, per instance, exact**: int32 when the positive profits of the items that fit
  (``w <= C``) sum below 2^31 (every ``f(c)`` is at most that sum), else int64 (the batch admits only
  instances whose profits' magnitudes sum below 2^62). int32 halves the row, so more blocks fit an
  SM. The rule is applied by the caller (``small``); instances of each type run in their own
  launches.
- **Launch classes**: instances are grouped by value type, by where the row lives (shared memory or
  device memory), by threads a block (``THREADS``, fewer for small capacities) and by how many such
  blocks fit an SM's shared memory, so that one large capacity does not lower the occupancy of
  a launch of smaller ones. Within a class, instances go in decreasing order of cells (the block
  scheduler takes blocks in about that order: the largest start first).
- **Chunks**: a launch holds as many instances as keep its device memory (decision words, rows in
  device memory, inputs and outputs) within :data:`DEVICE_SHARE` of the free device memory (or
  :data:`CHUNK_BYTES` when set); the words and rows buffers are allocated once, at the largest
  chunk, and reused, since every launch goes on one stream. An instance that alone exceeds the
  budget is *refused* (:attr:`Launch.refused`): the caller solves it on its own.
- Copies and kernels of all chunks are queued on one stream; the host is free (it solves the
  instances that left the batch) until :meth:`Launch.finish`. No copy/compute overlap between
  chunks: on the target workload (10,000 instances of n = 100) the inputs are 8 MB and one chunk.

Under the CUDA simulator the blocks have 32 threads, one cell a thread a strip, and shared memory
holds at most :data:`SIM_SMEM` bytes, so that tiny test instances span several strips and take both
the shared and the device-memory row.
"""

from __future__ import annotations

import time

import numpy as np

# coop_blocks: the backend's one place that specialises a kernel and opts it in to more than 48 KiB
# of dynamic shared memory (its co-resident block count is reported, not used: the launch is not
# cooperative)
from gpudp.backends.cuda import (
    coop_blocks,
    cuda,
    event,
    generated_kernel,
    memory_info,
    sim_geometry,
    stream,
)
from gpudp.codegen import fill
from gpudp.kernel import factory

__all__ = ["launch", "launch_batch", "Launch", "THREADS", "UNROLL", "DEVICE_SHARE", "INT32_LIMIT"]

#: an instance whose DP's values stay below this runs in int32 (:func:`launch_batch`)
INT32_LIMIT = 1 << 31
#: threads a block of the DP kernel (at most; a small capacity takes fewer, at least 32)
THREADS = 512
#: cells a thread computes per strip (all loaded before any is stored)
UNROLL = 2
#: threads a block of the walk-back kernel (one instance a thread)
WALK_THREADS = 128
#: the share of the free device memory a chunk may take
DEVICE_SHARE = 0.5
#: bytes a chunk may take at most, when set (tests and tuning); None: :data:`DEVICE_SHARE` decides
CHUNK_BYTES: int | None = None
#: shared memory the driver keeps for itself per block (sm 8.0 and later)
SMEM_RESERVE = 1024
#: shared memory of a block under the simulator (bytes): small, so that tests take both row kinds
SIM_SMEM = 160

# Instance k of the launch: its items a0 .. a0 + n - 1, capacity C, G decision words an item from
# dbase, and tot, the weight of the items that can be taken (profit > 0, weight <= C)
_INSTANCE = """
a0 = off[k]
n = off[k + 1] - a0
C = caps[k]
G = (C + 32) >> 5
dbase = doff[k]
tot = 0
for i in range(n):
    if p[a0 + i] > 0 and w[a0 + i] <= C:
        tot += w[a0 + i]
"""

_DP = """
def knapsack_rows(p, w, off, caps, doff, dec, rows, roff, values):
    th = cuda.threadIdx.x
    nt = cuda.blockDim.x
    lane = th & 31
    k = cuda.blockIdx.x
    {instance}
    {row}
    {prologue}
    c = th
    while c <= C:
        row[c] = VT(0)
        c += nt
    cuda.syncthreads()
    S = 0
    for t in range(n):
        wt = w[a0 + t]
        pt = p[a0 + t]
        if pt > 0 and wt <= C:
            Sp = S
            S += wt
            hi = min(C, S)
            lo = max(0, hi - (tot - S))
            dw = dbase + t * G
            top = ((hi + 32) >> 5) << 5
            while top > lo:
                strip = top - UNROLL * nt
                {cells}
                cuda.syncthreads()
                {stores}
                top = strip
            cuda.syncthreads()
    if th == 0:
        values[k] = row[min(C, tot)]
"""

_CELL = """
cc{u} = strip + {u} * nt + th
ok{u} = cc{u} >= lo and cc{u} <= hi
vv{u} = VT(0)
dd{u} = 0
if ok{u}:
    vv{u} = row[U32(min(cc{u}, Sp))]
    if cc{u} >= wt:
        bb{u} = VT(row[U32(cc{u} - wt)] + pt)
        if bb{u} > vv{u}:
            vv{u} = bb{u}
            dd{u} = 1
"""

_STORE = """
if ok{u}:
    row[U32(cc{u})] = vv{u}
{ballot}
if lane == 0 and cc{u} + 31 >= lo and cc{u} <= hi:
    dec[U64(dw + (cc{u} >> 5))] = mm{u}
"""

# the simulator has no warp ballot: the bits go through shared memory
_SIM_BALLOT = """
bal[th] = dd{u}
cuda.syncthreads()
mm{u} = 0
if lane == 0:
    for xb in range(32):
        mm{u} |= bal[th + xb] << xb
cuda.syncthreads()
"""

_WALK = """
def knapsack_walk(p, w, off, caps, doff, dec, x):
    k = cuda.grid(1)
    if k >= caps.shape[0]:
        return
    {instance}
    S = tot
    c = C
    for t in range(n - 1, -1, -1):
        wt = w[a0 + t]
        xt = 0
        if p[a0 + t] > 0 and wt <= C:
            cc = min(c, S)
            if (dec[U64(dbase + t * G + (cc >> 5))] >> (cc & 31)) & 1:
                xt = 1
                cc -= wt
            c = cc
            S -= wt
        x[a0 + t] = xt
"""


def _unroll() -> int:
    return sim_geometry(UNROLL, 1)


@factory("knapsack.cuda.dp")
def _dp_kernel(vt: str, shared: bool, unroll: int):
    """The DP kernel for values of type ``vt`` ("int32" or "int64"), its row in shared memory or in
    device memory (``rows[roff[k]:]``), ``unroll`` cells a thread a strip."""
    import numba

    row = "row = cuda.shared.array(0, VT)" if shared else "row = rows[roff[k] : roff[k] + C + 1]"
    ballot = sim_geometry("mm{u} = cuda.ballot_sync(0xFFFFFFFF, dd{u} != 0)", _SIM_BALLOT)
    cells = "".join(_CELL.format(u=u) for u in range(unroll))
    stores = "".join(_STORE.format(u=u, ballot=ballot.format(u=u)) for u in range(unroll))
    src = fill(
        _DP,
        instance=_INSTANCE.strip("\n"),
        row=row,
        prologue=sim_geometry("pass", "bal = cuda.shared.array(1024, np.int64)"),
        cells=cells.strip("\n"),
        stores=stores.strip("\n"),
    )
    ns = {
        "cuda": cuda,
        "np": np,
        "VT": getattr(numba, vt),
        "UNROLL": unroll,
        "U32": numba.uint32,
        "U64": numba.uint64,
    }
    return generated_kernel(src, "knapsack_rows", ns)


@factory("knapsack.cuda.walk")
def _walk_kernel():
    import numba

    src = fill(_WALK, instance=_INSTANCE.strip("\n"))
    return generated_kernel(src, "knapsack_walk", {"cuda": cuda, "U64": numba.uint64})


def _smem_limits() -> tuple[int, int]:
    """(shared memory a block may opt in to, shared memory of an SM), in bytes."""
    sim = sim_geometry(None, (SIM_SMEM, 4 * SIM_SMEM))
    if sim:
        return sim
    dev = cuda.get_current_device()
    try:
        block = int(dev.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
    except Exception:
        block = 48 * 1024
    try:
        sm = int(dev.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
    except Exception:
        sm = block + SMEM_RESERVE
    return block, sm


def _ranges(off: np.ndarray, ks: np.ndarray) -> np.ndarray:
    """The item positions of instances ``ks`` (in that order), concatenated."""
    n = off[ks + 1] - off[ks]
    if not len(ks):
        return np.zeros(0, np.int64)
    first = np.zeros(len(ks), np.int64)
    np.cumsum(n[:-1], out=first[1:])
    return np.repeat(off[ks] - first, n) + np.arange(int(n.sum()), dtype=np.int64)


class _Chunk:
    """One launch: instances ``ks`` (positions in the batch), its inputs on the device and its outputs."""

    def __init__(self, ks, items, vt, shared, threads, smem, words, row_cells):
        self.ks, self.items, self.vt, self.shared = ks, items, vt, shared
        self.threads, self.smem, self.words, self.row_cells = threads, smem, words, row_cells
        self.d_x = self.d_values = self.args = None
        self.resident = 0

    def upload(self, p, w, off, caps, s) -> tuple:
        """Its inputs on the device (queued on stream ``s``), as the DP kernel takes them but for the
        decision words, the rows and the optima: profits clipped at 0 in its value type, weights
        past the capacity clipped to ``C + 1`` (both mean "never taken", and fit int32), item and
        decision-word offsets, capacities, row offsets (rows in device memory)."""
        ks = self.ks
        n, cap = off[ks + 1] - off[ks], caps[ks]
        loc, doff, roff = (
            np.zeros(len(ks) + 1, np.int64),
            np.zeros(len(ks), np.int64),
            np.zeros(len(ks), np.int64),
        )
        np.cumsum(n, out=loc[1:])
        np.cumsum((n * ((cap + 32) >> 5))[:-1], out=doff[1:])
        if not self.shared:
            np.cumsum((cap + 1)[:-1], out=roff[1:])
        pk = np.maximum(p[self.items], 0).astype(self.vt)  # int32: positive profits sum below 2^31
        wk = np.minimum(w[self.items], np.repeat(cap + 1, n)).astype(np.int32)  # C < 2^30
        host = (pk, wk, loc, cap.astype(np.int32), doff, roff)
        return tuple(cuda.to_device(a, stream=s) for a in host)


class Launch:
    """A batch on its way through the GPU: :func:`launch` queues it, :meth:`finish` waits for it.

    ``refused`` lists the instances (positions in the batch) that were not queued, each needing more
    device memory than a chunk may take; ``info`` describes the launches (for ``stats.extra``)."""

    def __init__(self, m, n_items, chunks, refused, start, end, info):
        self.m, self.n_items, self.chunks, self.refused = m, n_items, chunks, refused
        self.start, self.end, self.info = start, end, info
        #: what goes to the batch's ``stats.extra`` and ``host_seconds`` (:func:`launch_batch`)
        self.figures, self.host_seconds = {"cuda": info}, {}

    def finish(self) -> tuple[np.ndarray, np.ndarray, float]:
        """``(values, x, kernel seconds)``: the optimum of every queued instance (0 for the others,
        whose items' ``x`` stay 0), the 0/1 vectors concatenated in the batch's item order, and the
        seconds from the first launch's start to the last one's end (CUDA events; 0 under the
        simulator)."""
        values = np.zeros(self.m, np.int64)
        x = np.zeros(self.n_items, np.int8)
        if not self.chunks:
            return values, x, 0.0
        self.end.synchronize()
        for ch in self.chunks:
            values[ch.ks] = ch.d_values.copy_to_host()
            x[ch.items] = ch.d_x.copy_to_host()
        try:
            seconds = self.start.elapsed_time(self.end) / 1e3
        except Exception:  # the simulator's events carry no time
            seconds = 0.0
        return values, x, max(seconds, 0.0)


def _classes(caps, small, unroll: int, threads_max: int):
    """Per instance: the value bytes (4 or 8), whether its row fits a block's shared memory, the
    threads of its block (enough for one strip to cover the row, 32 to ``threads_max``), how many
    such blocks an SM holds (0 for a row in device memory), and its row's bytes."""
    smem_block, smem_sm = _smem_limits()
    itemsize = np.where(small, 4, 8).astype(np.int64)
    row_bytes = (caps + 1) * itemsize
    shared = row_bytes <= smem_block
    want = np.ceil(np.log2(np.maximum(-(-(caps + 1) // unroll), 1))).astype(np.int64)
    threads = np.clip(np.left_shift(1, want), 32, threads_max)
    per_sm = np.where(shared, smem_sm // (row_bytes + SMEM_RESERVE), 0)
    per_sm = np.minimum(per_sm, 2048 // threads)
    return itemsize, shared, threads, per_sm, row_bytes


def _plan(off, caps, small, budget: int, unroll: int, threads_max: int) -> tuple[list, np.ndarray]:
    """The launches of a batch: ``(chunks, refused)``. Instances are grouped by launch class (value
    type, row in shared or device memory, threads, blocks an SM), each class in decreasing order of
    cells, and cut into chunks of at most ``budget`` bytes of device memory; an instance that alone
    needs more is refused, one without items needs no launch."""
    n = np.diff(off)
    itemsize, shared, threads, per_sm, row_bytes = _classes(caps, small, unroll, threads_max)
    words = n * ((caps + 32) >> 5)
    need = words * 4 + np.where(shared, 0, row_bytes) + n * (itemsize + 5) + 64
    refused = np.flatnonzero((n > 0) & (need > budget))
    qs = np.flatnonzero((n > 0) & (need <= budget))
    key = np.stack([itemsize, shared, threads, per_sm]).astype(np.int64)[:, qs]
    sort = np.lexsort((-(n[qs] * (caps[qs] + 1)), *key[::-1]))
    order, key = qs[sort], key[:, sort]
    cut = np.flatnonzero((key[:, 1:] != key[:, :-1]).any(axis=0)) + 1
    chunks = []
    for cls in np.split(order, cut) if len(order) else []:
        i = 0
        cum = np.cumsum(need[cls])
        while i < len(cls):
            before = cum[i - 1] if i else 0
            j = max(i + 1, int(np.searchsorted(cum, before + budget, side="right")))
            ks = cls[i:j]
            sh = bool(shared[ks[0]])
            chunks.append(
                _Chunk(
                    ks,
                    _ranges(off, ks),
                    "int32" if itemsize[ks[0]] == 4 else "int64",
                    sh,
                    int(threads[ks[0]]),
                    int(row_bytes[ks].max()) if sh else 0,
                    int(words[ks].sum()),
                    0 if sh else int((caps[ks] + 1).sum()),
                )
            )
            i = j
    return chunks, refused


def launch(p, w, off, caps, small) -> Launch:
    """Queue the DP and the walk back of a batch of integer knapsacks on the GPU.

    Parameters
    ----------
    p, w : int64 arrays
        the profits and weights of every instance, concatenated; ``off`` (int64, ``m + 1``) the
        offsets of each instance's items.
    caps : int64 array
        the capacities; every instance must have ``n * (C + 1) < 2^31`` and profits whose magnitudes
        sum below 2^62 (:func:`gpudp.problems.knapsack.batch.solve_many` admits only such).
    small : bool array
        True where the instance's DP stays below 2^31 (its positive profits of items ``w <= C`` sum
        below it): int32 values, else int64.

    Returns
    -------
    Launch
        :meth:`Launch.finish` gives the optima and the 0/1 vectors; :attr:`Launch.refused` the
        instances left out (too large for the device memory a chunk may take).
    """
    m = len(caps)
    unroll = _unroll()
    budget = CHUNK_BYTES if CHUNK_BYTES is not None else int(memory_info()[0] * DEVICE_SHARE)
    chunks, refused = _plan(off, caps, small, budget, unroll, sim_geometry(THREADS, 32))
    info = {"launches": len(chunks), "refused": len(refused)}
    if not chunks:
        return Launch(m, len(p), [], refused, None, None, info)
    s = stream()
    d_dec = cuda.device_array(max(ch.words for ch in chunks) + 1, np.uint32, stream=s)
    d_rows = {None: cuda.device_array(1, np.int64, stream=s)}  # unused by rows in shared memory
    for vt in {ch.vt for ch in chunks if not ch.shared}:
        cells = max(ch.row_cells for ch in chunks if ch.vt == vt)
        d_rows[vt] = cuda.device_array(cells, np.dtype(vt), stream=s)
    start, stop = event(), event()
    start.record(s)
    walk = _walk_kernel()
    for ch in chunks:
        d_p, d_w, d_off, d_caps, d_doff, d_roff = ch.upload(p, w, off, caps, s)
        ch.d_values = cuda.device_array(len(ch.ks), np.int64, stream=s)
        ch.d_x = cuda.device_array(len(ch.items), np.int8, stream=s)
        rows = d_rows[None if ch.shared else ch.vt]
        args = (d_p, d_w, d_off, d_caps, d_doff, d_dec, rows, d_roff, ch.d_values)
        # compiles for these arguments, opts in to shared memory past 48 KiB, and says how many
        # blocks the GPU holds at once (its cooperative-launch limit)
        kernel, ch.resident = coop_blocks(
            _dp_kernel(ch.vt, ch.shared, unroll), args, ch.threads, 1 << 30, ch.smem
        )
        kernel[len(ch.ks), ch.threads, s, ch.smem](*args)
        blocks = (len(ch.ks) + WALK_THREADS - 1) // WALK_THREADS
        walk[blocks, WALK_THREADS, s](d_p, d_w, d_off, d_caps, d_doff, d_dec, ch.d_x)
        ch.args = args  # alive until finish(): freeing device memory a queued kernel reads would wait
    stop.record(s)
    info.update(
        threads=sorted({ch.threads for ch in chunks}),
        shared_bytes_max=max(ch.smem for ch in chunks),
        resident_blocks=sorted({ch.resident for ch in chunks}),
        decision_bytes=4 * max(ch.words for ch in chunks),
        int64_instances=int(sum(len(ch.ks) for ch in chunks if ch.vt == "int64")),
        device_rows=int(sum(len(ch.ks) for ch in chunks if not ch.shared)),
    )
    return Launch(m, len(p), chunks, refused, start, stop, info)


def launch_batch(pack) -> Launch:
    """:func:`launch` of the batch's packed instances (``p``, ``w``, ``off``, ``caps``; the
    ``knapsack.batch`` family's lowering), int32 values where an instance's DP stays below
    :data:`INT32_LIMIT` (``pack.fit_profits()``); ``host_seconds["launch"]``: the host's seconds to
    plan, copy and queue them."""
    t = time.perf_counter()
    run = launch(pack.p, pack.w, pack.off, pack.caps, pack.fit_profits() < INT32_LIMIT)
    run.host_seconds["launch"] = time.perf_counter() - t
    return run
