"""What a grid or layered sweep returns: a :class:`SweepResult`, its decisions read back one cell at a
time (:meth:`SweepResult.decision`) or walked back along ``back`` by a compiled walker made for the
plan's layout (tiles, a line, layers, the bands codec), family ``engine.walk``."""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from ..cache import jit_generated
from ..checks import probe_back, typing_errors
from ..codegen import data_args, fill, walk_form
from ..errors import ContractError
from ..kernel import KernelFactory
from ..recurrence import Recurrence, bad_step, start_cell
from ..solution import Stats
from ..store import BandStore, DecisionStore, DeviceStore, band_decision, layer_decision, tile_decision
from .plan import Plan

__all__ = ["SweepResult"]


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
    #: swept with checkpoints (:mod:`gpudp.checkpoints`): the values of rows and of columns
    #: ``K - 1, 2K - 1, ...``, one per row of each array, as the backend's kernels wrote them (on
    #: the device for cuda; a record's as one array per field); and the kernels' data
    checkpoints: tuple | None = None
    kernel_data: tuple | None = None
    #: the class the sweep compiled: the recurrence's own, or the subclass that its instance's parts
    #: or changed module constants made (:meth:`~gpudp.recurrence.Recurrence._specialized`), or the
    #: one with its cell in 32 bits (:mod:`gpudp.recurrence.narrow`); its ``back`` walks the
    #: decisions (as the class before the int32 rewrite: the walkers are shared). None: the
    #: recurrence's class
    swept: type | None = None

    def decision(self, *cell) -> int:
        """The decision recorded for one cell: ``(i, j)`` of a grid, ``(t, k)`` of layers, ``(t, i,
        j)`` of 2-D layers."""
        self._need_store()
        if self.plan.shapes is not None:
            return int(_decode_one(self.plan, self.store, *_flat_cell(self.plan, cell)))
        a, b = start_cell(cell, field="cell", role="a cell")
        return int(_decode_one(self.plan, self.store, a, b))

    def traceback(self, start, state=None) -> np.ndarray:
        """Walk ``back`` from ``start`` until leaving the grid (or layer 0), compiled.

        Returns an int64 array of rows ``(i, j, decision)`` (``(t, k, decision)`` for layers,
        ``(t, i, j, decision)`` for 2-D layers), from ``start`` backwards. A recurrence with
        ``traceback_state = True`` starts in ``state`` (an integer, default 0) and gets rows ``(i,
        j, decision, state)``: each cell's state as ``back`` was called with it.

        Raises :class:`ContractError` when the recurrence keeps no decisions (or :meth:`close` let
        them go), defines no ``back``, or ``back`` does not step to an earlier wavefront;
        ``IndexError`` for a start outside.
        """
        return self.walk(start, state)[0]

    def walk(self, start, state=None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`traceback`'s path, and where ``back`` left the grid: ``(i, j)`` or ``(t, k)``,
        and the state there with ``traceback_state``: ``(path, exit)``. What a walk that goes on
        elsewhere needs (a band of a grid swept on another worker, a batch's instance walked in
        parts: :mod:`gpudp.distributed`, :mod:`gpudp.many`)."""
        self._need_store()
        rec = self.swept or type(self.recurrence)
        rec = getattr(rec, "_wide", None) or rec  # back() is the same; the walker too
        if state is not None and not rec.traceback_state:
            raise ContractError(
                f"{rec.__name__}.traceback(start, state=...): the class declares traceback_state = False"
            )
        data = tuple(self.recurrence.data())
        if self.plan.shapes is not None:  # 2-D layers: the walk over layers, one predecessor a cell
            return self._walk_layers(rec, data, start, 1)
        walker = _walker(rec, len(data), self.plan, isinstance(self.store, DeviceStore))
        a, b = start_cell(start)
        d = self.decision(a, b)  # raises IndexError for a start outside the grid / layers
        s0 = (np.int64(0 if state is None else operator.index(state)),) if rec.traceback_state else ()
        probe_back(rec, (a, b), d, data, *s0)  # back's return, in plain Python, before the walk compiles
        lay = self.plan.layout
        maxlen = (self.plan.schedule.num_wavefronts if self.plan.schedule else self.plan.n_units) + 1
        if self.plan.kind == "tiled":
            maxlen = self.plan.rows + self.plan.cols + 1
        params = self.store.params() if self.plan.codec == "bands" else lay.params()
        layered = self.plan.schedule is None and self.plan.kind != "tiled"
        # layers: the cells each computed (its active range), the only ones a step back may reach
        ranges = (np.asarray(self.plan.lo, np.int64), np.asarray(self.plan.hi, np.int64)) if layered else ()
        store = self.store
        paged = isinstance(store, DeviceStore)
        need = np.zeros(2, np.int64)
        pages = (store.have, need, store.page_shift) if paged else ()
        args = (self.plan.rows, self.plan.cols, maxlen, store.words, *ranges, *params, *pages, *data)
        parts = []
        with typing_errors(rec):
            path, out = walker(a, b, *s0, *args)
            while out[-1] == _PAGE_MISSED:  # a device store's page the host lacks: pulled, then on
                parts.append(path.copy())  # (its rows only: the walk's buffer holds a row a layer)
                store.ensure(need[0], need[1])
                a, b, s0 = out[0], out[1], (out[2],) if rec.traceback_state else ()
                path, out = walker(a, b, *s0, *args)
        if parts:
            path = np.concatenate([*parts, path])
        if out[-1]:  # the walk stopped on a step back may not take
            _bad_step(rec, self.plan, path, out)
        return path, out[:-1]

    def traceback_tree(self, start) -> np.ndarray:
        """Walk a layered recurrence's ``back`` that returns two predecessors, a tree, compiled with
        an explicit stack: from ``start``, ``(t, k)`` (``(t, i, j)`` for 2-D layers), an int64 array of
        rows ``(t, k, decision)`` (``(t, i, j, decision)``) in preorder: a cell, its first
        predecessor's subtree, then its second's.

        ``back(t, k, decision, *data)`` then returns ``(t1, k1, t2, k2)`` (2-D layers: ``(t1, i1, j1,
        t2, i2, j2)``); a predecessor with ``t = -1`` is absent (a leaf returns two absent ones).
        Floyd-Warshall's shortest path through ``k`` is the tree ``path(u, k) + path(k, v)`` of the
        layer before (examples/floyd_warshall.py).

        Raises :class:`ContractError` when no decisions were kept, ``back`` is missing, returns
        another form, or a predecessor that is not on an earlier layer or lies outside that layer's
        cells (its shape, its active range), or when the tree holds more cells than the sweep
        computed (a predecessor met twice: the tree repeats itself); :class:`InputError` for a
        malformed ``start``, ``IndexError`` for one outside the layers.

        Example::

            res = sweep(FloydWarshall(w), backend="cpu")
            rows = res.traceback_tree((n, u, v))  # (t, i, j, decision), preorder
        """
        self._need_store()
        plan = self.plan
        rec = self.swept or type(self.recurrence)
        if plan.schedule is not None or plan.kind != "layered":
            raise ContractError(
                f"{rec.__name__}.traceback_tree: a walk that splits is offered for layered recurrences; "
                "a grid's back returns one predecessor (traceback)"
            )
        return self._walk_layers(rec, tuple(self.recurrence.data()), start, 2)[0]

    def _walk_layers(self, rec, data, start, kids: int) -> tuple[np.ndarray, np.ndarray]:
        """The compiled walk over layers (:func:`_tree_walker`) from ``start``: ``(path, exit)``; a
        chain (``kids = 1``: a 2-D layers' :meth:`walk`) or a tree (``kids = 2``)."""
        plan = self.plan
        cell = start_cell(start, rec._INDEX)
        d = self.decision(*cell)  # IndexError for a start outside the layers
        probe_back(rec, cell, d, data, returns=_tree_returns(rec) if kids == 2 else None)
        lo, hi = (np.asarray(x, np.int64) for x in (plan.lo, plan.hi))
        lr, lc = plan.shapes if plan.shapes is not None else (lo, lo)
        params = self.store.params() if plan.codec == "bands" else plan.layout.params()
        walker = _tree_walker(rec, len(data), plan, kids)
        cap = max(int(plan.cells), 1)
        words = self.store.ensure_all() if isinstance(self.store, DeviceStore) else self.store.words
        args = (cap, plan.n_units, words, lo, hi, lr, lc, *params, *data)
        with typing_errors(rec):
            path, err, out = walker(*cell, *args)
        if err == 1:
            raise layer_step_error(rec, plan, path[-1], out)
        if err == 2:
            raise ContractError(
                f"{rec.__name__}.back(): the tree from {cell} met more than {cap} cells, all that the "
                "sweep computed: it repeats cells (a predecessor reached twice), so it is no tree of "
                "distinct subproblems"
            )
        return path, out

    def _need_store(self):
        if self.store is None and type(self.recurrence).decision_bits:
            raise ContractError(
                f"{type(self.recurrence).__name__} was swept with traceback=False: no decisions were kept"
            )
        if self.store is None:
            raise ContractError(
                f"{type(self.recurrence).__name__} declares decision_bits = 0: there is nothing to trace back"
            )
        if self.store.words is None:
            name = type(self.recurrence).__name__
            raise ContractError(f"{name}'s result was closed: its decisions are gone")

    def close(self):
        if self.store is not None:
            self.store.close()


def _flat_cell(plan: Plan, cell) -> tuple[int, int]:
    """A 2-D layer's cell ``(t, i, j)`` as the layer's flat cell ``(t, i * cols + j)``; IndexError
    for one outside its layer's shape."""
    t, i, j = start_cell(cell, ("t", "i", "j"), "cell", "a cell")
    rows, cols = plan.shapes
    if not (0 <= t < plan.n_units and 0 <= i < rows[t] and 0 <= j < cols[t]):
        raise IndexError(f"cell ({t}, {i}, {j}) outside the layers")
    return t, i * int(cols[t]) + j


def _tree_returns(rec_cls) -> tuple[str, ...]:
    """What a splitting ``back`` returns: two predecessors' coordinates (``t1, k1, t2, k2``)."""
    return tuple(f"{a}{m}" for m in (1, 2) for a in rec_cls._INDEX)


def layer_step_error(rec_cls, plan: Plan, row, to) -> ContractError:
    """The error for ``back`` at ``row`` (the cell and its decision, as a walk recorded it)
    stepping to ``to``: a cell not on an earlier layer, or outside that layer's cells (2-D: its
    shape; 1-D: its active range)."""
    m = len(rec_cls._INDEX)
    cell, d = tuple(int(x) for x in row[:m]), int(row[m])
    to = tuple(int(x) for x in to[:m])
    t, t2 = cell[0], to[0]
    if t2 >= t:
        why = f"layer {t2} is not earlier than layer {t}"
    elif plan.shapes is not None:
        why = f"layer {t2} has {int(plan.shapes[0][t2])} x {int(plan.shapes[1][t2])} cells"
    else:
        lo, hi, size = int(plan.lo[t2]), int(plan.hi[t2]), int(plan.sizes[t2])
        why = (
            f"layer {t2} has cells 0 .. {size - 1}"
            if (lo, hi) == (0, size)
            else f"layer {t2} computed only its active range, cells {lo} .. {hi - 1} (active_range()), "
            "and no decision is kept for the others"
        )
    form = ", ".join(f"{a}2" for a in rec_cls._INDEX)
    return ContractError(
        f"{rec_cls.__name__}.back({', '.join(map(str, cell))}, {d}) returned {to}: {why}; back must "
        f"return a cell ({form}) of an earlier layer, t2 < t, inside it, or t2 = -1 to end the walk"
    )


def _decode_one(plan: Plan, store, a: int, b: int) -> int:
    if isinstance(store, DeviceStore):  # only layers' stores stay on the device
        if not (0 <= a < plan.n_units and 0 <= b < plan.sizes[a]):
            raise IndexError(f"cell ({a}, {b}) outside the layers")
        w = int(plan.layout.woff[a]) + (b // 32) * plan.bits
        store.ensure(w, w + plan.bits - 1)
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
        if plan.kind == "serial":  # a row a layer
            return layer_decision(words, a, b, *plan.layout.params())
        t = s.a * a + s.b * b - s.t_min
        return layer_decision(words, t, a if s.by_row_index else b, *plan.layout.params())
    if not (0 <= a < plan.n_units and 0 <= b < plan.sizes[a]):
        raise IndexError(f"cell ({a}, {b}) outside the layers")
    if plan.codec == "bands":
        return band_decision(words, a, b, *store.params())
    return layer_decision(words, a, b, *plan.layout.params())


_WALKERS = KernelFactory("engine.walk", "rec", "n_data", "kind", "deps", "codec", "bits", "paged")

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
def walk(t, k{s0}, R, C, maxlen, words, LO, HI{lp}{pg}{da}):
    path = np.empty((maxlen, {width}), np.int64)
    n = 0
    L = maxlen - 1
    while t >= 0 and t < L:
        {pull}
        d = {decode}
        path[n, 0] = t
        path[n, 1] = k
        path[n, 2] = d
        {rec}
        n += 1
        {step}
        if t2 >= t or (t2 >= 0 and (k2 < LO[t2] or k2 >= HI[t2])):  # the caller names it (_bad_step)
            return path[:n], np.array([{exit2}, 1], np.int64)
        t = t2
        k = k2
    return path[:n], np.array([{exit}, 0], np.int64)
"""


#: a walk's exit flag: the page of a device store that the host lacks (``need``: its words); pulled
#: (:meth:`gpudp.store.DeviceStore.ensure`), the walk goes on from the cell it returned
_PAGE_MISSED = 2

# A layered walk over a device store (:class:`gpudp.store.DeviceStore`) first checks the pages of
# the cell's ``BITS`` words, and returns at the cell when the host lacks one
_PULL = """
w0 = woff[t] + (k // 32) * BITS
for p in range(w0 >> page, ((w0 + BITS - 1) >> page) + 1):
    if not have[p]:
        need[0] = w0
        need[1] = w0 + BITS - 1
        return path[:n], np.array([{exit}, 2], np.int64)
"""


# The walk over layers of a back with ``KIDS`` predecessors a cell (2: a tree, walked depth first in
# preorder with an explicit stack; 1: a chain, the 2-D layers' traceback). A predecessor lies on a
# strictly earlier layer, so the stack holds at most one pending second predecessor per layer: L + 2
# entries. err 0: done (``out``: the last absent predecessor, where a chain left the layers); 1: a
# bad step from path's last row to ``out``; 2: more than ``cap`` cells (the tree repeats cells)
_TREE_WALK = """
def walk({start}, cap, L, words, LO, HI, LR, LC{lp}{da}):
    path = np.empty((64, {width}), np.int64)
    stack = np.empty((L + 2, {m}), np.int64)
    out = np.full({m}, -1, np.int64)
    {push_start}
    top = 1
    n = 0
    while top > 0:
        top -= 1
        {pop}
        if n == cap:
            return path[:n], 2, out
        if n == path.shape[0]:
            grown = np.empty((min(2 * n, cap), {width}), np.int64)
            for q in range(n):  # (a loop: a slice copy compiles numba's shape checks, seconds)
                for c in range({width}):
                    grown[q, c] = path[q, c]
            path = grown
        k = {flat}
        d = {decode}
        {record}
        path[n, {m}] = d
        n += 1
        {children} = back({cell}, d{da})
        for c in range(KIDS):  # the second first: the stack pops the first one next
            {pick}
            {keep_out}
            if c0 < 0:
                continue  # absent
            if c0 >= t or {outside}:
                return path[:n], 1, out
            {push}
            top += 1
    return path[:n], 0, out
"""


def _tree_walker(rec_cls, n_data: int, plan: Plan, kids: int = 2):
    """The compiled walk of :meth:`SweepResult.traceback_tree` (``kids = 2``), or of a 2-D layers'
    :meth:`SweepResult.traceback` (``kids = 1``), for the plan's layers (1-D or 2-D) and codec:
    ``walk(*start, cap, L, words, LO, HI, LR, LC, *codec params, *data) -> (path, err, out)``."""
    from ..jit import njit

    kind = "tree" if kids == 2 else "chain"
    k = _WALKERS.lookup(
        rec=rec_cls, n_data=n_data, kind=kind, deps=None, codec=plan.codec, bits=plan.bits, paged=False
    )
    if k.ready:
        return k.fn
    returns = _tree_returns(rec_cls) if kids == 2 else rec_cls._back_returns()
    _need_back(rec_cls, f"back({', '.join(rec_cls._INDEX)}, decision, *data) -> ({', '.join(returns)})")
    names = rec_cls._INDEX  # ("t", "k") or ("t", "i", "j")
    m = len(names)
    lines = lambda f: "\n".join(f(x, a) for x, a in enumerate(names))  # noqa: E731
    if kids == 2:
        pick = lines(lambda x, a: f"c{x} = np.int64({a}2) if c == 0 else np.int64({a}1)")
    else:
        pick = lines(lambda x, a: f"c{x} = np.int64({a}2)")
    if m == 3:
        outside = "c1 < 0 or c1 >= LR[c0] or c2 < 0 or c2 >= LC[c0]"
    else:
        outside = "c1 < LO[c0] or c1 >= HI[c0]"
    lp, decode = _decoder(plan.codec)
    src = fill(
        _TREE_WALK,
        start=", ".join(f"{a}0" for a in names),
        width=m + 1,
        m=m,
        push_start=lines(lambda x, a: f"stack[0, {x}] = {a}0"),
        pop=lines(lambda x, a: f"{a} = stack[top, {x}]"),
        flat="i * LC[t] + j" if m == 3 else "k",
        decode=decode,
        record=lines(lambda x, a: f"path[n, {x}] = {a}"),
        children=", ".join(returns),
        cell=", ".join(names),
        pick=pick,
        outside=outside,
        keep_out=lines(lambda x, a: f"out[{x}] = c{x}"),
        push=lines(lambda x, a: f"stack[top, {x}] = c{x}"),
        lp=lp,
        da=data_args(n_data),
    )
    ns = {"np": np, "back": njit(rec_cls.back), "BITS": plan.bits, "KIDS": kids}
    ns.update(layer_decision=layer_decision, band_decision=band_decision)
    return k.keep(jit_generated(src, "walk", ns, njit, "cpu")).fn


def _need_back(rec_cls, form: str) -> None:
    """A :class:`ContractError` when the class defines no ``back`` (``form``: how to define it)."""
    if not hasattr(rec_cls, "back"):
        raise ContractError(
            f"{rec_cls.__name__} defines no back(...): its decisions cannot be traced back; define "
            f"{form} as a @staticmethod"
        )


def _decoder(codec: str) -> tuple[str, str]:
    """A layered walk's codec parameters and its decision of the layer's flat cell ``k``."""
    if codec == "bands":
        bands = ", lo, hi, lead_n, band_n, band_off, lead_w, trail_w"
        return bands + ", bits", f"band_decision(words, t, k{bands}, BITS)"
    return ", woff, bits", "layer_decision(words, t, k, woff, BITS)"


def _bad_step(rec_cls, plan: Plan, path: np.ndarray, out: np.ndarray) -> None:
    """:func:`gpudp.recurrence.bad_step` for a walk of ``plan`` (layers: their sizes and active
    ranges)."""
    layers = plan.schedule is None and plan.kind != "tiled"
    bad_step(rec_cls, path, out, (plan.sizes, plan.lo, plan.hi) if layers else None)


def _walker(rec_cls, n_data: int, plan: Plan, paged: bool = False):
    """The compiled walk of ``plan``'s decisions; ``paged``: over a device store's host pages (a
    layered plan's: :data:`_PULL`)."""
    import numba

    from ..jit import njit

    s = plan.schedule
    # what the walk's source reads of the order: the tiled and serial walks its a and b (the
    # earlier-wavefront check) only, so grids of either orientation share them
    deps = s and ((s.a, s.b) if plan.kind in ("tiled", "serial") else s.key)
    k = _WALKERS.lookup(
        rec=rec_cls, n_data=n_data, kind=plan.kind, deps=deps, codec=plan.codec, bits=plan.bits, paged=paged
    )
    if k.ready:
        return k.fn
    _need_back(rec_cls, rec_cls._form("back", n_data))
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
    pages = {"pg": "", "pull": ""}
    if paged:
        pages = {"pg": ", have, need, page", "pull": fill(_PULL, exit=form["exit"])}
    if s is None and plan.codec == "bands":
        bands = ", lo, hi, lead_n, band_n, band_off, lead_w, trail_w"
        src = fill(
            _LAYER_WALK,
            cls=rec_cls.__name__,
            lp=bands + ", bits",
            da=da,
            decode=f"band_decision(words, t, k{bands}, BITS)",
            **form,
            **pages,
        )
    elif s is None:
        src = fill(
            _LAYER_WALK,
            cls=rec_cls.__name__,
            lp=", woff, bits",
            da=da,
            decode="layer_decision(words, t, k, woff, BITS)",
            **form,
            **pages,
        )
    elif plan.kind in ("line", "serial"):  # a line's cells, or a row a layer
        at = "i, j" if plan.kind == "serial" else f"0, {'j' if s.by_row_index else 'i'}"
        src = fill(
            _GRID_WALK,
            cls=rec_cls.__name__,
            lp=", woff, bits",
            da=da,
            decode=f"layer_decision(words, {at}, woff, BITS)",
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
