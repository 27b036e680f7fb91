"""The module constants a recurrence's compiled methods read, so that a constant changed in the
process (a notebook's ``GAP = 2`` then ``GAP = 3``) reaches the kernels instead of the values they
were compiled with.

numba compiles a global's value into the machine code, and the engine keeps a recurrence class's
kernels for the process: a sweep after such a change would silently run the old value. So the
engine reads, at each sweep, the constants that ``cell``, ``boundary`` and ``back`` (and the
helpers they call) read from their modules' globals or closures (:func:`read_by`). Where the
methods' own differ from what the class's first sweep read, the recurrence is swept as a subclass
keyed by them (:meth:`gpudp.recurrence.Recurrence._specialized`), compiled afresh; back at the first
values, the first kernels serve again. A helper (``register_jitable`` or ``numba.njit``) is compiled
once per process by numba itself, whatever calls it: where a constant *it* reads changed, the sweep
is refused with a :class:`~gpudp.ContractError` naming the helper, the constant and the fix, never
run with the old value.

Numbers, strings, and tuples of them count by value; an array by identity, and one of at most
:data:`CONTENT_BYTES` by its contents too (rebinding the name counts, and writing into a small
array in place; writing into a larger one does not, as numba keeps the array it compiled with:
pass data that changes through ``data()``); a helper function by identity too (a name rebound to
another function: a notebook's cell defining the helper again). Constants read as another module's attribute
(``mod.GAP``) are not followed.
"""

from __future__ import annotations

import functools
import types

import numpy as np

__all__ = ["read_by", "changed_helpers", "METHODS"]

#: the methods the backends compile from a recurrence class
METHODS = ("cell", "boundary", "back")

_SCALARS = (bool, int, float, complex, str, bytes, np.generic)
#: a module array of at most this many bytes counts by its contents too (written in place, the next
#: sweep compiles with the new contents); a larger one by identity only
CONTENT_BYTES = 1 << 16


def read_by(cls) -> tuple[tuple, tuple]:
    """``(direct, helpers)``: the constants ``cls``'s compiled methods read themselves, and those the
    helpers they call read, each as ``((where, name), value), ...`` in a fixed order (``where``: the
    reading function's module for a method, its qualified name for a helper)."""
    direct: dict = {}
    helpers: dict = {}
    seen: set = set()
    for name in METHODS:
        fn = getattr(cls, name, None)
        _read(getattr(fn, "__func__", fn), direct, helpers, seen)
    return tuple(sorted(direct.items(), key=repr)), tuple(sorted(helpers.items(), key=repr))


def changed_helpers(first: tuple, now: tuple) -> list[str]:
    """The helpers' constants that differ between two readings (``read_by(...)[1]``), in words."""
    was = dict(first)
    return [
        f"{where} read {name} = {was.get((where, name))!r}, now {value!r}"
        for (where, name), value in now
        if (where, name) in was and was[(where, name)] != value
    ]


def _read(fn, out: dict, helpers: dict, seen: set, helper: bool = False) -> None:
    fn = getattr(fn, "py_func", fn)  # a numba dispatcher: the Python function it compiled
    if not isinstance(fn, types.FunctionType) or id(fn) in seen:
        return
    seen.add(id(fn))
    where = fn.__qualname__ if helper else (getattr(fn, "__module__", None) or "?")
    into = helpers if helper else out
    g = fn.__globals__
    for name in _names(fn.__code__):
        if name in g:
            _value((where, name), g[name], into, helpers, seen)
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True):
        try:
            _value((where, name), cell.cell_contents, into, helpers, seen)
        except ValueError:  # an empty cell
            continue


@functools.lru_cache(maxsize=4096)
def _names(co: types.CodeType) -> tuple[str, ...]:
    """The global names ``co`` and the code nested in it read (read once per code object: a code
    object does not change, and every sweep asks)."""
    out = list(co.co_names)
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            out += _names(c)
    return tuple(out)


def _value(key, v, out: dict, helpers: dict, seen: set) -> None:
    if isinstance(v, _SCALARS) or (isinstance(v, tuple) and all(isinstance(x, _SCALARS) for x in v)):
        out[key] = v
    elif isinstance(v, np.ndarray):
        # numba compiles a global array's contents into the kernel: a small one's bytes count too
        seen_bytes = v.tobytes() if v.nbytes <= CONTENT_BYTES else None
        out[key] = ("array", id(v), v.dtype.str, v.shape, seen_bytes)
    else:
        fn = getattr(v, "py_func", v)
        if isinstance(fn, types.FunctionType):  # a helper it calls: the name rebound to another counts
            out[key] = ("function", fn)
        _read(v, out, helpers, seen, helper=True)  # and what the helper reads counts too
