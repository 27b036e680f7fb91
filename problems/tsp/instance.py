"""TSP instances: a distance matrix read from a matrix, a networkx graph or a TSPLIB file and
checked (square, numbers, int64 or float64), the cells' value type that holds every tour's partial
sums exactly (:func:`value_dtype`), and a tour's length (:func:`tour_length`)."""

from __future__ import annotations

import math
import numbers
import os
from dataclasses import dataclass

import numpy as np

from gpudp.errors import InputError
from gpudp.inputs import exact_in_float

from . import tsplib
from .sizes import check_size

__all__ = [
    "FLOAT_EXACT",
    "FLOAT_LIMIT",
    "Instance",
    "from_matrix",
    "from_networkx",
    "from_tsplib",
    "load",
    "tour_bounds",
    "tour_length",
    "value_dtype",
]

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
#: real distances: the bound on a tour's partial sums below which float64 additions cannot overflow
FLOAT_LIMIT = 1e300
#: integer distances held in float64 (with infinite entries) are exact up to 2^53
FLOAT_EXACT = 1 << 53


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
    ``allow_infinite``; an integer of a nested matrix that also holds reals must be one float64
    holds exactly (2^53 + 1 is refused, not rounded). Whether the tour lengths fit is
    :func:`value_dtype`'s check."""
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
    if arr.dtype.kind == "f" and not isinstance(d, np.ndarray) and (np.abs(arr) >= FLOAT_EXACT).any():
        _floats_hold_ints(d, n)  # an integer float64 rounds is 2^53 or more there: only then looked for
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


def _floats_hold_ints(d, n: int) -> None:
    """Integers of a nested matrix that numpy made float64 because reals sit beside them: an
    :class:`InputError` naming the first one off the diagonal that float64 does not hold exactly
    (it would be rounded silently, and the tour lengths with it)."""
    cells = np.asarray(d, dtype=object)
    for i in range(n):
        for j in range(n):
            x = cells[i, j]
            if i != j and isinstance(x, numbers.Integral) and not exact_in_float(int(x)):
                raise InputError(
                    "distances",
                    f"distance {int(x)} from {i} to {j} is an integer that float64 does not hold "
                    "exactly (above 2^53), and the matrix also holds reals: give every distance as "
                    "an integer, or round it",
                )


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

    A weight is an int (in int64) or a real (not NaN; ``+inf`` only with ``allow_infinite``); beside
    reals, an int must be one float64 holds exactly (else an :class:`InputError`, never rounded).
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
    inexact = None  # the first integer weight that float64 does not hold: (u, v, weight)
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
                if inexact is None and not exact_in_float(w):
                    inexact = (u, v, w)
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
    if not all_ints and inexact is not None:
        u, v, w = inexact
        raise InputError(
            "graph",
            f"edge {u!r}-{v!r}: {weight} {w} is an integer that float64 does not hold exactly (above "
            "2^53), and other weights are reals: give every weight as an integer, or round it",
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
    :class:`~gpudp.problems.tsp.tsplib.TSPLIBInstance`, an :class:`Instance` or a matrix.

    An :class:`Instance` may have been built by hand: its matrix and labels are checked again as
    :func:`from_matrix` checks them (``+inf`` entries admitted, as it may have been made with
    ``allow_infinite``), so that NaN, ``-inf``, a matrix that is not square or labels of another
    count are the same :class:`InputError` as anywhere else, not a wrong message or a crash."""
    if isinstance(x, Instance):
        inst = from_matrix(x.matrix, allow_infinite=True, labels=x.labels, name=x.name)
        inst.coords = x.coords
        return inst
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
