"""The CUDA sweep of an interval recurrence (imported only when the cuda backend runs).

The table lives in device memory *by diagonals*: ``S[d, i]`` is interval ``(i, i + d)``. A
diagonal's cells are consecutive there, and so are the reads of consecutive threads: cell ``(i, j)``
of diagonal ``d`` reading ``T[i, i + m]`` and ``T[i + m + 1, j]`` at its split point ``m`` reads
``S[m, i]`` and ``S[d - m - 1, i + m + 1]``, one coalesced load a warp each. The cell indexes ``T[a,
b]`` as everywhere: it gets a strided view of ``S`` (:func:`gpudp.interval.table.make_diagonal_view`;
:class:`gpudp.interval.table.SimDiagonalView` in the simulator, which checks every read).

One cooperative kernel per chunk of diagonals (:func:`gpudp.interval.table.chunks`), a grid sync
between diagonals. A short diagonal runs a thread a cell, grid-stride. From diagonal
:data:`WARP_FROM` on, where the cell's split-point loop allows it (:mod:`gpudp.interval.split`), a
group of lanes shares each cell: its lanes take turns through the loop and merge their bests, the
rest of the cell runs on every lane, and lane 0 stores. The group is a warp while the diagonal has
cells enough to keep the GPU's warps busy; on the long diagonals (few cells, each a long loop) it
is a whole block of up to :data:`MAX_WIDTH` threads, the launch's block size chosen a chunk of
diagonals by :func:`widths` (the warps' bests merged through shared memory between the block's
barriers, :data:`gpudp.backends.cuda.GROUP_BUFFERS`). Its lanes read one row ``T[i, k]`` or one
column ``T[k, j]`` of the table, so the kernel keeps a row-major copy ``R`` and a column-major copy
``C`` beside ``S`` and the rewritten loop reads those (consecutive lanes, consecutive items). The
decisions are stored row-major, and so is ``R``: at the end both are copied straight into the host's
arrays.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from numba.core.errors import NumbaError, NumbaPerformanceWarning

from ..backends.cuda import (
    GROUP_BUFFERS,
    cell_namespace,
    coop_blocks,
    cuda,
    device_fill,
    device_jit,
    generated_kernel,
    group_exchange,
    group_namespace,
    launch_known,
    sim_geometry,
    upload,
)
from ..codegen import compile_source, fill, spec_of
from ..values import fields, fill_buf, is_record, map_dtypes
from . import split
from .records import record_cell
from .table import SimDiagonalView, cells_of, compiled_sweep, make_diagonal_view

#: threads per block (the simulator's: a few, so that a thread takes several cells of a diagonal)
THREADS = 256
_RUN = """
def run_diagonals(d0, d1, n, S, R, C, D, warp_from, width{da}):
    grid = cuda.cg.this_grid()
    T = view(S, n)
    first = cuda.grid(1)
    step = cuda.gridsize(1)
    {buffers}
    if width == 32:  # a warp a cell
        lane = cuda.laneid
        g0 = first >> 5
        gs = step >> 5
    else:  # a block a cell (width == the block's threads)
        lane = cuda.threadIdx.x
        g0 = cuda.blockIdx.x
        gs = cuda.gridDim.x
    for d in range(d0, d1):
        if d < warp_from:  # a thread a cell
            for i in range(first, n - d, step):
                {body}
        else:  # a group a cell (the cell's split-point loop shared by the lanes: gpudp.interval.split)
            for i in range(g0, n - d, gs):
                {wbody}
        grid.sync()
"""

#: the first diagonal (interval length - 1) whose cells a warp shares, where the cell allows it: a
#: shorter loop leaves most lanes idle
WARP_FROM = 32
#: the most threads of a block that shares a cell, and the fewest split points a lane of it takes
#: (a wider group would idle). H100, 2026-12-07 (kernel seconds, matrix chain n = 2,000 / Nussinov
#: n = 2,000 / triangulation n = 1,500): 256 and 4 0.0154 / 0.0226 / 0.0136 s, 512 or 1,024 the
#: same, 128 0.0157 / 0.0237 / 0.0142 s, 2 or 8 split points within 4 %, warps only 0.0215 / 0.0372
#: / 0.0137 s
MAX_WIDTH = 256
LANE_TRIPS = 4

_VIEW: list = []


def _view(rec_cls):
    """What the kernel calls ``view``: ``diagonal_view`` for the device (built once), or the
    simulator's checked stand-in; for a record class, a device function giving the tuple of its
    fields' views (:mod:`gpudp.interval.records`)."""
    if not _VIEW:
        real = sim_geometry(True, False)
        if real:
            from numba.cuda import types
            from numba.cuda.extending import intrinsic
            from numba.cuda.np.arrayobj import make_array

            _VIEW.append(make_diagonal_view(intrinsic, make_array, types))
        else:
            _VIEW.append(SimDiagonalView)
    if is_record(rec_cls):
        views = "".join(f"view(S[{k}], n), " for k in range(len(fields(rec_cls))))
        src = f"def rview(S, n):\n    return ({views})\n"
        return device_jit(compile_source(src, "rview", {"view": _VIEW[0]}))
    return _VIEW[0]


def _xor(x, m):
    return cuda.shfl_xor_sync(0xFFFFFFFF, x, m)


_OBJECT = np.dtype(object)


def _sim_xor(x, m):
    """The simulator's warp exchange (it has no shuffles): through shared memory, every thread of
    the block calling it (a block of one warp, or a group of several: ``m`` < 32 pairs lanes of
    one warp)."""
    buf = cuda.shared.array(MAX_WIDTH, _OBJECT)
    lane = cuda.threadIdx.x
    buf[lane] = x
    cuda.syncthreads()
    y = buf[lane ^ m]
    cuda.syncthreads()
    return y


def warp_cell(rec_cls):
    """The rewritten cell a group of lanes runs (:func:`gpudp.interval.split.warp_cell`), as a device
    function, ``wcell(lane, width, xb, R, C, i, j, T, *data)``, or the reason there is none (a str; a
    record cell runs a thread a cell)."""
    if is_record(rec_cls):
        return "a record cell (value_dtype a record) runs a thread a cell"

    def build():
        xor = device_jit(_xor if sim_geometry(True, False) else _sim_xor)
        return device_jit(split.warp_cell(rec_cls.cell, xor, group_exchange())[0])

    return split.rewritten("warp", rec_cls, build)


def kernel(rec_cls, n_data: int, warp: bool):
    """The cooperative ``run_diagonals(d0, d1, n, S, R, C, D, warp_from, *data)`` of a recurrence
    class: the table by diagonals ``S`` (the cells' view ``T``), row-major ``R``, column-major ``C``
    (with ``warp`` only: the warp cell's loops read rows of ``R`` and columns of ``C``), the decisions
    row-major ``D``; with ``warp``, a warp a cell from diagonal ``warp_from`` on (``wcell``, the
    rewritten cell), without it a thread a cell throughout (``warp_from`` must then be ``n``)."""

    def namespace():
        ns = {**cell_namespace(rec_cls), "view": _view(rec_cls)}
        if is_record(rec_cls):  # the table a tuple of the fields' (gpudp.interval.records)
            ns["cell"] = device_jit(record_cell(rec_cls))
        if warp:
            ns["wcell"] = warp_cell(rec_cls)
        return ns

    return compiled_sweep(
        "cuda-warp" if warp else "cuda",
        rec_cls,
        n_data,
        fill(_RUN, buffers=GROUP_BUFFERS if warp else "pass", da="{da}", body="{body}", wbody="{wbody}"),
        ("S[d, i]", "R[i, j]", "C[j, i]", "D[i, j]") if warp else ("S[d, i]", "R[i, j]", "D[i, j]"),
        namespace,
        lambda src, ns: generated_kernel(src, "run_diagonals", {**ns, **group_namespace()}),
        warp="wcell(lane, width, xb, R, C, " if warp else None,
    )


def run_blocks(n: int, d0: int, d1: int, width: int, threads: int, warp_from: int, most: int) -> int:
    """The blocks of the launch that sweeps diagonals ``d0 .. d1 - 1`` (the first the longest): as
    many as its first diagonal's cells need (a thread, a warp or, ``width`` > 32, a block a cell), at
    most ``most`` (the cooperative launch's), at least 1. Fewer blocks make each diagonal's grid
    barrier cheaper. H100, 2026-12-07 (tools/interval_gpu.py, kernel seconds, against the most
    blocks every launch): matrix chain n = 2,000 0.0155 -> 0.0149 s, Nussinov n = 2,000 0.0226 ->
    0.0214, triangulation n = 1,500 0.0136 -> 0.0123."""
    if width > 32:
        need = n - d0
    else:
        need = -(-(n - d0) // threads)  # a thread a cell
        if d1 > warp_from:  # and a warp a cell from warp_from on
            need = max(need, -(-(n - max(d0, warp_from)) * 32 // threads))
    return max(1, min(most, need))


def widths(n: int, d0: int, d1: int, blocks) -> list[tuple[int, int, int]]:
    """``[(a, b, width), ...]``: diagonals ``d0 .. d1 - 1`` in runs of one group width (the threads
    that share a cell, :func:`gpudp.interval.split.warp_cell`): a warp (32), or the largest block of
    up to :data:`MAX_WIDTH` threads of which the grid holds one a cell of the diagonal
    (``blocks(width)``: the cooperative launch's most blocks of that size) and whose lanes each take
    :data:`LANE_TRIPS` of the cell's split points or more. The widths only grow along the diagonals
    (fewer cells, longer loops)."""

    # width w from diagonal ``start[w]`` on: each wider width needs both its own bounds and the
    # narrower ones' (``blocks`` asked only of a width some diagonal of the range could take)
    start, first, cand = [(32, d0)], WARP_FROM, 64
    while cand <= MAX_WIDTH and max(first, cand * LANE_TRIPS) < d1:
        first = max(first, cand * LANE_TRIPS, n - blocks(cand))
        if first >= d1:
            break
        start.append((cand, max(d0, first)))
        cand *= 2
    out = []
    for k, (w, a) in enumerate(start):
        b = start[k + 1][1] if k + 1 < len(start) else d1
        if b > a:
            out.append((a, b, w))
    return out


def device_bytes(table_bytes: int, decision_bytes: int) -> int:
    """Device memory the sweep needs: the decisions and three copies of the table (by diagonals,
    row-major, column-major)."""
    return 3 * table_bytes + decision_bytes


def run(rec_cls, n, data, table, decisions, chunks, bar, stats) -> None:
    """Sweep on the device; the table and decisions (row-major) copied whole into ``table`` and
    ``decisions`` at the end (the fill below the diagonal made on the device)."""
    bits = rec_cls.decision_bits
    compute = cuda.stream()
    d_data = upload(data, compute)
    rows = max(n, 1)
    wcell = warp_cell(rec_cls) if n > WARP_FROM else "no diagonal as long as a warp"
    warp = not isinstance(wcell, str)

    def tables(shape):  # a record's: one a field
        return map_dtypes(rec_cls, lambda f: cuda.device_array(shape, f, stream=compute))

    def put(a, v):
        device_fill(a, v, compute)

    S = tables((rows, rows))
    R, C = (tables((rows, rows) if w else (1, 1)) for w in (True, warp))
    fill_buf(rec_cls, R, put)  # below the diagonal, as the host's table (and C above it)
    fill_buf(rec_cls, C, put)
    D = cuda.device_array((rows, rows) if bits else (1, 1), decisions.dtype, stream=compute)
    put(D, 0)
    warnings.filterwarnings("ignore", category=NumbaPerformanceWarning)  # small grids are expected

    launches = {}  # width -> (launcher, blocks, threads): a block of ``width`` threads, or a warp a cell

    def compiled(warp: bool, width: int = 32):
        """The kernel's launcher, grid and block for cells shared by ``width`` lanes, compiled for
        these arguments."""
        if (warp, width) not in launches:
            # a warp a cell: the simulator's block is one warp (its exchange goes through shared memory)
            threads = width if width > 32 else sim_geometry(THREADS, 32 if warp else 4)
            want = max(1, n if width > 32 else -(-n * (32 if warp else 1) // threads))
            args = (0, 0, n, S, R, C, D, WARP_FROM if warp else n, width, *d_data)
            got = coop_blocks(kernel(rec_cls, len(data), warp), args, threads, want)
            launches[warp, width] = (*got, threads)
        return launches[warp, width]

    t = time.perf_counter()
    try:
        compiled(warp)
    except NumbaError as e:  # the rewrite's fault, not the cell's (a payload no shuffle takes)
        if not warp:
            raise
        warp, wcell = False, f"the warp cell did not compile ({str(e).strip().splitlines()[0][:200]})"
        compiled(False)
    stats.extra["compile_seconds"] = time.perf_counter() - t
    stats.extra["split_loop"] = "a warp a cell" if warp else f"a thread a cell: {wcell}"
    if warp:  # each chunk in runs of one group width
        runs = [r for d0, d1 in chunks for r in widths(n, d0, d1, lambda w: compiled(True, w)[1])]
    else:
        runs = [(d0, d1, 32) for d0, d1 in chunks]
    events, known = [], {}  # the compiled kernel a launcher's first launch found (its arguments typed once)
    t_wall = time.perf_counter()
    for d0, d1, width in runs:
        launcher, most, threads = compiled(warp, width)
        blocks = run_blocks(n, d0, d1, width, threads, WARP_FROM if warp else n, most)
        args = (d0, d1, n, S, R, C, D, WARP_FROM if warp else n, width, *d_data)
        start, end = cuda.event(), cuda.event()
        start.record(stream=compute)
        launch_known(known, launcher, blocks, threads, compute, args)
        end.record(stream=compute)
        events.append((start, end))
        if bar is not None:
            end.synchronize()
            bar.update(cells_of(n, d0, d1))
    compute.synchronize()
    each = [s.elapsed_time(e) / 1e3 for s, e in events]
    stats.kernel_seconds = sum(each)
    launcher, blocks, threads = compiled(warp)
    stats.extra.update(gpu_seconds=time.perf_counter() - t_wall, launches=len(events), grid=[blocks, threads])
    stats.extra["launch_seconds"] = [[d0, d1, t] for (d0, d1, _), t in zip(runs, each, strict=True)]
    stats.extra["group_widths"] = [[d0, d1, w] for d0, d1, w in runs if w > 32]
    stats.extra["layout"] = "diagonals"
    for k in range(1, spec_of(rec_cls).outputs + 1):  # the decision-overflow flag
        d_data[-k].copy_to_host(data[-k])
    if n:
        for r, t in zip(R, table, strict=True) if is_record(rec_cls) else [(R, table)]:
            r.copy_to_host(t, stream=compute)
        if bits:
            D.copy_to_host(decisions, stream=compute)
        compute.synchronize()
