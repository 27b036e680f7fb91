"""The CPU backend: numba ``njit`` (``parallel=True`` with ``prange``) over the same cell functions."""

from __future__ import annotations

import functools
import os
import platform
import threading
import time

import numba
import numpy as np

from .. import values
from ..errors import kernel_raises
from ..jit import njit
from ..kernel import KernelFactory
from ..store import WORD_BYTES, encode_bands, tiled_last_row
from .base import Backend, checkpoint_arrays, last_layer, line_edges, shape_args
from .threads import ThreadChoice, rerun_lost, threads_at_most

#: the kit: what shapes, features and plug-ins may take from this backend (tests/test_imports.py);
#: the rest is private to it (the registry takes ``BACKEND``)
__all__ = ["ALL_INLINE", "PARALLEL_LOCK", "cell_namespace", "compiled", "nrt_options"]

#: a chunk (unit of eviction, progress and Ctrl-C checks) is about this many cells on the CPU
CPU_CHUNK_CELLS = 1 << 22
#: decision words of one chunk's slab when the store keeps bands (a chunk is cut to fit)
CPU_SLAB_WORDS = 1 << 22

#: numba's parallel regions are not safe to enter from two threads at once under its ``workqueue``
#: threading layer (the fallback where OpenMP and TBB are missing): the process aborts. Every
#: parallel CPU kernel of gpudp runs under this lock; a sweep uses all cores anyway.
PARALLEL_LOCK = threading.RLock()


@functools.cache
def _cpu_model() -> str:
    """The processor's name, read once (/proc/cpuinfo runs to ~100 KB on a large host)."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return cpu


@functools.cache
def _cpu_count() -> int | None:
    """The CPUs of this machine, read once (the device's name in every sweep's statistics)."""
    return os.cpu_count()


def device_name() -> str:
    return f"{_cpu_model()} ({numba.get_num_threads()} threads of {_cpu_count()} CPUs)"


# ---------------------------------------------------------------------------------------------
# Generated sweeps. Each is compiled once per recurrence class (and schedule), in memory for the
# process and on disk for the machine (gpudp.cache).
# ---------------------------------------------------------------------------------------------

#: the generated sweeps' families (gpudp.kernel): each kernel built once per key in the process
#: (the switches :data:`NOALIAS` and :data:`LAZY_DEPS` are parts of the keys of the kernels they
#: change: a process that flips one builds, or finds, the other variant)
_TILED_RUNNERS = KernelFactory("cpu.tiled", "rec", "n_data", "nrt", "noalias")
_LAYERED_RUNNERS = KernelFactory("cpu.layered", "rec", "n_data", "schedule", "nrt", "noalias", "lazy")
_LINE_RUNNERS = KernelFactory("cpu.line", "rec", "n_data", "schedule", "nrt", "noalias", "lazy")
_BLOCK_RUNNERS = KernelFactory("cpu.blocks", "rec", "n_data", "nrt")
_SERIAL_RUNNERS = KernelFactory("cpu.serial", "rec", "n_data", "schedule", "step", "nrt", "noalias", "lazy")

# LOST RAISES. numba loses an exception raised on a worker thread of a parallel region, and the
# rest of that thread's share of the loop with it: the region ends as if all were done, and the sweep
# went on over what the buffers held (docs/tutorial.md). Each region that calls the user's functions
# counts the items it finished (a reduction: one add an item, in a register); one that comes back
# short ends the kernel, which returns the unit (tile anti-diagonal, layer) it was running, else -1,
# and the host runs that unit again on one thread, where what the cell raises comes back
# (:func:`gpudp.backends.threads.rerun_lost`). The interval, 3-D and batch kernels do the same.
_TILED = """
def run_tiles(d0, d1, NI, NJ, R, C, BH, TW, bottom, right, words, wtile0, diag_off, ckrow, ckcol, CK{da}):
    RPT = -(-BH // 32)
    WPT = (TW // 32) * BITS * BH
    for d in range(d0, d1):
        imin = max(0, d - (NJ - 1))
        imax = min(d, NI - 1)
        done = 0  # tiles finished: fewer where a worker's raise was lost (LOST RAISES)
        for q in prange(imax - imin + 1):
            I = imin + q
            J = d - I
            twb = (diag_off[d] + q - wtile0) * WPT
            r0 = max(I * BH, 0)  # max: the tile's cells never negative to LLVM (see _GROUP)
            r1 = min(r0 + BH, R)
            c0 = max(J * TW, 0)
            ncol = min(TW, C - c0)
            eb = J * (TW + 1)
            up = VEMPTY(TW + 1)
            {tile_init}
            {red_init}
            if I == 0:
                ST(up, 0, VT(boundary(-1, c0 - 1{db})))
                for jj in range(ncol):
                    ST(up, jj + 1, VT(boundary(-1, c0 + jj{db})))
            else:
                if J == 0:
                    ST(up, 0, VT(boundary(r0 - 1, -1{db})))
                else:
                    ST(up, 0, LD(bottom, eb))
                for jj in range(ncol):
                    ST(up, jj + 1, LD(bottom, eb + 1 + jj))
            for ii in range(r1 - r0):
                i = r0 + ii
                if J == 0:
                    left = VT(boundary(i, -1{db}))
                else:
                    left = LD(right, i)
                ri = {row_sym}
                diag = LD(up, 0)
                ST(up, 0, left)
                {planes_init}
                for jj in range(ncol):
                    upv = LD(up, jj + 1)
                    v, dd = tcell(i, c0 + jj, upv, left, diag, ri, {col_sym}{du})
                    {red_acc}
                    diag = upv
                    left = v
                    ST(up, jj + 1, v)
                    {planes_acc}
                ST(right, i, left)
            ST(bottom, eb, LD(up, 0))
            for jj in range(ncol):
                ST(bottom, eb + 1 + jj, LD(up, jj + 1))
            {red_flush}
            if CK > 0:  # checkpoints: rows and columns CK - 1, 2 CK - 1, ... (see codegen)
                if r1 % CK == 0 and r1 < R:
                    for jj in range(ncol):
                        ST(ckrow, (r1 // CK - 1, c0 + jj), LD(up, jj + 1))
                if (c0 + ncol) % CK == 0 and c0 + ncol < C:
                    for i in range(r0, r1):
                        ST(ckcol, ((c0 + ncol) // CK - 1, i), LD(right, i))
            done += 1
        if done != imax - imin + 1:
            return d
    return -1
"""

_LAYERED = """
def run_layers(t0, t1, q0, q1, serial, ring, lo, hi, g0, gn, woff, words, wbase, last_row, last_col, R,
               C{lc}{da}):
    W1 = ring.shape[0]
    for t in range(t0, t1):
        a = lo[t]
        b = hi[t]
        row = ring[t % W1]
        {hoist}
        n = max(min(gn[t], q1) - q0, 0)
        if n < serial:  # a small layer, or one thread (serial_groups)
            for qq in range(n):
                {body}
        else:
            done = 0  # fewer where a worker's raise was lost (LOST RAISES)
            for qq in prange(n):
                {body}
                done += 1
            if done != n:
                return t
    return -1
"""

#: layers of fewer groups of 32 cells than this run on one thread (measured: see docs/benchmarks.md)
SERIAL_GROUPS = 64
#: the layered runner's ``serial`` argument that runs every layer inline
ALL_INLINE = 1 << 62


def serial_groups() -> int:
    """Layers of fewer groups than this run as a plain loop: :data:`SERIAL_GROUPS`, or every layer
    when numba runs one thread (the loop outlined for the threads ran a light cell about 2x slower
    than the same loop inline: the two-constraint knapsack at W = V = 1,000, one thread, 1.31 s
    against 0.67 s on the development machine, 2026-11-26)."""
    return SERIAL_GROUPS if numba.get_num_threads() > 1 else ALL_INLINE


# A group of 32 cells of a layer. Its first cell is written ``max(.., 0)`` so that LLVM knows it is
# not negative: numba tests every index into an array for a negative one (Python's wraparound), and
# when LLVM cannot rule that out it loads a cell's ``prev[k]``, ``data[k]`` for the 32 lanes by
# vector gathers instead of plain vector loads (the two-constraint knapsack's ``prev[k]`` and
# ``volume_of[k]``: its sweep 1.5-2.4x faster without, docs/benchmarks.md). The tiled sweep's tile
# origins are written so for the same reason (a few tests a cell fewer: 6-10 % on Gotoh).
_GROUP = """
q = qq + q0
s = max((g0[t] + q) * 32, 0)  # the group's first cell (max: see above)
{planes_init}
if s >= a and s + 32 <= b:  # a whole group: no range test a lane
    for lane in range(32):
        p = s + lane
        v, dd = lcell(t, p, {prev}, last_row, last_col, R, C{da})
        row[p] = v
        {planes_or}
elif s + 32 > a and s < b:
    for lane in range(32):
        p = s + lane
        if p >= a and p < b:
            v, dd = lcell(t, p, {prev}, last_row, last_col, R, C{da})
            row[p] = v
            {planes_or2}
{planes_store}
"""


# A group of 32 cells of a 2-D layer (``layer_shape``), row-major: ``row`` and the window's layers are
# 2-D, cell ``(i, j)`` is flat cell ``i * LCt + j``. The group's first cell is divided once; a group
# inside one row (most, where a row has many more than 32 cells) runs ``j + lane`` as the 1-D group
# does, one that wraps to the next row steps ``(i, j)`` cell by cell.
_GROUP2 = """
q = qq + q0
s = max((g0[t] + q) * 32, 0)
{planes_init}
i = max(s // LCt, 0)  # max: never negative to LLVM, as s (see _GROUP)
j = max(s - i * LCt, 0)
if j + 32 <= LCt and s + 32 <= b:  # the group lies in one row
    for lane in range(32):
        v, dd = lcell(t, i, j + lane, {prev}, last_row, last_col, R, C{da})
        row[i, j + lane] = v
        {planes_or}
else:
    for lane in range(min(b - s, 32)):
        v, dd = lcell(t, i, j, {prev}, last_row, last_col, R, C{da})
        row[i, j] = v
        {planes_or2}
        j += 1
        if j == LCt:
            j = 0
            i += 1
{planes_store}
"""


def _thread_slot():
    """This thread's slot in a reduction's per-thread arrays (numba's thread id, 0 outside prange)."""
    return numba.get_thread_id()


def nrt_options(nrt: bool) -> dict:
    """``njit`` options for a function the kernels call: without numba's reference counting unless
    ``nrt`` (see :func:`cell_namespace`)."""
    return {} if nrt else {"_nrt": False}


def cell_namespace(rec_cls, nrt: bool = True):
    """The names a generated CPU kernel sees: the recurrence's compiled ``cell`` and ``boundary``,
    its value type and fill, and the helpers (public: features with kernels of their own build on it).

    ``nrt=False`` compiles ``cell`` and ``boundary`` without numba's reference counting: a call that
    passes the data arrays then costs no atomic increments and decrements of their counts, most of
    a light cell's time (Smith-Waterman at 4,096^2 on one thread: 4.1x a plain loop with them, 1.5x
    without; the LCS of three strings: 25 ns a cell with them, 3.4 without). A cell that allocates
    needs the runtime and does not compile so: :func:`compiled` then takes the kernel made with it."""
    from ..codegen import compile_source, spec_of

    opts = nrt_options(nrt)
    ns = {
        "red_slot": njit(_thread_slot, cache=True),
        "np": np,
        "prange": numba.prange,
        "VT": spec_of(rec_cls).numba_type(),
        "VTD": np.dtype(rec_cls.value_dtype),
        "FILL": rec_cls.fill,
        "cell": njit(rec_cls.cell, **opts),
        "boundary": njit(getattr(rec_cls, "boundary", lambda *a: 0), **opts),
    }
    # a record cell: VT builds its tuple of fields
    ns.update(values.namespace(rec_cls, njit, compile_source))
    return ns


def compiled(make, *args):
    """``make(nrt)``'s kernel, compiled (or loaded) by calling it once with ``args`` (a call that
    sweeps nothing): first without numba's reference counting (:func:`cell_namespace`), and with it
    when the recurrence's functions need it (they allocate). A typing error of the second is the
    caller's to word (:func:`gpudp.checks.typing_errors`)."""
    from numba.core.errors import NumbaError

    fn = make(False)
    try:
        fn(*args)
    except NumbaError:
        fn = make(True)
        fn(*args)
    return fn


@functools.cache
def noalias_compiler():
    """A numba compiler (``njit``'s ``pipeline_class``) that lowers the function with every pointer
    argument ``noalias``: LLVM may then assume that a store to one array changes nothing read
    through another, and keep a layer's values read from the user's data (an item's weight, a
    column's symbol) in registers across the stores of a group of cells, instead of reading them
    again after every store. Sound for the generated sweeps, whose only written arguments (the
    values' ring or slab, the decision words, the last row and column) are the engine's own
    allocations, never the user's data; a cell must not write to its data arrays (docs/tutorial.md).
    numba has the flag (``Flags.noalias``) but no ``njit`` option for it: one pass sets it after
    type inference."""
    from numba.core.compiler import CompilerBase, DefaultPassBuilder
    from numba.core.compiler_machinery import FunctionPass, register_pass
    from numba.core.typed_passes import NopythonTypeInference

    @register_pass(mutates_CFG=False, analysis_only=True)
    class ArgumentsNoAlias(FunctionPass):
        _name = "gpudp_arguments_noalias"

        def __init__(self):
            FunctionPass.__init__(self)

        def run_pass(self, state):
            state.flags.noalias = True
            return False

    class NoAliasCompiler(CompilerBase):
        def define_pipelines(self):
            pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
            pm.add_pass_after(ArgumentsNoAlias, NopythonTypeInference)
            pm.finalize()
            return [pm]

    return NoAliasCompiler


#: the generated sweeps' arguments marked ``noalias`` (:func:`noalias_compiler`); a switch for A/B,
#: read at each sweep (a part of the kernels' keys)
NOALIAS = True


def _sweep_options(**kw) -> dict:
    """``njit`` options of a generated sweep: with :data:`NOALIAS`, the noalias compiler."""
    return {**kw, "pipeline_class": noalias_compiler()} if NOALIAS else kw


def _runtime_note(src: str, nrt: bool) -> str:
    """The generated source, marked when it is compiled with numba's runtime (the two kernels of a
    recurrence then differ in the disk cache as they do in memory), and when its arguments are
    noalias (:data:`NOALIAS`)."""
    src = src + "\n# compiled with numba's runtime\n" if nrt else src
    return src + "\n# arguments noalias\n" if NOALIAS else src


#: a byte whose low bit is each of 8 bytes' low bit (byte k's bit to bit 56 + k; no carries)
_GATHER = 0x0102040810204080


def _plane_lines(bits: int) -> tuple[str, str, str]:
    """The tiled runner's lines that start a tile, start a tile row's decision words, and take one
    cell's decision ``dd`` into them (column ``jj``, shifted by the row's lane: store.TileLayout).

    Up to 8 bits a cell's decision is one byte store into a 32-byte buffer; at the end of a group
    of 32 shifted columns the buffer's four 64-bit words give each bit plane's word by a mask, a
    multiply (:data:`_GATHER`) and shifts per 8 cells, and the buffer is cleared (Gotoh's 4-bit
    decisions: 12-15 % less time than or-ing each bit into its plane a cell, one thread, H100
    host CPU, 2026-11-26). Wider decisions or their bits into the planes one by one."""
    if not bits:
        return "", "", ""
    # the row's lane shift, once a row: ``ii // RPT`` in the cell loop stayed there (numba's test
    # for a zero divisor keeps LLVM from hoisting the division; DTW 2,000^2 one thread 15-24 ->
    # 11-14 ms, development machine)
    row = "xo = ii // RPT\n"
    x = "x = jj + xo\n"
    # a row's last group (shifted columns from TW on) folds into its first (store.TileLayout)
    flush = "if (x & 31) == 31 or jj == ncol - 1:\n    g = x >> 5\n"
    if bits > 8:
        tile, init = "", row + "".join(f"w{b} = 0\n" for b in range(bits))
        acc = x + "".join(f"w{b} |= ((dd >> {b}) & 1) << (x & 31)\n" for b in range(bits)) + flush
        take = ""
    else:
        tile = "db8 = np.zeros(32, np.uint8)\ndb64 = db8.view(np.uint64)\n"
        tile += f"K1 = np.uint64(0x0101010101010101)\nKG = np.uint64({_GATHER:#x})\nK56 = np.uint64(56)\n"
        init, acc = row, x + "db8[x & 31] = dd\n" + flush
        take = "".join(f"    u{q} = db64[{q}]\n    db64[{q}] = 0\n" for q in range(4))
        for b in range(bits):
            parts = (
                f"((((u{q} >> np.uint64({b})) & K1) * KG) >> K56) << np.uint64({8 * q})" for q in range(4)
            )
            take += f"    w{b} = " + " | ".join(parts) + "\n"
    acc += take + "    if g == TW >> 5:\n"
    acc += "".join(f"        words[twb + ii + {b} * BH] |= w{b}\n" for b in range(bits))
    acc += "    else:\n        base = twb + g * BITS * BH + ii\n"
    acc += "".join(f"        words[base + {b} * BH] = w{b}\n" for b in range(bits))
    if bits > 8:
        acc += "".join(f"    w{b} = 0\n" for b in range(bits))
    return tile, init, acc


def tiled_runner(rec_cls, n_data: int, nrt: bool = False):
    """The CPU tiled sweep: tiles of one tile anti-diagonal in parallel, each swept serially. The
    tile (``BH`` rows, ``TW`` columns) is a runtime argument: one compile serves every grid shape.
    ``nrt``: see :func:`cell_namespace`."""
    k = _TILED_RUNNERS.lookup(rec=rec_cls, n_data=n_data, nrt=nrt, noalias=NOALIAS)
    if k.ready:
        return k.fn
    from ..cache import jit_generated
    from ..codegen import compile_source, data_args, fill, local_reduction, spec_of, tile_cell_source

    bits = rec_cls.decision_bits
    ns = cell_namespace(rec_cls, nrt)
    sp = spec_of(rec_cls)
    red = bool(sp.reduce_slots)  # a tile keeps its best cell in locals, its thread's slot at the end
    cell_src = tile_cell_source(rec_cls, n_data, rec_cls.offsets, not red)
    ns["tcell"] = njit(compile_source(cell_src, "tcell", dict(ns)), **nrt_options(nrt))
    red_init = red_acc = red_flush = "pass"
    if red:
        names, red_init, update, red_flush = local_reduction(rec_cls, n_data, "red_slot()")
        ns.update(names)
        red_acc = update("v", "i * C + c0 + jj")
    tile_init, init, acc = _plane_lines(bits)
    sym = sp.symbols
    src = fill(
        _TILED,
        da=data_args(n_data),
        du=sp.user_args(n_data),
        db=sp.fn_args(n_data),
        row_sym="dat0[i]" if sym else "0",
        col_sym="dat1[c0 + jj]" if sym else "0",
        tile_init=tile_init,
        planes_init=init,
        planes_acc=acc,
        red_init=red_init,
        red_acc=red_acc,
        red_flush=red_flush,
    ).replace("BITS", str(bits))
    src = _runtime_note(values.expand(src, rec_cls), nrt)
    return k.keep(jit_generated(src, "run_tiles", ns, njit, "cpu", **_sweep_options(parallel=True))).fn


def layered_runner(rec_cls, n_data: int, schedule, nrt: bool = False):
    """The CPU layered sweep: layer after layer, groups of 32 cells of a layer in parallel, only the
    cells of each layer's active range computed; each group's decision words are written (zeros for
    groups outside the range). ``q0 <= q < q1`` limits the groups (a large layer runs in pieces, so
    that Ctrl-C and signals are seen between them). ``nrt``: see :func:`cell_namespace`."""
    deps = schedule and schedule.key
    k = _LAYERED_RUNNERS.lookup(
        rec=rec_cls, n_data=n_data, schedule=deps, nrt=nrt, noalias=NOALIAS, lazy=LAZY_DEPS
    )
    if k.ready:
        return k.fn
    from ..cache import jit_generated
    from ..codegen import compile_source, data_args, fill, layer_cell_source, spec_of

    bits = rec_cls.decision_bits
    ns = cell_namespace(rec_cls, nrt)
    rows = schedule is None  # a layered recurrence's previous layers: views taken once a layer
    lazy = _lazy_cell(rec_cls, n_data, schedule, ns, nrt, "layered")
    lcell = compile_source(layer_cell_source(rec_cls, n_data, schedule, rows, lazy), "lcell", dict(ns))
    ns["lcell"] = njit(lcell, **nrt_options(nrt))
    init = "".join(f"w{b} = 0\n" for b in range(bits)) or "pass\n"
    orr = "".join(f"w{b} |= ((dd >> {b}) & 1) << lane\n" for b in range(bits)) or "pass\n"
    store = "".join(f"words[woff[t] - wbase + q * {bits} + {b}] = w{b}\n" for b in range(bits)) or "pass\n"
    prev = spec_of(rec_cls).layer_rows() if rows else ["ring", "W1"]
    hoist = "".join(f"{r} = ring[(t - {w}) % W1]\n" for w, r in enumerate(prev, 1)) if rows else "pass\n"
    two_d = rec_cls._two_d() if schedule is None else False
    if two_d:  # the layer's columns, once a layer (at least 1: a division by it finds each group's row)
        hoist += "LCt = max(LC[t], 1)\n"
    body = fill(
        _GROUP2 if two_d else _GROUP,
        prev=", ".join(prev),
        da=data_args(n_data),
        planes_init=init,
        planes_or=orr,
        planes_or2=orr,
        planes_store=store,
    )
    src = fill(_LAYERED, da=data_args(n_data), body=body, hoist=hoist, lc=", LC" if two_d else "")
    src = _runtime_note(src, nrt)
    return k.keep(jit_generated(src, "run_layers", ns, njit, "cpu", **_sweep_options(parallel=True))).fn


def line_runner(rec_cls, n_data: int, schedule, nrt: bool = False):
    """The CPU sweep of a line (a grid of one cell a wavefront): one thread walks the line's cells
    in order (:func:`gpudp.codegen.line_sweep_source`), no parallel region and no ring."""
    s = schedule
    k = _LINE_RUNNERS.lookup(
        rec=rec_cls, n_data=n_data, schedule=s.key, nrt=nrt, noalias=NOALIAS, lazy=LAZY_DEPS
    )
    if k.ready:
        return k.fn
    from ..cache import jit_generated
    from ..codegen import line_sweep_source

    ns = cell_namespace(rec_cls, nrt)
    lazy = _lazy_cell(rec_cls, n_data, schedule, ns, nrt, "line")
    src = _runtime_note(line_sweep_source(rec_cls, n_data, schedule, lazy=lazy), nrt)
    return k.keep(jit_generated(src, "run_line", ns, njit, "cpu", **_sweep_options())).fn


def serial_runner(rec_cls, n_data: int, schedule, step, nrt: bool = False):
    """The CPU sweep of a grid row after row by one thread (:func:`gpudp.codegen.serial_sweep_source`;
    ``step``: the plan's row and column steps). A cell taking its dependencies as one tuple is
    rewritten, where it reads them as ``deps[k]`` only, to read the ones it indexes
    (:func:`gpudp.lazy_deps.lazy_cell`: coin change's ways read 2 of 64)."""
    k = _SERIAL_RUNNERS.lookup(
        rec=rec_cls,
        n_data=n_data,
        schedule=schedule.key,
        step=step,
        nrt=nrt,
        noalias=NOALIAS,
        lazy=LAZY_DEPS,
    )
    if k.ready:
        return k.fn
    from ..cache import jit_generated
    from ..codegen import serial_sweep_source

    ns = cell_namespace(rec_cls, nrt)
    lazy = _lazy_cell(rec_cls, n_data, schedule, ns, nrt, "serial")
    src = _runtime_note(serial_sweep_source(rec_cls, n_data, schedule, step, lazy), nrt)
    return k.keep(jit_generated(src, "run_serial", ns, njit, "cpu", **_sweep_options())).fn


#: cells that take their dependencies as one tuple read only those they index (:func:`_lazy_cell`);
#: a switch for A/B, read at each sweep (a part of the kernels' keys)
LAZY_DEPS = True


def _lazy_cell(rec_cls, n_data: int, schedule, ns: dict, nrt: bool, kind: str) -> bool:
    """Whether the grid's cell, taking its dependencies as one tuple, is rewritten to read only those
    it indexes (:func:`gpudp.lazy_deps.lazy_cell`): then ``ns["cell"]`` is the rewritten cell, which
    reads them through the accessor of a sweep of ``kind`` (:func:`gpudp.codegen.dep_source`)."""
    from ..codegen import compile_source, dep_source, spec_of
    from ..lazy_deps import lazy_cell

    sp = spec_of(rec_cls)
    if schedule is None or not sp.deps_tuple or not LAZY_DEPS:
        return False
    src, consts, context = dep_source(rec_cls, n_data, schedule, kind)
    dep = njit(compile_source(src, "dep", {**ns, **consts}), **nrt_options(nrt))
    cell = lazy_cell(rec_cls, len(context), dep, sp.symbols + bool(getattr(rec_cls, "reads_line", False)))
    if cell is not None:
        ns["cell"] = njit(cell, **nrt_options(nrt))
    return cell is not None


def run_plan(plan, rec, data, store, stats, bar) -> dict:
    """Run a planned sweep on the CPU; decisions go straight into the store (memory or memmap).
    One sweep at a time per process (:data:`PARALLEL_LOCK`)."""
    with PARALLEL_LOCK:
        return _run_plan(plan, rec, data, store, stats, bar)


def _run_plan(plan, rec, data, store, stats, bar) -> dict:
    cls = type(rec)
    vt = np.dtype(cls.value_dtype)
    words = store.words if store is not None else np.zeros(1, np.uint32)
    plan.make_chunks(*BACKEND.chunk_limits(plan))
    rows, cols = plan.rows, plan.cols
    out = {}
    t0 = time.perf_counter()
    if plan.kind == "tiled":
        lay = plan.layout
        bottom = values.full(cls, lay.nj * (lay.tw + 1))
        right = values.full(cls, max(rows, 1))
        shape = (lay.ni, lay.nj, rows, cols, lay.bh, lay.tw)
        ck = checkpoint_arrays(plan, cls, np.empty)
        fn = compiled(  # compile (or load)
            lambda nrt: tiled_runner(cls, len(data), nrt),
            *(0, 0, *shape, bottom, right, words, 0, lay.diag_off, *ck, *data),
        )
        stats.extra["compile_seconds"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        cap = min(lay.ni, lay.nj)  # the most tiles an anti-diagonal holds
        choice = ThreadChoice(plan, "tiled")
        choice.active &= cap > 1
        for d0, d1 in plan.chunks:
            for a, b, inline in choice.slices(d0, d1):
                ts = time.perf_counter()
                rest = (*shape, bottom, right, words, 0, lay.diag_off, *ck, *data)
                with threads_at_most(1 if inline else cap), kernel_raises(cls):
                    lost = fn(a, b, *rest)
                    if lost >= 0:  # a worker's raise lost: the tile anti-diagonal again, on one thread
                        rerun_lost(cls, fn, lost, lost + 1, *rest)
                choice.record(inline, plan.unit_cells(a, b), time.perf_counter() - ts)
            if bar is not None:
                bar.update(plan.unit_cells(d0, d1))
        out["last_row"] = values.structured(cls, values.map_buf(bottom, lambda b: tiled_last_row(b, lay)))
        out["last_col"] = values.structured(cls, values.map_buf(right, lambda r: r[:rows].copy()))
        if plan.checkpoint:
            out["checkpoints"] = ck[:2]  # as the kernels wrote them (gpudp.checkpoints reads them so)
    elif plan.kind == "line":
        line = np.empty(plan.cells, vt)  # each cell written, in order, before any cell reads it
        fn = compiled(  # compile (or load)
            lambda nrt: line_runner(cls, len(data), plan.schedule, nrt),
            *(0, 0, line, words, 0, rows, cols, *data),
        )
        stats.extra["compile_seconds"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        for g0, g1 in plan.chunks:
            with kernel_raises(cls):
                fn(g0, g1, line, words, 0, rows, cols, *data)
            if bar is not None:
                bar.update(plan.unit_cells(g0, g1))
        out["last_row"], out["last_col"] = line_edges(plan, line)
    elif plan.kind == "serial":
        # not filled: each cell of the ring is written before any cell reads it (a row above is
        # swept whole, a cell reads its own row behind it, any read outside is the boundary's), the
        # last row and column are written whole (~60 us of a 8 x 10^5 sweep filled them)
        ring = np.empty((plan.window + 1, max(cols, 1)), vt)
        rk = np.empty(len(plan.schedule.offsets), np.int64)  # each offset's row in the ring
        last_row, last_col = np.empty(max(cols, 1), vt), np.empty(max(rows, 1), vt)
        args = (ring, rk, words, last_row, last_col, rows, cols, *data)
        fn = compiled(lambda nrt: serial_runner(cls, len(data), plan.schedule, plan.serial, nrt), 0, 0, *args)
        stats.extra["compile_seconds"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        for u0, u1 in plan.chunks:
            with kernel_raises(cls):
                fn(u0, u1, *args)
            if bar is not None:
                bar.update(plan.unit_cells(u0, u1))
        out["last_row"], out["last_col"] = last_row[:cols], last_col[:rows]
    else:
        window = plan.schedule.window if plan.schedule else cls.window
        ring = np.full((window + 1, *plan.ring_shape()), cls.fill, vt)
        last_row = np.full(max(cols, 1), cls.fill, vt)
        last_col = np.full(max(rows, 1), cls.fill, vt)
        woff = plan.layout.woff
        ranges = (plan.lo, plan.hi, plan.g0, plan.gn, woff)
        bands = plan.codec == "bands"
        if bands:  # each chunk computes into a slab; its bands then go to the store
            words = np.zeros(plan.max_chunk_words(), np.uint32)
            packed = np.zeros_like(words)
        tail = (last_row, last_col, rows, cols, *shape_args(plan), *data)  # after each chunk's own
        fn = compiled(  # compile (or load)
            lambda nrt: layered_runner(cls, len(data), plan.schedule, nrt),
            *(0, 0, 0, 0, 0, ring, *ranges, words, 0, *tail),
        )
        stats.extra["compile_seconds"] = time.perf_counter() - t0
        choice, serial = ThreadChoice(plan, "layered"), serial_groups()
        t0 = time.perf_counter()
        for t0_, t1_ in plan.chunks:
            wbase = int(woff[t0_]) if bands else 0
            for a, b, inline in choice.slices(t0_, t1_):
                ts = time.perf_counter()
                for q0, q1 in _pieces(plan, a, b):
                    each = (ring, *ranges, words, wbase, *tail)
                    with kernel_raises(cls):
                        lost = fn(a, b, q0, q1, ALL_INLINE if inline else serial, *each)
                        if lost >= 0:  # a worker's raise lost: the layer again, on one thread
                            rerun_lost(cls, fn, lost, lost + 1, q0, q1, 0, *each)
                choice.record(inline, plan.unit_cells(a, b), time.perf_counter() - ts)
            if bands:
                _store_bands(store, plan, t0_, t1_, words, wbase, packed)
            if bar is not None:
                bar.update(plan.unit_cells(t0_, t1_))
        if plan.schedule is not None:
            out["last_row"], out["last_col"] = last_row[:cols], last_col[:rows]
        elif plan.n_units:
            out["last_layer"] = last_layer(plan, ring[(plan.n_units - 1) % (window + 1)]).copy()
    stats.kernel_seconds = time.perf_counter() - t0
    return out


def _pieces(plan, t0: int, t1: int) -> list[tuple[int, int]]:
    """Group ranges ``[q0, q1)`` to run a chunk in: the whole chunk, or, for a chunk of one layer
    larger than ``CPU_CHUNK_CELLS``, pieces of about that many cells (a parallel region each), so
    that a Ctrl-C or SIGTERM is acted on within a fraction of a second even on layers of 10^9 cells."""
    big = np.iinfo(np.int64).max
    if t1 - t0 != 1 or plan.unit_cells(t0, t1) <= CPU_CHUNK_CELLS:
        return [(0, big)]
    n = int(plan.gn[t0])
    step = max(CPU_CHUNK_CELLS // 32, 1)
    return [(q, q + step) for q in range(0, n, step)]


def _store_bands(store, plan, t0, t1, words, wbase, packed):
    """Band-encode a finished chunk's slab and append the bands to the store."""
    s = store
    n = encode_bands(
        words,
        plan.layout.woff,
        wbase,
        t0,
        t1,
        plan.lo,
        plan.hi,
        s.bits,
        s.lead_n,
        s.band_n,
        s.band_off,
        s.lead_w,
        s.trail_w,
        packed,
    )
    s.band_off[t0:t1] += s.append(packed[:n])


# Blocks of a tiled grid swept again for a traceback (gpudp.checkpoints): a block a thread, each swept
# row by row from its edges (codegen.BLOCK_EDGES), its decisions one integer a cell, row-major.
_BLOCKS = """
def run_blocks(nb, bis, bjs, K, R, C, ckrow, ckcol, brow, bcol, words, WS{da}):
    done = 0  # blocks finished: fewer where a worker's raise was lost (LOST RAISES)
    for q in prange(nb):
        {origin}
        prev = VEMPTY(nc + 1)
        cur = VEMPTY(nc + 1)
        for x in range(nc + 1):
            ST(prev, x, top_at(c0 - 1 + x, bi, r0, ckrow, brow, bcol))
        for i in range(nr):
            gi = r0 + i
            ST(cur, 0, left_at(gi, bj, c0, ckcol, bcol))
            w = q * WS + i * nc
            for j in range(nc):
                v, dd = tcell(gi, c0 + j, LD(prev, j + 1), LD(cur, j), LD(prev, j), {ri}, {cj}{du})
                ST(cur, j + 1, v)
                words[w + j] = dd
            t = prev
            prev = cur
            cur = t
        done += 1
    return done
"""


def blocks_runner(rec_cls, n_data: int, nrt: bool):
    """The CPU sweep of blocks of a tiled grid from their edges (:mod:`gpudp.checkpoints`): a block a
    thread, row by row; the cell through the tiled kernel's wrapper (no reduction: the forward
    sweep made it), decisions row-major, one integer a cell; ``nrt``: see :func:`cell_namespace`."""
    k = _BLOCK_RUNNERS.lookup(rec=rec_cls, n_data=n_data, nrt=nrt)
    if k.ready:
        return k.fn
    from ..cache import jit_generated
    from ..codegen import block_source, spec_of

    sym = spec_of(rec_cls).symbols
    ri, cj = ("dat0[gi]", "dat1[c0 + j]") if sym else ("0", "0")
    ns = cell_namespace(rec_cls, nrt)
    src = block_source(_BLOCKS, rec_cls, n_data, ns, njit, ri, cj)
    return k.keep(jit_generated(src, "run_blocks", ns, njit, "cpu", parallel=True)).fn


class _CPU(Backend):
    name = "cpu"
    default_tile = (256, 512)
    #: wavefronts narrower than a parallel layer (serial_groups) gain nothing from the wavefronts'
    #: order: such a grid runs row after row, which reads the rows by plain indices (coin change's
    #: ways, 63 x 10^5: docs/benchmarks.md, "2-core CPU host")
    serial_width = SERIAL_GROUPS * 32
    chunk_cells = CPU_CHUNK_CELLS
    slab_words_max = CPU_SLAB_WORDS

    def device_name(self):
        return device_name()

    def fit_tile(self, tile, rows, cols):
        """The tile is a runtime argument of the one compiled sweep: it fits the grid exactly."""
        bh, tw = tile
        return min(bh, max(1, rows)), min(tw, max(32, -(-cols // 32) * 32))

    def chunk_limits(self, plan):
        """Chunks of about :data:`CPU_CHUNK_CELLS` cells; with the bands codec each computes into a
        slab of at most :data:`CPU_SLAB_WORDS` words (the plain store is written in place)."""
        return (CPU_SLAB_WORDS if plan.codec == "bands" else 1 << 62), CPU_CHUNK_CELLS

    def sweep_memory(self, slab_words, bits, codec, spill):
        """Decisions go straight into the store; with the bands codec a chunk's slab and its packed
        copy (:func:`_run_plan`), in host memory."""
        return 0, (2 * slab_words * WORD_BYTES if bits and codec == "bands" else 0)

    def reduction_slots(self, plan=None):
        return numba.config.NUMBA_NUM_THREADS  # numba.get_thread_id() is below it

    def run_plan(self, plan, rec, data, store, stats, bar):
        return run_plan(plan, rec, data, store, stats, bar)

    def run_blocks(self, rec_cls, data, blocks, every, rows, cols, edges, words, context):
        """Blocks of a tiled grid swept from their edges, with their decisions (see
        :meth:`gpudp.backends.base.Backend.run_blocks`)."""
        args = (every, rows, cols, *edges, words, every * every, *data)
        with PARALLEL_LOCK:
            none = np.zeros(0, np.int64)
            fn = compiled(lambda nrt: blocks_runner(rec_cls, len(data), nrt), 0, none, none, *args)
            bis, bjs = blocks[:, 0].copy(), blocks[:, 1].copy()
            if fn(len(blocks), bis, bjs, *args) != len(blocks):  # a worker's raise lost: on one thread
                rerun_lost(rec_cls, fn, len(blocks), bis, bjs, *args)
        return words, 0.0


BACKEND = _CPU()
