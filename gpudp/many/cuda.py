"""The batch on the GPU: one thread block an instance, an anti-diagonal wavefront inside the block.

Block ``q`` sweeps instance ``ids[q]`` diagonal after diagonal (``i + j = d``): its threads take
the cells of a diagonal in turn (thread ``t`` the rows ``imin + t, imin + t + threads, ...``)
through the engine's own cell wrapper ``tcell`` (:func:`gpudp.codegen.tile_cell_source`), and a
barrier separates the diagonals. The three live diagonals (the one computed, the two it reads)
rotate in one buffer of ``3 K`` values, ``K = min(rows, cols)``, indexed by the row (or by the
column when the grid has more rows than columns): in shared memory (dynamic, opted in beyond 48
KiB) when it fits a block's, else in the block's row of a device array, the block then stepping
through the instances of its launch. Decisions go to the chunk's device buffer, one unsigned integer
a cell, diagonal after diagonal (layout ``diagonals``: the threads of a diagonal write consecutive
cells), and the last row and column to the chunk's packed edges.

Instances are bucketed by ``K`` (a power of two): a bucket is one launch, with as many threads a
block as its diagonals are long (32 to :data:`THREADS`) and the buffer its ``K`` needs. A chunk's
launches and its copies to page-locked host memory are queued on one stream; the host walks the
previous chunk meanwhile (:func:`gpudp.many.sweep_many`). Under the CUDA simulator a block has at
most :data:`SIM_THREADS` threads and shared memory holds :data:`SIM_SMEM` bytes, so that tiny test
instances take both buffers and several cells a thread.

Values only (``traceback=False``), an instance of at most :data:`MAX_ROWS` rows runs instead one
warp an instance, its rows in the lanes' registers (:func:`warp_kernel`). Lane ``k`` owns the
``RPT`` consecutive rows from ``k * RPT`` (``RPT``: the instance's rows over 32, rounded up to a
power of two; a launch per ``RPT``) and sweeps the columns one step behind lane ``k - 1``: at step
``s`` it computes column ``s - k`` of its rows, taking the value above its first row, and the
column's symbol, from lane ``k - 1`` by a shuffle (lane 0 from the boundary and the column
symbols). Nothing of the grid touches memory but the last row and column, stored as they are
computed; a reduction is kept by rows in registers and merged across the warp at the end (lane 0
keeping the instance's one slot). So a cell costs its own arithmetic and a share of the shuffles,
where the block kernel reads and writes its diagonals in memory and synchronizes the block between
them. Under the simulator a block is one warp and the shuffles go through shared memory.

Values only, a chunk's last rows and columns (8 bytes a row and a column of every instance: 0.8 GB
for 100,000 pairs of 1,000) stay in device memory, within :data:`DEVICE_SHARE` of the memory free
at the call's start, until an item of the chunk is first read (:meth:`gpudp.many.chunks.ChunkOut.edges`);
the values are picked from them on the device and copied alone. A caller that reads only
:attr:`gpudp.many.ManyResult.values` never copies the edges; the memory goes with the result.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import time

import numba
import numpy as np

from .. import values
from ..backends.cuda import (
    CudaKernel,
    cell_namespace,
    coop_blocks,
    cuda,
    device_jit,
    drained,
    event,
    generated_kernel,
    kernel_resources,
    memory_info,
    pinned_pool,
    shared_memory_optin,
    sim_geometry,
    stream,
)
from ..codegen import (
    compile_source,
    diag_start,
    fill,
    indent,
    local_reduction,
    row_reduction,
    spec_of,
    tile_cell_source,
)
from ..kernel import KernelFactory
from . import source
from .chunks import ChunkOut

LAYOUT = "diagonals"
#: threads a block at most (a diagonal's cells past them loop), and at least
THREADS = 256
MIN_THREADS = 32
SIM_THREADS = 4
#: dynamic shared memory a block may take under the simulator (bytes)
SIM_SMEM = 64
#: blocks of a launch whose diagonals live in device memory (each steps through the instances)
GLOBAL_BLOCKS = 1024
#: the share of the free device memory one chunk's decisions may take (two chunks are in flight)
DEVICE_SHARE = 0.25
#: decision bytes of one chunk at most
CHUNK_BYTES = 1 << 28

_KERNELS = KernelFactory("many.cuda", "rec", "kinds", "shared", kernel=CudaKernel)


def _thread_slot():
    """A reduction's slot in the batch on the GPU: the thread's place in its block (each instance
    has its own row of slots)."""
    return cuda.threadIdx.x


def _cell_lines(rec_cls, n_data: int, n_sym: int) -> list[str]:
    """One cell ``(i, j)`` of diagonal ``d``: its dependencies from the buffer (slots ``p1``, ``p2``
    of the previous two diagonals) or ``boundary``, the cell, the stores."""
    sp = spec_of(rec_cls)
    db, du = sp.fn_args(n_data), sp.user_args(n_data)
    offs = {tuple(o) for o in rec_cls.offsets}
    lines = ["j = d - i", "x = j if byj else i"]
    deps = {"up": "VT(FILL)", "left": "VT(FILL)", "dg": "VT(FILL)"}
    if (-1, 0) in offs:
        lines += [
            "if i > 0:",
            "    upv = LD(buf, p1 + x - 1 + u)",
            "else:",
            f"    upv = VT(boundary(i - 1, j{db}))",
        ]
        deps["up"] = "upv"
    if (0, -1) in offs:
        lines += [
            "if j > 0:",
            "    lft = LD(buf, p1 + x - u)",
            "else:",
            f"    lft = VT(boundary(i, j - 1{db}))",
        ]
        deps["left"] = "lft"
    if (-1, -1) in offs:
        lines += [
            "if i > 0 and j > 0:",
            "    dg = LD(buf, p2 + x - 1)",
            "else:",
            f"    dg = VT(boundary(i - 1, j - 1{db}))",
        ]
        deps["dg"] = "dg"
    ri = "dat0[i]" if n_sym else "0"
    cj = "dat1[j]" if n_sym else "0"
    lines += [
        f"v, dd = tcell(i, j, {deps['up']}, {deps['left']}, {deps['dg']}, {ri}, {cj}{du})",
        "ST(buf, cur + x, v)",
    ]
    if rec_cls.decision_bits:
        lines.append("words[dbase + i] = dd")
    lines += [
        "if i == R - 1:",
        "    ST(lr, lroff[q] + j, v)",
        "if j == C - 1:",
        "    ST(lc, lcoff[q] + i, v)",
    ]
    return lines


_RUN_MANY = """def run_many(qs, nb, ids, shapes, doff, words, lr, lroff, lc, lcoff, RV, RC, FL,
             scratch, KB{pk}):
    th = cuda.threadIdx.x
    nt = cuda.blockDim.x
    {buf}
    blk = cuda.blockIdx.x
    while blk < nb:
        {per_instance}
        blk += cuda.gridDim.x
"""


def kernel(rec_cls, kinds, n_sym: int, shared: bool):
    """The batch kernel of ``rec_cls`` for packed items of ``kinds``, its diagonals in shared memory
    or in ``scratch``; compiled once per class, kinds and buffer (and per argument types by numba),
    through the cuda backend's generated kernels (the disk cache on a real GPU)."""
    k = _KERNELS.lookup(rec=rec_cls, kinds=tuple(kinds), shared=shared)
    if k.ready:
        return k.fn
    sp = spec_of(rec_cls)
    n_data = len(kinds) + sp.outputs
    ns = cell_namespace(rec_cls)
    ns["red_slot"] = device_jit(_thread_slot)
    ns["tcell"] = device_jit(
        compile_source(tile_cell_source(rec_cls, n_data, rec_cls.offsets), "tcell", dict(ns))
    )
    ns["diag_start"] = diag_start
    per_instance = [
        "q = qs[blk]",
        "b = ids[q]",
        "R = shapes[b, 0]",
        "C = shapes[b, 1]",
        "base = doff[q]",
        *source.views(kinds),
        *source.output_views(sp.reduce_slots, sp.flags, len(kinds)),
        "byj = R > C",  # the buffer is indexed by the shorter side
        "u = 1 if byj else 0",
        "K = C if byj else R",
        "for d in range(R + C - 1):",
        "    imin = max(0, d - C + 1)",
        "    imax = min(d, R - 1)",
        "    cur = (d % 3) * K",
        "    p1 = ((d + 2) % 3) * K",
        "    p2 = ((d + 1) % 3) * K",
        "    dbase = base + diag_start(d, R, C) - imin",
        "    i = imin + th",
        "    while i <= imax:",
        *("        " + x for x in _cell_lines(rec_cls, n_data, n_sym)),
        "        i += nt",
        "    cuda.syncthreads()",
    ]
    src = fill(
        _RUN_MANY, pk=source.packed_args(len(kinds)), buf=_buffer(rec_cls, shared), per_instance=per_instance
    )
    return k.keep(generated_kernel(values.expand(src, rec_cls), "run_many", ns)).fn


def _buffer(rec_cls, shared: bool) -> str:
    """The line binding ``buf``, the block's three diagonals of ``KB`` values each: the dynamic
    shared memory or the block's row of ``scratch``; a record's, a tuple of its fields' (in shared
    memory, consecutive stretches of ``3 KB`` values: only where every field has one type,
    :func:`shares_memory`)."""
    fs = values.fields(rec_cls)
    if fs is None:
        return "buf = cuda.shared.array(0, VT)" if shared else "buf = scratch[cuda.blockIdx.x]"
    if shared:
        parts = ", ".join(f"sm[{f} * 3 * KB : {f + 1} * 3 * KB]" for f in range(len(fs)))
        return f"sm = cuda.shared.array(0, F0D)\nbuf = ({parts},)"
    return "buf = (" + ", ".join(f"scratch[{f}][cuda.blockIdx.x]" for f in range(len(fs))) + ",)"


def shares_memory(rec_cls) -> bool:
    """Whether a record's diagonals may lie in shared memory: all its fields of one type (a
    scalar's, always)."""
    fs = values.fields(rec_cls)
    return fs is None or len(set(fs)) == 1


# ---------------------------------------------------------------------------------------------
# Values only: a warp an instance
# ---------------------------------------------------------------------------------------------

#: rows of an instance at most (32 lanes of at most 32 rows each)
MAX_ROWS = 1024
#: warps a block
WARPS = 4

_WARP_KERNELS = KernelFactory("many.cuda.warps", "rec", "kinds", "rpt", kernel=CudaKernel)

_RUN = """def run_warps(qs, nb, ids, shapes, lr, lroff, lc, lcoff, RV, RC, FL{pk}):
    k = cuda.threadIdx.x & 31
    w = (cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x) >> 5
    nw = (cuda.gridDim.x * cuda.blockDim.x) >> 5
    {prologue}
    while w < nb:
        q = qs[w]
        b = ids[q]
        R = shapes[b, 0]
        C = shapes[b, 1]
        {views}
        i0 = k * RPT
        full = i0 + RPT <= R
        own = (R - 1) // RPT == k
        rl = (R - 1) % RPT
        {start}
        if k == 0:
            uprev = VT(boundary(-1, -1{db}))
        elif i0 < R:
            uprev = VT(boundary(i0 - 1, -1{db}))
        else:
            uprev = VT(FILL)
        mine = VT(FILL)
        for s in range(C + 31):
            j = s - k
            {exchange}
            if j >= 0 and j < C:
                {rows}
                uprev = upin
                {shift}
                if own:
                    {bottom}
                if j == C - 1:
                    {right}
        {finish}
        w += nw
"""


def _warp_merge(sim: bool, sp) -> list[str]:
    """Lines that merge the lanes' reduction locals (``bv_``, ``bk_``: :func:`local_reduction`'s)
    into lane 0's, by halves (a lane past the warp's end sees its own, which never wins); the key
    goes through the shuffle as a float64 or an int64 (exact for every key type), in the simulator
    through shared memory."""
    wide = "F64" if sp.key_dtype.kind == "f" else "I64"
    out = []
    for off in (16, 8, 4, 2, 1):
        if sim:
            out += ["rxk[k] = bv_", "rxi[k] = bk_", "cuda.syncthreads()"]
            out += [f"ov = rxk[k + {off}] if k + {off} < 32 else bv_"]
            out += [f"oi = rxi[k + {off}] if k + {off} < 32 else bk_"]
            out.append("cuda.syncthreads()")
        else:
            out += [f"ov = KT(cuda.shfl_down_sync(FULL, {wide}(bv_), {off}))"]
            out += [f"oi = cuda.shfl_down_sync(FULL, bk_, {off})"]
        out += [f"if ov {sp.reduce_op} bv_ or (ov == bv_ and oi < bk_):", "    bv_ = ov", "    bk_ = oi"]
    return out


def warp_kernel(rec_cls, kinds, n_sym: int, rpt: int):
    """The values-only batch kernel of ``rec_cls`` (decision_bits 0) for packed items of ``kinds``,
    lanes of ``rpt`` rows: ``run_warps(qs, nb, ids, shapes, lr, lroff, lc, lcoff, RV, RC, FL,
    *packed)`` sweeps instances ``ids[qs[w]]`` for ``w < nb``, a warp each."""
    k = _WARP_KERNELS.lookup(rec=rec_cls, kinds=tuple(kinds), rpt=rpt)
    if k.ready:
        return k.fn
    sp = spec_of(rec_cls)
    n_data = len(kinds) + sp.outputs
    db, du = sp.fn_args(n_data), sp.user_args(n_data)
    sim = not sim_geometry(True, False)
    red = bool(sp.reduce_slots)
    ns = cell_namespace(rec_cls)
    ns.update(RPT=rpt)
    ns["tcell"] = device_jit(
        compile_source(tile_cell_source(rec_cls, n_data, rec_cls.offsets, not red), "tcell", dict(ns))
    )
    start, fast, slow, shift, bottom, right, red_rows, red_merge = [], [], [], [], [], [], [], []
    if red:
        names, _, _, red_flush = local_reduction(rec_cls, n_data, "0")
        red_flush = "if k == 0:\n" + indent(red_flush, 4)
        row_best, row_merge = row_reduction(rec_cls)
        ns.update(names, I32=numba.int32, I64=numba.int64, F64=numba.float64, KTD=sp.key_dtype, I64D=np.int64)
    for r in range(rpt):
        start += [f"l{r} = VT(FILL)", f"if i0 + {r} < R:", f"    l{r} = VT(boundary(i0 + {r}, -1{db}))"]
        if n_sym:
            start.append(f"y{r} = dat0[min(i0 + {r}, R - 1)]")
        up = "upin" if r == 0 else f"v{r - 1}"
        dg = "uprev" if r == 0 else f"l{r - 1}"
        call = f"v{r}, e{r} = tcell(i0 + {r}, j, {up}, l{r}, {dg}, {f'y{r}' if n_sym else '0'}, cj{du})"
        if red:
            call += f"\nkv = {values.key(rec_cls, f'v{r}')}\n" + row_best(f"rb{r}", f"rj{r}", "I32(j)")
            red_rows += [f"rb{r} = KT(RED_WORST)", f"rj{r} = I32(-1)"]
            merge = row_merge(f"rb{r}", f"rj{r}", f"i0 + {r}", "I32(0)")
            red_merge += [f"if i0 + {r} < R:", indent(merge, 4)]
        fast.append(call)
        slow += [f"v{r} = VT(FILL)", f"if i0 + {r} < R:", indent(call, 4)]
        shift.append(f"l{r} = v{r}")
        bottom.append(f"{'if' if r == 0 else 'elif'} rl == {r}:\n    ST(lr, lroff[q] + j, v{r})")
        right += [f"if i0 + {r} < R:", f"    ST(lc, lcoff[q] + i0 + {r}, v{r})"]
    shift.append(f"mine = v{rpt - 1}")
    # every lane reads one of the next 32 columns' top boundary (and symbol) at the start of each
    # block of 32 steps; lane 0 takes step st's from lane st, so no lane waits on a load a step
    prefetch = ["tcur = VT(FILL)", f"if s + k < C:\n    tcur = VT(boundary(-1, s + k{db}))"]
    if n_sym:  # cj: the column's symbol, typed as the symbols (a shuffle of 32 bits where they are)
        prefetch.append("ccur = dat1[min(s + k, C - 1)]")
        start += ["ccur = dat1[0]", "cj = ccur"]
    else:
        start.append("cj = 0")
    if sim:  # no shuffles in the simulator: the same through shared memory (a block is one warp)
        fs = values.fields(rec_cls)
        if fs is None:
            prologue = ["xch = cuda.shared.array(32, VTD)"]
        else:
            prologue = [f"xch{f} = cuda.shared.array(32, F{f}D)" for f in range(len(fs))]
            prologue.append("xch = (" + ", ".join(f"xch{f}" for f in range(len(fs))) + ",)")
        exchange = ["ST(xch, k, mine)", "cuda.syncthreads()", "upin = LD(xch, k - 1) if k > 0 else mine"]
        exchange += ["cuda.syncthreads()", "ST(xch, k, tcur)", "cuda.syncthreads()", "tv = LD(xch, st)"]
        exchange.append("cuda.syncthreads()")
        if n_sym:
            prologue.append("sxch = cuda.shared.array(32, SYMD)")
            exchange += ["sxch[k] = cj", "cuda.syncthreads()", "cin = sxch[k - 1] if k > 0 else cj"]
            exchange += ["cuda.syncthreads()", "sxch[k] = ccur", "cuda.syncthreads()", "cv = sxch[st]"]
            exchange.append("cuda.syncthreads()")
    else:
        prologue = ["pass"]
        exchange = ["upin = SHUP(mine)", "tv = SHFL(tcur, st)"]
        if n_sym:
            exchange += ["cin = cuda.shfl_up_sync(FULL, cj, 1)", "cv = cuda.shfl_sync(FULL, ccur, st)"]
    exchange = ["st = s & 31", "if st == 0:", indent("\n".join(prefetch), 4), *exchange]
    exchange += ["if k == 0:", "    upin = tv"]
    if n_sym:
        exchange += ["    cj = cv", "else:", "    cj = cin"]
    ns["SYMD"] = np.dtype(object)  # the simulator's exchange of column symbols: any type, as they are
    # the lanes' reductions merged across the warp (ties to the earlier cell), lane 0 keeping slot 0
    finish = red_merge + _warp_merge(sim, sp) + [red_flush] if red else ["pass"]
    if red and sim:
        prologue += ["rxk = cuda.shared.array(32, KTD)", "rxi = cuda.shared.array(32, I64D)"]
    src = fill(
        _RUN,
        pk=source.packed_args(len(kinds)),
        db=db,
        prologue=prologue,
        views=[*source.views(kinds), *source.output_views(sp.reduce_slots, sp.flags, len(kinds))],
        start=start + (["bv_ = KT(RED_WORST)", "bk_ = NO_CELL", *red_rows] if red else []),
        exchange=exchange,
        rows=["if full:", indent("\n".join(fast), 4), "else:", indent("\n".join(slow), 4)],
        shift=shift,
        bottom=bottom,
        right=right,
        finish=finish,
    )
    return k.keep(generated_kernel(values.expand(src, rec_cls), "run_warps", ns)).fn


def _pow2(x: np.ndarray) -> np.ndarray:
    """The least power of two >= each of ``x`` (1 for 0 and 1), as int64."""
    x = np.maximum(np.asarray(x, np.int64), 1)
    return np.left_shift(1, np.ceil(np.log2(x)).astype(np.int64))


def rows_per_lane(rows: np.ndarray) -> np.ndarray:
    """``RPT`` of instances of ``rows`` rows: rows over 32, rounded up to a power of two."""
    return _pow2(-(-np.asarray(rows, np.int64) // 32))


_GATHER = """def gather(src, at, n, out):
    q = cuda.grid(1)
    if q < n:
        out[q] = src[at[q]]
"""


@functools.cache
def _gather():
    """``out[q] = src[at[q]]`` for ``q < n``: a chunk's values picked from its last rows (one
    dispatcher a process: a new one a chunk loaded its module from the disk cache again)."""
    return generated_kernel(_GATHER, "gather", {"cuda": cuda})


class _Handle:
    """A chunk on its way through the GPU; :meth:`wait` gives its :class:`gpudp.many.chunks.ChunkOut`."""

    def __init__(self, out, start, end, done, keep, t0, edges, values):
        self.out, self.start, self.end, self.done, self.keep, self.t0 = out, start, end, done, keep, t0
        self.edges = edges  # the device's last rows and columns, and the stream that copies them
        self.values = values  # where the edges stay on the device: the last cells, on the host

    def wait(self):
        self.done.synchronize()  # the kernels and the copies to the host
        try:
            seconds = self.start.elapsed_time(self.end) / 1e3
        except Exception:  # the simulator's events carry no time
            seconds = time.perf_counter() - self.t0
        self.out.kernel_seconds = max(seconds, 0.0)
        out = self.out
        # the small outputs to plain memory: their page-locked blocks are the chunk's after next (the
        # decisions stay there: they are walked before that chunk starts, see Runner.start)
        out.rv, out.rc, out.flags = out.rv.copy(), out.rc.copy(), out.flags.copy()
        d_lr, d_lc, copies = self.edges

        def fetch():
            for d, h in zip(_fields(d_lr) + _fields(d_lc), _fields(out.lr) + _fields(out.lc), strict=True):
                d.copy_to_host(h, stream=copies)  # (not the default stream: it waits on every other)
            copies.synchronize()
            return out.lr, out.lc

        if self.values is None:
            fetch()
        else:  # the edges stay on the device until read (ChunkOut.edges); the values go now
            out.values, out.fetch = values.map_buf(self.values, np.array), fetch
        self.keep = self.edges = self.values = None  # the device buffers go (but the kept edges)
        return out


class Runner:
    """Runs a batch's chunks on the GPU (see the module's text): :meth:`start` queues a chunk's
    launches and copies and returns at once."""

    name = "cuda"
    layout = LAYOUT
    #: cells of one chunk at most: enough instances to fill the GPU (8,192 of 1,000 x 1,000 cells; a
    #: chunk is a few tens of milliseconds), where the cpu's chunks (gpudp.many.CHUNK_CELLS) took 134
    chunk_cells = 1 << 33

    def __init__(self, rec_cls, kinds, n_sym, packed, shapes):
        self.cls, self.kinds, self.n_sym = rec_cls, tuple(kinds), n_sym
        self.stream = stream()
        self.copies = stream()  # the chunks' edges to the host, while the next chunk computes
        self.d_packed = tuple(cuda.to_device(a, stream=self.stream) for a in packed)
        self.d_shapes = cuda.to_device(shapes, stream=self.stream)
        self.slots = sim_geometry(THREADS, SIM_THREADS)
        self.min_threads = sim_geometry(MIN_THREADS, 1)
        self.smem_max = shared_memory_optin(SIM_SMEM)
        self.compile_seconds = 0.0
        self.launches = 0
        self.info = {"threads": set(), "shared_bytes_max": 0, "device_buffers": 0, "edges_on_device": 0}
        self.info["warp_kernels"] = {}
        # the chunks' last rows and columns that may stay in device memory until read (a caller that
        # wants the values only never copies them): a share of the memory free at the start
        self.share = int(memory_info()[0] * DEVICE_SHARE)
        self.defer_bytes = self.share
        self.buffers, self.turn = (_Buffers(), _Buffers()), 0

    def chunk_bytes(self, budget: int) -> int:
        """Decision bytes of one chunk at most: within the host budget (two chunks in flight, in
        page-locked memory) and :data:`DEVICE_SHARE` of the free device memory."""
        return max(1, min(CHUNK_BYTES, budget // 2, self.share))

    @contextlib.contextmanager
    def running(self):
        """The span of the batch's chunks: no device or page-locked memory is freed in it (numba
        frees what was dropped, an earlier result's edges included, once enough has piled up, and a
        free waits for the whole device: the host would stall while a chunk computes, and the GPU
        then idle until the host caught up); what piled up goes after the last chunk. On an
        exception (a walk's ContractError, an interrupt) the device is waited for first: a chunk in
        flight still copies into this runner's page-locked leases, which the unwinding gives back
        to the pool for the next batch."""
        with cuda.defer_cleanup(), drained():
            yield

    def _warps(self, d_qs, rpt: int, outs: tuple, s):
        """Launch the values-only warp kernel (:func:`warp_kernel`) on the chunk's instances
        ``d_qs``, of ``rpt`` rows a lane, writing ``outs`` (the chunk's device ids, last rows and
        their offsets, last columns and theirs, reduction values and cells, flags)."""
        d_ids, *rest = outs
        args = (d_qs, len(d_qs), d_ids, self.d_shapes, *rest, *self.d_packed)
        t = time.perf_counter()
        fn = warp_kernel(self.cls, self.kinds, self.n_sym, rpt)
        warps = sim_geometry(WARPS, 1)
        launcher, _ = coop_blocks(fn, args, 32 * warps, 1 << 30, 0)  # compiles
        self.compile_seconds += time.perf_counter() - t
        launcher[-(-len(d_qs) // warps), 32 * warps, s, 0](*args)
        self.launches += 1
        self.info["threads"].add(32 * warps)
        if rpt not in self.info["warp_kernels"]:  # its registers and local memory, by rows a lane
            self.info["warp_kernels"][rpt] = kernel_resources(launcher)
        self.info["warp_instances"] = self.info.get("warp_instances", 0) + len(d_qs)

    def start(self, chunk) -> _Handle:
        s, cls = self.stream, self.cls
        t0 = time.perf_counter()
        # two sets of device buffers and page-locked blocks, a chunk's after the other's: a chunk
        # starts only once the one two before it has been waited for and finished (sweep_many keeps
        # one chunk in flight while it finishes the one before), so no allocation or free (which
        # waits for the whole device) a chunk
        self.turn ^= 1
        bufs = self.buffers[self.turn]
        nq = len(chunk.ids)
        vt = np.dtype(cls.value_dtype)
        warp = chunk.rows <= MAX_ROWS if not cls.decision_bits else np.zeros(nq, bool)
        # a reduction's slots an instance: a block's threads, or one where every instance takes a
        # warp (its lanes merged on the device: the slots go to the device and back with every chunk)
        slots = 1 if warp.all() else max(self.slots, 32)
        # the edges outlive the chunk (in the results): plain memory, copied in wait (by then the
        # chunk is done and the next one computes) or when first read, not page-locked blocks
        # copied once more
        out = ChunkOut.allocate(cls, chunk, slots, bufs.hosts(), edges=np.empty)
        n_lr, n_lc = len(_fields(out.lr)[0]), len(_fields(out.lc)[0])
        defer = not cls.decision_bits and (n_lr + n_lc) * vt.itemsize <= self.defer_bytes
        # the launch groups: a warp an instance by rows a lane; the block kernel by diagonal length
        kc = _pow2(np.minimum(chunk.rows, chunk.cols))
        groups = []
        if not cls.decision_bits:  # values only: a warp an instance where its rows fit the lanes
            kc[warp] = 0
            rpt = rows_per_lane(chunk.rows)
            groups += [("warps", R, warp & (rpt == R)) for R in np.unique(rpt[warp]).tolist()]
        groups += [("blocks", K, kc == K) for K in np.unique(kc[kc > 0]).tolist()]
        groups = [(how, K, np.flatnonzero(sel)) for how, K, sel in groups]
        # every index array in one page-locked block, one copy up (a copy from plain memory waits
        # for the stream: it would hold the host until the chunk before is done)
        ints = [chunk.ids, chunk.doff, chunk.lroff, chunk.lcoff, *(qs for _, _, qs in groups)]
        if defer:
            ints.append(chunk.lroff + chunk.cols - 1)  # where each instance's value lies in lr
        staged, d_ints = bufs.upload(ints, s)
        d_ids, d_doff, d_lroff, d_lcoff, *d_rest = d_ints
        d_words = bufs.device("words", out.words, s)
        if defer:  # kept with the results until read: not reused
            d_lr, d_lc = (
                _per_field(x, "", lambda _, a: cuda.device_array(len(a), a.dtype, stream=s))
                for x in (out.lr, out.lc)
            )
        else:
            d_lr, d_lc = (
                _per_field(x, n, lambda n, a: bufs.device(n, a, s))
                for x, n in ((out.lr, "lr"), (out.lc, "lc"))
            )
        d_rv, d_rc, d_fl = (bufs.device(name, getattr(out, name), s, True) for name in ("rv", "rc", "flags"))
        start, end = event(), event()
        start.record(s)
        keep = [staged]
        for (how, K, qs), d_qs in zip(groups, d_rest, strict=False):
            if how == "warps":
                self._warps(d_qs, int(K), (d_ids, d_lr, d_lroff, d_lc, d_lcoff, d_rv, d_rc, d_fl), s)
                continue
            nb = len(qs)
            threads = int(min(self.slots, max(self.min_threads, K)))
            smem = 3 * K * vt.itemsize
            shared = smem <= self.smem_max and shares_memory(cls)
            fn = kernel(cls, self.kinds, self.n_sym, shared)
            grid = nb if shared else min(nb, GLOBAL_BLOCKS)
            shape = (grid, 3 * K) if not shared else (1, 1)
            dts = values.map_dtypes(cls, lambda dt: dt)
            scratch = _per_field(dts, "scratch", lambda n, dt, sh=shape: bufs.scratch(n, sh, dt, s))
            args = (
                d_qs,
                nb,
                d_ids,
                self.d_shapes,
                d_doff,
                d_words,
                d_lr,
                d_lroff,
                d_lc,
                d_lcoff,
                d_rv,
                d_rc,
                d_fl,
                scratch,
                K,
                *self.d_packed,
            )
            t = time.perf_counter()
            launcher, _ = coop_blocks(fn, args, threads, 1 << 30, smem if shared else 0)  # compiles; opts in
            self.compile_seconds += time.perf_counter() - t
            launcher[grid, threads, s, smem if shared else 0](*args)
            self.launches += 1
            self.info["threads"].add(threads)
            if shared:
                self.info["shared_bytes_max"] = max(self.info["shared_bytes_max"], smem)
            else:
                self.info["device_buffers"] += grid
        end.record(s)
        vals = None
        if defer:
            self.defer_bytes -= sum(a.nbytes for a in _fields(d_lr) + _fields(d_lc))
            self.info["edges_on_device"] += 1

            def pick(name, d_field):  # each instance's last cell, gathered on the device and copied
                d_vals = bufs.device(f"values{name}", np.empty(nq, d_field.dtype), s, False)
                _gather()[-(-nq // 256), 256, s](d_field, d_rest[-1], nq, d_vals)
                host = bufs.host(f"values{name}", nq, d_field.dtype)
                d_vals.copy_to_host(host, stream=s)
                keep.append(host)
                return host

            vals = _per_field(d_lr, "", pick)
        d_words.copy_to_host(out.words, stream=s)
        d_rv.copy_to_host(out.rv, stream=s)
        d_rc.copy_to_host(out.rc, stream=s)
        d_fl.copy_to_host(out.flags, stream=s)
        done = event()
        done.record(s)
        return _Handle(out, start, end, done, keep, t0, (d_lr, d_lc, self.copies), vals)


class _Buffers:
    """Device buffers and page-locked host blocks that one chunk after another reuses (grown when a
    chunk needs more): a new page-locked block a chunk costs its allocation, and the pool it comes
    from frees others when it is given back."""

    def __init__(self):
        self.dev: dict = {}
        self.pinned: dict = {}

    def _take(self, name: str, n: int, dtype, s):
        """``n`` items of device buffer ``name`` (grown by a quarter at least when too small)."""
        return _grown(self.dev, name, n, dtype, lambda size, dt: cuda.device_array(size, dt, stream=s))

    def host(self, name: str, n: int, dtype) -> np.ndarray:
        """``n`` items of page-locked block ``name`` (contents undefined)."""
        return _grown(self.pinned, name, n, dtype, pinned_pool().lease)

    def hosts(self):
        """``empty(n, dtype)`` for :meth:`gpudp.many.chunks.ChunkOut.allocate`: its arrays on this
        set's page-locked blocks, one a call in the order they are asked for."""
        calls = itertools.count()
        return lambda n, dtype: self.host(f"out{next(calls)}", n, dtype)

    def device(self, name: str, like: np.ndarray, s, upload: bool = False):
        """A device array of ``like``'s shape and dtype (its contents copied up with ``upload``:
        ``like`` page-locked, so that the copy is queued, not waited for)."""
        d = self._take(name, like.size, like.dtype, s)
        if like.ndim > 1:
            d = d.reshape(like.shape)
        if upload:
            d.copy_to_device(like, stream=s)
        return d

    def scratch(self, name: str, shape: tuple, dtype, s):
        n = int(np.prod(shape))
        return self._take(name, n, dtype, s)[:n].reshape(shape)

    def upload(self, arrays: list, s) -> tuple:
        """1-D integer ``arrays`` copied into one page-locked int64 block and up in one copy: the
        block (to keep until the copy is done) and each array's device view."""
        ends = np.cumsum([0] + [len(a) for a in arrays])
        host = self.host("ints", int(ends[-1]), np.int64)
        for a, lo, hi in zip(arrays, ends[:-1], ends[1:], strict=True):
            host[lo:hi] = a
        d = self._take("ints", len(host), np.int64, s)
        d[: len(host)].copy_to_device(host, stream=s)
        return host, [d[lo:hi] for lo, hi in zip(ends[:-1].tolist(), ends[1:].tolist(), strict=True)]


def _per_field(buf, name: str, make):
    """``make(name, buf)``, or for a record's tuple ``make(f"{name}{k}", field k)`` for each field."""
    if isinstance(buf, tuple):
        return tuple(make(f"{name}{k}", a) for k, a in enumerate(buf))
    return make(name, buf)


def _fields(buf) -> tuple:
    """A buffer of values as a tuple of arrays: a record's fields, or the one array."""
    return buf if isinstance(buf, tuple) else (buf,)


def _grown(store: dict, name: str, n: int, dtype, make):
    """``n`` items of ``store``'s buffer ``name`` of ``dtype``, made by ``make(size, dtype)`` (grown
    by a quarter at least when too small)."""
    dtype = np.dtype(dtype)
    buf = store.get((name, dtype.str))
    if buf is None or buf.size < n:
        size = max(n, 1) if buf is None else max(n, buf.size + buf.size // 4)
        buf = store[(name, dtype.str)] = make(size, dtype)
    return buf if buf.size == n else buf[:n]
