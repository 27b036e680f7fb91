"""Exact travelling salesman tours by Held-Karp dynamic programming on the layered engine.

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
the practical limit on one GPU. :func:`memory_needed` says what an instance needs, and
:func:`solve` refuses, before any kernel runs, an instance that cannot fit.
"""

from __future__ import annotations

import math
import numbers
import os
import shutil
import tempfile
import time
from dataclasses import dataclass

import numpy as np
from numba.extending import register_jitable

from gpudp.engine import (
    backend_words,
    choose_backend,
    device_memory,
    device_name,
    layered_memory,
    predicted_seconds,
    sweep,
)
from gpudp.errors import InputError, TimeLimitReached
from gpudp.inputs import parse_time_limit
from gpudp.memory import available_memory, default_budget, parse_bytes
from gpudp.progress import Deadline, announce
from gpudp.recurrence import LayeredRecurrence
from gpudp.solution import Solution, Stats, warn_unproven

from . import tsplib

#: layouts of a layer (the ``layout`` data argument of the cell)
LAYOUTS = {"position": 0, "subset": 1}
POSITION_MAJOR = 0
#: bits of a decision (an element 0..m-1): at most 33 cities
DECISION_BITS = 5
MAX_CITIES = (1 << DECISION_BITS) + 1
#: the practical limit quoted in messages: n = 30 needs ~9 GB of device memory and ~5 GB of decisions
PRACTICAL_LIMIT = 30
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
#: real distances: the bound on a tour's partial sums below which float64 additions cannot overflow
FLOAT_LIMIT = 1e300
#: integer distances held in float64 (with infinite entries) are exact up to 2^53
FLOAT_EXACT = 1 << 53
#: memory figures are exact Python integers up to this many cities, from logarithms beyond
EXACT_FIGURES = 10_000
#: the H100's Held-Karp speed (docs/tsp.md), for the time figure of a refusal
H100_TRANSITIONS_PER_SECOND = 72e9


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
    (row = from, column = to) and the layout code. One subclass per value type:
    :func:`recurrence_class`.
    """

    window = 1
    decision_bits = DECISION_BITS
    value_dtype = np.int64
    fill = 0

    def __init__(self, dist: np.ndarray, layout: str = "position"):
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


_CLASSES: dict = {}


def recurrence_class(dtype) -> type[HeldKarp]:
    """The :class:`HeldKarp` subclass whose cells hold ``dtype`` (int32, int64 or float64), made
    once per type (the engine compiles its kernels once per class)."""
    dt = np.dtype(dtype)
    if dt not in _CLASSES:
        _CLASSES[dt] = type(
            f"HeldKarp_{dt.name}", (HeldKarp,), {"value_dtype": dt.type, "__module__": __name__}
        )
    return _CLASSES[dt]


# ------------------------------------------------------------------------------------------------
# Instances


@dataclass
class Instance:
    """A TSP instance: an n x n matrix (int64 or float64; row = from), the cities' labels, a name,
    and coordinates for drawing when the input had them."""

    matrix: np.ndarray
    labels: list
    name: str = ""
    coords: np.ndarray | None = None

    @property
    def n(self) -> int:
        return len(self.labels)

    @property
    def symmetric(self) -> bool:
        return bool(np.array_equal(self.matrix, self.matrix.T))


def from_matrix(d, allow_infinite: bool = False, labels=None, name: str = "") -> Instance:
    """Check a distance matrix (square; numbers; finite off the diagonal unless ``allow_infinite``,
    which admits ``+inf`` for a missing edge). The diagonal is ignored whatever it holds.

    Integers (numpy integer arrays, or Python ints) must lie in int64 off the diagonal; they stay
    exact integers. Reals are float64: NaN and ``-inf`` are refused, ``+inf`` only with
    ``allow_infinite``. Whether the tour lengths fit is :func:`value_dtype`'s check."""
    try:
        arr = np.asarray(d)
    except (TypeError, ValueError, OverflowError) as e:
        raise InputError("distances", f"not a numeric matrix ({e})") from None
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise InputError("distances", f"a distance matrix must be square, got shape {arr.shape}")
    n = arr.shape[0]
    if n == 0:
        raise InputError("distances", "a tour needs at least one city")
    check_size(n, name)  # before anything of size n x n is made
    labels = list(range(n)) if labels is None else list(labels)
    if len(labels) != n:
        raise InputError("labels", f"{len(labels)} labels for {n} cities")
    if arr.dtype == object:
        arr = _python_ints(arr)
    if arr.dtype.kind not in "iuf":
        raise InputError("distances", f"distances must be integers or reals, got dtype {arr.dtype}")
    off = ~np.eye(n, dtype=bool)
    if arr.dtype.kind == "f":
        m = arr.astype(np.float64)
        bad = np.isnan(m) & off
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise InputError("distances", f"NaN distance from {i} to {j} (off the diagonal)")
        bad = np.isneginf(m) & off
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise InputError("distances", f"distance -inf from {i} to {j} (off the diagonal)")
        bad = np.isposinf(m) & off
        if bad.any() and not allow_infinite:
            i, j = np.argwhere(bad)[0]
            raise InputError(
                "distances", f"infinite distance from {i} to {j}; pass allow_infinite=True for missing edges"
            )
    else:
        if arr.dtype == np.uint64 and n > 1 and arr[off].max() > INT64_MAX:
            i, j = np.argwhere((arr > INT64_MAX) & off)[0]
            raise InputError(
                "distances",
                f"distance {int(arr[i, j])} from {i} to {j} is beyond int64 (at most {INT64_MAX})",
            )
        m = arr.astype(np.int64)
    m = m.copy()
    np.fill_diagonal(m, 0)
    return Instance(m, labels, name)


def _python_ints(arr: np.ndarray) -> np.ndarray:
    """An object matrix of Python ints (numpy's answer to ints beyond int64) as int64, or the
    error naming the first entry beyond int64; any other object matrix is returned as it is."""
    n = arr.shape[0]
    out = np.zeros((n, n), dtype=np.int64)
    for i in range(n):
        for j in range(n):
            x = arr[i, j]
            if isinstance(x, bool) or not isinstance(x, numbers.Integral):
                return arr
            if i != j:
                x = int(x)
                if not INT64_MIN <= x <= INT64_MAX:
                    raise InputError(
                        "distances",
                        f"distance {x} from {i} to {j} is beyond int64 ({INT64_MIN} .. {INT64_MAX})",
                    )
                out[i, j] = x
    return out


def from_networkx(g, weight: str = "weight", allow_infinite: bool = False) -> Instance:
    """A complete weighted graph: every ordered pair of distinct nodes needs an edge with a
    ``weight`` attribute (a directed graph gives an asymmetric matrix). A missing edge is an
    :class:`InputError`, or an infinite distance with ``allow_infinite``. Labels are the nodes in
    ``g.nodes`` order; the tour starts at the first.

    A weight is an int (in int64) or a real (not NaN; ``+inf`` only with ``allow_infinite``).
    Integer weights stay exact integers; with missing edges they are held in float64 next to the
    infinite ones, which keeps them exact only while every tour's partial sums stay within 2^53
    (beyond that, an :class:`InputError`)."""
    if g.is_multigraph():
        raise InputError("graph", "multigraphs are not supported: keep one edge per pair of cities")
    nodes = list(g.nodes)
    n = len(nodes)
    check_size(n)
    index = {v: k for k, v in enumerate(nodes)}
    d = np.full((n, n), np.inf)
    ints = np.zeros((n, n), dtype=np.int64)
    all_ints = True
    for u, nbrs in g.adjacency():
        for v, attr in nbrs.items():
            if u == v:
                continue
            if weight not in attr:
                raise InputError("graph", f"edge {u!r}-{v!r} has no {weight!r} attribute")
            w = attr[weight]
            i, j = index[u], index[v]
            if isinstance(w, bool) or not isinstance(w, numbers.Real):
                raise InputError("graph", f"edge {u!r}-{v!r}: {weight} {w!r} is not a number")
            if isinstance(w, numbers.Integral):
                w = int(w)
                if not INT64_MIN <= w <= INT64_MAX:
                    raise InputError(
                        "graph",
                        f"edge {u!r}-{v!r}: {weight} {w} is beyond int64 ({INT64_MIN} .. {INT64_MAX})",
                    )
                ints[i, j] = w
                d[i, j] = float(w)
                continue
            all_ints = False
            w = float(w)
            if math.isnan(w):
                raise InputError("graph", f"edge {u!r}-{v!r}: {weight} is NaN")
            if w == -math.inf:
                raise InputError("graph", f"edge {u!r}-{v!r}: {weight} is -inf")
            if w == math.inf and not allow_infinite:
                raise InputError(
                    "graph", f"edge {u!r}-{v!r}: {weight} is inf; pass allow_infinite=True for missing edges"
                )
            d[i, j] = w
    missing = np.isinf(d) & ~np.eye(n, dtype=bool)
    if missing.any() and not allow_infinite:
        i, j = np.argwhere(missing)[0]
        raise InputError(
            "graph",
            f"no edge from {nodes[i]!r} to {nodes[j]!r}: the graph must be complete "
            "(or pass allow_infinite=True to treat missing edges as infinitely long)",
        )
    if all_ints and not missing.any():
        d = ints
    elif all_ints and n > 1:
        lo, hi = tour_bounds(np.where(missing, 0, ints))
        if max(hi, -lo) > FLOAT_EXACT:
            raise InputError(
                "graph",
                f"integer weights whose tours' partial sums reach {max(hi, -lo)} with missing edges: the "
                "missing edges make the matrix float64, which holds integers exactly only up to 2^53",
            )
    return from_matrix(d, allow_infinite=allow_infinite, labels=nodes, name=g.graph.get("name", ""))


def from_tsplib(path) -> Instance:
    """A TSPLIB file; its size is checked against :func:`check_size` before its matrix is built."""
    head = tsplib.read_header(path)
    check_size(head.dimension, head.name)
    inst = tsplib.read_tsplib(path)
    return from_matrix(inst.matrix(), labels=inst.labels, name=inst.name)


def load(x, weight: str = "weight", allow_infinite: bool = False) -> Instance:
    """An :class:`Instance` from a path to a TSPLIB file, a networkx graph, a
    :class:`~gpudp.problems.tsp.tsplib.TSPLIBInstance`, an :class:`Instance` or a matrix."""
    if isinstance(x, Instance):
        return x
    if isinstance(x, str | os.PathLike):
        return from_tsplib(x)
    if isinstance(x, tsplib.TSPLIBInstance):
        check_size(x.dimension, x.name)
        inst = from_matrix(x.matrix(), labels=x.labels, name=x.name)
        inst.coords = x.coords
        return inst
    if hasattr(x, "adjacency") and hasattr(x, "is_multigraph"):
        return from_networkx(x, weight=weight, allow_infinite=allow_infinite)
    return from_matrix(x, allow_infinite=allow_infinite)


def tour_bounds(matrix: np.ndarray) -> tuple:
    """``(lo, hi)``: bounds on every partial sum the DP forms, and on every tour's length.

    A partial sum is a path out of city 0 whose edges leave distinct cities, so it lies between
    the sum of the negative row minima and the sum of the positive row maxima (off the diagonal).
    Exact Python integers for an integer matrix; floats over the finite entries for a real one.
    """
    n = matrix.shape[0]
    if n < 2:
        return 0, 0
    off = ~np.eye(n, dtype=bool)
    if matrix.dtype.kind == "f":
        ok = off & np.isfinite(matrix)
        rowmax = np.where(ok, matrix, -np.inf).max(axis=1).tolist()
        rowmin = np.where(ok, matrix, np.inf).min(axis=1).tolist()
        return sum(x for x in rowmin if x < 0), sum(x for x in rowmax if x > 0)
    info = np.iinfo(matrix.dtype)
    rowmax = np.where(off, matrix, info.min).max(axis=1).tolist()
    rowmin = np.where(off, matrix, info.max).min(axis=1).tolist()
    return sum(min(int(x), 0) for x in rowmin), sum(max(int(x), 0) for x in rowmax)


def value_dtype(matrix: np.ndarray) -> np.dtype:
    """The cells' value type: int32 when every partial sum of every tour fits in int32, else int64
    when it fits there (:func:`tour_bounds`, exact); float64 for real distances (and for integer
    ones with infinite entries). Integer distances whose tours may leave int64, and real ones whose
    sums may overflow float64, are an :class:`InputError`: a tour length that cannot be held is
    never rounded or wrapped around."""
    lo, hi = tour_bounds(matrix)
    if matrix.dtype.kind == "f":
        if not (-FLOAT_LIMIT <= lo and hi <= FLOAT_LIMIT):
            raise InputError(
                "distances",
                f"real distances too large: a tour's partial lengths range over {lo:.3g} .. {hi:.3g}, "
                f"beyond what float64 adds safely (magnitude {FLOAT_LIMIT:.0e}); scale the distances down",
            )
        return np.dtype(np.float64)
    if INT32_MIN <= lo and hi <= INT32_MAX:
        return np.dtype(np.int32)
    if INT64_MIN <= lo and hi <= INT64_MAX:
        return np.dtype(np.int64)
    raise InputError(
        "distances",
        f"integer distances too large: a tour's partial lengths range over {lo} .. {hi}, beyond int64 "
        f"({INT64_MIN} .. {INT64_MAX}), so tour lengths could not be held exactly; scale the distances down",
    )


# ------------------------------------------------------------------------------------------------
# Memory


def _log10(x: int) -> float:
    """``log10`` of a positive integer of any size (no conversion of the integer to a float)."""
    shift = max(x.bit_length() - 64, 0)
    return math.log10(x >> shift) + shift * math.log10(2)


def _sci(lg: float) -> str:
    """A number given by its ``log10``, as ``1.36e+86`` (or ``10^1.39e+18`` when even the exponent
    is too large for the mantissa to mean anything)."""
    if lg >= 1e12:
        return f"10^{lg:.3g}"
    e = math.floor(lg)
    mant = 10 ** (lg - e)
    if mant >= 9.995:
        mant, e = mant / 10, e + 1
    return f"{mant:.2f}e+{e:02d}"


def _fmt_count(x) -> str:
    """An exact integer (any size) or a ``("log10", value)`` figure, in three digits."""
    if isinstance(x, tuple):
        return _sci(x[1])
    return f"{x:.3g}" if x < 10**15 else _sci(_log10(x))


def _fmt_bytes(x) -> str:
    """Bytes: an exact integer (any size) or a ``("log10", value)`` figure."""
    if isinstance(x, tuple):
        return f"{_sci(x[1])} bytes"
    if x >= 1 << 70:
        return f"{_fmt_count(x)} bytes"
    for unit, k in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if x >= 1 << k:
            return f"{x / (1 << k):.2f} {unit}"
    return f"{x} bytes"


def _fmt_seconds(x) -> str:
    """Seconds: a float or a ``("log10", value)`` figure, in the unit that reads best."""
    lg = x[1] if isinstance(x, tuple) else math.log10(max(x, 1e-9))
    if lg >= 12:
        return f"{_sci(lg - math.log10(365.25 * 86400))} years"
    sec = 10**lg
    for limit, unit, size in ((120, "s", 1), (7200, "minutes", 60), (2 * 86400, "hours", 3600)):
        if sec < limit:
            return f"{sec / size:.2g} {unit}"
    if sec < 3 * 365.25 * 86400:
        return f"{sec / 86400:.3g} days"
    return f"{sec / (365.25 * 86400):.3g} years"


def _seconds(trans: int):
    """The H100's time for ``trans`` transitions, as seconds or a ``("log10", value)`` figure."""
    if trans < 10**200:
        return trans / H100_TRANSITIONS_PER_SECOND
    return ("log10", _log10(trans) - math.log10(H100_TRANSITIONS_PER_SECOND))


def _check_figures_size(n: int):
    if n > EXACT_FIGURES:
        raise InputError(
            "cities",
            f"{n} cities: exact figures are computed up to {EXACT_FIGURES} cities (check_size refuses "
            f"more than {MAX_CITIES} with estimates)",
        )


def _layer_sizes(n: int) -> list[int]:
    """Cells of each layer, ``C(m, s) * s`` for ``s = 1..m`` (``m = n - 1``), exact."""
    m = max(n - 1, 0)
    sizes = []
    c = 1  # C(m, s), updated exactly layer by layer
    for s in range(1, m + 1):
        c = c * (m - s + 1) // s
        sizes.append(c * s)
    return sizes


def _plan_memory(n: int, dtype, backend: str, memory_budget=None):
    """The engine's plan of the sweep's memory (:func:`gpudp.engine.layered_memory`, what
    :meth:`gpudp.engine.Plan.memory` gives the recurrence's plan), from the layer sizes alone, so
    that it is exact at sizes no machine could run."""
    return layered_memory(
        _layer_sizes(n), DECISION_BITS, np.dtype(dtype).itemsize, 1, backend, "plain", memory_budget
    )


def memory_needed(n: int, dtype=np.int32, backend: str = "cuda") -> dict:
    """What Held-Karp on ``n`` cities needs, in bytes (exact Python integers, up to
    :data:`EXACT_FIGURES` cities; an :class:`InputError` beyond).

    ``decisions``: the host store (5-bit planes, whole words per 32 cells of a layer);
    ``values``: the engine's two layers of values (on the device for cuda, in RAM for cpu);
    ``device``: the values plus the two decision slabs the cuda backend alternates between.
    The bytes are the engine's plan of the layered sweep (:func:`gpudp.engine.layered_memory`).
    """
    _check_figures_size(n)
    sizes = _layer_sizes(n)
    need = _plan_memory(n, dtype, backend, 1 << 62)
    return {
        "cities": n,
        "states": sum(sizes),
        "widest_layer": max(sizes, default=1),
        "transitions": transitions(n),
        "decisions": need.decisions,
        "values": need.values,
        "device": need.device,
    }


def transitions(n: int) -> int:
    """States times predecessors, summed over the layers (a first-layer state has one predecessor,
    city 0), plus the ``n - 1`` closing edges: ``m (m - 1) 2^(m - 2) + 2m`` for ``m = n - 1``
    (exact; up to :data:`EXACT_FIGURES` cities)."""
    _check_figures_size(n)
    m = max(n - 1, 0)
    return ((m * (m - 1)) << m >> 2) + 2 * m


def _estimates(n: int, dtype=np.int32) -> dict:
    """The figures of :func:`memory_needed` for any ``n``, in constant time: exact integers up to
    :data:`EXACT_FIGURES` cities, ``("log10", value)`` pairs beyond (from ``m 2^(m-1)`` states,
    ``m (m-1) 2^(m-2)`` transitions, 5/8 of a byte per state and ``lgamma`` for the widest layer)."""
    if n <= EXACT_FIGURES:
        need = memory_needed(n, dtype, "cpu")
        need["seconds"] = _seconds(need["transitions"])
        return need
    m = n - 1
    l2, ln10 = math.log10(2), math.log(10)
    k = (m - 1) // 2
    widest = math.log10(m) + (math.lgamma(m) - math.lgamma(k + 1) - math.lgamma(m - k)) / ln10
    states = math.log10(m) + (m - 1) * l2
    trans = math.log10(m) + math.log10(m - 1) + (m - 2) * l2
    return {
        "cities": n,
        "states": ("log10", states),
        "transitions": ("log10", trans),
        "decisions": ("log10", states + math.log10(5 / 8)),
        "values": ("log10", widest + math.log10(2 * np.dtype(dtype).itemsize)),
        "seconds": ("log10", trans - math.log10(H100_TRANSITIONS_PER_SECOND)),
    }


def _too_big(n: int, name: str, need: dict, why: str) -> InputError:
    what = f"{name} ({n} cities)" if name else f"{n} cities"
    try:  # the GPU's figures need the cuda backend's arithmetic; a refusal must not need CUDA
        practical = memory_needed(PRACTICAL_LIMIT, backend="cuda")
        gpu = f", {_fmt_bytes(practical['device'])} of GPU memory"
    except ImportError:
        practical, gpu = memory_needed(PRACTICAL_LIMIT, backend="cpu"), ""
    return InputError(
        "cities",
        f"{what}: Held-Karp needs {_fmt_count(need['states'])} states, {_fmt_count(need['transitions'])} "
        f"transitions (about {_fmt_seconds(need['seconds'])} at the H100's "
        f"{H100_TRANSITIONS_PER_SECOND / 1e9:.0f} G transitions/s), {_fmt_bytes(need['decisions'])} of "
        f"decisions and {_fmt_bytes(need['values'])} for two layers of values; {why}. "
        f"n ≈ {PRACTICAL_LIMIT} is the practical limit of exact Held-Karp on one GPU "
        f"({PRACTICAL_LIMIT} cities: {_fmt_bytes(practical['decisions'])} of decisions{gpu})",
    )


def check_size(n: int, name: str = ""):
    """Refuse sizes that no computer can run (decisions of more than 5 bits: n > 33), in constant
    time whatever ``n`` (the figures of the message are estimates beyond :data:`EXACT_FIGURES`)."""
    if n > MAX_CITIES:
        raise _too_big(
            n,
            name,
            _estimates(n),
            f"this solver takes at most {MAX_CITIES} cities ({DECISION_BITS}-bit decisions)",
        )


def check_memory(n: int, dtype, backend: str, memory_budget=None, name: str = "") -> dict:
    """Refuse, before any kernel runs, an instance whose memory cannot fit here; return the figures.

    Host memory is what :func:`gpudp.memory.available_memory` says this process may still use
    (free RAM, and the cgroup's and ``ulimit``'s limits); ``memory_budget`` (bytes, or a text like
    ``8G``; ``0`` keeps the decisions on disk) is checked by :func:`gpudp.memory.parse_bytes`."""
    check_size(n, name)
    budget = default_budget() if memory_budget is None else parse_bytes(memory_budget, "memory_budget")
    need = memory_needed(n, dtype, backend)
    need["seconds"] = _seconds(need["transitions"])
    plan = _plan_memory(n, dtype, backend, budget)  # the store's place under this budget, the host's share
    ram = available_memory()
    on_disk = plan.spill
    if on_disk:
        where = os.environ.get("GPUDP_SPILL_DIR") or tempfile.gettempdir()
        try:
            free = shutil.disk_usage(where).free
        except OSError as e:
            raise InputError("memory_budget", f"cannot see the free disk in {where}: {e}") from None
        if plan.disk > free:
            raise _too_big(
                n,
                name,
                need,
                f"the decisions are over the memory budget ({_fmt_bytes(budget)}) and the free disk "
                f"in {where} ({_fmt_bytes(free)})",
            )
    # as the engine plans it: the two layers of values (in RAM on the cpu backend, on the GPU on
    # cuda), staging, the result's copy, and the decisions unless they spill
    host = plan.host_total
    if host > ram:
        raise _too_big(
            n,
            name,
            need,
            f"that is {_fmt_bytes(host)} of host memory, and this process may use {_fmt_bytes(ram)} "
            "(free RAM, cgroup and ulimit limits counted)",
        )
    info = device_memory(backend)
    if info is not None:
        free_dev = info[0]
        if plan.device > free_dev:
            raise _too_big(
                n,
                name,
                need,
                f"the GPU needs {_fmt_bytes(plan.device)} and has {_fmt_bytes(free_dev)} free",
            )
    need["spills_to_disk"] = on_disk
    return need


# ------------------------------------------------------------------------------------------------
# Solving


def solve(
    instance,
    backend: str = "auto",
    *,
    weight: str = "weight",
    allow_infinite: bool = False,
    memory_budget=None,
    progress=None,
    layout: str = "position",
    time_limit=None,
) -> Solution:
    """A shortest tour through every city, by Held-Karp: a checked :class:`gpudp.Solution`.

    ``instance``: a distance matrix (numpy or nested lists; symmetric or not; row = from), a
    networkx graph (complete, with ``weight`` on every edge; directed = asymmetric), a path to a
    TSPLIB file (TSP or ATSP), or an :class:`Instance`. ``allow_infinite`` admits ``inf`` matrix
    entries and missing graph edges. ``value`` is the tour's length, ``solution`` the tour as city
    labels starting at the first city (matrix: 0..n-1; TSPLIB: 1..n; graph: its nodes), without
    the return to it. ``details`` has ``length``, ``tour``, ``tour_index`` (0-based) and the
    memory figures; ``stats.extra["transitions"]`` counts the DP's work.

    ``time_limit``: seconds after which the sweep stops (between chunks of layers); the solution is
    then not optimal (``optimal`` False, ``details["stopped"] == "time"``): ``value`` and ``solution``
    are a heuristic tour (nearest neighbour from each city, then 2-opt), checked (its length a
    proven upper bound), and
    ``details["lower_bound"]`` the larger of the sums of each city's shortest edge out and in (a tour
    leaves and enters every city once). A solve predicted to take over a minute says so on stderr
    first (unless ``progress=False``).
    """
    if layout not in LAYOUTS:
        raise InputError("layout", f"one of {', '.join(LAYOUTS)}, got {layout!r}")
    t_start = time.perf_counter()
    time_limit = parse_time_limit(time_limit)
    if memory_budget is not None:
        memory_budget = parse_bytes(memory_budget, "memory_budget")
    inst = load(instance, weight=weight, allow_infinite=allow_infinite)
    n, d = inst.n, inst.matrix
    backend, why = choose_backend(backend, work=transitions(n) if n <= EXACT_FIGURES else None)
    dtype = value_dtype(d)
    need = check_memory(n, dtype, backend, memory_budget, inst.name)
    work = f"tsp {n} cities = {need['transitions']:.3g} transitions"
    seconds = predicted_seconds(need["transitions"], backend, H100_TRANSITIONS_PER_SECOND)
    announce(work, seconds, backend_words(backend), time_limit, progress)
    stopped = None
    if n <= 1:
        stats = Stats(backend=backend, device=device_name(backend))
        length, tour = d.dtype.type(0), [0]
    else:
        m = n - 1
        rec = recurrence_class(dtype)(d, layout)
        try:
            result = sweep(
                rec,
                backend=backend,
                memory_budget=memory_budget,
                progress=progress,
                time_limit=Deadline.left_of(time_limit, t_start),
            )
        except TimeLimitReached as stop:
            stop.limit = time_limit  # the caller's, not what was left of it for the sweep
            stopped = stop
            stats = Stats(backend=backend, device=device_name(backend), cells=stop.done)
            stats.seconds = time.perf_counter() - t_start
            tour = heuristic_tour(d)
            length = d.dtype.type(tour_length(d, tour))
        else:
            stats, length, tour = _shortest_tour(result, d, m)
    value = length.item()
    details = {}
    if stopped is not None:
        lower = shortest_edges_bound(d)
        details = {
            "stopped": "time",
            "message": f"{stopped}: a heuristic tour (an upper bound), not proven optimal",
            "lower_bound": lower,
            "upper_bound": value,
        }
    stats.extra["transitions"] = need["transitions"]
    stats.extra["backend_choice"] = why
    stats.extra["layout"] = layout
    stats.extra["solve_seconds"] = time.perf_counter() - t_start
    run_s = stats.seconds - stats.extra.get("compile_seconds", 0.0)
    if run_s > 0:  # the sweep without compilation
        stats.extra["transitions_per_second"] = need["transitions"] / run_s
    sol = Solution(
        problem="tsp",
        value=value,
        solution=[inst.labels[i] for i in tour],
        stats=stats,
        details={
            "length": value,
            "tour": [_plain(inst.labels[i]) for i in tour],
            "tour_index": tour,
            "cities": n,
            "name": inst.name,
            "symmetric": inst.symmetric,
            "value_dtype": np.dtype(dtype).name,
            "memory": {k: need[k] for k in ("decisions", "values", "device", "spills_to_disk")},
            **details,
        },
        optimal=stopped is None,
        _checker=_checker(inst),
    )
    sol.check()
    return sol


def _shortest_tour(result, d: np.ndarray, m: int):
    """The swept DP's ``(stats, length, tour)``: the best last layer's total, walked back."""
    try:
        stats = result.stats
        totals = result.last_layer.astype(d.dtype) + d[1:, 0]
        jbest = int(np.argmin(totals))
        length = totals[jbest]
        if not np.isfinite(length):
            raise InputError("distances", "no tour of finite length exists: too many edges are missing")
        path = result.traceback((m - 1, jbest))
    finally:
        result.close()
    if len(path) != m:
        raise AssertionError(f"the traceback visited {len(path)} layers, not {m}")
    ends = [jbest] + [int(x) for x in path[: m - 1, 2]]  # elements from the last one backwards
    return stats, length, [0] + [e + 1 for e in reversed(ends)]


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


def _plain(label):
    return label.item() if hasattr(label, "item") else label


def tour_length(matrix: np.ndarray, tour_index) -> int | float:
    """The length of the closed tour ``tour_index`` (0-based cities) under ``matrix``: an exact
    Python int for an integer matrix; for a real one the float64 sum taken edge by edge from the
    tour's first city, the order in which the DP adds them (so the two agree to the last bit)."""
    t = [int(x) for x in tour_index]
    total = matrix.dtype.type(0).item()
    if len(t) < 2:
        return total
    for a, b in zip(t, t[1:] + t[:1], strict=True):
        total += matrix[a, b].item()
    return total


def _checker(inst: Instance):
    def check(sol: Solution):
        tour = list(sol.details["tour_index"])
        if sorted(tour) != list(range(inst.n)):
            return "the tour is not a permutation of the cities"
        if tour[0] != 0:
            return "the tour does not start at the first city"
        if list(sol.solution) != [inst.labels[i] for i in tour]:
            return "the tour's labels do not match its cities"
        length = tour_length(inst.matrix, tour)
        if inst.matrix.dtype.kind == "f":
            ok = length == sol.value or math.isclose(length, sol.value, rel_tol=1e-12, abs_tol=0.0)
        else:
            ok = length == sol.value
        if not ok:
            return f"the tour's length is {length}, not the reported {sol.value}"
        lower, upper = sol.details.get("lower_bound"), sol.details.get("upper_bound")
        if sol.details.get("stopped") and not lower <= sol.value == upper:
            return f"bounds {lower} .. {upper} do not hold the tour"
        return None

    return check


# ------------------------------------------------------------------------------------------------
# CLI


def summary(sol: Solution) -> str:
    st = sol.stats
    d = sol.details
    what = f"{d['name']}: " if d.get("name") else ""
    kind = "" if d["symmetric"] else " (asymmetric)"
    tour = " ".join(str(x) for x in d["tour"])
    lines = [
        f"{what}tour length {sol.value} through {d['cities']} cities{kind} (optimal, checked)",
        f"tour: {tour}",
    ]
    if d.get("stopped"):  # a time limit: bounds, not the optimum
        lines[0] = (
            f"{what}shortest tour through {d['cities']} cities{kind}: between {d['lower_bound']} and "
            f"{d['upper_bound']} (not optimal: {d['message']}); the tour of length {sol.value} is checked"
        )
        return "\n".join(lines)
    if st.seconds > 0:
        compile_s = st.extra.get("compile_seconds", 0.0)
        compiling = f" ({compile_s:.2f} s of it compiling)" if compile_s > 0.05 else ""
        rate = st.extra.get("transitions_per_second", 0.0)
        lines.append(
            f"{st.backend} on {st.device}: {st.seconds:.3f} s{compiling}, {rate / 1e9:.2f} G transitions/s, "
            f"{st.bytes_evicted / 2**20:.1f} MiB of decisions"
            + (" (spilled to disk)" if st.spilled_to_disk else "")
        )
    return "\n".join(lines)


def cli_arguments(p):
    p.add_argument("file", help="TSPLIB file (TSP or ATSP; EXPLICIT, EUC_2D, CEIL_2D, GEO, ATT, ...)")
    p.add_argument(
        "--memory-budget",
        default=None,
        help="host bytes for the decision store before it spills to disk (e.g. 8G)",
    )
    p.add_argument(
        "--time-limit",
        default=None,
        help="stop after this many seconds with proven bounds (a heuristic tour and the "
        "shortest edges' sum), exit 1",
    )


def cli_solve(args) -> Solution:
    time_limit = parse_time_limit(args.time_limit, "--time-limit")
    sol = solve(args.file, backend=args.backend, memory_budget=args.memory_budget, time_limit=time_limit)
    warn_unproven(sol)
    return sol
