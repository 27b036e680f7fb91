"""The node array of the reachable-sums DP (:mod:`.reach`, issue 41) collected on every numba
thread (:func:`collect_parallel`, the same result as the sparse DP's serial
:func:`.sparse.kernels.collect`; its copies and first writes when it grows are the engine's
:func:`gpudp.memory.copy_parallel` and :func:`~gpudp.memory.fill_parallel`);
docs/knapsack_reach.md, "The bookkeeping on every core"."""

from __future__ import annotations

import numpy as np
from numba import prange

from gpudp.jit import njit

__all__ = ["collect_parallel"]


@njit(parallel=True, cache=True)
def collect_parallel(par, itm, nn, N, L, zst, chunks):
    """Drop the nodes ``0..nn-1`` that no node of ``N[:L]`` nor ``zst[1]`` reaches (parents through
    ``par``, ``−1`` ending a chain), compact ``par, itm`` in place keeping their order (parents
    precede children) and renumber ``par``, ``N[:L]`` and ``zst[1]``: :func:`.sparse.kernels.collect`'s
    result, node for node, on ``chunks`` pieces at once. Returns the count kept.

    The mark walks each chain from its state until a marked node (``prange`` over the states): two
    threads may walk one chain at once, and one may stop at a node another has just marked, which
    that other goes on from, so every marked node's parent ends marked and the marks are the serial
    ones. The kept counts of the pieces of ``0..nn-1``, summed in order, number each piece's nodes;
    each piece renumbers and compacts its nodes at its own start (its place may lie in a piece before
    it, not yet read), and one pass in order then moves them to their place (no scratch of the nodes'
    size: with it, 100 MB more at the peak of a published n = 800 proof)."""
    mark = np.zeros(nn, np.bool_)
    for q in prange(L + 1):
        r = N[q] if q < L else zst[1]
        while r >= 0 and not mark[r]:
            mark[r] = True
            r = par[r]
    first = np.empty(chunks + 1, np.int64)  # piece c: nodes first[c]..first[c+1]-1, ...
    count = np.zeros(chunks + 1, np.int64)  # ... numbered from count[c] on
    for c in prange(chunks + 1):
        first[c] = nn * c // chunks
    for c in prange(chunks):
        s = 0
        for k in range(first[c], first[c + 1]):
            if mark[k]:
                s += 1
        count[c + 1] = s
    for c in range(chunks):
        count[c + 1] += count[c]
    live = count[chunks]
    remap = np.empty(nn, np.int64)  # (read only at marked nodes)
    for c in prange(chunks):
        m = count[c]
        for k in range(first[c], first[c + 1]):
            if mark[k]:
                remap[k] = m
                m += 1
    for c in prange(chunks):  # each piece compacted within itself (writes at or before its reads)
        at = first[c]
        for k in range(first[c], first[c + 1]):
            if mark[k]:
                pk = par[k]
                par[at] = remap[pk] if pk >= 0 else -1
                itm[at] = itm[k]
                at += 1
    for c in range(1, chunks):  # then moved down in order (each onto places already read)
        at = first[c]
        for k in range(count[c], count[c + 1]):
            par[k] = par[at]
            itm[k] = itm[at]
            at += 1
    for q in prange(L):
        if N[q] >= 0:
            N[q] = remap[N[q]]
    if zst[1] >= 0:
        zst[1] = remap[zst[1]]
    return live
