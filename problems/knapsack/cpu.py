"""The knapsack batch kernel on the CPU (numba, an instance a ``prange`` iteration): the
``knapsack.batch`` family's lowering (:mod:`gpudp.lowering`) that
:func:`gpudp.problems.knapsack.batch.solve_many` launches; its GPU twin is :mod:`.cuda`."""

from __future__ import annotations

import time

import numpy as np
from numba import prange

from gpudp.jit import njit

__all__ = ["Computed", "knapsacks", "launch_batch"]


@njit(parallel=True, cache=True)
def knapsacks(p, w, off, caps, values, x):
    """The DP and the walk back of every instance (items ``p[off[k]:off[k + 1]]``, ``w[...]``,
    capacity ``caps[k]``), one ``prange`` iteration each, int64 values: the optimum into
    ``values[k]``, the 0/1 vector into ``x[off[k]:off[k + 1]]`` (zeros on entry)."""
    for k in prange(len(caps)):
        a, b, cap = off[k], off[k + 1], caps[k]
        n = b - a
        tot = 0  # the weight of the items that can be taken
        for i in range(a, b):
            if p[i] > 0 and w[i] <= cap:
                tot += w[i]
        f = np.zeros(cap + 1, np.int64)
        dec = np.zeros((max(n, 1), (cap + 64) // 64), np.uint64)
        s = 0
        for i in range(n):
            wi, pi = w[a + i], p[a + i]
            if pi <= 0 or wi > cap:
                continue
            sp = s
            s += wi
            hi = min(cap, s)  # f is constant above the weight so far: f(c) = f(min(c, s))
            lo = max(0, hi - (tot - s))  # the walk back from cap never goes below
            for c in range(hi, max(sp, lo - 1), -1):  # above sp: f(c) was f(sp)
                v = f[sp]
                if c >= wi and f[c - wi] + pi > v:
                    v = f[c - wi] + pi
                    dec[i, c >> 6] |= np.uint64(1) << np.uint64(c & 63)
                f[c] = v
            for c in range(min(sp, hi), max(lo, wi) - 1, -1):
                v = f[c - wi] + pi
                if v > f[c]:
                    f[c] = v
                    dec[i, c >> 6] |= np.uint64(1) << np.uint64(c & 63)
        values[k] = f[min(cap, tot)]
        c = cap
        for i in range(n - 1, -1, -1):
            wi = w[a + i]
            if p[a + i] <= 0 or wi > cap:
                continue
            c = min(c, s)
            if (dec[i, c >> 6] >> np.uint64(c & 63)) & np.uint64(1):
                x[a + i] = 1
                c -= wi
            s -= wi


class Computed:
    """A batch computed on the host when it was launched (nothing runs on meanwhile): :meth:`finish`
    gives it as a GPU launch's does; none refused, no figures beside the time."""

    def __init__(self, values: np.ndarray, x: np.ndarray, seconds: float):
        self.values, self.x, self.seconds = values, x, seconds
        self.refused = np.zeros(0, np.int64)
        self.figures: dict = {}
        self.host_seconds: dict = {}

    def finish(self) -> tuple[np.ndarray, np.ndarray, float]:
        """``(values, x, kernel seconds)``."""
        return self.values, self.x, self.seconds


def launch_batch(pack) -> Computed:
    """Every instance of ``pack`` (the batch's packed instances: ``p``, ``w``, ``off``, ``caps``)
    solved now by :func:`knapsacks`."""
    t = time.perf_counter()
    values = np.zeros(len(pack.caps), np.int64)
    x = np.zeros(len(pack.p), np.int8)
    knapsacks(pack.p, pack.w, pack.off, pack.caps, values, x)
    return Computed(values, x, time.perf_counter() - t)
