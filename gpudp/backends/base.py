"""What the engine asks of a backend (:class:`Backend`)."""

from __future__ import annotations

import numpy as np

from ..codegen import decision_dtype, diagonal_groups
from ..memory import BlockPool


class Backend:
    """What the engine asks of a backend. A backend module defines ``BACKEND``, an instance of a
    subclass that sets the attributes and defines the methods that differ; the engine never
    branches on a backend's name.

    Memory planning (:meth:`gpudp.grid.plan.Plan.memory`) asks :meth:`slab_words` and
    :meth:`sweep_memory`; they state what :meth:`run_plan` allocates, so they live beside it.
    """

    name = ""
    #: (rows, columns) of a unit-window grid's tiles unless the caller gives one
    default_tile = (256, 256)
    #: a tile's rows must be a multiple of this (its columns always of 32)
    tile_rows_multiple = 1
    #: the most cells of one chunk (the unit of launching, eviction and progress)
    chunk_cells = 1 << 62
    #: the most decision words of one chunk's slab (a chunk of one larger unit excepted)
    slab_words_max = 1 << 62
    #: whether the dependency window's values live in the device's memory (else in the host's)
    values_on_device = False
    #: whether each worker of a local cluster (``--workers``) takes one device of its own (the
    #: cluster then has at most one worker a device: :func:`gpudp.distributed.cluster`'s ``gpus``)
    one_device_a_worker = False
    #: bytes of decisions above which ``store="auto"`` traces a tiled grid back from checkpoints even
    #: where the full store fits the memory budget: keeping every decision then costs more than
    #: sweeping the path's blocks again. Host memory: 16 GiB (LCS 2^19 on the GPU machines, 32 GiB:
    #: full 1.06 s against 0.92 s from checkpoints, H100 2026-11-24; 2^20 in 154 GiB of a 512 GiB
    #: host, full 53-94 s against 2.3 s, 4 x H200 2026-11-26)
    full_store_max = 16 << 30
    #: a grid whose wavefronts hold fewer cells than this is swept row after row by one thread (the
    #: plan ``serial``, :func:`gpudp.grid.plan.serial_order`) where its offsets allow; 0: never
    serial_width = 0

    def available(self) -> bool:
        """Whether kernels can run here."""
        return True

    def unavailable_reason(self) -> str:
        """Why :meth:`available` is False, in words."""
        return f"{self.name} is available"

    def device_name(self) -> str:
        raise NotImplementedError

    def tile_for(self, rec_cls) -> tuple[int, int]:
        """The default tile for this recurrence's cells (a backend may pick by the cell's size)."""
        return self.default_tile

    def fit_tile(self, tile: tuple[int, int], rows: int, cols: int) -> tuple[int, int]:
        """The tile a ``rows x cols`` grid runs with, from ``tile`` (the default or the caller's)."""
        return tile

    def chunk_limits(self, plan) -> tuple[int, int]:
        """``(max_words, max_cells)`` of the chunks :meth:`run_plan` cuts ``plan`` into."""
        return self.slab_words_max, self.chunk_cells

    def slab_words(self, total_words: int, widest_unit_words: int) -> int:
        """Words of one decision slab at most, for a sweep of ``total_words`` whose largest unit
        (layer, tile anti-diagonal) has ``widest_unit_words``: chunks are cut to
        :attr:`slab_words_max` words unless one unit is larger (see :meth:`Plan.make_chunks`)."""
        return max(widest_unit_words, min(self.slab_words_max, total_words), 1)

    def sweep_memory(self, slab_words: int, bits: int, codec: str, spill: bool) -> tuple[int, int]:
        """``(device bytes, host bytes)`` of the decision slabs and staging :meth:`run_plan`
        allocates, with slabs of ``slab_words`` words, ``bits`` decision bits, the store's
        ``codec`` and the plain store on disk (``spill``); the values and the store come apart."""
        return 0, 0

    def memory(self) -> tuple[int, int] | None:
        """(free, total) bytes of the memory the kernels compute in, or None for host memory."""
        return None

    def allocate_words(self, n: int) -> np.ndarray:
        """A zeroed uint32 array of ``n`` words for an in-memory decision store."""
        return np.zeros(n, np.uint32)

    def device_store(self, plan, device_bytes: int):
        """A :class:`gpudp.store.DeviceStore` for ``plan``'s decisions, left where the kernels write
        them, or None (the store goes to the host). ``device_bytes``: what the sweep itself takes
        on the device. A backend without a device of its own keeps none there."""
        return None

    def pageable_store(self, n_words: int) -> bool:
        """Whether an in-memory decision store of ``n_words`` words is plain (pageable) memory that
        the sweep's words reach through staging buffers (:meth:`sweep_memory` counts them), where a
        backend would otherwise page-lock it."""
        return False

    def reduction_slots(self, plan=None) -> int:
        """How many per-thread slots a reduction (``Recurrence.reduce``) needs: more than the
        largest ``red_slot()`` any of :meth:`run_plan`'s kernels can return (for ``plan``, when
        given; else for any plan)."""
        return 1

    def host_pool(self) -> BlockPool:
        """Where host blocks that stream to and from the kernels come from: a :class:`BlockPool` of
        plain memory here (its blocks live as long as their user); the cuda backend's is its
        process-wide page-locked pool."""
        return BlockPool()

    def run_plan(self, plan, rec, data, store, stats, bar) -> dict:
        """Run a planned sweep: decisions into ``store``, statistics into ``stats``, progress on
        ``bar``; return the result's arrays (``last_row``/``last_col`` or ``last_layer``)."""
        raise NotImplementedError

    def page_locked(self, x: np.ndarray) -> np.ndarray:
        """``x`` in memory this backend's devices copy from fastest (:func:`gpudp.backends.page_locked`);
        host memory as it is here."""
        return x

    #: how :meth:`run_blocks` lays out a block's decisions: ``"rows"`` (one integer a cell,
    #: row-major) or ``"planes"`` (bit planes of the anti-diagonals' groups of 32 cells); both read
    #: by :func:`gpudp.codegen.block_decision`
    blocks_layout = "rows"

    def block_words(self, rec_cls, every: int) -> tuple[int, np.dtype]:
        """The words one ``every x every`` block's decisions take in :attr:`blocks_layout`, and
        their type."""
        bits = rec_cls.decision_bits
        if self.blocks_layout == "planes":
            return int(diagonal_groups(every)[-1]) * bits, np.dtype(np.uint32)
        return every * every, decision_dtype(bits)

    #: how wide a traceback round's band of blocks is (:mod:`gpudp.checkpoints`): half blocks on either
    #: side of the path's line. A wider band holds the path for more blocks (fewer rounds) at the
    #: cost of more cells swept again: where a round costs a launch and a wait (a GPU) it pays
    round_sides = 1

    def run_blocks(self, rec_cls, data, blocks, every, rows, cols, edges, words, context):
        """Sweep blocks of a tiled grid again, each from the values around it, keeping decisions:
        what the traceback of :mod:`gpudp.checkpoints` does in rounds.

        ``blocks`` (int64, ``(nb, 2)``): block ``(bi, bj)`` holds cells ``bi * every ..`` and
        ``bj * every ..`` of the ``rows x cols`` grid; ``edges``: ``(ckrow, ckcol, brow, bcol)`` as
        :data:`gpudp.codegen.BLOCK_EDGES` reads them (this backend's buffers: the forward sweep's
        checkpoints where it left them); ``data``: the kernels' data (symbols, the user's, the
        reduction's slots if any, the decision-overflow flag, which is updated); ``words``: a host
        array of at least ``nb * WS`` words (``WS, dtype =`` :meth:`block_words`) that block ``q``'s
        decisions fill from ``q * WS`` (laid out as :attr:`blocks_layout` says); ``context``: a
        dict kept by the caller across calls (device copies, compiled kernels). Returns ``(words,
        kernel seconds)``."""
        raise NotImplementedError


def checkpoint_arrays(plan, rec_cls, empty):
    """``(rows, cols, every)``: what a tiled sweep's kernels write their checkpoints into.

    With ``plan.checkpoint = K > 0`` the kernels copy the values of rows ``K - 1, 2K - 1, ...``
    (all but the last row) into ``rows[m]`` and of columns ``K - 1, 2K - 1, ...`` into ``cols[m]``
    (see :mod:`gpudp.checkpoints`); else both are 1 x 1 and unused. ``empty(shape, dtype)`` allocates
    (``np.empty``, or a device allocator); a record cell gets a tuple of arrays, one per field
    (:mod:`gpudp.values`)."""
    from ..values import fields

    fs = fields(rec_cls)

    def alloc(shape):
        return (
            empty(shape, np.dtype(rec_cls.value_dtype)) if fs is None else tuple(empty(shape, f) for f in fs)
        )

    k = plan.checkpoint
    if not k:
        return alloc((1, 1)), alloc((1, 1)), 0
    nr, nc = (max((n - 1) // k, 1) for n in (plan.rows, plan.cols))
    return alloc((nr, max(plan.cols, 1))), alloc((nc, max(plan.rows, 1))), k


def line_edges(plan, line: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(last_row, last_col)`` of a line plan from the line's values (on the host): the line is
    the grid's one row (or column), and the schedule's last column (or row) is its last cell, or
    its first when the sweep runs down the line."""
    end = line[-1:] if plan.schedule.line_step > 0 else line[:1]
    if plan.schedule.by_row_index:
        return line, end.copy()
    return end.copy(), line


def shape_args(plan) -> tuple:
    """The layered kernels' arguments that 2-D layers add: the columns of each layer (``LC``)."""
    return () if plan.shapes is None else (np.ascontiguousarray(plan.shapes[1], np.int64),)


def last_layer(plan, layer):
    """The result's ``last_layer`` from its slot of the ring (a view, on the host or the device):
    the layer's cells, or for 2-D layers its ``rows x cols`` block."""
    last = plan.n_units - 1
    if plan.shapes is not None:
        return layer[: int(plan.shapes[0][last]), : int(plan.shapes[1][last])]
    return layer[: int(plan.sizes[last])]
