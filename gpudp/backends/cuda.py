"""Everything that touches the CUDA compiler (numba-cuda) lives in this one module.

Other modules, plug-ins included, take ``cuda`` and the helpers below from here, so that moving to
numba-cuda-mlir (numba-cuda is in maintenance mode, NVIDIA/numba-cuda#902) is a change to one file.
Importing this module never needs a GPU; :func:`available` says whether one can be used.
"""

from __future__ import annotations

import os

import numpy as np
from numba import cuda

__all__ = [
    "cuda",
    "available",
    "is_simulator",
    "unavailable_reason",
    "device_name",
    "device_jit",
    "kernel_jit",
    "pinned_empty",
    "mapped_empty",
    "stream",
    "event",
    "max_cooperative_blocks",
]


def is_simulator() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


_REASON: list[str] = []


def available() -> bool:
    """True when kernels can run: a real GPU, or the CUDA simulator when it is switched on."""
    try:
        ok = bool(cuda.is_available())
    except Exception as e:  # a broken driver raises rather than answering False
        _REASON[:] = [f"{type(e).__name__}: {e}"]
        return False
    if not ok and not _REASON:
        _REASON.append("numba.cuda.is_available() is False: no GPU or no CUDA driver")
    return ok


def unavailable_reason() -> str:
    available()
    return _REASON[0] if _REASON else "CUDA is available"


def device_name() -> str:
    if is_simulator():
        return "CUDA simulator (NUMBA_ENABLE_CUDASIM=1)"
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    cc = ".".join(map(str, dev.compute_capability))
    return f"{name} (sm {cc}, {dev.MULTIPROCESSOR_COUNT} SMs)"


def device_jit(fn):
    """Compile a plain Python function as a CUDA device function (inlined into kernels)."""
    return cuda.jit(device=True)(fn)


def kernel_jit(fn, **kw):
    return cuda.jit(**kw)(fn)


def pinned_empty(shape, dtype) -> np.ndarray:
    """Page-locked host memory (fast, asynchronous DMA); plain memory under the simulator."""
    if is_simulator():
        return np.empty(shape, dtype)
    return cuda.pinned_array(shape, dtype=dtype)


def mapped_empty(shape, dtype) -> np.ndarray:
    if is_simulator():
        return np.empty(shape, dtype)
    return cuda.mapped_array(shape, dtype=dtype)


def stream():
    return cuda.stream()


def event(timing: bool = True):
    return cuda.event(timing=timing)


def max_cooperative_blocks(kernel, threads: int, fallback: int) -> int:
    """How many blocks of ``threads`` a cooperative (grid-synchronised) launch may have."""
    if is_simulator():
        return fallback
    try:
        return int(kernel.max_cooperative_grid_blocks(threads))
    except Exception:
        return fallback
