"""Sorted-sequence primitives shared by plug-ins: binary search, merge path, merge, exclusive scan
(sum and max).

The search helpers are plain Python functions written inside what both compilers accept, so one source
runs on the CPU (numba ``njit``) and inside CUDA kernels (``cuda.jit(device=True)``). Every GPU
piece has a CPU twin here, and the tests compare the two with numpy.

The GPU kernels live in :mod:`gpudp.primitives.cuda` (built on first use there), so importing this
package never imports the CUDA compiler.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from ..jit import njit

__all__ = [
    "lower_bound",
    "upper_bound",
    "corank",
    "merge_shifted_cpu",
    "exclusive_scan_cpu",
    "exclusive_max_scan_cpu",
    "MERGE_THREADS",
    "MERGE_ITEMS",
]

# Geometry of the GPU merge: a block of MERGE_THREADS threads writes MERGE_THREADS * MERGE_ITEMS
# outputs; an odd MERGE_ITEMS keeps the threads' shared-memory strides free of bank conflicts.
MERGE_THREADS = 128
MERGE_ITEMS = 7
SCAN_THREADS = 512


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


def exclusive_max_scan_cpu(a, init: int):
    """Exclusive prefix maxima of an int64 array: ``out[i] = max(init, a[0], ..., a[i-1])`` (so
    ``out[0] = init``); returns (scan, total), ``total = max(init, a[0], ..., a[n-1])``. With a
    list's values in list order, ``a[i] > out[i]`` marks the entries that beat every one before
    them (a record, or a dominance filter)."""
    a = np.asarray(a, np.int64)
    out = np.empty(len(a), np.int64)
    if len(a) == 0:
        return out, int(init)
    inc = np.maximum.accumulate(a)
    out[0] = init
    np.maximum(inc[:-1], init, out=out[1:])
    return out, max(int(init), int(inc[-1]))
