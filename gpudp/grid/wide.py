"""Offsets two cells back swept on the tiled path: the wider halo carried as a record.

A grid whose offsets reach two cells back, such as the Damerau-Levenshtein transposition's
``(-2, -2)``, has no order by unit tiles of its own: it used to be swept one wavefront of cells at
a time (the layered path; 8-14x a plain loop on the CPU). But every offset in ``[-2, 0]^2`` is one
unit step from a unit neighbour: ``T[i - 2, j - 2]`` is the diagonal's own diagonal,
``T[i - 2, j - 1]`` the upper neighbour's diagonal, ``T[i - 2, j]`` its upper neighbour. So the
engine sweeps instead a class of the three unit offsets whose value is a record: the cell's value
``v`` and, for the fields the wide offsets need (``u``, ``l``, ``d``: the cell's own upper, left
and diagonal neighbour's value), what the cell read there. The user's ``cell`` gets its
dependencies in its declared order as before, each taken from a unit neighbour's record; its
decisions, ``back`` and data are the user's. The record rides every path that takes records (the
cpu and cuda tiles, the checkpoints and their blocks swept again); the results are given back as
the user's values (:func:`unwrap`).

Only scalar cells (a record cell with a wide offset keeps the layered path), offsets within two
cells, and grids of more than one cell a wavefront (a line keeps its own path); :func:`widened`
says None otherwise.
"""

from __future__ import annotations

import copy
import functools
import inspect

import numpy as np
from numba.extending import register_jitable

from ..codegen import compile_source
from ..kernel import KernelFactory
from ..recurrence.base import specialized_class
from ..schedule import UNIT_MONOTONE, derive

__all__ = ["unwrap", "wide_class", "wide_instance", "widened", "widens"]

#: the unit offsets by the names the tiled cell gives them
UNIT = {(-1, 0): "up", (0, -1): "left", (-1, -1): "diag"}
#: a wide offset: the unit neighbour it is read through, and that neighbour's field holding it
WIDE = {
    (-2, -2): ("diag", "d"),
    (-2, -1): ("up", "d"),
    (-1, -2): ("left", "d"),
    (-2, 0): ("up", "u"),
    (0, -2): ("left", "l"),
}
#: a field: the unit neighbour whose value the cell keeps in it
FIELD = {"u": "up", "l": "left", "d": "diag"}
#: a field's offset from the cell, for the boundary's record
STEP = {"u": (-1, 0), "l": (0, -1), "d": (-1, -1)}

_CLASSES = KernelFactory("grid.wide", "cls")


def widened(rec):
    """``rec`` as the unit-offset record class that carries its wide offsets (a shallow copy
    sharing its data, :func:`gpudp.recurrence.base.specialized`), or None where it needs none (its
    offsets are unit ones), or cannot be (not a grid, a record cell, an offset more than two cells
    back, a cell that reads a line), or is a line (one cell a wavefront: its own path)."""
    cls = type(rec)
    if not widens(cls):
        return None
    cls._validate_class()  # the user's own mistakes named as for the class itself, before any wrapper
    rec._validate_instance()
    if derive(cls.offsets, *rec._checked_shape()).positions == 1:
        return None  # a line (one cell a wavefront) has its own path, one cell after the other
    return wide_instance(rec)


def wide_instance(rec):
    """``rec`` (of a class that :func:`widens`) as an instance of its :func:`wide_class`: a shallow
    copy sharing its data."""
    proxy = copy.copy(rec)
    proxy.__class__ = wide_class(type(rec))
    for name in ("offsets", "value_dtype"):  # an instance's own (given by its data): the class's now
        proxy.__dict__.pop(name, None)
    return proxy


def widens(cls) -> bool:
    """Whether ``cls`` has offsets two cells back that :func:`wide_class` can carry: a grid (not
    reading a line) of a scalar cell with fixed parameters, every offset within ``[-2, 0]^2`` and
    one of them not a unit offset. Answered once per declaration (what it reads of the class) in
    the process, where the offsets are a tuple of tuples (every sweep asks)."""
    if cls.family != "grid" or getattr(cls, "reads_line", False):
        return False
    declared = (cls.offsets, cls.value_dtype, cls.cell, getattr(cls.cell, "__code__", None))
    try:
        return _widens(*declared)
    except TypeError:  # unhashable offsets (a list): answered each time
        return _widens.__wrapped__(*declared)


@functools.lru_cache(maxsize=1024)
def _widens(offsets, value_dtype, cell, code) -> bool:
    """:func:`widens` of a grid's declaration that reads no line."""
    offs = {tuple(int(x) for x in o) for o in offsets}
    if offs <= UNIT_MONOTONE or not offs <= UNIT.keys() | WIDE.keys():
        return False
    if np.dtype(value_dtype).names is not None:
        return False
    plain = inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD
    # a cell taking *data: its arity is the instance's, not the class's
    return all(p.kind in plain for p in inspect.signature(cell).parameters.values())


def wide_class(cls):
    """The unit-offset record class sweeping ``cls`` (:func:`widens`), made once per class."""
    k = _CLASSES.lookup(cls=cls)
    if not k.ready:
        k = k.keep(_parts(cls, [tuple(int(x) for x in o) for o in cls.offsets]))
    return specialized_class(cls, **k.fn)


def _parts(cls, offs) -> dict:
    """The class attributes of ``cls``'s widened class: offsets, record type, fill, cell, boundary."""
    fields = sorted({WIDE[o][1] for o in offs if o in WIDE}, key="uld".index)
    index = {f: 1 + n for n, f in enumerate(fields)}
    vt = np.dtype(cls.value_dtype)
    params = list(inspect.signature(cls.cell).parameters)
    rest = params[2 + cls._n_deps() :]  # the symbols, when the class has them, and the data
    data = rest[2:] if cls.symbols else rest
    deps = [f"{UNIT[o]}[0]" if o in UNIT else f"{WIDE[o][0]}[{index[WIDE[o][1]]}]" for o in offs]
    if cls.deps_tuple:  # the cell takes its dependencies as one tuple
        deps = [f"({', '.join(deps)},)"]
    own = ", ".join(["v", *(f"{FIELD[f]}[0]" for f in fields)])
    args = ", ".join(["i", "j", "up", "left", "diag", *rest])
    call = f"USER_CELL(i, j, {', '.join([*deps, *rest])})"
    if cls.decision_bits:
        body = f"    v, dd = {call}\n    return ({own}), dd\n"
    else:
        body = f"    v = {call}\n    return ({own})\n"
    cell = compile_source(f"def cell({args}):\n{body}", "cell", {"USER_CELL": register_jitable(cls.cell)})
    bparams = data  # the engine passes boundary the data (a user's may take them as *data)
    bargs = ", ".join(["i", "j", *bparams])
    calls = ["USER_BOUNDARY(i, j" + "".join(f", {p}" for p in bparams) + ")"]
    for f in fields:
        di, dj = STEP[f]
        calls.append(f"USER_BOUNDARY(i - {-di}, j - {-dj}" + "".join(f", {p}" for p in bparams) + ")")
    boundary = compile_source(
        f"def boundary({bargs}):\n    return ({', '.join(calls)},)\n",
        "boundary",
        {"USER_BOUNDARY": register_jitable(cls.boundary)},
    )
    record = np.dtype([("v", vt), *((f, vt) for f in fields)])
    return {
        "offsets": tuple(UNIT),
        "value_dtype": record,
        "cell": staticmethod(cell),
        "boundary": staticmethod(boundary),
        "deps_tuple": False,  # the wrapper takes up, left, diag (it gives the user's cell its tuple)
        "_wide_offsets": tuple(offs),
    }


def unwrap(result, wide):
    """``result`` (of the sweep of ``wide``, a :func:`widened` recurrence) with the user's values:
    the record's ``v``."""
    for name in ("last_row", "last_col"):
        got = getattr(result, name, None)
        if got is not None and got.dtype.names:
            setattr(result, name, np.ascontiguousarray(got["v"]))
    cls = type(wide)
    result.stats.extra["wide_offsets"] = (
        f"{list(cls._wide_offsets)} carried as a record of the unit neighbours' values (fields "
        f"{', '.join(np.dtype(cls.value_dtype).names[1:])}): swept by tiles"
    )
    return result
