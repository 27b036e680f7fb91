"""Batches and cross products from StringZilla's ``Strs`` (gpudp.problems.lcs.arrow, issue 38): read
from its tape and offsets, bytes compared byte by byte, every value equal to the textbook tables'
on the same bytes; slices, splits, sorted and shuffled copies; a Strs against bytes, Arrow binaries
and lists; against Arrow strings refused."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cdist import lev_ref  # the textbook tables, in pure Python
from test_lcs import lcs_length as lcs_ref

from gpudp import InputError
from gpudp.problems import edit_distance, lcs
from gpudp.problems.lcs import arrow

sz = pytest.importorskip("stringzilla")

SOLVERS = [(lcs, lcs_ref), (edit_distance, lev_ref)]
words = st.lists(st.binary(max_size=10), min_size=1, max_size=10)


def _forms(values: list[bytes]):
    """``values`` as Strs made four ways, each with the bytes it holds: from a list, by a split of
    one string (a tape of its own), a slice of a longer Strs, and a sorted copy."""
    sep = b"\x00"  # absent from the drawn words below (filtered)
    whole = sz.Strs([b"pad"] + values + [b"end"])
    yield sz.Strs(values), values
    yield sz.Str(sep.join(values)).split(sep), values
    yield whole[1 : 1 + len(values)], values
    yield sz.Strs(values).sorted(), sorted(values)


@settings(max_examples=10)
@given(data=st.data(), a=words)
def test_pairs_and_cross_products_equal_the_reference(data, a):
    a = [x.replace(b"\x00", b"") for x in a]
    b = data.draw(st.lists(st.binary(max_size=10), min_size=len(a), max_size=len(a)))
    for A, av in _forms(a):
        assert list(arrow.side(A, "A")) == av  # (not the Strs' items: StringZilla 5.3 crashes on some)
        B = sz.Strs(b)
        for solver, ref in SOLVERS:
            res = solver.solve_many((A, B), backend="cpu")
            assert res.values.tolist() == [ref(x, y) for x, y in zip(av, b, strict=True)]
            got = solver.cdist(A, b, backend="cpu")  # a Strs beside a list of bytes
            assert got.tolist() == [[ref(x, y) for y in b] for x in av]


def test_the_layout_is_read_without_a_copy_per_string():
    strs = sz.Str(b"GATTACA TACCA  AB").split(b" ")
    symbols, offsets = arrow.side(strs, "x").packed()
    assert offsets.tolist() == [0, 7, 12, 12, 14] and symbols.tobytes() == b"GATTACATACCAAB"
    assert arrow.side(sz.Strs([]), "x").packed()[1].tolist() == [0]


def test_a_strs_beside_arrow():
    pa = pytest.importorskip("pyarrow")
    a, b = [b"ACGT", b"GA"], [b"CGT", b"AGA"]
    res = lcs.solve_many((sz.Strs(a), pa.array(b)), backend="cpu")
    assert res.values.tolist() == [3, 2]
    with pytest.raises(InputError, match="a str compares only with a str"):
        lcs.solve_many((sz.Strs(a), pa.array(["CGT", "AGA"])), backend="cpu")


def test_what_cannot_be_compared_is_refused():
    with pytest.raises(InputError, match="2 sequences against 1"):
        lcs.solve_many((sz.Strs([b"A", b"B"]), sz.Strs([b"A"])), backend="cpu")
    with pytest.raises(InputError, match="a str compares only with a str"):
        edit_distance.cdist(sz.Strs([b"A"]), ["A"], backend="cpu")


def test_a_strs_whose_buffers_are_not_its_layout_is_refused():
    class Broken:  # what a Strs reports, its offsets past its tape
        def __init__(self):
            import ctypes

            self._off = (ctypes.c_uint32 * 3)(0, 2, 9)
            self._tape = ctypes.create_string_buffer(b"ABC")
            self.offsets_are_large, self.offsets_nbytes = False, 12
            self.offsets_address, self.tape_address = (
                ctypes.addressof(self._off),
                ctypes.addressof(self._tape),
            )
            self.tape_nbytes = 3

        def __len__(self):
            return 2

    with pytest.raises(InputError, match="go past its tape"):
        arrow.StrsSequences(Broken(), "queries").packed()
    b = Broken()
    b.offsets_nbytes = 8
    with pytest.raises(InputError, match="not its layout"):
        arrow.StrsSequences(b, "queries").packed()


@pytest.mark.sim
def test_strs_pairs_on_cuda():
    a, b = [b"ACGT", b"GGA", b""], [b"CGT", b"GA", b"T"]
    res = lcs.solve_many((sz.Strs(a), sz.Strs(b)), backend="cuda")
    assert res.values.tolist() == [lcs_ref(x, y) for x, y in zip(a, b, strict=True)]
