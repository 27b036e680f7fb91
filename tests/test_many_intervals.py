"""sweep_many of interval recurrences (gpudp.many.intervals) against gpudp.sweep instance by instance:
tables, values and trees (with decisions: matrix-chain order; with a state and no decisions: CYK's
parse trees), sizes down to 0 and 1, a decision too wide failing its instance alone; on the cpu
backend and in the CUDA simulator (tiny), and at real sizes on a GPU."""

import numpy as np
import pytest
from examples_loader import load_example
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import ContractError, InputError, IntervalRecurrence, sweep, sweep_many

MC = load_example("matrix_chain")
CYK = load_example("cyk_parse")


def check(recs, backend, traceback=True, state=None):
    """The batch's items equal each instance's single sweep (table, value, tree)."""
    res = sweep_many(recs, backend=backend, traceback=traceback, start_state=state)
    assert len(res) == len(recs) and not res.errors, res.errors
    values = res.values
    for rec, item, v in zip(recs, res, values, strict=True):
        n = rec.size()
        assert item.shape == (n, n)
        if n == 0:
            assert item.value is None and v is None and item.table.shape == (0, 0)
            continue
        ref = sweep(rec, backend="cpu")
        assert np.array_equal(item.table, ref.table)
        assert item.value == ref.value(0, n - 1) == v
        if traceback:
            s = None if state is None else state(rec, item.value)
            assert np.array_equal(item.path, ref.traceback_tree(state=s))
        else:
            assert item.path is None
    return res


dims = st.lists(st.integers(1, 40), min_size=1, max_size=12)


@settings(max_examples=6, deadline=None)
@given(st.lists(dims, min_size=1, max_size=6), st.booleans())
def test_matrix_chains_equal_sweep(batch, traceback):
    res = check([MC.MatrixChain(d) for d in batch], "cpu", traceback)
    assert res.stats.extra["batched"] == sum(len(d) > 1 for d in batch)


GRAMMAR = CYK.Grammar(CYK.PARENS)


def parens(words):
    return CYK.CYK(GRAMMAR.leaves(words), GRAMMAR.binary)


@settings(max_examples=6, deadline=None)
@given(st.lists(st.text("()", min_size=0, max_size=10), min_size=1, max_size=6))
def test_parse_trees_with_a_state_equal_sweep(texts):
    """CYK: no decisions, a tree walked with the nonterminal as its state (the start symbol, 0)."""
    check([parens(list(t)) for t in texts], "cpu", state=lambda rec, value: 0)


class Wide(IntervalRecurrence):
    """A decision of 2 bits that instance ``bad`` overflows at its whole interval."""

    value_dtype = np.int64
    decision_bits = 2

    def __init__(self, n, bad):
        self.n, self.bad = n, np.int64(bad)

    def size(self):
        return self.n

    def data(self):
        return (self.bad,)

    @staticmethod
    def cell(i, j, T, bad):
        if i == j:
            return 1, 0
        return T[i, j - 1] + T[i + 1, j], 5 if bad and i == 0 else 1

    @staticmethod
    def back(i, j, d, bad):
        return (i, j - 1, -1, -1) if i < j else (-1, -1, -1, -1)


def test_a_decision_too_wide_fails_its_instance_alone_and_errors_refuse():
    res = sweep_many([Wide(4, 0), Wide(4, 1), Wide(0, 1)], backend="cpu")
    assert res[0].error is None and res[0].value == 8
    assert "decision" in res[1].error and res[1].value is None
    assert res[2].value is None and res[2].error is None
    with pytest.raises(InputError, match=r"recs\[1\]: a CYK of cyk_parse .* one recurrence class"):
        sweep_many([Wide(3, 0), parens(list("()"))], backend="cpu")

    class NoBack(IntervalRecurrence):
        value_dtype = np.int64
        decision_bits = 1
        size, data, cell = Wide.size, Wide.data, staticmethod(Wide.cell)
        __init__ = Wide.__init__

    with pytest.raises(ContractError, match="defines no back"):
        sweep_many([NoBack(3, 0)], backend="cpu")
    assert sweep_many([NoBack(3, 0)], backend="cpu", traceback=False).values == [4]


@pytest.mark.sim
def test_interval_batches_in_the_simulator(monkeypatch):
    """A thread an instance, and (their size threshold lowered) a warp an instance where the cell's
    split-point loop can be shared: the matrix chain's can, CYK's (a loop in a loop) cannot."""
    import gpudp.many.intervals.cuda

    chains = [MC.MatrixChain(d) for d in ([3, 4, 5, 6], [2], [7, 1], [5, 2, 8, 3, 4])]
    check(chains, "cuda")
    monkeypatch.setattr(gpudp.many.intervals.cuda, "INTERVAL_WARP_FROM", 3)
    res = check(chains, "cuda")
    assert res.stats.extra["cuda"] == {"warp_instances": 2, "thread_instances": 1}
    res = check([parens(list(t)) for t in ("(())", "()(", "")], "cuda", state=lambda rec, value: 0)
    assert res.stats.extra["cuda"]["thread_instances"] == 2 and "warps_off" in res.stats.extra["cuda"]
    res = check([MC.MatrixChain([3, 4, 5])], "cuda", traceback=False)
    assert res.stats.backend == "cuda"


@pytest.mark.gpu
def test_gpu_interval_batches_equal_cpu():
    rng = np.random.default_rng(7)
    recs = [MC.MatrixChain(rng.integers(1, 100, rng.integers(1, 120))) for _ in range(300)]
    got, want = sweep_many(recs, backend="cuda"), sweep_many(recs, backend="cpu")
    assert got.stats.backend == "cuda" and got.values == want.values
    assert all(np.array_equal(g.path, c.path) for g, c in zip(got, want, strict=True))


def test_large_instances_are_swept_alone(monkeypatch):
    """Past MAX_CELLS (lowered here) an instance goes to gpudp.sweep: the same items."""
    import gpudp.many.intervals

    monkeypatch.setattr(gpudp.many.intervals, "MAX_CELLS", 20)
    res = check([MC.MatrixChain(d) for d in ([3, 4, 5, 6, 7, 8, 2], [2, 9], [5, 2, 8, 3, 4, 6])], "cpu")
    assert (res.stats.extra["alone"], res.stats.extra["batched"]) == (2, 1)
    res = check([parens(list("(()())")), parens(list("()"))], "cpu", state=lambda rec, value: 0)
    assert res.stats.extra["alone"] == 1


@pytest.mark.sim
def test_auto_keeps_large_unshared_cells_off_a_thread_an_instance():
    """The GPU declines (backend="auto" then takes the cpu) a batch of large instances whose cell no
    warp can share (CYK's loop in a loop); a shareable cell (matrix chain), or small instances, it
    takes."""
    from gpudp.many.intervals.cuda import declines

    big, small = np.full(4, 300), np.full(4, 40)
    cyk = type(parens(list("()"))._specialized())
    assert "a thread an instance" in declines(cyk, big) and "256 cells" in declines(cyk, big)
    assert declines(cyk, small) is None
    assert declines(type(MC.MatrixChain([2, 3, 4])._specialized()), big) is None
