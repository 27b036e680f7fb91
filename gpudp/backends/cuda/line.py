"""The sweep of a line: one thread walks a one-cell-a-wavefront grid in order (:func:`line_kernel`)."""

from __future__ import annotations

from ...kernel import KernelFactory
from .kernels import CudaKernel, cell_namespace, generated_kernel

#: the kernels of this family built in this process (gpudp.kernel)
_KERNELS = KernelFactory("cuda.line", "rec", "n_data", "schedule", kernel=CudaKernel)


def line_kernel(rec_cls, n_data: int, schedule):
    """The sweep of a line (a grid of one cell a wavefront, such as coin change's one row): one
    thread walks the line's cells in order (:func:`gpudp.codegen.line_sweep_source`). A line has no
    parallelism to give; one thread beats the layered kernel's grid sync per cell."""
    s = schedule
    k = _KERNELS.lookup(rec=rec_cls, n_data=n_data, schedule=s.key)
    if k.ready:
        return k
    from ...codegen import line_sweep_source

    src = line_sweep_source(rec_cls, n_data, schedule, "if cuda.grid(1) != 0:\n    return")
    return k.keep(generated_kernel(src, "run_line", cell_namespace(rec_cls)))
