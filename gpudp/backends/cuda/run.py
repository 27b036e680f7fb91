"""The run loop of a planned sweep on the GPU: chunks of wavefronts, two device slabs of decision
words, a compute and a copy stream (:func:`run_plan`)."""

from __future__ import annotations

import time
import warnings

import numpy as np
from numba import cuda
from numba.core.errors import NumbaPerformanceWarning

from ... import values
from ...codegen import spec_of
from ...errors import CheckError
from ...memory import copy_parallel
from ...store import DeviceStore, tiled_last_row
from ..base import checkpoint_arrays, last_layer, line_edges, shape_args
from .bands import BandEncoder
from .driver import LAST_LAUNCHER, coop_blocks, drained, kernel_resources, pinned_empty, upload
from .layered import LAYER_THREADS, Blocking, blocked_kernel, layered_kernel
from .line import line_kernel
from .tiled import tiled_kernel

#: decision words per device slab (two slabs alternate: one computes while the other is evicted)
SLAB_WORDS = 1 << 25
#: words a thread lands from a staging slab into a disk or plain-memory store (a task each)
LAND_CHUNK = 1 << 20


def run_plan(plan, rec, data, store, stats, bar, backend) -> dict:
    """Run a planned sweep on the GPU.

    Chunks of wavefronts alternate between two device slabs of decision words. Chunk c computes
    on one stream into slab c % 2; a second stream waits for it and copies the slab to the host
    store (page-locked: asynchronous DMA) or to a page-locked staging buffer that the host then
    writes to the disk memmap, while chunk c + 1 computes into the other slab. With the bands codec
    an encoder kernel compacts each chunk's bands on the device and only the bands and their headers
    are copied (:class:`BandEncoder`). Only the values of the dependency window (a row and a column
    of tile edges, or ring of layers) live on the device. ``backend`` (the cuda backend object)
    cuts the plan into chunks (``chunk_limits``).
    """
    cls = type(rec)
    vt = np.dtype(cls.value_dtype)
    bits = cls.decision_bits
    rows, cols = plan.rows, plan.cols
    compute, copier = cuda.stream(), cuda.stream()
    d_data = upload(data, compute)
    plan.make_chunks(*backend.chunk_limits(plan))
    blocked = Blocking.plan(plan, vt) if plan.kind == "layered" and plan.reach is not None else None
    smem = 0
    on_device = isinstance(store, DeviceStore)  # the kernels write into the store itself: no copies
    slab_words = plan.max_chunk_words() if bits and not on_device else 1
    slabs = [
        cuda.device_array(max(slab_words, 1), np.uint32, stream=compute) for _ in range(2 if bits else 1)
    ]
    bands = plan.codec == "bands"
    staging = (
        [pinned_empty(max(slab_words, 1), np.uint32) for _ in range(2)]
        if store is not None
        and not on_device
        and (store.on_disk or bands or backend.pageable_store(store.n_words))
        else None
    )
    if bands:
        enc = BandEncoder(plan, bits, slab_words, compute, copier)
    copied = [None, None]  # per slab: (event when its copy finished, chunk index)
    out = {}

    if plan.kind == "tiled":
        lay = plan.layout
        sym_dtype = data[1].dtype if getattr(cls, "symbols", False) else None
        kernel = tiled_kernel(cls, len(data), lay.bh, lay.tw, sym_dtype)
        bottom, right, diag_off = upload(
            (values.full(cls, lay.nj * (lay.tw + 1)), values.full(cls, max(rows, 1)), lay.diag_off), compute
        )
        ck = checkpoint_arrays(plan, cls, lambda shape, dt: cuda.device_array(shape, dt, stream=compute))
        # per tile row, the columns of its bottom edge written; per launch, the rows taken
        row_done, tickets = upload(
            (np.zeros(max(lay.ni, 1), np.int64), np.zeros(len(plan.chunks), np.int64)), compute
        )
        want = max(lay.ni, 1)  # a warp a tile row
        threads = 32

        def args(u0, u1, slab, c):
            return (
                u0,
                u1,
                lay.ni,
                lay.nj,
                rows,
                cols,
                bottom,
                right,
                slab,
                int(lay.diag_off[u0]),
                diag_off,
                *ck,
                row_done,
                tickets,
                c,
                *d_data,
            )
    elif plan.kind == "line":
        kernel = line_kernel(cls, len(data), plan.schedule)
        line = cuda.device_array(plan.cells, vt, stream=compute)
        line[:] = cls.fill
        threads, want = 1, 1

        def args(u0, u1, slab, c):
            return (u0, u1, line, slab, int(plan.layout.woff[u0]), rows, cols, *d_data)
    elif blocked is not None:
        kernel = blocked_kernel(cls, len(data))
        width = -(-int(plan.sizes.max()) // 32) * 32
        ring = cuda.device_array((2, max(width, 32)), vt, stream=compute)
        ring[:] = cls.fill
        d_pass = [
            cuda.to_device(a, stream=compute)
            for a in (blocked.pstart, blocked.pu0, blocked.pu1, blocked.rcum)
        ]
        pspan = cuda.to_device(blocked.spans_for(1), stream=compute)  # evened out once the grid is known
        ranges = [cuda.to_device(a, stream=compute) for a in (plan.lo, plan.hi, plan.g0, plan.gn)]
        woff = cuda.to_device(plan.layout.woff, stream=compute)
        threads, smem, want = blocked.threads, blocked.smem, blocked.spans
        stats.extra.update(blocked.stats())

        def args(u0, u1, slab, c):
            q0, q1 = blocked.chunk_passes[u0]
            return (q0, q1, *d_pass, pspan, ring, *ranges, woff, slab, int(plan.layout.woff[u0]), *d_data)
    else:
        kernel = layered_kernel(cls, len(data), plan.schedule)
        window = plan.schedule.window if plan.schedule else cls.window
        # filled on the device: a host-side np.full + copy of a ring of GBs cost seconds
        ring = cuda.device_array((window + 1, *plan.ring_shape()), vt, stream=compute)
        ring[:] = cls.fill
        last_row = cuda.to_device(np.full(max(cols, 1), cls.fill, vt), stream=compute)
        last_col = cuda.to_device(np.full(max(rows, 1), cls.fill, vt), stream=compute)
        ranges = [cuda.to_device(a, stream=compute) for a in (plan.lo, plan.hi, plan.g0, plan.gn)]
        woff = cuda.to_device(plan.layout.woff, stream=compute)
        shape = [cuda.to_device(a, stream=compute) for a in shape_args(plan)]  # 2-D layers' columns
        threads = LAYER_THREADS
        want = max(1, -(-int(plan.gn.max(initial=1)) * 32 // threads))

        def args(u0, u1, slab, c):
            return (
                u0,
                u1,
                ring,
                *ranges,
                woff,
                slab,
                int(plan.layout.woff[u0]),
                last_row,
                last_col,
                rows,
                cols,
                *shape,
                *d_data,
            )

    launches, launcher, blocks = kernel.launches(compute), None, 1
    warnings.filterwarnings("ignore", category=NumbaPerformanceWarning)  # small grids are expected

    def finish(slot):
        """Wait for the copy out of a slab; land staged words in the disk store; tick progress."""
        if copied[slot] is None:
            return
        evt, c = copied[slot]
        evt.synchronize()
        u0, u1 = plan.chunks[c]
        if bands:
            enc.land(slot, u0, u1, store, staging[slot])
        elif staging is not None:  # a disk store, or plain memory: written on every thread
            w0, w1 = plan.layout.words_of(u0, u1)
            copy_parallel(store.words[w0:w1], staging[slot], w1 - w0, LAND_CHUNK)
        copied[slot] = None
        if bar is not None:
            bar.update(plan.unit_cells(u0, u1))  # (a time limit raises here)

    t_wall = time.perf_counter()
    with drained(compute, copier):  # nothing in flight writes into what an exception lets go
        for c, (u0, u1) in enumerate(plan.chunks):
            slot = c % len(slabs)
            finish(slot)
            if on_device:
                w0, w1 = plan.layout.words_of(u0, u1)
                a = args(u0, u1, store.device_words[w0 : max(w1, w0 + 1)], c)
            else:
                a = args(u0, u1, slabs[slot], c)
            if launcher is None:
                t = time.perf_counter()
                launcher, blocks = coop_blocks(kernel.fn, a, threads, want, smem)
                launches.fn = launcher
                sp = spec_of(cls)
                if sp.reduce_slots and blocks * threads > len(data[-1 - sp.flags]):
                    raise CheckError(
                        f"a grid of {blocks} x {threads} threads needs more reduction slots than the "
                        f"{len(data[-1 - sp.flags])} of reduction_slots()"
                    )
                if blocked is not None:  # now that the grid is known: spans that share out evenly
                    pspan.copy_to_device(blocked.spans_for(blocks), stream=compute)
                stats.extra["compile_seconds"] = time.perf_counter() - t
                stats.extra.update(kernel_resources(launcher))
                LAST_LAUNCHER[:] = [launcher]
            end = launches.launch(blocks, threads, a, smem)
            if bands:
                enc.launch(slot, u0, u1, slabs[slot], woff)
                copied[slot] = (enc.headers_to_host(slot, u1 - u0), c)
            elif on_device:  # the launch's end: the progress ticks and a time limit checks there
                copied[slot] = (end, c)
            elif bits:
                w0, w1 = plan.layout.words_of(u0, u1)
                end.wait(stream=copier)
                dest = staging[slot] if staging is not None else store.words[w0:w1]
                slabs[slot][: w1 - w0].copy_to_host(dest[: w1 - w0], stream=copier)
                stats.extra["bytes_to_host"] = stats.extra.get("bytes_to_host", 0) + (w1 - w0) * 4
                done = cuda.event()
                done.record(stream=copier)
                copied[slot] = (done, c)
            elif bar is not None:
                end.synchronize()
                bar.update(plan.unit_cells(u0, u1))
        for slot in range(len(slabs)):
            finish(slot)
    compute.synchronize()
    copier.synchronize()
    stats.kernel_seconds = sum(launches.elapsed_ms()) / 1e3
    stats.extra["gpu_seconds"] = time.perf_counter() - t_wall
    stats.extra["launches"] = launches.count
    stats.extra["grid"] = [blocks, threads]
    if bands:
        stats.extra["bytes_to_host"] = enc.bytes_to_host

    for k in range(1, spec_of(cls).outputs + 1):  # the reduction's slots and the decision-overflow flag
        d_data[-k].copy_to_host(data[-k])
    if plan.kind == "tiled":
        last = values.map_buf(values.to_host(bottom), lambda b: tiled_last_row(b, plan.layout))
        out["last_row"] = values.structured(cls, last)
        out["last_col"] = values.structured(cls, values.map_buf(values.to_host(right), lambda r: r[:rows]))
        if plan.checkpoint:
            out["checkpoints"] = ck[:2]  # left on the device, where gpudp.checkpoints' blocks read them
    elif plan.kind == "line":
        out["last_row"], out["last_col"] = line_edges(plan, line.copy_to_host())
    elif plan.schedule is not None:
        out["last_row"] = last_row.copy_to_host()[:cols]
        out["last_col"] = last_col.copy_to_host()[:rows]
    elif plan.n_units:
        last = plan.n_units - 1
        slot = (len(blocked.pstart) - 1) % 2 if blocked is not None else last % (window + 1)
        out["last_layer"] = last_layer(plan, ring[slot]).copy_to_host()
    return out
