"""The CUDA backend (numba-cuda): everything that touches the CUDA compiler lives in this package.

Shapes, features and plug-ins take ``cuda`` and the helpers of the kit below from here (from this
package, never from its modules), so that moving to numba-cuda-mlir (numba-cuda is in maintenance
mode, NVIDIA/numba-cuda#902) is a change to this package. Importing it never needs a GPU; the
backend's ``available()`` says whether one can be used.

The modules, by idea:

- :mod:`.driver`: the device, its memory figures, the one page-locked pool, uploads, streams,
  events, cooperative launches, launch geometry;
- :mod:`.kernels`: how generated source becomes a kernel, the names a kernel sees, the exchange of
  a scalar of any numeric type among the warps of a block (:data:`.kernels.GROUP_BUFFERS`), and the kernel
  object of the process's table (:class:`gpudp.kernel.Kernel`) that launches it on a stream with
  its timing events (:class:`.kernels.CudaKernel`);
- the kernel families: :mod:`.tiled` (tiled grids), :mod:`.layered` (layers, and the temporally
  blocked kernel of a declared reach), :mod:`.line` (one-cell wavefronts), :mod:`.bands` (the
  bands codec's encoder), :mod:`.blocks` (blocks of a grid swept again for a traceback);
- :mod:`.run`: the run loop of a planned sweep (chunks, slabs, streams);
- :mod:`.backend`: the backend object, :data:`BACKEND`, which the registry
  (:func:`gpudp.backends.get`) takes from here.

``__all__`` is the kit: the exact list of names that modules outside :mod:`gpudp.backends` may use
(tests/test_imports.py holds them to it). Everything else is private to the package.
"""

from __future__ import annotations

from numba import cuda

from .. import is_device_array
from .backend import BACKEND  # noqa: F401  (the registry's entry: gpudp.backends.MODULES)
from .driver import (
    as_device_array,
    cached_grid,
    coop_blocks,
    device_fill,
    drained,
    event,
    is_page_locked,
    kernel_resources,
    launch_known,
    mapped_empty,
    memory_info,
    pinned_pool,
    resident_threads,
    shared_memory_optin,
    sim_geometry,
    stream,
    stride_grid,
    upload,
)
from .kernels import (
    GROUP_BUFFERS,
    CudaKernel,
    cell_namespace,
    device_jit,
    generated_kernel,
    group_exchange,
    group_namespace,
)

__all__ = [
    "cuda",
    "CudaKernel",
    "GROUP_BUFFERS",
    "as_device_array",
    "cached_grid",
    "cell_namespace",
    "coop_blocks",
    "device_fill",
    "device_jit",
    "drained",
    "event",
    "generated_kernel",
    "group_exchange",
    "group_namespace",
    "is_device_array",
    "is_page_locked",
    "kernel_resources",
    "launch_known",
    "mapped_empty",
    "memory_info",
    "pinned_pool",
    "resident_threads",
    "shared_memory_optin",
    "sim_geometry",
    "stream",
    "stride_grid",
    "upload",
]
