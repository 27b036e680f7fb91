"""The batch's intake: every instance checked on its own, the class checked once, the data packed.

The instances are grids (``shapes[k]``: rows, columns) or intervals (``shapes[k]``: ``(n, n)``,
the table of ``size()``). What refuses the whole batch (raised): an object that is not a
recurrence, instances of different classes (after :meth:`~gpudp.GridRecurrence._specialized`, so
instance offsets count), a class the batch does not run, a contract mistake (``cell``'s arity
against ``data()``, the form of its return), and ``data()`` tuples whose structure differs from the
first valid instance's. What fails one instance only (an entry in :attr:`Intake.errors`): offsets,
``shape()`` (``size()``), ``data()`` or the symbols that are invalid for that instance, or that
raise.

The structure of ``data()`` is the number of items and, per item, array or scalar, dtype and ndim;
the arrays' sizes are the instance's own. Each item is *packed*: the instances' arrays flattened and
concatenated with int64 offsets (and their shapes, for two or more dimensions), or their scalars in
a 1-D array; the kernels give each instance its own view, reshaped to its shape
(:mod:`gpudp.many.source`). Symbols (``symbols = True``) are two more items, first, widened
as :func:`gpudp.engine.sweep` widens them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..checks import cell_symbols
from ..errors import ContractError, GpudpError, InputError
from ..grid import probe_grid
from ..grid.wide import widens
from ..interval import probe as probe_intervals
from ..recurrence import GridRecurrence, IntervalRecurrence, Recurrence
from ..recurrence.constants import read_by
from ..schedule import UNIT_MONOTONE


@dataclass
class Intake:
    """The checked batch. ``cls``: the recurrence class (None when no instance got that far);
    ``recs[k]``: instance ``k`` as the engine sweeps it (None when refused, see ``errors``);
    ``shapes``: ``(count, 2)`` int64, ``(0, 0)`` for refused instances; ``kinds``: per packed item
    ``"s"`` (scalar) or ``"a1"``, ``"a2"``, .. (an array of that many dimensions), the symbols
    first; ``names``: what each item is; ``packed``: ``(P0, O0, S0, P1, O1, S1, ...)`` (see
    :func:`gpudp.many.source.views`); ``n_sym``: 2 with symbols, else 0."""

    cls: type | None
    recs: list
    shapes: np.ndarray
    errors: dict
    kinds: tuple = ()
    names: tuple = ()
    packed: tuple = ()
    n_sym: int = 0


def _refusal(e: BaseException) -> str:
    return str(e) if isinstance(e, GpudpError) else f"{type(e).__name__}: {e}"


def check_class(cls) -> None:
    """ContractError unless the batch runs ``cls``: an interval recurrence, or a grid recurrence
    (valid declaration) with offsets among up, left and diagonal, or within two cells back for a
    scalar cell (:mod:`gpudp.grid.wide`)."""
    if issubclass(cls, IntervalRecurrence):
        cls._validate_class()
        return
    if not issubclass(cls, GridRecurrence):
        kind = {"layered": "a layered recurrence", "grid3": "a 3-D grid"}.get(getattr(cls, "family", None))
        raise ContractError(
            f"{cls.__name__} is {kind or 'not a GridRecurrence or IntervalRecurrence'}: sweep_many runs "
            "batches of grid and interval recurrences; sweep its instances one by one with gpudp.sweep"
        )
    cls._validate_class()
    offs = tuple(tuple(o) for o in cls.offsets)
    if not set(offs) <= UNIT_MONOTONE and not widens(cls):
        raise ContractError(
            f"{cls.__name__}.offsets = {offs}: sweep_many runs grids whose cells read within two cells "
            "up and left (offsets in [-2, 0] x [-2, 0], a scalar cell for those beyond (-1, 0), (0, -1) "
            "and (-1, -1)); sweep these instances one by one with gpudp.sweep"
        )
    if cls.reads_line:
        raise ContractError(
            f"{cls.__name__}.reads_line is True: sweep_many runs 2-D grids by anti-diagonals, whose "
            "cells read only their offsets; sweep a line's instances one by one with gpudp.sweep (one "
            "compile for all of them)"
        )


def _declares(cls) -> str:
    """A class in words, with what its instances may declare (and a twin's module, when two
    classes of one name meet: a module imported twice)."""
    parts = [f"{name} {getattr(cls, name)}" for name in ("offsets", "value_dtype") if hasattr(cls, name)]
    return f"{cls.__name__} of {cls.__module__} ({', '.join(parts)}, class id {id(cls):#x})"


def _name(m: int, n_sym: int) -> str:
    """What packed item ``m`` is, in words."""
    return ("row_symbols()", "col_symbols()")[m] if m < n_sym else f"data()[{m - n_sym}]"


def read_item(x, k: int, m: int, n_sym: int):
    """``(signature, value)`` of one data item: an array made C-contiguous, or a number as a numpy
    scalar of its type (a Python int is an int64, as numba types it). InputError (the whole batch)
    for anything else."""
    what = _name(m, n_sym)
    if isinstance(x, np.ndarray):
        if x.ndim == 0:
            raise InputError(
                f"recs[{k}]", f"{what} is a 0-d array: give a number, or an array of one or more dimensions"
            )
        if x.dtype.kind not in "biuf":
            raise InputError(f"recs[{k}]", f"{what} is an array of {x.dtype}: sweep_many packs numbers only")
        return ("array", x.dtype.str, x.ndim), np.ascontiguousarray(x)
    if isinstance(x, bool | int | float | np.bool_ | np.integer | np.floating):
        a = np.asarray(x)
        if a.dtype.kind not in "biuf":
            raise InputError(f"recs[{k}]", f"{what} = {x!r} has no numpy integer or float type")
        return ("scalar", a.dtype.str), a[()]
    raise InputError(
        f"recs[{k}]",
        f"{what} is a {type(x).__name__}: sweep_many packs numpy arrays and numbers "
        "(the items of data() and the symbols)",
    )


def _describe(sig) -> str:
    if sig[0] == "scalar":
        return f"a scalar of {np.dtype(sig[1])}"
    return f"a {sig[2]}-d array of {np.dtype(sig[1])}"


def intake(objs) -> Intake:
    """Check a batch (see the module's text). Raises InputError or ContractError for what refuses
    the whole batch; the rest goes to :attr:`Intake.errors`."""
    objs = list(objs)
    count = len(objs)
    errors: dict[int, str] = {}
    recs: list = [None] * count
    cls = first = None
    reads: dict = {}  # each class's module constants, read once for the batch
    for k, r in enumerate(objs):
        if not isinstance(r, Recurrence):
            raise InputError(f"recs[{k}]", f"a {type(r).__name__}, not a recurrence instance")
        consts = reads.get(type(r))
        if consts is None:
            consts = reads[type(r)] = read_by(type(r))
        try:
            spec = r._specialized(consts)
        except (GpudpError, TypeError, ValueError) as e:  # offsets of this instance
            errors[k] = _refusal(e)
            continue
        if cls is None:
            cls, first = type(spec), k
        elif type(spec) is not cls:
            raise InputError(
                f"recs[{k}]",
                f"a {_declares(type(spec))}, but instance {first} is a {_declares(cls)}: sweep_many runs "
                "instances of one recurrence class (and one set of offsets and value_dtype, where "
                "instances give their own); call it once per class",
            )
        recs[k] = spec
    shapes = np.zeros((count, 2), np.int64)
    if cls is None:
        return Intake(None, recs, shapes, errors)
    check_class(cls)
    grid = cls.family == "grid"
    n_sym = 2 if grid and cls.symbols else 0
    ref = ref_k = None
    items: list = [None] * count
    for k, spec in enumerate(recs):
        if spec is None:
            continue
        try:
            rows, cols = spec._checked_shape() if grid else (spec._checked_size(),) * 2
            data = spec.data()
            if not isinstance(data, tuple):
                raise ContractError(
                    f"{cls.__name__}.data() must return a tuple of numpy arrays and scalars, got "
                    f"{type(data).__name__}"
                )
            syms = cell_symbols(spec, rows, cols) if n_sym else ()
        except Exception as e:  # this instance's sizes, data or symbols
            errors[k], recs[k] = _refusal(e), None
            continue
        if ref is None:
            spec._validate_instance()  # the static methods' arities against data(): the contract
        got = [read_item(x, k, m, n_sym) for m, x in enumerate((*syms, *data))]
        sig = [g[0] for g in got]
        if ref is None:
            ref, ref_k = sig, k
        elif len(sig) != len(ref):
            raise InputError(
                f"recs[{k}]",
                f"data() gives {len(sig) - n_sym} items, instance {ref_k}'s {len(ref) - n_sym}: every "
                "instance's data() must have the same structure (count, array or scalar, dtype, ndim)",
            )
        else:
            for m, (a, b) in enumerate(zip(sig, ref, strict=True)):
                if a != b:
                    raise InputError(
                        f"recs[{k}]",
                        f"{_name(m, n_sym)} is {_describe(a)}, instance {ref_k}'s is {_describe(b)}: every "
                        "instance's data() must have the same structure (count, array or scalar, dtype, "
                        "ndim)",
                    )
        shapes[k] = rows, cols
        items[k] = [g[1] for g in got]
    if ref is None:
        return Intake(cls, recs, shapes, errors)
    probe = next((k for k in range(count) if items[k] is not None and shapes[k].prod() > 0), None)
    if probe is not None:  # the form of cell's return, in plain Python, as sweep checks it
        if grid:
            probe_grid(recs[probe], tuple(items[probe]), tuple(int(x) for x in shapes[probe]))
        else:
            probe_intervals(recs[probe], int(shapes[probe][0]), tuple(items[probe]))
    kinds, packed = [], []
    for m, sig in enumerate(ref):
        dt = np.dtype(sig[1])
        if sig[0] == "scalar":
            p = np.zeros(count, dt)
            for k in range(count):
                if items[k] is not None:
                    p[k] = items[k][m]
            kinds.append("s")
            packed += [p, np.zeros(1, np.int64), np.zeros((1, 1), np.int64)]
            continue
        ndim = sig[2]
        parts = [items[k][m].reshape(-1) if items[k] is not None else np.zeros(0, dt) for k in range(count)]
        offsets = np.zeros(count + 1, np.int64)
        np.cumsum([len(x) for x in parts], out=offsets[1:])
        p = np.concatenate([*parts, np.zeros(1, dt)])  # one item more: never empty
        shp = np.zeros((count if ndim > 1 else 1, ndim), np.int64)
        if ndim > 1:
            for k in range(count):
                if items[k] is not None:
                    shp[k] = items[k][m].shape
        kinds.append(f"a{ndim}")
        packed += [p, offsets, shp]
    names = tuple(_name(m, n_sym) for m in range(len(ref)))
    return Intake(cls, recs, shapes, errors, tuple(kinds), names, tuple(packed), n_sym)
