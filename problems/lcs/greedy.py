"""The bounds of an LCS stopped by its time limit, and of the edit distance's: a common subsequence
found greedily (:func:`greedy_common`, a lower bound on the LCS) and the symbol counts' upper
bound (:func:`count_bound`)."""

from __future__ import annotations

import numpy as np

from gpudp.jit import njit

__all__ = ["BEST_NEXT_SYMBOLS", "count_bound", "greedy_common"]


def count_bound(ea: np.ndarray, eb: np.ndarray) -> int:
    """An upper bound on the LCS: each symbol is matched at most as often as the rarer of its two
    counts (at most ``min(len(a), len(b))``)."""
    ua, ca = np.unique(ea, return_counts=True)
    ub, cb = np.unique(eb, return_counts=True)
    _, ka, kb = np.intersect1d(ua, ub, assume_unique=True, return_indices=True)
    return int(np.minimum(ca[ka], cb[kb]).sum())


#: alphabets up to this size take the best-next match at each step (a pass over the symbols a step)
BEST_NEXT_SYMBOLS = 64


def greedy_common(ea: np.ndarray, eb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A common subsequence of ``ea`` and ``eb``, found greedily: its positions ``(ia, ib)``, a lower
    bound on the LCS (not the LCS). From the last match ``(i, j)`` the next one is the symbol whose
    next occurrences in both lie nearest (the sum of the two steps: "best next"), for alphabets of up
    to :data:`BEST_NEXT_SYMBOLS` symbols; for larger ones each symbol of ``ea`` in turn is matched to
    its next occurrence in ``eb``. ``O((len(ea) + len(eb)) x symbols)`` at most."""
    if len(ea) == 0 or len(eb) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    _, dense = np.unique(np.concatenate([ea, eb]), return_inverse=True)
    dense = dense.astype(np.int64).ravel()
    k = int(dense.max()) + 1
    return _greedy(dense[: len(ea)], dense[len(ea) :], k, k <= BEST_NEXT_SYMBOLS)


@njit(cache=True)
def _positions(s, k):
    """The positions of each symbol of ``s`` (dense codes ``0 .. k - 1``), grouped by symbol: the
    positions of ``c`` are ``pos[start[c] : start[c + 1]]``, ascending."""
    count = np.zeros(k + 1, np.int64)
    for x in s:
        count[x + 1] += 1
    start = np.cumsum(count)
    pos = np.empty(len(s), np.int64)
    fill = start[:-1].copy()
    for j in range(len(s)):
        pos[fill[s[j]]] = j
        fill[s[j]] += 1
    return pos, start


@njit(cache=True)
def _greedy(sa, sb, k, best_next):
    pa, sta = _positions(sa, k)
    pb, stb = _positions(sb, k)
    qa, qb = sta[:-1].copy(), stb[:-1].copy()  # per symbol, its first occurrence not yet passed
    ia = np.empty(min(len(sa), len(sb)), np.int64)
    ib = np.empty_like(ia)
    n, i, j = 0, 0, 0
    while i < len(sa) and j < len(sb):
        if best_next:  # the symbol whose next occurrences after (i, j) are nearest
            best, x = len(sa) + len(sb), -1
            for c in range(k):
                while qa[c] < sta[c + 1] and pa[qa[c]] < i:
                    qa[c] += 1
                while qb[c] < stb[c + 1] and pb[qb[c]] < j:
                    qb[c] += 1
                if qa[c] < sta[c + 1] and qb[c] < stb[c + 1]:
                    cost = pa[qa[c]] - i + pb[qb[c]] - j
                    if cost < best:
                        best, x = cost, c
            if x < 0:
                break
            ia[n], ib[n] = pa[qa[x]], pb[qb[x]]
        else:  # a[i] matched to its next occurrence in b, if any
            x = sa[i]
            while qb[x] < stb[x + 1] and pb[qb[x]] < j:
                qb[x] += 1
            if qb[x] == stb[x + 1]:
                i += 1
                continue
            ia[n], ib[n] = i, pb[qb[x]]
        i, j = ia[n] + 1, ib[n] + 1
        n += 1
    return ia[:n], ib[:n]
