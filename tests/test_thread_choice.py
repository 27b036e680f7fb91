"""The cpu backend's measured choice between numba's threads and one thread for a layered sweep's
layers (gpudp.backends.threads.ThreadChoice): the slices cover each chunk once, in order; the faster way
measured wins; a probe stays within its budget; the values and decisions never depend on it."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudp import LayeredRecurrence, sweep
from gpudp.backends import cpu, threads


class _Plan:
    """What ThreadChoice reads of a plan: the cells of a range of layers."""

    def __init__(self, sizes):
        self.sizes = np.asarray(sizes, np.int64)
        self.n_units = len(sizes)

    def unit_cells(self, a, b):
        return int(self.sizes[a:b].sum())


@pytest.fixture
def fresh(monkeypatch):
    """A process that has measured nothing yet, and two threads."""
    monkeypatch.setattr(threads.ThreadChoice, "last", {})
    monkeypatch.setattr(numba, "get_num_threads", lambda: 2)


def _run(choice, chunks, seconds_a_cell):
    """Sweep ``chunks`` with fake timings (``seconds_a_cell[way]``): the slices, in order."""
    out = []
    for t0, t1 in chunks:
        got = []
        for a, b, serial in choice.slices(t0, t1):
            got.append((a, b, serial))
            choice.record(
                serial, choice.plan.unit_cells(a, b), choice.plan.unit_cells(a, b) * seconds_a_cell[serial]
            )
        assert got[0][0] == t0 and got[-1][1] == t1, got
        assert all(a < b for a, b, _ in got) and all(x[1] == y[0] for x, y in zip(got, got[1:], strict=False))
        out += got
    return out


# the fixture's state (the process's last choice) is set again by each example itself
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sizes=st.lists(st.integers(0, 5000), min_size=1, max_size=60),
    cut=st.integers(1, 20),
    serial_faster=st.booleans(),
)
def test_slices_cover_every_chunk_once(fresh, sizes, cut, serial_faster):
    threads.ThreadChoice.last.clear()
    plan = _Plan(sizes)
    chunks = [(t, min(t + cut, len(sizes))) for t in range(0, len(sizes), cut)]
    choice = threads.ThreadChoice(plan, "layered")
    rates = {True: 1e-9 if serial_faster else 4e-9, False: 2e-9}
    _run(choice, chunks, rates)


def test_the_faster_way_measured_goes_on(fresh):
    plan = _Plan([1000] * 400)
    chunks = [(t, t + 40) for t in range(0, 400, 40)]
    slow_threads = {True: 1e-9, False: 20e-9}  # a busy host: barriers dominate
    got = _run(threads.ThreadChoice(plan, "layered"), chunks, slow_threads)
    assert got[0] == (0, 2, False)  # the way it starts, measured
    assert got[1][2] is True and all(s is True for _, _, s in got[2:])
    assert threads.ThreadChoice.last["layered"][0]  # the next sweep starts inline, and probes no sooner than
    assert _run(threads.ThreadChoice(plan, "layered"), [(0, 40)], slow_threads) == [(0, 40, True)]
    threads.ThreadChoice.last["layered"] = (True, -1e9)  # ... REPROBE_SECONDS later: the threads timed again
    got = _run(threads.ThreadChoice(plan, "layered"), [(0, 40)], slow_threads)
    assert got == [(0, 2, True), (2, 4, False), (4, 40, True)]


def test_a_serial_probe_stays_within_its_budget(fresh):
    """Threads 4x faster: the serial probe takes at most a tenth of the time until the next probe
    (its worst case, the parallel rate times the threads); layers too large for it: no probe."""
    plan = _Plan([100_000] * 1000)
    fast_threads = {True: 4e-9, False: 1e-9}
    got = _run(threads.ThreadChoice(plan, "layered"), [(0, 1000)], fast_threads)
    (a, b, way) = got[1]
    assert way is True and plan.unit_cells(a, b) * 1e-9 * 2 <= 0.1 * threads.ThreadChoice.REPROBE_SECONDS
    assert got[2][2] is False
    threads.ThreadChoice.last.clear()
    huge = _Plan([10**9] * 3)
    choice = threads.ThreadChoice(huge, "layered")
    assert _run(choice, [(0, 3)], fast_threads) == [(0, 2, False), (2, 3, False)]
    assert not choice.active


def test_one_thread_runs_every_layer_inline_unmeasured(monkeypatch):
    monkeypatch.setattr(numba, "get_num_threads", lambda: 1)
    choice = threads.ThreadChoice(_Plan([10] * 9), "layered")
    assert list(choice.slices(0, 9)) == [(0, 9, True)] and not choice.active


class _Knap(LayeredRecurrence):
    value_dtype = np.int64
    decision_bits = 1

    def __init__(self, w, p, cap):
        self.w, self.p, self.cap = w, p, cap

    def num_layers(self):
        return len(self.w)

    def layer_size(self, t):
        return self.cap + 1

    def data(self):
        return self.w, self.p

    @staticmethod
    def cell(t, c, prev, w, p):
        best = prev[c]
        if c >= w[t]:
            v = prev[c - w[t]] + p[t]
            if v > best:
                return v, 1
        return best, 0

    @staticmethod
    def back(t, c, taken, w, p):
        return t - 1, c - w[t] if taken else c


@pytest.fixture
def ways(monkeypatch):
    """The ways (inline or not) the sweeps of the test ran their slices."""
    real, seen = threads.ThreadChoice.record, set()

    def record(self, inline, cells, seconds):
        seen.add(inline)
        return real(self, inline, cells, seconds)

    monkeypatch.setattr(threads.ThreadChoice, "record", record)
    return seen


def test_values_and_decisions_do_not_depend_on_the_way(monkeypatch, ways):
    """Small chunks, a probe every chunk, the threads' way or the inline way forced: the same."""
    rng = np.random.default_rng(4)
    rec = _Knap(rng.integers(1, 50, 120), rng.integers(1, 100, 120), 3000)
    monkeypatch.setattr(cpu, "CPU_CHUNK_CELLS", 20_000)
    monkeypatch.setattr(threads.ThreadChoice, "REPROBE_SECONDS", 0.0)
    got = []
    for inline_first in (False, True):
        monkeypatch.setattr(threads.ThreadChoice, "last", {"layered": (inline_first, -1e9)})
        res = sweep(rec, backend="cpu", progress=False)
        got.append((res.last_layer.copy(), res.traceback((119, 3000))))
    assert np.array_equal(got[0][0], got[1][0]) and np.array_equal(got[0][1], got[1][1])
    assert numba.get_num_threads() == 1 or ways == {True, False}


def test_tiled_sweeps_do_not_depend_on_the_way(monkeypatch, ways):
    """A tiled grid's anti-diagonals on the threads or inline, probed every chunk: the same."""
    from gpudp.problems.lcs import LCSRecurrence

    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 4, 300).astype(np.uint8), rng.integers(0, 4, 200).astype(np.uint8)
    monkeypatch.setattr(cpu, "CPU_CHUNK_CELLS", 4096)
    monkeypatch.setattr(threads.ThreadChoice, "REPROBE_SECONDS", 0.0)
    got = []
    for inline_first in (False, True):
        monkeypatch.setattr(threads.ThreadChoice, "last", {"tiled": (inline_first, -1e9)})
        res = sweep(LCSRecurrence(a, b), backend="cpu", tile=(8, 32), progress=False, store="full")
        got.append((res.last_row.copy(), res.last_col.copy(), res.traceback((299, 199))))
    assert all(np.array_equal(x, y) for x, y in zip(got[0], got[1], strict=True))
    assert numba.get_num_threads() == 1 or ways == {True, False}


def test_units_of_no_cells_measure_nothing(fresh):
    """Layers whose active ranges are empty time nothing: no probe from them, no division by 0."""
    plan = _Plan([0, 0, 0, 0, 500, 500, 0, 500] * 10)
    rates = {True: 1e-9, False: 3e-9}
    _run(threads.ThreadChoice(plan, "layered"), [(t, t + 4) for t in range(0, 80, 4)], rates)


def test_interval_and_3d_sweeps_do_not_depend_on_the_way(monkeypatch, ways):
    """Interval diagonals and 3-D planes on the threads or inline, probed every chunk: the same
    tables, decisions and faces (the thresholds lowered so that every diagonal and plane could run
    in parallel)."""
    from examples_loader import load_example

    import gpudp.grid3.cpu
    import gpudp.interval.cpu

    mc, lcs3 = load_example("matrix_chain"), load_example("lcs3")
    monkeypatch.setattr(gpudp.interval.cpu, "SERIAL_WORK", 1)
    monkeypatch.setattr(gpudp.grid3.cpu, "SERIAL_CELLS", 1)
    monkeypatch.setattr(threads.ThreadChoice, "REPROBE_SECONDS", 0.0)
    rng = np.random.default_rng(6)
    dims = rng.integers(1, 50, 41)
    a, b, c = ("".join(rng.choice(list("ACGT"), 14)) for _ in range(3))
    got = []
    for inline_first in (False, True):
        first = {k: (inline_first, -1e9) for k in ("interval", "grid3")}
        monkeypatch.setattr(threads.ThreadChoice, "last", first)
        r = sweep(mc.MatrixChain(dims), backend="cpu", progress=False)
        q = sweep(lcs3.LCS3(a, b, c), backend="cpu", progress=False)
        end = tuple(x - 1 for x in q.shape)
        got.append((r.table.copy(), r.decisions.copy(), q.face_i, q.face_j, q.face_k, q.traceback(end)))
    assert all(np.array_equal(x, y) for x, y in zip(got[0], got[1], strict=True))
    assert numba.get_num_threads() == 1 or ways == {True, False}
