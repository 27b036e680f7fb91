"""What a cell's value is: one number, or a *record* of several named fields.

A recurrence's ``value_dtype`` is one of int32, int64, float32, float64 (a *scalar* cell), or a
numpy structured dtype whose fields each have one of those types (a *record* cell: Gotoh's three
matrices ``M``, ``X``, ``Y``; a score beside the number of optimal paths)::

    value_dtype = np.dtype([("m", np.int32), ("x", np.int32), ("y", np.int32)])

A record cell's dependencies reach ``cell`` as plain tuples in field order (``m, x, y = up``, or
``up[0]``), and ``cell`` returns a tuple of as many numbers (or ``(that tuple, decision)``); each
field is cast to its own type, so the fields keep their exactness. ``fill`` is one number for every
field or a tuple of one per field; ``boundary`` returns a tuple. The results' value arrays
(``last_row``, ``last_col``, checkpoints, an interval sweep's ``table``) are numpy structured
arrays of ``value_dtype`` (``result.last_row["m"]``). An interval cell reads its table ``T[a, b]``
as such a tuple too (:mod:`gpudp.interval.records`).

The engine keeps a record as *structure of arrays*: every buffer of values (a tile edge, a
checkpoint row, an interval table) is a tuple of one array per field, so consecutive cells of one field are
consecutive in memory (coalesced on the GPU), and a value in flight is a tuple of registers.

Kernel templates are written once for both kinds with a few macros, expanded here before the
source compiles (:func:`expand`), so a scalar recurrence's kernels are exactly what they were:

``LD(a, i)``       the value at ``a[i]`` (``i`` may be a parenthesised pair for a 2-D buffer)
``ST(a, i, v)``    store ``v`` at ``a[i]`` (a statement on its own line)
``SHUP(v)``        ``cuda.shfl_up_sync(FULL, v, 1)``, field by field
``SHFL(v, lane)``  ``cuda.shfl_sync(FULL, v, lane)``, field by field
``VEMPTY(n)``      a new buffer of ``n`` values (``np.empty``)

``VT(x)`` (the value type called on ``x``) casts a cell's result, and ``VT(FILL)`` is the fill,
for both kinds: for a record ``VT`` is a compiled function building the tuple of cast fields.
"""

from __future__ import annotations

import re

import numpy as np

from .errors import ContractError

#: the types a scalar cell or a record's field may have
SCALAR_TYPES = (np.int32, np.int64, np.float32, np.float64)
#: the most fields a record may have
MAX_FIELDS = 8


def _scalar_ok(dt: np.dtype) -> bool:
    return dt in [np.dtype(t) for t in SCALAR_TYPES]


def check_value_dtype(name: str, value_dtype) -> np.dtype:
    """``value_dtype`` as a numpy dtype; ContractError (naming the class) when it is neither a
    supported scalar type nor a record of such fields."""
    try:
        dt = np.dtype(value_dtype)
    except TypeError:
        dt = None
    if dt is not None and dt.names is None and _scalar_ok(dt):
        return dt
    if dt is not None and dt.names is not None:
        bad = [n for n in dt.names if dt.fields[n][0].names is not None or not _scalar_ok(dt.fields[n][0])]
        if not bad and 1 <= len(dt.names) <= MAX_FIELDS:
            return dt
        if bad:
            raise ContractError(
                f"{name}.value_dtype: field {bad[0]!r} has type {dt.fields[bad[0]][0]}; every field of a "
                "record cell must be one of np.int32, np.int64, np.float32, np.float64"
            )
        raise ContractError(
            f"{name}.value_dtype: a record cell has 1 to {MAX_FIELDS} fields, got {len(dt.names)}"
        )
    raise ContractError(
        f"{name}.value_dtype = {value_dtype!r}: must be one of np.int32, np.int64, np.float32, np.float64, "
        "or a record of such fields: np.dtype([('m', np.int32), ('x', np.int32), ...])"
    )


def fields(rec_cls) -> list[np.dtype] | None:
    """The record's field types in order, or None for a scalar cell."""
    dt = np.dtype(rec_cls.value_dtype)
    if dt.names is None:
        return None
    return [dt.fields[n][0] for n in dt.names]


def is_record(rec_cls) -> bool:
    return np.dtype(rec_cls.value_dtype).names is not None


def fill_values(rec_cls) -> tuple:
    """The fill per field (a record), checked: ContractError for a tuple of the wrong length."""
    fs = fields(rec_cls)
    fill = rec_cls.fill
    if isinstance(fill, tuple | list):
        if len(fill) != len(fs):
            raise ContractError(
                f"{rec_cls.__name__}.fill = {fill!r}: a record of {len(fs)} fields needs one number or "
                f"{len(fs)} numbers"
            )
        return tuple(f.type(x) for f, x in zip(fs, fill, strict=True))
    return tuple(f.type(fill) for f in fs)


def check_fill(rec_cls) -> None:
    """ContractError when ``fill`` does not suit the cell type."""
    if is_record(rec_cls):
        fill_values(rec_cls)
    elif isinstance(rec_cls.fill, tuple | list):
        raise ContractError(f"{rec_cls.__name__}.fill = {rec_cls.fill!r}: a scalar cell's fill is one number")


def full(rec_cls, shape, empty=np.empty):
    """A buffer of values at the fill: an array, or (a record) a tuple of one array per field.
    ``empty(shape, dtype)`` allocates (``np.empty``, or a device allocator with ``[:] =``)."""
    buf = map_dtypes(rec_cls, lambda dt: empty(shape, dt))
    fill_buf(rec_cls, buf)
    return buf


def fill_buf(rec_cls, buf, put=None) -> None:
    """Set every value of ``buf`` (an array, or a record's tuple of field arrays, on the host or a
    device) to the fill, in place: ``put(array, value)`` where given (a device's own fill), else
    ``array[:] = value``."""
    pairs = zip(buf, fill_values(rec_cls), strict=True) if isinstance(buf, tuple) else [(buf, rec_cls.fill)]
    for a, v in pairs:
        if put is None:
            a[:] = v
        else:
            put(a, v)


def map_dtypes(rec_cls, make):
    """``make(dtype)`` for the value type, or (a record) a tuple of ``make(field dtype)`` per field:
    a buffer allocated as the engine lays values out."""
    fs = fields(rec_cls)
    if fs is None:
        return make(np.dtype(rec_cls.value_dtype))
    return tuple(make(f) for f in fs)


def to_host(buf):
    """A device buffer (array or tuple of arrays) copied to the host; host buffers pass through."""
    if isinstance(buf, tuple):
        return tuple(to_host(b) for b in buf)
    return buf.copy_to_host() if hasattr(buf, "copy_to_host") else buf


def structured(rec_cls, buf):
    """The user's view of a buffer: the array itself (scalar), or a structured array of
    ``value_dtype`` gathered from the tuple of field arrays (a copy)."""
    if not isinstance(buf, tuple):
        return buf
    dt = np.dtype(rec_cls.value_dtype)
    out = np.empty(buf[0].shape, dt)
    for name, a in zip(dt.names, buf, strict=True):
        out[name] = a
    return out


def split(rec_cls, arr):
    """A structured array as the tuple of its fields' contiguous arrays (the engine's layout);
    a scalar cell's array as is."""
    if not is_record(rec_cls):
        return arr
    return tuple(np.ascontiguousarray(arr[n]) for n in np.dtype(rec_cls.value_dtype).names)


def map_buf(buf, fn):
    """``fn`` applied to the array, or to each field's array."""
    return tuple(fn(b) for b in buf) if isinstance(buf, tuple) else fn(buf)


def key(rec_cls, v: str) -> str:
    """Source of what a reduction compares for the value ``v``: itself, or a record's first field."""
    return f"{v}[0]" if is_record(rec_cls) else v


def key_dtype(rec_cls) -> np.dtype:
    """What a reduction compares: the value type, or a record's first field."""
    fs = fields(rec_cls)
    return np.dtype(rec_cls.value_dtype) if fs is None else fs[0]


def itemsize(rec_cls) -> int:
    return np.dtype(rec_cls.value_dtype).itemsize


def caster_source(rec_cls) -> str:
    """Source of ``vcast(x)``: a record's fields cast to their types, as a tuple (``VT`` of a record)."""
    n = len(fields(rec_cls))
    parts = ", ".join(f"F{k}(x[{k}])" for k in range(n))
    return f"def vcast(x):\n    return ({parts},)\n"


def namespace(rec_cls, compile_fn, compile_source) -> dict:
    """The names the macros and ``VT`` need in a kernel's namespace: for a record, ``VT`` (the
    compiled caster, ``compile_fn(compile_source(source, name, namespace))``: the backend's
    compiler over :func:`gpudp.codegen.compile_source`, which imports this module), ``FILL`` (a
    tuple) and the field types ``F0``, ``F1``, .. with their dtypes ``F0D``, ..; nothing extra for
    a scalar cell."""
    import numba

    fs = fields(rec_cls)
    if fs is None:
        return {}
    ns = {f"F{k}": numba.from_dtype(f) for k, f in enumerate(fs)}
    ns.update({f"F{k}D": f for k, f in enumerate(fs)})
    ns["VT"] = compile_fn(compile_source(caster_source(rec_cls), "vcast", dict(ns)))
    ns["FILL"] = fill_values(rec_cls)
    return ns


# ---------------------------------------------------------------------------------------------
# Macro expansion of kernel templates
# ---------------------------------------------------------------------------------------------

_MACRO = re.compile(r"\b(LD|ST|SHUP|SHFL|VEMPTY)\(")


def _args(src: str, start: int) -> tuple[list[str], int]:
    """The comma-separated arguments of a call whose ``(`` is at ``start - 1``, split at the top
    level, and the index after its ``)``."""
    depth, parts, cur, k = 0, [], [], start
    while k < len(src):
        c = src[k]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                parts.append("".join(cur).strip())
                return parts, k + 1
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        k += 1
    raise ValueError("unbalanced macro call in a kernel template")


def _index(a: str, i: str) -> str:
    """``a[i]``; a parenthesised pair ``(x, y)`` indexes two dimensions, ``a[x, y]``."""
    if i.startswith("("):
        inner, end = _args(i, 1)
        if end == len(i) and len(inner) > 1:
            return f"{a}[{', '.join(inner)}]"
    return f"{a}[{i}]"


def _expand_one(name: str, args: list[str], n: int | None) -> str:
    if name == "LD":
        a, i = args
        if n is None:
            return _index(a, i)
        return "(" + ", ".join(_index(f"{a}[{k}]", i) for k in range(n)) + ",)"
    if name == "ST":
        a, i, v = args
        if n is None:
            return f"{_index(a, i)} = {v}"
        pre = ""
        if not v.isidentifier():  # evaluated once
            pre, v = f"st_ = {v}; ", "st_"
        return pre + "; ".join(f"{_index(f'{a}[{k}]', i)} = {v}[{k}]" for k in range(n))
    if name == "SHUP":
        (v,) = args
        if n is None:
            return f"cuda.shfl_up_sync(FULL, {v}, 1)"
        return "(" + ", ".join(f"cuda.shfl_up_sync(FULL, {v}[{k}], 1)" for k in range(n)) + ",)"
    if name == "SHFL":
        v, lane = args
        if n is None:
            return f"cuda.shfl_sync(FULL, {v}, {lane})"
        return "(" + ", ".join(f"cuda.shfl_sync(FULL, {v}[{k}], {lane})" for k in range(n)) + ",)"
    if name == "VEMPTY":
        (m,) = args
        if n is None:
            return f"np.empty({m}, VTD)"
        return "(" + ", ".join(f"np.empty({m}, F{k}D)" for k in range(n)) + ",)"
    raise ValueError(name)


def expand(src: str, rec_cls) -> str:
    """The template ``src`` with its value macros expanded for ``rec_cls``'s cell type (see the
    module's text); innermost calls first, so macros nest."""
    fs = fields(rec_cls)
    n = None if fs is None else len(fs)
    while True:
        hits = list(_MACRO.finditer(src))
        if not hits:
            return src
        # the last macro call that starts has no macro inside its arguments left to expand
        m = hits[-1]
        args, end = _args(src, m.end())
        src = src[: m.start()] + _expand_one(m.group(1), args, n) + src[end:]
