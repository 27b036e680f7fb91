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

from .. import values
from ..codegen import decision_dtype, diagonal_groups, n_flags, n_outputs, n_reduce
from ..errors import CheckError
from ..memory import BlockPool
from ..store import WORD_BYTES, tiled_last_row
from . import is_device_array  # the features' cuda modules take it from here
from .base import Backend, checkpoint_arrays, line_edges

__all__ = [
    "cuda",
    "available",
    "is_simulator",
    "unavailable_reason",
    "device_name",
    "device_jit",
    "kernel_jit",
    "as_device_array",
    "is_device_array",
    "is_page_locked",
    "page_locked_copy",
    "pinned_empty",
    "pinned_pool",
    "pinned_words",
    "mapped_empty",
    "sim_geometry",
    "stream",
    "event",
    "max_cooperative_blocks",
]


def is_simulator() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def sim_geometry(real, simulated):
    """``simulated`` under the CUDA simulator, else ``real``: the one place a feature's kernels take
    a smaller geometry there (the simulator runs a thread per Python thread, and tiny test instances
    should still span several blocks)."""
    return simulated if is_simulator() else real


def stride_grid(items: int, most: int = 4096) -> tuple[int, int]:
    """``(blocks, threads)`` for a grid-stride kernel over ``items`` (``for i in range(cuda.grid(1),
    items, cuda.gridsize(1))``): 256 threads a block (32 in the simulator), enough blocks for one
    item a thread, at most ``most``, at least one."""
    threads = sim_geometry(256, 32)
    return max(1, min(most, -(-int(items) // threads))), threads


def resident_threads() -> int:
    """Threads the device holds at once (its SMs times the threads an SM holds; 0 under the
    simulator): what the driver reserves each thread's local memory for."""
    if is_simulator():
        return 0
    dev = cuda.get_current_device()
    per_sm = 2048  # every sm_70 .. sm_90 part; the attribute's name differs between numba-cuda versions
    for name in ("MAX_THREADS_PER_MULTIPROCESSOR", "MAX_THREADS_PER_MULTI_PROCESSOR"):
        try:
            per_sm = int(getattr(dev, name))
            break
        except AttributeError:
            continue
    return per_sm * dev.MULTIPROCESSOR_COUNT


#: share of an SM's shared-memory capacity that the resident threads' local memory may fill
#: (:func:`cached_grid`): L1 and shared memory are one array of each SM, the shared part's attribute
#: the nearest the driver tells of the L1's size. H100, one pair a thread, 640 / 768 bytes of local
#: memory a thread: fastest at 256 resident threads an SM (160 / 196 KiB), 1.3x slower at 512 / 384,
#: 2.4-4x at 1,024 / 512 (docs/benchmarks.md, "Batch kernels and the L1 cache")
L1_LOCAL_SHARE = 7 / 8

_L1_BLOCKS: dict = {}


def cached_grid(kernel, args: tuple, threads: int, want: int) -> int:
    """The grid for ``want`` blocks of ``threads`` threads of a grid-stride ``kernel`` (each thread
    loops over its items, so any grid covers them) whose threads work in local memory (per-thread
    arrays): at most as many blocks an SM as keep the resident threads' local memory within the
    SM's L1 cache (:data:`L1_LOCAL_SHARE`). Past it every thread's arrays go out to L2 and the
    kernel runs several times slower. ``want`` for a kernel with no local memory, or under the
    simulator. Found once a kernel and block size (its local arrays' sizes are the kernel's
    compile-time constants, the same for every argument type), the kernel compiled for ``args``
    then if it was not (through its own dispatcher, so the disk cache serves it)."""
    if is_simulator():
        return want
    key = (kernel, threads)
    per_sm = _L1_BLOCKS.get(key)
    if per_sm is None:
        argtypes = tuple(kernel.typeof_pyval(a) for a in args)
        kernel.compile(argtypes)
        local = int(kernel.overloads[argtypes].local_mem_per_thread)
        dev = cuda.get_current_device()
        sms = int(dev.MULTIPROCESSOR_COUNT)
        fit = int(dev.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR * L1_LOCAL_SHARE) // max(threads * local, 1)
        # a cap at or above the blocks an SM holds anyway would only cut the last wave short
        per_sm = max(1, fit) * sms if fit < resident_threads() // (sms * threads) else 0
        _L1_BLOCKS[key] = per_sm
    return max(1, min(want, per_sm)) if per_sm else want


def shared_memory_optin(simulated: int) -> int:
    """The dynamic shared memory a block may opt in to, in bytes (``simulated`` under the
    simulator: tiny test instances then spill to device memory as large ones do on a GPU)."""
    if is_simulator():
        return simulated
    try:
        return int(cuda.get_current_device().MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
    except Exception:  # an attribute this numba-cuda does not know: the default every GPU allows
        return 48 * 1024


_REASON: list[str] = []
#: set once a GPU (or the simulator) answered in this process: CUDA's start-up is paid
STARTED = False


def available() -> bool:
    """True when kernels can run: a real GPU, or the CUDA simulator when it is switched on."""
    global STARTED
    try:
        ok = bool(cuda.is_available())
    except Exception as e:  # a broken driver raises rather than answering False
        _REASON[:] = [f"{type(e).__name__}: {e}"]
        return False
    if not ok and not _REASON:
        _REASON.append("numba.cuda.is_available() is False: no GPU or no CUDA driver")
    STARTED = STARTED or ok
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


def memory_info() -> tuple[int, int]:
    """(free, total) bytes of device memory; the host's when running under the simulator."""
    if is_simulator():
        from ..memory import available_memory

        return available_memory(), available_memory()
    free, total = cuda.current_context().get_memory_info()
    return int(free), int(total)


def device_jit(fn):
    """Compile a plain Python function as a CUDA device function, inlined into its callers."""
    if is_simulator():
        return cuda.jit(device=True)(fn)
    return cuda.jit(device=True, forceinline=True)(fn)


def kernel_jit(fn, **kw):
    return cuda.jit(**kw)(fn)


def generated_kernel(src: str, name: str, namespace: dict, **kw):
    """A kernel from generated source: on a real GPU through the persistent cache
    (:func:`gpudp.cache.jit_generated`: compiled once per machine and compute capability), in the
    simulator compiled in memory."""
    from ..cache import jit_generated
    from ..codegen import compile_source

    if is_simulator():
        return kernel_jit(compile_source(src, name, namespace), **kw)
    return jit_generated(src, name, namespace, kernel_jit, "cuda", **kw)


class _SimLocked(bytearray):
    """Plain memory that stands for page-locked memory under the simulator (so that the code paths
    taken for page-locked arrays run there too)."""


def pinned_empty(shape, dtype) -> np.ndarray:
    """Page-locked host memory (fast, asynchronous DMA); plain memory under the simulator."""
    if is_simulator():
        dtype = np.dtype(dtype)
        n = int(np.prod(shape, dtype=np.int64))
        return np.ndarray(shape, dtype, buffer=_SimLocked(max(n, 1) * dtype.itemsize))
    return cuda.pinned_array(shape, dtype=dtype)


def is_page_locked(x) -> bool:
    """Whether the numpy array ``x`` (or the array it is a view of) lies in page-locked host memory
    that CUDA allocated (:func:`pinned_empty`, ``cuda.pinned_array``): its copies to the device go by
    DMA from where it lies, asynchronously. False for anything else (pageable memory, memory
    page-locked by other means: those are copied the pageable way, correctly, only slower)."""
    base = x
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, _SimLocked):
        return True
    if is_simulator():
        return False
    from numba.cuda.cudadrv.driver import PinnedMemory

    return isinstance(base, PinnedMemory)


def as_device_array(x):
    """``x``, an array in GPU memory (:func:`gpudp.backends.is_device_array`: CuPy, a PyTorch CUDA
    tensor, numba's), as a numba device array over the same memory (no copy)."""
    return x if is_simulator() else cuda.as_cuda_array(x)


def page_locked_copy(x: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of ``x`` in page-locked memory (:func:`pinned_empty`); ``x`` itself when it
    is already such an array."""
    if is_page_locked(x) and x.flags.c_contiguous:
        return x
    out = pinned_empty(x.shape, x.dtype)
    out[...] = x
    return out


def mapped_empty(shape, dtype) -> np.ndarray:
    if is_simulator():
        return np.empty(shape, dtype)
    return cuda.mapped_array(shape, dtype=dtype)


def stream():
    return cuda.stream()


def event(timing: bool = True):
    """A CUDA event (the simulator's take no arguments)."""
    return cuda.event() if is_simulator() else cuda.event(timing=timing)


def max_cooperative_blocks(kernel, threads: int, fallback: int) -> int:
    """How many blocks of ``threads`` a cooperative (grid-synchronised) launch may have."""
    if is_simulator():
        return fallback
    try:
        return int(kernel.max_cooperative_grid_blocks(threads))
    except Exception:
        return fallback


# ---------------------------------------------------------------------------------------------
# Page-locked host memory: one pool per process (page-locking GBs costs ~0.1 s/GB)
# ---------------------------------------------------------------------------------------------

_PINNED: list = []


#: alignment of each array in an upload's one device allocation (:func:`upload`)
UPLOAD_ALIGN = 256


def upload(items, stream) -> tuple:
    """Device copies of ``items``: each a host array, a tuple of them (a record's fields), or
    anything else (passed through). One device allocation, one staging copy into one host buffer
    and one transfer for all the arrays, where ``cuda.to_device`` allocates and copies each (about
    0.25 ms apiece on the H100 machine, 2026-11-26: 2-3 ms a sweep). Returns when the copy is done."""
    arrays = [
        a for it in items for a in (it if isinstance(it, tuple) else (it,)) if isinstance(a, np.ndarray)
    ]
    offsets, total = {}, 0
    for a in arrays:
        if id(a) not in offsets:
            offsets[id(a)] = total
            total += -(-max(a.nbytes, 1) // UPLOAD_ALIGN) * UPLOAD_ALIGN
    if not arrays:
        return tuple(items)
    dev = cuda.device_array(total, np.uint8, stream=stream)
    # pageable: the pinned pool keeps only the block given back last (a small one given back here
    # made the next traceback page-lock its rounds' buffer again)
    stage = np.empty(total, np.uint8)
    for a in arrays:
        off = offsets[id(a)]
        stage[off : off + a.nbytes] = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    dev.copy_to_device(stage, stream=stream)

    def on_device(a):
        if not isinstance(a, np.ndarray):
            return a
        if not a.size:
            return cuda.device_array(a.shape, a.dtype, stream=stream)
        off = offsets[id(a)]
        return dev[off : off + a.nbytes].view(a.dtype).reshape(a.shape)

    out = tuple(values.map_buf(it, on_device) for it in items)
    stream.synchronize()
    return out


def pinned_pool() -> BlockPool:
    """The process-wide pool of page-locked host blocks: the decision stores' leases and the
    branch-and-bound rings draw from it (see :class:`gpudp.memory.BlockPool`);
    ``pinned_pool().trim(0)`` gives its spare blocks back to the system."""
    if not _PINNED:
        _PINNED.append(BlockPool(pinned_empty))
    return _PINNED[0]


def pinned_words(n: int) -> np.ndarray:
    """A page-locked uint32 array of ``n`` words leased from :func:`pinned_pool`."""
    return pinned_pool().lease(n, np.uint32)


# ---------------------------------------------------------------------------------------------
# Generated kernels
# ---------------------------------------------------------------------------------------------

_CACHE: dict = {}
FULL = 0xFFFFFFFF
#: threads per block of the layered kernel
LAYER_THREADS = 256
#: cells per thread per step of the layered kernel (computed before any is stored). 1 measured best
#: on the H100 for the knapsack DP (2026-11-23: 84 GCUPS; 78 with 4, 63 with 8: more registers,
#: fewer blocks, and a cell's branches keep the next cell's loads behind it); tools/knapsack_tune.py
LAYER_UNROLL = 1

_TILED = """
def run_tiles(d0, d1, NI, NJ, R, C, bottom, right, words, wtile0, diag_off, ckrow, ckcol, CK{da}):
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
{rows_red_init}
            if k == 0:
                if I == 0:
                    uprev = VT(boundary(-1, c0 - 1{db}))
                elif J == 0:
                    uprev = VT(boundary(r0 - 1, -1{db}))
                else:
                    uprev = LD(bottom, eb)
            elif i0 - 1 < R:
                if J == 0:
                    uprev = VT(boundary(i0 - 1, c0 - 1{db}))
                else:
                    uprev = LD(right, i0 - 1)
            else:
                uprev = VT(FILL)
            own = (lastrow - r0) // RPT == k
            rl = (lastrow - r0) % RPT
{corner_pick}
            tcur = top(I, eb, c0, k, ncol, bottom{db})
            tnext = top(I, eb, c0, 32 + k, ncol, bottom{db})
{col_prefetch}
            cuda.syncthreads()
            if own:
                ST(bottom, eb, cn)
{planes_init}
            mine = VT(FILL)
            nsteps = ncol + 31
            steady = r0 + BH <= R
            for blk in range((nsteps + 31) >> 5):
                s0 = blk << 5
                if blk > 0:
                    tcur = tnext
                    tnext = top(I, eb, c0, s0 + 32 + k, ncol, bottom{db})
{col_advance}
                if steady and s0 >= 31 and s0 + 32 <= ncol:
                    j0 = c0 + s0 - k
{steady_steps}
                    cuda.syncthreads()  # lane 31's bottom row of these 32 steps, one column a lane
                    ST(bottom, eb - 30 + s0 + k, LD(bsh, k))
                    cuda.syncthreads()
                else:
                    for st in range(32):
{exchange}
                        jj = s0 + st - k
{planes_skip}
                        if jj >= 0 and jj < ncol:
                            j = c0 + jj
{rows}
                            uprev = upin
{shift_left}
                            if own:
{bottom_pick}
                                ST(bottom, eb + 1 + jj, bv)
{planes_acc}
{planes_flush}
{rows_red_merge}
            cuda.syncthreads()
{store_right}
            if CK > 0:  # checkpoints: rows and columns CK - 1, 2 CK - 1, ... (gpudp.linear)
                if (lastrow + 1) % CK == 0 and lastrow + 1 < R:
                    for jj in range(k, ncol, 32):
                        ST(ckrow, ((lastrow + 1) // CK - 1, c0 + jj), LD(bottom, eb + 1 + jj))
                if (c0 + ncol) % CK == 0 and c0 + ncol < C:
                    m = (c0 + ncol) // CK - 1
{store_ck}
            q += cuda.gridDim.x
        if d + 1 < d1:
            grid.sync()
{red_flush}
"""

_TOP = """
def top(I, eb, c0, col, ncol, bottom{db}):
    if col >= ncol:
        return VT(FILL)
    if I == 0:
        return VT(boundary(-1, c0 + col{db}))
    return LD(bottom, eb + 1 + col)
"""

_LAYERED = """
def run_layers(t0, t1, ring, lo, hi, g0, gn, woff, words, wbase, last_row, last_col, R, C{da}):
    grid = cuda.cg.this_grid()
    th = cuda.threadIdx.x
    nb = cuda.gridDim.x
    lane = cuda.laneid
    W1 = ring.shape[0]
{prologue}
    for t in range(t0, t1):
        a = lo[t]
        b = hi[t]
        first = g0[t] * 32
        stop = first + gn[t] * 32
        span = ((gn[t] + nb - 1) // nb) * 32
        base = first + cuda.blockIdx.x * span
        end = min(base + span, stop)
        while base < end:
{cells}
{stores}
            base += UNROLL * cuda.blockDim.x
        if t + 1 < t1:
            grid.sync()
"""

_BLOCKED = """
def run_blocked(q0, q1, pstart, pu0, pu1, rcum, pspan, ring, lo, hi, g0, gn, woff, words, wbase{da}):
    grid = cuda.cg.this_grid()
    sm = cuda.shared.array(0, VT)
    th = cuda.threadIdx.x
    nt = cuda.blockDim.x
    lane = cuda.laneid
    CH = UNROLL * nt
{prologue}
    for q in range(q0, q1):
        t0 = pstart[q]
        t1 = pstart[q + 1]
        H = rcum[t1] - rcum[t0]
        S = pspan[q]
        src = ring[q % 2]
        dst = ring[(q + 1) % 2]
        a = pu0[q] + cuda.blockIdx.x * S
        while a < pu1[q]:
            base = a - H
            e = min(a + S, pu1[q])
            prev = shifted(sm, base)
            k = max(base, 0) + th
            while k + 3 * nt < e:  # four loads in flight, then their stores
                r0 = src[k]
                r1 = src[k + nt]
                r2 = src[k + 2 * nt]
                r3 = src[k + 3 * nt]
                prev[k] = r0
                prev[k + nt] = r1
                prev[k + 2 * nt] = r2
                prev[k + 3 * nt] = r3
                k += 4 * nt
            while k < e:
                prev[k] = src[k]
                k += nt
            cuda.syncthreads()
            for t in range(t0, t1):
                clo = max(lo[t], base + rcum[t + 1] - rcum[t0])
                chi = min(hi[t], e)
                wlo = max(g0[t] * 32, a)
                whi = min((g0[t] + gn[t]) * 32, e)
                has = chi > clo
                top = a
                bot = a
                if has:
                    top = chi
                    bot = clo
                if whi > wlo:
                    if has:
                        top = max(top, whi)
                        bot = min(bot, wlo)
                    else:
                        top = whi
                        bot = wlo
                top = ((top + 31) >> 5) << 5
                dw = woff[t] - wbase - g0[t] * BITS
                while top > bot:
                    c0 = top - CH
                    wl = top > wlo and c0 < whi
                    if c0 >= clo and top <= chi:
{full_cells}
                        cuda.syncthreads()
{full_stores}
                    else:
{edge_cells}
                        cuda.syncthreads()
{edge_stores}
                    top = c0
                cuda.syncthreads()
            k = a + th
            while k < e:
                dst[k] = prev[k]
                k += nt
            cuda.syncthreads()
            a += cuda.gridDim.x * S
        if q + 1 < q1:
            grid.sync()
"""

_ENCODE = """
def encode(t0, t1, slab, woff, wbase, lo, hi, hdr, runs, out, count):
    sh = cuda.shared.array(3, np.int64)
    th = cuda.threadIdx.x
    nt = cuda.blockDim.x
    t = t0 + cuda.blockIdx.x
    while t < t1:
        base = woff[t] - wbase
        ng = (woff[t + 1] - woff[t]) // BITS
        g0 = lo[t] // 32
        lo_bit = lo[t] - g0 * 32
        hi_bit = hi[t] - 1 - (g0 + ng - 1) * 32
        if th == 0:
            sh[0] = ng
            sh[1] = 0
        cuda.syncthreads()
        # one pass, four groups in flight per thread; a thread's own first / last mismatch first
        amin = ng
        bmax = 0
        g = th
        while g < ng:
            for u in range(4):
                gu = g + u * nt
                if gu < ng:
                    dl, dt = differs(slab, base, gu, ng, lo_bit, hi_bit)
                    if dl:
                        amin = min(amin, gu)
                    if dt:
                        bmax = max(bmax, gu + 1)
            g += 4 * nt
        if amin < ng:
            cuda.atomic.min(sh, 0, amin)
        if bmax > 0:
            cuda.atomic.max(sh, 1, bmax)
        cuda.syncthreads()
        ga = sh[0]
        gb = max(ga, sh[1]) if ga < ng else ng
        r = t - t0
        if th == 0:
            sh[2] = cuda.atomic.add(count, 0, (gb - ga) * BITS)
            hdr[r, 0] = ga
            hdr[r, 1] = gb - ga
            last = base + (ng - 1) * BITS
            for q in range(BITS):
                if ng > 0:
                    runs[r, q] = edge_word(slab[base + q], 0, ng, lo_bit, hi_bit)
                    runs[r, BITS + q] = edge_word(slab[last + q], ng - 1, ng, lo_bit, hi_bit)
                else:
                    runs[r, q] = 0
                    runs[r, BITS + q] = 0
        cuda.syncthreads()
        off = sh[2]
        if th == 0:
            hdr[r, 2] = off
        i = th
        while i < (gb - ga) * BITS:
            out[off + i] = slab[base + ga * BITS + i]
            i += nt
        cuda.syncthreads()
        t += cuda.gridDim.x
"""

_DIFFERS = """
def differs(slab, base, g, ng, lo_bit, hi_bit):
    dl = False
    dt = False
    last = base + (ng - 1) * BITS
    for q in range(BITS):
        x = edge_word(slab[base + g * BITS + q], g, ng, lo_bit, hi_bit)
        if x != edge_word(slab[base + q], 0, ng, lo_bit, hi_bit):
            dl = True
        if x != edge_word(slab[last + q], ng - 1, ng, lo_bit, hi_bit):
            dt = True
    return dl, dt
"""

_EDGE = """
def edge_word(x, g, ng, lo_bit, hi_bit):
    x = np.int64(x)
    if g == 0 and lo_bit > 0:
        below = (np.int64(1) << lo_bit) - 1
        if (x >> lo_bit) & 1:
            x = x | below
        else:
            x = x & ~below
    if g == ng - 1 and hi_bit < 31:
        above = np.int64(0xFFFFFFFF) & ~((np.int64(2) << hi_bit) - 1)
        if (x >> hi_bit) & 1:
            x = x | above
        else:
            x = x & ~above
    return x
"""

#: threads per block of the temporally blocked layered kernel (:func:`blocked_kernel`)
BLOCK_THREADS = 512
#: cells per thread per strip of the blocked kernel
BLOCK_UNROLL = 4
#: dynamic shared memory per block of the blocked kernel, bytes (H100, n = 100,000: 224 KiB 257
#: GCUPS, 160 KiB 249, 112 KiB 233; tools/knapsack_tune.py)
BLOCK_SMEM = 224 * 1024
#: register cap of the blocked kernel (0: none)
BLOCK_MAX_REGISTERS = 0
#: the share of a block's shared cells that is its own span; the rest holds the halo below it
BLOCK_SPAN = 0.75
#: at most this many layers per pass of the blocked kernel
BLOCK_MAX_LAYERS = 256
#: the blocked kernel runs only when a reach leaves a span of at least this many cells
BLOCK_MIN_SPAN = 1024


class _SimShifted:
    """The simulator's stand-in for :func:`shifted`: ``view[k]`` is ``array[k - base]``."""

    def __init__(self, array, base):
        self.array, self.base = array, int(base)

    def _index(self, k):
        i = int(k) - self.base
        if i < 0 or i >= len(self.array):
            raise IndexError(
                f"cell {int(k)} lies outside the block's shared span (a read beyond the declared reach?)"
            )
        return i

    def __getitem__(self, k):
        return self.array[self._index(k)]

    def __setitem__(self, k, v):
        self.array[self._index(k)] = v


_SHIFTED: list = []


def _shifted_intrinsic():
    """``shifted(array, base)``: a 1-D view ``v`` of ``array`` with ``v[k] == array[k - base]``, so
    that a recurrence's cell can index a shared-memory window of a layer by the layer's own cell
    numbers. Only the data pointer moves; nothing is copied and nothing is bounds-checked."""
    if _SHIFTED:
        return _SHIFTED[0]
    from numba.cuda import cgutils, types
    from numba.cuda.extending import intrinsic
    from numba.cuda.np.arrayobj import make_array

    @intrinsic
    def shifted(typingctx, array, base):
        if not (isinstance(array, types.Array) and array.ndim == 1 and isinstance(base, types.Integer)):
            return None
        ret = array.copy(layout="C")

        def codegen(context, builder, sig, args):
            src = make_array(sig.args[0])(context, builder, args[0])
            out = make_array(sig.return_type)(context, builder)
            off = context.cast(builder, args[1], sig.args[1], types.intp)
            context.populate_array(
                out,
                data=builder.gep(src.data, [builder.neg(off)]),
                shape=[context.get_constant(types.intp, 1 << 62)],
                strides=cgutils.unpack_tuple(builder, src.strides),
                itemsize=src.itemsize,
                meminfo=src.meminfo,
                parent=src.parent,
            )
            return out._getvalue()

        return ret(array, base), codegen

    _SHIFTED.append(shifted)
    return shifted


_FUNNEL: list = []


def _funnel_intrinsic():
    """``funnel(x, w, b)`` (``b`` a literal): ``w >> 1`` with bit ``b`` of ``x`` on top, the low 32
    bits of ``(x >> b):w`` shifted right one place: how the tiled kernel puts a step's decision bit
    into a plane's word, in one ``shf.r`` (and a 32-bit shift for b > 0) where numba's shifts and
    ors take five instructions, some in 64 bits. The simulator gets the same in Python."""
    if _FUNNEL:
        return _FUNNEL[0]
    if is_simulator():

        def funnel(x, w, b):
            return np.uint32((((int(x) >> b) & 1) << 31) | (int(w) >> 1))

        _FUNNEL.append(funnel)
        return funnel
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    @intrinsic
    def funnel(typingctx, x, w, b):
        if not (isinstance(x, types.Integer) and isinstance(w, types.Integer)):
            return None
        if not isinstance(b, types.IntegerLiteral):
            return None

        def codegen(context, builder, sig, args):
            # inline PTX: NVVM expands llvm.fshr with a constant shift into two shifts and an or
            i32 = ir.IntType(32)
            hi, lo = (
                context.cast(builder, a, t, types.uint32) for a, t in zip(args[:2], sig.args[:2], strict=True)
            )
            pre = f"shr.b32 t, $1, {b.literal_value}; " if b.literal_value else "mov.b32 t, $1; "
            src = "{.reg .b32 t; " + pre + "shf.r.wrap.b32 $0, $2, t, 1;}"
            return builder.call(ir.InlineAsm(ir.FunctionType(i32, [i32, i32]), src, "=r,r,r"), [hi, lo])

        return types.uint32(x, w, b), codegen

    _FUNNEL.append(funnel)
    return funnel


#: threads per block of the band encoder (one block per layer, grid-stride over the chunk's layers)
ENCODE_THREADS = 1024


def _thread_slot():
    return cuda.grid(1)


def cell_namespace(rec_cls):
    """The names a generated CUDA kernel sees: the recurrence's device ``cell`` and ``boundary``,
    its value type and fill, and the helpers (public: features with kernels of their own build on it)."""
    from ..codegen import compile_source, numba_value_type

    ns = {
        "red_slot": device_jit(_thread_slot),
        "cuda": cuda,
        "np": np,
        "VT": numba_value_type(rec_cls),
        "VTD": np.dtype(rec_cls.value_dtype),
        "FILL": rec_cls.fill,
        "FULL": FULL,
        "cell": device_jit(rec_cls.cell),
        "boundary": device_jit(getattr(rec_cls, "boundary", lambda *a: 0)),
    }
    # a record cell: VT builds its tuple of fields
    ns.update(values.namespace(rec_cls, device_jit, compile_source))
    return ns


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
    key = ("tiled", rec_cls, n_data, bh, tw, sym_dtype, steady_unroll())
    if key in _CACHE:
        return _CACHE[key]
    from ..codegen import (
        compile_source,
        data_args,
        fn_args,
        indent,
        local_reduction,
        n_symbols,
        row_reduction,
        tile_cell_source,
        user_args,
    )

    rpt = bh // 32
    bits = rec_cls.decision_bits
    sym = n_symbols(rec_cls)
    da, du, db = data_args(n_data), user_args(rec_cls, n_data), fn_args(rec_cls, n_data)
    sim = is_simulator()
    ns = cell_namespace(rec_cls)
    ns.update(BH=bh, TW=tw, RPT=rpt, WPT=(tw // 32) * bits * bh, U32=numba.uint32)
    ns.update(U0=np.uint32(0), SYMD=np.dtype(sym_dtype or np.int64), FUNNEL=_funnel_intrinsic())
    red = bool(n_reduce(rec_cls))  # the lane keeps its best cell in registers, its slot at the end
    if red:
        names, red_init, _, red_flush_src = local_reduction(rec_cls, n_data, "cuda.grid(1)")
        ns.update(names, I32=numba.int32)
    ns["tcell"] = device_jit(
        compile_source(tile_cell_source(rec_cls, n_data, rec_cls.offsets, not red), "tcell", dict(ns))
    )
    ns["top"] = device_jit(compile_source(values.expand(_TOP.format(db=db), rec_cls), "top", dict(ns)))
    j = "\n".join
    load_left, corner, bottom_pick, fast, slow, store_right, store_ck = [], [], [], [], [], [], []
    red_rows, red_merge = [], []
    if red:
        row_best, row_merge = row_reduction(rec_cls)
    for r in range(rpt):
        load_left += [
            f"l{r} = VT(FILL)",
            f"if i0 + {r} < R:",
            "    if J == 0:",
            f"        l{r} = VT(boundary(i0 + {r}, c0 - 1{db}))",
            "    else:",
            f"        l{r} = LD(right, i0 + {r})",
        ]
        if sym:
            load_left.append(f"y{r} = dat0[min(i0 + {r}, R - 1)]")
        corner.append(f"{'if' if r == 0 else 'elif'} rl == {r}:\n    cn = l{r}")
        bottom_pick.append(f"{'if' if r == 0 else 'elif'} rl == {r}:\n    bv = v{r}")
        up = "upin" if r == 0 else f"v{r - 1}"
        dg = "uprev" if r == 0 else f"l{r - 1}"
        ri = f"y{r}" if sym else "0"
        call = f"v{r}, e{r} = tcell(i0 + {r}, j, {up}, l{r}, {dg}, {ri}, cj{du})"
        if red:  # the row's best in this tile (a lane takes a row's cells in column order)
            call += f"\nkv = {values.key(rec_cls, f'v{r}')}\n" + row_best(f"rb{r}", f"rj{r}", "I32(j)")
            red_rows += [f"rb{r} = KT(RED_WORST)", f"rj{r} = I32(-1)"]
            red_merge += [
                f"if i0 + {r} < R:",
                indent(row_merge(f"rb{r}", f"rj{r}", f"i0 + {r}", "I32(c0)"), 4),
            ]
        fast.append(call)
        slow += [f"v{r} = VT(FILL)", f"e{r} = 0", f"if i0 + {r} < R:", indent(call, 4)]
        store_right += [f"if i0 + {r} < R:", f"    ST(right, i0 + {r}, l{r})"]
        store_ck += [f"if i0 + {r} < R:", f"    ST(ckcol, (m, i0 + {r}), l{r})"]
    corner.append("else:\n    cn = VT(FILL)")
    bottom_pick.append("else:\n    bv = VT(FILL)")
    rows = ["if full:", indent(j(fast), 4), "else:", indent(j(slow), 4)]
    shift = [f"l{r} = v{r}" for r in range(rpt)] + [f"mine = v{rpt - 1}"]
    # decision bits: the step st (0..31) of a block of 32 steps sets bit st of each row's word; lane
    # k's step s is column s - k, stored at shifted position s, so all lanes fill their words in the
    # same block and the warp writes them together (coalesced) after it
    planes = [(r, b) for r in range(rpt) for b in range(bits)]
    init = [f"w{r}_{b} = U0" for r, b in planes]

    # each step shifts every word right by one and puts its bit at the top (one funnel shift), so
    # that after the 32 steps of a block step st's bit is bit st (a shift by the step's number was
    # done in 64 bits), and a step with no cell shifts in a 0
    acc = [f"w{r}_{b} = FUNNEL(e{r}, w{r}_{b}, {b})" for r, b in planes]
    skip = [f"e{r} = 0" for r in range(rpt)] if bits else []

    # a row's last block (shifted columns from tw on) folds into its first, whose low bits the lane
    # shift left free (store.TileLayout): no word of padding a row
    flush = [f"if blk < {tw // 32}:", "    wb = twb + blk * " + str(bits * bh)]
    flush += [f"    words[wb + {b * bh + r}] = w{r}_{b}" for r, b in planes]
    flush += ["else:"] + [f"    words[twb + {b * bh + r}] |= w{r}_{b}" for r, b in planes]
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
                "ST(xch, k, mine)",
                "cuda.syncthreads()",
                "upin = LD(xch, k - 1) if k > 0 else mine",
                "cuda.syncthreads()",
                "ST(xch, k, tcur)",
                "cuda.syncthreads()",
                f"tv = LD(xch, {step})",
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
            out = ["upin = SHUP(mine)", f"tv = SHFL(tcur, {step})"]
            if sym:
                out += ["cin = cuda.shfl_up_sync(FULL, cj, 1)", f"cv = cuda.shfl_sync(FULL, ccur, {step})"]
        out.append("if k == 0:\n    upin = tv")
        if sym:
            out.append("cj = cv if k == 0 else cin")
        return out

    # the steady state: a whole tile height, and every lane on a column of the tile for all 32 steps
    # of the block (no edge or range tests; lane 31 owns the tile's last row)
    # STEADY_UNROLL steps unrolled in the source, looping over the block's 32. Measured on the H100
    # (2026-11, n = 2^17; the script is in git history): unrolling all 32 (constant shuffle lanes and
    # bit positions) took 39 s to compile (numba's front end is superlinear in the function's size),
    # 255 registers and 288 GCUPS; one step a loop trip compiles in 5.8 s, takes 96 registers and
    # runs 324 GCUPS
    u = steady_unroll()
    # (a while loop: numba's range loop keeps a count beside the index, both in 64 bits)
    steady = ["sb = 0", "while sb < 32:"] if u < 32 else []
    body = []
    for q in range(u):
        st = f"(sb + {q})" if u < 32 else str(q)
        body += exchange(st) + [f"j = j0 + {st}"] + fast
        body += acc + ["uprev = upin"] + shift + ["if k == 31:", f"    ST(bsh, {st}, mine)"]
    steady += [indent(j([*body, f"sb += {u}"]), 4)] if u < 32 else body

    def shared_values(name: str) -> list[str]:
        """A shared buffer of 32 values (a record's: one array per field, each on its own line: the
        simulator tells shared arrays apart by their line)."""
        fs = values.fields(rec_cls)
        if fs is None:
            return [f"{name} = cuda.shared.array(32, VTD)"]
        out = [f"{name}{q} = cuda.shared.array(32, F{q}D)" for q in range(len(fs))]
        return out + [f"{name} = (" + ", ".join(f"{name}{q}" for q in range(len(fs))) + ",)"]

    # the steady state's bottom row: lane 31 leaves a step's value here, the warp stores the 32
    prologue = shared_values("bsh")
    if sim:  # the exchange through shared memory
        prologue += shared_values("xch") + ["sxch = cuda.shared.array(32, SYMD)"]
    red_flush = ["pass"]
    if red:  # the lane's best of this launch, merged into its slot (slots outlive the launches)
        prologue += [red_init]
        red_flush = [red_flush_src]
    src = _TILED.format(
        da=da,
        du=du,
        db=db,
        prologue=indent(j(prologue), 4),
        rows_red_init=indent(j(red_rows) or "pass", 12),
        rows_red_merge=indent(j(red_merge) or "pass", 12),
        red_flush=indent(j(red_flush), 4),
        load_left=indent(j(load_left), 12),
        corner_pick=indent(j(corner), 12),
        col_prefetch=indent(j(col_prefetch), 12),
        planes_init=indent(j(init) or "pass", 12),
        col_advance=indent(j(col_advance) or "pass", 16),
        steady_steps=indent(j(steady), 20),
        exchange=indent(j(exchange("st")), 24),
        rows=indent(j(rows), 28),
        planes_skip=indent(j(skip) or "pass", 24),
        planes_acc=indent(j(acc) or "pass", 24),
        shift_left=indent(j(shift), 28),
        bottom_pick=indent(j(bottom_pick), 32),
        planes_flush=indent(j(flush) if bits else "pass", 16),
        store_right=indent(j(store_right), 12),
        store_ck=indent(j(store_ck), 20),
    )
    fn = generated_kernel(values.expand(src, rec_cls), "run_tiles", ns)
    _CACHE[key] = fn
    return fn


#: steps of the tiled kernel's steady state unrolled in its source (a divisor of 32; see the figures in
#: tiled_kernel); GPUDP_STEADY_UNROLL overrides it for tuning
STEADY_UNROLL = 1


def steady_unroll() -> int:
    """How many of a block's 32 steady-state steps the tiled kernel unrolls: ``GPUDP_STEADY_UNROLL``
    (tuning), else :data:`STEADY_UNROLL`."""
    u = int(os.environ.get("GPUDP_STEADY_UNROLL", STEADY_UNROLL))
    if u not in (1, 2, 4, 8, 16, 32):
        raise ValueError(f"GPUDP_STEADY_UNROLL must divide 32, got {u}")
    return u


def _word_stores(u: int, bits: int, sim: bool, cond: str, index: str) -> list[str]:
    """Lines that gather the decision bits ``dd{u}`` of a warp's 32 consecutive cells into one word
    per bit plane (a warp ballot; shared memory in the simulator, which has none) and let lane 0
    store plane ``b`` at ``words[index]`` when ``cond`` holds (``index`` may use ``{b}``)."""
    lines = []
    for b in range(bits):
        bit = f"((dd{u} >> {b}) & 1)"
        if sim:
            lines += [
                f"bal[cuda.threadIdx.x] = {bit}",
                "cuda.syncthreads()",
                f"m{b} = 0",
                "if lane == 0:",
                "    for xb in range(32):",
                f"        m{b} |= bal[cuda.threadIdx.x + xb] << xb",
                "cuda.syncthreads()",
            ]
        else:
            lines.append(f"m{b} = cuda.ballot_sync(FULL, {bit} != 0)")
        lines += [f"if lane == 0 and {cond}:", f"    words[{index.format(b=b)}] = m{b}"]
    return lines


def layered_kernel(rec_cls, n_data: int, schedule):
    """A persistent (cooperative) kernel over layers: each block sweeps one contiguous span of a
    layer's groups of 32 cells (so that reads a little behind the current cell, such as knapsack's
    ``c - w``, hit the block's cache), computing the cells of the active range; decision bit planes
    gathered by warp ballots (zero words for groups outside the range); one grid sync between
    layers. Each thread takes ``UNROLL`` cells a step, ``blockDim`` apart, and computes all of them
    before it stores any: their loads are then independent of the stores, so they overlap."""
    key = ("layered", rec_cls, n_data, schedule and (schedule.offsets, schedule.a, schedule.b))
    if key in _CACHE:
        return _CACHE[key]
    from ..codegen import compile_source, data_args, indent, layer_cell_source

    bits = rec_cls.decision_bits
    ns = cell_namespace(rec_cls)
    ns["lcell"] = device_jit(compile_source(layer_cell_source(rec_cls, n_data, schedule), "lcell", dict(ns)))
    sim = is_simulator()
    da = data_args(n_data)
    cells, stores = [], []
    for u in range(LAYER_UNROLL):
        cells += [
            f"p{u} = base + th + {u} * cuda.blockDim.x",
            f"v{u} = VT(FILL)",
            f"dd{u} = 0",
            f"ok{u} = p{u} < end and p{u} >= a and p{u} < b",
            f"if ok{u}:",
            f"    v{u}, dd{u} = lcell(t, p{u}, ring, W1, last_row, last_col, R, C{da})",
        ]
        stores += [f"if ok{u}:", f"    ring[t % W1, p{u}] = v{u}"]
        stores += _word_stores(
            u, bits, sim, f"p{u} < end", f"woff[t] - wbase + (p{u} // 32 - g0[t]) * {bits} + {{b}}"
        )
    prologue = f"bal = cuda.shared.array({LAYER_THREADS}, np.int64)" if sim and bits else "pass"
    src = _LAYERED.format(
        da=da,
        cells=indent("\n".join(cells), 12),
        stores=indent("\n".join(stores), 12),
        prologue=indent(prologue, 4),
    )
    ns["UNROLL"] = LAYER_UNROLL
    fn = generated_kernel(src, "run_layers", ns)
    _CACHE[key] = fn
    return fn


def line_kernel(rec_cls, n_data: int, schedule):
    """The sweep of a line (a grid of one cell a wavefront, such as coin change's one row): one
    thread walks the line's cells in order (:func:`gpudp.codegen.line_sweep_source`). A line has no
    parallelism to give; one thread beats the layered kernel's grid sync per cell."""
    key = ("line", rec_cls, n_data, schedule.offsets, schedule.a, schedule.b)
    if key in _CACHE:
        return _CACHE[key]
    from ..codegen import line_sweep_source

    src = line_sweep_source(rec_cls, n_data, schedule, "if cuda.grid(1) != 0:\n    return")
    fn = _CACHE[key] = generated_kernel(src, "run_line", cell_namespace(rec_cls))
    return fn


def blocked_kernel(rec_cls, n_data: int):
    """The temporally blocked kernel of a LayeredRecurrence that declares ``reach`` (window 1).

    Layers run in passes (``pstart``); a pass is one cooperative step of the grid. Each block takes
    spans of ``pspan[q]`` cells of the layer in turn; for a span ``[a, a + S)`` it loads the pass's
    input layer over ``[a - H, a + S)`` into shared memory, ``H`` being the sum of the pass's
    reaches, and updates it there in place, layer after layer: layer ``i`` of the pass is valid from
    ``a - H + reach_0 + .. + reach_i`` up, so the last one is valid on the whole span, which goes
    back to device memory (a ring of two layers, one per pass parity). In place works because a
    cell reads only itself and cells below it: each layer runs from the top down in strips of
    ``UNROLL * blockDim`` cells, every thread computing its strip cells before a barrier and
    storing them after it (the next strip's reads lie below, so they overlap the stores). Cells
    below ``a`` are recomputed by the block that owns them, as in overlapped tiling; only the
    span's own decisions are stored. A layer so costs shared-memory traffic, and device memory is
    touched once per pass instead of once per layer. (A variant with two shared buffers, one
    barrier per layer instead of one per strip, measured 30 % slower on the H100.)"""
    key = ("blocked", rec_cls, n_data, BLOCK_UNROLL, BLOCK_MAX_REGISTERS)
    if key in _CACHE:
        return _CACHE[key]
    from ..codegen import cell_call, compile_source, data_args, indent

    bits = rec_cls.decision_bits
    ns = cell_namespace(rec_cls)
    da = data_args(n_data)
    body = cell_call(rec_cls, "t, p", ["prev"], n_data, "v", "dd")
    ns["bcell"] = device_jit(
        compile_source(
            f"def bcell(t, p, prev{da}):\n{indent(body, 4)}\n    return v, dd\n", "bcell", dict(ns)
        )
    )
    sim = is_simulator()
    ns["shifted"] = _SimShifted if sim else _shifted_intrinsic()
    full_cells, full_stores, edge_cells, edge_stores = [], [], [], []
    for u in range(BLOCK_UNROLL):
        k = f"k{u}"
        full_cells += [f"{k} = c0 + {u} * nt + th", f"v{u}, dd{u} = bcell(t, {k}, prev{da})"]
        # at an edge every thread still computes a cell (clamped into the range), so that the
        # strip's loads are unconditional and the recurrence's per-layer data loads are shared
        edge_cells += [
            f"{k} = c0 + {u} * nt + th",
            f"ok{u} = {k} >= clo and {k} < chi",
            f"v{u} = VT(FILL)",
            f"dd{u} = 0",
            "if has:",
            f"    v{u}, dd{u} = bcell(t, min(max({k}, clo), chi - 1), prev{da})",
            f"if not ok{u}:",
            f"    dd{u} = 0",
        ]
        full_stores.append(f"prev[{k}] = v{u}")
        edge_stores += [f"if ok{u}:", f"    prev[{k}] = v{u}"]
        words_ = _word_stores(u, bits, sim, f"{k} >= wlo and {k} < whi", f"dw + ({k} >> 5) * {bits} + {{b}}")
        if words_:
            for lst in (full_stores, edge_stores):
                lst += ["if wl:", *("    " + x for x in words_)]
    prologue = "bal = cuda.shared.array(1024, np.int64)" if sim and bits else "pass"
    src = _BLOCKED.format(
        da=da,
        full_cells=indent("\n".join(full_cells), 24),
        full_stores=indent("\n".join(full_stores), 24),
        edge_cells=indent("\n".join(edge_cells), 24),
        edge_stores=indent("\n".join(edge_stores), 24),
        prologue=indent(prologue, 4),
    )
    ns.update(UNROLL=BLOCK_UNROLL, BITS=bits)
    kw = {} if sim or not BLOCK_MAX_REGISTERS else {"max_registers": BLOCK_MAX_REGISTERS}
    fn = generated_kernel(src, "run_blocked", ns, **kw)
    _CACHE[key] = fn
    return fn


def encode_kernel(bits: int):
    """The band encoder of a chunk of layers (the device side of :class:`gpudp.store.BandStore`):
    one block per layer finds, with shared-memory atomics, the first group that differs from the
    layer's first and the last that differs from its last (edge bits extended as in
    :func:`gpudp.store.edge_word`), reserves room for the band in ``out`` with a global atomic, and
    copies the band there; ``hdr[r] = (lead groups, band groups, offset in out)``, ``runs[r]`` the two
    run values."""
    key = ("encode", bits)
    if key in _CACHE:
        return _CACHE[key]
    from ..codegen import compile_source

    ns = {"cuda": cuda, "np": np, "BITS": bits}
    ns["edge_word"] = device_jit(compile_source(_EDGE, "edge_word", dict(ns)))
    ns["differs"] = device_jit(compile_source(_DIFFERS, "differs", dict(ns)))
    fn = generated_kernel(_ENCODE, "encode", ns)
    _CACHE[key] = fn
    return fn


#: the kernel of the last sweep, specialised (for diagnostics: resources, SASS)
LAST_LAUNCHER: list = []

#: decision words per device slab (two slabs alternate: one computes while the other is evicted)
SLAB_WORDS = 1 << 25


# Blocks of a tiled grid swept again for a traceback (gpudp.linear): a thread block a block, its
# anti-diagonals in turn (a barrier between them), thread t the rows imin + t, imin + t + nt, ...;
# the three live diagonals (indexed by the row) in shared memory where they fit, else in the thread
# block's row of ``scratch``; the values around the block from codegen.BLOCK_EDGES. Decisions one
# integer a cell into ``cells``, each anti-diagonal at its groups of 32 cells in a full K x K block
# (codegen.diagonal_groups: position i - f0 of group-aligned rows), which _PACK then turns into the
# bit planes that are copied (codegen.block_decision). Packing in this kernel, a warp ballot a plane
# a step, made Gotoh's rounds 40% slower (H100, 2026-11-26: 26 ms of kernels for 19).
_BLOCKS = """
def run_blocks(nb, bis, bjs, K, R, C, ckrow, ckcol, brow, bcol, cells, CS, groups, scratch{da}):
    th = cuda.threadIdx.x
    nt = cuda.blockDim.x
    s = cuda.blockIdx.x
    {buf}
    q = s
    while q < nb:
{origin}
{sym_load}
        for d in range(nr + nc - 1):
            imin = max(0, d - nc + 1)
            imax = min(d, nr - 1)
            cur = (d % 3) * K
            p1 = ((d + 2) % 3) * K
            p2 = ((d + 1) % 3) * K
            dbase = q * CS + groups[d] * 32 - max(0, d - K + 1)
            i = imin + th
            while i <= imax:
                j = d - i
                gi = r0 + i
                gj = c0 + j
                if i > 0:
                    up = LD(buf, p1 + i - 1)
                else:
                    up = top_at(gj, bi, r0, ckrow, brow, bcol)
                if j > 0:
                    lf = LD(buf, p1 + i)
                else:
                    lf = left_at(gi, bj, c0, ckcol, bcol)
                if i > 0 and j > 0:
                    dg = LD(buf, p2 + i - 1)
                elif i > 0:
                    dg = left_at(gi - 1, bj, c0, ckcol, bcol)
                else:
                    dg = top_at(gj - 1, bi, r0, ckrow, brow, bcol)
                v, dd = tcell(gi, gj, up, lf, dg, {ri}, {cj}{du})
                ST(buf, cur + i, v)
                cells[dbase + i] = dd
                i += nt
            cuda.syncthreads()
        q += cuda.gridDim.x
"""

# The blocks' decisions into bit planes (codegen.block_decision): a thread a group of 32 cells (group
# G of all the round's blocks: block G // GT, its group G % GT on anti-diagonal gdiag[G % GT]), its
# 32 integers read and each bit plane's word stored. Cells a block does not have (past its edges,
# or the last group's tail) give bits no walk reads.
_PACK = """
def pack_planes(n, GT, cells, gdiag, groups, words, WS):
    G = cuda.grid(1)
    while G < n:
        q = G // GT
        gl = G - q * GT
        d = gdiag[gl]
        g0 = groups[d]
        ng = groups[d + 1] - g0
        base = q * WS + g0 * BITS + gl - g0
        {init}
        for x in range(32):
            v = np.int64(cells[G * 32 + x])
            {acc}
        {store}
        G += cuda.gridsize(1)
"""


def pack_kernel(bits: int):
    """The kernel that packs a round's decisions into bit planes (``_PACK``), once per bit count."""
    key = ("pack", bits)
    if key not in _CACHE:
        ns = {"cuda": cuda, "np": np, "BITS": bits}
        src = _PACK.format(
            init="\n        ".join(f"m{b} = np.int64(0)" for b in range(bits)) or "pass",
            acc="\n            ".join(f"m{b} |= ((v >> {b}) & 1) << x" for b in range(bits)) or "pass",
            store="\n        ".join(f"words[base + {b} * ng] = m{b}" for b in range(bits)) or "pass",
        )
        _CACHE[key] = generated_kernel(src, "pack_planes", ns)
    return _CACHE[key]


#: threads of a thread block of the blocks' sweep at most (a diagonal's cells past them loop): a
#: traceback of 4 rounds, 1,035 blocks of 512 (Smith-Waterman 2^17, H100, 2026-11-26) took 12.9 /
#: 9.2 / 7.9 ms of kernels with 512 / 256 / 128 threads a block (more cells a thread a barrier)
RETRACE_THREADS = 128
#: thread blocks of one launch of it at most (each steps through the blocks of its launch)
RETRACE_GRID = 1024
#: threads of a thread block of the packing into bit planes (a thread a group of 32 cells)
PACK_THREADS = 128
#: bytes of a block's three diagonals that go in shared memory (more: a row of a device array)
RETRACE_SHARED = 48 << 10


def _block_shared(rec_cls, every: int) -> bool:
    return 3 * every * values.itemsize(rec_cls) <= RETRACE_SHARED


def _block_buffer(rec_cls, every: int) -> str:
    """The line that makes the blocks' kernel's buffer of three diagonals: shared arrays when they
    fit :data:`RETRACE_SHARED` (one per field of a record), else this thread block's row of
    ``scratch``."""
    fs = values.fields(rec_cls)
    if _block_shared(rec_cls, every):
        n = 3 * every
        if fs is None:
            return f"buf = cuda.shared.array({n}, VT)"
        # a line each: the simulator tells shared arrays apart by their source line
        lines = [f"buf{k} = cuda.shared.array({n}, F{k})" for k in range(len(fs))]
        return "\n    ".join([*lines, "buf = (" + ", ".join(f"buf{k}" for k in range(len(fs))) + ",)"])
    if fs is None:
        return "buf = scratch[s]"
    return "buf = (" + ", ".join(f"scratch[{k}][s]" for k in range(len(fs))) + ",)"


#: a block's symbols, copied into shared memory before its diagonals (``{sym_load}``)
_BLOCK_SYMBOLS = """
        x = th
        while x < nr:
            rs[x] = dat0[r0 + x]
            x += nt
        x = th
        while x < nc:
            cs[x] = dat1[c0 + x]
            x += nt
        cuda.syncthreads()
"""


def blocks_kernel(rec_cls, n_data: int, every: int, sym_dtypes=None):
    """The GPU sweep of blocks of a tiled grid from their edges (see ``_BLOCKS`` and
    :meth:`_CUDA.run_blocks`); compiled once per class, data count, block side and symbol types
    (``sym_dtypes``: a recurrence with symbols has a block's in shared memory with its diagonals)."""
    shared = _block_shared(rec_cls, every)
    key = ("blocks", rec_cls, n_data, every, shared, sym_dtypes)
    if key in _CACHE:
        return _CACHE[key]
    import numba

    from ..codegen import block_source, n_symbols

    ns = cell_namespace(rec_cls)
    buf, ri, cj, load = _block_buffer(rec_cls, every), "0", "0", ""
    if n_symbols(rec_cls) and shared:
        ns["SYM0"], ns["SYM1"] = (numba.from_dtype(np.dtype(t)) for t in sym_dtypes)
        buf += f"\n    rs = cuda.shared.array({every}, SYM0)\n    cs = cuda.shared.array({every}, SYM1)"
        ri, cj, load = "rs[i]", "cs[j]", _BLOCK_SYMBOLS
    elif n_symbols(rec_cls):
        ri, cj = "dat0[gi]", "dat1[gj]"
    src = block_source(_BLOCKS, rec_cls, n_data, ns, device_jit, ri, cj, buf=buf, sym_load=load.rstrip("\n"))
    fn = _CACHE[key] = generated_kernel(src, "run_blocks", ns)
    return fn


def coop_blocks(kernel, args, threads: int, want: int, smem: int = 0) -> tuple[object, int]:
    """Specialise the kernel for these arguments; cap the grid at what a cooperative launch allows
    (with ``smem`` bytes of dynamic shared memory per block, which the kernel is allowed to use)."""
    if is_simulator():
        return kernel, 1  # the simulator runs cooperative grids of one block only
    # compile through the dispatcher itself: ``specialize`` makes a new one without the disk cache
    argtypes = tuple(kernel.typeof_pyval(a) for a in args)
    kernel.compile(argtypes)
    overload = kernel.overloads[argtypes]
    spec = kernel
    if smem > 48 * 1024:  # beyond 48 KiB a kernel must opt in
        from numba.cuda.cudadrv.driver import binding, driver

        fn = overload._codelibrary.get_cufunc()
        attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        driver.cuKernelSetAttribute(attr, int(smem), fn.handle, fn.device.id)
    limit = 0
    try:
        limit = int(overload.max_cooperative_grid_blocks(threads, smem))
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


class _Blocking:
    """How :func:`blocked_kernel` runs a plan: the span ``S`` each block owns, the passes (layers
    ``pstart[q] .. pstart[q + 1] - 1``, never across a chunk, each with a sum of reaches that fits
    the shared memory beside the span), the 32-aligned cells ``pu0[q] .. pu1[q]`` a pass covers
    (every computed cell and every decision word of its layers), and each chunk's passes."""

    def __init__(self, span, threads, smem, pstart, pu0, pu1, rcum, chunk_passes):
        self.span, self.threads, self.smem = span, threads, smem
        self.pstart, self.pu0, self.pu1, self.rcum = pstart, pu0, pu1, rcum
        self.chunk_passes = chunk_passes
        self.spans = max(1, int(((pu1 - pu0 + span - 1) // span).max(initial=1)))

    @classmethod
    def plan(cls, plan, vt) -> _Blocking | None:
        """The blocking of a plan with declared reaches, or None when one reach does not leave a
        useful span in shared memory (the plain layered kernel runs then)."""
        sim = is_simulator()
        smem = 256 * vt.itemsize if sim else BLOCK_SMEM  # small in the simulator: many spans and passes
        threads = 32 if sim else BLOCK_THREADS
        min_span = 64 if sim else BLOCK_MIN_SPAN
        cells = smem // vt.itemsize
        reach = plan.reach
        span = int(cells * BLOCK_SPAN) // 32 * 32
        rmax = int(reach.max(initial=0))
        if rmax > cells - span:
            span = (cells - rmax) // 32 * 32
        if span < min_span:
            return None
        budget = cells - span
        rcum = np.zeros(len(reach) + 1, np.int64)
        np.cumsum(reach, out=rcum[1:])
        starts, chunk_passes = [], {}
        for u0, u1 in plan.chunks:
            q0 = len(starts)
            t = u0
            while t < u1:
                t1 = int(np.searchsorted(rcum, rcum[t] + budget, side="right")) - 1
                t1 = min(max(t1, t + 1), u1, t + BLOCK_MAX_LAYERS)
                starts.append(t)
                t = t1
            chunk_passes[u0] = (q0, len(starts))
        pstart = np.array([*starts, plan.n_units], np.int64)
        first = np.minimum(plan.lo, plan.g0 * 32)
        last = np.maximum(plan.hi, (plan.g0 + plan.gn) * 32)
        pu0 = (np.minimum.reduceat(first, pstart[:-1]) // 32 * 32) if len(starts) else np.zeros(0, np.int64)
        pu1 = (
            (-(-np.maximum.reduceat(last, pstart[:-1]) // 32) * 32) if len(starts) else np.zeros(0, np.int64)
        )
        return cls(
            span, threads, smem, pstart, pu0.astype(np.int64), pu1.astype(np.int64), rcum, chunk_passes
        )

    def spans_for(self, blocks: int) -> np.ndarray:
        """Per pass, the span that gives every one of ``blocks`` blocks the same number of spans
        (32-aligned, at most ``span``; not under a quarter of it, where a narrow layer would
        otherwise be cut into spans much shorter than their halo)."""
        width = self.pu1 - self.pu0
        spans = -(-width // self.span)
        rounds = -(-spans // blocks)
        s = -(-width // np.maximum(rounds * blocks, 1))
        s = np.maximum(-(-s // 32) * 32, max(32, self.span // 4 // 32 * 32))
        return np.minimum(s, self.span).astype(np.int64)

    def stats(self) -> dict:
        return {
            "kernel": "blocked",
            "blocked_span": self.span,
            "blocked_passes": len(self.pstart) - 1,
            "blocked_smem_bytes": self.smem,
        }


class _BandEncoder:
    """The device half of the bands codec in :func:`run_plan`: per slab, a compact buffer of band
    words, the chunk's headers and a word count on the device, their page-locked host copies."""

    def __init__(self, plan, bits, slab_words, compute, copier):
        self.plan, self.bits, self.compute, self.copier = plan, bits, compute, copier
        self.kernel = encode_kernel(bits)
        m = max((u1 - u0 for u0, u1 in plan.chunks), default=1)
        self.lo = cuda.to_device(plan.lo, stream=compute)
        self.hi = cuda.to_device(plan.hi, stream=compute)
        self.zero = cuda.to_device(np.zeros(1, np.int64), stream=compute)
        self.out, self.hdr, self.runs, self.count = [], [], [], []
        self.h_hdr, self.h_runs, self.h_count = [], [], []
        for _ in range(2):
            self.out.append(cuda.device_array(max(slab_words, 1), np.uint32, stream=compute))
            self.hdr.append(cuda.device_array((m, 3), np.int64, stream=compute))
            self.runs.append(cuda.device_array((m, 2 * bits), np.uint32, stream=compute))
            self.count.append(cuda.device_array(1, np.int64, stream=compute))
            self.h_hdr.append(pinned_empty((m, 3), np.int64))
            self.h_runs.append(pinned_empty((m, 2 * bits), np.uint32))
            self.h_count.append(pinned_empty(1, np.int64))
        self.blocks = 1 if is_simulator() else max(1, min(m, 4096))
        self.threads = 32 if is_simulator() else ENCODE_THREADS
        self.bytes_to_host = 0
        self.seconds = 0.0

    def launch(self, slot, u0, u1, slab, woff):
        """Encode the chunk's layers (on the compute stream, after the chunk's kernel)."""
        self.count[slot].copy_to_device(self.zero, stream=self.compute)
        self.kernel[self.blocks, self.threads, self.compute](
            u0,
            u1,
            slab,
            woff,
            int(self.plan.layout.woff[u0]),
            self.lo,
            self.hi,
            self.hdr[slot],
            self.runs[slot],
            self.out[slot],
            self.count[slot],
        )

    def headers_to_host(self, slot, m):
        """Copy the headers and the count out on the copy stream; the event that marks them done."""
        ready = cuda.event()
        ready.record(stream=self.compute)
        ready.wait(stream=self.copier)
        self.hdr[slot][:m].copy_to_host(self.h_hdr[slot][:m], stream=self.copier)
        self.runs[slot][:m].copy_to_host(self.h_runs[slot][:m], stream=self.copier)
        self.count[slot].copy_to_host(self.h_count[slot], stream=self.copier)
        done = cuda.event()
        done.record(stream=self.copier)
        return done

    def land(self, slot, u0, u1, store, staging):
        """With the headers on the host: copy the chunk's band words out, append them to the store."""
        m, bits = u1 - u0, self.bits
        n = int(self.h_count[slot][0])
        if n:
            self.out[slot][:n].copy_to_host(staging[:n], stream=self.copier)
            self.copier.synchronize()
        base = store.append(staging[:n])
        hdr, runs = self.h_hdr[slot][:m], self.h_runs[slot][:m]
        store.lead_n[u0:u1] = hdr[:, 0]
        store.band_n[u0:u1] = hdr[:, 1]
        store.band_off[u0:u1] = hdr[:, 2] + base
        store.lead_w[u0:u1] = runs[:, :bits]
        store.trail_w[u0:u1] = runs[:, bits:]
        self.bytes_to_host += n * 4 + hdr.nbytes + runs.nbytes + 8


def run_plan(plan, rec, data, store, stats, bar) -> dict:
    """Run a planned sweep on the GPU.

    Chunks of wavefronts alternate between two device slabs of decision words. Chunk c computes
    on one stream into slab c % 2; a second stream waits for it and copies the slab to the host
    store (page-locked: asynchronous DMA) or to a page-locked staging buffer that the host then
    writes to the disk memmap, while chunk c + 1 computes into the other slab. With the bands codec
    an encoder kernel compacts each chunk's bands on the device and only the bands and their headers
    are copied (:class:`_BandEncoder`). Only the values of the dependency window (a row and a column
    of tile edges, or ring of layers) live on the device.
    """
    cls = type(rec)
    vt = np.dtype(cls.value_dtype)
    bits = cls.decision_bits
    rows, cols = plan.rows, plan.cols
    compute, copier = cuda.stream(), cuda.stream()
    d_data = upload(data, compute)
    plan.make_chunks(*BACKEND.chunk_limits(plan))
    blocked = _Blocking.plan(plan, vt) if plan.kind == "layered" and plan.reach is not None else None
    smem = 0
    slab_words = plan.max_chunk_words() if bits else 1
    slabs = [
        cuda.device_array(max(slab_words, 1), np.uint32, stream=compute) for _ in range(2 if bits else 1)
    ]
    bands = plan.codec == "bands"
    staging = (
        [pinned_empty(max(slab_words, 1), np.uint32) for _ in range(2)]
        if store is not None and (store.on_disk or bands)
        else None
    )
    if bands:
        enc = _BandEncoder(plan, bits, slab_words, compute, copier)
    copied = [None, None]  # per slab: (event when its copy finished, chunk index)
    events = []
    out = {}

    if plan.kind == "tiled":
        lay = plan.layout
        sym_dtype = data[1].dtype if getattr(cls, "symbols", False) else None
        kernel = tiled_kernel(cls, len(data), lay.bh, lay.tw, sym_dtype)
        bottom, right, diag_off = upload(
            (values.full(cls, lay.nj * (lay.tw + 1)), values.full(cls, max(rows, 1)), lay.diag_off), compute
        )
        ck = checkpoint_arrays(plan, cls, lambda shape, dt: cuda.device_array(shape, dt, stream=compute))
        want = max(int(np.diff(lay.diag_off).max(initial=1)), 1)  # the most tiles on a diagonal
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
                *ck,
                *d_data,
            )
    elif plan.kind == "line":
        kernel = line_kernel(cls, len(data), plan.schedule)
        line = cuda.device_array(plan.cells, vt, stream=compute)
        line[:] = cls.fill
        threads, want = 1, 1

        def args(u0, u1, slab):
            return (u0, u1, line, slab, int(plan.layout.woff[u0]), rows, cols, *d_data)
    elif blocked is not None:
        kernel = blocked_kernel(cls, len(data))
        width = -(-int(plan.sizes.max()) // 32) * 32
        ring = cuda.device_array((2, max(width, 32)), vt, stream=compute)
        ring[:] = cls.fill
        d_pass = [
            cuda.to_device(a, stream=compute)
            for a in (blocked.pstart, blocked.pu0, blocked.pu1, blocked.rcum)
        ]
        pspan = cuda.to_device(blocked.spans_for(1), stream=compute)  # evened out once the grid is known
        ranges = [cuda.to_device(a, stream=compute) for a in (plan.lo, plan.hi, plan.g0, plan.gn)]
        woff = cuda.to_device(plan.layout.woff, stream=compute)
        threads, smem, want = blocked.threads, blocked.smem, blocked.spans
        stats.extra.update(blocked.stats())

        def args(u0, u1, slab):
            q0, q1 = blocked.chunk_passes[u0]
            return (q0, q1, *d_pass, pspan, ring, *ranges, woff, slab, int(plan.layout.woff[u0]), *d_data)
    else:
        kernel = layered_kernel(cls, len(data), plan.schedule)
        window = plan.schedule.window if plan.schedule else cls.window
        width = int(plan.sizes.max()) if plan.n_units else 1
        # filled on the device: a host-side np.full + copy of a ring of GBs cost seconds
        ring = cuda.device_array((window + 1, max(width, 1)), vt, stream=compute)
        ring[:] = cls.fill
        last_row = cuda.to_device(np.full(max(cols, 1), cls.fill, vt), stream=compute)
        last_col = cuda.to_device(np.full(max(rows, 1), cls.fill, vt), stream=compute)
        ranges = [cuda.to_device(a, stream=compute) for a in (plan.lo, plan.hi, plan.g0, plan.gn)]
        woff = cuda.to_device(plan.layout.woff, stream=compute)
        threads = LAYER_THREADS
        want = max(1, -(-int(plan.gn.max(initial=1)) * 32 // threads))

        def args(u0, u1, slab):
            return (
                u0,
                u1,
                ring,
                *ranges,
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
        if bands:
            enc.land(slot, u0, u1, store, staging[slot])
        elif staging is not None:
            w0, w1 = plan.layout.words_of(u0, u1)
            store.words[w0:w1] = staging[slot][: w1 - w0]
        copied[slot] = None
        if bar is not None:
            try:
                bar.update(plan.unit_cells(u0, u1))
            except BaseException:  # a time limit: the other slab's copy lands before the store goes
                copier.synchronize()
                raise

    t_wall = time.perf_counter()
    for c, (u0, u1) in enumerate(plan.chunks):
        slot = c % len(slabs)
        finish(slot)
        a = args(u0, u1, slabs[slot])
        if launcher is None:
            t = time.perf_counter()
            launcher, blocks = coop_blocks(kernel, a, threads, want, smem)
            if n_reduce(cls) and blocks * threads > len(data[-1 - n_flags(cls)]):
                raise CheckError(
                    f"a grid of {blocks} x {threads} threads needs more reduction slots than the "
                    f"{len(data[-1 - n_flags(cls)])} of reduction_slots()"
                )
            if blocked is not None:  # now that the grid is known: spans that share out evenly
                pspan.copy_to_device(blocked.spans_for(blocks), stream=compute)
            stats.extra["compile_seconds"] = time.perf_counter() - t
            stats.extra.update(_resources(launcher))
            LAST_LAUNCHER[:] = [launcher]
        start, end = cuda.event(), cuda.event()
        start.record(stream=compute)
        launcher[blocks, threads, compute, smem](*a)
        end.record(stream=compute)
        events.append((start, end))
        if bands:
            enc.launch(slot, u0, u1, slabs[slot], woff)
            copied[slot] = (enc.headers_to_host(slot, u1 - u0), c)
        elif bits:
            w0, w1 = plan.layout.words_of(u0, u1)
            end.wait(stream=copier)
            dest = staging[slot] if staging is not None else store.words[w0:w1]
            slabs[slot][: w1 - w0].copy_to_host(dest[: w1 - w0], stream=copier)
            stats.extra["bytes_to_host"] = stats.extra.get("bytes_to_host", 0) + (w1 - w0) * 4
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
    if bands:
        stats.extra["bytes_to_host"] = enc.bytes_to_host

    for k in range(1, n_outputs(cls) + 1):  # the reduction's slots and the decision-overflow flag
        d_data[-k].copy_to_host(data[-k])
    if plan.kind == "tiled":
        last = values.map_buf(values.to_host(bottom), lambda b: tiled_last_row(b, plan.layout))
        out["last_row"] = values.structured(cls, last)
        out["last_col"] = values.structured(cls, values.map_buf(values.to_host(right), lambda r: r[:rows]))
        if plan.checkpoint:
            out["checkpoints"] = ck[:2]  # left on the device, where gpudp.linear's blocks read them
    elif plan.kind == "line":
        out["last_row"], out["last_col"] = line_edges(plan, line.copy_to_host())
    elif plan.schedule is not None:
        out["last_row"] = last_row.copy_to_host()[:cols]
        out["last_col"] = last_col.copy_to_host()[:rows]
    elif plan.n_units:
        last = plan.n_units - 1
        slot = (len(blocked.pstart) - 1) % 2 if blocked is not None else last % (window + 1)
        out["last_layer"] = ring[slot, : plan.sizes[last]].copy_to_host()
    return out


class _CUDA(Backend):
    name = "cuda"
    default_tile = (256, 256)
    tile_rows_multiple = 32  # a warp's lanes hold 32-row strips

    def tile_for(self, rec_cls):
        """Half-height tiles for cells wider than 8 bytes (records): a lane keeps its rows' values
        and decision words in registers, and fewer rows keep them in registers. Measured on the
        H100 (tools/tile_sweep.py, Gotoh's three int32 fields, 2^17): 128 x 256 tiles, 128
        registers a thread, 58.7 GCUPS of kernels; 256 x 256, 174 registers, 51.1."""
        from ..values import itemsize

        bh, tw = self.default_tile
        return (bh // 2, tw) if itemsize(rec_cls) > 8 else (bh, tw)

    slab_words_max = SLAB_WORDS
    values_on_device = True

    def available(self):
        return available()

    def unavailable_reason(self):
        return unavailable_reason()

    def device_name(self):
        return device_name()

    def fit_tile(self, tile, rows, cols):
        """The tile is a compile-time constant of the kernel (a lane's rows are unrolled): rounded up
        to a power of two (rows and columns 32..256), so that at most 16 kernels a recurrence are
        compiled, each once per machine (:mod:`gpudp.cache`), instead of one per shape."""
        bh, tw = tile
        return min(bh, max(32, _pow2(rows))), min(tw, max(32, _pow2(cols)))

    def sweep_memory(self, slab_words, bits, codec, spill):
        """What :func:`run_plan` allocates besides the values: on the device two slabs (the bands
        codec adds the encoder's two compacted buffers); on the host two page-locked staging slabs
        when the words go to a disk store or to bands."""
        if not bits:
            return 0, 0
        slabs = 4 if codec == "bands" else 2
        staging = 2 * slab_words * WORD_BYTES if spill or codec == "bands" else 0
        return slabs * slab_words * WORD_BYTES, staging

    def memory(self):
        return memory_info()

    def allocate_words(self, n):
        """Page-locked (:func:`pinned_words`), so that the slabs' copies are asynchronous DMA; the
        slabs' copies write every word."""
        return pinned_words(n)

    def reduction_slots(self, plan=None):
        """Every launch is capped at the co-resident grid (``coop_blocks``): at most 4 blocks of at
        most 1,024 threads an SM when the driver gives no figure; a tiled plan's at its widest
        tile diagonal, a warp a tile (the slots go to the device and back with every sweep: 13 MB
        for an H100's co-resident grid)."""
        if is_simulator():
            return 1024
        most = cuda.get_current_device().MULTIPROCESSOR_COUNT * 4096
        if plan is not None and plan.kind == "tiled":
            return min(most, 32 * max(int(np.diff(plan.layout.diag_off).max(initial=1)), 1))
        return most

    def host_pool(self):
        return pinned_pool()

    def run_plan(self, plan, rec, data, store, stats, bar):
        return run_plan(plan, rec, data, store, stats, bar)

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
        need = (max(have[0], 1 if _block_shared(rec_cls, every) else grid), max(have[1], nb))
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


def launch_known(cache: dict, kernel, grid: int, threads: int, stream, args: tuple):
    """``kernel[grid, threads, stream](*args)``, through the compiled kernel that the first launch
    found (kept in ``cache``, for arguments of the same types every time): numba types every
    argument again at each launch (about 0.3 ms for the blocks kernel's twenty, which a
    traceback's rounds launch again and again)."""
    known = cache.get(("launch", kernel))
    if known is not None:
        known.launch(args, grid, threads, stream, 0)
        return
    kernel[grid, threads, stream](*args)
    if not is_simulator():
        cache[("launch", kernel)] = kernel.overloads[tuple(kernel.typeof_pyval(a) for a in args)]


def _pow2(x: int) -> int:
    return 1 << max(int(x) - 1, 0).bit_length()


BACKEND = _CUDA()
