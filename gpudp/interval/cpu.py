"""The CPU sweep of an interval recurrence: numba ``njit(parallel=True)``, the table row-major.

One generated function runs a chunk of diagonals: for each, the cells ``(i, i + d)`` with
``prange`` when the diagonal's work (cells x length) reaches :data:`gpudp.interval.table.SERIAL_WORK`,
else serially on one thread (and every diagonal serially where the sweep measures that faster:
:class:`gpudp.backends.threads.ThreadChoice`); the cell reads the row-major table ``T`` that it and
its diagonal write (``T[i, j]``, decisions ``D[i, j]``). Where the cell's loops read down a column
of ``T`` (matrix chain's ``T[k + 1, j]``: a whole row apart from one split point to the next), those
reads go to a column-major copy ``C`` written beside it (:func:`gpudp.interval.split.column_cell`):
one item apart instead. One compile per recurrence class, on disk for later processes
(:func:`gpudp.cache.jit_generated`).
"""

from __future__ import annotations

import time

import numpy as np

from ..backends.cpu import ALL_INLINE, PARALLEL_LOCK, cell_namespace
from ..backends.threads import ThreadChoice, rerun_lost
from ..cache import jit_generated
from ..errors import kernel_raises
from ..jit import njit
from ..memory import available_memory
from ..values import fill_buf, full, is_record, itemsize
from . import split
from .records import record_cell, record_function
from .table import SERIAL_WORK, cells_of, compiled_sweep

_RUN = """
def run_diagonals(d0, d1, n, serial_work, S, C, D{da}):
    T = S  # row-major: the cells read the table they write
    for d in range(d0, d1):
        if (n - d) * (d + 1) < serial_work:  # a short diagonal: cheaper than a parallel region
            for i in range(n - d):
                {body}
        else:
            done = 0  # cells finished: fewer where a worker's raise was lost (gpudp.backends.cpu)
            for i in prange(n - d):
                {body}
                done += 1
            if done != n - d:
                return d
    return -1
"""


def column_cell(rec_cls):
    """The cell reading its loops' columns from the column-major copy
    (:func:`gpudp.interval.split.column_cell`; a record cell's reads of both made tuples,
    :mod:`gpudp.interval.records`), compiled, or the reason there is none (a str)."""

    def build():
        if is_record(rec_cls):
            return njit(record_function(rec_cls, "cell", 2, (split.COLS,), split.column_reads)[0])
        return njit(split.column_cell(rec_cls.cell)[0])

    return split.rewritten("columns", rec_cls, build)


def runner(rec_cls, n_data: int, columns: bool):
    """The compiled ``run_diagonals(d0, d1, n, S, C, D, *data)`` of a recurrence class: the table
    ``S`` row-major, with ``columns`` its column-major copy ``C`` too (``C[j, i]``), which the cell's
    loops read columns from (:func:`column_cell`)."""

    def namespace():
        ns = cell_namespace(rec_cls)
        if is_record(rec_cls):  # the table a tuple of the fields' (gpudp.interval.records)
            ns["cell"] = njit(record_cell(rec_cls))
        if columns:
            ns["ccell"] = column_cell(rec_cls)
        return ns

    return compiled_sweep(
        "cpu-columns" if columns else "cpu",
        rec_cls,
        n_data,
        _RUN,
        ("S[i, j]", "C[j, i]", "D[i, j]") if columns else ("S[i, j]", "D[i, j]"),
        namespace,
        lambda src, ns: jit_generated(src, "run_diagonals", ns, njit, "cpu", parallel=True),
        head="ccell(C, " if columns else "cell(",
    )


class _Work:
    """The diagonals of an ``n``-interval table as :class:`gpudp.backends.threads.ThreadChoice` reads a
    plan: a diagonal's work is its cells times its length (the split points a cell loops over)."""

    def __init__(self, n: int):
        d = np.arange(n, dtype=np.int64)
        self.n_units = n
        self.each = (n - d) * (d + 1)
        self.work = np.concatenate(([0], np.cumsum(self.each)))

    def unit_cells(self, a: int, b: int) -> int:
        return int(self.work[b] - self.work[a])


def device_bytes(table_bytes: int, decision_bytes: int) -> int:
    """Device memory the sweep needs besides the host's table and decisions: none."""
    return 0


def run(rec_cls, n, data, table, decisions, chunks, bar, stats) -> None:
    """Sweep the diagonals, chunk after chunk, into ``table`` (a record's: a tuple of the fields'
    tables) and ``decisions`` (row-major); with a column-major copy of the table where the cell's
    loops read columns and the memory allows it (twice the table's room: the copy is let go at the
    end)."""
    fill_buf(rec_cls, table)  # below the diagonal, as the cells see it
    decisions.fill(0)
    ccell = column_cell(rec_cls)  # (for one interval too: the class's one kernel, not a second)
    nbytes = n * n * itemsize(rec_cls)
    if not isinstance(ccell, str) and nbytes > available_memory() // 2:
        ccell = f"no room for a copy of the table ({nbytes / 2**30:.2f} GiB)"
    columns = not isinstance(ccell, str)
    stats.extra["column_reads"] = "a column-major copy" if columns else f"the table: {ccell}"
    C = full(rec_cls, (n, n) if columns else (1, 1))
    fn = runner(rec_cls, len(data), columns)
    choice = ThreadChoice(_Work(n), "interval")
    parallel = np.flatnonzero(choice.plan.each >= SERIAL_WORK)
    first = int(parallel[0]) if len(parallel) else n  # the first diagonal a parallel region may run
    with PARALLEL_LOCK:  # numba's parallel regions: one at a time per process (gpudp.backends.cpu)
        t0 = time.perf_counter()
        fn(0, 0, n, SERIAL_WORK, table, C, decisions, *data)  # compile (or load)
        stats.extra["compile_seconds"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        for d0, d1 in chunks:
            if d0 < first:  # diagonals too short for a parallel region either way: not measured
                with kernel_raises(rec_cls):  # what a cell raised outside a parallel region
                    fn(d0, min(d1, first), n, SERIAL_WORK, table, C, decisions, *data)
            for a, b, inline in choice.slices(max(d0, first), d1) if d1 > first else ():
                ts = time.perf_counter()
                with kernel_raises(rec_cls):
                    lost = fn(a, b, n, ALL_INLINE if inline else SERIAL_WORK, table, C, decisions, *data)
                    if lost >= 0:  # a worker's raise lost: the diagonal again, on one thread
                        rerun_lost(rec_cls, fn, lost, lost + 1, n, 0, table, C, decisions, *data)
                choice.record(inline, choice.plan.unit_cells(a, b), time.perf_counter() - ts)
            if bar is not None:
                bar.update(cells_of(n, d0, d1))
        stats.kernel_seconds = time.perf_counter() - t0
    stats.extra["layout"] = "rows"
