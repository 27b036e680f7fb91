"""Subset sum (two-list, Wan et al.) against brute force: cpu backend, CUDA simulator, real GPU."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import InputError
from gpudp.backends import cuda_usable
from gpudp.problems import subset_sum as ss


def all_sums(ws):
    """Every subset sum (2**n of them, with repeats), index = bit mask of the subset."""
    sums = np.zeros(1, np.int64)
    for w in ws:
        sums = np.concatenate([sums, sums + w])
    return sums


def brute_best(ws, cap):
    s = all_sums(ws)
    return int(s[s <= cap].max())


def check_answer(ws, target, sol, maximize):
    best = brute_best(ws, target)
    if maximize:
        assert sol.value == best
        subset = sol.solution
    elif best == target:
        assert sol.details["feasible"] and sol.value == target
        subset = sol.solution
    else:
        assert not sol.details["feasible"] and sol.value is None and sol.solution is None
        assert sol.details["closest_sum"] == best
        subset = sol.details["closest"]
    assert len(set(subset)) == len(subset) and all(0 <= k < len(ws) for k in subset)
    assert sum(ws[k] for k in subset) == best
    assert sol.checked


@st.composite
def instances(draw, max_n, max_w=10**6):
    n = draw(st.integers(0, max_n))
    w = st.one_of(st.just(0), st.integers(1, 40), st.integers(1, max_w))
    ws = draw(st.lists(w, min_size=n, max_size=n))
    total = sum(ws)
    pick = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    reachable = sum(x for x, p in zip(ws, pick, strict=True) if p)
    target = draw(
        st.one_of(
            st.just(reachable),  # inside the reachable set
            st.just(reachable + 1),  # often outside it
            st.integers(0, total + 2),
            st.just(total // 2),
        )
    )
    block = draw(st.sampled_from([1, 2, 3, 7, None]))
    return ws, target, block


@settings(max_examples=150)
@given(instances(22), st.booleans())
def test_cpu_against_brute_force(inst, maximize):
    ws, target, block = inst
    f = ss.maximize if maximize else ss.solve
    check_answer(ws, target, f(ws, target, backend="cpu", block=block), maximize)


@pytest.mark.sim
@settings(max_examples=6)
@given(instances(10), st.booleans())
def test_cuda_kernels_against_brute_force(inst, maximize):
    # On a machine without a GPU this runs through the CUDA simulator (tests/conftest.py).
    ws, target, block = inst
    f = ss.maximize if maximize else ss.solve
    check_answer(ws, target, f(ws, target, backend="cuda", block=block or 2), maximize)


@pytest.mark.sim
def test_cuda_kernels_fixed_cases():
    ws = [3, 34, 4, 12, 5, 2, 0, 7]
    for target in (9, 30, 38, 66, 67):
        check_answer(ws, target, ss.solve(ws, target, backend="cuda", block=2), False)
    check_answer(ws, 50, ss.maximize(ws, 50, backend="cuda", block=1), True)


# --- the stages on their own --------------------------------------------------------------------


def _check_list(ws, cap, sums, masks):
    ref = all_sums(ws)
    assert np.array_equal(sums, np.sort(ref[ref <= cap]))
    assert len(set(masks.tolist())) == len(masks)  # each subset once
    assert np.array_equal(ref[masks.astype(np.int64)], sums)  # each mask sums to its sum


@settings(max_examples=60)
@given(st.lists(st.integers(1, 1000), max_size=14), st.integers(0, 8000))
def test_generation_cpu(ws, cap):
    ws = [w for w in ws if w <= cap]
    _check_list(ws, cap, *ss.generate_list(ws, cap, backend="cpu"))


@pytest.mark.sim
def test_generation_cuda():
    ws = [9, 7, 7, 4, 3, 1]
    for cap in (5, 14, 31):
        usable = [w for w in ws if w <= cap]
        _check_list(usable, cap, *ss.generate_list(usable, cap, backend="cuda"))


def _expected_pairs(a, b, cap, e):
    """Per A-block, the C-blocks (C = cap - b, ascending) meeting the values the A-block owns."""
    c = cap - b[::-1]
    out = []
    for i in range(0, len(a), e):
        lo = a[i]
        hi = a[i + e] if i + e < len(a) else cap + 1
        blocks = [j // e for j in range(0, len(c), e) if c[j] < hi and c[min(j + e, len(c)) - 1] >= lo]
        out.append(blocks)
    return out


sorted_list = st.lists(st.integers(0, 60), min_size=1, max_size=40).map(
    lambda v: np.array(sorted(v), np.int64)
)


@settings(max_examples=150)
@given(sorted_list, sorted_list, st.integers(1, 6), st.integers(0, 20))
def test_pruning_and_narrowing_cpu(a, b, e, extra):
    a[0] = 0  # as in the solver: the empty subset heads both lists, and every sum is <= cap
    b[0] = 0
    cap = int(max(a[-1], b[-1])) + extra
    jlo, cnt = ss.prune_pairs(a, b, cap, e, backend="cpu")
    expected = _expected_pairs(a, b, cap, e)
    for i, blocks in enumerate(expected):
        assert list(range(jlo[i], jlo[i] + cnt[i])) == blocks
    ka, kc = -(-len(a) // e), -(-len(b) // e)
    assert cnt.sum() <= ka + kc - 1  # the staircase bound of IPS
    c = cap - b[::-1]
    covered = 0
    for i, blocks in enumerate(expected):
        lo = a[i * e]
        hi = a[(i + 1) * e] if (i + 1) * e < len(a) else cap + 1
        for j in blocks:
            q0, q1, a0, a1 = ss.narrow_cpu(a, b, cap, e, i, j)
            seg = c[j * e : (j + 1) * e]
            assert (q0, q1) == (j * e + np.searchsorted(seg, lo), j * e + np.searchsorted(seg, hi))
            covered += q1 - q0
            if q0 < q1:  # the A-run spans exactly the predecessors of C[q0] .. C[q1 - 1]
                assert a0 == np.searchsorted(a, c[q0], side="right") - 1
                assert a1 == np.searchsorted(a, c[q1 - 1], side="right")
    assert covered == len(c)  # every value of C is searched in exactly one pair


@pytest.mark.sim
def test_pruning_cuda():
    rng = np.random.default_rng(3)
    a = np.sort(np.r_[0, rng.integers(0, 50, 11)]).astype(np.int64)
    b = np.sort(np.r_[0, rng.integers(0, 50, 8)]).astype(np.int64)
    for e in (1, 3):
        got = ss.prune_pairs(a, b, 60, e, backend="cuda")
        ref = ss.prune_pairs(a, b, 60, e, backend="cpu")
        assert np.array_equal(got[0][got[1] > 0], ref[0][ref[1] > 0]) and np.array_equal(got[1], ref[1])


# --- trivial cases, errors, CLI ---------------------------------------------------------------------


def test_trivial_cases_need_no_lists():
    assert ss.solve([5, 0, 3], 0, backend="cpu").solution == []
    sol = ss.solve([5, 0, 3], 9, backend="cpu")
    assert not sol.details["feasible"] and sol.details["closest"] == [0, 2]
    assert ss.solve([5, 0, 3], 8, backend="cpu").solution == [0, 2]
    assert ss.solve([5, 4, 3, 2], 4, backend="cpu").solution == [1]
    assert ss.maximize([0, 0], 7, backend="cpu").value == 0
    assert ss.maximize([], 7, backend="cpu").solution == []
    for s in (ss.solve([5, 4, 3, 2], 4, backend="cpu"), ss.solve([1, 2, 3, 9, 10], 0, backend="cpu")):
        assert "list_sizes" not in s.stats.extra


@pytest.mark.parametrize(
    "weights,target,field",
    [
        ([1, -2, 3], 3, "weights"),
        ([1, 2.5], 3, "weights"),
        ([1, True], 1, "weights"),
        (np.array([1.0, 2.0]), 3, "weights"),
        ("abc", 3, "weights"),
        ([1, 2], -1, "target"),
        ([1, 2], 1.5, "target"),
        ([2**62, 2**62], 5, "weights"),
        (list(range(1, 70)), 100, "weights"),
    ],
)
def test_bad_input(weights, target, field):
    with pytest.raises(InputError) as err:
        ss.solve(weights, target, backend="cpu")
    assert err.value.field == field


def test_memory_checked_before_starting(monkeypatch):
    monkeypatch.setattr(ss, "_free_memory", lambda backend, need=0: (10**6, "on the test's pretend device"))
    ws = [10**6 + 3 * k for k in range(40)]
    with pytest.raises(InputError, match="limit here is about n = ") as err:
        ss.solve(ws, sum(ws) // 2, backend="cpu")
    assert err.value.field == "weights"
    ss.solve(ws[:8], sum(ws[:8]) // 2, backend="cpu")  # a small one still fits


def test_cli_solve_and_maximize(tmp_path, capsys, monkeypatch):
    from gpudp import cli
    from gpudp.cli import main

    # only this plug-in in the tables: the test must not depend on the other solvers' modules
    monkeypatch.setattr(cli, "SOLVERS", {"subset-sum": "gpudp.problems.subset_sum"})
    monkeypatch.setattr(cli, "BENCHES", {"subset-sum": "gpudp.problems.subset_sum"})

    f = tmp_path / "inst.txt"
    f.write_text("# target first\n9\n3\n34\n4\n12\n5\n2\n")
    assert main(["solve", "subset-sum", str(f), "--backend", "cpu", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["value"] == 9 and sum([3, 34, 4, 12, 5, 2][k] for k in out["solution"]) == 9
    f.write_text("100\n3\n34\n4\n12\n5\n2\n")
    assert main(["solve", "subset-sum", str(f), "--maximize", "--backend", "cpu", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["value"] == 60
    f.write_text("9\nx\n")
    assert main(["solve", "subset-sum", str(f), "--backend", "cpu"]) == 2


def test_example_runs_and_splits_fairly(capsys):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "examples" / "subset_sum.py"
    spec = importlib.util.spec_from_file_location("gpudp_example_subset_sum", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    diff = example.main(["--n", "14", "--seed", "3", "--backend", "cpu"])
    w = np.random.default_rng(3).integers(1, 10**8, 14, endpoint=True).tolist()
    assert diff == sum(w) - 2 * brute_best(w, sum(w) // 2)
    assert "feasible=False" in capsys.readouterr().out


def test_numpy_peer_matches():
    for seed in range(3):
        w, m = ss.bench_instance(18, seed)
        assert ss.numpy_two_list(w, m) == brute_best(w, m)


# --- the real GPU -----------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_usable(), reason="needs a real CUDA GPU")
def test_gpu_against_peer_and_brute():
    for n, seed, pct in [(20, 1, 50), (22, 2, 30), (36, 3, 50), (40, 4, 45), (44, 5, 50)]:
        w, m = ss.bench_instance(n, seed, pct)
        sol = ss.solve(w, m, backend="cuda")
        best = m if sol.details["feasible"] else sol.details["closest_sum"]
        assert best == ss.numpy_two_list(w, m) == (brute_best(w, m) if n <= 22 else best)
        assert best == ss.maximize(w, m, backend="cpu").value
    rng = np.random.default_rng(9)
    for _ in range(5):  # small weights: many equal sums, ties across blocks
        w = rng.integers(0, 30, 24).tolist()
        t = int(rng.integers(0, sum(w)))
        check_answer(w, t, ss.solve(w, t, backend="cuda", block=int(rng.integers(1, 300))), False)
        check_answer(w, t, ss.maximize(w, t, backend="cuda"), True)


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_usable(), reason="needs a real CUDA GPU")
def test_gpu_generation_matches_cpu():
    w, m = ss.bench_instance(24, 7)
    w = sorted(w, reverse=True)
    gs, gm = ss.generate_list(w, m, backend="cuda")
    cs, cm = ss.generate_list(w, m, backend="cpu")
    assert np.array_equal(gs, cs) and np.array_equal(gm, cm)
