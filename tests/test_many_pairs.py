"""sweep_many(template, queries=, choices=): pairs of sequences read in bulk (gpudp.many.pairs),
against the same batch given as one object a pair, on the cpu and in the CUDA simulator; the sides'
forms; what refuses such a batch."""

import numpy as np
import pytest
from examples_loader import load_example
from hypothesis import given, settings
from hypothesis import strategies as st

import gpudp.many
from gpudp import GridRecurrence, sweep_many
from gpudp.errors import ContractError, InputError

SW = load_example("local_alignment")
MANY = load_example("many_alignments")


class Weighted(GridRecurrence):
    """Symbols of any integer type, a 2-D table of scores shared by every pair (a data array of the
    template), and no reduction: row i, column j score table[a[i] % 3, b[j] % 3]."""

    value_dtype = np.int64
    decision_bits = 2
    symbols = True

    def __init__(self, a, b, table):
        self.a, self.b, self.table = np.asarray(a), np.asarray(b), table

    def shape(self):
        return len(self.a), len(self.b)

    def row_symbols(self):
        return self.a

    def col_symbols(self):
        return self.b

    def data(self):
        return (self.table,)

    @staticmethod
    def cell(i, j, up, left, diag, ri, cj, table):
        best, how = diag + table[ri % 3, cj % 3], 0
        if up - 1 > best:
            best, how = up - 1, 1
        if left - 1 > best:
            best, how = left - 1, 2
        return best, how

    @staticmethod
    def boundary(i, j, table):
        return -(i + j + 2)

    @staticmethod
    def back(i, j, how, table):
        return (i - 1, j - 1) if how == 0 else (i - 1, j) if how == 1 else (i, j - 1)


TABLE = np.array([[3, -1, 0], [-1, 2, -2], [0, -2, 4]], np.int64)


def same(a, b, paths: bool):
    assert a.error is None and b.error is None, (a.error, b.error)
    assert a.shape == b.shape
    assert np.array_equal(a.last_row, b.last_row) and np.array_equal(a.last_col, b.last_col)
    assert (a.best_value, a.best_cell) == (b.best_value, b.best_cell)
    if paths:
        assert np.array_equal(a.path, b.path)


def words(n, length, alphabet="ACGT"):
    return st.lists(st.text(alphabet=alphabet, max_size=length), min_size=0, max_size=n)


@settings(max_examples=6, deadline=None)
@given(q=words(5, 9), c=words(4, 9), traceback=st.booleans(), local=st.booleans())
def test_cross_equals_the_objects(q, c, traceback, local):
    make = SW.SmithWaterman if local else MANY.GlobalAlignment
    res = sweep_many(make("A", "C"), queries=q, choices=c, backend="cpu", traceback=traceback)
    objs = sweep_many([make(x, y) for x in q for y in c], backend="cpu", traceback=traceback)
    assert len(res) == len(q) * len(c) and res.stats.extra["instances"] == len(res)
    for a, b in zip(res, objs, strict=True):
        same(a, b, traceback)


@settings(max_examples=3, deadline=None)
@given(n=st.integers(0, 4), seed=st.integers(0, 2**32 - 1))
def test_sides_of_every_form(n, seed):
    """A 2-D array of rows, 1-D arrays of one dtype, bytes, and zip; a shared 2-D table."""
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, 250, (n, 6))
    arrays = [rng.integers(-5, 9, rng.integers(0, 8)) for _ in range(n)]
    for q, c, pairs in (
        (rows, arrays, "cross"),
        (arrays, rows, "zip"),
        ([x.astype(np.uint8).tobytes() for x in rows], rows, "cross"),
    ):
        qs = [np.frombuffer(x, np.uint8).astype(np.int64) if isinstance(x, bytes) else x for x in q]
        pick = [(x, y) for x in qs for y in c] if pairs == "cross" else list(zip(qs, c, strict=True))
        res = sweep_many(Weighted([1], [2], TABLE), queries=q, choices=c, pairs=pairs, backend="cpu")
        objs = sweep_many([Weighted(x, y, TABLE) for x, y in pick], backend="cpu")
        assert len(res) == len(objs)
        for a, b in zip(res, objs, strict=True):
            same(a, b, True)


def test_text_by_code_point():
    """Non-ASCII text is read by code point: the same pairs as arrays of code points."""
    q, c = ["héllo", "ωx", ""], ["hello", "ωω", "x"]
    res = sweep_many(Weighted([1], [2], TABLE), queries=q, choices=c, backend="cpu")
    code = [np.array([ord(ch) for ch in s], np.int64) for s in (*q, *c)]
    objs = sweep_many([Weighted(x, y, TABLE) for x in code[:3] for y in code[3:]], backend="cpu")
    for a, b in zip(res, objs, strict=True):
        same(a, b, True)


def test_pairs_too_large_for_the_batch_go_to_sweep(monkeypatch):
    """A pair past MAX_BATCH_CELLS is swept alone, from an instance object made for it."""
    monkeypatch.setattr(gpudp.many, "MAX_BATCH_CELLS", 20)
    q, c = ["ACGTTGCA", "AC"], ["ACGTA", "TTGCAAC", "G"]
    res = sweep_many(SW.SmithWaterman("A", "C"), queries=q, choices=c, backend="cpu", traceback=False)
    objs = sweep_many([SW.SmithWaterman(x, y) for x in q for y in c], backend="cpu", traceback=False)
    assert res.stats.extra["alone"] == objs.stats.extra["alone"] > 0
    for a, b in zip(res, objs, strict=True):
        same(a, b, False)


@pytest.mark.sim
def test_cross_on_cuda():
    """The simulator: values (a warp a pair) and paths (the block kernel)."""
    q, c = ["ACGTA", "", "GATTACA"], ["TAC", "GGATC"]
    for tb in (False, True):
        res = sweep_many(SW.SmithWaterman("A", "C"), queries=q, choices=c, backend="cuda", traceback=tb)
        objs = sweep_many([SW.SmithWaterman(x, y) for x in q for y in c], backend="cpu", traceback=tb)
        for a, b in zip(res, objs, strict=True):
            same(a, b, tb)


def test_refusals():
    tmpl = MANY.GlobalAlignment("A", "C")
    with pytest.raises(InputError, match=r"queries\[2\]"):
        sweep_many(tmpl, queries=["AC", "G", b"T"], choices=["A"])
    with pytest.raises(InputError, match="choices"):
        sweep_many(tmpl, queries=["AC"], choices="ACGT")
    with pytest.raises(InputError, match="give both"):
        sweep_many(tmpl, queries=["AC"])
    with pytest.raises(InputError, match="zip"):
        sweep_many(tmpl, queries=["AC", "G"], choices=["A"], pairs="zip")
    with pytest.raises(InputError, match="pairs"):
        sweep_many(tmpl, queries=["AC"], choices=["A"], pairs="all")
    with pytest.raises(InputError, match="one grid recurrence instance"):
        sweep_many([tmpl], queries=["AC"], choices=["A"])
    with pytest.raises(InputError, match=r"choices\[1\]: a 2-d array of int8: a sequence must be 1-D"):
        sweep_many(tmpl, queries=["AC"], choices=[np.zeros(3, np.int8), np.zeros((2, 2), np.int8)])
    with pytest.raises(InputError, match=r"choices\[1\]: a 1-d array of int16: choices\[0\] is of int8"):
        sweep_many(tmpl, queries=["AC"], choices=[np.zeros(3, np.int8), np.zeros(2, np.int16)])
    with pytest.raises(
        InputError, match=r"queries\[0\]: a 1-d array of complex128: symbols are integers or reals"
    ):
        sweep_many(tmpl, queries=[np.zeros(3, complex)], choices=["A"])
    with pytest.raises(InputError, match=r"queries: a 2-D array of <U1: symbols are integers or reals"):
        sweep_many(tmpl, queries=np.array([["A"]]), choices=["A"])

    class NoSymbols(GridRecurrence):
        value_dtype = np.int64

        def shape(self):
            return 1, 1

        @staticmethod
        def cell(i, j, up, left, diag):
            return up + 1

    with pytest.raises(ContractError, match="symbols = True"):
        sweep_many(NoSymbols(), queries=["A"], choices=["C"])


@settings(max_examples=3, deadline=None)
@given(q=words(3, 8), c=words(3, 8), gap=st.integers(0, 3))
def test_example_score_all(q, c, gap):
    """examples/many_alignments.py's score_all (the pairs form) against its align_many (objects)."""
    scores, _ = MANY.score_all(q, c, 2, -1, gap, backend="cpu")
    pairs = [(x, y) for x in q for y in c]
    want = [s for s, _ in MANY.align_many(pairs, 2, -1, gap, backend="cpu")[0]]
    assert scores.shape == (len(q), len(c)) and scores.reshape(-1).tolist() == want
