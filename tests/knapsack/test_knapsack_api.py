"""The knapsack front's Python API (``knapsack.solve``, ``solve_instance``, ``solve_many``,
``parse_knapsack``): a capacity past int64 that every item fits is solved and checked against the
capacity as given; a bad argument is a :class:`gpudp.InputError` naming it (issue 35)."""

from __future__ import annotations

import numpy as np
import pytest

from gpudp import CheckError, InputError
from gpudp.problems import knapsack
from gpudp.problems.knapsack import cpu as knapsack_cpu
from gpudp.problems.knapsack.io import KnapsackInstance, parse_knapsack, validate

BIG = 99999999999999999999


@pytest.mark.parametrize("method", ["auto", "dp", "sparse", "bb", "reach"])
def test_a_capacity_past_int64_that_every_item_fits(method):
    sol = knapsack.solve([3, 4, -1, 0], [2, 3, 1, 5], BIG, method=method, backend="cpu")
    assert sol.value == 7 and sol.solution.tolist()[:3] == [1, 1, 0] and sol.optimal
    assert sol.check() and sol.checker(sol) is None  # against the capacity as given
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

    monkeypatch.setattr(knapsack_cpu, "knapsacks", feasible_but_not_optimal)
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


# --------------------------------------------------------------------------------------------
# The front's hygiene (issue 36): one preparation, no printing, CheckError for an internal fault


def test_auto_prepares_the_instance_for_the_dp_once(monkeypatch):
    """``auto``'s cost model checks, sorts and sizes the instance for the DP; the DP starts from that."""
    from gpudp.problems.knapsack import dp as kd

    made = []
    real = kd.estimate_memory  # sizes the rows once a preparation (kd.Prepared)

    def counted(*args, **kw):
        made.append(args)
        return real(*args, **kw)

    monkeypatch.setattr(kd, "estimate_memory", counted)
    sol = knapsack.solve([10, 7, 8], [5, 4, 3], 8, backend="cpu")
    assert sol.value == 18 and sol.optimal and sol.details["method"] == "dp" and len(made) == 1


def test_an_unproven_answer_is_noted_in_details_and_printed_only_by_the_cli(tmp_path, capsys):
    sol = knapsack.solve([10, 7, 8], [5, 4, 3], 8, method="sparse", backend="cpu", time_limit=0)
    assert not sol.optimal and "not proven optimal" in sol.details["message"]
    assert capsys.readouterr().err == ""  # the Python API prints nothing
    from gpudp.cli import main

    path = tmp_path / "k.txt"
    path.write_text("3 8\n10 5\n7 4\n8 3\n")
    assert main(["solve", "knapsack", str(path), "--method", "sparse", "--time-limit", "0"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [f"gpudp: warning: not proven optimal: {sol.details['message']}"]


def test_rebuilt_items_short_of_the_search_s_value_are_a_check_error():
    from gpudp.problems.knapsack.io import checked_solution
    from gpudp.solution import Stats

    x = np.array([1, 0], np.int8)
    with pytest.raises(CheckError, match="rebuilt items are worth 3, not the search's 4"):
        checked_solution(np.array([3, 4]), np.array([1, 2]), 2, x, 3, Stats(), {}, claimed=4)


def test_a_dp_traceback_short_of_the_dp_s_optimum_is_a_check_error(monkeypatch):
    from gpudp.problems.knapsack import dp as kd

    real_sweep = kd.sweep

    def off_by_one(rec, **kw):
        result = real_sweep(rec, **kw)
        result.last_layer[rec.cap] += 1  # the table claims more than its traced-back items
        return result

    monkeypatch.setattr(kd, "sweep", off_by_one)
    with pytest.raises(CheckError, match="do not attain the DP's optimum"):
        kd.solve([10, 7, 8], [5, 4, 3], 8, backend="cpu", progress=False)
