"""The sparse-state DP's global upper bound with a cardinality constraint (the search stops when
the incumbent reaches it): the Lagrangian relaxation, its multiplier searched in float64 and the
bound evaluated exactly; the same relaxation rounded to a power of two for the flip bounds and the
states' relaxation."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from gpudp.jit import njit

from .exact import exact_sum, uge

__all__ = ["cardinality_bound", "cardinality_relaxation", "rounded_relaxation", "flip_bounds", "state_gains"]


def _break_order(ps, ws, cap, lam: float):
    """The items of positive profit ``p - lam`` by decreasing ``(p - lam)/w`` (float64) and the
    position of the LP's break item in that order."""
    q = ps - lam
    order = np.argsort(-(q / ws), kind="stable")
    order = order[q[order] > 0]
    k0 = int(np.searchsorted(np.cumsum(ws[order].astype(np.float64)), float(cap), side="right"))
    return order, k0


@njit(cache=True)
def _lp_break(ps, ws, cap, lam):
    """The LP relaxation with profits ``p − lam`` (float64): the items of positive ``p − lam`` taken
    by decreasing ``(p − lam)/w`` (ties: by index) while they fit. Returns ``(count, jb, jl)``: the
    items it takes (the break item's fraction counted), the break item (−1 when every item of
    positive ``p − lam`` fits) and the last item taken whole (−1: none). Linear expected time:
    a weighted quickselect in that order, not a sort."""
    n = len(ps)
    idx = np.empty(n, np.int64)
    ratio = np.empty(n, np.float64)
    m = 0
    for j in range(n):
        q = ps[j] - lam
        if q > 0:
            idx[m] = j
            ratio[j] = q / ws[j]
            m += 1
    lo = 0
    hi = m
    rest = float(cap)
    count = 0.0
    last = -1
    while lo < hi:
        piv = idx[(lo + hi) >> 1]
        rp = ratio[piv]
        # partition idx[lo:hi]: before the pivot (greater ratio, or equal and lower index), the pivot,
        # after it
        a = lo
        b = hi - 1
        while True:
            while a <= b and (ratio[idx[a]] > rp or (ratio[idx[a]] == rp and idx[a] < piv)):
                a += 1
            while a <= b and not (ratio[idx[b]] > rp or (ratio[idx[b]] == rp and idx[b] < piv)):
                b -= 1
            if a >= b:
                break
            idx[a], idx[b] = idx[b], idx[a]
            a += 1
            b -= 1
        # idx[lo:a] come before the pivot
        wsum = 0.0
        best = -1
        for x in range(lo, a):
            j = idx[x]
            wsum += ws[j]
            if best < 0 or ratio[j] < ratio[best] or (ratio[j] == ratio[best] and j > best):
                best = j
        if wsum > rest:
            hi = a
            continue
        rest -= wsum
        count += a - lo
        if best >= 0:
            last = best
        if ws[piv] > rest:
            return count + rest / ws[piv], piv, last
        rest -= ws[piv]
        count += 1
        last = piv
        # the pivot sits somewhere in idx[a:hi]: move it out, go on after it
        for x in range(a, hi):
            if idx[x] == piv:
                idx[x] = idx[a]
                idx[a] = piv
                break
        lo = a + 1
    return count, -1, last


def _lp_count(ps, ws, cap, lam) -> float:
    """How many items (fractions counted) the LP relaxation with profits ``p - lam`` takes (float)."""
    return _lp_break(ps, ws, cap, float(lam))[0]


def _lagrangian_float(ps, ws, cap, lam: float, k: int) -> float:
    jb = _lp_break(ps, ws, cap, float(lam))[1]
    u = 0.0 if jb < 0 else (ps[jb] - lam) / ws[jb]
    return u * cap + lam * k + float(np.maximum(ps - lam - u * ws, 0.0).sum())


@njit(cache=True)
def _positive_reduced(ps, ws, d, a, m, num):
    """Which items have ``m·(p_i·d − a) > num·w_i`` (exactly: 128-bit products; ``p_i·d − a`` fits
    int64 and ``m``, ``num`` are non-negative int64, checked by the caller)."""
    out = np.zeros(len(ps), np.bool_)
    for i in range(len(ps)):
        x = ps[i] * d - a
        out[i] = x > 0 and not uge(num, ws[i], m, x)
    return out


def _positive_sum(ps, ws, d: int, a: int, m: int, num: int) -> int:
    """``Σ max(0, m·(p_i·d − a) − num·w_i)``, exactly (a Python integer): in int64 and 128-bit
    products where every factor fits (:func:`_positive_reduced`), else in Python integers."""
    lim = 1 << 62
    if int(ps.max()) * d < lim and abs(a) < lim and m < lim and num < lim:
        pos = _positive_reduced(ps, ws, np.int64(d), np.int64(a), np.int64(m), np.int64(num))
        x = ps[pos] * d - a
        return m * exact_sum(x) - num * exact_sum(ws[pos])
    rc = (ps.astype(object) * d - a) * m - ws.astype(object) * num
    return int(np.maximum(rc, 0).sum())


def _lagrangian_terms(ps, ws, cap, lam: Fraction, k: int):
    """The Lagrangian relaxation with the cardinality term ``lam·(k − Σx)`` and the capacity term
    ``u·(C − Σwx)``, exactly, for u at the LP's break item at lam and for the one before (a valid
    upper bound on every solution of at most ``k`` items when lam ≥ 0, of at least ``k`` items when
    lam ≤ 0; any u ≥ 0 is): a list of
    ``(total, scale, u)``, Python integers and a Fraction, ``total / scale`` the bound
    ``u·C + lam·k + Σ max(0, p_j − lam − u·w_j)``. With ``lam = a/d`` and ``u = num/(m·d)``
    (``m = w_b``; u = 0 is ``num = 0, m = 1``), ``scale = m·d`` and
    ``scale·(p_j − lam − u·w_j) = m·(p_j·d − a) − num·w_j``."""
    a, d = lam.numerator, lam.denominator
    _, jb, jl = _lp_break(ps, ws, cap, float(lam))
    out = []
    for j in sorted({jb if jb >= 0 else jl, jl}):
        num, m = 0, 1  # u = 0
        if j >= 0:
            num, m = max(int(ps[j]) * d - a, 0), int(ws[j])  # u = (p_j - lam) / w_j
        total = num * cap + a * m * k + _positive_sum(ps, ws, d, a, m, num)
        out.append((total, m * d, Fraction(num, m * d)))
    return out


def rounded_relaxation(ps, ws, cap, lam: Fraction, k: int, u: Fraction):
    """The relaxation ``(lam, k, u)`` with lam and u rounded to multiples of ``1/S``, S a power of two,
    in int64: ``(lag, r)``, ``lag = (S, A, U, U·C + A·k)`` with ``A = round(lam·S)``,
    ``U = round(u·S)``, and ``r_i = S·p_i − A − U·w_i``, the reduced costs scaled by S. Any
    multipliers of the right signs give a bound (``A ≥ 0`` with ``Σx ≤ k``, ``A ≤ 0`` with ``Σx ≥ k``,
    ``U ≥ 0``): ``(U·C + A·k + Σ max(0, r_i)) / S``, a little above the exact one. S is the largest
    power of two with ``3·S·ΣP + 2·|A|·n + 2·U·ΣW + U·C + |A|·k ≤ 2^62`` (Python integers), which
    bounds every sum :func:`flip_bounds` and :func:`step` form; None where not even S = 1 fits."""
    n = len(ps)
    ptot, wtot = exact_sum(ps), exact_sum(ws)
    lf, uf = abs(float(lam)), float(u)
    size1 = 3.0 * ptot + 2.0 * lf * n + 2.0 * uf * wtot + uf * cap + lf * k
    shift = int(np.floor(np.log2(2.0**61 / max(size1, 1.0))))
    for sh in range(shift, -1, -1):
        S = 1 << sh
        A, U = round(lam * S), round(u * S)
        if 3 * S * ptot + 2 * abs(A) * n + 2 * U * wtot + U * cap + abs(A) * k <= 1 << 62:
            r = S * ps - A - U * ws
            return np.array([S, A, U, U * cap + A * k], np.int64), r
    return None


def flip_bounds(lag, r, b: int) -> np.ndarray:
    """For every item j, an upper bound (int64) on the solutions that the relaxation ``(lag, r)``
    (:func:`rounded_relaxation`) bounds and that flip j from its value in the break solution (taken
    iff ``j < b``): the relaxation with ``x_j`` fixed to the other value loses ``max(0, r_j)``
    (dropping an item of positive reduced cost) or ``max(0, −r_j)`` (taking one of negative reduced
    cost); rounded down, at least −1 (a weaker bound)."""
    S, total = int(lag[0]), int(lag[3]) + int(np.maximum(r, 0).sum())
    taken = np.arange(len(r)) < b
    loss = np.where(taken, np.maximum(r, 0), np.maximum(-r, 0))
    return np.maximum((total - loss) // S, -1)


def state_gains(r, b: int) -> np.ndarray:
    """Each item's gain in the states' relaxation (see :func:`step`): what flipping it from its break
    value can add, ``max(0, −r_i)`` for an item taken (``i < b``), ``max(0, r_i)`` for one not.
    ``GL[s] + GR[t + 1]`` of :meth:`Search._gains` sums them outside the core ``[s, t]``: a state of
    profit P, weight W and K items is extended only by flipping items outside its core, so each of its
    extensions is worth at most ``(S·P − A·K − U·W + U·C + A·k + GL[s] + GR[t + 1]) / S``."""
    taken = np.arange(len(r)) < b
    return np.where(taken, np.maximum(-r, 0), np.maximum(r, 0))


def _bisect(ps, ws, cap, lo, hi, above) -> float:
    """The λ in [lo, hi] where the LP's item count crosses k (``above(count)`` true left of it)."""
    for _ in range(64):
        mid = 0.5 * (lo + hi)
        if above(_lp_count(ps, ws, cap, mid)):
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-9 * max(1.0, abs(mid)):
            break
    return 0.5 * (lo + hi)


def _best_multiplier(ps, ws, cap, lam: float, k: int, sign: int) -> Fraction:
    """Of λ itself and the exact λs at which the items around the LP's break at λ swap order (those
    of the right sign), the one of the least bound in float64."""
    order, k0 = _break_order(ps, ws, cap, lam)
    out = [Fraction(lam).limit_denominator(1 << 20)]
    near = [int(order[i]) for i in range(max(k0 - 2, 0), min(k0 + 3, len(order)))]
    for x, a in enumerate(near):
        for c in near[x + 1 :]:
            pa, wa, pc, wc = int(ps[a]), int(ws[a]), int(ps[c]), int(ws[c])
            if wa != wc:  # (p_a − λ)/w_a = (p_c − λ)/w_c
                out.append(Fraction(pa * wc - pc * wa, wc - wa))
    out = [c for c in set(out) if c * sign >= 0]
    return min(out, key=lambda c: _lagrangian_float(ps, ws, cap, float(c), k)) if out else Fraction(0)


def cardinality_bound(ps, ws, cap, z) -> tuple[int | None, dict]:
    """An upper bound on the value of every solution worth more than ``z`` (None where no
    cardinality constraint is violated by the LP relaxation, so it would not beat Dantzig's): the
    Lagrangian bound with ``Σx ≤ k_max`` (every set that fits) or ``Σx ≥ k_min`` (every set worth
    more than ``z``), whichever the LP relaxation violates. Items: ``p > 0``, ``0 < w ≤ C``, not all
    fitting; int64 arrays whose totals fit int64."""
    bound, info, _ = cardinality_relaxation(ps, ws, cap, z)
    return bound, info


def cardinality_relaxation(ps, ws, cap, z):
    """:func:`cardinality_bound`, and the relaxation it used as ``(lam, k, u)`` (None where there is
    none; u the capacity multiplier of the least bound) for :func:`rounded_relaxation`."""
    k_max = int(np.searchsorted(np.cumsum(np.sort(ws)), cap, side="right"))
    reach = np.flatnonzero(np.cumsum(np.sort(ps)[::-1]) >= z + 1)
    if not len(reach):  # not even every item together is worth more than z
        return z, {"k_max": k_max, "k_min": None, "bound": z}, None
    k_min = int(reach[0]) + 1
    info = {"k_max": k_max, "k_min": k_min}
    if k_min > k_max:  # no set of k_min items fits: nothing is worth more than z
        info["bound"] = z
        return z, info, None
    best, used = None, None
    count0 = _lp_count(ps, ws, cap, 0.0)
    pmax = float(ps.max())
    if count0 > k_max:
        lam = _bisect(ps, ws, cap, 0.0, pmax, lambda c: c > k_max)
        used = (_best_multiplier(ps, ws, cap, lam, k_max, 1), k_max)
    elif count0 < k_min:
        lam = _bisect(ps, ws, cap, -float(ws.max()) * pmax, 0.0, lambda c: c >= k_min)
        used = (_best_multiplier(ps, ws, cap, lam, k_min, -1), k_min)
    if used is not None:
        terms = _lagrangian_terms(ps, ws, cap, *used)
        best, _, u = min((total // scale, scale, u) for total, scale, u in terms)
        used = (*used, u)
    info["bound"] = best
    return best, info, used
