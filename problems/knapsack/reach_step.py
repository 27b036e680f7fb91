"""The list step of the reachable-sums DP (:mod:`.reach`, issue 41): one item added to the list of
states, the merge with its shifted copy filtered by dominance, the envelope bound and each state's
own Dantzig bound (:func:`suffix_lp`), on one thread (:func:`step`) or on every numba thread
(:func:`step_parallel`, the same result); docs/knapsack_reach.md, "The step on every core"."""

from __future__ import annotations

import numpy as np
from numba import prange

from gpudp.jit import njit

__all__ = ["step", "step_parallel", "suffix_lp"]


@njit(cache=True)
def suffix_lp(ws, ps, eff, i, lw, lp):
    """Dantzig's relaxation of the items ``i..`` (``eff``: every item's index, by non-increasing
    efficiency): ``lw[k], lp[k]`` the weight and profit of the first ``k`` of them in that order.
    Returns their count."""
    m = 0
    lw[0] = 0
    lp[0] = 0
    for t in range(len(eff)):
        e = eff[t]
        if e >= i:
            lw[m + 1] = lw[m] + ws[e]
            lp[m + 1] = lp[m] + ps[e]
            m += 1
    return m


@njit(cache=True)
def _fraction(rest, lw, lp, r):
    """At least ``rest·p/w`` for the item ``r`` (weight ``w``, profit ``p``) of the relaxation ``lw,
    lp`` (``0 ≤ rest < w``; 0 past the last item), and below ``p + 2^24`` (the sums stay in int64):
    ``rest·⌊p/w⌋`` exactly, the remainder's share ``rest·(p mod w)/w`` through a float raised past
    its rounding error (relative, below 10^-15) and then by 1; where that share would come near
    ``rest``, ``rest`` or ``p``, each above it."""
    if r >= len(lw) - 1:
        return 0
    wb = lw[r + 1] - lw[r]
    pb = lp[r + 1] - lp[r]
    qd = pb // wb
    x = float(rest) * float(pb - qd * wb) / float(wb)
    x += x * 1e-12
    if x < float(rest):
        return rest * qd + np.int64(x) + 1
    return min(pb, rest * qd + rest) if rest < pb else pb  # (the share is below rest and below p)


@njit(cache=True)
def _walk(W, P, N, L, i, iend, jj, jend, w, p, j, cap, top, thr, elo, ehi, ega, etp, ebest, num, den, lw, lp,
          lastp, NW, NP, NN, k, par, itm, nn):  # fmt: skip
    """The merge of ``W[i:iend]`` with ``W[jj:jend] + w`` (profits ``+ p``; originals first at equal
    weights) and its filter: :func:`step`'s loop over a stretch of the merge whose weights are at
    least ``cap − top``. ``lastp``: the most profit of the states before it, −1 if none (a state of
    at most that profit is dominated; profits are at least 0). Each kept state is written at ``NW, NP,
    NN[k]``, a shifted one with a new node at ``nn``; with ``par`` None (:func:`step_parallel`) its node
    is left to make: ``NN`` holds ``−3 − parent`` and ``nn`` counts them. Returns ``(k, nn, lastsrc,
    lastp, lastkept)``: the counts, and the stretch's last undominated state (source index, ``+ L``
    if shifted; −1 if none), its profit, whether it was kept."""
    q = np.searchsorted(elo, top, side="right") - 1  # the last interval starting within the room
    r = np.searchsorted(lw, top, side="right") - 1  # the relaxation's break at the room
    lastw = np.int64(-1)
    lastsrc = np.int64(-1)
    lastkept = False
    td = thr * den
    while i < iend or jj < jend:
        if jj >= jend or (i < iend and W[i] <= W[jj] + w):
            a = W[i]
            b = P[i]
            src = i
            i += 1
        else:
            a = W[jj] + w
            b = P[jj] + p
            src = jj + L
            jj += 1
        if b <= lastp:
            continue  # dominated (weights rise)
        if a == lastw and lastkept:
            k -= 1  # same weight, more profit: replaces the last kept state (a node may go unused)
            if par is None and NN[k] <= -2:
                nn -= 1
        lastw = a
        lastp = b
        lastsrc = src
        lastkept = False
        sl = cap - a
        while q >= 0 and elo[q] > sl:
            q -= 1
        if ehi[q] <= sl:
            room = ebest[q]
        else:
            room = num * sl + ega[q]
            if etp[q] < room:
                room = etp[q]
            if q > 0 and ebest[q - 1] > room:
                room = ebest[q - 1]
        if b * den + room < td:
            continue
        while lw[r] > sl:
            r -= 1
        if b + lp[r] < thr and b + lp[r] + _fraction(sl - lw[r], lw, lp, r) < thr:
            continue  # the suffix's LP (Dantzig's) bound at this state's own room
        NW[k] = a
        NP[k] = b
        if src < L:
            NN[k] = N[src]
        elif par is None:
            NN[k] = -3 - N[src - L]
            nn += 1
        else:
            par[nn] = N[src - L]
            itm[nn] = j
            NN[k] = nn
            nn += 1
        k += 1
        lastkept = True
    return k, nn, lastsrc, lastp, lastkept


@njit(cache=True)
def _incumbent(j, NN, k, par, itm, nn, lastsrc, lastp, lastkept, node, zst):
    """``zst`` = [z, znode] takes the merge's last undominated state (``lastsrc`` ≥ 0: there is one;
    ``lastp`` its profit, the most of the merge; ``lastkept``: it is the last of the ``k`` states
    kept in ``NN``; else ``node`` its source's node, and a new node for it when ``lastsrc`` is past
    the list's ``L``) when better than ``z``. Returns ``nn``."""
    if lastsrc >= 0 and lastp > zst[0]:
        zst[0] = lastp
        if lastkept:
            zst[1] = NN[k - 1]
        elif node[1]:
            par[nn] = node[0]
            itm[nn] = j
            zst[1] = nn
            nn += 1
        else:
            zst[1] = node[0]
    return nn


@njit(cache=True)
def _source(N, L, src):
    """The node of the merge's state ``src`` (an index of ``N``, ``+ L`` if shifted) and whether it
    is shifted (a new node's parent)."""
    if src >= L:
        return N[src - L], True
    return N[max(src, 0)], False


@njit(cache=True)
def step(
    W, P, N, L, w, p, j, cap, thr, elo, ehi, ega, etp, ebest, num, den, lw, lp, NW, NP, NN, par, itm, nn, zst
):
    """Add item ``j`` (weight ``w``, profit ``p``) to the list ``W, P, N`` of ``L`` states into
    ``NW, NP, NN``: the merge with the shifted copy, undominated states that fit, kept when the
    envelope ``elo, ehi, ega, etp`` gives ``P·den + room ≥ thr·den`` (``room``: the most of
    ``ebest``, its prefix maxima of ``min(num·hi + gain, top)``, over the intervals ending at most at
    ``cap − W``, and ``min(num·(cap − W) + gain, top)`` for the one holding ``cap − W``) and the
    items left's Dantzig bound at ``cap − W`` (``lw, lp``: :func:`suffix_lp`) gives ``P + LP ≥
    thr``. New nodes from ``nn``.
    ``zst`` = [z, znode]: the best state of the merge (kept or not) replaces it when better (a node
    made for it if needed). Returns (count, nn)."""
    fit = np.searchsorted(W[:L], cap - w, side="right")  # the shifted states that fit
    k, nn, lastsrc, lastp, lastkept = _walk(W, P, N, L, 0, L, 0, fit, w, p, j, cap, cap, thr, elo, ehi, ega,
                                            etp, ebest, num, den, lw, lp, np.int64(-1), NW, NP, NN, 0, par,
                                            itm, nn)  # fmt: skip
    return k, _incumbent(j, NN, k, par, itm, nn, lastsrc, lastp, lastkept, _source(N, L, lastsrc), zst)


@njit(parallel=True, cache=True)
def step_parallel(W, P, N, L, w, p, j, cap, thr, elo, ehi, ega, etp, ebest, num, den, lw, lp, NW, NP, NN, par,
              itm, nn, zst, chunks):  # fmt: skip
    """:func:`step` on ``chunks`` pieces of the merge at once (numba ``prange``), with the same
    result (the same states in the same order, the same nodes, the same ``zst``) but **in ``W, P,
    N``**: ``NW, NP, NN`` (at least ``2·L`` long, as ``W, P, N``) are its scratch.

    The merge is cut at weights (piece ``c`` starts at the weight of the merge's state ``c·M /
    chunks``, ``M`` the states that fit, found by bisection; a weight never straddles two pieces, so
    the same-weight replacement stays within one). The most profit of each piece is its last
    original or shifted state's (profits rise along the list), and their prefix maxima give each
    piece the profit a state must beat, as the serial merge has it there. Each piece walks its
    stretch (:func:`_walk`: the envelope's and the relaxation's pointers found by bisection) and
    writes the states it keeps into ``NW, NP, NN`` from its first merged position on; the prefix sums
    of the counts then place each piece's states in ``W, P, N`` and its new nodes, made in merge
    order. The incumbent: the last piece's last undominated state (the merge's most profit)."""
    fit = np.searchsorted(W[:L], cap - w, side="right")
    total = L + fit
    cut_i = np.empty(chunks + 1, np.int64)  # piece c: W[cut_i[c]:cut_i[c+1]], shifted cut_j[c]..
    cut_j = np.empty(chunks + 1, np.int64)
    start = np.empty(chunks + 1, np.int64)  # the least weight of piece c (a bound on its rooms)
    for c in prange(chunks + 1):
        d = total * c // chunks
        lo, hi = np.int64(0), cap + 1  # the least weight v with more than d states weighing <= v
        while lo < hi:
            v = lo + (hi - lo) // 2  # (lo + hi may pass 2^63)
            if np.searchsorted(W[:L], v, side="right") + np.searchsorted(W[:fit], v - w, side="right") > d:
                hi = v
            else:
                lo = v + 1
        start[c] = lo if c < chunks else cap + 1
        cut_i[c] = np.searchsorted(W[:L], start[c])
        cut_j[c] = np.searchsorted(W[:fit], start[c] - w)
    before = np.full(chunks, np.int64(-1))  # the most profit of the states before piece c (−1: none)
    for c in range(1, chunks):
        most = before[c - 1]
        if cut_i[c] > cut_i[c - 1]:
            most = max(most, P[cut_i[c] - 1])
        if cut_j[c] > cut_j[c - 1]:
            most = max(most, P[cut_j[c] - 1] + p)
        before[c] = most
    kept = np.empty(chunks + 1, np.int64)
    made = np.empty(chunks + 1, np.int64)
    src = np.empty(chunks, np.int64)
    best = np.empty(chunks, np.int64)
    tail = np.empty(chunks, np.bool_)
    for c in prange(chunks):
        kept[c + 1], made[c + 1], src[c], best[c], tail[c] = _walk(
            W, P, N, L, cut_i[c], cut_i[c + 1], cut_j[c], cut_j[c + 1], w, p, j, cap, cap - start[c], thr,
            elo, ehi, ega, etp, ebest, num, den, lw, lp, before[c], NW, NP, NN, cut_i[c] + cut_j[c], None,
            None, 0)  # fmt: skip
    last = chunks - 1  # the last piece with an undominated state (those after it keep none)
    while last > 0 and src[last] < 0:
        last -= 1
    node = _source(N, L, src[last])  # (before N is written)
    kept[0] = 0
    made[0] = nn
    for c in range(chunks):
        kept[c + 1] += kept[c] - cut_i[c] - cut_j[c]
        made[c + 1] += made[c]
    for c in prange(chunks):
        m = made[c]
        at = cut_i[c] + cut_j[c]
        for k in range(kept[c], kept[c + 1]):
            W[k] = NW[at]
            P[k] = NP[at]
            x = NN[at]
            if x <= -2:
                par[m] = -3 - x
                itm[m] = j
                x = m
                m += 1
            N[k] = x
            at += 1
    k = kept[chunks]
    return k, _incumbent(j, N, k, par, itm, made[chunks], src[last], best[last], tail[last], node, zst)
