"""CUDA's driver started on a thread while the process goes on importing numba and reading its input.

A fresh process pays three costs before its first kernel runs (measured on the lent H100 machine,
docs/benchmarks.md, "Start-up"): importing numba and numba-cuda (~1.5 s), initialising their target
contexts (~1.75 s) and the CUDA driver's own start, ``cuInit`` and the device's primary context
(~0.8 s). The first two are Python holding the interpreter's lock; the driver's start is C code that
does not. :func:`start` runs it on a daemon thread through ``ctypes`` (no numba imported), so that it
overlaps the imports; when numba-cuda later initialises the driver and retains the same primary
context, both are there and the calls return at once.

It starts device 0 of the process (the first of ``CUDA_VISIBLE_DEVICES``): the one numba-cuda
uses unless told otherwise. It is called where a GPU run is already decided: ``--backend cuda`` on
the command line, and the first time the cuda backend is taken (:func:`gpudp.backends.get`), never
by importing gpudp. ``GPUDP_PRESTART=0`` turns it off; under the CUDA simulator, or where no driver
loads, it does nothing. :func:`report` says what it did (``gpudp info`` and ``stats.extra``).
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time

__all__ = ["report", "start"]

_LOCK = threading.Lock()
_STATE: dict = {}


def _driver():
    """The CUDA driver library, or None."""
    names = ("nvcuda.dll",) if sys.platform == "win32" else ("libcuda.so.1", "libcuda.so")
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def _run(device: int):
    t0 = time.perf_counter()
    lib = _driver()
    status = "no CUDA driver library"
    if lib is not None:
        dev, ctx = ctypes.c_int(0), ctypes.c_void_p(0)
        rc = lib.cuInit(0)
        if rc == 0:
            rc = lib.cuDeviceGet(ctypes.byref(dev), device)
        if rc == 0:
            # held until the process ends: numba-cuda retains the same context and releases its own
            rc = lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
        status = "started" if rc == 0 else f"CUDA error {rc}"
    _STATE.update(status=status, seconds=time.perf_counter() - t0)


def _numba_started() -> bool:
    """numba-cuda has initialised the driver in this process."""
    mod = sys.modules.get("numba.cuda.cudadrv.driver")
    return bool(getattr(getattr(mod, "driver", None), "is_initialized", False))


def start(device: int = 0) -> bool:
    """Start the CUDA driver and ``device``'s primary context on a daemon thread, once a process.

    Returns
    -------
    True when a thread was started by this call; False when one was before, when
    ``GPUDP_PRESTART=0``, under the CUDA simulator, or when numba-cuda has started CUDA already.

    Example
    -------
    >>> from gpudp import prestart
    >>> prestart.start()  # doctest: +SKIP
    True
    >>> prestart.report()  # doctest: +SKIP
    {'status': 'started', 'seconds': 0.41}
    """
    if os.environ.get("GPUDP_PRESTART", "1") == "0" or os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return False
    if _numba_started():
        return False  # nothing left to overlap
    with _LOCK:
        if _STATE:
            return False
        _STATE.update(status="running", begun=time.perf_counter())
        threading.Thread(target=_run, args=(device,), name="gpudp-cuda-start", daemon=True).start()
    return True


def report() -> dict:
    """What :func:`start` did: ``{}`` when it did not run, else ``status`` (``"running"``,
    ``"started"``, ``"no CUDA driver library"`` or ``"CUDA error N"``) and, once done, ``seconds``
    (the driver's start on the thread)."""
    return {k: v for k, v in _STATE.items() if k != "begun"}
