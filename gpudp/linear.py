"""Tracebacks in linear space: checkpoints, and the blocks the path crosses swept again.

A full decision store keeps ``rows x cols x decision_bits`` bits: 32 GiB for an LCS of 2^19 x
2^19, 2 TiB at 2^22. With ``sweep(..., store="checkpoints")`` (chosen by ``store="auto"`` when the
full store would not stay in the memory budget) the forward sweep keeps no decisions at all: its
kernels run values only and copy aside the values of every ``K``-th row and column (rows and columns
``K - 1, 2K - 1, ...``: :func:`gpudp.backends.base.checkpoint_arrays`), ``(rows + cols) x rows / K``
values in all.

The traceback then walks block by block over the ``K x K`` blocks of the grid. The block holding the
current cell is swept again, only its part above and to the left of the cell, as a grid recurrence
of its own (:func:`_block_class`: the user's functions at shifted coordinates, its top row and left
column read from the checkpoints instead of computed), this time with its decisions; the walk goes
on in it until ``back`` leaves it, and then in the block it entered. A cell's value depends only on
the cells above and to the left of it, so the block's cells get the values and the decisions of the
full sweep, and the path is the one the full store would give. The path crosses about
``(rows + cols) / K`` blocks, so the traceback sweeps about ``(rows + cols) x K`` cells again: a
small part of the forward sweep's ``rows x cols`` for the grids this is for.

Grid recurrences on the tiled schedule (offsets among ``(-1, 0), (0, -1), (-1, -1)``: alignments,
LCS, edit distance, DTW) use it; others are refused with the reason. It works with every backend,
with reductions (the forward sweep computes them; the walk may start at ``best_cell``) and with
``traceback_state``. The engine hands this module its ``sweep`` (this module imports no engine).
"""

from __future__ import annotations

import operator
import time

import numpy as np
from numba.extending import register_jitable

from . import values
from .codegen import compile_source
from .errors import ContractError, InputError
from .memory import default_budget, parse_bytes
from .progress import progress_bar
from .recurrence import GridRecurrence, start_cell
from .solution import Stats

#: a block's decision store is at most this many bytes (and an eighth of the memory budget)
BLOCK_BYTES = 1 << 30
#: the smallest block side picked by default (a block narrower than this has too few tiles on
#: its anti-diagonals to keep a GPU busy; a smaller grid is one block)
MIN_EVERY = 512


def choose_every(plan, memory_budget=None, every=None) -> int:
    """The block side ``K``: ``every`` when given (checked against the tile), else the largest power
    of two whose ``K x K`` block decisions fit :data:`BLOCK_BYTES` and an eighth of the budget.

    Raises :class:`InputError` for a side that is not a positive multiple of the tile's rows and
    columns."""
    bh, tw = plan.layout.bh, plan.layout.tw
    if every is not None:
        k = operator.index(every)
        if k <= 0 or k % bh or k % tw:
            raise InputError(
                "checkpoint_every",
                f"{every!r}: must be a positive multiple of the tile's rows and columns ({bh} x {tw})",
            )
        return k
    budget = default_budget() if memory_budget is None else parse_bytes(memory_budget)
    cap = max(min(BLOCK_BYTES, budget // 8) * 8 // max(plan.bits, 1), 1)
    k = 1 << max((int(cap**0.5)).bit_length() - 1, 0)
    step = int(np.lcm(bh, tw))
    return max(k // step * step, step, MIN_EVERY // step * step)


def checkpoint_bytes(rows: int, cols: int, every: int, itemsize: int) -> int:
    """Bytes of a sweep's checkpoints: rows and columns ``every - 1, 2 every - 1, ...``."""
    return ((rows - 1) // every * cols + (cols - 1) // every * rows) * itemsize


def checkpoint_sweep(rec, plan, sweep, memory_budget=None, progress=None, tile=None, every=None):
    """The forward sweep of ``rec`` with checkpoints (values only); a :class:`CheckpointResult`.

    ``plan`` is the sweep's (:func:`gpudp.engine.plan_sweep`), ``sweep`` the engine's sweep function.

    Raises :class:`InputError` for a recurrence off the tiled schedule, or checkpoints that do not
    fit the memory budget (with the figures)."""
    cls = type(rec)
    if plan.kind != "tiled":
        raise InputError(
            "store",
            f"{cls.__name__}: a traceback from checkpoints needs the tiled schedule (offsets among "
            f"(-1, 0), (0, -1), (-1, -1)); its offsets {tuple(cls.offsets)} run by layers: use "
            "store='full'",
        )
    if not hasattr(cls, "back"):
        raise ContractError(
            f"{cls.__name__} defines no back(...): checkpoints serve a traceback; sweep it with "
            "traceback=False for values only"
        )
    k = choose_every(plan, memory_budget, every)
    need = checkpoint_bytes(plan.rows, plan.cols, k, plan.itemsize)
    budget = default_budget() if memory_budget is None else parse_bytes(memory_budget)
    if need > budget:
        raise InputError(
            "memory",
            f"the checkpoints of {cls.__name__} ({plan.rows} x {plan.cols}, every {k}) take "
            f"{need / 2**30:.2f} GiB, over the memory budget of {budget / 2**30:.2f} GiB; give a larger "
            "checkpoint_every or memory_budget",
        )
    fwd = sweep(rec, plan.backend, memory_budget, progress, tile, traceback=False, _checkpoint=k)
    ck_rows, ck_cols = fwd.checkpoints
    fwd.stats.extra.update(
        store="checkpoints",
        checkpoint_every=k,
        checkpoint_bytes=need,
        block_bytes=-(-k * k * plan.bits // 8),
    )
    return CheckpointResult(rec, plan, fwd, ck_rows, ck_cols, k, sweep, memory_budget, progress, tile)


class CheckpointResult:
    """A sweep's outcome with checkpoints instead of a decision store (see the module's text).

    The same surface as :class:`gpudp.engine.SweepResult`: ``last_row``, ``last_col``,
    ``best_value``, ``best_cell``, ``stats``, :meth:`traceback` and :meth:`decision` (each of these
    two sweeps again the block it reads), :meth:`close`. ``stats.extra["traceback"]`` records the
    last traceback's blocks, cells and seconds."""

    def __init__(self, rec, plan, fwd, ck_rows, ck_cols, every, sweep, memory_budget, progress, tile):
        self.recurrence, self.plan, self.every = rec, plan, every
        self.stats: Stats = fwd.stats
        self.last_row, self.last_col = fwd.last_row, fwd.last_col
        self.last_layer = None
        self.best_value, self.best_cell = fwd.best_value, fwd.best_cell
        self._rows, self._cols = ck_rows, ck_cols
        self._sweep, self._opts = sweep, (plan.backend, memory_budget, tile)
        self._progress = progress
        self._data = tuple(rec.data())
        cls = type(rec)
        self._syms = (np.asarray(rec.row_symbols()), np.asarray(rec.col_symbols())) if cls.symbols else None

    # -- one block, swept again with its decisions -------------------------------------------
    def _block(self, i: int, j: int):
        """The block holding cell (i, j), swept again up to (i, j): ``(result, r0, c0)``."""
        k = self.every
        r0, c0 = i // k * k, j // k * k
        vt = np.dtype(type(self.recurrence).value_dtype)
        if r0:
            row = self._rows[r0 // k - 1]
            top = row[c0 - 1 : j + 1] if c0 else np.concatenate([np.zeros(1, vt), row[: j + 1]])
        else:
            top = np.zeros(1, vt)
        left = self._cols[c0 // k - 1, r0 : i + 1] if c0 else np.zeros(1, vt)
        block = _block_class(type(self.recurrence), len(self._data))(
            self.recurrence, self._data, self._syms, r0, c0, i - r0 + 1, j - c0 + 1, top, left
        )
        backend, budget, tile = self._opts
        return self._sweep(block, backend, budget, False, tile, store="full"), r0, c0

    def decision(self, *cell) -> int:
        """The decision of one cell (its block swept again up to it)."""
        a, b = (int(x) for x in cell)
        if not (0 <= a < self.plan.rows and 0 <= b < self.plan.cols):
            raise IndexError(f"cell ({a}, {b}) outside the {self.plan.rows} x {self.plan.cols} grid")
        res, r0, c0 = self._block(a, b)
        try:
            return res.decision(a - r0, b - c0)
        finally:
            res.close()

    def traceback(self, start, state=None) -> np.ndarray:
        """Walk ``back`` from ``start`` until leaving the grid, block by block; the rows
        :meth:`gpudp.engine.SweepResult.traceback` would give. A progress bar (as the sweep's)
        counts the anti-diagonals walked back."""
        return self._walk(start, state)[0]

    def _walk(self, start, state=None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`traceback`'s path and where ``back`` left the grid (with the state there)."""
        cls = type(self.recurrence)
        if state is not None and not cls.traceback_state:
            raise ContractError(
                f"{cls.__name__}.traceback(start, state=...): the class declares traceback_state = False"
            )
        i, j = start_cell(start)
        if not (0 <= i < self.plan.rows and 0 <= j < self.plan.cols):
            raise IndexError(f"cell ({i}, {j}) outside the {self.plan.rows} x {self.plan.cols} grid")
        s = (0 if state is None else operator.index(state)) if cls.traceback_state else None
        t0 = time.perf_counter()
        parts, blocks, cells = [], 0, 0
        bar = progress_bar(i + j + 1, self._progress, "diagonal")
        try:
            while 0 <= i < self.plan.rows and 0 <= j < self.plan.cols:
                res, r0, c0 = self._block(i, j)
                blocks, cells = blocks + 1, cells + res.stats.cells
                try:
                    path, out = res._walk((i - r0, j - c0), s)
                finally:
                    res.close()
                if len(path):
                    path[:, 0] += r0
                    path[:, 1] += c0
                    parts.append(path)
                i2, j2 = int(out[0]) + r0, int(out[1]) + c0
                if s is not None:
                    s = int(out[2])
                if bar is not None:
                    bar.update(max(i + j - max(i2 + j2, -1), 0))
                i, j = i2, j2
        finally:
            if bar is not None:
                bar.close()
        self.stats.extra["traceback"] = {
            "blocks": blocks,
            "cells": cells,
            "seconds": time.perf_counter() - t0,
        }
        width = 4 if cls.traceback_state else 3
        path = np.concatenate(parts) if parts else np.zeros((0, width), np.int64)
        return path, np.array([i, j] + ([] if s is None else [s]), np.int64)

    def close(self):
        """Nothing to release: the checkpoints are plain arrays."""


_BLOCKS: dict = {}


def _block_class(cls, n_data: int):
    """The grid recurrence of one block of ``cls``'s grid: cells ``(i, j)`` of the block are cells
    ``(r0 + i, c0 + j)`` of the grid; the row above the block and the column left of it come from
    the checkpoints (``top[1 + j]``, ``top[0]`` the corner; ``left[i]``), the grid's own boundary
    elsewhere. Made once per recurrence class and data count."""
    key = (cls, n_data)
    if key in _BLOCKS:
        return _BLOCKS[key]
    da = "".join(f", d{k}" for k in range(n_data))
    deps = "".join(f", x{k}" for k in range(cls._n_deps()))
    sym = ", ri, cj" if cls.symbols else ""
    st = ", s" if cls.traceback_state else ""
    fs = values.fields(cls)  # a record: the edges come as one array per field
    nf = 1 if fs is None else len(fs)
    edges = "".join(f", top{f}" for f in range(nf)) + "".join(f", left{f}" for f in range(nf))

    def at(name, idx):
        if fs is None:
            return f"{name}0[{idx}]"
        return "(" + ", ".join(f"{name}{f}[{idx}]" for f in range(nf)) + ",)"

    src = f"""
def cell(i, j{deps}{sym}, r0, c0{edges}{da}):
    return user_cell(i + r0, j + c0{deps}{sym}{da})


def boundary(i, j, r0, c0{edges}{da}):
    if i < 0 and r0 > 0 and (j >= 0 or c0 > 0):
        return {at("top", "j + 1")}
    if j < 0 and c0 > 0 and i >= 0:
        return {at("left", "i")}
    return user_boundary(i + r0, j + c0{da})


def back(i, j, d{st}, r0, c0{edges}{da}):
    out = user_back(i + r0, j + c0, d{st}{da})
    return (out[0] - r0, out[1] - c0{", out[2]" if st else ""})
"""
    ns = {
        "user_cell": register_jitable(cls.cell),
        "user_boundary": register_jitable(cls.boundary),
        "user_back": register_jitable(cls.back),
    }
    fns = {name: compile_source(src, name, dict(ns)) for name in ("cell", "boundary", "back")}

    def __init__(self, user, data, syms, r0, c0, rows, cols, top, left):
        self.user, self._user_data, self._syms = user, data, syms
        self.r0, self.c0, self.rows, self.cols, self.top, self.left = r0, c0, rows, cols, top, left

    attrs = {
        "__init__": __init__,
        "__module__": cls.__module__,
        "__doc__": f"One block of {cls.__name__}'s grid, swept again for a traceback (gpudp.linear).",
        "offsets": cls.offsets,
        "deps_tuple": cls.deps_tuple,
        "value_dtype": cls.value_dtype,
        "decision_bits": cls.decision_bits,
        "fill": cls.fill,
        "symbols": cls.symbols,
        "traceback_state": cls.traceback_state,
        "reduce": None,
        "shape": lambda self: (self.rows, self.cols),
        "data": lambda self: (
            self.r0,
            self.c0,
            *_fields_of(cls, self.top),
            *_fields_of(cls, self.left),
            *self._user_data,
        ),
        "row_symbols": lambda self: self._syms[0][self.r0 : self.r0 + self.rows],
        "col_symbols": lambda self: self._syms[1][self.c0 : self.c0 + self.cols],
        **{name: staticmethod(fn) for name, fn in fns.items()},
    }
    sub = _BLOCKS[key] = type(cls.__name__, (GridRecurrence,), attrs)
    return sub


def _fields_of(cls, edge: np.ndarray) -> tuple:
    """An edge of checkpoint values as the block's data: the array, or one array per field."""
    buf = values.split(cls, edge)
    return buf if isinstance(buf, tuple) else (buf,)
