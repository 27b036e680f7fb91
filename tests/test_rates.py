"""Issue 40: the rates ``auto`` predicts by are measured per machine and kernel family, stored beside
the kernel cache under the machine's fingerprint, moved by solves that miss, shown by ``gpudp info``."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time

import numba
import numpy as np
import pytest

from gpudp import backends
from gpudp.backends import rates
from gpudp.cli import main
from gpudp.solution import Stats


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A rates store of the test's own (never the session's or the user's), learning switched on,
    no overrides in the environment."""
    monkeypatch.setenv("GPUDP_RATES_DIR", str(tmp_path / "rates"))
    monkeypatch.setenv("GPUDP_CALIBRATE", "1")
    monkeypatch.delenv("GPUDP_CPU_CELL_RATE", raising=False)
    monkeypatch.delenv("GPUDP_GPU_START_S", raising=False)
    return tmp_path / "rates" / rates.FILE


@pytest.fixture
def fake_family(monkeypatch):
    """The ``tsp`` family measured by a fake calibrator of a known rate (1e8 transitions/s, 1 ms of
    overhead a run, so the growth matters); ``calls`` counts its runs."""
    calls = []

    def run(backend, step):
        calls.append((backend, step))
        work = 1e5 * 2**step
        return work, Stats(backend=backend, kernel_seconds=1e-3 + work / 1e8)

    monkeypatch.setitem(rates._CALIBRATORS, "tsp", run)
    return calls


def _threads():
    return backends.cpu_threads()


def test_a_measured_rate_round_trips_through_the_store(store, fake_family):
    assert rates.rate("tsp", "cpu", _threads()).source == "assumed"
    r = rates.measure("tsp", "cpu")
    assert r.source == "measured" and r.unit == "transitions/s"
    # grown until a run computes TARGET_S, the overhead then a small share: within 10% of 1e8
    assert 0.9e8 < r.value <= 1e8 and max(s for _, s in fake_family) >= 4
    back = rates.rate("tsp", "cpu", _threads())
    assert (back.value, back.source, back.at) == (r.value, "measured", r.at)
    data = json.loads(store.read_text())
    mine = data["machines"][rates.machine_key()]
    assert mine["machine"] == rates.machine() and mine["rates"]["tsp/cpu"]["value"] == r.value
    assert "measured" in r.words() and r.at[:10] in r.words()


def test_another_machine_or_thread_count_measures_again(store, fake_family):
    rates.measure("tsp", "cpu")
    assert rates.rate("tsp", "cpu", _threads()).source == "measured"
    # the same file read on another machine: its entry is not this one's
    other = dict(rates.machine(), cpu="another CPU (64 threads of 64 CPUs)")
    data = json.loads(store.read_text())
    data["machines"] = {rates.machine_key(other): data["machines"][rates.machine_key()]}
    store.write_text(json.dumps(data))
    assert rates.rate("tsp", "cpu", _threads()).source == "assumed"
    # another thread count is another fingerprint: measured again, lazily, for a large solve
    rates.measure("tsp", "cpu")
    threads = numba.get_num_threads()
    if threads == 1:
        pytest.skip("one thread: no other thread count to set")
    numba.set_num_threads(1)
    try:
        assert rates.rate("tsp", "cpu", 1).source == "assumed"
        fake_family.clear()
        r = rates.lazily("tsp", "cpu", 1, predicted_s=1e3)
        assert r.source == "measured" and fake_family
    finally:
        numba.set_num_threads(threads)
    assert rates.rate("tsp", "cpu", threads).source == "measured"
    assert len(json.loads(store.read_text())["machines"]) == 3


def test_a_corrupt_store_is_ignored_with_a_warning_and_rewritten(store, fake_family):
    store.parent.mkdir(parents=True)
    store.write_text('{"format": 1, "machines": {"x": ')
    with pytest.warns(UserWarning, match="ignoring the rates file"):
        assert rates.rate("tsp", "cpu", _threads()).source == "assumed"
    with pytest.warns(UserWarning):
        rates.measure("tsp", "cpu")
    assert json.loads(store.read_text())["format"] == rates.FORMAT
    assert rates.rate("tsp", "cpu", _threads()).source == "measured"
    store.write_text(json.dumps({"format": 99, "machines": {}}))
    with pytest.warns(UserWarning, match="not a format-1 store"):
        assert rates.rate("tsp", "cpu", _threads()).source == "assumed"


def test_a_store_of_odd_shapes_never_fails_a_solve(store, monkeypatch):
    """Another machine's entry that is no dict made the next write (a solve's observe, after its
    answer) raise AttributeError; arrays nested past Python's stack raised RecursionError from any
    read; a ``true`` rate read as 1 cell/s, measured. Now: the odd entry is dropped as the file is
    read, the deep file is ignored with the corrupt file's warning, a bool is no rate. A store that
    cannot be written warns and keeps the rate for the process."""
    store.parent.mkdir(parents=True)
    slow = Stats(backend="cpu", kernel_seconds=1.0)
    store.write_text(json.dumps({"format": rates.FORMAT, "machines": {"old": [], "older": 5}}))
    assert backends.observe("tsp", 1e3, slow).source == "observed"
    assert set(json.loads(store.read_text())["machines"]) == {rates.machine_key()}
    store.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.warns(UserWarning, match="ignoring the rates file .*recursion"):
        assert rates.rate("tsp", "cpu", _threads()).source == "assumed"
    mine = {"rates": {"tsp/cpu": {"value": True, "source": "measured"}}}
    store.write_text(json.dumps({"format": rates.FORMAT, "machines": {rates.machine_key(): mine}}))
    assert rates.rate("tsp", "cpu", _threads()).source == "assumed"
    monkeypatch.setenv("GPUDP_RATES_DIR", str(store))  # a file where the folder should be
    with pytest.warns(UserWarning, match="rates not stored"):
        assert backends.observe("tsp", 1e3, slow).source == "observed"
    assert rates.rate("tsp", "cpu", _threads()).source == "observed"


_WRITER = """
import sys
from gpudp.backends import rates
for k in range(int(sys.argv[2])):
    rates.write(f"w{sys.argv[1]}_{k}/cpu", {"value": float(k + 1), "source": "measured", "at": None})
"""


def test_concurrent_writers_lose_nothing(store):
    """Writers in four processes at once: every entry lands, the file is whole JSON throughout."""
    env = dict(os.environ)
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(w), "25"], env=env, stderr=subprocess.PIPE)
        for w in range(4)
    ]
    seen = 0
    while any(p.poll() is None for p in procs):
        time.sleep(0.005)
        if store.exists():  # a reader never sees half a file (the writers replace it atomically)
            json.loads(store.read_text())
            seen += 1
    assert all(p.wait() == 0 for p in procs), [p.stderr.read()[-500:] for p in procs]
    entries = json.loads(store.read_text())["machines"][rates.machine_key()]["rates"]
    assert {f"w{w}_{k}/cpu" for w in range(4) for k in range(25)} <= set(entries)
    assert not [f for f in os.listdir(store.parent) if f.startswith(".tmp-")]


def _stored(**entries):
    """Measured rates written into the test's store: ``family__backend=value``."""
    for key, value in entries.items():
        entry = {"value": value, "source": "measured", "at": "2026-12-06T12:00:00Z"}
        rates.write(key.replace("__", "/"), entry)


@pytest.fixture
def gpu_here(monkeypatch):
    monkeypatch.setattr(backends, "cuda_usable", lambda: True)
    monkeypatch.setattr(backends, "cuda_started", lambda: False)


def test_auto_takes_the_faster_side_by_the_stored_rates(store, gpu_here):
    _stored(grid__cpu=1e9, grid__cuda=1e11, start__cuda=0.5, tsp__cpu=1e7, tsp__cuda=1e11)
    # the grid: 1e8 cells are 0.1 s on the CPU, 0.5 s + 1 ms on the GPU
    name, why = backends.choose("auto", 1e8)
    assert name == "cpu" and "1e+09 cells/s measured 2026-12-06 12:00" in why
    assert "0.5 s start-up measured" in why and "of grid" in why
    # the same work of Held-Karp: 10 s on this CPU, the GPU wins
    name, why = backends.choose("auto", 1e8, "tsp")
    assert name == "cuda" and "1e+07 transitions/s measured" in why and "1e+11 transitions/s measured" in why
    # a GPU that starts in 0.01 s takes the grid's work too
    _stored(start__cuda=0.01)
    assert backends.choose("auto", 1e8)[0] == "cuda"
    # the environment overrides what is stored, and says so
    os.environ["GPUDP_CPU_CELL_RATE"] = "1e12"
    try:
        name, why = backends.choose("auto", 1e8, "tsp")
        assert name == "cpu" and "GPUDP_CPU_CELL_RATE" in why
    finally:
        del os.environ["GPUDP_CPU_CELL_RATE"]


def test_the_predictions_use_the_family_rates(store, gpu_here):
    _stored(knapsack_dp__cpu=2e8, knapsack_dp__cuda=4e10, start__cuda=0.25)
    assert backends.predicted_seconds(4e8, "cpu", "knapsack_dp") == pytest.approx(2.0)
    assert backends.predicted_seconds(4e8, "cuda", "knapsack_dp") == pytest.approx(0.26)
    from gpudp.problems.knapsack import dp

    assert dp.predicted_seconds(int(4e8), "cuda") == pytest.approx(0.26)
    with pytest.raises(backends.BackendError, match="unknown kernel family"):
        backends.choose("auto", 1.0, "nonsense")


def test_a_miss_over_2x_moves_the_rate_halfway_in_logarithms(store):
    _stored(tsp__cpu=1e6)
    slow = Stats(backend="cpu", kernel_seconds=1.0)
    # 1e7 transitions in 1 s: ten times the stored rate; the new one is their geometric mean
    r = backends.observe("tsp", 1e7, slow)
    assert r.source == "observed" and r.value == pytest.approx(math.sqrt(1e6 * 1e7))
    assert rates.rate("tsp", "cpu", _threads()).value == pytest.approx(r.value)
    # within 2x: nothing moves
    assert backends.observe("tsp", 1.5 * r.value, Stats(backend="cpu", kernel_seconds=1.0)) is None
    assert backends.observe("tsp", 0.6 * r.value, Stats(backend="cpu", kernel_seconds=1.0)) is None
    # too short to tell, or stopped by the user's figures, or learning off: nothing moves
    assert backends.observe("tsp", 1e9, Stats(backend="cpu", kernel_seconds=0.01)) is None
    os.environ["GPUDP_CPU_CELL_RATE"] = "1e8"
    try:
        assert backends.observe("tsp", 1e9, slow) is None
    finally:
        del os.environ["GPUDP_CPU_CELL_RATE"]
    os.environ["GPUDP_CALIBRATE"] = "0"
    assert backends.observe("tsp", 1e9, slow) is None
    os.environ["GPUDP_CALIBRATE"] = "1"
    # a run a thousand times off moves it by about 31x, not 1000x
    before = rates.rate("tsp", "cpu", _threads()).value
    after = backends.observe("tsp", before * 1000, slow).value
    assert after == pytest.approx(before * math.sqrt(1000))
    # the whole time counts where a solve reports no kernel time
    assert backends.observe("tsp", 1e3, Stats(backend="cpu", seconds=1.0)).value < after


def test_lazy_measurement_only_where_cheap_beside_the_work(store, fake_family):
    threads = _threads()
    # predicted 1 s: the measurement (MEASURE_COST_S) would be too large a share; assumed
    assert rates.lazily("tsp", "cpu", threads, 1.0).source == "assumed" and not fake_family
    os.environ["GPUDP_CALIBRATE"] = "0"
    assert rates.lazily("tsp", "cpu", threads, 1e4).source == "assumed" and not fake_family
    os.environ["GPUDP_CALIBRATE"] = "1"
    r = rates.lazily("tsp", "cpu", threads, rates.LAZY_SHARE * rates.MEASURE_COST_S)
    assert r.source == "measured" and fake_family
    # choose measures a large solve's family the first time; the reason names the measured rate
    os.environ["GPUDP_RATES_DIR"] = str(store.parent.parent / "other")
    name, why = backends.choose("cpu", 1e12, "tsp")
    assert why == "cpu: asked for"  # a backend asked for: nothing to predict, nothing measured
    name, why = backends.choose("auto", 1e12, "tsp")
    assert "transitions/s measured" in why


def test_a_measurement_needs_its_family_s_calibrator(store, monkeypatch):
    monkeypatch.delitem(rates._CALIBRATORS, "tsp", raising=False)
    with pytest.raises(backends.BackendError, match="no measurement registered"):
        rates.measure("tsp", "cpu")
    with pytest.raises(backends.BackendError, match="unknown kernel family"):
        rates.measure("nonsense", "cpu")


def test_info_shows_each_rate_and_its_source(store, capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert f"rates_file       {store}" in out
    assert "  grid/cpu" in out and "  tsp/cpu" in out and "assumed" in out
    _stored(tsp__cpu=3.5e7)
    assert main(["info"]) == 0
    line = [x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("tsp/cpu")]
    assert line and "3.5e+07 transitions/s measured 2026-12-06 12:00" in line[0]


def test_warmup_calibrate_measures_on_the_cpu(store, capsys):
    assert main(["warmup", "tsp", "--backend", "cpu", "--calibrate"]) == 0
    out = capsys.readouterr().out
    assert "rate tsp         cpu" in out and "transitions/s" in out
    entries = json.loads(store.read_text())["machines"][rates.machine_key()]["rates"]
    assert set(entries) == {"tsp/cpu"}
    assert all(e["source"] == "measured" and e["value"] > 0 for e in entries.values())
    # a solve's auto now names the measured rate
    from gpudp.problems import tsp

    sol = tsp.solve([[0, 3, 4], [3, 0, 5], [4, 5, 0]], progress=False)
    assert "transitions/s measured" in sol.stats.extra["backend_choice"]


@pytest.mark.skipif(backends.cuda_usable(), reason="a GPU here: its start-up is measured on it")
def test_the_start_up_probe_runs_and_reports_a_missing_gpu(store, monkeypatch):
    """The fresh process's probe solves on the CPU, then finds no GPU for its CUDA sweep (the
    simulator off: it would take minutes): an error naming why, nothing stored as the start-up."""
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "0")
    with pytest.raises(backends.BackendError, match="(?s)start-up failed: .*no CUDA GPU is usable"):
        rates.measure_gpu_start()
    assert rates.start_rate().source == "assumed"


def _tsp():
    from gpudp.problems import tsp

    return tsp.solve(np.random.default_rng(1).integers(1, 99, (9, 9)), progress=False)


def _subset_sum():
    from gpudp.problems import subset_sum

    return subset_sum.solve([2, 4, 6, 8, 10, 12, 14, 16, 18, 20], 31, progress=False)  # none: whole


def _knapsack():
    from gpudp.problems.knapsack import dp

    return dp.solve([5, 4, 3, 9, 7], [40, 30, 20, 70, 50], 90, progress=False)


def _lcs():
    from gpudp.problems import lcs

    return lcs.solve("GATTACA" * 20, "TACGATTA" * 20, progress=False, method="wavefront")


def _lcs_batch():
    from gpudp.problems import lcs

    return lcs.solve_many([("GATTACA" * 9, "TACGATTA" * 9)] * 4, verify=0)


PLUGINS = {"tsp": _tsp, "subset_sum": _subset_sum, "knapsack_dp": _knapsack, "grid": _lcs}
PLUGINS["bitparallel"] = _lcs_batch


@pytest.mark.parametrize("family", sorted(PLUGINS))
def test_each_plug_in_predicts_by_its_family_and_teaches_it(store, monkeypatch, family):
    """A plug-in's auto names its family's rate; its solve, far off an absurd stored rate, moves it."""
    monkeypatch.setattr(rates, "MIN_OBSERVED_S", 0.0)  # these solves take milliseconds
    rates.write(f"{family}/cpu", {"value": 1e18, "source": "measured", "at": "2026-12-06T12:00:00Z"})
    sol = PLUGINS[family]()
    why = sol.stats.extra["backend_choice"]
    assert sol.stats.backend == "cpu" and f" of {family} predicted" in why and "/s measured" in why
    moved = rates.rate(family, "cpu", _threads())
    entry = json.loads(store.read_text())["machines"][rates.machine_key()]["rates"][f"{family}/cpu"]
    assert moved.source == "observed" and entry["was"] == 1e18 and entry["seen"] < 1e16
    assert moved.value == pytest.approx(math.sqrt(1e18 * entry["seen"]))


@pytest.mark.gpu
def test_on_a_gpu_the_rates_and_the_start_up_are_measured(store):
    """The lent GPU machine: the grid family's GPU rate from its real kernels, far above the CPU's,
    and a fresh process's start-up, each stored and shown as measured."""
    from gpudp.problems import lcs  # noqa: F401  (registers the grid family's measurement)

    gpu = rates.measure("grid", "cuda")
    start = rates.measure_gpu_start()
    assert gpu.source == start.source == "measured"
    assert gpu.value > rates.measure("grid", "cpu").value and 0 < start.value < 30
    entries = json.loads(store.read_text())["machines"][rates.machine_key()]["rates"]
    assert {"grid/cuda", "start/cuda", "grid/cpu"} <= set(entries)
    name, why = backends.choose("auto", 1e12)
    head = "s of launches" if backends.cuda_started() else "start-up measured"  # CUDA runs here
    assert name == "cuda" and head in why and "cells/s measured" in why


def test_a_failing_lazy_measurement_warns_and_the_solve_goes_on(store, monkeypatch):
    def broken(backend, step):
        raise MemoryError("no room for the generated input")

    monkeypatch.setitem(rates._CALIBRATORS, "tsp", broken)
    with pytest.warns(UserWarning, match="measuring the tsp kernels on cpu failed .*no room"):
        name, why = backends.choose("auto", 1e13, "tsp")
    assert name == "cpu" and "transitions/s assumed" in why
