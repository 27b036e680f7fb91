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


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([31, 32, 64, 96, 100]), st.integers(-2, 2))
def test_the_cpu_stops_early_only_past_the_cutoff(seed, n, delta):
    """The cpu's text loops stop a pair once its score cannot come back within the cutoff (the
    distance so far less the symbols left above it; the LCS so far plus them below it, tested every
    32 symbols): at a cutoff of the true score and one either side, every value is the reference's
    (text lengths that end on a test, 32 and 64, included). Each fails with the test one step
    early (``>=`` for ``>``, ``<=`` for ``<``)."""
    rng = np.random.default_rng(seed)
    q = ["".join(rng.choice(list("ACG"), n)) for _ in range(2)]
    c = ["".join(rng.choice(list("ACG"), n)) for _ in range(2)] + [q[0][: n // 2] + q[0][n // 2 :][::-1]]
    for cdist, ref, distance in SOLVERS:
        want = reference(ref, q, c)
        for cutoff in sorted({max(int(v) + delta, 0) for v in want.reshape(-1)}):
            got = cdist(q, c, backend="cpu", score_cutoff=cutoff, verify=0)
            assert np.array_equal(got, reference(ref, q, c, cutoff, distance)), (cdist, cutoff)


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
@pytest.mark.parametrize("short_words", [4, 16, 0])
def test_gpu_matches_the_cpu_at_scale(monkeypatch, short_words):
    """Lengths 0-300 (short kernels of 1 to 4 words, or up to 16, or none, beside the general
    one), cutoffs (20: most cells stop early), and rows of 2-D arrays, against the cpu."""
    from gpudp.problems.lcs.cross import cuda as cross_cuda

    monkeypatch.setattr(cross_cuda, "SHORT_WORDS", short_words)
    rng = np.random.default_rng(6)
    q = [bytes(rng.integers(0, 4, rng.integers(0, 300)).astype(np.uint8)) for _ in range(300)]
    c = [bytes(rng.integers(0, 4, rng.integers(0, 300)).astype(np.uint8)) for _ in range(400)]
    for cdist, _, _ in SOLVERS:
        for cutoff in (None, 20, 100):
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


# ------------------------------------------------------------------------------------------------
# The short patterns' kernels (a kernel a word count, the words in registers, the masks in shared
# memory) beside the general one, and the launch's knobs: in the simulator, tiny

#: lengths around one and two words' boundaries
SHORT_LENGTHS = st.one_of(st.integers(0, 4), st.sampled_from([63, 64, 65, 127, 128, 129]))


@st.composite
def short_sides(draw):
    """Two lists of str over one alphabet (bytes-like ASCII, or past it), lengths across 1, 2 and 3
    words; at least one query and one choice."""
    alphabet = draw(st.sampled_from(["AC", "ACGT", "ab\u00e9\u4e2d"]))

    def seq():
        n = draw(SHORT_LENGTHS)
        return "".join(draw(st.lists(st.sampled_from(alphabet), min_size=n, max_size=n)))

    return [seq() for _ in range(draw(st.integers(1, 3)))], [seq() for _ in range(draw(st.integers(1, 2)))]


def _cuda_run(cdist_solver, q, c, cutoff, distance):
    """``(result, the kernels the launch ran)`` of one cross product on the cuda backend."""
    from gpudp.problems.lcs import cross

    out, stats = cross.run(cdist_solver, q, c, "cuda", None, cutoff, 0, distance)
    return out, stats.extra.get("kernels", [])


@pytest.mark.sim
@settings(max_examples=8, deadline=None)
@given(short_sides(), st.sampled_from([None, 0, 2, 70]), st.sampled_from([0, 1, 2]))
def test_cuda_short_kernels_match_the_reference(monkeypatch_module, qc, cutoff, short_words):
    """Patterns of 1, 2 and 3 words, empty ones, both cutoffs, text past ASCII: each through the
    kernel of its word count where it has one (``SHORT_WORDS``: 0 none, 1, 2), the rest through the
    general kernel in the same chunk."""
    from gpudp.problems.lcs.cross import cuda as cross_cuda

    monkeypatch_module.setattr(cross_cuda, "SHORT_WORDS", short_words)
    q, c = qc
    for solver, ref, distance in ((lcs._SOLVER, lcs_ref, False), (edit_distance._SOLVER, lev_ref, True)):
        got, kernels = _cuda_run(solver, q, c, cutoff, distance)
        assert np.array_equal(got, reference(ref, q, c, cutoff, distance)), (solver.what, q, c, cutoff)
        if short_words == 0:
            assert all(k.startswith("general") for k in kernels), kernels


@pytest.fixture(scope="module")
def monkeypatch_module():
    """A monkeypatch that hypothesis' examples of one test share (undone after the module)."""
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


#: lengths of the early stop's tests: within a word, across one and two words' boundaries, and ending
#: on a test (64, 128: a multiple of the 32 symbols between two)
STOP_LENGTHS = st.sampled_from([20, 63, 64, 65, 100, 127, 128, 129, 150])


@st.composite
def stop_sides(draw):
    """A query and two choices over ``ACG``: the query itself (each text symbol moves both scores by
    one: every test's bound is tight), the query with a few symbols changed near its end, and another
    string; returns the sides and the cell whose true score sets the cutoffs."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    word = lambda n: "".join(rng.choice(list("ACG"), n))  # noqa: E731
    q = word(draw(STOP_LENGTHS))
    tail = [rng.integers(max(len(q) - 40, 0), len(q)) for _ in range(draw(st.integers(1, 3)))]
    near = "".join("T" if k in tail else x for k, x in enumerate(q))
    c = [draw(st.sampled_from([q, near])), word(draw(STOP_LENGTHS))]
    return [q], c, draw(st.integers(0, len(c) - 1))


@pytest.mark.sim
@settings(max_examples=6, deadline=None)
@given(stop_sides(), st.sampled_from([4, 0]), st.sampled_from([32, 1]))
def test_cuda_stops_early_only_past_the_cutoff(monkeypatch_module, qcj, short_words, stop_every):
    """The cross kernels stop a cell once its vectors so far decide its cut-off score (the LCS so
    far plus the symbols left below the cutoff; the distance so far less them above it), tested
    every ``STOP_EVERY`` symbols: at a cutoff of a cell's true score and one either side, every
    value is the reference's and the cpu's, through the short kernels and the general one. Each
    fails with either bound one symbol early (``left - 1``). A product with no cutoff (an LCS's
    cutoff 0 is none) runs the kernels without the tests."""
    from gpudp.problems.lcs import cross
    from gpudp.problems.lcs.cross import cuda as cross_cuda

    monkeypatch_module.setattr(cross_cuda, "SHORT_WORDS", short_words)
    monkeypatch_module.setattr(cross_cuda, "STOP_EVERY", stop_every)
    q, c, j = qcj
    for (solver, ref, distance), (cdist, _, _) in zip(
        ((lcs._SOLVER, lcs_ref, False), (edit_distance._SOLVER, lev_ref, True)), SOLVERS, strict=True
    ):
        true = int(reference(ref, q, c)[0, j])
        for cutoff in [None, *sorted({max(true + d, 0) for d in (-1, 0, 1)})]:
            got, stats = cross.run(solver, q, c, "cuda", None, cutoff, 0, distance)
            want = reference(ref, q, c, cutoff, distance)
            assert np.array_equal(got, want), (solver.what, q, c, cutoff, got, want)
            assert np.array_equal(got, cdist(q, c, backend="cpu", score_cutoff=cutoff, verify=0))
            kernels = stats.extra["kernels"]
            assert all(k.startswith("short" if short_words else "general") for k in kernels), kernels
            cut = cutoff is not None and (distance or cutoff > 0)
            assert stats.extra["stop_every"] == (stop_every if cut else 0), (solver.what, cutoff)


@pytest.mark.sim
def test_cuda_short_and_general_kernels_in_one_chunk(monkeypatch):
    """One chunk of patterns of 0, 1, 2 and 3 words with ``SHORT_WORDS`` 2: the short kernels of 1
    and 2 words and the general one all run (named in the stats), each pattern's row where it
    belongs, the texts read 8 bytes at a time or a byte a step; either side as the patterns; the
    same with every knob off (the launch as before)."""
    from gpudp.problems.lcs.cross import cuda as cross_cuda

    rng = np.random.default_rng(7)
    q = [bytes(rng.choice(list(b"ACGT"), n).astype(np.uint8)) for n in (130, 0, 64, 3, 65, 129)]
    c = [bytes(rng.choice(list(b"ACGT"), n).astype(np.uint8)) for n in (5, 66, 129, 2)]
    q.append(b"A" * 64 + b"CG" * 30 + b"T")  # a second word unlike the first
    c.append(b"C" * 70)
    monkeypatch.setattr(cross_cuda, "SHORT_WORDS", 2)
    for wide in (True, False):  # the texts read 8 bytes at a time, or a byte a step
        monkeypatch.setattr(cross_cuda, "WIDE_READS", wide)
        for solver, ref, distance in ((lcs._SOLVER, lcs_ref, False), (edit_distance._SOLVER, lev_ref, True)):
            got, kernels = _cuda_run(solver, q, c, None, distance)
            assert np.array_equal(got, reference(ref, q, c, distance=distance)), wide
            assert kernels == ["general, 4 words", "short, 1 word", "short, 2 words"]
            got, _ = _cuda_run(solver, c, q, None, distance)  # the queries as the texts
            assert np.array_equal(got, reference(ref, c, q, distance=distance)), wide
    knobs = {"SHORT_WORDS": 0, "ONE_UPLOAD": False, "PINNED_RESULT_BYTES": 0, "STOP_EVERY": 0}
    for knob, off in knobs.items():
        monkeypatch.setattr(cross_cuda, knob, off)
    for solver, ref, distance in ((lcs._SOLVER, lcs_ref, False), (edit_distance._SOLVER, lev_ref, True)):
        got, kernels = _cuda_run(solver, q, c, 3, distance)
        assert np.array_equal(got, reference(ref, q, c, 3, distance=distance))
        assert kernels == ["general, 4 words"]


@pytest.mark.sim
def test_cuda_many_codes_take_the_general_kernel():
    """Text of more distinct symbols than the short kernels' shared rows (:data:`SHORT_SYMBOLS`)
    runs through the general kernel, short or not."""
    from gpudp.problems.lcs.cross import cuda as cross_cuda

    rng = np.random.default_rng(8)
    letters = [chr(0x4E00 + k) for k in range(cross_cuda.SHORT_SYMBOLS + 20)]
    q = ["".join(letters[:150]), "".join(rng.choice(letters, 20))]
    c = ["".join(letters[130:]), "".join(rng.choice(letters, 7))]
    for solver, ref, distance in ((lcs._SOLVER, lcs_ref, False), (edit_distance._SOLVER, lev_ref, True)):
        got, kernels = _cuda_run(solver, q, c, None, distance)
        assert np.array_equal(got, reference(ref, q, c, distance=distance))
        assert kernels == ["general, 4 words"]


@pytest.mark.sim
def test_cuda_result_in_page_locked_memory_is_the_callers():
    """A small result comes on a page-locked block of the pool, as a plain writable ndarray that
    keeps its lease: a second product of the same shape, while the first is held, does not write
    over it; dropped, the lease goes (its block back to the pool)."""
    import gc
    import weakref

    q, c = ["ACGT", "AC", "GGT"], ["ACG", "T"]
    first = edit_distance.cdist(q, c, backend="cuda")
    assert type(first) is np.ndarray and first.flags.writeable and first.flags.c_contiguous
    want = reference(lev_ref, q, c, distance=True)
    second = edit_distance.cdist(c * 3, q[:2], backend="cuda")  # another 6 cells of int32
    assert np.array_equal(first, want)
    assert np.array_equal(second, reference(lev_ref, c * 3, q[:2], distance=True))
    held = first
    while isinstance(held, np.ndarray):  # down to the memoryview beneath the plain array
        held = held.base
    held = held.obj
    while getattr(held, "_lease", None) is None:  # from a view of the lease to the lease
        held = held.base
    gone = weakref.ref(held)
    del held, first
    gc.collect()
    assert gone() is None


def test_the_bench_times_a_cutoff(tmp_path):
    """``tools/cdist_bench.py --cutoff none,0.1`` times each problem without a cutoff and at a tenth
    of the length (the edit distance at 10, the LCS at 90 of 100), every run's values equal to the
    first's and rapidfuzz's; a cutoff out of 0..1 is refused before anything runs."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parents[1] / "tools" / "cdist_bench.py"
    spec = importlib.util.spec_from_file_location("cdist_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "runs.json"
    argv = ["--sizes", "3x4x100", "--backends", "cpu", "--peers", "rapidfuzz", "--repeat", "1"]
    assert bench.main([*argv, "--cutoff", "none,0.1", "--out", str(out)]) == 0
    runs = [r for r in json.loads(out.read_text())["runs"] if "skipped" not in r]
    cutoffs = {(r["problem"], r["score_cutoff"]) for r in runs}
    assert cutoffs == {("lcs", None), ("lcs", 90), ("edit", None), ("edit", 10)}
    assert all(r["equal"] is not False for r in runs)
    q, c = bench.data(3, 4, 100)
    for problem, ref, distance in (("lcs", lcs_ref, False), ("edit", lev_ref, True)):
        full = reference(ref, q, c)
        cut = bench.score_cutoff(problem, "0.1", 100)
        assert np.array_equal(bench.cut_off(full, problem, cut), reference(ref, q, c, cut, distance))
    with pytest.raises(SystemExit) as e:
        bench.main([*argv, "--cutoff", "2"])
    assert e.value.code == 2
