"""The shape protocol: what the engine's driver of a shape gets (:class:`SweepCall`, one call of
:func:`gpudp.sweep`) and is (:class:`Shape`), and the drivers of the shapes that live in packages of
their own (:mod:`gpudp.interval`, :mod:`gpudp.grid3`, imported when one is swept).

The table of the shapes is :data:`gpudp.engine.SHAPES`: a recurrence's base class names its shape
(``family``), and :func:`gpudp.sweep` hands the call to that shape's driver. A driver runs its
kernels through the lowering registry (:mod:`gpudp.lowering`), which names the module that lowers
the shape on each backend; nothing here branches on a recurrence's class or a backend's name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from .progress import Deadline
from .recurrence import Recurrence, values_only

__all__ = ["Shape", "SweepCall", "drive_grid3", "drive_interval"]


@dataclass
class SweepCall:
    """One call of :func:`gpudp.sweep`, read: what its shape's driver (:data:`gpudp.engine.SHAPES`)
    gets. ``rec``: the recurrence specialized (:meth:`~gpudp.recurrence.Recurrence._specialized`),
    ``user_rec`` the caller's; ``memory_budget`` in bytes (None: the default, half of the memory
    there is, read where it is weighed); ``deadline`` counted from the caller's
    start; ``t_start`` this call's ``time.perf_counter()``; the rest as :func:`gpudp.sweep` takes
    them (``checkpoint``: its ``_checkpoint``). ``sweep`` is :func:`gpudp.sweep` itself, for a driver
    that sweeps again (the checkpoints' forward sweep) without importing the engine that imports it."""

    rec: Recurrence
    user_rec: Recurrence
    backend: str
    memory_budget: int | None
    progress: bool | None
    traceback: bool
    deadline: Deadline | None
    t_start: float
    tile: tuple[int, int] | None = None
    store: str = "auto"
    checkpoint_every: int | None = None
    time_limit: float | None = None
    started: float | None = None
    checkpoint: int = 0
    codec: str | None = None
    reach: object = None
    sweep: Callable | None = None


class Shape(NamedTuple):
    """A shape of the engine: ``sweep(call)`` runs a recurrence of it (a :class:`SweepCall`) and
    returns its result; ``plan(rec, backend, tile, codec, reach) -> (Plan, backend, why)`` plans
    it (None for a shape whose driver plans by itself: :func:`gpudp.engine.plan_sweep` refuses it);
    ``check(call) -> cells``: the checked mode's pass in plain Python (:mod:`gpudp.checked`), run
    before ``sweep`` when the call asks for it."""

    sweep: Callable
    plan: Callable | None = None
    check: Callable | None = None


def drive_interval(call: SweepCall):
    """By diagonals, the whole table kept: :func:`gpudp.interval.sweep_intervals`."""
    from .interval import sweep_intervals

    rec = call.rec
    swept = values_only(rec) if not call.traceback and type(rec).decision_bits else rec
    return sweep_intervals(swept, rec, call.backend, call.memory_budget, call.progress, call.deadline)


def drive_grid3(call: SweepCall):
    """By planes i + j + k, a ring of planes: :func:`gpudp.grid3.sweep_grid3`."""
    from . import grid3

    return grid3.sweep_grid3(
        call.user_rec,
        call.backend,
        call.memory_budget,
        call.progress,
        call.traceback,
        call.deadline,
        specialized=call.rec,
    )
