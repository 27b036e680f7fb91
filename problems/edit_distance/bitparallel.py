"""Levenshtein distances by Myers' bit-vector algorithm, in Hyyrö's block form: 64 cells of the DP
table per word operation.

Column ``j`` of the table ``D`` (pattern ``a`` of ``m`` symbols down, text ``b`` across) is kept as
its vertical differences: ``Pv`` has bit ``i`` set where ``D[i + 1][j] - D[i][j] = +1``, ``Mv``
where it is -1. Column 0 is all +1. A text symbol ``c`` turns column ``j - 1`` into column ``j``
word by word from the top, each word taking the horizontal difference ``hin`` at its top row from
the word above (+1 for the first: row 0 is ``D[0][j] = j``) and passing on the one at its last row;
the last word's, at row ``m``, steps the distance ``D[m][j]``. The batch is packed as for the LCS
(:mod:`gpudp.problems.lcs.bitparallel`: the shorter sequence of each pair as the pattern, bytes
read through a 256-entry table); the GPU twin is in :mod:`.cuda`.
"""

from __future__ import annotations

import numpy as np
from numba import prange
from numba.extending import register_jitable

from gpudp.jit import njit
from gpudp.problems.lcs.bitparallel import NO_CUTOFF, Packed, masks, run_cpu

__all__ = ["block_step", "distances_cpu", "levenshtein_text"]


@register_jitable
def block_step(pv, mv, eq, hin, high):
    """One 64-bit word of a column step: ``(pv, mv, hout)``. ``hin`` (-1, 0, +1) is the horizontal
    difference at the word's top row; ``high`` the bit of the row whose difference goes out."""
    one = np.uint64(1)
    neg = one if hin < 0 else np.uint64(0)
    xv = eq | mv
    eq = eq | neg
    xh = (((eq & pv) + pv) ^ pv) | eq
    ph = mv | ~(xh | pv)
    mh = pv & xh
    hout = 0
    if ph & high:
        hout = 1
    elif mh & high:
        hout = -1
    ph = (ph << one) | (one if hin > 0 else np.uint64(0))
    mh = (mh << one) | neg
    return mh | ~(xv | ph), ph & xv, hout


@njit(cache=True)
def levenshtein_bounds(m, n):
    """Bounds of the Levenshtein distance of sequences of ``m`` and ``n`` symbols, from the lengths
    alone."""
    return abs(m - n), max(m, n)


@njit(cache=True)
def levenshtein_text(pm, w, m, txt, b0, b1, table, mapped, v, lo, hi):
    """The Levenshtein distance of a pattern of ``m`` symbols, its masks ``pm``
    (:func:`gpudp.problems.lcs.bitparallel.masks`, ``w`` words a code), and the text ``txt[b0:b1]``
    (codes through ``table`` when ``mapped``); ``v``: at least ``2 * w`` words of scratch for the
    vertical differences. ``lo``, ``hi``: the score cutoff's bounds (a distance has only ``hi``:
    :func:`gpudp.problems.lcs.bitparallel.clamp`); a distance above ``hi`` is reported as ``hi + 1``
    as soon as it is certain: ``D[m][k]`` changes by at most 1 a text symbol, so once it exceeds
    ``hi`` by more than the symbols left the distance does too."""
    if m == 0 or b1 == b0:
        return m + (b1 - b0)
    cut = hi < m + (b1 - b0)  # else no distance can pass it
    top = np.uint64(1) << np.uint64(63)
    last = np.uint64(1) << np.uint64((m - 1) & 63)
    for q in range(w):
        v[q] = ~np.uint64(0)  # Pv: column 0 is all +1
        v[w + q] = np.uint64(0)  # Mv
    score = m
    for k in range(b0, b1):
        x = txt[k]
        if mapped:
            x = table[x]
        row = x * w
        h = 1
        for q in range(w):
            v[q], v[w + q], h = block_step(v[q], v[w + q], pm[row + q], h, last if q == w - 1 else top)
        score += h
        if cut and score - (b1 - 1 - k) > hi:
            return hi + 1
    return score


@njit(parallel=True, cache=True)
def _distances(pat, pat_off, txt, txt_off, sigma, table, mapped, out):
    for p in prange(len(out)):
        a0, m = pat_off[p], pat_off[p + 1] - pat_off[p]
        w = max((m + 63) // 64, 1)
        peq = np.empty(sigma * w, np.uint64)
        masks(pat, a0, m, w, sigma, table, mapped, peq)
        v = np.empty(2 * w, np.uint64)
        out[p] = levenshtein_text(peq, w, m, txt, txt_off[p], txt_off[p + 1], table, mapped, v, 0, NO_CUTOFF)


def distances_cpu(packed: Packed) -> np.ndarray:
    """The Levenshtein distance of every pair of ``packed``, on all CPU cores."""
    return run_cpu(_distances, packed)
