"""Knapsack branch and bound against tiny references: DP (integers) and brute force (reals)."""

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import CheckError, InputError
from gpudp.backends import cuda_usable
from gpudp.problems import knapsack_bb as kb
from gpudp.problems.knapsack_io import read_knapsack

DATA = Path(__file__).parent / "data" / "knapsack"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "knapsack"


def ref_dp(p, w, c):
    """Plain 0/1 knapsack DP over capacities (integer weights)."""
    f = np.zeros(c + 1, np.int64)
    for pi, wi in zip(p, w, strict=True):
        if wi <= c:
            f[wi:] = np.maximum(f[wi:], f[: c + 1 - wi] + pi)
    return int(f[c])


def ref_brute(p, w, c):
    n = len(p)
    best = 0.0
    for bits in itertools.product((0, 1), repeat=n):
        x = np.array(bits, bool)
        if w[x].sum() <= c:
            best = max(best, p[x].sum())
    return best


def assert_valid(sol, p, w, c, expect, tol=0.0):
    x = np.asarray(sol.solution)
    assert x.shape == (len(p),) and set(np.unique(x)) <= {0, 1}
    assert w[x == 1].sum() <= c + tol
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
    p, w, c = kb.lalami_instance(10, 2) if backend == "cuda" else kb.lalami_instance(40, 3)
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
        p, w, c = (kb.lalami_instance if cls == "lalami" else kb.shen_instance)(n, seed)
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
    p, w, c = kb.shen_instance(400, 1)  # a frontier of tens of millions of nodes: 20 MB cannot hold it
    sol = kb.solve(p, w, c, backend="cuda", cpu_threshold=0, batch=1 << 16, host_budget_bytes=20 << 20)
    assert not sol.optimal and "host budget" in sol.details["message"] and sol.checked
