"""Cross products (``lcs.cdist``, ``edit_distance.cdist``): every query against every choice, against
a plain-Python DP on the cpu and (tiny) in the CUDA simulator; patterns across word boundaries and
either side as the patterns; the input forms (lists of str, bytes, arrays, 2-D arrays); rapidfuzz's
``score_cutoff`` both ways; the result's dtype; bad input refused naming the sequence; the
cross-check of ``verify``; a result too large for memory refused, one too large for the GPU at once
run in chunks."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_lcs import lcs_length as lcs_ref  # the textbook table, in pure Python

from gpudp import CheckError, InputError
from gpudp.problems import edit_distance, lcs
from gpudp.problems.lcs import batch
from gpudp.problems.lcs.cpu import Computed


def lev_ref(a, b) -> int:
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def reference(fn, queries, choices, cutoff=None, distance=False) -> np.ndarray:
    out = np.array([[fn(list(q), list(c)) for c in choices] for q in queries], np.int64)
    out = out.reshape(len(queries), len(choices))
    if cutoff is not None:
        out = np.where(out > cutoff, cutoff + 1, out) if distance else np.where(out < cutoff, 0, out)
    return out


SOLVERS = [(lcs.cdist, lcs_ref, False), (edit_distance.cdist, lev_ref, True)]

#: lengths around the 64-bit words' boundaries, and short ones
LENGTHS = st.one_of(st.integers(0, 12), st.sampled_from([63, 64, 65, 70]))


@st.composite
def sides(draw, max_seqs=4):
    """Two lists of str over one alphabet (ASCII or not), lengths across word boundaries."""
    alphabet = draw(st.sampled_from(["AC", "ACGT", "ab\u00e9\u4e2d"]))

    def seq():
        n = draw(LENGTHS)
        return "".join(draw(st.lists(st.sampled_from(alphabet), min_size=n, max_size=n)))

    q = [seq() for _ in range(draw(st.integers(0, max_seqs)))]
    c = [seq() for _ in range(draw(st.integers(0, max_seqs)))]
    return q, c


@settings(max_examples=20)
@given(sides(), st.sampled_from([None, 0, 3, 40]))
def test_cpu_matches_the_reference(qc, cutoff):
    q, c = qc
    for cdist, ref, distance in SOLVERS:
        got = cdist(q, c, backend="cpu", score_cutoff=cutoff, verify=1)
        assert got.shape == (len(q), len(c)) and got.dtype == np.int32
        assert np.array_equal(got, reference(ref, q, c, cutoff, distance)), (cdist, q, c, cutoff)


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.sim)])
def test_cells_the_lengths_decide_at_the_cutoffs_edge(backend):
    """A cell whose cut-off score its lengths decide is not computed (an LCS shorter than the cutoff
    can be, an edit distance whose length difference passes it): the cells on both sides of that
    edge, against the reference."""
    rng = np.random.default_rng(4)
    word = lambda n: "".join(rng.choice(list("ACG"), n))  # noqa: E731
    q = [word(n) for n in (3, 4, 5, 9)]
    c = [word(n) for n in (0, 3, 4, 8, 9)]
    for cdist, ref, distance in SOLVERS:
        for cutoff in (1, 4, 5):
            got = cdist(q, c, backend=backend, score_cutoff=cutoff, verify=0)
            assert np.array_equal(got, reference(ref, q, c, cutoff, distance)), (cdist, cutoff)


@pytest.mark.parametrize("mq, mc", [(64, 5), (5, 64), (65, 129), (130, 1), (0, 0)])
def test_either_side_as_the_patterns(mq, mc):
    """The side of less work is the patterns (long queries: the choices); the result is the same
    matrix either way, multi-word patterns included."""
    rng = np.random.default_rng(mq * 1000 + mc)
    q = [bytes(rng.integers(0, 3, mq + k).astype(np.uint8)) for k in range(3)]
    c = [bytes(rng.integers(0, 3, mc + k).astype(np.uint8)) for k in range(2)]
    for cdist, ref, distance in SOLVERS:
        assert np.array_equal(cdist(q, c, backend="cpu"), reference(ref, q, c, distance=distance))
        assert np.array_equal(cdist(c, q, backend="cpu"), reference(ref, c, q, distance=distance))


def test_input_forms():
    """Rows of 2-D arrays (of different dtypes), lists of bytes, of 1-D arrays and of int lists
    (Python ints past 64 bits too), tuples, and an object array of str: each side as solve_many
    reads a pair's."""
    rng = np.random.default_rng(3)
    a = rng.integers(0, 4, (3, 9)).astype(np.uint8)
    b = rng.integers(0, 4, (2, 66)).astype(np.int64)
    rows_a, rows_b = [list(x) for x in a], [list(x) for x in b]
    for cdist, ref, distance in SOLVERS:
        want = reference(ref, rows_a, rows_b, distance=distance)
        assert np.array_equal(cdist(a, b, backend="cpu", verify=0), want)
        assert np.array_equal(cdist(a, [bytes(x.astype(np.uint8)) for x in b], backend="cpu", verify=0), want)
        assert np.array_equal(cdist(tuple(a), list(b), backend="cpu", verify=0), want)
        assert np.array_equal(cdist(rows_a, b, backend="cpu", verify=0), want)
    big = [[2**70, 1, 2**70], [5]]
    assert lcs.cdist(big, [[1, 2**70], [2**70 + 1]], backend="cpu", verify=0).tolist() == [[2, 0], [0, 0]]
    words = np.array(["kitten", "flaw"], dtype=object)
    assert edit_distance.cdist(words, ("sitting", "lawn"), backend="cpu").tolist() == [[3, 5], [7, 2]]


def test_against_rapidfuzz():
    rf = pytest.importorskip("rapidfuzz")
    from rapidfuzz.distance import LCSseq, Levenshtein

    rng = np.random.default_rng(4)
    q = ["".join(rng.choice(list("ACGT\u00e9"), rng.integers(0, 150))) for _ in range(12)]
    c = ["".join(rng.choice(list("ACGT\u00e9"), rng.integers(0, 150))) for _ in range(9)]
    for cutoff in (None, 60):
        for cdist, scorer in ((lcs.cdist, LCSseq.similarity), (edit_distance.cdist, Levenshtein.distance)):
            want = rf.process.cdist(q, c, scorer=scorer, score_cutoff=cutoff)
            assert np.array_equal(cdist(q, c, backend="cpu", score_cutoff=cutoff), want)


def test_dtype():
    """int32 by default; a narrower dtype where every possible value fits (a distance's cutoff
    bounds it), refused where one might not, and anything but an integer dtype refused."""
    q, c = ["x" * 300, "xy"], ["y" * 3]
    got = edit_distance.cdist(q, c, backend="cpu", dtype=np.uint8, score_cutoff=5)
    assert got.dtype == np.uint8 and got.tolist() == [[6], [2]]
    with pytest.raises(InputError, match="uint8 holds at most 255.*reach 300") as e:
        edit_distance.cdist(q, c, backend="cpu", dtype="uint8")
    assert e.value.field == "dtype"
    assert lcs.cdist(q, c, backend="cpu", dtype=np.int64).dtype == np.int64  # longest LCS 3
    for bad in (float, "bool", "nonsense"):
        with pytest.raises(InputError, match="integer dtype"):
            lcs.cdist(q, c, dtype=bad)


@pytest.mark.parametrize(
    "queries, choices, field, message",
    [
        (["ab", None], ["a"], "queries[1]", "expected str, bytes"),
        (["ab"], ["a", "b", 7], "choices[2]", "expected str, bytes"),
        ([np.array([1.5])], [[1]], "queries[0]", "float"),
        (["ab"], [b"ab"], "choices[0]", "a str compares only with a str"),
        ([b"ab", "ab"], [b"a"], "queries[1]", "a str compares only with a str"),
        (np.zeros((2, 3), np.uint8), ["ab"], "choices[0]", "a str compares only with a str"),
        ("abc", ["a"], "queries", "put it in a list"),
        (["a"], np.arange(3), "choices", "not a list of sequences"),
        (np.zeros((2, 3)), ["a"], "queries", "must hold integers"),
        (None, ["a"], "queries", "a list of sequences"),
    ],
)
def test_bad_input_is_refused_naming_it(queries, choices, field, message):
    for cdist, _, _ in SOLVERS:
        with pytest.raises(InputError, match=message) as e:
            cdist(queries, choices, backend="cpu")
        assert e.value.field == field


@pytest.mark.parametrize(
    "kw", [{"score_cutoff": -1}, {"score_cutoff": 1.5}, {"score_cutoff": True}, {"verify": -1}]
)
def test_bad_options(kw):
    with pytest.raises(InputError, match=next(iter(kw))):
        lcs.cdist(["a"], ["a"], backend="cpu", **kw)


def test_empty_sides_and_sequences():
    assert lcs.cdist([], ["a"], backend="cpu").shape == (0, 1)
    assert edit_distance.cdist(["a", ""], [], backend="cpu").shape == (2, 0)
    assert edit_distance.cdist(["", "abc"], ["", "ab"], backend="cpu").tolist() == [[0, 2], [3, 1]]
    assert lcs.cdist(["", "abc"], ["", "ab"], backend="cpu").tolist() == [[0, 0], [0, 2]]


def test_verify_catches_a_wrong_result(monkeypatch):
    from gpudp.problems.lcs import cpu

    def wrong(packed, lo, hi, out, turned):
        out[:] = 1
        return Computed(out, 0.0)

    monkeypatch.setattr(cpu, "cross", wrong)
    with pytest.raises(CheckError, match=r"queries\[\d\] against choices\[\d\]"):
        lcs.cdist(["abc", "abd"], ["abc", "xbc"], backend="cpu", verify=4)
    assert lcs.cdist(["abc"], ["x"], backend="cpu", verify=0).tolist() == [[1]]  # nothing checked


def test_a_result_too_large_is_refused_first(monkeypatch):
    monkeypatch.setattr(batch, "available_memory", lambda: 1 << 20)
    q = ["a"] * 1000
    with pytest.raises(InputError, match=r"1,000 x 1,000 sequences.*GiB") as e:
        lcs.cdist(q, q, backend="cpu")
    assert e.value.field == "memory"


# ------------------------------------------------------------------------------------------------
# The GPU kernels: in the simulator, tiny


@pytest.mark.sim
@settings(max_examples=6)
@given(sides(max_seqs=3), st.sampled_from([None, 2]))
def test_cuda_matches_the_reference(qc, cutoff):
    q, c = qc
    for cdist, ref, distance in SOLVERS:
        got = cdist(q, c, backend="cuda", score_cutoff=cutoff, verify=1)
        assert np.array_equal(got, reference(ref, q, c, cutoff, distance)), (cdist, q, c, cutoff)


@pytest.mark.sim
def test_cuda_chunks_by_rows(monkeypatch):
    """A product over the device's budget runs in chunks of pattern rows, two in flight; either
    side as the patterns (the choices' chunks are columns of the result); a 2-D array side."""
    from gpudp.problems.lcs.cross import cuda as cross_cuda

    monkeypatch.setattr(cross_cuda, "CHUNK_BYTES", 24)
    rng = np.random.default_rng(5)
    q = rng.integers(0, 3, (4, 7)).astype(np.uint8)
    c = [bytes(rng.integers(0, 3, k).astype(np.uint8)) for k in (0, 5, 70)]
    for cdist, ref, distance in SOLVERS:
        for a, b in ((q, c), (c, q)):
            want = reference(ref, [list(x) for x in a], [list(x) for x in b], distance=distance)
            assert np.array_equal(cdist(a, b, backend="cuda"), want)


@pytest.mark.gpu
def test_gpu_matches_the_cpu_at_scale():
    rng = np.random.default_rng(6)
    q = [bytes(rng.integers(0, 4, rng.integers(0, 300)).astype(np.uint8)) for _ in range(300)]
    c = [bytes(rng.integers(0, 4, rng.integers(0, 300)).astype(np.uint8)) for _ in range(400)]
    for cdist, _, _ in SOLVERS:
        for cutoff in (None, 100):
            gpu = cdist(q, c, backend="cuda", score_cutoff=cutoff)
            assert np.array_equal(gpu, cdist(q, c, backend="cpu", score_cutoff=cutoff, verify=0))
    a, b = rng.integers(0, 20, (200, 1000)).astype(np.uint8), rng.integers(0, 20, (300, 100)).astype(np.uint8)
    for cdist, _, _ in SOLVERS:
        assert np.array_equal(cdist(a, b, backend="cuda"), cdist(a, b, backend="cpu", verify=0))


def test_command_line_pairs_all_is_a_cross_product(tmp_path, capsys):
    """``gpudp solve lcs A B --pairs all`` runs every record of A against every record of B as one
    cross product (no pair made): a line a pair, in order, as before."""
    from gpudp.cli import main

    a, b = tmp_path / "a.fa", tmp_path / "b.fa"
    a.write_text(">r1\nGATTACA\n>r2\nACGT\n>r3\n\n")
    b.write_text(">s1\nTACCA\n>s2\nTTTT\n")
    assert main(["solve", "lcs", str(a), str(b), "--pairs", "all", "--backend", "cpu", "--json"]) == 0
    out = capsys.readouterr()
    rows = [json.loads(line) for line in out.out.splitlines()]
    want = reference(lcs_ref, ["GATTACA", "ACGT", ""], ["TACCA", "TTTT"]).reshape(-1).tolist()
    assert [r["lcs"] for r in rows] == want and [r["name_b"] for r in rows[:2]] == ["s1", "s2"]
    assert "6 pairs" in out.err and "masks built once" in out.err and "2 re-solved" in out.err
