"""The CUDA backend object (:data:`BACKEND`): what the engine asks of a backend, answered with the
driver, the kernels and the run loop of this package."""

from __future__ import annotations

import numpy as np
from numba import cuda

from ... import values
from ...codegen import decision_dtype, diagonal_groups
from ...store import WORD_BYTES, DeviceStore
from ..base import Backend
from . import driver
from .blocks import PACK_THREADS, RETRACE_GRID, RETRACE_THREADS, block_shared, blocks_kernel, pack_kernel
from .driver import (
    event,
    is_simulator,
    launch_known,
    memory_info,
    page_locked_copy,
    pinned_pool,
    pinned_words,
    sim_geometry,
    upload,
)
from .run import SLAB_WORDS, run_plan


def _pull(device_words, w0, w1, out):
    """A device store's words ``w0:w1`` copied into ``out`` (:class:`gpudp.store.DeviceStore`)."""
    device_words[w0:w1].copy_to_host(out)


class _CUDA(Backend):
    name = "cuda"
    default_tile = (256, 256)
    tile_rows_multiple = 32  # a warp's lanes hold 32-row strips
    # the decisions cross PCIe into page-locked memory while the kernels run; from checkpoints the
    # whole call was faster at every size measured, from 0.13 GiB of decisions up (LCS, 2^15:
    # 0.021 s against 0.029; Smith-Waterman 2^17, 4 GiB: 0.084 against 0.127; Gotoh 2^17, 8 GiB:
    # 0.182 against 0.239; H100, tools/store_bench.py, 2026-11-28)
    full_store_max = 128 << 20

    #: a values-only sweep's tile columns (``traceback=False``: no decision words, whose slabs the
    #: columns size): a tile's first and last 32 steps run the checked loop, so wider tiles run the
    #: unchecked steady loop longer. H100, 2^17, kernels (docs/benchmarks.md, 2026-12-07):
    #: Smith-Waterman 256 x 256 497 GCUPS, 256 x 1024 582; Gotoh 229 and 242
    values_tile_cols = 1024

    def tile_for(self, rec_cls):
        """Half-height tiles for cells wider than 8 bytes (records): a lane keeps its rows' values
        and decision words in registers, and fewer rows keep them in registers. Measured on the
        H100 (tools/tile_sweep.py, Gotoh's three int32 fields, 2^17): 128 x 256 tiles, 128
        registers a thread, 58.7 GCUPS of kernels; 256 x 256, 174 registers, 51.1. A class with no
        decisions (a values-only sweep) takes :attr:`values_tile_cols` columns."""
        from ...values import itemsize

        bh, tw = self.default_tile
        if not rec_cls.decision_bits:
            tw = self.values_tile_cols
        return (bh // 2, tw) if itemsize(rec_cls) > 8 else (bh, tw)

    slab_words_max = SLAB_WORDS
    values_on_device = True
    one_device_a_worker = True

    def available(self):
        return driver.available()

    def unavailable_reason(self):
        return driver.unavailable_reason()

    def device_name(self):
        return driver.device_name()

    def fit_tile(self, tile, rows, cols):
        """The tile is a compile-time constant of the kernel (a lane's rows are unrolled): rounded up
        to a power of two (rows 32..256, columns 32 up to the tile's), so that a few kernels a
        recurrence are compiled, each once per machine (:mod:`gpudp.cache`), instead of one per
        shape."""
        bh, tw = tile
        return min(bh, max(32, _pow2(rows))), min(tw, max(32, _pow2(cols)))

    def sweep_memory(self, slab_words, bits, codec, spill):
        """What :func:`run_plan` allocates besides the values: on the device two slabs (the bands
        codec adds the encoder's two compacted buffers); on the host two page-locked staging slabs
        when the words go to a disk store, a plain memory one (``spill``: either) or to bands."""
        if not bits:
            return 0, 0
        slabs = 4 if codec == "bands" else 2
        staging = 2 * slab_words * WORD_BYTES if spill or codec == "bands" else 0
        return slabs * slab_words * WORD_BYTES, staging

    def memory(self):
        return memory_info()

    #: bytes of a decision store page-locked at most: a larger one is plain memory, written from two
    #: page-locked staging slabs on every thread while the next chunk computes. Page-locking costs
    #: its time up front, once a process (the pool keeps the block): 11.0 s for the 20.8 GB of
    #: Held-Karp n = 32 on an H200 (1.9 GB/s), where the plain store's whole solve took 16.7 s and
    #: the page-locked one's 17.5 s (docs/benchmarks.md, 2026-12-07). Under 1 GiB page-locking
    #: costs at most about half a second, and a process that solves again gets the block for free
    pinned_store_max = 1 << 30

    def pageable_store(self, n_words):
        return n_words * WORD_BYTES > self.pinned_store_max

    #: a pull of a device store's page to the host (:class:`gpudp.store.DeviceStore`), seconds: a
    #: launch-free copy of 256 KiB, its latency more than its bytes
    pull_seconds = 50e-6
    #: bytes a second that a plain-memory store costs beyond a page-locked one (its pages touched
    #: first, the staging copies landed): Held-Karp n = 32's 20.8 GB, 16.7 s whole against 6.5 s
    #: with the store already page-locked, H200 2026-12-07: 2.0 GB/s
    plain_store_rate = 2.0e9
    #: the share of the device's free memory that the sweep and a device store may take together
    device_store_share = 0.9

    def device_store(self, plan, device_bytes):
        """Layers' decisions (one cell a layer walked: the layered plans, plain codec) stay on the
        device where the store would be plain memory (past :attr:`pinned_store_max`), fits in
        :attr:`device_store_share` of the free device memory beside ``device_bytes``, and its
        walk's pulls, a page a layer, would take less time than landing the store in plain memory
        (:attr:`pull_seconds` against :attr:`plain_store_rate`)."""
        if plan.kind != "layered" or plan.schedule is not None or plan.shapes is not None:
            return None
        if plan.codec != "plain" or not plan.bits:
            return None
        n = plan.layout.n_words
        nbytes = n * WORD_BYTES
        if not self.pageable_store(n) or plan.n_units * self.pull_seconds >= nbytes / self.plain_store_rate:
            return None
        if nbytes + device_bytes > self.device_store_share * memory_info()[0]:
            return None
        words = cuda.device_array(max(n, 1), np.uint32)
        words[:] = 0  # (a cell outside the active ranges reads 0, as from the cpu's store)
        return DeviceStore(n, words, _pull)

    def allocate_words(self, n):
        """Page-locked (:func:`pinned_words`), so that the slabs' copies are asynchronous DMA; plain
        memory past :attr:`pinned_store_max` (:meth:`pageable_store`). Not zeroed: the slabs' copies
        write every word."""
        return np.empty(n, np.uint32) if self.pageable_store(n) else pinned_words(n)

    def reduction_slots(self, plan=None):
        """Every launch is capped at the co-resident grid (``coop_blocks``): at most 4 blocks of at
        most 1,024 threads an SM when the driver gives no figure; a tiled plan's at its rows of tiles,
        a warp a row (the slots go to the device and back with every sweep: 13 MB
        for an H100's co-resident grid)."""
        if is_simulator():
            return 1024
        most = cuda.get_current_device().MULTIPROCESSOR_COUNT * 4096
        if plan is not None and plan.kind == "tiled":
            return min(most, 32 * max(plan.layout.ni, 1))
        return most

    def host_pool(self):
        return pinned_pool()

    def run_plan(self, plan, rec, data, store, stats, bar):
        return run_plan(plan, rec, data, store, stats, bar, self)

    def page_locked(self, x):
        """A page-locked copy of ``x`` (:func:`page_locked_copy`)."""
        return page_locked_copy(x)

    #: how block decisions are laid out (:meth:`run_blocks`): bit planes
    blocks_layout = "planes"
    #: a round's band two half blocks to either side: H200, 2^17 (2026-11-26), Smith-Waterman 2
    #: rounds instead of 4, Gotoh 4 instead of 8 (its path leaves a narrower band sideways)
    round_sides = 2

    def run_blocks(self, rec_cls, data, blocks, every, rows, cols, edges, words, context):
        """Blocks of a tiled grid swept from their edges, with their decisions (see
        :meth:`gpudp.backends.base.Backend.run_blocks`): one launch, a thread block a block, each
        block's decisions one integer a cell; one launch that packs them into bit planes; their
        copy to ``words`` (page-locked when it is: asynchronous DMA). The data go to the device on
        the first call and stay there with the device buffers (in ``context``)."""
        st = context.get("stream")
        if st is None:
            st = context["stream"] = cuda.stream()
            up = upload((*data, *edges), st)
            context["data"], context["edges"] = up[: len(data)], up[len(data) :]
        d_data, d_edges = context["data"], context["edges"]
        bits = rec_cls.decision_bits
        nb, ws = len(blocks), self.block_words(rec_cls, every)[0]
        if context.get("every") != every:  # a block's groups of 32 cells, and each one's diagonal
            groups = diagonal_groups(every)
            gdiag = np.repeat(np.arange(len(groups) - 1, dtype=np.int32), np.diff(groups))
            context["every"] = every
            context["groups"], context["gdiag"] = upload((groups, gdiag), st)
            context["sizes"] = (0, 0)
        gt = len(context["gdiag"])  # groups of a block
        grid = min(nb, sim_geometry(RETRACE_GRID, 2))
        threads = sim_geometry(min(RETRACE_THREADS, _pow2(max(every, 32))), 4)
        have = context.get("sizes", (0, 0))
        need = (max(have[0], 1 if block_shared(rec_cls, every) else grid), max(have[1], nb))
        if need != have:  # device buffers of the largest round so far
            most = need[1]
            fs = values.fields(rec_cls) or [np.dtype(rec_cls.value_dtype)]
            parts = tuple(cuda.device_array((need[0], 3 * every), f, stream=st) for f in fs)
            context["scratch"] = parts if values.fields(rec_cls) else parts[0]
            context["cells"] = cuda.device_array(most * gt * 32, decision_dtype(bits), stream=st)
            context["words"] = cuda.device_array(max(most * ws, 1), words.dtype, stream=st)
            at = np.empty(2 * most, np.int64)  # pageable: 16 KiB, copied before the launch
            context["at"] = (at, cuda.device_array(2 * most, np.int64, stream=st))
            context["sizes"] = need
        d_words, (at, d_at) = context["words"], context["at"]
        at[:nb], at[nb : 2 * nb] = blocks[:, 0], blocks[:, 1]  # rows, then columns: no allocation a round
        d_at[: 2 * nb].copy_to_device(at[: 2 * nb], stream=st)
        start, end = event(), event()
        start.record(st)
        syms = (data[0].dtype.str, data[1].dtype.str) if getattr(rec_cls, "symbols", False) else None
        args = (nb, d_at[:nb], d_at[nb : 2 * nb], every, rows, cols, *d_edges, context["cells"], gt * 32)
        args += (context["groups"], context["scratch"], *d_data)
        launch_known(context, blocks_kernel(rec_cls, len(data), every, syms), grid, threads, st, args)
        if bits:
            n = nb * gt
            pack = sim_geometry(min(-(-n // PACK_THREADS), 4 * RETRACE_GRID), 2)
            args = (n, gt, context["cells"], context["gdiag"], context["groups"], d_words, ws)
            launch_known(context, pack_kernel(bits), pack, sim_geometry(PACK_THREADS, 4), st, args)
        end.record(st)
        if nb * ws:
            d_words[: nb * ws].copy_to_host(words[: nb * ws], stream=st)
        if bits:  # the decision-overflow flag
            d_data[-1].copy_to_host(data[-1], stream=st)
        st.synchronize()
        try:
            seconds = max(start.elapsed_time(end) / 1e3, 0.0)
        except Exception:  # the simulator's events carry no time
            seconds = 0.0
        return words, seconds


def _pow2(x: int) -> int:
    return 1 << max(int(x) - 1, 0).bit_length()


BACKEND = _CUDA()
