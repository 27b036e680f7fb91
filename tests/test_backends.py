"""Backend choice: ``auto`` keeps small work on the CPU without starting CUDA."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from gpudp import backends
from gpudp.errors import BackendError, InputError


def test_unknown_backend_is_refused():
    with pytest.raises(BackendError, match="unknown backend 'gpu'"):
        backends.choose("gpu")


def test_explicit_backends_are_kept():
    assert backends.choose("cpu", work=1e15) == ("cpu", "cpu: asked for")


@pytest.mark.parametrize("work", [0, 1, 1e6])
def test_small_work_stays_on_the_cpu(work):
    name, why = backends.choose("auto", work)
    assert name == "cpu" and why.startswith("auto: cpu,") and "predicted" in why


def test_the_crossover_follows_the_model(monkeypatch):
    """Below the GPU's start-up in predicted CPU seconds: cpu; above it the GPU when one is usable."""
    monkeypatch.setattr(backends, "cpu_threads", lambda: 4)
    monkeypatch.setattr(backends, "cuda_started", lambda: False)
    monkeypatch.setattr(backends, "cuda_usable", lambda: True)
    monkeypatch.setenv("GPUDP_GPU_START_S", "1.0")
    monkeypatch.setenv("GPUDP_CPU_CELL_RATE", "1e8")
    # 4 threads x 1e8 cells/s: 4e8 cells take 1 s on the CPU, and the GPU 1 s + 4e8 / 5e10 s
    assert backends.choose("auto", 3.9e8)[0] == "cpu"
    assert backends.choose("auto", 4.1e8)[0] == "cuda"
    # once CUDA is started in this process a GPU solve costs launches: the crossover moves down
    monkeypatch.setattr(backends, "cuda_started", lambda: True)
    assert backends.choose("auto", 4e7)[0] == "cuda"
    assert backends.choose("auto", 1e6)[0] == "cpu"
    # unknown work: the GPU when usable, the CPU otherwise
    assert backends.choose("auto")[0] == "cuda"
    monkeypatch.setattr(backends, "cuda_usable", lambda: False)
    monkeypatch.setattr(backends, "unavailable_reason", lambda: "no GPU here")
    assert backends.choose("auto", 1e12) == ("cpu", "auto: cpu, no usable GPU (no GPU here)")


@pytest.mark.parametrize("value", ["fast", "-1", "nan"])
def test_nonsense_calibration_is_refused(monkeypatch, value):
    monkeypatch.setenv("GPUDP_GPU_START_S", value)
    with pytest.raises(BackendError, match="GPUDP_GPU_START_S"):
        backends.choose("auto", 1e6)


def test_a_small_auto_solve_never_imports_the_cuda_compiler():
    """The start-up being saved is mostly ``import numba.cuda``: a small solve must not pay it."""
    code = (
        "import sys, numpy as np\n"
        "from gpudp.problems import lcs\n"
        "s = lcs.solve(np.array([0, 1, 2, 3], np.uint8), np.array([1, 2, 3], np.uint8))\n"
        "print(s.value, s.stats.backend, s.stats.extra['backend_choice'].split(',')[0],\n"
        "      'numba.cuda' in sys.modules)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["3", "cpu", "auto:", "cpu", "False"]


def test_backends_register_and_answer_the_engine():
    cpu = backends.get("cpu")
    assert cpu.name == "cpu" and cpu.memory() is None and cpu.available()
    assert cpu.fit_tile(cpu.default_tile, 5, 40) == (5, 64)
    assert cpu.allocate_words(3).dtype == np.uint32
    assert backends.device_name("cpu") == cpu.device_name()
    with pytest.raises(BackendError, match="unknown backend"):
        backends.get("tpu")


def test_the_plan_gives_the_memory_before_the_sweep(monkeypatch):
    from gpudp import engine, memory
    from gpudp.problems import lcs

    rec = lcs.LCSRecurrence(np.zeros(3000, np.uint8), np.zeros(4000, np.uint8))
    plan = engine.plan_sweep(rec, "cpu")
    need = plan.memory()
    assert need.decisions == plan.layout.n_words * 4 and need.device == 0 and not need.spill
    assert need.host >= need.values > 0 and need.disk == 0 and need.host_total == need.host + need.decisions
    spilled = plan.memory(memory_budget=0)
    assert spilled.spill and spilled.disk == need.decisions and spilled.host_total == need.host
    # the engine refuses what this process cannot hold, before any kernel runs
    monkeypatch.setattr(engine, "available_memory", lambda: need.host - 1)
    with pytest.raises(InputError, match="host memory"):
        lcs.solve(np.zeros(3000, np.uint8), np.zeros(4000, np.uint8), backend="cpu")
    assert memory.available_memory() > need.host  # the real figure was not touched


@pytest.mark.parametrize("shape", [(3000, 4000), (70, 9000), (1, 1)])
@pytest.mark.parametrize("limit", [1, 1000, 1 << 20])
def test_the_planned_slab_holds_every_chunk(shape, limit):
    """The slab the memory plan counts (``Backend.slab_words``) holds every chunk the backend cuts
    (``Backend.chunk_limits``), whatever the slab limit."""
    from gpudp import engine
    from gpudp.problems import lcs

    be = type("Small", (backends.Backend,), {"name": "small", "slab_words_max": limit})()
    rec = lcs.LCSRecurrence(np.zeros(shape[0], np.uint8), np.zeros(shape[1], np.uint8))
    plan = engine.plan_sweep(rec, "cpu", tile=(32, 64))
    lay = plan.layout
    widest = max(lay.words_of(d, d + 1)[1] - lay.words_of(d, d + 1)[0] for d in range(plan.n_units))
    assert widest == min(lay.ni, lay.nj) * lay.words_per_tile
    plan.make_chunks(*be.chunk_limits(plan))
    assert plan.max_chunk_words() <= be.slab_words(lay.n_words, widest)
    assert plan.memory().slab_words == backends.get("cpu").slab_words(lay.n_words, widest)


def test_layered_memory_is_exact_at_any_size():
    from gpudp.engine import layered_memory

    huge = [10**40, 3 * 10**40]
    need = layered_memory(huge, 5, 4, 1, "cpu", "plain", 0)
    assert need.values == 2 * 3 * 10**40 * 4
    assert need.decisions == sum(-(-x // 32) * 5 for x in huge) * 4 and need.spill


def test_a_layered_plan_counts_what_its_layout_holds():
    from gpudp import engine
    from gpudp.problems.knapsack import dp as kd

    w = np.array([3, 5, 7, 11] * 10)
    rec = kd.recurrence_class(np.int32)(w, w + 1, 100)
    plan = engine.plan_sweep(rec, "cpu")
    need = plan.memory()
    assert need.decisions == plan.layout.n_words * 4  # bands: at most every computed word
    assert need.values == 2 * 101 * 4
    plain = type("Plain", (type(rec),), {"decision_codec": "plain"})(w, w + 1, 100)
    assert engine.plan_sweep(plain, "cpu").memory().decisions == len(w) * 4 * 4  # 4 groups of 32
