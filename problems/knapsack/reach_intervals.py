"""The interval lists of knapsack ``reach``'s envelopes (:mod:`.reach`, its module doc, "The
envelopes"): an envelope's union with its copy shifted by an item (:func:`union`), the merge of
intervals closer than ``tau`` (:func:`merge`), the best top below each interval (:func:`best_below`),
and the two steps that make an envelope from the one above (:func:`extend`, :func:`finish`).
Compiled loops that release the GIL: a thread may rebuild a segment beside the search."""

from __future__ import annotations

import numpy as np

from gpudp.jit import njit

#: a gain below ``-LIMIT`` is clipped to it (a larger gain still bounds: kept within int64)
LIMIT = np.int64(1 << 61)


@njit(cache=True)
def union(lo, hi, ga, tp, m, w, dg, pd, cap, tau, width, nlo, nhi, nga, ntp):
    """``E ∪ (E + w)`` (``E``: ``m`` sorted disjoint intervals ``[lo, hi]`` with gains ``ga`` and tops
    ``tp``; the shifted copy's gains ``+ dg``, its tops ``+ pd``) into ``nlo, nhi, nga, ntp``, clipped
    at ``cap``: an interval that meets the last one, or lies within ``tau`` of it, extends it while
    the result is narrower than ``width``, else the part past it starts a new one; every interval it
    overlaps takes its gain and its top when larger (a point's gain and top bound every subset that
    weighs it). Returns the count."""
    i = 0
    j = 0
    k = 0
    while i < m or j < m:
        if j >= m or (i < m and lo[i] <= lo[j] + w):
            a = lo[i]
            b = hi[i]
            g = ga[i]
            t = tp[i]
            i += 1
        else:
            a = lo[j] + w
            b = hi[j] + w
            g = ga[j] + dg
            if g < -LIMIT:
                g = -LIMIT  # a larger gain still bounds: kept within int64
            t = tp[j] + pd
            j += 1
        if a > cap:
            if i >= m or lo[i] > cap:
                break
            continue
        if b > cap:
            b = cap
        if k > 0 and a - nhi[k - 1] - 1 <= tau:
            q = k - 1
            while q >= 0 and nhi[q] >= a:  # the intervals it overlaps
                if nlo[q] <= b:
                    if g > nga[q]:
                        nga[q] = g
                    if t > ntp[q]:
                        ntp[q] = t
                q -= 1
            if b > nhi[k - 1]:
                if b - nlo[k - 1] < width or width >= cap:
                    nhi[k - 1] = b
                    if g > nga[k - 1]:
                        nga[k - 1] = g
                    if t > ntp[k - 1]:
                        ntp[k - 1] = t
                else:
                    nlo[k] = a if a > nhi[k - 1] else nhi[k - 1] + 1
                    nhi[k] = b
                    nga[k] = g
                    ntp[k] = t
                    k += 1
        else:
            nlo[k] = a
            nhi[k] = b
            nga[k] = g
            ntp[k] = t
            k += 1
    return k


@njit(cache=True)
def merge(lo, hi, ga, tp, m, tau, width, cap):
    """Merge in place the neighbours whose gap is at most ``tau`` while the result is narrower than
    ``width`` (no limit when ``width ≥ cap``; the larger gain and top); returns the count."""
    k = 0
    for i in range(m):
        if k > 0 and lo[i] - hi[k - 1] - 1 <= tau and (hi[i] - lo[k - 1] < width or width >= cap):
            if hi[i] > hi[k - 1]:
                hi[k - 1] = hi[i]
            if ga[i] > ga[k - 1]:
                ga[k - 1] = ga[i]
            if tp[i] > tp[k - 1]:
                tp[k - 1] = tp[i]
        else:
            lo[k] = lo[i]
            hi[k] = hi[i]
            ga[k] = ga[i]
            tp[k] = tp[i]
            k += 1
    return k


@njit(cache=True)
def best_below(hi, ga, tp, num, m, out):
    """``out[q]``: the most ``min(num·hi + gain, top)`` of intervals ``0..q``."""
    best = min(num * hi[0] + ga[0], tp[0])
    for q in range(m):
        v = min(num * hi[q] + ga[q], tp[q])
        if v > best:
            best = v
        out[q] = best


def extend(env, w, dg, pd, cap, tau, width):
    lo, hi, ga, tp, _ = env
    m = len(lo)
    nlo, nhi, nga, ntp = (np.empty(2 * m, np.int64) for _ in range(4))
    k = union(lo, hi, ga, tp, m, w, dg, pd, cap, tau, width, nlo, nhi, nga, ntp)
    return nlo, nhi, nga, ntp, k


def finish(nlo, nhi, nga, ntp, k, num):
    """The envelope's arrays cut to ``k`` intervals, with the prefix maxima of ``min(num·hi + gain,
    top)``."""
    best = np.empty(k, np.int64)
    best_below(nhi, nga, ntp, num, k, best)
    return nlo[:k].copy(), nhi[:k].copy(), nga[:k].copy(), ntp[:k].copy(), best
