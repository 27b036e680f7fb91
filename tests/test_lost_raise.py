"""A cell that raises inside a CPU parallel region: numba loses an exception raised on a worker
thread, and the rest of that thread's share of the loop with it (the region ends as if all were
done). Each region counts what it finished; a short count runs that part again on one thread, where
the cell's exception comes back as the grid's ContractError (gpudp.backends.threads.rerun_lost). Every
region here is forced parallel (as a fast host picks), and the raising cell is moved over the
region's items so that both threads' shares hold it in turn."""

from __future__ import annotations

import numpy as np
import pytest
from test_interval import Dividing

from gpudp import ContractError, Grid3Recurrence, GridRecurrence, LayeredRecurrence, sweep, sweep_many
from gpudp.backends.threads import ThreadChoice


@pytest.fixture(autouse=True)
def parallel_only(monkeypatch):
    """Every unit (tile anti-diagonal, layer, interval diagonal, plane) on numba's threads."""

    def slices(self, t0, t1):
        yield t0, t1, False

    monkeypatch.setattr(ThreadChoice, "slices", slices)


def _raises(cause, fn, *args, **kw):
    """``fn(*args, **kw)`` raises the grid's ContractError naming ``cause`` (a class), chained."""
    with pytest.raises(ContractError, match=rf"compiled sweep stopped: .* raised {cause.__name__}") as e:
        fn(*args, **kw)
    assert isinstance(e.value.__cause__, cause)


class Marked(GridRecurrence):
    """A grid of ones summed up and left, whose cell at ``at`` raises: divides by zero
    (``how == 0``) or raises ValueError (``how == 1``); or whose ``back`` raises ValueError at
    ``at`` (``how == 2``)."""

    value_dtype = np.int64
    decision_bits = 1

    def __init__(self, shape, at, how):
        self.s, self.at, self.how = shape, np.array(at, np.int64), how

    def shape(self):
        return self.s

    def data(self):
        return self.at, self.how

    @staticmethod
    def boundary(i, j, at, how):
        return 0

    @staticmethod
    def cell(i, j, up, left, diag, at, how):
        d = abs(i - at[0]) + abs(j - at[1])
        if how == 1 and d == 0:
            raise ValueError("the marked cell")
        return max(up, left) + 100 // (d + 100 * how), int(up >= left)

    @staticmethod
    def back(i, j, d, at, how):
        if how == 2 and i == at[0] and j == at[1]:
            raise ValueError("the marked cell's step")
        return (i - 1, j) if d else (i, j - 1)


@pytest.mark.parametrize("how, cause", [(0, ZeroDivisionError), (1, ValueError)])
def test_grid_tiled(how, cause):
    """Tiles of 256 x 512 on a grid of 600 x 1100: 3 x 3 tiles, the mark in each tile of the middle
    tile anti-diagonal (two threads split its three tiles), with decisions and without."""
    for at in ((100, 1050), (300, 600), (550, 100)):
        for traceback in (False, True):
            _raises(cause, sweep, Marked((600, 1100), at, how), backend="cpu", traceback=traceback)


def test_sweep_many_batch():
    """A batch of ten grids of ten sizes, one of them raising: each in turn (the instances are
    dealt to the threads by size, round robin)."""
    for k in range(10):
        recs = [Marked((30, 30 + q), (7, 9) if q == k else (50, 50), 0) for q in range(10)]
        _raises(ZeroDivisionError, sweep_many, recs, backend="cpu", traceback=False)


def test_sweep_many_walks():
    """The batch's walks back (in prange, an instance an item), ``back`` raising at the last cell
    of one instance."""
    for k in range(10):
        recs = [Marked((30, 30 + q), (29, 29 + q) if q == k else (50, 50), 2) for q in range(10)]
        _raises(ValueError, sweep_many, recs, backend="cpu")


class Stacked(LayeredRecurrence):
    """Layers of 4,096 cells, each the one above plus one, the cell ``at`` of layer ``at[0]``
    dividing by zero."""

    value_dtype = np.int64
    window = 1

    def __init__(self, at):
        self.at = np.array(at, np.int64)

    def num_layers(self):
        return 6

    def layer_size(self, t):
        return 4096

    def data(self):
        return (self.at,)

    @staticmethod
    def cell(t, p, prev, at):
        if t == 0:
            return 0
        return prev[p] + 100 // (abs(t - at[0]) + abs(p - at[1]))


def test_layered(monkeypatch):
    """Every layer in prange (``SERIAL_GROUPS = 1``), the mark in either half of a layer."""
    from gpudp.backends import cpu

    monkeypatch.setattr(cpu, "SERIAL_GROUPS", 1)
    for at in ((3, 100), (3, 4000), (5, 2100)):
        _raises(ZeroDivisionError, sweep, Stacked(at), backend="cpu", progress=False)


def test_interval():
    """The interval table of 200 (its long diagonals in prange), the cell dividing by zero at
    ``(i, i + 120)`` for i over the diagonal's 80 cells: numba had compiled the cell for the
    prange's unsigned index with numpy's error model (a division by zero gave 0, no error), and a
    raise on a worker thread was lost with the rest of its share."""
    for i in range(0, 80, 9):
        for traceback in (False, True):
            rec = Dividing(200, (i, i + 120))
            _raises(ZeroDivisionError, sweep, rec, backend="cpu", progress=False, traceback=traceback)


class Cube(Grid3Recurrence):
    """Ones summed over three axes, the cell at ``at`` dividing by zero."""

    value_dtype = np.int64
    decision_bits = 2
    offsets = ((-1, 0, 0), (0, -1, 0), (0, 0, -1))

    def __init__(self, at):
        self.at = np.array(at, np.int64)

    def shape(self):
        return (24, 24, 24)

    def data(self):
        return (self.at,)

    @staticmethod
    def cell(i, j, k, a, b, c, at):
        return max(a, b, c) + 100 // (abs(i - at[0]) + abs(j - at[1]) + abs(k - at[2])), 0

    @staticmethod
    def back(i, j, k, d, at):
        return i - 1, j, k


def test_grid3(monkeypatch):
    """Every plane in prange (``SERIAL_CELLS = 0``), the mark in rows of either thread's share."""
    from gpudp.grid3 import cpu

    monkeypatch.setattr(cpu, "SERIAL_CELLS", 0)
    for at in ((2, 10, 10), (20, 1, 1), (12, 5, 5)):
        _raises(ZeroDivisionError, sweep, Cube(at), backend="cpu", progress=False, traceback=False)


def test_checkpoint_blocks():
    """A traceback from checkpoints sweeps blocks of 512 x 512 again (in prange, a block an item);
    the cell raises there only (its mark moved onto the path's blocks after the forward sweep)."""
    for at in ((300, 20), (300, 1000), (580, 600), (100, 600)):
        rec = Marked((600, 1100), (5000, 5000), 0)
        res = sweep(rec, backend="cpu", store="checkpoints", checkpoint_every=512, progress=False)
        rec.at[:] = at
        _raises(ZeroDivisionError, res.traceback, (599, 1099))


def test_sweep_many_intervals():
    """A batch of ten interval tables of ten sizes (an instance a thread's item), one dividing by
    zero: each in turn."""
    for k in range(10):
        recs = [Dividing(20 + q, (3, 12) if q == k else (50, 50)) for q in range(10)]
        _raises(ZeroDivisionError, sweep_many, recs, backend="cpu", traceback=False)


def test_a_rerun_that_raises_nothing_still_stops_the_sweep():
    """A cell that raised on a worker thread but not when its part ran again (it raises only
    sometimes): still a ContractError, which says a worker thread failed, as it is where the
    interval sweep words what its kernel raised (kernel_raises)."""
    from gpudp.backends.threads import rerun_lost
    from gpudp.checks import kernel_raises

    why = r"^Marked's compiled sweep stopped: a worker thread .* raised nothing"
    with pytest.raises(ContractError, match=why):
        rerun_lost(Marked, sorted, ())
    with pytest.raises(ContractError, match=why):
        with kernel_raises(Marked):
            rerun_lost(Marked, sorted, ())
