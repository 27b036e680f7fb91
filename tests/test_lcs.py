"""The LCS plug-in against a tiny pure-Python DP, on the cpu backend and the CUDA kernels."""

import gzip
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import CheckError, InputError
from gpudp.problems import lcs

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "sequences"
HIV = SHARED / "hiv1_NC_001802.fna"
YPES = SHARED / "yersinia_pPCP1_NC_005816.fna"


def lcs_length(a, b) -> int:
    """The obviously-correct reference: the textbook O(nm) table in pure Python."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def is_subsequence(s, t) -> bool:
    it = iter(t)
    return all(any(x == y for y in it) for x in s)


def strings(max_len):
    return st.integers(1, 26).flatmap(
        lambda k: st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:k], max_size=max_len)
    )


def assert_valid(sol, a, b):
    assert sol.value == lcs_length(a, b)
    assert len(sol.solution) == sol.value
    assert is_subsequence(sol.solution, a) and is_subsequence(sol.solution, b)
    assert sol.checked


@settings(max_examples=150)
@given(a=strings(60), b=strings(60), tile=st.sampled_from([None, (1, 32), (5, 32), (32, 64)]))
def test_cpu_matches_reference(a, b, tile):
    assert_valid(lcs.solve(a, b, backend="cpu", tile=tile), a, b)


@pytest.mark.sim
@pytest.mark.parametrize(
    "a,b",
    [
        ("", "ACGT"),
        ("ACGTTGCA", "TGCAACGT"),
        ("XMJYAUZXMJYAUZXMJYAUZXMJYAUZXMJYAUZXMJ", "MZJAWXUMZJAWXUMZJAWXUMZJAWXUMZJAWXUMZJAWXU"),
    ],
    ids=["empty", "small", "2x2-tiles"],
)
def test_cuda_kernels_match_reference(a, b):
    assert_valid(lcs.solve(a, b, backend="cuda", tile=(32, 32)), a, b)


@pytest.mark.sim
def test_cuda_steady_blocks_match_reference():
    """A whole-height tile 64 columns wide: its second block of 32 steps runs the kernel's steady
    path (every lane on a column, no edge tests), the others the checked path."""
    rng = np.random.default_rng(1)
    a = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, 32)].tobytes()
    b = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, 64)].tobytes()
    assert_valid(lcs.solve(a, b, backend="cuda", tile=(32, 64)), a, b)


@pytest.mark.gpu
def test_gpu_matches_cpu_on_random_dna():
    rng = np.random.default_rng(0)
    for n, m in [(3000, 4500), (257, 10000), (10000, 33)]:
        a = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, n)].tobytes()
        b = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, m)].tobytes()
        g, c = lcs.solve(a, b, backend="cuda"), lcs.solve(a, b, backend="cpu")
        assert g.value == c.value
        assert is_subsequence(g.solution, a) and is_subsequence(g.solution, b)


@pytest.mark.gpu
def test_gpu_spill_to_disk_gives_the_same_subsequence():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 4, 5000).astype(np.uint8)
    b = rng.integers(0, 4, 6000).astype(np.uint8)
    mem = lcs.solve(a, b, backend="cuda")
    disk = lcs.solve(a, b, backend="cuda", memory_budget=1 << 16)
    assert disk.stats.spilled_to_disk and not mem.stats.spilled_to_disk
    assert np.array_equal(mem.solution, disk.solution)


def test_input_types():
    sol = lcs.solve(b"GATTACA", b"TACGAT", backend="cpu")
    assert isinstance(sol.solution, bytes) and sol.value == lcs_length(b"GATTACA", b"TACGAT")
    arr = lcs.solve(np.array([1, 2, 3, 4, 1]), [3, 4, 1, 2], backend="cpu")
    assert isinstance(arr.solution, np.ndarray) and arr.value == 3
    uni = lcs.solve("αβγδβ", "βδγβ", backend="cpu")
    assert uni.value == lcs_length("αβγδβ", "βδγβ") and isinstance(uni.solution, str)
    big = lcs.solve(np.array([2**40, 5]), np.array([5, 2**40, 5], dtype=np.uint64), backend="cpu")
    assert big.value == 2
    empty = lcs.solve("", "", backend="cpu")
    assert empty.value == 0 and empty.solution == ""


@pytest.mark.parametrize(
    "a,field",
    [(None, "a"), (3.5, "a"), (np.zeros((2, 2), int), "a"), (np.array([0.5, 1.5]), "a"), ([True], "a")],
)
def test_bad_input_names_the_field(a, field):
    with pytest.raises(InputError) as e:
        lcs.solve(a, "AC", backend="cpu")
    assert e.value.field == field


def test_check_catches_a_wrong_subsequence():
    sol = lcs.solve("ABCBDAB", "BDCABA", backend="cpu")
    sol.details["indices_a"] = sol.details["indices_a"][::-1]
    with pytest.raises(CheckError):
        sol.check()
    sol = lcs.solve("ABCBDAB", "BDCABA", backend="cpu")
    sol.value += 1
    with pytest.raises(CheckError):
        sol.check()


def test_spill_to_disk_gives_the_same_answer():
    a, b = "ACGT" * 40, "TTGCA" * 30
    mem = lcs.solve(a, b, backend="cpu", tile=(16, 32))
    disk = lcs.solve(a, b, backend="cpu", tile=(16, 32), memory_budget=100)
    assert disk.stats.spilled_to_disk and mem.solution == disk.solution


def test_fasta_reader(tmp_path):
    p = tmp_path / "x.fa"
    p.write_bytes(b">seq one\r\nacgtNN\r\nAC GT\r\n>second\r\nTTTT\r\n")
    assert lcs.read_fasta(p) == ("seq one", "ACGTNNACGT")
    assert lcs.read_fasta(p, case_sensitive=True) == ("seq one", "acgtNNACGT")
    g = tmp_path / "x.fa.gz"
    g.write_bytes(gzip.compress(b">z\nAAC\ngt\n"))
    assert lcs.read_fasta(g) == ("z", "AACGT")
    raw = tmp_path / "raw.txt"
    raw.write_text("ACG\nT\n")
    assert lcs.read_fasta(raw)[1] == "ACGT"
    bad = tmp_path / "bin.fa"
    bad.write_bytes(b">x\n\xff\xfe\n")
    with pytest.raises(InputError):
        lcs.read_fasta(bad)


@pytest.mark.skipif(not HIV.exists(), reason="../shared/data/sequences is not beside this checkout")
def test_real_pair_against_rapidfuzz():
    from rapidfuzz.distance import LCSseq

    _, a = lcs.read_fasta(HIV)
    _, b = lcs.read_fasta(YPES)
    assert (len(a), len(b)) == (9181, 9609)
    sol = lcs.solve(a, b, backend="auto")
    assert sol.value == LCSseq.similarity(a, b)
    assert is_subsequence(sol.solution, a) and is_subsequence(sol.solution, b)
    # soft-masking matters: HIV-1 is stored in lower case
    _, a_cs = lcs.read_fasta(HIV, case_sensitive=True)
    assert lcs.solve(a_cs, b, backend="cpu").value == LCSseq.similarity(a_cs, b) < sol.value


@pytest.mark.skipif(not HIV.exists(), reason="../shared/data/sequences is not beside this checkout")
def test_bundled_demo_is_the_shared_pair():
    from importlib import resources

    data = resources.files("gpudp.data")
    for name, shared in (("hiv1_NC_001802.fna", HIV), ("yersinia_pPCP1_NC_005816.fna", YPES)):
        assert (data / name).read_bytes() == shared.read_bytes()
