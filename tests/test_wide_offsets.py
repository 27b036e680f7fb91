"""Offsets two cells back on the tiled path (gpudp.grid.wide): the wider halo carried as a record
of the unit neighbours' values. Against plain-Python tables on the cpu and (tiny) in the CUDA
simulator: the Damerau-Levenshtein (OSA) distance with its edit path, and random offset sets in
[-2, 0]^2 with every store and option the tiled path has."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import ContractError, GridRecurrence, sweep
from gpudp.engine import plan_sweep

FAR = 1 << 40

# ---------------------------------------------------------------------------------------------
# Damerau-Levenshtein, optimal string alignment: the transposition reads D(i - 2, j - 2)
# ---------------------------------------------------------------------------------------------

SUB, DEL, INS, SWAP = 0, 1, 2, 3


class OSA(GridRecurrence):
    value_dtype = np.int64
    decision_bits = 2
    offsets = ((-1, 0), (0, -1), (-1, -1), (-2, -2))

    def __init__(self, a, b):
        self.a, self.b = np.asarray(a, np.int64), np.asarray(b, np.int64)

    def shape(self):
        return len(self.a) + 1, len(self.b) + 1

    def data(self):
        return self.a, self.b

    @staticmethod
    def cell(i, j, up, left, diag, diag2, a, b):
        if i == 0 or j == 0:
            return i + j, DEL if j == 0 else INS
        best, how = diag + (0 if a[i - 1] == b[j - 1] else 1), SUB
        if up + 1 < best:
            best, how = up + 1, DEL
        if left + 1 < best:
            best, how = left + 1, INS
        if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1] and diag2 + 1 < best:
            best, how = diag2 + 1, SWAP
        return best, how

    @staticmethod
    def boundary(i, j, a, b):
        return FAR

    @staticmethod
    def back(i, j, how, a, b):
        if i == 0 and j == 0:
            return -1, -1
        if how == DEL:
            return i - 1, j
        if how == INS:
            return i, j - 1
        if how == SUB:
            return i - 1, j - 1
        return i - 2, j - 2


def osa(a, b) -> int:
    """The optimal string alignment distance by its textbook table."""
    n, m = len(a), len(b)
    d = [[i + j if i == 0 or j == 0 else 0 for j in range(m + 1)] for i in range(n + 1)]
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[n][m]


def path_cost(path, a, b) -> int:
    """The cost of an edit path (rows (i, j, decision) from the end back to (0, 0))."""
    cost = 0
    for i, j, how in path.tolist():
        if i == 0 and j == 0:
            break
        if how == SUB:
            cost += int(a[i - 1] != b[j - 1])
        else:
            cost += 1
    return cost


strings = st.lists(st.integers(0, 2), min_size=0, max_size=14)


@settings(max_examples=20, deadline=None)
@given(strings, strings)
def test_osa_by_tiles_equals_the_table_with_its_path(a, b):
    res = sweep(OSA(a, b), backend="cpu")
    assert int(res.last_row[-1]) == osa(a, b)
    if a and b:  # a grid of one row or one column is a line, swept one cell after the other
        assert res.stats.extra["plan"] == "tiled" and "(-2, -2)" in res.stats.extra["wide_offsets"]
    path = res.traceback((len(a), len(b)))
    steps = {
        (i - i2, j - j2) for (i, j, _), (i2, j2, _) in zip(path.tolist(), path[1:].tolist(), strict=False)
    }
    assert steps <= {(1, 0), (0, 1), (1, 1), (2, 2)}
    assert path_cost(path, a, b) == osa(a, b) and tuple(path[-1][:2]) == (0, 0)


def test_osa_checkpoints_values_only_and_the_fill():
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 3, 300), rng.integers(0, 3, 260)
    want = osa(a.tolist(), b.tolist())
    full = sweep(OSA(a, b), backend="cpu", store="full")
    ck = sweep(OSA(a, b), backend="cpu", store="checkpoints", tile=(32, 32), checkpoint_every=64)
    assert int(full.last_row[-1]) == int(ck.last_row[-1]) == want
    assert full.last_row.dtype == np.int64 and full.last_col.shape == (301,)
    for res in (full, ck):
        assert path_cost(res.traceback((300, 260)), a, b) == want
    assert int(sweep(OSA(a, b), backend="cpu", traceback=False).last_row[-1]) == want


@pytest.mark.sim
def test_osa_in_the_simulator():
    for a, b in (([0, 1, 0, 1, 2], [1, 0, 1, 0, 2, 2]), ([2, 1], [1, 2, 0])):
        res = sweep(OSA(a, b), backend="cuda")
        assert int(res.last_row[-1]) == osa(a, b)
        assert path_cost(res.traceback((len(a), len(b))), a, b) == osa(a, b)


# ---------------------------------------------------------------------------------------------
# Any offsets in [-2, 0]^2: a cell that weighs each dependency by the data
# ---------------------------------------------------------------------------------------------

_CLASSES: dict = {}


def weighted_class(offsets, reduce=None):
    """A grid reading ``offsets``: cell = min over the dependencies of dep + w[k] + (i * j) % 3
    (one class an offset set: each compiles its kernels once)."""
    key = (tuple(offsets), reduce)
    if key in _CLASSES:
        return _CLASSES[key]
    deps = [f"d{k}" for k in range(len(offsets))]
    terms = ", ".join(f"{d} + w[{k}]" for k, d in enumerate(deps))
    src = f"def cell(i, j, {', '.join(deps)}, w):\n    return min({terms}, FAR) + (i * j) % 3\n"
    ns = {"FAR": FAR}
    exec(src, ns)
    attrs = {
        "value_dtype": np.int64,
        "offsets": tuple(offsets),
        "reduce": reduce,
        "__init__": lambda self, n, m, w: setattr(self, "nm", (n, m)) or setattr(self, "w", np.asarray(w)),
        "shape": lambda self: self.nm,
        "data": lambda self: (self.w,),
        "cell": staticmethod(ns["cell"]),
        "boundary": staticmethod(lambda i, j, w: (i * 7 + j * 3) % 5),
    }
    _CLASSES[key] = type("Weighted", (GridRecurrence,), attrs)
    return _CLASSES[key]


def weighted_table(offsets, n, m, w):
    t = {}
    get = lambda i, j: t[i, j] if i >= 0 and j >= 0 else (i * 7 + j * 3) % 5  # noqa: E731
    for i in range(n):
        for j in range(m):
            t[i, j] = (
                min([get(i + di, j + dj) + w[k] for k, (di, dj) in enumerate(offsets)] + [FAR]) + (i * j) % 3
            )
    return np.array([[t[i, j] for j in range(m)] for i in range(n)])


#: two sets that read every wide offset between them, through every unit neighbour and field (one
#: compile each: a set of offsets is a class of its own)
SETS = [
    [(-1, 0), (0, -1), (-2, -2), (-2, 0), (0, -2)],
    [(-1, -1), (-2, -1), (-1, -2)],
]


@pytest.mark.parametrize("offsets", SETS, ids=["d-u-l", "through-up-and-left"])
@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 9), m=st.integers(1, 9), data=st.data())
def test_offsets_within_two_cells_equal_the_table(offsets, n, m, data):
    w = data.draw(st.lists(st.integers(-3, 5), min_size=len(offsets), max_size=len(offsets)))
    cls = weighted_class(offsets, reduce="min")
    want = weighted_table(offsets, n, m, w)
    res = sweep(cls(n, m, w), backend="cpu")
    if min(n, m) > 1:  # (one row or column may be a line, swept one cell after the other)
        assert res.stats.extra["plan"] == "tiled"
    assert res.last_row.tolist() == want[-1].tolist() and res.last_col.tolist() == want[:, -1].tolist()
    assert res.best_value == want.min()


@pytest.mark.sim
def test_any_offsets_in_the_simulator():
    offsets = [(-1, 0), (0, -2), (-2, -1)]
    cls = weighted_class(offsets)
    res = sweep(cls(6, 5, [1, 2, -1]), backend="cuda")
    want = weighted_table(offsets, 6, 5, [1, 2, -1])
    assert res.last_row.tolist() == want[-1].tolist() and res.last_col.tolist() == want[:, -1].tolist()


def test_a_record_cell_with_a_wide_offset_is_refused_as_before():
    """Records are not widened (a record of records): such a grid is still refused, by the plan's
    error that names the unit offsets."""

    class Rec(GridRecurrence):
        value_dtype = np.dtype([("a", np.int64), ("b", np.int64)])
        offsets = ((-1, 0), (-2, -2))

        def shape(self):
            return 4, 4

        @staticmethod
        def cell(i, j, up, far):
            return up[0] + far[1] + 1, up[1] + 1

        @staticmethod
        def boundary(i, j):
            return 0, 0

    with pytest.raises(ContractError, match="record cells run on grids swept by tiles"):
        sweep(Rec(), backend="cpu")


def test_plan_sweep_plans_the_widened_grid():
    """plan_sweep plans what sweep runs: tiles of the record class, not wavefronts of cells."""
    plan = plan_sweep(OSA([0, 1, 2] * 30, [1, 2, 0] * 30), backend="cpu")
    assert plan.kind == "tiled"
    assert plan_sweep(OSA([], [1, 2]), backend="cpu").kind == "line"  # one cell a wavefront
