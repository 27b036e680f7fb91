"""The checks every shape makes before its sweep, written once: the probe of ``cell`` in plain
Python and of every path's return type by numba's typing, the symbols it reads, and whether the
work fits the memory there is.

Each shape (:mod:`gpudp.grid`'s grids and layers, :mod:`gpudp.interval`, :mod:`gpudp.grid3`,
:mod:`gpudp.many`'s batches, :mod:`gpudp.checkpoints`) supplies what differs: the cell's
index and the reads it is given (:func:`probe_cell`), its own memory figures (a plan's
``.memory()``); the logic and the messages are these. The decision-overflow flag that the kernels
raise after a sweep is read by :func:`gpudp.errors.decision_overflow`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re

import numpy as np

from . import values
from .errors import ContractError, InputError, kernel_raises, raised_in_kernel, raised_in_sweep  # noqa: F401  (re-exported)
from .inputs import short_repr
from .jit import return_type
from .kernel import KernelFactory
from .memory import available_memory, describe
from .recurrence import read_only

__all__ = [
    "probe_cell",
    "probe_boundary",
    "probe_back",
    "check_return",
    "check_value",
    "check_typed_return",
    "typing_errors",
    "kernel_raises",
    "cell_symbols",
    "widened_symbols",
    "check_symbol_types",
    "check_memory",
]


def probe_cell(cls, index: tuple, reads: tuple, data: tuple) -> bool:
    """Call ``cls.cell(*index, *reads, *data)`` once in plain Python (``data`` read-only: a cell
    that writes its data is skipped, not obeyed) and check its return's form
    (:func:`check_return`) before any kernel compiles. ``index`` is the cell's coordinates,
    ``reads`` what the shape hands it before the data (its dependencies' values, a table, the
    symbols at the cell). A cell that cannot run so (whatever it raises) is left to the compiler
    (and a typing error there to :func:`typing_errors`): this is a courtesy check, not a gate;
    False then, True when it ran."""
    try:
        with np.errstate(all="ignore"):
            out = cls.cell(*index, *reads, *(read_only(x) for x in data))
    except Exception:
        check_typed_return(cls, "cell", (*index, *reads, *data))
        return False
    check_return(cls, out, f"the first cell, {tuple(index)}")
    check_typed_return(cls, "cell", (*index, *reads, *data))
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
        check_typed_return(cls, "boundary", (*index, *data))
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
    check_typed_return(cls, "boundary", (*index, *data))
    return True


def probe_back(cls, index: tuple, decision, data: tuple, state=None, table=None, returns=None) -> bool:
    """Call ``cls.back(*index, decision[, state][, table], *data)`` once in plain Python (``data``
    read-only) before a traceback's walk compiles, and check that it returns what the walk unpacks:
    a tuple of integers named by :meth:`~gpudp.recurrence.Recurrence._back_returns` (the
    predecessor's coordinates, its state with ``traceback_state``; an interval's two children, and
    their states), or by ``returns`` where the walk unpacks another form (a splitting ``back``'s two
    predecessors). A :class:`ContractError` naming the call, the return and the form otherwise;
    False (left to the compiler) when ``back`` cannot run so. ``table``: what an interval's stateful
    ``back`` reads, passed as it is (the caller's guarded view: its error is the caller's to word,
    and passes unchanged)."""
    args = (*index, decision, *(() if state is None else (state,)))
    try:
        with np.errstate(all="ignore"):
            out = cls.back(*args, *(() if table is None else (table,)), *(read_only(x) for x in data))
    except ContractError:
        raise
    except Exception:
        return False
    names = cls._back_returns() if returns is None else returns
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
    form += "" if "->" in form and returns is None else f" -> ({', '.join(names)})"
    call = ", ".join([str(int(a)) for a in args] + ([] if table is None else ["T"]))
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

    def got() -> str:  # worded only for a message (a sweep checks a value or two every call)
        return f"{name} returned {short_repr(x)} ({type(x).__name__}){role} at {where}"

    if not _is_number(x):
        raise ContractError(
            f"{got()}: {noun} is one number, converted to value_dtype {dt.name} (compute with numbers, "
            "e.g. symbols as integer codes from data(), not str)"
        )
    if dt.kind != "i":
        return
    if isinstance(x, float | np.floating):
        cut = f" ({short_repr(x)} -> {int(x)})" if np.isfinite(x) else ""
        raise ContractError(
            f"{got()}, but value_dtype is {dt.name}: numba would truncate it to an integer without a "
            f"word{cut}. Return an integer (// divides integers; int(x) or round(x) converts on "
            "purpose), or declare a float value_dtype (np.float64)"
        )
    lo, hi = _int_range(dt)
    if not lo <= int(x) <= hi:
        fix = (
            "declare value_dtype = np.int64 (on the instance, self.value_dtype = np.int64, where the "
            "data decides)"
            if dt.itemsize < 8
            else "no integer value_dtype holds it (np.float64 does, inexactly past 2**53)"
        )
        raise ContractError(
            f"{got()}, which does not fit value_dtype {dt.name} ({lo} .. {hi}): it would wrap around "
            f"without a word; {fix}"
        )


#: (the method's function, the kinds of its arguments (:func:`arg_kinds`) or, for other arguments,
#: their numba types, the module constants the class was swept with) -> the return type numba's
#: CPU typing gives it (:func:`gpudp.jit.return_type`), or None
_RETURNS = KernelFactory("checks.returns", "fn", "args", "constants")


def check_typed_return(cls, meth: str, args: tuple, fn=None) -> None:
    """A :class:`ContractError` where ``meth`` (``cell`` or ``boundary``) of ``cls``, typed by numba
    for the types of ``args`` (what the engine passes it: the probe's arguments, data included),
    returns a float on some path where ``value_dtype`` (a record's field) is an integer type, or
    a float decision: numba unifies a path's ``1.5`` with the others' integers into float64, and
    the store would truncate every value without a word. The probes call it, so every path of
    every shape is checked before anything sweeps, on every backend (CPU typing: the CUDA
    simulator types nothing). Once per function and argument types in a process (the kernel
    table); a method numba cannot type so is left to the backend's compile. ``fn``: the function the
    engine compiles in place of ``meth`` itself, to type instead (a record interval cell's rewrite,
    :mod:`gpudp.interval.records`)."""
    owner = next((k for k in cls.__mro__ if meth in vars(k)), None)
    fn = getattr(cls, meth, None) if fn is None else fn
    if fn is None or not hasattr(fn, "__code__") or "family" in vars(owner):  # none, or the shape's own
        return
    from numba.core import types

    constants = getattr(cls, "_constants", None)
    key = arg_kinds(args)  # what numba's types of args depend on, read without typing them
    k = None if key is None else _RETURNS.lookup(fn=fn, args=key, constants=constants)
    if k is None or not k.ready:
        try:
            argtypes = _numba_types(args)
        except Exception:  # an argument numba has no type for (a probe's stand-in): nothing to type
            return
        if k is None:
            k = _RETURNS.lookup(fn=fn, args=argtypes, constants=constants)
        if not k.ready:
            k = k.keep(return_type(fn, argtypes))
    ret = k.fn
    if ret is None:
        return
    bits = getattr(cls, "_declared_bits", cls.decision_bits) if meth == "cell" else 0
    value, decision = ret, None
    if bits:
        if not (isinstance(ret, types.BaseTuple) and len(ret) == 2):
            return  # not (value, decision): the probe or the compile says so
        value, decision = ret.types
    fs = values.fields(cls)
    dt = np.dtype(cls.value_dtype)
    parts = [(value, dt, "the value")]
    if fs is not None:
        if not (isinstance(value, types.BaseTuple) and len(value) == len(fs)):
            return
        named = zip(value.types, fs, dt.names, strict=True)
        parts = [(t, f, f"field {n!r} of the value") for t, f, n in named]
    for t, f, role in parts:
        if f.kind == "i" and isinstance(t, types.Float):
            call = _typed_call(cls, meth, args, ret)
            raise ContractError(
                f"{cls.__name__}.{meth} returns a {t} as {role} on some path, but value_dtype is "
                f"{f.name}: the store would truncate it to an integer without a word (numba types "
                f"{call}; a float returned on one path makes every path's value a float). Return an "
                "integer on every path (// divides integers; int(x) or round(x) converts on purpose), "
                "or declare a float value_dtype (np.float64)"
            )
    if isinstance(decision, types.Float):
        call = _typed_call(cls, meth, args, ret)
        raise ContractError(
            f"{cls.__name__}.{meth} returns a {decision} as the decision on some path (numba types "
            f"{call}): a decision is an integer in 0 .. 2**decision_bits - 1; return an integer on "
            "every path (// divides integers)"
        )


def _numba_types(args: tuple) -> tuple:
    """numba's types of ``args`` (``numba.typeof``), arrays typed writable: the method is typed for
    what the kernels pass it, the probes' read-only views aside."""
    from numba import typeof
    from numba.core import types

    argtypes = (typeof(x) for x in args)
    return tuple(t.copy(readonly=False) if isinstance(t, types.Array) else t for t in argtypes)


def _typed_call(cls, meth: str, args: tuple, ret) -> str:
    """``Cls.meth(numba's types of args) -> ret``, for a message."""
    return f"{cls.__name__}.{meth}({', '.join(map(str, _numba_types(args)))}) -> {ret}"


def arg_kinds(args: tuple) -> tuple | None:
    """What numba's types of ``args`` (``numba.typeof``, an array's ``readonly`` aside) depend on,
    read from the values without typing them (a few microseconds less a call than typing them): an
    array's dtype, dimensions, layout and alignment; a Python int's width (numba types one by its
    bit length); a numpy scalar's dtype; a plain tuple's items. None where an argument is of any
    other kind (it is typed)."""
    out = []
    for x in args:
        t = type(x)
        if t is np.ndarray:
            f = x.flags
            out.append(("a", x.dtype, x.ndim, f.c_contiguous, f.f_contiguous, f.aligned))
        elif t is int:
            n = x.bit_length()
            if n > 64 or (n == 64 and x < 0):
                return None  # numba types no such int: typing says so
            out.append(("i", n < 64))
        elif t in (bool, float, complex):
            out.append((t.__name__,))
        elif isinstance(x, np.generic) and t.__module__ == "numpy":
            out.append(("g", x.dtype))
        elif t is tuple:
            inner = arg_kinds(x)
            if inner is None:
                return None
            out.append(("t", inner))
        else:
            return None
    return tuple(out)


@functools.cache
def _int_range(dt: np.dtype) -> tuple[int, int]:
    """The least and the greatest value of the integer type ``dt``."""
    info = np.iinfo(dt)
    return int(info.min), int(info.max)


def _is_number(x) -> bool:
    """A real Python or numpy number (bool included): what a cell's value may be before the cast."""
    return isinstance(x, int | float | np.integer | np.floating | np.bool_)


def _is_integer(x) -> bool:
    return isinstance(x, int | np.integer | np.bool_)


#: the methods of a recurrence that numba compiles, as :func:`typing_errors` names them
METHODS = ("cell", "boundary", "back")

#: numba on a call of a plain Python function: "Untyped global name 'f' ... <class 'function'>"
_UNTYPED = re.compile(r"Untyped global name '([^']+)'.*?<class 'function'>", re.S)
#: a call of one of the methods on a line of generated source (the checkpoints' ``user_cell`` too)
_CALL = re.compile(r"\b(?:user_)?(cell|boundary|back)\s*\(")
#: a source excerpt in numba's message: the file, the line, and the line marked by a caret
_EXCERPT = re.compile(r'File "([^"]+)", line (\d+):\n(?:.*\n)*?(.*)\n\s*\^', re.M)


@contextlib.contextmanager
def typing_errors(cls):
    """Where numba compiles ``cls``'s methods (a sweep, a batch, a traceback's walk): its typing
    error (``TypingError``, CPU or CUDA) becomes a :class:`ContractError` that names the class, the
    method (the one numba's message points to: ``cell``, ``boundary`` or ``back``), numba's first
    relevant line, the line of the method it points to, what the method must return and the fix;
    numba's error is chained (``__cause__``). The probes (:func:`probe_cell`, :func:`probe_boundary`,
    :func:`probe_back`) catch what one plain-Python call shows before anything compiles; this is
    for the rest: a wrong return on another path, a method that cannot run in plain Python, a call
    of a plain Python helper. An exception a compiled method raised as it ran, which numba's
    parallel kernels hand on as ``SystemError: ... returned a result with an exception set`` (a
    division by zero, a ``raise`` in ``cell``), becomes a :class:`ContractError` too, the exception
    chained. Other errors pass unchanged."""
    try:
        yield
    except Exception as e:
        if raised_in_kernel(e):
            raise raised_in_sweep(cls, e.__cause__) from e.__cause__
        if not any(k.__name__ == "TypingError" and k.__module__.startswith("numba") for k in type(e).__mro__):
            raise
        raise ContractError(typing_message(cls, str(e))) from e


def typing_message(cls, text: str) -> str:
    """The message of :func:`typing_errors` for numba's message ``text``."""
    meth, at = _culprit(cls, text)
    who = f"{cls.__name__}.{meth}" if meth else f"{cls.__name__}'s cell, boundary or back"
    return f"{who} does not compile: numba says {_gist(text)!r}{at}; {_fix(cls, meth, text)}"


def _culprit(cls, text: str) -> tuple[str | None, str]:
    """The method numba's message points to first (the innermost frame comes first: the method's
    own function, or a line of generated source calling it), and where in that method's source,
    ``" (file, line n: code)"`` or ``""``."""
    found = []  # (position, method)
    for meth in METHODS:
        fn = getattr(cls, meth, None)
        name = getattr(fn, "__qualname__", None)
        if name is None:
            continue
        for mark in (repr(fn), f"<function {name} at 0x"):
            p = text.find(mark)
            if p >= 0:
                found.append((p, meth))
    excerpts = list(_EXCERPT.finditer(text))
    for m in excerpts:
        call = _CALL.search(m.group(3))
        if call:
            found.append((m.start(), call.group(1)))
    if not found:
        return None, ""
    meth = min(found)[1]
    code = getattr(getattr(cls, meth), "__code__", None)
    lines = {}  # the excerpts of the method's own source: its line -> the code (and the type numba gave it)
    for m in excerpts:
        if code is None or os.path.basename(m.group(1)) != os.path.basename(code.co_filename):
            continue
        line = int(m.group(2))
        if line < code.co_firstlineno or f"def {code.co_name}(" not in m.group(0):
            continue
        typed = re.search(r"type '([^']+)', location: \n?$", text[max(0, m.start() - 200) : m.start()])
        said = m.group(3).split("  #")[0].strip()
        said = (said if len(said) <= 60 else said[:57] + "...") + (f" ({typed.group(1)})" if typed else "")
        lines.setdefault(line, said)
    if not lines:
        return meth, ""
    where = "; ".join(f"line {n}: {said}" for n, said in sorted(lines.items())[:3])
    return meth, f" ({os.path.basename(code.co_filename)}, {where})"


def _gist(text: str) -> str:
    """numba's first relevant line: the specific error an overload raised, when one did (``Casting
    unicode_type to int32 directly is unsupported.``), else the first line past the pipeline's."""
    m = re.search(r"raised a specific error:\s*\n\s*\w+: (.+)", text)
    lines = [m.group(1)] if m else text.splitlines()
    for line in lines:
        line = line.strip()
        if line and not line.startswith(("Failed in ", "During: ")):
            if line.startswith("('"):  # a tuple of strings: ('wrong tuple length ...: ', 'expected 2, got 3')
                line = "".join(re.findall(r"'([^']*)'", line))
            return line.split(", defined at ")[0]  # "Cannot unify .. for '$phi4', defined at <path>"
    return text.strip()[:200]


def _fix(cls, meth: str | None, text: str) -> str:
    """What to do, from what numba's message says went wrong in ``meth``."""
    m = _UNTYPED.search(text)
    if m:
        return (
            f"{m.group(1)} is a plain Python function; cell, boundary and back may call only compiled "
            "ones: decorate it with @numba.extending.register_jitable (docs/tutorial.md, section 2), "
            "which compiles it for the CPU and the GPU alike"
        )
    if meth is None:
        return (
            "cell, boundary and back are compiled by numba: plain Python over numbers and numpy arrays "
            "(docs/tutorial.md, section 2)"
        )
    want = expected(cls, meth)
    if "Can't unify return type" in text:
        return (
            f"every return of {meth} must give the same kind of thing, {want}: one of its paths returns "
            "something else"
        )
    if "OptionalType" in text or re.search(r"\bnone\b|NoneType", text):
        return f"a path of {meth} returns None (or ends without a return): every path must return {want}"
    if "unicode_type" in text or "Literal[str]" in text:
        return (
            f"{meth} returns a str; it must return {want} (compute with numbers, e.g. symbols as integer "
            "codes from data())"
        )
    if "wrong tuple length" in text or "failed to unpack" in text or "cannot unpack" in text:
        return f"{meth} returns a tuple of another length, or no tuple; it must return {want}"
    return (
        f"{meth} must return {want}, computed with numbers and numpy arrays only (docs/tutorial.md, "
        "section 2)"
    )


def expected(cls, meth: str) -> str:
    """What ``meth`` (``cell``, ``boundary``, ``back``) of ``cls`` returns, in words."""
    if meth == "back":
        names = cls._back_returns()
        return f"({', '.join(names)}), {len(names)} integers"
    fs = values.fields(cls)
    dt = np.dtype(cls.value_dtype)
    value = (
        f"one number (value_dtype {dt.name})"
        if fs is None
        else f"a tuple of {len(fs)} numbers (the fields {', '.join(dt.names)} of value_dtype)"
    )
    bits = getattr(cls, "_declared_bits", cls.decision_bits)
    if meth == "cell" and bits:
        return f"(value, decision), value {value} and decision an integer in 0 .. {(1 << bits) - 1}"
    return value


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
        out.append(widened_symbols(arr))
    check_symbol_types(out[0], out[1], "row_symbols()", "col_symbols()")
    return out[0], out[1]


def check_symbol_types(row, col, row_name: str, col_name: str) -> None:
    """Refuse, with an :class:`InputError`, row and column symbols (arrays, widened:
    :func:`widened_symbols`) that a cell cannot compare exactly, as numba compares them in float64
    (``2**53 + 1`` equals ``2**53`` there): an int64 beside a uint64 (named by ``col_name``; a
    smaller signed type is exact beside a uint64, a uint32 is widened to int64 already), and a 64-bit
    integer past 2^53 in magnitude beside real symbols (named by the integers' side: integers up to
    2^53 are exact in float64, and so are int32s)."""
    rd, cd = np.dtype(row.dtype), np.dtype(col.dtype)
    if {rd, cd} == {np.dtype(np.int64), np.dtype(np.uint64)}:
        raise InputError(
            col_name,
            f"{cd} beside {row_name} of {rd}: numba compares a signed and an unsigned 64-bit integer as "
            "float64, inexact past 2^53 (2^53 + 1 == 2^53 there): give both sides one integer dtype",
        )
    for ints, name, reals, other in ((row, row_name, col, col_name), (col, col_name, row, row_name)):
        it = np.dtype(ints.dtype)
        if it.kind in "iu" and it.itemsize == 8 and np.dtype(reals.dtype).kind == "f" and ints.size:
            big = max(abs(int(ints.min())), abs(int(ints.max())))
            if big > 1 << 53:
                raise InputError(
                    name,
                    f"{it} symbols up to {big} in magnitude beside {other} of {np.dtype(reals.dtype)}: numba "
                    "compares an integer with a real as float64, inexact past 2^53 (2^53 + 1 == 2^53 "
                    "there): give both sides integers, or reals that hold the values exactly",
                )


def widened_symbols(arr: np.ndarray) -> np.ndarray:
    """Symbols as every backend sees them (GPU shuffles move 32- and 64-bit values): integers and
    bools under 32 bits as int32, uint32 as int64, floats under 32 bits as float32; others as
    they are."""
    if arr.dtype.kind in "iub" and arr.dtype.itemsize < 4:
        return arr.astype(np.int32)
    if arr.dtype == np.uint32:
        return arr.astype(np.int64)
    if arr.dtype.kind == "f" and arr.dtype.itemsize < 4:
        return arr.astype(np.float32)
    return arr


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
