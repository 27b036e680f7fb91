"""Batches of LCS lengths (``lcs.solve_many``): the bit-parallel path against a plain-Python DP, on
the cpu and (tiny) in the CUDA simulator; pattern lengths across word boundaries; big alphabets;
per-pair errors; the cross-check of ``verify``. With ``traceback=True``: the stored column vectors
against the DP table bit by bit, every subsequence against the DP's length and checked common in
pure Python (all sequence types, word boundaries, empty and extreme pairs), a corrupted walk caught,
pairs too big for the store, chunks joined as Dask joins them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_lcs import lcs_length  # the textbook table, in pure Python

from gpudp import BatchResult, CheckError, InputError, solution
from gpudp.jit import njit
from gpudp.problems import edit_distance, lcs
from gpudp.problems.lcs import batch, bitparallel
from gpudp.solution import NoSolutions, ship

symbols = st.sampled_from([2, 4, 20, 256])


@st.composite
def batches(draw, max_len=150, max_pairs=12):
    sigma = draw(symbols)
    n = draw(st.integers(0, max_pairs))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        m, k = rng.integers(0, max_len + 1, 2)
        out.append(
            (
                rng.integers(0, sigma, m).astype(np.uint8 if sigma <= 256 else np.int64),
                rng.integers(0, sigma, k).astype(np.uint8 if sigma <= 256 else np.int64),
            )
        )
    return out


def reference(pairs):
    return [lcs_length(list(a), list(b)) for a, b in pairs]


@settings(max_examples=40)
@given(batches())
def test_cpu_lengths_match_the_reference(pairs):
    r = lcs.solve_many(pairs, backend="cpu", verify=1)
    assert r.values.tolist() == reference(pairs) and not r.errors
    assert r.stats.cells == sum(len(a) * len(b) for a, b in pairs)


@st.composite
def str_batches(draw, max_len=90, max_pairs=10):
    """Lists of (str, str): ASCII, or with code points past 255 (and a surrogate) mixed in; tuples and
    2-lists; lengths that do and do not need the pair turned round."""
    alphabet = draw(st.sampled_from(["AC", "ACGT", "ab\u00e9\u4e2d", "x\U0001f600\ud800y"]))
    text = st.text(alphabet=alphabet, max_size=max_len)
    pairs = draw(st.lists(st.tuples(text, text), max_size=max_pairs))
    return [list(p) if k % 3 == 2 else p for k, p in enumerate(pairs)]


@settings(max_examples=40)
@given(str_batches())
def test_lists_of_str_are_read_in_bulk_and_match_the_reference(pairs):
    """A list of (str, str) is read as two joined texts with offsets (sequences.bulk_pairs, no array
    per pair) and packed in one pass (bitparallel.pack_buffers): the lengths are the reference's, by
    code point, for both sequence solvers."""
    want = [lcs_length(list(a), list(b)) for a, b in pairs]
    assert lcs.solve_many(pairs, backend="cpu", verify=1).values.tolist() == want
    dist = edit_distance.solve_many(pairs, backend="cpu", verify=1).values.tolist()
    assert dist == [edit_distance.solve(a, b, backend="cpu").value for a, b in pairs]


@st.composite
def uniform_batches(draw, max_len=70, max_pairs=8):
    """Lists of pairs whose every first sequence is of one length and every second of one (empty
    included): str (ASCII, or code points past 255 mixed in) or bytes, as tuples and 2-lists."""
    form = draw(st.sampled_from(["AC", "ACGT", "ab\u00e9\u4e2d", "x\U0001f600\ud800y", b"ACGT", b"\x00\xff"]))
    la, lb = draw(st.integers(0, max_len)), draw(st.integers(0, max_len))
    n = draw(st.integers(1, max_pairs))

    def side(k):
        if isinstance(form, bytes):
            return st.lists(st.sampled_from(list(form)), min_size=k, max_size=k).map(bytes)
        return st.text(alphabet=form, min_size=k, max_size=k)

    pairs = draw(st.lists(st.tuples(side(la), side(lb)), min_size=n, max_size=n))
    return [list(p) if k % 3 == 2 else p for k, p in enumerate(pairs)]


@settings(max_examples=40)
@given(uniform_batches())
def test_lists_of_one_length_a_side_are_rows(pairs):
    """A list read in bulk whose sequences are of one length a side is two 2-D views
    (sequences.uniform_rows), packed as rows: the lengths are the reference's, by code point, for
    both sequence solvers."""
    from gpudp.problems.lcs.sequences import bulk_pairs, uniform_rows

    rows = uniform_rows(*bulk_pairs(pairs))
    assert [x.shape for x in rows] == [(len(pairs), len(pairs[0][0])), (len(pairs), len(pairs[0][1]))]
    want = [lcs_length(list(a), list(b)) for a, b in pairs]
    assert lcs.solve_many(pairs, backend="cpu", verify=1).values.tolist() == want
    dist = edit_distance.solve_many(pairs, backend="cpu", verify=1).values.tolist()
    assert dist == [edit_distance.solve(a, b, backend="cpu").value for a, b in pairs]


def test_a_batch_of_one_length_a_side_is_packed_as_rows(monkeypatch):
    """The batch packs such a list as rows (bitparallel.pack_arrays), any other bulk list with
    offsets (pack_buffers); both give the pairs' lengths."""
    from gpudp.problems.lcs.sequences import bulk_pairs, uniform_rows

    packed = []
    for name in ("pack_arrays", "pack_buffers"):
        fn = getattr(bitparallel, name)
        monkeypatch.setattr(
            bitparallel, name, lambda *a, _fn=fn, _name=name, **k: packed.append(_name) or _fn(*a, **k)
        )
    assert lcs.solve_many([("GATTACA", "TACC"), ("ACGTACG", "GGGG")], backend="cpu").values.tolist() == [3, 2]
    assert lcs.solve_many([("GATTACA", "TACC"), ("ACG", "GGGG")], backend="cpu").values.tolist() == [3, 1]
    assert lcs.solve_many([(b"", b"AB"), (b"", b"CD")], backend="cpu").values.tolist() == [0, 0]
    assert packed == ["pack_arrays", "pack_buffers", "pack_arrays"]
    assert uniform_rows(*bulk_pairs([("ab", "c"), ("cd", "")])) is None


def test_bulk_pairs_reads_only_pairs_of_two_sequences_of_one_form():
    from gpudp.problems.lcs.sequences import bulk_pairs

    a, a_off, b, b_off = bulk_pairs([("ab", "c"), ["", "\u00e9d"]])
    assert a.dtype == np.int32 and a.tolist() == [97, 98] and a_off.tolist() == [0, 2, 2]
    assert b.tolist() == [99, 0xE9, 100] and b_off.tolist() == [0, 1, 3]
    assert bulk_pairs([("ab", "cd")])[0].dtype == np.uint8  # ASCII: bytes, as encode() gives them

    x8, x64 = np.arange(3, dtype=np.uint8), np.arange(2, dtype=np.int64)
    a, a_off, b, b_off = bulk_pairs([(b"ab", b"c"), (b"", b"de")])
    assert a.dtype == np.uint8 and a.tobytes() == b"ab" and b_off.tolist() == [0, 1, 3]
    a, a_off, b, b_off = bulk_pairs([(x8, x64), (x8[:1], x64)])  # one dtype a side: promoted as a pair is
    assert a.dtype == b.dtype == np.int64 and a.tolist() == [0, 1, 2, 0] and b_off.tolist() == [0, 2, 4]
    others = ([], [("a", b"b")], [("a", "b", "c")], [("a",)], ["ab"], [("a", Text("b"))], (("a", "b"),))
    others += (
        [(x8, x8.astype(np.float64))],
        [(x8, x8.reshape(1, 3))],
        [(x8, x64), (x64, x8)],
        [(x8, [1, 2])],
    )
    for other in others:
        assert bulk_pairs(other) is None  # read pair by pair: a bad pair is that pair's own error
    r = lcs.solve_many([("ab", "b"), ("a", None), ("abc", "abc")], backend="cpu")
    assert r.values.tolist() == [1, -1, 3] and list(r.errors) == [1]


class Text(str):
    """A str subclass: read pair by pair, never from the object's memory."""


@st.composite
def lists_of_pairs(draw):
    """Lists that the object reader (strlists) may or may not read: mostly tuples and 2-lists of two
    str (ASCII with NUL and DEL, or text past it: Latin-1, the BMP, astral code points, a lone
    surrogate; empty ones) or of two bytes, among them a str beside bytes, a bytearray, a str
    subclass, None, 1- and 3-tuples and a str where a pair should be; half of them of one length a
    side, perhaps but for a pair or two."""
    chars = st.characters(max_codepoint=127)
    text = st.one_of(
        st.text(alphabet=chars, max_size=30),
        st.text(
            alphabet=st.sampled_from(["a", "\x00", "\xe9", "\xff", "\u4e2d", "\U0001f600", "\ud800"]),
            max_size=8,
        ),
    )
    other = st.one_of(st.binary(max_size=4).map(bytearray), st.builds(Text, text), st.none())
    good = st.one_of(st.tuples(text, text), st.tuples(st.binary(max_size=30), st.binary(max_size=30)))
    pair = st.one_of(
        good,
        good.map(list),
        st.tuples(text, other),
        st.tuples(text, st.binary(max_size=3)),
        st.tuples(text),
        st.tuples(text, text, text),
        text,
    )
    if draw(st.booleans()):  # of one length a side (the rows)
        la, lb = draw(st.integers(0, 20)), draw(st.integers(0, 20))
        good = st.one_of(
            st.tuples(st.text(chars, min_size=la, max_size=la), st.text(chars, min_size=lb, max_size=lb)),
            st.tuples(st.binary(min_size=la, max_size=la), st.binary(min_size=lb, max_size=lb)),
        )
        return draw(st.lists(st.one_of(good, good.map(list)), min_size=1, max_size=8)) + draw(
            st.lists(pair, max_size=2)
        )
    return draw(st.lists(st.one_of(good, pair), max_size=8))


def _readable(pair) -> bool:
    """A pair the object reader takes: a tuple or 2-list of two str or of two bytes (exact types)."""
    return type(pair) in (tuple, list) and len(pair) == 2 and {type(x) for x in pair} in ({str}, {bytes})


@settings(max_examples=300)
@given(lists_of_pairs())
def test_the_object_reader_reads_exactly_lists_of_pairs_of_str_or_bytes(pairs):
    """strlists.read_pairs reads a list when every pair is a tuple or 2-list of two str or of two
    bytes (exact types): each side's symbols in order with their offsets, as bytes where every str is
    ASCII, else as code points (int32, both sides), as the builtins' reading (sequences.bulk_sides)
    gives a list of one form; two 2-D arrays where every side is of one length and of bytes or
    ASCII; None for any other list, which the builtins then read."""
    from gpudp.problems.lcs import strlists
    from gpudp.problems.lcs.sequences import bulk_sides

    assert strlists.layout() is not None  # CPython's layout, checked on probes at import
    got = strlists.read_pairs(pairs)
    readable = bool(pairs) and all(map(_readable, pairs))
    assert (got is not None) == readable
    if readable:
        a, a_off, b, b_off = got
        wide = any(isinstance(x, str) and not x.isascii() for p in pairs for x in p)
        uniform = len({len(p[0]) for p in pairs}) == len({len(p[1]) for p in pairs}) == 1
        assert (a_off is None) == (uniform and not wide)  # rows, (n, length) each
        if a_off is None:
            assert a.shape == (len(pairs), len(pairs[0][0])) and b.shape == (len(pairs), len(pairs[0][1]))
            a_off, b_off = (np.arange(len(pairs) + 1) * x.shape[1] for x in (a, b))
        assert a.dtype == b.dtype == (np.int32 if wide else np.uint8)
        for side, (x, off) in enumerate(((a.ravel(), a_off), (b.ravel(), b_off))):
            seqs = [list(map(ord, p[side])) if isinstance(p[side], str) else list(p[side]) for p in pairs]
            assert x.tolist() == [c for q in seqs for c in q]
            assert off.tolist() == np.cumsum([0, *map(len, seqs)]).tolist()
        if len({type(p[0]) for p in pairs}) == 1:  # one form: as the builtins read it
            want = bulk_sides([p[0] for p in pairs], [p[1] for p in pairs])
            assert all(
                np.array_equal(u, v) for u, v in zip((a.ravel(), a_off, b.ravel(), b_off), want, strict=True)
            )


def test_a_list_of_str_pairs_and_bytes_pairs_is_one_batch():
    """Pairs of ASCII str and pairs of bytes in one list are read together (the same byte codes): the
    lengths are those of each pair by itself, every subsequence in its own pair's type; a str beside
    bytes in one pair is still that pair's error."""
    pairs = [("GATTACA", "TACC"), (b"GATTACA", b"TACC"), ["ACGT", "TGCA"], (b"", b"AC")]
    r = lcs.solve_many(pairs, backend="cpu", traceback=True, verify=4)
    assert r.values.tolist() == [3, 3, 1, 0] and not r.errors
    assert [type(x) for x in r.subsequences] == [str, bytes, str, bytes] and r.subsequences[1] == b"TAC"
    assert edit_distance.solve_many(pairs, backend="cpu", verify=4).values.tolist() == [4, 4, 4, 2]
    r = lcs.solve_many([*pairs, ("AC", b"AC")], backend="cpu")
    assert r.values.tolist() == [3, 3, 1, 0, -1] and list(r.errors) == [4]


def test_the_object_reader_makes_no_rows_it_could_not_hold(monkeypatch):
    """The first pass copies to rows of the first pair's lengths only where they would take at most
    half the memory the process may allocate (a long first pair before short ones would not) and
    can be had; else it reads the lengths alone, and the second pass copies to offsets."""
    from gpudp.problems.lcs import strlists

    pairs = [("ACGT", "AC")] * 5  # rows of 30 bytes
    assert strlists.read_pairs(pairs)[1] is None
    monkeypatch.setattr(strlists, "available_memory", lambda: 59)
    a, a_off, b, b_off = strlists.read_pairs(pairs)
    assert a.tobytes() == b"ACGT" * 5 and a_off.tolist() == [0, 4, 8, 12, 16, 20] and b_off[-1] == 10
    monkeypatch.setattr(strlists, "available_memory", lambda: 60)
    made = []

    def empty(count):
        made.append(count)
        if len(made) == 1:
            raise MemoryError
        return np.empty(count, np.uint8)

    a, a_off, b, b_off = strlists.read_pairs(pairs, empty)
    assert made == [30, 30] and a_off is not None and b.tobytes() == b"AC" * 5


def test_the_object_reader_reads_nothing_of_a_list_changed_between_its_passes():
    """Python code runs between the reader's two passes (its buffers are made there): a list, or a
    list pair, changed meanwhile makes the second pass refuse (the builtins then read the list as
    it is), so that no character is read but of an object the list holds then."""
    from gpudp.problems.lcs import strlists

    lay = strlists.layout()
    pair = ["ACGT", "AC"]
    pairs = [("A", "C"), pair]
    lens, addr = np.empty((2, 2), np.int64), np.empty((2, 2), np.int64)
    none = np.zeros(0, np.uint8)
    units = np.empty((2, 2), np.int8)
    scanned = strlists._scan(id(pairs), 2, lay, lens, addr, units, -1, -1, none, none, True)
    assert scanned == (True, False, False)
    offsets = np.zeros((2, 3), np.int64)
    np.cumsum(lens, axis=1, out=offsets[:, 1:])
    a, b = np.empty(offsets[0, -1], np.uint8), np.empty(offsets[1, -1], np.uint8)
    assert strlists._gather(id(pairs), 2, lay, lens, addr, units, offsets, a, b)
    assert a.tobytes() == b"AACGT" and b.tobytes() == b"CAC"
    pair[1] = "".join(["GG", "T"])  # another str object of another length
    assert not strlists._gather(id(pairs), 2, lay, lens, addr, units, offsets, a, b)
    pair[1] = "".join(["G", "T"])  # another object of the same length
    assert not strlists._gather(id(pairs), 2, lay, lens, addr, units, offsets, a, b)
    pair[1] = addr  # not a str at all
    assert not strlists._gather(id(pairs), 2, lay, lens, addr, units, offsets, a, b)
    pairs[1] = ("ACGT", "AC")
    pairs.append(("G", "T"))
    assert not strlists._gather(id(pairs), 2, lay, lens, addr, units, offsets, a, b)


@pytest.mark.parametrize("turned", ["none", "all", "some"])
def test_pack_buffers_equals_the_pair_by_pair_pack(turned):
    """Pairs as two buffers with offsets pack as the same pairs one array each do, whether no pair,
    every pair or some pairs have the longer first (turned round: the shorter is the pattern)."""
    rng = np.random.default_rng(len(turned))
    la = rng.integers(1, 70, 30)
    lb = {"none": la + rng.integers(0, 5, 30), "all": la - 1, "some": rng.integers(0, 70, 30)}[turned]
    xs = [
        (rng.integers(0, 4, m).astype(np.uint8), rng.integers(0, 4, k).astype(np.uint8))
        for m, k in zip(la, lb, strict=True)
    ]
    sides = []
    for side in (0, 1):
        lens = [len(p[side]) for p in xs]
        sides += [
            np.concatenate([p[side] for p in xs]),
            np.concatenate([[0], np.cumsum(lens)]).astype(np.int64),
        ]
    got, want = bitparallel.pack_buffers(*sides), bitparallel.pack(xs)
    for f in ("pat", "pat_off", "txt", "txt_off", "swapped", "table"):
        assert np.array_equal(getattr(got, f), getattr(want, f)), f
    sides[2] = sides[2].astype(np.int32) + 1000  # sides of two dtypes: one for both, nothing cut
    got = bitparallel.pack_buffers(*sides)
    want = bitparallel.pack([(x, y.astype(np.int32) + 1000) for x, y in xs])
    for f in ("pat", "pat_off", "txt", "txt_off", "swapped"):
        assert np.array_equal(getattr(got, f), getattr(want, f)), f


@pytest.mark.parametrize("m", [1, 63, 64, 65, 127, 128, 129, 200])
def test_patterns_across_word_boundaries(m):
    rng = np.random.default_rng(m)
    pairs = [
        (rng.integers(0, 3, m).astype(np.uint8), rng.integers(0, 3, k).astype(np.uint8))
        for k in (m, 2 * m, 300)
    ]
    pairs.append((np.zeros(m, np.uint8), np.zeros(m + 5, np.uint8)))  # all equal: the whole pattern
    assert bitparallel.lengths_cpu(bitparallel.pack(pairs)).tolist() == reference(pairs)


def test_big_alphabets_and_mixed_types():
    rng = np.random.default_rng(3)
    a = rng.integers(-(2**62), 2**62, 300, dtype=np.int64)
    b = np.concatenate([a[::3], rng.integers(-(2**62), 2**62, 50, dtype=np.int64)])
    pairs = [
        (a, b),
        ("héllo wörld", "hello world"),
        ([1, 2, 3], np.array([3, 2, 1], np.uint64)),
        (b"abc", b"cab"),
    ]
    r = lcs.solve_many(pairs, backend="cpu")
    assert r.values.tolist() == [lcs.solve(x, y, backend="cpu").value for x, y in pairs]


def test_a_bad_pair_does_not_stop_the_batch():
    pairs = [("AC", "CA"), (np.array([0.5]), "x"), ("ab", b"ab"), ("only one",), ("GATTACA", "TACCA")]
    r = lcs.solve_many(pairs, backend="cpu")
    assert r.values.tolist() == [1, -1, -1, -1, 4]
    assert sorted(r.errors) == [1, 2, 3] and "float" in r.errors[1] and "str pairs only" in r.errors[2]


def test_traceback_gives_checked_solutions():
    pairs = [("GATTACA", "TACCA"), ("", "X"), ([1.5], [1])]
    r = lcs.solve_many(pairs, backend="cpu", traceback=True, progress=False)
    assert r.values.tolist() == [4, 0, -1] and list(r.errors) == [2]
    assert r.solutions[0].checked and r.solutions[0].solution == "TACA" and r.solutions[2] is None
    assert r.solutions[0].details["indices_a"].tolist() == [3, 4, 5, 6] and r.solutions[1].solution == ""
    assert list(r.subsequences) == ["TACA", "", None] and r.verified == [0, 1]
    assert r.subsequences.positions(2) is None and r.subsequences[-3] == "TACA"


def test_verify_catches_a_wrong_batch(monkeypatch):
    from gpudp.problems.lcs import bitparallel

    monkeypatch.setattr(
        bitparallel, "lengths_cpu", lambda packed: np.zeros(len(packed.pat_off) - 1, np.int64)
    )
    with pytest.raises(CheckError, match="the batch gave LCS length 0"):
        lcs.solve_many([("AAA", "AAA")] * 4, backend="cpu", verify=2)


def test_values_only_solutions_are_nones_in_constant_space():
    """Without tracebacks ``solutions`` is a sequence of Nones that holds no list (a chunk of a
    distributed batch sends it back, and the chunks' are joined)."""
    r = lcs.solve_many([("ACGT", "AGT"), ("AC", "C"), ("", "A")], backend="cpu")
    s = r.solutions
    assert isinstance(s, NoSolutions) and len(s) == 3 and s[0] is None and s[-3] is None
    assert list(s) == [None] * 3 and s == [None, None, None] and s != [None, 1, None] and s != [None]
    assert s[1:] == NoSolutions(2) and len(s[::2]) == 2 and s.count(None) == 3
    for k in (3, -4):
        with pytest.raises(IndexError):
            s[k]
    info = {"workers": 1, "chunks": 2, "seconds": 0.0}
    parts = [r, lcs.solve_many([("A", "A")], backend="cpu")]
    joined = BatchResult.concat(parts, [(0, 3), (3, 4)], info)
    assert isinstance(joined.solutions, NoSolutions) and len(joined.solutions) == 4
    traced = lcs.solve_many([("A", "A")], backend="cpu", traceback=True)
    mixed = BatchResult.concat([r, traced], [(0, 3), (3, 4)], info)
    assert mixed.solutions[:3] == [None] * 3 and mixed.solutions[3].solution == "A"


@pytest.mark.parametrize("top, size", [(0, 1), (200, 1), (40_000, 2), (1 << 31, 4), (1 << 40, 8)])
def test_a_chunk_ships_its_values_narrow(top, size, monkeypatch):
    """A chunk's values travel from its worker as offsets from their least in the smallest type
    that holds them (as they are for a range of 2^32 or more), and the joined batch has them as
    the int64 they were (in pieces on several threads, as a large batch's are); a result pickled
    on its own stays int64."""
    import pickle

    monkeypatch.setattr(solution, "COPY_PIECE", 2)
    r = lcs.solve_many([("AC", "C")] * 3, backend="cpu")
    r.values = np.array([-1, top, 7], np.int64)
    shipped = pickle.loads(pickle.dumps(ship(r)))
    assert shipped[0].itemsize == size and (shipped[0].astype(np.int64) + shipped[1]).tolist() == [-1, top, 7]
    assert shipped[2].values.size == 0 and shipped[2].stats.cells == r.stats.cells
    info = {"workers": 1, "chunks": 2, "seconds": 0.0}
    joined = BatchResult.concat([shipped, r], [(0, 3), (3, 6)], info)
    assert joined.values.dtype == np.int64 and joined.values.tolist() == [-1, top, 7] * 2
    assert joined.solutions == [None] * 6 and joined.stats.cells == 2 * r.stats.cells
    back = pickle.loads(pickle.dumps(r))
    assert back.values.dtype == np.int64 and back.values.tolist() == [-1, top, 7]


def test_empty_batch():
    r = lcs.solve_many([], backend="cpu")
    assert r.values.size == 0 and r.stats.cells == 0
    r = lcs.solve_many([], backend="cpu", traceback=True)
    assert r.values.size == 0 and len(r.subsequences) == 0 and list(r.solutions) == []


@pytest.mark.sim
def test_cuda_lengths_match_the_reference():
    rng = np.random.default_rng(7)
    pairs = [
        (rng.integers(0, 4, m).astype(np.uint8), rng.integers(0, 4, k).astype(np.uint8))
        for m, k in [(0, 5), (5, 0), (1, 1), (40, 70), (64, 64), (65, 90), (130, 20), (3, 3)]
    ]
    r = lcs.solve_many(pairs, backend="cuda", verify=1)
    assert r.stats.backend == "cuda" and r.values.tolist() == reference(pairs)
    a, b = rng.integers(0, 3, (6, 70)).astype(np.uint8), rng.integers(0, 3, (6, 50)).astype(np.uint8)
    assert lcs.solve_many((a, b), backend="cuda").values.tolist() == reference(list(zip(a, b, strict=True)))


@pytest.mark.sim
def test_cuda_long_patterns_a_warp_a_pair(monkeypatch):
    """The LCS a warp a pair (``LONG_WORDS``: lowered to 1 here, so that small pairs take it): the
    words spread over the lanes, one lane's carry into the next a step later; patterns of one word
    to 33 (two words a lane: wpl 2), texts shorter and longer than the 31-step skew, empty sides,
    a pair equal to itself; against the reference and the thread-a-pair kernel."""
    from gpudp.problems.lcs import cuda as lcs_cuda

    rng = np.random.default_rng(11)
    sizes = [(0, 5), (1, 1), (63, 20), (65, 3), (129, 40), (200, 36), (2100, 3), (7, 0)]
    pairs = [
        (rng.integers(0, 4, m).astype(np.uint8), rng.integers(0, 4, k).astype(np.uint8)) for m, k in sizes
    ]
    pairs.append((pairs[3][0], pairs[3][0].copy()))  # equal to itself: 2 words, a text past the skew
    want = reference(pairs)
    monkeypatch.setattr(lcs_cuda, "LONG_WORDS", 1)
    assert lcs.solve_many(pairs, backend="cuda", verify=0).values.tolist() == want
    monkeypatch.setattr(lcs_cuda, "LONG_WORDS", 0)
    assert lcs.solve_many(pairs[4:6], backend="cuda", verify=0).values.tolist() == want[4:6]


@pytest.mark.sim
def test_cuda_lists_of_str_of_one_length_a_side_and_not():
    """Lists of str on the GPU: one length a side (packed as rows), ragged (offsets), ASCII and
    not, empty sides; both sequence solvers against the reference."""
    batches = [
        [("GATTACA", "TACC"), ("ACGTACG", "GGGG"), ["AAAAAAA", "CCCC"]],
        [("\u00e9\u4e2dab", "b\u4e2d"), ("abab", "\U0001f600a")],
        [("GATTACA", ""), ("", ""), ("AC", "CAT"), ["x\U0001f600", "\U0001f600"]],
        [("", "AB"), ("", "CD")],
    ]
    for pairs in batches:
        want = [lcs_length(list(a), list(b)) for a, b in pairs]
        assert lcs.solve_many(pairs, backend="cuda", verify=1).values.tolist() == want
        dist = edit_distance.solve_many(pairs, backend="cuda", verify=1).values.tolist()
        assert dist == [edit_distance.solve(a, b, backend="cpu").value for a, b in pairs]


def staged_uploads(monkeypatch, slice_bytes: int = 1 << 62) -> list:
    """Make the cuda launch stage every batch, however small, in page-locked memory (copy tasks of
    16 bytes) and cut it into slices of about ``slice_bytes`` of symbols, of one pair or more;
    returns the list every staging copy appends ``(items, mark)`` to (two copies a slice: its
    patterns' symbols, then its texts')."""
    from gpudp.problems.lcs import cuda as lcs_cuda

    staged, copy = [], lcs_cuda.stage_copy

    def counted(dst, src, chunk, mark):
        staged.append((len(src), bool(mark)))
        return copy(dst, src, chunk, mark)

    monkeypatch.setattr(lcs_cuda, "STAGE_MIN_BYTES", 0)
    monkeypatch.setattr(lcs_cuda, "COPY_CHUNK_BYTES", 16)
    monkeypatch.setattr(lcs_cuda, "SLICE_BYTES", slice_bytes)
    monkeypatch.setattr(lcs_cuda, "MIN_SLICE_PAIRS", 1)
    monkeypatch.setattr(lcs_cuda, "stage_copy", counted)
    return staged


def kernels_used(monkeypatch) -> list:
    """The codes each slice's kernel is compiled for, in launch order (``_kernel``'s ``sigma``)."""
    from gpudp.problems.lcs import cuda as lcs_cuda

    used, make = [], lcs_cuda._kernel
    monkeypatch.setattr(
        lcs_cuda, "_kernel", lambda spec, sigma, words: used.append(sigma) or make(spec, sigma, words)
    )
    return used


def dna_pairs(rng, sizes, alphabet=b"ACGT"):
    acgt = np.frombuffer(alphabet, np.uint8)
    return [
        (acgt[rng.integers(0, len(acgt), m)].tobytes(), acgt[rng.integers(0, len(acgt), k)].tobytes())
        for m, k in sizes
    ]


def staged_symbols(staged) -> int:
    return sum(items for items, _ in staged)


#: pair sizes across word boundaries, with empty sides and an empty pair
STAGED_SIZES = [(40, 70), (0, 9), (64, 65), (1, 1), (30, 0), (0, 0), (65, 20), (12, 33)]


@pytest.mark.sim
def test_cuda_lists_of_str_are_read_into_page_locked_blocks(monkeypatch):
    """With the cuda backend a list of ASCII str pairs is read into page-locked blocks of the pool
    (cuda.host_symbols), which the launch copies to the device from where they lie, slice by slice:
    nothing staged, whether of one length a side (rows) or not (offsets, no pair turned round); a
    list whose pairs turn round some ways is gathered (pageable) and staged. Rows are read slice by
    slice as the launch copies them (strlists.LaterRows), no pair twice. Both solvers, against the
    reference; the LCS's subsequences too."""
    from gpudp.backends.cuda import is_page_locked
    from gpudp.problems.lcs import cuda as lcs_cuda
    from gpudp.problems.lcs import strlists

    staged = staged_uploads(monkeypatch, slice_bytes=64)
    launched, launch = [], lcs_cuda.launch
    fills, fill = [], strlists.LaterRows.fill

    def spied_fill(self, p0, p1):
        fills.append((p0, p1))
        return fill(self, p0, p1)

    monkeypatch.setattr(strlists.LaterRows, "fill", spied_fill)

    def spied(packed, *spec):
        launched.append(is_page_locked(packed.pat) and is_page_locked(packed.txt))
        return launch(packed, *spec)

    monkeypatch.setattr(lcs_cuda, "launch", spied)
    rng = np.random.default_rng(5)
    for sizes, locked in (
        ([(40, 70)] * 9, True),
        ([(0, 9), (30, 65), (64, 64), (1, 1)], True),
        (STAGED_SIZES, False),
    ):
        pairs = [(a.decode(), b.decode()) for a, b in dna_pairs(rng, sizes)]
        staged.clear()
        fills.clear()
        want = [lcs_length(list(a), list(b)) for a, b in pairs]
        assert lcs.solve_many(pairs, backend="cuda", verify=1).values.tolist() == want
        rows = len(set(sizes)) == 1
        assert fills == ([(p, p + 1) for p in range(len(pairs))] if rows else [])  # a pair a slice
        dist = edit_distance.solve_many(pairs, backend="cuda", verify=1).values.tolist()
        assert dist == [edit_distance.solve(a, b, backend="cpu").value for a, b in pairs]
        assert launched[-2:] == [locked, locked] and (staged == []) == locked
        traced = lcs.solve_many(pairs, backend="cuda", traceback=True)  # the same blocks, uploaded whole
        assert traced.values.tolist() == want and [len(x) for x in traced.subsequences] == want


@pytest.mark.sim
def test_cuda_a_list_changed_while_its_slices_are_read_is_refused(monkeypatch, record_streams):
    """The rows of a list are read slice by slice during the launch, each pair read again first: a
    list pair changed after the list was scanned (here by the first slice's read, as another thread
    could) makes the batch an InputError, not a value of another pair's symbols; before it goes on,
    both streams are waited for (their copies write into leased page-locked memory)."""
    from gpudp.problems.lcs import cuda as lcs_cuda
    from gpudp.problems.lcs import strlists

    staged_uploads(monkeypatch, slice_bytes=16)  # a pair a slice
    made = record_streams(lcs_cuda, "stream")
    pairs = [["ACGTACGT", "TTGCA"] for _ in range(4)]
    fill = strlists.LaterRows.fill

    def changing(self, p0, p1):
        fill(self, p0, p1)
        pairs[3][0] = "".join(["GG", "CCAATT"])  # another str object of the same length

    monkeypatch.setattr(strlists.LaterRows, "fill", changing)
    with pytest.raises(InputError, match="changed while it was read"):
        lcs.solve_many(pairs, backend="cuda")
    assert len(made) == 2 and all(s.waits for s in made)


@pytest.mark.sim
@pytest.mark.parametrize("slots", [1, 3])
def test_cuda_lengths_staged_in_slices(monkeypatch, slots):
    """A staged batch cut into slices of about 64 symbols, one kernel a slice, staged through
    ``slots`` page-locked slots (each reused once its copy is done): bytes of pairs of unequal
    lengths with empty sides and an empty pair (their table found on the device, slice by slice;
    the host's part a plain copy), 4-byte codes, a slice of no symbol, the rows form (a pair a
    slice), and subsequences (their launch stages the whole batch as one slice)."""
    from gpudp.problems.lcs import cuda as lcs_cuda

    staged = staged_uploads(monkeypatch, slice_bytes=64)
    monkeypatch.setattr(lcs_cuda, "STAGE_SLOTS", slots)
    used = kernels_used(monkeypatch)
    rng = np.random.default_rng(14)
    dna = dna_pairs(rng, STAGED_SIZES)
    wide = [(rng.integers(-5, 1 << 40, m), rng.integers(-5, 1 << 40, k)) for m, k in STAGED_SIZES]
    assert bitparallel.pack(wide).pat.itemsize == 4  # over 256 codes: 4 bytes a symbol
    empty = [(b"", b"AC"), (b"", b""), (b"G", b"")]  # the second slice holds no symbol
    for pairs, slice_bytes, count in ((dna, 64, 5), (wide, 64, 5), (empty, 1, 3)):
        monkeypatch.setattr(lcs_cuda, "SLICE_BYTES", slice_bytes)
        staged.clear(), used.clear()
        r = lcs.solve_many(pairs, backend="cuda", verify=2)
        assert r.stats.backend == "cuda" and r.stats.kernel_seconds >= 0
        assert len(used) == count and len(staged) == 2 * count  # two copies and a kernel a slice
        assert staged_symbols(staged) == sum(len(a) + len(b) for a, b in pairs)
        assert {m for _, m in staged} == {False}
        assert r.values.tolist() == reference(pairs) == lcs.solve_many(pairs, backend="cpu").values.tolist()
    a = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, (7, 50))]
    b = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, (7, 30))]
    staged.clear(), used.clear()
    monkeypatch.setattr(lcs_cuda, "SLICE_BYTES", 64)
    r = lcs.solve_many((a, b), backend="cuda")
    assert len(used) == 7 and staged == [(30, False), (50, False)] * 7  # a pair a slice; shorter rows first
    assert r.values.tolist() == reference(list(zip(a, b, strict=True)))
    staged.clear()
    r = lcs.solve_many(dna, backend="cuda", traceback=True, verify=1)
    assert len(staged) == 2 and staged_symbols(staged) == sum(len(x) + len(y) for x, y in dna)
    assert {m for _, m in staged} == {True}  # one slice: its table found by the staging copy
    assert_batch(dna, r)


@pytest.mark.sim
def test_cuda_table_grows_slice_by_slice(monkeypatch):
    """Later slices bring new bytes: slice 1 only 'AC', slice 2 'GT', slice 3 any bytes. Earlier
    bytes keep their codes, new ones take the next free codes; each slice's kernel is compiled for
    the codes seen so far and reads the table as it stood then; the batch ends with the whole
    table; the values are the reference's."""
    from gpudp.problems.lcs import cuda as lcs_cuda

    staged = staged_uploads(monkeypatch, slice_bytes=150)
    used = kernels_used(monkeypatch)
    rng = np.random.default_rng(21)
    sizes = [(20, 30), (0, 50), (30, 20)]  # 150 symbols a group: a slice each
    pairs = (
        dna_pairs(rng, sizes, b"AC") + dna_pairs(rng, sizes, b"GT") + dna_pairs(rng, sizes, bytes(range(256)))
    )
    packed = bitparallel.pack(
        [(np.frombuffer(x, np.uint8), np.frombuffer(y, np.uint8)) for x, y in pairs], table=False
    )
    assert lcs_cuda._slices(packed) == [(0, 3), (3, 6), (6, 9)]
    run = lcs_cuda.launch(packed)
    tables = run.held[5].copy_to_host().reshape(3, 256)  # each slice's device copy of the table
    values, _ = run.finish()
    assert values.tolist() == reference(pairs) == lcs.solve_many(pairs, backend="cpu").values.tolist()
    assert [m for _, m in staged] == [False] * 6  # the bytes are found on the device
    present = np.zeros(256, bool)
    present[np.frombuffer(b"".join(x + y for x, y in pairs), np.uint8)] = True
    code = dict(zip(b"ACGT", range(4), strict=True))
    assert {k: int(packed.table[k]) for k in b"ACGT"} == code
    assert packed.sigma == present.sum() > 4 and used == [2, 4, 1 << (int(packed.sigma) - 1).bit_length()]
    assert sorted(packed.table[present].tolist()) == list(range(packed.sigma))  # one to one
    assert [tables[0][k] for k in b"AC"] == [0, 1] and [tables[1][k] for k in b"ACGT"] == [0, 1, 2, 3]
    assert np.array_equal(tables[2][present], packed.table[present])


@pytest.mark.sim
def test_staging_block_goes_back_after_finish(monkeypatch):
    """The launch holds its page-locked blocks (the staging slots; the slices' byte flags and
    tables) until ``finish()``, which gives them back to the pool."""
    from gpudp.backends.cuda import pinned_pool
    from gpudp.problems.lcs import cuda as lcs_cuda

    staged_uploads(monkeypatch, slice_bytes=40)
    pool, given = pinned_pool(), []
    give = pool.give
    monkeypatch.setattr(pool, "give", lambda buf: (given.append(buf.nbytes), give(buf)))
    pairs = dna_pairs(np.random.default_rng(3), [(20, 30), (5, 0), (17, 17)])
    run = lcs_cuda.launch(
        bitparallel.pack(
            [(np.frombuffer(x, np.uint8), np.frombuffer(y, np.uint8)) for x, y in pairs], table=False
        )
    )
    assert given == []
    values, _ = run.finish()
    assert sorted(given) == [4096, 1 << 20]  # the 2 slices' flags and tables (4 KiB), the slots
    assert values.tolist() == reference(pairs)


@pytest.mark.sim
def test_unstaged_when_no_page_locked_block(monkeypatch):
    """Where the pool would exceed its share of host memory, or page-locking fails, the batch goes
    from pageable memory as a small one does (one slice, its table found on the device), with the
    same values."""
    from gpudp.memory import BlockPool
    from gpudp.problems.lcs import cuda as lcs_cuda

    staged = staged_uploads(monkeypatch, slice_bytes=16)
    used = kernels_used(monkeypatch)
    pairs = dna_pairs(np.random.default_rng(4), [(20, 30), (0, 3), (9, 12)])

    def fails(nbytes, dtype):
        raise MemoryError("no page-locked memory")

    for pool, room in ((BlockPool(), 0), (BlockPool(fails), 1 << 40)):
        used.clear()
        monkeypatch.setattr(lcs_cuda, "pinned_pool", lambda pool=pool: pool)
        monkeypatch.setattr(lcs_cuda, "available_memory", lambda room=room: room)
        r = lcs.solve_many(pairs, backend="cuda", verify=0)
        assert staged == [] and used == [4] and r.values.tolist() == reference(pairs)


@pytest.mark.sim
def test_page_locked_batches_go_to_the_device_from_where_they_lie(monkeypatch):
    """A batch whose two arrays are page-locked (gpudp.backends.page_locked; the simulator's stand-in
    memory) is cut into slices as a staged one, but no staging copy is made: every slice is copied
    from the arrays themselves, its bytes found on the device. Views of a page-locked array count
    as page-locked; a plain array, or one side only page-locked, does not go this way. The
    subsequences' single upload takes it too."""
    from gpudp.backends import page_locked
    from gpudp.backends.cuda import is_page_locked

    staged = staged_uploads(monkeypatch, slice_bytes=64)
    used = kernels_used(monkeypatch)
    rng = np.random.default_rng(31)
    a = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, (6, 40))]
    b = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, (6, 24))]
    la, lb = page_locked(a), page_locked(b)
    assert is_page_locked(la) and is_page_locked(la[2:4].reshape(-1)) and not is_page_locked(a)
    assert np.array_equal(la, a) and page_locked(la) is la
    want = reference(list(zip(a, b, strict=True)))
    r = lcs.solve_many((la, lb), backend="cuda")
    assert staged == [] and len(used) == 6  # a pair a slice, none staged on the host
    assert r.values.tolist() == want
    r = lcs.solve_many((la, b), backend="cuda")  # one side pageable: staged as before
    assert len(staged) == 12 and r.values.tolist() == want
    staged.clear()
    r = lcs.solve_many((la, lb), backend="cuda", traceback=True, verify=1)
    assert staged == [] and r.values.tolist() == want
    assert_batch(list(zip(a, b, strict=True)), r)


@pytest.mark.sim
def test_pairs_in_gpu_memory_are_read_where_they_lie(monkeypatch):
    """Two 2-D uint8 arrays in GPU memory (numba's device arrays here; CuPy's and PyTorch's by
    ``__cuda_array_interface__``): the batch runs on the GPU whatever ``backend='auto'`` would pick for
    its size, one slice read where it lies (no staging, no copy of the symbols to the device), the
    table found there, a few pairs fetched and re-solved on the host; edit distances alike. With
    ``backend='cpu'`` or ``traceback=True`` they are copied to the host first. Arrays on both sides,
    of another dtype or not contiguous are refused."""
    from numba import cuda

    from gpudp.problems import edit_distance
    from gpudp.problems.lcs import cuda as lcs_cuda

    staged = staged_uploads(monkeypatch, slice_bytes=64)  # host batches this small would be staged
    used = kernels_used(monkeypatch)
    made = []  # the rows' offsets, made on the device (nothing made on the host and copied)
    real = lcs_cuda.device_row_offsets
    monkeypatch.setattr(lcs_cuda, "device_row_offsets", lambda n, k: made.append((n, k)) or real(n, k))
    rng = np.random.default_rng(33)
    a = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, (5, 30))]
    b = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, (5, 45))]
    da, db = cuda.to_device(a), cuda.to_device(b)
    want = reference(list(zip(a, b, strict=True)))
    r = lcs.solve_many((da, db), verify=2)
    assert r.stats.backend == "cuda" and r.values.tolist() == want and len(r.verified) == 2
    assert staged == [] and used == [4]  # one kernel, the 4 bytes' table found on the device
    assert made == [(5, 30), (5, 45)]
    r = edit_distance.solve_many((db, da), backend="cuda", verify=1)
    assert r.values.tolist() == [
        edit_distance.solve(y, x, backend="cpu").value for x, y in zip(a, b, strict=True)
    ]
    r = lcs.solve_many((da, db), backend="cpu")
    assert r.stats.backend == "cpu" and r.values.tolist() == want
    r = lcs.solve_many((da, db), traceback=True, verify=1)
    assert r.values.tolist() == want
    assert_batch(list(zip(a, b, strict=True)), r)
    with pytest.raises(InputError, match="one array in GPU memory and one in host memory"):
        lcs.solve_many((da, b))
    with pytest.raises(InputError, match="2-D uint8"):
        lcs.solve_many((cuda.to_device(a.astype(np.int32)), cuda.to_device(b.astype(np.int32))))
    with pytest.raises(InputError, match="C-contiguous"):
        lcs.solve_many((da[:, ::2], db[:, ::2]))
    with pytest.raises(InputError, match="5 rows against 4"):
        lcs.solve_many((da, db[:4]))


def test_page_locked_without_a_gpu_is_the_array_itself(monkeypatch):
    """Without a usable GPU (and outside the simulator) page_locked gives the array back; anything
    but a numpy array is refused."""
    from gpudp.backends import page_locked

    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setattr("gpudp.backends.cuda_usable", lambda: False)
    x = np.arange(6).reshape(2, 3)
    assert page_locked(x) is x
    with pytest.raises(InputError, match="numpy array"):
        page_locked([1, 2, 3])


def test_stage_block_limits_and_sizes(monkeypatch):
    """A block is rounded up (a MiB at least, then a sixteenth of its power of two), taken from a
    spare one that holds it whatever the memory left, else made only within its share of it."""
    from gpudp.memory import BlockPool
    from gpudp.problems.lcs import cuda as lcs_cuda

    made = []
    pool = BlockPool(lambda nbytes, dtype: made.append(nbytes) or np.empty(nbytes, dtype))
    monkeypatch.setattr(lcs_cuda, "pinned_pool", lambda: pool)
    monkeypatch.setattr(lcs_cuda, "available_memory", lambda: 100 << 20)
    x = lcs_cuda._stage_block(10, np.int32)
    assert x.dtype == np.int32 and len(x) == (1 << 20) // 4 and made == [1 << 20]
    y = lcs_cuda._stage_block((16 << 20) + 1, np.uint8)
    assert len(y) == 18 << 20 and made == [1 << 20, 18 << 20]
    assert lcs_cuda._stage_block(26 << 20, np.uint8) is None  # more than a quarter of 100 MiB
    del y
    monkeypatch.setattr(lcs_cuda, "available_memory", lambda: 0)
    z = lcs_cuda._stage_block(17 << 20, np.uint8)
    assert len(z) == 18 << 20 and len(made) == 2  # the spare block, whatever the memory left
    assert lcs_cuda._stage_block(3, np.uint8) is None and len(x) and len(z)


@pytest.mark.parametrize("dtype", [np.uint8, np.int32])
def test_stage_copy(dtype):
    """The parallel staging copy, on plain arrays: sizes of none, less than a task, whole tasks and
    a part, odd ones, across the marking blocks; with ``mark`` (bytes) the flags are exactly the
    values present, else none."""
    from gpudp.problems.lcs.bitparallel import MARK_BLOCK, stage_copy

    rng = np.random.default_rng(5)
    marks = (True, False) if dtype == np.uint8 else (False,)
    for n in (0, 1, 7, 8, 9, 29, 1000, MARK_BLOCK - 1, MARK_BLOCK, MARK_BLOCK + 1, 2 * MARK_BLOCK + 29):
        for chunk in (1, 8, MARK_BLOCK, 1 << 20):
            if chunk == 1 and n > 1000:
                continue
            for mark in marks:
                top = int(rng.integers(1, 257)) if dtype == np.uint8 else 1 << 20
                src = rng.integers(0, top, n).astype(dtype)
                dst = np.full(n + 3, 127, dtype)
                present = stage_copy(dst[:n], src, chunk, mark)
                assert np.array_equal(dst[:n], src) and (dst[n:] == 127).all()
                want = np.zeros(256, bool)
                if mark:
                    want[src] = True
                assert present.dtype == np.bool_ and np.array_equal(present, want)


def test_slices_of_whole_pairs():
    """Slices cover the pairs in order, whole pairs each, about equal symbols each; at most as many
    as :data:`SLICE_BYTES` and :data:`MIN_SLICE_PAIRS` allow, all of at least that many pairs but
    a lone one."""
    from types import SimpleNamespace

    from gpudp.problems.lcs import cuda as lcs_cuda

    def slices(m, k, itemsize=1, slice_bytes=128 << 20, least=4096):
        off = [np.zeros(len(m) + 1, np.int64), np.zeros(len(k) + 1, np.int64)]
        np.cumsum(m, out=off[0][1:]), np.cumsum(k, out=off[1][1:])
        packed = SimpleNamespace(pat_off=off[0], txt_off=off[1], pat=np.zeros(1, f"u{itemsize}"))
        old = lcs_cuda.SLICE_BYTES, lcs_cuda.MIN_SLICE_PAIRS
        lcs_cuda.SLICE_BYTES, lcs_cuda.MIN_SLICE_PAIRS = slice_bytes, least
        try:
            out = lcs_cuda._slices(packed)
        finally:
            lcs_cuda.SLICE_BYTES, lcs_cuda.MIN_SLICE_PAIRS = old
        assert out[0][0] == 0 and out[-1][1] == len(m)
        assert all(p1 == q0 for (_, p1), (q0, _) in zip(out, out[1:], strict=False))
        assert len(out) == 1 or all(p1 - p0 >= least for p0, p1 in out)
        return out

    full = np.full(500_000, 1000)  # 1 GB of symbols: 8 slices of 62,500 pairs
    assert slices(full, full) == [(62_500 * i, 62_500 * (i + 1)) for i in range(8)]
    assert len(slices(full, full, itemsize=4)) == 30  # 4 GB
    # 4096 pairs a slice at least
    assert slices(full[:9000], full[:9000], slice_bytes=1 << 20) == [(0, 4500), (4500, 9000)]
    assert slices(full[:8191], full[:8191], slice_bytes=1 << 20) == [(0, 8191)]
    assert slices(np.zeros(5, np.int64), np.zeros(5, np.int64), slice_bytes=1, least=1) == [(0, 5)]
    # unequal pairs: one of 10 symbols, then ones of 1 (cuts where the symbols reach a share)
    m = np.array([10] + [1] * 10)
    assert slices(m, np.zeros(11, np.int64), slice_bytes=5, least=1) == [(0, 1), (1, 4), (4, 7), (7, 11)]
    assert slices(m, np.zeros(11, np.int64), slice_bytes=5, least=3) == [(0, 3), (3, 7), (7, 11)]
    assert slices(m, m, slice_bytes=1, least=1) == [(p, p + 1) for p in range(11)]


@pytest.mark.gpu
def test_gpu_lengths_match_the_cpu_at_scale():
    rng = np.random.default_rng(8)
    pairs = [
        (rng.integers(0, 4, 1000).astype(np.uint8), rng.integers(0, 4, 1000).astype(np.uint8))
        for _ in range(3000)
    ]
    gpu = lcs.solve_many(pairs, backend="cuda")
    cpu = lcs.solve_many(pairs, backend="cpu", verify=0)
    assert np.array_equal(gpu.values, cpu.values)


@pytest.mark.gpu
@pytest.mark.parametrize("library", ["numba", "cupy", "torch"])
def test_gpu_batch_reads_arrays_in_gpu_memory(library):
    """Pairs held by CuPy, PyTorch (CUDA tensors) or numba on the GPU are read there, by
    ``__cuda_array_interface__``, with the host arrays' values (lengths and edit distances)."""
    from gpudp.problems import edit_distance

    rng = np.random.default_rng(9)
    a = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, (2000, 300))]
    b = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, (2000, 200))]
    if library == "numba":
        from numba import cuda

        da, db = cuda.to_device(a), cuda.to_device(b)
    elif library == "cupy":
        cupy = pytest.importorskip("cupy")
        da, db = cupy.asarray(a), cupy.asarray(b)
    else:
        torch = pytest.importorskip("torch")
        da, db = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    r = lcs.solve_many((da, db), verify=3)
    assert r.stats.backend == "cuda" and np.array_equal(
        r.values, lcs.solve_many((a, b), backend="cpu").values
    )
    e = edit_distance.solve_many((da, db), verify=3)
    assert np.array_equal(e.values, edit_distance.solve_many((a, b), backend="cpu").values)


@pytest.mark.gpu
def test_gpu_batches_beyond_one_grid(monkeypatch):
    """Pairs whose bit masks fill the L1 cache (256 codes: 8 KiB a thread) run on a grid that holds
    fewer threads than the batch has pairs, each thread looping over several: the lengths, edit
    distances and subsequences are the cpu's."""
    from gpudp.problems import edit_distance
    from gpudp.problems.lcs import cuda as lcuda

    grids, real = [], lcuda.cached_grid

    def spy(kernel, args, threads, want):
        grids.append((real(kernel, args, threads, want), want))
        return grids[-1][0]

    monkeypatch.setattr(lcuda, "cached_grid", spy)
    rng = np.random.default_rng(12)
    a = rng.integers(0, 256, (40_000, 200), dtype=np.uint8)
    b = rng.integers(0, 256, (40_000, 150), dtype=np.uint8)
    for solver in (lcs, edit_distance):
        gpu = solver.solve_many((a, b), backend="cuda", verify=0)
        assert np.array_equal(gpu.values, solver.solve_many((a, b), backend="cpu", verify=0).values)
    assert len(grids) >= 2 and all(got < want for got, want in grids)
    grids.clear()
    few = (np.ascontiguousarray(a[:20_000, :100]), np.ascontiguousarray(b[:20_000, :80]))
    gpu = lcs.solve_many(few, backend="cuda", traceback=True, verify=0)
    cpu = lcs.solve_many(few, backend="cpu", traceback=True, verify=0)
    assert np.array_equal(gpu.values, cpu.values) and _positions(gpu) == _positions(cpu)
    assert grids and all(got < want for got, want in grids)


@pytest.mark.parametrize("shape_a, shape_b", [((7, 130), (7, 40)), ((5, 0), (5, 9)), ((0, 3), (0, 4))])
def test_rows_know_their_cells_and_widest_pattern(shape_a, shape_b):
    """pack_arrays gives the cells and the longest pattern's words without a pass over the offsets:
    the same as found from the offsets."""
    a, b = np.ones(shape_a, np.uint8), np.ones(shape_b, np.uint8)
    given = bitparallel.pack_arrays(a, b, table=False)
    found = bitparallel.Packed(given.pat, given.pat_off, given.txt, given.txt_off, 0)
    assert (given.cells, given.max_words) == (found.cells, found.max_words)


def test_rows_of_one_size_pick_distinct_pairs_to_check():
    for n, k in ((10, 3), (2, 5), (4_000_000, 3)):
        picks = batch._picks(range(n), None, k)
        assert picks == sorted(set(picks)) and len(picks) == min(n, k) and 0 <= picks[0] <= picks[-1] < n
    assert batch._picks(range(0), None, 3) == [] and batch._picks(range(5), None, 0) == []


def test_two_arrays_of_rows_are_a_batch_of_pairs():
    rng = np.random.default_rng(11)
    a = rng.integers(0, 5, (30, 70)).astype(np.uint8)
    b = rng.integers(0, 5, (30, 90)).astype(np.int64)
    r = lcs.solve_many((a, b), backend="cpu")
    assert r.values.tolist() == reference(list(zip(a, b, strict=True))) and r.stats.extra["pairs"] == 30
    assert lcs.solve_many((b, a), backend="cpu").values.tolist() == r.values.tolist()
    with pytest.raises(InputError, match="rows"):
        lcs.solve_many((a, b[:3]), backend="cpu")
    with pytest.raises(InputError, match="integers"):
        lcs.solve_many((a.astype(float), b), backend="cpu")


def test_command_line_batches_over_fasta_records(tmp_path, capsys):
    import json

    from gpudp.cli import main

    a, b = tmp_path / "a.fa", tmp_path / "b.fa.gz"
    a.write_text(">r1\nGATTACA\n>r2 second\nacgt\nAC\n")
    import gzip

    b.write_bytes(gzip.compress(b">s1\nTACCA\n>s2\nTTTT\n"))
    assert main(["solve", "lcs", str(a), str(b), "--pairs", "all", "--backend", "cpu"]) == 0
    out = capsys.readouterr()
    rows = [line.split("\t") for line in out.out.splitlines()]
    assert rows[0] == ["name_a", "name_b", "len_a", "len_b", "lcs"]
    assert [r[4] for r in rows[1:]] == ["4", "2", "3", "1"] and rows[3][0] == "r2 second"
    assert "4 pairs" in out.err
    assert (
        main(["solve", "lcs", str(a), str(b), "--pairs", "zip", "--json", "--traceback", "--backend", "cpu"])
        == 0
    )
    got = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(g["lcs"], g["subsequence"]) for g in got] == [(4, "TACA"), (1, "T")]
    one = tmp_path / "one.txt"
    one.write_text("TACCA\n")
    assert main(["solve", "lcs", str(a), str(one), "--pairs", "zip", "--backend", "cpu"]) == 2
    assert "as many records" in capsys.readouterr().err
    assert lcs.read_fasta_records(one) == [("one.txt", "TACCA")]
    bad = tmp_path / "bad.fa"
    bad.write_text("junk\n>r1\nAC\n")
    with pytest.raises(InputError, match="line 1: text before the first"):
        lcs.read_fasta_records(bad)


# ------------------------------------------------------------------------------------------------
# traceback=True: subsequences from the stored bit vectors


def dp_table(a, b):
    """The textbook table ``D[i][j]`` (LCS of ``a[:i]`` and ``b[:j]``), in pure Python."""
    d = [[0] * (len(b) + 1)]
    for x in a:
        prev, cur = d[-1], [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        d.append(cur)
    return d


def as_list(x):
    if isinstance(x, str):
        return list(x)
    if isinstance(x, bytes):
        return list(x)
    return [int(v) for v in x]


def assert_lcs(a, b, value, sub, at):
    """``sub`` at positions ``at`` is a longest common subsequence of ``a`` and ``b``: checked here
    from the sequences as given, independently of the batch's own check."""
    la, lb = as_list(a), as_list(b)
    assert value == lcs_length(la, lb)
    ia, ib = (x.tolist() for x in at)
    assert len(ia) == len(ib) == value
    assert all(0 <= i < len(la) for i in ia) and all(0 <= j < len(lb) for j in ib)
    assert all(np.diff(ia) > 0) and all(np.diff(ib) > 0)
    assert [la[i] for i in ia] == [lb[j] for j in ib]
    if isinstance(a, str):
        assert sub == "".join(la[i] for i in ia)
    elif isinstance(a, bytes):
        assert sub == bytes(la[i] for i in ia)
    else:
        assert isinstance(sub, np.ndarray) and [int(v) for v in sub] == [la[i] for i in ia]


def assert_batch(pairs, r):
    assert not r.errors and len(r.subsequences) == len(pairs)
    for p, (a, b) in enumerate(pairs):
        assert_lcs(a, b, int(r.values[p]), r.subsequences[p], r.subsequences.positions(p))


_KINDS = ("bytes", "str", "uint8", "int64", "list", "bigint")


def _sequence(kind, x):
    if kind == "bytes":
        return (x % 256).astype(np.uint8).tobytes()
    if kind == "str":  # beyond 94 symbols: not ASCII (code points)
        return "".join(chr(0x21 + int(v)) for v in x)
    if kind == "uint8":
        return (x % 256).astype(np.uint8)
    if kind == "int64":
        return (x * 2**40 - 7).astype(np.int64)
    if kind == "list":
        return [int(v) for v in x]
    return [2**70 + int(v) for v in x]  # beyond 64 bits: ranks of exact Python ints


@st.composite
def traceback_batches(draw, max_pairs=8, max_len=90, kinds=_KINDS):
    """Pairs of one of ``kinds`` each (the batch may mix them), lengths across word boundaries and
    empty, alphabets of 1 to 300 symbols."""
    sigma = draw(st.sampled_from([1, 2, 4, 300]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    lengths = st.one_of(st.sampled_from([0, 1, 63, 64, 65, 128, 129]), st.integers(0, max_len))
    pairs = []
    for _ in range(draw(st.integers(0, max_pairs))):
        kind = draw(st.sampled_from(kinds))
        m, k = draw(lengths), draw(lengths)
        pairs.append((_sequence(kind, rng.integers(0, sigma, m)), _sequence(kind, rng.integers(0, sigma, k))))
    return pairs


@njit
def _vectors(pat, txt, sigma):
    """Every column's vector of the pattern ``pat`` against ``txt`` (codes), as ``[column, word]``."""
    m, n = len(pat), len(txt)
    w = (m + 63) // 64
    table = np.zeros(1, np.uint8)
    pm = np.empty(sigma * w, np.uint64)
    bitparallel.masks(pat, 0, m, w, sigma, table, False, pm)
    s = np.full(w, ~np.uint64(0), np.uint64)
    store = np.empty(n * w, np.uint64)
    bitparallel.store_columns(txt, 0, n, pm, w, table, False, s, store, 0, w, 1)
    return store.reshape(n, w)


@pytest.mark.parametrize("m", [1, 2, 63, 64, 65, 128, 129])
def test_column_vectors_are_the_table_bit_by_bit(m):
    """Bit ``i - 1`` of ``V_j`` is 1 exactly where ``D[i][j] == D[i-1][j]``: what the walk reads."""
    rng = np.random.default_rng(m)
    for sigma, n in ((2, 150), (4, 70), (1, 9), (30, 40)):
        a, b = rng.integers(0, sigma, m), rng.integers(0, sigma, n)
        d = dp_table(a.tolist(), b.tolist())
        v = _vectors(a, b, sigma)
        for j in range(1, n + 1):
            bits = [int(v[j - 1, (i - 1) >> 6] >> np.uint64((i - 1) & 63)) & 1 for i in range(1, m + 1)]
            assert bits == [int(d[i][j] == d[i - 1][j]) for i in range(1, m + 1)], (sigma, j)


@settings(max_examples=25)
@given(traceback_batches())
def test_cpu_subsequences_are_longest_and_common(pairs):
    r = lcs.solve_many(pairs, backend="cpu", traceback=True, verify=1)
    assert_batch(pairs, r)
    assert r.stats.backend == "cpu" and r.verified == list(range(len(pairs)))


@pytest.mark.parametrize("m", [63, 64, 65, 128, 129])
def test_subsequences_across_word_boundaries_and_extremes(m):
    rng = np.random.default_rng(m)
    x = rng.integers(0, 4, m).astype(np.uint8)
    pairs = [
        (x, rng.integers(0, 4, 2 * m).astype(np.uint8)),  # pattern a
        (rng.integers(0, 4, m + 40).astype(np.uint8), x),  # pattern b: positions swapped back
        (np.zeros(m, np.uint8), np.zeros(m + 3, np.uint8)),  # all equal: the whole pattern
        (np.zeros(m, np.uint8), np.ones(m, np.uint8)),  # all different: nothing
        (bytes(m), b""),
        (b"", bytes(m)),
        (x, x.copy()),  # identical: every position
        (x, x[::-1].copy()),
    ]
    r = lcs.solve_many(pairs, backend="cpu", traceback=True)
    assert_batch(pairs, r)
    assert r.values[2] == m and r.values[3] == 0 and r.values[4] == r.values[5] == 0
    assert r.subsequences.positions(6)[1].tolist() == list(range(m))
    rows = lcs.solve_many(
        (np.stack([x, x[::-1]]), np.zeros((2, m - 1), np.uint8)), backend="cpu", traceback=True
    )
    assert_batch([(x, np.zeros(m - 1, np.uint8)), (x[::-1], np.zeros(m - 1, np.uint8))], rows)


@pytest.fixture
def corrupt(monkeypatch):
    """``corrupt(fn)``: the cpu kernels' positions passed through ``fn(lengths, found, pos_a, pos_b)``."""

    def install(fn):
        real = bitparallel.subsequences_cpu

        def wrong(packed, todo, start, lengths, found, pos_a, pos_b):
            real(packed, todo, start, lengths, found, pos_a, pos_b)
            fn(lengths, found, pos_a, pos_b)

        monkeypatch.setattr(bitparallel, "subsequences_cpu", wrong)

    return install


@pytest.mark.parametrize(
    "fault, message",
    [
        (
            lambda ln, f, pa, pb: f.__setitem__(1, f[1] - 1),
            "took 3 matched pairs for a bit-parallel length of 4",
        ),
        (  # a matched pair twice
            lambda ln, f, pa, pb: (pa.__setitem__(3, pa[2]), pb.__setitem__(3, pb[2])),
            "not strictly increasing",
        ),
        (lambda ln, f, pa, pb: pa.__setitem__(2, 0), "symbols at a matched pair"),  # G for T
        (  # a common subsequence, but shorter than the optimum: verify's re-solve catches it
            lambda ln, f, pa, pb: (ln.__setitem__(0, 0), f.__setitem__(0, 0)),
            "LCS length 0, the plain dynamic program 1",
        ),
    ],
)
def test_a_wrong_subsequence_is_never_returned(corrupt, fault, message):
    """Positions the walk did not justify, or a length short of the optimum, raise CheckError."""
    corrupt(fault)
    with pytest.raises(CheckError, match=message):
        lcs.solve_many(
            [("AC", "CA"), ("GATTACA", "TACCA")],
            backend="cpu",
            traceback=True,
            verify=0 if "dynamic program" not in message else 2,
        )


def test_pairs_too_big_for_the_store_are_solved_alone(monkeypatch):
    from gpudp.problems.lcs import subsequences

    monkeypatch.setattr(subsequences, "PAIR_STORE_BYTES", 100)  # more than 800 cells: alone
    rng = np.random.default_rng(5)
    pairs = [(_sequence(k, rng.integers(0, 3, 40)), _sequence(k, rng.integers(0, 3, n))) for k, n in
             [("str", 10), ("bytes", 30), ("int64", 25), ("list", 5)]]  # fmt: skip
    r = lcs.solve_many(pairs, backend="cpu", traceback=True)
    assert_batch(pairs, r)
    assert r.stats.extra["solved_alone"] == 2 and r.stats.extra["stored_bit_vectors"] == 2
    assert r.solutions[1].stats.backend == "cpu" and r.solutions[1].checked


def test_chunks_join_as_one_batch():
    """What the Dask path does with its chunks' results (:meth:`BatchResult.concat`)."""
    rng = np.random.default_rng(6)
    pairs = [
        (bytes(rng.integers(65, 69, rng.integers(0, 80))), bytes(rng.integers(65, 69, 50))) for _ in range(9)
    ]
    pairs[4] = ("str", b"bytes")
    bounds = [(0, 3), (3, 7), (7, 9)]
    parts = [lcs.solve_many(pairs[lo:hi], backend="cpu", traceback=True) for lo, hi in bounds]
    got = BatchResult.concat(parts, bounds, {"workers": 1, "chunks": 3, "seconds": 0.0})
    want = lcs.solve_many(pairs, backend="cpu", traceback=True)
    assert got.values.tolist() == want.values.tolist() and list(got.errors) == [4]
    assert list(got.subsequences) == list(want.subsequences)
    assert [s and s.solution for s in got.solutions] == [s and s.solution for s in want.solutions]
    rows = (np.stack([np.frombuffer(a, np.uint8)[:0] for a, _ in pairs[:2]]), np.zeros((2, 3), np.uint8))
    parts = [
        lcs.solve_many((rows[0][k : k + 1], rows[1][k : k + 1]), backend="cpu", traceback=True)
        for k in range(2)
    ]
    joined = BatchResult.concat(parts, [(0, 1), (1, 2)], {"workers": 1, "chunks": 2, "seconds": 0.0})
    assert joined.values.tolist() == [0, 0] and joined.subsequences[1].tolist() == []


@pytest.mark.sim
@settings(max_examples=5)
@given(traceback_batches(max_pairs=6, max_len=40, kinds=("bytes", "uint8", "int64", "str")))
def test_cuda_subsequences_are_longest_and_common(pairs):
    from gpudp.problems.lcs import cuda as lcs_cuda

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lcs_cuda, "CHUNK_BYTES", 8 * 64)  # a chunk a group or two: both streams
        r = lcs.solve_many(pairs, backend="cuda", traceback=True, verify=1)
    assert_batch(pairs, r)
    if pairs:
        assert r.stats.backend == "cuda"


@pytest.mark.sim
def test_cuda_subsequences_of_rows():
    rng = np.random.default_rng(12)
    a, b = rng.integers(0, 3, (9, 30)).astype(np.uint8), rng.integers(0, 3, (9, 20)).astype(np.uint8)
    r = lcs.solve_many((a, b), backend="cuda", traceback=True)
    assert r.stats.backend == "cuda" and r.stats.extra["chunks"] >= 1
    assert_batch(list(zip(a, b, strict=True)), r)


@pytest.mark.sim
def test_cuda_masks_past_a_threads_memory(monkeypatch):
    """Byte batches whose masks might pass a thread's limit have the bytes present found on the host
    first (4 bases fit); an alphabet too big for a thread's masks runs on the cpu and says so."""
    from gpudp.problems.lcs import subsequences

    monkeypatch.setattr(subsequences, "PM_LIMIT", 64)  # 256 byte values x 1 word would not fit
    rng = np.random.default_rng(13)
    dna = [(bytes(rng.choice(list(b"ACGT"), 30)), bytes(rng.choice(list(b"ACGT"), 40))) for _ in range(3)]
    r = lcs.solve_many(dna, backend="cuda", traceback=True, verify=0)
    assert r.stats.backend == "cuda" and r.stats.extra["backend_choice"] == "cuda: asked for"
    assert_batch(dna, r)
    wide = [(rng.integers(0, 500, 10), rng.integers(0, 500, 300))]
    r = lcs.solve_many(wide, backend="cuda", traceback=True, verify=0)
    assert (
        r.stats.backend == "cpu"
        and "words of masks a GPU thread (at most 64)" in r.stats.extra["backend_choice"]
    )
    assert_batch(wide, r)


def _positions(r):
    return [np.concatenate(r.subsequences.positions(p)).tolist() for p in range(len(r.values))]


@pytest.mark.gpu
def test_gpu_subsequences_equal_the_cpu_at_scale():
    rng = np.random.default_rng(9)
    pairs = [
        (rng.integers(0, 4, 1000).astype(np.uint8), rng.integers(0, 4, 1000).astype(np.uint8))
        for _ in range(2000)
    ]
    gpu = lcs.solve_many(pairs, backend="cuda", traceback=True)
    cpu = lcs.solve_many(pairs, backend="cpu", traceback=True, verify=0)
    assert gpu.stats.backend == "cuda" and np.array_equal(gpu.values, cpu.values)
    assert _positions(gpu) == _positions(cpu)  # the same walk on both
    a, b = np.stack([x for x, _ in pairs]), np.stack([y for _, y in pairs[::-1]])[:, :700]
    rows = lcs.solve_many((a, b), backend="cuda", traceback=True)
    assert _positions(rows) == _positions(lcs.solve_many((a, b), backend="cpu", traceback=True, verify=0))
    for p in (0, 999, 1999):
        assert_lcs(a[p], b[p], int(rows.values[p]), rows.subsequences[p], rows.subsequences.positions(p))


@pytest.mark.parametrize("solver", ["lcs", "edit_distance"])
def test_a_malformed_pair_is_its_own_error_in_every_mode(solver):
    """Issue 35: one pair that is not two sequences (one, three, None, a number, one str) gets -1 and
    an error naming it, with lengths only and with tracebacks alike (edit distance's tracebacks raised
    TypeError / ValueError for the whole batch)."""
    from gpudp.problems import edit_distance

    mod = lcs if solver == "lcs" else edit_distance
    pairs = [("GATTACA", "TACCA"), ("A",), None, 5, ("A", "B", "C"), "AC", ("A", 1.5), ("AB", "BA")]
    got = [mod.solve_many(pairs, backend="cpu", traceback=t, verify=0) for t in (False, True)]
    assert got[0].values.tolist() == got[1].values.tolist() and got[0].errors == got[1].errors
    assert got[0].values[1:7].tolist() == [-1] * 6 and sorted(got[0].errors) == [1, 2, 3, 4, 5, 6]
    assert all(e.startswith(f"pairs[{p}]") for p, e in got[0].errors.items())
    assert "got a tuple of 1" in got[0].errors[1] and "got NoneType" in got[0].errors[2]
    assert "got one str" in got[0].errors[5] and "float" in got[0].errors[6]
    assert got[1].solutions[0].checked and got[1].solutions[1] is None


@pytest.mark.parametrize("solver", ["lcs", "edit_distance"])
@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"pairs": None}, "pairs"),
        ({"pairs": 5}, "pairs"),
        ({"pairs": "GATTACA"}, "pairs"),
        ({"verify": "2"}, "verify"),
        ({"verify": 2.0}, "verify"),
        ({"verify": -1}, "verify"),
        ({"traceback": "no"}, "traceback"),
    ],
)
def test_solve_many_refuses_bad_arguments(solver, kwargs, field):
    """Issue 35: TypeError / AttributeError / silent truthiness before; now InputError naming the
    argument, in both modes, before any pair is read."""
    from gpudp.problems import edit_distance

    mod = lcs if solver == "lcs" else edit_distance
    args = {"pairs": [("AC", "CA")], "backend": "cpu", **kwargs}
    for t in (False, True):
        with pytest.raises(InputError) as e:
            mod.solve_many(**{"traceback": t, **args})
        assert e.value.field == field


def test_verify_none_true_false_and_counts():
    """``verify``: None and True the default (2 pairs), False none, a count that many."""
    pairs = [("GATTACA", "TACCA")] * 5
    assert len(lcs.solve_many(pairs, backend="cpu", verify=None).verified) == batch.VERIFY == 2
    assert len(lcs.solve_many(pairs, backend="cpu", verify=True).verified) == 2
    assert lcs.solve_many(pairs, backend="cpu", verify=False).verified == []
    assert len(lcs.solve_many(pairs, backend="cpu", verify=np.int64(3)).verified) == 3


def test_a_batch_past_the_memory_is_refused_before_it_starts(monkeypatch):
    """Issue 35: a list of pairs whose packing and results would not fit is refused with the
    figures (``field`` "memory"), not left to die of MemoryError half way."""
    monkeypatch.setattr(batch, "available_memory", lambda: 100_000)
    with pytest.raises(InputError, match=r"a batch of 1,000 pairs needs about .* GiB of host memory"):
        lcs.solve_many([("AC", "CA")] * 1000, backend="cpu")
    assert lcs.solve_many([("AC", "CA")] * 10, backend="cpu").values.tolist() == [1] * 10


@pytest.mark.parametrize("parallel_from", [0, 1 << 40])
def test_bytes_present_either_way(monkeypatch, parallel_from):
    """ensure_table marks the bytes present on every thread (long sides) or on one (short ones):
    the same table either way, each side's bytes and no others, the codes dense in byte order."""
    monkeypatch.setattr(bitparallel, "PRESENT_PARALLEL", parallel_from)
    rng = np.random.default_rng(5)
    pat = rng.choice(np.array([0, 7, 65, 255], np.uint8), 1000)
    txt = rng.choice(np.array([3, 65, 200], np.uint8), 777)
    packed = bitparallel.Packed(
        pat, np.array([0, 1000]), txt, np.array([0, 777]), 0, np.zeros(256, np.uint8), True
    )
    bitparallel.ensure_table(packed)
    present = sorted({0, 3, 7, 65, 200, 255})
    assert packed.sigma == len(present)
    assert [int(packed.table[b]) for b in present] == list(range(len(present)))
