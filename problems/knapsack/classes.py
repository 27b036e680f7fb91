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

Jooken's class (``jooken``, :func:`jooken_instance`)
---------------------------------------------------
J. Jooken, P. Leyman, P. De Causmaecker, *A new class of hard problem instances for the 0-1
knapsack problem*, EJOR 301(3) (2022) 841–854; its generator is ``generator.cpp`` of
github.com/JorikJooken/knapsackProblemInstances, whose rule this follows (written anew, NumPy's
generator in place of its ``mt19937``: the same distribution, not the same numbers). Parameters:
``n`` items, capacity ``c``, ``g ≥ 2`` groups, ``f`` (about the fraction of small items, the last
group), ``ε`` (how far above ``c/2^j`` a group sits, as a fraction of ``c``) and ``s`` (the spread
of the perturbations). With ``m = ⌊n·f⌋`` and ``k = ⌊(n − m)/(g − 1)⌋``:

- groups ``j = 1 .. g − 1``, ``k`` items each, in that order: profit and weight each
  ``⌊(2^−j + ε)·c + u⌋`` with its own ``u`` in ``U[1, s]``; just above ``c/2``, ``c/4``, ...: two
  items of group 1 never fit together, and profit and weight are nearly equal everywhere;
- the ``n − (g − 1)·k`` items left (at least ``m``): profit and weight each in ``U[1, s]``.

The large values are computed as the generator computes them, in float64 (``(1/2^j + ε)``, times
``c``, plus ``u``, truncated), so a file of the published set has the values this rule gives for
its ``u``; ``c`` and ``s`` are at most 2^51 so that every such value is an integer float64 holds
exactly. The published set (3,240 instances) takes ``n`` in {400, 600, ..., 1,200}, ``c`` in
{10^6, 10^8, 10^10}, ``g`` in {2, 6, 10, 14}, ``f`` in {0.1, 0.2, 0.3}, ``ε`` in {0, 10^−5, 10^−4,
10^−3, 10^−2, 0.1} and ``s`` in {100, 200, 300}; the defaults ``g = 10, f = 0.1, ε = 10^−4,
s = 100`` are among its hard settings for combo (its recorded times by parameter:
docs/knapsack_sparse.md).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "pisinger_instance",
    "jooken_instance",
    "class_instance",
    "class_name",
    "class_number",
    "parse_classes",
    "parse_jooken",
    "CLASSES",
    "CLASSIC",
    "HARD",
    "JOOKEN",
    "JOOKEN_DEFAULTS",
    "JOOKEN_C_MAX",
]

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
#: Jooken's class, by name (outside Pisinger's numbering; ``parse_classes`` gives it as this name)
JOOKEN = "jooken"
#: :func:`jooken_instance`'s parameters and their defaults (the module doc)
JOOKEN_DEFAULTS = {"g": 10, "f": 0.1, "eps": 1e-4, "s": 100}
#: the largest capacity (and spread ``s``) of Jooken's class: every value is exact in float64
JOOKEN_C_MAX = 2**51


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


def parse_classes(text: str) -> list[int | str]:
    """``"1-6"``, ``"1,3,16"``, ``"hard"``, ``"all"`` or names (``"strongly,circle"``) -> class numbers;
    ``"jooken"`` -> the name :data:`JOOKEN` (``all`` is Pisinger's classes: name it to have it)."""
    out = []
    for part in (s.strip() for s in text.split(",") if s.strip()):
        if part.lower() == JOOKEN:
            out.append(JOOKEN)
        elif part in ("all", "classic", "hard"):
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


def class_name(cls) -> str:
    """The name of a class that :func:`parse_classes` gives (a number of Pisinger's, or ``jooken``)."""
    return JOOKEN if cls == JOOKEN else CLASSES[class_number(cls)]


def class_instance(cls, n: int, R: int, seed: int = 0, jooken: dict | None = None):
    """``(profits, weights, capacity)`` of any class :func:`parse_classes` gives: Pisinger's with
    coefficient range ``R`` (:func:`pisinger_instance`, capacity half the total weight), or Jooken's
    with capacity ``c = R`` and the parameters ``jooken`` (:func:`jooken_instance`; defaults
    :data:`JOOKEN_DEFAULTS`)."""
    if cls == JOOKEN:
        return jooken_instance(n, R, seed=seed, **(jooken or {}))
    return pisinger_instance(cls, n, R, seed=seed)


def _real(v, name: str, lo: float, hi: float) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
        raise ValueError(f"{name} must be a number in [{lo:g}, {hi:g}], got {v!r}")
    f = float(v)
    if not lo <= f <= hi:  # (NaN fails too)
        raise ValueError(f"{name} must be a number in [{lo:g}, {hi:g}], got {v!r}")
    return f


def _whole(v, name: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int | np.integer) or not lo <= v <= hi:
        raise ValueError(f"{name} must be an integer in {lo}..{hi}, got {v!r}")
    return int(v)


def jooken_instance(
    n: int,
    c: int,
    g: int = JOOKEN_DEFAULTS["g"],
    f: float = JOOKEN_DEFAULTS["f"],
    eps: float = JOOKEN_DEFAULTS["eps"],
    s: int = JOOKEN_DEFAULTS["s"],
    seed: int = 0,
):
    """``(profits, weights, c)`` of Jooken's class (the module doc): ``n`` items, capacity ``c``
    (1 to 2^51), ``g`` groups (at least 2), the fraction ``f`` of small items and ``eps`` (each in
    [0, 1]), the spread ``s`` of the perturbations (1 to 2^51); reproducible from ``seed``. Profits
    and weights are int64 arrays, the capacity the Python int ``c``.

    >>> p, w, c = jooken_instance(10, 1000, g=2, f=0.2, eps=0.01, s=5, seed=1)
    >>> bool(((w[:8] >= 511) & (w[:8] <= 515)).all() and (w[8:] <= 5).all()), c
    (True, 1000)
    """
    n = _whole(n, "n", 0, 2**62)
    c = _whole(c, "c", 1, JOOKEN_C_MAX)
    g = _whole(g, "g", 2, 2**20)
    s = _whole(s, "s", 1, JOOKEN_C_MAX)
    f = _real(f, "f", 0.0, 1.0)
    eps = _real(eps, "eps", 0.0, 1.0)
    bits = [int(np.float64(v).view(np.uint64)) for v in (f, eps)]
    rng = np.random.default_rng([0x4A4F4F4B, n, c, g, s, *bits, int(seed)])  # "JOOK"
    u = rng.integers(1, s, (n, 2), endpoint=True, dtype=np.int64)  # each item's (profit, weight) draws
    small = int(n * f)  # the generator's (long long)(n * f), from float64
    k = (n - small) // (g - 1)
    large = k * (g - 1)
    base = np.repeat([(1.0 / 2.0**j + eps) * float(c) for j in range(1, g)], k)  # float64, as it does
    p, w = u[:, 0].copy(), u[:, 1].copy()
    p[:large] = (base + u[:large, 0]).astype(np.int64)  # truncated, as its cast (all positive)
    w[:large] = (base + u[:large, 1]).astype(np.int64)
    return p, w, c


def parse_jooken(text: str) -> dict:
    """``"g=14,eps=1e-5"`` -> :func:`jooken_instance`'s parameters, the defaults for those not given
    (:data:`JOOKEN_DEFAULTS`); a ValueError saying what is wrong."""
    out = dict(JOOKEN_DEFAULTS)
    for part in (t.strip() for t in text.split(",") if t.strip()):
        key, eq, val = (t.strip() for t in part.partition("="))
        if not eq or key not in JOOKEN_DEFAULTS:
            raise ValueError(f"{part!r}: expected NAME=VALUE with NAME one of {', '.join(JOOKEN_DEFAULTS)}")
        try:
            out[key] = int(val) if key in ("g", "s") else float(val)
        except ValueError:
            kind = "an integer" if key in ("g", "s") else "a number"
            raise ValueError(f"{part!r}: {key} must be {kind}") from None
    jooken_instance(1, 1, **out)  # the ranges, checked by the generator itself
    return out
