"""Whole-table reductions (``reduce = "max"`` / ``"min"``): the best value over every computed cell
and the earliest cell holding it, against the full table computed in plain Python, on every
schedule (tiled, rows, layers) and backend (cpu; cuda in the simulator, tiny)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import ContractError, GridRecurrence, LayeredRecurrence
from gpudp.engine import sweep


def local_table(w):
    R, C = w.shape
    H = np.zeros((R, C), w.dtype)
    for i in range(R):
        for j in range(C):
            up = H[i - 1, j] if i else 0
            left = H[i, j - 1] if j else 0
            diag = H[i - 1, j - 1] if i and j else 0
            H[i, j] = max(0, up + w[i, j], left + w[i, j], diag + w[i, j])
    return H


def best_of(table, op):
    v = table.max() if op == "max" else table.min()
    i, j = np.argwhere(table == v)[0]  # argwhere is in row-major order: the earliest cell
    return v.item(), (int(i), int(j))


class WeightGrid(GridRecurrence):
    """A grid over per-cell weights ``w``."""

    def __init__(self, w):
        self.w = w

    def shape(self):
        return self.w.shape

    def data(self):
        return (self.w,)


class Local(WeightGrid):
    reduce = "max"
    offsets = ((-1, 0), (0, -1), (-1, -1))

    @staticmethod
    def cell(i, j, up, left, diag, w):
        x = w[i, j]
        return max(0, up + x, left + x, diag + x)


class RowsMin(WeightGrid):
    """A row sweep (every dependency one row up) that keeps its minimum."""

    reduce = "min"
    offsets = ((-1, -1), (-1, 0), (-1, 1))

    @staticmethod
    def cell(i, j, ul, up, ur, w):
        return min(ul, up, ur) + w[i, j]

    @staticmethod
    def boundary(i, j, w):
        return 0 if i < 0 else 10**6


def rows_table(w):
    R, C = w.shape
    T = np.zeros((R, C), w.dtype)
    for i in range(R):
        for j in range(C):
            if i == 0:
                T[i, j] = w[i, j]
            else:
                T[i, j] = (
                    min(
                        T[i - 1, max(j - 1, 0)] if j else 10**6,
                        T[i - 1, j],
                        T[i - 1, j + 1] if j + 1 < C else 10**6,
                    )
                    + w[i, j]
                )
    return T


class LayersMax(LayeredRecurrence):
    reduce = "max"

    def __init__(self, w):
        self.w = w

    def num_layers(self):
        return self.w.shape[0]

    def layer_size(self, t):
        return self.w.shape[1]

    def data(self):
        return (self.w,)

    @staticmethod
    def cell(t, k, prev, w):
        return prev[k] * 0 + (prev[k - 1] if k else 0) + w[t, k]


def layers_table(w):
    T, K = w.shape
    out = np.zeros((T, K), w.dtype)
    for t in range(T):
        for k in range(K):
            out[t, k] = (out[t - 1, k - 1] if t and k else 0) + w[t, k]
    return out


DTYPES = (np.int32, np.int64, np.float64)
CASES = [
    (Local, local_table, "max"),
    (RowsMin, rows_table, "min"),
    (LayersMax, layers_table, "max"),
]


def _weights(draw_shape, seed, dtype, ties):
    rng = np.random.default_rng(seed)
    lo, hi = (-2, 3) if ties else (-50, 51)
    return rng.integers(lo, hi, draw_shape).astype(dtype)


def _run(base, table, op, w, backend, tile=None):
    cls = type(base.__name__, (base,), {"value_dtype": w.dtype.type})
    kw = {"tile": tile} if tile and base is Local else {}
    r = sweep(cls(w), backend=backend, progress=False, **kw)
    assert (r.best_value, r.best_cell) == best_of(table(w), op), (r.best_value, r.best_cell)
    return r


@settings(max_examples=15)
@given(
    st.sampled_from(CASES),
    st.sampled_from(DTYPES),
    st.tuples(st.integers(1, 40), st.integers(1, 70)),
    st.integers(0, 2**32 - 1),
    st.booleans(),
)
def test_reduction_matches_the_full_table_cpu(case, dtype, shape, seed, ties):
    base, table, op = case
    _run(base, table, op, _weights(shape, seed, dtype, ties), "cpu", tile=(32, 32))


@pytest.mark.sim
@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0].__name__)
@pytest.mark.parametrize("shape", [(5, 7), (9, 3)])
def test_reduction_on_cuda(case, shape):
    base, table, op = case
    _run(base, table, op, _weights(shape, sum(shape), np.int64, True), "cuda")


@pytest.mark.sim
@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_reduction_in_steady_tiles_on_cuda(dtype):
    """Tiles 64 columns wide: a whole-height tile's second block of 32 steps runs the kernel's
    steady path (a row's best kept by one compare, the bottom row through shared memory), the
    tile below it the checked path; many ties, so the earliest cell must win across rows."""
    w = _weights((40, 70), 7, dtype, True)
    r = _run(Local, local_table, "max", w, "cuda", tile=(32, 64))
    assert np.array_equal(r.last_row, local_table(w)[-1])  # through the bottom rows of the tiles


class Worst(WeightGrid):
    """Every cell the worst value a reduction can hold: the earliest cell still wins."""

    reduce = "max"
    offsets = ((-1, 0), (0, -1))

    @staticmethod
    def cell(i, j, up, left, w):
        return w[0, 0]


@pytest.mark.sim
@pytest.mark.parametrize("worst", [np.iinfo(np.int64).min, -np.inf], ids=["int64", "float64"])
def test_all_cells_the_worst_value_on_cuda(worst):
    w = np.full((33, 64), worst)
    cls = type("W", (Worst,), {"value_dtype": w.dtype.type})
    for backend in ("cpu", "cuda"):
        r = sweep(cls(w), backend=backend, progress=False, tile=(32, 64))
        assert (r.best_value, r.best_cell) == (worst, (0, 0)), backend


def test_extremes_and_empty_grids():
    w = np.full((3, 4), np.iinfo(np.int64).min // 4, np.int64)
    w[2, 3] = 5
    r = sweep(type("L", (Local,), {"value_dtype": np.int64})(w), backend="cpu", progress=False)
    assert (r.best_value, r.best_cell) == (5, (2, 3))
    r = sweep(Local(np.zeros((0, 5), np.int32)), backend="cpu", progress=False)
    assert r.best_value is None and r.best_cell is None
    r = sweep(Local(np.zeros((3, 3), np.int32)), backend="cpu", progress=False)
    assert r.best_cell == (0, 0)  # all equal: the earliest cell
    plain = sweep(type("P", (Local,), {"reduce": None})(np.ones((2, 2), np.int32)), backend="cpu")
    assert plain.best_value is None


def test_a_bad_reduce_is_a_contract_error():
    with pytest.raises(ContractError, match="reduce = 'sum'"):
        sweep(type("S", (Local,), {"reduce": "sum"})(np.ones((2, 2), np.int32)), backend="cpu")
