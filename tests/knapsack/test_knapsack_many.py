"""Many knapsacks in one call (``knapsack.solve_many``): the batch DP against brute force on random
instances, on the CPU and on the GPU (simulator: tiny instances); instances that leave the batch
(real profits, too large a DP, too large for a chunk of device memory) get the single solve's
answer; a bad instance is its own error; the vectorized intake takes numpy arrays as validate()
would; a wrong answer is a CheckError."""

from __future__ import annotations

import itertools
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import BackendError, CheckError
from gpudp.problems import knapsack
from gpudp.problems.knapsack import batch
from gpudp.problems.knapsack import cpu as knapsack_cpu


def brute(p, w, c):
    """The reference: every subset."""
    best = 0
    for x in itertools.product((0, 1), repeat=len(p)):
        if sum(a * b for a, b in zip(x, w, strict=True)) <= c:
            best = max(best, sum(a * b for a, b in zip(x, p, strict=True)))
    return best


def assert_solved(r, instances):
    """Every instance solved, worth the brute-force optimum, its 0/1 vector checked and within C."""
    assert r.values.tolist() == [brute(list(p), list(w), c) for p, w, c in instances] and not r.errors
    for sol, (p, w, c) in zip(r.solutions, instances, strict=True):
        assert sol.checked and sol.check()
        assert sum(int(wi) for wi, xi in zip(w, sol.solution, strict=True) if xi) <= c
        assert sum(int(pi) for pi, xi in zip(p, sol.solution, strict=True) if xi) == sol.value


instance = st.integers(0, 10).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(-5, 100), min_size=n, max_size=n),
        st.lists(st.integers(0, 40), min_size=n, max_size=n),
        st.integers(0, 120),
    )
)
#: the simulator's size: n <= 6 items, capacity <= 40; now and then profits past 2^31 in sum (int64)
tiny = st.integers(0, 6).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(-5, 60) | st.integers(2**29, 2**32), min_size=n, max_size=n),
        st.lists(st.integers(0, 45), min_size=n, max_size=n),
        st.integers(0, 40),
    )
)


@settings(max_examples=40)
@given(st.lists(instance, max_size=8))
def test_batch_matches_brute_force(instances):
    assert_solved(knapsack.solve_many(instances, backend="cpu"), instances)


@settings(max_examples=20)
@given(st.lists(instance, max_size=8), st.sampled_from([np.int64, np.int32, np.uint16]))
def test_numpy_arrays_take_the_fast_path(instances, dtype):
    arrays = [(np.array(p, np.int64), np.array(w, dtype), np.int64(c)) for p, w, c in instances]
    r = knapsack.solve_many(arrays, backend="cpu")
    assert r.values.tolist() == knapsack.solve_many(instances, backend="cpu").values.tolist()
    assert r.stats.extra["batched"] == len(instances)


def test_fast_path_errors_are_validates():
    good = (np.array([10, 7, 8]), np.array([5, 4, 3]), 8)
    insts = [
        good,
        (np.array([1, 2]), np.array([1, -1]), 3),  # a negative weight
        (np.array([np.iinfo(np.int64).min]), np.array([1]), 3),  # -2^63
        (np.array([1, 2]), np.array([1]), 3),  # lengths differ
        (np.array([1]), np.array([1]), -1),  # a negative capacity
        good,
    ]
    r = knapsack.solve_many(insts, backend="cpu")
    assert r.values.tolist() == [18, -1, -1, -1, -1, 18] and sorted(r.errors) == [1, 2, 3, 4]
    assert "weight -1 of item 1 is negative" in r.errors[1] and "-2^63" in r.errors[2]
    assert "1 weights for 2 profits" in r.errors[3] and "capacity" in r.errors[4]


def test_edge_magnitudes_stay_exact():
    big = 2**60  # the batch keeps profits summing below 2^62
    r = knapsack.solve_many([([big, big - 1, 2], [3, 2, 1], 3), ([2**31, 2**31], [1, 1], 2)], backend="cpu")
    assert r.values.tolist() == [big + 1, 2**32] and r.stats.extra["batched"] == 2
    r = knapsack.solve_many([([2**61, 2**61], [1, 1], 1)], backend="cpu")  # sums to 2^62: alone
    assert r.stats.extra["alone"] == 1 and r.values.tolist() == [2**61]
    r = knapsack.solve_many([([2**62, 2**62], [1, 1], 1)], backend="cpu")  # the single solve refuses
    assert r.values.tolist() == [-1] and "2^63 - 1" in r.errors[0]


def test_an_optimum_past_int64_is_a_python_int_not_an_overflow():
    """The single solve's exact optimum past 2^63 - 1 (every item fits) lands in the values as a
    Python int: an object array, the other instances solved (issue 35: OverflowError, whole batch)."""
    r = knapsack.solve_many([([1], [1], 1), ([2**63 - 1, 4], [0, 3], 3), ([1], [-1], 1)], backend="cpu")
    assert r.values.dtype == object and r.values.tolist() == [1, 2**63 + 3, None]
    assert list(r.errors) == [2] and r.solutions[1].check() and r.solutions[1].solution.tolist() == [1, 1]


def test_no_items_or_light_ones_and_a_huge_capacity():
    """The kernel's row is C + 1 long: a capacity above the total weight is that weight, so an
    instance without items does not ask for terabytes (issue 35: SystemError from _knapsacks)."""
    empty = np.zeros(0, np.int64)
    insts = [([], [], 10**12), (empty, empty, 2**62 + 5), ([3, 4], [2, 3], 2**40), (empty, empty, 0)]
    r = knapsack.solve_many(insts, backend="cpu")
    assert r.values.tolist() == [0, 0, 7, 0] and r.stats.extra["batched"] == 4 and not r.errors
    assert r.solutions[2].solution.tolist() == [1, 1] and r.solutions[0].solution.tolist() == []


def test_a_capacity_past_int64_that_every_item_fits():
    """Clamped to the total weight by validate (issue 35), in the batch as in the single solve."""
    r = knapsack.solve_many([([3, 4, -1], [2, 3, 1], 10**20), ([1], [1], 2**64)], backend="cpu")
    assert r.values.tolist() == [7, 1] and not r.errors and r.stats.extra["batched"] == 2
    r = knapsack.solve_many([([1, 1, 1], [2**62] * 3, 2**63)], backend="cpu")  # Σw past it: refused
    assert r.values.tolist() == [-1] and "below the total weight" in r.errors[0]


def test_instances_that_leave_the_batch_and_errors(monkeypatch):
    monkeypatch.setattr(batch, "MAX_BATCH_CELLS", 100)
    insts = [
        ([10, 7, 8], [5, 4, 3], 8),
        ([1.5, 2.5], [1, 1], 1),
        ([1], [-1], 3),
        "junk",
        ([3] * 20, [1] * 20, 10),
    ]
    r = knapsack.solve_many(insts, backend="cpu", progress=False)
    assert {k: r.stats.extra[k] for k in ("instances", "batched", "alone")} == {
        "instances": 5,
        "batched": 1,
        "alone": 2,
    }
    assert r.values.tolist() == [18, 2.5, None, None, 30]
    assert sorted(r.errors) == [2, 3] and "negative" in r.errors[2]
    with pytest.raises(BackendError, match="unknown backend"):
        knapsack.solve_many([], backend="tpu")


def test_a_wrong_answer_is_a_check_error(monkeypatch):
    def wrong(p, w, off, caps, values, x):
        values[:] = 1  # an optimum the 0/1 vector (all zeros) does not give

    monkeypatch.setattr(knapsack_cpu, "knapsacks", wrong)
    with pytest.raises(CheckError, match=r"instances\[0\]: the walk back gives 0, the DP's optimum is 1"):
        knapsack.solve_many([([10, 7, 8], [5, 4, 3], 8)], backend="cpu")


def test_the_batch_check_catches_too_heavy_a_vector():
    pack, _ = batch._intake([([10, 7, 8], [5, 4, 3], 8)], {})
    with pytest.raises(CheckError, match="weighs 12, over the capacity 8"):
        batch._check(pack, np.array([25]), np.array([1, 1, 1], np.int8))
    with pytest.raises(CheckError, match="heavier than the capacity"):
        batch._check(batch._intake([([1], [9], 8)], {})[0], np.array([1]), np.array([1], np.int8))


def test_the_int32_rule():
    """int32 only where the positive profits of the items that fit sum below 2^31."""
    pack, _ = batch._intake(
        [([2**30, 2**30 - 1], [1, 1], 2), ([2**30, 2**30], [1, 1], 2), ([2**31, 5], [9, 1], 2)], {}
    )
    assert pack.fit_profits().tolist() == [2**31 - 1, 2**31, 5]
    assert (pack.fit_profits() < 2**31).tolist() == [True, False, True]


@pytest.mark.sim
@settings(max_examples=15)
@given(st.lists(tiny, max_size=4))
def test_cuda_batch_matches_brute_force(instances):
    r = knapsack.solve_many(instances, backend="cuda")
    assert r.stats.backend == "cuda"
    assert_solved(r, instances)


@pytest.mark.sim
def test_cuda_edge_cases():
    insts = [
        ([5, 4, 3], [1, 2, 3], 0),  # capacity 0
        ([9, 8], [41, 50], 40),  # every item heavier than the capacity
        ([0, -3, 7, 2], [1, 2, 3, 0], 3),  # zero and negative profits, a weightless item
        ([], [], 7),  # no items
        ([2**31 - 5, 2**31 - 7, 3], [5, 6, 1], 12),  # past 2^31: int64 values
        ([30, 11, 25, 7, 19, 4], [17, 5, 13, 3, 11, 2], 40),  # a row in device memory (simulator)
    ]
    bad = ([1, 2], [1], 3)
    r = knapsack.solve_many([*insts[:3], bad, *insts[3:]], backend="cuda")
    assert list(r.errors) == [3] and "1 weights for 2 profits" in r.errors[3]
    good = r.values[[0, 1, 2, 4, 5, 6]].tolist()
    assert good == [brute(*i) for i in insts] == [0, 0, 9, 0, 2**32 - 9, 77]
    cu = r.stats.extra["cuda"]
    assert cu["int64_instances"] == 1 and cu["refused"] == 0
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":  # a block's shared memory holds 160 bytes there
        assert cu["device_rows"] == 2  # the two of capacity 40
    for k in (0, 1, 2, 4, 5, 6):
        assert r.solutions[k].checked and r.solutions[k].check()
    empty = knapsack.solve_many([], backend="cuda")
    assert empty.values.tolist() == [] and empty.stats.backend == "cuda"


@pytest.mark.sim
def test_cuda_chunks_and_refused_instances(monkeypatch):
    from gpudp.problems.knapsack import cuda as knapsack_cuda

    monkeypatch.setattr(knapsack_cuda, "CHUNK_BYTES", 250)  # two of the first five a launch
    insts = [([3, 4, 5, 6], [2, 3, 4, 5], c) for c in (5, 9, 14, 3, 7)]
    insts.append(([7, 9, 5, 6, 8, 3] * 2, [11, 12, 7, 9, 10, 4] * 2, 40))  # 12 x 2 words: refused
    r = knapsack.solve_many(insts, backend="cuda", progress=False)
    assert r.values.tolist() == [brute(*i) for i in insts]
    cu = r.stats.extra["cuda"]
    assert cu["launches"] == 3 and cu["refused"] == 1 and r.stats.extra["alone"] == 1
    assert r.solutions[5].details["method"] != "dp (batch)" and r.solutions[0].checked


@pytest.mark.gpu
def test_gpu_batch_matches_the_cpu_at_scale():
    rng = np.random.default_rng(15)
    insts = []
    for _ in range(500):
        w = rng.integers(1, 1001, 100)
        insts.append((w + rng.integers(1, 101, 100), w, int(w.sum()) // 2))
    insts.append((np.full(100, 2**26), rng.integers(1, 1001, 100), 25_000))  # int64 values
    gpu = knapsack.solve_many(insts, backend="cuda")
    cpu = knapsack.solve_many(insts, backend="cpu")
    assert gpu.stats.backend == "cuda" and gpu.stats.extra["cuda"]["int64_instances"] == 1
    assert np.array_equal(gpu.values, cpu.values) and not gpu.errors
    assert all(s.checked for s in gpu.solutions) and gpu.solutions[7].check()
