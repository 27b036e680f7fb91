"""Record cells of interval recurrences (gpudp.interval.records): the cell and a stateful back read
``T[a, b]`` as a tuple in field order; the result's table is a structured array. Against plain-Python
references on the cpu backend and, tiny, in the CUDA simulator; checked mode; the errors."""

from __future__ import annotations

import numpy as np
import pytest
from examples_loader import load_example
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import ContractError, InputError, IntervalRecurrence, sweep, sweep_many

SIM = pytest.mark.sim
BACKENDS = ["cpu", pytest.param("cuda", marks=SIM)]

# ---------------------------------------------------------------------------------------------
# (a) boolean parenthesization: the ways to parenthesize v0 op0 v1 ... to true and to false
# ---------------------------------------------------------------------------------------------

AND, OR, XOR = 0, 1, 2


def combine(op, a, b):
    return a & b if op == AND else a | b if op == OR else a ^ b


class BoolParen(IntervalRecurrence):
    """(t, f): the parenthesizations of operands i..j that evaluate to true, to false; back (with
    the wanted truth value as the state) picks a split and the children's values that give it."""

    value_dtype = np.dtype([("t", np.int64), ("f", np.int64)])
    decision_bits = 0
    traceback_state = True

    def __init__(self, expr):
        self.vals = np.array([c == "T" for c in expr[::2]], np.int64)
        self.ops = np.array(["&|^".index(c) for c in expr[1::2]], np.int64)

    def size(self):
        return len(self.vals)

    def data(self):
        return self.vals, self.ops

    @staticmethod
    def cell(i, j, T, vals, ops):
        if i == j:
            return vals[i], 1 - vals[i]
        t = 0
        f = 0
        for k in range(i, j):
            lt, lf = T[i, k]
            rt, rf = T[k + 1, j]
            if ops[k] == AND:
                t += lt * rt
                f += lf * rf + lt * rf + lf * rt
            elif ops[k] == OR:
                t += lt * rt + lt * rf + lf * rt
                f += lf * rf
            else:
                t += lt * rf + lf * rt
                f += lt * rt + lf * rf
        return t, f

    @staticmethod
    def back(i, j, decision, state, T, vals, ops):
        for k in range(i, j):
            for a in range(2):
                for b in range(2):
                    r = (a & b) if ops[k] == AND else (a | b) if ops[k] == OR else (a ^ b)
                    left = T[i, k][0] if a == 1 else T[i, k][1]
                    right = T[k + 1, j][0] if b == 1 else T[k + 1, j][1]
                    if r == state and left > 0 and right > 0:
                        return i, k, a, k + 1, j, b
        return -1, -1, 0, -1, -1, 0


def bool_counts(expr):
    """(true, false) parenthesizations of the whole expression, by plain recursion."""
    vals, ops = [c == "T" for c in expr[::2]], ["&|^".index(c) for c in expr[1::2]]

    def count(i, j):
        if i == j:
            return (1, 0) if vals[i] else (0, 1)
        t = f = 0
        for k in range(i, j):
            (lt, lf), (rt, rf) = count(i, k), count(k + 1, j)
            for a, x in ((1, lt), (0, lf)):
                for b, y in ((1, rt), (0, rf)):
                    if combine(ops[k], a, b):
                        t += x * y
                    else:
                        f += x * y
        return t, f

    return count(0, len(vals) - 1)


def check_witness(expr, rows, want):
    """The tree's rows parenthesize the expression so that it evaluates to ``want``: each leaf has
    its operand's value, each inner node the value its operator gives its children's."""
    vals, ops = [int(c == "T") for c in expr[::2]], ["&|^".index(c) for c in expr[1::2]]
    n = len(vals)
    value = {(int(i), int(j)): int(s) for i, j, _, s in rows}
    assert len(rows) == 2 * n - 1 and value[0, n - 1] == want
    for (i, j), s in value.items():
        if i == j:
            assert s == vals[i]
            continue
        (k,) = [k for k in range(i, j) if (i, k) in value and (k + 1, j) in value]
        assert combine(ops[k], value[i, k], value[k + 1, j]) == s


def exprs(max_operands):
    return st.integers(1, max_operands).flatmap(
        lambda n: st.tuples(
            st.text("TF", min_size=n, max_size=n), st.text("&|^", min_size=n - 1, max_size=n - 1)
        ).map(lambda vo: "".join(v + o for v, o in zip(vo[0], vo[1] + " ", strict=True))[:-1])
    )


def check_bool(expr, backend, **opts):
    res = sweep(BoolParen(expr), backend=backend, progress=False, **opts)
    n = len(expr) // 2 + 1
    assert res.stats.backend == backend
    assert res.table.dtype == BoolParen.value_dtype
    t, f = bool_counts(expr)
    assert tuple(res.value(0, n - 1)) == (t, f)
    assert res.value(0, n - 1)["t"] == res.table["t"][0, n - 1] == t
    for want, ways in ((1, t), (0, f)):
        if ways:
            check_witness(expr, res.traceback_tree(state=want), want)


@settings(max_examples=20)
@given(exprs(10))
def test_bool_paren_cpu(expr):
    check_bool(expr, "cpu")


@SIM
def test_bool_paren_sim():
    for expr in ("T", "F^T", "T|F&T^T", "T^F&T|F&F"):
        check_bool(expr, "cuda")


@pytest.mark.parametrize("backend", BACKENDS)
def test_bool_paren_checked(backend):
    check_bool("T|F&T^F", backend, check=True)


def test_record_cell_reading_outside_is_caught():
    class Outside(BoolParen):
        @staticmethod
        def cell(i, j, T, vals, ops):
            if i == j:
                return vals[i], 1 - vals[i]
            return T[i + 1, j + 1]  # not inside (i, j)

    with pytest.raises(ContractError, match="read T"):
        sweep(Outside("T|F&T^F"), backend="cpu", check=True)


# ---------------------------------------------------------------------------------------------
# (b) matrix chain with a record of int32 and float64: the cost and the number of optimal orders
# ---------------------------------------------------------------------------------------------


class ChainWays(load_example("matrix_chain").MatrixChain):
    """The example's matrix chain (its instance, its back) with a record cell: the cost (int32) and
    the number of orders that attain it (float64)."""

    value_dtype = np.dtype([("cost", np.int32), ("ways", np.float64)])

    @staticmethod
    def cell(i, j, T, p):
        if i == j or j >= T.shape[1]:  # (T.shape reads as the table's)
            return (0, 1.0), 0
        best = -1
        ways = 0.0
        split = i
        for k in range(i, j):
            lc, lw = T[i, k]
            rc, rw = T[k + 1, j]
            c = lc + rc + p[i] * p[k + 1] * p[j + 1]
            if best < 0 or c < best:
                best, ways, split = c, lw * rw, k
            elif c == best:
                ways += lw * rw
        return (best, ways), split


def chain_ways(p):
    n = len(p) - 1
    cost, ways = {}, {}
    for i in range(n):
        cost[i, i], ways[i, i] = 0, 1
    for length in range(2, n + 1):
        for i in range(n - length + 1):
            j = i + length - 1
            cands = [(cost[i, k] + cost[k + 1, j] + p[i] * p[k + 1] * p[j + 1], k) for k in range(i, j)]
            cost[i, j] = min(c for c, _ in cands)
            ways[i, j] = sum(ways[i, k] * ways[k + 1, j] for c, k in cands if c == cost[i, j])
    return cost, ways


def tree_cost(rows, p):
    return sum(p[i] * p[k + 1] * p[j + 1] for i, j, k in rows if i < j)


def check_chain(p, backend):
    res = sweep(ChainWays(p), backend=backend, progress=False)
    assert res.stats.backend == backend
    cost, ways = chain_ways(p)
    n = len(p) - 1
    assert res.table["cost"].dtype == np.int32 and res.table["ways"].dtype == np.float64
    for i in range(n):
        for j in range(i, n):
            assert tuple(res.value(i, j)) == (cost[i, j], ways[i, j])
    rows = res.traceback_tree()
    assert tree_cost(rows.tolist(), p) == cost[0, n - 1]
    return res


@settings(max_examples=20)
@given(st.lists(st.sampled_from([1, 2, 3, 5, 10]), min_size=2, max_size=14))
def test_chain_ways_cpu(p):  # small dimensions from a few values: many ties, many optimal orders
    res = check_chain(p, "cpu")
    if len(p) > 2:
        assert res.stats.extra["column_reads"] == "a column-major copy"  # T[k + 1, j] down a column


def test_values_only_keeps_the_same_table():
    p = [2, 3, 2, 3, 2, 1, 2]
    res = sweep(ChainWays(p), backend="cpu", progress=False, traceback=False)
    assert res.decisions is None and res.table.dtype == ChainWays.value_dtype
    np.testing.assert_array_equal(res.table, check_chain(p, "cpu").table)


def test_chain_ways_long_diagonals_in_parallel():
    """Diagonals long enough for the CPU's parallel loop (gpudp.interval.table.SERIAL_WORK)."""
    p = np.random.default_rng(7).choice([1, 2, 3], 185).tolist()
    res = sweep(ChainWays(p), backend="cpu", progress=False)
    cost, ways = chain_ways(p)
    assert res.table["cost"][0, 183] == cost[0, 183]
    assert res.table["ways"][0, 183] == pytest.approx(ways[0, 183], rel=1e-9)
    assert tree_cost(res.traceback_tree().tolist(), p) == cost[0, 183]


@pytest.mark.parametrize("check", [False, True])
def test_a_fill_of_one_number_a_field(check):
    class Filled(ChainWays):
        fill = (-1, 0.5)

    res = sweep(Filled([2, 3, 4, 5]), backend="cpu", progress=False, check=check)
    assert tuple(res.table[1, 0]) == (-1, 0.5)  # below the diagonal: the fill, field by field
    assert tuple(res.value(0, 2)) == tuple(check_chain([2, 3, 4, 5], "cpu").value(0, 2))


@SIM
def test_chain_ways_sim():
    check_chain([2, 3, 2, 3, 2, 1, 2], "cuda")


@SIM
def test_record_cells_run_a_thread_a_cell_on_the_gpu():
    from gpudp.interval.cuda import warp_cell

    assert "record" in warp_cell(ChainWays)


def test_plain_python_views_give_tuples():
    from gpudp.interval.records import RecordTable
    from gpudp.interval.table import ProbeView, TableView

    table = np.zeros((3, 3), ChainWays.value_dtype)
    table[0, 1] = (7, 2.5)
    for view in (RecordTable(table), ProbeView(0, 2, 3, table=table), TableView("C", table, 0, 2, 0)):
        got = view[0, 1]
        assert type(got) is tuple and got == (7, 2.5) and view.shape == (3, 3)


# ---------------------------------------------------------------------------------------------
# (d) the errors
# ---------------------------------------------------------------------------------------------


def test_a_cell_returning_the_wrong_arity_is_refused():
    class Three(BoolParen):
        @staticmethod
        def cell(i, j, T, vals, ops):
            return vals[i], 0, 1

    with pytest.raises(ContractError, match=r"Three.cell returned .*a tuple of 2 numbers"):
        sweep(Three("T|F"), backend="cpu")


def test_a_field_of_a_type_not_allowed_is_refused():
    class Small(BoolParen):
        value_dtype = np.dtype([("t", np.int64), ("f", np.int16)])

    with pytest.raises(ContractError, match="field 'f' has type int16"):
        sweep(Small("T|F"), backend="cpu")


def test_a_float_into_an_int_field_on_some_path_is_refused():
    class Halves(ChainWays):
        @staticmethod
        def cell(i, j, T, p):
            if i == j:
                return (0, 1.0), 0  # what the first probe sees: fine
            c, w = T[i, i]
            return (c / 2, w), i  # a float cost on this path

    with pytest.raises(ContractError, match="returns a float64 as field 'cost' of the value on some path"):
        sweep(Halves([2, 3, 4]), backend="cpu")


def test_the_host_keeps_a_record_table_twice(monkeypatch):
    """The fields' tables and the structured result: a table that fits once but not twice is refused
    before anything is allocated."""
    import gpudp.checks

    n = 2000
    once = n * n * ChainWays.value_dtype.itemsize + n * n * 2  # the table and 16-bit decisions
    monkeypatch.setattr(gpudp.checks, "available_memory", lambda: once + 1000)
    with pytest.raises(InputError, match="twice on the host"):
        sweep(ChainWays([2] * (n + 1)), backend="cpu")


def helper(T, i, j):
    return T[i, j]


@pytest.mark.parametrize("how", ["helper", "row"])
def test_a_table_read_other_than_t_a_b_is_refused(how):
    class Passes(BoolParen):
        @staticmethod
        def cell(i, j, T, vals, ops):
            if i == j:
                return vals[i], 1 - vals[i]
            return helper(T, i, j - 1)

    class Row(BoolParen):
        @staticmethod
        def cell(i, j, T, vals, ops):
            if i == j:
                return vals[i], 1 - vals[i]
            return T[i][j - 1], 0

    cls = Passes if how == "helper" else Row
    with pytest.raises(ContractError, match=rf"{cls.__name__}.cell: value_dtype is a record .* line 5"):
        sweep(cls("T|F&T"), backend="cpu")


def test_a_record_cell_without_source_is_refused():
    ns = {}
    exec("def cell(i, j, T):\n    return (1, 0) if i == j else T[i, i]\n", ns)  # no file, no lines

    class NoSource(IntervalRecurrence):
        value_dtype = BoolParen.value_dtype
        cell = staticmethod(ns["cell"])

        def size(self):
            return 3

    with pytest.raises(ContractError, match=r"NoSource.cell: .* failed: no source"):
        sweep(NoSource(), backend="cpu")


def test_sweep_many_refuses_record_cells():
    with pytest.raises(ContractError, match="BoolParen.*one at a time"):
        sweep_many([BoolParen("T|F"), BoolParen("F")], backend="cpu")
