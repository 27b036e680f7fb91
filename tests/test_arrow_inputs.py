"""Batches and cross products from Apache Arrow arrays (gpudp.problems.lcs.arrow, issue 38): read
from the arrays' buffers, every value equal to the textbook tables' on the same sequences as Python
str or bytes, including non-ASCII text, slices, chunks and the large types; nulls are their pairs'
errors; what cannot be compared is refused naming the argument."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cdist import lev_ref  # the textbook tables, in pure Python
from test_lcs import lcs_length as lcs_ref

from gpudp import InputError
from gpudp.problems import edit_distance, lcs

pa = pytest.importorskip("pyarrow")

SOLVERS = [(lcs, lcs_ref), (edit_distance, lev_ref)]
texts = st.lists(st.text(alphabet="ACGTé中", max_size=12), min_size=1, max_size=12)


def _arrow(values, large: bool, chunks: int):
    """``values`` (str or bytes) as an Arrow array of the matching type, sliced out of a longer one
    (an offset into its buffers), in ``chunks`` chunks where more than one."""
    binary = values and isinstance(values[0], bytes)
    t = (
        (pa.large_binary() if large else pa.binary())
        if binary
        else (pa.large_string() if large else pa.string())
    )
    pad = [values[0][:1]] * 2
    whole = pa.array(pad + list(values), t).slice(2)
    if chunks == 1:
        return whole
    cut = np.linspace(0, len(values), chunks + 1).astype(int)
    return pa.chunked_array([whole.slice(a, b - a) for a, b in zip(cut[:-1], cut[1:], strict=True)], t)


@settings(max_examples=10)
@given(
    data=st.data(),
    a=texts,
    as_bytes=st.booleans(),
    large=st.booleans(),
    chunks=st.sampled_from([1, 2, 3]),
)
def test_pairs_and_cross_products_equal_the_reference(data, a, as_bytes, large, chunks):
    b = data.draw(st.lists(st.text(alphabet="ACGTé", max_size=12), min_size=len(a), max_size=len(a)))
    if as_bytes:
        a, b = [x.encode() for x in a], [x.encode() for x in b]
    A, B = _arrow(a, large, chunks), _arrow(b, not large, 1)
    for solver, ref in SOLVERS:
        res = solver.solve_many((A, B), backend="cpu")
        assert res.values.tolist() == [ref(x, y) for x, y in zip(a, b, strict=True)]
        got = solver.cdist(A, b, backend="cpu")  # an Arrow side beside a list
        assert got.tolist() == [[ref(x, y) for y in b] for x in a]


def test_the_subsequence_from_arrow_pairs():
    a, b = ["ACGTTGCA", "ééAC"], ["TGCATGCA", "AéC"]
    res = lcs.solve_many((pa.array(a), pa.array(b)), backend="cpu", traceback=True)
    for (x, y), s in zip(zip(a, b, strict=True), res.solutions, strict=True):  # a common subsequence
        assert s.checked and len(s.solution) == s.value == lcs_ref(x, y)
        at = zip(s.details["indices_a"], s.details["indices_b"], s.solution, strict=True)
        assert all(x[i] == y[j] == c for i, j, c in at)
    assert res.values.tolist() == [lcs_ref(x, y) for x, y in zip(a, b, strict=True)]


def test_nulls_are_their_pairs_errors():
    res = lcs.solve_many((pa.array(["AC", None, "G"]), pa.array(["A", "C", None])), backend="cpu")
    assert res.values.tolist()[0] == 1 and sorted(res.errors) == [1, 2]
    assert "NoneType" in res.errors[1]


@pytest.mark.parametrize(
    "pairs, message",
    [
        ((pa.array(["A", "B"]), pa.array(["A"])), "2 sequences against 1"),
        ((pa.array(["A"]), pa.array([b"A"])), "a str compares only with a str"),
        ((pa.array([1, 2]), pa.array([1, 2])), "strings or binaries"),
    ],
)
def test_what_cannot_be_compared_is_refused(pairs, message):
    with pytest.raises(InputError, match=message):
        lcs.solve_many(pairs, backend="cpu")


def test_text_that_is_not_utf8_is_refused():
    bad = pa.Array.from_buffers(
        pa.string(), 1, [None, pa.py_buffer(np.array([0, 2], np.int32)), pa.py_buffer(b"\xff\xfe")]
    )
    with pytest.raises(InputError, match="not valid UTF-8"):
        lcs.cdist(bad, ["A"], backend="cpu")


@pytest.mark.sim
def test_arrow_pairs_on_cuda():
    a, b = ["ACGTé", "GGA", ""], ["CGTé", "GA", "T"]
    res = lcs.solve_many((pa.array(a), pa.array(b)), backend="cuda")
    assert res.values.tolist() == [lcs_ref(x, y) for x, y in zip(a, b, strict=True)]
