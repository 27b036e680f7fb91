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


@settings(max_examples=60, deadline=None)
@given(a=strings(150), b=strings(150))
def test_both_methods_match_the_reference(a, b):
    """``method="bitparallel"`` (one pair's bit vectors, walked back) and ``"wavefront"`` (the
    engine's sweep) give the reference's length and checked subsequences; ``auto`` on the cpu takes
    the bit vectors, which the stats name."""
    bits = lcs.solve(a, b, backend="cpu", method="bitparallel")
    assert_valid(bits, a, b)
    assert_valid(lcs.solve(a, b, backend="cpu", method="wavefront"), a, b)
    assert bits.stats.extra["method"].startswith("bit-parallel") and bits.stats.extra["vector_bytes"] >= 0
    assert "bit-parallel" in lcs.solve(a, b, backend="cpu").stats.extra["method"]


def test_the_method_choice():
    """auto takes the engine where an engine option is given, or a time limit the bit vectors are
    not predicted to stay well within (they cannot stop at it), where the vectors would not fit
    half the memory budget, and for a backend with no bit-vector kernel; bitparallel refuses what
    it cannot run, and each engine option by name (it ignored them); a bad name is an
    InputError."""
    a, b = "ACGT" * 30, "TTGCA" * 20

    def method(**kw):
        return lcs.solve(a, b, **kw).stats.extra.get("method", "wavefront")

    assert method(backend="cpu").startswith("bit-parallel")
    assert method(backend="cpu", tile=(16, 32)) == method(backend="cpu", store="full") == "wavefront"
    assert method(backend="cpu", checkpoint_every=64) == "wavefront"
    assert method(backend="cpu", memory_budget=2 * 150 * 8 - 1) == "wavefront"  # 2 words x 100 columns
    assert method(backend="cpu", memory_budget=2 * 200 * 8 * 2).startswith("bit-parallel")
    assert method(backend="cpu", time_limit=1e-9) == "wavefront"  # (a stop: bounds, the engine's)
    assert method(backend="cpu", time_limit=1e9).startswith("bit-parallel")  # far within it
    assert method(backend="cpu", time_limit=float("inf"), store="auto").startswith("bit-parallel")  # no limit
    with pytest.raises(InputError, match="method") as e:
        lcs.solve(a, b, backend="cpu", method="bitparallel", memory_budget=100)
    assert "wavefront" in str(e.value)
    with pytest.raises(InputError, match="'x'"):
        lcs.solve(a, b, method="x")
    for option, value in (
        ("tile", (16, 32)),
        ("store", "full"),
        ("checkpoint_every", 64),
        ("time_limit", 60),
    ):
        with pytest.raises(InputError, match=rf"^{option}: .* applies to method='wavefront'"):
            lcs.solve(a, b, backend="cpu", method="bitparallel", **{option: value})
    bits = lcs.solve(a, b, backend="cpu", method="bitparallel", tile=None, store="auto", time_limit=None)
    assert bits.stats.extra["method"].startswith("bit-parallel")  # the defaults, given: accepted
    with pytest.raises(InputError, match="runs on cpu"):
        lcs.solve(a, b, backend="cuda", method="bitparallel")


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
    disk = lcs.solve(a, b, backend="cuda", memory_budget=1 << 16, store="full")
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
    disk = lcs.solve(a, b, backend="cpu", tile=(16, 32), memory_budget=100, store="full")
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


# --- symbols compare as the values they are (issue 11) --------------------------------------------

INT_TYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
# extremes of every width, their neighbours across the int64 / uint64 line, and small values that match
POOL = sorted(
    {0, 1, -1, 5, 127, -128, 255, 2**15, -(2**15), 2**16 - 1, 2**31 - 1, -(2**31), 2**32 - 1}
    | {2**53 + 1, 2**63 - 1, -(2**63), 2**63, 2**64 - 1, 2**64, -(2**63) - 1, 2**70}
)


@st.composite
def int_sequences(draw):
    """A 1-D integer sequence: a numpy array of a random integer dtype, or a list of Python ints
    (any size), its values drawn from POOL where they fit."""
    kind = draw(st.sampled_from([*INT_TYPES, list, tuple]))
    if kind in (list, tuple):
        pool = POOL
    else:
        info = np.iinfo(kind)
        pool = [v for v in POOL if info.min <= v <= info.max]
    values = draw(st.lists(st.sampled_from(pool), max_size=9))
    return kind(values) if kind in (list, tuple) else np.array(values, dtype=kind)


@settings(max_examples=80, deadline=None)
@given(a=int_sequences(), b=int_sequences())
def test_integer_symbols_compare_exactly(a, b):
    pa = [int(v) for v in a]  # the reference sees Python ints: exact, never wrapped
    pb = [int(v) for v in b]
    sol = lcs.solve(a, b, backend="cpu")
    assert sol.value == lcs_length(pa, pb) and sol.checked
    got = [int(v) for v in sol.solution]
    assert got == [pa[i] for i in sol.details["indices_a"]] == [pb[j] for j in sol.details["indices_b"]]
    if isinstance(a, np.ndarray) and len(a):
        assert sol.solution.dtype == a.dtype


def test_uint64_beyond_int64_never_equals_a_negative():
    sol = lcs.solve(np.array([2**64 - 1, 5], np.uint64), np.array([-1, 5]), backend="cpu")
    assert sol.value == 1 and sol.solution.tolist() == [5] and sol.solution.dtype == np.uint64
    assert lcs.solve([2**64 - 1, -1], [-1, 2**64 - 1, -1], backend="cpu").value == 2
    assert lcs.solve(np.array([-(2**63)], np.int64), np.array([2**63], np.uint64), backend="cpu").value == 0
    big = lcs.solve([2**70, 3, -(2**70)], np.array([3, 7], np.int8), backend="cpu")
    assert big.value == 1 and big.solution.tolist() == [3]
    both = lcs.solve(np.array([2**64 - 1, 2**63], np.uint64), np.array([2**63, 1], np.uint64), backend="cpu")
    assert both.value == 1 and both.solution.tolist() == [2**63]


def test_other_array_layouts():
    be = lcs.solve(np.array([1, 300, 3], ">i2"), np.array([300, 3], ">u8"), backend="cpu")
    assert be.value == 2 and be.solution.tolist() == [300, 3]
    obj = lcs.solve(np.array([1, 2**65, 4], dtype=object), (2**65, 4), backend="cpu")
    assert obj.value == 2 and obj.solution.tolist() == [2**65, 4]
    strided = np.arange(20)[::3]
    assert lcs.solve(strided, [3, 9, 10, 12], backend="cpu").value == 3
    assert lcs.solve(b"AC", [65, 67], backend="cpu").solution == b"AC"  # bytes are the ints 0..255
    view = lcs.solve(memoryview(np.array([300, 2**40, 5])), [2**40, 5], backend="cpu")  # items, not bytes
    assert view.value == 2 and view.solution.tolist() == [2**40, 5]
    assert lcs.solve([], np.array([], float), backend="cpu").value == 0  # empty: any dtype
    assert lcs.solve("\ud800x\U0001f600", "\U0001f600", backend="cpu").solution == "\U0001f600"


@pytest.mark.parametrize(
    "a,b,field,piece",
    [
        ("AC", b"AC", "b", "a str pairs only with a str"),
        (b"AC", "AC", "b", "a str pairs only with a str"),
        ("AC", [65, 67], "b", "a str pairs only with a str"),
        (np.array([1.0, np.nan]), [1], "a", "float symbols"),
        ([1, 2], np.array([1.0], np.float32), "b", "float symbols"),
        ([1, 2.0], [1], "a", "item 1 is 2.0"),
        (["A", "C"], [1], "a", "item 0 is 'A'"),
        ([[1, 2]], [1], "a", "item 0 is [1, 2]"),
        (np.array([1, None], dtype=object), [1], "a", "item 1 is None"),
        ([1, True], [1], "a", "item 1 is True"),
        (np.array([True]), [1], "a", "integer arrays only"),
        (np.array(3), [1], "a", "one-dimensional"),
        (np.zeros((2, 3), np.int64), [1], "a", "one-dimensional"),
        (np.array(["ab"]), [1], "a", "integer arrays only"),
        (range(3), [1], "a", "expected str, bytes"),
    ],
)
def test_bad_symbols_raise_input_error(a, b, field, piece):
    with pytest.raises(InputError) as e:
        lcs.solve(a, b, backend="cpu")
    assert e.value.field == field and piece in str(e.value)


@pytest.mark.parametrize("budget", ["nan", "inf", "1e400", -5, "-1G", "lots", float("nan"), 2.0**70])
def test_bad_memory_budget(budget):
    for a, b in (("ACGT", "GATTACA"), ("", "A")):
        with pytest.raises(InputError) as e:
            lcs.solve(a, b, backend="cpu", memory_budget=budget)
        assert e.value.field == "memory_budget"


# --- FASTA: the conventions of sequence tools ---------------------------------------------------

SYMBOLS = "ACGTNRYKMSWBDHVUacgtnrykmswbdhvu*-."
names = st.text(st.characters(categories=["L", "N", "P", "S"]), max_size=12).map(str.strip)


@st.composite
def fasta_files(draw):
    """(bytes, first record's name, first record's sequence): random records with random line widths,
    line ends, a BOM, digits and blanks to ignore, ';' comments and blank lines."""
    records = draw(st.lists(st.tuples(names, st.text(SYMBOLS, max_size=200)), min_size=1, max_size=3))
    nl = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    width = draw(st.integers(1, 90))
    numbered = draw(st.booleans())  # GenBank-style: a position number and blanks on every line
    out = []
    if draw(st.booleans()):
        out.append(";an old-style comment" + nl + nl)
    for name, seq in records:
        out.append(">" + name + nl)
        for k in range(0, len(seq), width):
            chunk = seq[k : k + width]
            if numbered:
                chunk = f"{k + 1:>9} " + " ".join(chunk[i : i + 10] for i in range(0, len(chunk), 10))
            pad = draw(st.sampled_from(["", " ", "\t", "  \t"]))
            out.append(pad + chunk + pad + nl)
            if draw(st.integers(0, 9)) == 0:
                out.append(nl)
    raw = "".join(out).encode("utf-8")
    if draw(st.booleans()):
        raw = b"\xef\xbb\xbf" + raw
    return raw, records[0][0], records[0][1]


@settings(max_examples=80, deadline=None)
@given(fasta_files(), st.sampled_from(["plain.fa", "packed.fa.gz", "packed-no-suffix.fa"]))
def test_fasta_round_trip(spec, filename):
    import tempfile

    raw, name, seq = spec
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / filename
        p.write_bytes(raw if filename == "plain.fa" else gzip.compress(raw))
        assert lcs.read_fasta(p) == (name or filename, seq.upper())
        assert lcs.read_fasta(p, case_sensitive=True) == (name or filename, seq)


def _fasta(tmp_path, raw, name="x.fa"):
    p = tmp_path / name
    p.write_bytes(raw)
    return p


@pytest.mark.parametrize(
    "raw,expected",
    [
        (b">numbered\n        1 acgtacgtac gtac\n       15 ttga\n", ("numbered", "ACGTACGTACGTACTTGA")),
        (b";comment\n\n>x\nAC\n;inside\nGT\n", ("x", "ACGT")),
        (b">empty\n>second\nACGT\n", ("empty", "")),
        (b">", ("x.fa", "")),
        (b"ac gt\n", ("x.fa", "ACGT")),
        (b">a\tb \x1b[31m\nAC\n", ("a b ?[31m", "AC")),
        (b">s\xe9q\nAC\n", ("s\ufffdq", "AC")),
    ],
)
def test_fasta_conventions(tmp_path, raw, expected):
    assert lcs.read_fasta(_fasta(tmp_path, raw), field="a") == expected


@pytest.mark.parametrize(
    "raw,piece",
    [
        (b">x\nACGT\nAC\x07GT\n", "line 3 column 3: byte 0x07 (a control character)"),
        (b">x\r\nACGT\r\nACG\xc3\xa9T\r\n", "line 3 column 4: byte 0xc3 (not ASCII)"),
        (b">x\nACGT\n//\n", "line 3 column 1: '/'"),
        (b">x\nACGT\nnot a sequence!\n", "line 3 column 15: '!'"),
        (b">x\nACGT\n\x1a", "line 3 column 1: byte 0x1a"),
        (b"notes\n>x\nACGT\n", "line 1: text before the first '>' header"),
        (b"", "holds no sequence"),
        (b" \n\t\n", "holds no sequence"),
        (b";only a comment\n", "holds no sequence"),
        (b"12 34\n", "holds no sequence"),
        (b">x\nAC\x00GT\n", "binary data"),
        (">x\nACGT\n".encode("utf-16"), "binary data"),
    ],
)
def test_fasta_refusals_say_where(tmp_path, raw, piece):
    with pytest.raises(InputError) as e:
        lcs.read_fasta(_fasta(tmp_path, raw), field="a")
    assert e.value.field == "a" and piece in str(e.value)


def test_fasta_broken_gzip_and_devices(tmp_path):
    whole = gzip.compress(b">x\n" + b"ACGT" * 5000 + b"\n")
    for raw, piece in (
        (whole[:60], "corrupt or truncated gzip"),
        (whole[:10] + b"\xff" * 10 + whole[20:], "corrupt or truncated gzip"),
    ):
        for name in ("t.fa.gz", "t.fa"):  # a gzip stream is recognised by its magic bytes too
            with pytest.raises(InputError, match=piece):
                lcs.read_fasta(_fasta(tmp_path, raw, name), field="b")
    with pytest.raises(InputError, match="binary data"):
        lcs.read_fasta("/dev/zero", field="a")
    with pytest.raises(InputError, match="folder"):
        lcs.read_fasta(tmp_path, field="a")


def test_many_records_read_in_linear_time_with_their_lines(tmp_path):
    """Each record's first line was counted from the file's start: 100,000 records took minutes
    before ``--pairs`` could even refuse them (20,000: 3.9 s; now 0.15 s). The lines stay right."""
    import time

    p = tmp_path / "many.fa"
    p.write_text("".join(f">r{k}\nACGT\n\n" for k in range(50_000)) + ">last\nAC\nG!T\n")
    t = time.perf_counter()
    with pytest.raises(InputError, match=r"line 150003 column 2: '!'"):
        lcs.read_fasta_records(p)
    assert time.perf_counter() - t < 5  # about 25 s before, 0.4 s now (2 busy cores)
    p.write_text(">a\nAC\n;note\n>b\n\nGT\n")
    assert lcs.read_fasta_records(p) == [("a", "AC"), ("b", "GT")]


def test_pairs_all_past_the_memory_there_is(tmp_path, monkeypatch, capsys):
    """Issue 35: ``--pairs all`` of two 100,000-record files (10^10 pairs) under ``ulimit -v 8G``
    died of MemoryError ('the pre-checks missed this'); now the batch's bytes are weighed against the
    memory there is before a pair is made: one line, exit 2. (A smaller figure stands in here; the
    cross product makes no pair, so its result, 4 bytes a pair, is what does not fit.)"""
    from gpudp.cli import main
    from gpudp.problems.lcs import batch

    monkeypatch.setattr(batch, "available_memory", lambda: 1_000_000)
    p = tmp_path / "r.fa"
    p.write_text("".join(f">r{k}\nACGT\n" for k in range(1000)))
    assert main(["solve", "lcs", str(p), str(p), "--pairs", "all", "--backend", "cpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--pairs all of 1,000 x 1,000 records (1,000,000 pairs) needs about" in err[0]
    assert "split the files), or --pairs zip" in err[0] and "larger --memory-budget" not in err[0]
    assert main(["solve", "lcs", str(p), str(p), "--pairs", "zip", "--backend", "cpu"]) == 0
