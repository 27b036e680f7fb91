"""The CPU backend: numba ``njit`` (``parallel=True`` with ``prange``) over the same cell functions."""

from __future__ import annotations

import os
import platform

import numba


def device_name() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu} ({numba.get_num_threads()} threads of {os.cpu_count()} CPUs)"


def njit(fn=None, **kw):
    """numba.njit with the project's defaults (no Python fallback, fastmath off: exact DP)."""
    kw.setdefault("nogil", True)
    if fn is None:
        return lambda f: numba.njit(**kw)(f)
    return numba.njit(**kw)(fn)
