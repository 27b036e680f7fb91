"""The Held-Karp batch kernel on the CPU (numba, an instance a ``prange`` iteration): the ``tsp.batch``
family's lowering (:mod:`gpudp.lowering`) that :func:`gpudp.problems.tsp.batch.solve_many` launches;
its GPU twin is :mod:`.cuda`."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from numba import prange

from gpudp.jit import njit

__all__ = ["CPU_CHUNK", "Computed", "launch", "tours_of"]

#: instances a CPU kernel call takes (the progress bar moves between calls)
CPU_CHUNK = 4096


#: the index of a power of two below 2^36 from its remainder mod 37 (all distinct)
_LOW = np.zeros(37, np.int64)
_LOW[[(1 << b) % 37 for b in range(36)]] = np.arange(36)


@njit(parallel=True, cache=True)
def tours_of(D, values, tours):
    """Held-Karp of every instance of ``D`` (``count x n x n``, n >= 2), one ``prange`` iteration
    each, over bit masks: ``f[S * m + j]`` for the elements ``S`` ending at ``j``, predecessors in
    increasing order, ties to the lowest (the single solve's, and the GPU's, choices)."""
    m = D.shape[1] - 1
    full = (1 << m) - 1
    for k in prange(D.shape[0]):
        d = D[k]
        f = np.empty((full + 1) * m, D.dtype)
        par = np.empty((full + 1) * m, np.int8)
        for j in range(m):
            f[(1 << j) * m + j] = d[0, j + 1]
        for S in range(1, full + 1):
            if S & (S - 1) == 0:
                continue  # one element: the first layer, above
            js = S
            while js:
                j = _LOW[(js & -js) % 37]
                js &= js - 1
                rest = S ^ (1 << j)
                base = rest * m
                i = _LOW[(rest & -rest) % 37]
                best, arg = f[base + i] + d[i + 1, j + 1], i
                r = rest & (rest - 1)
                while r:  # the other predecessors, in increasing order
                    i = _LOW[(r & -r) % 37]
                    r &= r - 1
                    v = f[base + i] + d[i + 1, j + 1]
                    if v < best:
                        best, arg = v, i
                f[S * m + j], par[S * m + j] = best, arg
        best, jb = f[full * m] + d[1, 0], 0
        for j in range(1, m):
            v = f[full * m + j] + d[j + 1, 0]
            if v < best:
                best, jb = v, j
        values[k] = best
        tour, S, j = tours[k], full, jb
        tour[0] = 0
        for pos in range(m, 0, -1):
            tour[pos] = j + 1
            i = par[S * m + j]
            S ^= 1 << j
            j = i


class Computed:
    """A batch computed on the host when it was launched (nothing runs on meanwhile): :meth:`finish`
    gives it as a GPU launch's ``finish`` does; no figures (``stats.extra``) beside the time."""

    def __init__(self, results: list, seconds: float):
        self.results, self.seconds = results, seconds
        self.figures: dict = {}

    def finish(self) -> tuple[list, float]:
        """``([(values, tours) a group], kernel seconds)``."""
        return self.results, self.seconds


def launch(groups, tick: Callable) -> Computed:
    """The Held-Karp of every instance of ``groups`` (:class:`gpudp.problems.tsp.batch.Group`), now,
    :data:`CPU_CHUNK` instances a kernel call, ``tick(k)`` after each call of ``k``."""
    t = time.perf_counter()
    results = []
    for g in groups:
        values = np.zeros(len(g), g.D.dtype)
        route = np.zeros((len(g), g.n), np.int8)
        for a in range(0, len(g), CPU_CHUNK):
            b = min(a + CPU_CHUNK, len(g))
            tours_of(g.D[a:b], values[a:b], route[a:b])
            tick(b - a)
        results.append((values, route))
    return Computed(results, time.perf_counter() - t)
