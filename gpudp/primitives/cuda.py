"""The GPU twins of :mod:`gpudp.primitives`: merge-path merge and exclusive scan kernels (sum and
max).

Imported only when the cuda backend runs (importing it imports the CUDA compiler).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from numba import int32, int64, uint32

from gpudp.backends.cuda import cuda, generated_kernel
from gpudp.codegen import compile_source

from ..kernel import factory, load
from . import MERGE_ITEMS, MERGE_THREADS, SCAN_THREADS, corank, upper_bound
from . import cuda_code as K

__all__ = ["cuda_kernels", "merge_shifted_cuda", "exclusive_scan_cuda", "exclusive_max_scan_cuda"]

# The GPU pieces are the functions of gpudp.primitives.cuda_code, loaded as generated source
# (gpudp.kernel.load through gpudp.backends.cuda.generated_kernel: cached on disk on a real GPU,
# compiled in memory under the simulator) whose geometry (THREADS, ITEMS, TILE = THREADS * ITEMS,
# SCAN_THREADS) and ``cuda`` are globals of the generated module: numba cannot cache closures, and the
# CUDA simulator swaps a module global that is numba.cuda for its fake module inside kernels.


@factory("primitives.cuda")
def cuda_kernels(threads: int = MERGE_THREADS, items: int = MERGE_ITEMS, scan_threads: int = SCAN_THREADS):
    """Compile (once per geometry) and return the GPU kernels and device functions as a namespace."""
    if threads < 2 or items < 1:
        raise ValueError("the merge needs at least 2 threads of at least 1 item each")
    ub = cuda.jit(device=True)(upper_bound)
    cr = cuda.jit(device=True)(corank)
    tile = threads * items
    ns = {"cuda": cuda, "int32": int32, "int64": int64, "uint32": uint32}
    ns.update(THREADS=int(threads), ITEMS=int(items), TILE=int(tile), SCAN_THREADS=int(scan_threads))
    merge_tile_at = cuda.jit(device=True)(load(K.merge_tile_at, dict(ns, cr=cr), compile_source))
    return SimpleNamespace(
        cuda=cuda,
        upper_bound=ub,
        corank=cr,
        merge_tile=load(K.merge_tile, dict(ns, merge_tile_at=merge_tile_at), generated_kernel),
        merge_tile_at=merge_tile_at,
        scan_blocks=load(K.scan_blocks, dict(ns), generated_kernel),
        scan_add=load(K.scan_add, dict(ns), generated_kernel),
        max_scan_blocks=load(K.max_scan_blocks, dict(ns), generated_kernel),
        max_scan_apply=load(K.max_scan_apply, dict(ns), generated_kernel),
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
