"""Test set-up shared by every test module.

Without a GPU, the CUDA backend is exercised through Numba's CUDA simulator: it must be switched on
before numba.cuda is first imported, hence here, at collection time. On a machine with a GPU the
same tests run on the real device. ``GPUDP_TEST_SIM=0`` / ``=1`` forces either way.
"""

import atexit
import os
import shutil
import sys
import tempfile

# The persistent kernel cache: one per test session (shared with the subprocesses the tests start),
# removed at the end, unless GPUDP_CACHE_DIR says where (or "off").
if "GPUDP_CACHE_DIR" not in os.environ:
    os.environ["GPUDP_CACHE_DIR"] = tempfile.mkdtemp(prefix="gpudp-test-cache-")
    atexit.register(shutil.rmtree, os.environ["GPUDP_CACHE_DIR"], True)

# The measured rates (gpudp.backends.rates) live beside that cache; no test measures them lazily or
# moves them by a solve's time unless it asks (tests/test_rates.py), so that every test's backend
# and method choices follow the same assumed figures whatever ran before it.
os.environ.setdefault("GPUDP_CALIBRATE", "0")

_force = os.environ.get("GPUDP_TEST_SIM")
if _force == "1" or (_force is None and not os.path.exists("/dev/nvidiactl")):
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    # The simulator runs a block's threads as Python threads, and its block manager polls them in a
    # loop that holds the GIL: a thread released from a syncthreads (or a warp shuffle) waits for
    # the interpreter's switch interval (5 ms by default) before it runs again. With 0.3 ms the same
    # kernels, barriers and all, run 3 to 6 times faster (shorter helps warps, hurts large blocks).
    sys.setswitchinterval(3e-4)


def _shared_arrays_made_once():
    """numba-cuda's simulator makes a block's ``cuda.shared.array`` when the first thread reaches it,
    keyed by the calling line, with no lock: two threads arriving together can each make one and
    then share nothing. Seen once in CI (subset sum's merge read its block's cut from an array no
    thread had written; the solution's check caught it); the short switch interval above makes it
    likelier. The same lookup under a lock, keyed as numba keys it, the caller's file and line."""
    import threading

    import numpy as np
    from numba.core import types
    from numba.cuda.simulator import kernelapi
    from numba.np import numpy_support

    lock = threading.Lock()

    def array(self, shape, dtype, alignment=None):
        if alignment is not None:
            raise RuntimeError("Array alignment is not supported in cudasim")
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        if shape == 0:  # dynamic shared memory: one buffer for all
            count = self._dynshared_size // dtype.itemsize
            return np.frombuffer(self._dynshared.data, dtype=dtype, count=count)
        caller = sys._getframe(1)
        key = (caller.f_code.co_filename, caller.f_lineno)
        with lock:
            res = self._allocations.get(key)
            if res is None:
                res = self._allocations[key] = np.empty(shape, dtype)
        return res

    kernelapi.FakeCUDAShared.array = array


if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    _shared_arrays_made_once()

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

# JIT compilation makes first examples slow: no per-example deadline.
settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def _cuda_usable():
    from gpudp.backends import cuda_usable

    return cuda_usable()


def pytest_collection_modifyitems(config, items):
    if _cuda_usable():
        return
    skip = pytest.mark.skip(reason="needs a real CUDA GPU (run on the lent device machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def sim_or_gpu():
    """The backend name that runs CUDA kernels here: 'cuda' (real GPU or simulator)."""
    return "cuda"


@pytest.fixture
def record_streams(monkeypatch):
    """``record_streams(owner, name)``: ``owner.<name>``, a function making CUDA streams, patched
    so that each stream it makes counts its ``synchronize()`` calls (``.waits``); returns the list
    the streams are added to, in the order made."""
    made = []

    def patch(owner, name):
        real = getattr(owner, name)

        def recording():
            # the stream itself, its synchronize() counted: a wrapper would not pass the real
            # driver's type check (numba-cuda's copies and launches ask for a Stream)
            stream = real()
            sync = stream.synchronize

            def synchronize():
                stream.waits += 1
                return sync()

            stream.waits, stream.synchronize = 0, synchronize
            made.append(stream)
            return stream

        monkeypatch.setattr(owner, name, recording)
        return made

    return patch
