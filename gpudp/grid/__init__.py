"""Grid and layered recurrences (:class:`gpudp.recurrence.GridRecurrence`,
:class:`gpudp.recurrence.LayeredRecurrence`): one planned sweep by wavefronts, the decisions kept
for the traceback.

A grid's cells are swept by the wavefronts its declared offsets allow (:mod:`gpudp.schedule`): by
tiles along anti-diagonals for unit windows, by one cell a wavefront (a *line*) or by layers of
wavefronts otherwise. A layered recurrence is swept layer after layer, each layer's active range
only, its decisions kept whole or as bands (:class:`gpudp.store.BandStore`). Both run the
backend's generated kernels over groups of wavefronts ("chunks"), so that each finished chunk's
decisions can be evicted to the :class:`gpudp.store.DecisionStore` (RAM, page-locked on CUDA, or
a disk memmap past the memory budget) while the next one computes.

- :mod:`gpudp.grid.plan`: the :class:`Plan` (layout, units cut into chunks, memory figures) and
  the planners of the two shapes, which pick the backend.
- :mod:`gpudp.grid.result`: the :class:`SweepResult` (the last row and column or the last layer,
  the decisions, the statistics) and the compiled walkers of its traceback.

The shapes' lowerings are the backends themselves (their ``run_plan``), declared to
:mod:`gpudp.lowering` below. The driver (:func:`sweep_planned`, reached through
:func:`gpudp.engine.sweep`) plans the sweep (or hands a tiled grid's traceback to the checkpoints
of :mod:`gpudp.checkpoints`), checks the memory, probes the first cell in plain Python, sizes the
decision store, runs the chunks, raises a :class:`ContractError` for a decision wider than
``decision_bits`` and returns a :class:`SweepResult`.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from .. import backends, lowering, values
from ..checks import cell_symbols, check_memory, probe_boundary, probe_cell
from ..codegen import NO_CELL, spec_of
from ..errors import decision_overflow
from ..memory import confirm, default_budget
from ..progress import progress_bar
from ..recurrence import contiguous, values_only
from ..recurrence.narrow import prepare as narrow_cell
from ..shapes import SweepCall
from ..solution import Stats
from ..store import BandStore, DecisionStore, LayerLayout, store_place
from .plan import PLANNERS, Plan, make_plan
from .result import SweepResult
from .wide import unwrap, widened

__all__ = [
    "Plan",
    "SweepResult",
    "device_memory",
    "probe_grid",
    "sweep_planned",
]

# The grid and layered shapes' lowerings are the backends themselves (their ``run_plan``), declared
# so that every shape's code is found alike and lowering.missing() names what a new backend lacks
lowering.declare("grid", **backends.MODULES)
lowering.declare("layered", **backends.MODULES)


#: cells a second any sweep is taken to run, at least, where it decides on a progress bar (a
#: hundredth of the generic cell's assumed rate on one CPU thread,
#: :data:`gpudp.backends.rates.CPU_CELLS_PER_THREAD_S`): a sweep of fewer than about 10^6 cells
#: builds none (:data:`gpudp.progress.BAR_SECONDS`)
SLOW_CELLS_PER_S = 2e6


def device_memory(backend: str) -> tuple[int, int] | None:
    """(free, total) bytes of the memory ``backend``'s kernels compute in; None for host memory."""
    return backends.get(backend).memory()


def _plan(rec, call: SweepCall) -> Plan:
    """The plan of ``rec`` (the engine's specialized recurrence, or its values-only proxy) for
    ``call``, by its shape's planner (as :func:`gpudp.engine.plan_sweep` plans it)."""
    return make_plan(rec, PLANNERS[type(rec).family], call.backend, call.tile, call.codec, call.reach)


def _memory(plan: Plan, memory_budget):
    """``plan.memory(memory_budget)``, its bytes confirmed against the sweep's reading of the memory
    there is (:func:`gpudp.memory.confirm`): where a recent reading reused is too small a figure
    for them, they are weighed again against a fresh one."""
    need = plan.memory(memory_budget)
    if confirm(need.host + need.decisions):
        need = plan.memory(memory_budget)
    return need


def sweep_planned(call: SweepCall):
    """The grid and layered shapes: the plan (:func:`_plan`; or the checkpoints of
    :mod:`gpudp.checkpoints`, their forward sweep run through ``call.sweep``), the memory check,
    the decision store, and the chunks run by the shape's lowering on the backend, the backend
    itself (its ``run_plan``)."""
    wide = widened(call.rec)
    if wide is not None:  # offsets two cells back: the unit-offset record class, by tiles
        return unwrap(sweep_planned(dataclasses.replace(call, rec=wide)), wide)
    rec, memory_budget = call.rec, call.memory_budget
    plan = None
    if call.traceback and type(rec).decision_bits and call.store != "full":
        plan = _plan(rec, call)  # kept unless checkpoints win
        need = _memory(plan, memory_budget) if plan.kind == "tiled" else None
        big = need and (need.spill or need.decisions > backends.get(plan.backend).full_store_max)
        if (default_budget() if memory_budget is None else memory_budget) == 0:
            big = False  # 'auto' with no memory: the full store, spilled whole (checkpoints need some)
        if call.store == "checkpoints" or big:
            from ..checkpoints import checkpoint_sweep

            return checkpoint_sweep(
                rec,
                plan,
                call.sweep,
                memory_budget,
                call.progress,
                call.tile,
                call.checkpoint_every,
                call.time_limit,
                call.started,
            )
    if not call.traceback and type(rec).decision_bits:
        rec = values_only(rec)
    plan = plan or _plan(rec, call)
    plan.checkpoint = call.checkpoint
    backend = plan.backend
    need = _memory(plan, memory_budget)  # the store is not counted: past the budget it spills to disk
    gib = need.values / 2**30
    check_memory(
        f"{type(rec).__name__}'s sweep",
        need.host,
        need.device,
        device_memory(backend),
        device_parts=f" ({gib:.2f} GiB of values)",
    )
    grid = type(rec).family == "grid"
    data = tuple(contiguous(x) for x in rec._validate_instance())
    if grid and type(rec).symbols:
        data = (*cell_symbols(rec, plan.rows, plan.cols), *data)
    _probe(rec, plan, data)
    size = (plan.rows, plan.cols) if grid else (len(plan.sizes), int(plan.sizes.max(initial=0)))
    narrow = narrow_cell(rec, data, *size)
    if narrow is not None:  # the cell in 32 bits, proven exact for this sweep
        rec = narrow[0]
    runner = lowering.get(type(rec).family, backend).BACKEND
    red = None
    if type(rec).reduce:  # per-thread slots (codegen.Spec.reduce_slots), before the overflow flag
        red = _reduction_slots(type(rec), runner.reduction_slots(plan))
        data = (*data, *red)
    bits = type(rec).decision_bits
    if bits:  # the decision-overflow flag, last of the kernels' data (see codegen.Spec.flags)
        data = (*data, np.zeros(2 + len(type(rec)._INDEX), np.int64))  # [count, decision, *cell]
    store = None
    if bits:
        allocate = runner.allocate_words
        if plan.codec == "bands":
            full = LayerLayout(plan.sizes, bits).n_words
            store = BandStore(plan.lo, plan.hi, bits, memory_budget, full_words=full)
        else:
            store = runner.device_store(plan, need.device) or DecisionStore(
                plan.layout.n_words, memory_budget, allocate=allocate
            )
    stats = Stats(backend=backend, device=runner.device_name(), cells=plan.cells)
    stats.extra["schedule"] = plan.schedule.kind() if plan.schedule else "layers"
    stats.extra["plan"] = plan.kind  # tiled, layered, line (one cell a wavefront), or serial (rows)
    stats.extra["decision_store_bytes"] = store.nbytes if store else 0
    stats.extra["decision_codec"] = plan.codec
    if store is not None:
        stats.extra["decision_store"] = store_place(store)
    stats.extra["backend_choice"] = plan.choice
    stats.extra["arithmetic"] = f"int32 (every value within +-{narrow[1]})" if narrow else "as written"
    seconds = plan.cells / SLOW_CELLS_PER_S  # at most, predicted: under half a second, no bar
    bar = progress_bar(plan.cells, call.progress, deadline=call.deadline, seconds=seconds)
    try:
        out = runner.run_plan(plan, rec, data, store, stats, bar)
    except BaseException:
        if store is not None:
            store.close()
        raise
    finally:
        if bar is not None:
            bar.close()
    axes = ", ".join(type(rec)._INDEX) if plan.schedule is None and plan.kind == "layered" else "i, j"
    err = decision_overflow(type(rec).__name__, data[-1], axes, bits) if bits else None
    if err is not None:
        store.close()
        raise err
    if grid and plan.cells == 0:
        empty = np.zeros(0, dtype=type(rec).value_dtype)
        out["last_row"], out["last_col"] = empty, empty.copy()
    stats.seconds = time.perf_counter() - call.t_start
    stats.bytes_evicted = store.nbytes if store and store_place(store) != "device" else 0
    stats.spilled_to_disk = bool(store and store.on_disk)
    if plan.codec == "bands":
        stats.extra["decision_store_bytes"] = store.nbytes
        stats.extra["uncompressed_bytes"] = store.full_words * 4
        stats.extra["compression"] = store.nbytes / max(store.full_words * 4, 1)
    if red is not None:
        out["best_value"], out["best_cell"] = _reduce_slots(type(rec), *red)
    if call.checkpoint:
        out["kernel_data"] = data
    return SweepResult(call.user_rec, plan, store, stats, swept=type(rec), **out)


def _reduction_slots(cls, n: int):
    """``values[n]`` at :attr:`~gpudp.codegen.Spec.reduce_worst` and ``cells[n, 2]`` at no cell."""
    vt = values.key_dtype(cls)
    return np.full(max(n, 1), spec_of(cls).reduce_worst, vt), np.full((max(n, 1), 2), NO_CELL, np.int64)


def _reduce_slots(cls, values, cells):
    """The threads' slots reduced: the best value and its earliest cell, or (None, None)."""
    used = np.flatnonzero(cells[:, 0] != NO_CELL)
    if used.size == 0:
        return None, None
    v = values[used]
    best = v.max() if cls.reduce == "max" else v.min()
    tied = used[v == best]
    k = tied[np.lexsort((cells[tied, 1], cells[tied, 0]))[0]]
    return best.item(), (int(cells[k, 0]), int(cells[k, 1]))


def _probe(rec, plan, data) -> None:
    """:func:`gpudp.checks.probe_cell` on the first cell, ``(0, 0)``, before any kernel compiles: a
    grid's (:func:`probe_grid`, its boundary too), or the layers' with windows of ``fill`` (at
    most 65,536 cells: a read past them raises, no probe)."""
    cls = type(rec)
    if plan.cells == 0:
        return
    if cls.family == "grid":
        probe_grid(rec, data, (plan.rows, plan.cols))
        return
    vt = np.dtype(cls.value_dtype).type
    if plan.shapes is not None:  # 2-D layers: cell (0, 0, 0), each previous layer as the ring keeps it
        shape = tuple(min(max(int(x.max()), 1), 1 << 8) for x in plan.shapes)
        probe_cell(cls, (0, 0, 0), [np.full(shape, cls.fill, vt) for _ in range(cls.window)], data)
        return
    size = min(max(int(plan.sizes.max()), 1), 1 << 16)
    probe_cell(cls, (0, 0), [np.full(size, cls.fill, vt) for _ in range(cls.window)], data)


def probe_grid(rec, data, shape: tuple[int, int]) -> None:
    """:func:`gpudp.checks.probe_cell` on a grid's first cell, ``(0, 0)`` (one with cells), as
    :func:`gpudp.sweep` and :func:`gpudp.sweep_many` check it: its dependencies at ``fill`` (a tuple of
    them with ``deps_tuple``; the line at ``fill`` after them with ``reads_line``), its symbols
    there (the first two items of ``data``, widened: :func:`gpudp.checks.cell_symbols`), then the
    rest of ``data``; and
    :func:`gpudp.checks.probe_boundary` on the first cell it reads outside the ``rows x cols`` grid
    (``shape``), if one."""
    cls = type(rec)
    fs = values.fields(cls)
    fill = np.dtype(cls.value_dtype).type(cls.fill) if fs is None else values.fill_values(cls)
    deps = [fill] * len(cls.offsets)
    if cls.deps_tuple:
        deps = [tuple(deps)]
    if cls.reads_line:  # the line at fill (at most 65,536 cells: a read past them raises, no probe)
        deps = [*deps, np.full(min(max(shape[0] * shape[1], 1), 1 << 16), fill)]
    syms = [data[0][0], data[1][0]] if cls.symbols else []
    probe_cell(cls, (0, 0), (*deps, *syms), data[len(syms) :])
    rows, cols = shape
    outside = [(int(a), int(b)) for a, b in cls.offsets if not (0 <= a < rows and 0 <= b < cols)]
    if outside:
        probe_boundary(cls, outside[0], data[len(syms) :])
