"""Backend choice: ``auto`` keeps small work on the CPU without starting CUDA."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gpudp import backends
from gpudp.errors import BackendError


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
