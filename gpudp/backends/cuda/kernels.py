"""What every generated CUDA kernel is built with: the device and kernel decorators, the way
generated source becomes a kernel (through the persistent cache on a GPU), and the names a kernel
sees (:func:`cell_namespace`)."""

from __future__ import annotations

import numpy as np
from numba import cuda

from ... import values
from .driver import is_simulator

FULL = 0xFFFFFFFF


def device_jit(fn):
    """Compile a plain Python function as a CUDA device function, inlined into its callers."""
    if is_simulator():
        return cuda.jit(device=True)(fn)
    return cuda.jit(device=True, forceinline=True)(fn)


def kernel_jit(fn, **kw):
    return cuda.jit(**kw)(fn)


def generated_kernel(src: str, name: str, namespace: dict, **kw):
    """A kernel from generated source: on a real GPU through the persistent cache
    (:func:`gpudp.cache.jit_generated`: compiled once per machine and compute capability), in the
    simulator compiled in memory."""
    from ...cache import jit_generated
    from ...codegen import compile_source

    if is_simulator():
        return kernel_jit(compile_source(src, name, namespace), **kw)
    return jit_generated(src, name, namespace, kernel_jit, "cuda", **kw)


def _thread_slot():
    return cuda.grid(1)


def cell_namespace(rec_cls):
    """The names a generated CUDA kernel sees: the recurrence's device ``cell`` and ``boundary``,
    its value type and fill, and the helpers (public: features with kernels of their own build on it)."""
    from ...codegen import compile_source, numba_value_type

    ns = {
        "red_slot": device_jit(_thread_slot),
        "cuda": cuda,
        "np": np,
        "VT": numba_value_type(rec_cls),
        "VTD": np.dtype(rec_cls.value_dtype),
        "FILL": rec_cls.fill,
        "FULL": FULL,
        "cell": device_jit(rec_cls.cell),
        "boundary": device_jit(getattr(rec_cls, "boundary", lambda *a: 0)),
    }
    # a record cell: VT builds its tuple of fields
    ns.update(values.namespace(rec_cls, device_jit, compile_source))
    return ns
