"""Many knapsacks in one call (``knapsack.solve_many``): the batch DP against brute force on random
instances; instances that leave the batch (real profits, too large a DP) get the single solve's
answer; a bad instance is its own error."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import InputError
from gpudp.problems import knapsack
from gpudp.problems.knapsack import batch


def brute(p, w, c):
    """The reference: every subset."""
    best = 0
    for x in itertools.product((0, 1), repeat=len(p)):
        if sum(a * b for a, b in zip(x, w, strict=True)) <= c:
            best = max(best, sum(a * b for a, b in zip(x, p, strict=True)))
    return best


instance = st.integers(0, 10).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(-5, 100), min_size=n, max_size=n),
        st.lists(st.integers(0, 40), min_size=n, max_size=n),
        st.integers(0, 120),
    )
)


@settings(max_examples=40)
@given(st.lists(instance, max_size=8))
def test_batch_matches_brute_force(instances):
    r = knapsack.solve_many(instances, backend="cpu")
    assert r.values.tolist() == [brute(p, w, c) for p, w, c in instances] and not r.errors
    for sol, (_, w, c) in zip(r.solutions, instances, strict=True):
        assert sol.checked and sum(int(wi) for wi, xi in zip(w, sol.solution, strict=True) if xi) <= c


def test_edge_magnitudes_stay_exact():
    big = 2**60  # the batch keeps profits summing below 2^62
    r = knapsack.solve_many([([big, big - 1, 2], [3, 2, 1], 3), ([2**31, 2**31], [1, 1], 2)], backend="cpu")
    assert r.values.tolist() == [big + 1, 2**32] and r.stats.extra["batched"] == 2
    r = knapsack.solve_many([([2**61, 2**61], [1, 1], 1)], backend="cpu")  # sums to 2^62: alone
    assert r.stats.extra["alone"] == 1 and r.values.tolist() == [2**61]
    r = knapsack.solve_many([([2**62, 2**62], [1, 1], 1)], backend="cpu")  # the single solve refuses
    assert r.values.tolist() == [-1] and "2^63 - 1" in r.errors[0]


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
    assert r.stats.extra == {"instances": 5, "batched": 1, "alone": 2}
    assert r.values.tolist() == [18, 2.5, None, None, 30]
    assert sorted(r.errors) == [2, 3] and "negative" in r.errors[2]
    with pytest.raises(InputError, match="runs on the cpu"):
        knapsack.solve_many([], backend="cuda")
