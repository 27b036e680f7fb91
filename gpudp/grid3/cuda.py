"""The CUDA sweep of a 3-D grid recurrence (imported only when the cuda backend runs).

The ring of planes lives in device memory, each plane an ``n1 x n2`` array indexed ``[i, j]``, as
on the CPU (:mod:`gpudp.grid3.cpu`). One cooperative kernel per chunk of planes
(:func:`gpudp.grid3.layout.chunks`, cut so that a chunk's decisions fill at most one slab): every
thread takes cells of the plane grid-stride and a grid sync separates the planes. A plane's cells
are numbered row by row over a box of its rows times its widest row (``W`` columns, rows starting
at their first ``j``), so consecutive threads take consecutive ``j`` of one row: their reads of
the planes behind (``ring[p, i + di, j + dj]``) and their decisions' writes (plane after plane,
row after row) are coalesced. A thread steps through the box by adding the grid's size in rows and
columns (one division a plane, none a cell); a box cell past its row's end is skipped (the box
holds from 1/2, on the first planes, to 3/4 of a cube's middle planes' cells more than the plane).

Decisions: each chunk writes into one of two device slabs; when its kernel ends, a second stream
copies the slab into the host store (page-locked: an asynchronous DMA) while the next chunk computes
into the other slab (a store spilled to disk, a memmap, takes the copy synchronously). At the end
the far faces and the overflow flag come back.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from numba.core.errors import NumbaPerformanceWarning

from ..backends.cuda import (
    CudaKernel,
    cell_namespace,
    coop_blocks,
    cuda,
    device_jit,
    generated_kernel,
    sim_geometry,
)
from ..codegen import fill
from ..kernel import KernelFactory
from . import layout

#: threads per block (the simulator's: a few, so that a thread takes several cells of a plane)
THREADS = 256

_RUN = """
def run_planes(d0, d1, n1, n2, n3, ring, starts, dbase, D, FI, FJ, FK, flag{da}):
    grid = cuda.cg.this_grid()
    R = ring.shape[0]
    first = cuda.grid(1)
    step = cuda.gridsize(1)
    for d in range(d0, d1):
        P0 = d % R
        {views}
        ilo = max(0, d - (n2 - 1) - (n3 - 1))
        ihi = min(n1 - 1, d)
        rows = ihi - ilo + 1
        W = min(min(n2, n3), min(d - ilo + 1, n2 + n3 - 1 - (d - ihi)))
        base = starts[d] - dbase
        r = first // W
        c = first - r * W
        sr = step // W
        sc = step - sr * W
        while r < rows:
            i = ilo + r
            jlo = max(0, d - i - (n3 - 1))
            j = jlo + c
            if j <= min(n2 - 1, d - i):
                {body}
            r += sr
            c += sc
            if c >= W:
                c -= W
                r += 1
        grid.sync()
"""

_KERNELS = KernelFactory("grid3.cuda", "rec", "n_data", kernel=CudaKernel)


def source(rec_cls, n_data: int) -> str:
    """The generated cooperative ``run_planes`` of a recurrence class."""
    read = "ring[P{lag}, {a}, {b}]"
    store = "ring[P0, i, j] = {v}" + (
        "\nD[base + row_offset(d, i, n2, n3) + c] = dd" if rec_cls.decision_bits else ""
    )
    body = layout.cell_source(rec_cls, n_data, read, store, True)
    views = [f"P{lag} = (d - {lag}) % R" for lag in sorted({-sum(o) for o in rec_cls.offsets})]
    return fill(_RUN, da=layout.data_params(n_data), views=views, body=body)


def kernel(rec_cls, n_data: int):
    """The cooperative kernel of a recurrence class, made once per process (on a GPU through the
    kernel cache on disk)."""
    k = _KERNELS.lookup(rec=rec_cls, n_data=n_data)
    if not k.ready:
        ns = {**cell_namespace(rec_cls), "row_offset": device_jit(layout.row_offset)}
        k = k.keep(generated_kernel(source(rec_cls, n_data), "run_planes", ns))
    return k


def run(rec_cls, shape, data, starts, decisions, flag, bar, stats) -> tuple[np.ndarray, ...]:
    """Sweep on the device, chunk after chunk; the decisions into ``decisions`` (the host store,
    plane after plane); return the far faces ``(FI, FJ, FK)``."""
    n1, n2, n3 = shape
    bits = rec_cls.decision_bits
    vt = np.dtype(rec_cls.value_dtype)
    fill = rec_cls.fill
    compute, copier = cuda.stream(), cuda.stream()
    d_data = tuple(cuda.to_device(x, stream=compute) if isinstance(x, np.ndarray) else x for x in data)
    ring = cuda.device_array((layout.ring_planes(rec_cls.offsets), n1, n2), vt, stream=compute)
    d_faces = tuple(
        cuda.to_device(np.full(s, fill, vt), stream=compute) for s in ((n2, n3), (n1, n3), (n1, n2))
    )
    d_flag = cuda.to_device(flag, stream=compute)
    d_starts = cuda.to_device(starts, stream=compute)
    ddt = decisions.dtype
    if bits:
        plans = layout.chunks(starts, max(1, layout.SLAB_BYTES // ddt.itemsize))
        slab_cells = max(int(starts[d1] - starts[d0]) for d0, d1 in plans)
        slabs = [cuda.device_array(slab_cells, ddt, stream=compute) for _ in range(2)]
    else:
        plans = layout.chunks(starts, layout.SLAB_BYTES)  # progress steps; nothing to copy
        slabs = [cuda.device_array(1, ddt, stream=compute)]
    threads = sim_geometry(THREADS, 4)
    widest = int(np.diff(starts).max())
    want = max(1, -(-widest // threads))
    warnings.filterwarnings("ignore", category=NumbaPerformanceWarning)  # small grids are expected
    k = kernel(rec_cls, len(data))
    copied: list = [None, None]  # per slab: (event when its copy finished, chunk)
    launches, blocks = k.launches(compute), 1

    def finish(slot):
        """Wait for the copy out of a slab; tick progress."""
        if copied[slot] is None:
            return
        done, (d0, d1) = copied[slot]
        done.synchronize()
        if bar is not None:
            bar.update(int(starts[d1] - starts[d0]))
        copied[slot] = None

    t_wall = time.perf_counter()
    for c, (d0, d1) in enumerate(plans):
        slot = c % len(slabs)
        finish(slot)
        a, b = int(starts[d0]), int(starts[d1])
        args = (d0, d1, n1, n2, n3, ring, d_starts, a, slabs[slot], *d_faces, d_flag, *d_data)
        if c == 0:
            t = time.perf_counter()
            launches.fn, blocks = coop_blocks(k.fn, args, threads, want)
            stats.extra["compile_seconds"] = time.perf_counter() - t
        end = launches.launch(blocks, threads, args)
        if bits:
            end.wait(stream=copier)
            slabs[slot][: b - a].copy_to_host(decisions[a:b], stream=copier)
            done = cuda.event()
            done.record(stream=copier)
            copied[slot] = (done, (d0, d1))
        elif bar is not None:
            end.synchronize()
            bar.update(b - a)
    for slot in range(len(copied)):
        finish(slot)
    compute.synchronize()
    copier.synchronize()
    stats.kernel_seconds = sum(launches.elapsed_ms()) / 1e3
    stats.extra.update(
        gpu_seconds=time.perf_counter() - t_wall,
        launches=launches.count,
        grid=[blocks, threads],
        bytes_to_host=int(starts[-1]) * ddt.itemsize if bits else 0,
    )
    d_flag.copy_to_host(flag)
    return tuple(f.copy_to_host() for f in d_faces)
