"""Grids of narrow wavefronts swept row after row by one thread on the CPU (the plan ``serial``), and
cells taking their dependencies as one tuple rewritten to read only those they index
(``gpudp.lazy_deps``): each against a plain-Python reference, and against the wavefront plan."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_instance_offsets import Mix, check
from test_user_dps3 import CoinWays  # the number of ways, as the tutorial's section 14 suggests

from gpudp import GridRecurrence, backends
from gpudp.backends import cpu
from gpudp.engine import plan_sweep, sweep
from gpudp.grid.plan import serial_order
from gpudp.lazy_deps import LOOP_OFFSETS, lazy_cell

BIG = 1 << 40


class FewestCoins(CoinWays):
    """The fewest coins of values ``coins[0 .. t]`` that make ``a`` (``BIG``: none), the coin taken as
    the decision: ``deps[1 + t]``, the dependency its row's coin names."""

    decision_bits = 1

    @staticmethod
    def cell(t, a, deps, coins):
        take = deps[1 + t] + 1
        return (take, 1) if take < deps[0] else (deps[0], 0)

    @staticmethod
    def boundary(t, a, coins):
        return 0 if t == -1 and a == 0 else BIG

    @staticmethod
    def back(t, a, d, coins):
        return (t, a - coins[t]) if d else (t - 1, a)


class FewestCoinsFound(FewestCoins):
    """:class:`FewestCoins` finding its row's dependency by a loop over ``len(deps)``."""

    @staticmethod
    def cell(t, a, deps, coins):
        for k in range(1, len(deps)):
            if coins[k - 1] == coins[t]:
                take = deps[k] + 1
                if take < deps[0]:
                    return take, 1
        return deps[0], 0


class IteratedWays(CoinWays):
    """:class:`CoinWays` summing its tuple by iteration: the rewrite leaves it as written."""

    @staticmethod
    def cell(t, a, deps, coins):
        s, k = 0, 0
        for x in deps:
            if k == 0 or k == 1 + t:
                s += x
            k += 1
        return s


def ways_reference(coins, amount) -> list[list[int]]:
    """Every row of :class:`CoinWays`, by the textbook loop, in Python integers (no wrapping)."""
    rows, ways = [], [1] + [0] * amount
    for c in sorted(set(int(c) for c in coins)):
        for a in range(c, amount + 1):
            ways[a] += ways[a - c]
        rows.append(list(ways))
    return rows


def fewest_reference(coins, amount) -> list[list[int]]:
    rows, best = [], [0] + [BIG] * amount
    for c in sorted(set(int(c) for c in coins)):
        for a in range(c, amount + 1):
            best[a] = min(best[a], best[a - c] + 1)
        rows.append(list(best))
    return rows


#: a kernel is compiled per set of offsets (~1 s): a few sets, the amounts (grid widths) drawn
coin_sets = st.sampled_from([(2, 5), (4, 1, 3, 3), (3, 7, 11, 20)])


@settings(max_examples=16)  # a dozen kernels (coin sets x classes x plans) to compile
@given(coin_sets, st.integers(1, 80), st.sampled_from([CoinWays, IteratedWays]), st.booleans())
def test_coin_ways_rows_swept_serially_match_the_loop(coins, amount, cls, wavefronts):
    with pytest.MonkeyPatch.context() as mp:
        if wavefronts:  # the cell rewritten for the layered sweep's ring of wavefronts
            mp.setattr(backends.get("cpu"), "serial_width", 0)
        res = sweep(cls(coins, amount), backend="cpu", traceback=False)
    want = ways_reference(coins, amount)
    assert res.plan.kind == ("layered" if wavefronts else "serial") == res.stats.extra["plan"]
    assert res.last_row.tolist() == want[-1]
    assert res.last_col.tolist() == [row[-1] for row in want]


@settings(max_examples=12)
@given(coin_sets, st.integers(1, 80))
def test_fewest_coins_rows_and_their_traceback(coins, amount):
    rec = FewestCoins(coins, amount)
    res = sweep(rec, backend="cpu")
    want = fewest_reference(coins, amount)
    assert res.plan.kind == "serial"
    assert res.last_row.tolist() == want[-1]
    t = len(rec.coins) - 1
    path = res.traceback((t, amount))
    taken = [int(rec.coins[i]) for i, _, d in path.tolist() if d]
    if want[-1][-1] < BIG:
        assert sum(taken) == amount and len(taken) == want[-1][-1]
    assert [res.decision(i, a) for i, a, _ in path.tolist()] == path[:, 2].tolist()


def test_the_rewrite_reads_deps_by_index_only():
    def rewrite(cls, coins=(1, 2, 5)):  # the class the engine sweeps: the instance's offsets its own
        return lazy_cell(type(cls(coins, 9)._specialized()), 4, None, 0)

    many = range(1, LOOP_OFFSETS + 1)  # with (-1, 0): LOOP_OFFSETS + 1 offsets
    cells = {cls: rewrite(cls, many) for cls in (CoinWays, FewestCoinsFound, IteratedWays)}
    assert cells[IteratedWays] is None  # iterates over its tuple: given it whole
    context = tuple(f"_gpudp_dep_{n}" for n in range(4))
    for cls in (CoinWays, FewestCoinsFound):
        assert cells[cls] is not None and cells[cls].__code__.co_varnames[:6] == ("t", "a", *context)
    src = inspect.getsource(cells[FewestCoinsFound])
    assert "deps" not in src and f"range(1, {LOOP_OFFSETS + 1})" in src  # len(deps): the offsets
    assert rewrite(CoinWays) is not None and rewrite(FewestCoinsFound) is None  # a loop over 4: unrolled

    class Unpacks(CoinWays):
        @staticmethod
        def cell(t, a, deps, coins):
            up, *rest = deps
            return up

    class Assigns(CoinWays):
        @staticmethod
        def cell(t, a, deps, coins):
            k, t = t, 0
            return deps[t] + deps[1 + k]

    assert rewrite(Unpacks) is None and rewrite(Assigns) is None
    res = sweep(Assigns([1, 2, 5], 12), backend="cpu")
    assert res.plan.kind == "serial" and res.last_row.tolist() == ways_reference([1, 2, 5], 12)[-1]


class LineJumps(GridRecurrence):
    """A line whose cell takes its tuple and the line: ``deps[1]`` (two back) plus the cell that
    ``jump`` names, modulo a prime; the rewrite passes the line on between the tuple and the data."""

    value_dtype = np.int64
    deps_tuple = True
    reads_line = True
    offsets = ((0, -1), (0, -2))

    def __init__(self, jump):
        self.jump = np.asarray(jump, np.int64)

    def shape(self):
        return 1, len(self.jump)

    def data(self):
        return (self.jump,)

    @staticmethod
    def cell(i, j, deps, line, jump):
        return (deps[1] + 3 * line[jump[j]] + j) % 1_000_003 if j else 1

    @staticmethod
    def boundary(i, j, jump):
        return 7


@pytest.mark.parametrize("wavefronts", [False, True])
def test_flipping_the_rewrite_switch_sweeps_the_other_kernel(wavefronts, monkeypatch):
    """``cpu.LAZY_DEPS`` flipped in the process: the sweep runs a kernel built with the switch as it is
    now (the class's own cell, given its tuple, when off), not the one built before it flipped."""
    kind = "layered" if wavefronts else "serial"
    if wavefronts:
        monkeypatch.setattr(backends.get("cpu"), "serial_width", 0)
    ran, real = [], getattr(cpu, f"{kind}_runner")
    monkeypatch.setattr(cpu, f"{kind}_runner", lambda *a, **k: ran.append(real(*a, **k)) or ran[-1])
    coins, amount = (1, 3, 7), 40
    for lazy in (True, False, True):
        monkeypatch.setattr(cpu, "LAZY_DEPS", lazy)
        res = sweep(CoinWays(coins, amount), backend="cpu", traceback=False)
        assert res.plan.kind == kind and res.last_row.tolist() == ways_reference(coins, amount)[-1]
        cell = ran[-1].py_func.__globals__["cell"].py_func
        assert (cell is CoinWays.cell) is not lazy, lazy


@settings(max_examples=20)
@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=60))
def test_a_line_read_by_index_and_through_its_tuple(seeds):
    jump = [s % j if j else 0 for j, s in enumerate(seeds)]  # an earlier cell: jump[j] < j
    res = sweep(LineJumps(jump), backend="cpu")
    want = []
    for j in range(len(jump)):
        two_back = want[j - 2] if j >= 2 else 7
        want.append((two_back + 3 * want[jump[j]] + j) % 1_000_003 if j else 1)
    assert res.plan.kind == "line" and res.last_row.tolist() == want
    assert lazy_cell(type(LineJumps(jump)._specialized()), 3, None, 1) is not None


def test_serial_order_of_offsets():
    assert serial_order(((-1, 0), (0, -3))) == ((1, 1), 1)
    assert serial_order(((1, 0), (0, 2), (3, -1))) == ((-1, -1), 3)
    assert serial_order(((-2, 5), (-1, -1))) == ((1, 1), 2)  # no offset in its own row
    assert serial_order(((0, -1), (0, 1), (-1, 0))) is None  # both ways along a row
    assert serial_order(((-1, 0), (1, 1))) is None  # both ways across rows


@pytest.mark.parametrize(
    "offsets",
    [((-1, 0), (0, -3)), ((1, 0), (0, 2), (1, -1)), ((-1, 1), (0, -1), (-2, 0)), ((0, -1), (-1, 2))],
    ids=str,
)
@pytest.mark.parametrize("shape", [(2, 70), (9, 5), (3, 3)], ids=str)
def test_serial_and_wavefront_plans_agree_with_the_reference(offsets, shape, monkeypatch):
    h = np.random.default_rng(sum(shape)).integers(0, 10, shape)
    assert check(h, list(offsets)).plan.kind == "serial"
    monkeypatch.setattr(backends.get("cpu"), "serial_width", 0)  # every grid by its wavefronts
    assert check(h, list(offsets)).plan.kind == "layered"


class PickOne(Mix):
    """:class:`Mix`'s grid whose cell reads one dependency, at an index from its coordinates and the
    data (no ``len(deps)``: rewritten whatever the number of offsets)."""

    @staticmethod
    def cell(i, j, deps, h, steps):
        k = (i + 2 * j + h[i, j]) % steps.shape[0]
        return (h[i, j] + 3 * deps[k] + deps[0]) % 1_000_003, deps[k] % 2


def grid_reference(rec):
    """Every value and decision of a grid, by its own Python ``cell`` and ``boundary`` given tuples,
    cell after cell in the order of its wavefronts."""
    s = plan_sweep(rec, backend="cpu").schedule
    rows, cols = rec.shape()
    data, got = rec.data(), {}
    for i, j in sorted(np.ndindex(rows, cols), key=lambda c: s.a * c[0] + s.b * c[1]):
        at = [(i + di, j + dj) for di, dj in rec.offsets]
        deps = tuple(got[c][0] if c in got else rec.boundary(*c, *data) for c in at)
        got[i, j] = rec.cell(i, j, deps, *data)
    return got


@pytest.mark.parametrize("serial", [True, False])
@pytest.mark.parametrize("shape", [(2, 70), (9, 5)], ids=str)  # wide and tall (each ~6 s)
def test_a_cell_reading_one_dependency_by_its_data(shape, serial, monkeypatch):
    if not serial:
        monkeypatch.setattr(backends.get("cpu"), "serial_width", 0)
    h = np.random.default_rng(sum(shape)).integers(0, 10, shape)
    for offsets in ([(-1, 1), (0, -1), (-2, 0)], [(1, 0), (0, 2), (1, -1), (2, 3)]):
        rec = PickOne(h, offsets)
        res, want = sweep(rec, backend="cpu"), grid_reference(rec)
        s, (rows, cols) = res.plan.schedule, shape
        last_i, last_j = (0 if s.a < 0 else rows - 1), (0 if s.b < 0 else cols - 1)
        assert res.plan.kind == ("serial" if serial else "layered")
        assert res.last_row.tolist() == [want[last_i, j][0] for j in range(cols)]
        assert res.last_col.tolist() == [want[i, last_j][0] for i in range(rows)]
        assert all(res.decision(*c) == d for c, (_, d) in want.items())


def test_rows_in_many_chunks_spilled_to_disk(monkeypatch):
    monkeypatch.setattr(cpu, "CPU_CHUNK_CELLS", 100)  # chunks of 2 rows of 40
    h = np.random.default_rng(8).integers(0, 10, (9, 40))
    res = check(h, [(1, 0), (0, 2), (1, -1)], memory_budget=0)
    assert res.plan.kind == "serial" and res.stats.spilled_to_disk
    assert res.plan.chunks == [(0, 2), (2, 4), (4, 6), (6, 8), (8, 9)] and res.plan.serial == (-1, -1)


def test_an_order_by_rows_stays_layered():
    """Offsets that all go back a row are swept by rows already, a row a layer (seam carving's)."""
    assert serial_order(((-1, -1), (-1, 1))) == ((1, 1), 1)
    assert check(np.ones((9, 5), np.int64), [(-1, -1), (-1, 1)]).plan.kind == "layered"


def test_a_ring_of_rows_larger_than_the_wavefronts_keeps_them():
    """Offsets far back a row across a long row: the rows' ring would be many rows of the grid's
    width, the wavefronts' much smaller: the plan stays layered."""
    rec = CoinWays(range(1, 101), 10_000)  # 100 rows of 10,001
    rec.offsets = ((-1, 0), (0, -1), (-4, 0))  # rows: 5 x 10,001 cells; wavefronts: 5 x 100
    assert plan_sweep(rec, backend="cpu").kind == "layered"
    rec.offsets = ((-1, 0), (0, -1), (-3, 0))  # 4 x 10,001 cells: within 4 x (rows + columns)
    assert plan_sweep(rec, backend="cpu").kind == "serial"


@pytest.mark.sim
def test_coin_ways_on_cuda_sweeps_wavefronts_with_the_same_values():
    coins, amount = [2, 3, 7], 30
    res = sweep(CoinWays(coins, amount), backend="cuda", traceback=False)
    assert res.plan.kind == "layered" and res.last_row.tolist() == ways_reference(coins, amount)[-1]
    rec = FewestCoins(coins, amount)
    res = sweep(rec, backend="cuda")
    assert res.last_row.tolist() == fewest_reference(coins, amount)[-1]
    assert sum(int(rec.coins[i]) for i, _, d in res.traceback((2, amount)).tolist() if d) == amount
