"""The band encoder's kernel and device functions (:mod:`.bands`), written as plain numba-cuda code.

Not run from here: :func:`gpudp.kernel.load` compiles each function's text in the namespace of a
build (:func:`.bands.encode_kernel`), where ``BITS`` (decision bits a cell) is bound and
``differs`` and ``edge_word`` are device functions. ``BITS`` is a placeholder here, so that the
module reads, lints and highlights as the Python it is.
"""

import numpy as np
from numba import cuda

BITS = 0


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
