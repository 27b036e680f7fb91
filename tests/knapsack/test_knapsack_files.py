"""``gpudp bench knapsack-files`` (issue 41): Jooken et al.'s published instances against combo's
recorded optima and times. Two real instance folders of the dataset are in tests/data/jooken (their
source in tests/data/README.md): one combo solved (n = 400, c = 10^6), one it did not (n = 400,
c = 10^10: "multiply, no space")."""

from __future__ import annotations

import json
import shutil
import sys
from itertools import combinations
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from gpudp import InputError
from gpudp.bench import combo
from gpudp.bench import knapsack_files as kf
from gpudp.cli import main
from gpudp.problems.knapsack import read_knapsack

DATA = Path(__file__).resolve().parents[1] / "data" / "jooken"
SOLVED = DATA / "n_400_c_1000000_g_2_f_0.1_eps_0.1_s_100"
FAILED = DATA / "n_400_c_10000000000_g_10_f_0.1_eps_1e-05_s_200"


def _bench(tmp_path, folder, limit="3", *extra):
    out = tmp_path / "files.json"
    argv = ["bench", "knapsack-files", str(folder), "--backends", "cpu", "--methods", "reach"]
    code = main([*argv, "--time-limit", limit, *extra, "--out", str(out)])
    return code, json.loads(out.read_text())


def _copy(tmp_path, src=SOLVED) -> Path:
    d = tmp_path / "inst" / src.name
    shutil.copytree(src, d)
    return d


def test_the_real_files_read():
    inst = read_knapsack(SOLVED / "test.in")
    assert (inst.n, inst.capacity) == (400, 10**6)
    assert (int(inst.profits[0]), int(inst.weights[0])) == (600092, 600056)  # the file's first item line
    pub = kf.read_published(SOLVED)
    assert pub.solved and pub.optimum == 602022 and pub.seconds == pytest.approx(0.1131019)
    assert sum(p for p, _ in pub.items) == pub.optimum and kf.check_packing(inst, pub) is None
    failed = kf.read_published(FAILED)
    assert not failed.solved and failed.optimum is None and "no space" in failed.note
    assert read_knapsack(FAILED / "test.in").capacity == 10**10


@pytest.mark.parametrize(
    "time_out, outp, message",
    [
        ("abc", "5\n", "expected one number of seconds"),
        ("-2", "5\n", "expected one number of seconds"),
        ("1.5 2", "5\n", "expected one number of seconds"),
        ("0.5", "5 6\n", "optimum alone on the first line"),
        ("0.5", "5\n1 2 3\n", "line 2: expected 'profit weight'"),
        ("0.5", "5\n1 x\n", "'x' is not an integer"),
    ],
)
def test_malformed_combo_files_are_errors(tmp_path, time_out, outp, message):
    (tmp_path / "time.out").write_text(time_out)
    (tmp_path / "outp.out").write_text(outp)
    with pytest.raises(InputError, match=message):
        kf.read_published(tmp_path)


def test_absent_files_mean_combo_did_not_finish(tmp_path):
    assert not kf.read_published(tmp_path).solved
    (tmp_path / "time.out").write_text("2.5")
    assert kf.read_published(tmp_path) == kf.Published(2.5, None)


def test_the_bench_on_the_real_instances(tmp_path):
    code, res = _bench(tmp_path, DATA, limit="0.5")  # the instance combo failed: proven or not
    assert code == 0 and res["errors"] == [] and "not measured on this machine" in res["combo_note"]
    rows = {r["name"]: r for r in res["runs"]}
    solved, failed = rows[SOLVED.name], rows[FAILED.name]
    run = solved["reach/cpu"]
    assert run["status"] == "proven" and run["value"] == solved["combo"]["optimum"] == 602022
    assert run["combo_over_ours"] == pytest.approx(solved["combo"]["seconds"] / run["seconds"])
    assert not failed["combo"]["solved"] and "combo_over_ours" not in failed["reach/cpu"]
    s = res["summary"]["reach/cpu"]
    assert (s["instances"], s["combo_solved"], s["both_solved"], s["error"]) == (2, 1, 1, 0)
    assert s["combo_over_ours_geomean"] == pytest.approx(run["combo_over_ours"])
    beyond = [FAILED.name] if failed["reach/cpu"]["status"] == "proven" else []
    assert s["proven_where_combo_did_not_names"] == beyond
    assert res["summary"]["combo"]["solved"] == 1


@pytest.mark.parametrize("delta", [-1, 1])
def test_a_wrong_published_optimum_is_an_error(tmp_path, capsys, delta):
    d = _copy(tmp_path)
    (d / "outp.out").write_text(f"{602022 + delta}\n")  # the optimum alone: no packing to check
    code, res = _bench(tmp_path, d.parent)
    assert code == 1
    assert res["runs"][0]["reach/cpu"]["status"] == "error"
    assert res["errors"] == [f"{d.name}: reach/cpu: proven optimum 602022, combo's {602022 + delta}"]
    assert "1 check(s) failed" in capsys.readouterr().err


def test_a_wrong_published_packing_is_an_error(tmp_path):
    d = _copy(tmp_path)
    lines = (d / "outp.out").read_text().splitlines()
    (d / "outp.out").write_text("\n".join([lines[0], "97 49", *lines[2:]]) + "\n")  # 96 49 altered
    code, res = _bench(tmp_path, d.parent)
    assert code == 1 and res["runs"][0]["reach/cpu"]["status"] == "proven"
    wrong = "combo's packing holds (profit 97, weight 49) 1 more time(s) than the instance"
    assert res["errors"] == [f"{d.name}: combo's file: {wrong}"]


def test_our_answer_and_bounds_are_checked():
    inst = read_knapsack(SOLVED / "test.in")
    x = np.zeros(inst.n, np.int8)
    x[0] = 1
    assert kf.check_ours(inst, SimpleNamespace(solution=x, value=600092)) is None
    assert "not the value returned 600093" in kf.check_ours(inst, SimpleNamespace(solution=x, value=600093))
    x[1:3] = 1
    assert "over the capacity" in kf.check_ours(inst, SimpleNamespace(solution=x, value=0))
    pub = kf.Published(1.0, 100)

    def unproven(value, bound):
        return kf.compare({"status": "unproven", "value": value, "upper_bound": bound}, pub)

    assert unproven(100, 105) is None and unproven(90, None) is None
    assert "above combo's optimum" in unproven(101, 105)
    assert "below combo's optimum" in unproven(90, 99)
    assert "proven optimum 99" in kf.compare({"status": "proven", "value": 99, "upper_bound": 99}, pub)
    assert kf.compare({"status": "refused"}, pub) is None


def test_folders_and_names(tmp_path):
    assert [d.name for d in kf.instance_dirs(DATA)] == sorted([SOLVED.name, FAILED.name])
    assert kf.instance_dirs(DATA, "*_c_1000000_*,zzz") == [SOLVED]
    assert kf.instance_dirs(SOLVED) == [SOLVED]
    assert kf.instance_dirs([FAILED, SOLVED, DATA]) == [FAILED, SOLVED]  # each once, by name
    with pytest.raises(InputError, match="no instance folder"):
        kf.instance_dirs(DATA, "nothing*")
    with pytest.raises(InputError, match="is not a folder"):
        kf.instance_dirs(tmp_path / "absent")


def test_worker_processes_and_the_total_limit(tmp_path, capsys):
    code, res = _bench(tmp_path, DATA, "0.5", "--jobs", "2")
    assert code == 0 and res["settings"]["jobs"] == 2 and res["errors"] == []
    assert [r["name"] for r in res["runs"]] == sorted([SOLVED.name, FAILED.name])  # sorted back
    assert res["runs"][1]["reach/cpu"]["value"] == 602022
    code, res = _bench(tmp_path, DATA, "0.5", "--total-limit", "1e-9")
    assert code == 0 and res["runs"] == [] and res["not_run"] == sorted([SOLVED.name, FAILED.name])
    assert main(["bench", "knapsack-files", str(DATA), "--jobs", "2", "--backends", "cuda"]) == 2
    assert "--jobs: more than 1 runs on the CPU only" in capsys.readouterr().err


def _fake_checkout(root: Path, times: dict[str, str], optima: dict[str, int]) -> Path:
    """A checkout of the dataset's layout: each name's folder a copy of the solved test folder with
    its own time.out; optima.csv as given."""
    for name, secs in times.items():
        d = root / "problemInstances" / name
        shutil.copytree(SOLVED if secs != "-1" else FAILED, d)
        (d / "time.out").write_text(secs)
    rows = [f"{n},{v}" for n, v in optima.items()]
    (root / "optima.csv").write_text("\n".join(["name,optimum", *rows]) + "\n")
    return root


def test_the_subset_tool_picks_its_groups_and_checks_the_optima(tmp_path):
    import subprocess
    import sys

    tool = Path(__file__).resolve().parents[2] / "tools" / "jooken_subset.py"
    names = {  # (c, g, n) cells: two at c = 10^6, g = 2, n = 400; one elsewhere
        "n_400_c_1000000_g_2_f_0.1_eps_0_s_100": "0.1",
        "n_400_c_1000000_g_2_f_0.2_eps_0_s_100": "0.5",
        "n_400_c_1000000_g_2_f_0.3_eps_0_s_100": "9.0",
        "n_400_c_10000000000_g_10_f_0.1_eps_0_s_100": "-1",
        "n_600_c_1000000_g_6_f_0.1_eps_0_s_100": "2.0",
    }
    optima = {n: (602022 if t != "-1" else -1) for n, t in names.items()}
    src = _fake_checkout(tmp_path / "src", names, optima)
    out = tmp_path / "subset"
    argv = [sys.executable, str(tool), str(src), "--out", str(out), "--hardest", "1"]
    r = subprocess.run(argv, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    meta = json.loads((out / "selection.json").read_text())
    groups = {row["name"]: row["group"] for row in meta["instances"]}
    assert groups == {
        "n_400_c_1000000_g_2_f_0.3_eps_0_s_100": "hardest",  # the largest time.out
        "n_400_c_10000000000_g_10_f_0.1_eps_0_s_100": "unsolved",
        "n_400_c_1000000_g_2_f_0.2_eps_0_s_100": "spread",  # its cell's median time
        "n_600_c_1000000_g_6_f_0.1_eps_0_s_100": "spread",  # alone in its cell
    }
    assert kf.instance_dirs(out / "unsolved")[0].name == "n_400_c_10000000000_g_10_f_0.1_eps_0_s_100"
    assert (out / "hardest" / "n_400_c_1000000_g_2_f_0.3_eps_0_s_100" / "time.out").read_text() == "9.0"
    optima["n_600_c_1000000_g_6_f_0.1_eps_0_s_100"] = 602021  # optima.csv disagrees with outp.out
    _fake_checkout(tmp_path / "bad", names, optima)
    r = subprocess.run([*argv[:2], str(tmp_path / "bad"), *argv[3:]], capture_output=True, text=True)
    assert r.returncode == 1 and "outp.out says 602022, optima.csv 602021" in r.stderr


STAND_IN = '''#!{python}
"""A stand-in for combo (its interface): reads test.in here, prints the optimum and the packed items'
'profit weight' lines (a textbook DP), or what GPDP_COMBO_MODE asks: fail, sleep, a wrong item."""
import os, sys, time
mode = os.environ.get("GPUDP_COMBO_MODE", "right")
lines = open("test.in").read().split("\\n")
n = int(lines[0])
items = [tuple(int(v) for v in ln.split()[1:]) for ln in lines[1 : n + 1]]
c = int(lines[n + 1])
if mode == "fail":
    print("multiply, no space")
    sys.exit(1)
if mode == "sleep":
    time.sleep(30)
best = {{0: (0, ())}}  # weight -> (profit, items)
for k, (p, w) in enumerate(items):
    for wt, (pr, its) in list(best.items()):
        if wt + w <= c and best.get(wt + w, (-1,))[0] < pr + p:
            best[wt + w] = (pr + p, its + (k,))
opt, chosen = max(best.values())
print(opt + (1 if mode == "high" else 0))
for k in chosen:
    p, w = items[k]
    print(p + (1 if mode == "wrong" else 0), w)
'''


@pytest.fixture
def stand_in(tmp_path):
    """An executable with combo's interface (``STAND_IN``), its behaviour set by GPUDP_COMBO_MODE."""
    exe = tmp_path / "combo"
    exe.write_text(STAND_IN.format(python=sys.executable))
    exe.chmod(0o755)
    return exe


def test_combo_is_run_here_and_held_to_the_record_and_to_ours(tmp_path, stand_in, monkeypatch):
    """``--combo PATH``: combo runs on each instance in a fresh folder (test.in written as the
    dataset's), timed here; its optimum is held to the record's and ours to it, its packing to the
    instance; ``combo_here_over_ours`` where both proved it, and the summary's figures."""
    small = _small_instance(tmp_path)
    code, res = _bench(tmp_path, small.parent, "3", "--combo", str(stand_in))
    assert code == 0 and res["errors"] == [] and res["settings"]["combo"] == str(stand_in)
    row = res["runs"][0]
    here, run = row["combo_here"], row["reach/cpu"]
    assert here["status"] == "proven" and here["optimum"] == run["value"] == row["combo"]["optimum"]
    assert run["combo_here_over_ours"] == pytest.approx(here["seconds"] / run["seconds"])
    s = res["summary"]["reach/cpu"]
    assert (s["combo_here_solved"], s["both_solved_here"]) == (1, 1)
    assert s["combo_here_over_ours_geomean"] == pytest.approx(run["combo_here_over_ours"])
    assert res["summary"]["combo_here"]["proven"] == 1
    # combo failing, out of time, or printing a packing not of the instance or above the record
    for mode, limit, want in (
        ("fail", "3", "failed"),
        ("sleep", "0.5", "time"),
        ("wrong", "3", "proven"),
        ("high", "3", "proven"),
    ):
        monkeypatch.setenv("GPUDP_COMBO_MODE", mode)
        code, res = _bench(tmp_path, small.parent, limit, "--combo", str(stand_in))
        row = res["runs"][0]
        assert row["combo_here"]["status"] == want, mode
        if mode == "fail":
            assert code == 0 and "no space" in row["combo_here"]["note"]
            assert res["summary"]["reach/cpu"]["proven_where_combo_here_did_not"] == 1
        if mode == "sleep":
            assert row["combo_here"]["seconds"] < 5
        if mode == "wrong":
            assert code == 1 and "combo here: combo's packing holds" in res["errors"][0]
        if mode == "high":  # its packing is worth less than it says, and its optimum is the record's + 1
            assert code == 1 and any("not its optimum" in e for e in res["errors"])


def _small_instance(tmp_path) -> Path:
    """An instance folder of 12 items (the stand-in's DP is Python) with combo's record of it."""
    d = tmp_path / "inst" / "small"
    d.mkdir(parents=True)
    p = [60, 100, 120, 30, 45, 80, 75, 20, 65, 90, 10, 55]
    w = [10, 20, 30, 7, 9, 16, 15, 4, 13, 18, 2, 11]
    combo.write_instance(d / "test.in", p, w, 50)
    subsets = (s for r in range(13) for s in combinations(range(12), r))
    best = max((sum(p[k] for k in s), s) for s in subsets if sum(w[k] for k in s) <= 50)
    (d / "outp.out").write_text(f"{best[0]}\n" + "".join(f"{p[k]} {w[k]}\n" for k in best[1]))
    (d / "time.out").write_text("0.5")
    return d


def test_the_written_instance_reads_back(tmp_path):
    inst = read_knapsack(SOLVED / "test.in")
    combo.write_instance(tmp_path / "test.in", inst.profits, inst.weights, inst.stated_capacity)
    back = read_knapsack(tmp_path / "test.in")
    assert back.capacity == inst.capacity and back.profits.tolist() == inst.profits.tolist()
    assert back.weights.tolist() == inst.weights.tolist()
    assert (tmp_path / "test.in").read_text().splitlines()[:2] == ["400", "0 600092 600056"]


def test_combo_s_path_is_checked(tmp_path, capsys):
    for path, why in ((tmp_path / "absent", "no such file"), (SOLVED / "test.in", "not executable")):
        with pytest.raises(SystemExit) as e:
            main(["bench", "knapsack-files", str(DATA), "--combo", str(path)])
        assert e.value.code == 2 and why in capsys.readouterr().err


def test_knapsack_classes_runs_combo_beside(tmp_path, stand_in):
    out = tmp_path / "classes.json"
    argv = ["bench", "knapsack-classes", "--classes", "jooken", "--sizes", "12", "--ranges", "100",
            "--backends", "cpu", "--no-peers", "--combo", str(stand_in), "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    res = json.loads(out.read_text())
    cb = res["runs"][0]["combo"]
    assert cb["status"] == "proven" and cb["agrees"] and not cb["contradicts"]
    assert cb["optimum"] == res["runs"][0]["cpu"]["value"] and "cpu" in cb["combo_over_ours"]
    s = res["summary"]["combo"]
    assert (s["proven"], s["disagreements"], s["packing_errors"]) == (1, 0, 0)
