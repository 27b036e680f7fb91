"""The GPU twins of :mod:`gpudp.primitives`: merge-path merge and exclusive scan kernels (sum and
max).

Imported only when the cuda backend runs (importing it imports the CUDA compiler).
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np
from numba import int32, int64, uint32

from gpudp.backends.cuda import cuda, generated_kernel
from gpudp.codegen import compile_source

from . import MERGE_ITEMS, MERGE_THREADS, SCAN_THREADS, corank, upper_bound

__all__ = ["cuda_kernels", "merge_shifted_cuda", "exclusive_scan_cuda", "exclusive_max_scan_cuda"]

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

_MAX_SCAN_BLOCKS = """
def max_scan_blocks(a, n, init, out, maxes):
    # Inclusive Hillis-Steele max-scan of one block's slice in shared memory (init past the end),
    # written out exclusive (init first); the block's maximum into maxes.
    s = cuda.shared.array(SCAN_THREADS, int64)
    t = cuda.threadIdx.x
    g = int64(cuda.blockIdx.x) * SCAN_THREADS + t
    v = init
    if g < n:
        v = a[g]
    s[t] = v
    cuda.syncthreads()
    off = 1
    while off < SCAN_THREADS:
        x = init
        if t >= off:
            x = s[t - off]
        cuda.syncthreads()
        if x > s[t]:
            s[t] = x
        cuda.syncthreads()
        off *= 2
    if g < n:
        if t == 0:
            out[g] = init
        else:
            out[g] = s[t - 1]
    if t == SCAN_THREADS - 1:
        maxes[cuda.blockIdx.x] = s[t]
"""

_MAX_SCAN_APPLY = """
def max_scan_apply(out, n, offs):
    g = cuda.grid(1)
    if g < n:
        x = offs[g // SCAN_THREADS]
        if x > out[g]:
            out[g] = x
"""


@functools.cache
def cuda_kernels(threads: int = MERGE_THREADS, items: int = MERGE_ITEMS, scan_threads: int = SCAN_THREADS):
    """Compile (once per geometry) and return the GPU kernels and device functions as a namespace."""
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
        max_scan_blocks=generated_kernel(_MAX_SCAN_BLOCKS, "max_scan_blocks", dict(ns)),
        max_scan_apply=generated_kernel(_MAX_SCAN_APPLY, "max_scan_apply", dict(ns)),
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


def exclusive_max_scan_cuda(a, n, out, init, kernels=None, stream=0, want_total=True):
    """out[0:n] = exclusive prefix maxima of the int64 device array a[0:n], ``init`` first (the
    GPU twin of :func:`gpudp.primitives.exclusive_max_scan_cpu`); returns the total
    ``max(init, a[0:n])`` (syncs), or None without syncing when ``want_total`` is False."""
    k = kernels or cuda_kernels()
    init = np.int64(init)
    if n == 0:
        return int(init) if want_total else None
    blocks = (n + k.scan_threads - 1) // k.scan_threads
    maxes = k.cuda.device_array(blocks, np.int64, stream=stream)
    k.max_scan_blocks[blocks, k.scan_threads, stream](a, np.int64(n), init, out, maxes)
    if blocks == 1:
        return max(int(init), int(maxes.copy_to_host(stream=stream)[0])) if want_total else None
    offs = k.cuda.device_array(blocks, np.int64, stream=stream)
    total = exclusive_max_scan_cuda(maxes, blocks, offs, init, k, stream, want_total)
    k.max_scan_apply[blocks, k.scan_threads, stream](out, np.int64(n), offs)
    return total
