"""``gpudp bench knapsack-files`` (issue 41): Jooken et al.'s published instances against combo's
recorded optima and times. Two real instance folders of the dataset are in tests/data/jooken (their
source in tests/data/README.md): one combo solved (n = 400, c = 10^6), one it did not (n = 400,
c = 10^10: "multiply, no space")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from gpudp import InputError
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
    assert sum(p for p, _ in pub.items) == pub.optimum and kf.check_published(inst, pub) is None
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
