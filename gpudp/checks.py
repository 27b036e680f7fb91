"""The checks every shape makes before its sweep, written once: the probe of ``cell`` in plain
Python, the symbols it reads, and whether the work fits the memory there is.

Each shape (:mod:`gpudp.grid`'s grids and layers, :mod:`gpudp.interval`, :mod:`gpudp.grid3`,
:mod:`gpudp.many`'s batches, :mod:`gpudp.checkpoints`) supplies what differs: the cell's
index and the reads it is given (:func:`probe_cell`), its own memory figures (a plan's
``.memory()``); the logic and the messages are these. The decision-overflow flag that the kernels
raise after a sweep is read by :func:`gpudp.errors.decision_overflow`.
"""

from __future__ import annotations

import numpy as np

from . import values
from .errors import ContractError, InputError
from .inputs import short_repr
from .memory import available_memory, describe
from .recurrence import read_only

__all__ = [
    "probe_cell",
    "probe_boundary",
    "probe_back",
    "check_return",
    "check_value",
    "cell_symbols",
    "check_memory",
]


def probe_cell(cls, index: tuple, reads: tuple, data: tuple) -> bool:
    """Call ``cls.cell(*index, *reads, *data)`` once in plain Python (``data`` read-only: a cell
    that writes its data is skipped, not obeyed) and check its return's form
    (:func:`check_return`) before any kernel compiles. ``index`` is the cell's coordinates,
    ``reads`` what the shape hands it before the data (its dependencies' values, a table, the
    symbols at the cell). A cell that cannot run so (whatever it raises) is left to the compiler:
    this is a courtesy check, not a gate; False then, True when it ran."""
    try:
        with np.errstate(all="ignore"):
            out = cls.cell(*index, *reads, *(read_only(x) for x in data))
    except Exception:
        return False
    check_return(cls, out, f"the first cell, {tuple(index)}")
    return True


def probe_boundary(cls, index: tuple, data: tuple) -> bool:
    """Call ``cls.boundary(*index, *data)`` once in plain Python (``data`` read-only) at ``index``,
    a cell outside the grid that the first cell reads, and check that it returns a value as
    ``cell`` does (:func:`check_value`: one number, or a record's tuple, that converts to
    ``value_dtype`` exactly). As :func:`probe_cell`, a courtesy: False when it cannot run so."""
    try:
        with np.errstate(all="ignore"):
            out = cls.boundary(*index, *(read_only(x) for x in data))
    except Exception:
        return False
    owner = next(k for k in cls.__mro__ if "boundary" in vars(k))
    fs = values.fields(cls)
    if "family" in vars(owner) and fs is not None:  # the shape's default, 0, for a record
        raise ContractError(
            f"{cls.__name__} defines no boundary: the default gives 0 outside the grid, but its value_dtype "
            f"is a record of {len(fs)} fields {np.dtype(cls.value_dtype).names}: define "
            f"{cls._form('boundary', len(data))} as a @staticmethod returning a tuple of {len(fs)} numbers"
        )
    check_value(cls, f"{cls.__name__}.boundary", out, f"{tuple(index)}", "", "a boundary value")
    return True


def probe_back(cls, index: tuple, decision, data: tuple, state=None) -> bool:
    """Call ``cls.back(*index, decision[, state], *data)`` once in plain Python (``data``
    read-only) before a traceback's walk compiles, and check that it returns what the walk unpacks:
    a tuple of integers named by :meth:`~gpudp.recurrence.Recurrence._back_returns` (the
    predecessor's coordinates, its state with ``traceback_state``; an interval's two children). A
    :class:`ContractError` naming the call, the return and the form otherwise; False (left to the
    compiler) when ``back`` cannot run so."""
    args = (*index, decision, *(() if state is None else (state,)))
    try:
        with np.errstate(all="ignore"):
            out = cls.back(*args, *(read_only(x) for x in data))
    except Exception:
        return False
    names = cls._back_returns()
    if isinstance(out, tuple) and len(out) == len(names) and all(map(_is_integer, out)):
        return True
    if not isinstance(out, tuple):
        what = f"{short_repr(out)} ({type(out).__name__})"
    elif len(out) != len(names):
        what = f"{short_repr(out)}, a tuple of {len(out)}"
    else:
        k = next(k for k, x in enumerate(out) if not _is_integer(x))
        what = f"{short_repr(out)}, whose {names[k]} is {short_repr(out[k])} ({type(out[k]).__name__})"
    floats = isinstance(out, tuple) and any(isinstance(x, float | np.floating) for x in out)
    form = cls._form("back", len(data))
    form += "" if "->" in form else f" -> ({', '.join(names)})"
    call = ", ".join(str(int(a)) for a in args)
    raise ContractError(
        f"{cls.__name__}.back({call}) returned {what}: back must return a tuple of {len(names)} integers"
        f"{' (// divides integers)' if floats else ''}: {form}"
    )


def check_return(cls, out, where: str) -> None:
    """A :class:`ContractError` where ``cell``'s return ``out`` (at ``where``) does not match the
    class: a bare value with ``decision_bits`` declared, a tuple without; a value that
    :func:`check_value` refuses (no number, a float where ``value_dtype`` is an integer type, an
    integer it does not hold; for a record, not one number per field); a decision that is no
    integer."""
    bits = getattr(cls, "_declared_bits", cls.decision_bits)  # what cell returns, values-only or not
    name = f"{cls.__name__}.cell"
    if bits and not (isinstance(out, tuple) and len(out) == 2):
        raise ContractError(
            f"{name} returned {short_repr(out, 60)} ({type(out).__name__}) at {where}, but decision_bits = "
            f"{bits}: return (value, decision)"
        )
    if not bits and isinstance(out, tuple) and values.fields(cls) is None:
        raise ContractError(
            f"{name} returned the tuple {short_repr(out, 60)} at {where}, but decision_bits = 0: return "
            "the value alone, or declare decision_bits to keep decisions for a traceback"
        )
    value, decision = out if bits else (out, 0)
    check_value(cls, name, value, where, " as the value", "a cell's value", out if bits else None)
    if not _is_integer(decision):
        raise ContractError(
            f"{name} returned {short_repr(decision)} ({type(decision).__name__}) as the "
            f"decision at {where}: a decision is an integer in 0 .. 2**decision_bits - 1 "
            f"(decision_bits = {bits})"
        )


def check_value(cls, name: str, value, where: str, role: str, noun: str, whole=None) -> None:
    """A :class:`ContractError` where ``value``, what ``name`` (``"Cls.cell"``, ``"Cls.boundary"``)
    returned as a value at ``where``, is not one that converts to ``value_dtype`` exactly: no number
    (a str, None, a list, a complex: numba's typing error into generated code otherwise); a float
    where the type is an integer one (numba would truncate it without a word); an integer outside
    the type's range (it would wrap around). For a record ``value_dtype``, a tuple of one such
    number per field. ``role`` and ``noun`` word the message (``" as the value"``, ``"a cell's
    value"``); ``whole``: the whole return, where the value is part of it."""
    fs = values.fields(cls)
    if fs is None:
        _check_number(cls, name, value, np.dtype(cls.value_dtype), where, role, noun)
        return
    names = np.dtype(cls.value_dtype).names
    if not (isinstance(value, tuple | list) and len(value) == len(fs)):
        form = f"a tuple of {len(fs)} numbers"
        form = form if whole is None else f"(value, decision) with value {form}"
        got = short_repr(value if whole is None else whole, 60)
        raise ContractError(
            f"{name} returned {got} at {where}: its value_dtype is a record of {len(fs)} fields {names}, "
            f"so it returns {form}"
        )
    for f, dt, x in zip(names, fs, value, strict=True):
        _check_number(cls, name, x, dt, where, f" as field {f!r} of the value", f"field {f!r} of {noun}")


def _check_number(cls, name: str, x, dt: np.dtype, where: str, role: str, noun: str) -> None:
    """:func:`check_value` for one number ``x`` of type ``dt``."""
    got = f"{name} returned {short_repr(x)} ({type(x).__name__}){role} at {where}"
    if not _is_number(x):
        raise ContractError(
            f"{got}: {noun} is one number, converted to value_dtype {dt.name} (compute with numbers, "
            "e.g. symbols as integer codes from data(), not str)"
        )
    if dt.kind != "i":
        return
    if isinstance(x, float | np.floating):
        cut = f" ({short_repr(x)} -> {int(x)})" if np.isfinite(x) else ""
        raise ContractError(
            f"{got}, but value_dtype is {dt.name}: numba would truncate it to an integer without a "
            f"word{cut}. Return an integer (// divides integers; int(x) or round(x) converts on "
            "purpose), or declare a float value_dtype (np.float64)"
        )
    lo, hi = np.iinfo(dt).min, np.iinfo(dt).max
    if not lo <= int(x) <= hi:
        fix = (
            "declare value_dtype = np.int64 (on the instance, self.value_dtype = np.int64, where the "
            "data decides)"
            if dt.itemsize < 8
            else "no integer value_dtype holds it (np.float64 does, inexactly past 2**53)"
        )
        raise ContractError(
            f"{got}, which does not fit value_dtype {dt.name} ({lo} .. {hi}): it would wrap around "
            f"without a word; {fix}"
        )


def _is_number(x) -> bool:
    """A real Python or numpy number (bool included): what a cell's value may be before the cast."""
    return isinstance(x, int | float | np.integer | np.floating | np.bool_)


def _is_integer(x) -> bool:
    return isinstance(x, int | np.integer | np.bool_)


def cell_symbols(rec, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """The row and column symbols of a grid recurrence that declares them, checked against its
    ``rows x cols`` shape and widened as every backend sees them: GPU shuffles move 32- and 64-bit
    values, so integers (and bools) under 32 bits become int32, uint32 becomes int64 and floats
    under 32 bits float32. An empty side gets one value (kernels index symbols even for an empty
    grid's padding)."""
    out = []
    for name, want in (("row_symbols", rows), ("col_symbols", cols)):
        arr = np.ascontiguousarray(getattr(rec, name)())
        if arr.ndim != 1 or len(arr) != want:
            raise ContractError(
                f"{type(rec).__name__}.{name}() must be 1-D of length {want}, got shape {arr.shape}"
            )
        if want == 0:
            arr = np.zeros(1, dtype=arr.dtype)
        if arr.dtype.kind in "iub" and arr.dtype.itemsize < 4:
            arr = arr.astype(np.int32)
        elif arr.dtype == np.uint32:
            arr = arr.astype(np.int64)
        elif arr.dtype.kind == "f" and arr.dtype.itemsize < 4:
            arr = arr.astype(np.float32)
        out.append(arr)
    return out[0], out[1]


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB"


def check_memory(
    what: str,
    host: int,
    device: int = 0,
    device_free: tuple[int, int] | None = None,
    *,
    budget: int | None = None,
    in_budget: int = 0,
    host_parts: str = "",
    device_parts: str = "",
    advice: str = "",
) -> None:
    """Refuse, with an :class:`InputError` on field ``memory`` naming the bytes needed and those
    there are, work whose figures do not fit here. Each shape computes its own figures (its plan's
    ``.memory()``); the comparisons and the wording are these, in this order:

    - ``in_budget`` bytes that must stay within the memory ``budget`` (when given);
    - ``device`` bytes against the device's free memory, ``device_free`` = ``(free, total)`` as
      :meth:`Backend.memory() <gpudp.backends.Backend.memory>` gives it (None: the work runs in
      host memory, nothing to compare);
    - ``host`` bytes against what this process may allocate (:func:`gpudp.memory.available_memory`).

    ``what`` names the work and what it keeps; ``host_parts`` / ``device_parts`` follow it in the
    message of that memory (the figures the bytes are made of), ``advice`` ends every message.

    The message: ``{what}{parts}: {X} GiB ({n} bytes) of {host|device} memory needed; {what there
    is}[; {advice}]``."""
    tail = f"; {advice}" if advice else ""
    if budget is not None and in_budget > budget:
        raise InputError(
            "memory",
            f"{what}: {_gib(in_budget)} ({in_budget} bytes) needed, over the memory budget of "
            f"{_gib(budget)}{tail}",
        )
    if device_free is not None and device > device_free[0]:
        free, total = device_free
        raise InputError(
            "memory",
            f"{what}{device_parts}: {_gib(device)} ({device} bytes) of device memory needed; "
            f"{free / 2**30:.2f} of {_gib(total)} are free{tail}",
        )
    if host > available_memory():
        raise InputError(
            "memory",
            f"{what}{host_parts}: {_gib(host)} ({host} bytes) of host memory needed; {describe()}{tail}",
        )
