"""0/1 knapsack by a sparse-state dynamic programme: lists of undominated states, an expanding core
and bound fathoming (after Pisinger's minknap, with the cardinality bounds of Martello, Pisinger &
Toth's combo), exact for integer data; on the CPU, the steps of large lists on a GPU where one is
usable (:mod:`gpudp.problems.knapsack.sparse.cuda`). ``knapsack.solve(..., method="sparse")``.

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
outside the *core* ``[s, t]`` (items ``< s`` taken, items ``> t`` not): its weight, its profit, a
node that recovers its items and (while the states' relaxation is on) its number of items. The list
is sorted by weight with strictly increasing profit: no state dominates another (``w1 ≤ w2`` and
``p1 ≥ p2``; all states have the same items left to decide, so dominance holds whether or not a
state fits).

**A step** (:func:`_step`) grows the core by one item, alternately to the right (item ``t + 1``:
each state also with it added) and to the left (item ``s - 1``: each state also with it removed),
merging the list with its shifted copy in one pass and keeping the undominated states
(Nemhauser–Ullmann). Then

- **incumbent** ``z``: the most profitable state of weight ≤ C, if better (initially the greedy
  solution: the break solution, then every later item that still fits);
- **fathoming**: a state is kept only if its upper bounds reach the threshold ``z + gp`` (a probe's
  target where higher). With items sorted, the items that may still be added have efficiency at
  most ``e_r`` and those that may still be removed at least ``e_l ≥ e_r``, ``r`` and ``l`` the
  nearest items right and left of the core that item reduction has not fixed; so a state of weight
  ``W ≤ C`` is worth at most ``P + (C − W)·e_r`` and one of ``W > C`` at most
  ``P − (W − C)·e_l``; with no item left on the side it needs, a state can gain nothing (it was
  already offered as the incumbent) or never fit, and is dropped. Compared exactly. And, once the
  cardinality relaxation is known, its bound on the state's extensions (**the states' relaxation**,
  :func:`_state_gains`): ``(S·P − A·K − U·W + U·C + A·k + G) / S`` with ``A/S``, ``U/S`` its
  multipliers rounded to a power of two (:func:`_rounded_relaxation`), K the state's items and G
  what flipping the items outside the core can add;
- **item reduction** (before a step): item ``j`` keeps its break value (never enters the core) when
  every solution that flips it is worth less than the threshold: by the Lagrangian relaxation at the
  break item's efficiency, ``P' + (C − W')·p_b/w_b`` for the break solution flipped at ``j``, or by
  the cardinality relaxation with ``x_j`` flipped (**flip bounds**, :func:`_flip_bounds`: the
  relaxation's bound less j's reduced cost);
- **pairing** (a lower bound, now and then): each state with one item outside the core added or
  removed.

**Proof of optimality.** The search ends when the list is empty (nothing can lead to ``z + gp``),
when every item has been decided, or when ``z`` reaches a global upper bound: Dantzig's bound at
first, then the Lagrangian bounds with a cardinality constraint (:func:`cardinality_bound`):
``Σx ≤ k_max`` (every feasible set) or ``Σx ≥ k_min`` (every set worth ``z + gp`` or more), with the
multiplier found in float64 and the bound evaluated exactly in integers, so that a float error can
only weaken it. Those are what close the strongly correlated classes, whose lists otherwise grow
without end. The same relaxation, rounded, gives the flip bounds and the states' relaxation (any
multipliers of the right signs give valid bounds).

**Probes** (:class:`_Driver`). When the incumbent is found late (almost strongly correlated
instances), the lists grow with it far below the optimum. Once the main search has run a while,
probes run beside it on a small share of its work: searches that keep only the states that may
reach a target ``T`` near the upper bound. One that ends below ``T`` proves the upper bound
``T − 1``; the next target lies twice as far below the bound; one that reaches ``T`` is from then on
an exact search with a better incumbent, and replaces the main search.

**The 0/1 vector.** Every state carries a node of a persistent list of flips: a state made by
flipping item ``j`` gets a new node (parent: its source's node, item ``j``); a state that came
through unchanged keeps its node. Nodes are made only for the states that survive fathoming, for a
new incumbent and for the greedy solution's items past the break item; when the node array fills,
the nodes no longer reachable from the list or the incumbent are dropped (marked from those roots,
compacted in order; parents precede children) and the array grows only if more than half is still
live. The incumbent's items are the break solution with the items on its node's path flipped.

**The GPU** (:class:`_Gpu`, :meth:`_Search._gpu_chunk`). A list of :data:`_GPU_LIST` states or
more, in a search that has run :data:`_GPU_AFTER_S` seconds (with ``backend="auto"`` also CUDA's
predicted start-up), moves to a usable GPU with its nodes: each step there is a merge path, a
max-scan (the dominance filter), a scan and a compaction (:mod:`.cuda`), with the same lists
and nodes as the CPU step; the list comes back below :data:`_GPU_BACK` states.

**Arithmetic** (integer data only: real-valued data are refused with :class:`gpudp.InputError`).
With ``P`` and ``W`` the profit and weight totals of the items that can be packed, the state values
need ``P ≤ 2^63 − 1`` (as the dense DP and the B&B) and ``W ≤ 2^63 − 1``, checked exactly and
refused past them. No sum leaves that range: a state is a subset of the items, and
``z + gp ≤ P`` since not every item fits (``z`` leaves one out, worth at least ``gp``). Every product
of a bound or of the sort is compared exactly: in int64 when all provably fit
(``max(C, W, P)·max(p, w) ≤ 2^63 − 1``), else as unsigned 128-bit products built from 32-bit
halves; the states' relaxation picks its power of two S so that every sum it forms stays within
2^62. The value and the weight of the answer are summed exactly and checked
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

from gpudp.engine import choose_backend, device_name
from gpudp.errors import InputError
from gpudp.inputs import parse_time_limit
from gpudp.jit import njit
from gpudp.solution import Solution, Stats

from ..io import INT64_MAX, KnapsackInstance, checked_solution, validate

__all__ = ["solve", "solve_instance", "cardinality_bound", "warm"]

_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)

# slots of the search's state vector ``st`` (an int64 array shared with the compiled loop)
(_S, _T, _LEN, _Z, _ZNODE, _NN, _SIDE, _CUR, _GEN, _MAXL, _CORE, _RED, _IMPROVED, _CREDIT, _PAIRED) = range(
    15
)
# the nearest items right of the core and left of it that may still flip (scanned outwards); the
# search's own threshold (a probe's target: states must reach max(z + gp, target))
_RNEXT, _LNEXT, _TARGET = 15, 16, 17
_NSLOTS = 18
# what the compiled loop returns
_DONE, _BUDGET, _NEED_LISTS, _NEED_NODES, _BIG = 0, 1, 2, 3, 4
#: state operations per call of the compiled loop (a few milliseconds): the time limit's granularity
_CHUNK = 1 << 20
#: states the main search generates before the flip bounds and the states' relaxation are computed
#: (and probes start): instances done sooner do not pay for them
_RELAX_STATES = 1 << 18
#: the probes together generate at most _PROBE_CREDIT states and 1/_PROBE_SHARE of those the main
#: search generates
_PROBE_SHARE = 16
_PROBE_CREDIT = 1 << 16
#: a list of this many states goes to the GPU for its steps, where one may be used (:class:`_Gpu`);
#: it comes back below _GPU_BACK states
_GPU_LIST = 1 << 16
_GPU_BACK = 1 << 14
#: seconds a search runs before its large lists may go to the GPU: moving a list there and loading
#: the kernels cost milliseconds, which a search that ends sooner would not win back
_GPU_AFTER_S = 0.05
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
def _reducible(j, thr, ws, ps, cap, b, wsb, psb, small, flipub):
    """Whether item j keeps its value in the break solution (taken iff ``j < b``) in every solution
    worth ``thr`` or more: by the cardinality relaxations (``flipub[j]``, :func:`_flip_bounds`) or by
    the Lagrangian relaxation at the break item's efficiency, ``P' + (C − W')·p_b/w_b`` for the break
    solution flipped at j (compared exactly). Once true it stays true: the threshold only grows."""
    if flipub[j] < thr:
        return True
    if j >= b:
        wq = wsb + ws[j]
        pq = psb + ps[j]
    else:
        wq = wsb - ws[j]
        pq = psb - ps[j]
    return not _ge(cap - wq, ps[b], thr - pq, ws[b], small)


@njit(cache=True)
def _fixed_items(thr, ws, ps, cap, b, wsb, psb, small, flipub):
    """The items that :func:`_reducible` says keep their break value at threshold ``thr`` (a
    boolean array)."""
    out = np.zeros(len(ws), np.bool_)
    for j in range(len(ws)):
        out[j] = _reducible(j, thr, ws, ps, cap, b, wsb, psb, small, flipub)
    return out


@njit(cache=True)
def _keep(w, p, kk, cap, thr, rp, rw, lp, lw, small, ls, la, lu, lim):
    """Whether a state survives fathoming at threshold ``thr`` (see :func:`_step`)."""
    if w <= cap:
        keep = rw > 0 and _ge(cap - w, rp, thr - p, rw, small)
    else:
        keep = lw > 0 and _ge(p - thr, lw, w - cap, lp, small)
    if keep and ls > 0:
        keep = ls * p - la * kk - lu * w >= lim
    return keep


@njit(cache=True)
def _step(SW, SP, SN, SK, F, cur, L, dw, dp, dk, j, cap, z, gp, target, bnd, small, lag, lagc, par, itm, nn):
    """One step of the list: merge ``[cur, :L]`` with its copy shifted by ``(dw, dp)`` (item j
    flipped: ``dk`` = +1 added, −1 removed) into row ``1 − cur``, keeping the undominated states;
    offer the best state that fits as the incumbent; fathom against the threshold
    ``thr = max(z + gp, target)``; give each surviving flipped state a new node (``par``, ``itm``,
    from ``nn``). With ``bnd = (rp, rw, lp, lw)`` (the nearest items outside the core that may still
    be added and removed; ``rw = 0`` or ``lw = 0``: none), a state of weight ``W ≤ C`` is kept only if
    ``(C − W)·rp ≥ (thr − P)·rw``, one of ``W > C`` only if ``(P − thr)·lw ≥ (W − C)·lp``; and, where
    ``lag[0] = S > 0``, only if its cardinality relaxation ``S·P − A·K − U·W + lagc`` reaches
    ``S·thr`` (``lag = (S, A, U, ·)``: :func:`_rounded_relaxation`; ``lagc`` adds the constant and
    the gains outside the core, :func:`_state_gains`; ``K = SK``, read and written only then).
    Returns ``(merged, length, nn, z, znode)``: the states after the merge and after fathoming, the
    next free node, the incumbent's value and its node (−2 where z did not improve)."""
    nxt = 1 - cur
    counted = lag[0] > 0
    i = 0
    k = 0
    m = 0
    lastp = -1
    best = -1
    while i < L or k < L:
        if k >= L or (i < L and SW[cur, i] < SW[cur, k] + dw):
            src = i
            f = 0
            i += 1
        elif i >= L or SW[cur, k] + dw < SW[cur, i]:
            src = k
            f = 1
            k += 1
        else:  # equal weights: the more profitable one
            f = 0 if SP[cur, i] >= SP[cur, k] + dp else 1
            src = k if f else i
            i += 1
            k += 1
        p = SP[cur, src] + f * dp
        if p > lastp:
            w = SW[cur, src] + f * dw
            SW[nxt, m] = w
            SP[nxt, m] = p
            SN[nxt, m] = SN[cur, src]
            if counted:
                SK[nxt, m] = SK[cur, src] + f * dk
            F[m] = f
            if w <= cap:
                best = m
            m += 1
            lastp = p
    znode = -2
    if best >= 0 and SP[nxt, best] > z:
        z = SP[nxt, best]
        if F[best]:
            par[nn] = SN[nxt, best]
            itm[nn] = j
            SN[nxt, best] = nn
            F[best] = 0
            nn += 1
        znode = SN[nxt, best]
    # fathom: keep a state only if its bounds reach thr (every value is a multiple of gp)
    thr = max(z + gp, target)
    rp, rw, lp, lw = bnd[0], bnd[1], bnd[2], bnd[3]
    ls, la, lu = lag[0], lag[1], lag[2]
    lim = ls * thr - lagc
    m2 = 0
    kk = 0
    for q in range(m):
        w = SW[nxt, q]
        p = SP[nxt, q]
        if counted:
            kk = SK[nxt, q]
        if _keep(w, p, kk, cap, thr, rp, rw, lp, lw, small, ls, la, lu, lim):
            nd = SN[nxt, q]
            if F[q]:
                par[nn] = nd
                itm[nn] = j
                nd = nn
                nn += 1
            SW[nxt, m2] = w
            SP[nxt, m2] = p
            SN[nxt, m2] = nd
            if counted:
                SK[nxt, m2] = kk
            m2 += 1
    return m, m2, nn, z, znode


@njit(cache=True)
def _next_item(ws, ps, cap, b, wsb, psb, gp, small, flipub, st, bnd):
    """The item of the next step, or −1 when the search is over (every item decided). Items that
    :func:`_reducible` fixes at the threshold are passed (counted in ``st[_RED]``); the core grows
    alternately right and left. Fills ``bnd`` with the bounding items of the step (see
    :func:`_step`: the nearest items beyond the new core that may still flip, scanned outwards and
    remembered in ``st[_RNEXT]``, ``st[_LNEXT]``). The core is not grown yet (:func:`_advance`)."""
    n = len(ws)
    while True:
        s = st[_S]
        t = st[_T]
        right = t + 1 < n and (st[_SIDE] == 0 or s == 0)
        if not right and s == 0:
            return -1
        j = t + 1 if right else s - 1
        thr = max(st[_Z] + gp, st[_TARGET])
        if not _reducible(j, thr, ws, ps, cap, b, wsb, psb, small, flipub):
            break
        st[_RED] += 1
        st[_SIDE] ^= 1
        if right:
            st[_T] = j
        else:
            st[_S] = j
    if right:
        t = j
    else:
        s = j
    r = max(st[_RNEXT], t + 1)
    while r < n and _reducible(r, thr, ws, ps, cap, b, wsb, psb, small, flipub):
        r += 1
    st[_RNEXT] = r
    lft = min(st[_LNEXT], s - 1)
    while lft >= 0 and _reducible(lft, thr, ws, ps, cap, b, wsb, psb, small, flipub):
        lft -= 1
    st[_LNEXT] = lft
    bnd[0], bnd[1], bnd[2], bnd[3] = 0, 0, 0, 0
    if r < n:
        bnd[0], bnd[1] = ps[r], ws[r]
    if lft >= 0:
        bnd[2], bnd[3] = ps[lft], ws[lft]
    return j


@njit(cache=True)
def _advance(st, j, b, L, m, m2, nn, z, znode):
    """Book a step of item j (see :func:`_step`'s results) into ``st``."""
    st[_SIDE] ^= 1
    if j >= b:
        st[_T] = j
    else:
        st[_S] = j
    st[_GEN] += L
    st[_CORE] += 1
    if znode != -2:
        st[_Z] = z
        st[_ZNODE] = znode
        st[_IMPROVED] += 1
    st[_NN] = nn
    st[_LEN] = m2
    st[_CUR] = 1 - st[_CUR]
    if m2 > st[_MAXL]:
        st[_MAXL] = m2
    st[_CREDIT] += 2 * L + m


@njit(cache=True)
def _pair_due(n, st):
    """Whether pairing is due: the merges since the last one have cost as much as it will
    (``(n − core)·log2 L``); the credit is then spent. Returns its cost (0: not due)."""
    L = st[_LEN]
    if L == 0:
        return 0
    lg = 1
    while (1 << lg) < L:
        lg += 1
    cost = (n - (st[_T] - st[_S] + 1)) * lg
    if st[_CREDIT] >= cost:
        st[_CREDIT] = 0
        return max(cost, 1)
    return 0


@njit(cache=True)
def _expand(
    ws,
    ps,
    cap,
    b,
    wsb,
    psb,
    SW,
    SP,
    SN,
    SK,
    F,
    par,
    itm,
    st,
    budget,
    small,
    ubound,
    gp,
    flipub,
    lag,
    GL,
    GR,
    big,
):
    """Grow the core until the list is empty, every item is decided or the incumbent reaches the
    upper bound ``ubound`` (``_DONE``), ``budget`` state operations are spent (``_BUDGET``), the list
    holds ``big`` states or more (``_BIG``, when ``big > 0``: a step for the GPU), or the lists or the
    node array need room (``_NEED_*``; nothing of the step was done). ``st`` holds the search's
    scalars (the ``_S`` ... slots). Steps: :func:`_next_item`, :func:`_step`, :func:`_advance`.
    ``lag``, ``GL``, ``GR``: the states' cardinality relaxation (``lag[0] = 0``: none);
    ``GL[s] + GR[t + 1]`` is the most that flipping the items outside the core ``[s, t]`` can add to
    it. Pairing (:func:`_pair`) runs whenever :func:`_pair_due` says so."""
    n = len(ws)
    work = 0
    ncap = len(par)
    lcap = SW.shape[1]
    bnd = np.zeros(4, np.int64)
    while True:
        L = st[_LEN]
        if L == 0 or st[_Z] >= ubound:
            return _DONE
        if work >= budget:
            return _BUDGET
        j = _next_item(ws, ps, cap, b, wsb, psb, gp, small, flipub, st, bnd)
        if j < 0:
            return _DONE  # every item decided: the incumbent is the best state that fits
        if big > 0 and L >= big:
            return _BIG
        if 2 * L > lcap:
            return _NEED_LISTS
        if st[_NN] + L + 2 > ncap:
            return _NEED_NODES
        s = j if j < b else st[_S]
        t = j if j >= b else st[_T]
        dk = 1 if j >= b else -1
        lagc = 0
        if lag[0] > 0:
            lagc = lag[3] + GL[s] + GR[t + 1]
        m, m2, nn, z, znode = _step(
            SW,
            SP,
            SN,
            SK,
            F,
            st[_CUR],
            L,
            dk * ws[j],
            dk * ps[j],
            dk,
            j,
            cap,
            st[_Z],
            gp,
            st[_TARGET],
            bnd,
            small,
            lag,
            lagc,
            par,
            itm,
            st[_NN],
        )
        _advance(st, j, b, L, m, m2, nn, z, znode)
        work += 2 * L + m
        cost = _pair_due(n, st)
        if cost > 0:
            work += cost
            _pair(ws, ps, cap, SW, SP, SN, par, itm, st)


@njit(cache=True)
def _count_items(par, itm, SN, SK, st, b):
    """Fill ``SK[cur, :L]``, the number of items of each state: ``b`` plus one for each item its
    node path adds (``j ≥ b``), minus one for each it removes; nodes in order (parents first)."""
    nn = st[_NN]
    cur = st[_CUR]
    kn = np.zeros(nn, np.int64)
    for x in range(nn):
        d = 1 if itm[x] >= b else -1
        kn[x] = d if par[x] < 0 else kn[par[x]] + d
    for q in range(st[_LEN]):
        nd = SN[cur, q]
        SK[cur, q] = b if nd < 0 else b + kn[nd]


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


def _exact_sum(a) -> int:
    """The sum of an int64 array as a Python integer, exactly: the high and low 32-bit halves of
    the non-negative entries are summed apart in uint64 (fewer than 2^31 entries: no wrap), the
    negative entries (none in the solver's use) in Python integers."""
    a = np.asarray(a, np.int64)
    if len(a) >= 1 << 31 or (len(a) and a.min() < 0):
        return sum(int(v) for v in a.tolist())
    u = a.view(np.uint64)
    return (int((u >> _S32).sum(dtype=np.uint64)) << 32) + int((u & _M32).sum(dtype=np.uint64))


def _limits(ps, ws, cap) -> bool:
    """Refuse totals past int64 (Python integers); True when every product of the search fits int64
    (see the module doc)."""
    total_p = _exact_sum(ps)
    total_w = _exact_sum(ws)
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
        out[i] = x > 0 and not _uge(num, ws[i], m, x)
    return out


def _positive_sum(ps, ws, d: int, a: int, m: int, num: int) -> int:
    """``Σ max(0, m·(p_i·d − a) − num·w_i)``, exactly (a Python integer): in int64 and 128-bit
    products where every factor fits (:func:`_positive_reduced`), else in Python integers."""
    lim = 1 << 62
    if int(ps.max()) * d < lim and abs(a) < lim and m < lim and num < lim:
        pos = _positive_reduced(ps, ws, np.int64(d), np.int64(a), np.int64(m), np.int64(num))
        x = ps[pos] * d - a
        return m * _exact_sum(x) - num * _exact_sum(ws[pos])
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


def _rounded_relaxation(ps, ws, cap, lam: Fraction, k: int, u: Fraction):
    """The relaxation ``(lam, k, u)`` with lam and u rounded to multiples of ``1/S``, S a power of two,
    in int64: ``(lag, r)``, ``lag = (S, A, U, U·C + A·k)`` with ``A = round(lam·S)``,
    ``U = round(u·S)``, and ``r_i = S·p_i − A − U·w_i``, the reduced costs scaled by S. Any
    multipliers of the right signs give a bound (``A ≥ 0`` with ``Σx ≤ k``, ``A ≤ 0`` with ``Σx ≥ k``,
    ``U ≥ 0``): ``(U·C + A·k + Σ max(0, r_i)) / S``, a little above the exact one. S is the largest
    power of two with ``3·S·ΣP + 2·|A|·n + 2·U·ΣW + U·C + |A|·k ≤ 2^62`` (Python integers), which
    bounds every sum :func:`_flip_bounds` and :func:`_step` form; None where not even S = 1 fits."""
    n = len(ps)
    ptot, wtot = _exact_sum(ps), _exact_sum(ws)
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


def _flip_bounds(lag, r, b: int) -> np.ndarray:
    """For every item j, an upper bound (int64) on the solutions that the relaxation ``(lag, r)``
    (:func:`_rounded_relaxation`) bounds and that flip j from its value in the break solution (taken
    iff ``j < b``): the relaxation with ``x_j`` fixed to the other value loses ``max(0, r_j)``
    (dropping an item of positive reduced cost) or ``max(0, −r_j)`` (taking one of negative reduced
    cost); rounded down, at least −1 (a weaker bound)."""
    S, total = int(lag[0]), int(lag[3]) + int(np.maximum(r, 0).sum())
    taken = np.arange(len(r)) < b
    loss = np.where(taken, np.maximum(r, 0), np.maximum(-r, 0))
    return np.maximum((total - loss) // S, -1)


def _state_gains(r, b: int) -> np.ndarray:
    """Each item's gain in the states' relaxation (see :func:`_step`): what flipping it from its break
    value can add, ``max(0, −r_i)`` for an item taken (``i < b``), ``max(0, r_i)`` for one not.
    ``GL[s] + GR[t + 1]`` of :meth:`_Search._gains` sums them outside the core ``[s, t]``: a state of
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
    bound, info, _ = _cardinality_relaxation(ps, ws, cap, z)
    return bound, info


def _cardinality_relaxation(ps, ws, cap, z):
    """:func:`cardinality_bound`, and the relaxation it used as ``(lam, k, u)`` (None where there is
    none; u the capacity multiplier of the least bound) for :func:`_rounded_relaxation`."""
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


def _gpu_usable() -> bool:
    """Whether a real GPU can run the list steps (:func:`gpudp.engine.cuda_usable`; the tests
    replace it to run them in the CUDA simulator)."""
    from gpudp.engine import cuda_usable

    return cuda_usable()


class _Gpu:
    """Whether the list steps may run on the GPU, and what they did there. Only lists of
    :data:`_GPU_LIST` states or more go there, and only once the search has run
    :data:`_GPU_AFTER_S` seconds. ``backend``: ``"cpu"`` never; ``"cuda"`` whenever a GPU is
    usable; ``"auto"`` also only once the search has run as long as starting CUDA is predicted to
    cost (:func:`gpudp.engine.gpu_start_seconds`: 0.02 s once CUDA runs in this process, 1.5 s
    before), so a search that ends sooner never starts CUDA and a longer one pays at most about
    twice."""

    def __init__(self, backend: str, t0: float):
        self.backend, self.t0 = backend, t0
        self._usable = None
        self.steps = 0
        self.seconds = 0.0
        self.note = None

    def may(self) -> bool:
        """The GPU is not ruled out (the backend, a GPU found unusable)."""
        return self.backend != "cpu" and self._usable is not False

    def allowed(self) -> bool:
        """The steps may go to the GPU now (starts CUDA to find out whether one is usable)."""
        if not self.may():
            return False
        wait = _GPU_AFTER_S
        if self.backend == "auto":
            from gpudp.engine import gpu_start_seconds

            wait = max(wait, gpu_start_seconds())
        if time.perf_counter() - self.t0 < wait:
            return False
        if self._usable is None:
            self._usable = _gpu_usable()
            if not self._usable:
                self.note = "no usable GPU: the list steps ran on the CPU"
        return self._usable

    def details(self) -> dict:
        out = {"backend": self.backend, "steps": self.steps, "seconds": round(self.seconds, 6)}
        if self.steps:
            from gpudp.engine import device_name as _name

            out["device"] = _name("cuda")
        if self.note:
            out["note"] = self.note
        return out


class _Items:
    """The items of one instance in efficiency order and what its searches share: the break
    solution, the profits' gcd, the proven upper bound ``ubound`` (Dantzig's, then the cardinality
    relaxation's and the failed probes'), the items' flip bounds and the states' relaxation."""

    def __init__(self, ws, ps, cap, b, small, gpu: _Gpu):
        self.ws, self.ps, self.cap, self.b, self.small, self.gpu = ws, ps, cap, b, small, gpu
        self.wsb = int(ws[:b].sum())
        self.psb = int(ps[:b].sum())
        self.gp = int(np.gcd.reduce(ps))
        # Dantzig's bound, exactly, rounded down to a multiple of the profits' gcd
        self.ubound = self.round_down(self.psb + (cap - self.wsb) * int(ps[b]) // int(ws[b]))
        self.bound_info = {"dantzig": self.ubound}
        self.pcum = np.cumsum(np.sort(ps)[::-1])
        # per item, a bound on every solution that flips it (from the cardinality relaxations);
        # the states' relaxation (none yet: lag[0] = 0) and each item's gain in it
        self.flipub = np.full(len(ws), INT64_MAX, np.int64)
        self.lag = np.zeros(4, np.int64)
        self.gain = np.zeros(len(ws), np.int64)
        self._kmin = None
        self._used = None
        self._relaxed = None

    def round_down(self, v: int) -> int:
        """The largest multiple of the profits' gcd at most v (every value is one)."""
        return v - v % self.gp

    def bound(self, z: int):
        """Tighten ``ubound`` by the cardinality relaxation at incumbent z (when its ``k_min`` has
        changed since the last time)."""
        kmin = int(np.searchsorted(self.pcum, z + self.gp))
        if kmin == self._kmin:
            return
        self._kmin = kmin
        bound, info, self._used = _cardinality_relaxation(self.ps, self.ws, self.cap, z + self.gp - 1)
        self.bound_info.update(info)
        if bound is not None:
            self.ubound = min(self.ubound, self.round_down(bound))

    def relax(self) -> bool:
        """The flip bounds and the states' relaxation of the last cardinality relaxation (once for
        each); True when they changed."""
        if self._used is None or self._used is self._relaxed:
            return False
        self._relaxed = self._used
        ps, ws, cap = self.ps, self.ws, self.cap
        lam, k, u = self._used
        rounded = _rounded_relaxation(ps, ws, cap, lam, k, u)
        if rounded is None:
            return False
        lag, r = rounded
        np.minimum(self.flipub, _flip_bounds(lag, r, self.b), out=self.flipub)
        self.lag, self.gain = lag, _state_gains(r, self.b)
        self.bound_info["state_scale"] = int(lag[0])
        return True


class _Search:
    """The state lists, the node array and the scalars of one search, grown on demand. A search
    with a ``target`` (a probe) keeps only the states that may reach ``max(z + gp, target)``."""

    def __init__(self, items: _Items, greedy_x, z, target=0):
        self.items = items
        b = items.b
        # the greedy solution as a chain of nodes: the break solution plus its items past b
        extra = np.flatnonzero(greedy_x[b:]) + b
        lcap, ncap = _LIST_START, max(_NODE_START, 2 * len(extra) + 8)
        self.SW = np.zeros((2, lcap), np.int64)
        self.SP = np.zeros((2, lcap), np.int64)
        self.SN = np.zeros((2, lcap), np.int64)
        self.SK = np.zeros((2, 1), np.int32)  # the item counts: sized when counted (chunk)
        self.F = np.zeros(lcap, np.int8)
        self.par = np.zeros(ncap, np.int64)
        self.itm = np.zeros(ncap, np.int64)
        self.par[: len(extra)] = np.arange(-1, len(extra) - 1)
        self.itm[: len(extra)] = extra
        self.SW[0, 0], self.SP[0, 0], self.SN[0, 0] = items.wsb, items.psb, -1
        st = np.zeros(_NSLOTS, np.int64)
        st[_S], st[_T], st[_LEN], st[_Z], st[_ZNODE], st[_NN] = b, b - 1, 1, z, len(extra) - 1, len(extra)
        st[_RNEXT], st[_LNEXT], st[_TARGET] = b, b - 1, target
        self.st = st
        self.target = target
        self.collections = 0
        n = len(items.ws)
        self.GL = np.zeros(n + 1, np.int64)
        self.GR = np.zeros(n + 1, np.int64)
        self._lag = None
        self._counted = False
        self._bnd = np.zeros(4, np.int64)
        self.dev = None  # the list on the GPU (sparse_cuda.DeviceList) while it is large
        self._gpu_off = False  # no more GPU for this search (its memory)

    @property
    def z(self) -> int:
        """The incumbent's value."""
        return int(self.st[_Z])

    @property
    def generated(self) -> int:
        """The states this search has generated."""
        return int(self.st[_GEN])

    def _gains(self):
        """``GL``, ``GR`` of the states' relaxation (:func:`_state_gains`): the items' gains,
        those fixed at this search's threshold left out."""
        it = self.items
        if self._lag is it.lag:
            return
        self._lag = it.lag
        if it.lag[0] == 0:
            return  # no relaxation: GL and GR are not read
        thr = max(self.z + it.gp, self.target)
        fixed = _fixed_items(thr, it.ws, it.ps, it.cap, it.b, it.wsb, it.psb, it.small, it.flipub)
        g = np.where(fixed, 0, it.gain)
        self.GL[0] = 0
        np.cumsum(g, out=self.GL[1:])
        self.GR[-1] = 0
        self.GR[:-1] = np.cumsum(g[::-1])[::-1]

    def chunk(self, budget=_CHUNK) -> int:
        """Run the search for about ``budget`` state operations: the compiled loop on the CPU, or the
        list steps on the GPU while the list is large (:meth:`_gpu_chunk`); makes room when asked.
        Returns its code (``_DONE``: this search is over). The states' item counts are kept only
        while the states' relaxation is on (:func:`_count_items` counts them when it starts)."""
        it = self.items
        counting = it.lag[0] > 0
        if self.dev is not None and counting != self._counted:
            self._leave_gpu()  # the counts start or stop on the host
        if self.dev is not None:
            self._gains()
            return self._gpu_chunk(budget)
        if not counting and self._counted:
            self._counted = False
            self.SK = np.zeros((2, 1), np.int32)
        elif counting and not self._counted:
            self.SK = np.zeros(self.SW.shape, np.int32)
            _count_items(self.par, self.itm, self.SN, self.SK, self.st, it.b)
            self._counted = True
        self._gains()
        big = _GPU_LIST if not self._gpu_off and it.gpu.may() else 0
        code = self._cpu_chunk(budget, big)
        if code == _BIG:
            if it.gpu.allowed() and self._enter_gpu():
                return self._gpu_chunk(budget)
            self._gpu_off = self._gpu_off or not it.gpu.may()
            code = self._cpu_chunk(budget, 0)
        return code

    def _cpu_chunk(self, budget, big) -> int:
        """One call of :func:`_expand` (``big``: the list length at which it hands over to the GPU,
        0: never), then the room it asked for."""
        it = self.items
        lists = (self.SW, self.SP, self.SN, self.SK, self.F, self.par, self.itm, self.st)
        bounds = (budget, it.small, it.ubound, it.gp, it.flipub, it.lag, self.GL, self.GR, big)
        code = _expand(it.ws, it.ps, it.cap, it.b, it.wsb, it.psb, *lists, *bounds)
        if code == _NEED_LISTS:  # a merge needs room for 2L states: 3L leaves room to grow
            self._grow_lists(3 * int(self.st[_LEN]) + 2)
        elif code == _NEED_NODES:
            live = _collect(self.par, self.itm, self.SN, self.st)
            self.collections += 1
            need = live + int(self.st[_LEN]) + 2  # as _expand asks
            if need > len(self.par) or live > len(self.par) // 2:
                self._grow_nodes(max(2 * len(self.par), 2 * need))
        return code

    # -- the GPU list steps (problems/knapsack/sparse/cuda.py) ------------------------------------------

    def _device_room(self, size: int, nodes: int) -> bool:
        """Whether the device lists and node arrays of these sizes fit in half the free GPU memory."""
        from .cuda import DeviceList

        return DeviceList.fits(size, nodes)

    def _enter_gpu(self) -> bool:
        """Move the list and the nodes to the GPU (False, and the search stays on the CPU, where its
        arrays would not fit in half the free GPU memory)."""
        from .cuda import DeviceList

        it, st = self.items, self.st
        L, cur, nn = int(st[_LEN]), int(st[_CUR]), int(st[_NN])
        size, nodes = 3 * L + 2, max(len(self.par), 2 * (nn + L + 2))
        if not self._device_room(size, nodes):
            self._gpu_off = True
            it.gpu.note = f"the GPU's free memory does not hold a list of {L} states: on the CPU"
            return False
        t = time.perf_counter()
        self.dev = DeviceList(it.ws, it.ps, size, nodes)
        K = self.SK[cur] if self._counted else None
        self.dev.upload(self.SW[cur], self.SP[cur], self.SN[cur], K, L, self.par, self.itm, nn)
        it.gpu.seconds += time.perf_counter() - t
        return True

    def _leave_gpu(self):
        """Bring the list and the nodes back to the host arrays and free the device's."""
        d, st = self.dev, self.st
        t = time.perf_counter()
        L, cur, nn = int(st[_LEN]), int(st[_CUR]), int(st[_NN])
        W, P, N, K = d.download(L, self._counted)
        par, itm = d.download_nodes(nn)
        if self.SW.shape[1] < 2 * L + 2:
            self._grow_lists(3 * L + 2, keep=False)
        if len(self.par) < nn + L + 2:
            self._grow_nodes(2 * (nn + L + 2), keep=False)
        self.SW[cur, :L], self.SP[cur, :L], self.SN[cur, :L] = W, P, N
        if K is not None:
            self.SK[cur, :L] = K
        self.par[:nn], self.itm[:nn] = par, itm
        self.dev = None
        self.items.gpu.seconds += time.perf_counter() - t

    def _gpu_collect(self):
        """Drop the unreachable nodes (:func:`_collect` on the host, as the CPU search does) and grow
        the device's node arrays where more than half is still live."""
        d, st = self.dev, self.st
        L, cur = int(st[_LEN]), int(st[_CUR])
        par, itm = d.download_nodes(int(st[_NN]))
        SN = np.zeros((2, max(L, 1)), np.int64)
        if L:
            SN[cur, :L] = d.N[d.cur][:L].copy_to_host()
        live = _collect(par, itm, SN, st)
        self.collections += 1
        nodes = d.nodes
        need = live + L + 2
        if need > nodes or live > nodes // 2:
            nodes = max(2 * nodes, 2 * need)
            self._room(16 * nodes)
        d.replace_nodes(par, itm, live, nodes)
        d.set_nodes(SN[cur], L)

    def _gpu_chunk(self, budget) -> int:
        """The steps of :func:`_expand` with :func:`.cuda.step_cuda` for :func:`_step` and
        :func:`.cuda.pair_cuda` for :func:`_pair`, while the list holds at least
        :data:`_GPU_BACK` states; then the list goes back to the host."""
        from . import cuda as sparse_cuda

        it, st, d = self.items, self.st, self.dev
        ws, ps, n, b = it.ws, it.ps, len(it.ws), it.b
        t0 = time.perf_counter()
        work = 0
        code = _BUDGET
        while True:
            L = int(st[_LEN])
            if L == 0 or st[_Z] >= it.ubound:
                code = _DONE
                break
            if work >= budget:
                break
            j = _next_item(ws, ps, it.cap, b, it.wsb, it.psb, it.gp, it.small, it.flipub, st, self._bnd)
            if j < 0:
                code = _DONE
                break
            if L < _GPU_BACK:
                break
            if 2 * L > d.size:
                if not self._device_room(3 * L + 2, d.nodes):
                    self._gpu_off = True
                    it.gpu.note = f"the GPU's free memory does not hold a list of {L} states: on the CPU"
                    break
                d.grow_lists(3 * L + 2, L, self._counted)
            if st[_NN] + L + 2 > d.nodes:
                self._gpu_collect()
            s = j if j < b else int(st[_S])
            t = j if j >= b else int(st[_T])
            dk = 1 if j >= b else -1
            lagc = int(it.lag[3] + self.GL[s] + self.GR[t + 1]) if it.lag[0] > 0 else 0
            m, m2, nn, z, znode = sparse_cuda.step_cuda(
                d, L, dk * int(ws[j]), dk * int(ps[j]), dk, j, it.cap, int(st[_Z]), it.gp, int(st[_TARGET]),
                self._bnd, it.small, it.lag, lagc, int(st[_NN]),
            )  # fmt: skip
            _advance(st, j, b, L, m, m2, nn, z, znode)
            work += 2 * L + m
            it.gpu.steps += 1
            cost = _pair_due(n, st)
            if cost > 0:
                work += cost
                self._gpu_pair()
        it.gpu.seconds += time.perf_counter() - t0
        if code == _DONE or self.st[_LEN] < _GPU_BACK or self._gpu_off:
            self._leave_gpu()
        return code

    def _gpu_pair(self):
        """:func:`_pair` on the device list (:func:`.cuda.pair_cuda`); the new incumbent's node
        is written into the device's node arrays."""
        from .cuda import pair_cuda

        d, st, it = self.dev, self.st, self.items
        st[_PAIRED] += 1
        best = pair_cuda(d, int(st[_LEN]), it.cap, int(st[_S]), int(st[_T]), len(it.ws), int(st[_Z]))
        if best is not None:
            val, q, j = best
            nn = int(st[_NN])
            d.put_node(nn, d.node_of(q), j)
            st[_NN] = nn + 1
            st[_Z] = val
            st[_ZNODE] = nn
            st[_IMPROVED] += 1

    @staticmethod
    def _room(nbytes):
        """Refuse (MemoryError, caught by the solver) a growth past half of the memory this process
        may still use (cgroup and ulimit included), before the system would kill it."""
        from gpudp.memory import available_memory

        if nbytes > available_memory() // 2:
            raise MemoryError(f"the state lists would need {nbytes / 2**30:.2f} GiB more")

    def _grow_lists(self, size, keep=True):
        """Lists of ``size`` states a row, the current row's states copied where ``keep``."""
        self._room(57 * size)  # two rows of weights, profits, nodes (int64), counts (int32), flags
        cur, L = int(self.st[_CUR]), int(self.st[_LEN]) if keep else 0
        for name in ("SW", "SP", "SN", "SK") if self._counted else ("SW", "SP", "SN"):
            old = getattr(self, name)
            new = np.zeros((2, size), old.dtype)
            new[cur, :L] = old[cur, :L]
            setattr(self, name, new)
        self.F = np.zeros(size, np.int8)

    def _grow_nodes(self, size, keep=True):
        """Node arrays of ``size`` entries, the nodes in use copied where ``keep``."""
        self._room(2 * 8 * size)
        nn = int(self.st[_NN]) if keep else 0
        for name in ("par", "itm"):
            new = np.zeros(size, np.int64)
            new[:nn] = getattr(self, name)[:nn]
            setattr(self, name, new)

    def vector(self) -> np.ndarray:
        """The incumbent's 0/1 vector (items in efficiency order); from the device's nodes while the
        list is there."""
        par, itm = self.par, self.itm
        if self.dev is not None:
            par, itm = self.dev.download_nodes(int(self.st[_NN]))
        x = np.zeros(len(self.items.ws), np.int8)
        x[: self.items.b] = 1
        node = int(self.st[_ZNODE])
        while node >= 0:
            x[itm[node]] ^= 1
            node = int(par[node])
        return x


class _Driver:
    """The main search and its probes.

    After each chunk the cardinality relaxation at the incumbent tightens the upper bound (the search
    stops as soon as the incumbent reaches it) and, once the main search has generated
    :data:`_RELAX_STATES` states, gives the flip bounds and the states' relaxation. From then on
    **probes** run beside the main search, taking turns so that together they generate at most
    :data:`_PROBE_CREDIT` states and ``1/_PROBE_SHARE`` of those it generates: a probe is a search
    with a target ``T`` above the incumbent that keeps only the states that may reach ``T``, so it is
    fast when ``T`` is near the upper bound. A probe that ends below its
    target proves that no solution reaches ``T`` (the upper bound becomes ``T − 1``, rounded down to
    a multiple of ``gp``), and the next probe's target lies twice as far below the bound. A probe that
    reaches its target is, from then on, an exact search with a better incumbent than the main one:
    it replaces it (and the probing ends). When the first probe (the target: the upper bound itself)
    is not refuted within :data:`_PROBE_CREDIT` states, the bounds cannot tell the states near the
    bound apart and the probing stops for good."""

    def __init__(self, items: _Items, greedy_x, z0):
        self.items, self.greedy_x, self.z0 = items, greedy_x, z0
        self.main = _Search(items, greedy_x, z0)
        self.probe = None
        self.probing = False
        self._hopeless = False  # the first probe was not refuted within its credit: no more probes
        self.gap = items.gp
        # probes started, failed (proven below their target), whether one answered, and the states
        # the probes that did not answer generated
        self.record = {"probes": 0, "failed": 0, "answered": False, "states": 0}
        self.dropped = 0  # states generated by the searches dropped (probes, a replaced main search)
        self._largest = 0  # their largest list

    def best(self) -> _Search:
        """The search with the best incumbent (the main one unless a probe has found better)."""
        if self.probe is not None and self.probe.z > self.main.z:
            return self.probe
        return self.main

    def generated(self) -> int:
        """States generated by every search."""
        return self.main.generated + self.dropped + (0 if self.probe is None else self.probe.generated)

    def largest(self) -> int:
        """The largest list of every search."""
        return max(
            self._largest, int(self.main.st[_MAXL]), 0 if self.probe is None else int(self.probe.st[_MAXL])
        )

    def run(self, deadline) -> bool:
        """Search until proven (True) or past ``deadline`` (False)."""
        items = self.items
        while True:
            if deadline is not None and time.perf_counter() >= deadline:
                return False
            probe, main = self.probe, self.main
            share = self.record["states"] + (0 if probe is None else probe.generated)
            allowance = _PROBE_CREDIT + main.generated // _PROBE_SHARE - share  # the probes' states due
            run = probe if probe is not None and allowance > 0 else main
            try:
                code = run.chunk(_CHUNK if run is main else min(_CHUNK, allowance))
            except MemoryError:
                if run is main:
                    raise
                self._drop_probe(stop=True)  # a probe that outgrows the memory: the main search alone
                continue
            if run is probe:
                if probe.z >= probe.target:  # an exact search with a better incumbent from here on
                    self.record["answered"] = True
                    self.dropped += main.generated
                    self._largest = max(self._largest, int(main.st[_MAXL]))
                    self.main, self.probe, self.probing = probe, None, False
                elif code == _DONE:  # no solution reaches the target
                    items.ubound = min(items.ubound, items.round_down(probe.target - 1))
                    self.record["failed"] += 1
                    self._drop_probe(stop=False)
                    self.gap *= 2
                elif self.record["failed"] == 0 and probe.generated >= _PROBE_CREDIT:
                    # not even the bound itself is refuted quickly: the bounds do not separate
                    # the states near it (strongly correlated, circle), and no probe will pay
                    self._drop_probe(stop=True)
                    self._hopeless = True
            main = self.main
            if (run is main and code == _DONE) or main.z >= items.ubound:
                return True
            items.bound(main.z)
            if main.generated >= _RELAX_STATES and items.relax() and not self._hopeless:
                self.probing = True
            if self.probe is not None and main.z >= self.probe.target:
                self._drop_probe(stop=True)
            if self.probing and self.probe is None:
                target = items.ubound + items.gp - self.gap
                if target > main.z + items.gp:
                    self.probe = _Search(items, self.greedy_x, self.z0, target)
                    self.record["probes"] += 1
                else:
                    self.probing = False

    def _drop_probe(self, stop: bool):
        """Drop the probe, its work counted; with ``stop``, no more probes until the next relaxation."""
        self.record["states"] += self.probe.generated
        self.dropped += self.probe.generated
        self._largest = max(self._largest, int(self.probe.st[_MAXL]))
        self.probe = None
        if stop:
            self.probing = False


def solve_instance(inst: KnapsackInstance, time_limit=None, backend: str = "auto") -> Solution:
    """Solve a validated instance (:func:`gpudp.problems.knapsack.io.validate`); see :func:`solve`."""
    t0 = time.perf_counter()
    if backend != "auto":  # an unknown backend, or "cuda" without a usable GPU: refused like every solver
        choose_backend(backend)
    gpu = _Gpu(backend, t0)
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
    if len(free) and _exact_sum(w[free]) <= cap:
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
        items = _Items(ws, ps, cap_used, b, small, gpu)
        driver = _Driver(items, greedy_x, z0)
        try:
            complete = driver.run(deadline)
            message = "optimal: no state can lead above the incumbent"
            if not complete:
                details["stopped"] = "time"
                message = f"time limit of {time_limit} s reached: the best solution found, not proven optimal"
        except MemoryError as e:
            complete = False
            details["stopped"] = "memory"
            message = f"out of memory ({e}): the best solution found, not proven optimal"
        search = driver.best()
        st = search.st
        x[order] = search.vector()
        generated = driver.generated()
        details.update(
            break_item=b,
            greedy_value=z0,
            incumbent=int(st[_Z]),
            core_items=int(st[_CORE]),
            reduced_items=int(st[_RED]),
            core_range=[int(st[_S]), int(st[_T])],
            states_generated=generated,
            largest_list=driver.largest(),
            improvements=int(st[_IMPROVED]),
            node_collections=search.collections,
            pairings=int(st[_PAIRED]),
            probes=driver.record,
            upper_bound=items.ubound,
            bounds=items.bound_info,
            arithmetic="int64" if small else "128-bit products",
        )
        if gpu.steps:
            stats.backend, stats.device = "cuda", gpu.details()["device"]
        stats.cells = generated
        stats.extra.update(states_generated=generated, largest_list=details["largest_list"])
    sel = np.flatnonzero(x == 1)
    value = _exact_sum(p[sel])
    details.update(weight=_exact_sum(w[sel]), message=message, integral=True, gpu=gpu.details())
    stats.seconds = time.perf_counter() - t0
    claimed = details["incumbent"] + _exact_sum(p[forced]) if "incumbent" in details else None
    return checked_solution(p, w, cap, x, value, stats, details, complete, claimed)


def solve(profits, weights, capacity, time_limit=None, name: str = "", backend: str = "auto") -> Solution:
    """Solve a 0/1 knapsack with integer profits and weights by the sparse-state DP; returns a
    checked :class:`gpudp.Solution`.

    The search runs on the CPU; with ``backend`` ``"auto"`` or ``"cuda"`` the steps of a list of
    :data:`_GPU_LIST` states or more run on a usable GPU (:class:`_Gpu`: ``"auto"`` only once CUDA has
    started in this process or the search has run as long as its start-up), with the same results;
    ``"cpu"`` keeps them on the CPU. ``details["gpu"]`` says how many steps ran there. ``"cuda"``
    where no GPU is usable raises :class:`gpudp.BackendError`, as every solver does.

    ``solution`` is the 0/1 vector (int8) in the caller's item order, ``details["weight"]`` its
    weight, ``details["method"]`` is ``"sparse"``; ``details`` also gives the states generated, the
    largest list, the core and the bounds. ``optimal`` is False (``details["message"]`` says why,
    ``details["stopped"]`` is ``"time"`` or ``"memory"``) when ``time_limit`` seconds passed first or
    the lists outgrew the memory: the value is then that of the best solution found. Real-valued
    data, and totals past int64, raise :class:`gpudp.InputError`.

    >>> solve([10, 7, 8], [5, 4, 3], 8).value
    18
    """
    return solve_instance(
        validate(profits, weights, capacity, name=name), time_limit=time_limit, backend=backend
    )


def warm():
    """Compile every compiled function of the search (or load it from numba's cache) by solving two
    small instances with the bounds, the probes, the pairing and the node collection all made to run
    (the module's thresholds lowered meanwhile), so that a timed solve pays none of it: on a machine
    whose cache is cold, a function first used inside a timed solve compiles there (tenths of a
    second each)."""
    global _CHUNK, _RELAX_STATES, _PROBE_SHARE, _LIST_START, _NODE_START
    saved = _CHUNK, _RELAX_STATES, _PROBE_SHARE, _LIST_START, _NODE_START
    _CHUNK, _RELAX_STATES, _PROBE_SHARE, _LIST_START, _NODE_START = 8, 0, 1, 2, 2
    try:
        from ..classes import pisinger_instance

        for cls, seed in ((14, 2), (5, 2)):  # probes that fail, a probe that answers
            p, w, c = pisinger_instance(cls, 60, 1000, seed=seed)
            solve(p, w, c, backend="cpu")
        solve([2**62, 3, 2**61], [2**61, 1, 2**60], 2**61 + 2**60, backend="cpu")  # 128-bit products
        # what the GPU path calls from Python (the argument types of _Search._gpu_chunk)
        ws, ps = np.array([3, 2, 2], np.int64), np.array([6, 3, 2], np.int64)
        st = np.zeros(_NSLOTS, np.int64)
        st[_S], st[_T], st[_LEN], st[_RNEXT], st[_LNEXT] = 1, 0, 1, 1, 0
        flipub = np.full(3, INT64_MAX, np.int64)
        j = _next_item(ws, ps, 4, 1, 3, 6, 1, True, flipub, st, np.zeros(4, np.int64))
        _advance(st, j, 1, 1, 2, 2, 0, 6, -2)
        _pair_due(3, st)
    finally:
        _CHUNK, _RELAX_STATES, _PROBE_SHARE, _LIST_START, _NODE_START = saved
