"""From a declared dependency window to an evaluation order.

For a grid with constant offsets, a *linear wavefront* ``t = a*i + b*j`` is a valid order when
every dependency lies on an earlier wavefront: ``a*di + b*dj < 0`` for every offset ``(di, dj)``.
Such ``(a, b)`` exists exactly when the offsets lie in an open half-plane; otherwise some cell
depends on itself through a chain of offsets and no order exists.

Among valid ``(a, b)`` we take the one with the fewest wavefronts kept alive (the window) and then
the smallest coefficients: offsets that all go back a row give rows (``a=1, b=0``), a cell that
reads its left and upper neighbours gives anti-diagonals (``a=b=1``), and so on.

Windows inside ``{(-1, 0), (0, -1), (-1, -1)}`` (alignment, edit distance, DTW, ...) additionally
run *tiled*: tiles of the grid are ordered by tile anti-diagonal and each tile is swept by one
thread block (CUDA) or one core (CPU), which is what makes them fast.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from .errors import ScheduleError

UNIT_MONOTONE = frozenset({(-1, 0), (0, -1), (-1, -1)})


def check_offsets(offsets) -> tuple[tuple[int, int], ...]:
    """``offsets`` as a tuple of pairs of ints, or a :class:`ScheduleError` saying what is wrong with
    them. Offsets that are a tuple of tuples (hashable) are checked once per value in a process (a
    grid's are checked a few times every sweep)."""
    try:
        hash(offsets)
    except TypeError:  # a list, an array: checked each time
        return _check_offsets(offsets)
    return _checked_offsets(offsets)


@functools.lru_cache(maxsize=1024)
def _checked_offsets(offsets) -> tuple[tuple[int, int], ...]:
    """:func:`_check_offsets` of a hashable value (equal values check alike; an error is not kept)."""
    return _check_offsets(offsets)


def _check_offsets(offsets) -> tuple[tuple[int, int], ...]:
    try:
        offs = tuple((int(di), int(dj)) for di, dj in offsets)
    except (TypeError, ValueError) as e:
        raise ScheduleError(f"offsets must be pairs of integers, got {offsets!r}") from e
    if any((di, dj) != (odi, odj) for (di, dj), (odi, odj) in zip(offs, offsets, strict=True)):
        raise ScheduleError(f"offsets must be integers, got {offsets!r}")
    if not offs:
        raise ScheduleError(
            "a grid recurrence needs at least one dependency offset: the offsets give the sweep its "
            "order (a line whose cell reads the whole line with reads_line = True still declares "
            "((0, -1),), its left neighbour, which the cell receives and may ignore)"
        )
    if (0, 0) in offs:
        raise ScheduleError("offset (0, 0): a cell cannot depend on itself")
    if len(set(offs)) != len(offs):
        raise ScheduleError(f"duplicate offsets in {offs}")
    return offs


@dataclass(frozen=True)
class Schedule:
    """A linear wavefront order ``t = a*i + b*j`` for a grid of ``rows x cols``."""

    offsets: tuple[tuple[int, int], ...]
    a: int
    b: int
    #: how many earlier wavefronts a cell reads at most (values kept alive)
    window: int
    #: whether the tiled fast path applies
    tiled: bool
    rows: int = 0
    cols: int = 0

    @property
    def by_row_index(self) -> bool:
        """Cells of a wavefront are told apart by their row ``i`` (else by their column): by the row
        where the order runs along rows alone (``a == 0``), by the column where it runs down columns
        (``b == 0``), and otherwise by the shorter side, since a wavefront buffer holds a slot for
        each (a band of 129 columns by 20,000 rows, ``2i + j``: 129 slots a wavefront, not 20,000)."""
        if self.a == 0 or self.b == 0:
            return self.b != 0
        return self.rows <= self.cols

    @property
    def key(self) -> tuple:
        """What a kernel compiled for this order depends on: the offsets, ``a``, ``b`` and how a
        wavefront's cells are told apart (not the grid's size otherwise)."""
        return self.offsets, self.a, self.b, self.by_row_index

    def wavefront(self, i: int, j: int) -> int:
        """The wavefront number of cell (i, j), counted from 0."""
        return self.a * i + self.b * j - self.t_min

    @property
    def t_min(self) -> int:
        r, c = max(self.rows - 1, 0), max(self.cols - 1, 0)
        return min(0, self.a * r) + min(0, self.b * c)

    @property
    def line_step(self) -> int:
        """For a grid of one cell a wavefront (``positions == 1``: one row with ``b != 0``, or one
        column with ``b == 0``), the direction the sweep walks the line's coordinate (``j``, else
        ``i``): +1 up, -1 down."""
        return 1 if (self.b if self.by_row_index else self.a) > 0 else -1

    @property
    def num_wavefronts(self) -> int:
        if self.rows == 0 or self.cols == 0:
            return 0
        r, c = self.rows - 1, self.cols - 1
        return abs(self.a) * r + abs(self.b) * c + 1

    @property
    def positions(self) -> int:
        """Slots per wavefront buffer (a wavefront holds at most one cell per slot)."""
        return self.rows if self.by_row_index else self.cols

    def kind(self) -> str:
        if self.tiled:
            return "tiled anti-diagonals"
        if self.b == 0:
            return "rows" if self.a > 0 else "rows, bottom-up"
        if self.a == 0:
            return "columns" if self.b > 0 else "columns, right-to-left"
        return f"wavefronts {self.a}*i + {self.b}*j"


def _hull(points) -> list[tuple[int, int]]:
    """The vertices of the convex hull of ``points`` (Andrew's monotone chain; collinear points
    dropped). A linear function's maximum over the points, and whether it is negative on all of
    them, is decided at these vertices alone."""
    pts = sorted(set(points))
    if len(pts) <= 2:
        return pts

    def half(seq):
        out = []
        for p in seq:
            while len(out) >= 2:
                (x1, y1), (x2, y2) = out[-2], out[-1]
                if (x2 - x1) * (p[1] - y1) - (y2 - y1) * (p[0] - x1) > 0:
                    break
                out.pop()
            out.append(p)
        return out

    lower, upper = half(pts), half(reversed(pts))
    return lower[:-1] + upper[:-1]


def _best_b(a: int, hull, bound: int):
    """For a fixed ``a``: the ``b`` in ``[-bound, bound]`` of the smallest key among valid ``(a, b)``
    (every lag ``-(a*di + b*dj)`` >= 1), with its largest lag; None when no ``b`` is valid.

    The largest lag is a convex piecewise-linear function of ``b``: its integer minimisers form one
    interval, found by two binary searches; of them the key prefers the smallest ``|b|``."""
    lo, hi = -bound, bound
    for di, dj in hull:  # a*di + b*dj <= -1
        rhs = -a * di - 1
        if dj > 0:
            hi = min(hi, rhs // dj)
        elif dj < 0:
            lo = max(lo, -(-rhs // dj))
        elif rhs < 0:
            return None
    if lo > hi:
        return None

    def lag(b):
        return max(-(a * di + b * dj) for di, dj in hull)

    x, y = lo, hi  # the first b where the lag stops falling
    while x < y:
        m = (x + y) // 2
        if lag(m + 1) >= lag(m):
            y = m
        else:
            x = m + 1
    b_left, best = x, lag(x)
    x, y = b_left, hi  # the last b of that lag
    while x < y:
        m = (x + y + 1) // 2
        if lag(m) <= best:
            x = m
        else:
            y = m - 1
    b_right = x
    if b_left <= 0 <= b_right:
        b = 0
    elif b_right < 0:
        b = b_right
    else:
        b = b_left
    return b, best


def _bezout(x: int, y: int) -> tuple[int, int]:
    """``(p, q)`` with ``p*x + q*y == gcd(x, y)`` (extended Euclid)."""
    p0, q0, p1, q1 = 1, 0, 0, 1
    while y:
        k = x // y
        x, y = y, x - k * y
        p0, p1 = p1, p0 - k * p1
        q0, q1 = q1, q0 - k * q1
    return (p0, q0) if x > 0 else (-p0, -q0)


def _ray_order(offs) -> tuple[int, int, int] | None:
    """``(a, b, window)`` in closed form when every offset lies on one ray from the origin (coin
    change's ``(0, -c)``: ``d_k = l_k * u``, ``u`` a primitive vector, ``l_k >= 1``); None otherwise.

    Every lag is then ``-l_k * (a*u_i + b*u_j)``, so the window ``max(l) * |a*u_i + b*u_j|`` is
    least, ``max(l)``, exactly on the line ``a*u_i + b*u_j = -1``: ``(a0 + t*u_j, b0 - t*u_i)``.
    ``|a| + |b|`` is convex in ``t`` with its kinks where ``a`` or ``b`` is 0, and the rest of the
    key prefers an end of a flat stretch, so the integers next to the kinks hold the best."""
    di, dj = offs[0]
    g = math.gcd(di, dj)
    ui, uj = di // g, dj // g
    lam = []
    for di, dj in offs:
        if di * uj != dj * ui:
            return None
        lam.append(di // ui if ui else dj // uj)
    if min(lam) < 1:  # both ways along the line: no order (the general search says so)
        return None
    p, q = _bezout(ui, uj)  # p*ui + q*uj = 1
    a0, b0 = -p, -q
    kinks = [-a0 / uj] if uj else []
    kinks += [b0 / ui] if ui else []
    best = None
    for t in {math.floor(k) + e for k in kinks for e in (-1, 0, 1, 2)}:
        a, b = a0 + t * uj, b0 - t * ui
        key = (abs(a) + abs(b), a < 0, b < 0, -a, -b)
        if best is None or key < best[0]:
            best = (key, a, b)
    return best[1], best[2], max(lam)


@functools.lru_cache(maxsize=256)
def _order(offs: tuple[tuple[int, int], ...]) -> tuple[int, int, int]:
    """``(a, b, window)`` for checked offsets (see :func:`derive`), remembered per set of offsets."""
    ray = _ray_order(offs)
    if ray is not None:
        return ray
    reach = max(max(abs(di), abs(dj)) for di, dj in offs)
    bound = 2 * reach + 2
    hull = _hull(offs)
    best = None
    for a in range(-bound, bound + 1):
        got = _best_b(a, hull, bound)
        if got is None:
            continue
        b, window = got
        if (a, b) == (0, 0):  # a = 0 needs b != 0; (0, 0) has no positive lag, so never here
            continue
        key = (window, abs(a) + abs(b), a < 0, b < 0, -a, -b)
        if best is None or key < best[0]:
            best = (key, a, b, window)
    if best is None:
        raise ScheduleError(
            f"offsets {offs} admit no evaluation order: they do not lie in an open half-plane, "
            "so some cell depends on itself through a chain of these offsets"
        )
    return best[1:]


def derive(offsets, rows: int = 0, cols: int = 0) -> Schedule:
    """The schedule for a grid with these dependency offsets, or ScheduleError if none exists.

    Among ``|a|, |b| <= 2 * reach + 2`` (``reach``: the longest offset component) it takes the
    ``(a, b)`` of the smallest window, then of the smallest ``|a| + |b|``, then preferring positive
    and larger coefficients. The work is ``O(n log n + reach * h * log reach)`` for ``n`` offsets of
    whose convex hull ``h`` are vertices (a search over every ``(a, b)`` pair would be quadratic in
    ``reach``: seconds for coin values in the thousands); offsets on one ray from the origin (coin
    change's) take ``O(n)``, in closed form (:func:`_ray_order`), and each set of offsets is derived
    once per process."""
    offs = check_offsets(offsets)
    a, b, window = _order(offs)
    tiled = set(offs) <= UNIT_MONOTONE and len(offs) > 0 and (a, b) in ((1, 1), (1, 0), (0, 1))
    if tiled and (a, b) != (1, 1):
        # rows or columns alone are already wide wavefronts; tiles would only add ordering.
        tiled = False
    return Schedule(offs, a, b, window, tiled, rows, cols)
