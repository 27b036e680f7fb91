"""The interval batch on the GPU (:mod:`gpudp.many.intervals`): a warp an instance where the cell's
split-point loop can be shared (:func:`gpudp.interval.split.warp_cell`: the lanes take turns through
each cell's loop, lane 0 stores, the warp's barrier before the next cell), else a thread an
instance; the tables in device memory, the chunk's arrays up and back whole."""

from __future__ import annotations

import time

import numpy as np

from ... import values
from ...backends.cuda import (
    GROUP_BUFFERS,
    CudaKernel,
    cell_namespace,
    coop_blocks,
    cuda,
    generated_kernel,
    group_namespace,
    sim_geometry,
    stream,
)
from ...codegen import fill
from ...kernel import KernelFactory
from .. import source
from . import sweep_source

_RUN_INTERVALS = """def run_intervals(nq, ids, shapes, toff, S, D, FL{pk}):
    q = cuda.grid(1)
    if q < nq:
        {body}
"""

_RUN_INTERVAL_WARPS = """def run_interval_warps(nq, ids, shapes, toff, S, CC, D, FL{pk}):
    q = (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x) >> 5
    lane = cuda.laneid
    {buffers}
    if q < nq:
        {body}
"""

_INTERVAL_KERNELS = KernelFactory("many.cuda.intervals", "rec", "kinds", kernel=CudaKernel)
_INTERVAL_WARP_KERNELS = KernelFactory("many.cuda.interval_warps", "rec", "kinds", kernel=CudaKernel)
#: threads a block of the interval batch's kernel (a thread an instance)
INTERVAL_THREADS = 128
#: instances of at least this size run a warp an instance, where the cell's split-point loop can be
#: shared (:func:`gpudp.interval.split.warp_cell`); smaller ones a thread an instance
INTERVAL_WARP_FROM = 48


def interval_kernel(rec_cls, kinds):
    """The interval batch's kernel of ``rec_cls`` for packed items of ``kinds`` (its sweep of an
    instance: :func:`gpudp.many.intervals.sweep_source`), built once per class and kinds."""
    k = _INTERVAL_KERNELS.lookup(rec=rec_cls, kinds=tuple(kinds))
    if not k.ready:
        src = fill(_RUN_INTERVALS, pk=source.packed_args(len(kinds)), body=sweep_source(rec_cls, kinds))
        k = k.keep(generated_kernel(values.expand(src, rec_cls), "run_intervals", cell_namespace(rec_cls)))
    return k.fn


def interval_warp_kernel(rec_cls, kinds):
    """The interval batch's kernel a warp an instance (:func:`gpudp.many.intervals.sweep_source` by a warp),
    built once per class and kinds, or the reason there is none (a str: the cell's loop cannot be
    shared)."""
    from ...interval.cuda import warp_cell

    wcell = warp_cell(rec_cls)
    if isinstance(wcell, str):
        return wcell
    k = _INTERVAL_WARP_KERNELS.lookup(rec=rec_cls, kinds=tuple(kinds))
    if not k.ready:
        # the simulator's block is one warp, whose exchange and barrier go through shared memory
        sync = "cuda.syncwarp()" if sim_geometry(True, False) else "cuda.syncthreads()"
        body = sweep_source(rec_cls, kinds, sync)
        src = fill(_RUN_INTERVAL_WARPS, pk=source.packed_args(len(kinds)), body=body, buffers=GROUP_BUFFERS)
        ns = {**cell_namespace(rec_cls), **group_namespace(), "wcell": wcell}
        k = k.keep(generated_kernel(values.expand(src, rec_cls), "run_interval_warps", ns))
    return k.fn


class IntervalRunner:
    """Sweeps a chunk of an interval batch (:mod:`gpudp.many.intervals`) on the GPU, its tables in
    device memory: instances of :data:`INTERVAL_WARP_FROM` or more a warp each, where the cell's
    split-point loop can be shared (its lanes take turns through each cell's loop); the others a
    thread each (they come largest first, so a warp's threads have like sizes). The chunk's arrays
    go up and come back whole."""

    def __init__(self, rec_cls, kinds):
        self.fn = interval_kernel(rec_cls, kinds)
        self.warps = interval_warp_kernel(rec_cls, kinds)
        self.stream = stream()
        self.d_packed = None
        self.compile_seconds = 0.0
        self.launches = 0
        self.info = {"warp_instances": 0, "thread_instances": 0}
        if isinstance(self.warps, str):
            self.info["warps_off"] = self.warps

    def __call__(self, ids, work, shapes, toff, S, D, FL, packed):
        s = self.stream
        if self.d_packed is None:  # the batch's data, up once
            self.d_packed = tuple(cuda.to_device(a, stream=s) for a in (shapes, *packed))
        d_shapes, *d_packed = self.d_packed
        d_S, d_D = (cuda.to_device(a, stream=s) for a in (S, D))
        big, flags = shapes[ids, 0] >= INTERVAL_WARP_FROM, []
        if isinstance(self.warps, str):
            big[:] = False
        for warp in (True, False):
            at = np.flatnonzero(big == warp)
            if not len(at):
                continue
            d_ids, d_toff, fl = (
                cuda.to_device(np.ascontiguousarray(a[at]), stream=s) for a in (ids, toff, FL)
            )
            flags.append((at, fl))
            if warp:
                cc = cuda.device_array(len(S), S.dtype, stream=s)  # the tables' column-major copies
                args = (len(at), d_ids, d_shapes, d_toff, d_S, cc, d_D, fl, *d_packed)
                fn, threads, each = self.warps, sim_geometry(4 * 32, 32), 32
            else:
                args = (len(at), d_ids, d_shapes, d_toff, d_S, d_D, fl, *d_packed)
                fn, threads, each = self.fn, sim_geometry(INTERVAL_THREADS, 4), 1
            t = time.perf_counter()
            launcher, _ = coop_blocks(fn, args, threads, 1 << 30, 0)  # compiles
            self.compile_seconds += time.perf_counter() - t
            launcher[-(-len(at) * each // threads), threads, s, 0](*args)
            self.launches += 1
            self.info["warp_instances" if warp else "thread_instances"] += len(at)
        for d, h in ((d_S, S), (d_D, D)):
            d.copy_to_host(h, stream=s)
        s.synchronize()
        for at, fl in flags:
            FL[at] = fl.copy_to_host()


#: instances this large or larger (cells a side, the median of the batch's) run faster on the CPU's
#: cores than a GPU thread each, where a warp cannot share the cell's split-point loop (H100 against
#: 16 threads, 2026-12-06: Nussinov 1,000 x <=600 29.4 s against 4.25 s; 10,000 x <=150 1.18 s
#: against 1.58 s)
THREAD_INTERVALS_MAX = 256


def declines(rec_cls, sizes: np.ndarray) -> str | None:
    """Why ``backend="auto"`` should not bring this batch here (None: it should): a thread an
    instance (the cell's loop cannot be shared by a warp, :func:`gpudp.interval.split.warp_cell`)
    on instances of :data:`THREAD_INTERVALS_MAX` cells a side or more, which the CPU's cores sweep
    faster."""
    from ...interval.cuda import warp_cell

    live = sizes[sizes > 0]
    if not len(live) or np.median(live) < THREAD_INTERVALS_MAX:
        return None
    shared = warp_cell(rec_cls)
    if not isinstance(shared, str):
        return None
    return (
        f"on the GPU a thread an instance ({shared}), which loses to the CPU's cores past "
        f"{THREAD_INTERVALS_MAX} cells a side"
    )
