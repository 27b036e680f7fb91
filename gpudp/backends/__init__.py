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
from . import rates
from .base import Backend

# the figures assumed where nothing is measured (gpudp.backends.rates has them and their story)
from .rates import CPU_CELLS_PER_THREAD_S, GPU_CELLS_PER_S, GPU_LAUNCH_S, GPU_START_S, env_float

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
    "observe",
    "calibrator",
    "calibrate",
    "rate_table",
    "predicted_seconds",
    "CPU_CELLS_PER_THREAD_S",
    "GPU_CELLS_PER_S",
    "GPU_LAUNCH_S",
    "GPU_START_S",
    "env_float",
]

#: backend name -> module defining ``BACKEND``
MODULES = {"cpu": f"{__name__}.cpu", "cuda": f"{__name__}.cuda"}


def get(name: str) -> Backend:
    """The registered backend called ``name`` (its module is imported on first use)."""
    if name not in MODULES:
        raise BackendError(f"unknown backend {name!r}; choose one of {', '.join(MODULES)}")
    return importlib.import_module(MODULES[name]).BACKEND


BACKENDS = ("auto", "cpu", "cuda")


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


def cpu_cell_rate(family: str = "grid") -> float:
    """Work a second the CPU is predicted to run on all its threads for ``family``.

    Parameters
    ----------
    family : a key of :data:`gpudp.backends.rates.FAMILIES` (default: the generic sweep's cells)

    Returns
    -------
    float: the ``GPUDP_CPU_CELL_RATE`` override, the measured rate, else the assumed one
    (:func:`gpudp.backends.rates.rate`)

    Raises
    ------
    BackendError
        an unknown family, or a nonsense override.
    """
    return rates.rate(family, "cpu", cpu_threads()).value


def gpu_start_seconds() -> float:
    """Seconds one more GPU solve is predicted to pay besides its kernels (what :func:`choose` adds):
    :data:`GPU_LAUNCH_S` once CUDA is started in this process, else the start-up a fresh process
    pays: ``GPUDP_GPU_START_S``, measured (``gpudp warmup --calibrate``), or :data:`GPU_START_S`
    (the environment is read and checked either way)."""
    start = rates.start_rate().value
    return GPU_LAUNCH_S if cuda_started() else start


def predicted_seconds(work: float, backend: str, family: str = "grid") -> float:
    """Seconds ``work`` (in ``family``'s unit: cells, steps, transitions) is predicted to take on
    ``backend``, by the figures :func:`choose` compares: the family's rate on the CPU; on the GPU
    its start-up (:func:`gpu_start_seconds`) plus the work at the family's GPU rate.

    Raises
    ------
    BackendError
        an unknown family, or a nonsense override in the environment.
    """
    r = rates.rate(family, backend, cpu_threads())
    return work / r.value + (gpu_start_seconds() if backend == "cuda" else 0.0)


def observe(family: str, work: float, stats):
    """Tell the rates what a solve of ``family`` cost. A solve that missed its prediction by more
    than 2x moves the stored rate (a bounded step: :func:`gpudp.backends.rates.observe`).

    Parameters
    ----------
    family : a key of :data:`gpudp.backends.rates.FAMILIES`
    work : the solve's work in the family's unit, as its ``auto`` counted it
    stats : the solve's :class:`gpudp.Stats` (its backend, kernel and whole seconds)

    Returns
    -------
    The new :class:`gpudp.backends.rates.Rate`, or None when the rate stays.
    """
    return rates.observe(family, work, stats, cpu_threads())


def calibrator(family: str, run) -> None:
    """Register the measurement of ``family``'s kernels (:func:`gpudp.backends.rates.calibrator`).

    Parameters
    ----------
    family : a key of :data:`gpudp.backends.rates.FAMILIES`
    run : ``run(backend, step) -> (work, stats)``: a solve of a generated input of size ``step``
        (each about twice the work of the one before) with the family's kernels

    Raises
    ------
    BackendError
        an unknown family.
    """
    rates.calibrator(family, run)


def usable() -> list[str]:
    """The backends that can run here: cpu, and cuda where a GPU is usable."""
    return ["cpu", "cuda"] if cuda_usable() else ["cpu"]


def calibrate(families=None, backends=None, log=None) -> list[dict]:
    """Measure the kernel families' rates (and, with cuda, the GPU's start-up) and store them.

    Parameters
    ----------
    families : family names, or None for every one whose solver is imported (importing a solver
        registers its measurements)
    backends : backend names, or None for every usable one
    log : a callable told of each row as it finishes, or None

    Returns
    -------
    list of dict, one a measurement (:func:`gpudp.backends.rates.calibrate`)

    Raises
    ------
    BackendError
        an unknown family, or one whose solver is not imported.
    """
    return rates.calibrate(list(backends or usable()), families, log)


def rate_table() -> list[dict]:
    """The rates ``auto`` uses here, with where each came from (:func:`gpudp.backends.rates.table`),
    on every usable backend."""
    return rates.table(usable(), cpu_threads())


def where(backend: str) -> str:
    """The backend in words for a prediction: ``cpu (2 threads)``, ``cuda``."""
    if backend == "cpu":
        threads = cpu_threads()
        return f"cpu ({threads} thread{'s' if threads != 1 else ''})"
    return backend


def choose(backend: str = "auto", work: float | None = None, family: str = "grid") -> tuple[str, str]:
    """``(backend, why)``: the backend that will run and, for ``auto``, the reason in words.

    ``auto`` runs on the CPU when the predicted CPU time, ``work`` over the family's CPU rate, is
    below the GPU's predicted time, its start-up (:func:`gpu_start_seconds`) plus ``work`` over the
    family's GPU rate. The rates are measured ones where this machine has them
    (:mod:`gpudp.backends.rates`; a rate never measured is measured now when that costs a tenth of
    the predicted work or less), else assumed; ``why`` names the rates used and their source. A
    solve whose work is not known goes to the GPU when one is usable. Deciding for the CPU does not
    import the CUDA compiler at all: that import is most of the start-up being saved.

    Parameters
    ----------
    backend : ``auto``, ``cpu`` or ``cuda``
    work : the solve's work in ``family``'s unit, or None when not known
    family : the kernel family (a key of :data:`gpudp.backends.rates.FAMILIES`)

    Returns
    -------
    (str, str): the backend's name and the reason

    Raises
    ------
    BackendError
        an unknown backend or family, ``cuda`` without a usable GPU, a nonsense override.
    """
    if backend not in BACKENDS:
        raise BackendError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend == "auto":
        if work is not None:
            return _auto(work, family)
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


def _auto(work: float, family: str) -> tuple[str, str]:
    """``auto``'s choice for known work (see :func:`choose`)."""
    threads = cpu_threads()
    r_cpu = rates.rate(family, "cpu", threads)  # an unknown family raises here
    unit = rates.FAMILIES[family].unit
    r_cpu = rates.lazily(family, "cpu", threads, work / r_cpu.value)
    t_cpu = work / r_cpu.value
    start = gpu_start_seconds()
    r_gpu = rates.rate(family, "cuda", threads)
    t_gpu = start + work / r_gpu.value

    def gpu_words():
        s = rates.start_rate()
        head = f"{GPU_LAUNCH_S:g} s of launches" if cuda_started() else f"{s.value:.3g} s start-up {s.source}"
        return f"the GPU {t_gpu:.3g} s ({head} + {r_gpu.words()})"

    cpu_words = f"{work:.3g} {unit} of {family} predicted {t_cpu:.3g} s on {where('cpu')}"
    cpu_words += f" at {r_cpu.words()}"
    if t_cpu < t_gpu:
        return "cpu", f"auto: cpu, {cpu_words}; {gpu_words()}"
    if not cuda_usable():
        return "cpu", f"auto: cpu, no usable GPU ({unavailable_reason()}); {cpu_words}"
    if r_gpu.source == "assumed":  # measured here once CUDA is worth starting for this work
        r_gpu = rates.lazily(family, "cuda", threads, t_cpu, rates.MEASURE_COST_S + start)
        t_gpu = gpu_start_seconds() + work / r_gpu.value
        if t_cpu < t_gpu:
            return "cpu", f"auto: cpu, {cpu_words}; {gpu_words()}"
    return (
        "cuda",
        f"auto: cuda, {work:.3g} {unit} of {family}: {gpu_words()}; the cpu {t_cpu:.3g} s at {r_cpu.words()}",
    )


def unavailable_reason() -> str:
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return "the CUDA simulator is on; it runs only when asked for by backend='cuda'"
    return get("cuda").unavailable_reason()


def device_name(backend: str) -> str:
    """The device a backend runs on, in words (the CPU's model and threads, the GPU's name)."""
    return get(backend).device_name()
