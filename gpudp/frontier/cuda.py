"""The frontier engine's GPU path: the expand / scan / scatter kernels, the two CUDA-stream lanes and
:class:`CudaSearch`, which puts a search's large levels on the GPU. Imported only when the cuda
backend runs.

The kernels are generated source (:func:`gpudp.backends.cuda.generated_kernel`: cached on disk on a
real GPU, compiled in memory under the simulator). The block size ``TPB``, ``SONS`` = 2 * TPB (a
constant for cuda.shared.array, which takes no expression), the value type ``VT`` and its lowest
value ``NEG`` are globals of the generated module; so is ``cuda``, which the simulator swaps inside
kernels (it cannot swap a closure's).
"""

from __future__ import annotations

import math
import time
from collections import deque

import numba
import numpy as np

from ..backends.cuda import cuda, generated_kernel, mapped_empty, memory_info, sim_geometry, stream
from ..codegen import compile_source
from ..errors import InputError
from ..kernel import KernelFactory, load
from . import cuda_code as K
from .nodes import lowest, node_hash, node_key, stride
from .search import Search, TimeUp

__all__ = ["CudaSearch", "compact", "exclusive_scan", "default_threads", "make_search"]

DEFAULT_THREADS = 256

#: the block-wide device functions of a block size, and the kernels of a child function and dtype
_BLOCK_FUNCS = KernelFactory("frontier.cuda.block", "tpb")
_KERNELS = KernelFactory("frontier.cuda", "child", "dtype", "tpb")


def _cuda_block_funcs(tpb):
    """The namespace every frontier kernel of ``tpb`` threads starts from: ``cuda``, ``numba``,
    ``TPB`` and the block-wide device functions (compiled in memory: the kernels inline them)."""
    k = _BLOCK_FUNCS.lookup(tpb=tpb)
    if k.ready:
        return k.fn
    ns = {"cuda": cuda, "numba": numba, "TPB": int(tpb)}
    ns["block_inclusive_scan"] = cuda.jit(device=True)(load(K.block_inclusive_scan, dict(ns), compile_source))
    ns["reduce_best"] = cuda.jit(device=True)(load(K.reduce_best, dict(ns), compile_source))
    return k.keep(ns).fn


def _cuda_kernels(child, dtype, tpb):
    k = _KERNELS.lookup(child=child, dtype=np.dtype(dtype), tpb=tpb)
    if k.ready:
        return k.fn
    base = _cuda_block_funcs(tpb)
    typed = dict(base, VT=numba.from_dtype(np.dtype(dtype)), NEG=lowest(dtype))
    sons = dict(typed, SONS=2 * int(tpb), child_d=cuda.jit(device=True)(child))
    sons.update(key_d=cuda.jit(device=True)(node_key), hash_d=cuda.jit(device=True)(node_hash))
    kern = {
        "expand_count": load(K.expand_count, dict(sons), generated_kernel),
        "scan_blocks": load(K.scan_blocks, dict(typed), generated_kernel),
        "scatter": load(K.scatter, dict(sons), generated_kernel),
        "compact": load(K.compact_kernel, dict(base), generated_kernel),
        "count_flags": load(K.count_flags, dict(base), generated_kernel),
    }
    return k.keep(kern).fn


def default_threads():
    return sim_geometry(DEFAULT_THREADS, 32)


def _dummy_child(level, f0, f1, take, data, nvars):
    return True, f0, f1, f0, f1


def exclusive_scan(counts: np.ndarray, threads: int | None = None) -> tuple[np.ndarray, int]:
    """Exclusive scan of int64 ``counts`` on the GPU (the block-offset kernel); (offsets, total)."""
    counts = np.ascontiguousarray(counts, np.int64)
    n = len(counts)
    if n == 0:
        return np.zeros(0, np.int64), 0
    tpb = threads or default_threads()
    k = _cuda_kernels(_dummy_child, np.int64, tpb)
    d_off = cuda.device_array(n, np.int64)
    res_i = cuda.device_array(2, np.int64)
    res_v = cuda.device_array(1, np.int64)
    best = cuda.to_device(np.zeros(n, np.int64))
    arg = cuda.to_device(np.full(n, -1, np.int64))
    k["scan_blocks"][1, tpb](n, cuda.to_device(counts), best, arg, d_off, res_i, res_v)
    return d_off.copy_to_host(), int(res_i.copy_to_host()[0])


def compact(values: np.ndarray, flags: np.ndarray, threads: int | None = None):
    """``values[flags != 0]`` in order, by the engine's scan-based separated compaction on the GPU."""
    values = np.ascontiguousarray(values)
    flags = np.ascontiguousarray(flags, np.int8)
    tpb = threads or default_threads()
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


def make_search(
    problem, pool, host_budget_bytes, batch, cpu_threshold, time_limit, threads=None
) -> CudaSearch:
    """A search with its large levels on the GPU, ``threads`` a block (the frontier's cuda lowering)."""
    return CudaSearch(problem, pool, host_budget_bytes, batch, cpu_threshold, time_limit, threads)


class _Lane:
    """One CUDA stream and its device buffers: input and output node arrays (``bits`` flat, viewed
    per stride), block scratch, results in mapped memory, and the events the host waits on."""

    def __init__(self, dtype, words, cap, nblocks, stream, table_size):
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


#: the lanes of the latest search, kept for the next of the same shape (allocation is slow)
LANES: dict = {}


def _check_lanes(batch, cap, nblocks, table, itemsize, words) -> None:
    """Refuse a ``batch`` whose two lanes' device arrays cannot fit the GPU's free memory, before
    allocating any (an allocation failure half way is a CUDA error, not an answer)."""
    node = 2 * itemsize + 4 * words
    need = 2 * (2 * cap * node + 8 * cap + 8 * table + nblocks * (24 + itemsize))
    free, _ = memory_info()
    if need > free:
        raise InputError(
            "batch",
            f"a batch of {batch} nodes needs {need / 2**30:.2f} GiB of GPU memory for its two lanes, "
            f"{free / 2**30:.2f} GiB are free: lower batch",
        )


class CudaSearch(Search):
    """:class:`gpudp.frontier.search.Search` with large levels on the GPU (see :mod:`gpudp.frontier`)."""

    def __init__(self, problem, pool, host_budget_bytes, batch, cpu_threshold, time_limit, threads=None):
        super().__init__(problem, pool, host_budget_bytes, batch, cpu_threshold, time_limit)
        self.tpb = threads or default_threads()
        self.k = _cuda_kernels(problem.child, self.dtype, self.tpb)
        self.lanes = []
        self.where = "ring"  # or "device": the level's nodes are resident in lanes[0].a

    def _level(self, level, m):
        """A level of fewer than ``cpu_threshold`` nodes on the host; one of at most ``batch`` nodes
        (or already on the device) resident on the GPU; a larger one streamed from the ring."""
        if m < self.cpu_threshold:
            if self.where == "device":
                self._d2h_push(self.lanes[0], self.lanes[0].a, m, stride(level))
                self._wait(self.lanes[0])
                self.where = "ring"
            return super()._level(level, m)
        if self.where == "device" or m <= self.batch:
            if self.where == "ring":
                lane = self.lanes[0]
                self._h2d(lane, lane.a, self.ring.pop(m), stride(level))
                self._wait(lane)
                self.ring.release(m)
                self.where = "device"
            self.st["gpu_levels"] += 1
            m = self._gpu_resident_level(level, m)
            if m > self.batch:
                self._d2h_push(self.lanes[0], self.lanes[0].a, m, stride(level + 1))
                self._wait(self.lanes[0])
                self.where = "ring"
        else:
            self.st["gpu_levels"] += 1
            self.st["streamed_levels"] += 1
            self._gpu_streamed_level(level, m)
            return self.ring.available
        return m

    def _launch(self, lane, src, dst, m, level):
        k, tpb, s = self.k, self.tpb, lane.stream
        nb = (m + tpb - 1) // tpb
        cut = self._cut()
        bits, obits = lane.rows(src[2], stride(level)), lane.rows(dst[2], stride(level + 1))
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
        ev = cuda.event()
        ev.record(lane.stream)
        return ev

    def _copy(self, lane, dev, segs, stride, to_device):
        """Asynchronous copies on the lane between its node arrays ``dev`` and ring segments, three
        per segment; returns the nodes copied."""
        s = lane.stream
        bits = lane.rows(dev[2], stride)
        start = self._mark(lane)
        o = 0
        for seg in segs:
            n = len(seg.f0)
            for d, h in ((dev[0], seg.f0), (dev[1], seg.f1), (bits, seg.bits)):
                if to_device:
                    d[o : o + n].copy_to_device(h, stream=s)
                else:
                    d[o : o + n].copy_to_host(h, stream=s)
            o += n
        lane.copies.append((start, self._mark(lane)))
        return o

    def _h2d(self, lane, dst, segs, stride):
        """Ring segments -> the lane's node arrays, asynchronously."""
        o = self._copy(lane, dst, segs, stride, True)
        self.st["bytes_h2d"] += o * (2 * self.dtype.itemsize + 4 * stride)

    def _d2h_push(self, lane, src, count, stride):
        """The lane's ``count`` sons -> the ring's tail, asynchronously: the caller waits for the lane
        before the host or another stream reads them."""
        self._copy(lane, src, self.ring.push_segments(count, stride), stride, False)
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

    def _setup(self):
        self.d_data = cuda.to_device(np.ascontiguousarray(self.p.data))
        self.d_sym = cuda.to_device(self.sym)
        dedupe = self.key_bits > 0
        key = (self.dtype, self.words, self.batch, self.tpb, dedupe)
        if key not in LANES:  # kept for the next search of the same shape (allocation is slow)
            LANES.clear()
            cap = 2 * self.batch
            nb = (self.batch + self.tpb - 1) // self.tpb
            table = 1 << (4 * self.batch - 1).bit_length() if dedupe else 1
            _check_lanes(self.batch, cap, nb, table, self.dtype.itemsize, self.words)
            LANES[key] = [_Lane(self.dtype, self.words, cap, nb, stream(), table) for _ in range(2)]
        self.lanes = LANES[key]

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
        self._h2d(lane, lane.a, segs, stride(level))
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
                self._d2h_push(lane, lane.b, total, stride(level + 1))
            if todo:
                if self._timed_out():
                    raise TimeUp()
                todo -= self._issue(lane, level, todo)
                queue.append(lane)
        self._sync_all()
        dt = time.perf_counter() - t
        self.st["seconds_gpu"] += dt
        self.st["seconds_streamed"] += dt
