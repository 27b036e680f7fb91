"""The sweep of a line: one thread walks a one-cell-a-wavefront grid in order (:func:`line_kernel`)."""

from __future__ import annotations

from .kernels import cell_namespace, generated_kernel

#: the kernels of this family built in this process, by their key
_CACHE: dict = {}


def line_kernel(rec_cls, n_data: int, schedule):
    """The sweep of a line (a grid of one cell a wavefront, such as coin change's one row): one
    thread walks the line's cells in order (:func:`gpudp.codegen.line_sweep_source`). A line has no
    parallelism to give; one thread beats the layered kernel's grid sync per cell."""
    key = ("line", rec_cls, n_data, schedule.offsets, schedule.a, schedule.b)
    if key in _CACHE:
        return _CACHE[key]
    from ...codegen import line_sweep_source

    src = line_sweep_source(rec_cls, n_data, schedule, "if cuda.grid(1) != 0:\n    return")
    fn = _CACHE[key] = generated_kernel(src, "run_line", cell_namespace(rec_cls))
    return fn
