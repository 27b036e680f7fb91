"""The CUDA driver started on a thread (gpudp.prestart): when it runs, what it reports, and that a
driver's error or its absence is reported, never raised."""

import threading

import pytest

from gpudp import cli, prestart


@pytest.fixture
def fresh(monkeypatch):
    """prestart's state emptied for the test (and restored), the switch and the simulator off."""
    monkeypatch.setattr(prestart, "_STATE", {})
    monkeypatch.delenv("GPUDP_PRESTART", raising=False)
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setattr(prestart, "_numba_started", lambda: False)


class _Driver:
    """A stand-in for libcuda: each call returns its code from ``codes`` and is recorded."""

    def __init__(self, **codes):
        self.codes, self.calls = codes, []

    def __getattr__(self, name):
        def call(*args):
            self.calls.append(name)
            return self.codes.get(name, 0)

        return call


def _wait():
    for t in threading.enumerate():
        if t.name == "gpudp-cuda-start":
            t.join(10)


ALL = ["cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain"]


@pytest.mark.parametrize(
    "codes, status, calls",
    [
        ({}, "started", ALL),
        ({"cuInit": 100}, "CUDA error 100", ["cuInit"]),  # a driver but no device
        ({"cuDevicePrimaryCtxRetain": 2}, "CUDA error 2", ALL),
    ],
)
def test_start_reports_the_driver(fresh, monkeypatch, codes, status, calls):
    lib = _Driver(**codes)
    monkeypatch.setattr(prestart, "_driver", lambda: lib)
    assert prestart.report() == {}
    assert prestart.start() is True
    assert prestart.start() is False  # once a process
    _wait()
    got = prestart.report()
    assert got["status"] == status and got["seconds"] >= 0
    assert lib.calls == calls


def test_not_once_numba_started_cuda(fresh, monkeypatch):
    monkeypatch.setattr(prestart, "_numba_started", lambda: True)
    assert prestart.start() is False and prestart.report() == {}


def test_no_driver_is_reported(fresh, monkeypatch):
    monkeypatch.setattr(prestart, "_driver", lambda: None)
    assert prestart.start()
    _wait()
    assert prestart.report()["status"] == "no CUDA driver library"


@pytest.mark.parametrize("env", [{"GPUDP_PRESTART": "0"}, {"NUMBA_ENABLE_CUDASIM": "1"}])
def test_switched_off(fresh, monkeypatch, env):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(prestart, "_driver", lambda: pytest.fail("the driver was loaded"))
    assert prestart.start() is False
    assert prestart.report() == {}


@pytest.mark.parametrize(
    "argv, asked",
    [
        (["solve", "lcs", "a.fa", "b.fa", "--backend", "cuda"], True),
        (["solve", "lcs", "--backend=cuda", "a.fa"], True),
        (["solve", "lcs", "a.fa", "--backend", "cpu"], False),
        (["solve", "lcs", "a.fa", "--backend"], False),
        (["demo"], False),
        (["solve", "lcs", "cuda", "--backend", "auto"], False),
    ],
)
def test_command_line_asks_for_cuda(argv, asked):
    assert cli._asks_cuda(argv) is asked
