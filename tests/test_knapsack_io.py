"""Knapsack readers: Pisinger text (both header forms, any line ending, optional solution), CSV, JSON."""

import json
from pathlib import Path

import numpy as np
import pytest

from gpudp import InputError
from gpudp.problems.knapsack_io import parse_knapsack, read_knapsack, validate

DATA = Path(__file__).parent / "data" / "knapsack"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "knapsack"


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
