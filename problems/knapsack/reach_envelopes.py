"""The envelopes of :mod:`.reach` (issue 41): ``E_i``, sorted disjoint intervals of ``[0, C]``
covering every subset sum ``≤ C`` of items ``i..n-1``, each with a gain and a top (the meaning, the
bound they give and the rule that builds them: :mod:`.reach`'s module doc). Here: how they are built
(the union of :mod:`.reach_intervals`, in parts on numba's threads from :data:`PARALLEL_UNION`
intervals), stored (all, or every ``K``-th and rebuilt a segment at a time), and served to a search
in rising ``i`` (:meth:`Envelopes.get`, the next segments rebuilt ahead on threads of their own).

The module's constants are read when used: a test or :func:`.reach.warm` may set them here.
"""

from __future__ import annotations

import math
import threading
import time

import numba
import numpy as np

from .reach_intervals import (
    PARALLEL_UNION,
    UNION_THREADS,
    best_below,
    merge,
    union,
    union_parallel,
    union_room,
)

__all__ = ["Envelopes", "MAX_INTERVALS", "COARSE_INTERVALS"]

#: an envelope holds at most this many intervals (past it, ``τ`` doubles)
MAX_INTERVALS = 1 << 17
#: the first envelopes: runs of reachable sums kept whole, at most this many intervals (cheap)
COARSE_INTERVALS = 1 << 16
#: envelopes stored at once: every K-th (K = ceil(sqrt(n))) and the K of the current segment, or all
#: of them when their intervals total at most this many
ALL_INTERVALS = 1 << 22
#: a segment of envelopes whose stored top holds at least this many intervals is rebuilt ahead, on
#: a thread of its own (:meth:`Envelopes.get`), as many at once as numba has threads (none on one) and
#: their arrays fit in this share of the memory this process may still use
AHEAD_INTERVALS = 1 << 12
AHEAD_MEMORY_SHARE = 0.25


def _doubled(tau: int, width: int, cap: int) -> tuple[int, int]:
    """``tau`` and ``width`` after an envelope passed its most intervals: twice each, within ``cap``
    (both ``cap``: one interval)."""
    return min(max(1, 2 * tau), cap), min(2 * width, cap)


class _Buffers:
    """Five arrays (``lo, hi, gain, top, best``) that the rebuilt envelopes of a segment are cut
    from, one after another, and reused by the segments rebuilt after it (:meth:`Envelopes._segment`):
    their pages are written once a solve, not once a segment. ``thread``: the thread rebuilding a
    segment into them ahead (:meth:`Envelopes._prefetch`), None for the caller's."""

    def __init__(self, size: int):
        self.arrays = tuple(np.empty(size, np.int64) for _ in range(5))
        self.thread: threading.Thread | None = None


class Envelopes:
    """The suffixes' envelopes ``E_0 .. E_n`` (the module doc), built once, served in order of
    ``i`` (rising) by :meth:`get` as ``(lo, hi, gain, top, best)``: ``best[q]`` the most ``min(num·hi
    + gain, top)`` of intervals ``0..q``."""

    def __init__(self, ws, ps, cap: int, num: int, den: int, deadline=None, fine: bool = False):
        self.ws, self.cap, self.num, n = ws, cap, num, len(ws)
        self.dg = ps * den - num * ws  # each item's gain, ·den
        self.pd = ps * den  # and its profit, ·den (what it adds to a top)
        self.K = max(1, math.isqrt(max(n - 1, 0)) + 1)
        self.taus = np.zeros(n + 1, np.int64)
        self.widths = np.zeros(n + 1, np.int64)
        self.sizes = np.zeros(n + 1, np.int64)
        zero = np.zeros(1, np.int64)
        env = (zero, zero, zero, zero, zero)
        kept, every, total, tau = {n: env}, {n: env}, 1, 0
        # fine: pieces of one point at first (a gain each), doubling with tau; coarse: runs whole
        width, most = (1, MAX_INTERVALS) if fine else (cap, COARSE_INTERVALS)  # (cap: no limit)
        self.fine = fine
        self.sizes[n] = 1
        self.widths[n] = width  # E_n's tau (0) and width: those E_{n-1}'s union takes
        self.merges = np.zeros(n + 1, np.int64)  # the merges after E_i's union (a rebuild makes them too)
        self.late = False  # the deadline passed while building: nothing else is set
        # each envelope made into one of two sets of arrays from the other; the kept ones copied out
        sets = [tuple(np.empty(union_room(most), np.int64) for _ in range(5)) for _ in range(2)]
        scratch = None  # union_parallel's
        for i in range(n - 1, -1, -1):
            if deadline is not None and i % 64 == 0 and time.perf_counter() > deadline:
                self.late = True
                return
            out, m, item = sets[i & 1], len(env[0]), (int(ws[i]), int(self.dg[i]), int(self.pd[i]))
            if m >= PARALLEL_UNION and numba.get_num_threads() >= UNION_THREADS:
                if scratch is None:
                    scratch = tuple(np.empty(union_room(most), np.int64) for _ in range(4))
                k = union_parallel(*env[:4], m, *item, cap, tau, width, *out[:4], *scratch)
            else:
                k = union(*env[:4], m, *item, cap, tau, width, *out[:4])
            while k > most:
                self.merges[i] += 1
                tau, width = _doubled(tau, width, cap)
                k = merge(*out[:4], k, tau, width, cap)
            best_below(*out[1:4], num, k, out[4])
            env = tuple(a[:k] for a in out)
            self.taus[i], self.widths[i], self.sizes[i] = tau, width, k
            total += k
            if every is not None and total > ALL_INTERVALS:
                every = None
            if every is not None or i % self.K == 0:
                env = tuple(a.copy() for a in env)  # (its set is written again two items on)
                if every is not None:
                    every[i] = env
                if i % self.K == 0:
                    kept[i] = env
        self.tau = tau
        self.all = every is not None
        self.kept = every if self.all else kept
        self.segment: dict[int, tuple] = {}
        self.held: _Buffers | None = None  # the arrays of ``segment``
        # the segments rebuilt ahead: their top -> (the thread, its result, its arrays)
        self.ahead: dict[int, tuple[threading.Thread, dict, _Buffers]] = {}
        self.pool: list[_Buffers] = []  # the segments' arrays: one set a segment held or being rebuilt
        # the tops of the segments with envelopes to rebuild, in a pass's order
        self.tops = [
            t for t in sorted({min(n, t) for t in range(self.K, n + self.K, self.K)}) if self._low(t) < t
        ]
        # the arrays of a segment as built: its envelopes, and room for a union of the largest
        sizes = [self.sizes[self._low(t) : t + 1] for t in self.tops]
        self.room = max((int(a[:-1].sum()) + union_room(int(a.max())) for a in sizes), default=1)
        from gpudp.memory import available_memory

        # the segments rebuilt ahead at most: five int64 arrays of ``room`` each
        self.most_ahead = max(1, int(AHEAD_MEMORY_SHARE * available_memory()) // (40 * self.room))

    def _segment(self, top: int, low: int, bufs: _Buffers) -> dict:
        """``E_k`` for ``k = top − 1`` down to ``low``, rebuilt from the stored ``E_top`` into ``bufs``
        as the build made them (the same arrays: a search keeps the same states whether all were
        stored or not). Each union is written after the envelopes before it, merged in place where
        the build merged, and kept there (views of ``bufs``; arrays twice as large when one would
        not fit, the envelopes before it left in the old ones), by compiled loops that release the
        GIL: a thread may run it beside the search."""
        env, segment, at = self.kept[top], {}, 0
        for k in range(top - 1, low - 1, -1):
            # as the build made E_k: the union at E_{k+1}'s tau and width, then its merges
            tau, width, m = int(self.taus[k + 1]), int(self.widths[k + 1]), len(env[0])
            if at + union_room(m) > len(bufs.arrays[0]):
                bufs.arrays = _Buffers(max(2 * len(bufs.arrays[0]), union_room(m))).arrays
                at = 0
            blo, bhi, bga, btp, bbest = (a[at:] for a in bufs.arrays)
            m = union(*env[:4], m, int(self.ws[k]), int(self.dg[k]), int(self.pd[k]), self.cap, tau, width,
                       blo, bhi, bga, btp)  # fmt: skip
            for _ in range(self.merges[k]):
                tau, width = _doubled(tau, width, self.cap)
                m = merge(blo, bhi, bga, btp, m, tau, width, self.cap)
            best_below(bhi, bga, btp, self.num, m, bbest)
            env = tuple(a[:m] for a in (blo, bhi, bga, btp, bbest))
            segment[k] = env
            at += m
        return segment

    def _buffers(self) -> _Buffers:
        """Arrays for a segment: a set of the pool that neither the segment held, nor a segment
        rebuilt ahead, nor a thread still rebuilding one (left to end on its own) holds, else a new
        one: one set on one thread; on several, the segment held, those rebuilt ahead, and those of
        threads still ending."""
        taken = [bufs for _, _, bufs in self.ahead.values()]
        for bufs in self.pool:
            free = bufs.thread is None or not bufs.thread.is_alive()
            if free and bufs is not self.held and not any(bufs is b for b in taken):
                bufs.thread = None
                return bufs
        self.pool.append(_Buffers(self.room))
        return self.pool[-1]

    def _next(self, top: int) -> list[int]:
        """The segments to rebuild ahead once the search is in the one below ``top``: those after it
        in a pass's order, then the next pass's from the first (up to this one), large enough (their
        stored top holds at least :data:`AHEAD_INTERVALS` intervals), as many as numba has threads
        and :attr:`most_ahead` allows (the search waits on them more than it steps: a thread each,
        not one fewer); none on one thread."""
        threads = numba.get_num_threads()
        most = min(threads, self.most_ahead) if threads > 1 else 0
        if most < 1:
            return []
        k = self.tops.index(top) + 1 if top in self.tops else 0
        after = self.tops[k:] + self.tops[:k]
        return [t for t in after if len(self.kept[t][0]) >= AHEAD_INTERVALS][:most]

    def _prefetch(self, top: int) -> None:
        """Start rebuilding the whole segment below the stored ``E_top`` on a thread."""
        out: dict = {}
        bufs = self._buffers()
        low = self._low(top)
        bufs.thread = threading.Thread(target=lambda: out.update(self._segment(top, low, bufs)))
        bufs.thread.start()
        self.ahead[top] = (bufs.thread, out, bufs)

    def get(self, i: int):
        """``E_i``; ``i`` rises over a search (a segment is rebuilt from the stored envelope above it,
        or taken from the thread that rebuilt it meanwhile: as each segment is reached, the next ones
        are rebuilt ahead, :meth:`_next`, each on a thread of its own, wrapping to the next pass's
        first; its arrays are reused once the search has left it: :class:`_Buffers`)."""
        if i in self.kept:
            return self.kept[i]
        if i not in self.segment:
            top = min(len(self.ws), (i // self.K + 1) * self.K)
            self.segment, self.held = {}, None
            if top in self.ahead:
                thread, out, bufs = self.ahead.pop(top)
                thread.join()
                if i in out:
                    self.segment, self.held, bufs.thread = out, bufs, None
            if not self.segment:
                self.held = self._buffers()
                self.segment = self._segment(top, i, self.held)
            wanted = self._next(top)
            for t in [t for t in self.ahead if t not in wanted]:  # left to end on its own, its arrays
                del self.ahead[t]  # with it
            for t in wanted:
                if t not in self.ahead:
                    self._prefetch(t)
        return self.segment[i]

    def _low(self, top: int) -> int:
        """The least ``i`` rebuilt from the stored ``E_top`` (``E_{i − 1}`` is stored)."""
        return (top - 1) // self.K * self.K + 1

    def bound(self, i: int, slack: int) -> int:
        """The most ``min(num·S + gain, top)`` over the points ``S ≤ slack`` of ``E_i`` (``slack ≥
        0``): ``den`` times a bound on what items ``i..`` add within ``slack``."""
        lo, hi, ga, tp, best = self.get(i)
        q = int(np.searchsorted(lo, slack, side="right")) - 1
        if hi[q] <= slack:
            return int(best[q])
        inside = min(self.num * slack + int(ga[q]), int(tp[q]))
        return max(inside, int(best[q - 1])) if q else inside
