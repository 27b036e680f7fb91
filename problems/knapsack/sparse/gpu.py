"""Whether the sparse-state DP's list steps may run on the GPU (:class:`Gpu`); the steps themselves
are in :mod:`.cuda`, the hand-over in :class:`.search.Search`."""

from __future__ import annotations

import time

from gpudp import backends

__all__ = ["GPU_AFTER_S", "Gpu", "device_lists", "gpu_usable"]

#: seconds a search runs before its large lists may go to the GPU: moving a list there and loading
#: the kernels cost milliseconds, which a search that ends sooner would not win back
GPU_AFTER_S = 0.05


def device_lists(backend: str) -> bool | None:
    """Whether the caller's ``backend`` takes large lists to the GPU (a backend whose values live on
    the device does); None for ``"auto"``, which may once the search has run long enough
    (:class:`Gpu`)."""
    return None if backend == "auto" else backends.get(backend).values_on_device


def gpu_usable() -> bool:
    """Whether a real GPU can run the list steps (:func:`gpudp.backends.cuda_usable`; the tests
    replace it to run them in the CUDA simulator)."""
    from gpudp.backends import cuda_usable

    return cuda_usable()


class Gpu:
    """Whether the list steps may run on the GPU, and what they did there. Only lists of
    :data:`GPU_LIST` states or more go there, and only once the search has run
    :data:`GPU_AFTER_S` seconds. ``backend`` (:func:`device_lists`): ``"cpu"`` never; ``"cuda"``
    whenever a GPU is usable; ``"auto"`` also only once the search has run as long as starting
    CUDA is predicted to cost (:func:`gpudp.backends.gpu_start_seconds`: 0.02 s once CUDA runs in
    this process, 1.5 s before), so a search that ends sooner never starts CUDA and a longer one
    pays at most about twice."""

    def __init__(self, backend: str, t0: float):
        self.backend, self.t0 = backend, t0
        self.device = device_lists(backend)
        self._usable = None
        self.steps = 0
        self.seconds = 0.0
        self.note = None

    def may(self) -> bool:
        """The GPU is not ruled out (the backend, a GPU found unusable)."""
        return self.device is not False and self._usable is not False

    def allowed(self) -> bool:
        """The steps may go to the GPU now (starts CUDA to find out whether one is usable)."""
        if not self.may():
            return False
        wait = GPU_AFTER_S
        if self.device is None:  # "auto": once the search has run as long as CUDA's start-up
            from gpudp.backends import gpu_start_seconds

            wait = max(wait, gpu_start_seconds())
        if time.perf_counter() - self.t0 < wait:
            return False
        if self._usable is None:
            self._usable = gpu_usable()
            if not self._usable:
                self.note = "no usable GPU: the list steps ran on the CPU"
        return self._usable

    def details(self) -> dict:
        out = {"backend": self.backend, "steps": self.steps, "seconds": round(self.seconds, 6)}
        if self.steps:
            from gpudp.backends import device_name as _name

            out["device"] = _name("cuda")
        if self.note:
            out["note"] = self.note
        return out
