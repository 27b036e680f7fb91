"""Edit distance: one pair with its script (engine, checked) and batches (Myers' bit vectors), each
against the textbook table in plain Python, on the cpu and (tiny) in the CUDA simulator."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_examples import levenshtein  # the textbook table, in pure Python
from test_lcs import lcs_length  # the same for the LCS

from gpudp import CheckError
from gpudp.problems import edit_distance as ed
from gpudp.problems.edit_distance import bitparallel
from gpudp.problems.lcs.bitparallel import pack

text = st.text(alphabet="ACGT", max_size=40)


@settings(max_examples=60)
@given(text, text)
def test_one_pair_with_its_script(a, b):
    sol = ed.solve(a, b, backend="cpu", progress=False)
    assert sol.value == levenshtein(a, b) and sol.checked


@st.composite
def batches(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    sigma = draw(st.sampled_from([2, 4, 20, 256]))
    return [
        (
            rng.integers(0, sigma, rng.integers(0, 200)).astype(np.uint8),
            rng.integers(0, sigma, rng.integers(0, 200)).astype(np.uint8),
        )
        for _ in range(draw(st.integers(0, 10)))
    ]


@settings(max_examples=40)
@given(batches())
def test_batch_matches_the_reference(pairs):
    r = ed.solve_many(pairs, backend="cpu", verify=1)
    assert r.values.tolist() == [levenshtein(list(a), list(b)) for a, b in pairs] and not r.errors


@pytest.mark.parametrize("m", [1, 63, 64, 65, 128, 129])
def test_patterns_across_word_boundaries(m):
    rng = np.random.default_rng(m)
    pairs = [
        (rng.integers(0, 3, m).astype(np.uint8), rng.integers(0, 3, k).astype(np.uint8))
        for k in (m, 2 * m, 1)
    ]
    pairs += [
        (np.zeros(m, np.uint8), np.ones(m + 3, np.uint8)),
        (np.zeros(m, np.uint8), np.zeros(m, np.uint8)),
    ]
    got = bitparallel.distances_cpu(pack(pairs)).tolist()
    assert got == [levenshtein(list(a), list(b)) for a, b in pairs]


def test_mixed_inputs_arrays_and_errors():
    pairs = [("kitten", "sitting"), ("héllo", "hello"), ([10**20, 1], [1]), ("x", b"x"), (b"", b"abc")]
    r = ed.solve_many(pairs, backend="cpu")
    assert r.values.tolist() == [3, 1, 1, -1, 3] and list(r.errors) == [3]
    a = np.frombuffer(b"ACGTACGTAC" * 3, np.uint8).reshape(3, 10)
    b = a[:, ::-1].copy()
    assert ed.solve_many((a, b), backend="cpu").values.tolist() == [
        levenshtein(x.tolist(), y.tolist()) for x, y in zip(a, b, strict=True)
    ]


def test_traceback_and_the_cross_check(monkeypatch):
    r = ed.solve_many([("flaw", "lawn"), ("", "")], backend="cpu", traceback=True, progress=False)
    assert r.values.tolist() == [2, 0] and r.solutions[0].solution[0] == ("delete", 0, -1)
    monkeypatch.setattr(
        bitparallel, "distances_cpu", lambda packed: np.zeros(len(packed.pat_off) - 1, np.int64)
    )
    with pytest.raises(CheckError, match="the batch gave edit distance 0"):
        ed.solve_many([("AAA", "CCC")] * 3, backend="cpu", verify=1)


def test_the_check_catches_a_wrong_script():
    sol = ed.solve("kitten", "sitting", backend="cpu")
    sol.solution = sol.solution[1:]
    with pytest.raises(CheckError):
        sol.check()


@pytest.mark.sim
def test_cuda_batch_matches_the_reference():
    rng = np.random.default_rng(9)
    pairs = [
        (rng.integers(0, 4, m).astype(np.uint8), rng.integers(0, 4, k).astype(np.uint8))
        for m, k in [(0, 5), (5, 0), (1, 1), (40, 70), (64, 64), (65, 90), (130, 20)]
    ]
    r = ed.solve_many(pairs, backend="cuda", verify=1)
    assert r.stats.backend == "cuda" and r.values.tolist() == [
        levenshtein(list(a), list(b)) for a, b in pairs
    ]


@pytest.mark.sim
def test_cuda_long_patterns_a_warp_a_pair(monkeypatch):
    """Myers' blocks over a warp's lanes (``LONG_WORDS`` lowered to 1, so that small pairs take
    it): a lane's horizontal difference into the next lane a step later, the score in the lane
    holding the last word; patterns of one word to 33 (two words a lane), texts shorter and
    longer than the 31-step skew, empty sides; against the textbook table and a thread a pair."""
    from gpudp.problems.lcs import cuda as lcs_cuda

    rng = np.random.default_rng(12)
    sizes = [(0, 5), (1, 1), (63, 20), (65, 3), (129, 40), (200, 36), (2100, 3), (7, 0)]
    pairs = [
        (rng.integers(0, 4, m).astype(np.uint8), rng.integers(0, 4, k).astype(np.uint8)) for m, k in sizes
    ]
    pairs.append((pairs[3][0], pairs[3][0][::-1].copy()))  # its own reverse: 2 words, past the skew
    want = [levenshtein(list(a), list(b)) for a, b in pairs]
    monkeypatch.setattr(lcs_cuda, "LONG_WORDS", 1)
    assert ed.solve_many(pairs, backend="cuda", verify=0).values.tolist() == want
    monkeypatch.setattr(lcs_cuda, "LONG_WORDS", 0)
    assert ed.solve_many(pairs[4:6], backend="cuda", verify=0).values.tolist() == want[4:6]


@pytest.mark.sim
def test_cuda_batch_staged_in_slices(monkeypatch):
    """The distances through the LCS's launch with the batch staged in page-locked memory and cut
    into slices, a kernel each: bytes (empty sides, an empty pair; later slices bring new bytes,
    so the table grows), wide codes and the rows form."""
    from test_lcs_many import STAGED_SIZES, dna_pairs, kernels_used, staged_uploads

    staged = staged_uploads(monkeypatch, slice_bytes=64)
    used = kernels_used(monkeypatch)
    rng = np.random.default_rng(15)
    dna = dna_pairs(rng, STAGED_SIZES[:4], b"AC") + dna_pairs(rng, STAGED_SIZES[4:], b"ACGT")
    wide = [(rng.integers(-5, 1 << 40, m), rng.integers(-5, 1 << 40, k)) for m, k in STAGED_SIZES]
    assert pack(wide).pat.itemsize == 4  # over 256 codes: 4 bytes a symbol
    a = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, (5, 40))]
    b = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, (5, 66))]
    for batch, pairs in ((dna, dna), (wide, wide), ((a, b), list(zip(a, b, strict=True)))):
        staged.clear(), used.clear()
        r = ed.solve_many(batch, backend="cuda", verify=2)
        assert r.stats.backend == "cuda" and len(used) > 1 and len(staged) == 2 * len(used)
        assert r.values.tolist() == [levenshtein(list(x), list(y)) for x, y in pairs]
        assert r.values.tolist() == ed.solve_many(batch, backend="cpu").values.tolist()
        if batch is dna:
            assert used[0] == 2 and used[-1] == 4  # 'AC' first, then 'GT' too


@pytest.mark.gpu
def test_gpu_batch_matches_the_cpu_at_scale():
    rng = np.random.default_rng(10)
    a = rng.integers(0, 4, (3000, 1000)).astype(np.uint8)
    b = rng.integers(0, 4, (3000, 1000)).astype(np.uint8)
    assert np.array_equal(
        ed.solve_many((a, b), backend="cuda").values, ed.solve_many((a, b), backend="cpu").values
    )


@settings(max_examples=60, deadline=None)
@given(
    a=st.one_of(st.text("ABCé", max_size=40), st.lists(st.integers(-(2**63), 2**64 - 1), max_size=30)),
    b=st.one_of(st.text("ABCé", max_size=40), st.lists(st.integers(-(2**63), 2**64 - 1), max_size=30)),
)
def test_the_plain_tables_that_recheck_the_batches(a, b):
    """lcs.plain, the re-check of every batch and cross product (``verify``): the textbook tables
    compiled, on the symbols as the solvers code them, against the pure-Python references."""
    from gpudp.problems.lcs import plain

    if isinstance(a, str) != isinstance(b, str):
        return  # a str pairs only with a str (the solvers refuse it before any check)
    assert plain.levenshtein_value(a, b) == levenshtein(a, b)
    assert plain.lcs_value(a, b) == lcs_length(a, b)


def test_a_large_pair_is_rechecked_by_the_engine(monkeypatch):
    """Past plain.TABLE_CELLS a re-check runs the engine's sweep (every core, interruptible), not
    the one-thread table: the same values."""
    from gpudp.problems import lcs
    from gpudp.problems.lcs import plain

    calls = []
    monkeypatch.setattr(plain, "lcs_value", lambda a, b: calls.append(1))
    monkeypatch.setattr(plain, "levenshtein_value", lambda a, b: calls.append(1))
    monkeypatch.setattr(plain, "TABLE_CELLS", 11)
    a, b = "GATTACA", "TACCA"
    assert lcs._SOLVER.checked_value(a, b) == lcs_length(a, b)
    assert ed._SOLVER.checked_value(a, b) == levenshtein(a, b)
    assert calls == []
    monkeypatch.setattr(plain, "TABLE_CELLS", 35)
    lcs._SOLVER.checked_value(a, b)
    assert calls == [1]
