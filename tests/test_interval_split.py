"""The interval cell's split-point loop shared by a warp (gpudp.interval.split, issue 37): which loops
the rewrite takes and which it leaves (with the reason), and, in the CUDA simulator (or on the GPU),
that the warp's cells give the serial cell's values and decisions, ties and NaNs included."""

from __future__ import annotations

import math

import numpy as np
import pytest
from examples_loader import load_example
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_interval import chain_cost

from gpudp import IntervalRecurrence, sweep
from gpudp.interval import split

mc = load_example("matrix_chain")
rna = load_example("rna_folding")
SIM = pytest.mark.sim


def _same_xor(x, m):
    return x


def rewritten(cell) -> str:
    return split.warp_cell(cell, _same_xor)[1]


def refused(cell) -> str:
    with pytest.raises(split.Unsupported) as e:
        split.warp_cell(cell, _same_xor)
    return str(e.value)


# ---------------------------------------------------------------------------------------------
# which loops qualify
# ---------------------------------------------------------------------------------------------


def test_the_examples_loops_are_shared():
    for cls in (mc.MatrixChain, rna.Nussinov):
        src = rewritten(cls.cell)
        lanes = "range(_gpudp_lane, _gpudp_c0, 32)" if split.UNROLL == 1 else "_gpudp_t0 = _gpudp_lane"
        assert lanes in src and "_gpudp_xor(" in src


def last_min(i, j, T, w):
    best, at = T[i, i] + w[i], i
    for k in range(j, i, -1):  # backwards, ties to the last iteration (the smallest k)
        c = T[i, k - 1] + w[k]
        if best >= c:
            best, at = c, k
    return best, at - i


def two_loops(i, j, T, w):
    lo, a = w[i], 0
    for k in range(i + 1, j + 1):
        c = T[k, j] + w[k]
        if c < lo:
            lo, a = c, k - i
    hi = lo
    for k in range(i, j):  # the same names again: each loop binds them before reading
        c = T[i, k] - w[k]
        if c > hi:
            hi = c
    return hi, a


def test_other_forms_qualify():
    src = rewritten(last_min)
    assert "_gpudp_x0_1 > _gpudp_o0" in src  # ties to the later iteration
    assert "max(0, (_gpudp_lo0 - _gpudp_hi0 + 0) // 1)" in src  # a step of -1
    src = rewritten(two_loops)
    assert "_gpudp_c0" in src and "_gpudp_c1" in src


def reads_best(i, j, T):
    best = 0
    for k in range(i, j):
        c = T[i, k] + best
        if c > best:
            best = c
    return best, 0


def breaks(i, j, T):
    best = 0
    for k in range(i, j):
        if T[i, k] > best:
            best = T[i, k]
        if best > 10:
            break
    return best, 0


def carried(i, j, T):
    best, c = 0, 0
    for k in range(i, j):
        if T[i, k] + c > best:  # c from the previous iteration
            best = T[i, k] + c
        c = T[k, j]
    return best, 0


def read_after(i, j, T):
    best = 0
    for k in range(i, j):
        c = T[i, k]
        if c > best:
            best = c
    return best + c, 0


def other_value(i, j, T):
    best = 0
    for k in range(i, j):
        if T[i, k] > best:
            best = T[i, k] + 1
    return best, 0


def counts(i, j, T):
    best, n = 0, 0
    for k in range(i, j):
        if T[i, k] > best:
            best, n = T[i, k], n + 1
    return best, n


def writes(i, j, T, scratch):
    best = 0
    for k in range(i, j):
        scratch[k] = T[i, k]
        if T[i, k] > best:
            best = T[i, k]
    return best, 0


def nested(i, j, T):
    best = 0
    for k in range(i, j):
        for m in range(k, j):
            if T[k, m] > best:
                best = T[k, m]
    return best, 0


@pytest.mark.parametrize(
    "cell, why",
    [
        (reads_best, "reads best"),
        (breaks, "break"),
        (carried, "c is read before it is assigned"),
        (read_after, "c is read after the loop"),
        (other_value, "no 'if X < best"),
        (counts, "reads n"),
        (writes, "array"),
        (nested, "for in the loop"),
    ],
)
def test_loops_that_would_change_the_answer_are_left_as_written(cell, why):
    assert why in refused(cell)


def test_the_cpu_reads_columns_from_a_column_major_copy():
    src = split.column_cell(mc.MatrixChain.cell)[1]
    assert "_gpudp_cols[j, k + 1]" in src and "T[i, k]" in src  # rows stay where they are
    with pytest.raises(split.Unsupported, match="no loop reads down a column"):
        split.column_cell(last_min)  # T[i, k - 1]: a row
    r = sweep(mc.MatrixChain([3, 5, 2, 7, 4]), backend="cpu", progress=False)
    assert r.stats.extra["column_reads"] == "a column-major copy"
    assert r.value(0, 3) == chain_cost([3, 5, 2, 7, 4])


# ---------------------------------------------------------------------------------------------
# the warp's cells against the serial cell (the simulator runs a block of one warp)
# ---------------------------------------------------------------------------------------------


class TiedChain(IntervalRecurrence):
    """Matrix chain written with ``<=``: ties go to the last split point, the serial loop's answer."""

    value_dtype = np.int64
    fill = 0
    decision_bits = 8

    def __init__(self, p):
        self.p = np.asarray(p, np.int64)

    def size(self):
        return len(self.p) - 1

    def data(self):
        return (self.p,)

    @staticmethod
    def cell(i, j, T, p):
        if i == j:
            return 0, 0
        best, split = T[i + 1, j] + p[i] * p[i + 1] * p[j + 1], 0
        for k in range(i + 1, j):
            cost = T[i, k] + T[k + 1, j] + p[i] * p[k + 1] * p[j + 1]
            if cost <= best:
                best, split = cost, k - i
        return best, split

    @staticmethod
    def back(i, j, s, p):
        return -1, -1, -1, -1


class NaNWeights(IntervalRecurrence):
    """Float costs, some NaN: the serial loop never takes a NaN candidate (``nan < best`` is false)."""

    value_dtype = np.float64
    fill = 0.0
    decision_bits = 8

    def __init__(self, w):
        self.w = np.asarray(w, np.float64)

    def size(self):
        return len(self.w)

    def data(self):
        return (self.w,)

    @staticmethod
    def cell(i, j, T, w):
        best, at = w[i], 0
        for k in range(i + 1, j + 1):
            c = T[k, j] + w[k] * 0.5
            if c < best:
                best, at = c, k - i
        return best, at

    @staticmethod
    def back(i, j, s, w):
        return -1, -1, -1, -1


def _both(rec, width=32, warp_from=1):
    """The cpu's sweep and the cuda one's with every diagonal from ``warp_from`` on shared by
    ``width`` lanes (a warp, or a block of ``width`` threads)."""
    import gpudp.interval.cuda as icuda

    a = sweep(rec, backend="cpu", progress=False)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(icuda, "WARP_FROM", warp_from)
        mp.setattr(icuda, "widths", lambda n, d0, d1, blocks: [(d0, d1, width)])
        b = sweep(rec, backend="cuda", progress=False)
    assert b.stats.extra["split_loop"] == "a warp a cell"
    assert bool(b.stats.extra["group_widths"]) == (width > 32)
    assert np.array_equal(a.table, b.table, equal_nan=True)
    assert np.array_equal(a.decisions, b.decisions)


small = st.lists(st.integers(1, 3), min_size=3, max_size=9)  # small dimensions: many ties


@SIM
@settings(max_examples=4)
@given(p=small)
def test_warp_cells_equal_the_serial_cell(p):
    _both(mc.MatrixChain(p))
    _both(TiedChain(p))


@SIM
@settings(max_examples=3)
@given(w=st.lists(st.sampled_from([0.0, 1.0, -1.0, 2.5, math.nan, -0.0]), min_size=2, max_size=8))
def test_warp_cells_skip_nan_as_the_serial_cell_does(w):
    _both(NaNWeights(w))


@SIM
def test_nussinov_by_warps():
    _both(rna.Nussinov("GGGAAAUCCCAGCU", 3))  # a warp a cell: 105 cells, not 210


@SIM
def test_cells_shared_by_a_block_of_two_warps():
    """The merge across a block's warps (shared memory between barriers): values and decisions, ties
    to the first and to the last split point, NaNs skipped."""
    rng = np.random.default_rng(5)
    # the last diagonals only (their loops longer than a warp: the second warp has split points)
    _both(TiedChain(rng.integers(1, 3, 38)), 64, 34)
    _both(mc.MatrixChain(rng.integers(1, 9, 38)), 64, 34)
    w = rng.choice([0.0, 1.0, -1.0, 2.5, math.nan], 37)
    _both(NaNWeights(w), 64, 34)


def test_group_widths_follow_the_diagonals():
    """A warp a cell while the grid cannot give each cell a block; then the widest block the grid
    holds one a cell of, its lanes each with LANE_TRIPS split points or more; never narrower later."""
    import gpudp.interval.cuda as icuda

    def blocks(w):  # a grid of 132 SMs holding 2048 threads each, at most 32 blocks an SM
        return 132 * min(32, 2048 // w)

    n = 2000
    runs = icuda.widths(n, 0, n, blocks)
    assert runs[0][0] == 0 and runs[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(runs, runs[1:], strict=False))
    assert [w for _, _, w in runs] == sorted({w for _, _, w in runs})
    for d0, d1, w in runs:
        for d in (d0, d1 - 1):
            if w > 32:
                assert n - d <= blocks(w) and w * icuda.LANE_TRIPS <= d <= n and w <= icuda.MAX_WIDTH
            wider = 2 * w if w > 32 else 64
            if d >= icuda.WARP_FROM and wider <= icuda.MAX_WIDTH and wider * icuda.LANE_TRIPS <= d:
                assert n - d > blocks(wider)
    assert runs[-1][2] == icuda.MAX_WIDTH
    assert icuda.widths(40, 0, 40, blocks) == [(0, 40, 32)]  # short loops: a warp a cell


@settings(max_examples=60, deadline=None)
@example(n=2000, cut=(0.0, 1.0), most=(100, 3000, 3000))  # a wider block fits where a narrower does not
@given(
    n=st.integers(1, 3000),
    cut=st.tuples(st.floats(0, 1), st.floats(0, 1)),
    most=st.tuples(*(st.integers(1, 3000) for _ in range(3))),
)
def test_group_widths_are_each_diagonals_widest(n, cut, most):
    """The runs name, diagonal by diagonal, the widest group whose every narrower width also fits
    (the widths' definition, one diagonal at a time), on any range of diagonals and any grid."""
    import gpudp.interval.cuda as icuda

    d0, d1 = sorted(int(c * n) for c in cut)
    d1 = max(d1, d0 + 1) if d0 < n else n
    if d0 >= d1:
        return
    grid = dict(zip((64, 128, 256), most, strict=True))

    def width(d):
        w, cand = 32, 64
        while cand <= icuda.MAX_WIDTH and cand * icuda.LANE_TRIPS <= d and n - d <= grid[cand]:
            w, cand = cand, 2 * cand
        return w if d >= icuda.WARP_FROM else 32

    got = [w for a, b, w in icuda.widths(n, d0, d1, grid.get) for _ in range(a, b)]
    assert got == [width(d) for d in range(d0, d1)]


@SIM
def test_a_cell_without_a_shared_loop_runs_a_thread_a_cell(monkeypatch):
    import gpudp.interval.cuda as icuda

    class Counting(TiedChain):
        @staticmethod
        def cell(i, j, T, p):
            best, n = 0, 0
            for k in range(i, j):
                if T[i, k] > best:
                    best, n = T[i, k], n + 1
            return best, n

    monkeypatch.setattr(icuda, "WARP_FROM", 1)
    r = sweep(Counting([2, 3, 4, 5]), backend="cuda", progress=False)
    how = r.stats.extra["split_loop"]
    assert how.startswith("a thread a cell: ") and "reads n" in how


@SIM
def test_a_warp_cell_that_does_not_compile_runs_a_thread_a_cell(monkeypatch):
    """The rewrite's own failure (a payload no warp shuffle takes, say) is not the user's: the sweep
    compiles the cell as written instead, and says why."""
    from numba.core.errors import TypingError

    import gpudp.interval.cuda as icuda

    real = icuda.coop_blocks

    def refuse_warps(fn, args, threads, want):
        if args[7] < args[2]:  # warp_from below n: the warp kernel
            raise TypingError("no shuffle for this payload")
        return real(fn, args, threads, want)

    monkeypatch.setattr(icuda, "coop_blocks", refuse_warps)
    monkeypatch.setattr(icuda, "WARP_FROM", 1)
    p = [3, 1, 4, 1, 5, 9, 2]
    r = sweep(mc.MatrixChain(p), backend="cuda", progress=False)
    assert r.stats.extra["split_loop"].startswith("a thread a cell: the warp cell did not compile")
    assert r.value(0, len(p) - 2) == chain_cost(p)


def test_each_launch_has_the_blocks_its_first_diagonal_needs():
    import gpudp.interval.cuda as icuda

    n, most = 2000, 1000
    assert icuda.run_blocks(n, 0, 10, 32, 256, 32, most) == 8  # a thread a cell: 2,000 threads
    assert icuda.run_blocks(n, 0, 40, 32, 256, 32, most) == 246  # then a warp a cell from 32 on
    assert icuda.run_blocks(n, 100, 200, 32, 256, 32, most) == 238
    assert icuda.run_blocks(n, 1500, 1600, 256, 256, 32, most) == 500  # a block a cell
    assert icuda.run_blocks(n, 500, 600, 64, 64, 32, most) == most  # at most the launch's
    assert icuda.run_blocks(n, n - 1, n, 32, 256, n, most) == 1
