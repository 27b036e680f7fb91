"""Jooken, Leyman & De Causmaecker's class (EJOR 301(3), 2022; issue 41): their instance format read
exactly (detected next to Pisinger text, or forced by ``--format jooken``), and their generator's
rule (``classes.jooken_instance``) against a reference DP.

The format is written out in the tests, and the whole dataset is read where the project's shared
folder holds it (``shared/data/jooken/<instance>/test.in``); two of its instance folders, with combo's
results, are in tests/data/jooken for ``bench knapsack-files`` (tests/knapsack/test_knapsack_files.py)."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import InputError
from gpudp.cli import main
from gpudp.problems import knapsack
from gpudp.problems.knapsack import classes
from gpudp.problems.knapsack.io import FORMATS, parse_knapsack, read_knapsack

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "jooken"

#: the layout of the dataset's files (the generator's output: ids from 0, one space, LF, c last),
#: the numbers of an n = 6, c = 10^10, g = 3 instance made by the rule
DATASET_LIKE = (
    "6\n"
    "0 5000100042 5000100025\n"
    "1 5000100044 5000100097\n"
    "2 2500100031 2500100007\n"
    "3 2500100090 2500100062\n"
    "4 82 95\n"
    "5 35 22\n"
    "10000000000\n"
)


def jooken_text(p, w, c, base=0, eol="\n") -> str:
    lines = [str(len(p))] + [f"{base + i} {a} {b}" for i, (a, b) in enumerate(zip(p, w, strict=True))]
    return eol.join([*lines, str(c)]) + eol


def ref_dp(p, w, c) -> int:
    """The optimum by the textbook DP over the reachable weights (Python integers: exact)."""
    best = {0: 0}
    for a, b in zip(p, w, strict=True):
        for x, v in list(best.items()):
            y = x + b
            if y <= c and best.get(y, -1) < v + a:
                best[y] = v + a
    return max(best.values())


def brute(p, w, c) -> int:
    best = 0
    for pick in itertools.product((0, 1), repeat=len(p)):
        if sum(b for b, t in zip(w, pick, strict=True) if t) <= c:
            best = max(best, sum(a for a, t in zip(p, pick, strict=True) if t))
    return best


# --------------------------------------------------------------------------------------------
# The reader


def test_the_datasets_layout_reads_exactly():
    inst = parse_knapsack(DATASET_LIKE, "test.in")
    assert inst.n == 6 and inst.integral and inst.name == "test.in"
    assert inst.capacity == 10**10 and type(inst.capacity) is int and inst.given_capacity is None
    assert inst.profits.dtype == np.int64 and inst.weights.dtype == np.int64
    assert inst.profits.tolist() == [5000100042, 5000100044, 2500100031, 2500100090, 82, 35]
    assert inst.weights.tolist() == [5000100025, 5000100097, 2500100007, 2500100062, 95, 22]
    assert inst.known_solution is None
    assert parse_knapsack(DATASET_LIKE, format="jooken").profits.tolist() == inst.profits.tolist()


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("base", [0, 1])
def test_ids_from_0_or_1_any_line_ending_and_blank_lines(eol, base):
    text = jooken_text([5, 6, 3], [4, 5, 2], 10, base, eol).replace(eol, eol + "  " + eol, 1)
    inst = parse_knapsack(text)
    assert inst.profits.tolist() == [5, 6, 3] and inst.weights.tolist() == [4, 5, 2] and inst.capacity == 10


def test_detection_against_pisinger_text():
    """A lone n then a line of three values is Jooken text; a lone n then one value, or 'n C' on
    the first line, is Pisinger's; '0' then 'C' is the same empty instance in both."""
    pis = parse_knapsack("3\n10\n5 4\n6 5\n3 2\n")
    joo = parse_knapsack("3\n0 5 4\n1 6 5\n2 3 2\n10\n")
    pis2 = parse_knapsack("3 10\n5 4\n6 5\n3 2\n")
    for inst in (pis, pis2):
        assert inst.profits.tolist() == joo.profits.tolist() and inst.weights.tolist() == joo.weights.tolist()
        assert inst.capacity == joo.capacity == 10
    for fmt in ("auto", "pisinger", "jooken"):
        empty = parse_knapsack("0\n10\n", format=fmt)
        assert empty.n == 0 and empty.capacity == 10
    # a Pisinger file with a 0/1 solution line is not taken for Jooken text
    assert parse_knapsack("2\n5\n3 4\n2 1\n1 0\n").known_solution.tolist() == [1, 0]


def test_forced_formats():
    assert FORMATS == ("auto", "pisinger", "csv", "json", "jooken")
    with pytest.raises(InputError, match=r"capacity: .*Jooken text's 'id profit weight'\? --format jooken"):
        parse_knapsack(DATASET_LIKE, format="pisinger")
    with pytest.raises(InputError, match=r"^n: Jooken text starts with n alone"):
        parse_knapsack("3 10\n5 4\n6 5\n3 2\n", format="jooken")
    with pytest.raises(InputError, match="^csv: |^profits: "):
        parse_knapsack(DATASET_LIKE, format="csv")
    with pytest.raises(InputError, match="^json: "):
        parse_knapsack(DATASET_LIKE, format="json")
    with pytest.raises(InputError, match="^format: must be one of auto, pisinger, csv, json, jooken"):
        parse_knapsack(DATASET_LIKE, format="knapPI")
    with pytest.raises(InputError, match="^n: not Pisinger text \\('n C', or 'n' then 'C'\\)"):
        parse_knapsack('{"capacity": 1}', format="pisinger")
    assert parse_knapsack('{"capacity": 5, "profits": [3], "weights": [4]}', format="json").capacity == 5


@pytest.mark.parametrize(
    "text, field, message",
    [
        ("3\n0 5 4\n1 6 5\n", "items", "n = 3 but only 2 item lines follow"),
        ("3\n0 5 4\n1 6 5\n10\n", "items", "n = 3 but only 2 item lines precede the capacity line '10'"),
        ("3\n0 5 4\n1 6\n2 3 2\n10\n", "items", "item line 2 must hold 'id profit weight', got '1 6'"),
        ("2\n0 5 4\n1 6 5\n", "capacity", "missing: expected the capacity alone on the line after the 2"),
        ("2\n0 5 4\n1 6 5\n2 3 2\n10\n", "capacity", "got '2 3 2' (more item lines than n?)"),
        ("2\n0 5 4\n1 6 5\n10 11\n", "capacity", "expected the capacity alone on the line after the 2"),
        ("2\n0 5 4\n1 6 5\n10\n11\n", "capacity", "1 more lines follow it (the first: '11')"),
        ("2\n0 5 4\n1 6 5\n-10\n", "capacity", "must be >= 0"),
        ("2\n0 5 4\n1 6 5\nten\n", "capacity", "not a number"),
        ("2\n0 5 4\n0 6 5\n10\n", "ids", "item line 2 has id 0, the same as item line 1"),
        ("3\n1 5 4\n2 6 5\n2 3 2\n10\n", "ids", "item line 3 has id 2, the same as item line 2"),
        ("3\n0 5 4\n2 6 5\n3 3 2\n10\n", "ids", "item line 2 has id 2 where 1 was expected"),
        ("2\n1 5 4\n0 6 5\n10\n", "ids", "item line 2 has id 0 where 2 was expected"),
        ("2\n5 5 4\n6 6 5\n10\n", "ids", "the first item's id is 5"),
        ("2\n0 5 4\n1.5 6 5\n10\n", "ids", "item line 2 has id 1.5"),
        ("2\n0 5 4\nx 6 5\n10\n", "ids", "not a number"),
        ("2\n0 5 4\n1 6 -5\n10\n", "weights", "negative"),
        ("2\n0 5 4\n1 nan 5\n10\n", "profits", "finite"),
        ("2\n0 5 4\n1 6 9223372036854775808\n10\n", "weights", "int64"),
        ("2.5\n0 5 4\n1 6 5\n2 3 2\n10\n", "n", "non-negative integer"),
        ("1000000000000\n0 5 4\n10\n", "items", "n = 1000000000000 but only 1 item lines follow"),
    ],
)
def test_malformed_files_are_clear_errors(text, field, message):
    for fmt in ("auto", "jooken"):
        with pytest.raises(InputError) as e:
            parse_knapsack(text, format=fmt)
        assert e.value.field == field and message in str(e.value), str(e.value)


def test_exact_at_c_1e10_and_values_near_2_62():
    big = [2**62 - 1, 2**62, 2**62 + 1, 2**53 + 1]
    inst = parse_knapsack(jooken_text(big, big[::-1], 10**10))
    assert inst.profits.tolist() == big and inst.weights.tolist() == big[::-1]
    assert inst.capacity == 10**10 and type(inst.capacity) is int
    inst = parse_knapsack(jooken_text([1, 2], [2**62, 2**62 - 1], 2**63 - 1, base=1))
    assert inst.weights.tolist() == [2**62, 2**62 - 1] and inst.capacity == 2**63 - 1
    # past int64 but at least the total weight: clamped to it, exactly, as in every format
    inst = parse_knapsack(jooken_text([3, 4], [2, 3], 10**20))
    assert inst.capacity == 5 and inst.stated_capacity == 10**20
    with pytest.raises(InputError, match="below the total weight"):
        parse_knapsack(jooken_text([1, 1, 1], [2**62] * 3, 2**63))
    # 10^10 + 1 and 2^62 + 1 are not float64 numbers: a trip through float64 would show
    inst = parse_knapsack(jooken_text([10**10 + 1], [10**10 + 1], 10**10 + 1))
    assert knapsack.solve_instance(inst, method="sparse", backend="cpu").value == 10**10 + 1


@settings(max_examples=60)
@given(
    st.integers(0, 8).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(-(2**63) + 1, 2**63 - 1), min_size=n, max_size=n),
            st.lists(st.integers(0, 2**63 - 1), min_size=n, max_size=n),
            st.integers(0, 2**63 - 1),
            st.sampled_from([0, 1]),
        )
    )
)
def test_round_trip_and_the_same_instance_as_pisinger_text(inst):
    """Written as Jooken text and read back (detected and forced): the same integers, exactly, and
    the same instance as the numbers written as Pisinger text."""
    p, w, c, base = inst
    text = jooken_text(p, w, c, base)
    pis = parse_knapsack(f"{len(p)} {c}\n" + "".join(f"{a} {b}\n" for a, b in zip(p, w, strict=True)))
    for fmt in ("auto", "jooken"):
        got = parse_knapsack(text, format=fmt)
        assert got.profits.tolist() == p and got.weights.tolist() == w and got.capacity == c
        assert got.profits.tolist() == pis.profits.tolist() and got.capacity == pis.capacity


def test_files_and_the_command_line(tmp_path, capsys):
    f = tmp_path / "test.in"
    f.write_text(jooken_text([10, 7, 8], [5, 4, 3], 8))
    assert read_knapsack(f).capacity == 8 and read_knapsack(f, "jooken").n == 3
    with pytest.raises(InputError, match="^format: "):
        read_knapsack(tmp_path / "missing", "xml")  # the format is checked before the file is opened

    def run(*argv):
        try:
            code = main(["solve", "knapsack", *map(str, argv), "--backend", "cpu"])
        except SystemExit as e:  # argparse's error
            code = e.code
        return code, capsys.readouterr()

    for fmt in ([], ["--format", "jooken"], ["--format", "auto"]):
        code, out = run(f, "--json", *fmt)
        res = json.loads(out.out)
        assert code == 0 and res["value"] == 18 and res["solution"] == [1, 0, 1] and res["optimal"]
    code, out = run(f, "--format", "pisinger")
    assert code == 2 and "--format jooken" in out.err
    code, out = run(f, "--format", "xml")
    assert code == 2 and "invalid choice: 'xml'" in out.err
    # a directory batch: every file in the format named
    d = tmp_path / "batch"
    d.mkdir()
    (d / "a").write_text(jooken_text([10, 7, 8], [5, 4, 3], 8, base=1))
    (d / "b").write_text("3 8\n10 5\n7 4\n8 3\n")
    code, out = run(d)
    assert code == 0 and [ln.split("\t")[3] for ln in out.out.splitlines()[1:]] == ["18", "18"]
    code, out = run(d, "--format", "jooken")
    rows = [ln.split("\t") for ln in out.out.splitlines()[1:]]
    assert code == 1 and rows[0][3] == "18" and rows[1][6].startswith("n: Jooken text starts with n alone")
    js = tmp_path / "k.jsonl"
    js.write_text('{"capacity": 8, "profits": [10], "weights": [5]}\n')
    code, out = run(js, "--format", "jooken")
    assert code == 2 and "JSON-lines file holds JSON instances" in out.err
    code, out = run(js, "--format", "json")
    assert code == 0 and out.out.splitlines()[1].split("\t")[3] == "10"


def _dataset_dirs():
    return sorted(p.parent for p in SHARED.glob("*/test.in")) if SHARED.is_dir() else []


@pytest.mark.skipif(not _dataset_dirs(), reason="shared/data/jooken is absent (the dataset is not bundled)")
def test_every_dataset_file_reads_and_has_the_rules_structure():
    for d in _dataset_dirs():
        m = re.fullmatch(r"n_(\d+)_c_(\d+)_g_(\d+)_f_([\d.]+)_eps_([\de.-]+)(?:_s_(\d+))?", d.name)
        inst = read_knapsack(d / "test.in")
        if m is None:
            continue
        n, c, g, f, eps, s = int(m[1]), int(m[2]), int(m[3]), float(m[4]), float(m[5]), int(m[6] or 300)
        assert (inst.n, inst.capacity) == (n, c), d.name
        k = (n - int(n * f)) // (g - 1)
        base = np.repeat([int((1 / 2**j + eps) * c) for j in range(1, g)], k)
        base = np.concatenate([base, np.zeros(n - len(base), np.int64)])
        for a in (inst.profits, inst.weights):
            assert (a - base).min() >= 0 and (a - base).max() <= s, d.name


# --------------------------------------------------------------------------------------------
# The generator


def test_generator_is_deterministic_by_seed():
    a = classes.jooken_instance(200, 10**8, seed=3)
    b = classes.jooken_instance(200, 10**8, seed=3)
    assert all(np.array_equal(x, y) for x, y in zip(a[:2], b[:2], strict=True)) and a[2] == b[2] == 10**8
    assert not np.array_equal(a[0], classes.jooken_instance(200, 10**8, seed=4)[0])
    assert not np.array_equal(a[0], classes.jooken_instance(200, 10**8, eps=1e-3, seed=3)[0])
    assert classes.class_instance("jooken", 200, 10**8, seed=3)[2] == 10**8
    same = classes.class_instance("jooken", 200, 10**8, seed=3, jooken={"g": 10})
    assert np.array_equal(same[1], a[1])  # the defaults: g = 10, f = 0.1, eps = 1e-4, s = 100


@pytest.mark.parametrize(
    "n, c, g, f, eps, s",
    [
        (400, 10**10, 10, 0.1, 1e-4, 100),
        (1000, 10**6, 14, 0.3, 0.0, 300),
        (600, 10**8, 2, 0.2, 1e-5, 200),
        (37, 1000, 6, 0.25, 0.1, 7),
        (5, 100, 14, 0.0, 0.01, 3),  # fewer items than groups: all small
        (10, 10**6, 3, 1.0, 0.5, 1),  # f = 1: all small, s = 1: every small item (1, 1)
    ],
)
def test_generator_structure(n, c, g, f, eps, s):
    """Groups of k = (n - floor(n f)) // (g - 1) items just above c/2, c/4, ..., c/2^(g-1) (profit
    and weight each (2^-j + eps) c plus 1..s, truncated), then the small items, in 1..s."""
    p, w, cap = classes.jooken_instance(n, c, g=g, f=f, eps=eps, s=s, seed=1)
    assert cap == c and len(p) == len(w) == n and p.dtype == w.dtype == np.int64
    k = (n - int(n * f)) // (g - 1)
    for j in range(1, g):
        x = (2.0**-j + eps) * c
        for a in (p, w):
            grp = a[(j - 1) * k : j * k]
            assert len(grp) == k and ((grp >= int(x + 1)) & (grp <= int(x + s))).all()
            assert (grp > c / 2**j).all()
    rest = slice((g - 1) * k, n)
    assert n - (g - 1) * k >= int(n * f)
    for a in (p, w):
        assert ((a[rest] >= 1) & (a[rest] <= s)).all()
    if k >= 2 and s >= 50:  # the draws spread over 1..s, profit and weight apart
        assert len(set((p[:k] - int((0.5 + eps) * c)).tolist())) > 1 and not np.array_equal(p, w)


def test_generator_parameters_and_names():
    for bad in (
        dict(n=-1, c=10),
        dict(n=5, c=0),
        dict(n=5, c=2**51 + 1),
        dict(n=5, c=10, g=1),
        dict(n=5, c=10, f=1.5),
        dict(n=5, c=10, eps=-0.1),
        dict(n=5, c=10, eps=float("nan")),
        dict(n=5, c=10, s=0),
        dict(n=5.0, c=10),
        dict(n=5, c=10, g=True),
    ):
        with pytest.raises(ValueError):
            classes.jooken_instance(**bad)
    assert classes.jooken_instance(0, 10)[0].size == 0
    assert classes.parse_classes("1,jooken,hard")[:2] == [1, "jooken"]
    assert "jooken" not in classes.parse_classes("all")
    assert classes.class_name("jooken") == "jooken" and classes.class_name(16) == "circle"
    assert classes.parse_jooken("") == classes.JOOKEN_DEFAULTS
    assert classes.parse_jooken(" g=14, eps=1e-5 ") == {**classes.JOOKEN_DEFAULTS, "g": 14, "eps": 1e-5}
    for bad in ("h=1", "g", "g=2.5", "f=x", "f=2", "s=0", "eps=nan"):
        with pytest.raises(ValueError):
            classes.parse_jooken(bad)


@settings(max_examples=40)
@given(
    n=st.integers(0, 22),
    c=st.integers(10, 10**5),
    g=st.integers(2, 6),
    f=st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.5]),
    eps=st.sampled_from([0.0, 1e-5, 1e-3, 0.01, 0.1]),
    s=st.integers(1, 300),
    seed=st.integers(0, 2**32),
)
def test_generated_instances_vs_a_reference_dp(n, c, g, f, eps, s, seed):
    """Tiny instances of the class (n <= 22) solved by the knapsack front on the cpu backend: the
    reference DP's optimum, and a checked 0/1 vector."""
    p, w, cap = classes.jooken_instance(n, c, g=g, f=f, eps=eps, s=s, seed=seed)
    sol = knapsack.solve(p, w, cap, backend="cpu")
    assert sol.optimal and sol.checked and sol.value == ref_dp(p.tolist(), w.tolist(), cap)


def test_a_generated_instance_vs_brute_force():
    p, w, c = classes.jooken_instance(14, 10**4, g=4, f=0.3, eps=1e-3, s=50, seed=5)
    want = brute(p.tolist(), w.tolist(), c)
    assert want == ref_dp(p.tolist(), w.tolist(), c)
    for method in ("dp", "sparse", "auto"):
        assert knapsack.solve(p, w, c, method=method, backend="cpu").value == want


def test_bench_knapsack_classes_jooken(tmp_path, capsys):
    out = tmp_path / "kc.json"
    argv = ["bench", "knapsack-classes", "--backends", "cpu", "--classes", "jooken", "--sizes", "20"]
    argv += ["--ranges", "1000,1e5", "--jooken", "g=4,f=0.2", "--no-peers", "--time-limit", "5"]
    assert main([*argv, "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    params = {**classes.JOOKEN_DEFAULTS, "g": 4, "f": 0.2}
    assert res["settings"]["jooken"] == params and res["settings"]["classes"] == ["jooken"]
    assert len(res["runs"]) == 2 and res["summary"]["cpu"]["proven"] == 2
    for row in res["runs"]:
        assert row["name"] == "jooken" and row["capacity"] == row["R"] and row["jooken"] == params
        p, w, c = classes.jooken_instance(row["n"], row["R"], seed=row["seed"], **params)
        assert row["cpu"]["value"] == ref_dp(p.tolist(), w.tolist(), c)
    assert main(["bench", "knapsack-classes", "--classes", "jooken", "--ranges", "1e16"]) == 2
    assert "the jooken class's capacity c = R is at most 2^51" in capsys.readouterr().err
