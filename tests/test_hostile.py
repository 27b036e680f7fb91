"""The hostile-input corpus (tests/data/hostile/): every case gets its checked right answer or one line
``gpudp: error: ...`` and exit 2 from the command line, never a traceback or a wrong value, and
leaves nothing behind: no file in the temporary folder, no child process. Below the corpus, the
hostile rounds' findings through the API, each its minimal case."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from examples_loader import load_example

from gpudp import (
    ContractError,
    Grid3Recurrence,
    GridRecurrence,
    InputError,
    IntervalRecurrence,
    LayeredRecurrence,
    sweep,
    sweep_many,
)
from gpudp.cli import main
from gpudp.problems import edit_distance, lcs

HERE = Path(__file__).parent / "data" / "hostile"
MANY = load_example("many_alignments")


def _makers(tmp: Path) -> dict:
    """Inputs made at test time: too large, binary or not a regular file to keep in the repo."""

    def truncated_gz():
        p = tmp / "truncated.fa.gz"
        p.write_bytes(gzip.compress(b">x\n" + b"ACGT" * 5000 + b"\n")[:60])
        return str(p)

    def corrupt_gz():
        p = tmp / "corrupt.fa.gz"
        good = bytearray(gzip.compress(b">x\n" + b"ACGT" * 500 + b"\n"))
        good[20:30] = b"\xff" * 10
        p.write_bytes(bytes(good))
        return str(p)

    return {"dev-zero": lambda: "/dev/zero", "truncated-gz": truncated_gz, "corrupt-gz": corrupt_gz}


def _cases():
    out = []
    for folder in sorted(p for p in HERE.iterdir() if p.is_dir()):
        spec = json.loads((folder / "expected.json").read_text())
        for name, case in spec.items():
            if not name.startswith("_"):
                out.append(pytest.param(folder.name, name, case, id=f"{folder.name}/{name}"))
    return out


def _children() -> set[int]:
    """This process's child processes (zombies too: a child never waited for is left behind)."""
    out = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                out.update(int(p) for p in f.read().split())
        except OSError:
            continue
    return out


@contextlib.contextmanager
def _nothing_left(tmp: Path, monkeypatch):
    """Temporary files and spill folders go to ``tmp`` (TMPDIR, GPUDP_SPILL_DIR), which must be empty
    again at the end, and no child process may outlive the block."""
    tmp.mkdir()
    for var in ("TMPDIR", "GPUDP_SPILL_DIR"):
        monkeypatch.setenv(var, str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    before = _children()
    yield
    assert sorted(os.listdir(tmp)) == [], "left behind in the temporary folder"
    assert _children() - before == set(), "child processes left behind"


def test_the_harness_sees_what_is_left_behind(tmp_path, monkeypatch):
    with pytest.raises(AssertionError, match="temporary folder"):
        with _nothing_left(tmp_path / "a", monkeypatch):
            tempfile.mkdtemp(prefix="gpudp-store-")
    child = None
    try:
        with pytest.raises(AssertionError, match="child processes"):
            with _nothing_left(tmp_path / "b", monkeypatch):
                child = subprocess.Popen(["sleep", "30"])
    finally:
        if child is not None:
            child.kill()
            child.wait()


@pytest.mark.parametrize("command, name, case", _cases())
def test_hostile(command, name, case, tmp_path, capsys, monkeypatch):
    with _nothing_left(tmp_path / "tmp", monkeypatch):
        _check_case(command, name, case, tmp_path, capsys)


def _check_case(command, name, case, tmp_path, capsys):
    folder = HERE / command
    makers = _makers(tmp_path)
    files = []
    for f in case.get("files", [name]):
        files.append(makers[f[5:]]() if f.startswith("make:") else str(folder / f))
    argv = ["solve", command, *files, "--backend", "cpu", "--json", *case.get("args", [])]
    code = main(argv)
    out, err = capsys.readouterr()
    if "error" in case:
        lines = err.strip().splitlines()
        assert code == 2, f"exit {code}, stdout {out[:300]!r}, stderr {err[-1500:]!r}"
        assert len(lines) == 1 and lines[0].startswith("gpudp: error:"), err[-1500:]
        assert case["error"].lower() in lines[0].lower(), lines[0]
    else:
        assert code == 0, err[-1500:]
        got = json.loads(out)
        assert got["value"] == case["value"], (got["value"], case["value"])
        assert got.get("optimal", True) is True


def _aligned(a, b):
    """many_alignments' global alignment (match 1, mismatch -1, gap 1) of symbol arrays ``a``, ``b``."""
    rec = MANY.GlobalAlignment("", "")
    rec.a, rec.b = a, b
    return rec


def _pairs(queries, choices) -> list:
    template = _aligned(np.zeros(1, np.int64), np.zeros(1, np.int64))
    res = sweep_many(template, queries=queries, choices=choices, backend="cpu", traceback=False)
    return [r.last_row.tolist() for r in res]


def test_pairs_of_str_with_lone_surrogates_are_read_by_code_point():
    """A str holding a lone surrogate (os.fsdecode of an undecodable name, a JSON escape) is a code
    point like any other, as lcs.cdist reads it; the pairs form's encode raised UnicodeEncodeError."""
    assert _pairs(["\ud800", "\xe9"], ["\ud800", "\udfff"]) == [[1], [-1], [-1], [-1]]


def test_int64_beside_uint64_symbols_are_refused_not_compared_as_float64():
    """numba compares an int64 with a uint64 as float64, so 2^53 + 1 == 2^53 in a cell: each way of
    giving symbols refuses the pair of dtypes (each scored these two a match)."""
    big, other = np.array([2**53 + 1], np.int64), np.array([2**53], np.uint64)
    with pytest.raises(InputError, match=r"col_symbols\(\): uint64 beside row_symbols\(\) of int64"):
        sweep(_aligned(big, other), backend="cpu")
    assert "float64" in str(sweep_many([_aligned(big, other)], backend="cpu", traceback=False)[0].error)
    with pytest.raises(InputError, match="choices: uint64 beside queries of int64"):
        _pairs([big], [other])
    with pytest.raises(InputError, match="choices: int64 beside queries of uint64"):
        _pairs(other[None, :], big[None, :])
    assert _pairs([big], [other.astype(np.int64)]) == [[-1]]  # one dtype: exact
    assert sweep(_aligned(np.array([7], np.int32), other), backend="cpu").last_row.tolist() == [-1]


def test_integers_past_2_53_beside_real_symbols_are_refused_not_compared_as_float64():
    """numba compares an int64 (or uint64) with a float64 as float64: 2^53 + 1 matched 2.0**53 in a
    cell. Integers of such magnitude beside real symbols are refused, naming the integers' side, on
    each way of giving symbols; up to 2^53 (exact in float64) they are compared as before."""
    big, real = np.array([2**53 + 1], np.int64), np.array([2.0**53])
    with pytest.raises(InputError, match=r"row_symbols\(\): int64 symbols up to 9007199254740993"):
        sweep(_aligned(big, real), backend="cpu")
    assert "float64" in str(sweep_many([_aligned(real, big)], backend="cpu", traceback=False)[0].error)
    with pytest.raises(InputError, match="choices: uint64 symbols up to"):
        _pairs([real], [big.astype(np.uint64)])
    with pytest.raises(InputError, match="queries: int64 symbols up to"):
        _pairs([-big], [real])
    exact = np.array([2**53], np.int64)  # 2^53 itself is exact: compared as before (a match)
    assert sweep(_aligned(exact, real), backend="cpu").last_row.tolist() == [1]
    assert _pairs([exact], [real]) == [[1]]


def test_str_beside_bytes_sides_are_refused():
    """sweep_many's queries of str beside choices of bytes (or the other way) compared 'a' with b'a'
    as the number 97, a match; refused as lcs.cdist refuses them. One form on both sides is read as
    before (str by code point, bytes as bytes)."""
    with pytest.raises(InputError, match="choices: bytes beside queries of str"):
        _pairs(["a"], [b"a"])
    with pytest.raises(InputError, match="choices: str beside queries of bytes"):
        _pairs([b"a"], ["a"])
    assert _pairs(["a"], ["a"]) == _pairs([b"a"], [b"a"]) == [[1]]


def test_str_beside_arrays_sides_are_refused():
    """The same for text beside arrays of numbers (a list of them or a 2-D array): 'a' matched 97,
    where lcs.cdist and lcs.solve refuse a str beside anything but a str. Bytes beside arrays are
    numbers beside numbers (bytes are 0..255), and an empty side has no form: read as before."""
    for queries, choices, why in (
        (["a"], [np.array([97])], "choices: arrays beside queries of str"),
        (np.array([[97]]), ["a"], "choices: str beside queries of arrays"),
    ):
        with pytest.raises(InputError, match=why):
            _pairs(queries, choices)
    assert _pairs([b"a"], [np.array([97])]) == [[1]] and _pairs([], ["a"]) == []


@pytest.mark.parametrize("cutoff", [2**63, 2**70, np.uint64(2**64 - 1)])
def test_a_score_cutoff_past_int64_cuts_as_one_no_score_reaches(cutoff):
    """A cutoff no score can reach: every LCS below it (0), no distance above it (each as it is);
    past int64 the kernels' bounds raised OverflowError (once compiled for an int64 cutoff, as any
    earlier call compiles them)."""
    q, c = ["abc", "ab"], ["abd", ""]
    assert lcs.cdist(q, c, backend="cpu", score_cutoff=1).tolist() == [[2, 0], [2, 0]]
    assert lcs.cdist(q, c, backend="cpu", score_cutoff=cutoff).tolist() == [[0, 0], [0, 0]]
    want = edit_distance.cdist(q, c, backend="cpu").tolist()
    assert edit_distance.cdist(q, c, backend="cpu", score_cutoff=cutoff).tolist() == want == [[1, 3], [1, 2]]


class Counted(GridRecurrence):
    """Ones along a 2 x 2 grid's paths where ``k`` (a number from ``data()``) is positive."""

    value_dtype = np.int64

    def __init__(self, k):
        self.k = k

    def shape(self):
        return (2, 2)

    def data(self):
        return (self.k,)

    @staticmethod
    def cell(i, j, up, left, diag, k):
        return max(up, left) + (k > 0)

    @staticmethod
    def boundary(i, j, k):
        return 0


class Spans(IntervalRecurrence):
    """An interval's length plus ``k`` (a number from ``data()``)."""

    def __init__(self, k):
        self.k = k

    def size(self):
        return 2

    def data(self):
        return (self.k,)

    @staticmethod
    def cell(i, j, T, k):
        return j - i + k


@pytest.mark.parametrize("k", [2**64, -(2**63) - 1])
def test_a_python_int_past_64_bits_in_data_is_refused_by_name(k):
    """numba passes no such int: the single sweep said the cell 'does not compile' ('non-precise
    type pyobject'), blaming the cell for the data (sweep_many's intake names it already)."""
    for rec in (Counted(k), Spans(k)):
        with pytest.raises(InputError, match=r"data\(\)\[0\].*fits no 64-bit integer"):
            sweep(rec, backend="cpu")
    assert sweep(Counted(2**64 - 1), backend="cpu").last_row.tolist() == [2, 3]  # a uint64


class Divided(Counted):
    """Counted's grid, 3 x 40, whose cell divides by ``j - k``: zero at column ``k``."""

    def shape(self):
        return (3, 40)

    @staticmethod
    def cell(i, j, up, left, diag, k):
        return up + 100 // (j - k)


def test_a_cell_raising_in_the_compiled_sweep_is_a_contract_error():
    """numba's parallel kernels hand on an exception raised inside them as ``SystemError: ...
    returned a result with an exception set`` (the grid's sweep, sweep_many's batches): the sweep
    said that, the cell's ZeroDivisionError only chained; now a ContractError naming the class, what
    was raised and check=True (which names the cell)."""
    why = r"Divided's compiled sweep stopped: its cell, boundary or back raised ZeroDivisionError.*check=True"
    for run in (
        lambda: sweep(Divided(20), backend="cpu"),
        lambda: sweep(Divided(20), backend="cpu", traceback=False),
        lambda: sweep_many([Divided(20), Divided(30)], backend="cpu"),
    ):
        with pytest.raises(ContractError, match=why) as e:
            run()
        assert isinstance(e.value.__cause__, ZeroDivisionError)
    assert sweep(Divided(-1), backend="cpu", traceback=False).last_row[:2].tolist() == [300, 150]


class RaisingLayers(LayeredRecurrence):
    """Four layers of ``n`` cells whose cell (2, 3) raises ValueError."""

    value_dtype = np.int64

    def __init__(self, n):
        self.n = n

    def num_layers(self):
        return 4

    def layer_size(self, t):
        return self.n

    def data(self):
        return (np.zeros(1, np.int64),)

    @staticmethod
    def cell(t, k, prev, z):
        if t == 2 and k == 3:
            raise ValueError("cell (2, 3)")
        return t + k


class RaisingCube(Grid3Recurrence):
    """A 3-D grid of ``n`` cells a side summed over its axes, whose cell (1, 2, 3) raises ValueError."""

    value_dtype = np.int64
    offsets = ((-1, 0, 0), (0, -1, 0), (0, 0, -1))

    def __init__(self, n):
        self.n = n

    def shape(self):
        return (self.n, self.n, self.n)

    def data(self):
        return (np.zeros(1, np.int64),)

    @staticmethod
    def cell(i, j, k, a, b, c, z):
        if i == 1 and j == 2 and k == 3:
            raise ValueError("cell (1, 2, 3)")
        return max(a, b, c) + 1


@pytest.mark.parametrize(
    "rec", [RaisingLayers(8), RaisingLayers(5000), RaisingCube(6)], ids=["layers-8", "layers-5000", "cube-6"]
)
def test_a_cell_raising_in_a_sweep_run_inline_is_the_same_contract_error(rec):
    """Layers of 8 cells and a 6^3 grid run inline (outside numba's parallel regions), where the
    cell's exception came out bare; layers of 5,000 in a parallel region: all the same
    ContractError, chained."""
    why = rf"{type(rec).__name__}'s compiled sweep stopped: its cell, boundary or back raised ValueError"
    with pytest.raises(ContractError, match=why) as e:
        sweep(rec, backend="cpu", progress=False)
    assert isinstance(e.value.__cause__, ValueError)


class Growing(Sequence):
    """Items that grow each time the sequence is read through: another thread writing to a list
    between two passes over it, made certain."""

    def __init__(self, items):
        self.items, self.reads = items, 0

    def __len__(self):
        return len(self.items)

    def __getitem__(self, k):
        return self.items[k] * self.reads

    def __iter__(self):
        self.reads += 1
        return iter([x * self.reads for x in self.items])


def test_a_side_read_once_whatever_changes_it_meanwhile():
    """sweep_many's queries and choices: the lengths and the symbols were two passes over the list,
    and a change between them paired offsets of one reading with symbols of another (each query
    then sequences of neither version, silently); now both come from one copy of it."""
    assert _pairs(Growing(["AC", "G"]), ["AC"]) == _pairs(["AC", "G"], ["AC"]) == [[0, 2], [-1, -2]]


def test_parallel_copy_and_fill_check_what_they_are_given():
    """gpudp.memory.copy_parallel / fill_parallel (the engine's and plug-ins' parallel copies): the
    same as slicing for any size and chunk, and a ValueError, not a silent wrap or a crash, for a
    count past either array, a chunk below 1, two dtypes or a value the dtype does not hold."""
    from gpudp.memory import copy_parallel, fill_parallel

    rng = np.random.default_rng(8)
    for n, chunk in ((0, 1), (1, 1), (17, 4), (1000, 7), (1000, 5000)):
        src = rng.integers(-(2**62), 2**62, n + 3)
        dst = np.zeros(n + 5, np.int64)
        copy_parallel(dst, src, n, chunk)
        assert np.array_equal(dst[:n], src[:n]) and not dst[n:].any()
        fill_parallel(dst, n // 3, n, -5, chunk)
        assert (dst[n // 3 : n] == -5).all() and np.array_equal(dst[: n // 3], src[: n // 3])
    a, b = np.zeros(10, np.int64), np.zeros(10, np.int32)
    for bad in ((a, a[:5], 6, 2), (a, a, 3, 0), (b, a, 3, 2), (a, a, -1, 2)):
        with pytest.raises(ValueError, match="copy_parallel"):
            copy_parallel(*bad)
    for bad in ((a, 3, 11, 0, 2), (a, 5, 4, 0, 2), (a, 0, 3, 0, 0), (np.zeros(4, np.int8), 0, 4, 300, 2)):
        with pytest.raises(ValueError, match="fill_parallel"):
            fill_parallel(*bad)
    with pytest.raises(ValueError, match="not exact"):
        fill_parallel(a, 0, 3, 1.5, 2)


def test_a_cell_that_is_not_integers_is_refused_not_truncated():
    """``traceback((1.5, 2))`` walked back from (1, 2), ``("3", 4)`` from (3, 4), and ``decision(1.5,
    2)`` read cell (1, 2): the coordinates went through ``int()``. Now a coordinate must be an
    integer (numpy's too), else an InputError for a 2-D result (either store) and the IndexError
    of a malformed cell for a 3-D one."""
    # writable, as the other LCS tests' arrays: their kernels (a read-only side is another numba type)
    a = np.frombuffer(b"GATTACA", np.uint8).copy()
    for store in ("full", "checkpoints"):
        res = sweep(lcs.LCSRecurrence(a, a[::-1].copy()), backend="cpu", store=store)
        want = res.traceback((3, 4))
        assert np.array_equal(res.traceback((np.int64(3), np.uint8(4))), want)
        assert res.decision(np.int64(3), 4) == res.decision(3, 4)
        for bad in ((1.5, 2), ("3", 4), (True, 1), (np.float64(3), 4)):
            with pytest.raises(InputError, match="start: .* two integers"):
                res.traceback(bad)
            with pytest.raises(InputError, match="cell: .* a cell, two integers"):
                res.decision(*bad)
        with pytest.raises(InputError, match="start: 3: the cell"):
            res.traceback(3)
    res = sweep(load_example("lcs3").LCS3("ABCBDAB", "BDCABA", "BADACB"), backend="cpu")
    assert res.traceback((np.int64(1), 2, 3)).tolist() == res.traceback((1, 2, 3)).tolist()
    for bad in ((1.5, 2, 3), ("1", 2, 3), (True, 1, 1)):
        with pytest.raises(IndexError, match="start is a cell"):
            res.traceback(bad)
        with pytest.raises(IndexError, match="a cell is three integers"):
            res.decision(*bad)


def test_a_tile_that_is_not_two_whole_numbers_is_refused_by_name():
    """``tile=(32,)`` or ``"x"`` was a ValueError from unpacking, ``(32, -32)`` one from numpy,
    ``(True, 32)`` a tile of one row and ``(1.5, 32)`` refused as if its columns were wrong: each
    is an InputError naming ``tile`` that says what is wrong."""
    a = np.frombuffer(b"GATTACA", np.uint8).copy()  # writable: the other LCS tests' kernels
    rec = lcs.LCSRecurrence(a, a[::-1].copy())
    want = sweep(rec, backend="cpu").last_row
    for ok in ((1, 32), [3, 64], np.array([2, 32]), (np.int64(4), np.uint16(32))):
        assert np.array_equal(sweep(rec, backend="cpu", tile=ok).last_row, want)
    for bad in ((32,), "x", (1.5, 32), (True, 32), ()):
        with pytest.raises(InputError, match="tile: .* two whole numbers, \\(rows, columns\\)"):
            sweep(rec, backend="cpu", tile=bad)
    for bad in ((32, -32), (32, 0), (0, 32), (1, 33)):
        with pytest.raises(InputError, match="columns must be a positive multiple of 32, rows at least 1"):
            sweep(rec, backend="cpu", tile=bad)


def test_solution_json_has_no_infinity():
    """JSON has no infinity or NaN: Solution.to_json writes non-finite numbers (an unproven tour over
    a missing edge, a bound) as strings, in plain floats, numpy scalars and arrays alike, so that
    any JSON reader takes it; finite numbers stay numbers."""
    import numpy as np

    from gpudp.solution import Solution, Stats

    sol = Solution(
        "tsp", float("inf"), np.array([0.5, np.inf, -np.inf]), Stats(extra={"gap": np.float64("nan")})
    )
    sol.details["bounds"] = (1.5, float("inf"))
    out = json.loads(sol.to_json(), parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
    assert out["value"] == "inf" and out["solution"] == [0.5, "inf", "-inf"]
    assert out["stats"]["gap"] == "nan" and out["bounds"] == [1.5, "inf"]


def _lcs_rec(n: int, m: int):
    """An LCS grid of ``n`` x ``m`` cells on random bases (a seed for each size)."""
    rng = np.random.default_rng(n * 7 + m)
    a, b = ("".join(rng.choice(list("ACGT"), k)) for k in (n, m))
    return lcs.LCSRecurrence(*lcs.kernel_codes(lcs.encode(a, "a"), lcs.encode(b, "b")))


def test_a_budget_of_zero_means_no_memory_for_each_store(monkeypatch):
    """memory_budget=0: store='full' spilled every decision, 'checkpoints' grew its spacing to one
    block of the whole grid (every decision in memory at the traceback: the opposite of 0) or, with
    checkpoint_every, refused over "0.00 GiB needed"; now it refuses by name, saying why and the
    bytes, and 'auto' takes the full store, spilled (it took that one block)."""
    rec = _lcs_rec(600, 700)  # 2 x 2 blocks of the default 512
    full = sweep(rec, backend="cpu", store="full", memory_budget=0, progress=False)
    assert full.stats.spilled_to_disk
    why = r"^memory_budget: 0 leaves store='checkpoints' no memory.* [0-9,]+ bytes .* store='full'"
    for every in (None, 512):
        with pytest.raises(InputError, match=why):
            sweep(rec, backend="cpu", store="checkpoints", checkpoint_every=every, memory_budget=0)
    auto = sweep(rec, backend="cpu", memory_budget=0, progress=False)
    assert auto.stats.spilled_to_disk and "checkpoint_every" not in auto.stats.extra
    assert np.array_equal(auto.traceback((599, 699)), full.traceback((599, 699)))
    monkeypatch.setenv("GPUDP_MEMORY_BUDGET", "0")  # the default budget 0: the same
    assert sweep(rec, backend="cpu", progress=False).stats.spilled_to_disk
    monkeypatch.delenv("GPUDP_MEMORY_BUDGET")
    one = sweep(_lcs_rec(300, 200), backend="cpu", store="checkpoints", memory_budget=0, progress=False)
    assert one.stats.extra["checkpoint_bytes"] == 0  # one block: no checkpoints, nothing to refuse
    assert "checkpoint_every" in sweep(rec, backend="cpu", memory_budget=1000).stats.extra  # > 0: as before
    for res in (full, auto, one):
        res.close()


def test_an_integer_that_float64_rounds_past_its_range_is_not_exact():
    """exact_in_float tested ``abs(x) < 2**1024`` and then ``float(x)``, which rounds the integers
    from 2^1024 - 2^970 up to 2^1024 and raises OverflowError: a knapsack list of such an integer
    and a real was an OverflowError, not the InputError naming the list."""
    from gpudp.inputs import exact_in_float
    from gpudp.problems import knapsack

    assert not exact_in_float(2**1024 - 1) and not exact_in_float(-(2**1024 - 2**970))
    assert exact_in_float(2**1024 - 2**971) and exact_in_float(-(2**1023))  # float64's largest; a power
    with pytest.raises(InputError, match=r"^profits: item 0: the integer .* not exactly representable"):
        knapsack.solve([2**1024 - 1, 0.5], [1, 1], 3, backend="cpu")


def test_solution_json_of_bytes_and_long_doubles():
    """The LCS of two bytes is bytes, which to_json refused (TypeError: not JSON serialisable),
    single and batch alike; a numpy longdouble recursed without end (its tolist() is itself). Now
    bytes are the list of their integers, a longdouble a float, integers exact at any size."""
    from gpudp.solution import Solution, Stats

    for sol in (
        lcs.solve(b"ACGT", b"AGT", backend="cpu"),
        lcs.solve_many([(b"ACGT", b"AGT")], backend="cpu", traceback=True).solutions[0],
    ):
        assert json.loads(sol.to_json())["solution"] == list(b"AGT")
    odd = Solution("x", 2**70, np.longdouble("-inf"), Stats(extra={"u": np.uint64(2**64 - 1)}))
    odd.details["half"] = np.longdouble(0.5)
    out = json.loads(odd.to_json())
    assert (out["value"], out["solution"], out["half"], out["stats"]["u"]) == (2**70, "-inf", 0.5, 2**64 - 1)
