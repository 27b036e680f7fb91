"""Grids of narrow wavefronts swept row after row by one thread on the CPU (the plan ``serial``), and
cells taking their dependencies as one tuple rewritten to read only those they index
(``gpudp.lazy_deps``): each against a plain-Python reference, and against the wavefront plan."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_instance_offsets import check
from test_user_dps3 import CoinWays  # the number of ways, as the tutorial's section 14 suggests

from gpudp import backends
from gpudp.backends import cpu
from gpudp.engine import plan_sweep, sweep
from gpudp.grid.plan import serial_order
from gpudp.lazy_deps import lazy_cell

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


@settings(max_examples=40)
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


@settings(max_examples=30)
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
    def rewrite(cls):  # the class the engine sweeps: the instance's 4 offsets its own
        return lazy_cell(type(cls([1, 2, 5], 9)._specialized()), 4, None, 0)

    cells = {cls: rewrite(cls) for cls in (CoinWays, FewestCoinsFound, IteratedWays)}
    assert cells[IteratedWays] is None  # iterates over its tuple: given it whole
    for cls in (CoinWays, FewestCoinsFound):
        fn = cells[cls]
        assert fn is not None and fn.__code__.co_varnames[:6] == (
            "t",
            "a",
            *(f"_gpudp_dep_{n}" for n in range(4)),
        )
    src = inspect.getsource(cells[FewestCoinsFound])
    assert "deps" not in src and "range(1, 4)" in src  # len(deps): the number of offsets

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
