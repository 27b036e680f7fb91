"""Subset sum (two-list, Wan et al.) against brute force: cpu backend, CUDA simulator, real GPU."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import InputError
from gpudp.backends import cuda_usable
from gpudp.bench.instances import wan_instance
from gpudp.bench.subset_sum import numpy_two_list
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


def test_pruning_refuses_what_it_would_read_wrong():
    """prune_pairs (public, for inspection) took unsorted lists, sums past the capacity, reals
    (truncated) and a negative capacity without a word, and a block size of 0 was a
    ZeroDivisionError: each is now an InputError naming the argument."""
    good = ([0, 1, 2], [0, 1], 3, 2)
    assert [x.tolist() for x in ss.prune_pairs(*good)] == [[0, 0], [0, 1]]
    for k, bad, field in (
        (0, [2, 1, 0], "a"),
        (0, [0, 1, 9], "a"),
        (1, [0, 1.5], "b"),
        (1, [[0, 1]], "b"),
        (2, -1, "cap"),
        (3, 0, "e"),
        (3, None, "e"),
        (3, 1.0, "e"),
    ):
        args = list(good)
        args[k] = bad
        with pytest.raises(InputError) as e:
            ss.prune_pairs(*args)
        assert e.value.field == field


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
    ],
)
def test_bad_input(weights, target, field):
    with pytest.raises(InputError) as err:
        ss.solve(weights, target, backend="cpu")
    assert err.value.field == field


def test_memory_checked_before_starting(monkeypatch):
    fake = lambda backend, need=0: (10**6, "on the test's pretend device")  # noqa: E731
    monkeypatch.setattr(ss.solver, "_free_memory", fake)
    ws = [10**6 + 3 * k for k in range(40)]
    with pytest.raises(InputError, match="limit here is about n = ") as err:
        ss.solve(ws, sum(ws) // 2, backend="cpu", split=0)  # no split: refused with the figures
    assert err.value.field == "weights"
    ss.solve(ws[:8], sum(ws[:8]) // 2, backend="cpu")  # a small one still fits
    monkeypatch.setattr(ss.solver, "_free_memory", lambda backend, need=0: (10**3, "on a tiny device"))
    with pytest.raises(InputError, match=r"2\^\d+ parts\) is past the limit of 16"):
        ss.solve(ws, sum(ws) // 2, backend="cpu")  # a split would need too many parts


@settings(max_examples=40)
@given(instances(14), st.booleans(), st.integers(1, 4))
def test_split_search_against_brute_force(inst, maximize, k):
    """Fixing the k largest items and searching the rest for each of their 2^k subsets."""
    ws, target, block = inst
    f = ss.maximize if maximize else ss.solve
    sol = f(ws, target, backend="cpu", block=block, split=k)
    check_answer(ws, target, sol, maximize)
    assert "split" in sol.stats.extra or sol.stats.cells == 0


def test_more_than_64_items_split():
    ws = list(range(1, 70))  # 69 usable items: the masks hold 64, so 5 are fixed
    sol = ss.solve(ws, 100, backend="cpu")
    assert sol.details["feasible"] and sum(ws[k] for k in sol.solution) == 100 and sol.checked
    assert sol.stats.extra["split"]["fixed_items"] >= 5  # 64 at most, fewer where memory is short
    with pytest.raises(InputError, match="at most 64"):
        ss.solve(ws, 100, backend="cpu", split=0)


def test_split_chosen_when_memory_is_short(monkeypatch):
    rng = np.random.default_rng(8)
    ws = [int(x) for x in rng.integers(1, 10**9, 18)]
    target = sum(ws[::2])
    monkeypatch.setattr(ss.solver, "_free_memory", lambda backend, need=0: (4_000, "on a small device"))
    sol = ss.solve(ws, target, backend="cpu")
    check_answer(ws, target, sol, False)
    split = sol.stats.extra["split"]
    assert split["fixed_items"] >= 1 and split["parts_run"] <= split["parts"] == 2 ** split["fixed_items"]
    far = ss.maximize(ws, sum(ws) // 3, backend="cpu")
    check_answer(ws, sum(ws) // 3, far, True)


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

    path = Path(__file__).resolve().parents[2] / "examples" / "subset_sum.py"
    spec = importlib.util.spec_from_file_location("gpudp_example_subset_sum", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    diff = example.main(["--n", "14", "--seed", "3", "--backend", "cpu"])
    w = np.random.default_rng(3).integers(1, 10**8, 14, endpoint=True).tolist()
    assert diff == sum(w) - 2 * brute_best(w, sum(w) // 2)
    assert "feasible=False" in capsys.readouterr().out


def test_numpy_peer_matches():
    for seed in range(3):
        w, m = wan_instance(18, seed)
        assert numpy_two_list(w, m) == brute_best(w, m)


# --- the real GPU -----------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_usable(), reason="needs a real CUDA GPU")
def test_gpu_against_peer_and_brute():
    for n, seed, pct in [(20, 1, 50), (22, 2, 30), (36, 3, 50), (40, 4, 45), (44, 5, 50)]:
        w, m = wan_instance(n, seed, pct)
        sol = ss.solve(w, m, backend="cuda")
        best = m if sol.details["feasible"] else sol.details["closest_sum"]
        assert best == numpy_two_list(w, m) == (brute_best(w, m) if n <= 22 else best)
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
    w, m = wan_instance(24, 7)
    w = sorted(w, reverse=True)
    gs, gm = ss.generate_list(w, m, backend="cuda")
    cs, cm = ss.generate_list(w, m, backend="cpu")
    assert np.array_equal(gs, cs) and np.array_equal(gm, cm)


# --- exact at every magnitude the solver accepts (issue 11) --------------------------------------

INT64_MAX = 2**63 - 1
MAGNITUDES = [0, 1, 2, 3, 2**31 - 1, 2**31, 2**53, 2**53 + 1, 2**61 + 3, 2**62 - 1, 2**62, INT64_MAX // 3]


def python_best(ws, cap):
    """Brute force over all subsets with Python ints (no int64, no float anywhere)."""
    best = 0
    for mask in range(1 << len(ws)):
        s = sum(w for k, w in enumerate(ws) if mask >> k & 1)
        if best < s <= cap:
            best = s
    return best


@st.composite
def big_instances(draw):
    ws = draw(st.lists(st.sampled_from(MAGNITUDES).flatmap(lambda m: st.integers(m, m + 2)), max_size=10))
    while sum(ws) > INT64_MAX:  # the accepted limit: the sum within int64
        ws.pop()
    pick = draw(st.lists(st.booleans(), min_size=len(ws), max_size=len(ws)))
    hit = sum(w for w, p in zip(ws, pick, strict=True) if p)
    target = draw(st.sampled_from([hit, hit + 1, max(hit - 1, 0), sum(ws), sum(ws) // 2, INT64_MAX]))
    # hit + 1 past INT64_MAX (every weight picked, their sum INT64_MAX) is refused: a test below
    return ws, min(target, INT64_MAX), draw(st.sampled_from([1, 2, 5, None]))


@settings(max_examples=80, deadline=None)
@given(big_instances(), st.booleans())
def test_cpu_exact_at_large_magnitudes(inst, maximize):
    ws, target, block = inst
    best = python_best(ws, target)
    if maximize:
        sol = ss.maximize(ws, target, backend="cpu", block=block)
        assert sol.value == best and sum(ws[k] for k in sol.solution) == best
    else:
        sol = ss.solve(ws, target, backend="cpu", block=block)
        assert sol.details["feasible"] == (best == target)
        subset = sol.solution if best == target else sol.details["closest"]
        assert sum(ws[k] for k in subset) == best
    assert sol.checked


@pytest.mark.parametrize(
    "weights,target,field",
    [
        ([1, 2], 2**63, "target"),
        ([2**63, 1], 1, "weights"),
        ([INT64_MAX, 1], 1, "weights"),
        (np.array([2**64 - 1], np.uint64), 1, "weights"),
        (np.array([[1, 2], [3, 4]]), 3, "weights"),
        (np.array([1, 2.5], dtype=object), 3, "weights"),
        ({1, 2, 3}, 3, "weights"),
        (b"\x01\x02", 3, "weights"),
        ([1, 2], np.float64(3.0), "target"),
    ],
)
def test_bad_input_at_the_limits(weights, target, field):
    with pytest.raises(InputError) as err:
        ss.solve(weights, target, backend="cpu")
    assert err.value.field == field


@pytest.mark.parametrize("block", [0, -3, 2**31, 2**80, 2.0, True])
def test_bad_block(block):
    with pytest.raises(InputError) as err:
        ss.solve([5, 4, 3, 2], 6, backend="cpu", block=block)
    assert err.value.field == "block"


def test_accepted_array_forms():
    assert ss.solve(np.array([2**62, 3, 2**61], np.uint64), 2**62 + 3, backend="cpu").solution == [0, 1]
    assert ss.solve(np.array([7, 2**62, 4], dtype=object), 11, backend="cpu").solution == [0, 2]
    assert ss.maximize((w for w in [5, 9, 13]), np.uint64(21), backend="cpu").value == 18


# --- the file reader --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw,expected",
    [
        (b"\xef\xbb\xbf# bom, crlf\r\n9\r\n3 # three\r\n\r\n4\r\n", (9, [3, 4])),
        (b"10\r7\r5\r", (10, [7, 5])),
        (b"+0012\n007\n-0\n", (12, [7, 0])),
        (f"{2**53 + 1}\n{2**53}\n".encode(), (2**53 + 1, [2**53])),  # never through a float
        (f"{INT64_MAX}\n{'0' * 5000}{INT64_MAX}\n".encode(), (INT64_MAX, [INT64_MAX])),
        (b"5", (5, [])),
    ],
)
def test_read_instance_accepts(tmp_path, raw, expected):
    f = tmp_path / "inst.txt"
    f.write_bytes(raw)
    assert ss.read_instance(f) == expected


@pytest.mark.parametrize(
    "raw,piece",
    [
        (b"\xff\xfe9\x00\n\x004\x00", "binary data"),
        (b"# caf\xe9\n9\n", "not UTF-8"),
        (b"", "holds no target"),
        (b"# only\n\n", "holds no target"),
        (b"9\n-2\n", ":2: '-2' is negative"),
        (b"-9\n2\n", ":1: '-9' is negative"),
        (b"9\n3.5\n", ":2: '3.5' is not an integer (reals"),
        (b"9\n1e3\n", ":2: '1e3' is not an integer (reals"),
        (b"9\nNaN\n", ":2: 'NaN' is not an integer (reals"),
        (b"-inf\n", ":1: '-inf' is not an integer (reals"),
        (b"9\n3 4\n", ":2: '3 4' is not an integer"),
        (b"9\n1_000\n", ":2: '1_000' is not an integer"),
        ("9\n\uff11\n".encode(), ":2: '\uff11' is not an integer"),
        (f"{2**63}\n".encode(), ":1: '9223372036854775808' is above 2**63 - 1"),
        (b"9\n" + b"7" * 5000 + b"\n", ":2: '777"),
    ],
)
def test_read_instance_refuses_with_the_line(tmp_path, raw, piece):
    f = tmp_path / "inst.txt"
    f.write_bytes(raw)
    with pytest.raises(InputError) as err:
        ss.read_instance(f)
    assert err.value.field == "file" and piece in str(err.value)
    assert len(str(err.value)) < 300


def test_read_instance_bounds_the_count(tmp_path, monkeypatch):
    monkeypatch.setattr(ss.io, "MAX_FILE_NUMBERS", 5)
    f = tmp_path / "inst.txt"
    f.write_text("9\n1\n2\n3\n4\n")
    assert ss.read_instance(f) == (9, [1, 2, 3, 4])
    f.write_text("9\n1\n2\n3\n4\n5\n")
    with pytest.raises(InputError, match="more than 5 numbers"):
        ss.read_instance(f)


def test_read_instance_gzip_and_devices(tmp_path):
    import gzip

    g = tmp_path / "inst.txt.gz"
    g.write_bytes(gzip.compress(b"9\n4\n5\n"))
    assert ss.read_instance(g) == (9, [4, 5])
    g.write_bytes(gzip.compress(b"9\n4\n5\n" * 1000)[:40])
    with pytest.raises(InputError, match="corrupt or truncated gzip"):
        ss.read_instance(g)
    with pytest.raises(InputError, match="binary data"):
        ss.read_instance("/dev/zero")
    with pytest.raises(InputError, match="folder"):
        ss.read_instance(tmp_path)


# --- the memory pre-check counts what this process may use ------------------------------------------


def test_memory_check_uses_the_process_limit(monkeypatch):
    """A cgroup or ulimit -v below the OS's free memory: the pre-check must see it (it read only
    /proc/meminfo's MemAvailable, and n = 58 under ulimit -v died with MemoryError)."""
    from gpudp import memory

    monkeypatch.setattr(memory, "available_memory", lambda: 8 << 20)
    ws = [10**12 + 7919 * k for k in range(40)]  # 31 MB of lists: fits any test machine, not 8 MiB
    with pytest.raises(InputError, match="limit here is about n = ") as err:
        ss.solve(ws, sum(ws) // 2, backend="cpu", split=0)  # a split would run it in parts
    assert err.value.field == "weights" and "host memory" in str(err.value)
    ss.solve(ws[:12], sum(ws[:12]) // 2, backend="cpu")  # a small one still fits


def test_ulimit_v_refuses_before_allocating():
    """End to end in a child process under RLIMIT_AS (ulimit -v): one InputError, no MemoryError."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(
        """
        import resource
        from gpudp import InputError, memory
        from gpudp.problems import subset_sum as ss

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (memory._status_bytes("VmSize") + (256 << 20), hard))
        for n in (48, 58):  # 0.5 GB and 16 GB of lists, worst case
            ws = [10**12 + 7919 * k for k in range(n)]
            try:
                ss.solve(ws, sum(ws) // 2, backend="cpu", split=0)
            except InputError as e:
                print("refused", n, e)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "refused 48 weights:" in out.stdout and "refused 58 weights:" in out.stdout, out.stdout
    assert "RLIMIT_AS" in out.stdout
