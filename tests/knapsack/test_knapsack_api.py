"""The knapsack front's Python API (``knapsack.solve``, ``solve_instance``, ``solve_many``,
``parse_knapsack``): a capacity past int64 that every item fits is solved and checked against the
capacity as given; a bad argument is a :class:`gpudp.InputError` naming it (issue 35)."""

from __future__ import annotations

import numpy as np
import pytest

from gpudp import CheckError, InputError
from gpudp.problems import knapsack
from gpudp.problems.knapsack import batch
from gpudp.problems.knapsack.io import KnapsackInstance, parse_knapsack, validate

BIG = 99999999999999999999


@pytest.mark.parametrize("method", ["auto", "dp", "sparse", "bb"])
def test_a_capacity_past_int64_that_every_item_fits(method):
    sol = knapsack.solve([3, 4, -1, 0], [2, 3, 1, 5], BIG, method=method, backend="cpu")
    assert sol.value == 7 and sol.solution.tolist()[:3] == [1, 1, 0] and sol.optimal
    assert sol.check() and sol._checker(sol) is None  # against the capacity as given
    inst = parse_knapsack(f"2 {BIG}\n3 2\n4 3\n")
    assert knapsack.solve_instance(inst, method=method, backend="cpu").value == 7


@pytest.mark.parametrize("instances", [None, 5, "3 8", {"a": 1}])
def test_solve_many_refuses_what_is_not_a_batch(instances):
    with pytest.raises(InputError, match="instances: must be an iterable"):
        knapsack.solve_many(instances, backend="cpu")


@pytest.mark.parametrize("verify", ["2", -1, 1.5, [1]])
def test_solve_many_refuses_a_verify_that_is_not_a_count(verify):
    with pytest.raises(InputError, match="verify: must be a number of instances"):
        knapsack.solve_many([([1], [1], 1)], backend="cpu", verify=verify)


def test_verify_re_solves_instances_by_the_dense_dp(monkeypatch):
    insts = [([10, 7, 8], [5, 4, 3], 8), ([1, 2], [1, 1], 1)]
    for verify, count in ((None, 0), (False, 0), (True, 1), (2, 2), (np.int64(5), 2)):
        r = knapsack.solve_many(insts, backend="cpu", verify=verify)
        assert r.values.tolist() == [18, 2] and len(r.stats.extra["verified"]) == count

    def feasible_but_not_optimal(p, w, off, caps, values, x):
        values[:] = 0  # nothing taken, worth 0: the batch's own check passes

    monkeypatch.setattr(batch, "_knapsacks", feasible_but_not_optimal)
    assert knapsack.solve_many(insts[:1], backend="cpu").values.tolist() == [0]
    with pytest.raises(CheckError, match=r"instances\[0\]: the batch's optimum is 0, the single DP's is 18"):
        knapsack.solve_many(insts[:1], backend="cpu", verify=1)


@pytest.mark.parametrize("method", ["greedy", None, 3])
def test_an_unknown_method_is_an_input_error(method):
    inst = validate([1], [1], 1)
    with pytest.raises(InputError, match="method: must be one of auto, dp, sparse, bb"):
        knapsack.solve_instance(inst, method=method, backend="cpu")
    with pytest.raises(InputError, match="method"):
        knapsack.solve([1], [1], 1, method=method, backend="cpu")


def test_parse_knapsack_reads_bytes_as_utf8_text():
    inst = parse_knapsack(b"\xef\xbb\xbf3 8\r\n10 5\r\n7 4\r\n8 3\r\n")  # a BOM and CRLF, as in a file
    assert inst.capacity == 8 and inst.profits.tolist() == [10, 7, 8]
    assert parse_knapsack(bytearray(b'{"capacity": 1, "profits": [2], "weights": [1]}')).n == 1
    with pytest.raises(InputError, match="text: not UTF-8 text"):
        parse_knapsack(b"1 1\n\xff 1\n")
    with pytest.raises(InputError, match="text: must be str or bytes"):
        parse_knapsack(None)


def test_solve_instance_checks_an_instance_built_by_hand():
    """From Python lists (it raised AttributeError), and refused as validate refuses its data."""
    sol = knapsack.solve_instance(KnapsackInstance([10, 7, 8], [5, 4, 3], 8), backend="cpu")
    assert sol.value == 18 and sol.check()
    assert knapsack.solve_instance(KnapsackInstance((1, 2), [1, 1], 1.0), backend="cpu").value == 2
    with pytest.raises(InputError, match="weights: weight -1 of item 0 is negative"):
        knapsack.solve_instance(KnapsackInstance([1], [-1], 3), backend="cpu")
    with pytest.raises(InputError, match="inst: must be a KnapsackInstance"):
        knapsack.solve_instance(([1], [1], 1), backend="cpu")
