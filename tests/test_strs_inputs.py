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


class Layout:
    """What a Strs reports of its buffers (``offsets``: ``len + 1`` values, 64-bit with ``large``,
    as StringZilla keeps a tape past 4 GiB), over buffers of our own."""

    def __init__(self, offsets, tape: bytes, large=False):
        import ctypes

        kind = ctypes.c_uint64 if large else ctypes.c_uint32
        self._off = (kind * len(offsets))(*offsets)
        self._tape = ctypes.create_string_buffer(tape, len(tape) or 1)
        self.offsets_are_large, self.offsets_nbytes = large, ctypes.sizeof(self._off)
        self.offsets_address, self.tape_address = ctypes.addressof(self._off), ctypes.addressof(self._tape)
        self.tape_nbytes, self._n = len(tape), len(offsets) - 1

    def __len__(self):
        return self._n


@pytest.mark.parametrize("large", [False, True])
def test_both_offset_widths_are_read(large):
    symbols, offsets = arrow.StrsSequences(Layout([3, 5, 5, 8], b"xxxABCDEF", large), "q").packed()
    assert symbols.tobytes() == b"ABCDE" and offsets.tolist() == [0, 2, 2, 5]  # a slice: from 3


@pytest.mark.parametrize("large", [False, True])
def test_a_strs_whose_buffers_are_not_its_layout_is_refused(large):
    with pytest.raises(InputError, match="go past its tape"):
        arrow.StrsSequences(Layout([0, 2, 9], b"ABC", large), "queries").packed()
    with pytest.raises(InputError, match="do not rise"):
        arrow.StrsSequences(Layout([0, 2, 1], b"ABC", large), "queries").packed()
    short = Layout([0, 2, 3], b"ABC", large)
    short.offsets_nbytes //= 2
    with pytest.raises(InputError, match="not its layout"):
        arrow.StrsSequences(short, "queries").packed()


@pytest.mark.sim
def test_strs_pairs_on_cuda():
    a, b = [b"ACGT", b"GGA", b""], [b"CGT", b"GA", b"T"]
    res = lcs.solve_many((sz.Strs(a), sz.Strs(b)), backend="cuda")
    assert res.values.tolist() == [lcs_ref(x, y) for x, y in zip(a, b, strict=True)]
