"""The checked mode, ``sweep(..., check=True)`` or ``GPUDP_CHECK=1`` (issue 39): the recurrence swept
once in plain Python before the compiled sweep, every read of a cell and every step of ``back``
checked against the schedule. Each mistake below passes an unchecked sweep without a word (the
probe calls ``cell`` on a few cells only) and is a ContractError naming the cell and the read in
checked mode; a correct recurrence gives exactly the unchecked result."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import ContractError, GridRecurrence, IntervalRecurrence, LayeredRecurrence, sweep, sweep_many


class Chain(IntervalRecurrence):
    """Matrix-chain order over dims ``p``; at the interval ``bad`` (if inside) the cell also reads
    ``T[i, j + 1]``, a longer interval, not computed yet."""

    value_dtype = np.int64
    decision_bits = 8

    def __init__(self, p, bad=(-1, -1)):
        self.p, self.bad = np.asarray(p, np.int64), np.asarray(bad, np.int64)

    def size(self):
        return len(self.p) - 1

    def data(self):
        return self.p, self.bad

    @staticmethod
    def cell(i, j, T, p, bad):
        if i == j:
            return 0, 0
        best, split = T[i, i] + T[i + 1, j] + p[i] * p[i + 1] * p[j + 1], i
        for k in range(i + 1, j):
            cost = T[i, k] + T[k + 1, j] + p[i] * p[k + 1] * p[j + 1]
            if cost < best:
                best, split = cost, k
        if i == bad[0] and j == bad[1]:
            best += T[i, j + 1] * 0  # the value does not change: only the read is wrong
        return best, split - i

    @staticmethod
    def back(i, j, d, p, bad):
        if i == j:
            return -1, -1, -1, -1
        return i, i + d, i + d + 1, j


def _dims(n, seed):
    return np.random.default_rng(seed).integers(1, 30, n + 1)


#: the cells the interval probe calls cell on (gpudp.interval.probe): a bad read elsewhere it misses
def _probed(n):
    return {(0, 0), (0, 1), (0, 3), (n - 2, n - 1), (n - 1, n - 1)}


@settings(max_examples=8)
@given(n=st.integers(3, 12), data=st.data())
def test_an_interval_cell_reading_a_longer_interval_is_named_in_checked_mode_only(n, data):
    i = data.draw(st.integers(0, n - 3))
    j = data.draw(st.integers(i + 1, n - 2))  # T[i, j + 1] stays inside the table
    if (i, j) in _probed(n):
        j = i  # a length-1 cell never reads: no mistake, nothing named
    rec = Chain(_dims(n, n), (i, j))
    plain = sweep(rec, backend="cpu")  # unchecked: no word (the value read is multiplied by 0)
    if i == j:
        assert sweep(rec, backend="cpu", check=True).table.tolist() == plain.table.tolist()
        return
    with pytest.raises(ContractError) as e:
        sweep(rec, backend="cpu", check=True)
    assert str(e.value).startswith(f"Chain.cell at ({i}, {j}) read T[{i}, {j + 1}]: a cell may read")


def test_the_issues_read_at_37_47_of_60():
    rec = Chain(_dims(60, 1), (37, 47))
    assert sweep(rec, backend="cpu").value(0, 59) > 0  # unseen unchecked
    with pytest.raises(ContractError, match=r"Chain\.cell at \(37, 47\) read T\[37, 48\]"):
        sweep(rec, backend="cpu", check=True)


def test_the_environment_variable_turns_it_on_and_check_false_off(monkeypatch):
    rec = Chain(_dims(8, 2), (2, 4))
    monkeypatch.setenv("GPUDP_CHECK", "1")
    with pytest.raises(ContractError, match=r"at \(2, 4\) read T\[2, 5\]"):
        sweep(rec, backend="cpu")
    assert "checked" not in sweep(rec, backend="cpu", check=False).stats.extra
    monkeypatch.setenv("GPUDP_CHECK", "maybe")
    with pytest.raises(Exception, match="GPUDP_CHECK"):
        sweep(rec, backend="cpu")


class Climb(LayeredRecurrence):
    """The tutorial's walker (section 10): layer t computes k < t + 1; at ``bad`` the cell reads
    ``prev[k + 1]`` (outside the previous layer's range where k + 1 >= t), and ``back`` steps to
    ``step_bad`` from the cell ``back_bad``."""

    value_dtype = np.int64
    decision_bits = 2

    def __init__(self, reward, bad=(-1, -1), back_bad=(-1, -1), far=(-1, -1)):
        self.reward = np.asarray(reward, np.int64)
        self.bad, self.back_bad, self.far = (np.asarray(x, np.int64) for x in (bad, back_bad, far))

    def num_layers(self):
        return self.reward.shape[0]

    def layer_size(self, t):
        return self.reward.shape[1]

    def active_range(self):
        t = np.arange(self.num_layers())
        return np.zeros_like(t), np.minimum(t + 1, self.reward.shape[1])

    def data(self):
        return self.reward, self.bad, self.back_bad, self.far

    @staticmethod
    def cell(t, k, prev, reward, bad, back_bad, far):
        if t == 0:
            return reward[0, 0], 0
        top = min(t, reward.shape[1])
        best, how = -(1 << 60), 0
        if k < top:
            best = prev[k]
        if k >= 1 and prev[k - 1] > best:
            best, how = prev[k - 1], 1
        if t == bad[0] and k == bad[1]:
            best += prev[k + 1] * 0
        if t == far[0] and k == far[1] and k >= 2:
            best += prev[k - 2] * 0  # within the range, past a reach of 1
        return best + reward[t, k], how

    @staticmethod
    def back(t, k, how, reward, bad, back_bad, far):
        if t == back_bad[0] and k == back_bad[1]:
            return t - 1, t  # layer t - 1 computed 0 .. t - 1 only
        return t - 1, k - how


def _reward(seed):
    return np.random.default_rng(seed).integers(0, 9, (6, 7))


def test_a_layered_read_outside_the_previous_layers_range_is_named():
    rec = Climb(_reward(1), bad=(3, 2))
    sweep(rec, backend="cpu")  # unchecked: a stale value of the ring, no word
    with pytest.raises(ContractError) as e:
        sweep(rec, backend="cpu", check=True)
    assert str(e.value).startswith(
        "Climb.cell at (3, 2) read prev_1[3], cell 3 of layer 2: layer 2 computed only cells 0 .. 2 "
        "(active_range())"
    )


def test_a_layered_read_past_the_declared_reach_is_named():
    rec = Climb(_reward(2), far=(4, 3))
    reach = np.ones(6, np.int64)
    sweep(rec, backend="cpu", reach=reach)  # the CPU does not use the reach: no word
    with pytest.raises(ContractError, match=r"at \(4, 3\) read prev_1\[1\].*reach\[4\] = 1"):
        sweep(rec, backend="cpu", reach=reach, check=True)


def test_a_layered_back_outside_the_range_is_named_at_the_sweep_where_the_walk_never_goes():
    rec = Climb(_reward(3), back_bad=(2, 0))
    res = sweep(rec, backend="cpu")
    res.traceback((5, 5))  # this walk does not pass (2, 0): no word
    with pytest.raises(ContractError, match=r"back\(2, 0, 0\) returned \(1, 2\).*only its active range"):
        res.traceback((2, 0))  # the compiled walk's check, kept
    with pytest.raises(ContractError, match=r"Climb\.back\(2, 0, 0\) returned \(1, 2\): layer 1 computed"):
        sweep(rec, backend="cpu", check=True)


class Prefix(GridRecurrence):
    """Each cell adds ``a[i] * b[j]``, reading ``a[i + shift]``: past a's end on the last row when
    ``shift`` is 1. ``back`` steps right instead of left from the cell ``wrong``."""

    value_dtype = np.int64
    decision_bits = 1
    offsets = ((-1, 0), (0, -1))

    def __init__(self, a, b, shift=0, wrong=(-1, -1)):
        self.a, self.b = np.asarray(a, np.int64), np.asarray(b, np.int64)
        self.shift, self.wrong = shift, np.asarray(wrong, np.int64)

    def shape(self):
        return len(self.a), len(self.b)

    def data(self):
        return self.a, self.b, self.shift, self.wrong

    @staticmethod
    def cell(i, j, up, left, a, b, shift, wrong):
        x = a[i + shift]
        if up >= left:
            return up + x * b[j], 0
        return left + x * b[j], 1

    @staticmethod
    def boundary(i, j, a, b, shift, wrong):
        return i + j

    @staticmethod
    def back(i, j, d, a, b, shift, wrong):
        if i == wrong[0] and j == wrong[1]:
            return i, j + 1
        return (i - 1, j) if d == 0 else (i, j - 1)


def test_a_grid_read_past_its_data_is_named_with_the_cause():
    rec = Prefix([1, 2, 3], [4, 5], shift=1)
    with pytest.raises(ContractError, match=r"Prefix\.cell at \(2, 0\) raised IndexError") as e:
        sweep(rec, backend="cpu", check=True)
    assert isinstance(e.value.__cause__, IndexError)


def test_a_batch_in_checked_mode_names_the_instance(monkeypatch):
    """sweep_many(check=True), or GPUDP_CHECK: every instance checked first; the batch's result as
    unchecked; a mistake named with its instance."""
    good = [Prefix([1, 2, 3], [4, 5]), Prefix([2, 1], [3, 1, 2])]
    res, plain = sweep_many(good, backend="cpu", check=True), sweep_many(good, backend="cpu")
    assert res.values == plain.values and res.stats.extra["checked"] == 12
    assert [it.path.tolist() for it in res] == [it.path.tolist() for it in plain]
    assert "checked" not in plain.stats.extra
    bad = [good[0], Prefix([1, 2, 3], [4, 5], shift=1)]
    named = r"instance 1 of the batch: Prefix\.cell at \(2, 0\) raised IndexError"
    with pytest.raises(ContractError, match=named):
        sweep_many(bad, backend="cpu", check=True)
    monkeypatch.setenv("GPUDP_CHECK", "1")
    assert sweep_many(good, backend="cpu").stats.extra["checked"] == 12


def test_a_grid_back_to_a_later_wavefront_is_named_at_the_sweep():
    rec = Prefix([1, 2, 3], [4, 5, 6], wrong=(0, 1))
    res = sweep(rec, backend="cpu")
    res.traceback((2, 0))  # not through (0, 1)
    with pytest.raises(ContractError, match=r"Prefix\.back\(0, 1, \d\) returned \(0, 2\), which is not on"):
        sweep(rec, backend="cpu", check=True)
    assert "checked" in sweep(rec, backend="cpu", traceback=False, check=True).stats.extra  # no walk


@settings(max_examples=6)
@given(seed=st.integers(0, 1000), n=st.integers(1, 9))
def test_a_correct_recurrence_gives_exactly_the_unchecked_result(seed, n):
    chain = Chain(_dims(n, seed))
    a, b = sweep(chain, backend="cpu"), sweep(chain, backend="cpu", check=True)
    assert b.stats.extra["checked"] == n * (n + 1) // 2
    assert a.table.tolist() == b.table.tolist() and a.decisions.tolist() == b.decisions.tolist()
    assert a.traceback_tree().tolist() == b.traceback_tree().tolist()
    climb = Climb(_reward(seed)[: max(n // 2, 1)])
    reach = np.ones(climb.num_layers(), np.int64)
    a, b = sweep(climb, backend="cpu"), sweep(climb, backend="cpu", check=True, reach=reach)
    assert a.last_layer.tolist() == b.last_layer.tolist() and b.stats.extra["checked"] == b.stats.cells
    rng = np.random.default_rng(seed)
    grid = Prefix(rng.integers(-3, 4, n), rng.integers(-3, 4, 10 - n))
    a, b = sweep(grid, backend="cpu"), sweep(grid, backend="cpu", check=True)
    assert a.last_row.tolist() == b.last_row.tolist() and a.last_col.tolist() == b.last_col.tolist()
    assert a.traceback((n - 1, 9 - n)).tolist() == b.traceback((n - 1, 9 - n)).tolist()


@pytest.mark.sim
def test_the_check_is_the_same_before_the_cuda_kernels():
    """The pass runs on the CPU whatever the backend: in the simulator the bad read is the same
    ContractError (unchecked, the simulator's view raises an IndexError from inside a kernel)."""
    with pytest.raises(ContractError, match=r"Chain\.cell at \(1, 2\) read T\[1, 3\]"):
        sweep(Chain(_dims(5, 3), (1, 2)), backend="cuda", check=True)
    good = Chain(_dims(4, 3))
    assert sweep(good, backend="cuda", check=True).table.tolist() == sweep(good, backend="cpu").table.tolist()


def test_records_and_cubes_give_the_unchecked_result():
    """A record cell's dependencies are tuples of fields; a 3-D grid's are its neighbours behind."""
    from examples_loader import load_example

    count = load_example("alignment_count").AlignmentCount("GATTACA", "GCATGCU")
    a, b = sweep(count, backend="cpu"), sweep(count, backend="cpu", check=True)
    assert a.last_row.tolist() == b.last_row.tolist() and b.stats.extra["checked"] == b.stats.cells
    cube = load_example("lcs3").LCS3("ABCBDAB", "BDCABA", "BADACB")
    a, b = sweep(cube, backend="cpu"), sweep(cube, backend="cpu", check=True)
    assert a.last_value == b.last_value and a.face_k.tolist() == b.face_k.tolist()
    assert a.traceback().tolist() == b.traceback().tolist() and b.stats.extra["checked"] == 7 * 6 * 6


class Paths(GridRecurrence):
    """The number of monotone lattice paths to each cell (C(i + j, i)): past 2^63 at 34 x 34 cells,
    an int64 overflow that compiled code wraps around; ``weight`` multiplies every count (so that a
    small grid overflows too)."""

    value_dtype = np.int64

    def __init__(self, n, weight=1):
        self.n, self.weight = n, np.int64(weight)

    def shape(self):
        return self.n, self.n

    def data(self):
        return (self.weight,)

    @staticmethod
    def cell(i, j, up, left, diag, weight):
        if i == 0 and j == 0:
            return weight
        return up + left

    @staticmethod
    def boundary(i, j, weight):
        return 0


def test_an_integer_overflow_in_the_cell_is_named_in_checked_mode():
    """Unchecked, the counts wrap around silently (the docs say so); checked, the first cell whose
    sum overflows is named."""
    wrapped = int(sweep(Paths(40), backend="cpu", traceback=False).last_row[-1])
    assert wrapped == (math.comb(78, 39) + 2**63) % 2**64 - 2**63  # C(78, 39) modulo 2^64
    with pytest.raises(ContractError, match=r"Paths\.cell at \(\d+, \d+\): overflow .*integer overflow"):
        sweep(Paths(40), backend="cpu", check=True, traceback=False)
    with pytest.raises(ContractError, match=r"Paths\.cell at \(1, 1\): overflow"):
        sweep(Paths(2, 1 << 62), backend="cpu", check=True, traceback=False)
    fine = sweep(Paths(30), backend="cpu", check=True, traceback=False).last_row[-1]
    assert int(fine) == math.comb(58, 29)  # every count fits


class Shares(Paths):
    """Paths whose cell divides by its data, ``weight // (j - weight)``: zero at column ``weight``,
    where compiled code raises ZeroDivisionError; numpy's scalars gave 0 with a warning."""

    @staticmethod
    def cell(i, j, up, left, diag, weight):
        return up + left + 100 // (j - weight)


def test_an_integer_division_by_zero_on_data_is_named_in_checked_mode():
    """The checked sweep ran the cell with numpy's division errors ignored, so an integer division
    by a data item of zero passed it; the compiled sweep then raised, saying check=True names the
    cell, which it had not. Now the checked sweep names it."""
    with pytest.raises(ContractError, match=r"Shares\.cell at \(0, 3\): divide by zero .*division by zero"):
        sweep(Shares(5, 3), backend="cpu", check=True, traceback=False)
    assert sweep(Shares(3, 7), backend="cpu", check=True, traceback=False).last_row.shape == (3,)
