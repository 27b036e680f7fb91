"""How many of numba's threads a CPU sweep's parallel steps run on: at most as many as a step has
items (:func:`threads_at_most`), and all or one, whichever the sweep measures faster as it goes
(:class:`ThreadChoice`). Used by the cpu backend's sweeps (:mod:`gpudp.backends.cpu`) and the
interval and 3-D shapes' own CPU sweeps."""

from __future__ import annotations

import contextlib
import time

import numba

from ..errors import worker_lost


@contextlib.contextmanager
def threads_at_most(n: int):
    """The parallel regions this thread starts use at most ``n`` of numba's threads (restored after):
    a region of fewer work items than threads keeps the others waiting at its barrier for nothing.
    A grid of 1,000 x 1,000 has at most 2 tiles of 256 x 512 on a tile anti-diagonal: on the 4 x
    H200 host (64 cores), two such solves (a batch chunk's cross-checked pairs) took 64-83 ms with
    16 or 64 threads, 6-9 ms capped (docs/benchmarks.md, 2026-11-26)."""
    was = numba.get_num_threads()
    numba.set_num_threads(max(1, min(was, int(n))))
    try:
        yield
    finally:
        numba.set_num_threads(was)


def rerun_lost(cls, fn, *args) -> None:
    """What to do when a parallel region of ``cls``'s compiled sweep (or walk) came back with fewer
    of its items done than it had: numba loses an exception raised on a worker thread, and the rest
    of that thread's share of the loop with it, without a word (docs/tutorial.md). ``fn(*args)``,
    the kernel's call for that part as a parallel region, runs it again on this thread alone, where
    what the cell raises comes back as numba's ``SystemError``, the cell's exception its cause: the
    caller's :func:`gpudp.checks.typing_errors` (or ``kernel_raises``) makes it the grid's
    ContractError.

    Raises
    ------
    ContractError
        Where the part run again raised nothing (a cell that raises only sometimes): a worker thread
        failed (:func:`gpudp.errors.worker_lost`)."""
    with threads_at_most(1):
        fn(*args)
    raise worker_lost(cls.__name__)


class ThreadChoice:
    """Whether a sweep's parallel steps (a layered sweep's layers, a tiled sweep's tile
    anti-diagonals, an interval table's diagonals, a 3-D grid's planes: its *units*, each a parallel
    region) run on numba's threads or inline on this one, chosen by measuring both as the sweep goes
    (issue 39). ``plan``: anything with ``n_units`` and ``unit_cells(a, b)``, the cells (or work) of
    units ``a .. b - 1``; ``kind``: the kind of sweep the process's last choice is kept for. A
    parallel step costs a wake-up of the threads and a barrier: microseconds on an idle host, up to
    a scheduler's time slice on a busy one, where sweeps of many small layers ran 3-23x slower on 2
    threads than on 1 (a 2-core host at load 5; even layers of 10^6 cells 12x: a prange's static
    split waits for the thread the scheduler left out; docs/benchmarks.md). What a step's work makes
    worth it depends on the cell's cost and the host's load, so it is measured, per cell. The
    process keeps, per kind of sweep, the way found faster last and when the other was last timed; a
    sweep starts the faster way and, when the other was not timed in the last
    :data:`REPROBE_SECONDS`, times a slice of it (after :data:`PROBE_UNITS` units the way it
    started, timed beside it): an inline slice at most :data:`PROBE_SECONDS` long (or
    :data:`PROBE_SHARE` of the sweep's rest) at the parallel rate times the threads (its worst case,
    whatever the threads gain; one unit if that is at most :data:`PROBE_MOST`), a parallel one
    :data:`PROBE_UNITS` units (its cost is a barrier a unit). Units too large for an inline probe
    run parallel. With one thread (``NUMBA_NUM_THREADS=1``) every step runs inline, unmeasured. The
    values and decisions do not depend on the way."""

    #: the longest a probe of the inline way may take, at the parallel rate times the threads: this,
    #: or this share of the sweep's rest at the parallel rate (of at most REPROBE_SECONDS: a probe
    #: costs at most a tenth of the time until the next)
    PROBE_SECONDS = 0.004
    PROBE_SHARE = 0.1
    #: one unit is probed inline if its worst case is at most this (a short sweep whose threads are
    #: slow: a tile anti-diagonal of 1,000^2 Smith-Waterman took 20 ms on 2 busy threads, 0.4 inline)
    PROBE_MOST = 0.05
    #: seconds after which the way not taken is timed again (the load moves)
    REPROBE_SECONDS = 1.0
    #: units (layers, tile anti-diagonals) a parallel probe (and the measure of the way a sweep
    #: starts with) takes
    PROBE_UNITS = 2
    #: per kind of sweep: the way the process found faster last (True: inline), and when the other
    #: was last timed
    last: dict = {}

    def __init__(self, plan, kind: str):
        self.plan, self.kind = plan, kind
        self.threads = numba.get_num_threads()
        self.rate = {}  # inline (bool) -> seconds a cell, last measured
        self.active = self.threads > 1

    def best(self) -> bool:
        """Whether inline is measured faster (the process's last choice while this sweep has not
        timed both ways)."""
        if len(self.rate) == 2:
            return self.rate[True] < self.rate[False]
        return self.last.get(self.kind, (False, -1e9))[0]

    def _inline_probe(self, a: int, t1: int) -> int:
        """The end of an inline probe from unit ``a`` (``a`` itself: none fits)."""
        worst = max(self.rate[False] * self.threads, 1e-15)  # seconds a cell
        rest = self.plan.unit_cells(a, self.plan.n_units) * self.rate[False]  # the rest, parallel
        cells = max(self.PROBE_SECONDS, self.PROBE_SHARE * min(rest, self.REPROBE_SECONDS)) / worst
        if self.plan.unit_cells(a, a + 1) * worst <= self.PROBE_MOST:
            cells = max(cells, self.plan.unit_cells(a, a + 1))  # one unit, whatever the share
        lo, hi = a, t1  # the last end that fits, by bisection (the cells rise with it)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if self.plan.unit_cells(a, mid) <= cells else (lo, mid - 1)
        return lo

    def slices(self, t0: int, t1: int):
        """``(a, b, inline)``: the chunk's unit ranges in order, each with the way to run it (time
        each and :meth:`record` it before taking the next)."""
        if not self.active:
            yield t0, t1, self.threads == 1
            return
        a, way = t0, self.best()
        seen, when = self.last.get(self.kind, (way, -1e9))
        if t1 - t0 >= 2 and time.monotonic() - when >= self.REPROBE_SECONDS:
            if way not in self.rate:  # the way it runs, timed beside the probe
                a = min(t0 + self.PROBE_UNITS, t1 - 1)
                yield t0, a, way
            if way in self.rate:  # (units of no cells measure nothing: no probe yet)
                b = min(a + self.PROBE_UNITS, t1) if way else self._inline_probe(a, t1)
                self.last[self.kind] = (seen, time.monotonic())
                if b > a:
                    yield a, b, not way
                    a = b
                elif True not in self.rate:
                    self.active = False  # units too large to time inline: the threads
        if a < t1:
            yield a, t1, self.best()

    def record(self, inline: bool, cells: int, seconds: float):
        """A slice's time: ``cells`` cells run ``inline`` (or not) in ``seconds``."""
        if self.active and cells:
            self.rate[inline] = seconds / cells
            if len(self.rate) == 2:
                self.last[self.kind] = (self.best(), self.last.get(self.kind, (False, -1e9))[1])
