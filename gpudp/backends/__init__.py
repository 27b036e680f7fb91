"""Backend selection. ``cpu`` (numba njit) always works; ``cuda`` needs a usable GPU.

Nothing here imports the CUDA compiler: that lives in :mod:`gpudp.backends.cuda` alone, so that a
move to another CUDA compiler touches one file.
"""

from __future__ import annotations

import os

from ..errors import BackendError

BACKENDS = ("auto", "cpu", "cuda")


def cuda_usable() -> bool:
    """True when a real CUDA GPU can run kernels (the simulator does not count)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return False
    from . import cuda as _cuda

    return _cuda.available()


def resolve(backend: str = "auto") -> str:
    """Turn ``auto|cpu|cuda`` into the backend that will run, or raise BackendError."""
    if backend not in BACKENDS:
        raise BackendError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend == "auto":
        return "cuda" if cuda_usable() else "cpu"
    if backend == "cuda":
        from . import cuda as _cuda

        if not _cuda.available():
            raise BackendError(
                "backend 'cuda' asked for, but no CUDA GPU is usable here "
                f"({_cuda.unavailable_reason()}); use backend='cpu' or 'auto'"
            )
    return backend


def device_name(backend: str) -> str:
    if backend == "cuda":
        from . import cuda as _cuda

        return _cuda.device_name()
    from . import cpu as _cpu

    return _cpu.device_name()
