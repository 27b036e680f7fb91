"""The examples in examples/: edit distance (tiled sweep) and the minimum seam (row sweep), each
against a tiny pure-Python reference, on the cpu backend and, for a few tiny cases, on CUDA (the
simulator when there is no GPU)."""

from __future__ import annotations

import itertools
import random
import re
from pathlib import Path

import numpy as np
import pytest
from examples_loader import load_example
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import InputError
from gpudp import sweep as gpudp_sweep
from gpudp.engine import plan_sweep

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


_load = load_example


ed = _load("edit_distance")
seam = _load("seam_carving")
gotoh = _load("affine_alignment")
sw = _load("local_alignment")


# ---------------------------------------------------------------------------------------------
# edit distance
# ---------------------------------------------------------------------------------------------


def levenshtein(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def apply_script(script, a: str) -> str:
    """Apply the edit script to a, checking that each operation's char of a is really there."""
    out, k = [], 0
    for op, x, y in script:
        if op == "insert":
            assert x == "" and len(y) == 1
            out.append(y)
            continue
        assert k < len(a) and a[k] == x, (op, x, k)
        k += 1
        if op == "match":
            assert y == x
            out.append(x)
        elif op == "substitute":
            assert len(y) == 1 and y != x
            out.append(y)
        else:
            assert op == "delete" and y == ""
    assert k == len(a), "the script does not consume all of a"
    return "".join(out)


def check_edit(a, b, **options):
    distance, script, stats = ed.edit_distance(a, b, **options)
    assert distance == levenshtein(a, b)
    assert apply_script(script, a) == b
    assert sum(op != "match" for op, _, _ in script) == distance
    return stats


@st.composite
def string_pairs(draw):
    alphabet = "abcd"[: draw(st.integers(1, 4))]
    text = st.text(alphabet=alphabet, min_size=0, max_size=40)
    return draw(text), draw(text)


@settings(max_examples=150)
@given(pair=string_pairs(), tile=st.sampled_from([None, (3, 32), (1, 64)]))
def test_edit_distance_cpu_matches_reference(pair, tile):
    a, b = pair
    stats = check_edit(a, b, backend="cpu", tile=tile)
    assert stats.cells == len(a) * len(b)


@pytest.mark.parametrize(
    "a, b, distance",
    [("kitten", "sitting", 3), ("intention", "execution", 5), ("", "", 0), ("", "abc", 3), ("ab", "", 2)],
)
def test_edit_distance_known_pairs(a, b, distance):
    assert ed.edit_distance(a, b, backend="cpu")[0] == distance
    check_edit(a, b, backend="cpu")


def test_edit_distance_runs_tiled_and_spills_to_disk_unchanged():
    rng = np.random.default_rng(7)
    a = "".join(rng.choice(list("acgt"), 300))
    b = "".join(rng.choice(list("acgt"), 200))
    in_memory = ed.edit_distance(a, b, backend="cpu", tile=(16, 32))
    on_disk = ed.edit_distance(a, b, backend="cpu", tile=(16, 32), memory_budget=0, store="full")
    assert in_memory[2].extra["schedule"] == "tiled anti-diagonals"
    assert not in_memory[2].spilled_to_disk and on_disk[2].spilled_to_disk
    assert on_disk[:2] == in_memory[:2]
    assert in_memory[0] == levenshtein(a, b)
    assert apply_script(on_disk[1], a) == b


def test_edit_distance_cli(capsys):
    ed.main(["kitten", "sitting", "--backend", "cpu"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("distance 3 (cpu backend")
    assert out[1:] == ["kitten-", "*|||*|+", "sitting"]


@pytest.mark.sim
@pytest.mark.parametrize("a, b", [("kitten", "sitting"), ("", "abc"), ("abcabcabcab", "bcbcaacbbacb")])
def test_edit_distance_cuda(a, b):
    stats = check_edit(a, b, backend="cuda")
    assert stats.backend == "cuda"


# ---------------------------------------------------------------------------------------------
# minimum seam
# ---------------------------------------------------------------------------------------------


def seam_energy(energy, columns) -> float:
    return float(sum(energy[i, j] for i, j in enumerate(columns)))


def brute_force_seam(energy) -> float:
    rows, cols = energy.shape
    best = np.inf
    for j0 in range(cols):
        for steps in itertools.product((-1, 0, 1), repeat=rows - 1):
            columns = np.concatenate([[j0], j0 + np.cumsum(steps, dtype=int)]).astype(int)
            if columns.min() >= 0 and columns.max() < cols:
                best = min(best, seam_energy(energy, columns))
    return best


def dp_seam(energy) -> float:
    rows, cols = energy.shape
    cost = list(energy[0])
    for i in range(1, rows):
        cost = [energy[i, j] + min(cost[max(j - 1, 0) : j + 2]) for j in range(cols)]
    return float(min(cost))


def check_seam(energy, reference, **options):
    cost, columns, stats = seam.min_seam(energy, **options)
    assert cost == reference(energy)
    assert len(columns) == energy.shape[0]
    assert columns.min() >= 0 and columns.max() < energy.shape[1]
    assert np.abs(np.diff(columns)).max(initial=0) <= 1
    assert seam_energy(energy, columns) == cost
    assert stats.extra["schedule"] == "rows"
    return columns


def energies(max_rows, max_cols):
    shapes = st.tuples(st.integers(1, max_rows), st.integers(1, max_cols))
    return shapes.flatmap(
        lambda s: st.lists(st.integers(0, 9), min_size=s[0] * s[1], max_size=s[0] * s[1]).map(
            lambda v: np.array(v, dtype=np.float64).reshape(s)
        )
    )


@settings(max_examples=60)
@given(energy=energies(6, 7))
def test_seam_cpu_matches_brute_force(energy):
    check_seam(energy, brute_force_seam, backend="cpu")


@settings(max_examples=60)
@given(
    rows=st.integers(1, 40), cols=st.integers(1, 40), levels=st.integers(1, 10), seed=st.integers(0, 2**32)
)
def test_seam_cpu_matches_dp(rows, cols, levels, seed):
    energy = np.random.default_rng(seed).integers(0, levels, (rows, cols)).astype(np.float64)
    check_seam(energy, dp_seam, backend="cpu")


def test_seam_runs_on_the_layered_path():
    energy = np.arange(20.0).reshape(4, 5) % 7
    plan = plan_sweep(seam.MinimumSeam(energy), "cpu")
    assert plan.kind == "layered" and plan.n_units == 4  # one layer per row
    assert (plan.schedule.a, plan.schedule.b, plan.schedule.window) == (1, 0, 1)


def test_seam_carve_and_input_errors():
    energy = np.array([[5.0, 1.0, 5.0], [5.0, 5.0, 1.0], [5.0, 1.0, 5.0]])
    columns = check_seam(energy, brute_force_seam, backend="cpu")
    assert columns.tolist() == [1, 2, 1]  # the only seam of energy 3
    carved = seam.carve(energy, columns)
    assert carved.shape == (3, 2)
    assert carved.sum() == energy.sum() - seam_energy(energy, columns)
    for bad in (np.zeros((0, 3)), np.zeros(4)):
        with pytest.raises(InputError, match="energy"):
            seam.MinimumSeam(bad)


@pytest.mark.sim
def test_seam_cuda():
    energy = (np.arange(48.0).reshape(6, 8) * 7) % 10
    check_seam(energy, brute_force_seam, backend="cuda")


# ---------------------------------------------------------------------------------------------
# affine-gap alignment (Gotoh): the stateful traceback
# ---------------------------------------------------------------------------------------------


def gotoh_score(a, b, match, mismatch, gap_open, gap_extend) -> int:
    """Gotoh's three matrices in plain Python floats (-inf where no alignment ends that way)."""
    inf = float("inf")
    n, m = len(a), len(b)
    M = [[-inf] * (m + 1) for _ in range(n + 1)]
    X = [[-inf] * (m + 1) for _ in range(n + 1)]
    Y = [[-inf] * (m + 1) for _ in range(n + 1)]
    M[0][0] = 0
    for i in range(n + 1):
        for j in range(m + 1):
            if i:
                X[i][j] = max(M[i - 1][j] - gap_open - gap_extend, X[i - 1][j] - gap_extend)
            if j:
                Y[i][j] = max(M[i][j - 1] - gap_open - gap_extend, Y[i][j - 1] - gap_extend)
            if i and j:
                s = match if a[i - 1] == b[j - 1] else mismatch
                M[i][j] = max(M[i - 1][j - 1], X[i - 1][j - 1], Y[i - 1][j - 1]) + s
    return int(max(M[n][m], X[n][m], Y[n][m]))


def rescore(top, bottom, match, mismatch, gap_open, gap_extend) -> int:
    """The score of an alignment read column by column; a run of gaps in one row opens once."""
    total, prev = 0, None
    for x, y in zip(top, bottom, strict=True):
        assert not (x == "-" and y == "-")
        kind = "X" if y == "-" else "Y" if x == "-" else "M"
        if kind == "M":
            total += match if x == y else mismatch
        else:
            total -= gap_extend + (gap_open if kind != prev else 0)
        prev = kind
    return total


def check_gotoh(a, b, scores=(2, -1, 3, 1), **options):
    score, (top, bottom), stats = gotoh.align(a, b, *scores, **options)
    assert score == gotoh_score(a, b, *scores)
    assert top.replace("-", "") == a and bottom.replace("-", "") == b
    assert rescore(top, bottom, *scores) == score
    return stats


dna_short = st.text(alphabet="ACGT", max_size=14)


@settings(max_examples=60)
@given(dna_short, dna_short, st.sampled_from([(2, -1, 3, 1), (1, -1, 0, 1), (3, -2, 5, 0), (0, 0, 1, 1)]))
def test_gotoh_cpu_matches_reference(a, b, scores):
    check_gotoh(a, b, scores, backend="cpu")


@pytest.mark.sim
@pytest.mark.parametrize("a, b", [("GATTACA", "GCATGCT"), ("", "AC")])
def test_gotoh_cuda(a, b):
    assert check_gotoh(a, b, backend="cuda").backend == "cuda"


@settings(max_examples=5, deadline=None)
@given(st.lists(st.tuples(dna_short, dna_short), min_size=1, max_size=8))
def test_gotoh_batches_match_the_reference(pairs):
    """align_many: the record cell in sweep_many's kernels, each walk from its best matrix."""
    scores = (2, -1, 3, 1)
    out, stats = gotoh.align_many(pairs, *scores, backend="cpu")
    for (a, b), (score, (top, bottom)) in zip(pairs, out, strict=True):
        assert score == gotoh_score(a, b, *scores) == rescore(top, bottom, *scores)
        assert top.replace("-", "") == a and bottom.replace("-", "") == b
    assert stats.extra["batched"] == len(pairs)
    values, _ = gotoh.align_many(pairs, *scores, backend="cpu", traceback=False)
    assert values == [(score, None) for score, _ in out]


def test_gotoh_refuses_scores_its_fields_cannot_hold():
    with pytest.raises(ValueError, match="minus infinity"):
        gotoh.align("A" * 50_000_000, "A", backend="cpu")


def test_gotoh_cli(capsys):
    gotoh.main(["ACGTACGTTTTTACGT", "ACGTACGTACGT", "--backend", "cpu"])
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "score 17 (cpu backend, schedule: tiled anti-diagonals)",
        "ACGTACGTTTTTACGT",
        "ACGTACG----TACGT",
    ]
    gotoh.main(["--random", "3", "--length", "20", "--backend", "cpu"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("3 pairs of 20 aligned in") and out[1].startswith("pair 0: score ")
    score = int(out[1].split()[-1])
    assert rescore(out[2], out[3], 2, -1, 3, 1) == score


# ---------------------------------------------------------------------------------------------
# local alignment (Smith-Waterman): the whole-table reduction
# ---------------------------------------------------------------------------------------------


def smith_waterman_score(a, b, match, mismatch, gap) -> int:
    best, prev = 0, [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, 1):
            cur.append(max(0, prev[j - 1] + (match if x == y else mismatch), prev[j] - gap, cur[j - 1] - gap))
        best = max(best, *cur)
        prev = cur
    return best


def check_local(a, b, scores=(3, -3, 2), **options):
    match, mismatch, gap = scores
    score, (top, bottom), (i, j), stats = sw.align(a, b, *scores, **options)
    assert score == smith_waterman_score(a, b, *scores)
    ta, tb = top.replace("-", ""), bottom.replace("-", "")
    assert a[i : i + len(ta)] == ta and b[j : j + len(tb)] == tb  # substrings where it says
    rescored = sum(
        -gap if "-" in (x, y) else match if x == y else mismatch for x, y in zip(top, bottom, strict=True)
    )
    assert rescored == score
    return stats


@settings(max_examples=60)
@given(dna_short, dna_short, st.sampled_from([(3, -3, 2), (1, -1, 1), (2, -1, 0), (5, -4, 3)]))
def test_smith_waterman_cpu_matches_reference(a, b, scores):
    check_local(a, b, scores, backend="cpu")


@pytest.mark.sim
@pytest.mark.parametrize("a, b", [("TGTTACGG", "GGTTGACTA"), ("AAAA", "CCCC")])
def test_smith_waterman_cuda(a, b):
    assert check_local(a, b, backend="cuda").backend == "cuda"


def test_smith_waterman_cli(capsys):
    sw.main(["TGTTACGG", "GGTTGACTA", "--backend", "cpu"])
    assert capsys.readouterr().out.splitlines() == [
        "score 13 (cpu backend), a[1:] against b[1:]",
        "GTT-AC",
        "GTTGAC",
    ]


# ---------------------------------------------------------------------------------------------
# coin change: offsets from the instance's coins, dependencies as one tuple, a one-row line
# ---------------------------------------------------------------------------------------------

coins_ex = _load("coin_change")


def fewest_coins(coins, amount):
    """The textbook table in plain Python; None where no coins make the amount."""
    best = [0] + [None] * amount
    for j in range(1, amount + 1):
        got = [best[j - c] for c in coins if c <= j and best[j - c] is not None]
        best[j] = min(got) + 1 if got else None
    return best[amount]


def check_change(coins, amount, **options):
    count, used, stats = coins_ex.change(coins, amount, **options)
    assert count == fewest_coins(coins, amount)
    if count is None:
        assert used == []
    else:
        assert len(used) == count and sum(used) == amount and set(used) <= set(coins)
    assert (stats.extra["schedule"], stats.extra["plan"]) == ("columns", "line")
    return stats


COIN_SETS = [(1, 5, 10, 25), (3, 7), (2,), (4, 9, 13, 17, 31), (1, 21, 5, 10, 25, 50)]


@settings(max_examples=60)
@given(st.sampled_from(COIN_SETS), st.integers(0, 300))
def test_coin_change_cpu_matches_reference(coins, amount):
    check_change(coins, amount, backend="cpu")


@settings(max_examples=8)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=6, unique=True), st.integers(0, 200))
def test_coin_change_any_coin_set(coins, amount):
    check_change(coins, amount, backend="cpu")


def test_coin_change_known_amounts_and_errors(capsys):
    assert coins_ex.change([1, 5, 10, 21, 25], 63, backend="cpu")[:2] == (3, [21, 21, 21])
    assert coins_ex.change([2, 4], 7, backend="cpu")[:2] == (None, [])
    assert coins_ex.change([7], 0, backend="cpu")[:2] == (0, [])
    for bad, amount in (([], 5), ([0, 3], 5), ([3], -1), (list(range(1, 300)), 5)):
        with pytest.raises(InputError):
            coins_ex.CoinChange(bad, amount)
    coins_ex.main(["63", "--backend", "cpu"])
    out = capsys.readouterr().out.splitlines()
    assert out == ["3 coins (cpu backend, schedule: columns, line)", "21 + 21 + 21 = 63"]


@pytest.mark.sim
@pytest.mark.parametrize("coins, amount", [((1, 5, 10, 21, 25), 63), ((3, 7), 41), ((4, 6), 9)])
def test_coin_change_cuda(coins, amount):
    assert check_change(coins, amount, backend="cuda").backend == "cuda"


# ---------------------------------------------------------------------------------------------
# Viterbi: float64 layers, 16-bit decisions (more than 256 states)
# ---------------------------------------------------------------------------------------------

vit = _load("viterbi")


def viterbi_reference(log_init, log_trans, log_emit, obs):
    """Plain-Python Viterbi with the example's tie rule (the lowest best predecessor, the lowest
    best last state): the log-probability and the path."""
    n = len(log_init)
    score = [float(log_init[k] + log_emit[k, obs[0]]) for k in range(n)]
    back = []
    for x in obs[1:]:
        best = [max(range(n), key=lambda j, k=k: (score[j] + log_trans[j, k], -j)) for k in range(n)]
        score = [score[best[k]] + float(log_trans[best[k], k]) + float(log_emit[k, x]) for k in range(n)]
        back.append(best)
    k = max(range(n), key=lambda s: (score[s], -s))
    path = [k]
    for best in reversed(back):
        path.append(best[path[-1]])
    return score[k], path[::-1]


def path_log_probability(log_init, log_trans, log_emit, obs, path):
    total = log_init[path[0]] + log_emit[path[0], obs[0]]
    for t in range(1, len(obs)):
        total += log_trans[path[t - 1], path[t]] + log_emit[path[t], obs[t]]
    return float(total)


def check_viterbi(model, obs, **options):
    logp, path, stats = vit.decode(*model, obs, **options)
    want, want_path = viterbi_reference(*model, obs)
    assert path.tolist() == want_path and logp == pytest.approx(want, abs=1e-9)
    assert path_log_probability(*model, obs, path) == pytest.approx(logp, abs=1e-9)
    return path, stats


@settings(max_examples=50)
@given(st.integers(1, 6), st.integers(1, 3), st.integers(1, 7), st.integers(0, 2**32 - 1))
def test_viterbi_cpu_matches_reference(states, symbols, steps, seed):
    model = vit.random_model(states, symbols, seed)
    obs = np.random.default_rng(seed).integers(0, symbols, steps)
    check_viterbi(model, obs, backend="cpu")


@settings(max_examples=25)
@given(st.integers(1, 3), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_viterbi_path_beats_every_other_path(states, steps, seed):
    model = vit.random_model(states, 2, seed)
    obs = np.random.default_rng(seed).integers(0, 2, steps)
    path, _ = check_viterbi(model, obs, backend="cpu")
    best = max(path_log_probability(*model, obs, p) for p in itertools.product(range(states), repeat=steps))
    assert path_log_probability(*model, obs, path) == pytest.approx(best, abs=1e-9)


def many_state_model(n=300, steps=5):
    """A model whose likeliest path walks states above 255: decisions that 8 bits would truncate."""
    log_init, log_trans, log_emit = vit.random_model(n, 2, 11)
    for k in range(n - 60, n):
        log_trans[k, k - 7] += 30.0  # a near-certain step down to state k - 7
    log_init[n - 3] += 30.0
    return (log_init, log_trans, log_emit), np.random.default_rng(3).integers(0, 2, steps)


def test_viterbi_more_than_256_states_keeps_whole_decisions(capsys):
    model, obs = many_state_model()
    path, _ = check_viterbi(model, obs, backend="cpu")
    assert path.min() > 255  # every decision read back (a predecessor) is above 255
    vit.main(["--states", "300", "--steps", "6", "--backend", "cpu"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("log-probability") and len(out[1].split()) == 7
    with pytest.raises(InputError, match="obs"):
        vit.Viterbi(*model, [])


@pytest.mark.sim
def test_viterbi_cuda():
    model = vit.random_model(4, 3, 5)
    check_viterbi(model, np.array([0, 2, 1, 1, 0]), backend="cuda")
    model, obs = many_state_model(260, 2)
    path, stats = check_viterbi(model, obs, backend="cuda")
    assert stats.backend == "cuda" and path[0] == 257  # step 1's decision


# ---------------------------------------------------------------------------------------------
# 0/1 knapsack with weight and volume: two capacities flattened inside the class
# ---------------------------------------------------------------------------------------------

k2d = _load("knapsack_2d")


def knapsack_2d_reference(w, v, p, max_weight, max_volume):
    """Every subset of the items (the instances are tiny): the best profit."""
    best = 0
    for take in itertools.product((0, 1), repeat=len(w)):
        picked = [k for k in range(len(w)) if take[k]]
        if sum(w[k] for k in picked) <= max_weight and sum(v[k] for k in picked) <= max_volume:
            best = max(best, sum(p[k] for k in picked))
    return best


def check_knapsack_2d(w, v, p, max_weight, max_volume, **options):
    profit, taken, stats = k2d.pack(w, v, p, max_weight, max_volume, **options)
    assert profit == knapsack_2d_reference(w, v, p, max_weight, max_volume)
    assert taken == sorted(set(taken)) and all(0 <= t < len(w) for t in taken)
    assert sum(w[t] for t in taken) <= max_weight and sum(v[t] for t in taken) <= max_volume
    assert sum(p[t] for t in taken) == profit
    return stats


@st.composite
def knapsacks_2d(draw, max_items=7):
    n = draw(st.integers(1, max_items))
    items = st.lists(st.integers(0, 6), min_size=n, max_size=n)
    profits = st.lists(st.integers(0, 20), min_size=n, max_size=n)
    return draw(items), draw(items), draw(profits), draw(st.integers(0, 9)), draw(st.integers(0, 9))


@settings(max_examples=60)
@given(knapsacks_2d())
def test_knapsack_2d_cpu_matches_brute_force(inst):
    check_knapsack_2d(*inst, backend="cpu")


def test_knapsack_2d_flattening_and_cli(capsys):
    rec = k2d.Knapsack2D([3, 1], [1, 4], [5, 6], 7, 4)
    assert rec.layer_size(0) == 8 * 5 and rec.cell_of(7, 4) == 39 and rec.reach().tolist() == [16, 9]
    assert plan_sweep(rec, "cpu").n_units == 2
    for bad in (([], [], [], 3, 3), ([1], [1], [1], -1, 3), ([1, 2], [1], [1, 1], 3, 3)):
        with pytest.raises(InputError):
            k2d.Knapsack2D(*bad)
    k2d.main(["3,1,5", "1,4,6", "2,2,4", "--weight", "4", "--volume", "4", "--backend", "cpu"])
    assert capsys.readouterr().out.splitlines() == [
        "profit 6 (cpu backend), items [1]",
        "weight 1 of 4, volume 4 of 4",
    ]


@pytest.mark.sim
@pytest.mark.parametrize(
    "inst", [([3, 1, 2], [1, 4, 2], [5, 6, 4], 4, 4), ([1, 2, 3, 2], [2, 1, 1, 3], [3, 4, 5, 6], 5, 3)]
)
def test_knapsack_2d_cuda(inst):
    assert check_knapsack_2d(*inst, backend="cuda").backend == "cuda"


# ---------------------------------------------------------------------------------------------
# dynamic time warping: float64 cells, the warping path
# ---------------------------------------------------------------------------------------------

dtw = _load("dtw")


def dtw_reference(x, y):
    """The textbook table, row by row (the same additions as the cell: exact equality holds)."""
    inf = float("inf")
    prev = [inf] * (len(y) + 1)
    prev[0] = 0.0  # D(-1, -1)
    for i in range(len(x)):
        row = [inf]
        for j in range(len(y)):
            row.append(abs(float(x[i]) - float(y[j])) + min(prev[j + 1], row[j], prev[j]))
        prev = [inf] + row[1:]
    return prev[-1]


def check_dtw(x, y, **options):
    distance, path, stats = dtw.warp(x, y, **options)
    assert distance == dtw_reference(x, y)
    assert len(path) >= max(len(x), len(y))
    return stats


series = st.lists(st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False), min_size=1, max_size=12)


@settings(max_examples=60)
@given(series, series)
def test_dtw_cpu_matches_the_table(x, y):
    check_dtw(x, y, backend="cpu")


def test_dtw_edges_and_cli(capsys):
    assert check_dtw([2**53, -(2**53)], [0.5]).backend == "cpu"  # large magnitudes, one column
    assert check_dtw([0.0], [0.0]) is not None
    for bad in ([], [[1.0]], [1.0, float("nan")], [float("inf")]):
        with pytest.raises(InputError):
            dtw.warp(bad, [1.0])
    dtw.main(["1,2,3,3,5", "1,3,5", "--backend", "cpu"])
    assert capsys.readouterr().out.splitlines() == [
        "distance 1 (cpu backend), path of 5 steps",
        "(0,0) (1,0) (2,1) (3,1) (4,2)",
    ]


@pytest.mark.sim
def test_dtw_cuda():
    rng = np.random.default_rng(4)
    for n, m in ((5, 7), (9, 4)):
        assert check_dtw(rng.normal(size=n), rng.normal(size=m), backend="cuda").backend == "cuda"


# ---------------------------------------------------------------------------------------------
# read pairs: batches of LCS lengths and edit distances from host, page-locked or GPU memory
# ---------------------------------------------------------------------------------------------

rp = _load("read_pairs")


def _read_pairs_reference(a, b):
    from test_lcs import lcs_length  # the textbook table, in pure Python

    pairs = [(x.tobytes().decode(), y.tobytes().decode()) for x, y in zip(a, b, strict=True)]
    return [lcs_length(x, y) for x, y in pairs], [levenshtein(x, y) for x, y in pairs]


def test_read_pairs_on_the_cpu(capsys):
    a, b = rp.reads(25, 30, seed=3)
    assert a.shape == b.shape == (25, 30) and set(np.unique(a)) <= set(b"ACGT")
    assert 0 < (a != b).mean() < 0.2  # about 5% substituted
    want = _read_pairs_reference(a, b)
    for where in ("host", "arrow", "strs"):  # (pyarrow and stringzilla are in the test extra)
        lengths, distances, _ = rp.solve(*rp.place(a, b, where), backend="cpu")
        assert (lengths.tolist(), distances.tolist()) == want
    rp.main(["--pairs", "20", "--length", "12", "--backend", "cpu"])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "20 pairs of 12 bases (host):" and "LCS lengths" in out[1] and "edit distances" in out[2]
    with pytest.raises(ValueError, match="where"):
        rp.place(a, b, "disk")


@pytest.mark.sim
@pytest.mark.parametrize("where", ["page-locked", "gpu"], ids=["locked", "device"])  # not "gpu": a marker
def test_read_pairs_from_page_locked_and_gpu_memory(where):
    a, b = rp.reads(6, 20, seed=4)
    lengths, distances, _ = rp.solve(*rp.place(a, b, where), backend="cuda")
    assert (lengths.tolist(), distances.tolist()) == _read_pairs_reference(a, b)


# ---------------------------------------------------------------------------------------------
# cross products: every query against every choice
# ---------------------------------------------------------------------------------------------

cd = _load("cdist")


def test_cdist_example_on_the_cpu(capsys):
    queries, choices = cd.words((4, 6), 10, seed=1)
    assert len(queries) == 4 and len(choices) == 6 and all(8 <= len(c) <= 12 for c in choices)
    cd.main(["--queries", "4", "--choices", "6", "--length", "10", "--cutoff", "3", "--backend", "cpu"])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "4 queries x 6 choices of about 10 letters:"
    assert "LCS lengths (4, 6) int32" in out[1] and "edit distances (4, 6) int32" in out[2]
    for line in out[3:]:  # each query's nearest choice is within its ~10% of substitutions
        q, c = re.findall(r"'([a-z]*)'", line)
        assert f"distance {min(levenshtein(q, c), 4)}," in line


# ---------------------------------------------------------------------------------------------
# examples/banded_alignment.py
# ---------------------------------------------------------------------------------------------

banded = load_example("banded_alignment")


def banded_ref(a: str, b: str, w: int, match=1, mismatch=-1, gap=1) -> int:
    """Needleman-Wunsch over the cells with |i - j| <= w only (the others unreachable), row -1
    and column -1 the gaps' prefixes, in plain Python."""
    n, m, low = len(a), len(b), float("-inf")
    D = {(-1, j): -(j + 1) * gap for j in range(-1, m)} | {(i, -1): -(i + 1) * gap for i in range(n)}
    for i in range(n):
        for j in range(m):
            if abs(i - j) > w:
                D[i, j] = low
                continue
            s = match if a[i] == b[j] else mismatch
            D[i, j] = max(D[i - 1, j - 1] + s, D[i - 1, j] - gap, D[i, j - 1] - gap)
    return D[n - 1, m - 1]


def _alignment_score(top: str, bottom: str, match=1, mismatch=-1, gap=1) -> int:
    return sum(
        -gap if "-" in (x, y) else match if x == y else mismatch for x, y in zip(top, bottom, strict=True)
    )


@st.composite
def banded_case(draw, most=14):
    a = draw(st.text("ACG", max_size=most))
    b = draw(st.text("ACG", max_size=most))
    return a, b, draw(st.integers(abs(len(a) - len(b)), max(len(a), len(b), 1) + 2))


def _check_banded(a, b, w, **opts):
    score, top, bottom, _ = banded.align(a, b, w, progress=False, **opts)
    assert score == banded_ref(a, b, w), (a, b, w)
    assert top.replace("-", "") == a and bottom.replace("-", "") == b
    assert _alignment_score(top, bottom) == score
    # every column of the alignment inside the band: a[i] or b[j] at most w apart
    i = j = -1
    for x, y in zip(top, bottom, strict=True):
        i, j = i + (x != "-"), j + (y != "-")
        assert abs(i - j) <= w or min(i, j) < 0


@settings(max_examples=40, deadline=None)
@given(banded_case())
def test_banded_alignment_cpu_matches_the_banded_reference(case):
    _check_banded(*case, backend="cpu")


def test_banded_alignment_wide_band_is_the_full_table_and_narrow_is_refused(capsys):
    ga = load_example("many_alignments").GlobalAlignment
    a, b = "GATTACAGATTACA", "GATTTACAGATACA"
    full = gpudp_sweep(ga(a, b), backend="cpu").last_row[-1]
    assert banded.align(a, b, 14, backend="cpu")[0] == full
    with pytest.raises(ValueError, match="cannot reach"):
        banded.align("ACGTACGT", "AC", 3)
    banded.main([a, b, "--band", "2", "--backend", "cpu"])
    assert capsys.readouterr().out.splitlines() == [
        "score 11 within a band of 2",
        "GA-TTACAGATTACA",
        "GATTTACAGA-TACA",
    ]


@pytest.mark.sim
@settings(max_examples=4, deadline=None)
@given(banded_case(most=6))
def test_banded_alignment_cuda_matches_the_banded_reference(case):
    _check_banded(*case, backend="cuda")


# ---------------------------------------------------------------------------------------------
# examples/cyk_parse.py: a tree whose nodes carry a state (the nonterminal), against plain-Python CYK
# ---------------------------------------------------------------------------------------------

cyk = load_example("cyk_parse")


def cyk_sets(grammar, words) -> dict:
    """Plain-Python CYK: the set of nonterminals (indices) deriving each interval ``(i, j)``."""
    n, N = len(words), {}
    for i, w in enumerate(words):
        N[i, i] = set(grammar.lexicon[w])
    for length in range(2, n + 1):
        for i in range(n - length + 1):
            j = i + length - 1
            N[i, j] = {
                int(a)
                for k in range(i, j)
                for a, b, c in grammar.binary.tolist()
                if b in N[i, k] and c in N[k + 1, j]
            }
    return N


def check_parse_tree(grammar, words, rows) -> None:
    """``rows`` (preorder ``(i, j, decision, nonterminal)``) is a parse tree of ``words`` from the
    start symbol: every node's rule is in the grammar, the children split their parent, and the
    leaves spell the words in order."""
    rules = {tuple(r) for r in grammar.binary.tolist()}
    rows = [tuple(int(x) for x in r) for r in rows]
    leaves, at = [], [0]

    def node(i, j, a):
        assert at[0] < len(rows) and rows[at[0]] == (i, j, 0, a), (rows, at[0], (i, j, a))
        at[0] += 1
        if i == j:
            assert a in grammar.lexicon[words[i]]  # a -> word i
            leaves.append(words[i])
            return
        li, lj, _, b = rows[at[0]]
        assert li == i and i <= lj < j, (rows, at[0])
        node(li, lj, b)
        ri, rj, _, c = rows[at[0]]
        assert ri == lj + 1 and rj == j and (a, b, c) in rules, (i, j, a, b, c)
        node(ri, rj, c)

    node(0, len(words) - 1, 0)
    assert at[0] == len(rows) and leaves == list(words)


def check_cyk(grammar, words, **options) -> bool:
    tree, stats = cyk.parse(grammar, words, progress=False, **options)
    member = bool(words) and 0 in cyk_sets(grammar, words)[0, len(words) - 1]
    assert (tree is not None) == member, (words, member)
    if member:
        check_parse_tree(grammar, words, tree)
    return member


@st.composite
def cnf_grammars(draw):
    """A random grammar in Chomsky normal form over the words a, b, c: 1 to 5 nonterminals, each with
    at least one rule (binary rules among them, or a word); the start is N0."""
    m = draw(st.integers(1, 5))
    lines = []
    for a in range(m):
        rule = st.one_of(
            st.tuples(st.integers(0, m - 1), st.integers(0, m - 1)).map(lambda bc: f"N{bc[0]} N{bc[1]}"),
            st.sampled_from("abc"),
        )
        bodies = draw(st.lists(rule, min_size=1, max_size=4, unique=True))
        lines.append(f"N{a} -> " + " | ".join(bodies))
    if not any(len(body.split()) == 1 for line in lines for body in line.split("->")[1].split("|")):
        lines[-1] += " | a"  # a word at least: else no sentence to parse
    return cyk.Grammar("\n".join(lines))


def derive(grammar, rng, a: int, depth: int) -> list:
    """Words the nonterminal ``a`` derives, by random rules (a word likelier the deeper, always at
    ``depth`` 0); [] when ``a`` derives nothing short enough."""
    words = [w for w, heads in grammar.lexicon.items() if a in heads]
    pairs = [(b, c) for h, b, c in grammar.binary.tolist() if h == a]
    if words and (depth <= 0 or not pairs or rng.random() < 0.1 * (6 - depth)):
        return [rng.choice(sorted(words))]
    if not pairs or depth < -4:
        return []
    b, c = rng.choice(pairs)
    left, right = derive(grammar, rng, b, depth - 1), derive(grammar, rng, c, depth - 1)
    return left + right if left and right else []


@settings(max_examples=60, deadline=None)
@given(cnf_grammars(), st.data())
def test_cyk_cpu_matches_plain_python_cyk(grammar, data):
    """Membership as plain-Python CYK says, and a valid parse tree, for random strings and for
    strings the grammar derives (so that most of the latter are members)."""
    vocab = sorted(grammar.lexicon)
    words = data.draw(st.lists(st.sampled_from(vocab), min_size=1, max_size=9))
    check_cyk(grammar, words, backend="cpu")
    derived = derive(grammar, random.Random(data.draw(st.integers(0, 2**32))), 0, 5)
    if derived and len(derived) <= 12:
        assert check_cyk(grammar, derived, backend="cpu")


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from("()"), min_size=1, max_size=12))
def test_cyk_parens_is_balance(text):
    grammar = cyk.Grammar(cyk.PARENS)
    depth, balanced = 0, True
    for c in text:
        depth += 1 if c == "(" else -1
        balanced &= depth >= 0
    assert check_cyk(grammar, list(text), backend="cpu") == (balanced and depth == 0)


def test_cyk_english_and_its_cli(capsys):
    grammar = cyk.Grammar(cyk.ENGLISH)
    words = "the man saw a dog with a telescope".split()
    assert check_cyk(grammar, words, backend="cpu")
    tree, _ = cyk.parse(grammar, words, backend="cpu")
    assert cyk.bracketed(tree, grammar.names, words) == (
        "(S (NP (Det the) (N man)) (VP (V saw) (NP (NP (Det a) (N dog)) (PP (P with) (NP (Det a) "
        "(N telescope))))))"
    )
    assert not check_cyk(grammar, ["saw", "the"], backend="cpu")
    cyk.main(["john", "slept", "--backend", "cpu"])
    out = capsys.readouterr().out.splitlines()
    assert out == ["parsed 2 words (cpu backend)", "(S (NP john) (VP slept))"]
    with pytest.raises(SystemExit) as out:
        cyk.main(["mary", "the", "--backend", "cpu"])
    assert out.value.code == 1 and capsys.readouterr().out == "not in the language (cpu backend)\n"
    with pytest.raises(SystemExit) as out:
        cyk.main(["a", "cat", "--backend", "cpu"])
    assert out.value.code == 2 and "no rule derives the word 'cat'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="not A -> B C nor A -> word"):
        cyk.Grammar("S -> A B C")


@pytest.mark.sim
@settings(max_examples=4, deadline=None)
@given(st.lists(st.sampled_from(["john", "mary", "saw", "slept", "the", "dog"]), min_size=1, max_size=4))
def test_cyk_cuda_matches_plain_python_cyk(words):
    check_cyk(cyk.Grammar(cyk.ENGLISH), words, backend="cuda")


@pytest.mark.sim
def test_cyk_cuda_parses_a_sentence():
    assert check_cyk(cyk.Grammar(cyk.ENGLISH), ["john", "saw", "the", "dog"], backend="cuda")


# ---------------------------------------------------------------------------------------------
# examples/floyd_warshall.py: 2-D layers and a traceback that splits
# ---------------------------------------------------------------------------------------------

fw = load_example("floyd_warshall")
INF = fw.INF


def fw_ref(w: np.ndarray) -> list[list[int]]:
    """Floyd-Warshall in plain Python."""
    n = len(w)
    d = [[int(x) for x in row] for row in w]
    for k in range(n):
        for i in range(n):
            for j in range(n):
                d[i][j] = min(d[i][j], d[i][k] + d[k][j])
    return d


@st.composite
def graphs(draw, most=7):
    n = draw(st.integers(1, most))
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.integers(0, 9))))
    return fw.weights(n, edges)


def check_fw(w, **opts):
    res = fw.shortest_paths(w, progress=False, **opts)
    ref = fw_ref(w)
    assert res.last_layer.shape == w.shape
    assert res.last_layer.tolist() == ref
    n = len(w)
    for u in range(n):
        for v in range(n):
            p = fw.path(res, u, v)
            if ref[u][v] >= INF:
                assert p == []
                continue
            assert p[0] == u and p[-1] == v
            assert len(set(p)) == len(p)  # simple
            assert sum(int(w[a, b]) for a, b in zip(p, p[1:], strict=False)) == ref[u][v]
    return res


@settings(max_examples=40)
@given(graphs())
def test_floyd_warshall_cpu_matches_reference(w):
    check_fw(w, backend="cpu")


@settings(max_examples=15)
@given(graphs(5))
def test_floyd_warshall_bands_codec_and_checked_mode(w):
    res = check_fw(w, backend="cpu", codec="bands")
    assert res.stats.extra["decision_codec"] == "bands"
    checked = gpudp_sweep(fw.FloydWarshall(w), backend="cpu", check=True, progress=False)
    assert np.array_equal(checked.last_layer, res.last_layer)


@pytest.mark.sim
def test_floyd_warshall_cuda():
    w = fw.weights(4, [(0, 1, 5), (1, 2, 1), (0, 2, 9), (2, 3, 2), (3, 0, 1)])
    res = check_fw(w, backend="cuda")
    assert res.stats.backend == "cuda"


def test_the_example_prints_the_path(capsys):
    fw.main(["--backend", "cpu"])
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "shortest 0 -> 4: 7, via 0 -> 2 -> 1 -> 3 -> 4"
