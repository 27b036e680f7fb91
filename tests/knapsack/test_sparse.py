"""The sparse-state knapsack DP (issue 16), Pisinger's instance classes, and ``auto``'s cost model.

References: the small exact DP and the Python-integer brute force of test_knapsack_dp.py, and the
dense DP (``knapsack_dp.solve``) on the generator's classes."""

import json
import math
from fractions import Fraction

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

from gpudp import InputError
from gpudp.cli import main
from gpudp.problems import knapsack as front
from gpudp.problems.knapsack import bb as kb
from gpudp.problems.knapsack import classes
from gpudp.problems.knapsack import dp as kd
from gpudp.problems.knapsack import reach as kr
from gpudp.problems.knapsack import sparse as ks
from gpudp.problems.knapsack.io import validate
from gpudp.problems.knapsack.sparse import driver as ksd
from gpudp.problems.knapsack.sparse import search as kss

INT64_MAX = 2**63 - 1


def sparse_refuses(p, w, c):
    """The documented limits (problems/knapsack/sparse/): when not every packable item fits, their
    profits and their weights must each sum to at most 2^63 - 1."""
    free = [(int(a), int(b)) for a, b in zip(p, w, strict=True) if 0 < b <= c and a > 0]
    total_w = sum(b for _, b in free)
    if total_w <= c:
        return False
    return sum(a for a, _ in free) > INT64_MAX or total_w > INT64_MAX


@pytest.fixture
def tiny_room(monkeypatch):
    """Lists of 2 states and 2 nodes at the start: every growth and node collection path runs."""
    monkeypatch.setattr(kss, "LIST_START", 2)
    monkeypatch.setattr(kss, "NODE_START", 2)


# --------------------------------------------------------------------------------------------
# Against the references


@settings(max_examples=80)
@given(instances(st.integers(0, 1000)))
def test_random_instances_vs_reference_dp(inst):
    """n <= 40, C <= 2000, duplicates, items heavier than C, zero profits and weights."""
    p, w, c = arrays(inst)
    sol = ks.solve(p, w, c)
    assert sol.optimal and sol.details["method"] == "sparse"
    assert_solves(sol, p, w, c, ref_dp(p.tolist(), w.tolist(), c))


@settings(max_examples=40)
@given(instances(st.integers(0, 1000), max_n=25))
def test_growth_and_node_collection_vs_reference_dp(inst):
    room = kss.LIST_START, kss.NODE_START
    kss.LIST_START, kss.NODE_START = 2, 2  # (a fixture would not reset between examples)
    try:
        p, w, c = arrays(inst)
        assert_solves(ks.solve(p, w, c), p, w, c, ref_dp(p.tolist(), w.tolist(), c))
    finally:
        kss.LIST_START, kss.NODE_START = room


capacity = st.one_of(st.integers(0, 120), st.sampled_from(EDGE), st.integers(0, INT64_MAX))


@settings(max_examples=150)
@given(edge_instances(magnitude, capacity))
def test_edge_magnitudes_exact_or_refused(inst):
    """Profits and weights 0, 1, 2^31, 2^53 + 1, 2^62 ... and capacities up to 2^63 - 1: the exact
    optimum (a Python integer), or an InputError exactly past the documented int64 totals."""
    p, w, c = inst
    if sparse_refuses(p, w, c):
        with pytest.raises(InputError, match=r"2\^63 - 1"):
            ks.solve(p, w, c)
        return
    sol = ks.solve(p, w, c)
    assert sol.optimal and sol.value == brute_int(p, w, c) and sol.checked
    assert sol.details["weight"] <= c


@settings(max_examples=60)
@given(
    st.integers(1, 10).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(1, 10**6), min_size=n, max_size=n),
            st.integers(1, 3),
            st.sampled_from([1, 2**20, 2**40]),
            st.floats(0, 1),
        )
    )
)
def test_equal_efficiencies_and_huge_scales(inst):
    """Every item of the same efficiency p/w = a (ties everywhere: Dantzig's bound is the LP's), or
    scaled by 2^40 so that the bounds need 128-bit products."""
    w, a, scale, frac = inst
    w = [v * scale for v in w]
    p = [a * v for v in w]
    c = int(sum(w) * frac)
    sol = ks.solve(p, w, c)
    assert sol.optimal and sol.value == brute_int(p, w, c)


def test_edge_cases():
    assert ks.solve([], [], 10).value == 0
    sol = ks.solve([5, 7], [3, 4], 0)  # capacity 0
    assert sol.value == 0 and sol.solution.tolist() == [0, 0] and sol.optimal
    sol = ks.solve([5, 7], [11, 12], 10)  # every item too heavy
    assert sol.value == 0 and sol.details["free_items"] == 0
    sol = ks.solve([5, 7, 2, 0, -4], [3, 0, 50, 1, 1], 4)  # weight 0 taken, heavy, zero, negative dropped
    assert sol.value == 12 and sol.solution.tolist() == [1, 1, 0, 0, 0]
    sol = ks.solve([5, 7, 2], [1, 2, 3], 100)  # everything fits
    assert sol.value == 14 and sol.details["weight"] == 6 and "fits" in sol.details["message"]
    sol = ks.solve([6] * 7, [4] * 7, 17)  # duplicates: four fit
    assert sol.value == 24 and sol.solution.sum() == 4
    sol = ks.solve([10, 9, 8], [INT64_MAX, 2**62, 2**62 - 1], 2**62 + 5)  # W = 2^63 - 1
    assert sol.value == 9 and sol.details["free_items"] == 2


def test_exact_order_where_float_ratios_tie():
    """2^53 + 1 over 2^53 and 1 over 1 are the same float (1.0) but not the same efficiency."""
    p = [1, 2**53 + 1, 1, 2**53]
    w = [1, 2**53, 1, 2**53]
    c = 2**53 + 1
    sol = ks.solve(p, w, c)
    assert sol.value == brute_int(p, w, c) == 2**53 + 2
    assert sol.details["arithmetic"] == "128-bit products"


def test_real_data_is_refused():
    with pytest.raises(InputError, match="profits: .*integer profits"):
        ks.solve([1.5, 2], [1, 2], 2)
    with pytest.raises(InputError, match="weights: .*integer"):
        ks.solve([1, 2], [0.5, 2], 2)


def test_totals_past_int64_are_refused_with_the_figures():
    with pytest.raises(InputError, match=r"profits: .* sum to 9223372036854775809, past the 2\^63 - 1"):
        ks.solve([2**62, 2**62, 1], [1, 1, 1], 2)
    with pytest.raises(InputError, match=r"weights: .*past the 2\^63 - 1"):
        ks.solve([1, 2, 3], [2**62, 2**62, 2**62], INT64_MAX)
    assert ks.solve([2**62, 2**62 - 2, 1], [1, 1, 1], 2).value == 2**63 - 2  # P = 2^63 - 1 exactly


# --------------------------------------------------------------------------------------------
# Stops: an unproven value is never marked optimal


def test_time_limit_returns_a_checked_unproven_incumbent():
    p, w, c = classes.pisinger_instance("circle", 200, 10**6, seed=1)
    sol = ks.solve(p, w, c, time_limit=0)
    assert not sol.optimal and sol.details["stopped"] == "time" and sol.checked
    assert "not proven optimal" in sol.details["message"]
    assert sol.value == sol.details["greedy_value"] > 0
    with pytest.raises(InputError, match="time_limit"):
        ks.solve(p, w, c, time_limit=-1)


def test_memory_stop_returns_a_checked_unproven_incumbent(monkeypatch, tiny_room):
    from gpudp import memory

    monkeypatch.setattr(memory, "available_memory", lambda: 200)  # the lists may not grow
    p, w, c = classes.pisinger_instance("strongly", 300, 10**5, seed=0)
    sol = ks.solve(p, w, c)
    assert not sol.optimal and sol.details["stopped"] == "memory" and sol.checked
    assert "out of memory" in sol.details["message"]


# --------------------------------------------------------------------------------------------
# The generator's classes against the dense DP


@pytest.mark.parametrize("cls", sorted(classes.CLASSES))
@pytest.mark.parametrize("n, R", [(1, 100), (20, 100), (60, 1000)])
def test_classes_vs_dense_dp(cls, n, R, tiny_room):
    for seed in range(2):
        for h in (None, 5, 95):
            p, w, c = classes.pisinger_instance(cls, n, R, seed=seed, h=h)
            sol = ks.solve(p, w, c)
            ref = kd.solve(p, w, c, backend="cpu", progress=False)
            assert sol.optimal and sol.value == ref.value, (cls, n, R, seed, h)


@pytest.fixture
def eager_bounds(monkeypatch):
    """The cardinality relaxations after every few state operations, the flip bounds and the states'
    relaxation from the first one on, and probes given as much work as the main search: the bounds
    and the probes that large instances use run on instances small enough to check."""
    monkeypatch.setattr(ksd, "CHUNK", 8)
    monkeypatch.setattr(ksd, "RELAX_STATES", 0)
    monkeypatch.setattr(ksd, "PROBE_SHARE", 1)


@settings(max_examples=80)
@given(instances(st.integers(0, 1000)))
def test_bounds_and_probes_vs_reference_dp(inst):
    """As test_random_instances_vs_reference_dp, with the bounds and probes of ``eager_bounds`` (a
    fixture would not reset between examples)."""
    saved = ksd.CHUNK, ksd.RELAX_STATES, ksd.PROBE_SHARE
    ksd.CHUNK, ksd.RELAX_STATES, ksd.PROBE_SHARE = 8, 0, 1
    try:
        p, w, c = arrays(inst)
        sol = ks.solve(p, w, c)
        assert sol.optimal
        assert_solves(sol, p, w, c, ref_dp(p.tolist(), w.tolist(), c))
    finally:
        ksd.CHUNK, ksd.RELAX_STATES, ksd.PROBE_SHARE = saved


@settings(max_examples=60)
@given(
    st.integers(5, 40).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(1, 300), min_size=n, max_size=n),
            st.integers(0, 80),
            st.lists(st.integers(-3, 3), min_size=n, max_size=n),
            st.floats(0.1, 0.9),
        )
    )
)
def test_correlated_instances_with_eager_bounds_vs_dense_dp(inst):
    """p = w + delta + noise: the item counts matter, the cardinality relaxations bind; the bounds and
    probes of ``eager_bounds`` (set by hand: a fixture would not reset between examples)."""
    w, delta, noise, frac = inst
    p = [max(1, a + delta + e) for a, e in zip(w, noise, strict=True)]
    c = int(sum(w) * frac)
    saved = ksd.CHUNK, ksd.RELAX_STATES, ksd.PROBE_SHARE
    ksd.CHUNK, ksd.RELAX_STATES, ksd.PROBE_SHARE = 8, 0, 1
    try:
        sol = ks.solve(p, w, c)
    finally:
        ksd.CHUNK, ksd.RELAX_STATES, ksd.PROBE_SHARE = saved
    assert sol.optimal and sol.value == kd.solve(p, w, c, backend="cpu", progress=False).value


def test_almost_strongly_correlated_n_10000_stays_fast():
    """Issue 16's slowest goal instance (class 5, n = 10,000, R = 10^7): 36 M states before the flip
    bounds, the states' relaxation and the probes, under 2 M now; the same optimum with the probes
    off (and the bounds computed only late)."""
    p, w, c = classes.pisinger_instance(5, 10_000, 10**7, seed=0)
    sol = ks.solve(p, w, c)
    d = sol.details
    assert sol.optimal and d["states_generated"] < 2_000_000 and d["probes"]["answered"]
    room = ksd.PROBE_SHARE, ksd.PROBE_CREDIT, ksd.RELAX_STATES
    ksd.PROBE_SHARE, ksd.PROBE_CREDIT, ksd.RELAX_STATES = 10**12, 0, 1 << 24
    try:
        other = ks.solve(p, w, c)
    finally:
        ksd.PROBE_SHARE, ksd.PROBE_CREDIT, ksd.RELAX_STATES = room
    probes = other.details["probes"]
    assert other.optimal and other.value == sol.value and not probes["answered"] and probes["failed"] == 0


@pytest.mark.parametrize("cls", sorted(classes.CLASSES))
def test_bounds_and_probes_on_the_classes_vs_dense_dp(cls, eager_bounds):
    """Every class at n = 60, 120: the same optimum as the dense DP with the flip bounds, the states'
    relaxation and the probes on; across the classes, probes fail (proving bounds), answer, and the
    states' relaxation prunes."""
    seen = {"probes_failed": 0, "probe_answered": 0, "relaxed": 0}
    for n, R in ((60, 1000), (120, 300)):
        for seed in range(3):
            p, w, c = classes.pisinger_instance(cls, n, R, seed=seed)
            sol = ks.solve(p, w, c)
            ref = kd.solve(p, w, c, backend="cpu", progress=False)
            assert sol.optimal and sol.value == ref.value, (cls, n, R, seed)
            d = sol.details
            if d.get("probes"):
                seen["probes_failed"] += d["probes"]["failed"]
                seen["probe_answered"] += d["probes"]["answered"]
                seen["relaxed"] += d["bounds"].get("state_scale", 0) > 0
    _SEEN[cls] = seen


_SEEN = {}


def test_bounds_and_probes_ran():
    """(After the test above, same module.) The eager settings did exercise each mechanism."""
    if len(_SEEN) < len(classes.CLASSES):
        pytest.skip("runs after test_bounds_and_probes_on_the_classes_vs_dense_dp")
    total = {k: sum(v[k] for v in _SEEN.values()) for k in ("probes_failed", "probe_answered", "relaxed")}
    assert all(v > 0 for v in total.values()), total


@pytest.mark.parametrize("cls", classes.HARD + (3, 5))
def test_hard_classes_at_n_50_vs_dense_dp(cls):
    for seed in range(3):
        p, w, c = classes.pisinger_instance(cls, 50, 10**4, seed=seed)
        sol = ks.solve(p, w, c)
        assert sol.optimal and sol.value == kd.solve(p, w, c, backend="cpu", progress=False).value


@pytest.mark.parametrize("cls, n, R", [(1, 300, 10**12), (2, 300, 10**10), (5, 200, 10**10)])
def test_large_coefficients_no_table_could_hold(cls, n, R):
    """C ~ 10^12 to 10^14: n * (C + 1) past 10^14 cells, milliseconds here; the same optimum as the
    branch and bound proves (its bounds in float64 rounded outwards, the sparse DP's exact)."""
    p, w, c = classes.pisinger_instance(cls, n, R, seed=0)
    sol = ks.solve(p, w, c)
    assert sol.optimal and sol.checked and sol.details["arithmetic"] == "128-bit products"
    ref = kb.solve(p, w, c, backend="cpu", time_limit=60)
    assert ref.optimal and sol.value == ref.value


def test_warm_compiles_every_function():
    """In a fresh process, ``sparse.warm()`` leaves no compiled function of the search to compile
    inside a timed solve (the benchmark calls it first)."""
    import subprocess
    import sys

    # the compiled functions that Python calls (the others are compiled into them)
    # (module.name, each module of the package)
    entries = "kernels.expand kernels.collect kernels.count_items kernels.fixed_items bounds._lp_break"
    entries += " bounds._positive_reduced items._exact_order kernels.greedy kernels.next_item kernels.advance"
    entries += " kernels.pair_due"
    code = (
        "import importlib\n"
        "from gpudp.problems.knapsack import sparse as ks\n"
        "ks.warm()\n"
        "def fn(e):\n"
        "    mod, name = e.split('.')\n"
        "    return getattr(importlib.import_module('gpudp.problems.knapsack.sparse.' + mod), name)\n"
        f"print(sorted(e for e in {entries.split()!r} if not fn(e).signatures))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


# --------------------------------------------------------------------------------------------
# The generator: each class's defining property


def _inst(cls, n=300, R=10**4, seed=0, h=None):
    p, w, c = classes.pisinger_instance(cls, n, R, seed=seed, h=h)
    assert p.dtype == w.dtype == np.int64 and len(p) == len(w) == n and isinstance(c, int)
    return p.tolist(), w.tolist(), c


@pytest.mark.parametrize("R", [10, 1000, 10**7])
def test_generator_classes_1_to_6(R):
    r10, r500 = R // 10, R // 500
    p, w, _ = _inst(1, R=R)
    assert all(1 <= v <= R for v in p + w) and len(set(p)) > 1
    p, w, _ = _inst(2, R=R)
    assert all(1 <= b <= R and a >= 1 and (a == 1 or abs(a - b) <= r10) for a, b in zip(p, w, strict=True))
    p, w, _ = _inst(3, R=R)
    assert all(1 <= b <= R and a == b + r10 for a, b in zip(p, w, strict=True))
    p, w, _ = _inst(4, R=R)
    assert all(1 <= a <= R and b == a + r10 for a, b in zip(p, w, strict=True))
    p, w, _ = _inst(5, R=R)
    assert all(1 <= b <= R and abs(a - b - r10) <= r500 for a, b in zip(p, w, strict=True))
    p, w, _ = _inst(6, R=R)
    assert p == w and all(1 <= v <= R for v in w)


@pytest.mark.parametrize("cls", [11, 12, 13])
def test_generator_spanners(cls):
    """Every item is a multiple 1..10 of one of two spanner items, themselves ceil(2/10) of the
    underlying class's items (weights at most ceil(2R/10))."""
    R = 10**4
    p, w, _ = _inst(cls, n=400, R=R, seed=2)
    spans = {Fraction(a, b) for a, b in zip(p, w, strict=True)}
    assert 1 <= len(spans) <= 2
    for ratio in spans:
        items = [(a, b) for a, b in zip(p, w, strict=True) if Fraction(a, b) == ratio]
        sp, sw = min(items, key=lambda t: t[1])
        assert sw <= -(-2 * R // 10)
        assert all(b % sw == 0 and 1 <= b // sw <= 10 and a == (b // sw) * sp for a, b in items)
    if cls == 13:  # a strongly correlated spanner: p = w + R/10 before scaling
        assert all(Fraction(a, b) > 1 for a, b in zip(p, w, strict=True))


def test_generator_hard_classes():
    R = 10**4
    p, w, _ = _inst(14, R=R)
    assert all(a - b == (3 * R // 10 if b % 6 == 0 else 2 * R // 10) for a, b in zip(p, w, strict=True))
    p, w, _ = _inst(15, R=R)
    assert all(
        a % 3 == 0 and a == 3 * math.ceil(b / 3) and 0 <= a - b <= 2 for a, b in zip(p, w, strict=True)
    )
    for R in (10, 10**4, 10**9):  # circle: p = floor((2/3) sqrt(x)), x = 4R^2 - (w - 2R)^2, exactly
        p, w, _ = _inst(16, R=R)
        for a, b in zip(p, w, strict=True):
            x = 4 * R * R - (b - 2 * R) ** 2
            assert 9 * a * a <= 4 * x < 9 * (a + 1) ** 2 and 1 <= b <= R


def test_generator_capacity_seed_and_names():
    p, w, c = _inst(1, n=101)
    assert c == max(sum(w) // 2, max(w))
    for h in (1, 50, 100):
        _, w, c = _inst(3, n=101, h=h)
        assert c == max(h * sum(w) // 101, max(w))
    a = classes.pisinger_instance(5, 50, 10**6, seed=7)
    b = classes.pisinger_instance("almost-strongly", 50, 10**6, seed=7)
    assert all(np.array_equal(x, y) for x, y in zip(a[:2], b[:2], strict=True)) and a[2] == b[2]
    other = classes.pisinger_instance(5, 50, 10**6, seed=8)
    assert not np.array_equal(a[1], other[1])
    assert classes.pisinger_instance(16, 0, 100)[2] == 0
    assert classes.parse_classes("1-3,circle,hard") == [1, 2, 3, 16, 11, 12, 13, 14, 15]
    for bad in (
        lambda: classes.pisinger_instance(7, 10, 100),
        lambda: classes.pisinger_instance("heavy", 10, 100),
        lambda: classes.pisinger_instance(1, -1, 100),
        lambda: classes.pisinger_instance(1, 10, 5),
        lambda: classes.pisinger_instance(1, 10, 100, h=0),
    ):
        with pytest.raises(ValueError):
            bad()


# --------------------------------------------------------------------------------------------
# The front: method="sparse" and auto's cost model


@pytest.mark.parametrize("method", ["sparse", "bb", "dp", "auto"])
def test_backend_cuda_without_a_usable_gpu_is_refused(monkeypatch, tmp_path, capsys, method):
    """``--backend cuda`` where no GPU is usable: one line, exit 2, by every method alike; sparse
    ran on the CPU and exited 0 (issue 35)."""
    import gpudp.backends.cuda.driver as cuda_backend

    monkeypatch.setattr(cuda_backend, "available", lambda: False)  # the tests run the simulator
    path = tmp_path / "k.txt"
    path.write_text("3 8\n10 5\n7 4\n8 3\n")
    assert main(["solve", "knapsack", str(path), "--method", method, "--backend", "cuda"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpudp: error:") and "no CUDA GPU" in lines[0]


def test_front_method_sparse_and_cli(tmp_path, capsys):
    sol = front.solve([10, 7, 8], [5, 4, 3], 8, method="sparse", backend="cpu")
    assert sol.value == 18 and sol.details["method"] == "sparse" and sol.optimal
    sol = front.solve([10, 7, 8], [5, 4, 3], 8, method="sparse", backend="cuda")
    assert "runs on the CPU" in sol.details["backend_note"]
    p, w, c = classes.pisinger_instance("circle", 40, 10**12, seed=0)
    path = tmp_path / "circle.txt"
    path.write_text(f"{len(p)} {c}\n" + "".join(f"{a} {b}\n" for a, b in zip(p, w, strict=True)))
    assert main(["solve", "knapsack", str(path), "--method", "sparse", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "sparse" and out["optimal"]
    assert main(["solve", "knapsack", str(path), "--backend", "cpu", "--json"]) == 0
    auto = json.loads(capsys.readouterr().out)
    assert (
        auto["value"] == out["value"]
        and auto["method"] == "sparse"
        and "auto picks sparse" in auto["method_note"]
    )
    assert auto["auto"]["dp_cells"] is None  # the DP refuses rows of 1e13 cells


def test_auto_runs_a_small_dp_at_once():
    sol = front.solve([10, 7, 8], [5, 4, 3], 8, backend="cpu")
    a = sol.details["auto"]
    assert sol.details["method"] == "dp" and a["dp_cells"] == 27 and a["dp_predicted_seconds"] < 1e-3
    assert "dp at once" in sol.details["method_note"] and a["attempts"][0]["proven"]
    p, w, c = classes.pisinger_instance(3, 30, 100, seed=0)
    assert front.rule(validate(p, w, c), backend="cpu") == "dp"


def test_auto_tries_sparse_for_the_dp_s_predicted_time():
    p, w, c = classes.pisinger_instance(3, 1000, 10**5, seed=0)  # 2.5e10 cells: minutes on a CPU
    inst = validate(p, w, c)
    choice = front.choose_method(inst, backend="cpu")
    assert [m for m, _ in choice.steps] == ["sparse", "dp"]
    assert choice.steps[0][1] == choice.dp_seconds == kd.predicted_seconds(choice.dp_cells, "cpu")
    sol = front.solve_instance(inst, backend="cpu")
    assert (
        sol.details["method"] == "sparse" and sol.optimal and "sparse proved it" in sol.details["method_note"]
    )


def test_auto_falls_back_to_the_dp_when_sparse_does_not_prove_in_time(monkeypatch):
    """Never an unproven answer where the DP would prove it: sparse gets a microsecond, the DP runs."""
    monkeypatch.setattr(front, "DP_AT_ONCE_S", 0.0)
    monkeypatch.setattr(kd, "predicted_seconds", lambda cells, backend: 1e-6)
    p, w, c = classes.pisinger_instance("circle", 40, 1000, seed=0)  # few items fit: reach between
    sol = front.solve(p, w, c, backend="cpu")
    attempts = sol.details["auto"]["attempts"]
    assert [a["method"] for a in attempts] == ["sparse", "reach", "dp"]
    assert not attempts[0]["proven"] and not attempts[1]["proven"]
    assert sol.details["method"] == "dp" and sol.optimal and sol.value == ref_dp(p.tolist(), w.tolist(), c)
    assert "sparse stopped unproven" in sol.details["method_note"]
    p, w, c = classes.pisinger_instance("uncorrelated", 200, 1000, seed=0)  # many fit: no reach
    sol = front.solve(p, w, c, backend="cpu")
    assert [a["method"] for a in sol.details["auto"]["attempts"]] == ["sparse", "dp"]
    assert sol.details["method"] == "dp" and sol.optimal and sol.value == ref_dp(p.tolist(), w.tolist(), c)


def _sparse_and_reach_out_of_memory(monkeypatch):
    """sparse's state lists and reach's envelopes out of memory: each stops unproven at once, with
    the greedy packing."""

    def out_of_memory(self, deadline):
        raise MemoryError("the state lists would need 1.00 GiB more")

    def envelopes_out_of_memory(*args):
        raise MemoryError("the envelopes would need 1.00 GiB more")

    monkeypatch.setattr(ksd.Driver, "run", out_of_memory)
    monkeypatch.setattr(kr.Envelopes, "__init__", envelopes_out_of_memory)


def test_auto_after_the_dp_refuses(monkeypatch, capsys):
    # sparse stops unproven (its memory): the branch and bound proves it
    p, w = [18167370, 94328461, 67026996, 45671972], [129620905947, 991048253819, 320630035190, 136744841253]
    c = 1000 * 10**9
    # (an item weighs at least C/16: reach runs between them, its memory stopped here too)
    _sparse_and_reach_out_of_memory(monkeypatch)
    sol = front.solve(p, w, c, backend="cpu")
    assert sol.details["method"] == "bb" and sol.optimal and sol.value == brute_int(p, w, c)
    assert [a["method"] for a in sol.details["auto"]["attempts"]] == ["sparse", "reach", "bb"]
    assert "DP refuses" in sol.details["method_note"]
    monkeypatch.undo()
    # a time limit spent by sparse: its incumbent, marked unproven, the note in details (the command
    # line prints it; the Python API does not)
    q, v, cap = classes.pisinger_instance("circle", 200, 10**9, seed=1)
    sol = front.solve(q, v, cap, backend="cpu", time_limit=0)
    assert sol.details["method"] == "sparse" and not sol.optimal and sol.checked
    assert "no time left for bb" in sol.details["method_note"]
    assert "not proven optimal" in sol.details["message"] and "warning" not in capsys.readouterr().err
    # profits past int64: dp, sparse and bb all refuse; the error is the last one's
    with pytest.raises(InputError, match=r"2\^63 - 1"):
        front.solve([2**62, 2**62, 3], [2**40, 2**40, 2**40], 2**41 + 1, backend="cpu")


def test_auto_starts_no_dp_it_could_not_finish(monkeypatch):
    """Under a time limit, after sparse and reach stopped unproven with a packing, the DP is not
    started when predicted more than DP_LEFT_SHARE times the time left (stopped, it would return the
    greedy packing only, after setting up its rows: 3.5-4 s past the limit at n = 1,200, C = 10^8);
    predicted within it, it runs and proves the answer."""
    _sparse_and_reach_out_of_memory(monkeypatch)
    p, w, c = classes.jooken_instance(40, 10**4, seed=0)  # few fit, the DP can run
    for predicted, limit, runs in ((1e4, 60, False), (240.1, 60, False), (10.0, 60, True)):
        monkeypatch.setattr(kd, "predicted_seconds", lambda cells, backend, t=predicted: t)
        sol = front.solve(p, w, c, backend="cpu", time_limit=limit)
        methods = [a["method"] for a in sol.details["auto"]["attempts"]]
        assert methods == (["sparse", "reach", "dp"] if runs else ["sparse", "reach"])
        assert sol.checked and sol.optimal == runs
        if runs:
            assert sol.value == ref_dp(p.tolist(), w.tolist(), c)
        else:
            assert f"no time left for dp (predicted {predicted:.3g} s" in sol.details["method_note"]


def test_auto_real_data():
    sol = front.solve([1, 2], [0.5, 1], 1, backend="cpu")
    assert sol.details["method"] == "bb" and "auto picks bb: real weights" in sol.details["method_note"]
    sol = front.solve([1.5, 2], [1, 1], 1, backend="cpu")
    assert sol.details["method"] == "dp" and "real profits" in sol.details["method_note"]


# --------------------------------------------------------------------------------------------
# The benchmark


def test_bench_knapsack_classes(tmp_path):
    out = tmp_path / "kc.json"
    argv = ["bench", "knapsack-classes", "--backends", "cpu", "--classes", "3,16", "--sizes", "40"]
    assert main([*argv, "--ranges", "1000,1e5", "--time-limit", "5", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    assert len(res["runs"]) == 4 and res["settings"]["ranges"] == [1000, 10**5]
    assert res["summary"]["cpu"]["proven"] == 4 and res["summary"]["cpu"]["goal_met"]
    for row in res["runs"]:
        p, w, c = classes.pisinger_instance(row["class"], row["n"], row["R"], seed=row["seed"])
        assert row["cpu"]["value"] == kd.solve(p, w, c, backend="cpu", progress=False).value
        if "cpsat" in row:
            assert row["cpsat"].get("agrees", True) and not row["cpsat"].get("contradicts")
    assert "cpsat" in res["summary"] or "ortools" in res.get("cpsat", "")
