"""Fingerprints: a hash of everything a compiled kernel depends on (the byte code of a function and
of what it calls, constants, arrays, numba types), so that a cache entry is never served for other
code. Used by :mod:`gpudp.cache` (on-disk entries) and :mod:`gpudp.codegen` (names of generated
modules)."""

from __future__ import annotations

import hashlib
import marshal
import types

import numpy as np

# ---------------------------------------------------------------------------------------------


def _code_bytes(co: types.CodeType) -> bytes:
    """A code object's byte code, constants and names, without its file name and line numbers (so
    that the same function read from two places, or generated twice, hashes the same)."""
    consts = tuple(_CodeKey(c) if isinstance(c, types.CodeType) else c for c in co.co_consts)
    parts = [co.co_code, repr(co.co_names).encode(), repr(co.co_varnames).encode()]
    parts.append(repr(co.co_freevars).encode() + repr(co.co_cellvars).encode())
    parts.append(repr((co.co_argcount, co.co_kwonlyargcount, co.co_flags)).encode())
    for c in consts:
        parts.append(
            c.data if isinstance(c, _CodeKey) else marshal.dumps(c) if _marshalable(c) else repr(c).encode()
        )
    return b"\0".join(parts)


class _CodeKey:
    def __init__(self, co):
        self.data = _code_bytes(co)


def _marshalable(x) -> bool:
    try:
        marshal.dumps(x)
        return True
    except ValueError:
        return False


def fingerprint(obj, _h=None, _seen=None) -> str:
    """A hash of what ``obj`` (a function, a numba dispatcher, a value) contributes to machine code
    that calls or reads it: functions by their code and, recursively, the globals and closure values
    they use; arrays by dtype, shape and bytes; scalars, strings, types by value."""
    top = _h is None
    h = hashlib.sha256() if top else _h
    seen = set() if _seen is None else _seen
    _feed(obj, h, seen)
    return h.hexdigest() if top else ""


def _feed(obj, h, seen):
    key = id(obj)
    if key in seen:
        h.update(b"<seen>")
        return
    if isinstance(obj, bool | int | float | complex | str | bytes | type(None)):
        h.update(repr((type(obj).__name__, obj)).encode())
        return
    seen.add(key)
    if isinstance(obj, np.ndarray):
        h.update(repr((obj.dtype.str, obj.shape)).encode())
        h.update(np.ascontiguousarray(obj).tobytes())
        return
    if isinstance(obj, np.generic | np.dtype):
        h.update(repr((type(obj).__name__, str(obj), getattr(obj, "dtype", None))).encode())
        return
    if isinstance(obj, tuple | list | frozenset | set):
        h.update(type(obj).__name__.encode())
        items = sorted(obj, key=repr) if isinstance(obj, set | frozenset) else obj
        for x in items:
            _feed(x, h, seen)
        return
    if isinstance(obj, dict):
        for k in sorted(obj, key=repr):
            _feed(k, h, seen)
            _feed(obj[k], h, seen)
        return
    py_func = getattr(obj, "py_func", None)  # numba dispatchers (CPU and CUDA)
    if isinstance(py_func, types.FunctionType):
        h.update(b"dispatcher:" + type(obj).__name__.encode())
        h.update(repr(sorted(getattr(obj, "targetoptions", {}).items(), key=repr)).encode())
        _feed(py_func, h, seen)
        return
    defn = getattr(obj, "_defn", None)  # numba intrinsics
    if isinstance(defn, types.FunctionType):
        h.update(b"intrinsic:")
        _feed(defn, h, seen)
        return
    if isinstance(obj, staticmethod | classmethod):
        _feed(obj.__func__, h, seen)
        return
    if isinstance(obj, types.FunctionType):
        _feed_function(obj, h, seen)
        return
    if isinstance(obj, types.ModuleType):
        h.update(b"module:" + obj.__name__.encode())
        return
    if isinstance(obj, type):
        h.update(b"class:" + f"{obj.__module__}.{obj.__qualname__}".encode())
        return
    # numba types, builtins, anything else: its kind and text (stable for what kernels read)
    h.update(f"{type(obj).__module__}.{type(obj).__qualname__}:{obj!r}".encode())


def _feed_function(fn: types.FunctionType, h, seen):
    co = fn.__code__
    h.update(b"function:" + fn.__name__.encode())
    h.update(_code_bytes(co))
    g = fn.__globals__
    names = all_names(co)
    for name in sorted(names):
        if name in g:
            val = g[name]
            h.update(b"global:" + name.encode())
            _feed(val, h, seen)
            if isinstance(val, types.ModuleType):  # helpers called as module.attr
                for attr in sorted(names):
                    sub = getattr(val, attr, None)
                    if isinstance(sub, types.FunctionType) or hasattr(sub, "py_func"):
                        if getattr(sub, "__module__", "") and not _is_library(sub):
                            h.update(b"attr:" + attr.encode())
                            _feed(sub, h, seen)
    if fn.__closure__:
        for cell in fn.__closure__:
            try:
                _feed(cell.cell_contents, h, seen)
            except ValueError:  # an empty cell
                h.update(b"<empty>")
    if fn.__defaults__:
        _feed(fn.__defaults__, h, seen)


def all_names(co) -> set:
    names = set(co.co_names)
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            names |= all_names(c)
    return names


_LIBRARIES = ("numpy", "numba", "math", "cmath", "builtins", "llvmlite", "operator")


def _is_library(fn) -> bool:
    mod = getattr(fn, "__module__", "") or ""
    return mod.split(".")[0] in _LIBRARIES
