"""The benchmarks' options (issue 35): a wrong value is one line ``gpudp: error: ...`` naming the
option and exit 2, found while the command line is parsed, before any benchmark runs (it used to be
a ValueError, KeyError, StatisticsError or ZeroDivisionError from inside the run)."""

from __future__ import annotations

import importlib

import pytest

from gpudp.bench import options
from gpudp.cli import BENCHES, build_parser, main

BAD = [
    # the cases of issue 35
    "lcs --sizes abc",
    "lcs --sizes -5",
    "lcs --repeat -1",
    "batch --pairs 0",
    "batch --pairs -1",
    "batch --length -1",
    "batch --problems foo",
    "knapsack-classes --classes 99",
    "knapsack-classes --sizes -10",
    "scale --workers 0",
    "startup --repeat 0",
    "startup --commands foo",
    # and the same kinds of value for every bench's options
    "lcs --sizes 0",
    "lcs --sizes 1,,2",
    "lcs --sizes 1e3",
    "lcs --sizes ٣",
    "lcs --seed -1",
    "lcs --peer-max-size x",
    "lcs --cpu-max-size -1",
    "lcs --tile 64",
    "lcs --tile 0,64",
    "lcs --checkpoint-every 0",
    "lcs --checkpoint-every -3",
    "batch --repeat 0",
    "batch --traceback-pairs -1",
    "batch --problems lcs,foo",
    "batch --seed x",
    "batch --forms foo",
    "batch --forms arrays,lists",
    "batch --peers none,rapidfuzz",
    "batch --peers sz",
    "scale --workers 1,x",
    "scale --pairs 0",
    "scale --length 0",
    "scale --repeat 0",
    "scale --data foo",
    "scale --data both,client",
    "scale --chunks-per-worker 0",
    "startup --commands demo,foo",
    "startup --timeout 0",
    "startup --timeout nan",
    "knapsack-classes --classes 7-9",
    "knapsack-classes --classes foo",
    "knapsack-classes --ranges 5",
    "knapsack-classes --ranges 1e99",
    "knapsack-classes --ranges x",
    "knapsack-classes --seeds 0",
    "knapsack-classes --time-limit inf",
    "knapsack-classes --peer-limit -1",
    "knapsack-classes --jooken g=1",
    "knapsack-classes --jooken h=1",
    "knapsack-classes --jooken f=2",
    "knapsack-classes --jooken eps=x",
    "knapsack-files --methods foo",
    "knapsack-files --methods auto,,reach",
    "knapsack-files --time-limit 0",
    "knapsack-files --total-limit nan",
    "knapsack-bb --classes foo",
    "knapsack-bb --lalami-sizes 0",
    "knapsack-bb --shen-sizes 10,-1",
    "knapsack-bb --shen-seeds -1",
    "knapsack-bb --host-budget lots",
    "knapsack-bb --host-budget 1e400",
    "knapsack-bb --batch 0",
    "knapsack-bb --cpu-threshold -1",
    "knapsack-bb --time-limit 0",
    "knapsack-bb --deadline nan",
    "knapsack-bb --ortools-time-limit -5",
    "knapsack --sizes x",
    "knapsack --seed -3",
    "knapsack --numba-limit -1",
    "knapsack --ortools-limit 0",
    "knapsack --sweep-n 0",
    "knapsack --sweep-caps 0",
    "subset-sum --n-min 0",
    "subset-sum --n-max -1",
    "subset-sum --n-step 0",
    "subset-sum --instances 0",
    "subset-sum --repeats 0",
    "subset-sum --alpha-n 0",
    "subset-sum --alphas 101",
    "subset-sum --cpu-max-n -1",
    "subset-sum --large x",
    "subset-sum --block 0",
    "subset-sum --time-budget -1",
    "tsp --sizes 0",
    "tsp --sizes 40",
    "tsp --repeat 0",
    "tsp --repeat-under 0",
    "tsp --seed -1",
    "tsp --layouts foo",
    "tsp --layouts-max-size -1",
    "tsp --limit nan",
    "tsp --peer-timeout 0",
    "tsp --peer-sizes 99",
]


def _run(argv, capsys) -> tuple[int, list[str]]:
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's error
        code = e.code
    out, err = capsys.readouterr()
    assert out == ""
    return code, err.strip().splitlines()


def _no_work(monkeypatch, bench: str):
    """Running the bench fails the test: a wrong option must stop the command before it."""

    def ran(args):
        raise AssertionError(f"bench {bench} ran")

    monkeypatch.setattr(importlib.import_module(BENCHES[bench]), "cli_bench", ran)


@pytest.mark.parametrize("line", BAD)
def test_a_wrong_option_fails_in_parsing_with_one_line(line, monkeypatch, capsys):
    bench, option, value = line.split(" ", 2)
    _no_work(monkeypatch, bench)
    code, lines = _run(["bench", bench, option, value], capsys)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("gpudp: error:") and f"argument {option}:" in lines[0], lines[0]


# wrong values found by the bench itself, from several options together or from the machine; still
# before any work: each case's work functions fail the test if called
BAD_TOGETHER = [
    ("lcs --backends gpu", "--backends", ["solve", "random_dna"]),
    ("lcs --backends none", "--backends", ["solve", "random_dna"]),
    ("batch --backends cpu,auto", "--backends", ["random_dna"]),
    ("scale --backends cpu,cuda", "--backends", ["random_dna", "made_rows"]),
    ("scale --backends cpu --data device", "--data", ["random_dna", "made_rows"]),
    ("scale --made-on workers --data client", "--data", ["random_dna", "made_rows"]),
    ("subset-sum --n-min 50 --n-max 40", "--n-min", ["solve"]),
    ("knapsack-classes --classes 1,jooken --ranges 1e6,1e16", "--ranges", ["warm", "class_instance"]),
]


@pytest.mark.parametrize("line, option, work", BAD_TOGETHER)
def test_options_wrong_together_are_refused_before_any_work(line, option, work, monkeypatch, capsys):
    bench = line.split()[0]
    module = importlib.import_module(BENCHES[bench])
    for name in work:

        def ran(*a, name=name, **k):
            raise AssertionError(f"{name} ran")

        monkeypatch.setattr(module, name, ran)
    code, lines = _run(["bench", *line.split()], capsys)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("gpudp: error:") and option in lines[0], lines[0]


@pytest.mark.parametrize("bench", list(BENCHES))
def test_every_default_goes_through_its_type(bench):
    args = build_parser(["bench", bench]).parse_args(["bench", bench])
    for name in ("sizes", "workers", "problems", "commands", "layouts", "alphas", "large", "sweep_caps"):
        if isinstance(getattr(args, name, None), str):
            raise AssertionError(f"bench {bench}: --{name} left as text: {getattr(args, name)!r}")


def test_option_types_read_what_they_should():
    assert options.int_list(1)("1, 2,30") == [1, 2, 30]
    assert options.int_list(1, empty=True)("") == [] and options.int_list(1, count=2)("64,32") == [64, 32]
    assert options.whole_list(10, 2**60)("1e6,12") == [1_000_000, 12]
    assert options.choice_list("lcs", "edit")("edit,lcs,edit") == ["edit", "lcs"]
    assert options.seconds("2.5") == 2.5 and options.seconds_or_inf("inf") == float("inf")
    assert options.backends(" cpu, cuda") == "cpu,cuda"
    assert options.backend_list("cuda,cpu") == ["cuda", "cpu"]
    assert options.backend_list("auto", auto=["cpu"]) == ["cpu"]
    assert options.backend_list("none", none=True) == []
    big = "9" * 40
    for parse in (options.positive_int, options.int_list(1)):
        with pytest.raises(Exception, match="whole number"):
            parse(big)


def test_good_values_are_parsed_into_what_the_bench_reads():
    argv = ["bench", "knapsack-classes", "--classes", "hard", "--sizes", "40,50", "--ranges", "1e3"]
    args = build_parser(argv).parse_args(argv)
    assert (args.classes, args.sizes, args.ranges) == ([11, 12, 13, 14, 15, 16], [40, 50], [1000])
    argv = ["bench", "knapsack-classes", "--classes", "jooken,3", "--jooken", "g=14,eps=1e-5"]
    args = build_parser(argv).parse_args(argv)
    assert args.classes == ["jooken", 3] and args.jooken == {"g": 14, "f": 0.1, "eps": 1e-5, "s": 100}
    argv = ["bench", "lcs", "--tile", "64,128", "--checkpoint-every", "7", "--repeat", "0"]
    args = build_parser(argv).parse_args(argv)
    assert (args.tile, args.checkpoint_every, args.repeat) == ([64, 128], 7, 0)
    argv = ["bench", "knapsack-bb", "--host-budget", "1G"]
    assert build_parser(argv).parse_args(argv).host_budget == 1 << 30


def test_lcs_repeat_0_times_the_peers_once():
    """--repeat 0 (the cold run is the figure) used to leave the peers no run: a StatisticsError."""
    from gpudp.bench import lcs

    assert [v for _, v in lcs._timed(lambda: 7, 0)] == [7]


def test_tsp_sizes_from_one_city(monkeypatch):
    """n = 1 has no transitions: its rate (0) used to divide the next size's prediction (a
    ZeroDivisionError). The solves are stood in for: the prediction is what is tested."""
    from gpudp.bench import tsp

    def result(backend, layout, n, runs):
        return {
            "backend": backend,
            "layout": layout,
            "cities": n,
            "length": 0,
            "transitions_per_second": n - 1,
        }

    monkeypatch.setattr(tsp.hk, "solve", lambda *a, **k: None)
    monkeypatch.setattr(tsp, "_solve_timed", lambda *a: [])
    monkeypatch.setattr(tsp, "_result", result)
    monkeypatch.setattr(tsp, "_log", lambda r: None)
    argv = ["bench", "tsp", "--sizes", "1,4", "--backends", "cpu", "--no-peers"]
    out = tsp.cli_bench(build_parser(argv).parse_args(argv))
    assert [r["cities"] for r in out["results"]] == [1, 4] and not out["skipped"]


def test_batch_forms_and_peers_side_by_side(capsys):
    """``--forms arrays,cdist``: the batch given as two 2-D arrays, and the cross product of
    isqrt(pairs) queries and choices; each beside rapidfuzz's (cpdist, cdist) in ``side_by_side``
    (StringZilla skipped where it is not installed); ``--peers none`` times gpudp alone."""
    pytest.importorskip("rapidfuzz")
    from gpudp.bench import batch

    argv = ["bench", "batch", "--backends", "cpu", "--pairs", "30", "--length", "20", "--repeat", "1"]
    argv += ["--traceback-pairs", "0", "--problems", "edit", "--forms", "arrays,cdist"]
    out = batch.cli_bench(build_parser(argv).parse_args([*argv, "--peers", "rapidfuzz,stringzilla"]))
    table = {(r["form"], r["peer"]) for r in out["side_by_side"]}
    assert (
        table
        == {
            ("two 2-D arrays", "rapidfuzz process.cpdist Levenshtein.distance"),
            ("cdist", "rapidfuzz process.cdist"),
        }
        or ("cdist", "stringzillas LevenshteinDistances (cpu)") in table
    )
    cross = [r for r in out["results"] if r.get("form") == "cdist"]
    assert {r["queries"] for r in cross} == {5} and any(r.get("equal") for r in cross)
    assert all(r["ratio"] > 0 for r in out["side_by_side"])
    alone = batch.cli_bench(build_parser(argv).parse_args([*argv, "--peers", "none"]))
    assert not alone["side_by_side"] and all("rapidfuzz" not in r["run"] for r in alone["results"])
