"""Tracebacks in linear space: checkpoints, and the blocks the path crosses swept again, in rounds.

A full decision store keeps ``rows x cols x decision_bits`` bits: 32 GiB for an LCS of 2^19 x
2^19, 2 TiB at 2^22; and even where it fits, copying it off the GPU can take longer than the sweep
(Gotoh at 2^17: 8.6 GB). With ``sweep(..., store="checkpoints")`` (chosen by ``store="auto"`` when
the full store would not stay in the memory budget) the forward sweep keeps no decisions at all:
its kernels run values only and copy aside the values of every ``K``-th row and column (rows and
columns ``K - 1, 2K - 1, ...``: :func:`gpudp.backends.base.checkpoint_arrays`), ``(rows + cols) x
rows / K`` values in all, left where the kernels wrote them (on the GPU for cuda).

The grid is then ``K x K`` blocks, each of which can be swept again on its own from the values
around it (a checkpoint row above, a checkpoint column to its left, or the grid's boundary:
:data:`gpudp.codegen.BLOCK_EDGES`), with its decisions. A cell's value depends only on the cells
above and to the left of it, so a block's cells get the values and decisions of the full sweep, and
the path is the one the full store would give. The traceback walks in *rounds*: a round sweeps, in
one call of the backend (:meth:`gpudp.backends.base.Backend.run_blocks`: one launch on the GPU, a
thread block a block; a thread a block on the CPU), the block holding the current cell and the
blocks along the path's way up and to the left (a band along the direction the path has taken so
far, :data:`ROUND_REACH` blocks ahead; the first round only :data:`ROUND_FIRST_REACH`), then walks
``back`` through them (compiled, on the host) until the path leaves the grid or reaches a block the
round did not sweep, where the next round starts. Independent blocks swept at once keep the GPU
busy where one block's wavefront would leave it waiting on its own critical path (``K /
rows_of_a_tile + K / cols_of_a_tile`` steps a block, whatever the number of blocks); a round costs
a launch or two and a copy of its decisions, laid out as the backend says
(:meth:`gpudp.backends.base.Backend.block_words`: one integer a cell on the CPU; on the GPU packed
into bit planes, ``decision_bits`` bits a cell, before the copy).

Grid recurrences on the tiled schedule (offsets among ``(-1, 0), (0, -1), (-1, -1)``: alignments,
LCS, edit distance, DTW) use it; others are refused with the reason. It works with every backend,
with reductions (the forward sweep computes them; the walk may start at ``best_cell``) and with
``traceback_state``. The grid shape's driver (:func:`gpudp.grid.sweep_planned`) hands this package
the plan and the engine's ``sweep``. This module holds the checkpoints' spacing, their memory plan,
the forward sweep and the :class:`CheckpointResult` whose traceback walks in rounds;
:mod:`gpudp.checkpoints.blocks` what the rounds compile (a round's blocks, the block recurrence, the
walk through a round's blocks).
"""

from __future__ import annotations

import operator
import time

import numpy as np

from .. import backends, values
from ..checks import check_memory, probe_back, typing_errors
from ..codegen import block_decision, decision_dtype, diagonal_groups, spec_of
from ..errors import ContractError, InputError, decision_overflow
from ..memory import default_budget, parse_bytes
from ..progress import progress_bar
from ..recurrence import bad_step, start_cell, whole_numbers
from ..recurrence.narrow import prepare as narrow_cell
from ..solution import Stats
from .blocks import band, block_class, block_walker, edge_filler

__all__ = [
    "DEFAULT_EVERY",
    "ROUND_BLOCKS",
    "ROUND_BYTES",
    "ROUND_FIRST_REACH",
    "ROUND_REACH",
    "CheckpointResult",
    "block_class",
    "check_every",
    "checkpoint_bytes",
    "checkpoint_sweep",
    "choose_every",
]

#: the block side by default (rounded to the tile): small blocks are swept again fast, many at once
#: (a round's launch holds up to :data:`ROUND_BLOCKS` of them); ``K`` doubles while the checkpoints
#: would take more than a quarter of the memory budget (or of the GPU's free memory)
DEFAULT_EVERY = 512
#: blocks one round sweeps at most, and decision bytes at most (as the backend lays them out). A round's
#: launch costs about the same however many blocks it holds (up to a GPU's worth), so few large
#: rounds win. H100, 2^17, blocks of 512 (2026-11-26): Smith-Waterman reach 16 / 32 / 64 / 128
#: blocks (at most 64 / 128 / 256 / 512 a round): 19 / 12 / 8 / 4 rounds, traceback 58 / 50 / 37 /
#: 28 ms; Gotoh (whose path leaves the band more often) 8 rounds at 64 and at 128: 37 / 43 ms. The
#: band two half blocks wide on either side (the cuda backend's ``round_sides``, H200, same day):
#: Smith-Waterman 2 rounds, Gotoh 4, whole calls 82 / 147 ms instead of 88 / 159
ROUND_BLOCKS = 1024
ROUND_BYTES = 1 << 28
#: how far ahead a round looks: blocks along the path's direction (the band's width across it is
#: the backend's :attr:`gpudp.backends.base.Backend.round_sides`)
ROUND_REACH = 128
#: how far ahead the first round looks: a local alignment's path (Smith-Waterman of unrelated
#: sequences) often ends within a block or two of its start, where a first round of
#: :data:`ROUND_REACH` swept hundreds of blocks the walk never read; a long path pays one round more
ROUND_FIRST_REACH = 2


def check_every(every, field: str = "checkpoint_every") -> int | None:
    """A checkpoint spacing as a user gives it, checked before any work (the Python API's
    ``checkpoint_every``, the command lines' ``--checkpoint-every``): None (chosen by
    :func:`choose_every`) or a positive integer. A bool, a float, text, 0 and negative numbers raise
    :class:`InputError` naming ``field``. A spacing past the grid is not refused here:
    :func:`choose_every` takes the grid's side instead (one block, no checkpoints), and the memory
    plan (:func:`checkpoint_sweep`) refuses what will not fit."""
    if every is None:
        return None
    try:
        (k,) = whole_numbers((every,))
    except TypeError:  # a bool or a non-integer: refused as 0 is
        k = 0
    if k <= 0:
        raise InputError(field, f"{every!r}: must be a positive whole number of rows and columns")
    return k


def choose_every(plan, memory_budget=None, every=None) -> int:
    """The block side ``K``: ``every`` when given (checked against the tile), else
    :data:`DEFAULT_EVERY` rounded up to a multiple of the tile's rows and columns, doubled while the
    checkpoints would take more than a quarter of the memory budget or (on the GPU) of its free
    memory. A given ``every`` at least as long as the grid's longer side means one block, the whole
    grid: it becomes the smallest multiple of the tile that covers the grid (a block's decisions
    take ``K x K`` cells' room, so ``K = 10**9`` would ask for exabytes).

    Raises :class:`InputError` for a side that is not a positive integer (:func:`check_every`), or
    shorter than the grid and not a multiple of the tile's rows and columns."""
    bh, tw = plan.layout.bh, plan.layout.tw
    step = int(np.lcm(bh, tw))
    if every is not None:
        k = check_every(every)
        if k >= max(plan.rows, plan.cols):
            return max(-(-max(plan.rows, plan.cols) // step) * step, step)
        if k % bh or k % tw:
            raise InputError(
                "checkpoint_every",
                f"{every!r}: must be a positive multiple of the tile's rows and columns ({bh} x {tw})",
            )
        return k
    budget = default_budget() if memory_budget is None else parse_bytes(memory_budget)
    room = budget // 4
    device = backends.get(plan.backend).memory()
    if device is not None:
        room = min(room, device[0] // 4)
    k = max(-(-DEFAULT_EVERY // step) * step, step)
    while k < max(plan.rows, plan.cols) and checkpoint_bytes(plan.rows, plan.cols, k, plan.itemsize) > room:
        k *= 2
    return k


def checkpoint_bytes(rows: int, cols: int, every: int, itemsize: int) -> int:
    """Bytes of a sweep's checkpoints: rows and columns ``every - 1, 2 every - 1, ...``."""
    return ((rows - 1) // every * cols + (cols - 1) // every * rows) * itemsize


def checkpoint_sweep(
    rec,
    plan,
    sweep,
    memory_budget=None,
    progress=None,
    tile=None,
    every=None,
    time_limit=None,
    started=None,
):
    """The forward sweep of ``rec`` with checkpoints (values only); a :class:`CheckpointResult`.

    ``plan`` is the sweep's (:func:`gpudp.engine.plan_sweep`), ``sweep`` the engine's sweep function;
    ``time_limit`` (counted from ``started``) bounds the forward sweep
    (:class:`gpudp.errors.TimeLimitReached`).

    A traceback round sweeps as many blocks as the memory budget leaves room for beside the
    checkpoints (:func:`_round_cap`), one at least.

    Raises :class:`InputError`, with the figures and before the sweep starts, for a recurrence off
    the tiled schedule, checkpoints over the memory budget, or checkpoints and one block's decisions
    over the memory this process may allocate (:func:`gpudp.memory.available_memory`; on the GPU
    its free memory, if less)."""
    cls = type(rec)
    if plan.kind != "tiled":
        offsets = getattr(cls, "offsets", None)  # a layered recurrence may name its deps instead
        whose = f"its offsets {tuple(offsets)} run" if offsets is not None else "it runs"
        raise InputError(
            "store",
            f"{cls.__name__}: a traceback from checkpoints needs the tiled schedule (offsets among "
            f"(-1, 0), (0, -1), (-1, -1)); {whose} on the {plan.kind} plan: use store='full'",
        )
    if not hasattr(cls, "back"):
        raise ContractError(
            f"{cls.__name__} defines no back(...): checkpoints serve a traceback; sweep it with "
            "traceback=False for values only"
        )
    budget = default_budget() if memory_budget is None else parse_bytes(memory_budget)
    if budget == 0:
        _refuse_no_budget(cls, plan, every)
    k = choose_every(plan, memory_budget, every)
    runner = backends.get(plan.backend)
    need = checkpoint_bytes(plan.rows, plan.cols, k, plan.itemsize)
    block = _block_bytes(runner, cls, k)
    grid = f"{cls.__name__} ({plan.rows} x {plan.cols}, every {k})"
    check_memory(
        f"the checkpoints of {grid}",
        0,
        budget=budget,
        in_budget=need,
        advice="give a larger checkpoint_every or memory_budget",
    )
    one = block  # a round sweeps one block at least
    if runner.blocks_layout == "planes":  # and its cells' decisions, one integer each, before packing
        one += k * k * decision_dtype(cls.decision_bits).itemsize
    # the checkpoints shrink as K grows, a block grows: the larger of the two says which way; on the
    # GPU the checkpoints and a round's blocks are in its memory, and come back to the host's
    check_memory(
        f"the checkpoints of {grid} ({need / 2**30:.2f} GiB) and a block's decisions, a traceback "
        f"round's least ({one / 2**30:.2f} GiB)",
        need + one,
        need + one,
        runner.memory(),
        advice=f"give {'a larger' if need > one else 'a smaller'} checkpoint_every",
    )
    cap = _round_cap(block, -(-plan.rows // k) * -(-plan.cols // k), budget - need)
    fwd = sweep(
        rec,
        plan.backend,
        memory_budget,
        progress,
        (plan.layout.bh, plan.layout.tw),  # K is a multiple of this tile's (a values-only plan's may differ)
        traceback=False,
        time_limit=time_limit,
        started=started,
        _checkpoint=k,
    )
    fwd.stats.extra.update(
        backend_choice=plan.choice,  # the caller's choice, not the forward sweep's "asked for"
        store="checkpoints",
        checkpoint_every=k,
        checkpoint_bytes=need,
        block_bytes=_block_bytes(runner, cls, k),
    )
    return CheckpointResult(rec, plan, fwd, k, progress, cap)


def _refuse_no_budget(cls, plan, every) -> None:
    """An :class:`InputError` naming ``memory_budget`` for a budget of 0, which leaves the
    checkpoints no room, where the grid has checkpoints at ``every`` (or the default spacing):
    more than one block. A grid of one block has none, and sweeps as it would with any budget."""
    k = choose_every(plan, 1 << 62, every)  # the spacing an ample budget gives
    need = checkpoint_bytes(plan.rows, plan.cols, k, plan.itemsize)
    least = (
        "a budget of that at least" if every is not None else "4 times that keeps this spacing; less grows it"
    )
    if need:
        raise InputError(
            "memory_budget",
            f"0 leaves store='checkpoints' no memory, and it keeps its checkpoints in host memory: "
            f"{need:,} bytes for {cls.__name__}'s {plan.rows} x {plan.cols} grid every {k} rows and "
            f"columns ({least}); give a budget, or store='full', which with a budget of 0 keeps "
            "every decision on disk",
        )


def _block_bytes(runner, cls, every: int) -> int:
    """Bytes of one block's decisions as the backend's rounds lay them out."""
    n, dtype = runner.block_words(cls, every)
    return n * dtype.itemsize


def _round_cap(block: int, blocks: int, room: int) -> int:
    """Blocks a traceback round sweeps at most: :data:`ROUND_BLOCKS`, :data:`ROUND_BYTES` of
    decisions (``block`` bytes a block), the grid's ``blocks``, and the ``room`` the memory budget
    leaves beside the checkpoints; one at least (:func:`checkpoint_sweep` refused it if that does
    not fit the memory there is). The rounds' buffer holds that many."""
    return max(1, min(ROUND_BLOCKS, ROUND_BYTES // max(block, 1), blocks, room // max(block, 1)))


class CheckpointResult:
    """A sweep's outcome with checkpoints instead of a decision store (see the module's text).

    The same surface as :class:`gpudp.grid.result.SweepResult`: ``last_row``, ``last_col``,
    ``best_value``, ``best_cell``, ``stats``, :meth:`traceback` and :meth:`decision` (each of these
    two sweeps again the blocks it reads), :meth:`close`. ``stats.extra["traceback"]`` records the
    last traceback's rounds, blocks, cells again and seconds (the backend's kernels among them)."""

    def __init__(self, rec, plan, fwd, every, progress, cap):
        self.recurrence, self.plan, self.every, self._cap = rec, plan, every, cap
        self.stats: Stats = fwd.stats
        self.last_row, self.last_col = fwd.last_row, fwd.last_col
        self.last_layer = None
        self.best_value, self.best_cell = fwd.best_value, fwd.best_cell
        self._progress = progress
        self._user = tuple(rec.data())
        cls = type(rec)
        data = list(fwd.kernel_data)  # symbols, the user's, the reduction's slots (not used again)
        if spec_of(cls).reduce_slots:
            data[-2:] = [np.zeros(1, data[-2].dtype), np.zeros((1, 2), data[-1].dtype)]
        self._data = (*data, np.zeros(4, np.int64))  # and the decision-overflow flag
        self._checkpoints, self._edge_values = fwd.checkpoints, None
        # the blocks' kernels: the cell in 32 bits where that is proven for this grid, as the forward
        # sweep's (gpudp.recurrence.narrow; the data's layout is the same)
        n_in = len(self._user) + (2 if getattr(cls, "symbols", False) else 0)
        narrow = narrow_cell(rec, tuple(data[:n_in]), plan.rows, plan.cols)
        self._kernels = type(narrow[0]) if narrow is not None else cls
        self._runner = backends.get(plan.backend)
        self._context: dict = {}
        self._words = None
        self._last_block = None  # (block, its decisions): decision() of cells in one block

    @property
    def _edges(self) -> tuple:
        """What the rounds' kernels read around a block (:data:`gpudp.codegen.BLOCK_EDGES`): the
        checkpoints and the grid's boundary values, these made at the first traceback."""
        if self._edge_values is None:
            self._edge_values = (*self._checkpoints, *self._boundary())
        return self._edge_values

    def _boundary(self):
        """The grid's boundary values above and left of it: ``brow[c + 1] = boundary(-1, c)`` for
        ``c = -1 .. cols - 1``, ``bcol[r] = boundary(r, -1)``."""
        cls = self._kernels
        brow = values.full(cls, self.plan.cols + 1)
        bcol = values.full(cls, max(self.plan.rows, 1))
        edge_filler(cls, len(self._data))(self.plan.rows, self.plan.cols, brow, bcol, *self._data)
        return brow, bcol

    # -- rounds: blocks swept again with their decisions -------------------------------------
    def _sweep_blocks(self, blocks: np.ndarray):
        """Sweep ``blocks`` (``(nb, 2)`` block indices) again: their decisions (as the backend lays
        them out, :meth:`gpudp.backends.base.Backend.block_words`) and the kernels' seconds."""
        cls = self._kernels
        ws, dtype = self._runner.block_words(cls, self.every)
        n = max(max(len(blocks), self._round_cap()) * ws, 1)  # one lease for every round (page-locked)
        if self._words is None or len(self._words) < n:
            self._words = None
            self._words = self._runner.host_pool().lease(n, dtype)
        flag = self._data[-1]
        args = (self.every, self.plan.rows, self.plan.cols, self._edges, self._words, self._context)
        words, seconds = self._runner.run_blocks(cls, self._data, blocks, *args)
        err = decision_overflow(cls.__name__, flag, "i, j", cls.decision_bits)
        if err is not None:
            flag[:] = 0
            raise err
        return words, seconds

    def _round_blocks(self, i: int, j: int, slope: float, reach: int) -> np.ndarray:
        """The blocks of a round from cell ``(i, j)``: its block, then the blocks along a line up and
        to the left at ``slope`` rows a column (points half a block apart) and half a block, a
        block, ... (the backend's ``round_sides``) to either side of it, nearest first, as far as
        ``reach`` blocks or the round's limits (:data:`ROUND_BLOCKS`, :data:`ROUND_BYTES`)."""
        return band(i, j, float(slope), self.every, reach, self._round_cap(), self._runner.round_sides)

    def _round_cap(self) -> int:
        """Blocks of a round at most (:func:`_round_cap`)."""
        return self._cap

    def _open(self):
        """:class:`ContractError` once :meth:`close` let the checkpoints go (nothing to sweep from)."""
        if self._checkpoints is None:
            raise ContractError(
                f"{type(self.recurrence).__name__}'s result was closed: its checkpoints are gone"
            )

    def decision(self, *cell) -> int:
        """The decision of one cell (its block swept again, unless the last call's cell was in it)."""
        self._open()
        a, b = start_cell(cell, field="cell", role="a cell")
        if not (0 <= a < self.plan.rows and 0 <= b < self.plan.cols):
            raise IndexError(f"cell ({a}, {b}) outside the {self.plan.rows} x {self.plan.cols} grid")
        k = self.every
        block = (a // k, b // k)
        if self._last_block is None or self._last_block[0] != block:  # cells of one block: swept once
            words, _ = self._sweep_blocks(np.array([block], np.int64))
            self._last_block = (block, words[: self._runner.block_words(self._kernels, k)[0]].copy())
        words = self._last_block[1]
        nc = min(k, self.plan.cols - b // k * k)
        return int(block_decision(words, 0, a % k, b % k, nc, k, *self._layout()))

    def _layout(self) -> tuple:
        """How the backend lays out a block's decisions: :func:`gpudp.codegen.block_decision`'s
        ``planes, bits, groups``."""
        planes = self._runner.blocks_layout == "planes"
        return planes, type(self.recurrence).decision_bits, diagonal_groups(self.every if planes else 1)

    def traceback(self, start, state=None) -> np.ndarray:
        """Walk ``back`` from ``start`` until leaving the grid, round by round; the rows
        :meth:`gpudp.grid.result.SweepResult.traceback` would give. A progress bar (as the sweep's)
        counts the anti-diagonals walked back."""
        return self.walk(start, state)[0]

    def walk(self, start, state=None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`traceback`'s path and where ``back`` left the grid (with the state there)."""
        self._open()
        cls = type(self.recurrence)
        if state is not None and not cls.traceback_state:
            raise ContractError(
                f"{cls.__name__}.traceback(start, state=...): the class declares traceback_state = False"
            )
        i, j = start_cell(start)
        rows, cols, k = self.plan.rows, self.plan.cols, self.every
        if not (0 <= i < rows and 0 <= j < cols):
            raise IndexError(f"cell ({i}, {j}) outside the {rows} x {cols} grid")
        s = (0 if state is None else operator.index(state)) if cls.traceback_state else None
        ws, (planes, _, groups) = self._runner.block_words(cls, k)[0], self._layout()
        walker = block_walker(cls, len(self._user), planes)
        slots = np.full((-(-rows // k), -(-cols // k)), -1, np.int32)
        path = np.empty(
            (rows + cols + 1, 4 if cls.traceback_state else 3), np.int64
        )  # a step: i + j - 1 or less
        t0 = time.perf_counter()
        n, rounds, blocks, cells, kernel_s, walk_s = 0, 0, 0, 0, 0.0, 0.0
        slope = (i + 1) / (j + 1)
        probe_back(cls, (i, j), 0, self._user, s)  # back's form, in plain Python, before compiling
        bar = progress_bar(i + j + 1, self._progress, "diagonal")
        with typing_errors(cls):  # cell's, boundary's and back's compiles: a ContractError
            try:
                while 0 <= i < rows and 0 <= j < cols:
                    reach = ROUND_REACH if rounds else min(ROUND_FIRST_REACH, ROUND_REACH)
                    todo = self._round_blocks(i, j, slope, reach)
                    words, seconds = self._sweep_blocks(todo)
                    rounds, blocks, kernel_s = rounds + 1, blocks + len(todo), kernel_s + seconds
                    nr, nc = np.minimum(k, rows - todo[:, 0] * k), np.minimum(k, cols - todo[:, 1] * k)
                    cells += int(np.dot(nr, nc))
                    slots[todo[:, 0], todo[:, 1]] = np.arange(len(todo), dtype=np.int32)
                    s0 = (np.int64(s),) if s is not None else ()
                    tw = time.perf_counter()
                    n, out = walker(i, j, *s0, rows, cols, k, path, n, words, slots, ws, groups, *self._user)
                    walk_s += time.perf_counter() - tw
                    slots[todo[:, 0], todo[:, 1]] = -1
                    if out[-1] == 1:  # a step back may not take
                        bad_step(cls, path[:n], out)
                    i2, j2 = int(out[0]), int(out[1])
                    if s is not None:
                        s = int(out[2])
                    if i - i2 >= k // 2 and j - j2 >= k // 2:  # the direction the path has taken
                        slope = min(max((i - i2) / (j - j2), 1 / 256), 256.0)
                    if bar is not None:
                        bar.update(max(i + j - max(i2 + j2, -1), 0))
                    i, j = i2, j2
            finally:
                if bar is not None:
                    bar.close()
        self.stats.extra["traceback"] = {
            "rounds": rounds,
            "blocks": blocks,
            "cells": cells,
            "seconds": time.perf_counter() - t0,
            "kernel_seconds": kernel_s,
            "walk_seconds": walk_s,
        }
        return path[:n], np.array([i, j] + ([] if s is None else [s]), np.int64)

    def close(self):
        """Let go of the checkpoints (on the GPU for cuda) and of the rounds' buffers; a later
        :meth:`traceback` or :meth:`decision` raises :class:`ContractError`."""
        self._checkpoints, self._edge_values, self._context, self._words = None, None, {}, None
        self._last_block = None
