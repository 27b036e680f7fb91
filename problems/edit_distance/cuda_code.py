"""The edit distance's warp-a-pair kernel, written as plain numba-cuda code (compiled in the
namespace of a build, :func:`gpudp.problems.lcs.cuda._long_kernel`, where ``WPL`` and ``PMSIZE``
are bound and ``from_left`` and ``warp_sum`` are the lanes' exchanges)."""

import numba
from numba import cuda

from gpudp.problems.lcs.bitparallel import lane_masks, span
from gpudp.problems.lcs.cuda_code import from_left, warp_sum

from .bitparallel import block_step

WPL = PMSIZE = 0


def levenshtein_long(pat, pat_off, txt, txt_off, sigma, table, mapped, out):
    """The edit distance of each pair, a warp a pair (long patterns), Myers' blocks over the lanes:
    lane ``L`` holds ``wl`` of the pattern's words from word ``L * wl`` and runs text symbol ``k``
    at step ``k + L``, taking the horizontal difference at its first word's top row (-1, 0 or +1;
    +1 in lane 0, the top row) from lane ``L - 1``'s last word a step later (``from_left``). The
    lane holding the pattern's last word keeps the score (the bottom row's), which the warp's sum
    hands to lane 0."""
    pm = cuda.local.array(PMSIZE, numba.uint64)
    pv = cuda.local.array(WPL, numba.uint64)
    mv = cuda.local.array(WPL, numba.uint64)
    lane = cuda.threadIdx.x & 31
    for p in range(cuda.grid(1) >> 5, out.shape[0], cuda.gridsize(1) >> 5):
        a0, m, b0, n = span(pat_off, txt_off, p)
        if m == 0 or n == 0:
            if lane == 0:
                out[p] = m + n
            continue
        w, q0, nq = lane_masks(pat, a0, m, lane, sigma, table, mapped, pm, WPL)
        holds_last = nq > 0 and q0 + nq == w
        for q in range(WPL):
            pv[q] = ~numba.uint64(0)
            mv[q] = numba.uint64(0)
        last = numba.uint64(1) << numba.uint64((m - 1) & 63)
        top = numba.uint64(1) << numba.uint64(63)
        score = m
        out_h = numba.int32(0)
        for step in range(n + 31):
            h = from_left(out_h, lane, 1)
            k = step - lane
            if k >= 0 and k < n and nq > 0:
                x = txt[b0 + k]
                if mapped:
                    x = table[x]
                row = x * WPL
                for q in range(WPL):
                    if q < nq:
                        high = last if q0 + q == w - 1 else top
                        pv[q], mv[q], h = block_step(pv[q], mv[q], pm[row + q], h, high)
                if holds_last:
                    score += h
            out_h = numba.int32(h)
        score = warp_sum(score if holds_last else 0, lane)
        if lane == 0:
            out[p] = score
