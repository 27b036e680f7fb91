"""A sweep's fixed cost on the host (issue 39): what is kept between calls, and that each kept thing
is made again when what it depends on changes; the progress bar built only where it can show."""

from __future__ import annotations

import io
import time

import numpy as np
import pytest
from test_user_dps3 import CoinWays  # the number of ways, as the tutorial's section 14 suggests

from gpudp import GridRecurrence, backends, checks, grid, memory, progress
from gpudp.engine import plan_sweep, sweep
from gpudp.errors import ContractError, InputError
from gpudp.progress import BAR_SECONDS, progress_bar


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_bar_is_built_where_it_can_show(monkeypatch):
    monkeypatch.setattr("sys.stderr", io.StringIO())  # no terminal: tqdm would build it disabled
    assert progress_bar(10**9, None) is None
    assert progress_bar(10**9, True).bar is not None  # asked for
    monkeypatch.setattr("sys.stderr", _Terminal())
    assert progress_bar(10**9, None).bar is not None
    assert progress_bar(10**9, None, seconds=BAR_SECONDS / 2) is None  # ends before it could show
    assert progress_bar(10**9, True, seconds=BAR_SECONDS).bar is not None
    meter = progress_bar(10**9, True, deadline=progress.Deadline(60), seconds=0.0)
    assert meter.bar is None and meter.deadline is not None  # the deadline is still checked


class Walk(GridRecurrence):
    value_dtype = np.int64
    offsets = ((-1, 0), (0, -1))

    def __init__(self, rows, cols):
        self.size = (rows, cols)

    def shape(self):
        return self.size

    @staticmethod
    def cell(i, j, up, left):
        return max(up, left) + 1


def test_a_sweep_predicted_long_builds_its_bar(monkeypatch):
    bars = []

    def kept(*args, **kw):
        bars.append(progress_bar(*args, **kw))
        return bars[-1]

    monkeypatch.setattr(grid, "progress_bar", kept)
    monkeypatch.setattr("sys.stderr", _Terminal())
    sweep(Walk(40, 50), backend="cpu", progress=True)
    assert bars[-1] is None  # 2,000 cells: ends within the bar's delay
    monkeypatch.setattr(grid, "SLOW_CELLS_PER_S", 1e3)  # 2 s predicted
    res = sweep(Walk(40, 50), backend="cpu", progress=True)
    assert bars[-1].bar is not None and res.last_row[-1] == 40 + 50 - 1


def _readings(monkeypatch) -> list:
    """The memory readings taken from now on (each a call of :func:`gpudp.memory.limits`)."""
    taken, real = [], memory.limits
    monkeypatch.setattr(memory, "limits", lambda: taken.append(1) or real())
    monkeypatch.setattr(memory, "_RECENT", [])
    return taken


def test_small_sweeps_in_a_row_read_the_memory_once_a_second(monkeypatch):
    taken = _readings(monkeypatch)
    for _ in range(3):
        assert sweep(Walk(40, 50), backend="cpu").last_row[-1] == 89
    assert len(taken) == 1
    monkeypatch.setattr(memory, "RECENT_SECONDS", 0.0)  # the reading is too old: read again
    sweep(Walk(40, 50), backend="cpu")
    assert len(taken) == 2


def test_a_sweep_large_beside_a_recent_reading_reads_afresh(monkeypatch):
    """A recent reading of 64 KiB: a sweep of 2,000 cells (its values, its decisions) weighs more
    than a sixteenth of it, so it reads the memory there is now (a sweep run on the old figure would
    be refused), and the sweeps after it reuse that reading."""
    taken = _readings(monkeypatch)
    monkeypatch.setattr(memory, "_RECENT", [(time.monotonic(), 64 << 10)])
    assert sweep(Walk(400, 500), backend="cpu").last_row[-1] == 899
    assert len(taken) == 1 and memory._RECENT[0][1] > 64 << 10
    sweep(Walk(40, 50), backend="cpu")
    assert len(taken) == 1


def test_a_sweep_that_does_not_fit_is_refused_after_a_recent_reading(monkeypatch):
    """A recent reading of 16 MiB, then 1 MiB left: a sweep of ~4 MB (a row of 250,000 cells: its
    edges, its last row) is more than a sixteenth of the reading, reads afresh, and is refused."""
    _readings(monkeypatch)
    monkeypatch.setattr(memory, "_cgroup_room", lambda: (16 << 20, "/sys/fs/cgroup/memory.max"))
    sweep(Walk(40, 50), backend="cpu")  # 16 MiB read; 2,000 cells weigh less than a sixteenth
    monkeypatch.setattr(memory, "_cgroup_room", lambda: (1 << 20, "/sys/fs/cgroup/memory.max"))
    sweep(Walk(40, 50), backend="cpu")  # the recent reading serves it: nothing refused
    with pytest.raises(InputError, match="host memory needed"):
        sweep(Walk(1, 250_000), backend="cpu")


def test_the_cgroup_files_are_kept_a_while_and_their_figures_read_each_time(monkeypatch, tmp_path):
    limit, usage = tmp_path / "memory.max", tmp_path / "memory.current"
    limit.write_text("1000000\n")
    usage.write_text("1000\n")
    monkeypatch.setattr(memory, "_LAYOUT", [(time.monotonic(), (((str(limit), str(usage)),),))])
    assert memory._cgroup_room() == (999_000, str(limit))
    limit.write_text("2000000\n")
    assert memory._cgroup_room() == (1_999_000, str(limit))
    limit.unlink()  # gone: the files are found again at the next reading
    assert memory._cgroup_room() is None and memory._LAYOUT == []
    memory._cgroup_files()
    assert memory._LAYOUT and str(limit) not in repr(memory._LAYOUT)
    limit.write_text("1000000\n")
    monkeypatch.setattr(
        memory, "_LAYOUT", [(time.monotonic() - memory.LAYOUT_SECONDS, (((str(limit), str(usage)),),))]
    )
    memory._cgroup_files()  # too old: found again
    assert str(limit) not in repr(memory._LAYOUT)


_KINDS = [
    0,
    -5,
    1 << 40,
    (1 << 63) - 1,
    1 << 63,  # numba: uint64
    True,
    1.5,
    2j,
    np.int32(3),
    np.int64(3),
    np.float32(1),
    np.bool_(True),
    np.zeros(3, np.int64),
    np.zeros(3, np.int32),
    np.zeros((3, 4), np.int64),
    np.zeros((3, 4), np.int64).T,  # F order
    np.zeros((3, 4), np.int64)[:, ::2],  # neither
    np.zeros(5, np.int64)[::2],
    np.zeros(3, np.dtype([("m", np.int32), ("x", np.int32)])),
    (1, 2),
    (1, 2.0),
    (1, 2, 3),
    (np.int32(1), np.int32(2)),
    (1 << 63, 1),
]


def test_argument_kinds_decide_numba_types():
    """Two argument tuples of equal kinds (the typed-return check's key, read without typing) have
    equal numba types; a read-only array counts as the writable one."""
    ro = np.zeros(3, np.int64)
    ro.flags.writeable = False
    cases = [(x,) for x in _KINDS] + [(ro,), (1, np.zeros(2)), (1, np.zeros(2, np.float32))]
    for a in cases:
        for b in cases:
            if checks.arg_kinds(a) == checks.arg_kinds(b):
                assert checks._numba_types(a) == checks._numba_types(b), (a, b)
    assert checks.arg_kinds((ro,)) == checks.arg_kinds((np.zeros(4, np.int64),))
    assert checks.arg_kinds((1 << 64,)) is None and checks.arg_kinds((object(),)) is None


class Scaled(GridRecurrence):
    """``up + left + k * w[j]`` below the first row: an integer for integer data, on some path a
    float for float data (the first cell, which the probe calls in Python, returns an integer
    either way: the typed check sees it)."""

    value_dtype = np.int64
    offsets = ((-1, 0), (0, -1))

    def __init__(self, w, k):
        self.w, self.k = w, k

    def shape(self):
        return 3, len(self.w)

    def data(self):
        return self.w, self.k

    @staticmethod
    def cell(i, j, up, left, w, k):
        return up + left + (k * w[j] if i else 0)


def _scaled(w, k) -> list[int]:
    """:class:`Scaled`'s last row in Python (0 outside the grid)."""
    row = [0] * len(w)
    for i in range(3):
        left = 0
        for j in range(len(w)):
            left = row[j] = row[j] + left + (k * w[j] if i else 0)
    return row


def test_the_typed_return_check_is_kept_by_the_data_types():
    """The check's outcome, kept by the kinds of the probe's arguments, is found again for equal
    kinds and made again for others: a float array, or a float scalar, makes the value a float."""
    ints = np.arange(4, dtype=np.int64)
    assert sweep(Scaled(ints, 2), backend="cpu").last_row.tolist() == _scaled(ints.tolist(), 2)
    for w, k in ((ints.astype(np.float64), 2), (ints, 2.0)):
        with pytest.raises(ContractError, match=r"returns a float64 as the value on some path"):
            sweep(Scaled(w, k), backend="cpu")
    res = sweep(Scaled(ints + 1, 3), backend="cpu")  # the kinds of the first: found again
    assert res.last_row.tolist() == _scaled((ints + 1).tolist(), 3)


class Rows(Walk):
    """:class:`Walk` reading the row above only: a plan by rows, not by tiles."""

    offsets = ((-1, 0), (-1, -1))

    @staticmethod
    def cell(i, j, up, diag):
        return max(up, diag) + 1


class Cols(Walk):
    """:class:`Walk` reading the cell to its left only: a plan by columns."""

    offsets = ((0, -1),)

    @staticmethod
    def cell(i, j, left):
        return left + 1


def test_grid_plans_are_kept_by_class_shape_backend_and_tile(monkeypatch):
    first, again = plan_sweep(Walk(40, 50), backend="cpu"), plan_sweep(Walk(40, 50), backend="cpu")
    assert again is not first and again.layout is first.layout  # kept; each call a plan of its own
    again.checkpoint = 7
    assert plan_sweep(Walk(40, 50), backend="cpu").checkpoint == 0
    assert (first.kind, plan_sweep(Rows(40, 50), backend="cpu").kind) == ("tiled", "layered")
    assert plan_sweep(Cols(40, 50), backend="cpu").schedule.offsets == Cols.offsets  # another class
    for cls in (Walk, Rows):  # (a tiled plan's tile is fitted to the grid: it differs anyway)
        assert plan_sweep(cls(41, 50), backend="cpu").rows == 41
        assert plan_sweep(cls(40, 51), backend="cpu").cols == 51
    assert plan_sweep(Walk(40, 50), backend="cpu", tile=(8, 32)).layout.bh == 8
    coins = CoinWays((1, 3, 7), 40)
    assert plan_sweep(coins, backend="cpu").kind == "serial"
    monkeypatch.setattr(backends.get("cpu"), "serial_width", 0)  # the backend's serial width
    assert plan_sweep(coins, backend="cpu").kind == "layered"


def test_the_arity_kept_for_a_method_follows_its_code():
    class Own(Walk):
        @staticmethod
        def cell(i, j, up, left):
            return max(up, left) + 2

    assert sweep(Own(4, 5), backend="cpu").last_row[-1] == 2 * (4 + 5 - 1)

    def three(i, j, up):
        return up

    Own.cell = staticmethod(three)  # another function
    with pytest.raises(ContractError, match=r"Own.cell takes 3 arguments, but the engine passes 4"):
        Own(4, 5)._validate_instance()

    def four(i, j, up, left):
        return up

    three.__code__ = four.__code__  # the same function, its code replaced
    assert Own(4, 5)._validate_instance() == ()


def test_chunks_are_cut_once_per_plan_and_limits():
    plan = plan_sweep(Rows(40, 50), backend="cpu")
    plan.make_chunks(1 << 62, 50 * 7)
    assert plan.chunks == [(0, 7), (7, 14), (14, 21), (21, 28), (28, 35), (35, 40)]
    plan.chunks.clear()  # the caller's list: the plan keeps its own
    again = plan_sweep(Rows(40, 50), backend="cpu")  # the kept plan's copy: the same cuts
    again.make_chunks(1 << 62, 50 * 7)
    assert len(again.chunks) == 6 and again.cuts is plan.cuts
    again.make_chunks(1 << 62, 50 * 20)  # other limits: cut again
    assert again.chunks == [(0, 20), (20, 40)]


def test_offsets_are_checked_once_per_value_and_refused_each_time():
    from gpudp.errors import ScheduleError
    from gpudp.schedule import check_offsets

    assert check_offsets(((-1, 0), (0, -1))) == check_offsets([[-1, 0], [0, -1]]) == ((-1, 0), (0, -1))
    assert check_offsets(((np.int64(-1), 0.0),)) == ((-1, 0),)
    for _ in range(2):
        with pytest.raises(ScheduleError, match="duplicate"):
            check_offsets(((-1, 0), (-1, 0)))
        with pytest.raises(ScheduleError, match="integers"):
            check_offsets(((-1, 0.5),))


def test_the_serial_sweep_reads_no_cell_it_has_not_written():
    """The serial plan's ring and edges are not filled: with every ``np.empty`` of the sweep full of
    a poison value, the values and the path are still the reference's."""
    from test_serial_sweep import FewestCoins, fewest_reference, ways_reference

    real = np.empty

    def poisoned(*args, **kw):
        out = real(*args, **kw)
        if out.dtype.kind in "iu":
            out.fill(-7 if out.dtype.kind == "i" else 7)
        return out

    coins, amount = (2, 3, 7), 50
    ways, fewest = CoinWays(coins, amount), FewestCoins(coins, amount)
    sweep(ways, backend="cpu", traceback=False), sweep(fewest, backend="cpu")  # compiled unpoisoned
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(np, "empty", poisoned)
        res = sweep(ways, backend="cpu", traceback=False)
        best = sweep(fewest, backend="cpu")
    want = ways_reference(coins, amount)
    assert res.plan.kind == best.plan.kind == "serial" and res.last_row.tolist() == want[-1]
    assert res.last_col.tolist() == [row[-1] for row in want]
    assert best.last_row.tolist() == fewest_reference(coins, amount)[-1]
    path = best.traceback((2, amount)).tolist()
    assert sum(coins[t] for t, _, d in path if d) == amount


def test_whether_a_grid_widens_follows_its_declaration():
    from gpudp.grid.wide import widens

    class Two(Walk):
        offsets = ((-2, 0), (0, -1))

        @staticmethod
        def cell(i, j, up2, left):
            return max(up2, left) + 1

    class Given(Two):
        @staticmethod
        def cell(i, j, *deps):
            return max(deps) + 1

    class Rec(Two):
        value_dtype = np.dtype([("a", np.int64), ("b", np.int64)])

    assert not widens(Walk) and widens(Two) and not widens(Given) and not widens(Rec)
    assert widens(type(Walk(3, 4)._specialized())) is False
    wide = Walk(3, 4)
    wide.offsets = [[-2, 0], [0, -1]]  # an instance's own, a list
    assert widens(type(wide._specialized()))


GAP, STEP = 2, 3


def test_the_constants_read_follow_the_code_and_the_values():
    """The names a method reads are found once per code object; their values are read each time."""
    from gpudp.recurrence.constants import read_by

    class Gap(Walk):
        @staticmethod
        def cell(i, j, up, left):
            return max(up, left) + GAP

    def step(i, j, up, left):
        return max(up, left) + STEP

    mod = __name__
    assert read_by(Gap)[0] == (((mod, "GAP"), 2),)
    globals()["GAP"] = 5
    try:
        assert read_by(Gap)[0] == (((mod, "GAP"), 5),)
    finally:
        globals()["GAP"] = 2
    Gap.__dict__["cell"].__func__.__code__ = step.__code__  # another code: other names
    assert read_by(Gap)[0] == (((mod, "STEP"), 3),)
