"""Many instances of one grid recurrence in one call: :func:`sweep_many`.

Where :func:`gpudp.sweep` plans, launches and stores once per instance (milliseconds each), a
batch checks and packs every instance's data once (:mod:`gpudp.many.intake`), sweeps them all with
one generated kernel per chunk of instances (:mod:`gpudp.many.cpu`: a ``prange`` iteration a
thread, each instance swept row by row by one thread; :mod:`gpudp.many.cuda`: a thread block an
instance, an anti-diagonal wavefront inside the block) and walks every instance's decisions back
with one compiled, parallel walker per chunk. Instances of more than :data:`MAX_BATCH_CELLS` cells
go to :func:`gpudp.sweep` one by one. The kernels are built from the engine's own pieces (the cell
wrapper of :func:`gpudp.codegen.tile_cell_source`, the backends' ``cell_namespace``, the disk
cache of :func:`gpudp.cache.jit_generated`), so the values, decisions, reductions and paths are
those of :func:`gpudp.sweep`, instance by instance.

A chunk's decisions are one unsigned integer a cell (the smallest of uint8, uint16, uint32 that
holds ``decision_bits``), instance after instance; chunks are cut so that their decisions stay
within the memory budget (and, on the GPU, a share of the free device memory), and each chunk's
decisions are dropped once its instances are walked.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .. import lowering
from ..backends import choose as choose_backend
from ..backends import device_name
from ..checked import wanted
from ..checks import probe_back, typing_errors
from ..codegen import NO_CELL, decision_dtype, spec_of
from ..engine import check_pass, sweep
from ..errors import ContractError, InputError, decision_overflow
from ..grid.wide import wide_instance, widens
from ..memory import default_budget, gc_paused, parse_bytes
from ..progress import progress_bar
from ..recurrence import values_only
from ..recurrence.narrow import magnitude
from ..recurrence.narrow import prepare as narrow_cell
from ..schedule import derive
from ..solution import Stats
from .chunks import Chunk, cut, user_values
from .intake import intake
from .items import ManyItem
from .pairs import intake_pairs
from .source import path_width

__all__ = ["MAX_BATCH_CELLS", "ManyItem", "ManyResult", "sweep_many"]

#: instances of more cells than this are handed to :func:`gpudp.sweep` one by one (its tiled
#: kernels spread one grid over every core or the whole GPU)
MAX_BATCH_CELLS = 1 << 22
#: cells of one chunk at most (the progress bar moves, and Ctrl-C is seen, between chunks), where the
#: backend's runner sets no ``chunk_cells`` of its own
CHUNK_CELLS = 1 << 27

#: the batch kernels on each backend, a module with ``Runner`` (the walks run on the host for both:
#: :func:`gpudp.many.cpu.walker`)
lowering.declare("many", cpu="gpudp.many.cpu", cuda="gpudp.many.cuda")
lowering.declare("many_intervals", cpu="gpudp.many.intervals.cpu", cuda="gpudp.many.intervals.cuda")


class _Block:
    """The items of one values-only chunk, kept as the chunk's arrays (ids, shapes, values, edge
    offsets, a reduction's best cells) and made into :class:`ManyItem` objects only when read.
    ``edges()`` gives the chunk's last rows and columns on the host (on the GPU they stay in device
    memory until then: see :mod:`gpudp.many.cuda`)."""

    def __init__(self, chunk: Chunk, values: np.ndarray, edges: Callable, red):
        self.ids, self.rows, self.cols = chunk.ids, chunk.rows, chunk.cols
        self.lroff, self.lcoff = chunk.lroff, chunk.lcoff
        self.values, self._edges, self.red = values, edges, red

    def item(self, k: int, q: int) -> ManyItem:
        lr, lc = self._edges()
        R, C, a, b = int(self.rows[q]), int(self.cols[q]), int(self.lroff[q]), int(self.lcoff[q])
        it = ManyItem(k, (R, C), self.values[q], lr[a : a + C], lc[b : b + R])
        if self.red is not None and self.red[0][q]:
            it.best_value, it.best_cell = self.red[1][q].item(), (int(self.red[2][q]), int(self.red[3][q]))
        return it


class Items(Sequence):
    """A batch's :class:`ManyItem` objects in input order, each made when first read: 100,000
    instances' objects cost about 0.25 s of Python, more than their GPU kernels, and a caller that
    reads only :attr:`ManyResult.values` needs none of them. Indexing (also by slices), ``len`` and
    iteration as a list's."""

    def __init__(self, count: int):
        self._made: list = [None] * count
        self._block = np.full(count, -1, np.int64)  # the _Block that holds an instance not yet made
        self._at = np.zeros(count, np.int64)  # its row in that block
        self._blocks: list[_Block] = []
        self._set: set[int] = set()  # the instances given as items (errors, empty grids, paths)

    def __len__(self) -> int:
        return len(self._made)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(len(self)))]
        it = self._made[k]
        if it is None:
            k = operator.index(k) % len(self)
            b = int(self._block[k])
            if b >= 0:
                it = self._made[k] = self._blocks[b].item(k, int(self._at[k]))
        return it

    def __setitem__(self, k: int, item: ManyItem) -> None:
        k = operator.index(k) % len(self)
        self._made[k] = item
        self._block[k] = -1
        self._set.add(k)

    def __iter__(self):
        return (self[k] for k in range(len(self)))

    def add(self, block: _Block) -> None:
        """Instances ``block.ids`` held by ``block`` until read."""
        self._block[block.ids] = len(self._blocks)
        self._at[block.ids] = np.arange(len(block.ids))
        self._blocks.append(block)

    def _column(self, name: str, block_column) -> list:
        """Every instance's ``name`` as a Python number (a record's value: a tuple; None where it has
        none): the blocks' arrays (``block_column(block)``, None: no such values) scattered in
        input order, then the items given one by one."""
        cols = [(b, block_column(b)) for b in self._blocks]
        dts = {v.dtype for _, v in cols if v is not None}
        plain = len(dts) == 1 and next(iter(dts)).kind != "O" and all(v is not None for _, v in cols)
        if plain and not self._set and sum(len(b.ids) for b in self._blocks) == len(self):
            full = np.empty(len(self), next(iter(dts)))  # every instance in a block: one scatter
            for b, v in cols:
                full[b.ids] = v
            return full.tolist()
        out = np.empty(len(self), object)
        for b, v in cols:
            if v is not None:  # (a record's values as tuples, as tolist gives them)
                out[b.ids] = np.fromiter(v.tolist(), object, len(v)) if v.dtype.names else v.astype(object)
        for k in self._set:  # after the blocks: an item given later wins
            x = getattr(self._made[k], name)
            out[k] = x.item() if isinstance(x, np.generic) else x
        return out.tolist()

    def values(self) -> list:
        return self._column("value", lambda b: b.values)

    def best_values(self) -> list:
        def best(b):
            if b.red is None:
                return None
            if b.red[0].all():  # every instance found a best cell: plain numbers, one scatter
                return b.red[1]
            return np.where(b.red[0], b.red[1].astype(object), None)

        return self._column("best_value", best)

    def errors(self) -> dict[int, str]:
        made = (self._made[k] for k in sorted(self._set))
        return {it.index: it.error for it in made if it.error is not None}


@dataclass
class ManyResult:
    """What :func:`sweep_many` returns: ``items[k]``, instance ``k``'s :class:`ManyItem` (in input
    order; also ``result[k]``, ``len(result)``, iteration; each made when first read), and
    ``stats``: ``backend``, ``device``, ``cells`` (the cells swept), ``seconds`` (the whole call),
    ``kernel_seconds``, ``gcups``; ``extra``: ``instances``, ``failed``, ``batched`` (swept by the
    batch kernels), ``alone`` (handed to :func:`gpudp.sweep`), ``empty``, ``chunks``, ``launches``,
    ``compile_seconds``, ``walk_seconds``, ``decision_bytes`` (the largest chunk's), ``layout``,
    ``backend_choice``, ``arithmetic`` (the batch's cell in 32 bits where that is proven for every
    instance: :mod:`gpudp.recurrence.narrow`), ``checked`` (the cells of the checked mode, where it
    ran), and on the GPU ``cuda`` (threads a block, shared
    memory, ``edges_on_device``: chunks whose last rows and columns stayed in device memory until
    read).

    :attr:`values` and :attr:`best_values` read the batch's arrays without making the items: the
    fast way to every score of a large batch."""

    items: Items
    stats: Stats
    recurrence: type | None = None

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, k):
        return self.items[k]

    def __iter__(self):
        return iter(self.items)

    @property
    def values(self) -> list:
        """Every instance's ``value`` as a Python number (a record's: a tuple of its fields), None
        where it has none."""
        return self.items.values()

    @property
    def best_values(self) -> list:
        """Every instance's ``best_value`` as a Python number, None where it has none (no
        ``reduce``, or no cell)."""
        return self.items.best_values()

    @property
    def errors(self) -> dict[int, str]:
        """``{index: error}`` of the instances that failed."""
        return self.items.errors()


def _user_edges(kcls, out):
    """``edges()``: a chunk's last rows and columns as the user sees them
    (:func:`gpudp.many.chunks.user_values`), made once, when first asked for."""
    made = []

    def edges():
        if not made:
            made.append(tuple(user_values(kcls, x) for x in out.edges()))
        return made[0]

    return edges


def _best(rec_cls, rv: np.ndarray, rc: np.ndarray):
    """Per instance (a row of slots): whether a slot holds a cell, the best value, and the earliest
    cell in (i, j) order holding it (the engine's rule, :func:`gpudp.grid._reduce_slots`)."""
    ci, cj = rc[:, :, 0], rc[:, :, 1]
    used = ci != NO_CELL
    v = np.where(used, rv, spec_of(rec_cls).reduce_worst)
    best = v.max(axis=1) if rec_cls.reduce == "max" else v.min(axis=1)
    tied = used & (rv == best[:, None])
    key = np.where(tied, ci * (1 << 31) + cj, np.iinfo(np.int64).max)  # i, j < 2^22 in a batch
    k = key.argmin(axis=1)
    r = np.arange(len(rv))
    return used.any(axis=1), best, ci[r, k], cj[r, k]


def _narrowed(rec, take, shapes):
    """:func:`gpudp.recurrence.narrow.prepare` for the whole batch: each packed item stands for every
    instance's (an array: all their values; a number: the largest magnitude among them), the grid
    for the largest instance's; so what it proves holds for each instance."""
    data = []
    for m, kind in enumerate(take.kinds):
        p = take.packed[3 * m]
        if kind != "s":
            data.append(p)
        elif p.dtype.kind in "iu":
            big = magnitude(p)
            data.append(p.dtype.type(big) if big <= np.iinfo(p.dtype).max else np.int64(big))
        else:
            data.append(p[:1].copy()[0])
    rows, cols = (int(x) for x in shapes.max(axis=0))
    return narrow_cell(rec, tuple(data), rows, cols)


def _start_states(start_state, count: int, cls) -> Callable:
    """``f(k, rec, value) -> int``: instance ``k``'s start state, from ``start_state``."""
    if start_state is None:
        return lambda k, rec, value: 0
    if not cls.traceback_state:
        raise ContractError(
            f"sweep_many(..., start_state=...): {cls.__name__} declares traceback_state = False"
        )
    if callable(start_state):
        return lambda k, rec, value: operator.index(start_state(rec, value))
    if isinstance(start_state, Sequence | np.ndarray):
        states = [operator.index(s) for s in start_state]
        if len(states) != count:
            raise InputError("start_state", f"{len(states)} states for {count} instances: give one each")
        return lambda k, rec, value: states[k]
    s0 = operator.index(start_state)
    return lambda k, rec, value: s0


class _Batch:
    """One call's state: the intake, the backend's runner, the items as they are made."""

    def __init__(self, objs, take, kcls, used, walking, state_of, bar):
        self.objs, self.take, self.kcls, self.used = objs, take, kcls, used
        self.order = derive(take.cls.offsets, 2, 2)  # the sweep's order, which back must go back along
        self.walking, self.state_of, self.bar = walking, state_of, bar
        self.items = Items(len(objs))
        self.walk_seconds = 0.0
        self.kernel_seconds = 0.0
        self.cells = 0

    def finish(self, chunk: Chunk, handle, runner, walker) -> None:
        """A chunk's outputs turned into items: overflows, reductions, the walks."""
        from .cpu import walk

        out = handle.wait()
        self.kernel_seconds += out.kernel_seconds
        kcls, take = self.kcls, self.take
        nq = len(chunk.ids)
        bits = kcls.decision_bits
        failed = out.flags[:, 0] != 0 if bits else np.zeros(nq, bool)
        red = _best(kcls, out.rv, out.rc) if kcls.reduce else None
        rows, cols = chunk.rows, chunk.cols
        value_at = chunk.lroff + cols - 1
        one_by_one = self.walking or bool(failed.any())  # else the items are made when read
        edges = _user_edges(kcls, out)
        lr, lc = edges() if one_by_one else (None, None)
        paths = None
        if self.walking:
            t = time.perf_counter()
            sel = ~failed if red is None else ~failed & red[0]
            qs = np.flatnonzero(sel)
            starts = np.empty((len(qs), 2), np.int64)
            if red is None:
                starts[:, 0], starts[:, 1] = rows[qs] - 1, cols[qs] - 1
                start_values = lr[value_at[qs]]
            else:
                starts[:, 0], starts[:, 1] = red[2][qs], red[3][qs]
                start_values = red[1][qs]
            states = np.zeros(len(qs), np.int64)
            if kcls.traceback_state:
                for n, q in enumerate(qs.tolist()):
                    k = int(chunk.ids[q])
                    states[n] = self.state_of(k, self.objs[k], start_values[n])
            s = self.order
            room = s.a * (rows[qs] - 1) + s.b * (cols[qs] - 1) + 2  # the wavefronts, and one more
            poff = np.zeros(len(qs) + 1, np.int64)
            np.cumsum(room, out=poff[1:])
            width = path_width(kcls)
            paths = np.empty((int(poff[-1]), width), np.int64)
            plen = np.zeros(len(qs), np.int64)
            exits = np.zeros((len(qs), 3), np.int64)
            status = np.zeros(len(qs), np.int64)
            walk(
                kcls,
                walker,
                runner.layout,
                chunk.ids[qs],
                starts,
                states,
                take.shapes,
                chunk.doff[qs],
                out.words,
                poff,
                paths,
                plen,
                exits,
                status,
                *take.packed[3 * take.n_sym :],
            )
            walked = {int(q): n for n, q in enumerate(qs.tolist())}
            self.walk_seconds += time.perf_counter() - t
        if not one_by_one:  # values only: the items made when read
            self.items.add(_Block(chunk, user_values(kcls, out.last_values(chunk)), edges, red))
        with gc_paused():
            for q in range(nq if one_by_one else 0):
                k = int(chunk.ids[q])
                R, C = int(rows[q]), int(cols[q])
                if failed[q]:
                    err = decision_overflow(kcls.__name__, out.flags[q], "i, j", bits)
                    self.items[k] = ManyItem(k, (R, C), error=str(err))
                    continue
                it = ManyItem(k, (R, C))
                it.last_row = lr[chunk.lroff[q] : chunk.lroff[q] + C]
                it.last_col = lc[chunk.lcoff[q] : chunk.lcoff[q] + R]
                it.value = it.last_row[-1]
                if red is not None and red[0][q]:
                    it.best_value, it.best_cell = red[1][q].item(), (int(red[2][q]), int(red[3][q]))
                if self.walking:
                    n = walked.get(q)
                    if n is None:  # a reduction that found no cell: nothing to walk
                        it.path = np.zeros((0, path_width(kcls)), np.int64)
                    elif status[n]:
                        it.error = self._walk_error(paths, poff[n], plen[n], exits[n], status[n])
                    else:
                        it.path = paths[poff[n] : poff[n] + plen[n]]
                        it.exit = tuple(int(x) for x in exits[n][: 3 if kcls.traceback_state else 2])
                self.items[k] = it
        self.cells += int(chunk.cells.sum())
        if self.bar is not None:
            self.bar.update(int(chunk.cells.sum()))

    def _walk_error(self, paths, p0, n, ex, status) -> str:
        name = self.kcls.__name__
        if status == 2:
            return f"{name}.back() walked in a loop: it must step to one of the dependencies"
        i, j = (int(x) for x in paths[p0 + n - 1, :2])
        return (
            f"{name}.back() returned ({int(ex[0])}, {int(ex[1])}) from ({i}, {j}), a cell that is not on an "
            "earlier wavefront: it must step to one of the dependencies"
        )

    def alone(self, k: int, memory_budget) -> None:
        """Instance ``k`` through :func:`gpudp.sweep` (too large for the batch kernels)."""
        cls = self.take.cls
        R, C = (int(x) for x in self.take.shapes[k])
        try:
            res = sweep(
                self.objs[k],
                backend=self.used,
                memory_budget=memory_budget,
                progress=False,
                traceback=bool(self.walking),
            )
        except (ContractError, InputError) as e:  # this instance's decisions, or its memory
            self.items[k] = ManyItem(k, (R, C), error=str(e))
            return
        try:
            it = ManyItem(k, (R, C), last_row=res.last_row, last_col=res.last_col)
            it.value = res.last_row[-1]
            it.best_value, it.best_cell = res.best_value, res.best_cell
            if self.walking:
                start = res.best_cell if cls.reduce else (R - 1, C - 1)
                if start is None:
                    it.path = np.zeros((0, path_width(cls)), np.int64)
                else:
                    value = res.best_value if cls.reduce else it.value
                    state = self.state_of(k, self.objs[k], value) if cls.traceback_state else None
                    try:
                        path, ex = res.walk(start, state)
                        it.path, it.exit = path, tuple(int(x) for x in ex)
                    except ContractError as e:
                        it.error = str(e)
        finally:
            res.close()
        self.items[k] = it
        self.cells += R * C
        if self.bar is not None:
            self.bar.update(R * C)


def _interval_batch(objs, take, backend, traceback, progress, start_state, check, t0) -> ManyResult:
    """:func:`sweep_many` of interval recurrences (:mod:`gpudp.many.intervals`)."""
    from .intervals import sweep_intervals

    count, cls = len(objs), take.cls
    n = take.shapes[:, 0]
    used, why = choose_backend(backend, float((n * (n + 1) * (n + 2) // 6).sum()))
    declines = getattr(lowering.get("many_intervals", used), "declines", None)
    reason = declines(cls, n) if declines is not None and backend == "auto" else None
    if reason:  # the backend auto chose would run this batch slowly: the cpu's cores instead
        used, why = choose_backend("cpu", 0.0)[0], f"cpu: {reason}"
    stats = Stats(backend=used, device=device_name(used))
    stats.extra.update(instances=count, backend_choice=why)
    items = Items(count)
    for k, msg in take.errors.items():
        items[k] = ManyItem(k, error=msg)
    if len(take.errors) == count:
        stats.seconds = time.perf_counter() - t0
        stats.extra.update(failed=count, batched=0, alone=0, empty=0, chunks=0, launches=0)
        return ManyResult(items, stats, cls)
    valid = [k for k in range(count) if k not in take.errors]
    if wanted(check):
        stats.extra["checked"] = _checked(objs, np.array(valid), bool(traceback and cls.decision_bits))
    states = _start_states(start_state, count, cls)
    low = lowering.get("many_intervals", used)
    with typing_errors(cls):
        sweep_intervals(
            objs,
            take,
            lambda kcls: low.IntervalRunner(kcls, take.kinds),
            traceback,
            states,
            lambda cells: progress_bar(cells, progress),
            stats,
            items,
            t0,
        )
    return ManyResult(items, stats, cls)


def _checked(objs, valid: np.ndarray, walking: bool) -> int:
    """The checked mode's pass (:func:`gpudp.engine.check_pass`) over the valid instances, one by
    one; the cells checked. A mistake is refused naming the instance."""
    cells = 0
    for k in valid.tolist():
        try:
            cells += check_pass(objs[k], walking)
        except ContractError as e:
            raise ContractError(f"instance {k} of the batch: {e}") from e
    return cells


def sweep_many(
    recs,
    backend: str = "auto",
    traceback: bool = True,
    progress: bool | None = None,
    *,
    memory_budget=None,
    start_state=None,
    queries=None,
    choices=None,
    pairs: str = "cross",
    check: bool | None = None,
) -> ManyResult:
    """Sweep many instances of one grid or interval recurrence at once: values, reductions and
    tracebacks equal to :func:`gpudp.sweep`'s on each instance, at a fraction of the cost per
    instance.

    Parameters
    ----------
    recs : sequence of GridRecurrence, or of IntervalRecurrence
        interval recurrences (many RNA sequences folded, sentences parsed: :mod:`gpudp.many.intervals`)
        each swept whole by one thread, their items holding ``table``, ``value`` (the whole
        interval's) and ``path`` (the tree from ``(0, n - 1)``, with ``start_state`` as its state);
        the rest of this text is about grids, which are
        instances of one class (the same class after :meth:`~gpudp.GridRecurrence._specialized`,
        so instances that give their own offsets must give the same ones), each with its own shape
        and data. Supported: ``offsets`` among ``(-1, 0), (0, -1), (-1, -1)``, ``symbols``,
        ``deps_tuple``, ``reduce``, ``traceback_state``, ``decision_bits`` 0 to 32, a scalar or
        record ``value_dtype``; a scalar cell may also read two cells back (offsets in ``[-2, 0] x
        [-2, 0]``, carried as a record: :mod:`gpudp.grid.wide`). Every instance's ``data()`` must
        have the same structure: as many items, each an array (same dtype and ndim; its sizes are
        the instance's own) or a number (same numpy type; a Python int is an int64) in every
        instance.
    backend : "auto", "cpu" or "cuda"
        "auto": the CPU for batches it finishes before the GPU could start, else the GPU when one
        is usable (:func:`gpudp.backends.choose` on the batch's cells).
    traceback : bool
        False: values (and reductions) only; no decisions are kept, ``path`` is None.
    progress : bool or None
        a progress bar over the cells (None: only on a terminal).
    memory_budget : int or str, optional
        host bytes a chunk's decisions may take (as :func:`gpudp.sweep` takes it; default:
        GPUDP_MEMORY_BUDGET or half of the free memory); the GPU keeps two chunks in flight, each
        within half of it.
    queries, choices : sequences, optional
        with both, ``recs`` is one instance (the template) and the batch is its class over pairs of
        sequences: every query against every choice (``pairs="cross"``: instance ``k * len(choices)
        + m`` is query ``k`` against choice ``m``) or query ``k`` against choice ``k``
        (``pairs="zip"``), each pair's row symbols the query and column symbols the choice, every
        other item of ``data()`` the template's (shared). Each side: a list or tuple of ``str`` (by
        code point), of ``bytes`` or of 1-D arrays of integers or reals of one dtype, or a 2-D such
        array of rows. Read in bulk, with no Python work per pair (:mod:`gpudp.many.pairs`): the form for
        large batches (100,000 pairs of objects cost seconds of intake). The class must declare
        ``symbols = True``.
    pairs : "cross" or "zip"
        how ``queries`` and ``choices`` pair up (default "cross").
    start_state : int, sequence of int, or callable, optional
        with ``traceback_state``: the state each walk starts in: one for all, one per instance, or
        ``start_state(rec, value) -> int`` called with the instance and its start cell's value
        (the last cell's, or the best one's with ``reduce``). Default 0.
    check : bool or None
        True: the checked mode of :func:`gpudp.sweep` (:mod:`gpudp.checked`) for every instance
        before the batch runs: each swept once in plain Python, every read and return checked (and
        ``back`` from every cell with a traceback to come, without a state); the first mistake is
        a :class:`gpudp.ContractError` naming the instance and the cell. Slow: for tests. None (the
        default): the environment variable ``GPUDP_CHECK`` decides.

    Returns
    -------
    ManyResult
        ``result[k]`` (a :class:`ManyItem`) for instance ``k``, in input order: ``last_row``,
        ``last_col``, ``value`` (the last cell), ``best_value`` and ``best_cell`` (with ``reduce``),
        ``path`` (rows ``(i, j, decision[, state])`` from the last cell, or from the best cell with
        ``reduce``, backwards until ``back`` leaves the grid), ``exit``, ``error``; and ``stats``.

    Raises
    ------
    InputError
        an object that is not a recurrence; instances of different classes (or offsets); a data
        item that is not a numpy array or number; ``data()`` structures that differ (naming the
        instance and the item); a ``start_state`` sequence of the wrong length.
    ContractError
        a class the batch does not run (not a grid or interval recurrence, offsets beyond two
        cells back or forward, a record cell reading two cells back: sweep those with
        :func:`gpudp.sweep`), a mistake in its declaration (as :func:`gpudp.sweep` raises it), no
        ``back`` with decisions to trace back, ``start_state`` without ``traceback_state``.
    BackendError
        an unknown backend, or "cuda" without a usable GPU.

    An instance whose shape, data or symbols are invalid, or whose ``cell`` returns a decision that
    does not fit ``decision_bits``, gets an ``error`` and no value; the other instances are solved.

    Example
    -------
    >>> import numpy as np
    >>> from gpudp import GridRecurrence, sweep_many
    >>> class Lcs(GridRecurrence):
    ...     value_dtype = np.int32
    ...     decision_bits = 2
    ...     def __init__(self, a, b):
    ...         self.a, self.b = np.frombuffer(a.encode(), np.uint8), np.frombuffer(b.encode(), np.uint8)
    ...     def shape(self):
    ...         return len(self.a), len(self.b)
    ...     def data(self):
    ...         return self.a, self.b
    ...     @staticmethod
    ...     def cell(i, j, up, left, diag, a, b):
    ...         if a[i] == b[j]:
    ...             return diag + 1, 0
    ...         return (up, 1) if up >= left else (left, 2)
    ...     @staticmethod
    ...     def back(i, j, d, a, b):
    ...         return (i - 1, j - 1) if d == 0 else (i - 1, j) if d == 1 else (i, j - 1)
    >>> res = sweep_many([Lcs("GATTACA", "TACGTA"), Lcs("ACGT", "ACGT"), Lcs("", "AC")], backend="cpu")
    >>> [int(x.value) if x.value is not None else None for x in res]
    [4, 4, None]
    >>> res[1].path.tolist()
    [[3, 3, 0], [2, 2, 0], [1, 1, 0], [0, 0, 0]]
    """
    t0 = time.perf_counter()
    if queries is not None or choices is not None:
        if queries is None or choices is None:
            raise InputError("choices" if choices is None else "queries", "give both queries= and choices=")
        take, objs = intake_pairs(recs, queries, choices, pairs)
    else:
        objs = list(recs)
        take = intake(objs)
    count, cls = len(objs), take.cls
    if cls is not None and cls.family == "interval":
        return _interval_batch(objs, take, backend, traceback, progress, start_state, check, t0)
    ok = np.ones(count, bool)  # the instances read without an error (in numpy: 100,000 of them)
    ok[list(take.errors)] = False
    valid = np.flatnonzero(ok)
    shapes = take.shapes
    cells = shapes[:, 0] * shapes[:, 1]
    used, why = choose_backend(backend, float(cells.sum()))
    stats = Stats(backend=used, device=device_name(used))
    stats.extra.update(instances=count, backend_choice=why)
    if cls is None or not len(valid):
        items = Items(count)
        for k, msg in take.errors.items():
            items[k] = ManyItem(k, error=msg)
        stats.seconds = time.perf_counter() - t0
        stats.extra.update(failed=len(take.errors), batched=0, alone=0, empty=0, chunks=0, launches=0)
        return ManyResult(items, stats, cls)
    bits = cls.decision_bits
    walking = bool(traceback and bits)
    if wanted(check):  # every instance swept once in plain Python first, every read checked
        stats.extra["checked"] = _checked(objs, valid, walking)
    if walking and getattr(cls, "back", None) is None:
        raise ContractError(
            f"{cls.__name__} defines no back(...): its decisions cannot be traced back; define "
            f"{cls._form('back', len(take.kinds) - take.n_sym)} as a @staticmethod, or pass traceback=False"
        )
    if walking:  # back's return, in plain Python, before the walk compiles: an instance's last cell
        k0 = next(iter(valid[cells[valid] > 0].tolist()), None)
        if k0 is not None:
            last = tuple(int(x) - 1 for x in shapes[k0])
            probe_back(cls, last, 0, tuple(take.recs[k0].data()), 0 if cls.traceback_state else None)
    first = take.recs[int(valid[0])]
    if widens(cls):  # offsets two cells back: the wider halo carried as a record (gpudp.grid.wide)
        first = wide_instance(first)
    krec = values_only(first) if bits and not traceback else first
    kcls = type(krec)
    state_of = _start_states(start_state, count, cls)
    budget = default_budget() if memory_budget is None else parse_bytes(memory_budget)
    vcells = cells[valid]
    empty = valid[vcells == 0].tolist()
    alone = valid[vcells > MAX_BATCH_CELLS].tolist()
    batched = valid[(vcells > 0) & (vcells <= MAX_BATCH_CELLS)].astype(np.int64)
    bar = progress_bar(int(vcells.sum()), progress)
    run = _Batch(objs, take, kcls, used, walking, state_of, bar)
    vt = np.dtype(cls.value_dtype)
    for k in empty:
        R, C = (int(x) for x in shapes[k])
        run.items[k] = ManyItem(
            k,
            (R, C),
            last_row=np.zeros(0, vt),
            last_col=np.zeros(0, vt),
            path=np.zeros((0, path_width(cls)), np.int64) if walking else None,
        )
    runs, runner, largest = [], None, 0
    narrow = _narrowed(krec, take, shapes[batched]) if len(batched) else None
    stats.extra["arithmetic"] = f"int32 (every value within +-{narrow[1]})" if narrow else "as written"
    with typing_errors(cls):  # numba's typing error in cell, boundary or back: a ContractError
        try:
            if len(batched):
                if narrow is not None:  # the cell in 32 bits, proven for every instance of the batch
                    kcls = type(narrow[0])
                runner = lowering.get("many", used).Runner(kcls, take.kinds, take.n_sym, take.packed, shapes)
                per_cell = decision_dtype(bits).itemsize if walking else 0
                limit = runner.chunk_bytes(budget)
                most = getattr(runner, "chunk_cells", None) or CHUNK_CELLS
                max_cells = max(1, min(most, limit // per_cell if per_cell else most))
                bc = cells[batched]  # largest first (one size, as cross products are: as they are)
                order = batched if bc.min() == bc.max() else batched[np.argsort(-bc, kind="stable")]
                runs = cut(order, cells, max_cells)
                walker = None
                if walking:
                    from .cpu import walker as make_walker

                    walker = make_walker(getattr(kcls, "_wide", None) or kcls, take.kinds[take.n_sym :])
                pending = None
                with runner.running():
                    for ids in runs:  # one chunk in flight while the previous one is walked
                        ch = Chunk.of(ids, shapes, walking)  # (made while the GPU runs the one before)
                        handle = runner.start(ch)
                        largest = max(largest, ch.n_words * per_cell)
                        if pending is not None:
                            run.finish(*pending, runner, walker)
                        pending = (ch, handle)
                    if pending is not None:
                        run.finish(*pending, runner, walker)
            for k in alone:
                run.alone(k, memory_budget)
        finally:
            if bar is not None:
                bar.close()
    for k, msg in take.errors.items():
        run.items[k] = ManyItem(k, error=msg)
    stats.cells = run.cells
    stats.kernel_seconds = run.kernel_seconds
    stats.seconds = time.perf_counter() - t0
    stats.extra.update(
        failed=len(run.items.errors()),
        batched=len(batched),
        alone=len(alone),
        empty=len(empty),
        chunks=len(runs),
        launches=runner.launches if runner is not None else 0,
        compile_seconds=runner.compile_seconds if runner is not None else 0.0,
        walk_seconds=run.walk_seconds,
        decision_bytes=largest,
        layout=runner.layout if runner is not None else None,
    )
    if runner is not None and hasattr(runner, "info"):
        stats.extra["cuda"] = {**runner.info, "threads": sorted(runner.info["threads"])}
    return ManyResult(run.items, stats, cls)
