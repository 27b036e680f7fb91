"""A sweep's fixed cost on the host (issue 39): what is kept between calls, and that each kept thing
is made again when what it depends on changes; the progress bar built only where it can show."""

from __future__ import annotations

import io

import numpy as np

from gpudp import GridRecurrence, grid, progress
from gpudp.engine import sweep
from gpudp.progress import BAR_SECONDS, progress_bar


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_bar_is_built_where_it_can_show(monkeypatch):
    monkeypatch.setattr("sys.stderr", io.StringIO())  # no terminal: tqdm would build it disabled
    assert progress_bar(10**9, None) is None
    assert progress_bar(10**9, True).bar is not None  # asked for
    monkeypatch.setattr("sys.stderr", _Terminal())
    assert progress_bar(10**9, None).bar is not None
    assert progress_bar(10**9, None, seconds=BAR_SECONDS / 2) is None  # ends before it could show
    assert progress_bar(10**9, True, seconds=BAR_SECONDS).bar is not None
    meter = progress_bar(10**9, True, deadline=progress.Deadline(60), seconds=0.0)
    assert meter.bar is None and meter.deadline is not None  # the deadline is still checked


class Walk(GridRecurrence):
    value_dtype = np.int64
    offsets = ((-1, 0), (0, -1))

    def __init__(self, rows, cols):
        self.size = (rows, cols)

    def shape(self):
        return self.size

    @staticmethod
    def cell(i, j, up, left):
        return max(up, left) + 1


def test_a_sweep_predicted_long_builds_its_bar(monkeypatch):
    bars = []

    def kept(*args, **kw):
        bars.append(progress_bar(*args, **kw))
        return bars[-1]

    monkeypatch.setattr(grid, "progress_bar", kept)
    monkeypatch.setattr("sys.stderr", _Terminal())
    sweep(Walk(40, 50), backend="cpu", progress=True)
    assert bars[-1] is None  # 2,000 cells: ends within the bar's delay
    monkeypatch.setattr(grid, "SLOW_CELLS_PER_S", 1e3)  # 2 s predicted
    res = sweep(Walk(40, 50), backend="cpu", progress=True)
    assert bars[-1].bar is not None and res.last_row[-1] == 40 + 50 - 1
