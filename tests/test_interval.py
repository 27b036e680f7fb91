"""Interval recurrences (gpudp.IntervalRecurrence, issue 14): matrix-chain order, Nussinov folding and
an optimal binary search tree against plain-Python textbook loops, on the cpu backend and, for tiny
cases, on CUDA (the simulator without a GPU); the tree-shaped traceback; the contract's edges."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from examples_loader import load_example
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import ContractError, InputError, IntervalRecurrence, sweep

ROOT = Path(__file__).resolve().parent.parent
SIM = pytest.mark.sim


_load = load_example


mc = _load("matrix_chain")
rna = _load("rna_folding")


# ---------------------------------------------------------------------------------------------
# references: the textbook O(n^3) loops, plain Python
# ---------------------------------------------------------------------------------------------


def chain_cost(p) -> int:
    n = len(p) - 1
    m = [[0] * n for _ in range(n)]
    for length in range(2, n + 1):
        for i in range(n - length + 1):
            j = i + length - 1
            m[i][j] = min(m[i][k] + m[k + 1][j] + p[i] * p[k + 1] * p[j + 1] for k in range(i, j))
    return m[0][n - 1]


def cost_of(text: str, p) -> int:
    """The multiplications a fully parenthesised product such as ``((A0A1)A2)`` costs, parsed from
    the text alone (each matrix once, in order; a pair of parentheses around exactly two factors)."""
    pos, total, seen = 0, 0, []

    def factor():
        nonlocal pos, total
        if text[pos] == "A":
            end = pos + 1
            while end < len(text) and text[end].isdigit():
                end += 1
            k = int(text[pos + 1 : end])
            pos = end
            seen.append(k)
            return p[k], p[k + 1]
        assert text[pos] == "(", text
        pos += 1
        (r1, c1), (r2, c2) = factor(), factor()
        assert text[pos] == ")" and c1 == r2, text
        pos += 1
        total += r1 * c1 * c2
        return r1, c2

    factor()
    assert pos == len(text) and seen == list(range(len(p) - 1)), text
    return total


def nussinov_pairs(seq: str, min_loop: int) -> int:
    n = len(seq)
    pair = {("A", "U"), ("U", "A"), ("C", "G"), ("G", "C"), ("G", "U"), ("U", "G")}
    N = [[0] * n for _ in range(n)]
    for length in range(2, n + 1):
        for i in range(n - length + 1):
            j = i + length - 1
            best = max(N[i + 1][j], N[i][j - 1])
            if j - i - 1 >= min_loop and (seq[i], seq[j]) in pair:
                best = max(best, (N[i + 1][j - 1] if i + 1 <= j - 1 else 0) + 1)
            for k in range(i + 1, j):
                best = max(best, N[i][k] + N[k + 1][j])
            N[i][j] = best
    return N[0][n - 1] if n else 0


def check_structure(seq: str, structure: str, min_loop: int) -> int:
    """The number of pairs of a dot-bracket structure, checked: balanced, complementary, loops."""
    assert len(structure) == len(seq)
    stack, pairs = [], 0
    ok = {"AU", "UA", "CG", "GC", "GU", "UG"}
    for k, c in enumerate(structure):
        if c == "(":
            stack.append(k)
        elif c == ")":
            i = stack.pop()
            assert seq[i] + seq[k] in ok and k - i - 1 >= min_loop, (i, k, structure)
            pairs += 1
    assert not stack, structure
    return pairs


# ---------------------------------------------------------------------------------------------
# matrix chain and Nussinov against the references
# ---------------------------------------------------------------------------------------------

dims = st.lists(st.integers(1, 60), min_size=2, max_size=16)
rna_seq = st.text(alphabet="ACGU", min_size=0, max_size=24)


def check_chain(p, backend):
    cost, order, stats = mc.matrix_chain(p, backend=backend, progress=False)
    assert cost == chain_cost(p)
    assert cost_of(order, p) == cost  # the parenthesisation attains the optimum
    n = len(p) - 1
    assert stats.cells == n * (n + 1) // 2 and stats.backend == backend
    return order


@given(dims)
@settings(max_examples=30)
def test_matrix_chain_cpu(p):
    check_chain(p, "cpu")


@given(rna_seq, st.integers(0, 3))
@settings(max_examples=30)
def test_nussinov_cpu(seq, min_loop):
    pairs, structure, _ = rna.fold(seq, min_loop, backend="cpu", progress=False)
    assert pairs == nussinov_pairs(seq, min_loop)
    assert check_structure(seq, structure, min_loop) == pairs


@SIM
@given(st.lists(st.integers(1, 30), min_size=2, max_size=7))
@settings(max_examples=6)
def test_matrix_chain_cuda(p):
    check_chain(p, "cuda")


@SIM
@given(st.text(alphabet="ACGU", min_size=1, max_size=8), st.integers(0, 2))
@settings(max_examples=5)
def test_nussinov_cuda(seq, min_loop):
    pairs, structure, _ = rna.fold(seq, min_loop, backend="cuda", progress=False)
    assert pairs == nussinov_pairs(seq, min_loop)
    assert check_structure(seq, structure, min_loop) == pairs


def test_the_worked_example():
    assert check_chain([10, 30, 5, 60], "cpu") == "((A0A1)A2)"
    assert check_chain([7, 3], "cpu") == "A0"  # n = 1: one matrix, no product
    res = sweep(mc.MatrixChain([10, 30, 5, 60]), backend="cpu", progress=False)
    assert res.value(0, 2) == 4500 and res.value(1, 2) == 9000 and res.decision(0, 2) == 1
    assert res.traceback_tree().tolist() == [[0, 2, 1], [0, 1, 0], [0, 0, 0], [1, 1, 0], [2, 2, 0]]
    assert res.traceback_tree((1, 2)).tolist() == [[1, 2, 1], [1, 1, 0], [2, 2, 0]]
    assert res.table.tolist() == [[0, 1500, 4500], [0, 0, 9000], [0, 0, 0]]
    assert res.stats.extra["schedule"] == "interval diagonals" and res.stats.extra["layout"] == "rows"
    with pytest.raises(IndexError):
        res.value(2, 1)
    with pytest.raises(IndexError):
        res.traceback_tree((0, 3))


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=SIM)])
def test_values_only(backend):
    p = [5, 4, 3, 6, 2]
    full = sweep(mc.MatrixChain(p), backend=backend, progress=False)
    values = sweep(mc.MatrixChain(p), backend=backend, progress=False, traceback=False)
    assert values.table.tolist() == full.table.tolist() and values.decisions is None
    assert type(values.recurrence) is mc.MatrixChain
    with pytest.raises(ContractError, match="swept with traceback=False"):
        values.traceback_tree()


def chain_table(p) -> np.ndarray:
    """The same textbook recurrence, one numpy step per diagonal (fast enough for long chains)."""
    p = np.asarray(p, np.int64)
    n = len(p) - 1
    T = np.zeros((n, n), np.int64)
    for d in range(1, n):
        i = np.arange(n - d)[:, None]
        k = i + np.arange(d)  # the split points of (i, i + d)
        T[i[:, 0], i[:, 0] + d] = (T[i, k] + T[k + 1, i + d] + p[i] * p[k + 1] * p[i + d + 1]).min(axis=1)
    return T


def test_a_long_chain_runs_parallel_diagonals():
    """Diagonals whose work reaches SERIAL_WORK run in prange: the same table as the reference."""
    from gpudp.interval import SERIAL_WORK

    p = [int(x) for x in np.random.default_rng(3).integers(1, 50, 401)]
    n = len(p) - 1
    assert (n // 2) * (n // 2 + 1) >= SERIAL_WORK  # the middle diagonals run in parallel
    want = chain_table(p)
    res = sweep(mc.MatrixChain(p), backend="cpu", progress=False)
    assert (np.triu(res.table) == want).all()
    assert cost_of(mc.parenthesise(res.traceback_tree()), p) == want[0, n - 1]


# ---------------------------------------------------------------------------------------------
# value types: floats, int64 near 2^62 (and past it: wraps, the user's to avoid)
# ---------------------------------------------------------------------------------------------


class OptimalBST(IntervalRecurrence):
    """Expected search cost of an optimal binary search tree over keys of probabilities w (float64):
    root r splits (i, j) into (i, r - 1) and (r + 1, j), either possibly empty."""

    value_dtype = np.float64
    decision_bits = 8

    def __init__(self, w):
        self.w = np.asarray(w, np.float64)
        self.cum = np.concatenate([[0.0], np.cumsum(self.w)])

    def size(self):
        return len(self.w)

    def data(self):
        return (self.cum,)

    @staticmethod
    def cell(i, j, T, cum):
        best, root = np.inf, i
        for r in range(i, j + 1):
            c = (T[i, r - 1] if r > i else 0.0) + (T[r + 1, j] if r < j else 0.0)
            if c < best:
                best, root = c, r
        return best + (cum[j + 1] - cum[i]), root - i

    @staticmethod
    def back(i, j, d, cum):
        r = i + d
        return i, r - 1, r + 1, j


def bst_cost(w) -> float:
    n = len(w)
    e = {}
    for length in range(1, n + 1):
        for i in range(n - length + 1):
            j = i + length - 1
            best = min(e.get((i, r - 1), 0.0) + e.get((r + 1, j), 0.0) for r in range(i, j + 1))
            e[(i, j)] = best + sum(w[i : j + 1])
    return e[(0, n - 1)]


def tree_cost(rows, w) -> float:
    """An OptimalBST tree's expected cost from its preorder rows: each key's depth times its weight."""
    depth, cost = {}, 0.0
    for i, j, d in rows:
        level = depth.get((i, j), 1)
        cost += w[i + d] * level
        depth[(i, i + d - 1)] = depth[(i + d + 1, j)] = level + 1
    return cost


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=SIM)])
def test_float64_values(backend):
    w = list(np.random.default_rng(5).random(6 if backend == "cuda" else 30))
    res = sweep(OptimalBST(w), backend=backend, progress=False)
    n = len(w)
    assert res.value(0, n - 1) == pytest.approx(bst_cost(w), rel=1e-12)
    rows = res.traceback_tree()
    assert sorted(int(i + d) for i, _, d in rows) == list(range(n))  # every key is a root once
    assert tree_cost(rows, w) == pytest.approx(res.value(0, n - 1), rel=1e-12)


class Big(IntervalRecurrence):
    """T(i, i) = leaf[i]; T(i, j) = max over k of T(i, k), T(k + 1, j), plus add: int64 values near
    2^62, exact; and with add = -1 (sum instead of max) the sums wrap around past 2^63."""

    value_dtype = np.int64

    def __init__(self, leaf, add):
        self.leaf, self.add = np.asarray(leaf, np.int64), int(add)

    def size(self):
        return len(self.leaf)

    def data(self):
        return self.leaf, self.add

    @staticmethod
    def cell(i, j, T, leaf, add):
        if i == j:
            return leaf[i]
        best = T[i, i] + T[i + 1, j] if add < 0 else max(T[i, i], T[i + 1, j]) + add
        for k in range(i + 1, j):
            if add >= 0:
                best = max(best, max(T[i, k], T[k + 1, j]) + add)
        return best


@pytest.mark.filterwarnings("ignore:overflow encountered")  # the simulator runs the cell in numpy
@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=SIM)])
def test_int64_near_2_62_is_exact_and_overflow_wraps(backend):
    leaf = [2**62 - 7, 2**62 + 1000, 2**62 - 1, 2**62 + 3]
    res = sweep(Big(leaf, 5), backend=backend, progress=False)
    assert int(res.value(0, 3)) == 2**62 + 1000 + 5 * 3  # the max leaf, climbed three levels
    assert int(res.value(1, 2)) == 2**62 + 1000 + 5
    wrapped = sweep(Big(leaf[:3], -1), backend=backend, progress=False)  # a sum past 2^63
    exact = sum(leaf[:3])
    assert int(wrapped.value(0, 2)) == (exact + 2**63) % 2**64 - 2**63 != exact


# ---------------------------------------------------------------------------------------------
# the contract's edges
# ---------------------------------------------------------------------------------------------


class Chain(IntervalRecurrence):
    """A valid small recurrence (the length of the interval, splits in halves), base of the broken
    ones below."""

    value_dtype = np.int64
    decision_bits = 4

    def __init__(self, n=5):
        self.n = n

    def size(self):
        return self.n

    @staticmethod
    def cell(i, j, T):
        if i == j:
            return 1, 0
        k = (i + j) // 2
        return T[i, k] + T[k + 1, j], k - i

    @staticmethod
    def back(i, j, d):
        if i == j:
            return -1, -1, -1, -1
        return i, i + d, i + d + 1, j


def test_size_zero_is_an_empty_table():
    res = sweep(Chain(0), backend="cpu", progress=False)
    assert res.table.shape == (0, 0) and res.stats.cells == 0
    with pytest.raises(IndexError):
        res.value(0, 0)
    with pytest.raises(IndexError):
        res.traceback_tree()


def test_one_cell():
    res = sweep(Chain(1), backend="cpu", progress=False)
    assert res.value(0, 0) == 1 and res.traceback_tree().tolist() == [[0, 0, 0]]


class Wide(Chain):
    @staticmethod
    def cell(i, j, T):
        return 1, 16 if i == 1 and j == 2 else 0


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=SIM)])
def test_a_decision_too_wide_is_a_contract_error(backend):
    with pytest.raises(ContractError, match=r"decision 16 at cell \(i, j\) = \(1, 2\).*decision_bits = 4"):
        sweep(Wide(4), backend=backend, progress=False)


class Dividing(Chain):
    """Chain whose cell divides by zero at one cell, ``(at[0], at[1])``, and nowhere else."""

    def __init__(self, n, at):
        self.n, self.at = n, np.array(at, np.int64)

    def data(self):
        return (self.at,)

    @staticmethod
    def cell(i, j, T, at):
        v = 100 // (abs(i - at[0]) + abs(j - at[1]))
        if i == j:
            return 1 + v, 0
        k = (i + j) // 2
        return T[i, k] + T[k + 1, j] + v, k - i

    @staticmethod
    def back(i, j, d, at):
        return Chain.back(i, j, d)


def test_a_cell_raising_in_the_compiled_sweep_is_a_contract_error():
    """Diagonals too short for a parallel region run serially, outside numba's parallel regions,
    which handed on the cell's ZeroDivisionError as it was: now the grid's ContractError (what a
    parallel region's raise on the calling thread already was), the cell's exception chained, with
    decisions kept or not. (On a worker thread numba loses it: tests/test_lost_raise.py.)"""
    why = r"Dividing's compiled sweep stopped: its cell, boundary or back raised ZeroDivisionError.*check="
    for at in ((2, 2), (0, 7), (3, 5)):  # n = 8: every diagonal serial (work < SERIAL_WORK)
        for traceback in (True, False):
            with pytest.raises(ContractError, match=why) as e:
                sweep(Dividing(8, at), backend="cpu", progress=False, traceback=traceback)
            assert isinstance(e.value.__cause__, ZeroDivisionError)
    v = {(i, j): 100 // (abs(i - 5) + abs(j - 5)) for i in range(3) for j in range(3)}  # no zero
    t01 = 2 + v[0, 0] + v[1, 1] + v[0, 1]
    table = sweep(Dividing(3, (5, 5)), backend="cpu", progress=False).table
    assert table[0, 2] == t01 + 1 + v[2, 2] + v[0, 2]


def test_a_raise_in_a_parallel_region_names_the_cell_s_exception():
    """A parallel region's raise on the calling thread comes as numba's SystemError ('... returned
    a result with an exception set'), the cell's exception its cause: kernel_raises names that
    cause, as the grid's typing_errors does, not the SystemError."""
    from gpudp.checks import kernel_raises

    with pytest.raises(
        ContractError, match=r"Chain's compiled .* raised ZeroDivisionError\('by zero'\)"
    ) as e:
        with kernel_raises(Chain):
            try:
                raise ZeroDivisionError("by zero")
            except ZeroDivisionError as cause:
                raise SystemError("<function run> returned a result with an exception set") from cause
    assert isinstance(e.value.__cause__, ZeroDivisionError)


def _compiled(cls) -> bool:
    from gpudp.kernel import family

    return any(k.parts["rec"] is cls for k in family("interval.sweep").built())


def test_arity_mistakes_are_caught_before_compiling():
    class NoTable(Chain):
        @staticmethod
        def cell(i, j):
            return 1, 0

    with pytest.raises(ContractError, match=r"NoTable.cell takes 2 arguments, but the engine passes 3.*T"):
        sweep(NoTable(), backend="cpu")

    class BackTooMany(Chain):
        @staticmethod
        def back(i, j, d, extra):
            return -1, -1, -1, -1

    with pytest.raises(
        ContractError, match=r"back takes 4 arguments, but the engine passes 3.*i1, j1, i2, j2"
    ):
        sweep(BackTooMany(), backend="cpu")
    assert not _compiled(NoTable) and not _compiled(BackTooMany)

    class Bare(Chain):
        @staticmethod
        def cell(i, j, T):
            return 1

    with pytest.raises(ContractError, match=r"Bare.cell returned 1 .* return \(value, decision\)"):
        sweep(Bare(), backend="cpu")
    assert not _compiled(Bare)

    class NoSize(IntervalRecurrence):
        @staticmethod
        def cell(i, j, T):
            return 0

    with pytest.raises(ContractError, match="NoSize must define size"):
        sweep(NoSize(), backend="cpu")

    class Reducing(Chain):
        reduce = "max"

    with pytest.raises(ContractError, match="Reducing.reduce = 'max': an IntervalRecurrence has no reduce"):
        sweep(Reducing(), backend="cpu")

    class StatelessBack(Chain):  # traceback_state, but back of the plain form
        traceback_state = True

    with pytest.raises(
        ContractError,
        match=r"back takes 3 arguments, but the engine passes 5: "
        r"back\(i, j, decision, state, T\) -> \(i1, j1, state1, i2, j2, state2\)",
    ):
        sweep(StatelessBack(), backend="cpu")


def test_bad_backs_are_clear_errors_never_loops():
    class Pair(Chain):  # returns two values, not four
        @staticmethod
        def back(i, j, d):
            return i, j

    res = sweep(Pair(), backend="cpu", progress=False)
    with pytest.raises(ContractError, match=r"back\(0, 4, 2\) returned \(0, 4\).*\(i1, j1, i2, j2\)"):
        res.traceback_tree()

    class NoBack(IntervalRecurrence):
        value_dtype, decision_bits = np.int64, 4
        cell = staticmethod(Chain.cell)

        def size(self):
            return 3

    res = sweep(NoBack(), backend="cpu", progress=False)
    with pytest.raises(ContractError, match=r"NoBack defines no back.*back\(i, j, decision\)"):
        res.traceback_tree()

    class Outside(Chain):  # a child past the interval
        @staticmethod
        def back(i, j, d):
            return i, j + 1, -1, -1

    res = sweep(Outside(), backend="cpu", progress=False)
    with pytest.raises(ContractError, match=r"returned the child \(0, 5\).*inside \(0, 4\)"):
        res.traceback_tree()

    class Itself(Chain):  # the interval itself: would loop forever
        @staticmethod
        def back(i, j, d):
            return -1, -1, i, j

    res = sweep(Itself(), backend="cpu", progress=False)
    with pytest.raises(ContractError, match=r"returned the child \(1, 3\).*inside \(1, 3\)"):
        res.traceback_tree((1, 3))

    class Overlapping(Chain):  # both halves less one end: 2^n intervals, refused at n(n+1)/2
        @staticmethod
        def back(i, j, d):
            if i == j:
                return -1, -1, -1, -1
            return i, j - 1, i + 1, j

    res = sweep(Overlapping(8), backend="cpu", progress=False)
    with pytest.raises(ContractError, match="more than 36 intervals.*children overlap"):
        res.traceback_tree()
    assert res.traceback_tree((0, 1)).tolist() == [[0, 1, 0], [0, 0, 0], [1, 1, 0]]  # 3 of 3: fine


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=SIM)])
def test_a_read_of_an_empty_interval_is_refused_before_the_sweep(backend):
    """The driver's probe runs a few short cells in plain Python with a checked table: a read
    outside the contract is a ContractError naming the cell and the read, on every backend, not
    whatever memory holds."""

    class Empty(Chain):  # reads the empty interval (i + 1, i) instead of testing for it
        @staticmethod
        def cell(i, j, T):
            return (T[i + 1, j - 1] + 1 if i < j else 1), 0

    with pytest.raises(ContractError, match=r"cell at \(0, 1\) read T\[1, 0\].*if i \+ 1 <= j - 1 else 0"):
        sweep(Empty(4), backend=backend, progress=False)

    class Own(Chain):  # reads its own cell
        @staticmethod
        def cell(i, j, T):
            return (T[i, j] if j == i + 3 else 0), 0

    with pytest.raises(ContractError, match=r"cell at \(0, 3\) read T\[0, 3\]"):
        sweep(Own(5), backend=backend, progress=False)

    class Shaped(Chain):  # reads the table's shape too: the probe's table has the sweep's
        @staticmethod
        def cell(i, j, T):
            return (T[j, i] + 1 if i < j < T.shape[0] else 1), 0

    with pytest.raises(ContractError, match=r"cell at \(0, 1\) read T\[1, 0\]"):
        sweep(Shaped(6), backend=backend, progress=False)


@SIM
@pytest.mark.skipif(
    os.environ.get("NUMBA_ENABLE_CUDASIM") != "1", reason="the checked table view is the simulator's"
)
def test_the_simulator_catches_reads_outside_the_contract():
    class Reversed(Chain):  # reads T[2, 1] at (1, 2) only: a cell the driver's probe does not try
        @staticmethod
        def cell(i, j, T):
            return (T[2, 1] + 1 if (i, j) == (1, 2) else 1), 0

    with pytest.raises(IndexError, match=r"T\[2, 1\]: a cell may read T\[a, b\] only"):
        sweep(Reversed(6), backend="cuda", progress=False)


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=SIM)])
def test_a_table_too_large_is_refused_with_figures(backend):
    with pytest.raises(InputError, match=r"size 1000000 keeps the whole table.*7450.58 GiB.*931.32 GiB"):
        sweep(Chain(10**6), backend=backend, progress=False)  # refused before allocating anything


def test_the_diagonal_view_on_the_cpu():
    """make_diagonal_view builds the CUDA kernels' strided view; the same code generation on the CPU
    reads a table stored by diagonals at T[a, b] == S[b - a, a]."""
    from numba import njit, types
    from numba.extending import intrinsic
    from numba.np.arrayobj import make_array

    from gpudp.interval import make_diagonal_view

    view = make_diagonal_view(intrinsic, make_array, types)

    @njit
    def read(S, n):
        T = view(S, n)
        out = np.zeros((n, n), S.dtype)
        for a in range(n):
            for b in range(a, n):
                out[a, b] = T[a, b]
        return out

    n = 6
    S = np.arange(n * n, dtype=np.float64).reshape(n, n)
    rows = np.zeros((n, n))
    for a in range(n):
        for b in range(a, n):
            rows[a, b] = S[b - a, a]
    assert (read(S, n) == rows).all()


@pytest.mark.parametrize(
    "script, args, want",
    [
        ("matrix_chain.py", ["10", "30", "5", "60"], ["cost 4500 (cpu backend)", "((A0A1)A2)"]),
        ("rna_folding.py", ["GGGAAAUCC"], ["3 base pairs (cpu backend)", "GGGAAAUCC", "(((...)))"]),
        (
            "cyk_parse.py",
            ["(", "(", ")", ")", "--grammar", "parens"],
            ["parsed 4 words (cpu backend)", "(S (L () (X (S (L () (R ))) (R ))))"],
        ),
    ],
)
def test_the_examples_run_as_scripts(script, args, want):
    cmd = [sys.executable, str(ROOT / "examples" / script), *args, "--backend", "cpu"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == want


# ---------------------------------------------------------------------------------------------
# a tree whose nodes carry a state (traceback_state): back(i, j, decision, state, T) gives each child
# its state, reading the finished table
# ---------------------------------------------------------------------------------------------


class Heap(Chain):
    """Chain's tree, each node's state numbered as in a heap (children 2s and 2s + 1), plus what
    ``back`` reads of the table: the left child's value (its length) times 1000."""

    traceback_state = True

    @staticmethod
    def back(i, j, d, s, T):
        if i == j:
            return -1, -1, 0, -1, -1, 0
        k = i + d
        return i, k, 2 * s + 1000 * T[i, k], k + 1, j, 2 * s + 1


def heap_rows(i, j, s) -> list:
    """Heap's tree from ``(i, j)`` in state ``s``, preorder, in plain Python."""
    if i == j:
        return [[i, j, 0, s]]
    k = (i + j) // 2
    rows = [[i, j, k - i, s]]
    return rows + heap_rows(i, k, 2 * s + 1000 * (k - i + 1)) + heap_rows(k + 1, j, 2 * s + 1)


@st.composite
def heap_case(draw, most=14):
    n = draw(st.integers(1, most))
    i = draw(st.integers(0, n - 1))
    return n, (i, draw(st.integers(i, n - 1))), draw(st.integers(-(2**20), 2**20))


@given(heap_case())
@settings(max_examples=30)
def test_a_tree_with_a_state_cpu(case):
    n, root, s0 = case
    res = sweep(Heap(n), backend="cpu", progress=False)
    assert res.traceback_tree(root, state=s0).tolist() == heap_rows(*root, s0)
    assert res.traceback_tree().tolist() == heap_rows(0, n - 1, 0)  # state 0 by default


@SIM
@given(heap_case(most=6))
@settings(max_examples=3)
def test_a_tree_with_a_state_cuda(case):
    n, root, s0 = case
    res = sweep(Heap(n), backend="cuda", progress=False)
    assert res.traceback_tree(root, state=s0).tolist() == heap_rows(*root, s0)


def test_a_state_without_decisions_reads_the_table():
    class Lengths(Heap):  # no decisions: back splits in halves by the table alone
        decision_bits = 0

        @staticmethod
        def cell(i, j, T):
            return 1 if i == j else T[i, (i + j) // 2] + T[(i + j) // 2 + 1, j]

        @staticmethod
        def back(i, j, d, s, T):
            if i == j:
                return -1, -1, 0, -1, -1, 0
            k = i + (T[i, j] - 1) // 2
            return i, k, 2 * s + 1000 * T[i, k], k + 1, j, 2 * s + 1

    res = sweep(Lengths(7), backend="cpu", progress=False)
    want = [[i, j, 0, s] for i, j, _, s in heap_rows(0, 6, 3)]
    assert res.decisions is None and res.traceback_tree(state=3).tolist() == want
    with pytest.raises(ContractError, match="declares decision_bits = 0"):
        res.decision(0, 6)

    class Plain(Chain):  # no state, no decisions: nothing to walk
        decision_bits = 0
        cell = staticmethod(Lengths.cell)

    with pytest.raises(ContractError, match="declares decision_bits = 0: there is nothing to trace back"):
        sweep(Plain(), backend="cpu", progress=False).traceback_tree()
    values = sweep(Heap(5), backend="cpu", progress=False, traceback=False)  # decisions dropped
    with pytest.raises(ContractError, match="swept with traceback=False"):
        values.traceback_tree(state=1)


def test_state_mistakes_are_clear_errors():
    res = sweep(Chain(5), backend="cpu", progress=False)
    with pytest.raises(
        ContractError, match=r"Chain.traceback_tree\(root, state=...\).*traceback_state = False"
    ):
        res.traceback_tree(state=1)
    heap = sweep(Heap(5), backend="cpu", progress=False)
    with pytest.raises(InputError, match="state: 1.5: the root's state must be an integer"):
        heap.traceback_tree(state=1.5)
    with pytest.raises(InputError, match="must fit an int64"):
        heap.traceback_tree(state=2**63)

    class Four(Heap):  # the stateless return
        @staticmethod
        def back(i, j, d, s, T):
            return -1, -1, -1, -1

    with pytest.raises(
        ContractError,
        match=r"Four.back\(0, 4, 2, 7, T\) returned \(-1, -1, -1, -1\), a tuple of 4.*6 integers",
    ):
        sweep(Four(), backend="cpu", progress=False).traceback_tree(state=7)

    class Outside(Heap):  # a child past the interval, at the second level
        @staticmethod
        def back(i, j, d, s, T):
            if i == j:
                return -1, -1, 0, -1, -1, 0
            return i, i + d, s + 1, i + d + 1, j + (s == 1), s + 1

    with pytest.raises(
        ContractError, match=r"Outside.back\(0, 2, 1, 1, T\) returned the child \(2, 3\).*inside"
    ):
        sweep(Outside(), backend="cpu", progress=False).traceback_tree(state=0)

    class Overlapping(Heap):  # both halves less one end: refused at n(n+1)/2 intervals
        @staticmethod
        def back(i, j, d, s, T):
            if i == j:
                return -1, -1, 0, -1, -1, 0
            return i, j - 1, s, i + 1, j, s

    with pytest.raises(ContractError, match="more than 36 intervals.*children overlap"):
        sweep(Overlapping(8), backend="cpu", progress=False).traceback_tree()

    class Below(Heap):  # reads under the diagonal (an empty interval): refused at the root, in Python
        @staticmethod
        def back(i, j, d, s, T):
            return -1, -1, T[j, i], -1, -1, 0

    with pytest.raises(ContractError, match=r"Below.back at \(0, 4\) in state 2 read T\[4, 0\]: .*stored"):
        sweep(Below(), backend="cpu", progress=False).traceback_tree(state=2)

    class Writes(Heap):
        @staticmethod
        def back(i, j, d, s, T):
            T[i, j] = 0
            return -1, -1, 0, -1, -1, 0

    writes = sweep(Writes(), backend="cpu", progress=False)
    with pytest.raises(ContractError, match=r"Writes.back at \(0, 4\) in state 0 wrote T.*read-only"):
        writes.traceback_tree()

    class WritesBelow(Heap):  # writes where the root's probe does not see it: numba refuses to compile
        @staticmethod
        def back(i, j, d, s, T):
            if i == j:
                T[i, j] = 0
                return -1, -1, 0, -1, -1, 0
            return i, i + d, s, i + d + 1, j, s

    with pytest.raises(ContractError, match="WritesBelow.back does not compile.*readonly"):
        sweep(WritesBelow(), backend="cpu", progress=False).traceback_tree()


def test_the_checked_mode_walks_a_state_tree_in_python():
    """A checked sweep's result walks its tree in plain Python first: a read that only a node below
    the root makes (an empty interval, fill compiled) is refused naming the node and its state."""

    class Deep(Heap):  # reads under the diagonal below the root; divides by 0 in state 7
        @staticmethod
        def back(i, j, d, s, T):
            if i == j:
                return -1, -1, 0, -1, -1, 0
            k = i + d
            if i + 1 == j:
                return i, i, s + T[j, i], j, j, s  # T[j, i]: under the diagonal
            return i, k // (s - 7) if s == 7 else k, 2 * s + 1000 * T[i, k], k + 1, j, 2 * s + 1

    assert sweep(Deep(4), backend="cpu", progress=False).traceback_tree(state=5).shape == (7, 4)
    checked = sweep(Deep(4), backend="cpu", progress=False, check=True)
    with pytest.raises(ContractError, match=r"Deep.back at \(0, 1\) in state 2010 read T\[1, 0\]"):
        checked.traceback_tree(state=5)
    with pytest.raises(ContractError, match=r"Deep.back at \(0, 3\) raised ZeroDivisionError"):
        checked.traceback_tree(state=7)
    fine = sweep(Heap(6), backend="cpu", progress=False, check=True)
    assert fine.stats.extra["checked"] == 21
    assert fine.traceback_tree(state=2).tolist() == heap_rows(0, 5, 2)
