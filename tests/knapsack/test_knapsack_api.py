"""The knapsack front's Python API (``knapsack.solve``, ``solve_instance``, ``solve_many``,
``parse_knapsack``): a capacity past int64 that every item fits is solved and checked against the
capacity as given; a bad argument is a :class:`gpudp.InputError` naming it (issue 35)."""

from __future__ import annotations

import pytest

from gpudp.problems import knapsack
from gpudp.problems.knapsack.io import parse_knapsack

BIG = 99999999999999999999


@pytest.mark.parametrize("method", ["auto", "dp", "sparse", "bb"])
def test_a_capacity_past_int64_that_every_item_fits(method):
    sol = knapsack.solve([3, 4, -1, 0], [2, 3, 1, 5], BIG, method=method, backend="cpu")
    assert sol.value == 7 and sol.solution.tolist()[:3] == [1, 1, 0] and sol.optimal
    assert sol.check() and sol._checker(sol) is None  # against the capacity as given
    inst = parse_knapsack(f"2 {BIG}\n3 2\n4 3\n")
    assert knapsack.solve_instance(inst, method=method, backend="cpu").value == 7
