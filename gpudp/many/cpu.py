"""The batch on the CPU: one generated ``njit(parallel=True)`` kernel, ``prange`` over the instances.

Each instance is swept by one thread, row by row, with a buffer of ``C + 1`` values (the row above
and the value to the left of the row), through the engine's own cell wrapper ``tcell``
(:func:`gpudp.codegen.tile_cell_source`); its decisions go to its slice of the chunk's decision
array, one unsigned integer a cell in row-major order (layout ``rows``), and its last row and last
column to the chunk's packed edges. The instances of a chunk come sorted by size, largest first,
and are dealt round robin to one ``prange`` iteration per thread, so that every thread gets a like
share of the cells. Also here: the compiled walker both backends' chunks are traced back with
(:func:`walker`), run on the host.
"""

from __future__ import annotations

import contextlib
import time

import numba
import numpy as np

from .. import values
from ..backends.cpu import PARALLEL_LOCK, cell_namespace, compiled
from ..backends.threads import rerun_lost
from ..cache import jit_generated
from ..codegen import compile_source, diagonal_index, fill, spec_of, tile_cell_source
from ..jit import njit
from ..kernel import KernelFactory
from . import source
from .chunks import ChunkOut

LAYOUT = "rows"
#: decision bytes of one chunk at most
CHUNK_BYTES = 1 << 28

#: the batch kernels and walkers built in this process (gpudp.kernel)
_KERNELS = KernelFactory("many.cpu", "rec", "kinds", "nrt")
_WALKERS = KernelFactory("many.cpu.walk", "rec", "kinds")


def _no_slot():
    """A reduction's slot in the batch on the CPU: an instance has one thread, so one slot."""
    return 0


def _sweep_lines(rec_cls, n_data: int, n_sym: int) -> list[str]:
    """The sweep of instance ``b`` (``R x C``, decisions from ``base``): lines of the kernel's body."""
    bits = rec_cls.decision_bits
    sp = spec_of(rec_cls)
    db = sp.fn_args(n_data)  # what boundary receives
    du = sp.user_args(n_data)  # what tcell receives after the symbols
    ri = "dat0[i]" if n_sym else "0"
    cj = "dat1[j]" if n_sym else "0"
    lines = [
        "up = VEMPTY(C + 1)",
        f"ST(up, 0, VT(boundary(-1, -1{db})))",
        "for j in range(C):",
        f"    ST(up, j + 1, VT(boundary(-1, j{db})))",
        "for i in range(R):",
        f"    left = VT(boundary(i, -1{db}))",
        "    diag = LD(up, 0)",
        "    ST(up, 0, left)",
        f"    ri = {ri}",
        "    row = base + i * C",
        "    for j in range(C):",
        "        upv = LD(up, j + 1)",
        f"        v, dd = tcell(i, j, upv, left, diag, ri, {cj}{du})",
        "        diag = upv",
        "        left = v",
        "        ST(up, j + 1, v)",
    ]
    if bits:
        lines.append("        words[row + j] = dd")
    lines += [
        "    ST(lc, lcoff[q] + i, left)",
        "for j in range(C):",
        "    ST(lr, lroff[q] + j, LD(up, j + 1))",
    ]
    return lines


_RUN_MANY = """def run_many(wstart, order, ids, shapes, doff, words, lr, lroff, lc, lcoff, RV, RC, FL{pk}):
    done = 0  # workers finished: fewer where one's raise was lost (gpudp.backends.cpu)
    for w in prange(len(wstart) - 1):
        for p in range(wstart[w], wstart[w + 1]):
            {body}
        done += 1
    return done
"""


def kernel(rec_cls, kinds, n_sym: int, nrt: bool):
    """The batch kernel of ``rec_cls`` for packed items of ``kinds`` (:func:`gpudp.many.source.views`;
    the symbols first when the class declares them), compiled once per class and kinds in the
    process and cached on disk (:func:`gpudp.cache.jit_generated`); numba specialises it per
    argument types (the data's dtypes). ``nrt``: the cell with numba's reference counting (only
    for a cell that allocates: :func:`gpudp.backends.cpu.cell_namespace`; with it, a cell that
    reads its data arrays inside a branch ran 10x slower, its counts' atomics left unpruned)."""
    k = _KERNELS.lookup(rec=rec_cls, kinds=tuple(kinds), nrt=nrt)
    if k.ready:
        return k.fn
    sp = spec_of(rec_cls)
    n_data = len(kinds) + sp.outputs
    ns = cell_namespace(rec_cls, nrt)
    ns["red_slot"] = njit(_no_slot, cache=True)
    ns["tcell"] = njit(compile_source(tile_cell_source(rec_cls, n_data, rec_cls.offsets), "tcell", dict(ns)))
    body = [
        "q = order[p]",
        "b = ids[q]",
        "R = shapes[b, 0]",
        "C = shapes[b, 1]",
        "base = doff[q]",
        *source.views(kinds),
        *source.output_views(sp.reduce_slots, sp.flags, len(kinds)),
        *_sweep_lines(rec_cls, n_data, n_sym),
    ]
    src = values.expand(fill(_RUN_MANY, pk=source.packed_args(len(kinds)), body=body), rec_cls)
    return k.keep(jit_generated(src, "run_many", ns, njit, "cpu", parallel=True)).fn


def walker(rec_cls, kinds):
    """The compiled walk of a chunk's instances (:func:`gpudp.many.source.walker_source`), in
    parallel over the instances, over either layout (its first argument); ``kinds`` are the items
    ``back`` receives."""
    from ..schedule import derive

    k = _WALKERS.lookup(rec=rec_cls, kinds=tuple(kinds))
    if k.ready:
        return k.fn
    s = derive(rec_cls.offsets, 2, 2)  # the sweep's order: a step of back must go back along it
    ns = {
        "np": np,
        "prange": numba.prange,
        "back": njit(rec_cls.back),
        "diagonal_index": diagonal_index,
        "A": s.a,
        "B": s.b,
    }
    src = source.walker_source(rec_cls, kinds)
    return k.keep(jit_generated(src, "walk_many", ns, njit, "cpu", parallel=True)).fn


def walk(cls, fn, layout: str, *args) -> None:
    """Run ``cls``'s walker over decisions laid out as ``layout`` (one parallel region at a time in
    the process, :data:`PARALLEL_LOCK`); a walk that a worker's lost raise left undone, again on one
    thread (:func:`gpudp.backends.threads.rerun_lost`)."""
    with PARALLEL_LOCK:
        if fn(source.LAYOUTS.index(layout), *args) != len(args[0]):
            rerun_lost(cls, fn, source.LAYOUTS.index(layout), *args)


def deal(cells: np.ndarray, threads: int) -> tuple[np.ndarray, np.ndarray]:
    """``(wstart, order)``: the positions ``0 .. len(cells) - 1`` by size, largest first, dealt
    round robin to ``threads`` workers: worker ``w`` takes ``order[wstart[w] : wstart[w + 1]]``."""
    n = len(cells)
    w = max(1, min(threads, n))
    by_size = np.argsort(-cells, kind="stable")
    order = np.concatenate([by_size[k::w] for k in range(w)]) if n else by_size
    counts = np.array([len(by_size[k::w]) for k in range(w)], np.int64)
    wstart = np.zeros(w + 1, np.int64)
    np.cumsum(counts, out=wstart[1:])
    return wstart, order.astype(np.int64)


class Runner:
    """Runs a batch's chunks on the CPU (see the module's text). ``start`` computes a chunk at once
    (the handle it returns is finished)."""

    name = "cpu"
    layout = LAYOUT

    def __init__(self, rec_cls, kinds, n_sym, packed, shapes):
        self.cls, self.packed, self.shapes = rec_cls, packed, shapes
        self.make = lambda nrt: kernel(rec_cls, kinds, n_sym, nrt)
        self.fn = None
        self.slots = 1
        self.compile_seconds = 0.0
        self.launches = 0

    def chunk_bytes(self, budget: int) -> int:
        """Decision bytes of one chunk at most: within the budget and :data:`CHUNK_BYTES`."""
        return max(1, min(CHUNK_BYTES, budget))

    def running(self):
        """The span of the batch's chunks (nothing to hold here)."""
        return contextlib.nullcontext()

    def start(self, chunk):
        t = time.perf_counter()
        fn, cls = self.fn, self.cls
        out = ChunkOut.allocate(cls, chunk, self.slots, np.empty)
        wstart, order = deal(chunk.cells, numba.get_num_threads())
        args = (
            chunk.ids,
            self.shapes,
            chunk.doff,
            out.words,
            out.lr,
            chunk.lroff,
            out.lc,
            chunk.lcoff,
            out.rv,
            out.rc,
            out.flags,
            *self.packed,
        )
        with PARALLEL_LOCK:
            if fn is None:  # the first call compiles (no worker: types only), timed apart
                fn = self.fn = compiled(self.make, np.zeros(1, np.int64), np.zeros(0, np.int64), *args)
                self.compile_seconds = time.perf_counter() - t
                t = time.perf_counter()
            if fn(wstart, order, *args) != len(wstart) - 1:  # a worker's raise lost: all on one
                rerun_lost(cls, fn, np.array([0, len(order)], np.int64), order, *args)
        self.launches += 1
        out.kernel_seconds = time.perf_counter() - t
        return out
