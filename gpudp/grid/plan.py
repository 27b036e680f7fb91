"""The grid and layered shapes' plan: what a sweep runs, before anything is allocated.

:func:`make_plan` checks the class and runs the shape's planner (:func:`plan_grid` by the schedule
derived from a grid's offsets: tiled, a line, layered by wavefronts, or serial, row after row;
:func:`plan_layered` by the layers' sizes, active ranges and codec), which picks the backend too;
the :class:`Plan` holds the layout of the decisions, the units (tile diagonals or layers) cut into
chunks, and its memory figures (:meth:`Plan.memory`, planned by :mod:`gpudp.footprint`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from .. import backends, values
from ..errors import ContractError, InputError
from ..footprint import MemoryNeed, layered_memory, memory_need
from ..memory import default_budget, parse_bytes
from ..recurrence import Recurrence, whole_numbers
from ..recurrence.layered import auto_codec
from ..schedule import Schedule, derive
from ..store import LayerLayout, TileLayout

__all__ = ["PLANNERS", "Plan", "make_plan", "plan_grid", "plan_layered", "serial_order"]


@dataclass
class Plan:
    """What the backend runs: the layout, and the units (diagonals / layers) grouped in chunks."""

    kind: str  # "tiled" | "layered" | "line" (a grid of one cell a wavefront: _line_plan) | "serial"
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
    #: layered, 2-D layers (``layer_shape``): each layer's rows and columns, two int64 arrays (a
    #: layer's cell ``(i, j)`` is its flat cell ``i * cols + j``); None for 1-D layers
    shapes: tuple[np.ndarray, np.ndarray] | None = None
    #: serial: the sweep's (row step, column step), each +1 or -1 (:func:`serial_order`)
    serial: tuple[int, int] | None = None
    #: tiled: K > 0 has the kernels copy every K-th row and column (K - 1, 2K - 1, ...) aside as
    #: checkpoints (:func:`gpudp.backends.base.checkpoint_arrays`, :mod:`gpudp.checkpoints`)
    checkpoint: int = 0
    #: (max words, max cells) -> the chunks :meth:`make_chunks` cut for them; shared by the copies
    #: of a plan kept for the next sweep (:func:`plan_grid`)
    cuts: dict = field(default_factory=dict, repr=False, compare=False)

    def shared(self) -> Plan:
        """A copy of this plan whose fields are this one's (its arrays, layout, chunks cut): a kept
        plan's for a sweep, which sets its own backend, figures and chunks on it."""
        plan = object.__new__(Plan)
        plan.__dict__.update(self.__dict__)
        return plan

    def memory(self, memory_budget=None) -> MemoryNeed:
        """The bytes this sweep needs under ``memory_budget`` (as :func:`gpudp.sweep` takes it), before
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
        if self.kind in ("line", "serial"):
            be = backends.get(self.backend)
            budget = default_budget() if memory_budget is None else parse_bytes(memory_budget)
            if self.kind == "line":  # the line's values, and its copy as the last row or column
                values = (self.cells + 1) * self.itemsize
                return memory_need(
                    be, budget, values, self.layout.n_words, self.bits, self.bits, "plain", values
                )
            edges = (self.rows + self.cols) * self.itemsize  # the ring of rows, the last row and column
            values = (self.window + 1) * self.cols * self.itemsize + edges
            row = int(self.layout.woff[1]) if self.rows else 0
            return memory_need(be, budget, values, self.layout.n_words, row, self.bits, "plain", edges)
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
            width=None if self.shapes is None else int(np.prod(self.ring_shape())),
        )

    def ring_shape(self) -> tuple[int, ...]:
        """The shape of one layer of a layered plan's ring of values (the backends keep ``window +
        1`` of them): the widest layer's cells, or for 2-D layers (:attr:`shapes`) the most rows by
        the most columns, so that each layer is a 2-D array whose cell ``(i, j)`` is ``[i, j]``."""
        if self.shapes is not None:
            return tuple(max(int(x.max(initial=0)), 1) for x in self.shapes)
        return (max(int(self.sizes.max()) if self.n_units else 1, 1),)

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
        """Group consecutive units so that each chunk's decisions fit ``max_words`` words and its
        cells ``max_cells`` (cut once per plan and limits: :attr:`cuts`)."""
        cut = self.cuts.get((max_words, max_cells))
        if cut is None:
            cut = self.cuts[max_words, max_cells] = self._cut(max_words, max_cells)
        self.chunks = list(cut)

    def _cut(self, max_words: int, max_cells: int) -> list[tuple[int, int]]:
        lay = self.layout
        if self.kind != "tiled":
            chunks = _greedy_chunks(lay.woff, _cumulative(self.hi - self.lo), max_words, max_cells)
            if self.kind == "line" and self.schedule.line_step < 0:  # swept from the line's end
                chunks.reverse()
            return chunks
        tiles = lay.diag_off[: self.n_units + 1]  # tiles before each diagonal
        return _greedy_chunks(tiles * lay.words_per_tile, tiles * (lay.bh * lay.tw), max_words, max_cells)


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


def make_plan(rec: Recurrence, planner, backend: str = "auto", tile=None, codec=None, reach=None) -> Plan:
    """The plan of a sweep of ``rec`` (specialized) by its shape's ``planner`` (:func:`plan_grid`,
    :func:`plan_layered`): the class checked, the plan made, its backend and the cell's figures set
    (what :func:`gpudp.engine.plan_sweep` gives, once it has found the planner)."""
    cls = type(rec)
    cls._validate_class()
    plan, backend, why = planner(rec, backend, tile, codec, reach)
    if values.is_record(cls) and plan.kind != "tiled":
        raise ContractError(
            f"{cls.__name__}.value_dtype is a record: record cells run on grids swept by tiles (offsets "
            f"among (-1, 0), (0, -1), (-1, -1)); this {plan.kind} plan keeps scalar cells only. Pack the "
            "fields into one number, or split the recurrence"
        )
    plan.backend, plan.choice = backend, why
    plan.itemsize, plan.bits = np.dtype(cls.value_dtype).itemsize, cls.decision_bits
    plan.window = plan.schedule.window if plan.schedule else getattr(cls, "window", 1)
    if plan.serial:  # the rows back its ring keeps
        plan.window = serial_order(plan.schedule.offsets)[1]
    return plan


def plan_grid(rec, backend: str, tile, codec=None, reach=None) -> tuple[Plan, str, str]:
    """A grid's plan by its schedule: tiled, a line, serial (row after row, where the backend runs
    wavefronts so narrow on one thread anyway: :func:`serial_order`) or layered by wavefronts; and
    the backend (``codec`` and ``reach`` are a layered sweep's options: a grid has neither)."""
    cls = type(rec)
    rows, cols = rec._checked_shape()
    sched = derive(cls.offsets, rows, cols)
    if cls.reads_line and not (sched.positions == 1 and not sched.tiled):
        raise ContractError(
            f"{cls.__name__}.reads_line is True, but its {rows} x {cols} grid with offsets "
            f"{tuple(map(tuple, cls.offsets))} is not a line: a cell reads the line at an index from the "
            "data only on a grid of one row whose offsets are (0, -d) (or one column, (-d, 0)), swept "
            "one cell after the other. For reads across a 2-D table, a LayeredRecurrence's cell reads "
            "its window's previous layers at any index; a cell that reads its own row at computed indices "
            "reads a line whose cells are the table's numbered row by row (docs/tutorial.md, section 14)"
        )
    # a line (an empty one too when its cell reads the line: only a line's sweep can call that cell)
    line = not sched.tiled and sched.positions == 1 and bool(rows * cols or cls.reads_line)
    if line and backend == "auto":  # one cell after the other on every backend: a GPU runs one thread
        backend, why = "cpu", "auto: cpu, a line's cells run one after the other (one thread on any backend)"
    else:
        backend, why = backends.choose(backend, rows * cols)
    be = backends.get(backend)
    if sched.tiled:
        bh, tw = _tile_pair(tile) if tile is not None else be.fit_tile(be.tile_for(cls), rows, cols)
        m = be.tile_rows_multiple
        if tw < 32 or tw % 32 or bh < 1 or bh % m:
            rows_rule = f" and a multiple of {m} on {be.name}" if m > 1 else ""
            raise InputError(
                "tile", f"tile {tile}: columns must be a positive multiple of 32, rows at least 1{rows_rule}"
            )
        tile = (bh, tw)
    # all that the plan is made of: the class's declaration, the grid's shape, the backend's tile
    # and the width below which it sweeps rows serially
    key = (cls, rows, cols, backend, tile if sched.tiled else None, be.serial_width)
    with _PLANS_LOCK:
        plan = _PLANS.get(key)
        if plan is not None:
            _PLANS.move_to_end(key)
    if plan is None:
        plan = _grid_plan(cls, rows, cols, sched, line, tile, be.serial_width)
        if plan.n_units <= KEEP_PLAN_UNITS:
            with _PLANS_LOCK:
                _PLANS[key] = plan
                while len(_PLANS) > KEEP_PLANS:
                    _PLANS.popitem(last=False)
    return plan.shared(), backend, why  # the caller sets its backend, figures, chunks on its own


def _tile_pair(tile) -> tuple[int, int]:
    """A tile as the caller gives it: two whole numbers ``(rows, columns)``, else an
    :class:`InputError` naming ``tile`` (a float or a bool was taken, ``(32,)`` a ValueError)."""
    try:
        if isinstance(tile, str | bytes):
            raise TypeError
        bh, tw = whole_numbers(tile)
    except (TypeError, ValueError):
        raise InputError("tile", f"{tile!r}: two whole numbers, (rows, columns)") from None
    return bh, tw


#: grid plans kept for the sweeps of the same class and shape (a batch's or a test's small sweeps:
#: building the plan's arrays was ~20 us of each): the last :data:`KEEP_PLANS` of at most
#: :data:`KEEP_PLAN_UNITS` units, by (class, rows, cols, backend, tile, serial width)
KEEP_PLANS = 32
KEEP_PLAN_UNITS = 1 << 12
_PLANS: OrderedDict = OrderedDict()
_PLANS_LOCK = threading.Lock()


def _grid_plan(cls, rows: int, cols: int, sched: Schedule, line: bool, tile, serial_width: int) -> Plan:
    """:func:`plan_grid`'s plan, before its backend is set on it: by tiles (``tile``, fitted), a
    line, rows swept serially (wavefronts narrower than ``serial_width``) or layers of wavefronts."""
    bits = cls.decision_bits
    if sched.tiled:
        bh, tw = tile
        lay = TileLayout(rows, cols, bh, tw, bits, rpt=-(-bh // 32))
        plan = Plan("tiled", rows, cols, sched, lay, None, lay.num_diagonals, rows * cols)
    elif line:
        plan = _line_plan(rows, cols, sched, bits)
    elif (step := _serial_step(sched, rows, cols, serial_width)) is not None:
        sizes = np.full(rows, cols, dtype=np.int64)
        plan = _layered_plan(
            rows, cols, sched, sizes, np.zeros_like(sizes), sizes, bits, "plain", rows * cols
        )
        plan.kind, plan.serial = "serial", step
    else:
        n = sched.num_wavefronts
        sizes = np.full(n, sched.positions, dtype=np.int64)
        plan = _layered_plan(
            rows, cols, sched, sizes, np.zeros(n, np.int64), sizes, bits, "plain", rows * cols
        )
    return plan


def plan_layered(rec, backend: str, tile, codec=None, reach=None) -> tuple[Plan, str, str]:
    """A layered recurrence's plan, by its layers' sizes and active ranges, with the decision
    ``codec`` and the ``reach`` of :func:`gpudp.sweep` (None: the class's); and the backend."""
    cls = type(rec)
    bits = cls.decision_bits
    n = int(rec.num_layers())
    if n < 0:
        raise InputError("num_layers", f"must be >= 0, got {n}")
    shapes = rec._checked_shapes(n) if cls._two_d() else None
    if shapes is not None:
        sizes = shapes[0] * shapes[1]
    else:
        sizes = np.array([int(rec.layer_size(t)) for t in range(n)], dtype=np.int64)
    if (sizes < 0).any():
        raise InputError("layer_size", "layer sizes must be >= 0")
    lo, hi = rec._checked_active_range(sizes)
    codec = rec._checked_codec(codec)
    if codec == "auto":
        codec = auto_codec(sizes, lo, hi)
    plan = _layered_plan(0, 0, None, sizes, lo, hi, bits, codec, int((hi - lo).sum()))
    plan.reach = rec._checked_reach(n, reach)
    plan.shapes = shapes
    backend, why = backends.choose(backend, plan.cells)
    return plan, backend, why


#: the shapes' planners, by the ``family`` a recurrence's base class names (the rows of
#: :data:`gpudp.engine.SHAPES` name them too)
PLANNERS = {"grid": plan_grid, "layered": plan_layered}


def serial_order(offsets) -> tuple[tuple[int, int], int] | None:
    """The order of a sweep row after row, ``(row step, column step)`` (each +1 or -1), and its
    window, the farthest row back an offset reaches (its ring keeps ``window + 1`` rows); None where
    no such order holds the offsets. Rows in order ``row step`` and, inside a row, columns in order
    ``column step`` compute a cell after each it reads when every offset goes back a row or more
    (``row step * di < 0``) or, in the same row (``di == 0``), back a column (``column step * dj <
    0``)."""
    di = [d for d, _ in offsets]
    rs = 1 if max(di) <= 0 else -1 if min(di) >= 0 else 0
    cs = {-1 if dj > 0 else 1 for d, dj in offsets if d == 0}
    if not rs or len(cs) > 1:
        return None
    return (rs, cs.pop() if cs else 1), max(abs(d) for d in di)


def _serial_step(sched: Schedule, rows: int, cols: int, width: int) -> tuple[int, int] | None:
    """The steps of a serial plan (:func:`serial_order`) for a grid that runs on a backend sweeping
    wavefronts of fewer than ``width`` cells on one thread (:attr:`Backend.serial_width`), where its
    ring of rows is at most ``4 (rows + cols)`` cells or the wavefronts' own; else None (and for a
    schedule by rows, whose layers are the rows already)."""
    order = serial_order(sched.offsets)
    if order is None or sched.tiled or sched.b == 0 or not rows * cols or sched.positions >= width:
        return None  # (an order by rows, b = 0, sweeps a row a layer already)
    step, window = order
    return (
        step if (window + 1) * cols <= max(4 * (rows + cols), (sched.window + 1) * sched.positions) else None
    )


def _line_plan(rows, cols, sched, bits) -> Plan:
    """A grid whose wavefronts hold one cell each (one row on a column order, one column on a row
    order: coin change's ``1 x (amount + 1)``): a *line* of ``n`` cells swept in order, one thread,
    each reading the earlier cells of the line by their position. The units are the groups of 32
    cells along the line, so that a group's decision words are written whole (``bits`` words a
    group, as one layer of ``n`` cells: ``layer_decision(words, 0, c, ...)`` decodes cell ``c``)."""
    n = rows * cols
    sizes = np.full(-(-n // 32), 32, np.int64)
    if n:
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
