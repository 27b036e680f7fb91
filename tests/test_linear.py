"""Tracebacks from checkpoints (gpudp.checkpoints): the same values and paths as the full store.

Every case sweeps the same recurrence twice, ``store="full"`` and ``store="checkpoints"`` with
small tiles and blocks so that paths cross many blocks, and compares the last row and column, the
reduction, the decisions and the walk back.
"""

from __future__ import annotations

import numpy as np
import pytest
from examples_loader import load_example
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import ContractError, GridRecurrence, InputError, sweep
from gpudp.checkpoints import CheckpointResult, checkpoint_bytes, choose_every
from gpudp.problems import lcs
from gpudp.problems.edit_distance import Levenshtein
from gpudp.problems.lcs import LCSRecurrence

sw = load_example("local_alignment")
gotoh = load_example("affine_alignment")

TILE = (32, 32)


def _both(rec, every, backend="cpu", tile=TILE):
    full = sweep(rec, backend=backend, store="full", tile=tile)
    ck = sweep(rec, backend=backend, store="checkpoints", tile=tile, checkpoint_every=every)
    assert isinstance(ck, CheckpointResult)
    assert np.array_equal(full.last_row, ck.last_row) and np.array_equal(full.last_col, ck.last_col)
    assert (full.best_value, full.best_cell) == (ck.best_value, ck.best_cell)
    return full, ck


def _same_walk(full, ck, start, state=None):
    want = full.traceback(start, state=state)
    got = ck.traceback(start, state=state)
    assert got.dtype == np.int64 and np.array_equal(want, got), (start, want[:5], got[:5])
    return got


dna = st.integers(1, 150).flatmap(lambda n: st.lists(st.sampled_from(b"ACGT"), min_size=n, max_size=n))


@settings(max_examples=8)
@given(a=dna, b=dna, every=st.sampled_from([32, 64]))
def test_lcs_paths_equal_the_full_store(a, b, every):
    a, b = np.array(a, np.uint8), np.array(b, np.uint8)
    full, ck = _both(LCSRecurrence(a, b), every)
    path = _same_walk(full, ck, (len(a) - 1, len(b) - 1))
    tb = ck.stats.extra["traceback"]
    crossed = {(i // every, j // every) for i, j in path[:, :2]}
    assert 1 <= tb["rounds"] <= len(crossed) and tb["blocks"] >= len(crossed)  # each swept at least once
    i, j = path[-1, :2]
    assert ck.decision(i, j) == full.decision(i, j)


def test_decisions_of_one_block_sweep_it_once(monkeypatch):
    """``decision()`` of every cell, block by block: each block swept again once, every decision the
    full store's."""
    rng = np.random.default_rng(9)
    a, b = rng.integers(0, 4, 70).astype(np.uint8), rng.integers(0, 4, 90).astype(np.uint8)
    full, ck = _both(LCSRecurrence(a, b), 32)
    swept = []
    real = ck._sweep_blocks
    monkeypatch.setattr(ck, "_sweep_blocks", lambda blocks: swept.append(len(blocks)) or real(blocks))
    got = [
        [ck.decision(i, j) for j in range(bj, min(bj + 32, 90))]
        for bi in range(0, 70, 32)
        for bj in range(0, 90, 32)
        for i in range(bi, min(bi + 32, 70))
    ]
    want = [
        [full.decision(i, j) for j in range(bj, min(bj + 32, 90))]
        for bi in range(0, 70, 32)
        for bj in range(0, 90, 32)
        for i in range(bi, min(bi + 32, 70))
    ]
    assert got == want
    assert swept == [1] * 9  # 3 x 3 blocks


@settings(max_examples=8)
@given(a=st.text("ACGT", min_size=1, max_size=120), b=st.text("ACGT", min_size=1, max_size=120))
def test_edit_distance_boundary_is_the_grids_own(a, b):
    """Levenshtein's boundary (i + 1 / j + 1) matters at the grid's edges, not at the blocks'."""
    rec = Levenshtein(np.frombuffer(a.encode(), np.uint8), np.frombuffer(b.encode(), np.uint8))
    full, ck = _both(rec, 32)
    _same_walk(full, ck, (len(a) - 1, len(b) - 1))


@settings(max_examples=8)
@given(a=st.text("ACGT", min_size=1, max_size=110), b=st.text("ACGT", min_size=1, max_size=110))
def test_smith_waterman_walks_from_the_best_cell(a, b):
    full, ck = _both(sw.SmithWaterman(a, b), 32)
    if full.best_value > 0:
        _same_walk(full, ck, full.best_cell)
    assert (
        sw.align(a, b, backend="cpu", store="checkpoints", tile=TILE, checkpoint_every=32)[:3]
        == sw.align(a, b, backend="cpu", tile=TILE)[:3]
    )


@settings(max_examples=6)
@given(a=st.text("ACGT", min_size=1, max_size=100), b=st.text("ACGT", min_size=1, max_size=100))
def test_gotoh_stateful_walk(a, b):
    full, ck = _both(gotoh.Gotoh(a, b), 32)
    for state in (0, 1, 2):
        _same_walk(full, ck, (len(a), len(b)), state=state)


@pytest.mark.parametrize("reach, most, sides", [(1, 2, 1), (2, 3, 1), (0, 1, 1), (2, 12, 2), (1, 30, 3)])
def test_rounds_of_few_blocks(monkeypatch, reach, most, sides):
    """Rounds that look one or two blocks ahead, or sweep one block, in bands one to three half
    blocks wide on either side of the path's line: the walk leaves each round at a block it did
    not sweep, and the next round starts there; the paths (LCS, Smith-Waterman from its best cell,
    Gotoh with a state) are the full store's, whatever the band."""
    import gpudp.checkpoints as checkpoints
    from gpudp import backends

    monkeypatch.setattr(checkpoints, "ROUND_REACH", reach)
    monkeypatch.setattr(checkpoints, "ROUND_BLOCKS", most)
    monkeypatch.setattr(type(backends.get("cpu")), "round_sides", sides)
    rng = np.random.default_rng(8)
    a, b = rng.integers(0, 4, 150).astype(np.uint8), rng.integers(0, 4, 200).astype(np.uint8)
    full, ck = _both(LCSRecurrence(a, b), 32)
    path = _same_walk(full, ck, (149, 199))
    crossed = {(i // 32, j // 32) for i, j in path[:, :2]}
    assert ck.stats.extra["traceback"]["rounds"] >= len(crossed) / most
    s, t = ("".join(rng.choice(list("ACGT"), n)) for n in (140, 120))
    full, ck = _both(sw.SmithWaterman(s, t), 32)
    _same_walk(full, ck, full.best_cell)
    full, ck = _both(gotoh.Gotoh(s[:90], t[:100]), 32)
    _same_walk(full, ck, (90, 100), state=1)


def test_first_round_looks_a_little_ahead():
    """A short local alignment (unrelated sequences but for 24 shared symbols near their ends; a
    gap dearer than a mismatch, so that unrelated symbols score below 0 on average): the
    walk ends in the first round, which sweeps the blocks within ROUND_FIRST_REACH of the start, not
    the ROUND_REACH of later rounds (the grid's 100 blocks up and to the left); the path is the full
    store's. A path longer than the first round goes on in rounds of the full reach."""
    import gpudp.checkpoints as checkpoints
    from gpudp import backends

    rng = np.random.default_rng(3)
    a, b = ("".join(rng.choice(list("ACGT"), 300)) for _ in range(2))
    same = "".join(rng.choice(list("ACGT"), 24))
    a, b = a[:270] + same + a[294:], b[:268] + same + b[292:]
    full, ck = _both(sw.SmithWaterman(a, b, 3, -3, 6), 32)  # gaps dearer than a mismatch: local
    path = _same_walk(full, ck, full.best_cell)
    assert len(path) < 64
    sides, reach = backends.get("cpu").round_sides, checkpoints.ROUND_FIRST_REACH
    tb = ck.stats.extra["traceback"]
    assert tb["rounds"] == 1 and tb["blocks"] <= 1 + 2 * (2 * sides + 1) * reach, tb
    # writable arrays, as test_lcs_paths_equal_the_full_store's: the same kernels (read-only ones,
    # from np.frombuffer, are another numba type, compiled again; test_edit_distance_boundary_...'s)
    a, b = (np.frombuffer(s.encode(), np.uint8).copy() for s in (a, b))
    full, ck = _both(LCSRecurrence(a, b), 32)
    _same_walk(full, ck, (299, 299))
    tb = ck.stats.extra["traceback"]
    assert tb["rounds"] >= 2 and tb["blocks"] > 1 + 2 * (2 * sides + 1) * reach, tb


def test_forward_sweep_keeps_the_plans_tile(monkeypatch):
    """A backend may give a class without decisions (the checkpoints' values-only forward sweep)
    wider tiles than the class with them (cuda does); the forward sweep keeps the tile the
    checkpoints' spacing was chosen for, so every K-th column is written, and the path is the full
    store's."""
    from gpudp import backends

    cpu = type(backends.get("cpu"))
    plain = cpu.tile_for
    monkeypatch.setattr(
        cpu, "tile_for", lambda self, cls: plain(self, cls) if cls.decision_bits else (32, 64)
    )
    monkeypatch.setattr(cpu, "default_tile", (32, 32))
    rng = np.random.default_rng(11)
    a, b = rng.integers(0, 4, 150).astype(np.uint8), rng.integers(0, 4, 200).astype(np.uint8)
    full = sweep(LCSRecurrence(a, b), backend="cpu", store="full")
    ck = sweep(LCSRecurrence(a, b), backend="cpu", store="checkpoints", checkpoint_every=32)
    assert ck.every == 32
    _same_walk(full, ck, (149, 199))


def test_contract_errors_in_rounds():
    """A decision that does not fit (never checked by the forward sweep, which keeps none) and a
    back that does not step back are reported from the rounds as from the full store."""

    class Wide(GridRecurrence):
        decision_bits = 1
        offsets = ((-1, 0), (0, -1), (-1, -1))

        def shape(self):
            return (40, 40)

        @staticmethod
        def cell(i, j, up, left, diag):
            return up + 1, 2 if (i, j) == (35, 3) else 1

        @staticmethod
        def back(i, j, d):
            return (i, j) if (i, j) == (5, 5) else (i - 1, j - 1)

    ck = sweep(Wide(), backend="cpu", tile=TILE, store="checkpoints", checkpoint_every=32)
    with pytest.raises(ContractError, match="decision 2 at .* = \\(35, 3\\).*decision_bits = 1"):
        ck.traceback((39, 39))
    with pytest.raises(ContractError, match="back\\(5, 5, 1\\) returned \\(5, 5\\)"):
        ck.traceback((20, 20))


def test_one_block_and_thin_grids():
    rng = np.random.default_rng(3)
    for n, m in ((1, 300), (300, 1), (64, 64), (65, 64), (64, 65)):
        a, b = rng.integers(0, 4, n).astype(np.uint8), rng.integers(0, 4, m).astype(np.uint8)
        full, ck = _both(LCSRecurrence(a, b), 64)
        _same_walk(full, ck, (n - 1, m - 1))


def test_a_closed_result_says_so():
    """After ``close()`` a traceback or a decision is a ContractError saying the result was closed,
    for either store (the full store's was a numba TypingError, the checkpoints' a TypeError)."""
    a = np.random.default_rng(5).integers(0, 4, 70).astype(np.uint8)
    for res in _both(LCSRecurrence(a, a[::-1].copy()), 32):
        res.close()
        with pytest.raises(ContractError, match="result was closed"):
            res.traceback((69, 69))
        with pytest.raises(ContractError, match="result was closed"):
            res.decision(3, 4)


def test_lcs_solve_with_checkpoints_and_auto():
    rng = np.random.default_rng(4)
    a, b = rng.integers(0, 4, 700).astype(np.uint8), rng.integers(0, 4, 650).astype(np.uint8)
    want = lcs.solve(a, b, backend="cpu", store="full")
    got = lcs.solve(a, b, backend="cpu", store="checkpoints", checkpoint_every=512)
    assert got.value == want.value and np.array_equal(got.solution, want.solution)
    assert got.stats.extra["store"] == "checkpoints"
    # auto: a budget the full store (57 KB) does not fit takes checkpoints
    auto = lcs.solve(a, b, backend="cpu", memory_budget=20_000, method="wavefront")
    assert auto.stats.extra["store"] == "checkpoints" and auto.value == want.value
    assert "store" not in lcs.solve(a, b, backend="cpu", method="wavefront").stats.extra  # fits: full
    # the reason auto gave stays the solve's (the forward sweep itself was asked for a backend)
    chosen = lcs.solve(a, b, store="checkpoints", checkpoint_every=512).stats.extra["backend_choice"]
    assert chosen.startswith("auto: ")


def test_auto_takes_checkpoints_above_the_full_store_cap(monkeypatch):
    """A full store that fits the budget but holds more decisions than the cap: checkpoints (a
    large store costs more to copy and page-lock than the path's blocks cost to sweep again)."""
    from gpudp import backends

    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 4, 300).astype(np.uint8), rng.integers(0, 4, 280).astype(np.uint8)
    want = lcs.solve(a, b, backend="cpu", store="full")
    monkeypatch.setattr(backends.get("cpu"), "full_store_max", 1024)
    got = lcs.solve(a, b, backend="cpu", method="wavefront")
    assert got.stats.extra["store"] == "checkpoints"
    assert got.value == want.value and np.array_equal(got.solution, want.solution)
    assert "store" not in lcs.solve(a, b, backend="cpu", store="full").stats.extra


def test_choose_every_and_memory_figures():
    rec = LCSRecurrence(np.zeros(5000, np.uint8), np.zeros(3000, np.uint8))
    from gpudp.engine import plan_sweep

    plan = plan_sweep(rec, "cpu", (32, 32))
    assert choose_every(plan, memory_budget=1 << 40) == 512  # DEFAULT_EVERY
    assert checkpoint_bytes(5000, 3000, 512, 4) == 208_000
    assert choose_every(plan, memory_budget=1 << 20) == 512  # within a quarter of the budget
    assert choose_every(plan, memory_budget=1 << 19) == 1024  # doubled until they are
    assert choose_every(plan_sweep(rec, "cpu", (96, 32)), memory_budget=1 << 40) == 576  # the tile's
    assert checkpoint_bytes(5000, 3000, 1000, 4) == (4 * 3000 + 2 * 5000) * 4
    with pytest.raises(InputError, match="multiple of the tile"):
        choose_every(plan, every=48)
    with pytest.raises(InputError, match="the checkpoints of .* needed, over the memory budget"):
        sweep(
            rec, backend="cpu", tile=(32, 32), store="checkpoints", checkpoint_every=32, memory_budget=10_000
        )


class Skewed(GridRecurrence):
    """Offsets off the tiled schedule (three columns back: more than gpudp.grid.wide carries): swept
    by layers, so no checkpoints."""

    decision_bits = 1
    offsets = ((-1, 0), (-1, -3))

    def shape(self):
        return (4, 4)

    @staticmethod
    def cell(i, j, a, b):
        return max(a, b) + 1, 0

    @staticmethod
    def back(i, j, d):
        return i - 1, j


def test_refusals():
    with pytest.raises(InputError, match="tiled schedule"):
        sweep(Skewed(), backend="cpu", store="checkpoints")
    # a layered recurrence with deps and no offsets: the same refusal (was an AttributeError on
    # the class's offsets, in the refusal's own message)
    from gpudp.problems.tsp.recurrence import HeldKarp

    d = np.arange(16).reshape(4, 4)
    with pytest.raises(InputError, match="HeldKarp: .* tiled schedule.* it runs on the layered plan"):
        sweep(HeldKarp(d, "position", np.int32), backend="cpu", store="checkpoints")
    assert sweep(Skewed(), backend="cpu").store is not None  # auto: the full store
    with pytest.raises(InputError, match="store"):
        sweep(Skewed(), backend="cpu", store="disk")
    ck = sweep(
        LCSRecurrence(np.zeros(3, np.uint8), np.zeros(3, np.uint8)), backend="cpu", store="checkpoints"
    )
    with pytest.raises(IndexError):
        ck.traceback((3, 0))
    with pytest.raises(ContractError, match="traceback_state = False"):
        ck.traceback((2, 2), state=1)


@pytest.mark.sim
def test_cuda_checkpoints_and_blocks_in_the_simulator(monkeypatch):
    """The CUDA kernels' checkpoint copies and a block swept again on the device (tiny: simulated)."""
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 4, 34).astype(np.uint8), rng.integers(0, 4, 33).astype(np.uint8)
    rec = LCSRecurrence(a, b)
    full = sweep(rec, backend="cpu", store="full", tile=(32, 32))
    ck = sweep(rec, backend="cuda", store="checkpoints", tile=(32, 32), checkpoint_every=32)
    cpu = sweep(rec, backend="cpu", store="checkpoints", tile=(32, 32), checkpoint_every=32)
    for dev, host in zip(ck._edges, cpu._edges, strict=True):  # checkpoints (on the device), boundary
        assert np.array_equal(dev if isinstance(dev, np.ndarray) else dev.copy_to_host(), host)
    assert np.array_equal(full.traceback((33, 32)), ck.traceback((33, 32)))
    assert ck.decision(20, 31) == full.decision(20, 31)
    # a record cell with a state: the cpu's forward sweep (the simulated tiled kernel would take a
    # minute), its blocks swept again by the CUDA kernel
    from gpudp import backends

    s, t = "".join(rng.choice(list("ACGT"), 35)), "".join(rng.choice(list("ACGT"), 33))
    full = sweep(gotoh.Gotoh(s, t), backend="cpu", store="full", tile=(32, 32))
    ck = sweep(gotoh.Gotoh(s, t), backend="cpu", store="checkpoints", tile=(32, 32), checkpoint_every=32)
    ck._runner = backends.get("cuda")
    assert np.array_equal(full.traceback((35, 33), state=2), ck.traceback((35, 33), state=2))
    assert ck.stats.extra["traceback"]["blocks"] >= 2
    monkeypatch.setattr("gpudp.backends.cuda.blocks.RETRACE_SHARED", 0)  # diagonals in device memory
    ck._context = {}
    assert np.array_equal(full.traceback((35, 33), state=1), ck.traceback((35, 33), state=1))
    # one block of 64 holding the 36 x 34 grid: diagonals of two groups of 32, a block short of K
    ck = sweep(gotoh.Gotoh(s, t), backend="cpu", store="checkpoints", tile=(32, 32), checkpoint_every=64)
    ck._runner = backends.get("cuda")
    assert np.array_equal(full.traceback((35, 33), state=0), ck.traceback((35, 33), state=0))


def test_round_bands_grow_with_their_sides():
    """A round's band: distinct blocks, nearest first, the walk's block first, inside the grid
    up-left of it; a wider band holds the narrower one's blocks."""
    from gpudp.checkpoints.blocks import band as round_band

    for i, j, slope in [(5000, 4000, 1.2), (300, 9000, 0.05), (9000, 30, 40.0), (0, 0, 1.0)]:
        bands = [round_band(i, j, slope, 64, 20, 10_000, sides) for sides in (1, 2, 3)]
        for band in bands:
            keys = [tuple(x) for x in band]
            assert keys[0] == (i // 64, j // 64) and len(set(keys)) == len(keys)
            assert (band[:, 0] <= i // 64).all() and (band[:, 1] <= j // 64).all() and (band >= 0).all()
        for narrow, wide in zip(bands[:-1], bands[1:], strict=True):
            assert {tuple(x) for x in narrow} <= {tuple(x) for x in wide} and len(wide) >= len(narrow)
    assert len(round_band(5000, 4000, 1.2, 64, 20, 7, 3)) == 7  # the round's limit


@pytest.mark.parametrize("k", [1, 5, 32, 33, 64])
@pytest.mark.parametrize("bits", [1, 3])
def test_block_decision_reads_both_layouts(k, bits):
    """Decisions packed into a block's bit planes (each cell's bits at the place
    ``gpudp.codegen.block_decision`` describes, set one by one here) read back cell by cell, for
    blocks short of ``k`` too; every cell has its own bits; the row-major layout reads back."""
    from gpudp.codegen import block_decision, diagonal_groups

    groups = diagonal_groups(k)
    assert groups[-1] == sum(-(-(min(d, k - 1) - max(0, d - k + 1) + 1) // 32) for d in range(2 * k - 1))
    rng = np.random.default_rng(k * 7 + bits)
    for nr, nc in {(k, k), (k, max(k // 2, 1)), (max(k - 3, 1), k)}:
        want = rng.integers(0, 1 << bits, (nr, nc))
        words = np.zeros(3 + groups[-1] * bits, np.uint32)  # from word 3: a block not at 0
        owner = {}
        for a in range(nr):
            for b in range(nc):
                d = a + b
                p = a - max(0, d - k + 1)
                n = groups[d + 1] - groups[d]
                for x in range(bits):
                    w = 3 + groups[d] * bits + x * n + p // 32
                    assert owner.setdefault((w, p % 32), (a, b, x)) == (a, b, x)
                    words[w] |= np.uint32(((int(want[a, b]) >> x) & 1) << (p % 32))
        got = [
            [block_decision(words, 3, a, b, nc, k, True, bits, groups) for b in range(nc)] for a in range(nr)
        ]
        assert np.array_equal(np.array(got), want)
        rows = want.astype(np.uint8).ravel()
        assert all(
            block_decision(rows, 0, a, b, nc, k, False, bits, groups) == want[a, b]
            for a, b in [(0, 0), (nr - 1, nc - 1)]
        )


@pytest.mark.gpu
def test_gpu_checkpoints_equal_the_full_store():
    rng = np.random.default_rng(6)
    a, b = rng.integers(0, 4, 5000).astype(np.uint8), rng.integers(0, 4, 4100).astype(np.uint8)
    for every in (1024, 2048):
        full, ck = _both(LCSRecurrence(a, b), every, backend="cuda", tile=None)
        _same_walk(full, ck, (4999, 4099))
    s = "".join(rng.choice(list("ACGT"), 3000))
    t = "".join(rng.choice(list("ACGT"), 2900))
    full, ck = _both(sw.SmithWaterman(s, t), 1024, backend="cuda", tile=None)
    _same_walk(full, ck, full.best_cell)
    full, ck = _both(gotoh.Gotoh(s, t), 1024, backend="cuda", tile=None)
    _same_walk(full, ck, (3000, 2900), state=0)


@pytest.mark.parametrize("every", [0, -512, True, 1.5, "512"])
def test_a_bad_spacing_is_refused_before_any_work(every):
    """Issue 35: 0, negative, a bool, a float or text refused by name before a sweep, whatever the
    store (``store="full"`` ignored it); the command lines name their option (``check_every``)."""
    from gpudp.checkpoints import check_every

    for store in ("checkpoints", "full"):
        with pytest.raises(InputError, match="checkpoint_every: .* positive whole number"):
            lcs.solve("GATTACA", "TACCA", backend="cpu", store=store, checkpoint_every=every)
    a = np.frombuffer(b"GATTACA", np.uint8)
    for store in ("checkpoints", "full", "auto"):  # the engine's sweep too (full and auto ignored it)
        with pytest.raises(InputError, match="checkpoint_every: .* positive whole number"):
            sweep(LCSRecurrence(a, a), backend="cpu", store=store, checkpoint_every=every)
    with pytest.raises(InputError, match="^--checkpoint-every: "):
        check_every(every, "--checkpoint-every")
    assert check_every(None) is None and check_every(np.int32(64)) == 64


@pytest.mark.parametrize("every", [2**63 - 1, 10**9])
def test_a_spacing_past_the_grid_is_one_block(every):
    """Issue 35: 2^63 - 1 (not a multiple of the tile: refused) and 10^9 (a block of 10^18 cells:
    MemoryError, or numpy's 'Maximum allowed dimension exceeded') are one block, the whole grid,
    its side the least multiple of the tile that covers it; the path is the full store's."""
    rng = np.random.default_rng(11)
    a, b = rng.integers(0, 4, 300).astype(np.uint8), rng.integers(0, 4, 280).astype(np.uint8)
    want = lcs.solve(a, b, backend="cpu", store="full")
    got = lcs.solve(a, b, backend="cpu", store="checkpoints", checkpoint_every=every)
    assert got.value == want.value and np.array_equal(got.solution, want.solution)
    k = got.stats.extra["checkpoint_every"]
    assert 300 <= k < 10_000 and got.stats.extra["checkpoint_bytes"] == 0
    assert got.stats.extra["traceback"]["blocks"] == 1


def test_a_block_past_the_memory_is_refused_before_the_sweep(monkeypatch):
    """Issue 35: checkpoints and one block's decisions (a round's least) over the memory this process
    may allocate: refused with the figures and which way to move K, the sweep never started ('out of
    memory (the pre-checks missed this)' before)."""
    import gpudp.checkpoints as checkpoints
    from gpudp.engine import plan_sweep

    monkeypatch.setattr("gpudp.checks.available_memory", lambda: 100_000)
    rec = LCSRecurrence(np.zeros(300, np.uint8), np.zeros(280, np.uint8))

    def no_sweep(*args, **kwargs):
        raise AssertionError("the sweep started")

    plan = plan_sweep(rec, "cpu", TILE)
    with pytest.raises(
        InputError, match=r"a block's decisions.*0\.00 GiB.*of host memory needed.*smaller checkpoint_every"
    ):
        checkpoints.checkpoint_sweep(rec, plan, no_sweep, every=10**9)
    assert choose_every(plan, every=64) == 64  # a block of 4 KiB: fits


def test_a_gpu_block_counts_its_cells_before_they_are_packed(monkeypatch):
    """A GPU round holds a block's cells (a decision integer each) before packing them into bit
    planes: 8 times the planes for one bit. Counted (here the cpu runner lays blocks out as planes)."""
    import gpudp.checkpoints as checkpoints
    from gpudp import backends
    from gpudp.engine import plan_sweep

    rec = LCSRecurrence(np.zeros(300, np.uint8), np.zeros(280, np.uint8))
    plan = plan_sweep(rec, "cpu", TILE)
    monkeypatch.setattr(type(backends.get("cpu")), "blocks_layout", "planes")
    k = choose_every(plan, every=10**9)
    planes = checkpoints._block_bytes(backends.get("cpu"), LCSRecurrence, k)
    assert planes < k * k // 4  # 1 bit a cell in planes, a byte a cell before
    monkeypatch.setattr("gpudp.checks.available_memory", lambda: 2 * planes)

    def no_sweep(*args, **kwargs):
        raise AssertionError("the sweep started")

    with pytest.raises(InputError, match="a block's decisions"):
        checkpoints.checkpoint_sweep(rec, plan, no_sweep, every=10**9)


def test_rounds_fit_the_budget_beside_the_checkpoints():
    """A round sweeps as many blocks as the memory budget leaves room for beside the checkpoints
    (before: up to ROUND_BLOCKS / ROUND_BYTES whatever the budget), one at least; same path."""
    rng = np.random.default_rng(12)
    a, b = rng.integers(0, 4, 700).astype(np.uint8), rng.integers(0, 4, 650).astype(np.uint8)
    rec = LCSRecurrence(a, b)
    marks = checkpoint_bytes(700, 650, 64, 4)
    full = sweep(rec, backend="cpu", store="full", tile=TILE)
    for room, cap in ((3 * 64 * 64 + 10, 3), (10, 1)):  # the cpu's blocks: a byte a cell
        ck = sweep(
            rec,
            backend="cpu",
            store="checkpoints",
            tile=TILE,
            checkpoint_every=64,
            memory_budget=marks + room,
        )
        assert ck._round_cap() == cap
        _same_walk(full, ck, (699, 649))
        assert ck.stats.extra["traceback"]["rounds"] > 1


def test_a_spacing_with_the_full_store_is_refused():
    """checkpoint_every with store='full' asked for checkpoints the full store keeps none of: it was
    ignored without a word; now an InputError naming it. With 'auto' it applies where checkpoints are
    taken, and is kept when the full store is."""
    rec = LCSRecurrence(np.zeros(40, np.uint8), np.ones(50, np.uint8))
    with pytest.raises(InputError) as e:
        sweep(rec, backend="cpu", store="full", checkpoint_every=64)
    assert e.value.field == "checkpoint_every"
    assert sweep(rec, backend="cpu", store="auto", checkpoint_every=64).traceback((39, 49)).shape[1] == 3
