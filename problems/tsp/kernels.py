"""The Held-Karp batch's per-instance steps, shared by the CPU kernel (:mod:`.batch`) and the CUDA
kernel (:mod:`.cuda`): ``register_jitable`` functions, compiled into either.

An instance of ``n`` cities (``m = n - 1`` elements) is swept layer by layer exactly as the single
solve's recurrence does it (:class:`~.recurrence.HeldKarp`, ``position`` layout): layer ``t`` holds
the ``C(m, t + 1) * (t + 1)`` cells ``(S, j)`` with ``|S| = t + 1``, each computed by
:meth:`HeldKarp.cell <.recurrence.HeldKarp.cell>` from the previous layer (the same predecessors in
the same order, ties to the lowest element: the same tour as :func:`~.held_karp.solve`). Two layers
of values alternate in one buffer of ``2 * width`` values (``width`` the widest layer); every
layer's decisions (the element a path came from, one byte a cell) stay, at ``poff[t]`` in the
instance's decision array, for the walk back (:func:`close`, by
:meth:`HeldKarp.back <.recurrence.HeldKarp.back>`).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba.extending import register_jitable

from .recurrence import POSITION_MAJOR, HeldKarp, binomial_table, decode

__all__ = ["layer", "close", "geometry"]

_cell = register_jitable(HeldKarp.cell)
_back = register_jitable(HeldKarp.back)


@register_jitable
def layer(t, first, step, buf, width, par, poff, binom, d):
    """Cells ``first, first + step, ...`` of layer ``t`` of the instance whose distances are ``d``:
    values into half ``t & 1`` of ``buf`` (read from the other half), decisions into
    ``par[poff[t]:]``."""
    m = binom.shape[0] - 1
    size = binom[m, t + 1] * (t + 1)
    cur = (t & 1) * width
    prev = buf[width - cur : 2 * width - cur]
    for p in range(first, size, step):
        v, a = _cell(t, p, prev, binom, d, POSITION_MAJOR)
        buf[cur + p] = v
        par[poff[t] + p] = a


@register_jitable
def close(buf, width, par, poff, binom, d, tour):
    """After the last layer: the best last city (the lowest of equals), the tour walked back from it
    into ``tour`` (``tour[0] = 0``, then the cities in order); returns the tour's length."""
    m = binom.shape[0] - 1
    last = ((m - 1) & 1) * width
    best = buf[last] + d[1, 0]
    jb = 0
    for j in range(1, m):  # the last layer is the full set: cell j ends at element j
        v = buf[last + j] + d[j + 1, 0]
        if v < best:
            best = v
            jb = j
    tour[0] = 0
    t = m - 1
    p = jb
    while t >= 0:
        tour[t + 1] = decode(t, p, binom, POSITION_MAJOR)[1] + 1
        t, p = _back(t, p, par[poff[t] + p], binom, d, POSITION_MAJOR)
    return best


@functools.cache
def geometry(n: int) -> tuple[np.ndarray, np.ndarray, int]:
    """``(binom, poff, width)`` for ``n >= 2`` cities: the binomial table of ``m = n - 1``, the
    offsets of each layer's decisions (``poff[m]`` cells in all, ``m 2^(m-1)``) and the widest
    layer's cells."""
    m = n - 1
    sizes = [math.comb(m, s) * s for s in range(1, m + 1)]
    poff = np.zeros(m + 1, np.int64)
    np.cumsum(sizes, out=poff[1:])
    return binomial_table(m), poff, max(sizes)
