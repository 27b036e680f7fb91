"""The CPU sweep of a 3-D grid recurrence: numba ``njit(parallel=True)``, a ring of planes in host
memory.

A generated function runs a chunk of planes ``d = i + j + k``. The ring keeps the last planes,
each an ``n1 x n2`` array indexed ``[i, j]`` (``k = d - i - j``), so a cell's dependency
``(i + di, j + dj, k + dk)`` is ``ring[(d - lag) % R, i + di, j + dj]`` with ``lag = -(di + dj +
dk)``, and consecutive cells of a row (consecutive ``j``) read and write consecutive memory. The
rows of a plane run in parallel (``prange``) when the plane holds at least :data:`SERIAL_CELLS`
cells, else on one thread (a parallel region costs more than a small plane; and every plane on one
thread where the sweep measures that faster: :class:`gpudp.backends.threads.ThreadChoice`). A row's cells with
``i, j, k >= 1`` (all but at most two of its ends, and the row ``i = 0``) run with no boundary test;
the others test each dependency's coordinates and take ``boundary`` outside the grid. Decisions go
straight into the store, plane after plane (:mod:`gpudp.grid3.layout`). One compile per
recurrence class, kept on disk for later processes (:func:`gpudp.cache.jit_generated`).

The user's ``cell`` and ``boundary`` are compiled without numba's reference counting (see
:func:`runner`), and a row is a function of its own, inlined (numba IR) into the serial and the
parallel loop: inside ``prange`` numba proves the arrays do not alias and tells LLVM so, which a
function called from both loops would not get (LCS of three strings, one thread: 3.4 ns a cell
in prange, 4.6 in the called function, a plain loop over the cube 2.4).
"""

from __future__ import annotations

import time

import numpy as np

from ..backends.cpu import ALL_INLINE, PARALLEL_LOCK, cell_namespace, compiled, nrt_options
from ..backends.threads import ThreadChoice, rerun_lost
from ..cache import jit_generated
from ..codegen import fill
from ..errors import kernel_raises
from ..jit import njit
from ..kernel import KernelFactory
from . import layout

#: a plane of fewer cells runs on one thread: a parallel region costs about 2 to 3 us (2 threads),
#: the cells of a serial plane about 4.6 ns each, of a parallel one 1.2 to 1.7 ns (LCS of three
#: strings; n = 20: 21 ns a cell with every plane in parallel, 7 with this threshold; n = 100 and
#: 400: within 7 % of the best of 0, 2^11 and 2^13). Read at run time: a test may lower it to 0.
SERIAL_CELLS = 1 << 11

_RUN = """
def run_planes(d0, d1, n1, n2, n3, ring, starts, dbase, D, FI, FJ, FK, flag, serial{da}):
    R = ring.shape[0]
    for d in range(d0, d1):
        cur = ring[d % R]
        {views}
        ilo = max(0, d - (n2 - 1) - (n3 - 1))
        ihi = min(n1 - 1, d)
        base = starts[d] - dbase
        if starts[d + 1] - starts[d] < serial:
            for i in range(ilo, ihi + 1):
                row(d, i, base, cur{pv}, D, FI, FJ, FK, flag, n1, n2, n3{da})
        else:
            done = 0  # rows finished: fewer where a worker's raise was lost (gpudp.backends.cpu)
            for i in prange(ilo, ihi + 1):
                row(d, i, base, cur{pv}, D, FI, FJ, FK, flag, n1, n2, n3{da})
                done += 1
            if done != ihi + 1 - ilo:
                return d
    return -1
"""

_ROW = """
def row(d, i, base, cur{pv}, D, FI, FJ, FK, flag, n1, n2, n3{da}):
    jlo = max(0, d - i - (n3 - 1))
    jhi = min(n2 - 1, d - i)
    at = base + row_offset(d, i, n2, n3) - jlo
    if {inner}:
        jm = {jm}
        jM = {jM}
        for j in range(jm, jM + 1):
            {unchecked}
        e0 = min(jm, jhi + 1) - jlo  # the cells before the interior: j = 0, at most one
        e1 = jhi + 1 - max(jM + 1, jm)  # the cells after it: k = 0, at most one
    else:
        e0 = jhi + 1 - jlo  # the whole row
        e1 = 0
    for q in range(e0 + e1):
        j = jlo + q if q < e0 else jhi + 1 - e1 + (q - e0)
        {checked}
    # the far faces, once the row is done: j = n2 - 1 and k = n3 - 1 can only be its two ends
    if i == n1 - 1:
        for j in range(jlo, jhi + 1):
            FI[j, d - i - j] = cur[i, j]
    if jhi == n2 - 1:
        FJ[i, d - i - jhi] = cur[i, jhi]
    if d - i - jlo == n3 - 1:
        FK[i, jlo] = cur[i, jlo]
"""

_RUNNERS = KernelFactory("grid3.cpu", "rec", "n_data", "nrt")


def source(rec_cls, n_data: int) -> tuple[str, str]:
    """The generated ``row`` (one row of a plane: its interior with no boundary tests, then its
    ends, or the whole row ``i = 0``, with them) and ``run_planes`` (the planes of a chunk, rows
    in ``prange`` or serially) of a recurrence class, its offsets spelled in."""
    has_i, has_j, has_k = layout.axes_read(rec_cls.offsets)
    read = "p{lag}[{a}, {b}]"
    store = "cur[i, j] = {v}" + ("\nD[at + j] = dd" if rec_cls.decision_bits else "")
    lags = sorted({-sum(o) for o in rec_cls.offsets})
    pv = "".join(f", p{lag}" for lag in lags)
    da = layout.data_params(n_data)
    row = fill(
        _ROW,
        pv=pv,
        da=da,
        inner="i >= 1" if has_i else "True",
        jm="max(jlo, 1)" if has_j else "jlo",
        jM="min(jhi, d - i - 1)" if has_k else "jhi",
        checked=layout.cell_source(rec_cls, n_data, read, store, True, faces=False),
        unchecked=layout.cell_source(rec_cls, n_data, read, store, False, faces=False),
    )
    views = [f"p{lag} = ring[(d - {lag}) % R]" for lag in lags]
    return row, fill(_RUN, da=da, views=views, pv=pv)


def runner(rec_cls, n_data: int, nrt: bool = False):
    """The compiled ``run_planes(d0, d1, n1, n2, n3, ring, starts, dbase, D, FI, FJ, FK, flag,
    serial, *data)`` of a recurrence class, made once per process.

    ``nrt=False`` compiles the user's ``cell`` and ``boundary`` without numba's reference
    counting: a call passing the data arrays then costs no atomic increments and decrements of
    their counts (measured, LCS of three strings at n = 200 on one thread: 25 ns a cell with them,
    3.4 ns without). A cell that allocates (needs the runtime) does not compile so: :func:`run`
    then takes ``nrt=True``. The row holds the cell twice (interior, ends) and is inlined into
    both loops: four copies; the first version spelled the rows out in the loops, eight copies,
    and compiled in 5.7 s against 3.2 for a cell of seven dependencies (2.6 for the LCS)."""
    k = _RUNNERS.lookup(rec=rec_cls, n_data=n_data, nrt=nrt)
    if not k.ready:
        opts = nrt_options(nrt)
        ns = {**cell_namespace(rec_cls, nrt), "row_offset": njit(layout.row_offset)}
        row_src, run_src = source(rec_cls, n_data)
        ns["row"] = jit_generated(row_src, "row", ns, njit, "cpu", inline="always", **opts)
        k = k.keep(jit_generated(run_src, "run_planes", ns, njit, "cpu", parallel=True))
    return k.fn


class _Planes:
    """The planes of a sweep as :class:`gpudp.backends.threads.ThreadChoice` reads a plan: plane ``d``'s
    cells are ``starts[d + 1] - starts[d]``."""

    def __init__(self, starts):
        self.starts, self.n_units = starts, len(starts) - 1

    def unit_cells(self, a: int, b: int) -> int:
        return int(self.starts[b] - self.starts[a])


def run(rec_cls, shape, data, starts, decisions, flag, bar, stats) -> tuple[np.ndarray, ...]:
    """Sweep every plane on the host, the decisions into ``decisions`` (the store, plane after
    plane); return the far faces ``(FI, FJ, FK)``."""
    n1, n2, n3 = shape
    vt = np.dtype(rec_cls.value_dtype)
    fill = rec_cls.fill
    ring = np.full((layout.ring_planes(rec_cls.offsets), max(n1, 1), max(n2, 1)), fill, vt)
    faces = tuple(np.full(s, fill, vt) for s in ((n2, n3), (n1, n3), (n1, n2)))
    with PARALLEL_LOCK:  # numba's parallel regions: one at a time per process (gpudp.backends.cpu)
        t0 = time.perf_counter()
        head = (n1, n2, n3, ring, starts, 0, decisions, *faces, flag)
        fn = compiled(lambda nrt: runner(rec_cls, len(data), nrt), 0, 0, *head, SERIAL_CELLS, *data)
        stats.extra["compile_seconds"] = time.perf_counter() - t0
        choice = ThreadChoice(_Planes(starts), "grid3")
        t0 = time.perf_counter()
        for d0, d1 in layout.chunks(starts, layout.CPU_CHUNK_CELLS):
            for a, b, inline in choice.slices(d0, d1):
                ts = time.perf_counter()
                with kernel_raises(rec_cls):  # what a cell raised, inside a parallel region or not
                    lost = fn(a, b, *head, ALL_INLINE if inline else SERIAL_CELLS, *data)
                    if lost >= 0:  # a worker's raise lost: the plane again, on one thread
                        rerun_lost(rec_cls, fn, lost, lost + 1, *head, 0, *data)
                choice.record(inline, int(starts[b] - starts[a]), time.perf_counter() - ts)
            if bar is not None:
                bar.update(int(starts[d1] - starts[d0]))
        stats.kernel_seconds = time.perf_counter() - t0
    stats.extra["launches"] = len(layout.chunks(starts, layout.CPU_CHUNK_CELLS))
    return faces
