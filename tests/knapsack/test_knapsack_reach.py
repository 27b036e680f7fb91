"""The reachable-sums knapsack DP (``method="reach"``, issue 41) against the small references of
test_knapsack_dp.py (the textbook DP over capacities, the brute force in Python integers) and of
test_knapsack_jooken.py (the DP over reachable weights), on random data, Jooken's class at small n
and c, and every magnitude; and one c = 10^10 instance of Jooken's class proven."""

import threading
import time
from fractions import Fraction

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_knapsack_dp import (
    EDGE,
    arrays,
    assert_solves,
    brute_int,
    edge_instances,
    instances,
    magnitude,
    ref_dp,
)
from test_knapsack_jooken import ref_dp as ref_reachable

from gpudp import InputError
from gpudp.cli import main
from gpudp.problems import knapsack
from gpudp.problems.knapsack import classes
from gpudp.problems.knapsack import reach as kr
from gpudp.problems.knapsack import reach_envelopes as ke
from gpudp.problems.knapsack import reach_nodes as rn
from gpudp.problems.knapsack import reach_step as rs
from gpudp.problems.knapsack.sparse.items import efficiency_order

INT64_MAX = 2**63 - 1
TINY = {"LIST_START": 1, "NODE_START": 2, "MAX_INTERVALS": 3, "COARSE_INTERVALS": 2, "ALL_INTERVALS": 4,
        "FINE_AFTER": 0}  # fmt: skip


def owner(name):
    """The module whose constant ``name`` is (the envelopes' own, or the search's)."""
    return ke if name in vars(ke) else kr


@pytest.fixture
def tiny_room(monkeypatch):
    """Lists of 1 state, 2 nodes, envelopes of 2 (coarse) and 3 (fine) intervals, none stored beyond
    every K-th, the fine envelopes as soon as a search keeps a state: every growth, node collection,
    interval merge, envelope rebuild and the switch to fine envelopes runs."""
    for name, value in TINY.items():
        monkeypatch.setattr(owner(name), name, value)


def refuses(p, w, c) -> bool:
    """The documented limits: when not every packable item fits, their weights must sum to at most
    2^63 - 1 and their profits to at most 2^61 - 1."""
    free = [(int(a), int(b)) for a, b in zip(p, w, strict=True) if 0 < b <= c and a > 0]
    total_w = sum(b for _, b in free)
    return total_w > c and (total_w > INT64_MAX or sum(a for a, _ in free) > 2**61 - 1)


@settings(max_examples=60, deadline=None)
@given(instances(st.integers(0, 1000), max_n=30))
def test_random_instances_vs_reference_dp(inst):
    """n <= 30, C <= 2000, duplicates, items heavier than C, zero profits and weights."""
    p, w, c = arrays(inst)
    sol = kr.solve(p, w, c)
    assert sol.optimal and sol.details["method"] == "reach"
    assert_solves(sol, p, w, c, ref_dp(p.tolist(), w.tolist(), c))


@settings(max_examples=40, deadline=None)
@given(instances(st.integers(0, 60), max_n=22), st.integers(0, 3))
def test_profits_near_the_weights_with_tiny_room(inst, spread):
    """Profits within ``spread`` of the weights (the case the method is for), with lists, nodes and
    envelopes so small that every growth, collection, merge and rebuild runs."""
    saved = {name: getattr(owner(name), name) for name in TINY}
    for name, value in TINY.items():  # (a fixture would not reset between examples)
        setattr(owner(name), name, value)
    try:
        items, c = inst
        rng = np.random.default_rng(len(items) * 7919 + c)
        w = np.array([b for _, b in items], np.int64)
        p = np.maximum(w + rng.integers(-spread, spread, len(w), endpoint=True), 0)
        assert_solves(kr.solve(p, w, c), p, w, c, ref_dp(p.tolist(), w.tolist(), c))
    finally:
        for name, value in saved.items():
            setattr(owner(name), name, value)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(0, 24),
    c=st.integers(10, 10**5),
    g=st.integers(2, 6),
    f=st.sampled_from([0.0, 0.1, 0.3]),
    eps=st.sampled_from([0.0, 1e-5, 1e-3, 0.1]),
    s=st.integers(1, 300),
    seed=st.integers(0, 2**32),
)
def test_jooken_class_vs_reference(n, c, g, f, eps, s, seed):
    p, w, cap = classes.jooken_instance(n, c, g=g, f=f, eps=eps, s=s, seed=seed)
    sol = knapsack.solve(p, w, cap, method="reach")
    assert sol.optimal and sol.checked and sol.value == ref_reachable(p.tolist(), w.tolist(), cap)


capacity = st.one_of(st.integers(0, 120), st.sampled_from(EDGE), st.integers(0, INT64_MAX))


@settings(max_examples=120, deadline=None)
@given(edge_instances(magnitude, capacity))
def test_edge_magnitudes_exact_or_refused(inst):
    """Profits and weights 0, 1, 2^31, 2^53 + 1, 2^62 ... (negative profits too) and capacities up to
    2^63 - 1: the exact optimum (a Python integer), or an InputError past the documented totals."""
    p, w, c = inst
    if refuses(p, w, c):
        with pytest.raises(InputError, match=r"2\^6[13] - 1"):
            kr.solve(p, w, c)
        return
    sol = kr.solve(p, w, c)
    assert sol.optimal and sol.value == brute_int(p, w, c) and sol.checked
    assert sol.details["weight"] <= c


def test_edge_cases(tiny_room):
    assert kr.solve([], [], 10).value == 0
    sol = kr.solve([5, 7], [3, 4], 0)
    assert sol.value == 0 and sol.solution.tolist() == [0, 0] and sol.optimal
    sol = kr.solve([5, 7, 2, 0, -4], [3, 0, 50, 1, 1], 4)  # weight 0 taken, heavy, zero, negative dropped
    assert sol.value == 12 and sol.solution.tolist() == [1, 1, 0, 0, 0]
    sol = kr.solve([5, 7, 2], [1, 2, 3], 100)
    assert sol.value == 14 and "fits" in sol.details["message"]
    sol = kr.solve([6] * 7, [4] * 7, 17)
    assert sol.value == 24 and sol.solution.sum() == 4
    sol = kr.solve([2**61 - 3, 1, 1], [2**62, 2**61, 3], 2**62 + 2)  # the profits' limit exactly
    assert sol.value == 2**61 - 3 and sol.optimal
    with pytest.raises(InputError, match=r"profits: .*2\^61 - 1"):
        kr.solve([2**61 - 2, 1, 1], [2**62, 2**61, 3], 2**62 + 2)
    with pytest.raises(InputError, match=r"weights: .*2\^63 - 1"):
        kr.solve([3, 1, 1], [2**62, 2**62, 3], 2**62 + 2)
    with pytest.raises(InputError, match="integer"):
        kr.solve([1.5, 2], [1, 2], 2)


def test_time_limit_returns_a_checked_unproven_packing_with_its_gap():
    p, w, c = classes.jooken_instance(1200, 10**10, g=14, eps=1e-5, seed=0)
    t = time.perf_counter()
    sol = knapsack.solve(p, w, c, method="reach", time_limit=0.5)
    assert time.perf_counter() - t < 3
    d = sol.details
    assert not sol.optimal and d["stopped"] == "time" and sol.checked
    assert d["upper_bound"] - sol.value == d["gap"] > 0 and "not proven optimal" in d["message"]
    assert sol.value >= d["greedy_value"] and d["upper_bound"] <= d["bounds"]["dantzig"]
    sol = kr.solve(p, w, c, time_limit=0)
    assert not sol.optimal and sol.value == d["greedy_value"]
    with pytest.raises(InputError, match="time_limit"):
        kr.solve(p, w, c, time_limit=-1)


def test_a_search_past_its_budget_runs_the_beam_before_and_after_the_fine_envelopes(tiny_room):
    """A search on the coarse envelopes stopped by its budget (a costly instance) runs the beam on
    them, once, before the fine ones are built (no time limit needed): its packing caps how far the
    targets fall, and a stop later reports it even where one search runs across half the time limit
    (whose beam, between searches, then never ran: a gap of 2.3 M at 30 s on a published n = 1,200
    instance, 8 k with it); then once more on the fine envelopes, unless proven already (its packing
    sets the last target: 200 of the optimum, not 2,000, on a published n = 1,000 instance); the
    answer stays proven and equal to the reference."""
    fine_beams = 0
    for seed in range(3):
        p, w, c = classes.jooken_instance(40, 10**4, g=4, f=0.2, eps=1e-3, s=50, seed=seed)
        sol = kr.solve(p, w, c)
        assert sol.optimal and sol.value == ref_reachable(p.tolist(), w.tolist(), c)
        runs = sol.details["searches"]
        first = next(k for k, r in enumerate(runs) if r.get("stopped") == "budget")
        assert "beam" in runs[first + 1] and runs[first + 1]["best"] >= sol.details["greedy_value"]
        beams = [k for k, r in enumerate(runs) if "beam" in r]
        assert beams in ([first + 1], [first + 1, first + 2])
        if len(beams) == 2:
            fine_beams += 1
            assert runs[first + 2]["best"] >= runs[first + 1]["best"] and "fine_envelopes" in sol.details
    assert fine_beams


def test_memory_stop_returns_a_checked_unproven_packing(monkeypatch, tiny_room):
    from gpudp import memory

    monkeypatch.setattr(memory, "available_memory", lambda: 200)  # the lists may not grow
    p, w, c = classes.jooken_instance(300, 10**8, seed=0)
    sol = kr.solve(p, w, c)
    assert not sol.optimal and sol.details["stopped"] == "memory" and sol.checked
    assert "out of memory" in sol.details["message"] and sol.details["gap"] > 0


def test_a_jooken_instance_at_c_1e10_is_proven():
    """n = 400, c = 10^10, the generator's defaults (g = 10, eps = 1e-4, s = 100): the sparse DP does
    not prove it in 20 s here; this method proves it in about a second."""
    p, w, c = classes.jooken_instance(400, 10**10, seed=0)
    t = time.perf_counter()
    sol = knapsack.solve(p, w, c, method="reach")
    secs = time.perf_counter() - t
    d = sol.details
    assert sol.optimal and sol.checked and d["upper_bound"] == sol.value and d["gap"] == 0
    assert sol.value == int(p[sol.solution == 1].sum()) and d["weight"] <= c
    assert d["bounds"]["envelope"] < d["bounds"]["dantzig"]  # the reachable sums cut the LP bound
    assert secs < 20, secs


def test_front_end_and_command_line(tmp_path, capsys):
    assert "reach" in knapsack.METHODS
    sol = knapsack.solve([10, 7, 8], [5, 4, 3], 8, method="reach")
    assert sol.value == 18 and sol.details["method"] == "reach"
    f = tmp_path / "k.txt"
    f.write_text("3 8\n10 5\n7 4\n8 3\n")
    assert main(["solve", "knapsack", str(f), "--method", "reach", "--json"]) == 0
    assert '"value": 18' in capsys.readouterr().out


def test_auto_tries_reach_where_the_dp_refuses_and_few_items_fit(monkeypatch):
    """c = 10^10: the DP refuses its rows; items weigh just over c/2: sparse for a moment, then reach
    (a shorter moment where the profits follow the weights, as in Jooken's class)."""
    monkeypatch.setattr(knapsack, "SPARSE_FIRST_S", 0.1)
    monkeypatch.setattr(knapsack, "SPARSE_FIRST_FOLLOW_S", 0.02)
    p, w, c = classes.jooken_instance(200, 10**10, seed=0)
    inst = knapsack.validate(p, w, c)
    choice = knapsack.choose_method(inst, backend="cpu")
    assert choice.steps == [("sparse", 0.02), ("reach", None), ("bb", None)]
    # the same weights, profits drawn apart from them: sparse's tenth of a second
    q = np.random.default_rng(0).integers(1, c // 2, len(p))
    steps = knapsack.choose_method(knapsack.validate(q, w, c), backend="cpu").steps
    assert steps == [("sparse", 0.1), ("reach", None), ("bb", None)]
    sol = knapsack.solve_instance(inst, backend="cpu")
    assert sol.optimal and sol.details["method"] == "reach"
    assert "reach proved it" in sol.details["method_note"]
    assert [a["method"] for a in sol.details["auto"]["attempts"]] == ["sparse", "reach"]
    # no item weighs C/16 or more: the plan of before (sparse, then bb)
    p, w, c = classes.pisinger_instance(3, 400, 10**9, seed=0)
    assert [m for m, _ in knapsack.choose_method(knapsack.validate(p, w, c), backend="cpu").steps] == [
        "sparse",
        "bb",
    ]


def test_profits_follow_the_weights_up_to_a_thousandth_of_c_on_average():
    """The mean ``|p − λ·w|`` over the items that can be packed (``λ`` of those weighing at least
    C/16) against C/1000, at the boundary: two heavy items of ratio 1 and two light ones off it by
    a total that makes the mean exactly C/1000, then one more."""
    c = 16_000
    w = np.array([1000, 1000, 10, 10])
    for off, follows in ((32, True), (33, False)):  # mean (0 + 0 + off + off) / 4 against 16
        p = np.array([1000, 1000, 10 + off, 10 + off])
        assert knapsack._profits_follow_weights(knapsack.validate(p, w, c), c) is follows
    # items that cannot be packed (heavier than C, no profit) do not count
    p, w2 = np.array([1000, 1000, 10, 10, 9999, 0]), np.array([1000, 1000, 10, 10, 20_000, 500])
    assert knapsack._profits_follow_weights(knapsack.validate(p, w2, c), c)
    # none weighs C/16: nothing to take the ratio from
    assert not knapsack._profits_follow_weights(knapsack.validate([5, 5], [5, 5], c), c)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 18), c=st.integers(10, 10**5), seed=st.integers(0, 2**32), beam=st.integers(1, 8))
def test_the_beam_search_gives_a_packing_and_with_room_for_all_the_optimum(n, c, seed, beam):
    """The heuristic run once half a time limit is spent: a feasible packing worth what it claims, at
    most the optimum; with a beam that holds every state, the optimum."""
    p, w, c = classes.jooken_instance(n, c, g=4, f=0.2, eps=1e-3, s=50, seed=seed)
    free = (w > 0) & (w <= c) & (p > 0)
    ws, ps = w[free][np.argsort(-w[free], kind="stable")], p[free][np.argsort(-w[free], kind="stable")]
    if not len(ws) or ws.sum() <= c:
        return
    want = ref_reachable(ps.tolist(), ws.tolist(), c)
    env = kr.Envelopes(ws, ps, c, 1, 1)
    for size, exact in ((beam, False), (2**n, True)):
        z, items, *_ = kr._search(ws, ps, c, env, 1, 1, 0, 1, None, beam=size)
        taken = items or []
        assert int(ws[taken].sum()) <= c and int(ps[taken].sum()) == z <= want
        assert z == want or not exact


@settings(max_examples=150, deadline=None)
@given(
    items=st.lists(
        st.tuples(st.sampled_from([1, 2, 3, 2**31, 2**40 + 1, 2**53 + 1, 2**58]), st.integers(1, 2**61 // 8)),
        min_size=1,
        max_size=7,
    ),
    start=st.integers(0, 7),
    room=st.one_of(st.integers(0, 200), st.integers(0, 2**63 - 1)),
)
def test_the_states_lp_bound_is_at_least_dantzigs_and_the_best_completion(items, start, room):
    """The bound each state gets from the items left (``_suffix_lp`` and ``_fraction``): at least
    Dantzig's bound of those items at the state's room (exact, in fractions) and so at least their
    best packing within it, and within 2^24 above it (the sums stay in int64); weights up to 2^58,
    profits summing up to 2^61 - 1 (the method's limit), rooms up to 2^63 - 1."""
    w = np.array([a for a, _ in items], np.int64)
    p = np.array([b for _, b in items], np.int64)
    start = min(start, len(w))
    lw, lp = np.empty(len(w) + 1, np.int64), np.empty(len(w) + 1, np.int64)
    m = rs.suffix_lp(w, p, efficiency_order(p, w), start, lw, lp)
    r = int(np.searchsorted(lw[: m + 1], room, side="right")) - 1
    got = int(lp[r]) + int(rs._fraction(room - int(lw[r]), lw[: m + 1], lp[: m + 1], r))
    left = sorted(range(start, len(w)), key=lambda k: Fraction(int(p[k]), int(w[k])), reverse=True)
    dantzig, rest = Fraction(0), room
    for k in left:
        take = min(Fraction(1), Fraction(rest, int(w[k])))
        dantzig += take * int(p[k])
        rest -= take * int(w[k])
    assert dantzig <= got <= dantzig + 2**24
    assert got >= brute_int(p[start:].tolist(), w[start:].tolist(), room)


def _suffix_items(rng, n: int, c: int):
    """``n`` items in the search's order (decreasing weight, weights in 1..c), profits within 20 of
    the weights: the envelopes' tests' instances."""
    w = np.sort(rng.integers(1, c + 1, n))[::-1].astype(np.int64)
    return w, np.maximum(w + rng.integers(-20, 20, n, endpoint=True), 1).astype(np.int64)


def _passes(n: int) -> list[int]:
    """The ``i`` a search asks envelopes for: three passes of rising ``i`` and one stopped halfway."""
    return [*range(n + 1), *range(n + 1), *range(n // 2), *range(n + 1)]


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 12),
    c=st.integers(1, 3000),
    seed=st.integers(0, 2**32),
    fine=st.booleans(),
    most=st.sampled_from([2, 5, 1 << 17]),
    lam=st.sampled_from([(1, 1), (0, 1), (3, 4), (7, 2)]),
)
def test_each_envelope_bounds_the_best_completion_exactly_where_never_widened(n, c, seed, fine, most, lam):
    """``Envelopes.bound(i, S)`` (``den`` times a bound on what items ``i..`` add within ``S``): at
    least the best packing of those items within ``S`` for every ``i`` and ``S``, whatever the
    multiplier and however narrow the envelopes (intervals merged and widened); equal to it where
    the fine envelope was never widened (its intervals are the subset sums, their tops the best
    profits)."""
    rng = np.random.default_rng(seed)
    w, p = _suffix_items(rng, n, c)
    saved = ke.MAX_INTERVALS, ke.COARSE_INTERVALS
    ke.MAX_INTERVALS = ke.COARSE_INTERVALS = most
    try:
        env = kr.Envelopes(w, p, c, *lam, fine=fine)
    finally:
        ke.MAX_INTERVALS, ke.COARSE_INTERVALS = saved
    den = lam[1]
    for i in range(n + 1):
        for room in {0, 1, c // 3, c // 2, c - 1, c, *(int(v) for v in rng.integers(0, c + 1, 4))}:
            if room < 0:
                continue
            best = ref_reachable(p[i:].tolist(), w[i:].tolist(), room)
            got = env.bound(i, room)
            assert got >= best * den
            if fine and env.taus[i] == 0 and (i == n or env.widths[i] == 1 < c):  # (width c: no limit)
                assert got // den == best


def test_the_tops_cut_the_envelope_bound_below_a_fill_of_each_interval():
    """Each interval keeps the best profit of its subsets (its top) beside its best gain: on Jooken's
    class the empty state's bound falls below the most ``num·hi + gain`` of the intervals (a fill of
    each interval up to its end at its best gain), the bound before tops."""
    p, w, c = classes.jooken_instance(60, 10**6, g=6, f=0.2, eps=1e-3, s=50, seed=1)
    order = np.lexsort((-p, -w))
    ws, ps = w[order], p[order]
    env = kr.Envelopes(ws, ps, c, 1, 1)
    lo, hi, ga, tp, best = env.get(0)
    below = hi <= c
    assert env.bound(0, c) < int((hi[below] + ga[below]).max())
    assert env.bound(0, c) >= ref_reachable(ps.tolist(), ws.tolist(), c)


def test_a_failed_search_is_followed_by_one_at_the_packing_when_it_is_near(monkeypatch):
    """With ``JUMP`` past any distance, every search after a failed one targets ``z + g`` (that search
    ends the proof, reached or not); the default's answers stay proven and equal to the reference."""
    p, w, c = classes.jooken_instance(40, 10**5, g=10, f=0.2, eps=1e-3, s=50, seed=3)
    want = ref_reachable(p.tolist(), w.tolist(), c)
    monkeypatch.setattr(kr, "JUMP", 10**30)
    sol = kr.solve(p, w, c)
    assert sol.optimal and sol.value == want
    runs = [r for r in sol.details["searches"] if "beam" not in r]
    failed = [k for k, r in enumerate(runs[:-1]) if r.get("reached") is False]
    g = int(np.gcd.reduce(p[(p > 0) & (w > 0) & (w <= c)]))
    assert failed and all(runs[k + 1]["target"] == runs[k]["best"] + g for k in failed)


def step_case(seed: int, L: int, cap: int, scale: int = 1):
    """Arguments of ``step`` (up to ``lw, lp``) for a random list of at most ``L`` states (weights
    rising within ``[0, cap]``, profits strictly rising; dense, so that shifted states often weigh
    as much as originals), a random item, envelope (disjoint intervals from 0, gains, tops, their
    prefix maxima), relaxation of up to 4 items left (their total weight within int64, as the method's
    input check keeps it: past it the suffix sums wrapped and the two steps differed on the garbage),
    and a target around the profits; every weight times ``scale`` (and ``num`` 0 past 1: the method
    keeps ``num·cap`` within 2^61)."""
    rng = np.random.default_rng(seed)
    W = np.sort(rng.choice(cap + 1, size=min(L, cap + 1), replace=False)).astype(np.int64)
    P = (np.cumsum(rng.integers(1, 5, len(W))) - 1).astype(np.int64)
    N = rng.integers(-1, 5, len(W)).astype(np.int64)
    pts = np.unique(np.concatenate([[0], rng.integers(1, cap + 1, 2 * int(rng.integers(0, 6)))]))
    lo, hi = pts[0::2].astype(np.int64), np.append(pts[1::2], [cap] * (len(pts) % 2)).astype(np.int64)
    m = len(lo)
    ga, tp = rng.integers(-20, 20, m).astype(np.int64), rng.integers(0, 200, m).astype(np.int64)
    num, den = int(rng.integers(0, 3)) if scale == 1 else 0, int(rng.integers(1, 4))
    best = np.empty(m, np.int64)
    ke.best_below(hi, ga, tp, num, m, best)
    left = int(rng.integers(0, 5))
    ws, ps = rng.integers(1, cap + 1, left).astype(np.int64), rng.integers(1, cap + 1, left).astype(np.int64)
    while int(ws.sum()) * scale > 2**63 - 1:  # the items' total weight fits int64, as solve checks
        ws = np.maximum(ws // 2, 1)
    lw, lp = np.empty(left + 1, np.int64), np.empty(left + 1, np.int64)
    k = rs.suffix_lp(ws * scale, ps, efficiency_order(ps, ws * scale), 0, lw, lp)
    w, p, thr = int(rng.integers(1, cap + 1)), int(rng.integers(1, 20)), int(rng.integers(0, P[-1] + 8))
    W, lo, hi, w, cap = W * scale, lo * scale, hi * scale, w * scale, cap * scale
    ke.best_below(hi, ga, tp, num, m, best)
    return [W, P, N, len(W), w, p, 3, cap, thr, lo, hi, ga, tp, best, num, den, lw[: k + 1], lp[: k + 1]]


def run_step(args, z, chunks=None):
    """``step`` (``chunks`` None) or ``step_parallel`` on copies of ``args``, nodes from 7, incumbent
    ``z`` (its node −1); returns every output: count, nodes made, the list, the nodes, ``zst``."""
    args = list(args)
    L, nn = args[3], 7
    NW, NP, NN = (np.full(2 * L + 1, -9, np.int64) for _ in range(3))
    par, itm = np.full(nn + L + 2, -9, np.int64), np.full(nn + L + 2, -9, np.int64)
    zst = np.array([z, -1], np.int64)
    if chunks is None:
        k, nn = rs.step(*args, NW, NP, NN, par, itm, nn, zst)
    else:  # its list comes back in W, P, N (room for 2L)
        for x in range(3):
            args[x] = np.concatenate([args[x], np.full(L + 1, -9, np.int64)])
        k, nn = rs.step_parallel(*args, NW, NP, NN, par, itm, nn, zst, chunks)
        NW, NP, NN = args[:3]
    lists = (a[:k].tolist() for a in (NW, NP, NN))
    return k, nn, *lists, par[:nn].tolist(), itm[:nn].tolist(), zst.tolist()


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    L=st.integers(1, 40),
    cap=st.integers(1, 60),
    z=st.integers(-1, 150),
    scale=st.sampled_from([1, 1, 2**57]),
)
def test_the_parallel_step_equals_the_serial_one(seed, L, cap, z, scale):
    """``step_parallel`` keeps the same states in the same order, makes the same nodes and the same
    incumbent as ``step``, on random sorted dominance-free lists, items, envelopes, relaxations,
    targets and incumbents, weights up to 60·2^57, for 1, 2, 3, 5 and more pieces than states (empty
    ones), on 1 thread and on every thread numba has."""
    args = step_case(seed, L, cap, scale)
    want = run_step(args, z)
    for threads in {1, numba.config.NUMBA_NUM_THREADS}:
        numba.set_num_threads(threads)
        try:
            for chunks in (1, 2, 3, 5, 2 * L + 3):
                assert run_step(args, z, chunks) == want, (threads, chunks)
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


def test_the_parallel_step_cuts_where_every_shifted_state_weighs_as_an_original():
    """Each shifted state weighs exactly as an original one (the same-weight replacement at every
    weight, whichever piece boundary falls there), with the target kept low or high."""
    L = 30
    W = np.arange(L, dtype=np.int64) * 3
    P = np.arange(L, dtype=np.int64) * 2
    for thr, p in ((0, 1), (0, 2), (0, 3), (40, 5), (10**6, 7)):
        args = step_case(0, L, 3 * L)
        args[:8] = [W, P, np.arange(L, dtype=np.int64), L, 3, p, 2, 3 * L]
        args[8] = thr
        want = run_step(args, -1)
        assert want[0] > 0 or thr == 10**6
        for chunks in range(1, 2 * L + 2):
            assert run_step(args, -1, chunks) == want, (thr, p, chunks)


@settings(max_examples=30, deadline=None)
@given(instances(st.integers(0, 60), max_n=22), st.integers(0, 3))
def test_solve_with_every_step_parallel_gives_the_serial_search(inst, spread):
    """With every list's step parallel (from 1 state, 3 pieces a thread) and tiny lists, nodes and
    envelopes: the same proven optimum as the reference DP, and the same searches (targets, states,
    largest lists, packings) as the serial steps."""
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread: the parallel step is never taken")
    items, c = inst
    rng = np.random.default_rng(len(items) * 7919 + c)
    w = np.array([b for _, b in items], np.int64)
    p = np.maximum(w + rng.integers(-spread, spread, len(w), endpoint=True), 0)
    calls = []
    step_par = kr.step_parallel
    with pytest.MonkeyPatch.context() as m:  # (a fixture would not reset between examples)
        for name, value in TINY.items():
            m.setattr(owner(name), name, value)
        serial = kr.solve(p, w, c)
        m.setattr(kr, "PARALLEL_STATES", 1)
        m.setattr(kr, "CHUNKS_PER_THREAD", 3)
        m.setattr(kr, "step_parallel", lambda *a: calls.append(a[3]) or step_par(*a))
        m.setattr(kr, "PARALLEL_NODES", 1)  # every collection, copy and first write parallel
        m.setattr(ke, "AHEAD_INTERVALS", 0)  # every segment rebuilt ahead on a thread
        par = kr.solve(p, w, c)
    assert_solves(par, p, w, c, ref_dp(p.tolist(), w.tolist(), c))
    keys = ("target", "best", "states", "largest_list", "reached", "beam")
    runs = [[{k: r.get(k) for k in keys} for r in s.details.get("searches", [])] for s in (par, serial)]
    assert runs[0] == runs[1] and par.value == serial.value
    assert calls or not serial.details.get("states_generated")  # (every step was parallel)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    nn=st.integers(0, 300),
    L=st.integers(0, 60),
    spread=st.sampled_from([1, 3, 50, 10**6]),
)
def test_the_parallel_collection_equals_the_serial_one(seed, nn, L, spread):
    """``collect_parallel`` keeps the nodes the serial collection keeps, in the same order and
    renumbered alike (``par``, ``itm``, the list's nodes, the incumbent's), on random forests (each
    parent before its child, ``spread`` how far back; roots ``−1``), lists of nodes (``−1``: none;
    repeated), with and without an incumbent's node, for 1, 2, 3, 7 and more pieces than nodes, on
    1 thread and on every thread numba has."""
    rng = np.random.default_rng(seed)
    par = np.array([int(rng.integers(max(k - spread, -1), k)) if k else -1 for k in range(nn)], np.int64)
    itm = rng.integers(0, 1000, nn).astype(np.int64)
    N = rng.integers(-1, nn, L).astype(np.int64) if nn else np.full(L, -1, np.int64)
    znode = int(rng.integers(-1, nn)) if nn else -1
    want = [par.copy(), itm.copy(), N.copy(), np.array([5, znode], np.int64)]
    with pytest.MonkeyPatch.context() as m:
        m.setattr(kr, "PARALLEL_NODES", nn + 1)  # the serial one
        live = kr._collect(*want[:2], nn, want[2], L, want[3])
    for threads in {1, numba.config.NUMBA_NUM_THREADS}:
        numba.set_num_threads(threads)
        try:
            for chunks in (1, 2, 3, 7, nn + 2):
                got = [par.copy(), itm.copy(), N.copy(), np.array([5, znode], np.int64)]
                assert rn.collect_parallel(got[0], got[1], nn, got[2], L, got[3], chunks) == live
                assert got[0][:live].tolist() == want[0][:live].tolist(), (threads, chunks)
                assert got[1][:live].tolist() == want[1][:live].tolist()
                assert got[2].tolist() == want[2].tolist() and got[3].tolist() == want[3].tolist()
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


def test_the_node_arrays_grow_and_fill_in_parallel_as_serially(monkeypatch):
    """``_Arrays``: a list grown with its contents kept, the node array collected and grown, free
    entries first written: the same contents with the parallel copies and fills as with numpy's."""

    def run():
        rng = np.random.default_rng(3)
        ar = kr._Arrays()
        W, P, N = ar.lists[0]
        W[:], P[:], N[:] = (rng.integers(-1, 9, len(W)) for _ in range(3))
        grown = [a[: len(W)].copy() for a in ar.in_list(0, len(W), 3 * len(W))]
        ar.par[:], ar.itm[:] = np.arange(-1, len(ar.par) - 1), rng.integers(0, 9, len(ar.itm))
        N[: len(W)] = rng.integers(len(ar.par) // 2, len(ar.par), len(W))  # half the nodes live
        zst = np.array([0, len(ar.par) - 1], np.int64)
        nn = ar.nodes(len(ar.par), len(ar.par), N, len(W), zst)
        ar.touch(nn, nn + 100)
        return grown, nn, len(ar.par), ar.par[: nn + 100].tolist(), ar.itm[: nn + 100].tolist(), zst.tolist()

    monkeypatch.setattr(kr, "LIST_START", 64)
    monkeypatch.setattr(kr, "NODE_START", 256)
    serial = run()
    monkeypatch.setattr(kr, "PARALLEL_NODES", 1)
    parallel = run()
    assert serial[1] > 0 and serial[2] > 256  # (collected, then grown)
    assert [g.tolist() for g in serial[0]] == [g.tolist() for g in parallel[0]] and serial[1:] == parallel[1:]


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_the_node_array_grown_within_its_reserved_block_holds_what_copies_held(seed):
    """Nodes made, collected and grown over many steps: within a block reserved at the first growth
    (no copy), within blocks outgrown (a copy each time past one), and in arrays of the size asked for
    (``NODE_RESERVE`` 0: a copy at every growth) the node array holds the same nodes at the same sizes,
    with the same list and incumbent; the large block is reserved once (after the first array)."""

    def run(reserve):
        rng = np.random.default_rng(seed)
        with pytest.MonkeyPatch.context() as m:
            m.setattr(kr, "NODE_START", 4)
            m.setattr(kr, "NODE_RESERVE", reserve)
            ar, nn, seen = kr._Arrays(), 0, []
            blocks = [ar.block[0]]
            N, zst = np.full(1, -1, np.int64), np.array([0, -1], np.int64)
            for t in range(60):
                L, need, size = len(N), int(rng.integers(1, 40)), len(ar.par)
                nn = ar.nodes(nn, need, N, L, zst)
                assert len(ar.par) in (size, max(2 * size, 2 * (nn + need)))  # (the growth's rule)
                blocks += [] if any(b is ar.block[0] for b in blocks) else [ar.block[0]]
                ar.par[nn : nn + need] = [int(rng.integers(-1, nn + k)) for k in range(need)]
                ar.itm[nn : nn + need] = rng.integers(0, 1000, need)
                nn += need
                N = rng.integers(0, nn, 1 + 2 * t).astype(np.int64)  # (most nodes stay live)
                zst[1] = int(rng.integers(-1, nn))
                seen.append((len(ar.par), nn, ar.par[:nn].tolist(), ar.itm[:nn].tolist(), zst.tolist()))
        return seen, len(blocks)

    exact, copies = run(0)
    assert copies > 3  # (grown many times)
    assert run(1 << 40) == (exact, 2) and run(100)[0] == exact


def test_the_node_block_is_the_size_asked_for_under_ulimit_or_when_refused(monkeypatch):
    """Where ``ulimit`` limits the address space, or the OS refuses the large block, the node arrays
    are the size asked for; else as many entries as the memory check allows."""
    from gpudp import memory

    assert len(kr._reserve(10)[0]) == min(kr.NODE_RESERVE, memory.available_memory() // 32) > 10
    monkeypatch.setattr(kr, "NODE_RESERVE", 1 << 59)  # (2^62 bytes: no address space holds it)
    monkeypatch.setattr(memory, "available_memory", lambda: 1 << 70)
    assert [len(a) for a in kr._reserve(10)] == [10, 10]
    monkeypatch.setattr(kr, "NODE_RESERVE", 1 << 40)
    monkeypatch.setattr(memory, "available_memory", lambda: 1 << 30)
    assert len(kr._reserve(10)[0]) == 1 << 25
    limits = memory.limits()
    monkeypatch.setattr(memory, "limits", lambda: {**limits, "rlimit_room": 1 << 30})
    assert [len(a) for a in kr._reserve(10)] == [10, 10]


def rebuilt(env, i):
    """``E_i`` rebuilt from the stored envelope above its segment, each envelope in arrays of its own
    (the rebuild before segments reused their arrays: the reference; merged where the build merged);
    a stored one as it is."""
    top = i if i in env.kept else min(len(env.ws), (i // env.K + 1) * env.K)
    e = env.kept[top]
    for k in range(top - 1, i - 1, -1):
        tau, width = int(env.taus[k + 1]), int(env.widths[k + 1])
        arrays = [np.empty(ke.union_room(len(e[0])), np.int64) for _ in range(5)]
        m = ke.union(*e[:4], len(e[0]), int(env.ws[k]), int(env.dg[k]), int(env.pd[k]), env.cap, tau, width,
                     *arrays[:4])  # fmt: skip
        for _ in range(env.merges[k]):  # merged where the build merged, as it did
            tau, width = ke._doubled(tau, width, env.cap)
            m = ke.merge(*arrays[:4], m, tau, width, env.cap)
        ke.best_below(*arrays[1:4], env.num, m, arrays[4])
        e = tuple(a[:m] for a in arrays)
    return e


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(2, 40),
    c=st.integers(1, 3000),
    seed=st.integers(0, 2**32),
    fine=st.booleans(),
    ahead=st.booleans(),
    small=st.booleans(),
)
def test_segments_in_reused_arrays_equal_fresh_rebuilds_and_stay_while_served(n, c, seed, fine, ahead, small):
    """Every K-th envelope stored, the others rebuilt a segment at a time into a pool of arrays: over
    three passes of rising ``i`` and one stopped halfway, on 1 thread and on every thread (with
    ``ahead``, each next segment rebuilt on a thread meanwhile), every envelope equals its rebuild in
    fresh arrays and stays so until the search leaves its segment (no rebuild writes into the
    segment served); the pool holds one set of arrays on 1 thread and a few on several, fewer
    than the segments rebuilt (on several: the one held, those rebuilt ahead, and one more as a
    search moves on); with ``small`` the arrays start at one entry and grow."""
    rng = np.random.default_rng(seed)
    w, p = _suffix_items(rng, n, c)
    order = _passes(n)
    for threads in {1, numba.config.NUMBA_NUM_THREADS}:
        numba.set_num_threads(threads)
        try:
            with pytest.MonkeyPatch.context() as m:
                for name, value in (("MAX_INTERVALS", 3), ("COARSE_INTERVALS", 3), ("ALL_INTERVALS", 0)):
                    m.setattr(owner(name), name, value)
                if ahead:
                    m.setattr(ke, "AHEAD_INTERVALS", 0)
                env = kr.Envelopes(w, p, c, 3, 2, fine=fine)
                if small:
                    env.room = 1
                want = [[a.tolist() for a in rebuilt(env, i)] for i in range(n + 1)]
                served, rebuilds, segment = [], 0, None
                for i in order:
                    got = env.get(i)
                    if env.segment is not segment:  # (a segment reached: the arrays of the last one free)
                        served, segment, rebuilds = [], env.segment, rebuilds + (i not in env.kept)
                    served.append((i, got))
                    for thread, _, _ in env.ahead.values():
                        thread.join()
                    assert all([a.tolist() for a in e] == want[k] for k, e in served), (threads, i)
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        ahead = min(threads, env.most_ahead) if threads > 1 else 0  # the segments rebuilt ahead at once
        assert not env.all and len(env.pool) <= (1 if threads == 1 else 2 + ahead)
        assert len(env.pool) < rebuilds or rebuilds <= 2 + ahead


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 60), c=st.integers(1, 5000), seed=st.integers(0, 2**32), most=st.integers(2, 6))
def test_rebuilt_envelopes_equal_those_built(n, c, seed, most):
    """A segment rebuilt from its stored top gives the envelopes the build made, array for array
    (the union at the tau and width of the envelope above, then the build's merges), so a search keeps the
    same states whether every envelope was kept or every K-th: envelopes of ``most`` intervals, so
    that ``tau`` grows and the union's parts meet."""
    w, p = _suffix_items(np.random.default_rng(seed), n, c)
    with pytest.MonkeyPatch.context() as m:
        for name, value in (("MAX_INTERVALS", most), ("COARSE_INTERVALS", most)):
            m.setattr(ke, name, value)
        every = kr.Envelopes(w, p, c, 3, 2, fine=True)
        assert every.all
        m.setattr(ke, "ALL_INTERVALS", 0)
        env = kr.Envelopes(w, p, c, 3, 2, fine=True)
        assert not env.all
        for i in range(n + 1):
            assert [a.tolist() for a in env.get(i)] == [a.tolist() for a in every.get(i)], i


def test_arrays_left_to_a_thread_still_rebuilding_are_not_reused_until_it_ends(monkeypatch):
    """A search that jumps past the segment being rebuilt ahead leaves that thread to end on its own:
    its arrays are not given to the next segment rebuilt ahead while it runs (held back here until
    that one is done), whose envelopes then equal their fresh rebuilds."""
    for name, value in (
        ("MAX_INTERVALS", 3),
        ("COARSE_INTERVALS", 3),
        ("ALL_INTERVALS", 0),
        ("AHEAD_INTERVALS", 0),
    ):
        monkeypatch.setattr(owner(name), name, value)
    if numba.get_num_threads() < 2:
        pytest.skip("numba has one thread: no segment is rebuilt ahead")
    rng = np.random.default_rng(5)
    w = np.sort(rng.integers(1, 3000, 30))[::-1].astype(np.int64)
    env = kr.Envelopes(w, w + 7, 8000, 3, 2, fine=True)
    assert env.K == 6 and not env.all
    env.most_ahead = 1  # one segment ahead at a time, whatever numba's threads
    gate, segment, waited = threading.Event(), env._segment, []

    def held_back(*a):  # the first segment rebuilt ahead (7..11) waits for the gate
        if threading.current_thread() is not threading.main_thread() and not waited:
            waited.append(threading.current_thread())
            assert gate.wait(10)
        return segment(*a)

    env._segment = held_back
    env.get(1)  # 1..5 on demand; 7..11 ahead, held back
    left = env.ahead[12][0]
    env.get(13)  # 13..17 on demand, 19..23 ahead (7..11 left to its thread)
    assert list(env.ahead) == [24]
    env.ahead[24][0].join()
    gate.set()
    left.join()
    assert waited == [left]
    for i in range(19, 24):
        assert [a.tolist() for a in env.get(i)] == [a.tolist() for a in rebuilt(env, i)]


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(2, 60),
    c=st.integers(1, 3000),
    seed=st.integers(0, 2**32),
    fine=st.booleans(),
    most=st.integers(2, 5),
)
def test_segments_rebuilt_ahead_on_threads_equal_those_rebuilt_on_demand(n, c, seed, fine, most):
    """With every K-th envelope stored, the segments rebuilt on threads while the search steps
    through those before (``AHEAD_INTERVALS`` 0; up to ``most`` at once: numba's threads,
    its count patched here as on a host of many cores, each segment a Python thread) give the
    envelopes rebuilt on demand, array for array, over three passes of rising ``i`` (the next pass's
    first segments rebuilt as the last are reached) and a pass that stops halfway (the segments
    rebuilt ahead then not the one asked for); at most ``most`` are ahead at a time."""
    rng = np.random.default_rng(seed)
    w, p = _suffix_items(rng, n, c)
    order = _passes(n)
    built, seen, ahead = [], [], []
    with pytest.MonkeyPatch.context() as m:
        for name, value in (("MAX_INTERVALS", 3), ("COARSE_INTERVALS", 3), ("ALL_INTERVALS", 0)):
            m.setattr(owner(name), name, value)
        want = kr.Envelopes(w, p, c, 3, 2, fine=fine)
        want = [[a.tolist() for a in want.get(i)] for i in order]
        m.setattr(ke, "AHEAD_INTERVALS", 0)
        m.setattr(kr.numba, "get_num_threads", lambda: most)
        env = kr.Envelopes(w, p, c, 3, 2, fine=fine)
        segment = env._segment
        env._segment = lambda *a: built.append(threading.current_thread()) or segment(*a)
        for i in order:
            seen.append([a.tolist() for a in env.get(i)])
            ahead.append(len(env.ahead))
    assert seen == want and max(ahead) <= most
    assert not env.all and any(t is not threading.main_thread() for t in built)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    m=st.integers(1, 300),
    cap=st.sampled_from([0, 1, 63, 64, 65, 1000, 10**6, 2**62, 2**63 - 2]),
    tau=st.sampled_from([0, 1, 5, 1000]),
    width=st.sampled_from([1, 3, 100, "cap"]),
)
def test_the_union_in_parts_covers_every_point_and_in_parallel_is_the_same(seed, m, cap, tau, width):
    """``union`` (64 parts of [0, C], each merged within itself) and ``union_parallel`` (the parts on
    every numba thread) give the same intervals: sorted, disjoint, within [0, C], at most
    ``union_room(m)``, and every point of ``E`` and of ``E + w`` up to C inside one whose gain and
    top are at least that point's (checked at each interval's ends), at every magnitude."""
    rng = np.random.default_rng(seed)
    width = cap if width == "cap" else width
    span = cap // 2  # E within [0, C]
    lo = np.unique(rng.integers(0, span, m, endpoint=True)).astype(np.int64)
    nxt = np.append(lo[1:], span + 1)
    hi = np.minimum(lo + rng.integers(0, 4, len(lo)), nxt - 1).astype(np.int64)
    m = len(lo)
    ga = rng.integers(-(10**6), 10**6, m).astype(np.int64)
    tp = rng.integers(0, 10**6, m).astype(np.int64)
    # (E's points are subset sums of the items after this one: with w they sum to at most 2^63 - 1)
    w = int(rng.integers(0, min(cap, INT64_MAX - span), endpoint=True))
    dg, pd = int(rng.integers(-50, 50)), 7
    outs = []
    for parallel in (False, True):
        arrays = [np.empty(ke.union_room(m), np.int64) for _ in range(4 if not parallel else 8)]
        args = (lo, hi, ga, tp, m, w, dg, pd, cap, tau, width, *arrays)
        k = ke.union_parallel(*args) if parallel else ke.union(*args)
        outs.append([a[:k].tolist() for a in arrays[:4]])
    assert outs[0] == outs[1]
    nlo, nhi, nga, ntp = (np.array(a, np.int64) for a in outs[0])
    assert len(nlo) <= ke.union_room(m) and (len(nlo) == 0 or (nlo[0] >= 0 and nhi[-1] <= cap))
    assert np.all(nlo <= nhi) and np.all(nhi[:-1] < nlo[1:])
    for shift, gain, top in ((0, ga, tp), (w, ga + dg, tp + pd)):
        for a, b, g, t in zip(lo + shift, hi + shift, gain, top, strict=True):
            for x in {int(a), int(min(b, cap))} if a <= cap else ():
                q = int(np.searchsorted(nlo, x, side="right")) - 1
                assert q >= 0 and nlo[q] <= x <= nhi[q] and nga[q] >= max(g, -kr.LIMIT) and ntp[q] >= t


def test_a_coarse_search_predicted_past_its_budget_is_skipped(monkeypatch):
    """Where the last two searches on the coarse envelopes predict that the next one would keep more
    states than its budget (a power of the target's distance below the bound), it is not run (such a
    search stops at the budget and its states are thrown away): the record says what was predicted,
    the beam and the fine envelopes follow at once, and the answer stays proven and equal to the
    textbook DP's. Seeds 1, 2 and 5 of this instance predict 325, 948 and 1,966 states against a
    budget of 300."""
    monkeypatch.setattr(kr, "PREDICT_FROM", 4)
    monkeypatch.setattr(kr, "FINE_AFTER", 300 / (40 * ke.MAX_INTERVALS))
    for seed in (1, 2, 5):
        p, w, c = classes.jooken_instance(40, 10**4, g=8, f=0.1, eps=1e-5, s=30, seed=seed)
        sol = kr.solve(p, w, c)
        assert sol.optimal and sol.value == ref_dp(p.tolist(), w.tolist(), c)
        runs = sol.details["searches"]
        k = next(k for k, r in enumerate(runs) if "predicted" in r)
        assert runs[k]["predicted"] > 300 and runs[k]["stopped"] == "budget" and "states" not in runs[k]
        assert all(r["states"] <= 300 for r in runs[:k]) and "beam" in runs[k + 1]


def test_no_beam_on_the_fine_envelopes_where_the_coarse_one_reached_the_target(monkeypatch):
    """Where the beam on the coarse envelopes found a packing at least the stopped search's target,
    the next search targets ``z + g`` whatever a beam on the fine envelopes would find: it does not
    run (a pass over the fine envelopes saved), and the search at ``z + g`` proves the optimum (the
    dense DP's). Thresholds lowered so that this small instance takes that path."""
    monkeypatch.setattr(kr, "PREDICT_FROM", 64)
    monkeypatch.setattr(kr, "FINE_AFTER", 300 / (40 * ke.MAX_INTERVALS))
    p, w, c = classes.jooken_instance(60, 10**6, g=10, f=0.2, eps=1e-4, s=50, seed=0)
    sol = kr.solve(p, w, c)
    assert sol.optimal and sol.value == knapsack.solve(p, w, c, method="dp", backend="cpu").value
    runs = sol.details["searches"]
    k = next(k for k, r in enumerate(runs) if r.get("stopped") == "budget")
    coarse_beam, last = runs[k + 1 :]
    assert "fine_envelopes" in sol.details and "beam" in coarse_beam
    assert coarse_beam["best"] >= runs[k]["target"] and last["target"] == coarse_beam["best"] + 1


def test_the_prediction_and_the_jump():
    """:func:`reach._predicted_states`: from the last two finished searches of at least PREDICT_FROM
    states, the states grow as the distance below the bound to the measured power (at most
    MAX_POWER); None without two such searches or without growth. :func:`reach._jump`: the next
    target is z + g where that lies at most JUMP times as far below the bound as the stepped one."""
    big = kr.PREDICT_FROM
    runs = [
        {"target": 99, "states": 3, "reached": False},  # too few states to count
        {"target": 97, "states": big, "reached": False},  # distance 4 below root + 1 = 101
        {"target": 93, "states": 4 * big, "reached": False},  # distance 8: power 2
        {"target": 85, "predicted": 10 * big, "stopped": "budget"},  # not a finished search
    ]
    assert kr._predicted_states(runs, 100, 85) == 16 * big  # distance 16
    assert kr._predicted_states(runs[:2], 100, 85) is None
    flat = [*runs[:2], {"target": 93, "states": big, "reached": False}]
    assert kr._predicted_states(flat, 100, 85) is None
    steep = [*runs[:2], {"target": 93, "states": 64 * big, "reached": False}]  # power 6: capped
    assert kr._predicted_states(steep, 100, 85) == int(64 * big * 2**kr.MAX_POWER)
    assert kr._jump(90, 80, 100, 1) == 81  # 20 below the bound, the stepped target 11: within JUMP
    assert kr._jump(99, 50, 100, 1) == 99  # z far below: step
    assert kr._jump(95, 96, 100, 1) == 97  # the packing above the target: z + g
