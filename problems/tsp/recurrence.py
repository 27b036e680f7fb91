"""The Held-Karp recurrence on the layered engine: subsets ranked in the combinatorial number system.

With city 0 as the start and the other ``m = n - 1`` cities numbered ``0..m-1`` as *elements*
(element ``e`` is city ``e + 1``), ``D[S, j]`` is the length of the shortest path that leaves city
0, visits every element of ``S`` once and ends at ``j`` in ``S``::

    D[{j}, j] = d(0, j)
    D[S, j]   = min over i in S - {j} of D[S - {j}, i] + d(i, j)
    tour      = min over j of D[all, j] + d(j, 0)

Layer ``t`` holds every ``(S, j)`` with ``|S| = s = t + 1``, and reads layer ``t - 1`` only
(``window = 1``). The ``C(m, s)`` subsets of a layer are ranked in the combinatorial number system
(colex: ``rank(S) = sum_i C(c_i, i + 1)`` over the elements ``c_0 < c_1 < ...``), so a layer is
one dense array of ``C(m, s) * s`` cells. Two layouts of a layer:

``position`` (default)  cell ``p = pos * C(m, s) + rank(S)``, ``j`` the ``pos``-th element of
                        ``S``. Neighbouring cells (a GPU warp) have neighbouring subsets at the same
                        position, whose predecessors ``S - {j}`` have nearby ranks: the warp's reads
                        of the previous layer fall on few memory segments.
``subset``              cell ``p = rank(S) * s + pos``: a cell's ``s - 1`` predecessors are one
                        contiguous run, but a warp reads 32 runs far apart.

Both ran at the same kernel speed on the H100 (docs/tsp.md): the cell's own work is the limit.

A cell decodes ``(S, j)`` and the rank of ``S - {j}`` from its index in one pass over the ``m``
elements (:func:`decode`), then takes the minimum over its ``s - 1`` predecessors, walking them
lowest element first (:func:`lowest_bit`); its decision is the element it came from (5 bits:
``n <= 33``). ``decode``, ``lowest_bit``, ``rank`` and ``unrank`` are ``register_jitable``: the
cell and ``back`` call them inside the compiled kernels (CPU and CUDA alike), and Python (the tests,
the CUDA simulator) calls them as plain functions. The engine keeps two layers of values on the
device and evicts each layer's decisions to the host; ``back`` walks them from the best last city to
rebuild the tour.

Work is about ``n^2 2^n`` and the decisions take ``5 (n - 1) 2^(n - 2)`` bits: ``n`` around 30 is
the practical limit on one GPU. :func:`.sizes.memory_needed` says what an instance needs, and
:func:`.held_karp.solve` refuses, before any kernel runs, an instance that cannot fit.
"""

from __future__ import annotations

import math

import numpy as np
from numba.extending import register_jitable

from gpudp.recurrence import LayeredRecurrence

__all__ = [
    "DECISION_BITS",
    "LAYOUTS",
    "POSITION_MAJOR",
    "HeldKarp",
    "binomial_table",
    "cell_index",
    "decode",
    "lowest_bit",
    "rank",
    "unrank",
]

#: layouts of a layer (the ``layout`` data argument of the cell)
LAYOUTS = {"position": 0, "subset": 1}
POSITION_MAJOR = 0
#: bits of a decision (an element 0..m-1): at most 33 cities
DECISION_BITS = 5


# ------------------------------------------------------------------------------------------------
# Combinatorial number system


def binomial_table(m: int) -> np.ndarray:
    """``B[c, i] = C(c, i)`` for ``0 <= c <= m``, ``0 <= i <= m + 1`` (int64; 0 when ``i > c``)."""
    b = np.zeros((m + 1, m + 2), dtype=np.int64)
    for c in range(m + 1):
        for i in range(c + 1):
            b[c, i] = math.comb(c, i)
    return b


@register_jitable
def rank(mask, binom):
    """The colex rank of the subset ``mask`` (bit ``c`` = element ``c``) among subsets of its size."""
    r = 0
    i = 0
    c = 0
    while mask >> c:
        if (mask >> c) & 1:
            i += 1
            r += binom[c, i]
        c += 1
    return r


@register_jitable
def unrank(r, s, binom):
    """The subset (as a bit mask) of ``s`` elements of ``0..m-1`` whose colex rank is ``r``."""
    m = binom.shape[0] - 1
    mask = 0
    i = s
    for c in range(m - 1, -1, -1):
        if i == 0:
            break
        if binom[c, i] <= r:
            r -= binom[c, i]
            mask |= 1 << c
            i -= 1
    return mask


@register_jitable
def decode(t, p, binom, layout):
    """Cell ``p`` of layer ``t``: ``(mask of S, j, rank of S - {j})``, in one pass over the elements.

    Unranking in colex takes the elements from the largest down: the largest ``c`` with
    ``C(c, i) <= r`` is the ``i``-th smallest element. Removing the element at position ``pos``
    lowers the index of every element above it by one, so ``S - {j}`` ranks as
    ``sum_{i < pos} C(c_i, i + 1) + sum_{i > pos} C(c_i, i)``, summed on the way.
    """
    m = binom.shape[0] - 1
    s = t + 1
    if layout == POSITION_MAJOR:
        ns = binom[m, s]
        pos = p // ns
        r = p - pos * ns
    else:
        r = p // s
        pos = p - r * s
    mask = 0
    j = 0
    r2 = 0
    i = s
    for c in range(m - 1, -1, -1):
        if i == 0:
            break
        b = binom[c, i]
        if b <= r:
            r -= b
            mask |= 1 << c
            i -= 1
            if i == pos:
                j = c
            elif i < pos:
                r2 += b
            else:
                r2 += binom[c, i]
    return mask, j, r2


@register_jitable
def lowest_bit(x):
    """The index of the lowest set bit of ``0 < x < 2**32``, without a branch or a loop: the
    number of bits below it, counted in parallel (SWAR popcount)."""
    y = (x & -x) - 1
    y = y - ((y >> 1) & 0x55555555)
    y = (y & 0x33333333) + ((y >> 2) & 0x33333333)
    y = (y + (y >> 4)) & 0x0F0F0F0F
    return ((y * 0x01010101) & 0xFFFFFFFF) >> 24


def cell_index(mask: int, j: int, binom: np.ndarray, layout: int) -> int:
    """The inverse of :func:`decode`: the index of cell ``(S, j)`` in its layer."""
    s = bin(mask).count("1")
    m = binom.shape[0] - 1
    pos = bin(mask & ((1 << j) - 1)).count("1")
    r = int(rank(mask, binom))
    if layout == POSITION_MAJOR:
        return pos * int(binom[m, s]) + r
    return r * s + pos


# ------------------------------------------------------------------------------------------------
# The recurrence


class HeldKarp(LayeredRecurrence):
    """Held-Karp over subsets ranked in the combinatorial number system (see the module doc).

    ``data() = (binom, dist, layout)``: the binomial table, the distance matrix in ``value_dtype``
    (row = from, column = to) and the layout code. ``value_dtype``: the cells' type (int32, int64 or
    float64; None: the class's, int64), the instance's own (the engine compiles each type once).
    """

    window = 1
    decision_bits = DECISION_BITS
    value_dtype = np.int64
    fill = 0

    def __init__(self, dist: np.ndarray, layout: str = "position", value_dtype=None):
        if value_dtype is not None:
            self.value_dtype = np.dtype(value_dtype).type
        self.dist = np.ascontiguousarray(dist, dtype=self.value_dtype)
        self.m = self.dist.shape[0] - 1
        self.binom = binomial_table(self.m)
        self.layout = LAYOUTS[layout]

    def num_layers(self):
        return self.m

    def layer_size(self, t):
        return math.comb(self.m, t + 1) * (t + 1)

    def data(self):
        return (self.binom, self.dist, self.layout)

    @staticmethod
    def cell(t, p, prev, binom, dist, layout):
        mask, j, r2 = decode(t, p, binom, layout)
        if t == 0:
            return dist[0, j + 1], 0
        s = t + 1
        rest = mask ^ (1 << j)
        if layout == POSITION_MAJOR:
            k2 = r2
            step = binom[binom.shape[0] - 1, s - 1]
        else:
            k2 = r2 * (s - 1)
            step = 1
        # the predecessors i in S - {j}, in increasing order (taken off the mask lowest bit first,
        # the same number of steps in every thread of a warp): the q-th sits at k2 + q * step
        c = lowest_bit(rest)
        rest &= rest - 1
        best = prev[k2] + dist[c + 1, j + 1]
        arg = c
        for _ in range(s - 2):
            c = lowest_bit(rest)
            rest &= rest - 1
            k2 += step
            v = prev[k2] + dist[c + 1, j + 1]
            if v < best:
                best = v
                arg = c
        return best, arg

    @staticmethod
    def back(t, k, d, binom, dist, layout):
        if t == 0:
            return -1, 0
        mask, j, r2 = decode(t, k, binom, layout)
        rest = mask ^ (1 << j)
        q = 0
        for c in range(d):
            q += (rest >> c) & 1
        s = t + 1
        if layout == POSITION_MAJOR:
            return t - 1, q * binom[binom.shape[0] - 1, s - 1] + r2
        return t - 1, r2 * (s - 1) + q


# ------------------------------------------------------------------------------------------------
# Instances
