"""The interval lists of knapsack ``reach``'s envelopes (:mod:`.reach`, its module doc, "The
envelopes"): an envelope's union with its copy shifted by an item (:func:`union`), the merge of
intervals closer than ``tau`` (:func:`merge`), the best top below each interval (:func:`best_below`).
Compiled loops that release the GIL: a thread may rebuild a segment beside the search; the union
also on every numba thread (:func:`union_parallel`, the same result)."""

from __future__ import annotations

import numpy as np
from numba import prange

from gpudp.jit import njit

#: a gain below ``-LIMIT`` is clipped to it (a larger gain still bounds: kept within int64)
LIMIT = np.int64(1 << 61)


#: the union is made in this many parts of ``[0, C]``, each from the intervals that meet it, clipped
#: to it, merged within it only: the same parts whatever the thread count (so the same envelopes),
#: taken on every numba thread where the envelope is large (:func:`union_parallel`)
PARTS = 64
#: an envelope of at least this many intervals takes its union on every numba thread, where numba
#: has at least :data:`UNION_THREADS` (on 2 threads of a shared 2-core host a parallel union was no
#: faster, and 6x slower where the other core was busy: OpenMP's threads wait on it)
PARALLEL_UNION = 1 << 14
UNION_THREADS = 4


def union_room(m: int) -> int:
    """The most intervals a union of an envelope of ``m`` intervals gives: ``2m``, and one more a
    stream for each part boundary an interval crosses."""
    return 2 * m + 2 * PARTS


@njit(cache=True)
def _part_span(cap: int, c: int):
    """Part ``c``'s points ``[a0, a1]`` (``a0 > cap``: none): ``S = C // PARTS + 1`` points each,
    the last ones cut at ``C`` (without passing int64)."""
    size = cap // PARTS + 1
    a0 = c * size
    return a0, (a0 + size - 1 if cap - a0 >= size - 1 else cap)


@njit(cache=True)
def _inputs(lo, hi, m, w, a0, a1):
    """The first intervals of ``E`` and of ``E + w`` that meet ``[a0, a1]`` and their ends (the
    first past ``a1``)."""
    i0 = np.searchsorted(hi[:m], a0)
    j0 = np.searchsorted(hi[:m], a0 - w)
    i1 = np.searchsorted(lo[:m], a1, side="right")
    j1 = np.searchsorted(lo[:m], a1 - w, side="right")
    return i0, max(i0, i1), j0, max(j0, j1)


@njit(cache=True)
def _part(lo, hi, ga, tp, m, w, dg, pd, cap, tau, width, c, nlo, nhi, nga, ntp, k):
    """The union's part ``c`` (its points: :func:`_part_span`) written from ``k`` on: the intervals
    of ``E`` and ``E + w`` that meet it, in order of their starts, clipped to it; one that meets the
    last written, or lies within ``tau`` of it, extends it while the result is narrower than
    ``width``, else the part past it starts a new one; every interval it overlaps takes its gain and
    its top when larger (a point's gain and top bound every subset that weighs it). Returns the
    count written so far."""
    a0, a1 = _part_span(cap, c)
    if a0 > cap:
        return k
    i, i1, j, j1 = _inputs(lo, hi, m, w, a0, a1)
    base = k
    while i < i1 or j < j1:
        if j >= j1 or (i < i1 and lo[i] <= lo[j] + w):
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
        if a < a0:
            a = a0
        if b > a1:
            b = a1
        if k > base and a - nhi[k - 1] - 1 <= tau:
            q = k - 1
            while q >= base and nhi[q] >= a:  # the intervals it overlaps
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
def union(lo, hi, ga, tp, m, w, dg, pd, cap, tau, width, nlo, nhi, nga, ntp):
    """``E ∪ (E + w)`` (``E``: ``m`` sorted disjoint intervals ``[lo, hi]`` with gains ``ga`` and tops
    ``tp``; the shifted copy's gains ``+ dg``, its tops ``+ pd``) into ``nlo, nhi, nga, ntp`` (room
    for :func:`union_room` intervals), clipped at ``cap``, made part after part (:func:`_part`), on
    the caller's thread. Returns the count."""
    k = 0
    for c in range(PARTS):
        k = _part(lo, hi, ga, tp, m, w, dg, pd, cap, tau, width, c, nlo, nhi, nga, ntp, k)
    return k


@njit(cache=True, parallel=True)
def union_parallel(lo, hi, ga, tp, m, w, dg, pd, cap, tau, width, nlo, nhi, nga, ntp, slo, shi, sga, stp):
    """:func:`union`'s result, its parts made on every numba thread: each into its own stretch of
    the scratch arrays ``slo, shi, sga, stp`` (room for :func:`union_room` intervals), then moved
    into place."""
    room = np.zeros(PARTS + 1, np.int64)
    for c in prange(PARTS):
        a0, a1 = _part_span(cap, c)
        if a0 <= cap:
            i0, i1, j0, j1 = _inputs(lo, hi, m, w, a0, a1)
            room[c + 1] = i1 - i0 + j1 - j0
    for c in range(PARTS):
        room[c + 1] += room[c]
    made = np.zeros(PARTS + 1, np.int64)
    for c in prange(PARTS):
        end = _part(lo, hi, ga, tp, m, w, dg, pd, cap, tau, width, c, slo, shi, sga, stp, room[c])
        made[c + 1] = end - room[c]
    for c in range(PARTS):
        made[c + 1] += made[c]
    for c in prange(PARTS):
        at, to = room[c], made[c]
        for q in range(made[c + 1] - made[c]):
            nlo[to + q] = slo[at + q]
            nhi[to + q] = shi[at + q]
            nga[to + q] = sga[at + q]
            ntp[to + q] = stp[at + q]
    return made[PARTS]


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
