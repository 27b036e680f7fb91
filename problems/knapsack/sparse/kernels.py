"""The compiled loop of the sparse-state DP: one step of the state list (merge, incumbent,
fathoming), item reduction, pairing, the node array's collection, and :func:`expand`, the loop that
runs them on the CPU. A search's scalars live in an int64 vector ``st`` whose slots are the ``ST_*``
constants; :func:`expand` returns one of the codes ``DONE`` ... ``BIG``."""

from __future__ import annotations

import numpy as np

from gpudp.jit import njit

from .exact import ge

__all__ = [
    "NSLOTS",
    "DONE",
    "BUDGET",
    "NEED_LISTS",
    "NEED_NODES",
    "BIG",
    "greedy",
    "pair",
    "fixed_items",
    "step",
    "next_item",
    "advance",
    "pair_due",
    "expand",
    "count_items",
    "collect",
    "ST_S",
    "ST_T",
    "ST_LEN",
    "ST_Z",
    "ST_ZNODE",
    "ST_NN",
    "ST_SIDE",
    "ST_CUR",
    "ST_GEN",
    "ST_MAXL",
    "ST_CORE",
    "ST_RED",
    "ST_IMPROVED",
    "ST_CREDIT",
    "ST_PAIRED",
    "ST_RNEXT",
    "ST_LNEXT",
    "ST_TARGET",
]


# slots of the search's state vector ``st`` (an int64 array shared with the compiled loop)
ST_S, ST_T, ST_LEN, ST_Z, ST_ZNODE, ST_NN, ST_SIDE, ST_CUR = range(8)
ST_GEN, ST_MAXL, ST_CORE, ST_RED, ST_IMPROVED, ST_CREDIT, ST_PAIRED = range(8, 15)
# the nearest items right of the core and left of it that may still flip (scanned outwards); the
# search's own threshold (a probe's target: states must reach max(z + gp, target))
ST_RNEXT, ST_LNEXT, ST_TARGET = 15, 16, 17
NSLOTS = 18
# what the compiled loop returns
DONE, BUDGET, NEED_LISTS, NEED_NODES, BIG = 0, 1, 2, 3, 4


@njit(cache=True)
def greedy(ws, ps, cap, x):
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
def pair(ws, ps, cap, SW, SP, SN, par, itm, st):
    """Pairing (a lower-bound heuristic): every state with one item outside the core, added (right
    of the core) or removed (left of it); the best pair that fits becomes the incumbent if better.
    Needs one free node."""
    n = len(ws)
    cur = st[ST_CUR]
    L = st[ST_LEN]
    bestv = st[ST_Z]
    bq = -1
    bj = -1
    for j in range(st[ST_T] + 1, n):
        q = _last_le(SW, cur, L, cap - ws[j], 0)
        if q >= 0 and SP[cur, q] + ps[j] > bestv:
            bestv = SP[cur, q] + ps[j]
            bq = q
            bj = j
    for j in range(st[ST_S]):
        q = _last_le(SW, cur, L, cap, ws[j])
        if q >= 0 and SP[cur, q] - ps[j] > bestv:
            bestv = SP[cur, q] - ps[j]
            bq = q
            bj = j
    st[ST_PAIRED] += 1
    if bq >= 0:
        nn = st[ST_NN]
        par[nn] = SN[cur, bq]
        itm[nn] = bj
        st[ST_NN] = nn + 1
        st[ST_Z] = bestv
        st[ST_ZNODE] = nn
        st[ST_IMPROVED] += 1


@njit(cache=True)
def _reducible(j, thr, ws, ps, cap, b, wsb, psb, small, flipub):
    """Whether item j keeps its value in the break solution (taken iff ``j < b``) in every solution
    worth ``thr`` or more: by the cardinality relaxations (``flipub[j]``, :func:`flip_bounds`) or by
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
    return not ge(cap - wq, ps[b], thr - pq, ws[b], small)


@njit(cache=True)
def fixed_items(thr, ws, ps, cap, b, wsb, psb, small, flipub):
    """The items that :func:`_reducible` says keep their break value at threshold ``thr`` (a
    boolean array)."""
    out = np.zeros(len(ws), np.bool_)
    for j in range(len(ws)):
        out[j] = _reducible(j, thr, ws, ps, cap, b, wsb, psb, small, flipub)
    return out


@njit(cache=True)
def _keep(w, p, kk, cap, thr, rp, rw, lp, lw, small, ls, la, lu, lim):
    """Whether a state survives fathoming at threshold ``thr`` (see :func:`step`)."""
    if w <= cap:
        keep = rw > 0 and ge(cap - w, rp, thr - p, rw, small)
    else:
        keep = lw > 0 and ge(p - thr, lw, w - cap, lp, small)
    if keep and ls > 0:
        keep = ls * p - la * kk - lu * w >= lim
    return keep


@njit(cache=True)
def step(SW, SP, SN, SK, F, cur, L, dw, dp, dk, j, cap, z, gp, target, bnd, small, lag, lagc, par, itm, nn):
    """One step of the list: merge ``[cur, :L]`` with its copy shifted by ``(dw, dp)`` (item j
    flipped: ``dk`` = +1 added, −1 removed) into row ``1 − cur``, keeping the undominated states;
    offer the best state that fits as the incumbent; fathom against the threshold
    ``thr = max(z + gp, target)``; give each surviving flipped state a new node (``par``, ``itm``,
    from ``nn``). With ``bnd = (rp, rw, lp, lw)`` (the nearest items outside the core that may still
    be added and removed; ``rw = 0`` or ``lw = 0``: none), a state of weight ``W ≤ C`` is kept only if
    ``(C − W)·rp ≥ (thr − P)·rw``, one of ``W > C`` only if ``(P − thr)·lw ≥ (W − C)·lp``; and, where
    ``lag[0] = S > 0``, only if its cardinality relaxation ``S·P − A·K − U·W + lagc`` reaches
    ``S·thr`` (``lag = (S, A, U, ·)``: :func:`rounded_relaxation`; ``lagc`` adds the constant and
    the gains outside the core, :func:`state_gains`; ``K = SK``, read and written only then).
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
def next_item(ws, ps, cap, b, wsb, psb, gp, small, flipub, st, bnd):
    """The item of the next step, or −1 when the search is over (every item decided). Items that
    :func:`_reducible` fixes at the threshold are passed (counted in ``st[ST_RED]``); the core grows
    alternately right and left. Fills ``bnd`` with the bounding items of the step (see
    :func:`step`: the nearest items beyond the new core that may still flip, scanned outwards and
    remembered in ``st[ST_RNEXT]``, ``st[ST_LNEXT]``). The core is not grown yet (:func:`advance`)."""
    n = len(ws)
    while True:
        s = st[ST_S]
        t = st[ST_T]
        right = t + 1 < n and (st[ST_SIDE] == 0 or s == 0)
        if not right and s == 0:
            return -1
        j = t + 1 if right else s - 1
        thr = max(st[ST_Z] + gp, st[ST_TARGET])
        if not _reducible(j, thr, ws, ps, cap, b, wsb, psb, small, flipub):
            break
        st[ST_RED] += 1
        st[ST_SIDE] ^= 1
        if right:
            st[ST_T] = j
        else:
            st[ST_S] = j
    if right:
        t = j
    else:
        s = j
    r = max(st[ST_RNEXT], t + 1)
    while r < n and _reducible(r, thr, ws, ps, cap, b, wsb, psb, small, flipub):
        r += 1
    st[ST_RNEXT] = r
    lft = min(st[ST_LNEXT], s - 1)
    while lft >= 0 and _reducible(lft, thr, ws, ps, cap, b, wsb, psb, small, flipub):
        lft -= 1
    st[ST_LNEXT] = lft
    bnd[0], bnd[1], bnd[2], bnd[3] = 0, 0, 0, 0
    if r < n:
        bnd[0], bnd[1] = ps[r], ws[r]
    if lft >= 0:
        bnd[2], bnd[3] = ps[lft], ws[lft]
    return j


@njit(cache=True)
def advance(st, j, b, L, m, m2, nn, z, znode):
    """Book a step of item j (see :func:`step`'s results) into ``st``."""
    st[ST_SIDE] ^= 1
    if j >= b:
        st[ST_T] = j
    else:
        st[ST_S] = j
    st[ST_GEN] += L
    st[ST_CORE] += 1
    if znode != -2:
        st[ST_Z] = z
        st[ST_ZNODE] = znode
        st[ST_IMPROVED] += 1
    st[ST_NN] = nn
    st[ST_LEN] = m2
    st[ST_CUR] = 1 - st[ST_CUR]
    if m2 > st[ST_MAXL]:
        st[ST_MAXL] = m2
    st[ST_CREDIT] += 2 * L + m


@njit(cache=True)
def pair_due(n, st):
    """Whether pairing is due: the merges since the last one have cost as much as it will
    (``(n − core)·log2 L``); the credit is then spent. Returns its cost (0: not due)."""
    L = st[ST_LEN]
    if L == 0:
        return 0
    lg = 1
    while (1 << lg) < L:
        lg += 1
    cost = (n - (st[ST_T] - st[ST_S] + 1)) * lg
    if st[ST_CREDIT] >= cost:
        st[ST_CREDIT] = 0
        return max(cost, 1)
    return 0


@njit(cache=True)
def expand(
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
    upper bound ``ubound`` (``DONE``), ``budget`` state operations are spent (``BUDGET``), the list
    holds ``big`` states or more (``BIG``, when ``big > 0``: a step for the GPU), or the lists or the
    node array need room (``NEED_*``; nothing of the step was done). ``st`` holds the search's
    scalars (the ``ST_S`` ... slots). Steps: :func:`next_item`, :func:`step`, :func:`advance`.
    ``lag``, ``GL``, ``GR``: the states' cardinality relaxation (``lag[0] = 0``: none);
    ``GL[s] + GR[t + 1]`` is the most that flipping the items outside the core ``[s, t]`` can add to
    it. Pairing (:func:`pair`) runs whenever :func:`pair_due` says so."""
    n = len(ws)
    work = 0
    ncap = len(par)
    lcap = SW.shape[1]
    bnd = np.zeros(4, np.int64)
    while True:
        L = st[ST_LEN]
        if L == 0 or st[ST_Z] >= ubound:
            return DONE
        if work >= budget:
            return BUDGET
        j = next_item(ws, ps, cap, b, wsb, psb, gp, small, flipub, st, bnd)
        if j < 0:
            return DONE  # every item decided: the incumbent is the best state that fits
        if big > 0 and L >= big:
            return BIG
        if 2 * L > lcap:
            return NEED_LISTS
        if st[ST_NN] + L + 2 > ncap:
            return NEED_NODES
        s = j if j < b else st[ST_S]
        t = j if j >= b else st[ST_T]
        dk = 1 if j >= b else -1
        lagc = 0
        if lag[0] > 0:
            lagc = lag[3] + GL[s] + GR[t + 1]
        m, m2, nn, z, znode = step(
            SW,
            SP,
            SN,
            SK,
            F,
            st[ST_CUR],
            L,
            dk * ws[j],
            dk * ps[j],
            dk,
            j,
            cap,
            st[ST_Z],
            gp,
            st[ST_TARGET],
            bnd,
            small,
            lag,
            lagc,
            par,
            itm,
            st[ST_NN],
        )
        advance(st, j, b, L, m, m2, nn, z, znode)
        work += 2 * L + m
        cost = pair_due(n, st)
        if cost > 0:
            work += cost
            pair(ws, ps, cap, SW, SP, SN, par, itm, st)


@njit(cache=True)
def count_items(par, itm, SN, SK, st, b):
    """Fill ``SK[cur, :L]``, the number of items of each state: ``b`` plus one for each item its
    node path adds (``j ≥ b``), minus one for each it removes; nodes in order (parents first)."""
    nn = st[ST_NN]
    cur = st[ST_CUR]
    kn = np.zeros(nn, np.int64)
    for x in range(nn):
        d = 1 if itm[x] >= b else -1
        kn[x] = d if par[x] < 0 else kn[par[x]] + d
    for q in range(st[ST_LEN]):
        nd = SN[cur, q]
        SK[cur, q] = b if nd < 0 else b + kn[nd]


@njit(cache=True)
def collect(par, itm, SN, st):
    """Drop the nodes no longer reachable from the list's states or the incumbent; compacts in place
    (parents precede children, so one pass remaps) and updates the references. Returns the count."""
    nn = st[ST_NN]
    cur = st[ST_CUR]
    L = st[ST_LEN]
    mark = np.zeros(nn, np.bool_)
    for q in range(L + 1):
        r = SN[cur, q] if q < L else st[ST_ZNODE]
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
    if st[ST_ZNODE] >= 0:
        st[ST_ZNODE] = remap[st[ST_ZNODE]]
    st[ST_NN] = c
    return c
