"""The CPU sweep of an interval recurrence: numba ``njit(parallel=True)``, the table row-major.

One generated function runs a chunk of diagonals: for each, the cells ``(i, i + d)`` with
``prange`` when the diagonal's work (cells x length) reaches :data:`gpudp.interval.table.SERIAL_WORK`,
else serially on one thread; the cell reads the row-major table ``T`` that it and its diagonal
write (``T[i, j]``, decisions ``D[i, j]``). One compile per recurrence class, on disk for later
processes (:func:`gpudp.cache.jit_generated`).
"""

from __future__ import annotations

import time

from ..backends.cpu import PARALLEL_LOCK, cell_namespace
from ..cache import jit_generated
from ..jit import njit
from .table import SERIAL_WORK, cells_of, compiled_sweep

_RUN = """
def run_diagonals(d0, d1, n, S, D{da}):
    T = S  # row-major: the cells read the table they write
    for d in range(d0, d1):
        if (n - d) * (d + 1) < SERIAL_WORK:  # a short diagonal: cheaper than a parallel region
            for i in range(n - d):
                {body}
        else:
            for i in prange(n - d):
                {body}
"""


def runner(rec_cls, n_data: int):
    """The compiled ``run_diagonals(d0, d1, n, S, D, *data)`` of a recurrence class."""
    return compiled_sweep(
        "cpu",
        rec_cls,
        n_data,
        _RUN,
        ("S[i, j]", "D[i, j]"),
        lambda: {**cell_namespace(rec_cls), "SERIAL_WORK": SERIAL_WORK},
        lambda src, ns: jit_generated(src, "run_diagonals", ns, njit, "cpu", parallel=True),
    )


def device_bytes(table_bytes: int, decision_bytes: int) -> int:
    """Device memory the sweep needs besides the host's table and decisions: none."""
    return 0


def run(rec_cls, n, data, table, decisions, chunks, bar, stats) -> None:
    """Sweep the diagonals, chunk after chunk, into ``table`` and ``decisions`` (row-major)."""
    fn = runner(rec_cls, len(data))
    with PARALLEL_LOCK:  # numba's parallel regions: one at a time per process (gpudp.backends.cpu)
        t0 = time.perf_counter()
        fn(0, 0, n, table, decisions, *data)  # compile (or load)
        stats.extra["compile_seconds"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        for d0, d1 in chunks:
            fn(d0, d1, n, table, decisions, *data)
            if bar is not None:
                bar.update(cells_of(n, d0, d1))
        stats.kernel_seconds = time.perf_counter() - t0
    stats.extra["layout"] = "rows"
