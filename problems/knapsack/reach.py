"""0/1 knapsack by a sparse-state DP fathomed by the *reachable sums* of the items left (issue 41):
``knapsack.solve(..., method="reach")``. Exact for integer data, on the CPU (numba).

Made for instances whose profits follow their weights (``p ≈ λ·w``: Jooken et al.'s class, subset
sum, strongly correlated) with a capacity no dense table holds (``C`` ~ 10^10). There the bounds of
the LP family (Dantzig's, the Lagrangian ones, the cardinality relaxation) assume the room left can
be filled, and it cannot: items of weight just above ``C/2``, ``C/4``, ... leave every packing some
distance below ``C`` that no fractional bound sees, so the sparse DP's lists grow to 10^7 states
without a proof. This method's bound knows which weights the remaining items can add.

**Items.** Those that can be packed (``0 < w ≤ C``, ``p > 0``), in *decreasing weight* (``s_0 ≥
s_1 ≥ ...``); weight-0 items of positive profit are always taken, the rest dropped; when every item
that can be packed fits, all are taken without a search.

**Envelopes.** ``E_i`` is a sorted list of disjoint intervals of ``[0, C]`` covering every subset
sum ``≤ C`` of items ``i..n-1`` (the *suffix*), each with a *gain* and a *top* (below): ``E_n = {[0,
0]}``, ``E_i = E_{i+1} ∪ (E_{i+1} + w_i)``, clipped at ``C``; an interval that meets the last one,
or lies within ``τ`` of it, extends it while the result is narrower than ``width``, else the part
past it starts a new one (an over-approximation: it only weakens the bound), in the parts of
:func:`.reach_intervals.union` (the same on any number of threads). ``τ`` (and ``width``) double
whenever an envelope would pass its most intervals. Two kinds: the *coarse* envelopes keep each run
of reachable sums whole (``width`` past ``C``, at most :data:`.reach_envelopes.COARSE_INTERVALS`),
cheap, enough on most instances; the *fine* ones start from pieces of one point (``width = 1``, at
most :data:`.reach_envelopes.MAX_INTERVALS`), so that a gain belongs to a short stretch of weights,
not to a whole run. A search on the coarse envelopes that keeps more than ``FINE_AFTER · n ·
MAX_INTERVALS`` states (a quarter of what building the fine ones costs, in steps) stops, the fine
ones are built and the same target searched again; one that the last two searches predict to keep
more (:func:`_predicted_states`) is not started. Envelopes are built backwards and all kept when
they total at most :data:`.reach_envelopes.ALL_INTERVALS` intervals; else every ``K``-th (``K =
⌈√n⌉``) is kept and the others are rebuilt from the next kept one as a search reaches them (by the
same rule: any result of it is a valid over-approximation), into arrays that the segments rebuilt
later reuse (:class:`.reach_envelopes._Buffers`: their pages are written once a solve, not once a
rebuild).

**The bound.** Take any ``λ = num/den ≥ 0`` (``num/den`` the efficiency of Dantzig's break item,
``den`` a power of two small enough that every sum below stays in int64). Every subset ``X`` of the
suffix has ``p(X) = λ·w(X) + γ(X)``, ``γ(X) = Σ_{k∈X} (p_k − λ·w_k)``. Each interval of ``E_i``
carries a *gain*, at least ``γ(X)`` for every subset ``X`` of the suffix whose weight lies in it
(``E_n``: 0; the shifted copy: the gain plus item ``i``'s; merged intervals: the larger), and a
*top*, at least ``p(X)`` for every such ``X`` (kept the same way, item ``i``'s profit added). So a
partial solution of weight ``W ≤ C`` and profit ``P`` over items ``0..i-1`` completes to at most
``P + max(min(λ·hi + gain, top))`` over the intervals ``[lo, hi]`` of ``E_i`` with ``hi ≤ C − W``,
or ``min(λ·(C − W) + gain, top)`` for the one holding ``C − W`` (prefix maxima make it one look-up),
compared in integers (``·den``). Where the remaining items cannot fill the room it is much tighter
than Dantzig's; where they can it is at most the Lagrangian bound at ``λ`` (a gain never passes
``Σ max(p_k − λ·w_k, 0)``). The gain alone assumes each interval filled to its end at its best gain;
the top is the best subset that lies in it, filled or not (on Jooken's class the sums near each
room are dense but the subsets of high gain few).

A state's bound is also at most Dantzig's bound of the suffix at its own room ``C − W`` (the suffix
in efficiency order, rebuilt at each item: ``O(n)``; the break item's share rounded up exactly):
that is the least Lagrangian bound over every ``λ``, where the envelopes take one ``λ`` for all
states; it cuts the states of rooms far from the whole instance's break.

**A search with target T** keeps the list of states (weight ``≤ C``, sorted by weight, profit
strictly rising: no state dominates another; a dominated state also has the smaller bound) and adds
the items one at a time (Nemhauser–Ullmann merge of the list with its shifted copy), dropping every
state whose bound is below ``max(T, z + g)`` (``z`` the best packing found, ``g`` the profits' gcd).
Every state fits, so the last state of each list is a packing: ``z`` rises as it goes. After the
last item, if ``z ≥ T``, ``z`` is optimal (every packing worth ``T`` or more survived every step, or
one at least as good did); otherwise every packing is worth less than ``T``: ``T − 1`` is a proven
upper bound.

**Targets.** ``U`` starts as the least of Dantzig's bound and the empty state's bound (``λ·S +
G_0`` at ``W = 0``); the first target is ``U``, each failed search sets ``U = T − 1`` and the next
target is ``max(z + g, U + 1 − d)`` with ``d`` doubling (from ``(U − z) / 2^14``), or ``z + g``
itself when that lies at most :data:`JUMP` times as far below ``U`` (a search at ``z + g`` ends the
proof, reaching it or not); the same rule sets the target after the fine envelopes' beam. The
answer is proven when a search reaches its target or ``z`` reaches ``U``.

**The 0/1 vector.** Every state carries a node of a persistent list of added items (a state made by
adding item ``j`` gets a new node whose parent is its source's); when the node array fills, the
nodes that no state or the best packing reaches are dropped (marked, compacted in order), and it
doubles when more than half stays, within a block reserved at its first growth (:func:`_reserve`:
the entries the memory check allows, their pages the OS's only once written), so without a copy.

**Arithmetic.** int64 throughout: the profit and weight totals of the items that can be packed are
checked (at most 2^63 − 1, else :class:`gpudp.InputError` with the figures, as the sparse DP; and
the profits at most 2^61 − 1, the room the bound's sums need), ``den`` is chosen with ``(ΣP + 1)·den
≤ 2^61`` and ``num ≤ 2^61 / C`` (Python integers), and gains are kept at least ``−2^61`` (raising a
gain keeps the bound valid), so ``P·den + num·S + gain < 2^63``. The answer's value and weight are
summed exactly and checked.

**Stops.** Past ``time_limit`` (checked before each item's step, predicted from the last step's
time per state), or when the lists and nodes would take more than half the memory this process may
still use, the best packing found is returned, checked, with ``optimal`` False,
``details["stopped"]`` (``"time"``/``"memory"``), ``details["upper_bound"]`` (proven) and
``details["gap"]``. A *beam* search (the same steps, only the :data:`BEAM` states of the largest
bounds kept after each item: no proof) supplies a packing close to the bound, so that a stop reports
a small gap and the targets never fall far below the optimum: once half a time limit is spent
unproven (checked between searches), once on the coarse envelopes when a search on them passes its
budget, and once on the fine ones as soon as they are built (their bounds rank the states far
better; its packing sets the last target), unless the coarse one's packing already reaches the
stopped search's target (the next search is then at ``z + g`` whatever it would find).

**Threads** (each with the serial result): a list of :data:`PARALLEL_STATES` states or more takes
its step on every numba thread (:func:`.reach_step.step_parallel`); a node array of
:data:`PARALLEL_NODES` nodes or more is collected (:func:`.reach_nodes.collect_parallel`), copied
and first written in parallel; the next segments of envelopes (as many as numba has threads,
their arrays within :data:`.reach_envelopes.AHEAD_MEMORY_SHARE` of the memory left) are each rebuilt
on a thread of its own while the search steps through those before
(:meth:`.reach_envelopes.Envelopes.get`; the compiled loops release the GIL); a solve's searches
share their lists and node array (:class:`_Arrays`). ``NUMBA_NUM_THREADS=1`` is the serial search.
docs/knapsack_reach.md has the figures behind each.

``details`` also gives ``searches`` (each target, its outcome, states, largest list, seconds),
``states_generated`` (the states kept, all searches), ``largest_list``, the envelopes' ``tau`` and
sizes. See docs/knapsack_reach.md for the measurements.
"""

from __future__ import annotations

import math
import sys
import time

import numba
import numpy as np

from gpudp.backends import device_name
from gpudp.errors import InputError
from gpudp.inputs import parse_time_limit
from gpudp.memory import copy_parallel, fill_parallel
from gpudp.solution import Solution, Stats

from . import reach_envelopes as envelopes
from .io import INT64_MAX, KnapsackInstance, checked_solution, validate
from .reach_envelopes import Envelopes
from .reach_intervals import LIMIT
from .reach_nodes import collect_parallel
from .reach_step import step, step_parallel, suffix_lp
from .sparse.exact import exact_sum
from .sparse.items import efficiency_order, integer_data, split_items
from .sparse.kernels import NSLOTS, ST_LEN, ST_NN, ST_ZNODE, collect, greedy

__all__ = ["solve", "solve_instance", "envelope_bound", "warm"]

#: the beam of the heuristic search (its packing: the incumbent a stop reports)
BEAM = 1 << 12
#: a search on the coarse envelopes that keeps more than this many states per item and
#: ``MAX_INTERVALS`` (about what building the fine ones costs) stops: fine envelopes, same target
FINE_AFTER = 0.25
#: a coarse search predicted past its budget (:func:`_predicted_states`, from searches of at least
#: this many states) is not started: it would stop there, its states thrown away
PREDICT_FROM = 1 << 16
#: the largest power of the distance below the bound that a prediction takes
MAX_POWER = 3.0
#: the first sizes of the state lists and of the node array (both grow)
LIST_START = 1 << 12
NODE_START = 1 << 16
#: the node array grows within a block reserved at its first growth, as many entries as the memory
#: check allows then (:class:`_Arrays`) and at most this many: no copy as it grows, and each page first
#: written once (the OS gives a page only once it is written)
NODE_RESERVE = 1 << 40
#: each failed search moves the next target this many times farther below the bound
STEP_GROWTH = 2
#: the next target is ``z + g`` (whose search ends the proof, reached or not) when it lies at most this
#: many times farther below the bound than the stepped one (a search keeps about D^1.5 states at
#: distance D below the bound: n = 1,200, g = 14, eps = 1e-5)
JUMP = 4
#: a list of at least this many states takes its step on numba's threads (:func:`.reach_step.step_parallel`;
#: a parallel region's start costs more than a short list's serial step)
PARALLEL_STATES = 1 << 16
#: the pieces of a parallel step per thread (their work varies with how many states each keeps)
CHUNKS_PER_THREAD = 4
#: a node array of at least this many nodes is collected, and copied or first written when it
#: grows, on every numba thread (:mod:`.reach_nodes`) when numba has more than one thread
PARALLEL_NODES = 1 << 16
#: the entries a thread copies or writes at a time in those copies and first writes
PARALLEL_CHUNK = 1 << 13


def _collect(par, itm, nn, N, L, zst) -> int:
    """Drop the nodes that no state of ``N[:L]`` nor the best packing (``zst[1]``) reaches: the sparse
    DP's collection (:func:`.sparse.kernels.collect`, compacting in place and renumbering), on this
    search's list, or from :data:`PARALLEL_NODES` nodes on every numba thread
    (:func:`.reach_nodes.collect_parallel`, the same result); returns the count kept."""
    threads = numba.get_num_threads()
    if threads > 1 and nn >= PARALLEL_NODES:
        return collect_parallel(par, itm, nn, N, L, zst, CHUNKS_PER_THREAD * threads)
    st = np.zeros(NSLOTS, np.int64)
    st[ST_NN], st[ST_LEN], st[ST_ZNODE] = nn, L, zst[1]  # (ST_CUR 0: the list is row 0 of N[None])
    live = collect(par, itm, N[None, :], st)
    zst[1] = st[ST_ZNODE]
    return live


def _copy(dst, src, n: int) -> None:
    """``dst[:n] = src[:n]``; from :data:`PARALLEL_NODES` entries on every numba thread."""
    if n >= PARALLEL_NODES and numba.get_num_threads() > 1:
        copy_parallel(dst, src, n, PARALLEL_CHUNK)
    else:
        dst[:n] = src[:n]


def _reserve(size: int):
    """Two node arrays (parents, items) of at least ``size`` entries, and of as many as the memory
    check allows (half of what the process may still use) up to :data:`NODE_RESERVE`: their pages are
    the OS's only once written. ``size`` only where ``ulimit`` limits the address space (``-v``, ``-d``:
    the block would count whole against it) or the OS refuses the block."""
    from gpudp.memory import available_memory, limits

    if limits()["rlimit_room"] is None:
        try:
            big = max(size, min(NODE_RESERVE, available_memory() // 32))  # (16 bytes a node: half)
            return np.empty(big, np.int64), np.empty(big, np.int64)
        except MemoryError:
            pass
    return np.empty(size, np.int64), np.empty(size, np.int64)


def _room_check(nbytes: int) -> None:
    from gpudp.memory import available_memory

    if nbytes > available_memory() // 2:
        raise MemoryError(f"the state lists and nodes would need {nbytes / 2**30:.2f} GiB more")


class _Arrays:
    """The two state lists and the node array of a solve's searches, grown on demand. The node
    array (``par``, ``itm``) is the start of a larger block (``block``), reserved at its first growth
    (:func:`_reserve`): it grows by taking more of the block, without a copy, and each of its pages is
    first written once; past the block, a new one and a copy."""

    def __init__(self):
        self.lists = [self._list(LIST_START), self._list(LIST_START)]
        self.block = (np.empty(NODE_START, np.int64), np.empty(NODE_START, np.int64))
        self.par, self.itm = self.block
        self.touched = 0  # the node array's entries written at least once

    @staticmethod
    def _list(size):
        return np.empty(size, np.int64), np.empty(size, np.int64), np.empty(size, np.int64)

    def out_list(self, k: int, need: int):
        if len(self.lists[k][0]) < need:
            size = max(need, 2 * len(self.lists[k][0]))
            _room_check(24 * (size - len(self.lists[k][0])))
            self.lists[k] = self._list(size)
        return self.lists[k]

    def in_list(self, k: int, L: int, need: int):
        """List ``k`` with room for ``need`` states, its first ``L`` kept
        (:func:`.reach_step.step_parallel` writes its result there)."""
        if len(self.lists[k][0]) < need:
            old = self.lists[k]
            self.out_list(k, need)
            for a, b in zip(self.lists[k], old, strict=True):
                _copy(a, b, L)
        return self.lists[k]

    def nodes(self, nn: int, need: int, N, L, zst) -> int:
        """Room for ``need`` more nodes: collect first, grow when more than half stays live."""
        if nn + need <= len(self.par):
            return nn
        nn = _collect(self.par, self.itm, nn, N, L, zst)
        if nn + need > len(self.par) // 2:
            size = max(2 * len(self.par), 2 * (nn + need))
            _room_check(16 * (size - len(self.par)))
            if size > len(self.block[0]):
                par, itm = _reserve(size)
                _copy(par, self.par, nn)
                _copy(itm, self.itm, nn)
                self.block, self.touched = (par, itm), nn
            self.par, self.itm = self.block[0][:size], self.block[1][:size]
        return nn

    def touch(self, nn: int, end: int) -> None:
        """Write the free node entries up to ``end`` (those from ``nn`` on) once, here: the first write
        of a page faults, and from :func:`.reach_step.step_parallel`'s threads at once those faults
        cost several times more (n = 800, Jooken g = 14: 2 threads spent 4 times as long writing new
        nodes as they did once touched)."""
        start = max(self.touched, nn)
        if end - start >= PARALLEL_NODES and numba.get_num_threads() > 1:
            fill_parallel(self.par, start, end, 0, PARALLEL_CHUNK)
            fill_parallel(self.itm, start, end, 0, PARALLEL_CHUNK)
        elif end > start:
            self.par[start:end] = 0
            self.itm[start:end] = 0
        self.touched = max(self.touched, end)


def _search(ws, ps, cap, env: Envelopes, den, target, z, gp, deadline, budget=None, beam=None, ar=None):
    """One search with target ``target`` from incumbent value ``z`` (the module doc), in the lists and
    node array of ``ar`` (a solve's :class:`_Arrays`, as large as its searches made them; None: new
    ones); its nodes from 0 (those of an earlier search are dropped: its states are gone). Returns
    ``(z, items, states, largest, stopped)``: the best packing it found (``items``: indices into
    ``ws``, None when none beat the given ``z``), and ``stopped`` None (the search ran to its end),
    ``"time"`` (an item's step would pass ``deadline``, predicted from the last step's time per
    state), ``"budget"`` (more than ``budget`` states kept) or ``"memory (why)"``. With ``beam``, a
    heuristic: after each item only the ``beam`` states of the largest bounds are kept (no proof)."""
    n = len(ws)
    ar = _Arrays() if ar is None else ar
    W, P, N = ar.lists[0]
    W[0], P[0], N[0] = 0, 0, -1
    L, cur, nn = 1, 0, 0
    zst = np.array([z, -1], np.int64)
    eff = efficiency_order(ps, ws)
    lw, lp = np.empty(n + 1, np.int64), np.empty(n + 1, np.int64)
    states = largest = 0
    per_state, stopped = 0.0, None
    for j in range(n):
        t = time.perf_counter()
        if deadline is not None and t + 2 * per_state * L > deadline:  # (a list may double)
            stopped = "time"
            break
        elo, ehi, ega, etp, ebest = env.get(j + 1)  # (a segment's envelopes rebuilt at its first item)
        if deadline is not None and time.perf_counter() + 2 * per_state * L > deadline:
            stopped = "time"
            break
        threads = numba.get_num_threads()
        parallel = threads > 1 and L >= PARALLEL_STATES
        try:
            NW, NP, NN = ar.out_list(1 - cur, 2 * L)
            if parallel:  # (its list comes back in W, P, N)
                W, P, N = ar.in_list(cur, L, 2 * L)
            nn = ar.nodes(nn, L + 1, N, L, zst)
            if parallel:
                ar.touch(nn, nn + L + 1)
        except MemoryError as e:
            stopped = f"memory ({e})"
            break
        thr = max(target, int(zst[0]) + gp)
        Lin = L
        m = suffix_lp(ws, ps, eff, j + 1, lw, lp)
        args = (W, P, N, L, int(ws[j]), int(ps[j]), j, cap, thr, elo, ehi, ega, etp, ebest, env.num, den,
                lw[: m + 1], lp[: m + 1], NW, NP, NN, ar.par, ar.itm, nn, zst)  # fmt: skip
        if parallel:
            L, nn = step_parallel(*args, CHUNKS_PER_THREAD * threads)
        else:
            L, nn = step(*args)
            W, P, N, cur = NW, NP, NN, 1 - cur
        states += L
        largest = max(largest, L)
        per_state = (time.perf_counter() - t) / Lin
        if beam is not None and L > beam:
            L = _keep_best(W, P, N, L, cap, den, env.num, elo, ehi, ega, etp, ebest, beam)
        if L == 0:
            break
        if budget is not None and states > budget:
            stopped = "budget"
            break
    items = None
    if zst[1] >= 0 or zst[0] > z:
        items, r = [], int(zst[1])
        while r >= 0:
            items.append(int(ar.itm[r]))
            r = int(ar.par[r])
    return int(zst[0]), items, states, largest, stopped


def _keep_best(W, P, N, L, cap, den, num, elo, ehi, ega, etp, ebest, beam: int) -> int:
    """Keep (in place, in weight order) the ``beam`` states of ``W, P, N[:L]`` whose envelope bounds
    (:func:`.reach_step.step`'s, ``·den``) are the largest; returns ``beam``."""
    slack = cap - W[:L]
    q = np.searchsorted(elo, slack, side="right") - 1
    below = np.where(q > 0, ebest[np.maximum(q - 1, 0)], -LIMIT)  # the intervals before q's
    inside = np.maximum(np.minimum(num * slack + ega[q], etp[q]), below)
    value = P[:L] * den + np.where(ehi[q] <= slack, ebest[q], inside)
    keep = np.sort(np.argpartition(-value, beam)[:beam])
    W[:beam], P[:beam], N[:beam] = W[keep], P[keep], N[keep]
    return beam


def _lagrange(ps, ws, cap, b, total_p):
    """``num, den``: the break item's efficiency ``ps[b]/ws[b]`` (``ps, ws`` in efficiency order)
    rounded down to a multiple of 1/den, den a power of two, with ``(total_p + 1)·den ≤ 2^61`` and
    ``num·cap ≤ 2^61`` (any λ ≥ 0 gives a valid bound)."""
    k = 30
    while k > 0 and (total_p + 1) << k > int(LIMIT):
        k -= 1
    den = 1 << k
    num = int(ps[b]) * den // int(ws[b])
    return min(num, int(LIMIT) // max(cap, 1)), den


def envelope_bound(cap: int, env: Envelopes, den: int) -> int:
    """The empty state's bound, :meth:`Envelopes.bound` of ``E_0`` at ``cap`` over ``den``, rounded
    down: an upper bound on every packing."""
    return env.bound(0, cap) // den


def solve_instance(inst: KnapsackInstance, time_limit=None) -> Solution:
    """Solve a validated instance (:func:`gpudp.problems.knapsack.io.validate`); see :func:`solve`."""
    t0 = time.perf_counter()
    time_limit = parse_time_limit(time_limit)
    deadline = None if time_limit is None else t0 + time_limit
    p, w, cap = integer_data(inst)
    forced, free, x = split_items(p, w, cap)
    details = {"method": "reach", "n": len(p), "free_items": len(free), "stopped": None}
    stats = Stats(backend="cpu", device=device_name("cpu"))
    complete, message, claimed = True, "no free items: trivially optimal", None
    if len(free) and exact_sum(w[free]) <= cap:
        x[free] = 1
        message = "every item that can be packed fits: trivially optimal"
    elif len(free):
        complete, message, claimed = _solve_free(p, w, cap, free, x, details, deadline, time_limit)
        claimed += exact_sum(p[forced])
        stats.cells = details["states_generated"]
        stats.extra.update(states_generated=stats.cells, largest_list=details["largest_list"])
    sel = np.flatnonzero(x == 1)
    details.update(weight=exact_sum(w[sel]), message=message, integral=True)
    stats.seconds = time.perf_counter() - t0
    return checked_solution(p, w, cap, x, exact_sum(p[sel]), stats, details, complete, claimed)


def _solve_free(p, w, cap, free, x, details, deadline, time_limit):
    """The search over the free items (the module doc); sets their entries of ``x``, fills
    ``details``; returns (proven, message, the claimed value of the free items taken)."""
    total_p, total_w = exact_sum(p[free]), exact_sum(w[free])
    if total_w > INT64_MAX:
        raise InputError(
            "weights",
            f"the weights of the items that can be packed sum to {total_w}, past the 2^63 - 1 that the "
            "reachable-sums DP's int64 state weights hold",
        )
    if total_p + 1 > LIMIT:
        raise InputError(
            "profits",
            f"the profits of the items that can be packed sum to {total_p}; the reachable-sums DP keeps "
            "its bounds in int64 and needs at most 2^61 - 1 (--method sparse takes up to 2^63 - 1)",
        )
    gp = int(np.gcd.reduce(p[free]))
    # Dantzig's bound and the greedy packing, in efficiency order
    eff = free[efficiency_order(p[free], w[free])]
    we, pe = np.ascontiguousarray(w[eff]), np.ascontiguousarray(p[eff])
    b = int(np.searchsorted(np.cumsum(we), cap, side="right"))
    gx = np.zeros(len(eff), np.int8)
    z = int(greedy(we, pe, cap, gx))
    best = eff[gx == 1]
    dantzig = exact_sum(pe[:b]) + (cap - exact_sum(we[:b])) * int(pe[b]) // int(we[b])
    num, den = _lagrange(pe, we, cap, b, total_p)
    # the search's order: decreasing weight
    order = free[np.lexsort((-p[free], -w[free]))]
    ws, ps = np.ascontiguousarray(w[order]), np.ascontiguousarray(p[order])
    env, stopped, info = _envelopes(ws, ps, cap, num, den, deadline, fine=False)
    root = info.get("bound")
    ub = min(dantzig, total_p) if root is None else min(dantzig, root, total_p)
    ub -= ub % gp
    details.update(greedy_value=z, bounds={"dantzig": dantzig, "envelope": root}, lagrange=[num, den])
    details["envelopes"] = info
    searches, states, largest = [], 0, 0
    ar = _Arrays()  # every search's lists and nodes: no growth again to the sizes an earlier one reached
    if deadline is not None and time.perf_counter() > deadline and stopped is None:
        stopped = "time"
    d = max(gp, (ub - z) >> 14)
    target = root_ub = ub
    beamed, coarse_beamed, start = False, False, None if deadline is None else deadline - time_limit
    while z < ub and stopped is None:
        t = time.perf_counter()
        if deadline is not None and not beamed and 2 * t > deadline + start:
            # half the time limit spent unproven: a heuristic's packing, that a stop reports
            beamed = True
            z, best, stopped = _beam(ws, ps, cap, env, den, z, gp, deadline, order, best, searches, ar)
            continue
        budget = None if env.fine else int(FINE_AFTER * len(ws) * envelopes.MAX_INTERVALS)
        guess = None if budget is None else _predicted_states(searches, root_ub, target)
        if guess is not None and guess > budget:  # it would pass its budget: the fine envelopes now
            searches.append({"target": target, "best": z, "predicted": guess, "stopped": "budget"})
            stopped = "budget"
        else:
            zf, items, n_st, big, stopped = _search(
                ws, ps, cap, env, den, target, z, gp, deadline, budget, ar=ar
            )
            states += n_st
            largest = max(largest, big)
            if items is not None:
                z, best = zf, order[items]
            record = {"target": target, "best": z, "states": n_st, "largest_list": big}
            searches.append({**record, "seconds": time.perf_counter() - t})
        if stopped == "budget":  # the coarse envelopes leave too many states: finer ones, same target
            searches[-1]["stopped"] = stopped
            if not coarse_beamed:  # a costly instance: the beam's packing, on the coarse envelopes (cheap)
                coarse_beamed = True
                z, best, stopped = _beam(ws, ps, cap, env, den, z, gp, deadline, order, best, searches, ar)
                if stopped is not None or z >= ub:  # (its packing may reach the bound: proven)
                    break
            env, stopped, info = _envelopes(ws, ps, cap, num, den, deadline, fine=True)
            details["fine_envelopes"] = info
            if info.get("bound") is not None:
                details["bounds"]["fine_envelope"] = info["bound"]
                ub = min(ub, info["bound"] - info["bound"] % gp)
                target = min(target, ub)
            if stopped is None and z < ub:  # the beam on the fine envelopes: a packing near the optimum
                if z + gp < target:  # (else the search at z + g is the next whatever the beam finds)
                    beamed = True
                    z, best, stopped = _beam(
                        ws, ps, cap, env, den, z, gp, deadline, order, best, searches, ar
                    )
                target = _jump(target, z, ub, gp)
            continue
        if stopped is not None:
            searches[-1]["stopped"] = stopped
            break
        searches[-1]["reached"] = z >= target
        if z >= target:
            ub = z
            break
        ub = target - 1
        ub -= ub % gp
        target = _jump(max(z + gp, ub + 1 - d), z, ub, gp)
        d *= STEP_GROWTH
    x[best] = 1
    details.update(
        incumbent=z,
        upper_bound=ub,
        gap=ub - z,
        searches=searches,
        states_generated=states,
        largest_list=largest,
    )
    if z >= ub:
        return True, "optimal: no packing reaches the bound", z
    details["stopped"] = "time" if stopped == "time" else "memory"
    if stopped == "time":
        why = f"time limit of {time_limit} s reached"
    else:
        why = f"out of {stopped}"
    return False, f"{why}: the best packing found, not proven optimal (upper bound {ub}, gap {ub - z})", z


def _jump(target: int, z: int, ub: int, gp: int) -> int:
    """The next target: ``z + g`` (a search there ends the proof, reached or not) where it lies at
    most :data:`JUMP` times as far below the bound ``ub`` as ``target``, else ``target``."""
    return z + gp if ub + 1 - (z + gp) <= JUMP * (ub + 1 - target) else target


def _predicted_states(searches, root: int, target: int):
    """The states a search on the coarse envelopes at ``target`` would keep, from the last two that
    ended (``searches``' records; ``root``: the bound the targets step down from), which kept at least
    :data:`PREDICT_FROM` states each: they grow as a power of the target's distance below ``root``
    (about 1.5 on Jooken's class), the power measured from those two. None without them."""
    done = [r for r in searches if "reached" in r and r["states"] >= PREDICT_FROM]
    if len(done) < 2:
        return None
    (d0, s0), (d1, s1) = ((root + 1 - r["target"], r["states"]) for r in done[-2:])
    d2 = root + 1 - target
    if not 0 < d0 < d1 < d2 or s1 <= s0:
        return None
    power = math.log(s1 / s0) / math.log(d1 / d0)
    return int(s1 * (d2 / d1) ** min(power, MAX_POWER))


def _beam(ws, ps, cap, env, den, z, gp, deadline, order, best, searches, ar):
    """The beam search (:data:`BEAM` states kept after each item; no proof) for a packing better
    than ``z``; returns ``(z, best, stopped)``, ``best`` the items of the best packing (indices of
    the instance), and records the run in ``searches``; ``ar``: the solve's lists and nodes."""
    t = time.perf_counter()
    zf, items, n_st, _, stopped = _search(ws, ps, cap, env, den, z + gp, z, gp, deadline, beam=BEAM, ar=ar)
    if items is not None:
        z, best = zf, order[items]
    searches.append({"beam": BEAM, "best": z, "states": n_st, "seconds": time.perf_counter() - t})
    if stopped is not None:
        searches[-1]["stopped"] = stopped
    return z, best, stopped


def _envelopes(ws, ps, cap, num, den, deadline, fine):
    """Build the envelopes (coarse or fine); returns ``(env or None, stopped or None, details)``,
    the details with the empty state's bound (``"bound"``) when they were built."""
    t = time.perf_counter()
    env, stopped = None, None
    try:
        env = Envelopes(ws, ps, cap, num, den, deadline, fine)
        if env.late:
            env, stopped = None, "time"
    except MemoryError as e:
        stopped = f"memory ({e})"
    info = {"fine": fine, "built": env is not None}
    if env is not None:
        info.update(
            bound=envelope_bound(cap, env, den),
            tau=env.tau,
            largest=int(env.sizes.max()),
            intervals=int(env.sizes.sum()),
            stored="all" if env.all else f"every {env.K}",
        )
    info["seconds"] = time.perf_counter() - t
    return env, stopped, info


def solve(profits, weights, capacity, time_limit=None, name: str = "") -> Solution:
    """Solve a 0/1 knapsack with integer profits and weights by the reachable-sums DP (the module
    doc); returns a checked :class:`gpudp.Solution`.

    ``solution`` is the 0/1 vector (int8) in the caller's order, ``details["weight"]`` its weight,
    ``details["method"]`` ``"reach"``; ``details`` also gives the bounds, each search (target,
    outcome, states, largest list, seconds), the states generated and the envelopes. ``optimal`` is
    False when ``time_limit`` seconds passed first or the lists outgrew the memory: the value is then
    that of the best packing found, with ``details["upper_bound"]`` proven and ``details["gap"]``.
    Real-valued data, and totals past int64, raise :class:`gpudp.InputError`.

    >>> solve([10, 7, 8], [5, 4, 3], 8).value
    18
    """
    return solve_instance(validate(profits, weights, capacity, name=name), time_limit=time_limit)


def warm():
    """Compile the compiled functions (or load them from numba's cache) on a small instance with
    every path made to run: node collections, interval merges, the fine envelopes, the parallel step
    and union where numba has several threads (the modules' thresholds lowered meanwhile)."""
    lowered = {
        envelopes: dict(COARSE_INTERVALS=2, MAX_INTERVALS=3, PARALLEL_UNION=1, UNION_THREADS=2),
        sys.modules[__name__]: dict(FINE_AFTER=0, PARALLEL_STATES=1, NODE_START=2),
    }
    saved = {m: {k: getattr(m, k) for k in v} for m, v in lowered.items()}
    try:
        for m, v in lowered.items():
            vars(m).update(v)
        solve([5, 6, 7, 8, 9, 3], [5, 6, 7, 8, 9, 2], 17)
    finally:
        for m, v in saved.items():
            vars(m).update(v)
