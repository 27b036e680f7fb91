"""The bounds a Held-Karp solve stopped by its time limit returns: a short tour found fast (its
length an upper bound) and the shortest edges' sum (a lower bound)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["heuristic_tour", "shortest_edges_bound"]


def heuristic_tour(matrix: np.ndarray) -> list[int]:
    """A short tour, fast, from city 0: the best nearest-neighbour tour over every start city, then
    improved by reversing segments (2-opt, lengths recomputed whole, so asymmetric matrices too)
    while that shortens it. Its length bounds the shortest tour from above; ``O(n^3)`` a pass."""
    n = matrix.shape[0]
    d = matrix.astype(np.float64)

    def length(t):
        return d[t, np.roll(t, -1)].sum()

    best = min((_nearest_neighbour(d, s) for s in range(n)), key=length)
    improved = True
    while improved:
        improved = False
        for i in range(1, n - 1):
            for j in range(i + 1, n):
                cand = np.concatenate([best[:i], best[i : j + 1][::-1], best[j + 1 :]])
                if length(cand) < length(best):
                    best, improved = cand, True
    k = int(np.flatnonzero(best == 0)[0])
    return [int(c) for c in np.roll(best, -k)]


def _nearest_neighbour(d: np.ndarray, start: int) -> np.ndarray:
    """The tour from ``start`` that goes each time to the nearest city not yet visited."""
    n = d.shape[0]
    tour, seen = [start], np.zeros(n, bool)
    seen[start] = True
    for _ in range(n - 1):
        left = np.flatnonzero(~seen)
        nxt = int(left[np.argmin(d[tour[-1], left])])
        tour.append(nxt)
        seen[nxt] = True
    return np.array(tour)


def shortest_edges_bound(matrix: np.ndarray) -> int | float:
    """A lower bound on every tour's length: a tour leaves each city once and enters each once, so it
    is at least the sum over cities of the shortest edge out, and of the shortest edge in (the larger
    of the two; off the diagonal; exact for integers)."""
    n = matrix.shape[0]
    if n < 2:
        return matrix.dtype.type(0).item()
    masked = np.where(np.eye(n, dtype=bool), np.inf, matrix.astype(np.float64))
    out, into = masked.argmin(axis=1), masked.argmin(axis=0)
    rows = np.arange(n)
    if matrix.dtype.kind == "f":
        return max(math.fsum(matrix[rows, out].tolist()), math.fsum(matrix[into, rows].tolist()))
    return max(sum(int(x) for x in matrix[rows, out]), sum(int(x) for x in matrix[into, rows]))
