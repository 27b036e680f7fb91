"""The wavefront engine: plan a sweep, run it on a backend, keep the decisions, walk them back.

``sweep(recurrence)`` is the one entry point. It hands the call (a :class:`gpudp.shapes.SweepCall`)
to the driver of the recurrence's shape, found in one table, :data:`SHAPES`, by the ``family`` its
base class names (``grid``, ``layered``, ``interval``, ``grid3``); :func:`plan_sweep` finds the
shape's planner there too. No test of the recurrence's class, no backend's name: each driver gets
its per-backend code from the lowering registry (:mod:`gpudp.lowering`), where every shape's
package declares it (the grid and layered shapes' lowerings are the backends themselves).

The interval and grid3 drivers live in their packages (:mod:`gpudp.interval`, :mod:`gpudp.grid3`).
The grid and layered shapes are swept here: the schedule derived from the recurrence's declared
window, the layout picked (tiled for unit windows, layered otherwise), the decision store sized
against the memory budget (spilling to disk beyond it; :mod:`gpudp.footprint` plans the bytes),
the backend's generated kernels run over groups of wavefronts ("chunks") so that each finished
chunk can be evicted while the next one computes, progress reported, and a :class:`SweepResult`
returned, holding the last row and column (or the last layer), the decision store, statistics,
and ``traceback()``.
"""

from __future__ import annotations

import operator
import time
from dataclasses import dataclass, field

import numpy as np

from . import backends, lowering, values
from .cache import jit_generated
from .checks import cell_symbols, check_memory, probe_cell
from .codegen import NO_CELL, data_args, fill, spec_of, walk_form
from .errors import ContractError, InputError, decision_overflow
from .footprint import MemoryNeed, layered_memory, memory_need
from .inputs import parse_time_limit
from .kernel import KernelFactory
from .memory import default_budget, one_reading, parse_bytes
from .progress import Deadline, progress_bar
from .recurrence import (
    Recurrence,
    bad_step,
    contiguous,
    start_cell,
    values_only,
)
from .schedule import Schedule, derive
from .shapes import Shape, SweepCall, drive_grid3, drive_interval
from .solution import Stats
from .store import (
    BandStore,
    DecisionStore,
    LayerLayout,
    TileLayout,
    band_decision,
    layer_decision,
    tile_decision,
)


def device_memory(backend: str) -> tuple[int, int] | None:
    """(free, total) bytes of the memory ``backend``'s kernels compute in; None for host memory."""
    return backends.get(backend).memory()


@dataclass
class Plan:
    """What the backend runs: the layout, and the units (diagonals / layers) grouped in chunks."""

    kind: str  # "tiled" | "layered" | "line" (a grid of one cell a wavefront: _line_plan)
    rows: int
    cols: int
    schedule: Schedule | None
    layout: TileLayout | LayerLayout
    sizes: np.ndarray | None  # cells per layer (layered)
    n_units: int
    cells: int
    chunks: list[tuple[int, int]] = field(default_factory=list)
    #: layered: the computed cells ``lo[t] <= k < hi[t]`` of each layer (the active range)
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None
    #: layered: the groups of 32 cells each kernel writes words for: ``g0[t] <= g < g0[t] + gn[t]``
    #: (every group of the layer in the plain store, the computed ones for the bands codec)
    g0: np.ndarray | None = None
    gn: np.ndarray | None = None
    #: layered: "plain" (``layout`` is the store's) or "bands" (``layout`` is the device slab's:
    #: the computed groups of each layer; the store keeps bands, see :class:`gpudp.store.BandStore`)
    codec: str = "plain"
    #: the backend that runs the plan, and why (``auto`` decides once the cells are known)
    backend: str = "cpu"
    choice: str = ""
    #: layered, window 1: per layer, how far back a cell reads the previous layer (or None)
    reach: np.ndarray | None = None
    #: the cell type's bytes, the decision bits, and the layers of values a layered sweep keeps
    itemsize: int = 8
    bits: int = 0
    window: int = 1
    #: tiled: K > 0 has the kernels copy every K-th row and column (K - 1, 2K - 1, ...) aside as
    #: checkpoints (:func:`gpudp.backends.base.checkpoint_arrays`, :mod:`gpudp.linear`)
    checkpoint: int = 0

    def memory(self, memory_budget=None) -> MemoryNeed:
        """The bytes this sweep needs under ``memory_budget`` (as :func:`sweep` takes it), before
        anything is allocated (see :class:`MemoryNeed`)."""
        if self.kind == "tiled":
            be = backends.get(self.backend)
            budget = default_budget() if memory_budget is None else parse_bytes(memory_budget)
            lay = self.layout
            values = lay.nj * (lay.tw + 1) + max(self.rows, 1)  # the bottom and right edges
            widest = min(lay.ni, lay.nj) * lay.words_per_tile  # the longest tile anti-diagonal
            result = (self.rows + self.cols) * self.itemsize
            if self.checkpoint:  # computed beside the edges, copied to the host
                k = self.checkpoint
                ck = (self.rows - 1) // k * self.cols + (self.cols - 1) // k * self.rows
                values, result = values + ck, result + ck * self.itemsize
            return memory_need(
                be, budget, values * self.itemsize, lay.n_words, widest, self.bits, "plain", result
            )
        if self.kind == "line":  # the line's values, and its copy as the last row or column
            be = backends.get(self.backend)
            budget = default_budget() if memory_budget is None else parse_bytes(memory_budget)
            values = (self.cells + 1) * self.itemsize
            return memory_need(be, budget, values, self.layout.n_words, self.bits, self.bits, "plain", values)
        grid = self.schedule is not None  # a grid's last row and column are kept besides the ring
        edges = max(self.rows, 1) + max(self.cols, 1) if grid else 0
        return layered_memory(
            self.sizes,
            self.bits,
            self.itemsize,
            self.window,
            self.backend,
            self.codec,
            memory_budget,
            groups=self.gn,  # the groups each layer's words cover: the store's, or the bands' slab's
            edges=edges,
            result=self.rows + self.cols if grid else None,
        )

    def max_chunk_words(self) -> int:
        """Decision words of the largest chunk (at least 1): the slab a backend computes a chunk into,
        once :meth:`make_chunks` has cut them."""
        spans = (self.layout.words_of(u0, u1) for u0, u1 in self.chunks)
        return max([1, *(w1 - w0 for w0, w1 in spans)])

    def unit_cells(self, u0: int, u1: int) -> int:
        if self.kind != "tiled":
            return int((self.hi[u0:u1] - self.lo[u0:u1]).sum())
        lay = self.layout
        return int(lay.diag_off[u1] - lay.diag_off[u0]) * lay.bh * lay.tw

    def make_chunks(self, max_words: int, max_cells: int):
        """Group consecutive units so that each chunk's decisions fit ``max_words`` words."""
        lay = self.layout
        if self.kind != "tiled":
            self.chunks = _greedy_chunks(lay.woff, _cumulative(self.hi - self.lo), max_words, max_cells)
            if self.kind == "line" and self.schedule.line_step < 0:  # swept from the line's end
                self.chunks.reverse()
            return
        tiles = lay.diag_off[: self.n_units + 1]  # tiles before each diagonal
        self.chunks = _greedy_chunks(
            tiles * lay.words_per_tile, tiles * (lay.bh * lay.tw), max_words, max_cells
        )


def _cumulative(x: np.ndarray) -> np.ndarray:
    out = np.zeros(len(x) + 1, np.int64)
    np.cumsum(x, out=out[1:])
    return out


def _greedy_chunks(woff: np.ndarray, cum: np.ndarray, max_words: int, max_cells: int) -> list:
    """Cut units ``0..len(woff) - 1`` greedily: each chunk as long as its words (``woff``) and cells
    (``cum``, both cumulative) stay within the limits, and at least one unit long."""
    n = len(woff) - 1
    chunks, u0 = [], 0
    while u0 < n:
        u1 = min(
            int(np.searchsorted(woff, woff[u0] + max_words, side="right")) - 1,
            int(np.searchsorted(cum, cum[u0] + max_cells, side="right")) - 1,
        )
        u1 = min(max(u1, u0 + 1), n)
        chunks.append((u0, u1))
        u0 = u1
    return chunks


@dataclass
class SweepResult:
    """The outcome of a sweep: boundary values of the result, the decisions, the statistics.

    ``last_row`` / ``last_col`` hold the values of the grid's last row and column in the order of
    the schedule: row ``rows - 1`` and column ``cols - 1``, or row / column 0 for a schedule that
    runs bottom-up / right to left. ``last_layer`` holds a layered recurrence's final layer.
    """

    recurrence: Recurrence
    plan: Plan
    store: DecisionStore | BandStore | None
    stats: Stats
    last_row: np.ndarray | None = None
    last_col: np.ndarray | None = None
    last_layer: np.ndarray | None = None
    #: with ``reduce`` declared: the best value over the computed cells, and its cell (the earliest
    #: in (i, j) / (t, k) order among equals); None without a reduction or without cells
    best_value: float | int | None = None
    best_cell: tuple[int, int] | None = None
    #: swept with checkpoints (:mod:`gpudp.linear`): the values of rows and of columns
    #: ``K - 1, 2K - 1, ...``, one per row of each array, as the backend's kernels wrote them (on
    #: the device for cuda; a record's as one array per field); and the kernels' data
    checkpoints: tuple | None = None
    kernel_data: tuple | None = None

    def decision(self, *cell) -> int:
        """The decision recorded for one cell: ``(i, j)`` of a grid or ``(t, k)`` of layers."""
        self._need_store()
        a, b = (int(x) for x in cell)
        return int(_decode_one(self.plan, self.store, a, b))

    def traceback(self, start, state=None) -> np.ndarray:
        """Walk ``back`` from ``start`` until leaving the grid (or layer 0), compiled.

        Returns an int64 array of rows ``(i, j, decision)`` (``(t, k, decision)`` for layers),
        from ``start`` backwards. A recurrence with ``traceback_state = True`` starts in ``state``
        (an integer, default 0) and gets rows ``(i, j, decision, state)``: each cell's state as
        ``back`` was called with it.

        Raises :class:`ContractError` when the recurrence keeps no decisions, defines no ``back``,
        or ``back`` does not step to an earlier wavefront; ``IndexError`` for a start outside.
        """
        return self.walk(start, state)[0]

    def walk(self, start, state=None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`traceback`'s path, and where ``back`` left the grid: ``(i, j)`` or ``(t, k)``,
        and the state there with ``traceback_state``: ``(path, exit)``. What a walk that goes on
        elsewhere needs (a band of a grid swept on another worker, a batch's instance walked in
        parts: :mod:`gpudp.distributed`, :mod:`gpudp.many`)."""
        self._need_store()
        rec = type(self.recurrence)
        if state is not None and not rec.traceback_state:
            raise ContractError(
                f"{rec.__name__}.traceback(start, state=...): the class declares traceback_state = False"
            )
        data = tuple(self.recurrence.data())
        walker = _walker(rec, len(data), self.plan)
        a, b = start_cell(start)
        self.decision(a, b)  # raises IndexError for a start outside the grid / layers
        s0 = (np.int64(0 if state is None else operator.index(state)),) if rec.traceback_state else ()
        lay = self.plan.layout
        maxlen = (self.plan.schedule.num_wavefronts if self.plan.schedule else self.plan.n_units) + 1
        if self.plan.kind == "tiled":
            maxlen = self.plan.rows + self.plan.cols + 1
        params = self.store.params() if self.plan.codec == "bands" else lay.params()
        layered = self.plan.schedule is None and self.plan.kind != "tiled"
        sizes = (np.asarray(self.plan.sizes, np.int64),) if layered else ()
        words = self.store.words
        path, out = walker(a, b, *s0, self.plan.rows, self.plan.cols, maxlen, words, *sizes, *params, *data)
        if out[-1]:  # the walk stopped on a step back may not take
            _bad_step(rec, self.plan, path, out)
        return path, out[:-1]

    def _need_store(self):
        if self.store is None and type(self.recurrence).decision_bits:
            raise ContractError(
                f"{type(self.recurrence).__name__} was swept with traceback=False: no decisions were kept"
            )
        if self.store is None:
            raise ContractError(
                f"{type(self.recurrence).__name__} declares decision_bits = 0: there is nothing to trace back"
            )

    def close(self):
        if self.store is not None:
            self.store.close()


def plan_sweep(rec: Recurrence, backend: str = "auto", tile=None, codec=None, reach=None) -> Plan:
    """The plan of a sweep of a grid or layered recurrence: layout, chunks, cells, and the backend
    (``auto`` picks one from the cells, see :func:`gpudp.backends.choose`); ``tile``, ``codec``,
    ``reach``: :func:`sweep`'s. Its shape's planner
    (:data:`SHAPES`) makes it; the interval and grid3 shapes plan by themselves (no :class:`Plan`)."""
    rec = rec._specialized()
    cls = type(rec)
    shape = shape_of(cls)
    if shape.plan is None:
        raise ContractError(
            f"{cls.__name__} is of the {cls.family!r} shape, which its own driver plans: sweep it with "
            "gpudp.sweep (plan_sweep plans grid and layered recurrences)"
        )
    cls._validate_class()
    plan, backend, why = shape.plan(rec, backend, tile, codec, reach)
    if values.is_record(cls) and plan.kind != "tiled":
        raise ContractError(
            f"{cls.__name__}.value_dtype is a record: record cells run on grids swept by tiles (offsets "
            f"among (-1, 0), (0, -1), (-1, -1)); this {plan.kind} plan keeps scalar cells only. Pack the "
            "fields into one number, or split the recurrence"
        )
    plan.backend, plan.choice = backend, why
    plan.itemsize, plan.bits = np.dtype(cls.value_dtype).itemsize, cls.decision_bits
    plan.window = plan.schedule.window if plan.schedule else getattr(cls, "window", 1)
    return plan


def _plan_grid(rec, backend: str, tile, codec=None, reach=None) -> tuple[Plan, str, str]:
    """A grid's plan by its schedule: tiled, a line, or layered by wavefronts; and the backend
    (``codec`` and ``reach`` are a layered sweep's options: a grid has neither)."""
    cls = type(rec)
    bits = cls.decision_bits
    rows, cols = rec._checked_shape()
    sched = derive(cls.offsets, rows, cols)
    backend, why = backends.choose(backend, rows * cols)
    if sched.tiled:
        be = backends.get(backend)
        bh, tw = tile or be.fit_tile(be.tile_for(cls), rows, cols)
        m = be.tile_rows_multiple
        if tw % 32 or bh < 1 or bh % m:
            rows_rule = f", rows of {m} on {be.name}" if m > 1 else ""
            raise InputError("tile", f"tile {tile}: columns must be a multiple of 32{rows_rule}")
        lay = TileLayout(rows, cols, bh, tw, bits, rpt=-(-bh // 32))
        plan = Plan("tiled", rows, cols, sched, lay, None, lay.num_diagonals, rows * cols)
    elif sched.positions == 1 and rows * cols:
        plan = _line_plan(rows, cols, sched, bits)
    else:
        n = sched.num_wavefronts
        sizes = np.full(n, sched.positions, dtype=np.int64)
        plan = _layered_plan(
            rows, cols, sched, sizes, np.zeros(n, np.int64), sizes, bits, "plain", rows * cols
        )
    return plan, backend, why


def _plan_layered(rec, backend: str, tile, codec=None, reach=None) -> tuple[Plan, str, str]:
    """A layered recurrence's plan, by its layers' sizes and active ranges, with the decision
    ``codec`` and the ``reach`` of :func:`sweep` (None: the class's); and the backend."""
    cls = type(rec)
    bits = cls.decision_bits
    n = int(rec.num_layers())
    if n < 0:
        raise InputError("num_layers", f"must be >= 0, got {n}")
    sizes = np.array([int(rec.layer_size(t)) for t in range(n)], dtype=np.int64)
    if (sizes < 0).any():
        raise InputError("layer_size", "layer sizes must be >= 0")
    lo, hi = rec._checked_active_range(sizes)
    codec = rec._checked_codec(codec)
    plan = _layered_plan(0, 0, None, sizes, lo, hi, bits, codec, int((hi - lo).sum()))
    plan.reach = rec._checked_reach(n, reach)
    backend, why = backends.choose(backend, plan.cells)
    return plan, backend, why


def _line_plan(rows, cols, sched, bits) -> Plan:
    """A grid whose wavefronts hold one cell each (one row on a column order, one column on a row
    order: coin change's ``1 x (amount + 1)``): a *line* of ``n`` cells swept in order, one thread,
    each reading the earlier cells of the line by their position. The units are the groups of 32
    cells along the line, so that a group's decision words are written whole (``bits`` words a
    group, as one layer of ``n`` cells: ``layer_decision(words, 0, c, ...)`` decodes cell ``c``)."""
    n = rows * cols
    sizes = np.full(-(-n // 32), 32, np.int64)
    sizes[-1] = n - 32 * (len(sizes) - 1)
    plan = _layered_plan(rows, cols, sched, sizes, np.zeros_like(sizes), sizes, bits, "plain", n)
    plan.kind = "line"
    return plan


def _layered_plan(rows, cols, sched, sizes, lo, hi, bits, codec, cells) -> Plan:
    """A layered plan: which groups of 32 cells each layer's kernel covers, and the word layout."""
    # shifts, not divisions (0 <= lo <= hi <= sizes): a line of 10^6 cells has 31,251 layers
    if codec == "plain" and bits:
        g0, gn = np.zeros_like(sizes), (sizes + 31) >> 5  # whole layers: zeros outside the range
        lay = LayerLayout(sizes, bits)
    else:
        g0 = lo >> 5
        gn = np.where(hi > lo, ((hi + 31) >> 5) - g0, 0)
        lay = LayerLayout(gn * 32, bits)
    n = len(sizes)
    return Plan("layered", rows, cols, sched, lay, sizes, n, cells, lo=lo, hi=hi, g0=g0, gn=gn, codec=codec)


#: bytes of decisions above which ``store="auto"`` traces a tiled grid back from checkpoints even
#: where the full store fits the memory budget: copying and page-locking the decisions then costs
#: more than sweeping the path's blocks again (LCS on the GPU machines: 2^19, 32 GiB, full 1.06 s
#: against 0.92 s from checkpoints, H100 2026-11-24; 2^20 held in 154 GiB of a 512 GiB host, full
#: 53-94 s against 2.3 s, 4 x H200 2026-11-26)
AUTO_FULL_STORE_MAX = 16 << 30


@one_reading()  # the budget, the plan's figures, the memory check and the store: one reading
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
    _checkpoint: int = 0,
):
    """Run the recurrence to the end; keep its decisions (if any) for the traceback.

    backend:       ``auto`` (the CPU for sweeps it finishes before the GPU could start, else cuda
                   when a GPU is usable), ``cpu`` or ``cuda``.
    memory_budget: host bytes the decision store may take before it spills to a disk memmap
                   (int or text like ``"8G"``; default: GPUDP_MEMORY_BUDGET or half of free RAM).
    progress:      a progress bar on stderr for sweeps longer than about a second; None = only
                   when stderr is a terminal.
    tile:          ``(rows, cols)`` of the tiles of a tiled grid sweep (tuning; see docs).
    codec, reach:  a layered sweep's decision codec, ``"plain"`` or ``"bands"``, and per layer how far
                   below itself a cell reads (temporal blocking on CUDA; a wrong promise gives wrong
                   values): see :class:`gpudp.LayeredRecurrence`. None: the class's ``decision_codec``
                   and ``reach()``, the defaults; the options are preferred. Other shapes ignore them.
    traceback:     False: values only. The cell's decisions are dropped as it returns them: no
                   decision store (no host memory, no eviction, nothing to trace back), and the
                   kernels are those of a recurrence with ``decision_bits = 0``.
    store:         where the traceback's decisions come from: ``"full"``, a store of every cell's
                   decision (a :class:`SweepResult`); ``"checkpoints"``, values of every K-th row
                   and column only, and the blocks the path crosses swept again when it is walked
                   (a :class:`gpudp.linear.CheckpointResult`, same surface; tiled grids only);
                   ``"auto"``: checkpoints for a tiled grid whose full store would not stay within
                   the memory budget or would hold more than :data:`AUTO_FULL_STORE_MAX` bytes of
                   decisions, else full.
    checkpoint_every: K, the checkpoints' spacing and the blocks' side (default: 512, doubled
                   while the checkpoints would take more than a quarter of the memory budget or of
                   the GPU's free memory; see :func:`gpudp.linear.choose_every`).
    time_limit:    seconds (counted from ``started``, a ``time.perf_counter()`` reading, default this
                   call: a solver's own preparation counts too) after which the sweep stops between two chunks
                   and raises :class:`gpudp.errors.TimeLimitReached`, which says how many cells were
                   done (a chunk is about 4 M cells on the cpu; None: no limit). The decision store
                   is removed; the caller reports what it has proven. With checkpoints the limit
                   applies to the forward sweep.
    """
    t_start = time.perf_counter()
    if store not in ("auto", "full", "checkpoints"):
        raise InputError("store", f"{store!r}: must be 'auto', 'full' or 'checkpoints'")
    deadline = Deadline.of(parse_time_limit(time_limit), t_start if started is None else started)
    memory_budget = default_budget() if memory_budget is None else parse_bytes(memory_budget)
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
    )
    return shape_of(type(call.rec)).sweep(call)


def _sweep_planned(call: SweepCall):
    """The grid and layered shapes: :func:`plan_sweep` (or the checkpoints of :mod:`gpudp.linear`),
    the memory check, the decision store, and the chunks run by the shape's lowering on the backend,
    the backend itself (its ``run_plan``)."""
    rec, memory_budget = call.rec, call.memory_budget
    plan = None
    if call.traceback and type(rec).decision_bits and call.store != "full":
        plan = plan_sweep(rec, call.backend, call.tile, call.codec, call.reach)  # kept unless checkpoints win
        need = plan.memory(memory_budget) if plan.kind == "tiled" else None
        if call.store == "checkpoints" or (need and (need.spill or need.decisions > AUTO_FULL_STORE_MAX)):
            from .linear import checkpoint_sweep

            return checkpoint_sweep(
                rec,
                plan,
                sweep,
                memory_budget,
                call.progress,
                call.tile,
                call.checkpoint_every,
                call.time_limit,
                call.started,
            )
    if not call.traceback and type(rec).decision_bits:
        rec = values_only(rec)
    plan = plan or plan_sweep(rec, call.backend, call.tile, call.codec, call.reach)
    plan.checkpoint = call.checkpoint
    backend = plan.backend
    need = plan.memory(memory_budget)  # the store is not counted: past the budget it spills to disk
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
    runner = lowering.get(type(rec).family, backend).BACKEND
    red = None
    if type(rec).reduce:  # per-thread slots (codegen.Spec.reduce_slots), before the overflow flag
        red = _reduction_slots(type(rec), runner.reduction_slots(plan))
        data = (*data, *red)
    bits = type(rec).decision_bits
    if bits:  # the decision-overflow flag, last of the kernels' data (see codegen.Spec.flags)
        data = (*data, np.zeros(4, np.int64))
    store = None
    if bits:
        allocate = runner.allocate_words
        if plan.codec == "bands":
            full = LayerLayout(plan.sizes, bits).n_words
            store = BandStore(plan.lo, plan.hi, bits, memory_budget, full_words=full)
        else:
            store = DecisionStore(plan.layout.n_words, memory_budget, allocate=allocate)
    stats = Stats(backend=backend, device=runner.device_name(), cells=plan.cells)
    stats.extra["schedule"] = plan.schedule.kind() if plan.schedule else "layers"
    stats.extra["plan"] = plan.kind  # tiled, layered, or line (a grid of one cell a wavefront)
    stats.extra["decision_store_bytes"] = store.nbytes if store else 0
    stats.extra["decision_codec"] = plan.codec
    stats.extra["backend_choice"] = plan.choice
    bar = progress_bar(plan.cells, call.progress, deadline=call.deadline)
    try:
        out = runner.run_plan(plan, rec, data, store, stats, bar)
    except BaseException:
        if store is not None:
            store.close()
        raise
    finally:
        if bar is not None:
            bar.close()
    axes = "t, k" if plan.schedule is None and plan.kind == "layered" else "i, j"
    err = decision_overflow(type(rec).__name__, data[-1], axes, bits) if bits else None
    if err is not None:
        store.close()
        raise err
    if grid and plan.cells == 0:
        empty = np.zeros(0, dtype=type(rec).value_dtype)
        out["last_row"], out["last_col"] = empty, empty.copy()
    stats.seconds = time.perf_counter() - call.t_start
    stats.bytes_evicted = store.nbytes if store else 0
    stats.spilled_to_disk = bool(store and store.on_disk)
    if plan.codec == "bands":
        stats.extra["decision_store_bytes"] = store.nbytes
        stats.extra["uncompressed_bytes"] = store.full_words * 4
        stats.extra["compression"] = store.nbytes / max(store.full_words * 4, 1)
    if red is not None:
        out["best_value"], out["best_cell"] = _reduce_slots(type(rec), *red)
    if call.checkpoint:
        out["kernel_data"] = data
    return SweepResult(call.user_rec, plan, store, stats, **out)


#: the engine's shapes: the ``family`` a recurrence's base class names -> its :class:`Shape`. The
#: grid and layered shapes share the planned sweep; the interval and grid3 drivers
#: (:mod:`gpudp.shapes`) hand the call to their packages, imported on first use, which declare
#: their lowerings (:mod:`gpudp.lowering`)
SHAPES: dict[str, Shape] = {
    "grid": Shape(_sweep_planned, _plan_grid),
    "layered": Shape(_sweep_planned, _plan_layered),
    "interval": Shape(drive_interval),
    "grid3": Shape(drive_grid3),
}

# The grid and layered shapes' lowerings are the backends themselves (their ``run_plan``), declared
# so that every shape's code is found alike and lowering.missing() names what a new backend lacks
lowering.declare("grid", **backends.MODULES)
lowering.declare("layered", **backends.MODULES)


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
    grid's (:func:`probe_grid`), or the layers' with windows of ``fill`` (at most 65,536 cells: a
    read past them raises, no probe)."""
    cls = type(rec)
    if plan.cells == 0:
        return
    if cls.family == "grid":
        probe_grid(rec, data)
        return
    vt = np.dtype(cls.value_dtype).type
    size = min(max(int(plan.sizes.max()), 1), 1 << 16)
    probe_cell(cls, (0, 0), [np.full(size, cls.fill, vt) for _ in range(cls.window)], data)


def probe_grid(rec, data) -> None:
    """:func:`gpudp.checks.probe_cell` on a grid's first cell, ``(0, 0)`` (one with cells), as
    :func:`sweep` and :func:`gpudp.sweep_many` check it: its dependencies at ``fill`` (a tuple of
    them with ``deps_tuple``), its symbols there (the first two items of ``data``, widened:
    :func:`gpudp.checks.cell_symbols`), then the rest of ``data``."""
    cls = type(rec)
    fs = values.fields(cls)
    fill = np.dtype(cls.value_dtype).type(cls.fill) if fs is None else values.fill_values(cls)
    deps = [fill] * len(cls.offsets)
    if cls.deps_tuple:
        deps = [tuple(deps)]
    syms = [data[0][0], data[1][0]] if cls.symbols else []
    probe_cell(cls, (0, 0), (*deps, *syms), data[len(syms) :])


def _decode_one(plan: Plan, store, a: int, b: int) -> int:
    words = store.words
    if plan.kind == "tiled":
        if not (0 <= a < plan.rows and 0 <= b < plan.cols):
            raise IndexError(f"cell ({a}, {b}) outside the {plan.rows} x {plan.cols} grid")
        return tile_decision(words, a, b, *plan.layout.params())
    if plan.kind == "line":
        if not (0 <= a < plan.rows and 0 <= b < plan.cols):
            raise IndexError(f"cell ({a}, {b}) outside the {plan.rows} x {plan.cols} grid")
        return layer_decision(words, 0, b if plan.schedule.by_row_index else a, *plan.layout.params())
    if plan.schedule is not None:
        s = plan.schedule
        if not (0 <= a < plan.rows and 0 <= b < plan.cols):
            raise IndexError(f"cell ({a}, {b}) outside the {plan.rows} x {plan.cols} grid")
        t = s.a * a + s.b * b - s.t_min
        return layer_decision(words, t, a if s.by_row_index else b, *plan.layout.params())
    if not (0 <= a < plan.n_units and 0 <= b < plan.sizes[a]):
        raise IndexError(f"cell ({a}, {b}) outside the layers")
    if plan.codec == "bands":
        return band_decision(words, a, b, *store.params())
    return layer_decision(words, a, b, *plan.layout.params())


_WALKERS = KernelFactory("engine.walk", "rec", "n_data", "kind", "deps", "codec", "bits")

# ``{s0}``, ``{width}``, ``{rec}`` and ``{step}`` spell the walk with a state or without one
_GRID_WALK = """
def walk(i, j{s0}, R, C, maxlen, words{lp}{da}):
    path = np.empty((maxlen, {width}), np.int64)
    n = 0
    while i >= 0 and i < R and j >= 0 and j < C:
        if n >= maxlen:
            raise ContractError("{cls}.back() walked in a loop: it must step to one of the dependencies")
        d = {decode}
        path[n, 0] = i
        path[n, 1] = j
        path[n, 2] = d
        {rec}
        n += 1
        {step}
        if A * i2 + B * j2 >= A * i + B * j:  # not earlier: the caller names the step (_bad_step)
            return path[:n], np.array([{exit2}, 1], np.int64)
        i = i2
        j = j2
    return path[:n], np.array([{exit}, 0], np.int64)
"""

_LAYER_WALK = """
def walk(t, k{s0}, R, C, maxlen, words, S{lp}{da}):
    path = np.empty((maxlen, {width}), np.int64)
    n = 0
    L = maxlen - 1
    while t >= 0 and t < L:
        d = {decode}
        path[n, 0] = t
        path[n, 1] = k
        path[n, 2] = d
        {rec}
        n += 1
        {step}
        if t2 >= t or (t2 >= 0 and (k2 < 0 or k2 >= S[t2])):  # the caller names it (_bad_step)
            return path[:n], np.array([{exit2}, 1], np.int64)
        t = t2
        k = k2
    return path[:n], np.array([{exit}, 0], np.int64)
"""


def _bad_step(rec_cls, plan: Plan, path: np.ndarray, out: np.ndarray) -> None:
    """:func:`gpudp.recurrence.bad_step` for a walk of ``plan`` (layers: their sizes)."""
    layers = plan.schedule is None and plan.kind != "tiled"
    bad_step(rec_cls, path, out, plan.sizes if layers else None)


def _walker(rec_cls, n_data: int, plan: Plan):
    import numba

    from .jit import njit

    s = plan.schedule
    deps = s and (s.a, s.b)
    k = _WALKERS.lookup(
        rec=rec_cls, n_data=n_data, kind=plan.kind, deps=deps, codec=plan.codec, bits=plan.bits
    )
    if k.ready:
        return k.fn
    if not hasattr(rec_cls, "back"):
        raise ContractError(
            f"{rec_cls.__name__} defines no back(...): its decisions cannot be traced back; define "
            f"{rec_cls._form('back', n_data)} as a @staticmethod"
        )
    ns = {
        "np": np,
        "numba": numba,
        "ContractError": ContractError,
        "back": njit(rec_cls.back),
        "tile_decision": tile_decision,
        "layer_decision": layer_decision,
        "band_decision": band_decision,
        # the decoders read the decision bits from this constant, not from their ``bits`` argument:
        # their loop over the bits unrolls (the line's walk of 40,001 cells 1.4 -> 0.35 ms)
        "BITS": plan.bits,
    }
    da = data_args(n_data)
    form = walk_form(rec_cls, n_data)
    if s is None and plan.codec == "bands":
        bands = ", lo, hi, lead_n, band_n, band_off, lead_w, trail_w"
        src = fill(
            _LAYER_WALK,
            cls=rec_cls.__name__,
            lp=bands + ", bits",
            da=da,
            decode=f"band_decision(words, t, k{bands}, BITS)",
            **form,
        )
    elif s is None:
        src = fill(
            _LAYER_WALK,
            cls=rec_cls.__name__,
            lp=", woff, bits",
            da=da,
            decode="layer_decision(words, t, k, woff, BITS)",
            **form,
        )
    elif plan.kind == "line":
        src = fill(
            _GRID_WALK,
            cls=rec_cls.__name__,
            lp=", woff, bits",
            da=da,
            decode=f"layer_decision(words, 0, {'j' if s.by_row_index else 'i'}, woff, BITS)",
            **form,
        )
    elif plan.kind == "tiled":
        src = fill(
            _GRID_WALK,
            cls=rec_cls.__name__,
            lp=", bh, tw, ni, nj, bits, diag_off, rpt",
            da=da,
            decode="tile_decision(words, i, j, bh, tw, ni, nj, BITS, diag_off, rpt)",
            **form,
        )
    else:
        slot = "i" if s.by_row_index else "j"
        src = fill(
            _GRID_WALK,
            cls=rec_cls.__name__,
            lp=", woff, bits",
            da=da,
            decode="layer_decision(words, A * i + B * j - min(0, A * (R - 1)) - min(0, B * (C - 1)), "
            f"{slot}, woff, BITS)",
            **form,
        )
    if s is not None:
        ns.update(A=s.a, B=s.b)
    return k.keep(jit_generated(src, "walk", ns, njit, "cpu")).fn
