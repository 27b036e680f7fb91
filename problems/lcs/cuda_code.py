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

from .bitparallel import lane_masks, lcs_of, masks, popcount64, span, store_columns, walk_back, word_step

GROUP = WORDS = PMSIZE = WPL = 0


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


def lcs_long(pat, pat_off, txt, txt_off, sigma, table, mapped, out):
    """The LCS length of each pair, a warp a pair (long patterns): lane ``L`` holds ``wl`` of the
    pattern's words from word ``L * wl`` (at most ``WPL``, a constant: its vector in registers, its
    masks in local memory) and runs text symbol ``k`` at step ``k + L``, one step behind lane
    ``L - 1``, whose carry out of that symbol it takes by a shuffle (``from_left``); the lanes' counts
    of one bits summed across the warp at the end (``warp_sum``). Lane 0 writes the length."""
    pm = cuda.local.array(PMSIZE, numba.uint64)
    s = cuda.local.array(WPL, numba.uint64)
    lane = cuda.threadIdx.x & 31
    for p in range(cuda.grid(1) >> 5, out.shape[0], cuda.gridsize(1) >> 5):
        a0, m, b0, n = span(pat_off, txt_off, p)
        if m == 0 or n == 0:
            if lane == 0:
                out[p] = 0
            continue
        w, q0, nq = lane_masks(pat, a0, m, lane, sigma, table, mapped, pm, WPL)
        for q in range(WPL):
            s[q] = ~numba.uint64(0)
        out_carry = numba.int32(0)
        for step in range(n + 31):
            carry = numba.uint64(from_left(out_carry, lane, 0))
            k = step - lane
            if k >= 0 and k < n and nq > 0:
                x = txt[b0 + k]
                if mapped:
                    x = table[x]
                row = x * WPL
                for q in range(WPL):
                    if q < nq:
                        s[q], carry = word_step(s[q], pm[row + q], carry)
            out_carry = numba.int32(carry)
        ones = 0
        for q in range(WPL):
            if q < nq:
                word = s[q]
                tail = m - 64 * (q0 + q)
                if tail < 64:
                    word &= (numba.uint64(1) << numba.uint64(tail)) - numba.uint64(1)
                ones += numba.int64(popcount64(word))
        ones = warp_sum(ones, lane)
        if lane == 0:
            out[p] = m - ones


def from_left(v, lane, first):
    """Lane ``L - 1``'s ``v`` (an int32), ``first`` in lane 0: a shuffle up (numba's shuffles take
    signed integers and floats, so a uint64 carry goes as an int32)."""
    x = cuda.shfl_up_sync(0xFFFFFFFF, numba.int32(v), 1)
    return numba.int32(first) if lane == 0 else x


def warp_sum(x, lane):
    """The sum of ``x`` over the warp's lanes, in every lane."""
    for m in (16, 8, 4, 2, 1):
        x += cuda.shfl_xor_sync(0xFFFFFFFF, x, m)
    return x


def from_left_sim(v, lane, first):
    """:func:`from_left` under the simulator (no shuffles there): through shared memory, the block
    being one warp."""
    buf = cuda.shared.array(32, numba.int32)
    buf[lane] = v
    cuda.syncthreads()
    x = buf[lane - 1] if lane > 0 else numba.int32(first)
    cuda.syncthreads()
    return x


def warp_sum_sim(x, lane):
    """:func:`warp_sum` under the simulator: through shared memory."""
    buf = cuda.shared.array(32, numba.int64)
    buf[lane] = x
    cuda.syncthreads()
    total = 0
    for q in range(32):
        total += buf[q]
    cuda.syncthreads()
    return total
