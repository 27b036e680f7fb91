"""Knapsack by dense DP (Boyer et al.) against a tiny reference DP written here."""

import itertools
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import InputError
from gpudp.cli import main
from gpudp.engine import sweep
from gpudp.problems import knapsack as front
from gpudp.problems.knapsack import dp as kd
from gpudp.problems.knapsack.io import read_knapsack, validate

DATA = Path(__file__).resolve().parents[1] / "data" / "knapsack"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "knapsack"


def ref_dp(p, w, c):
    """f[c] over capacities, one item at a time, in exact arithmetic (Python ints or Fractions)."""
    f = [0] * (c + 1)
    for pi, wi in zip(p, w, strict=True):
        for cap in range(c, wi - 1, -1):
            f[cap] = max(f[cap], f[cap - wi] + pi)
    return f[c]


def ref_dp_int64(p, w, c):
    """:func:`ref_dp` on whole rows at a time in numpy int64 (exact while every sum of profits is
    below 2^63), for the instances with hundreds of items and capacities in the tens of thousands."""
    assert sum(int(x) for x in p) < 2**63
    f = np.zeros(c + 1, np.int64)
    for pi, wi in zip(p, w, strict=True):
        if wi <= c:
            f[wi:] = np.maximum(f[wi:], f[: c + 1 - wi] + np.int64(pi))  # both sides: f before the item
    return int(f[c])


def assert_solves(sol, p, w, c, expect, rel=0.0):
    x = np.asarray(sol.solution)
    assert x.shape == (len(p),) and set(np.unique(x).tolist()) <= {0, 1}
    chosen = [i for i in range(len(p)) if x[i]]
    assert sum(int(w[i]) for i in chosen) <= c
    assert sol.details["weight"] == sum(int(w[i]) for i in chosen)
    got = sum(Fraction(p[i].item()) for i in chosen)
    assert abs(got - Fraction(sol.value)) <= rel * max(1, abs(expect))
    assert abs(got - Fraction(expect)) <= rel * max(1, abs(expect)), (got, expect)
    assert sol.checked


def instances(profit, max_n=40):
    """n <= max_n items, C <= 2000, weights up to a bit over C (some heavier than C), duplicates."""
    return st.integers(0, 2000).flatmap(
        lambda c: st.integers(0, max_n).flatmap(
            lambda n: st.tuples(
                st.lists(st.tuples(profit, st.integers(0, c + 20)), min_size=0, max_size=5).flatmap(
                    lambda pool: (
                        st.lists(
                            st.sampled_from(pool) if pool else st.tuples(profit, st.integers(0, c + 20)),
                            min_size=n,
                            max_size=n,
                        )
                        if pool
                        else st.lists(st.tuples(profit, st.integers(0, c + 20)), min_size=n, max_size=n)
                    )
                ),
                st.just(c),
            )
        )
    )


def arrays(inst, profit_dtype=np.int64):
    """Profits, weights (int64) and the capacity of a drawn instance."""
    items, c = inst
    return np.array([a for a, _ in items], profit_dtype), np.array([b for _, b in items], np.int64), c


@settings(max_examples=60)
@given(instances(st.integers(0, 1000)))
def test_integer_random_cpu(inst):
    p, w, c = arrays(inst, np.int64)
    sol = kd.solve(p, w, c, backend="cpu", progress=False)
    assert_solves(sol, p, w, c, ref_dp(p.tolist(), w.tolist(), c))
    assert sol.details["value_type"] == "int32"


@settings(max_examples=25)
@given(instances(st.integers(0, 2**56), max_n=30))
def test_profits_past_int32_use_int64_exactly(inst):
    p, w, c = arrays(inst, np.int64)
    sol = kd.solve(p, w, c, backend="cpu", progress=False)
    assert_solves(sol, p, w, c, ref_dp(p.tolist(), w.tolist(), c))
    dp_items = (w > 0) & (w <= c) & (p > 0)
    if sum(p[dp_items].tolist()) > 2**31 - 1 and "memory_estimate" in sol.details:
        assert sol.details["value_type"] == "int64"


@settings(max_examples=15)
@given(instances(st.integers(2**60, 2**62), max_n=12))
def test_profits_past_int64_are_refused_not_rounded(inst):
    """Integer profits whose sum passes int64 once were solved in float64 (rounded); now they are exact
    (when every packable item fits, no sweep is needed) or refused with the figures."""
    p, w, c = arrays(inst, np.int64)
    packable = [(a, b) for a, b in zip(p.tolist(), w.tolist(), strict=True) if 0 < b <= c and a > 0]
    if sum(b for _, b in packable) > c and sum(a for a, _ in packable) > 2**63 - 1:
        with pytest.raises(InputError, match=r"profits: .*2\^63 - 1"):
            kd.solve(p, w, c, backend="cpu", progress=False)
        return
    sol = kd.solve(p, w, c, backend="cpu", progress=False)
    assert_solves(sol, p, w, c, ref_dp(p.tolist(), w.tolist(), c))
    assert sol.value == ref_dp(p.tolist(), w.tolist(), c)  # exactly: a Python integer


@settings(max_examples=30)
@given(instances(st.floats(0, 1000, allow_nan=False).map(lambda v: round(v, 3)), max_n=25))
def test_float_profits(inst):
    p, w, c = arrays(inst, np.float64)
    sol = kd.solve(p, w, c, backend="cpu", progress=False)
    expect = ref_dp([Fraction(v) for v in p.tolist()], w.tolist(), c)
    assert_solves(sol, p, w, c, expect, rel=1e-9)


def test_edge_cases():
    assert kd.solve([], [], 10, backend="cpu").value == 0
    sol = kd.solve([5, 7], [3, 4], 0, backend="cpu")
    assert sol.value == 0 and sol.solution.tolist() == [0, 0]
    sol = kd.solve([5, 7, 2], [3, 0, 50], 4, backend="cpu")  # weight 0 taken, 50 > C dropped
    assert sol.value == 12 and sol.solution.tolist() == [1, 1, 0]
    sol = kd.solve([5, 7, 2], [1, 2, 3], 100, backend="cpu")  # everything fits
    assert sol.value == 14 and sol.details["weight"] == 6


def test_bad_input_names_the_field_and_suggests_bb():
    for args, field in (
        (([1, 2], [1.5, 2], 5), "weights"),
        (([1, 2], [-1, 2], 5), "weights"),
        (([1, 2], [1, 2], 5.5), "capacity"),
        (([1, 2], [1, 2], -3), "capacity"),
        (([1, 2], [1, 2, 3], 5), "weights"),
        (([1, float("nan")], [1, 2], 5), "profits"),
    ):
        with pytest.raises(InputError) as e:
            kd.solve(*args, backend="cpu")
        assert e.value.field == field
    with pytest.raises(InputError, match="--method bb"):
        kd.solve([1], [0.5], 3, backend="cpu")


def test_memory_is_checked_before_starting():
    with pytest.raises(InputError, match="GiB"):
        kd.solve([1, 2], [2**39, 2**39 + 1], 2**40, backend="cpu")


def test_bands_decode_to_the_plain_decisions():
    """The knapsack's band-compressed store decodes to exactly the plain store's bits."""
    rng = np.random.default_rng(2)
    w = np.sort(rng.integers(1, 60, 50))
    p = w + 7
    c = int(w.sum() // 2)
    bands = sweep(kd.KnapsackDP(w, p, c, np.int32), backend="cpu", progress=False, codec="bands")  # as solved
    plain = sweep(kd.KnapsackDP(w, p, c, np.int32), backend="cpu", progress=False)
    assert bands.stats.extra["compression"] < 0.5
    for t in range(len(w)):
        assert [bands.decision(t, k) for k in range(c + 1)] == [plain.decision(t, k) for k in range(c + 1)]
    assert bands.stats.cells == plain.stats.cells < len(w) * (c + 1)
    assert kd.solve(p, w, c, backend="cpu", progress=False).stats.extra["decision_codec"] == "bands"


def _shared_files(folder):
    if not (folder / "optima.txt").is_file():
        return []
    rows = [ln.split() for ln in (folder / "optima.txt").read_text().splitlines() if ln.strip()]
    return [(folder / name, float(v)) for name, v in rows]


@pytest.mark.parametrize("path,optimum", _shared_files(DATA), ids=lambda v: getattr(v, "name", str(v)))
def test_bundled_files(path, optimum):
    inst = read_knapsack(path)
    w = np.asarray(inst.weights)
    if not np.all(w == np.round(w)):  # real weights: the DP refuses them and names the field
        with pytest.raises(InputError, match="weights"):
            kd.solve_instance(inst, backend="cpu")
        return
    sol = kd.solve_instance(inst, backend="cpu", progress=False)
    assert round(float(sol.value), 4) == optimum


@pytest.mark.skipif(
    not SHARED.is_dir(), reason="../shared/data/knapsack is absent (only in the project's workspace)"
)
def test_every_shared_file_reproduces_its_optimum():
    done = 0
    for path, optimum in _shared_files(SHARED):
        inst = read_knapsack(path)
        w = np.asarray(inst.weights)
        if not (np.all(w == np.round(w)) and float(inst.capacity) == round(float(inst.capacity))):
            continue
        sol = kd.solve_instance(inst, backend="cpu", progress=False)
        assert round(float(sol.value), 4) == optimum, path.name
        done += 1
    assert done >= 10


def test_cli_dp_and_auto(capsys):
    path = DATA / "knapPI_3_100_1000_1"
    assert main(["solve", "knapsack", str(path), "--method", "dp", "--backend", "cpu", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["value"] == 2397 and out["method"] == "dp" and len(out["solution"]) == 100
    assert main(["solve", "knapsack", str(path), "--backend", "cpu", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # auto's cost model (issue 16): a DP predicted well under DP_AT_ONCE_S runs at once
    assert out["value"] == 2397 and out["method"] == "dp" and "auto picks dp" in out["method_note"]
    assert front.rule(read_knapsack(DATA / "f5_l-d_kp_15_375")) == "bb"  # real weights
    assert main(["solve", "knapsack", str(path), "--method", "dp", "--backend", "cpu"]) == 0
    text = capsys.readouterr().out
    assert "knapsack: 2397 (optimal, checked; method dp)" in text and "items taken" in text


@pytest.mark.sim
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cuda_tiny(seed):
    rng = np.random.default_rng(seed)
    n = 7
    w = rng.integers(1, 40, n)
    p = rng.integers(0, 60, n) if seed else w + 5
    c = int(w.sum() // 2)
    sol = kd.solve(p, w, c, backend="cuda", progress=False)
    assert_solves(sol, p, w, c, ref_dp(p.tolist(), w.tolist(), c))
    assert sol.stats.backend == "cuda"
    assert sol.stats.extra["kernel"] == "blocked"  # the solver's reach: the weights
    assert sol.stats.extra["decision_codec"] == "bands"


@pytest.mark.gpu
def test_gpu_matches_cpu_boyer_class():
    from gpudp.bench.instances import boyer_instance

    p, w, c = boyer_instance(300, 1)
    cpu = kd.solve(p, w, c, backend="cpu", progress=False)
    gpu = kd.solve(p, w, c, backend="cuda", progress=False)
    assert cpu.value == gpu.value == ref_dp(p.tolist(), w.tolist(), c)
    assert gpu.stats.extra["bytes_to_host"] > 0


def test_example_runs(capsys):
    import runpy

    example = runpy.run_path(str(Path(__file__).resolve().parents[2] / "examples" / "knapsack_dp.py"))
    sol = example["main"](["--n", "300", "--backend", "cpu"])
    out = capsys.readouterr().out
    assert "optimum 9767" in out and f"optimum {sol.value}" in out
    p, w, c = example["boyer_instance"](300, 0)
    assert sol.value == ref_dp_int64(p.tolist(), w.tolist(), c)


# --------------------------------------------------------------------------------------------
# Exactness at every magnitude, the memory pre-check, and auto's choice (issue 11)

EDGE = [0, 1, 2, 3, 7, 2**31 - 1, 2**31, 2**53 - 1, 2**53, 2**53 + 1, 2**61, 2**62 - 1, 2**62, 2**62 + 1]
magnitude = st.one_of(st.sampled_from(EDGE), st.integers(0, 2**62), st.integers(0, 40))
small_weight = st.one_of(st.integers(0, 40), st.sampled_from(EDGE))  # some far heavier than C


def brute_int(p, w, c):
    best = 0
    for bits in itertools.product((0, 1), repeat=len(p)):
        if sum(b for k, b in zip(bits, w, strict=True) if k) <= c:
            best = max(best, sum(a for k, a in zip(bits, p, strict=True) if k))
    return best


def sum_past_int64(p, w, c):
    packable = [(a, b) for a, b in zip(p, w, strict=True) if 0 < b <= c and a > 0]
    return sum(b for _, b in packable) > c and sum(a for a, _ in packable) > 2**63 - 1


def edge_instances(weight, capacity):
    """n <= 9 items: profits of every magnitude from -2^62 to 2^62, weights from ``weight``, the
    capacity from ``capacity`` (brute force stays cheap)."""
    return st.integers(0, 9).flatmap(
        lambda n: st.tuples(
            st.lists(st.one_of(magnitude, magnitude.map(lambda v: -v)), min_size=n, max_size=n),
            st.lists(weight, min_size=n, max_size=n),
            capacity,
        )
    )


@settings(max_examples=80)
@given(edge_instances(small_weight, st.integers(0, 120)))
def test_dp_and_auto_edge_magnitudes_vs_brute_force(inst):
    """Profits from -2^62 to 2^62 (0, 1, 2^31, 2^53 + 1 ...), weights up to past 2^62 with C <= 120:
    DP and auto give the exact optimum (a Python integer) or refuse exactly past int64's totals."""
    p, w, c = inst
    expect = brute_int(p, w, c)
    inst_ = validate(p, w, c)
    if sum_past_int64(p, w, c):
        with pytest.raises(InputError, match=r"2\^63 - 1"):
            kd.solve(p, w, c, backend="cpu", progress=False)
        with pytest.raises(InputError, match=r"2\^63 - 1"):
            front.solve_instance(inst_, method="auto", backend="cpu")
        return
    assert kd.solve(p, w, c, backend="cpu", progress=False).value == expect
    sol = front.solve_instance(inst_, method="auto", backend="cpu")
    assert sol.value == expect and sol.details["method"] == "dp"


@pytest.mark.parametrize(
    "p, w, c, method",
    [
        ([10, 9], [2**53 + 1, 2**53], 2**53, "dp"),  # the item that fits fits alone: no cell to sweep
        # C too large for a table: the sparse DP (issue 16; B&B before), exact at any C
        ([10, 9, 8], [2**53 + 1, 2**53, 2**52], 2**53, "sparse"),
        ([5, 4, 100], [3, 2, 2**62 + 5], 4, "dp"),  # a weight past 2^62, a small C: dp drops it
        ([5, 4, 100], [3, 2, 2**63 - 1], 4, "dp"),
        ([2**62, 2**62 - 2, 1], [1, 2, 3], 3, "dp"),  # the profits sum to 2^63 - 1 exactly
        ([1, 2], [0.5, 1], 1, "bb"),  # real weights
        ([1.5, 2], [1, 1], 1, "dp"),  # real profits, integer weights
        ([3, 4], [2, 3], 10**10, "dp"),  # every item fits: the DP sweeps no cell (issue 16's cost model)
        ([3, 4, 5], [2, 3, 10**10], 10**10, "sparse"),  # n (C + 1) = 3e10 cells: sparse first
    ],
)
def test_auto_picks_a_method_that_accepts_edge_magnitudes(p, w, c, method):
    inst = validate(p, w, c)
    sol = front.solve_instance(inst, method="auto", backend="cpu")
    assert sol.details["method"] == method and sol.optimal
    best = brute_int(p, w, c) if inst.integral else None
    if best is not None:
        assert sol.value == best


def test_memory_precheck_uses_available_memory_and_refuses_before_allocating(monkeypatch):
    """C = 1e9 under a process memory limit once passed the pre-check and died with MemoryError: the
    pre-check asks gpudp.memory.available_memory (cgroup and ulimit included) and refuses first."""
    from gpudp import memory

    p, w, c = [5, 6, 7], [6 * 10**8, 5 * 10**8, 4 * 10**8], 10**9
    monkeypatch.setattr(memory, "available_memory", lambda: 2 << 30)
    allocated = []
    monkeypatch.setattr(kd, "sweep", lambda *a, **k: allocated.append(1))
    with pytest.raises(InputError, match=r"capacity: the DP needs .* GiB of host memory; 2.00 GiB available"):
        kd.solve(p, w, c, backend="cpu", progress=False)
    assert not allocated
    # auto: the DP refuses (its rows do not fit), the sparse DP solves it (B&B before issue 16)
    sol = front.solve_instance(validate(p, w, c), method="auto", backend="cpu")
    assert sol.value == 13 and sol.details["method"] == "sparse" and sol.optimal
    assert "DP refuses" in sol.details["method_note"]
    est = kd.estimate_memory(3, c, np.int32, "cpu")
    assert est["host_bytes"] >= 3 * (c + 1) * 4  # two rows and the copy of the last layer


def test_memory_budget_left_over_goes_to_the_band_store(monkeypatch):
    seen = {}
    real_sweep = kd.sweep

    def spy(rec, **kw):
        seen.update(kw)
        return real_sweep(rec, **kw)

    from gpudp import memory

    monkeypatch.setattr(kd, "sweep", spy)
    monkeypatch.setattr(memory, "available_memory", lambda: 8 << 30)
    monkeypatch.delenv("GPUDP_MEMORY_BUDGET", raising=False)
    p, w, c = [5, 6, 3], [4, 5, 2], 10
    sol = kd.solve(p, w, c, backend="cpu", progress=False)
    assert seen["memory_budget"] == ((8 << 30) - sol.details["memory_estimate"]["host_bytes"]) // 2


@pytest.mark.parametrize("value", ["nan", "inf", "-5", "1e400", "lots"])
def test_cli_budgets_are_one_line_errors(value, capsys):
    path = str(DATA / "f3_l-d_kp_4_20")
    for option in ("--host-budget", "--memory-budget"):
        code = main(["solve", "knapsack", path, "--backend", "cpu", option, value])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and err[0].startswith("gpudp: error:") and option in err[0]
