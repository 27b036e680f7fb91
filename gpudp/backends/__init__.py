"""Backends: what the engine asks of one (:class:`Backend`), the registry (:func:`get`), and the
choice ``auto`` makes (:func:`choose`). ``cpu`` (numba njit) always works; ``cuda`` needs a usable GPU.

Each backend is one module that defines ``BACKEND``, an instance of a :class:`Backend` subclass:
``cpu`` (:mod:`gpudp.backends.cpu`) and ``cuda`` (:mod:`gpudp.backends.cuda`). A new backend adds
its module and one line to :data:`MODULES`. Nothing here imports the CUDA compiler: that lives in
:mod:`gpudp.backends.cuda` (and in features' own ``cuda`` modules), imported only when a GPU runs.
"""

from __future__ import annotations

import importlib
import os
import sys

from ..errors import BackendError, InputError
from .base import Backend

__all__ = [
    "Backend",
    "MODULES",
    "get",
    "choose",
    "resolve",
    "cuda_usable",
    "cuda_started",
    "device_name",
    "is_device_array",
]

#: backend name -> module defining ``BACKEND``
MODULES = {"cpu": f"{__name__}.cpu", "cuda": f"{__name__}.cuda"}


def get(name: str) -> Backend:
    """The registered backend called ``name`` (its module is imported on first use)."""
    if name not in MODULES:
        raise BackendError(f"unknown backend {name!r}; choose one of {', '.join(MODULES)}")
    return importlib.import_module(MODULES[name]).BACKEND


BACKENDS = ("auto", "cpu", "cuda")

#: Seconds a process pays before its first CUDA kernel and the CPU does not: importing numba-cuda,
#: creating the context, loading the cached kernels, the first copies. Measured on the H100 machine
#: (2026-11-23, warm kernel cache, fresh processes): see "Start-up" in docs/benchmarks.md.
#: Override with GPUDP_GPU_START_S (seconds).
GPU_START_S = 1.5
#: Seconds a process that has already started CUDA pays for one more solve on the GPU (launches,
#: copies, synchronisation) beyond the kernels themselves.
GPU_LAUNCH_S = 0.02
#: Cell updates a second of one CPU thread runs (a cell of three reads, like LCS or edit distance;
#: measured on the H100 machine's CPU cores and on this project's CI machine, see docs/benchmarks.md).
#: Solvers give their work in these units. Override with GPUDP_CPU_CELL_RATE (per thread).
CPU_CELLS_PER_THREAD_S = 2.0e8
#: The same for the GPU, conservatively (bundled kernels run 50-700 G cells/s on an H100).
GPU_CELLS_PER_S = 5.0e10


def cuda_usable() -> bool:
    """True when a real CUDA GPU can run kernels (the simulator does not count)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return False
    return get("cuda").available()


def resolve(backend: str = "auto", work: float | None = None) -> str:
    """Turn ``auto|cpu|cuda`` into the backend that will run, or raise BackendError.

    work: the solve's size in cell updates (see :data:`CPU_CELLS_PER_THREAD_S`), when the caller
    knows it; ``auto`` then keeps on the CPU what the CPU finishes before the GPU could (see
    :func:`choose`).
    """
    return choose(backend, work)[0]


def _env_float(name: str, default: float) -> float:
    text = os.environ.get(name)
    if not text:
        return default
    try:
        x = float(text)
    except ValueError:
        raise BackendError(f"{name}={text!r} is not a number") from None
    if not x >= 0:
        raise BackendError(f"{name}={text!r} must be >= 0")
    return x


def page_locked(x):
    """``x`` (a numpy array) copied into page-locked host memory, where a CUDA GPU is usable (or
    the simulator runs); else ``x`` itself.

    Data that the GPU reads in several calls (a batch solved again, a Dask worker's resident blocks:
    :func:`gpudp.distributed.page_locked`) is then copied to the device by DMA straight from where it
    lies, while the GPU computes: the batch solvers skip their own staging copy for it
    (``lcs.solve_many`` and ``edit_distance.solve_many`` on the cuda backend). Page-locking costs
    about one copy of the data, once (0.5 s for 1 GB on an H100 host), and page-locked memory is
    never swapped out: keep it for data that is used more than once.

    Parameters
    ----------
    x : numpy array (any shape and dtype)

    Returns
    -------
    A C-contiguous page-locked array equal to ``x`` (``x`` itself when it is one already, empty, or
    when no GPU is usable).

    Raises
    ------
    InputError
        for anything but a numpy array.

    Example
    -------
    >>> import numpy as np
    >>> a = page_locked(np.zeros((4, 1000), np.uint8))
    >>> a.shape, int(a.sum())
    ((4, 1000), 0)
    """
    import numpy as np

    if not isinstance(x, np.ndarray):
        raise InputError("x", f"a numpy array, got {type(x).__name__}")
    if x.size == 0 or not (cuda_usable() or os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"):
        return x
    return get("cuda").page_locked(x)


def is_device_array(x) -> bool:
    """Whether ``x`` is an array in GPU memory: one with ``__cuda_array_interface__`` (CuPy, numba's
    device arrays, PyTorch's CUDA tensors), or a device array of numba's CUDA simulator. Nothing is
    imported or started to tell."""
    if hasattr(x, "__cuda_array_interface__"):
        return True
    sim = sys.modules.get("numba.cuda.simulator.cudadrv.devicearray")
    return sim is not None and isinstance(x, sim.FakeCUDAArray)


def cuda_started() -> bool:
    """True when this process has already paid CUDA's start-up (the backend is imported and a GPU
    answered), so one more GPU solve costs launches, not seconds."""
    mod = sys.modules.get(MODULES["cuda"] + ".driver")
    return bool(mod is not None and getattr(mod, "STARTED", False))


def cpu_threads() -> int:
    import numba

    return max(1, int(numba.get_num_threads()))


def cpu_cell_rate() -> float:
    """Cell updates a second the CPU is predicted to run on all its threads (what :func:`choose`
    compares): GPUDP_CPU_CELL_RATE, or :data:`CPU_CELLS_PER_THREAD_S`, per thread, times the threads."""
    return _env_float("GPUDP_CPU_CELL_RATE", CPU_CELLS_PER_THREAD_S) * cpu_threads()


def gpu_start_seconds() -> float:
    """Seconds one more GPU solve is predicted to pay besides its kernels (what :func:`choose` adds):
    :data:`GPU_LAUNCH_S` once CUDA is started in this process, else :data:`GPU_START_S`
    (GPUDP_GPU_START_S, read and checked either way)."""
    start = _env_float("GPUDP_GPU_START_S", GPU_START_S)
    return GPU_LAUNCH_S if cuda_started() else start


def predicted_seconds(work: float, backend: str, gpu_rate: float | None = None) -> float:
    """Seconds ``work`` cell updates are predicted to take on ``backend`` (``cpu`` or ``cuda``), by
    the figures :func:`choose` compares: :func:`cpu_cell_rate` on the CPU; on the GPU its start-up
    (:func:`gpu_start_seconds`) plus the work at ``gpu_rate`` (default :data:`GPU_CELLS_PER_S`)."""
    if backend == "cuda":
        return gpu_start_seconds() + work / (gpu_rate or GPU_CELLS_PER_S)
    return work / cpu_cell_rate()


def where(backend: str) -> str:
    """The backend in words for a prediction: ``cpu (2 threads)``, ``cuda``."""
    if backend == "cpu":
        threads = cpu_threads()
        return f"cpu ({threads} thread{'s' if threads != 1 else ''})"
    return backend


def choose(backend: str = "auto", work: float | None = None) -> tuple[str, str]:
    """``(backend, why)``: the backend that will run and, for ``auto``, the reason in words.

    ``auto`` runs on the CPU when the predicted CPU time, ``work / (rate x threads)``, is below the
    GPU's predicted time, its start-up (:data:`GPU_START_S`, or :data:`GPU_LAUNCH_S` once CUDA is
    started in this process) plus ``work / GPU_CELLS_PER_S``. A solve whose work is not known, or
    large, goes to the GPU when one is usable. Deciding for the CPU does not import the CUDA
    compiler at all: that import is most of the start-up being saved.
    """
    if backend not in BACKENDS:
        raise BackendError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend == "auto":
        if work is not None:
            threads = cpu_threads()
            t_cpu = work / cpu_cell_rate()
            t_gpu = gpu_start_seconds() + work / GPU_CELLS_PER_S
            if t_cpu < t_gpu:
                return "cpu", (
                    f"auto: cpu, {work:.3g} cell updates predicted {t_cpu:.3g} s on {threads} threads, "
                    f"the GPU {t_gpu:.3g} s with its start-up"
                )
            if cuda_usable():
                return "cuda", (
                    f"auto: cuda, {work:.3g} cell updates predicted {t_gpu:.3g} s, the cpu {t_cpu:.3g} s"
                )
            return "cpu", f"auto: cpu, no usable GPU ({unavailable_reason()})"
        if cuda_usable():
            return "cuda", "auto: cuda, a GPU is usable"
        return "cpu", f"auto: cpu, no usable GPU ({unavailable_reason()})"
    if backend == "cuda":
        be = get("cuda")
        if not be.available():
            raise BackendError(
                "backend 'cuda' asked for, but no CUDA GPU is usable here "
                f"({be.unavailable_reason()}); use backend='cpu' or 'auto'"
            )
    return backend, f"{backend}: asked for"


def unavailable_reason() -> str:
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return "the CUDA simulator is on; it runs only when asked for by backend='cuda'"
    return get("cuda").unavailable_reason()


def device_name(backend: str) -> str:
    """The device a backend runs on, in words (the CPU's model and threads, the GPU's name)."""
    return get(backend).device_name()
