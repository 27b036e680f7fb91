"""The wavefront engine: plan a sweep, run it on a backend, keep the decisions, walk them back.

``sweep(recurrence)`` is the one entry point. It derives the schedule from the recurrence's
declared window, picks the layout (tiled for unit windows, layered otherwise), sizes the decision
store against the memory budget (spilling to disk beyond it), runs the backend's generated kernels
over groups of wavefronts ("chunks") so that each finished chunk can be evicted while the next one
computes, reports progress, and returns a :class:`SweepResult` holding the last row and column (or
the last layer), the decision store, statistics, and ``traceback()``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from . import backends
from .cache import jit_generated
from .codegen import data_args
from .errors import ContractError, InputError
from .recurrence import GridRecurrence, LayeredRecurrence, Recurrence
from .schedule import Schedule, derive
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

#: default tile (rows, columns) per backend for unit-window grids
DEFAULT_TILE = {"cpu": (256, 512), "cuda": (256, 256)}
#: a chunk (unit of eviction and progress) is about this many cells on the CPU
CPU_CHUNK_CELLS = 1 << 22


@dataclass
class Plan:
    """What the backend runs: the layout, and the units (diagonals / layers) grouped in chunks."""

    kind: str  # "tiled" | "layered"
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

    def unit_cells(self, u0: int, u1: int) -> int:
        if self.kind == "layered":
            return int((self.hi[u0:u1] - self.lo[u0:u1]).sum())
        lay = self.layout
        return int(lay.diag_off[u1] - lay.diag_off[u0]) * lay.bh * lay.tw

    def make_chunks(self, max_words: int, max_cells: int):
        """Group consecutive units so that each chunk's decisions fit ``max_words`` words."""
        lay = self.layout
        if self.kind == "layered":
            self.chunks = _greedy_chunks(lay.woff, _cumulative(self.hi - self.lo), max_words, max_cells)
            return
        self.chunks = []
        u0 = 0
        while u0 < self.n_units:
            u1 = u0 + 1
            while u1 < self.n_units:
                w0, w1 = lay.words_of(u0, u1 + 1)
                if w1 - w0 > max_words or self.unit_cells(u0, u1 + 1) > max_cells:
                    break
                u1 += 1
            self.chunks.append((u0, u1))
            u0 = u1


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

    def decision(self, *cell) -> int:
        """The decision recorded for one cell: ``(i, j)`` of a grid or ``(t, k)`` of layers."""
        self._need_store()
        a, b = (int(x) for x in cell)
        return int(_decode_one(self.plan, self.store, a, b))

    def traceback(self, start) -> np.ndarray:
        """Walk ``back`` from ``start`` until leaving the grid (or layer 0).

        Returns an int64 array of rows ``(i, j, decision)`` (``(t, k, decision)`` for layers),
        from ``start`` backwards.
        """
        self._need_store()
        rec = type(self.recurrence)
        data = tuple(self.recurrence.data())
        walker = _walker(rec, len(data), self.plan)
        a, b = (int(x) for x in start)
        self.decision(a, b)  # raises IndexError for a start outside the grid / layers
        lay = self.plan.layout
        maxlen = (self.plan.schedule.num_wavefronts if self.plan.schedule else self.plan.n_units) + 1
        if self.plan.kind == "tiled":
            maxlen = self.plan.rows + self.plan.cols + 1
        params = self.store.params() if self.plan.codec == "bands" else lay.params()
        return walker(a, b, self.plan.rows, self.plan.cols, maxlen, self.store.words, *params, *data)

    def _need_store(self):
        if self.store is None:
            raise ContractError(
                f"{type(self.recurrence).__name__} declares decision_bits = 0: there is nothing to trace back"
            )

    def close(self):
        if self.store is not None:
            self.store.close()


def plan_sweep(rec: Recurrence, backend: str = "auto", tile=None) -> Plan:
    """The plan of a sweep: layout, chunks, cells, and the backend (``auto`` picks one from the
    cells, see :func:`gpudp.backends.choose`)."""
    cls = type(rec)
    cls._validate_class()
    bits = cls.decision_bits
    if isinstance(rec, GridRecurrence):
        rows, cols = rec._checked_shape()
        sched = derive(cls.offsets, rows, cols)
        backend, why = backends.choose(backend, rows * cols)
        if sched.tiled:
            bh, tw = tile or _fit_tile(DEFAULT_TILE[backend], rows, cols, backend)
            if tw % 32 or bh < 1 or (backend == "cuda" and bh % 32):
                raise InputError("tile", f"tile {tile}: columns must be a multiple of 32 (rows too on cuda)")
            lay = TileLayout(rows, cols, bh, tw, bits, rpt=-(-bh // 32))
            plan = Plan("tiled", rows, cols, sched, lay, None, lay.num_diagonals, rows * cols)
        else:
            n = sched.num_wavefronts
            sizes = np.full(n, sched.positions, dtype=np.int64)
            plan = _layered_plan(
                rows, cols, sched, sizes, np.zeros(n, np.int64), sizes, bits, "plain", rows * cols
            )
    elif isinstance(rec, LayeredRecurrence):
        n = int(rec.num_layers())
        if n < 0:
            raise InputError("num_layers", f"must be >= 0, got {n}")
        sizes = np.array([int(rec.layer_size(t)) for t in range(n)], dtype=np.int64)
        if (sizes < 0).any():
            raise InputError("layer_size", "layer sizes must be >= 0")
        lo, hi = rec._checked_active_range(sizes)
        codec = cls.decision_codec if bits else "plain"
        plan = _layered_plan(0, 0, None, sizes, lo, hi, bits, codec, int((hi - lo).sum()))
        plan.reach = rec._checked_reach(n)
        backend, why = backends.choose(backend, plan.cells)
    else:
        raise ContractError(f"{type(rec).__name__} is neither a GridRecurrence nor a LayeredRecurrence")
    plan.backend, plan.choice = backend, why
    return plan


def _layered_plan(rows, cols, sched, sizes, lo, hi, bits, codec, cells) -> Plan:
    """A layered plan: which groups of 32 cells each layer's kernel covers, and the word layout."""
    first = lo // 32
    active = np.where(hi > lo, -(-hi // 32) - first, 0)
    if codec == "plain" and bits:
        g0, gn = np.zeros_like(sizes), (sizes + 31) // 32  # whole layers: zeros outside the range
        lay = LayerLayout(sizes, bits)
    else:
        g0, gn = first, active
        lay = LayerLayout(active * 32, bits)
    n = len(sizes)
    return Plan("layered", rows, cols, sched, lay, sizes, n, cells, lo=lo, hi=hi, g0=g0, gn=gn, codec=codec)


def _fit_tile(tile, rows: int, cols: int, backend: str) -> tuple[int, int]:
    """Shrink the default tile to a small grid, so that the decision store is not mostly padding.

    On the CPU the tile is a runtime argument of the one compiled sweep, so it fits the grid
    exactly. On CUDA it is a compile-time constant of the kernel (a lane's rows are unrolled), so it
    is rounded up to a power of two (rows 32..256, columns 32..256): at most 16 kernels a
    recurrence, each compiled once per machine (:mod:`gpudp.cache`), instead of one per shape."""
    bh, tw = tile
    if backend == "cuda":
        return min(bh, max(32, _pow2(rows))), min(tw, max(32, _pow2(cols)))
    return min(bh, max(1, rows)), min(tw, max(32, -(-cols // 32) * 32))


def _pow2(x: int) -> int:
    return 1 << max(int(x) - 1, 0).bit_length()


def sweep(
    rec: Recurrence,
    backend: str = "auto",
    memory_budget=None,
    progress: bool | None = None,
    tile: tuple[int, int] | None = None,
) -> SweepResult:
    """Run the recurrence to the end; keep its decisions (if any) for the traceback.

    backend:       ``auto`` (the CPU for sweeps it finishes before the GPU could start, else cuda
                   when a GPU is usable), ``cpu`` or ``cuda``.
    memory_budget: host bytes the decision store may take before it spills to a disk memmap
                   (int or text like ``"8G"``; default: GPUDP_MEMORY_BUDGET or half of free RAM).
    progress:      a progress bar on stderr for sweeps longer than about a second; None = only
                   when stderr is a terminal.
    tile:          ``(rows, cols)`` of the tiles of a tiled grid sweep (tuning; see docs).
    """
    t_start = time.perf_counter()
    plan = plan_sweep(rec, backend, tile)
    backend = plan.backend
    data = tuple(_as_data(x) for x in rec._validate_instance())
    if isinstance(rec, GridRecurrence) and type(rec).symbols:
        data = (*_symbols(rec, plan), *data)
    bits = type(rec).decision_bits
    if bits:  # the decision-overflow flag, last of the kernels' data (see codegen.n_flags)
        data = (*data, np.zeros(4, np.int64))
    store = None
    if bits:
        allocate = None
        if backend == "cuda":
            from .backends import cuda as cuda_backend

            allocate = cuda_backend.pinned_words
        if plan.codec == "bands":
            full = LayerLayout(plan.sizes, bits).n_words
            store = BandStore(plan.lo, plan.hi, bits, memory_budget, full_words=full)
        else:
            store = DecisionStore(plan.layout.n_words, memory_budget, allocate=allocate)
    stats = Stats(backend=backend, device=backends.device_name(backend), cells=plan.cells)
    stats.extra["schedule"] = plan.schedule.kind() if plan.schedule else "layers"
    stats.extra["decision_store_bytes"] = store.nbytes if store else 0
    stats.extra["decision_codec"] = plan.codec
    stats.extra["backend_choice"] = plan.choice
    if backend == "cuda":
        from .backends import cuda as runner
    else:
        from .backends import cpu as runner
    bar = _progress_bar(plan.cells, progress)
    try:
        out = runner.run_plan(plan, rec, data, store, stats, bar)
    except BaseException:
        if store is not None:
            store.close()
        raise
    finally:
        if bar is not None:
            bar.close()
    if bits and data[-1][0]:
        store.close()
        count, d, a, b = (int(x) for x in data[-1])
        where = "layer t, cell k" if plan.schedule is None and plan.kind == "layered" else "cell i, j"
        raise ContractError(
            f"{type(rec).__name__}.cell returned the decision {d} at ({where}) = ({a}, {b}), which does "
            f"not fit decision_bits = {bits} (0 .. {(1 << bits) - 1}; cells seen doing so: {count}). Declare "
            "more decision_bits: decisions are never truncated"
        )
    if isinstance(rec, GridRecurrence) and plan.cells == 0:
        empty = np.zeros(0, dtype=type(rec).value_dtype)
        out["last_row"], out["last_col"] = empty, empty.copy()
    stats.seconds = time.perf_counter() - t_start
    stats.bytes_evicted = store.nbytes if store else 0
    stats.spilled_to_disk = bool(store and store.on_disk)
    if plan.codec == "bands":
        stats.extra["decision_store_bytes"] = store.nbytes
        stats.extra["uncompressed_bytes"] = store.full_words * 4
        stats.extra["compression"] = store.nbytes / max(store.full_words * 4, 1)
    return SweepResult(rec, plan, store, stats, **out)


def _symbols(rec, plan) -> tuple[np.ndarray, np.ndarray]:
    """The row and column symbols of a recurrence that declares them, checked against its shape."""
    out = []
    for name, want in (("row_symbols", plan.rows), ("col_symbols", plan.cols)):
        arr = np.ascontiguousarray(getattr(rec, name)())
        if arr.ndim != 1 or len(arr) != want:
            raise ContractError(
                f"{type(rec).__name__}.{name}() must be 1-D of length {want}, got shape {arr.shape}"
            )
        if want == 0:  # kernels index symbols even for empty grids' padding: give them one value
            arr = np.zeros(1, dtype=arr.dtype)
        # GPU shuffles move 32- and 64-bit values: every backend sees symbols widened alike
        if arr.dtype.kind in "iub" and arr.dtype.itemsize < 4:
            arr = arr.astype(np.int32)
        elif arr.dtype == np.uint32:
            arr = arr.astype(np.int64)
        elif arr.dtype.kind == "f" and arr.dtype.itemsize < 4:
            arr = arr.astype(np.float32)
        out.append(arr)
    return out[0], out[1]


def _as_data(x):
    if isinstance(x, np.ndarray):
        return np.ascontiguousarray(x)
    return x


def _progress_bar(total: int, progress):
    if progress is False or total == 0:
        return None
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        unit="cell",
        unit_scale=True,
        delay=1.0,
        disable=None if progress is None else False,
        desc="gpudp",
        leave=False,
    )


def _decode_one(plan: Plan, store, a: int, b: int) -> int:
    words = store.words
    if plan.kind == "tiled":
        if not (0 <= a < plan.rows and 0 <= b < plan.cols):
            raise IndexError(f"cell ({a}, {b}) outside the {plan.rows} x {plan.cols} grid")
        return tile_decision(words, a, b, *plan.layout.params())
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


_WALKERS: dict = {}

_GRID_WALK = """
def walk(i, j, R, C, maxlen, words{lp}{da}):
    path = np.empty((maxlen, 3), np.int64)
    n = 0
    while i >= 0 and i < R and j >= 0 and j < C:
        if n >= maxlen:
            raise ContractError("{cls}.back() walked in a loop: it must step to one of the dependencies")
        d = {decode}
        path[n, 0] = i
        path[n, 1] = j
        path[n, 2] = d
        n += 1
        i2, j2 = back(i, j, d{da})
        if A * i2 + B * j2 >= A * i + B * j:
            raise ContractError("{cls}.back() returned a cell that is not on an earlier wavefront")
        i = i2
        j = j2
    return path[:n]
"""

_LAYER_WALK = """
def walk(t, k, R, C, maxlen, words{lp}{da}):
    path = np.empty((maxlen, 3), np.int64)
    n = 0
    L = maxlen - 1
    while t >= 0 and t < L:
        d = {decode}
        path[n, 0] = t
        path[n, 1] = k
        path[n, 2] = d
        n += 1
        t2, k2 = back(t, k, d{da})
        if t2 >= t:
            raise ContractError("{cls}.back() must return a cell (t2, k2) of an earlier layer, t2 < t")
        t = t2
        k = k2
    return path[:n]
"""


def _walker(rec_cls, n_data: int, plan: Plan):
    import numba

    from .backends.cpu import njit

    s = plan.schedule
    key = (rec_cls, n_data, plan.kind, s and (s.a, s.b), plan.codec)
    if key in _WALKERS:
        return _WALKERS[key]
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
    }
    da = data_args(n_data)
    if s is None and plan.codec == "bands":
        lp = ", lo, hi, lead_n, band_n, band_off, lead_w, trail_w, bits"
        src = _LAYER_WALK.format(cls=rec_cls.__name__, lp=lp, da=da, decode=f"band_decision(words, t, k{lp})")
    elif s is None:
        src = _LAYER_WALK.format(
            cls=rec_cls.__name__, lp=", woff, bits", da=da, decode="layer_decision(words, t, k, woff, bits)"
        )
    elif plan.kind == "tiled":
        src = _GRID_WALK.format(
            cls=rec_cls.__name__,
            lp=", bh, tw, ni, nj, bits, diag_off, rpt",
            da=da,
            decode="tile_decision(words, i, j, bh, tw, ni, nj, bits, diag_off, rpt)",
        )
    else:
        slot = "i" if s.by_row_index else "j"
        src = _GRID_WALK.format(
            cls=rec_cls.__name__,
            lp=", woff, bits",
            da=da,
            decode="layer_decision(words, A * i + B * j - min(0, A * (R - 1)) - min(0, B * (C - 1)), "
            f"{slot}, woff, bits)",
        )
    if s is not None:
        ns.update(A=s.a, B=s.b)
    fn = jit_generated(src, "walk", ns, njit, "cpu")
    _WALKERS[key] = fn
    return fn
