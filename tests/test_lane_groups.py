"""The tiled CUDA kernel's lane groups (gpudp.backends.cuda.tiled.LANE_GROUPS): a lane's rows run in
groups, each a column behind the one before, so that a step's groups are independent. Values-only
sweeps (no decision words) only. Checked in the simulator against the cpu backend, on grids whose
tiles run both the kernel's checked blocks and its steady state (a tile 96 wide with two groups)."""

from __future__ import annotations

import numpy as np
import pytest
from examples_loader import load_example

from gpudp import sweep
from gpudp.backends.cuda import tiled

sw = load_example("local_alignment")
gotoh = load_example("affine_alignment")


def _dna(n, seed):
    return "".join(np.random.default_rng(seed).choice(list("ACGT"), n))


def test_lane_groups_divide_the_lanes_rows(monkeypatch):
    monkeypatch.setattr(tiled, "LANE_GROUPS", 4)
    monkeypatch.delenv("GPUDP_LANE_GROUPS", raising=False)
    assert [tiled.lane_groups(rpt, 0) for rpt in (1, 2, 3, 4, 6, 8)] == [1, 2, 3, 4, 3, 4]
    assert tiled.lane_groups(8, 2) == 1  # a kernel that stores decisions: one group
    monkeypatch.setenv("GPUDP_LANE_GROUPS", "2")
    assert tiled.lane_groups(8, 0) == 2
    monkeypatch.setenv("GPUDP_LANE_GROUPS", "0")
    with pytest.raises(ValueError, match="GPUDP_LANE_GROUPS"):
        tiled.lane_groups(8, 0)


@pytest.mark.sim
@pytest.mark.parametrize("example", [sw, gotoh], ids=["smith-waterman", "gotoh-records"])
def test_two_groups_equal_the_cpu(monkeypatch, example):
    """66 x 100 in tiles of 64 x 96: a whole tile (its middle block in the steady state), a tile cut
    by the last column, two cut by the last row (checked blocks only)."""
    monkeypatch.setattr(tiled, "LANE_GROUPS", 2)
    cls = example.SmithWaterman if example is sw else example.Gotoh
    rec = cls(_dna(66, 1), _dna(100, 2))
    want = sweep(rec, backend="cpu", traceback=False, progress=False)
    got = sweep(rec, backend="cuda", traceback=False, tile=(64, 96), progress=False)
    assert np.array_equal(want.last_row, got.last_row) and np.array_equal(want.last_col, got.last_col)
    assert (want.best_value, want.best_cell) == (got.best_value, got.best_cell)


@pytest.mark.sim
def test_two_groups_checkpoints_and_the_path(monkeypatch):
    """The values-only forward sweep of ``store="checkpoints"`` writes checkpoint rows (from the
    tiles' bottom edges, LAG columns behind) and columns: the path walked from them equals the
    cpu's full store."""
    monkeypatch.setattr(tiled, "LANE_GROUPS", 2)
    a, b = _dna(130, 3), _dna(70, 4)
    a = a[:60] + b[5:65] + a[120:]  # a long local alignment, across the checkpoints
    rec = sw.SmithWaterman(a, b)
    full = sweep(rec, backend="cpu", store="full", progress=False)
    opts = dict(store="checkpoints", tile=(64, 32), checkpoint_every=64, progress=False)
    ck = sweep(rec, backend="cuda", **opts)
    assert (full.best_value, full.best_cell) == (ck.best_value, ck.best_cell)
    rows, cols = ck._checkpoints  # the values on rows 63 and 127 and on column 63
    cpu_rows, cpu_cols = sweep(rec, backend="cpu", **opts)._checkpoints
    assert np.array_equal(rows, cpu_rows) and np.array_equal(cols, cpu_cols)
    want, got = full.traceback(full.best_cell), ck.traceback(ck.best_cell)
    assert len(want) > 64 and np.array_equal(want, got)
