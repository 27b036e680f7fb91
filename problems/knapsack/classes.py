"""Instances of Pisinger's knapsack classes, integer data, reproducible from a seed.

D. Pisinger, *Where are the hard knapsack problems?*, Computers & Operations Research 32(9) (2005)
2271–2284, doi:10.1016/j.cor.2004.03.002: the six classical classes and the new hard ones (spanner,
multiple strongly correlated, profit ceiling, circle), numbered as in his generator ``genhard.c``.
Written from those definitions with NumPy's generator, so the numbers differ from the paper's files;
the distributions do not. ``R`` is the range of the coefficients, ``U[a, b]`` uniform on the
integers ``a..b``, and ``R/10``, ``R/500`` are integer divisions.

=====  =====================  ===========================================================================
class  name                   items (``w`` weight, ``p`` profit)
=====  =====================  ===========================================================================
1      uncorrelated           ``w, p`` in ``U[1, R]``
2      weakly                 ``w`` in ``U[1, R]``, ``p`` in ``U[w − R/10, w + R/10]``, raised to 1 if below
3      strongly               ``w`` in ``U[1, R]``, ``p = w + R/10``
4      inverse_strongly       ``p`` in ``U[1, R]``, ``w = p + R/10``
5      almost_strongly        ``w`` in ``U[1, R]``, ``p`` in ``U[w + R/10 − R/500, w + R/10 + R/500]``
6      subset_sum             ``w`` in ``U[1, R]``, ``p = w``
11     spanner_uncorrelated   span(2, 10) over class 1
12     spanner_weakly         span(2, 10) over class 2
13     spanner_strongly       span(2, 10) over class 3
14     mstr                   mstr(3R/10, 2R/10, 6): ``w`` in ``U[1, R]``; ``p = w + 3R/10`` if 6 divides
                              ``w``, else ``p = w + 2R/10``
15     profit_ceiling         pceil(3): ``w`` in ``U[1, R]``, ``p = 3·⌈w/3⌉``
16     circle                 circle(2/3): ``w`` in ``U[1, R]``, ``p = ⌊(2/3)·√(4R² − (w − 2R)²)⌋``
=====  =====================  ===========================================================================

- **Spanner** span(v, m), ``v = 2``, ``m = 10``: a *spanner set* of ``v`` items drawn from the
  underlying class and scaled down to ``⌈2w/m⌉, ⌈2p/m⌉`` (as ``genhard.c`` does); each of the ``n``
  items is a random spanner item times a multiplier in ``U[1, m]``. Every item is a multiple of one
  of two small items: hard for bounds and dominance alike.
- **Profit ceiling**: profits are multiples of 3 and ``p ≥ w``, so an item's efficiency is at least 1
  and more for the weights just above a multiple of 3; **circle**: profits on an arc of an ellipse,
  concave in ``w``.
- Class 5 follows the paper (``± R/500``); ``genhard.c`` draws ``± R/1000``. The circle's profit is
  computed exactly (``⌊isqrt(4·x)/3⌋`` with ``x = 4R² − (w − 2R)²``), where ``genhard.c``'s int
  arithmetic overflows past ``R`` ≈ 23,000.

**Capacity.** Instance ``h`` of a series of ``H = 100`` has ``C = ⌊h·Σw / (H + 1)⌋`` (the paper's
series), at least the largest weight; the default ``h=None`` gives ``C = ⌊Σw / 2⌋``, half the total
weight (issue 16's setting; ``h = 50`` gives 0.495·Σw).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["pisinger_instance", "class_number", "parse_classes", "CLASSES", "CLASSIC", "HARD"]

#: class number -> name (Pisinger's numbering)
CLASSES = {
    1: "uncorrelated",
    2: "weakly",
    3: "strongly",
    4: "inverse_strongly",
    5: "almost_strongly",
    6: "subset_sum",
    11: "spanner_uncorrelated",
    12: "spanner_weakly",
    13: "spanner_strongly",
    14: "mstr",
    15: "profit_ceiling",
    16: "circle",
}
CLASSIC = (1, 2, 3, 4, 5, 6)
HARD = (11, 12, 13, 14, 15, 16)
_NUMBERS = {name: k for k, name in CLASSES.items()}
_SPAN_V, _SPAN_M = 2, 10
#: the paper's series length
H = 100
#: the largest R accepted: every coefficient stays below 2^61 (sums are the solvers' business)
R_MAX = 2**60


def class_number(cls) -> int:
    """Pisinger's number of a class given by number or by name (see :data:`CLASSES`)."""
    if isinstance(cls, str):
        key = cls.strip().lower().replace("-", "_").replace(" ", "_")
        if key in _NUMBERS:
            return _NUMBERS[key]
        if not key.isdigit():
            raise ValueError(f"unknown Pisinger class {cls!r}; one of {sorted(_NUMBERS)}")
        cls = int(key)
    if isinstance(cls, bool) or not isinstance(cls, int | np.integer) or int(cls) not in CLASSES:
        raise ValueError(f"unknown Pisinger class {cls!r}; one of {sorted(CLASSES)}")
    return int(cls)


def parse_classes(text: str) -> list[int]:
    """``"1-6"``, ``"1,3,16"``, ``"hard"``, ``"all"`` or names (``"strongly,circle"``) -> class numbers."""
    out = []
    for part in (s.strip() for s in text.split(",") if s.strip()):
        if part in ("all", "classic", "hard"):
            out += list(CLASSES) if part == "all" else list(CLASSIC if part == "classic" else HARD)
        elif "-" in part and all(s.strip().isdigit() for s in part.split("-", 1)):
            a, b = (int(s) for s in part.split("-", 1))
            out += [k for k in CLASSES if a <= k <= b]
        else:
            out.append(class_number(part))
    return list(dict.fromkeys(out))


def _classic(k: int, n: int, R: int, rng) -> tuple[np.ndarray, np.ndarray]:
    r10 = R // 10
    w = rng.integers(1, R, n, endpoint=True, dtype=np.int64)
    if k == 1:
        p = rng.integers(1, R, n, endpoint=True, dtype=np.int64)
    elif k == 2:
        p = np.maximum(w + rng.integers(-r10, r10, n, endpoint=True, dtype=np.int64), 1)
    elif k == 3:
        p = w + r10
    elif k == 4:
        p, w = w, w + r10
    elif k == 5:
        d = R // 500
        p = w + r10 + rng.integers(-d, d, n, endpoint=True, dtype=np.int64)
    elif k == 6:
        p = w.copy()
    elif k == 14:
        p = np.where(w % 6 == 0, w + 3 * r10, w + 2 * r10)
    elif k == 15:
        p = 3 * ((w + 2) // 3)
    else:  # 16: floor((2/3) sqrt(x)) = floor(floor(sqrt(4x)) / 3) = isqrt(4x) // 3, exactly
        p = np.array([math.isqrt(4 * (4 * R * R - (v - 2 * R) ** 2)) // 3 for v in w.tolist()], np.int64)
    return p.astype(np.int64), w.astype(np.int64)


def _spanner(k: int, n: int, R: int, rng) -> tuple[np.ndarray, np.ndarray]:
    sp, sw = _classic(k - 10, _SPAN_V, R, rng)
    sw = -((-2 * sw) // _SPAN_M)  # ceil(2w / m)
    sp = -((-2 * sp) // _SPAN_M)
    which = rng.integers(0, _SPAN_V, n)
    mult = rng.integers(1, _SPAN_M, n, endpoint=True, dtype=np.int64)
    return mult * sp[which], mult * sw[which]


def pisinger_instance(cls, n: int, R: int, seed: int = 0, h: int | None = None):
    """``(profits, weights, capacity)`` of Pisinger's class ``cls`` (number or name, see the module
    doc) with ``n`` items and coefficient range ``R`` (10 to 2^60), reproducible from ``seed``.

    ``h`` (1..100) picks the capacity of instance ``h`` of the paper's series,
    ``C = ⌊h·Σw / 101⌋`` (at least the largest weight); the default ``None`` gives half the total
    weight, ``C = ⌊Σw / 2⌋``. Profits and weights are int64 arrays, the capacity a Python int.

    >>> p, w, c = pisinger_instance("strongly", 5, 1000, seed=1)
    >>> bool((p == w + 100).all()) and c == int(w.sum()) // 2
    True
    """
    k = class_number(cls)
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
        raise ValueError(f"n must be an integer >= 0, got {n!r}")
    if isinstance(R, bool) or not isinstance(R, int | np.integer) or not 10 <= R <= R_MAX:
        raise ValueError(f"R must be an integer in 10..2^60, got {R!r}")
    rng = np.random.default_rng([k, int(n), int(R), int(seed)])
    p, w = _spanner(k, n, int(R), rng) if k in (11, 12, 13) else _classic(k, n, int(R), rng)
    total = sum(int(v) for v in w)
    if h is None:
        cap = total // 2
    elif isinstance(h, int | np.integer) and 1 <= h <= H:
        cap = int(h) * total // (H + 1)
    else:
        raise ValueError(f"h must be an integer in 1..{H}, got {h!r}")
    if n:
        cap = max(cap, int(w.max()))
    return p, w, cap
