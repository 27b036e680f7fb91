"""The CUDA sweep of an interval recurrence (imported only when the cuda backend runs).

The table and the decisions live in device memory *by diagonals*: ``S[d, i]`` is interval ``(i, i +
d)``. A diagonal's cells are consecutive there, and so are the reads of consecutive threads: cell
``(i, j)`` of diagonal ``d`` reading ``T[i, i + m]`` and ``T[i + m + 1, j]`` at its split point
``m`` reads ``S[m, i]`` and ``S[d - m - 1, i + m + 1]``, one coalesced load a warp each. The cell
indexes ``T[a, b]`` as everywhere: it gets a strided view of ``S``
(:func:`gpudp.interval.table.make_diagonal_view`; :class:`gpudp.interval.table.SimDiagonalView` in the
simulator, which checks every read).

One cooperative kernel per chunk of diagonals (:func:`gpudp.interval.table.chunks`): every thread takes
cells of the diagonal grid-stride, one thread a cell, and a grid sync separates the diagonals. After
the last chunk the table and the decisions come back to the host a slice of diagonals at a time
(contiguous rows of ``S``) and are scattered into the row-major result.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from numba.core.errors import NumbaPerformanceWarning

from ..backends.cuda import cell_namespace, coop_blocks, cuda, generated_kernel, sim_geometry
from ..codegen import spec_of
from .table import SimDiagonalView, cells_of, compiled_sweep, make_diagonal_view, scatter_diagonals

#: threads per block (the simulator's: a few, so that a thread takes several cells of a diagonal)
THREADS = 256
#: bytes of one slice of diagonals copied back to the host at the end
COPY_BYTES = 1 << 26

_RUN = """
def run_diagonals(d0, d1, n, S, D{da}):
    grid = cuda.cg.this_grid()
    T = view(S, n)
    first = cuda.grid(1)
    step = cuda.gridsize(1)
    for d in range(d0, d1):
        for i in range(first, n - d, step):
            {body}
        grid.sync()
"""

_VIEW: list = []


def _view():
    """``diagonal_view`` for the device (built once), or the simulator's checked stand-in."""
    if not _VIEW:
        real = sim_geometry(True, False)
        if real:
            from numba.cuda import types
            from numba.cuda.extending import intrinsic
            from numba.cuda.np.arrayobj import make_array

            _VIEW.append(make_diagonal_view(intrinsic, make_array, types))
        else:
            _VIEW.append(SimDiagonalView)
    return _VIEW[0]


def kernel(rec_cls, n_data: int):
    """The cooperative ``run_diagonals(d0, d1, n, S, D, *data)`` of a recurrence class."""
    return compiled_sweep(
        "cuda",
        rec_cls,
        n_data,
        _RUN,
        "d, i",
        lambda: {**cell_namespace(rec_cls), "view": _view()},
        lambda src, ns: generated_kernel(src, "run_diagonals", ns),
    )


def run(rec_cls, n, data, table, decisions, chunks, bar, stats) -> None:
    """Sweep on the device; the table and decisions (row-major) filled on the host at the end."""
    bits = rec_cls.decision_bits
    vt = table.dtype
    compute = cuda.stream()
    d_data = tuple(cuda.to_device(x, stream=compute) if isinstance(x, np.ndarray) else x for x in data)
    rows = max(n, 1)
    S = cuda.device_array((rows, rows), vt, stream=compute)
    D = cuda.device_array((rows, rows) if bits else (1, 1), decisions.dtype, stream=compute)
    threads = sim_geometry(THREADS, 4)
    want = max(1, -(-n // threads))
    warnings.filterwarnings("ignore", category=NumbaPerformanceWarning)  # small grids are expected
    fn = kernel(rec_cls, len(data))
    launcher, blocks, events = None, 1, []
    t_wall = time.perf_counter()
    for d0, d1 in chunks:
        args = (d0, d1, n, S, D, *d_data)
        if launcher is None:
            t = time.perf_counter()
            launcher, blocks = coop_blocks(fn, args, threads, want)
            stats.extra["compile_seconds"] = time.perf_counter() - t
        start, end = cuda.event(), cuda.event()
        start.record(stream=compute)
        launcher[blocks, threads, compute, 0](*args)
        end.record(stream=compute)
        events.append((start, end))
        if bar is not None:
            end.synchronize()
            bar.update(cells_of(n, d0, d1))
    compute.synchronize()
    stats.kernel_seconds = sum(s.elapsed_time(e) for s, e in events) / 1e3
    stats.extra.update(gpu_seconds=time.perf_counter() - t_wall, launches=len(events), grid=[blocks, threads])
    stats.extra["layout"] = "diagonals"
    for k in range(1, spec_of(rec_cls).outputs + 1):  # the decision-overflow flag
        d_data[-k].copy_to_host(data[-k])
    _copy_back(S, table, n)
    if bits:
        _copy_back(D, decisions, n)


def _copy_back(dev, out: np.ndarray, n: int) -> None:
    """The device's table by diagonals into the host's row-major ``out``, a slice of diagonals at a
    time (a bounded staging buffer; only the ``n * (n + 1) / 2`` cells are scattered)."""
    if n == 0:
        return
    step = max(1, COPY_BYTES // (n * out.itemsize))
    staging = np.empty((min(step, n), n), out.dtype)
    for d0 in range(0, n, step):
        d1 = min(d0 + step, n)
        dev[d0:d1].copy_to_host(staging[: d1 - d0])
        scatter_diagonals(staging[: d1 - d0], d0, n, out)
