"""Held-Karp TSP against brute force over permutations, on the cpu backend and the CUDA kernels;
the combinatorial ranking; TSPLIB optima; input checks; the memory refusal; CLI and example."""

import itertools
import json
import math
import runpy
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from gpudp import CheckError, InputError
from gpudp.cli import main
from gpudp.problems.tsp import held_karp as hk
from gpudp.problems.tsp import instance, recurrence, sizes, tsplib

DATA = Path(__file__).resolve().parents[1] / "data" / "tsplib"
SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "tsplib"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tsp.py"


def optima() -> dict:
    out = {}
    for line in (DATA / "optima.txt").read_text().splitlines():
        if ":" in line:
            name, value = line.split(":")
            out[name.strip()] = int(value)
    return out


def brute_force(d) -> float:
    """The shortest closed tour by trying every order of cities 1..n-1 after city 0."""
    d = np.asarray(d)
    n = d.shape[0]
    if n == 1:
        return 0
    perms = np.array(list(itertools.permutations(range(1, n))), dtype=np.int64)
    tours = np.hstack([np.zeros((len(perms), 1), np.int64), perms])
    lengths = d[tours, np.roll(tours, -1, axis=1)].sum(axis=1)
    return lengths.min().item()


def assert_valid(sol, d, labels=None):
    d = np.array(d, dtype=np.float64 if np.asarray(d).dtype.kind == "f" else np.int64)
    np.fill_diagonal(d, 0)
    n = d.shape[0]
    labels = list(range(n)) if labels is None else labels
    idx = sol.details["tour_index"]
    assert sorted(idx) == list(range(n)) and idx[0] == 0
    assert sol.solution == [labels[i] for i in idx] == sol.details["tour"]
    best = brute_force(d)
    walked = sum(d[idx[k], idx[(k + 1) % n]] for k in range(n)) if n > 1 else 0
    if d.dtype.kind == "f":
        assert math.isclose(sol.value, best, rel_tol=1e-9, abs_tol=1e-9)
        assert math.isclose(walked, best, rel_tol=1e-9, abs_tol=1e-9)
    else:
        assert sol.value == best == walked
    assert sol.checked


def matrices(max_n=9, symmetric=None, real=None):
    @st.composite
    def build(draw):
        n = draw(st.integers(2, max_n))
        sym = draw(st.booleans()) if symmetric is None else symmetric
        is_real = draw(st.booleans()) if real is None else real
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        if is_real:
            d = rng.random((n, n)) * draw(st.sampled_from([1.0, 1e3, 1e6]))
        else:
            d = rng.integers(0, draw(st.sampled_from([2, 10, 1000, 10**6])), size=(n, n))
        if sym:
            d = np.triu(d, 1) + np.triu(d, 1).T
        return d

    return build()


@settings(max_examples=60)
@given(d=matrices(symmetric=True), layout=st.sampled_from(["position", "subset"]))
def test_cpu_symmetric_matches_brute_force(d, layout):
    assert_valid(hk.solve(d, backend="cpu", layout=layout), d)


@settings(max_examples=60)
@given(d=matrices(symmetric=False), layout=st.sampled_from(["position", "subset"]))
def test_cpu_asymmetric_matches_brute_force(d, layout):
    assert_valid(hk.solve(d, backend="cpu", layout=layout), d)


@pytest.mark.sim
@pytest.mark.parametrize(
    "n,real,sym,layout",
    [
        (2, False, False, "position"),
        (3, True, False, "subset"),
        (4, False, True, "position"),
        (5, True, False, "position"),
    ],
)
def test_cuda_kernels_match_brute_force(n, real, sym, layout):
    rng = np.random.default_rng(n)
    d = rng.random((n, n)) * 100 if real else rng.integers(0, 100, (n, n))
    if sym:
        d = np.triu(d, 1) + np.triu(d, 1).T
    assert_valid(hk.solve(d, backend="cuda", layout=layout), d)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["position", "subset"])
def test_gpu_matches_cpu(layout):
    rng = np.random.default_rng(7)
    for n, kind in [(12, "int"), (13, "real"), (14, "asym"), (16, "big")]:
        if kind == "real":
            d = rng.random((n, n))
        elif kind == "big":
            d = rng.integers(0, 2**40, (n, n))  # int64 cells
        else:
            d = rng.integers(0, 1000, (n, n))
        if kind != "asym":
            d = np.triu(d, 1) + np.triu(d, 1).T
        g, c = hk.solve(d, backend="cuda", layout=layout), hk.solve(d, backend="cpu", layout=layout)
        assert g.value == pytest.approx(c.value, rel=1e-12) and g.checked
        assert g.details["value_dtype"] == c.details["value_dtype"]


@pytest.mark.gpu
def test_gpu_spill_to_disk_gives_the_same_tour():
    d = np.random.default_rng(3).integers(0, 1000, (15, 15))
    mem = hk.solve(d, backend="cuda")
    disk = hk.solve(d, backend="cuda", memory_budget=1 << 12)
    assert disk.stats.spilled_to_disk and not mem.stats.spilled_to_disk
    assert disk.solution == mem.solution and disk.value == mem.value


# ------------------------------------------------------------------------------------------------
# Ranking


@pytest.mark.parametrize("m", range(0, 11))
def test_rank_unrank_round_trip_for_every_subset(m):
    binom = recurrence.binomial_table(m)
    seen = {}
    for mask in range(1 << m):
        s = bin(mask).count("1")
        r = recurrence.rank(mask, binom)
        assert 0 <= r < math.comb(m, s)
        assert recurrence.unrank(r, s, binom) == mask
        seen.setdefault(s, set()).add(r)
    for s, ranks in seen.items():
        assert ranks == set(range(math.comb(m, s)))  # a bijection onto 0..C(m, s)-1


def test_lowest_bit():
    for x in list(range(1, 1 << 12)) + [1 << 31, (1 << 32) - 1, (1 << 31) | (1 << 7)]:
        assert recurrence.lowest_bit(x) == (x & -x).bit_length() - 1


@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("m", [1, 2, 5, 8])
def test_decode_is_a_bijection_with_the_predecessor_rank(m, layout):
    binom = recurrence.binomial_table(m)
    for t in range(m):
        s = t + 1
        cells = set()
        for p in range(math.comb(m, s) * s):
            mask, j, r2 = recurrence.decode(t, p, binom, layout)
            assert bin(mask).count("1") == s and (mask >> j) & 1
            assert r2 == recurrence.rank(mask ^ (1 << j), binom)
            assert recurrence.cell_index(mask, j, binom, layout) == p
            cells.add((mask, j))
        assert len(cells) == math.comb(m, s) * s


def test_position_layout_puts_neighbouring_subsets_side_by_side():
    binom = recurrence.binomial_table(6)
    t, s = 2, 3
    first = [recurrence.decode(t, p, binom, 0) for p in range(math.comb(6, s))]
    assert [recurrence.rank(mask, binom) for mask, _, _ in first] == list(range(math.comb(6, s)))
    assert all(j == min(i for i in range(6) if mask >> i & 1) for mask, j, _ in first)


# ------------------------------------------------------------------------------------------------
# Small sizes, value types, inputs


def test_one_two_and_three_cities():
    one = hk.solve([[5]], backend="cpu")
    assert one.value == 0 and one.solution == [0] and one.checked
    two = hk.solve([[0, 3], [4, 0]], backend="cpu")
    assert two.value == 7 and two.solution == [0, 1]
    three = np.array([[0, 1, 10], [10, 0, 1], [1, 10, 0]])
    sol = hk.solve(three, backend="cpu")
    assert sol.value == 3 and sol.solution == [0, 1, 2]
    assert hk.solve(three.T, backend="cpu").solution == [0, 2, 1]


def test_value_types():
    small = np.full((4, 4), 1000)
    assert instance.value_dtype(hk.from_matrix(small).matrix) == np.int32
    big = np.full((4, 4), 2**30)
    assert instance.value_dtype(hk.from_matrix(big).matrix) == np.int64
    assert instance.value_dtype(hk.from_matrix(small / 3).matrix) == np.float64
    d = np.random.default_rng(1).integers(2**33, 2**34, (7, 7))
    sol = hk.solve(d, backend="cpu")
    assert sol.details["value_dtype"] == "int64"
    assert_valid(sol, d)
    with pytest.raises(InputError, match="beyond int64"):
        instance.value_dtype(hk.from_matrix(np.full((3, 3), 2**62)).matrix)


def test_diagonal_is_ignored_and_negative_distances_are_fine():
    d = np.array([[np.nan, 2.0, 9.0], [1.0, np.inf, -3.0], [4.0, 7.0, -1e300]])
    assert_valid(hk.solve(d, backend="cpu"), np.nan_to_num(d, nan=0, posinf=0, neginf=0))


@pytest.mark.parametrize(
    "d,match",
    [
        (np.zeros((2, 3)), "square"),
        (np.zeros((0, 0)), "at least one"),
        (np.array([[0, np.nan], [1, 0]]), "NaN"),
        (np.array([[0, np.inf], [1, 0]]), "allow_infinite"),
        (np.array([[0, -np.inf], [1, 0]]), "-inf"),
        (np.array([[True, False], [False, True]]), "integers or reals"),
        ([["a", "b"], ["c", "d"]], "integers or reals"),
        ([[0, None], [1, 0]], "integers or reals"),
    ],
)
def test_bad_matrices_name_the_field(d, match):
    with pytest.raises(InputError, match=match) as e:
        hk.solve(d, backend="cpu")
    assert e.value.field == "distances"


def test_infinite_distances_when_allowed():
    d = np.array([[0, 1, np.inf, 5], [np.inf, 0, 1, np.inf], [np.inf, np.inf, 0, 1], [1, np.inf, np.inf, 0]])
    sol = hk.solve(d, backend="cpu", allow_infinite=True)
    assert sol.value == 4 and sol.solution == [0, 1, 2, 3]
    d[2, 3] = np.inf
    with pytest.raises(InputError, match="no tour of finite length"):
        hk.solve(d, backend="cpu", allow_infinite=True)


def test_networkx_graphs():
    rng = np.random.default_rng(4)
    d = rng.integers(1, 100, (6, 6))
    names = ["Oslo", "Bergen", "Tromsø", "Bodø", "Ålesund", "Stavanger"]
    g = nx.Graph()
    for i, j in itertools.combinations(range(6), 2):
        g.add_edge(names[i], names[j], weight=int(d[i, j]))
    sym = np.triu(d, 1) + np.triu(d, 1).T
    sol = hk.solve(g, backend="cpu")
    assert sol.solution[0] == "Oslo" and sol.details["value_dtype"] == "int32"
    assert_valid(sol, sym, labels=names)
    dg = nx.DiGraph()
    for i, j in itertools.permutations(range(6), 2):
        dg.add_edge(i, j, km=float(d[i, j]) / 7)
    sol = hk.solve(dg, backend="cpu", weight="km")
    assert not sol.details["symmetric"] and sol.details["value_dtype"] == "float64"
    assert_valid(sol, d / 7)


def test_networkx_bad_graphs():
    g = nx.complete_graph(5)
    nx.set_edge_attributes(g, 3, "weight")
    g.remove_edge(1, 3)
    with pytest.raises(InputError, match="no edge from 1 to 3") as e:
        hk.solve(g, backend="cpu")
    assert e.value.field == "graph"
    sol = hk.solve(g, backend="cpu", allow_infinite=True)
    closed = sol.solution + sol.solution[:1]
    assert sol.value == 15 and (1, 3) not in {tuple(sorted(e)) for e in zip(closed, closed[1:], strict=False)}
    g.add_edge(1, 3)
    with pytest.raises(InputError, match="no 'weight' attribute"):
        hk.solve(g, backend="cpu")
    with pytest.raises(InputError, match="multigraph"):
        hk.solve(nx.MultiGraph(g), backend="cpu")


def test_check_catches_a_wrong_tour():
    d = np.random.default_rng(2).integers(1, 50, (6, 6))
    sol = hk.solve(d, backend="cpu")
    sol.value += 1
    with pytest.raises(CheckError, match="length"):
        sol.check()
    sol = hk.solve(d, backend="cpu")
    sol.details["tour_index"] = [0, 1, 1, 3, 4, 5]
    with pytest.raises(CheckError, match="permutation"):
        sol.check()
    sol = hk.solve(d, backend="cpu")
    sol.details["tour_index"] = sol.details["tour_index"][1:] + sol.details["tour_index"][:1]
    with pytest.raises(CheckError, match="start"):
        sol.check()


def test_spill_to_disk_gives_the_same_tour():
    d = np.random.default_rng(9).random((10, 10))
    mem = hk.solve(d, backend="cpu")
    disk = hk.solve(d, backend="cpu", memory_budget=64)
    assert disk.stats.spilled_to_disk and disk.solution == mem.solution


# ------------------------------------------------------------------------------------------------
# TSPLIB instances and the memory refusal


@pytest.mark.parametrize("name", ["burma14", "ulysses16", "gr17"])
def test_tsplib_instances_reproduce_their_optima(name):
    sol = hk.solve(DATA / f"{name}.tsp", backend="cpu")
    assert sol.value == optima()[name]
    assert sol.solution[0] == 1 and sorted(sol.solution) == list(range(1, len(sol.solution) + 1))
    assert sol.details["name"] == name or sol.details["name"].startswith(name)


@pytest.mark.skipif(not SHARED.exists(), reason="../shared/data/tsplib is not beside this checkout")
def test_copied_instances_are_the_shared_ones():
    for name in ("burma14.tsp", "ulysses16.tsp", "gr17.tsp", "a280.tsp", "optima.txt"):
        assert (DATA / name).read_bytes() == (SHARED / name).read_bytes()


def test_a280_is_refused_before_anything_runs(monkeypatch):
    def no(*a, **k):
        raise AssertionError("must not get this far")

    monkeypatch.setattr(hk, "sweep", no)
    monkeypatch.setattr(tsplib.TSPLIBInstance, "matrix", no)
    with pytest.raises(InputError) as e:
        hk.solve(DATA / "a280.tsp", backend="cpu")
    msg = str(e.value)
    assert e.value.field == "cities" and "a280 (280 cities)" in msg
    assert "e+85 bytes of decisions" in msg and "n ≈ 30 is the practical limit" in msg


def test_memory_figures():
    need = hk.memory_needed(30, np.int32, "cuda")
    assert need["states"] == 29 * 2**28
    assert need["transitions"] == 29 * 28 * 2**27 + 2 * 29
    assert 4.5e9 < need["decisions"] < 5.0e9  # 5 bits a state, in 32-cell words per layer
    assert need["values"] == 2 * math.comb(29, 15) * 15 * 4  # the widest layer, |S| = 15
    assert need["device"] > need["values"]
    assert hk.memory_needed(30, np.int32, "cpu")["device"] == 0
    assert hk.memory_needed(np.int64(5))["cities"] == 5 and sizes.transitions(np.uint8(2)) == 2
    for bad in (-1, 1.5, True, "5", None):  # -1 had figures, True one city's, "5" a TypeError
        with pytest.raises(InputError, match="a number of cities is a whole number >= 0") as e:
            hk.memory_needed(bad)
        assert e.value.field == "cities"
        with pytest.raises(InputError, match="whole number"):
            sizes.transitions(bad)


def test_refuses_what_does_not_fit_here(monkeypatch):
    monkeypatch.setattr(sizes, "available_memory", lambda: 1000)
    d = np.ones((14, 14))
    with pytest.raises(InputError, match="of host memory") as e:
        hk.solve(d, backend="cpu")
    assert "n ≈ 30" in str(e.value)
    monkeypatch.setattr(sizes.shutil, "disk_usage", lambda where: type("U", (), {"free": 10})())
    with pytest.raises(InputError, match="free disk"):
        hk.solve(d, backend="cpu", memory_budget=100)
    with pytest.raises(InputError, match="at most 33 cities"):
        hk.solve(np.ones((34, 34)), backend="cpu")


# ------------------------------------------------------------------------------------------------
# CLI and example


def test_cli_solve_json(capsys):
    assert main(["solve", "tsp", str(DATA / "gr17.tsp"), "--backend", "cpu", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["length"] == 2085 == out["value"] and out["tour"][0] == 1 and len(out["tour"]) == 17
    assert out["stats"]["backend"] == "cpu" and out["stats"]["transitions"] == sizes.transitions(17)
    assert main(["solve", "tsp", str(DATA / "ulysses16.tsp"), "--backend", "cpu"]) == 0
    text = capsys.readouterr().out
    assert "tour length 6859 through 16 cities" in text
    assert main(["solve", "tsp", str(DATA / "a280.tsp")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "n ≈ 30 is the practical limit" in err[0]


def test_cli_bench_writes_json(tmp_path, capsys):
    out = tmp_path / "b.json"
    args = ["bench", "tsp", "--sizes", "5,7", "--backends", "cpu", "--out", str(out), "--peer-timeout", "60"]
    assert main(args + ["--layouts", "position,subset"]) == 0
    d = json.loads(out.read_text())
    assert d["benchmark"] == "tsp" and not d["lengths_disagree"]
    assert [(r["cities"], r["layout"]) for r in d["results"]] == [(5, "position"), (7, "position")]
    assert all(r["transitions_per_second"] > 0 and r["bytes_evicted"] > 0 for r in d["results"])
    assert d["peers"] and d["peers"][0]["cities"] == 5


def test_example_runs_without_matplotlib_or_with_it(tmp_path, capsys):
    png = tmp_path / "tour.png"
    runpy.run_path(str(EXAMPLE), run_name="not_main")["main"](["--backend", "cpu", "--plot", str(png)])
    out = capsys.readouterr().out
    assert "tour length 6859 (GEO, 16 cities)" in out and "networkx" in out
    assert png.exists() or "plot skipped" in out


# ------------------------------------------------------------------------------------------------
# Hostile inputs (issue 11): exact value types, non-finite numbers, huge sizes, memory limits

HOSTILE = Path(__file__).resolve().parents[1] / "data" / "hostile" / "tsp"
I64_MIN, I64_MAX = -(2**63), 2**63 - 1


def exact_brute_force(d) -> int | float:
    """The optimum over every permutation, summed in Python (exact for integers of any size)."""
    d = [[x.item() if hasattr(x, "item") else x for x in row] for row in np.asarray(d, dtype=object)]
    n = len(d)
    if n == 1:
        return 0
    best = None
    for p in itertools.permutations(range(1, n)):
        t = (0, *p)
        length = sum(d[a][b] for a, b in zip(t, t[1:] + t[:1], strict=True))
        best = length if best is None or length < best else best
    return best


def test_int64_min_distance_gives_the_exact_tour_not_an_int32_one():
    d = np.array([[0, I64_MIN, 7], [4, 0, 5], [3, 9, 0]], dtype=np.int64)
    assert instance.value_dtype(d) == np.int64  # abs(-2^63) wrapped around to pick int32 before
    sol = hk.solve(d, backend="cpu")
    assert sol.value == exact_brute_force(d) == I64_MIN + 8 and sol.solution == [0, 1, 2]
    d[1, 0] = -1  # now a tour may reach -2^63 - 1: refused with the figures, never wrapped
    with pytest.raises(InputError, match=r"range over -9223372036854775809 .. 21, beyond int64") as e:
        hk.solve(d, backend="cpu")
    assert e.value.field == "distances"


def test_value_type_bounds_are_exact_at_the_int32_and_int64_edges():
    def dtype(entries, n=4):
        d = np.full((n, n), entries, dtype=np.int64)
        return instance.value_dtype(hk.from_matrix(d).matrix)

    assert dtype((2**31 - 1) // 4) == np.int32  # four edges of a tour: 2^31 - 4 fits
    assert dtype(2**29) == np.int64  # 2^31: one past int32
    assert dtype(-(2**29)) == np.int32  # -2^31 fits exactly
    assert dtype(-(2**29) - 1) == np.int64
    assert dtype(2**61 - 1) == np.int64 and dtype(-(2**61)) == np.int64
    for bad in (2**61, -(2**61) - 1, I64_MAX, I64_MIN):
        with pytest.raises(InputError, match="beyond int64"):
            dtype(bad)
    with pytest.raises(InputError, match="too large"):
        instance.value_dtype(np.array([[0, 1e300], [1e300, 0]]))


EXTREMES = [
    0,
    1,
    -1,
    2**31 - 1,
    2**31,
    -(2**31),
    2**53,
    2**53 + 1,
    -(2**40),
    2**60,
    -(2**60),
    I64_MAX,
    I64_MIN,
]


@settings(max_examples=40)
@given(
    n=st.integers(1, 6),
    data=st.data(),
    pool=st.lists(st.sampled_from(EXTREMES) | st.integers(-(2**62), 2**62), min_size=1, max_size=4),
)
def test_extreme_integer_distances_are_exact_or_refused(n, data, pool):
    d = np.array(
        [[data.draw(st.sampled_from(pool)) if i != j else 0 for j in range(n)] for i in range(n)],
        dtype=np.int64,
    )
    lo = sum(min(min((int(x) for k, x in enumerate(row) if k != i), default=0), 0) for i, row in enumerate(d))
    hi = sum(max(max((int(x) for k, x in enumerate(row) if k != i), default=0), 0) for i, row in enumerate(d))
    event("refused" if not I64_MIN <= lo <= hi <= I64_MAX else "solved")
    if not I64_MIN <= lo <= hi <= I64_MAX:
        with pytest.raises(InputError, match="beyond int64"):
            hk.solve(d, backend="cpu")
        return
    sol = hk.solve(d, backend="cpu")
    assert sol.value == exact_brute_force(d) and sol.checked
    assert sol.details["value_dtype"] == ("int32" if -(2**31) <= lo and hi < 2**31 else "int64")
    t = sol.details["tour_index"]
    assert sum(int(d[a, b]) for a, b in zip(t, t[1:] + t[:1], strict=True)) == sol.value


@settings(max_examples=25)
@given(
    n=st.integers(2, 7),
    seed=st.integers(0, 2**32 - 1),
    scales=st.lists(st.sampled_from([1e-3, 1.0, 1e6, 1e15, -1e15, -1.0, 1e200]), min_size=1, max_size=3),
)
def test_real_distances_with_mixed_magnitudes_are_checked_and_optimal(n, seed, scales):
    rng = np.random.default_rng(seed)
    d = rng.random((n, n)) * rng.choice(scales, size=(n, n))
    sol = hk.solve(d, backend="cpu")  # check() recomputes the length in the DP's order: no CheckError
    assert sol.checked
    best = exact_brute_force(d)
    assert math.isclose(sol.value, best, rel_tol=1e-9, abs_tol=1e-9 * float(np.abs(d).max()) * n)


def test_real_tour_length_is_summed_in_the_dps_order():
    # numpy's pairwise sum of these 9 edges (1e16 + 1 + ...) differs from the left-to-right one
    n = 9
    d = np.ones((n, n))
    d[0, 1], d[n - 1, 0] = 1e16, -1e16
    tour = list(range(n))
    sequential = 0.0
    for a, b in zip(tour, tour[1:] + tour[:1], strict=True):
        sequential += d[a, b]
    assert hk.tour_length(d, tour) == sequential
    sol = hk.solve(d, backend="cpu")
    assert sol.checked and sol.value == hk.tour_length(d, sol.details["tour_index"])


@pytest.mark.parametrize(
    "d,kw,match",
    [
        (np.array([[0, np.nan, 1], [1, 0, 1], [1, 1, 0]]), {}, "NaN distance from 0 to 1"),
        (np.array([[0, np.nan], [1, 0]]), {"allow_infinite": True}, "NaN"),
        (np.array([[0, 1], [np.inf, 0]]), {}, "infinite distance from 1 to 0"),
        (np.array([[0, -np.inf], [1, 0]]), {"allow_infinite": True}, "-inf"),
        (np.array([[0, 2**64 - 1], [1, 0]], dtype=np.uint64), {}, "beyond int64"),
        ([[0, 2**70], [1, 0]], {}, "distance 1180591620717411303424 from 0 to 1 is beyond int64"),
        ([[0, -(2**63) - 1], [1, 0]], {}, "beyond int64"),
        (np.array([[0, 1e308], [1e308, 0]]), {}, "real distances too large"),
        (np.array([[0, 1e200], [-1e301, 0]]), {}, "real distances too large"),
    ],
)
def test_non_finite_and_out_of_range_matrices_are_refused(d, kw, match):
    with pytest.raises(InputError, match=match):
        hk.solve(d, backend="cpu", **kw)


def test_python_ints_and_infinities_that_fit_are_exact():
    d = [[0, 2**62, 1], [1, 0, 2**62 - 7], [-(2**62), 3, 0]]  # a tour sums to 2^63 - 4 at most
    sol = hk.solve(d, backend="cpu")
    assert sol.value == exact_brute_force(d) and isinstance(sol.value, int)
    inf = np.array([[0, 1, np.inf], [np.inf, 0, 2], [3, np.inf, 0]])
    assert hk.solve(inf, backend="cpu", allow_infinite=True).value == 6


def test_networkx_weights_are_checked():
    def graph(w, n=3):
        g = nx.complete_graph(n)
        nx.set_edge_attributes(g, 1, "weight")
        g.edges[0, 1]["weight"] = w
        return g

    for w, match in [
        (float("nan"), "NaN"),
        ("5", "'5' is not a number"),
        (None, "None is not a number"),
        (True, "True is not a number"),
        (2**70, "beyond int64"),
        (float("inf"), "allow_infinite"),
        (-math.inf, "-inf"),
    ]:
        with pytest.raises(InputError, match=match) as e:
            hk.solve(graph(w), backend="cpu")
        assert e.value.field == "graph"
    assert hk.solve(graph(np.int64(2**61)), backend="cpu").value == 2**61 + 2
    assert hk.solve(graph(2.5), backend="cpu").value == 4.5
    g = graph(2**51, n=4)  # integers with a missing edge go to float64: exact below 2^53
    g.remove_edge(2, 3)
    g.edges[0, 2]["weight"] = 2**51 - 1
    sol = hk.solve(g, backend="cpu", allow_infinite=True)
    assert sol.value == exact_brute_force(hk.from_networkx(g, allow_infinite=True).matrix) == 2**51 + 2
    g.edges[0, 1]["weight"] = 2**52  # rows 0 and 1 may now sum past 2^53
    with pytest.raises(InputError, match="2\\^53"):
        hk.solve(g, backend="cpu", allow_infinite=True)


def test_an_integer_float64_would_round_beside_reals_is_refused():
    """Integers beside reals become float64: one above 2^53 that float64 would round (2^53 + 1) is
    refused by name, as knapsack's reader does; it was rounded, and the tour of length 2^53 + 1.5
    reported as 2^53, optimal. A matrix, a graph and a TSPLIB file alike; 2^60 is held exactly."""
    with pytest.raises(InputError, match="9007199254740993 from 0 to 1 .* float64 does not hold") as e:
        hk.solve([[0, 2**53 + 1], [0.5, 0]], backend="cpu")
    assert e.value.field == "distances"
    with pytest.raises(InputError, match="float64 does not hold"):  # rows that numpy casts alike
        hk.solve([np.array([0, 2**53 + 1]), np.array([0.5, 0])], backend="cpu")
    assert hk.solve([[0, 2**60], [0.5, 0]], backend="cpu").value == float(2**60)
    assert hk.solve([[2**53 + 1, 1], [0.5, 0]], backend="cpu").value == 1.5  # the diagonal is ignored
    g = nx.DiGraph()
    g.add_edge(0, 1, weight=2**53 + 1)
    g.add_edge(1, 0, weight=0.5)
    with pytest.raises(InputError, match="edge 0-1: weight 9007199254740993 .* float64 does not hold"):
        hk.solve(g, backend="cpu")
    g.edges[1, 0]["weight"] = 1  # all integers: exact
    assert hk.solve(g, backend="cpu").value == 2**53 + 2


def test_an_instance_built_by_hand_is_checked_as_a_matrix():
    """solve takes an Instance as it is: one built by hand went unchecked, so a NaN or -inf was
    "no tour of finite length exists: too many edges are missing", three labels for two cities an
    IndexError from the traceback, a list matrix an AttributeError and a 1 x 3 matrix a tour of
    length 0; each is now from_matrix's InputError. +inf stays admitted (allow_infinite's)."""
    from gpudp.problems.tsp import solve_many

    inf = math.inf
    for m, labels, match in (
        (np.array([[0, math.nan], [1, 0]]), [0, 1], "NaN distance from 0 to 1"),
        (np.array([[0, -inf], [1, 0]]), [0, 1], "distance -inf from 0 to 1"),
        (np.array([[0, 1], [1, 0]]), [0, 1, 2], "3 labels for 2 cities"),
        (np.array([[0, 1, 2]]), [0], "must be square"),
    ):
        with pytest.raises(InputError, match=match):
            hk.solve(instance.Instance(m, labels), backend="cpu")
    assert hk.solve(instance.Instance([[0, 1], [2, 0]], ["a", "b"]), backend="cpu").solution == ["a", "b"]
    holed = instance.Instance(np.array([[0, inf, 1], [1, 0, 1], [1, 1, 0.0]]), [0, 1, 2])
    assert hk.solve(holed, backend="cpu").value == 3.0
    bad = instance.Instance(np.array([[0, math.nan], [1, 0]]), [0, 1])
    assert "NaN" in solve_many([holed, bad], backend="cpu").errors[1]


@pytest.mark.parametrize("n", [34, 1030, 3000, 5000, 10_000, 10_001, 20_000, 10**9, 2**62])
def test_huge_sizes_are_refused_at_once_with_figures(n):
    import time

    t0 = time.perf_counter()
    with pytest.raises(InputError, match="at most 33 cities") as e:
        sizes.check_size(n, "big")
    assert time.perf_counter() - t0 < 5  # no work that grows with n (a hang guard, not a speed goal)
    msg = str(e.value)
    assert f"big ({n} cities)" in msg and "states" in msg and "transitions" in msg and "of decisions" in msg
    assert "inf" not in msg.replace("info", "")


def test_a_refusal_needs_no_cuda(monkeypatch):
    """Where the CUDA compiler cannot be imported, a too-large instance is still one InputError."""
    real = sizes.memory_needed

    def no_cuda(n, dtype=np.int32, backend="cuda"):
        if backend == "cuda":
            raise ImportError("numba.cuda cannot be imported here")
        return real(n, dtype, backend)

    monkeypatch.setattr(sizes, "memory_needed", no_cuda)
    with pytest.raises(InputError, match="at most 33 cities") as e:
        sizes.check_size(40)
    assert "of decisions)" in str(e.value) and "GPU memory" not in str(e.value)


def test_huge_dimension_is_refused_before_the_data_are_read(tmp_path, monkeypatch):
    import time

    p = tmp_path / "big.tsp"
    p.write_text(
        "NAME: big\nTYPE: TSP\nDIMENSION: 1000000000\nEDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n"
    )
    with open(p, "a") as f:
        f.write("1 0 0\n" * 300_000)
    monkeypatch.setattr(tsplib, "read_text", lambda *a, **k: pytest.fail("the whole file was read"))
    t0 = time.perf_counter()
    with pytest.raises(InputError, match=r"big \(1000000000 cities\).*at most 33 cities"):
        hk.solve(p, backend="cpu")
    assert time.perf_counter() - t0 < 5  # the 300,000 lines are not parsed (read_text fails the test)


def test_memory_check_uses_the_process_limits(monkeypatch):
    import gpudp.memory

    assert sizes.available_memory is gpudp.memory.available_memory  # not /proc/meminfo alone
    monkeypatch.setattr(gpudp.memory, "_rlimit_room", lambda: (100 << 20, "RLIMIT_AS (ulimit -v)"))
    with pytest.raises(InputError, match=r"of host memory, and this process may use 100.00 MiB"):
        sizes.check_memory(30, np.int32, "cpu")
    monkeypatch.setattr(gpudp.memory, "_rlimit_room", lambda: None)
    monkeypatch.setattr(gpudp.memory, "_cgroup_room", lambda: (1 << 30, "/sys/fs/cgroup/memory.max"))
    with pytest.raises(InputError, match="of host memory"):
        sizes.check_memory(30, np.int32, "cpu", memory_budget="0")  # decisions on disk, values still in RAM


@pytest.mark.parametrize(
    "budget", ["nan", "inf", "1e400", "-5", "-1G", "lots", -5, float("nan"), float("inf")]
)
def test_bad_memory_budgets_are_refused_before_anything_runs(budget, monkeypatch):
    monkeypatch.setattr(hk, "sweep", lambda *a, **k: pytest.fail("must not get this far"))
    with pytest.raises(InputError) as e:
        hk.solve(np.ones((4, 4)), backend="cpu", memory_budget=budget)
    assert e.value.field == "memory_budget"


def test_hostile_corpus_values_are_brute_force_optima_of_what_the_reader_reads():
    cases = json.loads((HOSTILE / "expected.json").read_text())
    checked = 0
    for name, case in cases.items():
        if name.startswith("_") or "_matrix" not in case:
            continue
        f = HOSTILE / case.get("files", [name])[0]
        assert tsplib.read_tsplib(f).matrix().tolist() == case["_matrix"], name
        assert exact_brute_force(case["_matrix"]) == case["value"], name
        checked += 1
    assert checked >= 15
