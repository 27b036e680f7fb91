"""Narrow arithmetic (gpudp.recurrence.narrow): a grid's int32 cell written as plain Python is swept
in 32 bits where that is proven exact, and gives what the cell computes as written, bit for bit;
where it is not proven, the cell runs as written."""

from __future__ import annotations

import numpy as np
import pytest
from examples_loader import load_example
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudp import GridRecurrence, sweep
from gpudp.recurrence.narrow import LIMIT, narrow_source

BACKENDS = ["cpu", pytest.param("cuda", marks=pytest.mark.sim)]
I32 = np.int32
GAP_FLOOR = -(1 << 29)


class Pair(GridRecurrence):
    """Two int32 sequences ``a`` and ``b``, the row and column symbols; a grid of their prefixes."""

    symbols = True

    def shape(self):
        return len(self.a) + 1, len(self.b) + 1

    def row_symbols(self):
        return np.concatenate(([-1], self.a)).astype(np.int32)

    def col_symbols(self):
        return np.concatenate(([-2], self.b)).astype(np.int32)


class PlainSW(Pair):
    """Smith-Waterman as a new user writes it: no casts."""

    value_dtype = np.int32
    decision_bits = 2
    reduce = "max"

    def __init__(self, a, b, match=3, mismatch=-3, gap=2):
        self.a, self.b = np.asarray(a, np.int32), np.asarray(b, np.int32)
        self.scores = (I32(match), I32(mismatch), I32(gap))

    def data(self):
        return self.scores

    @staticmethod
    def cell(i, j, up, left, diag, ri, cj, match, mismatch, gap):
        if i == 0 or j == 0:
            return 0, 0
        h = max(diag + (match if ri == cj else mismatch), up - gap, left - gap, 0)
        d = 0
        if h == up - gap:
            d = 1
        elif h == left - gap:
            d = 2
        return h, d

    @staticmethod
    def back(i, j, d, match, mismatch, gap):
        if d == 1:
            return i - 1, j
        if d == 2:
            return i, j - 1
        return i - 1, j - 1


class PlainGotoh(Pair):
    """Affine gaps in a record of three int32 fields, no casts, the costs in an int16 array."""

    value_dtype = np.dtype([("m", np.int32), ("x", np.int32), ("y", np.int32)])
    fill = GAP_FLOOR

    def __init__(self, a, b, costs):
        self.a, self.b = np.asarray(a, np.int32), np.asarray(b, np.int32)
        self.costs = np.asarray(costs, np.int16)  # match, mismatch, open + extend, extend

    def data(self):
        return (self.costs,)

    @staticmethod
    def cell(i, j, up, left, diag, ri, cj, costs):
        if i == 0 and j == 0:
            return (0, GAP_FLOOR, GAP_FLOOR)
        x = max(up[0] - costs[2], up[1] - costs[3], GAP_FLOOR)
        y = max(left[0] - costs[2], left[2] - costs[3], GAP_FLOOR)
        m = GAP_FLOOR
        if i > 0 and j > 0:
            m = max(max(diag[0], diag[1], diag[2]) + (costs[0] if ri == cj else costs[1]), GAP_FLOOR)
        return (m, x, y)

    @staticmethod
    def boundary(i, j, costs):
        return (GAP_FLOOR, GAP_FLOOR, GAP_FLOOR)


class CoinWays(GridRecurrence):
    """Offsets from the data, dependencies as one tuple, a loop over them, data through ``*data``."""

    value_dtype = np.int32
    deps_tuple = True

    def __init__(self, coins, amount, weight):
        self.offsets = tuple((0, -int(c)) for c in coins)
        self.amount = amount
        self.weight = np.asarray(weight, np.int8)

    def shape(self):
        return 1, self.amount + 1

    def data(self):
        return (self.weight,)

    @staticmethod
    def cell(i, j, deps, *data):
        if j == 0:
            return 0
        best = 1 << 28
        for d in deps:
            best = min(best, d + data[0][j % len(data[0])])
        return best

    @staticmethod
    def boundary(i, j, *data):
        return 1 << 28


def _sources(cls, kinds):
    nar = narrow_source(cls, kinds)
    return None if nar is None else nar.source


def test_the_plain_cell_is_rewritten_in_int32():
    src = _sources(PlainSW, ("A", "A", "S", "S", "S"))
    assert "_gpudp_i32(diag + _gpudp_i32(match if ri == cj else mismatch))" in src
    assert "_gpudp_i32(up - gap)" in src and "_gpudp_i32(left - gap)" in src
    assert "_gpudp_i32(max(" in src
    # the coordinates stay as they are
    assert "i == 0 or j == 0" in src


def test_64_bit_data_and_casts_already_there_are_left_alone():
    # the scores as int64 numbers: sums with them stay as numba types them
    assert _sources(PlainSW, ("A", "A", "W", "W", "W")) is None
    local = load_example("local_alignment")
    # the gallery's cells cast every sum themselves: nothing changes, no check is added
    assert narrow_source(local.SmithWaterman, ("A", "A", "S", "S", "S")) is None


def test_what_is_not_followed_stays_wide():
    class Odd(GridRecurrence):
        value_dtype = np.int32

        def shape(self):
            return 3, 3

        def data(self):
            return (np.arange(4, dtype=np.int32), np.arange(4, dtype=np.int64))

        @staticmethod
        def cell(i, j, up, left, diag, small, big):
            acc = 0
            for _ in range(3):
                acc = acc + up  # grows around the loop: left wide
            p = up * left  # a product of two values: wide
            q = diag + big[i]  # 64-bit data: wide
            r = max(up + small[j], 0)  # narrow
            if acc + p > q:
                r = r - 1
            return r

    src = _sources(Odd, ("A", "W"))
    assert "acc = acc + up" in src
    assert "p = up * left" in src
    assert "q = diag + big[i]" in src
    assert "_gpudp_i32(max(_gpudp_i32(up + small[j]), 0))" in src
    assert "if acc + p > q:" in src and "r = _gpudp_i32(r - 1)" in src


def test_a_cell_the_analysis_cannot_read_is_swept_as_written():
    class Nested(GridRecurrence):
        value_dtype = np.int32

        def shape(self):
            return 2, 2

        @staticmethod
        def cell(i, j, up, left, diag):
            return max(up + 1, sorted([left + 1, diag + 1], key=lambda x: -x)[0])

    assert narrow_source(Nested, ()) is None


def test_the_values_bound_follows_the_data_and_the_grid():
    nar = narrow_source(PlainSW, ("A", "A", "S", "S", "S"))
    syms = (np.zeros(3, np.int32), np.zeros(3, np.int32))
    # every value is at most the boundary's (0) plus the longest chain (rows + cols) times a step
    assert nar.proven((*syms, I32(3), I32(-3), I32(2)), 10, 20, [0], 30) == 30 * 3
    assert nar.proven((*syms, I32(1 << 26), I32(-3), I32(2)), 10, 20, [0], 30) == 30 << 26
    assert nar.proven((*syms, I32(1 << 27), I32(-3), I32(2)), 10, 20, [0], 30) is None
    assert nar.proven((*syms, I32(3), I32(-3), I32(2)), 10, 20, [LIMIT], 30) is None


def test_a_value_that_can_grow_past_a_step_is_not_proven():
    class Paths(GridRecurrence):  # counts paths: up + left, a value can double each step
        value_dtype = np.int32

        def shape(self):
            return 4, 4

        @staticmethod
        def cell(i, j, up, left, diag):
            return max(up + left, 1)

    nar = narrow_source(Paths, ())
    assert nar is not None and nar.proven((), 4, 4, [0], 8) is None


def _same(rec_of, backend, monkeypatch, traceback=None):
    """The sweep with and without the rewrite: equal values, best cells and tracebacks."""
    out = []
    for flag in ("1", "0"):
        monkeypatch.setenv("GPUDP_NARROW", flag)
        r = sweep(rec_of(), backend=backend)
        got = [np.asarray(r.last_row).tolist(), np.asarray(r.last_col).tolist()]
        if type(rec_of()).reduce:
            got += [r.best_value, r.best_cell]
        if traceback is not None:
            got.append(r.traceback(traceback(r)).tolist())
        out.append((got, r.stats.extra["arithmetic"]))
    assert out[0][0] == out[1][0]
    assert out[1][1] == "as written"
    return out[0][1]


EDGE = st.sampled_from([0, 1, 2, 3, -3, 1 << 20, 1 << 29, 1 << 30, LIMIT, -LIMIT])


def _check_sw(backend, monkeypatch, a, b, match, mismatch, gap):
    how = _same(
        lambda: PlainSW(a, b, match, mismatch, gap),
        backend,
        monkeypatch,
        traceback=lambda r: r.best_cell,
    )
    # small scores keep every value within the bound: the narrow sweep is the one that ran
    if max(abs(match), abs(mismatch), abs(gap)) < 1 << 20 and a and b:
        assert how.startswith("int32")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    a=st.lists(st.integers(0, 3), min_size=0, max_size=14),
    b=st.lists(st.integers(0, 3), min_size=0, max_size=14),
    match=st.one_of(st.integers(-5, 5), EDGE),
    mismatch=st.one_of(st.integers(-5, 5), EDGE),
    gap=st.one_of(st.integers(0, 5), EDGE),
)
def test_narrow_sweeps_equal_the_cell_as_written(monkeypatch, a, b, match, mismatch, gap):
    _check_sw("cpu", monkeypatch, a, b, match, mismatch, gap)


# the simulator runs the cell as written on numpy int32 scalars, whose sums past int32 warn
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.sim
@pytest.mark.parametrize(
    "a, b, scores",
    [([0, 1, 2], [0, 2, 2, 1], (3, -3, 2)), ([1, 1, 1], [1, 1], (1 << 30, -3, 2)), ([2], [], (1, -1, 1))],
)
def test_narrow_sweeps_equal_the_cell_as_written_cuda(monkeypatch, a, b, scores):
    _check_sw("cuda", monkeypatch, a, b, *scores)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.parametrize("backend", BACKENDS)
def test_values_that_could_pass_int32_run_as_written(backend, monkeypatch):
    monkeypatch.setenv("GPUDP_NARROW", "1")
    r = sweep(PlainSW([1, 1, 1, 1], [1, 1, 1], match=1 << 30), backend=backend)
    assert r.stats.extra["arithmetic"] == "as written"


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    a=st.lists(st.integers(0, 3), min_size=1, max_size=8),
    b=st.lists(st.integers(0, 3), min_size=1, max_size=8),
    costs=st.lists(st.integers(-32768, 32767), min_size=4, max_size=4),
)
def test_a_record_cell_with_int16_costs(monkeypatch, a, b, costs):
    assert _same(lambda: PlainGotoh(a, b, costs), "cpu", monkeypatch).startswith("int32")


@pytest.mark.sim
def test_a_record_cell_with_int16_costs_cuda(monkeypatch):
    how = _same(lambda: PlainGotoh([0, 1, 2], [1, 1], [2, -1, 4, 1]), "cuda", monkeypatch)
    assert how.startswith("int32")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("weight", [[1], [3, -2, 5], [127, -128]])
def test_tuple_dependencies_and_star_data(backend, monkeypatch, weight):
    how = _same(lambda: CoinWays((1, 3, 4), 12 if backend == "cpu" else 6, weight), backend, monkeypatch)
    assert how.startswith("int32")


def _sass_of(pick) -> str:
    """The SASS of the tiled CUDA kernels built in this process for the classes ``pick`` accepts."""
    from gpudp.kernel import family

    texts = []
    for k in family("cuda.tiled").built():
        if pick(k.parts["rec"]):
            try:
                got = k.fn.inspect_sass()
            except Exception as e:  # no nvdisasm on this machine
                pytest.skip(f"no SASS here: {e!r}")
            texts += list(got.values()) if isinstance(got, dict) else [got]
    assert texts, "no tiled kernel of that class was built"
    return "\n".join(texts)


@pytest.mark.gpu
def test_int32_cells_reach_hopper_dpx(monkeypatch):
    """On an sm_90 GPU ptxas fuses 32-bit max(a + b, c) chains into VIADDMNMX / VIMNMX: the plain cell
    once rewritten, and the gallery's cells, which cast by hand."""
    from numba import cuda

    if cuda.get_current_device().compute_capability < (9, 0):
        pytest.skip("DPX needs sm_90")
    monkeypatch.setenv("GPUDP_NARROW", "1")
    rng = np.random.default_rng(3)
    r = sweep(PlainSW(rng.integers(0, 4, 300), rng.integers(0, 4, 300)), backend="cuda")
    assert r.stats.extra["arithmetic"].startswith("int32")
    sass = _sass_of(lambda c: issubclass(c, PlainSW) and getattr(c, "_narrow", None) is not None)
    assert "VIADDMNMX" in sass or "VIMNMX" in sass
    local, affine = load_example("local_alignment"), load_example("affine_alignment")
    text = "ACGT" * 40
    for align, cls in ((local.align, local.SmithWaterman), (affine.align, affine.Gotoh)):
        align(text, text[::-1], backend="cuda")
        sass = _sass_of(lambda c, cls=cls: issubclass(c, cls))
        assert "VIADDMNMX" in sass or "VIMNMX" in sass, cls.__name__


def test_a_boundary_of_gap_times_position_is_bounded(monkeypatch):
    """``-gap * (i + j + 2)``: a product of data and coordinates (examples/many_alignments.py's
    global alignment, whose cell casts nothing)."""
    ga = load_example("many_alignments").GlobalAlignment
    nar = narrow_source(ga, ("A", "A", "A"))
    syms = (np.zeros(10, np.int32), np.zeros(20, np.int32))
    scores = np.array([1, -1, 2], np.int32)
    # the boundary reaches 2 * (10 + 30 + 20 + 30 + 2); each step adds at most 2
    assert nar.proven((*syms, scores), 10, 20, [0], 30) == 2 * (10 + 30 + 20 + 30 + 2) + 30 * 2
    assert _same(lambda: ga("GATTACA", "GCATGCTA", 2, -1, 3), "cpu", monkeypatch).startswith("int32")


@pytest.mark.parametrize("backend", BACKENDS)
def test_checkpoints_sweep_and_walk_narrow(backend, monkeypatch):
    """The forward sweep with checkpoints and the blocks its traceback sweeps again both run the
    narrow cell; the path is the full store's, and the one the cell as written gives."""
    monkeypatch.setenv("GPUDP_NARROW", "1")
    rng = np.random.default_rng(5)
    n = 150 if backend == "cpu" else 9
    a, b = rng.integers(0, 3, n), rng.integers(0, 3, n + 3)
    every = {"checkpoint_every": 64, "tile": (64, 64)} if backend == "cpu" else {}
    lin = sweep(PlainSW(a, b), backend=backend, store="checkpoints", **every)
    assert lin.stats.extra["arithmetic"].startswith("int32")
    assert getattr(lin._kernels, "_narrow", None) is not None
    full = sweep(PlainSW(a, b), backend=backend, store="full")
    monkeypatch.setenv("GPUDP_NARROW", "0")
    wide = sweep(PlainSW(a, b), backend=backend, store="full")
    assert lin.best_cell == full.best_cell == wide.best_cell
    paths = [r.traceback(r.best_cell).tolist() for r in (lin, full, wide)]
    assert paths[0] == paths[1] == paths[2]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_batch_runs_narrow_when_every_instance_is_proven(backend, monkeypatch):
    """sweep_many proves the bound for the whole batch (the data's magnitudes over every instance, the
    largest grid): values, best cells and paths those of the cell as written."""
    from gpudp import sweep_many

    rng = np.random.default_rng(8)
    n = 12 if backend == "cpu" else 5
    pairs = [
        (rng.integers(0, 4, rng.integers(1, n)), rng.integers(0, 4, rng.integers(1, n))) for _ in range(6)
    ]
    out = []
    for flag in ("1", "0"):
        monkeypatch.setenv("GPUDP_NARROW", flag)
        res = sweep_many([PlainSW(a, b, 2, -1, 1) for a, b in pairs], backend=backend)
        out.append(
            (
                [(it.best_value, it.best_cell, it.last_row.tolist(), it.path.tolist()) for it in res],
                res.stats.extra["arithmetic"],
            )
        )
    assert out[0][0] == out[1][0]
    assert out[0][1].startswith("int32") and out[1][1] == "as written"
    # one instance's scores near int32 leave the whole batch as written
    monkeypatch.setenv("GPUDP_NARROW", "1")
    mixed = [PlainSW(a, b, 2, -1, 1) for a, b in pairs] + [PlainSW([1, 1], [1], 1 << 30)]
    assert sweep_many(mixed, backend=backend).stats.extra["arithmetic"] == "as written"


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    items=st.lists(st.tuples(st.integers(1, 30), st.integers(0, 1 << 20)), min_size=1, max_size=12),
    share=st.floats(0.1, 0.9),
)
def test_a_layered_cell_runs_narrow(monkeypatch, items, share):
    """A layered recurrence (the knapsack DP's, int32 values): its previous layers are arrays of
    values; every value is within fill plus the layers times the largest step."""
    from gpudp.problems.knapsack.dp import KnapsackDP

    w, p = (np.array(x, np.int64) for x in zip(*items, strict=True))
    c = max(1, int(w.sum() * share))
    out = []
    for flag in ("1", "0"):
        monkeypatch.setenv("GPUDP_NARROW", flag)
        r = sweep(KnapsackDP(w, p, c, np.int32), backend="cpu")
        path = r.traceback((len(w) - 1, c)).tolist()
        out.append((r.last_layer.tolist(), path, r.stats.extra["arithmetic"]))
    assert out[0][:2] == out[1][:2]
    assert out[0][2].startswith("int32") and out[1][2] == "as written"


@pytest.mark.sim
def test_a_layered_cell_runs_narrow_cuda(monkeypatch):
    from gpudp.problems.knapsack.dp import KnapsackDP

    w, p = np.array([3, 4, 2]), np.array([5, 7, 1])
    got = []
    for flag in ("1", "0"):
        monkeypatch.setenv("GPUDP_NARROW", flag)
        r = sweep(KnapsackDP(w, p, 6, np.int32), backend="cuda")
        got.append((r.last_layer.tolist(), r.traceback((2, 6)).tolist(), r.stats.extra["arithmetic"]))
    assert got[0][:2] == got[1][:2] and got[0][2].startswith("int32")
