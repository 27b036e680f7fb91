"""``gpudp solve knapsack DIR|FILE.jsonl``: a batch through the command line, one line an instance in
input order (TSV or JSON lines), a bad file or line reported on its own line without stopping the
batch, exit status 0 / 1 / 2; a single instance file as before."""

from __future__ import annotations

import gzip
import json

import pytest

from gpudp.cli import main
from gpudp.problems import knapsack
from gpudp.problems.knapsack import many

GOOD = {
    "a.txt": ("3 8\n10 5\n7 4\n8 3\n", ([10, 7, 8], [5, 4, 3], 8)),
    "b.csv": ("profit,weight\n1,2\n3,4\n# capacity = 5\n", ([1, 3], [2, 4], 5)),
    "d.json": ('{"name": "dee", "capacity": 0, "profits": [4], "weights": [1]}', ([4], [1], 0)),
}


def run(capsys, *argv) -> tuple[int, list[str], str]:
    code = main(["solve", "knapsack", *map(str, argv), "--backend", "cpu"])
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err


def optimum(p, w, c):
    sol = knapsack.solve(p, w, c, backend="cpu")
    return sol.value, [i for i, x in enumerate(sol.solution) if x]


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "batch"
    d.mkdir()
    for name, (text, _) in GOOD.items():
        (d / name).write_text(text)
    (d / "e.txt.gz").write_bytes(gzip.compress(b"2 10\n5 6\n6 5\n"))
    (d / "c.json").write_text('{"capacity": 5, "profits": [1, 2], "weights": [6,')  # cut short
    (d / ".hidden").write_text("junk")
    (d / "sub").mkdir()
    return d


def test_a_directory_gives_a_tsv_line_a_file_in_name_order(folder, capsys):
    code, lines, err = run(capsys, folder)
    assert code == 1  # c.json failed
    header = lines[0].split("\t")  # every column named, the error one too (issue 35)
    assert header == ["name", "n", "capacity", "optimum", "weight", "items", "error"]
    rows = [line.split("\t") for line in lines[1:]]
    assert all(len(r) == len(header) for r in rows)
    assert [r[0] for r in rows] == ["a.txt", "b.csv", "c.json", "dee", "e.txt.gz"]
    for row, name in zip([rows[0], rows[1], rows[3]], GOOD, strict=True):
        p, w, c = GOOD[name][1]
        value, items = optimum(p, w, c)
        assert row[1:4] == [str(len(p)), str(c), str(value)]
        assert row[5] == (",".join(map(str, items)) or "-") and row[6] == "-"
        assert int(row[4]) == sum(w[i] for i in items)
    assert rows[3][3:6] == ["0", "0", "-"]  # capacity 0: nothing taken
    assert rows[4][:4] == ["e.txt.gz", "2", "10", "6"]
    bad = rows[2]
    assert len(bad) == 7 and bad[1:6] == ["-"] * 5 and "not valid JSON" in bad[6]
    assert "5 instances, 1 failed" in err


def test_json_lines_and_exit_zero_when_all_are_solved(folder, capsys):
    (folder / "c.json").unlink()
    code, lines, _ = run(capsys, folder, "--json")
    assert code == 0
    rows = [json.loads(line) for line in lines]
    assert [r["name"] for r in rows] == ["a.txt", "b.csv", "dee", "e.txt.gz"]
    assert rows[0] == {
        "name": "a.txt",
        "n": 3,
        "capacity": 8,
        "optimum": 18,
        "weight": 8,
        "items": [0, 2],
        "error": None,
    }
    assert rows[2]["items"] == [] and all(r["error"] is None for r in rows)


def test_a_jsonl_file_with_bad_lines_among_good_ones(tmp_path, capsys):
    f = tmp_path / "many.jsonl"
    lines = [
        '{"name": "x", "profits": [10, 7, 8], "weights": [5, 4, 3], "capacity": 8}',
        "",
        "not json at all",
        '{"profits": [1, 2], "weights": [3], "capacity": 3}',
        "# a comment",
        '{"profits": ["2.5", 1], "weights": [1, 1], "capacity": 1}',
        '{"profits": [1], "weights": [-1], "capacity": 3}',
        '{"profits": [1], "weights": [1], "capacity": 3',
        '{"profits": [], "weights": [], "capacity": 0}',
    ]
    f.write_text("\n".join(lines) + "\n")
    code, out, err = run(capsys, f, "--json")
    assert code == 1
    rows = [json.loads(line) for line in out]
    assert [r["name"] for r in rows] == [
        "x",
        "many.jsonl:3",
        "many.jsonl:4",
        "many.jsonl:6",
        "many.jsonl:7",
        "many.jsonl:8",
        "many.jsonl:9",
    ]
    assert (rows[0]["optimum"], rows[0]["items"]) == (18, [0, 2])
    assert "one JSON object a line" in rows[1]["error"]
    assert "1 weights for 2 profits" in rows[2]["error"]
    assert (rows[3]["optimum"], rows[3]["items"], rows[3]["error"]) == (2.5, [0], None)  # a real profit
    assert "negative" in rows[4]["error"] and "not valid JSON" in rows[5]["error"]
    assert (rows[6]["n"], rows[6]["optimum"], rows[6]["error"]) == (0, 0, None)
    assert "7 instances, 4 failed" in err
    code, out, _ = run(capsys, f)  # the same as TSV
    assert code == 1 and out[0].startswith("name\t") and out[2].split("\t")[3] == "-"


def test_lines_keep_their_order_across_chunks(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(many, "CHUNK", 2)
    items = [([k + 1, 2], [1, 1], 1) for k in range(5)]
    f = tmp_path / "five.jsonl.gz"
    text = "\n".join(json.dumps({"profits": p, "weights": w, "capacity": c}) for p, w, c in items)
    f.write_bytes(gzip.compress(text.encode()))
    code, out, _ = run(capsys, f)
    assert code == 0 and [line.split("\t")[3] for line in out[1:]] == ["2", "2", "3", "4", "5"]


def test_whole_batch_errors_exit_2(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run(capsys, empty)
    assert code == 2 and "holds no instance file" in err
    f = tmp_path / "blank.jsonl"
    f.write_text("\n\n")
    code, _, err = run(capsys, f)
    assert code == 2 and "no instance line" in err
    code, _, err = run(capsys, tmp_path / "missing.jsonl")
    assert code == 2 and "missing.jsonl" in err
    (f).write_text('{"profits": [1], "weights": [1], "capacity": 1}\n')
    code, _, err = run(capsys, f, "--method", "bb")
    assert code == 2 and "--method" in err and "single instance" in err


def test_a_single_file_keeps_its_output(tmp_path, capsys):
    f = tmp_path / "one.txt"
    f.write_text(GOOD["a.txt"][0])
    code, lines, _ = run(capsys, f)
    assert code == 0 and lines[0].startswith("knapsack: 18 (optimal, checked")


@pytest.mark.sim
def test_a_batch_on_the_cuda_backend(tmp_path, capsys):
    f = tmp_path / "two.jsonl"
    f.write_text(
        '{"profits": [10, 7, 8], "weights": [5, 4, 3], "capacity": 8}\n'
        '{"profits": [3], "weights": [9], "capacity": 4}\n'
    )
    code = main(["solve", "knapsack", str(f), "--backend", "cuda", "--json"])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0 and [(r["optimum"], r["items"]) for r in rows] == [(18, [0, 2]), (0, [])]


BIG = 99999999999999999999  # past int64
EDGES = [  # (JSON line, the optimum, error text): issue 35's batch cases
    ({"profits": [2**63 - 1, 4], "weights": [0, 3], "capacity": 3}, 2**63 + 3, None),  # optimum > int64
    ({"profits": [], "weights": [], "capacity": 10**12}, 0, None),  # no items, a huge capacity
    ({"profits": [3, 4, -1], "weights": [2, 3, 1], "capacity": BIG}, 7, None),  # every item fits
    ({"profits": [2**63, 4], "weights": [0, 3], "capacity": 3}, None, "int64"),
    ({"profits": ["9223372036854775808", 4], "weights": [0, 3], "capacity": 3}, None, "int64"),
    ({"profits": [1, 4], "weights": [2**63, 3], "capacity": 3}, None, "int64"),
]


@pytest.mark.parametrize("form", ["jsonl", "dir"])
def test_edge_magnitudes_in_a_batch_are_per_instance(tmp_path, capsys, form):
    """An optimum past int64, n = 0 with a huge capacity, a capacity past int64 that every item
    fits: solved; a number past int64: that line's error; the others solved, exit 1 (issue 35)."""
    lines = [json.dumps({"profits": [10, 7, 8], "weights": [5, 4, 3], "capacity": 8})]
    lines += [json.dumps(d) for d, _, _ in EDGES]
    if form == "jsonl":
        src = tmp_path / "edges.jsonl"
        src.write_text("\n".join(lines) + "\n")
    else:
        src = tmp_path / "edges"
        src.mkdir()
        for k, line in enumerate(lines):
            (src / f"{k}.json").write_text(line)
    code, out, err = run(capsys, src, "--json")
    assert code == 1, err
    rows = [json.loads(line) for line in out]
    assert rows[0]["optimum"] == 18
    for row, (d, value, error) in zip(rows[1:], EDGES, strict=True):
        if error is None:
            assert (row["optimum"], row["error"]) == (value, None)
            assert row["capacity"] == d["capacity"]  # as given, not as clamped
        else:
            assert row["optimum"] is None and error in row["error"]
    assert "7 instances, 3 failed" in err
