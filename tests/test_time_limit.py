"""Long runs (issue 35): ``time_limit`` stops a sweep between chunks, each solver then returns its
best proven bounds flagged not optimal (exit 1 from the command line), and a run predicted over a
minute says so on stderr before it starts."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from gpudp.cli import main
from gpudp.engine import sweep
from gpudp.errors import InputError, TimeLimitReached
from gpudp.problems import lcs, subset_sum, tsp


def _pair(n: int, seed: int = 0, k: int = 4):
    rng = np.random.default_rng(seed)
    return rng.integers(0, k, n).astype(np.uint8), rng.integers(0, k, n).astype(np.uint8)


def test_sweep_stops_at_its_time_limit_between_chunks():
    a, b = _pair(3000)  # 9 M cells: more than one chunk of the cpu's 4 M
    with pytest.raises(TimeLimitReached) as e:
        sweep(lcs.LCSRecurrence(a, b), backend="cpu", time_limit=1e-9)
    assert 0 < e.value.done < e.value.total == 9_000_000 and e.value.limit == 1e-9
    assert "time limit of 1e-09 s reached after" in str(e.value)
    # no limit, or a limit the sweep finishes within, changes nothing
    full = sweep(lcs.LCSRecurrence(a, b), backend="cpu", traceback=False, time_limit=None)
    late = sweep(lcs.LCSRecurrence(a, b), backend="cpu", traceback=False, time_limit=3600)
    assert int(full.last_row[-1]) == int(late.last_row[-1])


def test_sweep_time_limit_finished_work_is_kept():
    """A limit that passes during the last chunk does not throw the finished sweep away."""
    a, b = _pair(100)
    res = sweep(lcs.LCSRecurrence(a, b), backend="cpu", traceback=False, time_limit=0)
    assert int(res.last_row[-1]) == lcs.solve(a, b, backend="cpu").value


@pytest.mark.parametrize("bad", [-1, float("nan"), "soon"])
def test_sweep_time_limit_checked_before_work(bad):
    with pytest.raises(InputError, match="time_limit"):
        sweep(lcs.LCSRecurrence(*_pair(10)), backend="cpu", time_limit=bad)


@pytest.mark.parametrize("k", [4, 1000])  # best-next (small alphabets) and in-order greedy
def test_lcs_time_limit_gives_proven_bounds(k):
    a, b = _pair(3000, seed=k, k=k)
    true = lcs.solve(a, b, backend="cpu").value
    sol = lcs.solve(a, b, backend="cpu", time_limit=1e-6)
    d = sol.details
    assert not sol.optimal and sol.checked and d["stopped"] == "time"
    assert 0 < d["lower_bound"] == sol.value <= true <= d["upper_bound"] <= 3000
    assert "not proven optimal" in d["message"] and 0 < sol.stats.cells < 9_000_000


def test_cli_lcs_time_limit_exits_1_with_bounds(tmp_path, capsys):
    a, b = _pair(3000, seed=7)
    fa, fb = tmp_path / "a.fa", tmp_path / "b.fa"
    fa.write_text(">a\n" + "".join("ACGT"[x] for x in a) + "\n")
    fb.write_text(">b\n" + "".join("ACGT"[x] for x in b) + "\n")
    true = lcs.solve(a, b, backend="cpu").value
    cmd = ["solve", "lcs", str(fa), str(fb), "--backend", "cpu", "--time-limit"]
    assert main([*cmd, "0.000001", "--json"]) == 1
    io = capsys.readouterr()
    d = json.loads(io.out)
    assert d["optimal"] is False and d["stopped"] == "time"
    assert d["lower_bound"] == d["value"] == len(d["solution"]) <= true <= d["upper_bound"]
    assert "not proven optimal" in io.err
    assert main([*cmd, "0.000001"]) == 1
    assert f"between {d['lower_bound']} and {d['upper_bound']} (not optimal" in capsys.readouterr().out
    assert main([*cmd, "600", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["value"] == true
    assert main(["solve", "lcs", str(fa), str(fb), "--time-limit", "-3"]) == 2
    assert "--time-limit" in capsys.readouterr().err


def test_lcs_prediction_line_only_past_a_minute(monkeypatch, capsys):
    a, b = _pair(300)
    lcs.solve(a, b, backend="cpu")
    assert "predicted" not in capsys.readouterr().err
    monkeypatch.setenv("GPUDP_CPU_CELL_RATE", "1")  # 90,000 cells at 1 or 2 cells/s: hours
    lcs.solve(a, b, backend="cpu", time_limit=30)
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("gpudp: lcs 300 x 300 = 9e+04 cells, predicted about ")
    assert "on cpu (" in err[0] and "the time limit stops it after 30 s" in err[0]
    lcs.solve(a, b, backend="cpu", progress=False)  # silence asked for
    assert capsys.readouterr().err == ""


TSPLIB = Path(__file__).resolve().parent / "data" / "tsplib"


@pytest.fixture
def small_chunks(monkeypatch):
    """CPU sweeps in chunks of 256 cells: small instances stop part-way, as large ones would."""
    import gpudp.backends.cpu as cpu

    monkeypatch.setattr(cpu, "CPU_CHUNK_CELLS", 256)


def test_tsp_time_limit_gives_a_checked_tour_and_bounds(small_chunks):
    d = np.random.default_rng(3).integers(1, 100, (9, 9))
    best = tsp.solve(d, backend="cpu")
    sol = tsp.solve(d, backend="cpu", time_limit=1e-6)
    det = sol.details
    assert best.optimal and not sol.optimal and sol.checked and det["stopped"] == "time"
    assert 0 < det["lower_bound"] <= best.value <= det["upper_bound"] == sol.value
    assert sorted(det["tour_index"]) == list(range(9)) and 0 < sol.stats.cells < 8 * 2**7


def test_cli_tsp_time_limit_exits_1(small_chunks, capsys):
    path = str(TSPLIB / "burma14.tsp")
    optimum = 3323  # tests/data/tsplib/optima.txt
    assert main(["solve", "tsp", path, "--backend", "cpu", "--time-limit", "1e-6", "--json"]) == 1
    io = capsys.readouterr()
    d = json.loads(io.out)
    assert d["optimal"] is False and d["stopped"] == "time" and "not proven optimal" in io.err
    assert d["lower_bound"] <= optimum <= d["upper_bound"] == d["value"]
    assert main(["solve", "tsp", path, "--backend", "cpu", "--time-limit", "1e-6"]) == 1
    assert "(not optimal: time limit of 1e-06 s reached" in capsys.readouterr().out


def test_tsp_prediction_line(monkeypatch, capsys):
    d = np.random.default_rng(4).integers(1, 100, (6, 6))
    tsp.solve(d, backend="cpu")
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("GPUDP_CPU_CELL_RATE", "0.01")
    tsp.solve(d, backend="cpu")
    assert capsys.readouterr().err.startswith("gpudp: tsp 6 cities = 170 transitions, predicted about ")


def _weights(n: int, seed: int = 0):
    w = [int(x) for x in np.random.default_rng(seed).integers(10**9, 10**10, n)]
    return w, sum(w) // 3 + 12345


@pytest.fixture
def clock_after(monkeypatch):
    """The time limit passes at the k-th look (a stop at each step of a run, whatever the machine)."""
    import gpudp.problems.subset_sum.cpu as cpu
    from gpudp.progress import Deadline

    monkeypatch.setattr(cpu, "SEARCH_CHUNK_SUMS", 1)  # a look after each A-block of the search
    looks = {"n": 0, "k": None}

    def passed(self):
        looks["n"] += 1
        return looks["k"] is not None and looks["n"] >= looks["k"]

    monkeypatch.setattr(Deadline, "passed", passed)

    def set_k(k):
        looks.update(n=0, k=k)

    return set_k


@pytest.mark.parametrize("k", [1, 10, 30, 60, 200])  # in the lists' steps, in the search, or never
def test_subset_sum_time_limit_keeps_proven_bounds(clock_after, k):
    w, cap = _weights(24)
    best = subset_sum.maximize(w, cap, backend="cpu", block=16)
    clock_after(k)
    sol = subset_sum.maximize(w, cap, backend="cpu", block=16, time_limit=60)
    assert sol.checked and sum(w[i] for i in sol.solution) == sol.value <= best.value
    if sol.optimal:  # the search ran to its end first
        assert sol.value == best.value and k == 200
    else:
        d = sol.details
        assert (
            d["stopped"] == "time" and d["lower_bound"] == sol.value <= best.value <= d["upper_bound"] == cap
        )
    clock_after(k)
    exact = subset_sum.solve(w, cap, backend="cpu", block=16, time_limit=60)
    if not exact.optimal:  # no subset hits cap here: unknown, with the closest found
        d = exact.details
        assert d["feasible"] is None and exact.value is None and exact.checked
        assert d["closest_sum"] == d["lower_bound"] <= best.value <= d["upper_bound"] == cap


def test_subset_sum_time_limit_between_parts(clock_after):
    w, cap = _weights(24, seed=1)
    best = subset_sum.maximize(w, cap, backend="cpu", split=2)
    clock_after(40)  # the lists of a part take about 24 looks: stops in the second part
    sol = subset_sum.maximize(w, cap, backend="cpu", split=2, time_limit=60)
    assert not sol.optimal and sol.checked
    assert sol.details["lower_bound"] == sol.value <= best.value
    assert sum(w[i] for i in sol.solution) == sol.value


def test_cli_subset_sum_time_limit_exits_1(tmp_path, capsys):
    w, cap = _weights(30, seed=2)
    f = tmp_path / "ss.txt"
    f.write_text("\n".join(map(str, [cap, *w])) + "\n")
    best = subset_sum.maximize(w, cap, backend="cpu").value
    cmd = ["solve", "subset-sum", str(f), "--backend", "cpu", "--time-limit", "1e-9"]
    assert main([*cmd, "--json"]) == 1
    io = capsys.readouterr()
    d = json.loads(io.out)
    assert d["optimal"] is False and d["feasible"] is None and "not proven optimal" in io.err
    assert d["closest_sum"] == d["lower_bound"] <= best <= d["upper_bound"] == cap
    assert sum(w[i] for i in d["closest"]) == d["closest_sum"]
    assert main([*cmd, "--maximize", "--json"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert d["optimal"] is False and d["value"] == d["lower_bound"] <= best <= d["upper_bound"] == cap
    assert main([*cmd, "--maximize"]) == 1
    assert "best sum between" in capsys.readouterr().out
    assert main(["solve", "subset-sum", str(f), "--time-limit", "nan"]) == 2


def test_subset_sum_prediction_line(monkeypatch, capsys):
    w, cap = _weights(24, seed=3)
    subset_sum.maximize(w, cap, backend="cpu")
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("GPUDP_CPU_CELL_RATE", "1")
    subset_sum.maximize(w, cap, backend="cpu")
    line = capsys.readouterr().err
    assert line.startswith("gpudp: subset sum of 24 usable items = 3.28e+04 steps, predicted about ")
    assert "--time-limit" in line


@pytest.mark.sim
def test_cuda_sweep_stops_at_its_time_limit(monkeypatch):
    """On the cuda backend the limit is looked at as each chunk's decisions land (the other slab's
    copy waited for); a layer a chunk here: 6 chunks of Held-Karp on 7 cities, 192 cells."""
    import gpudp.backends.cuda as cb

    limits = type(cb.BACKEND).chunk_limits
    monkeypatch.setattr(type(cb.BACKEND), "chunk_limits", lambda self, plan: (limits(self, plan)[0], 1))
    d = np.random.default_rng(0).integers(1, 100, (7, 7))
    sol = tsp.solve(d, backend="cuda", time_limit=1e-9)
    best = min(tsp.tour_length(d, [0, *p]) for p in itertools.permutations(range(1, 7)))
    assert not sol.optimal and sol.checked and 0 < sol.stats.cells < 192
    assert sol.details["lower_bound"] <= best <= sol.details["upper_bound"] == sol.value


def test_cli_knapsack_time_limit_exits_1(capsys):
    """Every solver alike: a knapsack stopped by --time-limit is not proven optimal, exit 1."""
    path = str(Path(__file__).resolve().parent / "data" / "knapsack" / "f8_l-d_kp_23_10000")
    cmd = ["solve", "knapsack", path, "--backend", "cpu", "--method", "bb", "--json"]
    assert main([*cmd, "--time-limit", "0"]) == 1
    io = capsys.readouterr()
    assert json.loads(io.out)["optimal"] is False and "not proven optimal" in io.err
    assert main(cmd) == 0
    assert json.loads(capsys.readouterr().out)["value"] == 9767


def test_interval_and_grid3_sweeps_stop_at_their_time_limit(monkeypatch):
    """The limit is a sweep option of every shape: interval tables and 3-D grids stop between their
    chunks too (made small here, so that tiny instances have several)."""
    from examples_loader import load_example

    import gpudp.grid3.layout as layout3
    import gpudp.interval.table as table

    monkeypatch.setattr(table.chunks, "__defaults__", (8,))  # max_work: 8 cells x lengths
    monkeypatch.setattr(layout3, "CPU_CHUNK_CELLS", 8)
    chain, lcs3 = load_example("matrix_chain"), load_example("lcs3")
    dims = [5, 10, 3, 12, 5, 50, 6, 7, 8]
    with pytest.raises(TimeLimitReached) as e:
        chain.matrix_chain(dims, backend="cpu", time_limit=1e-9)
    assert 0 < e.value.done < e.value.total == 36
    in_time = chain.matrix_chain(dims, backend="cpu", time_limit=60)
    assert in_time[0] == chain.matrix_chain(dims, backend="cpu")[0]
    with pytest.raises(TimeLimitReached) as e:
        lcs3.solve("GATTACA", "TACCAG", "ATTAC", backend="cpu", time_limit=1e-9)
    assert 0 < e.value.done < e.value.total == 7 * 6 * 5


def _knapsack_ref(p, w, c) -> int:
    """The textbook O(n C) table: the optimum of a small 0/1 knapsack."""
    best = [0] * (c + 1)
    for pk, wk in zip(p, w, strict=True):
        for cap in range(c, wk - 1, -1):
            best[cap] = max(best[cap], best[cap - wk] + pk)
    return best[c]


@pytest.mark.parametrize("method", ["dp", "auto"])
def test_knapsack_dp_time_limit_gives_greedy_and_dantzig(small_chunks, method):
    """The dense DP stops at its limit like every other solver: a checked greedy packing (the lower
    bound) and Dantzig's bound above the true optimum; auto's DP step gets what is left."""
    from gpudp.problems import knapsack

    rng = np.random.default_rng(5)
    w = rng.integers(1, 60, 30)
    p = w + rng.integers(0, 20, 30)
    c = int(w.sum()) // 2
    best = _knapsack_ref(p.tolist(), w.tolist(), c)
    assert knapsack.solve(p, w, c, method="dp", backend="cpu").value == best
    sol = knapsack.solve(p, w, c, method=method, backend="cpu", time_limit=1e-9)
    det = sol.details
    assert not sol.optimal and sol.checked and det["stopped"] == "time"
    assert det["lower_bound"] == sol.value <= best <= det["upper_bound"]
    assert int(w[sol.solution == 1].sum()) <= c


def test_knapsack_dp_prediction_line(monkeypatch, capsys):
    from gpudp.problems.knapsack import dp

    monkeypatch.setenv("GPUDP_CPU_CELL_RATE", "1")  # a unit cell a second: minutes for this one
    sol = dp.solve([5, 4, 3, 9], [40, 30, 20, 70], 90, backend="cpu")
    assert sol.optimal and sol.value == 12
    err = capsys.readouterr().err
    assert "gpudp: knapsack dp 4 items" in err and "predicted about" in err
    monkeypatch.delenv("GPUDP_CPU_CELL_RATE")
    dp.solve([5, 4, 3, 9], [40, 30, 20, 70], 90, backend="cpu")
    assert "predicted" not in capsys.readouterr().err


def _levenshtein(a, b) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


@pytest.mark.parametrize("seed", [0, 1])
def test_edit_distance_time_limit_gives_a_checked_script_and_bounds(small_chunks, seed):
    from gpudp.problems import edit_distance

    rng = np.random.default_rng(seed)
    a = "".join(rng.choice(list("ACGT"), 300))
    b = "".join(rng.choice(list("ACGT"), 280))
    best = _levenshtein(a, b)
    assert edit_distance.solve(a, b, backend="cpu").value == best
    sol = edit_distance.solve(a, b, backend="cpu", time_limit=1e-9)
    det = sol.details
    assert not sol.optimal and sol.checked and det["stopped"] == "time"
    assert det["lower_bound"] <= best <= det["upper_bound"] == sol.value
