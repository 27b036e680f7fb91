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

__all__ = ["probe_cell", "check_return", "cell_symbols", "check_memory"]


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


def check_return(cls, out, where: str) -> None:
    """A :class:`ContractError` where ``cell``'s return ``out`` (at ``where``) does not match the
    class: a bare value with ``decision_bits`` declared, a tuple without; for a record
    ``value_dtype``, a value that is not one number per field."""
    bits = getattr(cls, "_declared_bits", cls.decision_bits)  # what cell returns, values-only or not
    if bits and not (isinstance(out, tuple) and len(out) == 2):
        raise ContractError(
            f"{cls.__name__}.cell returned {out!r} at {where}, but decision_bits = {bits}: "
            "return (value, decision)"
        )
    fs = values.fields(cls)
    if fs is not None:  # a record: a tuple of one number per field
        value = out[0] if bits else out
        if not (isinstance(value, tuple | list) and len(value) == len(fs)):
            form = "(value, decision)" if bits else "value"
            raise ContractError(
                f"{cls.__name__}.cell returned {out!r} at {where}: its value_dtype is a record of "
                f"{len(fs)} fields {np.dtype(cls.value_dtype).names}, so it returns {form} with value a "
                f"tuple of {len(fs)} numbers"
            )
        return
    if not bits and isinstance(out, tuple):
        raise ContractError(
            f"{cls.__name__}.cell returned the tuple {out!r} at {where}, but decision_bits = 0: return "
            "the value alone, or declare decision_bits to keep decisions for a traceback"
        )
    value, decision = out if bits else (out, 0)
    if not _is_number(value):
        raise ContractError(
            f"{cls.__name__}.cell returned {short_repr(value)} ({type(value).__name__}) as the value at "
            f"{where}: a cell's value is one number, converted to value_dtype "
            f"{np.dtype(cls.value_dtype).name} (compute with numbers, e.g. symbols as integer codes "
            "from data(), not str)"
        )
    if not _is_integer(decision):
        raise ContractError(
            f"{cls.__name__}.cell returned {short_repr(decision)} ({type(decision).__name__}) as the "
            f"decision at {where}: a decision is an integer in 0 .. 2**decision_bits - 1 "
            f"(decision_bits = {bits})"
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
