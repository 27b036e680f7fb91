"""Sorted-sequence primitives shared by plug-ins: binary search, merge path, merge, exclusive scan.

The search helpers are plain Python functions written inside what both compilers accept, so one source
runs on the CPU (numba ``njit``) and inside CUDA kernels (``cuda.jit(device=True)``). Every GPU
piece has a CPU twin here, and the tests compare the two with numpy.

The GPU kernels are built on first use (:func:`cuda_kernels`), so importing this module never imports
the CUDA compiler.
"""

from __future__ import annotations

import functools

import numba
import numpy as np
from numba import prange

from .jit import njit

__all__ = [
    "lower_bound",
    "upper_bound",
    "corank",
    "merge_shifted_cpu",
    "exclusive_scan_cpu",
    "merge_shifted_cuda",
    "exclusive_scan_cuda",
    "cuda_kernels",
    "MERGE_THREADS",
    "MERGE_ITEMS",
]

# Geometry of the GPU merge: a block of MERGE_THREADS threads writes MERGE_THREADS * MERGE_ITEMS
# outputs; an odd MERGE_ITEMS keeps the threads' shared-memory strides free of bank conflicts.
MERGE_THREADS = 128
MERGE_ITEMS = 7
SCAN_THREADS = 512

# numba.cuda, bound by cuda_kernels() on first use (importing it is not free).
cuda = None


def lower_bound(a, lo, hi, v):
    """First index i in [lo, hi) with a[i] >= v; hi when there is none (a sorted ascending)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


def upper_bound(a, lo, hi, v):
    """First index i in [lo, hi) with a[i] > v; hi when there is none (a sorted ascending)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] <= v:
            lo = mid + 1
        else:
            hi = mid
    return lo


def corank(x, xo, m, y, yo, n, yadd, d):
    """Merge path: how many of the first d outputs of the stable merge of x[xo:xo+m] with
    y[yo:yo+n] + yadd come from x (on equal keys x goes first)."""
    lo = d - n
    if lo < 0:
        lo = 0
    hi = d
    if hi > m:
        hi = m
    while lo < hi:
        mid = (lo + hi) >> 1
        if x[xo + mid] <= y[yo + d - 1 - mid] + yadd:
            lo = mid + 1
        else:
            hi = mid
    return lo


lower_bound_cpu = njit(lower_bound, cache=True)
upper_bound_cpu = njit(upper_bound, cache=True)
corank_cpu = njit(corank, cache=True)


@njit(cache=True)
def _merge_range(xk, xp, m, yk, yp, n, yadd, yor, outk, outp, d0, d1):
    i = corank_cpu(xk, 0, m, yk, 0, n, yadd, d0)
    j = d0 - i
    for d in range(d0, d1):
        if j >= n or (i < m and xk[i] <= yk[j] + yadd):
            outk[d] = xk[i]
            outp[d] = xp[i]
            i += 1
        else:
            outk[d] = yk[j] + yadd
            outp[d] = yp[j] | yor
            j += 1


@njit(parallel=True, cache=True)
def _merge_shifted_par(xk, xp, m, yk, yp, n, yadd, yor, outk, outp, chunks):
    total = m + n
    for c in prange(chunks):
        _merge_range(
            xk, xp, m, yk, yp, n, yadd, yor, outk, outp, total * c // chunks, total * (c + 1) // chunks
        )


def merge_shifted_cpu(xk, xp, m, yk, yp, n, yadd, yor, outk, outp):
    """outk[0:m+n] = stable merge of xk[0:m] and yk[0:n] + yadd; uint32 payloads xp and yp | yor ride along.

    Cut into pieces of equal output length by merge path and merged in parallel (numba prange).
    ``yk`` may be ``xk`` itself (list generation: merge A with A + w).
    """
    args = (xk, xp, np.int64(m), yk, yp, np.int64(n), np.int64(yadd), yp.dtype.type(yor), outk, outp)
    chunks = min(4 * numba.get_num_threads(), (m + n) // 65536)
    if chunks < 2:  # a parallel region costs more than a small merge
        _merge_range(*args, np.int64(0), np.int64(m + n))
    else:
        _merge_shifted_par(*args, chunks)


def exclusive_scan_cpu(a):
    """Exclusive prefix sums of an int64 array; returns (scan, total)."""
    out = np.empty(len(a), np.int64)
    if len(a) == 0:
        return out, 0
    np.cumsum(a[:-1], out=out[1:])
    out[0] = 0
    return out, int(out[-1] + a[-1])


# The GPU pieces are generated source (gpudp.backends.cuda.generated_kernel: cached on disk on a real
# GPU, compiled in memory under the simulator) whose geometry (THREADS, ITEMS, TILE = THREADS * ITEMS,
# SCAN_THREADS) and ``cuda`` are globals of the generated module: numba cannot cache closures, and the
# CUDA simulator swaps a module global that is numba.cuda for its fake module inside kernels.

_MERGE_TILE_AT = """
def merge_tile_at(xk, xp, m, yk, yp, n, yadd, yor, outk, outp, d0, skey, spay, src, cut):
    # The block writes outputs [d0, d0 + TILE): merge path gives its input ranges, keys and payloads
    # are loaded coalesced into shared memory, each thread merges ITEMS outputs there (recording
    # where each came from), and the tile is written back coalesced. Payloads are uint32.
    t = cuda.threadIdx.x
    d1 = d0 + TILE
    if d1 > m + n:
        d1 = m + n
    if t == 0:
        cut[0] = cr(xk, 0, m, yk, 0, n, yadd, d0)
    if t == 1:
        cut[1] = cr(xk, 0, m, yk, 0, n, yadd, d1)
    cuda.syncthreads()
    i0 = cut[0]
    j0 = d0 - i0
    mx = cut[1] - i0
    ny = (d1 - cut[1]) - j0
    for p in range(t, mx, THREADS):
        skey[p] = xk[i0 + p]
        spay[p] = xp[i0 + p]
    for p in range(t, ny, THREADS):
        skey[mx + p] = yk[j0 + p] + yadd
        spay[mx + p] = yp[j0 + p] | yor
    cuda.syncthreads()
    size = mx + ny
    q0 = t * ITEMS
    if q0 > size:
        q0 = size
    q1 = q0 + ITEMS
    if q1 > size:
        q1 = size
    i = cr(skey, 0, mx, skey, mx, ny, 0, q0)
    j = q0 - i
    for q in range(q0, q1):
        if j >= ny or (i < mx and skey[i] <= skey[mx + j]):
            src[q] = i
            i += 1
        else:
            src[q] = mx + j
            j += 1
    cuda.syncthreads()
    for p in range(t, size, THREADS):
        outk[d0 + p] = skey[src[p]]
        outp[d0 + p] = spay[src[p]]
"""

_MERGE_TILE = """
def merge_tile(xk, xp, m, yk, yp, n, yadd, yor, outk, outp):
    skey = cuda.shared.array(TILE, int64)
    spay = cuda.shared.array(TILE, uint32)
    src = cuda.shared.array(TILE, int32)
    cut = cuda.shared.array(2, int64)
    d0 = int64(cuda.blockIdx.x) * TILE
    merge_tile_at(xk, xp, m, yk, yp, n, yadd, yor, outk, outp, d0, skey, spay, src, cut)
"""

_SCAN_BLOCKS = """
def scan_blocks(a, n, out, sums):
    # Inclusive Hillis-Steele scan of one block's slice in shared memory, written out exclusive.
    s = cuda.shared.array(SCAN_THREADS, int64)
    t = cuda.threadIdx.x
    g = int64(cuda.blockIdx.x) * SCAN_THREADS + t
    v = int64(0)
    if g < n:
        v = a[g]
    s[t] = v
    cuda.syncthreads()
    off = 1
    while off < SCAN_THREADS:
        add = int64(0)
        if t >= off:
            add = s[t - off]
        cuda.syncthreads()
        s[t] += add
        cuda.syncthreads()
        off *= 2
    if g < n:
        out[g] = s[t] - v
    if t == SCAN_THREADS - 1:
        sums[cuda.blockIdx.x] = s[t]
"""

_SCAN_ADD = """
def scan_add(out, n, offs):
    g = cuda.grid(1)
    if g < n:
        out[g] += offs[g // SCAN_THREADS]
"""


@functools.cache
def cuda_kernels(threads: int = MERGE_THREADS, items: int = MERGE_ITEMS, scan_threads: int = SCAN_THREADS):
    """Compile (once per geometry) and return the GPU kernels and device functions as a namespace."""
    global cuda
    from types import SimpleNamespace

    from numba import int32, int64, uint32

    from .backends.cuda import cuda, generated_kernel
    from .codegen import compile_source

    if threads < 2 or items < 1:
        raise ValueError("the merge needs at least 2 threads of at least 1 item each")
    ub = cuda.jit(device=True)(upper_bound)
    cr = cuda.jit(device=True)(corank)
    tile = threads * items
    ns = {"cuda": cuda, "int32": int32, "int64": int64, "uint32": uint32}
    ns.update(THREADS=int(threads), ITEMS=int(items), TILE=int(tile), SCAN_THREADS=int(scan_threads))
    merge_tile_at = cuda.jit(device=True)(compile_source(_MERGE_TILE_AT, "merge_tile_at", dict(ns, cr=cr)))
    return SimpleNamespace(
        cuda=cuda,
        upper_bound=ub,
        corank=cr,
        merge_tile=generated_kernel(_MERGE_TILE, "merge_tile", dict(ns, merge_tile_at=merge_tile_at)),
        merge_tile_at=merge_tile_at,
        scan_blocks=generated_kernel(_SCAN_BLOCKS, "scan_blocks", dict(ns)),
        scan_add=generated_kernel(_SCAN_ADD, "scan_add", dict(ns)),
        tile=tile,
        threads=threads,
        scan_threads=scan_threads,
    )


def merge_shifted_cuda(xk, xp, m, yk, yp, n, yadd, yor, outk, outp, kernels=None, stream=0):
    """GPU twin of :func:`merge_shifted_cpu` on device arrays (asynchronous on ``stream``)."""
    k = kernels or cuda_kernels()
    total = m + n
    if total == 0:
        return
    blocks = (total + k.tile - 1) // k.tile
    k.merge_tile[blocks, k.threads, stream](
        xk, xp, np.int64(m), yk, yp, np.int64(n), np.int64(yadd), yp.dtype.type(yor), outk, outp
    )


def exclusive_scan_cuda(a, n, out, kernels=None, stream=0):
    """out[0:n] = exclusive prefix sums of the int64 device array a[0:n]; returns the total (syncs)."""
    k = kernels or cuda_kernels()
    if n == 0:
        return 0
    blocks = (n + k.scan_threads - 1) // k.scan_threads
    sums = k.cuda.device_array(blocks, np.int64, stream=stream)
    k.scan_blocks[blocks, k.scan_threads, stream](a, np.int64(n), out, sums)
    if blocks == 1:
        return int(sums.copy_to_host(stream=stream)[0])
    offs = k.cuda.device_array(blocks, np.int64, stream=stream)
    total = exclusive_scan_cuda(sums, blocks, offs, k, stream)
    k.scan_add[blocks, k.scan_threads, stream](out, np.int64(n), offs)
    return total
