"""What every generated CUDA kernel is built with: the device and kernel decorators, the way
generated source becomes a kernel (through the persistent cache on a GPU), the names a kernel
sees (:func:`cell_namespace`), and the kernel object of the process's table that launches it
(:class:`CudaKernel`, :class:`Launches`)."""

from __future__ import annotations

import numpy as np
from numba import cuda

from ... import values
from ...kernel import Kernel
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


#: the slots of a block's exchange buffers (:data:`GROUP_BUFFERS`), each holding one value a warp
GROUP_SLOTS = 8
#: the lines that declare a block's exchange buffers ``xb`` in a kernel (a shared array made inside a
#: device function would be a global that every module linking it defines again): an int64 and a
#: float64 array of :data:`GROUP_SLOTS` x 32 (warps), objects in the simulator; names from
#: :func:`group_namespace`
GROUP_BUFFERS = """XBI = cuda.shared.array((GROUP_SLOTS, 32), XBID)
XBF = cuda.shared.array((GROUP_SLOTS, 32), XBFD)
xb = (XBI, XBF)"""


def group_put(xb, slot, w, x):
    """Store warp ``w``'s value ``x`` in slot ``slot`` of a block's exchange buffers ``xb``
    (:data:`GROUP_BUFFERS`). As written, the simulator's (its buffers hold objects); on the GPU an
    overload keeps integers and booleans in the int64 buffer (their bits), floats in the float64
    one; another type does not compile."""
    xb[0][slot, w] = x


def group_get(xb, slot, w, like):
    """The value :func:`group_put` stored in slot ``slot`` for warp ``w``, of ``like``'s type."""
    return xb[0][slot, w]


def _group_sync():
    """The block's barrier (every thread of the block calls it)."""
    cuda.syncthreads()


def group_exchange() -> tuple:
    """``(sync, put, get)``: what a device function calls to hand values among a block's warps, the
    block's barrier (a device function), :func:`group_put` and :func:`group_get`; the buffers are
    the kernel's (:data:`GROUP_BUFFERS`)."""
    return device_jit(_group_sync), group_put, group_get


def group_namespace() -> dict:
    """The names :data:`GROUP_BUFFERS` and the exchange use."""
    obj = np.dtype(object)
    sim = is_simulator()
    return {
        "GROUP_SLOTS": GROUP_SLOTS,
        "XBID": obj if sim else np.int64,
        "XBFD": obj if sim else np.float64,
        # unused by the kernels' source, but fingerprinted with their namespace: an edit of the
        # overloads gets new kernels from the disk cache (gpudp.cache)
        "GROUP_OVERLOADS": _group_overloads,
    }


def _group_overloads():
    """The GPU's :func:`group_put` and :func:`group_get`, by the value's type."""
    from numba.cuda import types
    from numba.cuda.extending import overload

    @overload(group_put, inline="always")
    def _put(xb, slot, w, x):
        if isinstance(x, (types.Integer, types.Boolean)):

            def put_int(xb, slot, w, x):
                xb[0][slot, w] = np.int64(x)

            return put_int
        if isinstance(x, types.Float):

            def put_float(xb, slot, w, x):
                xb[1][slot, w] = np.float64(x)

            return put_float
        return None

    @overload(group_get, inline="always")
    def _get(xb, slot, w, like):
        ty = types.unliteral(like)
        if isinstance(ty, types.Boolean):

            def get_bool(xb, slot, w, like):
                return xb[0][slot, w] != 0

            return get_bool
        if isinstance(ty, (types.Integer, types.Float)):
            k = 0 if isinstance(ty, types.Integer) else 1

            def get_number(xb, slot, w, like):
                return ty(xb[k][slot, w])

            return get_number
        return None


if not is_simulator():
    _group_overloads()


def cell_namespace(rec_cls):
    """The names a generated CUDA kernel sees: the recurrence's device ``cell`` and ``boundary``,
    its value type and fill, and the helpers (public: features with kernels of their own build on it)."""
    from ...codegen import compile_source, spec_of

    ns = {
        "red_slot": device_jit(_thread_slot),
        "cuda": cuda,
        "np": np,
        "VT": spec_of(rec_cls).numba_type(),
        "VTD": np.dtype(rec_cls.value_dtype),
        "FILL": rec_cls.fill,
        "FULL": FULL,
        "cell": device_jit(rec_cls.cell),
        "boundary": device_jit(getattr(rec_cls, "boundary", lambda *a: 0)),
    }
    # a record cell: VT builds its tuple of fields
    ns.update(values.namespace(rec_cls, device_jit, compile_source))
    return ns


class CudaKernel(Kernel):
    """A CUDA kernel of the process's table (:class:`gpudp.kernel.Kernel`; a family declares it with
    ``KernelFactory(..., kernel=CudaKernel)``): also its launches on a stream (:meth:`launches`)."""

    __slots__ = ()

    def launches(self, stream, timed: bool = True) -> Launches:
        """A run's launches of this kernel on ``stream``, each between two timing events when
        ``timed`` (:class:`Launches`)."""
        return Launches(self.fn, stream, timed)


class Launches:
    """One run's launches of a kernel on one stream: ``launch(grid, block, args, shared)`` is
    ``fn[grid, block, stream, shared](*args)``, recorded between two CUDA events when ``timed``; it
    returns the end event (None untimed). ``fn`` is the kernel, or the specialisation that a
    cooperative launch's first call made of it (:func:`.driver.coop_blocks`): set it."""

    __slots__ = ("fn", "stream", "timed", "events", "count")

    def __init__(self, fn, stream, timed: bool = True):
        self.fn, self.stream, self.timed, self.events, self.count = fn, stream, timed, [], 0

    def launch(self, grid, block, args, shared: int = 0):
        self.count += 1
        if not self.timed:
            self.fn[grid, block, self.stream, shared](*args)
            return None
        start, end = cuda.event(), cuda.event()
        start.record(stream=self.stream)
        self.fn[grid, block, self.stream, shared](*args)
        end.record(stream=self.stream)
        self.events.append((start, end))
        return end

    def elapsed_ms(self) -> list[float]:
        """Milliseconds of each timed launch (waits for the last to end)."""
        return [s.elapsed_time(e) for s, e in self.events]
