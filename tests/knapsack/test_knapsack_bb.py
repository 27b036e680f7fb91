"""Knapsack branch and bound against tiny references: DP (integers) and brute force (reals)."""

import itertools
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import CheckError, InputError
from gpudp.backends import cuda_usable
from gpudp.bench.instances import lalami_instance, shen_instance
from gpudp.problems.knapsack import bb as kb
from gpudp.problems.knapsack.io import read_knapsack

DATA = Path(__file__).resolve().parents[1] / "data" / "knapsack"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "knapsack"


def ref_dp(p, w, c):
    """Plain 0/1 knapsack DP over capacities (integer weights)."""
    f = np.zeros(c + 1, np.int64)
    for pi, wi in zip(p, w, strict=True):
        if wi <= c:
            f[wi:] = np.maximum(f[wi:], f[: c + 1 - wi] + pi)
    return int(f[c])


def ref_brute(p, w, c):
    """Brute force under the one feasibility definition for real weights (knapsack_io's module doc):
    a set fits when its float64 weight is at most C + 1e-9 * max(1, sum w)."""
    n = len(p)
    best = 0.0
    limit = c + 1e-9 * max(1.0, math.fsum(w))
    for bits in itertools.product((0, 1), repeat=n):
        x = np.array(bits, bool)
        if math.fsum(w[x]) <= limit:
            best = max(best, math.fsum(p[x]))
    return best


def assert_valid(sol, p, w, c, expect, tol=0.0):
    x = np.asarray(sol.solution)
    assert x.shape == (len(p),) and set(np.unique(x)) <= {0, 1}
    assert w[x == 1].sum() <= c + tol + 1e-9 * max(1.0, float(np.sum(w)))
    assert abs(p[x == 1].sum() - sol.value) <= tol
    assert sol.optimal and sol.checked
    assert abs(sol.value - expect) <= tol, (sol.value, expect)


int_instances = st.integers(0, 30).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 60), min_size=n, max_size=n),
        st.lists(st.integers(0, 40), min_size=n, max_size=n),
        st.integers(0, 300),
    )
)


@settings(max_examples=120)
@given(int_instances)
def test_integer_random_cpu(inst):
    p, w, c = np.array(inst[0], np.int64), np.array(inst[1], np.int64), inst[2]
    sol = kb.solve(p, w, c, backend="cpu")
    assert_valid(sol, p, w, c, ref_dp(p, w, c))


@settings(max_examples=40)
@given(int_instances, st.integers(1, 3))
def test_integer_small_batches_and_host_threshold(inst, batch):
    """Batches of 1-3 nodes: every level passes through the host ring many times."""
    p, w, c = np.array(inst[0], np.int64), np.array(inst[1], np.int64), inst[2]
    sol = kb.solve(p, w, c, backend="cpu", batch=batch)
    assert_valid(sol, p, w, c, ref_dp(p, w, c))


real_instances = st.integers(1, 14).flatmap(
    lambda n: st.tuples(
        st.lists(st.floats(0, 100, allow_nan=False), min_size=n, max_size=n),
        st.lists(st.floats(0.01, 50, allow_nan=False), min_size=n, max_size=n),
        st.floats(0.5, 300, allow_nan=False),
    )
)


@settings(max_examples=60)
@given(real_instances)
def test_real_random_cpu(inst):
    p, w = np.array(inst[0]) + 0.25, np.array(inst[1])  # + 0.25 keeps the data non-integral
    c = inst[2] + 0.125
    sol = kb.solve(p, w, c, backend="cpu")
    assert not sol.details["integral"]
    assert_valid(sol, p, w, c, ref_brute(p, w, c), tol=1e-6)


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.sim)])
def test_identical_items_symmetry_break(backend):
    p = np.array([5, 8, 5, 3, 5, 3, 8, 4], np.int64)
    w = np.array([4, 6, 4, 3, 4, 3, 6, 3], np.int64)
    for c in (0, 7, 13, 20):
        sol = kb.solve(p, w, c, backend=backend, cpu_threshold=0, batch=4, threads=32)
        assert sol.details.get("identical_item_runs", 4) == 4  # (8,6)x2, (5,4)x3, (3,3)x2
        assert_valid(sol, p, w, c, ref_dp(p, w, c))


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.sim)])
def test_duplicate_elimination_keeps_the_optimum(backend):
    p, w, c = lalami_instance(10, 2) if backend == "cuda" else lalami_instance(40, 3)
    kw = dict(backend=backend, cpu_threshold=0, batch=64, threads=32)
    on, off = kb.solve(p, w, c, **kw), kb.solve(p, w, c, dedupe=False, **kw)
    assert on.details["dedupe"] and not off.details["dedupe"]
    assert on.value == off.value == ref_dp(p, w, c)
    assert on.stats.extra["nodes_explored"] < off.stats.extra["nodes_explored"]


def test_huge_integers_and_equal_ratios():
    p = np.array([3 * 10**15, 2 * 10**15 + 1, 10**15, 7, 7], np.int64)
    w = np.array([3 * 10**14, 2 * 10**14, 10**14, 1, 1], np.int64)
    c = 3 * 10**14 + 1
    sol = kb.solve(p, w, c, backend="cpu")
    x = np.array(sol.solution)
    assert sol.value == max(
        int(p[np.array(b, bool)].sum())
        for b in itertools.product((0, 1), repeat=5)
        if int(w[np.array(b, bool)].sum()) <= c
    )
    assert x.sum() >= 1


@pytest.mark.sim
@settings(max_examples=4)
@given(
    st.integers(1, 6).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 30), min_size=n, max_size=n),
            st.lists(st.integers(1, 20), min_size=n, max_size=n),
            st.integers(0, 60),
        )
    )
)
def test_integer_random_cuda(inst):
    p, w, c = np.array(inst[0], np.int64), np.array(inst[1], np.int64), inst[2]
    sol = kb.solve(p, w, c, backend="cuda", cpu_threshold=0, batch=4, threads=32)
    assert_valid(sol, p, w, c, ref_dp(p, w, c))


@pytest.mark.sim
@settings(max_examples=3)
@given(
    st.integers(1, 5).flatmap(
        lambda n: st.tuples(
            st.lists(st.floats(0, 50, allow_nan=False), min_size=n, max_size=n),
            st.lists(st.floats(0.5, 20, allow_nan=False), min_size=n, max_size=n),
            st.floats(0.5, 40, allow_nan=False),
        )
    )
)
def test_real_random_cuda(inst):
    p, w, c = np.array(inst[0]) + 0.25, np.array(inst[1]), inst[2] + 0.125
    sol = kb.solve(p, w, c, backend="cuda", cpu_threshold=0, batch=4, threads=32)
    assert_valid(sol, p, w, c, ref_brute(p, w, c), tol=1e-6)


@pytest.mark.sim
def test_real_cuda_streams_through_the_host_buffer():
    """batch = 2 < frontier: levels stream through the ring on two lanes; real-valued data."""
    rng = np.random.default_rng(5)
    w = np.repeat(rng.uniform(1, 10, 4), [2, 2, 2, 1])  # three pairs of identical items
    p = w + 1.5  # strongly correlated: weak bounds, a frontier wider than the batch
    c = w.sum() / 2
    sol = kb.solve(p, w, c, backend="cuda", cpu_threshold=0, batch=2, threads=32)
    assert_valid(sol, p, w, c, ref_brute(p, w, c), tol=1e-9)
    assert sol.stats.extra["streamed_levels"] > 0
    assert sol.stats.extra["bytes_h2d"] > 0 and sol.stats.extra["bytes_d2h"] > 0


@pytest.mark.sim
def test_cuda_real_file_f5():
    inst = read_knapsack(DATA / "f5_l-d_kp_15_375")
    sol = kb.solve_instance(inst, backend="cuda", cpu_threshold=0, batch=8, threads=32)
    assert round(sol.value, 4) == 481.0694 and sol.optimal


def test_swapping_answer_unchanged_and_budget_stop():
    inst = read_knapsack(DATA / "f8_l-d_kp_23_10000")
    p, w, c = inst.profits, inst.weights, inst.capacity
    free = kb.solve(p, w, c, backend="cpu")
    swapped = kb.solve(p, w, c, backend="cpu", batch=7)
    assert free.value == swapped.value == 9767 and swapped.optimal
    # A budget of 40 nodes cannot hold the frontier (it reaches thousands): stop, say so, stay feasible.
    tiny = kb.solve(p, w, c, backend="cpu", batch=7, host_budget_bytes=40 * 20)
    assert not tiny.optimal and "host budget" in tiny.details["message"]
    assert tiny.checked and tiny.value <= 9767 and w[np.array(tiny.solution) == 1].sum() <= c
    late = kb.solve(p, w, c, backend="cpu", time_limit=0.0)
    assert not late.optimal and "time limit" in late.details["message"]
    # each stop says why and gives its bounds, as the other methods' stops do: the incumbent below
    # the optimum, Dantzig's bound above it (the LP relaxation's, by a plain fraction here)
    assert (tiny.details["stopped"], late.details["stopped"]) == ("memory", "time")
    ok = (w > 0) & (w <= c) & (p > 0)
    ratio = sorted(zip(p[ok].tolist(), w[ok].tolist(), strict=True), key=lambda t: Fraction(-t[0], t[1]))
    rest, lp = Fraction(int(c)), Fraction(0)
    for pk, wk in ratio:
        take = min(Fraction(1), rest / wk)
        lp, rest = lp + take * pk, rest - take * wk
    for sol in (tiny, late):
        assert sol.details["lower_bound"] == sol.value <= 9767 <= sol.details["upper_bound"] == math.floor(lp)


@pytest.mark.parametrize(
    "args, field",
    [
        (([1, 2], [1], 3), "weights"),
        (([1], [-1], 3), "weights"),
        (([1], [1], -1), "capacity"),
        (([float("nan")], [1], 3), "profits"),
        (([1], [1], "x"), "capacity"),
    ],
)
def test_bad_input_names_the_field(args, field):
    with pytest.raises(InputError) as e:
        kb.solve(*args, backend="cpu")
    assert e.value.field == field


def test_bad_budget_and_batch():
    with pytest.raises(InputError, match="host_budget_bytes"):
        kb.solve([1, 2], [1, 1], 1, backend="cpu", host_budget_bytes=3)
    with pytest.raises(InputError, match="batch"):
        kb.solve([1, 2], [1, 1], 1, backend="cpu", batch=0)


def test_edge_cases():
    assert kb.solve([], [], 5, backend="cpu").value == 0
    sol = kb.solve([4, 3, 9], [0, 7, 8], 0, backend="cpu")  # only the weightless item fits
    assert sol.value == 4 and list(sol.solution) == [1, 0, 0]
    sol = kb.solve([5, 0, -2], [1, 1, 1], 3, backend="cpu")  # non-positive profits never taken
    assert sol.value == 5 and list(sol.solution) == [1, 0, 0]


def test_checker_catches_a_wrong_solution():
    sol = kb.solve([5, 4, 3], [4, 3, 2], 5, backend="cpu")
    assert sol.value == 7
    sol.solution = np.array([1, 1, 0], np.int8)
    with pytest.raises(CheckError):
        sol.check()


@pytest.mark.parametrize(
    "name", ["f3_l-d_kp_4_20", "f5_l-d_kp_15_375", "f8_l-d_kp_23_10000", "knapPI_3_100_1000_1"]
)
def test_bundled_files_reproduce_optima(name):
    optima = dict(ln.split() for ln in (DATA / "optima.txt").read_text().splitlines() if ln.strip())
    sol = kb.solve_instance(read_knapsack(DATA / name), backend="cpu")
    assert sol.optimal and round(sol.value, 4) == float(optima[name])


@pytest.mark.skipif(
    not SHARED.is_dir(), reason="../shared/data/knapsack is absent (only in the project's workspace)"
)
def test_shared_files_reproduce_optima():
    optima = dict(ln.split() for ln in (SHARED / "optima.txt").read_text().splitlines() if ln.strip())
    for name, opt in optima.items():
        sol = kb.solve_instance(read_knapsack(SHARED / name), backend="cpu")
        assert sol.optimal and round(sol.value, 4) == float(opt), name


def test_cli_front_methods():
    """The `gpudp solve knapsack` plug-in on its own parser (the CLI table loads other plug-ins too)."""
    import argparse

    from gpudp.problems import knapsack

    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="cpu")
    knapsack.cli_arguments(parser)
    f3 = str(DATA / "f3_l-d_kp_4_20")
    sol = knapsack.cli_solve(parser.parse_args([f3]))
    assert sol.value == 35 and sol.optimal and "picks dp" in sol.details["method_note"]
    f5 = str(DATA / "f5_l-d_kp_15_375")
    assert (
        "picks bb" in knapsack.cli_solve(parser.parse_args([f5, "--method", "auto"])).details["method_note"]
    )
    assert knapsack.cli_solve(parser.parse_args([f3, "--method", "bb"])).value == 35
    dp = knapsack.cli_solve(parser.parse_args([f3, "--method", "dp"]))
    assert dp.value == 35 and dp.details["method"] == "dp"


gpu = pytest.mark.skipif(not cuda_usable(), reason="needs a real CUDA GPU")


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("threshold, batch", [(0, 1 << 20), (0, 20000), (8192, 1 << 20)])
def test_gpu_matches_cpu(threshold, batch):
    for cls, n, seed in [("lalami", 200, 0), ("lalami", 300, 8), ("shen", 200, 2), ("shen", 300, 1)]:
        p, w, c = (lalami_instance if cls == "lalami" else shen_instance)(n, seed)
        ref = kb.solve(p, w, c, backend="cpu")
        sol = kb.solve(p, w, c, backend="cuda", cpu_threshold=threshold, batch=batch)
        assert sol.value == ref.value and sol.optimal, (cls, n, seed)
        if cls == "shen" and threshold == 0:
            assert sol.stats.extra["gpu_levels"] > 0
        if batch == 20000 and (cls, n) == ("shen", 300):
            assert sol.stats.extra["streamed_levels"] > 0


@pytest.mark.gpu
@gpu
def test_gpu_shared_files_and_budget_stop():
    for name, opt in [
        ("f5_l-d_kp_15_375", 481.0694),
        ("knapPI_3_100_1000_1", 2397),
        ("f8_l-d_kp_23_10000", 9767),
    ]:
        sol = kb.solve_instance(read_knapsack(DATA / name), backend="cuda", cpu_threshold=0, batch=256)
        assert round(sol.value, 4) == opt and sol.optimal
    p, w, c = shen_instance(400, 1)  # a frontier of tens of millions of nodes: 20 MB cannot hold it
    sol = kb.solve(p, w, c, backend="cuda", cpu_threshold=0, batch=1 << 16, host_budget_bytes=20 << 20)
    assert not sol.optimal and "host budget" in sol.details["message"] and sol.checked


# --------------------------------------------------------------------------------------------
# Exactness at every magnitude the reader accepts (issue 11)

INT64_MAX = 2**63 - 1


def brute_int(p, w, c):
    """The optimum over all subsets, in Python integers (n <= 12)."""
    p, w = [int(v) for v in p], [int(v) for v in w]
    best = 0
    for bits in itertools.product((0, 1), repeat=len(p)):
        if sum(wi for b, wi in zip(bits, w, strict=True) if b) <= c:
            best = max(best, sum(pi for b, pi in zip(bits, p, strict=True) if b))
    return best


def bb_refuses(p, w, c):
    """The documented limits of the integer B&B (docs/knapsack_bb.md), in Python integers."""
    free = [(int(a), int(b)) for a, b in zip(p, w, strict=True) if 0 < b <= c and a > 0]
    total_w = sum(b for _, b in free)
    if not free or total_w <= c:
        return False
    return sum(a for a, _ in free) > INT64_MAX or total_w + c > INT64_MAX


def test_issue_instance_int64_bound_overflow():
    """C * p overflowed int64 in U0's term: 266392746 was reported as optimal."""
    p = [18167370, 94328461, 67026996, 45671972, 95122381, 43779324, 40404027, 56276501]
    w = [129620905947, 991048253819, 320630035190, 136744841253, 663408810827, 596476942651]
    w += [449966367295, 759998650307]
    sol = kb.solve(p, w, 2023947403644, backend="cpu")
    assert sol.value == 282265220 == brute_int(p, w, 2023947403644) and sol.optimal
    assert sol.solution.tolist() == [1, 0, 1, 1, 1, 0, 0, 1]
    assert sol.details["bound_arithmetic"].startswith("float64")


def test_integers_above_2_53_stay_exact():
    sol = kb.solve([10, 9], [2**53 + 1, 2**53], 2**53, backend="cpu")
    assert sol.value == 9 and sol.solution.tolist() == [0, 1]
    sol = kb.solve([2**53, 2**53 + 1], [1, 1], 1, backend="cpu")
    assert sol.value == 2**53 + 1 and sol.solution.tolist() == [0, 1]
    # the same with a search (not every item fits), and in the wide bound variant
    p, w = [2**53 + 1, 2**53, 3], [2**40 + 1, 2**40, 2**40]
    sol = kb.solve(p, w, 2**41, backend="cpu")
    assert sol.value == brute_int(p, w, 2**41) == 2**53 + 3


def test_real_weights_tolerance_is_the_checker_s():
    """0.1 + 0.2 = 0.30000000000000004 fits 0.3 within tau_w (the checker has always allowed it)."""
    sol = kb.solve([1, 1], [0.1, 0.2], 0.3, backend="cpu")
    assert sol.value == 2
    sol = kb.solve([1, 1, 1], [0.1, 0.2, 0.25], 0.3, backend="cpu")  # a search this time
    assert sol.value == 2 and sol.solution.tolist() == [1, 1, 0]
    assert kb.solve([1, 1], [0.1, 0.2], 0.2999999, backend="cpu").value == 1


def test_limits_are_refused_with_the_figures():
    with pytest.raises(InputError, match=r"profits: .*2\^63 - 1"):
        kb.solve([2**62, 2**62 + 1, 5], [1, 1, 1], 2, backend="cpu")
    with pytest.raises(InputError, match=r"weights: .*2\^63 - 1"):
        kb.solve([1, 2, 3], [2**62 - 1, 2**62 - 2, 2**62 - 3], INT64_MAX, backend="cpu")
    # everything fits: no search, no limit
    assert kb.solve([2**62, 2**62 + 1, 5], [1, 1, 1], 3, backend="cpu").value == 2**63 + 6
    with pytest.raises(InputError, match="int64"):
        kb.solve([1], [2**63], 3, backend="cpu")
    with pytest.raises(InputError, match="2\\^53"):  # real profits: the weights go through float64
        kb.solve([1.5, 2.5, 3.5], [2**52 + 1, 2**52, 2**52 + 3], 2**53, backend="cpu")


@pytest.mark.parametrize(
    "kw, field",
    [
        ({"host_budget_bytes": float("nan")}, "host_budget_bytes"),
        ({"host_budget_bytes": float("inf")}, "host_budget_bytes"),
        ({"host_budget_bytes": -1}, "host_budget_bytes"),
        ({"time_limit": float("nan")}, "time_limit"),
        ({"time_limit": -1.0}, "time_limit"),
        ({"batch": 2.5}, "batch"),
    ],
)
def test_bad_options_are_input_errors(kw, field):
    with pytest.raises(InputError) as e:
        kb.solve([5, 4, 3], [4, 3, 2], 5, backend="cpu", **kw)
    assert e.value.field == field


EDGE = [0, 1, 2, 3, 7, 2**31 - 1, 2**31, 2**53 - 1, 2**53, 2**53 + 1, 2**61, 2**62 - 1, 2**62, 2**62 + 1]
magnitude = st.one_of(st.sampled_from(EDGE), st.integers(0, 2**62), st.integers(0, 50))
edge_instances = st.integers(0, 9).flatmap(
    lambda n: st.tuples(
        st.lists(st.one_of(magnitude, magnitude.map(lambda v: -v)), min_size=n, max_size=n),
        st.lists(magnitude, min_size=n, max_size=n),
        st.one_of(magnitude, st.integers(0, INT64_MAX)),
    )
)


@settings(max_examples=150)
@given(edge_instances)
def test_integer_edge_magnitudes_exact_or_refused(inst):
    """Profits and weights from 0 to 2^62 and beyond (and negative profits): the exact optimum, or an
    InputError exactly when the documented limits are passed; never a rounded answer."""
    p, w, c = inst
    if bb_refuses(p, w, c):
        with pytest.raises(InputError, match=r"2\^63 - 1"):
            kb.solve(p, w, c, backend="cpu")
        return
    sol = kb.solve(p, w, c, backend="cpu")
    assert sol.value == brute_int(p, w, c) and sol.optimal
    assert sum(int(w[i]) for i in np.flatnonzero(sol.solution)) <= c


@settings(max_examples=200)
@given(st.integers(0, 2**32 - 1))
def test_weights_1e12_profits_1e8_vs_brute_force(seed):
    """C * max(p) ~ 1e20 > 2^63: the bound terms go through float64, rounded outwards (2-4% of such
    instances were wrong when the product overflowed int64). Uniform draws from a seed: hypothesis's
    own draws favour small and simple values, which rarely overflow."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 13))
    p = rng.integers(1, 10**8, n).tolist()
    w = rng.integers(1, 10**12, n).tolist()
    c = int(sum(w) * rng.uniform(0.1, 0.9))
    sol = kb.solve(p, w, c, backend="cpu")
    assert sol.value == brute_int(p, w, c) and sol.optimal


@pytest.mark.sim
def test_cuda_wide_bounds_and_big_integers():
    """The float64-rounded-outwards bound terms and integers above 2^53 on the CUDA kernels."""
    p = [18167370, 94328461, 67026996, 45671972, 95122381, 43779324, 40404027, 56276501]
    w = [129620905947, 991048253819, 320630035190, 136744841253, 663408810827, 596476942651]
    w += [449966367295, 759998650307]
    sol = kb.solve(p, w, 2023947403644, backend="cuda", cpu_threshold=0, batch=4, threads=32)
    assert sol.value == 282265220 and sol.details["bound_arithmetic"].startswith("float64")
    p, w = [2**53 + 1, 2**53, 3, 5], [2**40 + 1, 2**40, 2**40, 2**39 + 7]
    sol = kb.solve(p, w, 2**41, backend="cuda", cpu_threshold=0, batch=4, threads=32)
    assert sol.value == brute_int(p, w, 2**41)
