"""Knapsack readers: Pisinger text (both header forms, any line ending, optional solution), CSV, JSON."""

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import InputError
from gpudp.problems.knapsack.io import parse_knapsack, read_knapsack, validate

DATA = Path(__file__).resolve().parents[1] / "data" / "knapsack"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "knapsack"


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("header", ["3 10", "3\n10", "3 \n 10 "])
def test_text_header_forms_and_line_endings(eol, header):
    text = (header + "\n5 4\n6 5\n\n3 2\n").replace("\n", eol)
    inst = parse_knapsack(text)
    assert inst.capacity == 10 and inst.integral
    assert inst.profits.tolist() == [5, 6, 3] and inst.weights.tolist() == [4, 5, 2]
    assert inst.known_solution is None


def test_text_trailing_solution_and_reals():
    inst = parse_knapsack("2 3.5\n1.5 1.25\n2 2.5\n1 0\n")
    assert not inst.integral
    assert inst.weights.tolist() == [1.25, 2.5]
    assert inst.known_solution.tolist() == [1, 0]


@pytest.mark.parametrize(
    "text, field",
    [
        ("", "n"),
        ("x 10\n1 1\n", "n"),
        ("2 10\n1 1\n", "items"),
        ("1 10\n1 1 1\n", "items"),
        ("1 -3\n1 1\n", "capacity"),
        ("1 10\n1 -1\n", "weights"),
        ("1 10\nfoo 1\n", "profits"),
        ("2 10\n1 1\n1 1\n1 0 1\n", "solution"),
        ("2 1\n1 1\n1 1\n1 1\n", "solution"),
        ("1 10\nnan 1\n", "profits"),
        ("1 2 3\n", "n"),
    ],
)
def test_text_errors_name_the_field(text, field):
    with pytest.raises(InputError) as e:
        parse_knapsack(text)
    assert e.value.field == field


def test_csv_and_json(tmp_path):
    csv_file = tmp_path / "k.csv"
    csv_file.write_text("# capacity = 7\nprofit,weight,x\n4,3,1\n5,4,1\n3,5,0\n")
    inst = read_knapsack(csv_file)
    assert inst.capacity == 7 and inst.profits.tolist() == [4, 5, 3]
    assert inst.known_solution.tolist() == [1, 1, 0]
    csv2 = tmp_path / "k2.csv"
    csv2.write_text("p,w,capacity\r\n4,3,7\r\n5,4,\r\n")
    assert read_knapsack(csv2).capacity == 7
    js = tmp_path / "k.json"
    js.write_text(json.dumps({"capacity": 7.5, "values": [4, 5], "weights": [3, 4.5]}))
    inst = read_knapsack(js)
    assert inst.capacity == 7.5 and not inst.integral and inst.name == "k.json"


@pytest.mark.parametrize(
    "text, field",
    [
        ("profit,weight\n1,2\n", "capacity"),
        ("# capacity = 3\nprofit,size\n1,2\n", "weights"),
        ('{"capacity": 3, "weights": [1]}', "profits"),
        ('{"capacity": 3, "profits": [1, 2], "weights": [1]}', "weights"),
        ("[1, 2]", "json"),
        ("{nope", "json"),
    ],
)
def test_csv_json_errors(text, field):
    with pytest.raises(InputError) as e:
        parse_knapsack(text)
    assert e.value.field == field


def test_validate_directly():
    inst = validate([1.0, 2.0], [3, 4], 5.0)
    assert inst.integral and inst.profits.dtype == np.int64 and inst.capacity == 5
    with pytest.raises(InputError, match="capacity"):
        validate([1], [1], float("inf"))
    with pytest.raises(InputError, match="profits"):
        validate([[1]], [1], 1)


def test_bundled_files_read():
    inst = read_knapsack(DATA / "knapPI_3_100_1000_1")
    assert inst.n == 100 and inst.capacity == 997 and inst.integral
    assert inst.known_solution is not None
    assert inst.profits[inst.known_solution == 1].sum() == 2397
    f5 = read_knapsack(DATA / "f5_l-d_kp_15_375")
    assert f5.n == 15 and f5.capacity == 375 and not f5.integral


@pytest.mark.skipif(
    not SHARED.is_dir(), reason="../shared/data/knapsack is absent (only in the project's workspace)"
)
def test_every_shared_file_reads():
    names = [ln.split()[0] for ln in (SHARED / "optima.txt").read_text().splitlines() if ln.strip()]
    for name in names:
        inst = read_knapsack(SHARED / name)
        assert inst.n > 0, name


# --------------------------------------------------------------------------------------------
# Numbers read exactly; one feasibility definition; every failure one InputError (issue 11)


def test_integers_above_2_53_are_read_exactly_in_every_format(tmp_path):
    big = [2**53 + 1, 2**62 + 3, 2**63 - 1]
    text = parse_knapsack(f"3 {2**63 - 1}\n" + "".join(f"{v} {v}\n" for v in big))
    csv_text = parse_knapsack("# capacity = 9223372036854775807\np,w\n" + "".join(f"{v},{v}\n" for v in big))
    js = parse_knapsack(json.dumps({"capacity": 2**63 - 1, "profits": big, "weights": [str(v) for v in big]}))
    for inst in (text, csv_text, js):
        assert inst.profits.dtype == np.int64 and inst.weights.dtype == np.int64
        assert inst.profits.tolist() == big and inst.weights.tolist() == big
        assert inst.capacity == 2**63 - 1 and type(inst.capacity) is int


@pytest.mark.parametrize(
    "token, value",
    [("1e5", 100000), ("2.5e1", 25), ("30.0", 30), ("-0", 0), ("+7", 7), ("1.000e2", 100), (".5e1", 5)],
)
def test_integral_values_are_integers_however_written(token, value):
    inst = parse_knapsack(f"1 10\n{token} 3\n")
    assert inst.profits.dtype == np.int64 and inst.profits.tolist() == [value]


def test_reals_and_integers():
    inst = parse_knapsack("2 10\n1.5 3\n2 4\n")
    assert inst.profits.dtype == np.float64 and inst.weights.dtype == np.int64  # each list its own kind
    assert inst.profits.tolist() == [1.5, 2.0] and inst.capacity == 10
    inst = parse_knapsack("2 10.9\n1 3\n2 4\n")  # integer weights: a fractional capacity rounds down
    assert inst.capacity == 10 and type(inst.capacity) is int
    inst = parse_knapsack("2 10.5\n1 3\n2 4.25\n")
    assert inst.weights.dtype == np.float64 and inst.capacity == 10.5
    inst = parse_knapsack(f"2 10.5\n1 3\n2 {2**60}.5\n")  # 2^60 + 0.5 is a real: float64 rounds it, once
    assert inst.weights.tolist() == [3.0, float(2**60)]


@pytest.mark.parametrize(
    "text, field, message",
    [
        ("2 10\n1.5 3\n9007199254740993 4\n", "profits", "not exactly representable in float64"),
        ("1 10\n9223372036854775808 1\n", "profits", "int64"),
        ("1 10\n-9223372036854775808 1\n", "profits", "int64"),
        ("3 9223372036854775808\n" + "1 4611686018427387904\n" * 3, "capacity", "below the total weight"),
        ("1 10\n1 1e400\n", "weights", "too large"),
        ("1 10\n1 1" + "0" * 400 + ".5\n", "weights", "float64"),
        ("1 10\n1 " + "9" * 5000 + "\n", "weights", "too large"),
        ("1 10\n1 inf\n", "weights", "finite"),
        ("1 -inf\n1 1\n", "capacity", "finite"),
        ("1 10\n1_000 1\n", "profits", "not a number"),
        ("1 10\n1 0x10\n", "weights", "not a number"),
        ('{"capacity": 5, "profits": [1e400], "weights": [1]}', "profits", "too large"),
        ('{"capacity": 5, "profits": [' + "9" * 400 + '], "weights": [1]}', "profits", "int64"),
        ('{"capacity": 5, "profits": [' + "9" * 5000 + '], "weights": [1]}', "profits", "too large"),
        ('{"capacity": NaN, "profits": [1], "weights": [1]}', "capacity", "finite"),
        ('{"capacity": 5, "profits": [true], "weights": [1]}', "profits", "not a number"),
        ('{"capacity": [5], "profits": [1], "weights": [1]}', "capacity", "one number"),
        ('{"capacity": 5, "profits": 1, "weights": [1]}', "profits", "list"),
        ('{"capacity": 5, "profits": [1], "weights": [1], "solution": [0.5]}', "solution", "0 or 1"),
        ("[" * 100000, "json", ""),
    ],
)
def test_numbers_past_the_limits_are_refused_not_rounded(text, field, message):
    with pytest.raises(InputError) as e:
        parse_knapsack(text)
    assert e.value.field == field and message in str(e.value)


def test_a_capacity_past_int64_at_or_above_the_total_weight_is_clamped_to_it():
    """Every set fits, so the same answer under Σw, a capacity the solvers hold in int64; the
    capacity as given is kept (issue 35)."""
    inst = parse_knapsack("2 99999999999999999999\n3 2\n4 3\n")
    assert inst.capacity == 5 and type(inst.capacity) is int and inst.given_capacity == 10**20 - 1
    assert inst.stated_capacity == 10**20 - 1
    big = [2**62, 2**62 - 1]  # Σw = 2^63 - 1: the largest capacity it can be clamped to
    inst = validate([1, 1], big, 2**64)
    assert inst.capacity == 2**63 - 1 and inst.stated_capacity == 2**64
    assert validate([1], [1], 10).given_capacity is None  # within int64: kept as given
    with pytest.raises(InputError, match="below the total weight"):
        validate([1, 1, 1], [2**62] * 3, 2**63)


def test_validate_from_python_and_numpy_values():
    assert validate(np.array([2**63 - 1], np.uint64), [1], 1).profits.tolist() == [2**63 - 1]
    with pytest.raises(InputError, match="int64"):
        validate(np.array([2**63], np.uint64), [1], 1)
    inst = validate(np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.float64(5.0))
    assert inst.integral and inst.capacity == 5 and type(inst.capacity) is int
    inst = validate([1e20, 0.5], [1, 1], 1)  # floats given as floats are used as they are
    assert inst.profits.tolist() == [1e20, 0.5]
    with pytest.raises(InputError, match="int64"):
        validate([1e20, 5.0], [1, 1], 1)  # all integral: an integer list, and 1e20 is past int64
    with pytest.raises(InputError, match="capacity"):
        validate([1], [1], True)
    with pytest.raises(InputError, match="capacity"):
        validate([1], [1], [1, 2])


def test_format_detection_says_what_it_tried():
    for text in ("profit weight\n1 2\n", "1 2 3\n4 5\n", "<html>\n"):
        with pytest.raises(InputError, match="not Pisinger text .*, CSV .* or JSON .*: the first line is"):
            parse_knapsack(text)
    # a '#' comment before Pisinger text, a BOM before JSON: both read
    assert parse_knapsack("# made by hand\n2 5\n3 4\n2 1\n").profits.tolist() == [3, 2]
    assert parse_knapsack('\ufeff{"capacity": 5, "profits": [3], "weights": [4]}').capacity == 5
    with pytest.raises(InputError, match="no profit column"):
        parse_knapsack("# capacity = 3\nsize,cost\n1,2\n")


def test_n_and_trailing_values():
    with pytest.raises(InputError, match="n = 1000000000000 but only 1 item lines follow"):
        parse_knapsack("1000000000000 10\n1 1\n")  # refused before anything is allocated
    with pytest.raises(InputError, match="non-negative integer"):
        parse_knapsack("2.5 10\n1 1\n")
    assert parse_knapsack("0 10\n").n == 0
    with pytest.raises(InputError, match="solution"):
        parse_knapsack("1 10\n1 1\nthe end\n")


def test_files_binary_bom_and_gz(tmp_path):
    import gzip

    f = tmp_path / "bin"
    f.write_bytes(b"\x1f\x8b\x08\x00\x00\x00binary\x00\xff")  # gzip's magic bytes, whatever the name
    with pytest.raises(InputError, match="corrupt or truncated gzip"):
        read_knapsack(f)
    f.write_bytes(b"PK\x03\x04binary\x00\xff")
    with pytest.raises(InputError, match="binary data"):
        read_knapsack(f)
    f.write_bytes(b"2 10\n5 4\n6 \xff\n")
    with pytest.raises(InputError, match="not UTF-8"):
        read_knapsack(f)
    f.write_bytes("\ufeff2 10\r\n5 4\r\n6 5\r\n".encode())
    assert read_knapsack(f).profits.tolist() == [5, 6]
    g = tmp_path / "k.txt.gz"
    g.write_bytes(gzip.compress(b"2 10\n5 4\n6 5\n"))
    assert read_knapsack(g).weights.tolist() == [4, 5]
    with pytest.raises(InputError, match="folder"):
        read_knapsack(tmp_path)
    with pytest.raises(InputError, match="cannot open"):
        read_knapsack(tmp_path / "missing")


def test_checker_is_exact_for_integers_and_uses_the_tolerance_for_reals():
    from gpudp.problems.knapsack.io import solution_checker, weight_tolerance

    class Sol:
        def __init__(self, x, value):
            self.solution, self.value = np.array(x, np.int8), value

    w = np.array([2**60, 2**60 + 1], np.int64)
    p = np.array([2**53, 2**53 + 1], np.int64)
    check = solution_checker(p, w, 2**61)  # one unit too heavy: float64 would not see it
    assert "exceeds the capacity" in check(Sol([1, 1], 2**54 + 1))
    check = solution_checker(p, w, 2**61 + 1)
    assert check(Sol([1, 1], 2**54 + 1)) is None
    assert "not the claimed" in check(Sol([1, 1], 2**54))  # off by one at 2^54: float64 would pass it
    wr = np.array([0.1, 0.2])
    check = solution_checker(np.array([1.0, 1.5]), wr, 0.3)
    assert check(Sol([1, 1], 2.5)) is None  # 0.1 + 0.2 > 0.3 in float64, within tau_w
    assert weight_tolerance(wr) == 1e-9
    check = solution_checker(np.array([1.0, 1.5]), wr, 0.3 - 2e-9)
    assert "exceeds" in check(Sol([1, 1], 2.5))


reals = st.floats(-1e15, 1e15, allow_nan=False, allow_infinity=False)
nonneg_reals = st.floats(0, 1e15, allow_nan=False, allow_infinity=False)
roundtrip_instances = st.integers(0, 7).flatmap(
    lambda n: st.one_of(
        st.tuples(
            st.lists(st.integers(-(2**63) + 1, 2**63 - 1), min_size=n, max_size=n),
            st.lists(st.integers(0, 2**63 - 1), min_size=n, max_size=n),
            st.integers(0, 2**63 - 1),
        ),
        st.tuples(
            st.lists(reals, min_size=n, max_size=n),
            st.lists(nonneg_reals, min_size=n, max_size=n),
            nonneg_reals,
        ),
    )
)


def _write(fmt, p, w, c):
    if fmt == "text":
        return f"{len(p)} {c!r}\n" + "".join(f"{a!r} {b!r}\n" for a, b in zip(p, w, strict=True))
    if fmt == "csv":
        return f"# capacity = {c!r}\nprofit,weight\n" + "".join(
            f"{a!r},{b!r}\n" for a, b in zip(p, w, strict=True)
        )
    return json.dumps({"capacity": c, "profits": p, "weights": w})


@settings(max_examples=60)
@given(roundtrip_instances, st.sampled_from(["text", "csv", "json"]))
def test_round_trip_every_format_exactly(inst, fmt):
    """Written in each format and read back: the same numbers, exactly (integers to 2^63 - 1 and
    float64 reals, through their shortest repr)."""
    p, w, c = inst
    if fmt == "csv" and not p:
        return  # a CSV of no rows is a header alone: nothing to compare
    got = parse_knapsack(_write(fmt, p, w, c))
    assert got.profits.tolist() == p and got.weights.tolist() == w
    if got.weights.dtype.kind == "i":
        assert got.capacity == math.floor(c)
    else:
        assert got.capacity == c
    assert got.integral == (all(float(v).is_integer() for v in (*p, *w)))
