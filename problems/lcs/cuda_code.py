"""The LCS batch's small GPU kernels and its traceback's (:mod:`.cuda`), written as plain numba-cuda
code.

Not run from here: :func:`gpudp.kernel.load` compiles each function's text in the namespace of a
build (:mod:`.cuda`), where ``cuda`` is the CUDA backend's kit's, the bit-parallel functions
(:mod:`.bitparallel`) are device functions and the sizes ``GROUP``, ``WORDS`` and ``PMSIZE`` are
bound. The sizes are placeholders here, so that the module reads, lints and highlights as the Python
it is.
"""

import numba
from numba import cuda

from .bitparallel import lcs_of, masks, span, store_columns, walk_back

GROUP = WORDS = PMSIZE = 0


def rows(off, length):
    for i in range(cuda.grid(1), len(off), cuda.gridsize(1)):
        off[i] = i * length


def present(x, n, flags):
    seen = cuda.shared.array(256, numba.int32)
    t = cuda.threadIdx.x
    for v in range(t, 256, cuda.blockDim.x):
        seen[v] = 0
    cuda.syncthreads()
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        seen[x[i]] = 1
    cuda.syncthreads()
    for v in range(t, 256, cuda.blockDim.x):
        if seen[v] != 0:
            flags[v] = 1


def pattern_masks(pat, pat_off, r0, r1, sigma, table, mapped, pm_off, pm0, pm):
    """The masks of patterns ``r0 .. r1 - 1`` (a thread a pattern), pattern ``r0 + r``'s at
    ``pm[pm_off[r] - pm0:]`` (``sigma`` codes x its words); one given no room (empty, or its masks
    built by its own kernel) is passed over."""
    for r in range(cuda.grid(1), r1 - r0, cuda.gridsize(1)):
        if pm_off[r + 1] > pm_off[r]:
            a0 = pat_off[r0 + r]
            m = pat_off[r0 + r + 1] - a0
            masks(pat, a0, m, (m + 63) // 64, sigma, table, mapped, pm[pm_off[r] - pm0 : pm_off[r + 1] - pm0])


# the signatures as they were written (the kernels' cache entries stay)
# fmt: off
def lcs_columns(pat, pat_off, txt, txt_off, sigma, table, mapped, order, t0, t1, goff, gwords, base0,
                store, lengths):
    pm = cuda.local.array(PMSIZE, numba.uint64)
    s = cuda.local.array(WORDS, numba.uint64)
    for t in range(t0 + cuda.grid(1), t1, cuda.gridsize(1)):  # the stride keeps a warp in one group
        p = order[t]
        a0, m, b0, n = span(pat_off, txt_off, p)
        if m == 0 or n == 0:
            lengths[t] = 0
            continue
        w = (m + 63) // 64
        g = t // GROUP
        masks(pat, a0, m, w, sigma, table, mapped, pm)
        for q in range(w):
            s[q] = ~numba.uint64(0)
        base = goff[g] - base0 + t % GROUP
        store_columns(txt, b0, n, pm, w, table, mapped, s, store, base, gwords[g] * GROUP, GROUP)
        lengths[t] = lcs_of(s, w, m)


def lcs_walk(pat, pat_off, txt, txt_off, swapped, order, t0, t1, goff, gwords, base0, store, lengths,
             ostart, o0, out_a, out_b, found):
    t = t0 + cuda.grid(1)
    if t >= t1:
        return
    p = order[t]
    a0, m, b0, n = span(pat_off, txt_off, p)
    if m == 0 or n == 0:
        found[t] = 0
        return
    g = t // GROUP
    base = goff[g] - base0 + t % GROUP
    col = gwords[g] * GROUP
    o = ostart[t] - o0
    if swapped[p]:
        found[t] = walk_back(pat, a0, m, txt, b0, n, store, base, col, GROUP, lengths[t], out_b, out_a, o)
    else:
        found[t] = walk_back(pat, a0, m, txt, b0, n, store, base, col, GROUP, lengths[t], out_a, out_b, o)
# fmt: on
