"""The engine's driver: ``sweep(recurrence)``, validated, handed to the driver of its shape, run.

``sweep(recurrence)`` is the one entry point. It reads the call (a :class:`gpudp.shapes.SweepCall`)
and hands it to the driver of the recurrence's shape, found in one table, :data:`SHAPES`, by the
``family`` its base class names (``grid``, ``layered``, ``interval``, ``grid3``); :func:`plan_sweep`
finds the shape's planner there too. No test of the recurrence's class, no backend's name: each
driver gets its per-backend code from the lowering registry (:mod:`gpudp.lowering`), where every
shape's package declares it.

Each shape is a package: :mod:`gpudp.grid` (the grid and layered shapes, one planned sweep; the
traceback from checkpoints of :mod:`gpudp.checkpoints`), :mod:`gpudp.interval`, :mod:`gpudp.grid3`.
This module is their public surface too: with the driver it re-exports the grid shape's plan and
result types (:class:`Plan`, :class:`SweepResult`), listed in ``__all__``.
"""

from __future__ import annotations

import time

from .checked import check_grid, check_grid3, check_interval, check_layered, wanted
from .checkpoints import check_every
from .checks import typing_errors
from .errors import ContractError, InputError
from .grid import sweep_planned
from .grid.plan import Plan, make_plan, plan_grid, plan_layered
from .grid.result import SweepResult
from .grid.wide import widened
from .inputs import parse_time_limit
from .memory import one_reading, parse_bytes
from .progress import Deadline
from .recurrence import Recurrence
from .shapes import Shape, SweepCall, drive_grid3, drive_interval

__all__ = ["SHAPES", "Plan", "Shape", "SweepResult", "check_pass", "plan_sweep", "shape_of", "sweep"]


def sweep(
    rec: Recurrence,
    backend: str = "auto",
    memory_budget=None,
    progress: bool | None = None,
    tile: tuple[int, int] | None = None,
    traceback: bool = True,
    store: str = "auto",
    checkpoint_every: int | None = None,
    time_limit: float | None = None,
    started: float | None = None,
    codec: str | None = None,
    reach=None,
    check: bool | None = None,
    _checkpoint: int = 0,
):
    """Run the recurrence to the end; keep its decisions (if any) for the traceback.

    backend:       ``auto`` (the CPU for sweeps it finishes before the GPU could start, else cuda
                   when a GPU is usable), ``cpu`` or ``cuda``.
    memory_budget: host bytes the decision store may take before it spills to a disk memmap
                   (int or text like ``"8G"``; default: GPUDP_MEMORY_BUDGET or half of free RAM).
                   0 means no host memory for decisions: ``store="full"`` spills every decision
                   to disk; ``"checkpoints"`` refuses it (:class:`InputError` naming
                   ``memory_budget``, with the bytes its checkpoints need) unless the grid is one
                   block, without checkpoints; ``"auto"`` then takes the full store.
    progress:      a progress bar on stderr for sweeps longer than about a second; None = only
                   when stderr is a terminal.
    tile:          ``(rows, cols)`` of the tiles of a tiled grid sweep (tuning; see docs).
    codec, reach:  a layered sweep's decision codec, ``"plain"``, ``"bands"`` or ``"auto"`` (bands
                   where the active ranges leave at most half of the cells), and per layer how far
                   below itself a cell reads (temporal blocking on CUDA; a wrong promise gives wrong
                   values): see :class:`gpudp.LayeredRecurrence`. None: the class's ``decision_codec``
                   and ``reach()``, the defaults; the options are preferred. Other shapes ignore them.
    traceback:     False: values only. The cell's decisions are dropped as it returns them: no
                   decision store (no host memory, no eviction, nothing to trace back), and the
                   kernels are those of a recurrence with ``decision_bits = 0``.
    store:         where the traceback's decisions come from: ``"full"``, a store of every cell's
                   decision (a :class:`SweepResult`); ``"checkpoints"``, values of every K-th row
                   and column only, and the blocks the path crosses swept again when it is walked
                   (a :class:`gpudp.checkpoints.CheckpointResult`, same surface; tiled grids only);
                   ``"auto"``: checkpoints for a tiled grid whose full store would not stay within
                   the memory budget or would hold more bytes of decisions than its backend's
                   ``full_store_max`` (16 GiB in host memory; 128 MiB on a GPU, where the store
                   crosses PCIe), else full.
    checkpoint_every: K, the checkpoints' spacing and the blocks' side (default: 512, doubled
                   while the checkpoints would take more than a quarter of the memory budget or of
                   the GPU's free memory; see :func:`gpudp.checkpoints.choose_every`); refused with
                   ``store="full"``, which keeps no checkpoints.
    time_limit:    seconds (counted from ``started``, a ``time.perf_counter()`` reading, default this
                   call: a solver's own preparation counts too) after which the sweep stops between two chunks
                   and raises :class:`gpudp.errors.TimeLimitReached`, which says how many cells were
                   done (a chunk is about 4 M cells on the cpu; None: no limit). The decision store
                   is removed; the caller reports what it has proven. With checkpoints the limit
                   applies to the forward sweep.
    check:         True: the checked mode, for a new recurrence's tests. Before the sweep, the whole
                   recurrence runs once in plain Python on the CPU (:mod:`gpudp.checked`, slow: a few
                   million cells a minute), every read a cell makes checked against the schedule (an
                   interval cell's reads of the table, a layered cell's of the previous layers'
                   computed cells and its reach; data read-only, an index past an array's end caught),
                   every return checked, and with a traceback to come every step ``back`` takes from
                   any cell; the first mistake is a :class:`ContractError` naming the cell and the read
                   or the step. The sweep then runs as unchecked, and its result is returned (the same
                   result). None (the default): the environment variable ``GPUDP_CHECK`` decides
                   (``1`` on, unset or ``0`` off); False: unchecked whatever it says.
    """
    t_start = time.perf_counter()
    if store not in ("auto", "full", "checkpoints"):
        raise InputError("store", f"{store!r}: must be 'auto', 'full' or 'checkpoints'")
    checkpoint_every = check_every(checkpoint_every)  # whatever the store: 0 or 1.5 is never right
    if store == "full" and checkpoint_every is not None:
        raise InputError(
            "checkpoint_every",
            f"{checkpoint_every}: a spacing of checkpoints, which store='full' keeps none of; give "
            "store='checkpoints' (or 'auto', which takes them when the full store would not do)",
        )
    deadline = Deadline.of(parse_time_limit(time_limit), t_start if started is None else started)
    memory_budget = None if memory_budget is None else parse_bytes(memory_budget)  # None: the default
    call = SweepCall(
        rec=rec._specialized(),  # a grid whose instance gives its own offsets: a class declaring them
        user_rec=rec,
        backend=backend,
        memory_budget=memory_budget,
        progress=progress,
        traceback=traceback,
        deadline=deadline,
        t_start=t_start,
        tile=tile,
        store=store,
        checkpoint_every=checkpoint_every,
        time_limit=time_limit,
        started=started,
        checkpoint=_checkpoint,
        codec=codec,
        reach=reach,
        sweep=sweep,
    )
    shape = shape_of(type(call.rec))
    checked = None
    if wanted(check) and not _checkpoint:  # the checkpoints' forward sweep: checked by the caller's
        checked = _check(call)
    # the budget, the plan's figures, the memory check and the store weigh one reading of the memory
    # there is; the planned sweep confirms its bytes against it, so it may reuse a recent one
    with one_reading(reuse=shape.sweep is sweep_planned), typing_errors(type(call.rec)):
        result = shape.sweep(call)  # numba's typing error in cell, boundary or back: a ContractError
    if checked is not None:
        result.stats.extra["checked"] = checked  # cells swept in plain Python, every read checked
    return result


def _check(call: SweepCall) -> int:
    """The checked mode's pass of ``call`` (its shape's ``check``): the cells checked."""
    shape = shape_of(type(call.rec))
    if shape.check is None:
        raise InputError("check", f"the {type(call.rec).family!r} shape has no checked mode")
    return shape.check(call)


def check_pass(rec: Recurrence, traceback: bool = True) -> int:
    """What ``sweep(rec, check=True, traceback=traceback)`` runs before its sweep, alone: ``rec``
    swept once in plain Python, every read, return and step of ``back`` checked
    (:mod:`gpudp.checked`); the cells checked, the first mistake a :class:`ContractError`."""
    call = SweepCall(
        rec=rec._specialized(),
        user_rec=rec,
        backend="cpu",
        memory_budget=0,  # the pass allocates only its own plain-Python table
        progress=False,
        traceback=traceback,
        deadline=None,
        t_start=time.perf_counter(),
        sweep=sweep,
    )
    return _check(call)


def plan_sweep(rec: Recurrence, backend: str = "auto", tile=None, codec=None, reach=None) -> Plan:
    """The plan of a sweep of a grid or layered recurrence: layout, chunks, cells, and the backend
    (``auto`` picks one from the cells, see :func:`gpudp.backends.choose`); ``tile``, ``codec``,
    ``reach``: :func:`sweep`'s. Its shape's planner
    (:data:`SHAPES`) makes it; the interval and grid3 shapes plan by themselves (no :class:`Plan`).
    A grid reading two cells back is planned as it is swept: the unit-offset record class that
    carries its wider halo (:mod:`gpudp.grid.wide`)."""
    rec = rec._specialized()
    rec = widened(rec) or rec
    cls = type(rec)
    shape = shape_of(cls)
    if shape.plan is None:
        raise ContractError(
            f"{cls.__name__} is of the {cls.family!r} shape, which its own driver plans: sweep it with "
            "gpudp.sweep (plan_sweep plans grid and layered recurrences)"
        )
    return make_plan(rec, shape.plan, backend, tile, codec, reach)


#: the engine's shapes: the ``family`` a recurrence's base class names -> its :class:`Shape`. The
#: grid and layered shapes share the planned sweep of :mod:`gpudp.grid`; the interval and grid3
#: drivers (:mod:`gpudp.shapes`) hand the call to their packages, imported on first use. Each
#: package declares its lowerings (:mod:`gpudp.lowering`)
SHAPES: dict[str, Shape] = {
    "grid": Shape(sweep_planned, plan_grid, check_grid),
    "layered": Shape(sweep_planned, plan_layered, check_layered),
    "interval": Shape(drive_interval, check=check_interval),
    "grid3": Shape(drive_grid3, check=check_grid3),
}


def shape_of(cls) -> Shape:
    """The :class:`Shape` a recurrence class's ``family`` names; a :class:`ContractError` listing
    the shapes for a class that names none or one the engine does not have."""
    family = getattr(cls, "family", None)
    if isinstance(family, str) and family in SHAPES:
        return SHAPES[family]
    what = (
        "names no shape" if family is None else f"names the shape {family!r}, which the engine does not have"
    )
    raise ContractError(
        f"{cls.__name__}.family {what}: the engine's shapes are {', '.join(SHAPES)}; a recurrence "
        "subclasses the base class of its shape (GridRecurrence, LayeredRecurrence, IntervalRecurrence "
        "or Grid3Recurrence)"
    )
