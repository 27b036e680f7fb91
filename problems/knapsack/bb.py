"""0/1 knapsack by breadth-first branch and bound on the frontier engine (Lalami & El Baz; Shen et al.).

Items of positive profit and weight at most C are sorted by decreasing p/w; items of weight 0 (and
positive profit) are always taken; the others are dropped. When every remaining item fits, all are
taken without a search. Level ``k`` decides item ``k``; a node is its weight and profit so far
(``f0``, ``f1``) plus its decisions (packed bits). Each son gets

- the Martello–Toth upper bound U2 = max(U0, U1) over the items still free, with the slack item s
  found by binary search on prefix sums: U0 = greedy prefix + r'·p[s+1]/w[s+1] (s left out),
  U1 = greedy prefix + p[s] − (w[s] − r')·p[s−1]/w[s−1] (s forced in); floors for integer data.
  U2 is never weaker than Dantzig's bound p̂ + r'·p[s]/w[s];
- a greedy lower bound: the prefix before s, then up to ``GREEDY_SCAN`` more items after s that fit.

The incumbent's solution vector is its node's decisions followed by the same greedy completion,
rebuilt on the host, and checked (:func:`gpudp.problems.knapsack.io.solution_checker`).

Arithmetic, exact for every instance the reader accepts or refused with an InputError:

- Integer data are exact int64. Let W and P be the weight and profit totals of the items that can be
  packed (0 < w ≤ C, p > 0). When W ≤ C no search runs. Otherwise the prefix sums need
  P ≤ 2^63 − 1 and W + C ≤ 2^63 − 1 (checked in Python integers; refused past them). The bound's
  products r'·p and (w[s] − r')·p are exact in int64 when C·max(p) + max(w) < 2^63; past that they
  are computed in float64 and rounded outwards with a margin far above float64's error (an upper
  bound may be loosened, never tightened), while node weights, profits and lower bounds stay exact.
  The capacity test is ``w_k > C − w`` (no overflow).
- Real-valued data (some weight or profit not an integer) use float64. Real weights use the one
  feasibility tolerance of :mod:`~gpudp.problems.knapsack.io`: the capacity is C + τ_w everywhere
  (which items can be packed, the nodes, the bounds), τ_w = 1e-9·max(1, Σw), the same limit the
  checker accepts. A node is kept unless its bound is below the incumbent by more than
  τ_p = 1e-9·max(1, Σ|p|), so rounding can never prune the optimum away and the value returned is
  within τ_p of the best value of the sets that fit. Integer weights with real profits (or integer
  profits with real weights) go through float64 too and must sum (W + C, or P) to at most 2^53,
  where float64 is exact.
"""

from __future__ import annotations

import functools
import math
import os
import time

import numpy as np
from numba.extending import register_jitable

from gpudp import frontier
from gpudp.backends import device_name
from gpudp.backends import resolve as resolve_backend
from gpudp.codegen import compile_source
from gpudp.errors import InputError
from gpudp.inputs import parse_time_limit
from gpudp.memory import parse_bytes
from gpudp.solution import Solution, Stats

from .io import (
    FLOAT_EXACT,
    INT64_MAX,
    REL_TOL,
    KnapsackInstance,
    checked_solution,
    dantzig_bound,
    validate,
    weight_tolerance,
)

__all__ = ["solve", "solve_instance", "GREEDY_SCAN"]

GREEDY_SCAN = 32


@register_jitable
def slack_item(j, w, data, nvars):
    """The slack item of a node of weight ``w`` branching from item ``j``: packing items ``j, j+1,
    ...`` in order, the first that does not fit (``nvars`` when all do), found by binary search on
    the weight prefix sums ``data[2]``; and the capacity left before it. Compiled into the sons'
    functions on both backends, and called from Python for the solution's completion."""
    target = data[2, j] + (data[4, 0] - w)
    lo = j
    hi = nvars
    while lo < hi:
        mid = (lo + hi + 1) >> 1
        if data[2, mid] <= target:
            lo = mid
        else:
            hi = mid - 1
    return lo, target - data[2, lo]


# The son of a node and its Martello-Toth U2 bound, in one source for the three kinds of data; they
# differ only in the two bound terms (U0's added term, U1's subtracted term), each a small jitable
# function. Each variant is a plain module-level function, compiled by the frontier engine with
# njit or cuda.jit. The capacity test ``data[0, level] > cap - w`` cannot overflow (w <= cap).
_CHILD_SOURCE = """
def {name}(level, wgt, prof, take, data, nvars):
    cap = data[4, 0]
    w = wgt
    p = prof
    if take == 1:
        if data[0, level] > cap - w:
            return False, w, p, p, p
        w = w + data[0, level]
        p = p + data[1, level]
    j = level + 1
    s, rr = slack_item(j, w, data, nvars)
    base = p + data[3, s] - data[3, j]
    if s >= nvars:
        return True, w, p, base, base
    u = base
    if s + 1 < nvars:
        u = base + u0_term(rr, data[1, s + 1], data[0, s + 1], data[1, s])
    if s > j:
        u1 = base + data[1, s] - u1_term(data[0, s] - rr, data[1, s - 1], data[0, s - 1])
        if u1 > u:
            u = u1
    lb = base
    rem = rr
    end = min(nvars, s + 1 + GREEDY_SCAN)
    for t in range(s + 1, end):
        if data[0, t] <= rem:
            rem -= data[0, t]
            lb += data[1, t]
    return True, w, p, u, lb
"""

# U0 adds rr * p[s+1] / w[s+1] (rr < w[s], so with items in ratio order the term is below p[s]);
# U1 subtracts d * p[s-1] / w[s-1] with d = w[s] - rr. Integer data floor the added term and ceil the
# subtracted one, exactly in int64 when C * max(p) + max(w) < 2^63 ("exact"). Otherwise ("wide") the
# terms are computed in float64 (relative error at most 6 * 2^-53 < 2^-50) and rounded outwards
# generously: the added term up (times 1 + 2^-48, plus 1, and never above p[s], which bounds it), the
# subtracted one down (times 1 - 2^-48, minus 1, at least 0, at most 4e18), so that U0 and U1 stay
# valid upper bounds; node weights and profits stay exact int64.
_UP = 1.0 + 2.0**-48
_DOWN = 1.0 - 2.0**-48
_WIDE_CAP = 4 * 10**18


@register_jitable
def _u0_exact(rr, p1, w1, ps):
    return (rr * p1) // w1


@register_jitable
def _u1_exact(d, p0, w0):
    return (d * p0 + w0 - 1) // w0


@register_jitable
def _u0_wide(rr, p1, w1, ps):
    t = float(rr) * float(p1) / float(w1) * _UP + 1.0
    if t >= float(ps):
        return ps
    return int(t)


@register_jitable
def _u1_wide(d, p0, w0):
    t = float(d) * float(p0) / float(w0) * _DOWN - 1.0
    if t <= 0.0:
        return 0
    if t >= 4.0e18:
        return _WIDE_CAP
    return int(t)


@register_jitable
def _u0_real(rr, p1, w1, ps):
    return rr * p1 / w1


@register_jitable
def _u1_real(d, p0, w0):
    return d * p0 / w0


def _make_child(name: str, u0_term, u1_term):
    src = _CHILD_SOURCE.format(name=name)
    namespace = {"GREEDY_SCAN": GREEDY_SCAN, "slack_item": slack_item, "u0_term": u0_term, "u1_term": u1_term}
    return compile_source(src, name, namespace)


_child_int = _make_child("_child_int", _u0_exact, _u1_exact)
_child_wide = _make_child("_child_wide", _u0_wide, _u1_wide)
_child_real = _make_child("_child_real", _u0_real, _u1_real)


def _completion(j, w, data, n, x):
    """Mark in ``x`` the greedy completion that the sons' lower bound counts (items j ..)."""
    s, rem = slack_item(j, w, data, n)
    x[j:s] = 1
    if s >= n:
        return
    for t in range(s + 1, min(n, s + 1 + GREEDY_SCAN)):
        if data[0, t] <= rem:
            rem -= data[0, t]
            x[t] = 1


def _ratio_order(p, w, integral):
    # ties: lighter first, then by index, so that identical items sit side by side
    order = np.lexsort((np.arange(len(p)), w, -(p / w.astype(np.float64))))
    if integral:  # float ratios may tie or misorder huge integers: verify exactly, fix if needed
        pp, ww = p[order].tolist(), w[order].tolist()
        if any(pp[i] * ww[i + 1] < pp[i + 1] * ww[i] for i in range(len(pp) - 1)):

            def cmp(a, b):
                d = int(p[b]) * int(w[a]) - int(p[a]) * int(w[b])
                return d if d else (int(w[a]) - int(w[b])) or (a - b)

            order = np.array(sorted(range(len(p)), key=functools.cmp_to_key(cmp)), dtype=np.int64)
    return order


def default_host_budget() -> int:
    """A quarter of the physical memory (the ring is pinned, so leave the rest to the system), and at
    most half of what this process may still allocate (:func:`gpudp.memory.available_memory`)."""
    from gpudp.memory import available_memory

    try:
        phys = int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4)
    except (ValueError, OSError, AttributeError):
        phys = 4 << 30
    return max(min(phys, available_memory() // 2), 1 << 20)


def _limits(p, w, c, cap, free, integral: bool) -> dict:
    """The B&B's arithmetic limits for the instance, checked with Python integers (see the module
    doc): raises :class:`gpudp.InputError` where int64 (or float64's exact integers) cannot hold it.
    Returns whether every item that can be packed fits (then no search, and no limit, is needed) and,
    for integer data, whether the int64 child is exact."""
    int_p, int_w = p.dtype.kind == "i", w.dtype.kind == "i"
    if int_w:
        total_w = sum(int(v) for v in w[free])
        all_fit = total_w <= c
    else:
        all_fit = math.fsum(w[free].tolist()) <= cap
    out = {"all_fit": all_fit}
    if all_fit or not len(free):
        return out
    limit, what = (
        (INT64_MAX, "2^63 - 1 that the B&B's int64") if integral else (FLOAT_EXACT, "2^53 that float64")
    )
    if int_p:
        total_p = sum(int(v) for v in p[free])
        if total_p > limit:
            raise InputError(
                "profits",
                f"the profits of the items that can be packed sum to {total_p}, past the {what} "
                "arithmetic holds exactly",
            )
    if int_w and total_w + int(c) > limit:
        raise InputError(
            "weights",
            f"the weights of the items that can be packed sum to {total_w}; with the capacity {c} that is "
            f"past the {what} prefix sums hold exactly",
        )
    if integral:
        pmax, wmax = max(int(v) for v in p[free]), max(int(v) for v in w[free])
        out["exact"] = int(c) * pmax + wmax <= INT64_MAX
    return out


def solve_instance(inst: KnapsackInstance, **kw) -> Solution:
    return solve(inst.profits, inst.weights, inst.capacity, name=inst.name, **kw)


def solve(
    profits,
    weights,
    capacity,
    backend: str = "auto",
    host_budget_bytes: int | None = None,
    batch: int = frontier.DEFAULT_BATCH,
    cpu_threshold: int = frontier.DEFAULT_CPU_THRESHOLD,
    threads: int | None = None,
    time_limit: float | None = None,
    name: str = "",
    dedupe: bool = True,
) -> Solution:
    """Solve a 0/1 knapsack by branch and bound; returns a checked :class:`Solution`.

    ``solution`` is the 0/1 vector in the caller's item order. ``optimal`` is False (and
    ``details["message"]`` says why) when the host budget or the time limit stopped the search: the
    value is then that of the best solution found. Bad input raises :class:`gpudp.InputError`, and
    so does an instance past the limits of the module doc (totals int64 cannot hold).
    ``dedupe`` (integer data): drop sons equal in weight and profit to another son of the same batch.
    """
    t0 = time.perf_counter()
    inst = validate(profits, weights, capacity, name=name)
    if host_budget_bytes is None:
        host_budget_bytes = default_host_budget()
    else:
        host_budget_bytes = parse_bytes(host_budget_bytes, "host_budget_bytes")
    if host_budget_bytes <= 0:
        raise InputError("host_budget_bytes", f"must be > 0, got {host_budget_bytes}")
    if isinstance(batch, bool) or not isinstance(batch, int | np.integer) or batch < 1:
        raise InputError("batch", f"must be an integer >= 1, got {batch!r}")
    time_limit = parse_time_limit(time_limit)
    be = resolve_backend(backend)
    p, w, c, integral = inst.profits, inst.weights, inst.capacity, inst.integral
    int_p, int_w = p.dtype.kind == "i", w.dtype.kind == "i"
    dtype = np.int64 if integral else np.float64
    # real weights: the capacity is C + tau_w everywhere (knapsack_io's one feasibility definition)
    cap = c if int_w else float(c) + weight_tolerance(w)
    forced = np.flatnonzero((w == 0) & (p > 0))
    free = np.flatnonzero((w > 0) & (w <= cap) & (p > 0))
    lim = _limits(p, w, c, cap, free, integral)
    x = np.zeros(len(p), np.int8)
    x[forced] = 1
    details = {"method": "bb", "bound": "Martello-Toth U2", "n": len(p), "free_items": len(free)}
    stats = Stats(backend=be, device=device_name(be))
    complete, message = True, "no free items: trivially optimal"
    if len(free) and lim["all_fit"]:
        x[free] = 1
        message = "every item that can be packed fits: trivially optimal"
    elif len(free):
        order = free[_ratio_order(p[free], w[free], integral)]
        n = len(order)
        data = np.zeros((5, n + 1), dtype)
        data[0, :n] = w[order]
        data[1, :n] = p[order]
        data[2, 1:] = np.cumsum(data[0, :n])
        data[3, 1:] = np.cumsum(data[1, :n])
        data[4, 0] = cap
        # real data: tau_p, the checker's value tolerance (over all the profits; for integer profits in
        # float64 it only covers the bounds' rounding: their lower bounds, and so the answer, are exact)
        slack = 0 if integral else REL_TOL * max(1.0, math.fsum(np.abs(p).tolist()))
        same = np.zeros(n, bool)
        same[1:] = (data[0, 1:n] == data[0, : n - 1]) & (data[1, 1:n] == data[1, : n - 1])
        details["identical_item_runs"] = int(same.sum())
        if integral:
            child = _child_int if lim["exact"] else _child_wide
            details["bound_arithmetic"] = "int64" if lim["exact"] else "float64, rounded outwards"
        else:
            child = _child_real
        key_bits = 0  # exact-duplicate elimination needs (weight, profit) packed in 62 bits
        if integral and dedupe:
            pb = int(data[3, n]).bit_length()
            key_bits = pb if int(c).bit_length() + pb + 1 <= 62 else 0
        details["dedupe"] = key_bits > 0
        prob = frontier.BranchProblem(n, data, child, slack=slack, symmetric=same, key_bits=key_bits)
        try:
            res = frontier.solve(
                prob, be, int(host_budget_bytes), batch, cpu_threshold, threads=threads, time_limit=time_limit
            )
        except frontier.RingFull as e:
            raise InputError("host_budget_bytes", str(e)) from None
        if res.best is not None:  # else no son was seen (stopped at once): the empty selection
            xs = np.zeros(n, np.int8)
            xs[: res.level + 1] = res.decisions()
            _completion(res.level + 1, res.fields[0], data, n, xs)
            x[order] = xs
        complete, message = res.complete, res.message
        stats.cells = res.stats["nodes_explored"]
        stats.bytes_evicted = res.stats["bytes_d2h"]
        stats.kernel_seconds = res.stats["seconds_gpu"]
        stats.extra.update(res.stats)
        details["incumbent"] = res.best.item() if hasattr(res.best, "item") else res.best
    sel = np.flatnonzero(x == 1)
    value = sum(int(v) for v in p[sel]) if int_p else math.fsum(p[sel].tolist())
    weight = sum(int(v) for v in w[sel]) if int_w else math.fsum(w[sel].tolist())
    details.update(weight=weight, message=message, integral=integral)
    if not complete:  # as every stopped method: its bounds (the incumbent; Dantzig's above it)
        forced_value = sum(int(v) for v in p[forced]) if int_p else math.fsum(p[forced].tolist())
        upper = (
            forced_value + dantzig_bound(p[free], w[free], c) if integral else math.fsum(p[p > 0].tolist())
        )
        details.update(stopped=stats.extra.get("stopped"), lower_bound=value, upper_bound=upper)
    if not int_w:
        details["capacity_tolerance"] = cap - float(c)
    stats.seconds = time.perf_counter() - t0
    claimed = None
    if details.get("incumbent") is not None and integral:
        claimed = int(details["incumbent"]) + sum(int(v) for v in p[forced])
    return checked_solution(p, w, c, x, value, stats, details, complete, claimed)
