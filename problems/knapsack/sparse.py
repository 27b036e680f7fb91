"""0/1 knapsack by a sparse-state dynamic programme: lists of undominated states, an expanding core
and bound fathoming (after Pisinger's minknap, with the cardinality bounds of Martello, Pisinger &
Toth's combo), exact for integer data, on the CPU. ``knapsack.solve(..., method="sparse")``.

Its work follows the core around the break item and the states that survive the bounds, not
``n·C``: it carries the large-coefficient instances (``C`` ~ 10^10 and past) that a dense table
cannot hold. See docs/knapsack_sparse.md for the measurements.

**Items.** The items that can be packed (``0 < w ≤ C``, ``p > 0``) are sorted by decreasing
efficiency ``p / w``, exactly (float64 ratios first, then an insertion pass comparing ``p_a·w_b``
with ``p_b·w_a`` as 128-bit products). Items of weight 0 and positive profit are always taken; the
others are dropped. When every remaining item fits, all are taken without a search. Every packing
weighs a multiple of ``g``, the gcd of the weights, so ``C`` is rounded down to one (the same sets
fit); every value is a multiple of ``gp``, the gcd of the profits, so "better than ``z``" means
"at least ``z + gp``".

**States.** The *break item* ``b`` is the first that no longer fits after items ``0..b-1``; the
*break solution* takes exactly those. A state is a solution that agrees with the break solution
outside the *core* ``[s, t]`` (items ``< s`` taken, items ``> t`` not): its weight, its profit and a
node that recovers its items. The list is sorted by weight with strictly increasing profit: no
state dominates another (``w1 ≤ w2`` and ``p1 ≥ p2``; all states have the same items left to
decide, so dominance holds whether or not a state fits).

**A step** grows the core by one item, alternately to the right (item ``t + 1``: each state also
with it added) and to the left (item ``s - 1``: each state also with it removed), merging the list
with its shifted copy in one pass and keeping the undominated states (Nemhauser–Ullmann). Then

- **incumbent** ``z``: the most profitable state of weight ≤ C, if better (initially the greedy
  solution: the break solution, then every later item that still fits);
- **fathoming**: a state is kept only if its upper bound reaches ``z + gp``. With items sorted, the
  items still to add have efficiency at most ``e_{t+1}`` and those still to remove at least
  ``e_{s-1} ≥ e_{t+1}``, so a state of weight ``W ≤ C`` is worth at most ``P + (C − W)·e_{t+1}``
  and one of ``W > C`` at most ``P − (W − C)·e_{s-1}``; with no item left on the side it needs, a
  state can gain nothing (it was already offered as the incumbent) or never fit, and is dropped.
  Compared exactly: ``(C − W)·p_{t+1} ≥ (z + gp − P)·w_{t+1}`` and
  ``(P − z − gp)·w_{s-1} ≥ (W − C)·p_{s-1}``;
- **item reduction** (before a step): flipping item ``j`` (adding ``j > t``, removing ``j < s``)
  is bounded by the Lagrangian relaxation at the break item's efficiency, valid for every solution
  with ``j`` flipped: ``P' + (C − W')·p_b/w_b`` for the break solution flipped at ``j``. Below
  ``z + gp``, the item keeps its break value and never enters the core;
- **pairing** (a lower bound, now and then): each state with one item outside the core added or
  removed.

**Proof of optimality.** The search ends when the list is empty (nothing can lead to ``z + gp``),
when every item has been decided, or when ``z`` reaches a global upper bound: Dantzig's bound at
first, then the Lagrangian bounds with a cardinality constraint (:func:`cardinality_bound`):
``Σx ≤ k_max`` (every feasible set) or ``Σx ≥ k_min`` (every set worth ``z + gp`` or more), with the
multiplier found in float64 and the bound evaluated exactly in Python integers, so that a float
error can only weaken it. Those are what close the strongly correlated classes, whose lists
otherwise grow without end.

**The 0/1 vector.** Every state carries a node of a persistent list of flips: a state made by
flipping item ``j`` gets a new node (parent: its source's node, item ``j``); a state that came
through unchanged keeps its node. Nodes are made only for the states that survive fathoming, for a
new incumbent and for the greedy solution's items past the break item; when the node array fills,
the nodes no longer reachable from the list or the incumbent are dropped (marked from those roots,
compacted in order; parents precede children) and the array grows only if more than half is still
live. The incumbent's items are the break solution with the items on its node's path flipped.

**Arithmetic** (integer data only: real-valued data are refused with :class:`gpudp.InputError`).
With ``P`` and ``W`` the profit and weight totals of the items that can be packed, the state values
need ``P ≤ 2^63 − 1`` (as the dense DP and the B&B) and ``W ≤ 2^63 − 1``, checked in Python
integers and refused past them. No sum leaves that range: a state is a subset of the items, and
``z + gp ≤ P`` since not every item fits (``z`` leaves one out, worth at least ``gp``). Every product
of a bound or of the sort is compared exactly: in int64 when all provably fit
(``max(C, W, P)·max(p, w) ≤ 2^63 − 1``), else as unsigned 128-bit products built from 32-bit
halves. The value and the weight of the answer are summed in Python integers and checked
(:func:`gpudp.problems.knapsack.io.solution_checker`).

**Stops.** The search runs in chunks of about 10^6 state operations. Past ``time_limit``, or when
its lists would take more than half of the memory this process may still use, it stops and
returns the incumbent, checked, with ``optimal`` False and ``details["message"]`` saying why (as the
branch and bound does at its time limit or host budget); an unproven value is never marked optimal.
"""

from __future__ import annotations

import time
from fractions import Fraction

import numpy as np

from gpudp.engine import device_name
from gpudp.errors import InputError
from gpudp.jit import njit
from gpudp.solution import Solution, Stats

from .bb import parse_time_limit
from .io import INT64_MAX, KnapsackInstance, checked_solution, validate

__all__ = ["solve", "solve_instance", "cardinality_bound"]

_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)

# slots of the search's state vector ``st`` (an int64 array shared with the compiled loop)
(_S, _T, _LEN, _Z, _ZNODE, _NN, _SIDE, _CUR, _GEN, _MAXL, _CORE, _RED, _IMPROVED, _CREDIT, _PAIRED) = range(
    15
)
_NSLOTS = 15
# what the compiled loop returns
_DONE, _BUDGET, _NEED_LISTS, _NEED_NODES = 0, 1, 2, 3
#: state operations per call of the compiled loop (a few milliseconds): the time limit's granularity
_CHUNK = 1 << 20
#: initial room: states per list and nodes (both grow on demand; the tests shrink them)
_LIST_START = 1024
_NODE_START = 4096


@njit(cache=True)
def _umul(a, b):
    """The 128-bit product of two uint64 values as (high, low) words."""
    a0 = a & _M32
    a1 = a >> _S32
    b0 = b & _M32
    b1 = b >> _S32
    p00 = a0 * b0
    p01 = a0 * b1
    p10 = a1 * b0
    mid = (p00 >> _S32) + (p01 & _M32) + (p10 & _M32)
    hi = a1 * b1 + (p01 >> _S32) + (p10 >> _S32) + (mid >> _S32)
    lo = (mid << _S32) | (p00 & _M32)
    return hi, lo


@njit(cache=True)
def _uge(a, b, c, d):
    """a·b >= c·d, exactly, for non-negative int64 a, b, c, d."""
    h1, l1 = _umul(np.uint64(a), np.uint64(b))
    h2, l2 = _umul(np.uint64(c), np.uint64(d))
    return h1 > h2 or (h1 == h2 and l1 >= l2)


@njit(cache=True)
def _ge(a, b, c, d, small):
    """a·b >= c·d, exactly, for |a|, |c| < 2^63 and b, d > 0; in int64 when ``small`` says every
    such product fits."""
    if small:
        return a * b >= c * d
    if a >= 0:
        if c <= 0:
            return True
        return _uge(a, b, c, d)
    if c > 0:
        return False
    return _uge(-c, d, -a, b)


@njit(cache=True)
def _exact_order(ps, ws, idx):
    """Insertion pass over ``idx`` (nearly sorted by decreasing float ratio): afterwards it is sorted
    by decreasing p/w exactly; exact ties keep their order. Linear when the floats were right."""
    for i in range(1, len(idx)):
        k = idx[i]
        j = i
        while j > 0 and not _uge(ps[idx[j - 1]], ws[k], ps[k], ws[idx[j - 1]]):
            idx[j] = idx[j - 1]
            j -= 1
        idx[j] = k


@njit(cache=True)
def _greedy(ws, ps, cap, x):
    """The greedy solution (items 0..b-1, then every later item that still fits) into ``x``; its
    profit."""
    rest = cap
    val = 0
    for j in range(len(ws)):
        if ws[j] <= rest:
            rest -= ws[j]
            val += ps[j]
            x[j] = 1
    return val


@njit(cache=True)
def _last_le(SW, cur, L, limit, dw):
    """The last index q < L with SW[cur, q] - dw <= limit (-1 if none); SW[cur] increases."""
    lo = 0
    hi = L
    while lo < hi:
        mid = (lo + hi) >> 1
        if SW[cur, mid] - dw <= limit:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


@njit(cache=True)
def _pair(ws, ps, cap, SW, SP, SN, par, itm, st):
    """Pairing (a lower-bound heuristic): every state with one item outside the core, added (right
    of the core) or removed (left of it); the best pair that fits becomes the incumbent if better.
    Needs one free node."""
    n = len(ws)
    cur = st[_CUR]
    L = st[_LEN]
    bestv = st[_Z]
    bq = -1
    bj = -1
    for j in range(st[_T] + 1, n):
        q = _last_le(SW, cur, L, cap - ws[j], 0)
        if q >= 0 and SP[cur, q] + ps[j] > bestv:
            bestv = SP[cur, q] + ps[j]
            bq = q
            bj = j
    for j in range(st[_S]):
        q = _last_le(SW, cur, L, cap, ws[j])
        if q >= 0 and SP[cur, q] - ps[j] > bestv:
            bestv = SP[cur, q] - ps[j]
            bq = q
            bj = j
    st[_PAIRED] += 1
    if bq >= 0:
        nn = st[_NN]
        par[nn] = SN[cur, bq]
        itm[nn] = bj
        st[_NN] = nn + 1
        st[_Z] = bestv
        st[_ZNODE] = nn
        st[_IMPROVED] += 1


@njit(cache=True)
def _expand(ws, ps, cap, b, wsb, psb, SW, SP, SN, F, par, itm, st, budget, small, ubound, gp):
    """Grow the core until the list is empty, every item is decided or the incumbent reaches the
    upper bound ``ubound`` (``_DONE``), ``budget`` state operations are spent (``_BUDGET``), or the
    lists or the node array need room (``_NEED_*``; nothing of the step was done). ``st`` holds the
    search's scalars (the ``_S`` ... slots). Pairing (:func:`_pair`) runs whenever the merges since
    the last one have cost as much as it will."""
    n = len(ws)
    wb = ws[b]
    pb = ps[b]
    work = 0
    ncap = len(par)
    lcap = SW.shape[1]
    while True:
        L = st[_LEN]
        if L == 0 or st[_Z] >= ubound:
            return _DONE
        s = st[_S]
        t = st[_T]
        right = t + 1 < n and (st[_SIDE] == 0 or s == 0)
        if not right and s == 0:
            return _DONE  # every item decided: the incumbent is the best state that fits
        if work >= budget:
            return _BUDGET
        j = t + 1 if right else s - 1
        if right:
            dw = ws[j]
            dp = ps[j]
        else:
            dw = -ws[j]
            dp = -ps[j]
        z = st[_Z]
        # item reduction: the break solution flipped at j, bounded with the break item's efficiency
        wq = wsb + dw
        pq = psb + dp
        if not _ge(cap - wq, pb, z + gp - pq, wb, small):
            st[_RED] += 1
            st[_SIDE] ^= 1
            if right:
                st[_T] = j
            else:
                st[_S] = j
            continue
        if 2 * L > lcap:
            return _NEED_LISTS
        if st[_NN] + L + 2 > ncap:
            return _NEED_NODES
        st[_SIDE] ^= 1
        if right:
            st[_T] = j
            t = j
        else:
            st[_S] = j
            s = j
        cur = st[_CUR]
        nxt = 1 - cur
        # merge the list with its copy shifted by (dw, dp), keeping the undominated states
        i = 0
        k = 0
        m = 0
        lastp = -1
        best = -1
        while i < L or k < L:
            if k >= L or (i < L and SW[cur, i] < SW[cur, k] + dw):
                w = SW[cur, i]
                p = SP[cur, i]
                nd = SN[cur, i]
                f = 0
                i += 1
            elif i >= L or SW[cur, k] + dw < SW[cur, i]:
                w = SW[cur, k] + dw
                p = SP[cur, k] + dp
                nd = SN[cur, k]
                f = 1
                k += 1
            else:  # equal weights: the more profitable one
                w = SW[cur, i]
                if SP[cur, i] >= SP[cur, k] + dp:
                    p = SP[cur, i]
                    nd = SN[cur, i]
                    f = 0
                else:
                    p = SP[cur, k] + dp
                    nd = SN[cur, k]
                    f = 1
                i += 1
                k += 1
            if p > lastp:
                SW[nxt, m] = w
                SP[nxt, m] = p
                SN[nxt, m] = nd
                F[m] = f
                if w <= cap:
                    best = m
                m += 1
                lastp = p
        work += 2 * L + m
        st[_GEN] += L
        st[_CORE] += 1
        nn = st[_NN]
        if best >= 0 and SP[nxt, best] > z:
            z = SP[nxt, best]
            if F[best]:
                par[nn] = SN[nxt, best]
                itm[nn] = j
                SN[nxt, best] = nn
                F[best] = 0
                nn += 1
            st[_Z] = z
            st[_ZNODE] = SN[nxt, best]
            st[_IMPROVED] += 1
        # fathom: keep a state only if its bound reaches z + gp (every value is a multiple of gp)
        r = t + 1
        lft = s - 1
        m2 = 0
        for q in range(m):
            w = SW[nxt, q]
            p = SP[nxt, q]
            if w <= cap:
                keep = r < n and _ge(cap - w, ps[r], z + gp - p, ws[r], small)
            else:
                keep = lft >= 0 and _ge(p - z - gp, ws[lft], w - cap, ps[lft], small)
            if keep:
                nd = SN[nxt, q]
                if F[q]:
                    par[nn] = nd
                    itm[nn] = j
                    nd = nn
                    nn += 1
                SW[nxt, m2] = w
                SP[nxt, m2] = p
                SN[nxt, m2] = nd
                m2 += 1
        st[_NN] = nn
        st[_LEN] = m2
        st[_CUR] = nxt
        if m2 > st[_MAXL]:
            st[_MAXL] = m2
        st[_CREDIT] += 2 * L + m
        if m2 > 0:
            lg = 1
            while (1 << lg) < m2:
                lg += 1
            cost = (n - (t - s + 1)) * lg
            if st[_CREDIT] >= cost:
                st[_CREDIT] = 0
                work += cost
                _pair(ws, ps, cap, SW, SP, SN, par, itm, st)


@njit(cache=True)
def _collect(par, itm, SN, st):
    """Drop the nodes no longer reachable from the list's states or the incumbent; compacts in place
    (parents precede children, so one pass remaps) and updates the references. Returns the count."""
    nn = st[_NN]
    cur = st[_CUR]
    L = st[_LEN]
    mark = np.zeros(nn, np.bool_)
    for q in range(L + 1):
        r = SN[cur, q] if q < L else st[_ZNODE]
        while r >= 0 and not mark[r]:
            mark[r] = True
            r = par[r]
    remap = np.full(nn, -1, np.int64)
    c = 0
    for k in range(nn):
        if mark[k]:
            remap[k] = c
            pk = par[k]
            par[c] = remap[pk] if pk >= 0 else -1
            itm[c] = itm[k]
            c += 1
    for q in range(L):
        if SN[cur, q] >= 0:
            SN[cur, q] = remap[SN[cur, q]]
    if st[_ZNODE] >= 0:
        st[_ZNODE] = remap[st[_ZNODE]]
    st[_NN] = c
    return c


def _integer_data(inst: KnapsackInstance):
    if not inst.integral:
        field = "profits" if inst.profits.dtype.kind == "f" else "weights"
        raise InputError(
            field,
            "the sparse-state DP needs integer profits and weights (exact arithmetic); for real-valued "
            "data use the branch-and-bound solver (--method bb)",
        )
    return inst.profits.astype(np.int64), inst.weights.astype(np.int64), int(inst.capacity)


def _limits(ps, ws, cap) -> bool:
    """Refuse totals past int64 (Python integers); True when every product of the search fits int64
    (see the module doc)."""
    total_p = sum(int(v) for v in ps)
    total_w = sum(int(v) for v in ws)
    if total_p > INT64_MAX:
        raise InputError(
            "profits",
            f"the profits of the items that can be packed sum to {total_p}, past the 2^63 - 1 that the "
            "sparse DP's int64 state values hold",
        )
    if total_w > INT64_MAX:
        raise InputError(
            "weights",
            f"the weights of the items that can be packed sum to {total_w}, past the 2^63 - 1 that the "
            "sparse DP's int64 state weights hold",
        )
    return max(cap, total_w, total_p) * max(int(ps.max()), int(ws.max())) <= INT64_MAX


def _efficiency_order(ps, ws) -> np.ndarray:
    idx = np.argsort(-(ps / ws.astype(np.float64)), kind="stable").astype(np.int64)
    _exact_order(ps, ws, idx)
    return idx


# --------------------------------------------------------------------------------------------
# A global upper bound with a cardinality constraint (the search stops when the incumbent reaches it).
# The multiplier is searched in float64; only the final bound must be exact, and it is.


def _break_order(ps, ws, cap, lam: float):
    """The items of positive profit ``p - lam`` by decreasing ``(p - lam)/w`` (float64) and the
    position of the LP's break item in that order."""
    q = ps - lam
    order = np.argsort(-(q / ws), kind="stable")
    order = order[q[order] > 0]
    k0 = int(np.searchsorted(np.cumsum(ws[order].astype(np.float64)), float(cap), side="right"))
    return order, k0


def _lp_count(ps, ws, cap, lam) -> float:
    """How many items (fractions counted) the LP relaxation with profits ``p - lam`` takes (float)."""
    order, k = _break_order(ps, ws, cap, lam)
    if k >= len(order):
        return float(len(order))
    rest = cap - float(ws[order[:k]].sum())
    return k + rest / float(ws[order[k]])


def _lagrangian_float(ps, ws, cap, lam: float, k: int) -> float:
    order, k0 = _break_order(ps, ws, cap, lam)
    u = 0.0 if k0 >= len(order) else (ps[order[k0]] - lam) / ws[order[k0]]
    return u * cap + lam * k + float(np.maximum(ps - lam - u * ws, 0.0).sum())


def _lagrangian(ps, ws, cap, lam: Fraction, k: int) -> int:
    """⌊min over u of u·C + lam·k + Σ max(0, p_j − lam − u·w_j)⌋, exactly (Python integers), with u
    tried at the LP's break item at lam and the one before; a valid upper bound on every solution
    of at most ``k`` items when lam ≥ 0, of at least ``k`` items when lam ≤ 0 (any u ≥ 0 is)."""
    a, d = lam.numerator, lam.denominator
    order, k0 = _break_order(ps, ws, cap, float(lam))
    pl, wl = ps.tolist(), ws.tolist()
    best = None
    for pos in {min(k0, len(order) - 1), k0 - 1}:
        num, den = 0, 1  # u = 0
        if pos >= 0:
            jb = int(order[pos])
            num, den = max(pl[jb] * d - a, 0), d * wl[jb]  # u = (p_b - lam) / w_b
        # den·d·bound = num·d·C + a·den·k + Σ max(0, (p_j·d − a)·den − num·d·w_j)
        nd = num * d
        total = nd * cap + a * den * k
        for pj, wj in zip(pl, wl, strict=True):
            v = (pj * d - a) * den - nd * wj
            if v > 0:
                total += v
        val = total // (den * d)
        best = val if best is None else min(best, val)
    return best


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
    k_max = int(np.searchsorted(np.cumsum(np.sort(ws)), cap, side="right"))
    reach = np.flatnonzero(np.cumsum(np.sort(ps)[::-1]) >= z + 1)
    if not len(reach):  # not even every item together is worth more than z
        return z, {"k_max": k_max, "k_min": None, "bound": z}
    k_min = int(reach[0]) + 1
    info = {"k_max": k_max, "k_min": k_min}
    if k_min > k_max:  # no set of k_min items fits: nothing is worth more than z
        info["bound"] = z
        return z, info
    best = None
    count0 = _lp_count(ps, ws, cap, 0.0)
    pmax = float(ps.max())
    if count0 > k_max:
        lam = _bisect(ps, ws, cap, 0.0, pmax, lambda c: c > k_max)
        best = _lagrangian(ps, ws, cap, _best_multiplier(ps, ws, cap, lam, k_max, 1), k_max)
    elif count0 < k_min:
        lam = _bisect(ps, ws, cap, -float(ws.max()) * pmax, 0.0, lambda c: c >= k_min)
        best = _lagrangian(ps, ws, cap, _best_multiplier(ps, ws, cap, lam, k_min, -1), k_min)
    info["bound"] = best
    return best, info


class _Search:
    """The state lists, the node array and the scalars of one search, grown on demand."""

    def __init__(self, ws, ps, cap, b, greedy_x, z):
        self.ws, self.ps, self.cap, self.b = ws, ps, cap, b
        self.wsb = int(ws[:b].sum())
        self.psb = int(ps[:b].sum())
        # the greedy solution as a chain of nodes: the break solution plus its items past b
        extra = np.flatnonzero(greedy_x[b:]) + b
        lcap, ncap = _LIST_START, max(_NODE_START, 2 * len(extra) + 8)
        self.SW = np.zeros((2, lcap), np.int64)
        self.SP = np.zeros((2, lcap), np.int64)
        self.SN = np.zeros((2, lcap), np.int64)
        self.F = np.zeros(lcap, np.int8)
        self.par = np.zeros(ncap, np.int64)
        self.itm = np.zeros(ncap, np.int64)
        self.par[: len(extra)] = np.arange(-1, len(extra) - 1)
        self.itm[: len(extra)] = extra
        self.SW[0, 0], self.SP[0, 0], self.SN[0, 0] = self.wsb, self.psb, -1
        st = np.zeros(_NSLOTS, np.int64)
        st[_S], st[_T], st[_LEN], st[_Z], st[_ZNODE], st[_NN] = b, b - 1, 1, z, len(extra) - 1, len(extra)
        self.st = st
        self.collections = 0
        # Dantzig's bound, exactly, rounded down to a multiple of the profits' gcd
        self.gp = int(np.gcd.reduce(ps))
        ub = self.psb + (cap - self.wsb) * int(ps[b]) // int(ws[b])
        self.ubound = ub - ub % self.gp
        self.bound_info = {"dantzig": self.ubound}

    def run(self, small, deadline) -> bool:
        """Search until done (True) or past ``deadline`` (False). After each chunk of work the
        upper bound is tightened by :func:`cardinality_bound` when the incumbent's ``k_min`` has
        changed: the search stops as soon as the incumbent reaches it."""
        ws, ps, cap = self.ws, self.ps, self.cap
        pcum = np.cumsum(np.sort(ps)[::-1])
        kmin_seen = None
        while True:
            if deadline is not None and time.perf_counter() >= deadline:
                return False
            lists = (self.SW, self.SP, self.SN, self.F, self.par, self.itm, self.st)
            bounds = (_CHUNK, small, self.ubound, self.gp)
            code = _expand(ws, ps, cap, self.b, self.wsb, self.psb, *lists, *bounds)
            if code == _DONE:
                return True
            z = int(self.st[_Z])
            kmin = int(np.searchsorted(pcum, z + self.gp))
            if kmin != kmin_seen:
                kmin_seen = kmin
                bound, info = cardinality_bound(ps, ws, cap, z + self.gp - 1)
                self.bound_info.update(info)
                if bound is not None and bound - bound % self.gp < self.ubound:
                    self.ubound = bound - bound % self.gp
            if code == _NEED_LISTS:  # a merge needs room for 2L states: 3L leaves room to grow
                self._grow_lists(3 * int(self.st[_LEN]) + 2)
            elif code == _NEED_NODES:
                live = _collect(self.par, self.itm, self.SN, self.st)
                self.collections += 1
                need = live + int(self.st[_LEN]) + 2  # as _expand asks
                if need > len(self.par) or live > len(self.par) // 2:
                    self._grow_nodes(max(2 * len(self.par), 2 * need))

    @staticmethod
    def _room(nbytes):
        """Refuse (MemoryError, caught by the solver) a growth past half of the memory this process
        may still use (cgroup and ulimit included), before the system would kill it."""
        from gpudp.memory import available_memory

        if nbytes > available_memory() // 2:
            raise MemoryError(f"the state lists would need {nbytes / 2**30:.2f} GiB more")

    def _grow_lists(self, size):
        self._room(49 * size)  # two rows of weights, profits and nodes (int64), and the flags
        cur, L = int(self.st[_CUR]), int(self.st[_LEN])
        for name in ("SW", "SP", "SN"):
            new = np.zeros((2, size), np.int64)
            new[cur, :L] = getattr(self, name)[cur, :L]
            setattr(self, name, new)
        self.F = np.zeros(size, np.int8)

    def _grow_nodes(self, size):
        self._room(2 * 8 * size)
        nn = int(self.st[_NN])
        for name in ("par", "itm"):
            new = np.zeros(size, np.int64)
            new[:nn] = getattr(self, name)[:nn]
            setattr(self, name, new)

    def vector(self) -> np.ndarray:
        """The incumbent's 0/1 vector (items in efficiency order)."""
        x = np.zeros(len(self.ws), np.int8)
        x[: self.b] = 1
        node = int(self.st[_ZNODE])
        while node >= 0:
            x[self.itm[node]] ^= 1
            node = int(self.par[node])
        return x


def solve_instance(inst: KnapsackInstance, time_limit=None) -> Solution:
    """Solve a validated instance (:func:`gpudp.problems.knapsack.io.validate`); see :func:`solve`."""
    t0 = time.perf_counter()
    time_limit = parse_time_limit(time_limit)
    deadline = None if time_limit is None else t0 + time_limit
    p, w, cap = _integer_data(inst)
    forced = np.flatnonzero((w == 0) & (p > 0))
    free = np.flatnonzero((w > 0) & (w <= cap) & (p > 0))
    x = np.zeros(len(p), np.int8)
    x[forced] = 1
    details = {"method": "sparse", "n": len(p), "free_items": len(free), "stopped": None}
    stats = Stats(backend="cpu", device=device_name("cpu"))
    complete, message = True, "no free items: trivially optimal"
    if len(free) and sum(int(v) for v in w[free]) <= cap:
        x[free] = 1
        message = "every item that can be packed fits: trivially optimal"
    elif len(free):
        small = _limits(p[free], w[free], cap)
        order = free[_efficiency_order(p[free], w[free])]
        ws, ps = np.ascontiguousarray(w[order]), np.ascontiguousarray(p[order])
        g = int(np.gcd.reduce(ws))
        cap_used = cap - cap % g  # every packing weighs a multiple of g: the same sets fit
        if cap_used != cap:
            details["capacity_used"] = cap_used
        b = int(np.searchsorted(np.cumsum(ws), cap_used, side="right"))  # first item that does not fit
        greedy_x = np.zeros(len(ws), np.int8)
        z0 = int(_greedy(ws, ps, cap_used, greedy_x))
        search = _Search(ws, ps, cap_used, b, greedy_x, z0)
        try:
            complete = search.run(small, deadline)
            message = "optimal: no state can lead above the incumbent"
            if not complete:
                details["stopped"] = "time"
                message = f"time limit of {time_limit} s reached: the best solution found, not proven optimal"
        except MemoryError as e:
            complete = False
            details["stopped"] = "memory"
            message = f"out of memory ({e}): the best solution found, not proven optimal"
        st = search.st
        x[order] = search.vector()
        details.update(
            break_item=b,
            greedy_value=z0,
            incumbent=int(st[_Z]),
            core_items=int(st[_CORE]),
            reduced_items=int(st[_RED]),
            core_range=[int(st[_S]), int(st[_T])],
            states_generated=int(st[_GEN]),
            largest_list=int(st[_MAXL]),
            improvements=int(st[_IMPROVED]),
            node_collections=search.collections,
            pairings=int(st[_PAIRED]),
            upper_bound=search.ubound,
            bounds=search.bound_info,
            arithmetic="int64" if small else "128-bit products",
        )
        stats.cells = int(st[_GEN])
        stats.extra.update(states_generated=int(st[_GEN]), largest_list=int(st[_MAXL]))
    sel = np.flatnonzero(x == 1)
    value = sum(int(v) for v in p[sel])
    details.update(weight=sum(int(v) for v in w[sel]), message=message, integral=True)
    stats.seconds = time.perf_counter() - t0
    claimed = details["incumbent"] + sum(int(v) for v in p[forced]) if "incumbent" in details else None
    return checked_solution(p, w, cap, x, value, stats, details, complete, claimed)


def solve(profits, weights, capacity, time_limit=None, name: str = "") -> Solution:
    """Solve a 0/1 knapsack with integer profits and weights by the sparse-state DP (on the CPU);
    returns a checked :class:`gpudp.Solution`.

    ``solution`` is the 0/1 vector (int8) in the caller's item order, ``details["weight"]`` its
    weight, ``details["method"]`` is ``"sparse"``; ``details`` also gives the states generated, the
    largest list, the core and the bounds. ``optimal`` is False (``details["message"]`` says why,
    ``details["stopped"]`` is ``"time"`` or ``"memory"``) when ``time_limit`` seconds passed first or
    the lists outgrew the memory: the value is then that of the best solution found. Real-valued
    data, and totals past int64, raise :class:`gpudp.InputError`.

    >>> solve([10, 7, 8], [5, 4, 3], 8).value
    18
    """
    return solve_instance(validate(profits, weights, capacity, name=name), time_limit=time_limit)
