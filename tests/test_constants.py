"""Module constants that a recurrence's compiled methods read, changed in the process (issue 39):
the next sweep computes with the new values (numba compiles a global's value into the kernel, and
the engine keeps a class's kernels for the process), on every backend here; back at the first
values, the first kernels serve again. A constant read by a helper numba compiled once is refused
by name instead."""

from __future__ import annotations

import numpy as np
import pytest
from numba.extending import register_jitable

from gpudp import ContractError, GridRecurrence, LayeredRecurrence, sweep
from gpudp.recurrence.constants import read_by

GAP = 1
STEP = 1
BONUS = (0, 10)
TABLE = np.array([3, 4], np.int64)


@register_jitable
def _bonus(i):
    return BONUS[i % 2]


class Path(GridRecurrence):
    """Path costs over a 3 x 4 grid whose moves cost GAP, plus a helper's bonus (a module tuple)."""

    value_dtype = np.int64

    def shape(self):
        return (3, 4)

    @staticmethod
    def cell(i, j, up, left, diag):
        return min(up, left, diag) + GAP + _bonus(i)

    @staticmethod
    def boundary(i, j):
        return 0


class Layers(LayeredRecurrence):
    """Each layer adds the module array TABLE's item to the previous layer's cell."""

    value_dtype = np.int64
    window = 1

    def num_layers(self):
        return 3

    def layer_size(self, t):
        return 2

    @staticmethod
    def cell(t, k, prev):
        return (prev[k] if t else 0) + TABLE[k]


class Steps(GridRecurrence):
    """Values that do not matter; ``back`` steps STEP rows up (a module constant) and one left."""

    decision_bits = 1

    def shape(self):
        return (6, 3)

    @staticmethod
    def cell(i, j, up, left, diag):
        return up + 1, 1

    @staticmethod
    def back(i, j, d):
        return i - STEP, j - 1


def _path(gap, bonus) -> list[int]:
    f = {}
    for i in range(3):
        for j in range(4):
            dep = [
                f.get((i + a, j + b), 0) if i + a >= 0 and j + b >= 0 else 0
                for a, b in ((-1, 0), (0, -1), (-1, -1))
            ]
            f[i, j] = min(dep) + gap + bonus[i % 2]
    return [f[2, j] for j in range(4)]


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.sim)])
def test_a_changed_constant_reaches_the_next_sweep(backend, monkeypatch):
    assert sweep(Path(), backend=backend).last_row.tolist() == _path(1, (0, 10))
    assert type(Path()._specialized()) is Path  # the values of the class's first sweep
    monkeypatch.setitem(globals(), "GAP", 4)
    assert sweep(Path(), backend=backend).last_row.tolist() == _path(4, (0, 10))
    keyed = type(Path()._specialized())
    assert keyed is not Path and keyed.__name__ == "Path" and type(Path()._specialized()) is keyed
    monkeypatch.setitem(globals(), "GAP", 1)
    assert sweep(Path(), backend=backend).last_row.tolist() == _path(1, (0, 10))
    assert type(Path()._specialized()) is Path  # back at the first values: the first kernels


def test_a_constant_changed_under_a_compiled_helper_is_refused(monkeypatch):
    """numba compiles a helper once per process: its constant cannot be followed, so it is named."""
    sweep(Path(), backend="cpu")
    monkeypatch.setitem(globals(), "BONUS", (7, 0))
    with pytest.raises(ContractError, match=r"Path: .*_bonus read BONUS = \(0, 10\), now \(7, 0\).*data\(\)"):
        sweep(Path(), backend="cpu")


@register_jitable
def _shifted_bonus(i):
    return BONUS[(i + 1) % 2]


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.sim)])
def test_a_helper_rebound_to_another_function_reaches_the_next_sweep(backend, monkeypatch):
    """A notebook defines the helper a cell calls again: the cell's global names another function."""
    assert sweep(Path(), backend=backend).last_row.tolist() == _path(1, (0, 10))
    monkeypatch.setitem(globals(), "_bonus", _shifted_bonus)
    assert sweep(Path(), backend=backend).last_row.tolist() == _path(1, (10, 0)) != _path(1, (0, 10))
    monkeypatch.undo()
    assert sweep(Path(), backend=backend).last_row.tolist() == _path(1, (0, 10))
    assert type(Path()._specialized()) is Path  # back at the first helper: the first kernels


def test_an_array_rebound_counts_and_the_reading_is_cheap(monkeypatch):
    assert sweep(Layers(), backend="cpu").last_layer.tolist() == [9, 12]
    monkeypatch.setitem(globals(), "TABLE", np.array([1, 2], np.int64))
    assert sweep(Layers(), backend="cpu").last_layer.tolist() == [3, 6]
    direct, helpers = read_by(Path)
    assert dict(direct) == {(__name__, "GAP"): 1, (__name__, "_bonus"): ("function", _bonus)}
    assert dict(helpers) == {("_bonus", "BONUS"): (0, 10)}
    assert dict(read_by(Layers)[0])[(__name__, "TABLE")] == ("array", id(TABLE), "<i8", (2,), TABLE.tobytes())


def test_a_small_array_written_in_place_counts(monkeypatch):
    """numba compiles a module array's contents into the kernel: a small one written in place is a
    changed constant (a larger one counts by identity only: docs of gpudp.recurrence.constants)."""
    table = np.array([3, 4], np.int64)
    monkeypatch.setitem(globals(), "TABLE", table)
    assert sweep(Layers(), backend="cpu").last_layer.tolist() == [9, 12]
    table[:] = [1, 2]
    assert sweep(Layers(), backend="cpu").last_layer.tolist() == [3, 6]
    table[:] = [3, 4]
    assert sweep(Layers(), backend="cpu").last_layer.tolist() == [9, 12]


def test_a_changed_constant_reaches_the_traceback(monkeypatch):
    """The walk runs the swept class's ``back``, compiled with the constants of its sweep."""
    assert sweep(Steps(), backend="cpu").traceback((5, 2))[:, :2].tolist() == [[5, 2], [4, 1], [3, 0]]
    monkeypatch.setitem(globals(), "STEP", 2)
    assert sweep(Steps(), backend="cpu").traceback((5, 2))[:, :2].tolist() == [[5, 2], [3, 1], [1, 0]]


class Ways(GridRecurrence):
    """Lattice paths over a 4 x 5 grid from the boundary's ones (its declaration reassigned below)."""

    value_dtype = np.int64
    offsets = ((-1, 0), (0, -1))

    def shape(self):
        return (4, 5)

    @staticmethod
    def cell(i, j, up, left):
        return up + left

    @staticmethod
    def boundary(i, j):
        return 1


def _ways_ref(n, m, cell, offsets, edge):
    t = {}
    for i in range(n):
        for j in range(m):
            deps = [t.get((i + a, j + b), edge) if i + a >= 0 and j + b >= 0 else edge for a, b in offsets]
            t[i, j] = cell(i, j, *deps)
    return [t[n - 1, j] for j in range(m)]


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.sim)])
def test_a_class_declaration_reassigned_after_a_sweep_is_swept_as_it_is_now(monkeypatch, backend):
    """Kernels, plans and walkers are kept by class: a class whose offsets, cell or boundary are
    reassigned after its first sweep is swept as it declares them now (a subclass keyed by the
    declaration), and back at its first declaration as before (it swept the old recurrence)."""
    cls = type("Ways2", (Ways,), {})  # a class of this test's own (the others keep theirs)
    one = cls.cell.__func__ if hasattr(cls.cell, "__func__") else cls.cell

    def last(rec):
        return sweep(rec, backend=backend, traceback=False, progress=False).last_row.tolist()

    first = last(cls())
    assert first == _ways_ref(4, 5, one, cls.offsets, 1)
    monkeypatch.setattr(cls, "offsets", ((-1, 0), (0, -1), (-1, -1)))
    monkeypatch.setattr(cls, "cell", staticmethod(lambda i, j, up, left, diag: up + left + diag))
    assert last(cls()) == _ways_ref(4, 5, lambda i, j, u, lf, d: u + lf + d, cls.offsets, 1)
    monkeypatch.setattr(cls, "boundary", staticmethod(lambda i, j: 2))
    assert last(cls()) == _ways_ref(4, 5, lambda i, j, u, lf, d: u + lf + d, cls.offsets, 2)
    monkeypatch.undo()
    assert last(cls()) == first
    cls.offsets = [(-1, 0), (0, -1)]  # a list, changed in place
    assert last(cls()) == first
    cls.offsets.append((-1, -1))
    cls.cell = staticmethod(lambda i, j, up, left, diag: up + left + 2 * diag)
    assert last(cls()) == _ways_ref(4, 5, lambda i, j, u, lf, d: u + lf + 2 * d, cls.offsets, 1)
    cls.offsets[2] = (0, -2)  # the list alone changed in place
    assert last(cls()) == _ways_ref(4, 5, lambda i, j, u, lf, d: u + lf + 2 * d, cls.offsets, 1)


@pytest.mark.parametrize("name", ["cell", "boundary", "back", "fill", "decision_bits", "symbols"])
def test_an_instance_setting_what_the_class_declares_is_refused(name):
    """The engine compiles a class's declaration once per class: an instance's own cell (or fill,
    decision bits, ...) would be ignored, silently; only value_dtype and offsets are an instance's."""
    rec = Ways()
    setattr(rec, name, getattr(Ways, name, None))
    with pytest.raises(ContractError, match=rf"Ways: the instance sets {name} \(self.{name} = ...\).*class"):
        sweep(rec, backend="cpu")
    del rec.__dict__[name]  # the class's own again
    assert sweep(rec, backend="cpu", traceback=False).last_row.tolist() == _ways_ref(
        4, 5, Ways.cell, Ways.offsets, 1
    )


def test_a_declaration_reads_functions_closing_over_each_other_and_unbound_names():
    from gpudp.recurrence.base import declaration

    def make():
        def cell(i, j, up, left):
            return other(up) + left + late

        def other(x):
            return cell(0, 0, x, 0)

        made = type("Mutual", (Ways,), {"cell": staticmethod(cell)})
        first = declaration(made)  # ``late`` not yet bound
        late = 1
        return made, first, late

    made, first, _ = make()  # (no RecursionError, no ValueError of the unbound cell)
    assert declaration(made) == first  # the same objects (the closure's values: read_by's part)
    assert declaration(made) != declaration(Ways)
