"""Everything that touches the CUDA compiler (numba-cuda) lives in this one module.

Other modules, plug-ins included, take ``cuda`` and the helpers below from here, so that moving to
numba-cuda-mlir (numba-cuda is in maintenance mode, NVIDIA/numba-cuda#902) is a change to one file.
Importing this module never needs a GPU; :func:`available` says whether one can be used.
"""

from __future__ import annotations

import os
import time
import warnings

import numba
import numpy as np
from numba import cuda
from numba.core.errors import NumbaPerformanceWarning

__all__ = [
    "cuda",
    "available",
    "is_simulator",
    "unavailable_reason",
    "device_name",
    "device_jit",
    "kernel_jit",
    "pinned_empty",
    "mapped_empty",
    "stream",
    "event",
    "max_cooperative_blocks",
]


def is_simulator() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


_REASON: list[str] = []


def available() -> bool:
    """True when kernels can run: a real GPU, or the CUDA simulator when it is switched on."""
    try:
        ok = bool(cuda.is_available())
    except Exception as e:  # a broken driver raises rather than answering False
        _REASON[:] = [f"{type(e).__name__}: {e}"]
        return False
    if not ok and not _REASON:
        _REASON.append("numba.cuda.is_available() is False: no GPU or no CUDA driver")
    return ok


def unavailable_reason() -> str:
    available()
    return _REASON[0] if _REASON else "CUDA is available"


def device_name() -> str:
    if is_simulator():
        return "CUDA simulator (NUMBA_ENABLE_CUDASIM=1)"
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    cc = ".".join(map(str, dev.compute_capability))
    return f"{name} (sm {cc}, {dev.MULTIPROCESSOR_COUNT} SMs)"


def device_jit(fn):
    """Compile a plain Python function as a CUDA device function, inlined into its callers."""
    if is_simulator():
        return cuda.jit(device=True)(fn)
    return cuda.jit(device=True, forceinline=True)(fn)


def kernel_jit(fn, **kw):
    return cuda.jit(**kw)(fn)


def pinned_empty(shape, dtype) -> np.ndarray:
    """Page-locked host memory (fast, asynchronous DMA); plain memory under the simulator."""
    if is_simulator():
        return np.empty(shape, dtype)
    return cuda.pinned_array(shape, dtype=dtype)


def mapped_empty(shape, dtype) -> np.ndarray:
    if is_simulator():
        return np.empty(shape, dtype)
    return cuda.mapped_array(shape, dtype=dtype)


def stream():
    return cuda.stream()


def event(timing: bool = True):
    return cuda.event(timing=timing)


def max_cooperative_blocks(kernel, threads: int, fallback: int) -> int:
    """How many blocks of ``threads`` a cooperative (grid-synchronised) launch may have."""
    if is_simulator():
        return fallback
    try:
        return int(kernel.max_cooperative_grid_blocks(threads))
    except Exception:
        return fallback


# ---------------------------------------------------------------------------------------------
# Pinned host memory for decision stores, kept between solves (page-locking GBs costs ~0.1 s/GB).
# ---------------------------------------------------------------------------------------------

_POOL: list = []


def pinned_words(n: int) -> np.ndarray:
    """A page-locked uint32 array of n words, from a pool that keeps the largest buffer freed."""
    for k, buf in enumerate(_POOL):
        if buf.size >= n:
            _POOL.pop(k)
            return _Lease(buf, n)
    return _Lease(pinned_empty(max(n, 1), np.uint32), n)


class _Lease(np.ndarray):
    """A view on a pooled pinned buffer that returns the buffer to the pool when dropped."""

    def __new__(cls, buf, n):
        obj = buf[:n].view(cls)
        obj._pool_buf = buf
        return obj

    def __array_finalize__(self, obj):
        self._pool_buf = None

    def __del__(self):
        buf = getattr(self, "_pool_buf", None)
        if buf is not None:
            _POOL.append(buf)
            _POOL.sort(key=lambda b: b.size)
            del _POOL[:-1]


# ---------------------------------------------------------------------------------------------
# Generated kernels
# ---------------------------------------------------------------------------------------------

_CACHE: dict = {}
FULL = 0xFFFFFFFF
#: threads per block of the layered kernel
LAYER_THREADS = 256

_TILED = """
def run_tiles(d0, d1, NI, NJ, R, C, bottom, right, words, wtile0, diag_off{da}):
    k = cuda.threadIdx.x
    grid = cuda.cg.this_grid()
{prologue}
    for d in range(d0, d1):
        imin = max(0, d - (NJ - 1))
        ntl = min(d, NI - 1) - imin + 1
        q = cuda.blockIdx.x
        while q < ntl:
            I = imin + q
            J = d - I
            twb = (diag_off[d] + q - wtile0) * WPT + k * RPT
            r0 = I * BH
            c0 = J * TW
            eb = J * (TW + 1)
            ncol = min(TW, C - c0)
            lastrow = min(r0 + BH, R) - 1
            i0 = r0 + k * RPT
            full = i0 + RPT <= R
{load_left}
            if k == 0:
                if I == 0:
                    uprev = VT(boundary(-1, c0 - 1{du}))
                elif J == 0:
                    uprev = VT(boundary(r0 - 1, -1{du}))
                else:
                    uprev = bottom[eb]
            elif i0 - 1 < R:
                if J == 0:
                    uprev = VT(boundary(i0 - 1, c0 - 1{du}))
                else:
                    uprev = right[i0 - 1]
            else:
                uprev = VT(FILL)
            own = (lastrow - r0) // RPT == k
            rl = (lastrow - r0) % RPT
{corner_pick}
            tcur = top(I, eb, c0, k, ncol, bottom{du})
            tnext = top(I, eb, c0, 32 + k, ncol, bottom{du})
{col_prefetch}
            cuda.syncthreads()
            if own:
                bottom[eb] = cn
{planes_init}
            mine = VT(FILL)
            nsteps = ncol + 31
            steady = r0 + BH <= R
            for blk in range((nsteps + 31) >> 5):
                s0 = blk << 5
                if blk > 0:
                    tcur = tnext
                    tnext = top(I, eb, c0, s0 + 32 + k, ncol, bottom{du})
{col_advance}
                if steady and s0 >= 31 and s0 + 32 <= ncol:
                    j0 = c0 + s0 - k
                    b0 = eb + 1 + s0 - k
{steady_steps}
                else:
                    for st in range(32):
{exchange}
                        jj = s0 + st - k
                        if jj >= 0 and jj < ncol:
                            j = c0 + jj
{rows}
{planes_acc}
                            uprev = upin
{shift_left}
                            if own:
{bottom_pick}
                                bottom[eb + 1 + jj] = bv
{planes_flush}
            cuda.syncthreads()
{store_right}
            q += cuda.gridDim.x
        if d + 1 < d1:
            grid.sync()
"""

_TOP = """
def top(I, eb, c0, col, ncol, bottom{du}):
    if col >= ncol:
        return VT(FILL)
    if I == 0:
        return VT(boundary(-1, c0 + col{du}))
    return bottom[eb + 1 + col]
"""

_LAYERED = """
def run_layers(t0, t1, ring, sizes, woff, words, wbase, last_row, last_col, R, C{da}):
    grid = cuda.cg.this_grid()
    tid = cuda.grid(1)
    nth = cuda.gridDim.x * cuda.blockDim.x
    lane = cuda.laneid
    W1 = ring.shape[0]
{prologue}
    for t in range(t0, t1):
        n = sizes[t]
        base = 0
        while base < n:
            p = base + tid
            dd = 0
            if p < n:
                v, dd = lcell(t, p, ring, W1, last_row, last_col, R, C{da})
                ring[t % W1, p] = v
{ballots}
            base += nth
        if t + 1 < t1:
            grid.sync()
"""


def _namespace(rec_cls):
    from ..codegen import numba_value_type

    return {
        "cuda": cuda,
        "np": np,
        "VT": numba_value_type(rec_cls),
        "VTD": np.dtype(rec_cls.value_dtype),
        "FILL": rec_cls.fill,
        "FULL": FULL,
        "cell": device_jit(rec_cls.cell),
        "boundary": device_jit(getattr(rec_cls, "boundary", lambda *a: 0)),
    }


def tiled_kernel(rec_cls, n_data: int, bh: int, tw: int, sym_dtype=None):
    """One warp per tile: lane k owns bh/32 consecutive rows and runs one column behind lane k-1,
    taking the value above its first row (and the column's symbol) from lane k-1 by shuffle.

    Steps go in blocks of 32. Step st of a block sets bit st of each row's decision word; the
    store's tile layout shifts lane k's columns by k, so every lane completes its words with the
    block and the warp writes them together. A block in which every lane is on a column of a
    whole-height tile runs unrolled with no edge or range tests (the steady state, nearly all of a
    large grid); the blocks at a tile's start and end, and tiles cut by the grid's last row, run a
    checked loop. Tiles of one tile anti-diagonal run as separate blocks; a grid sync separates the
    tile anti-diagonals of one launch."""
    key = ("tiled", rec_cls, n_data, bh, tw, sym_dtype)
    if key in _CACHE:
        return _CACHE[key]
    from ..codegen import compile_source, data_args, indent, n_symbols, tile_cell_source, user_args

    rpt = bh // 32
    bits = rec_cls.decision_bits
    sym = n_symbols(rec_cls)
    da, du = data_args(n_data), user_args(rec_cls, n_data)
    sim = is_simulator()
    ns = _namespace(rec_cls)
    ns.update(BH=bh, TW=tw, RPT=rpt, WPT=(tw // 32 + 1) * bits * bh, U32=numba.uint32)
    ns.update(U0=np.uint32(0), SYMD=np.dtype(sym_dtype or np.int64))
    ns["tcell"] = device_jit(
        compile_source(tile_cell_source(rec_cls, n_data, rec_cls.offsets), "tcell", dict(ns))
    )
    ns["top"] = device_jit(compile_source(_TOP.format(du=du), "top", dict(ns)))
    j = "\n".join
    load_left, corner, bottom_pick, fast, slow, store_right = [], [], [], [], [], []
    for r in range(rpt):
        load_left += [
            f"l{r} = VT(FILL)",
            f"if i0 + {r} < R:",
            "    if J == 0:",
            f"        l{r} = VT(boundary(i0 + {r}, c0 - 1{du}))",
            "    else:",
            f"        l{r} = right[i0 + {r}]",
        ]
        if sym:
            load_left.append(f"y{r} = dat0[min(i0 + {r}, R - 1)]")
        corner.append(f"{'if' if r == 0 else 'elif'} rl == {r}:\n    cn = l{r}")
        bottom_pick.append(f"{'if' if r == 0 else 'elif'} rl == {r}:\n    bv = v{r}")
        up = "upin" if r == 0 else f"v{r - 1}"
        dg = "uprev" if r == 0 else f"l{r - 1}"
        ri = f"y{r}" if sym else "0"
        call = f"v{r}, e{r} = tcell(i0 + {r}, j, {up}, l{r}, {dg}, {ri}, cj{du})"
        fast.append(call)
        slow += [f"v{r} = VT(FILL)", f"e{r} = 0", f"if i0 + {r} < R:", f"    {call}"]
        store_right += [f"if i0 + {r} < R:", f"    right[i0 + {r}] = l{r}"]
    corner.append("else:\n    cn = VT(FILL)")
    bottom_pick.append("else:\n    bv = VT(FILL)")
    rows = ["if full:", indent(j(fast), 4), "else:", indent(j(slow), 4)]
    shift = [f"l{r} = v{r}" for r in range(rpt)] + [f"mine = v{rpt - 1}"]
    # decision bits: the step st (0..31) of a block of 32 steps sets bit st of each row's word; lane
    # k's step s is column s - k, stored at shifted position s, so all lanes fill their words in the
    # same block and the warp writes them together (coalesced) after it
    planes = [(r, b) for r in range(rpt) for b in range(bits)]
    init = [f"w{r}_{b} = U0" for r, b in planes]

    def acc(step):
        return [f"w{r}_{b} = U32(w{r}_{b} | (U32((e{r} >> {b}) & 1) << U32({step})))" for r, b in planes]

    flush = ["wb = twb + blk * " + str(bits * bh)]
    flush += [f"words[wb + {b * bh + r}] = w{r}_{b}\nw{r}_{b} = U0" for r, b in planes]
    col_prefetch, col_advance = ["cj = 0"], []
    if sym:
        col_prefetch = [
            "ccur = dat1[c0 + min(k, ncol - 1)]",
            "cnext = dat1[c0 + min(32 + k, ncol - 1)]",
            "cj = ccur",
        ]
        col_advance = ["if blk > 0:", "    ccur = cnext", "    cnext = dat1[c0 + min(s0 + 32 + k, ncol - 1)]"]

    def exchange(step):
        """Lane k takes the value above its first row (and the column's symbol) from lane k - 1;
        lane 0 takes them from the tile's top edge (and the column symbols) held across the warp."""
        if sim:  # no warp shuffles in the simulator: the same through shared memory (block = warp)
            out = [
                "xch[k] = mine",
                "cuda.syncthreads()",
                "upin = xch[k - 1] if k > 0 else mine",
                "cuda.syncthreads()",
                "xch[k] = tcur",
                "cuda.syncthreads()",
                f"tv = xch[{step}]",
                "cuda.syncthreads()",
            ]
            if sym:
                out += [
                    "sxch[k] = cj",
                    "cuda.syncthreads()",
                    "cin = sxch[k - 1] if k > 0 else cj",
                    "cuda.syncthreads()",
                    "sxch[k] = ccur",
                    "cuda.syncthreads()",
                    f"cv = sxch[{step}]",
                    "cuda.syncthreads()",
                ]
        else:
            out = ["upin = cuda.shfl_up_sync(FULL, mine, 1)", f"tv = cuda.shfl_sync(FULL, tcur, {step})"]
            if sym:
                out += ["cin = cuda.shfl_up_sync(FULL, cj, 1)", f"cv = cuda.shfl_sync(FULL, ccur, {step})"]
        out.append("if k == 0:\n    upin = tv")
        if sym:
            out.append("cj = cv if k == 0 else cin")
        return out

    # the steady state: a whole tile height, and every lane on a column of the tile for all 32 steps
    # of the block (no edge or range tests; lane 31 owns the tile's last row)
    steady = []
    for st in range(32):
        steady += exchange(st) + [f"j = j0 + {st}"] + fast
        steady += acc(st) + ["uprev = upin"] + shift + ["if k == 31:", f"    bottom[b0 + {st}] = mine"]
    prologue = ["xch = cuda.shared.array(32, VTD)", "sxch = cuda.shared.array(32, SYMD)"] if sim else ["pass"]
    src = _TILED.format(
        da=da,
        du=du,
        prologue=indent(j(prologue), 4),
        load_left=indent(j(load_left), 12),
        corner_pick=indent(j(corner), 12),
        col_prefetch=indent(j(col_prefetch), 12),
        planes_init=indent(j(init) or "pass", 12),
        col_advance=indent(j(col_advance) or "pass", 16),
        steady_steps=indent(j(steady), 20),
        exchange=indent(j(exchange("st")), 24),
        rows=indent(j(rows), 28),
        planes_acc=indent(j(acc("st")) or "pass", 28),
        shift_left=indent(j(shift), 28),
        bottom_pick=indent(j(bottom_pick), 32),
        planes_flush=indent(j(flush) if bits else "pass", 16),
        store_right=indent(j(store_right), 12),
    )
    fn = kernel_jit(compile_source(src, "run_tiles", ns))
    _CACHE[key] = fn
    return fn


def layered_kernel(rec_cls, n_data: int, schedule):
    """A persistent (cooperative) kernel over layers: a grid-stride loop over the cells of a layer,
    decision bit planes gathered by warp ballots, one grid sync between layers."""
    key = ("layered", rec_cls, n_data, schedule and (schedule.offsets, schedule.a, schedule.b))
    if key in _CACHE:
        return _CACHE[key]
    from ..codegen import compile_source, data_args, indent, layer_cell_source

    bits = rec_cls.decision_bits
    ns = _namespace(rec_cls)
    ns["lcell"] = device_jit(compile_source(layer_cell_source(rec_cls, n_data, schedule), "lcell", dict(ns)))
    ballots = []
    sim = is_simulator()
    for b in range(bits):
        bit = f"((dd >> {b}) & 1)"
        if sim:  # no warp ballot in the simulator: gather the warp's bits through shared memory
            ballots += [
                f"bal[cuda.threadIdx.x] = {bit}",
                "cuda.syncthreads()",
                f"m{b} = 0",
                "if lane == 0:",
                "    for x in range(32):",
                f"        m{b} |= bal[cuda.threadIdx.x + x] << x",
                "cuda.syncthreads()",
            ]
        else:
            ballots.append(f"m{b} = cuda.ballot_sync(FULL, {bit} != 0)")
        ballots += [
            "if lane == 0 and p < n:",
            f"    words[woff[t] - wbase + (p // 32) * {bits} + {b}] = m{b}",
        ]
    prologue = f"bal = cuda.shared.array({LAYER_THREADS}, np.int64)" if sim and bits else "pass"
    src = _LAYERED.format(
        da=data_args(n_data), ballots=indent("\n".join(ballots) or "pass", 12), prologue=indent(prologue, 4)
    )
    fn = kernel_jit(compile_source(src, "run_layers", ns))
    _CACHE[key] = fn
    return fn


#: the kernel of the last sweep, specialised (for diagnostics: resources, SASS)
LAST_LAUNCHER: list = []

#: decision words per device slab (two slabs alternate: one computes while the other is evicted)
SLAB_WORDS = 1 << 25


def _coop_blocks(kernel, args, threads: int, want: int) -> tuple[object, int]:
    """Specialise the kernel for these arguments; cap the grid at what a cooperative launch allows."""
    if is_simulator():
        return kernel, 1  # the simulator runs cooperative grids of one block only
    spec = kernel.specialize(*args)
    limit = 0
    try:
        (overload,) = spec.overloads.values()
        limit = int(overload.max_cooperative_grid_blocks(threads))
    except Exception:
        pass
    if limit <= 0:
        limit = cuda.get_current_device().MULTIPROCESSOR_COUNT * 4
    return spec, max(1, min(want, limit))


def _resources(launcher) -> dict:
    """Registers and local memory per thread of the compiled kernel (where numba-cuda says)."""
    out = {}
    for key, name in (
        ("registers_per_thread", "get_regs_per_thread"),
        ("local_bytes_per_thread", "get_local_mem_per_thread"),
    ):
        try:
            val = getattr(launcher, name)()
            out[key] = next(iter(val.values())) if isinstance(val, dict) else val
        except Exception:
            pass
    return out


def run_plan(plan, rec, data, store, stats, bar) -> dict:
    """Run a planned sweep on the GPU.

    Chunks of wavefronts alternate between two device slabs of decision words. Chunk c computes
    on one stream into slab c % 2; a second stream waits for it and copies the slab to the host
    store (page-locked: asynchronous DMA) or to a page-locked staging buffer that the host then
    writes to the disk memmap, while chunk c + 1 computes into the other slab. Only the values of
    the dependency window (a row and a column of tile edges, or ring of layers) live on the device.
    """
    cls = type(rec)
    vt = np.dtype(cls.value_dtype)
    bits = cls.decision_bits
    rows, cols = plan.rows, plan.cols
    d_data = tuple(cuda.to_device(x) if isinstance(x, np.ndarray) else x for x in data)
    plan.make_chunks(max_words=SLAB_WORDS, max_cells=1 << 62)
    slab_words = (
        max(
            (plan.layout.words_of(u0, u1)[1] - plan.layout.words_of(u0, u1)[0] for u0, u1 in plan.chunks),
            default=1,
        )
        if bits
        else 1
    )
    compute, copier = cuda.stream(), cuda.stream()
    slabs = [
        cuda.device_array(max(slab_words, 1), np.uint32, stream=compute) for _ in range(2 if bits else 1)
    ]
    staging = (
        [pinned_empty(max(slab_words, 1), np.uint32) for _ in range(2)]
        if store is not None and store.on_disk
        else None
    )
    copied = [None, None]  # per slab: (event when its copy finished, chunk index)
    events = []
    out = {}

    if plan.kind == "tiled":
        lay = plan.layout
        sym_dtype = data[1].dtype if getattr(cls, "symbols", False) else None
        kernel = tiled_kernel(cls, len(data), lay.bh, lay.tw, sym_dtype)
        bottom = cuda.to_device(np.full(lay.nj * (lay.tw + 1), cls.fill, vt), stream=compute)
        right = cuda.to_device(np.full(max(rows, 1), cls.fill, vt), stream=compute)
        diag_off = cuda.to_device(lay.diag_off, stream=compute)
        want = max((lay.tiles_on(d) for d in range(lay.num_diagonals)), default=1)
        threads = 32

        def args(u0, u1, slab):
            return (
                u0,
                u1,
                lay.ni,
                lay.nj,
                rows,
                cols,
                bottom,
                right,
                slab,
                int(lay.diag_off[u0]),
                diag_off,
                *d_data,
            )
    else:
        kernel = layered_kernel(cls, len(data), plan.schedule)
        window = plan.schedule.window if plan.schedule else cls.window
        width = int(plan.sizes.max()) if plan.n_units else 1
        ring = cuda.to_device(np.full((window + 1, max(width, 1)), cls.fill, vt), stream=compute)
        last_row = cuda.to_device(np.full(max(cols, 1), cls.fill, vt), stream=compute)
        last_col = cuda.to_device(np.full(max(rows, 1), cls.fill, vt), stream=compute)
        sizes = cuda.to_device(plan.sizes, stream=compute)
        woff = cuda.to_device(plan.layout.woff, stream=compute)
        threads = LAYER_THREADS
        want = -(-width // threads)

        def args(u0, u1, slab):
            return (
                u0,
                u1,
                ring,
                sizes,
                woff,
                slab,
                int(plan.layout.woff[u0]),
                last_row,
                last_col,
                rows,
                cols,
                *d_data,
            )

    launcher, blocks = None, 1
    warnings.filterwarnings("ignore", category=NumbaPerformanceWarning)  # small grids are expected

    def finish(slot):
        """Wait for the copy out of a slab; land staged words in the disk store; tick progress."""
        if copied[slot] is None:
            return
        evt, c = copied[slot]
        evt.synchronize()
        u0, u1 = plan.chunks[c]
        if staging is not None:
            w0, w1 = plan.layout.words_of(u0, u1)
            store.words[w0:w1] = staging[slot][: w1 - w0]
        if bar is not None:
            bar.update(plan.unit_cells(u0, u1))
        copied[slot] = None

    t_wall = time.perf_counter()
    for c, (u0, u1) in enumerate(plan.chunks):
        slot = c % len(slabs)
        finish(slot)
        a = args(u0, u1, slabs[slot])
        if launcher is None:
            t = time.perf_counter()
            launcher, blocks = _coop_blocks(kernel, a, threads, want)
            stats.extra["compile_seconds"] = time.perf_counter() - t
            stats.extra.update(_resources(launcher))
            LAST_LAUNCHER[:] = [launcher]
        start, end = cuda.event(), cuda.event()
        start.record(stream=compute)
        launcher[blocks, threads, compute](*a)
        end.record(stream=compute)
        events.append((start, end))
        if bits:
            w0, w1 = plan.layout.words_of(u0, u1)
            end.wait(stream=copier)
            dest = staging[slot] if staging is not None else store.words[w0:w1]
            slabs[slot][: w1 - w0].copy_to_host(dest[: w1 - w0], stream=copier)
            done = cuda.event()
            done.record(stream=copier)
            copied[slot] = (done, c)
        elif bar is not None:
            end.synchronize()
            bar.update(plan.unit_cells(u0, u1))
    for slot in range(len(slabs)):
        finish(slot)
    compute.synchronize()
    copier.synchronize()
    stats.kernel_seconds = sum(s.elapsed_time(e) for s, e in events) / 1e3
    stats.extra["gpu_seconds"] = time.perf_counter() - t_wall
    stats.extra["launches"] = len(events)
    stats.extra["grid"] = [blocks, threads]

    if plan.kind == "tiled":
        from .cpu import tiled_last_row

        out["last_row"] = tiled_last_row(bottom.copy_to_host(), plan.layout)
        out["last_col"] = right.copy_to_host()[:rows]
    elif plan.schedule is not None:
        out["last_row"] = last_row.copy_to_host()[:cols]
        out["last_col"] = last_col.copy_to_host()[:rows]
    elif plan.n_units:
        last = plan.n_units - 1
        out["last_layer"] = ring.copy_to_host()[last % (window + 1), : plan.sizes[last]]
    return out
