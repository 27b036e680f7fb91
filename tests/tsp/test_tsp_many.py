"""Many small TSP instances in one call (``tsp.solve_many``): against brute force on the cpu and,
tiny, in the CUDA simulator; the same tours as the single solve; the bulk intake as strict as
``tsp.solve`` (same errors for the same faults, the same exactness rules); instances past 16 cities
sent to the single solve; a wrong tour is a CheckError; the GPU kernel's steps compiled for the CPU
against the CPU kernel at every size up to 16 cities; on a GPU, 1,000 instances against the cpu."""

from __future__ import annotations

import math
import os

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_tsp import I64_MAX, I64_MIN, brute_force, exact_brute_force, matrices

from gpudp import CheckError, InputError
from gpudp.jit import njit
from gpudp.problems import tsp
from gpudp.problems.tsp import batch, kernels


def assert_optimal(r, ds):
    """Every instance solved, its length the brute-force optimum, its tour a checked permutation from
    city 0 of that length."""
    assert not r.errors and len(r.values) == len(ds)
    for k, d in enumerate(ds):
        d = np.asarray(d)
        sol = r.solutions[k]
        assert sol.checked and sol.check() and sol.value == r.values[k]
        t = sol.details["tour_index"]
        assert t[0] == 0 and sorted(t) == list(range(len(d)))
        best = exact_brute_force(d)
        if d.dtype.kind == "f":
            assert math.isclose(sol.value, best, rel_tol=1e-9, abs_tol=1e-9)
            assert sol.value == tsp.tour_length(d.astype(np.float64), t)
        else:
            assert sol.value == best == sum(int(d[a, b]) for a, b in zip(t, t[1:] + t[:1], strict=True))


@settings(max_examples=30)
@given(ds=st.lists(matrices(max_n=8), min_size=1, max_size=6))
def test_cpu_batch_matches_brute_force_and_the_single_solve(ds):
    r = tsp.solve_many(ds, backend="cpu")
    assert_optimal(r, ds)
    for d, sol in zip(ds, r.solutions, strict=True):  # the same ties: the same tour
        assert sol.solution == tsp.solve(d, backend="cpu").solution


@settings(max_examples=20)
@given(ds=st.lists(matrices(max_n=7), min_size=1, max_size=5))
def test_arrays_lists_and_a_3d_stack_agree(ds):
    r = tsp.solve_many(ds, backend="cpu")
    lists = tsp.solve_many([np.asarray(d).tolist() for d in ds], backend="cpu")  # read one by one
    assert lists.values.tolist() == r.values.tolist()
    assert [s.solution for s in lists.solutions] == [s.solution for s in r.solutions]
    same = [k for k, d in enumerate(ds) if d.shape == ds[0].shape and d.dtype == ds[0].dtype]
    stack = tsp.solve_many(np.stack([ds[k] for k in same]), backend="cpu")
    assert stack.values.tolist() == [r.values[k] for k in same]


@pytest.mark.parametrize("n", [1, 2, 3])
def test_smallest_instances(n):
    d = np.arange(n * n).reshape(n, n)
    r = tsp.solve_many([d, d.astype(float)], backend="cpu")
    want = [0, 0.0] if n == 1 else [exact_brute_force(d)] * 2
    assert r.values.tolist() == want and [s.solution[0] for s in r.solutions] == [0, 0]
    assert isinstance(r.values[0], int | np.integer) and isinstance(r.solutions[1].value, float)


def test_the_diagonal_is_ignored_and_negative_distances_are_fine():
    d = np.array([[99, -5, 3, 1], [2, -7, -8, 4], [6, 1, 1000, -3], [-2, 5, 7, 12345]])
    r = tsp.solve_many(np.stack([d, d.T]), backend="cpu")
    assert_optimal(r, [d, d.T])
    assert r.values.tolist() == [tsp.solve(d, backend="cpu").value, tsp.solve(d.T, backend="cpu").value]


BAD = [
    (np.array([[0, np.nan], [1, 0]]), "NaN distance"),
    (np.array([[0, -np.inf], [1, 0]]), "-inf"),
    (np.array([[0, np.inf], [1, 0]]), "allow_infinite"),
    (np.array([[0, 1e300, 1], [1, 0, 1e300], [1e300, 1, 0]]), "real distances too large"),
    (np.array([[0, I64_MAX, 0], [0, 0, 1], [1, 0, 0]]), "beyond int64"),
    (np.array([[0, I64_MIN, 0], [-1, 0, 0], [0, 0, 0]]), "beyond int64"),
    (np.array([[0, 2**63], [1, 0]], dtype=np.uint64), "beyond int64"),
    (np.zeros((2, 3)), "square"),
    (np.zeros((0, 0)), "at least one city"),
    ([["a", "b"], ["c", "d"]], "integers or reals"),
    (np.zeros((40, 40)), "at most 33 cities"),
]


def test_errors_are_the_single_solves_and_do_not_stop_the_batch():
    good = np.array([[0, 1, 9], [4, 0, 2], [3, 8, 0]])
    r = tsp.solve_many([good] + [d for d, _ in BAD] + [good.astype(float)], backend="cpu")
    assert set(r.errors) == set(range(1, len(BAD) + 1))
    assert r.values.dtype == object and r.values[0] == 6 and r.values[-1] == 6.0
    for k, (d, match) in enumerate(BAD, 1):
        assert match in r.errors[k] and r.values[k] is None and r.solutions[k] is None
        with pytest.raises(InputError) as e:
            tsp.solve(d, backend="cpu")
        assert str(e.value) == r.errors[k]


def test_the_bulk_check_sends_the_edges_to_the_exact_rules():
    # past the bulk check's safe magnitudes (+-2^58, 1e300 / 32) but still exact: solved as solve() does
    big = np.array([[0, 2**60, -(2**60)], [-(2**60), 0, 2**60], [5, 7, 0]])
    huge = np.array([[0, 1e299, 1.0], [1.0, 0, 1e299], [1e299, 1.0, 0]])
    r = tsp.solve_many(np.stack([big, big.T]), backend="cpu")
    assert r.values.tolist() == [exact_brute_force(big), exact_brute_force(big.T)]
    assert tsp.solve_many([huge], backend="cpu").values.tolist() == [tsp.solve(huge, backend="cpu").value]


@settings(max_examples=25)
@given(
    n=st.integers(2, 6),
    data=st.data(),
    pool=st.lists(
        st.sampled_from([0, 1, -1, 2**58, 2**58 + 1, -(2**60), 2**61, I64_MAX, I64_MIN]),
        min_size=1,
        max_size=4,
    ),
)
def test_extreme_integers_are_exact_or_refused_like_the_single_solve(n, data, pool):
    d = np.array([[data.draw(st.sampled_from(pool)) for _ in range(n)] for _ in range(n)], dtype=np.int64)
    r = tsp.solve_many(np.stack([d, d]), backend="cpu")
    try:
        want = tsp.solve(d, backend="cpu").value
    except InputError as e:
        assert r.errors == {0: str(e), 1: str(e)}
        return
    assert r.values.tolist() == [want, want] == [exact_brute_force(d)] * 2


def test_infinite_edges_when_allowed():
    d = np.array([[0, 1, np.inf, 9], [np.inf, 0, 2, np.inf], [np.inf, np.inf, 0, 3], [4, np.inf, np.inf, 0]])
    none = np.full((3, 3), np.inf)
    r = tsp.solve_many([d, none], backend="cpu", allow_infinite=True)
    assert r.values[0] == 10.0 and r.solutions[0].solution == [0, 1, 2, 3]
    assert "no tour of finite length" in r.errors[1] and r.values[1] is None
    assert "allow_infinite" in tsp.solve_many([d], backend="cpu").errors[0]


def test_graphs_instances_and_labels():
    g = nx.DiGraph()
    for u, v, w in [
        ("a", "b", 1),
        ("b", "c", 2),
        ("c", "a", 3),
        ("b", "a", 10),
        ("c", "b", 10),
        ("a", "c", 10),
    ]:
        g.add_edge(u, v, weight=w)
    inst = tsp.load(g)
    r = tsp.solve_many([g, inst], backend="cpu")
    assert r.values.tolist() == [6, 6]
    assert r.solutions[0].solution == ["a", "b", "c"] == r.solutions[1].details["tour"]


def test_more_than_16_cities_go_to_the_single_solve(monkeypatch):
    monkeypatch.setattr(batch, "MAX_BATCH_CITIES", 4)  # the rule, at a size brute force checks
    rng = np.random.default_rng(5)
    ds = [rng.integers(0, 100, (n, n)) for n in (3, 5, 4, 6)]
    r = tsp.solve_many(ds, backend="cpu")
    assert r.stats.extra["batched"] == 2 and r.stats.extra["alone"] == 2
    assert_optimal(r, ds)
    assert r.solutions[1].details.get("method") != "held-karp (batch)"


def test_a_wrong_tour_is_a_check_error(monkeypatch):
    from gpudp.problems.tsp import cpu as tsp_cpu

    real = tsp_cpu.tours_of

    def swapped(D, values, tours):
        real(D, values, tours)
        tours[:, [1, 2]] = tours[:, [2, 1]]

    monkeypatch.setattr(tsp_cpu, "tours_of", swapped)
    d = np.array([[0, 1, 50, 50], [50, 0, 1, 50], [50, 50, 0, 1], [1, 50, 50, 0]])
    with pytest.raises(CheckError, match=r"instances\[0\]: the tour's length is"):
        tsp.solve_many([d], backend="cpu")


@njit
def _device_steps(D, binom, poff, width, values, tours, step):
    """The CUDA kernel's per-instance code (kernels.layer / close) run on the CPU: ``step`` threads
    taking a layer's cells in turn, one after the other."""
    m = binom.shape[0] - 1
    for k in range(D.shape[0]):
        buf = np.empty(2 * width, D.dtype)
        par = np.empty(poff[m], np.int8)
        for t in range(m):
            for th in range(step):
                kernels.layer(t, th, step, buf, width, par, poff, binom, D[k])
        values[k] = kernels.close(buf, width, par, poff, binom, D[k], tours[k])


@pytest.mark.parametrize("n", range(2, 17))
def test_the_gpu_kernels_steps_give_the_cpu_kernels_tours(n):
    rng = np.random.default_rng(n)
    count = 3 if n > 12 else 8
    for D in (rng.integers(-(2**40), 2**40, (count, n, n)), rng.random((count, n, n)) * 1e6):
        r = tsp.solve_many(D, backend="cpu")
        g = batch.Group(n, D, np.arange(count), {})
        values, tours = np.zeros(count, D.dtype), np.zeros((count, n), np.int8)
        _device_steps(g.D, *g.geometry, values, tours, 3)
        assert values.tolist() == r.values.tolist()
        assert tours.tolist() == [s.details["tour_index"] for s in r.solutions]


@pytest.mark.sim
@settings(max_examples=8)
@given(ds=st.lists(matrices(max_n=5), min_size=1, max_size=3))
def test_cuda_batch_matches_brute_force_and_the_cpu(ds):
    r = tsp.solve_many(ds, backend="cuda")
    assert r.stats.backend == "cuda"
    assert_optimal(r, ds)
    c = tsp.solve_many(ds, backend="cpu")
    assert [s.solution for s in r.solutions] == [s.solution for s in c.solutions]


@pytest.mark.sim
def test_cuda_shared_and_device_layers_errors_and_trivial_instances():
    rng = np.random.default_rng(3)
    ds = [rng.integers(0, 50, (4, 4)), rng.random((5, 5)), [[0]], np.array([[0, np.nan], [1, 0]])]
    r = tsp.solve_many(ds, backend="cuda")
    info = r.stats.extra["cuda"]
    assert info["shared_bytes_max"] > 0  # n = 4 in shared memory
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":  # the simulator's small shared memory: 5 is not
        assert info["device_layers"] == 1
    assert set(r.errors) == {3} and r.values[2] == 0
    assert r.values[0] == brute_force(ds[0]) and math.isclose(r.values[1], brute_force(ds[1]), rel_tol=1e-12)


@pytest.mark.gpu
def test_gpu_matches_cpu_on_1000_instances():
    rng = np.random.default_rng(11)
    ds = []
    for k in range(1000):
        n = int(rng.integers(12, 17))
        d = rng.integers(0, 10**6, (n, n)) if k % 3 else rng.random((n, n)) * 1e3
        ds.append(np.triu(d, 1) + np.triu(d, 1).T if k % 5 == 0 else d)
    g, c = tsp.solve_many(ds, backend="cuda"), tsp.solve_many(ds, backend="cpu")
    assert not g.errors and g.stats.backend == "cuda" and g.stats.extra["batched"] == 1000
    assert g.values.tolist() == c.values.tolist()
    assert [s.solution for s in g.solutions] == [s.solution for s in c.solutions]
    for k in rng.choice(1000, 5, replace=False):  # and the single solve
        assert tsp.solve(ds[k], backend="cuda").value == pytest.approx(g.values[k], rel=1e-12)
