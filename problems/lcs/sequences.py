"""Sequences as exact integer codes: what the sequence solvers (LCS, edit distance) compare.

:func:`encode` turns str, bytes and integer arrays or lists into a 1-D array holding each symbol
exactly; :func:`exact_codes` gives two such arrays one dtype in which two symbols are equal exactly
when the given ones are (never through floats, never wrapping).
"""

from __future__ import annotations

from operator import attrgetter, itemgetter

import numpy as np

from gpudp.errors import InputError
from gpudp.inputs import short_repr

from .strlists import read_pairs

__all__ = [
    "encode",
    "exact_codes",
    "kernel_codes",
    "kind",
    "bulk_pairs",
    "bulk_sides",
    "join_codes",
    "uniform_rows",
]

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def kind(x) -> str:
    if isinstance(x, str):
        return "str"
    if isinstance(x, bytes | bytearray) or (
        isinstance(x, memoryview) and x.format in ("B", "c") and x.ndim == 1
    ):
        return "bytes"
    return "int"


def _int_objects(values, field: str) -> np.ndarray:
    """Python or numpy integers of any size as an exact array: int64 or uint64 when they fit, else an
    object array of Python ints."""
    ints = []
    for k, v in enumerate(values):
        if isinstance(v, bool | np.bool_) or not isinstance(v, int | np.integer):
            raise InputError(
                field, f"item {k} is {short_repr(v)} ({type(v).__name__}): symbols must be integers"
            )
        ints.append(int(v))
    if not ints:
        return np.zeros(0, dtype=np.int64)
    lo, hi = min(ints), max(ints)
    if lo >= _INT64_MIN and hi <= _INT64_MAX:
        return np.array(ints, dtype=np.int64)
    if lo >= 0 and hi < 2**64:
        return np.array(ints, dtype=np.uint64)
    out = np.empty(len(ints), dtype=object)
    out[:] = ints
    return out


def encode(x, field: str) -> np.ndarray:
    """A sequence as a 1-D array holding its symbols exactly.

    str: ASCII as uint8, other text as int32 code points; bytes: uint8; integer arrays in their own
    dtype (native byte order); lists, tuples and object arrays of integers as int64, uint64 or (beyond
    64 bits) an object array of Python ints. Floats, bools, strings inside arrays and arrays of more
    than one dimension raise :class:`~gpudp.InputError` naming ``field``.
    """
    if isinstance(x, str):
        if x.isascii():
            return np.frombuffer(x.encode("ascii"), dtype=np.uint8)
        return np.frombuffer(x.encode("utf-32-le", "surrogatepass"), dtype="<u4").astype(np.int32)
    if isinstance(x, memoryview) and (x.format not in ("B", "c") or x.ndim != 1):
        x = np.asarray(x)  # its items, not its bytes (a view of an int64 array holds int64 symbols)
    if isinstance(x, bytes | bytearray | memoryview):
        return np.frombuffer(bytes(x), dtype=np.uint8)
    if isinstance(x, list | tuple):
        return _int_objects(x, field)
    if isinstance(x, np.ndarray):
        if x.ndim != 1:
            raise InputError(field, f"a sequence must be one-dimensional, got shape {x.shape}")
        if x.size == 0:
            return np.zeros(0, dtype=np.int64)
        kind = x.dtype.kind
        if kind in "iu":
            return np.ascontiguousarray(x, dtype=x.dtype.newbyteorder("="))
        if kind == "O":
            return _int_objects(x.tolist(), field)
        if kind in "fc":
            raise InputError(
                field,
                f"float symbols are not accepted (dtype {x.dtype}): NaN never equals itself and "
                "rounding makes equal values differ; encode symbols as integers",
            )
        raise InputError(field, f"integer arrays only (got dtype {x.dtype}); encode symbols as integers")
    raise InputError(field, f"expected str, bytes or a 1-D integer array or list, got {type(x).__name__}")


def kernel_codes(ea: np.ndarray, eb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two sequences as integer arrays of one dtype the kernels compare, in which two symbols are
    equal exactly when the given symbols are equal (never through floats, never wrapping): int32 or
    int64 only, so that the kernels are compiled for two dtypes, not for every one a caller uses."""
    ca, cb = exact_codes(ea, eb)
    dt = np.int32 if ca.dtype.itemsize < 4 or ca.dtype == np.int32 else np.int64
    return ca.astype(dt, copy=False), cb.astype(dt, copy=False)


def exact_codes(ea: np.ndarray, eb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if ea.dtype == eb.dtype and ea.dtype != object:
        if ea.dtype == np.uint64:  # a bijection onto int64: equality is kept
            return ea.view(np.int64), eb.view(np.int64)
        return ea, eb
    if ea.dtype != object and eb.dtype != object:
        dt = np.promote_types(ea.dtype, eb.dtype)
        if dt.kind in "iu":
            ca, cb = ea.astype(dt), eb.astype(dt)
            return (ca.view(np.int64), cb.view(np.int64)) if dt == np.uint64 else (ca, cb)
        # a signed array beside a uint64 one: fine in int64 when the uint64 side stays below 2**63,
        # in uint64 when the signed side has no negative value
        sa, ub = (ea, eb) if ea.dtype.kind == "i" else (eb, ea)
        if len(ub) == 0 or int(ub.max()) <= _INT64_MAX:
            ca, cb = ea.astype(np.int64), eb.astype(np.int64)
            return ca, cb
        if len(sa) == 0 or int(sa.min()) >= 0:
            return ea.astype(np.uint64).view(np.int64), eb.astype(np.uint64).view(np.int64)
    # otherwise each symbol's rank among the values of both, found by exact comparisons of Python ints
    both = np.concatenate([ea.astype(object), eb.astype(object)])
    _, inverse = np.unique(both, return_inverse=True)
    inverse = inverse.astype(np.int32 if len(both) < 2**31 else np.int64)
    return inverse[: len(ea)].copy(), inverse[len(ea) :].copy()


def _offsets(seqs: list) -> np.ndarray:
    """The ``len(seqs) + 1`` offsets of each sequence in their concatenation."""
    off = np.zeros(len(seqs) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, seqs), np.int64, len(seqs)), out=off[1:])
    return off


def _symbols(text: str, ascii_only: bool) -> np.ndarray:
    """A joined text's symbols: bytes, or int32 code points unless ``ascii_only``."""
    if ascii_only:
        return np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4").astype(np.int32)


def bulk_pairs(pairs, empty=None, later: bool = False) -> tuple | None:
    """A batch whose every pair is a tuple or list of exactly two sequences of one form, read in
    bulk: both sides' symbols as one array each with their offsets (Arrow's layout), ``(a, a_off,
    b, b_off)``, as :func:`bulk_sides` reads them; pairs of str or of bytes by
    :func:`.strlists.read_pairs`, from the objects where they lie (a list that mixes the two as
    well: a pair's value depends on its own two sides only), with ``(A, None, B, None)`` where every
    side is bytes or ASCII of its first pair's length (2-D, a row a pair: :func:`uniform_rows`), in
    buffers made by ``empty(count)`` (``count`` bytes; None: numpy's). None for any other batch:
    each pair is then read by itself, and a bad one is that pair's own error.

    ``later``: a fifth item, the rows' bytes left to copy where the objects are read as rows
    (:class:`.strlists.LaterRows`: its ``fill`` copies them, a slice at a time), else None."""
    if not isinstance(pairs, list) or not pairs:
        return None
    fast = read_pairs(pairs, empty, later)  # of str or bytes: from the objects
    if fast is not None:
        return fast
    if not set(map(type, pairs)) <= {tuple, list} or set(map(len, pairs)) != {2}:  # C loops, no frames
        return None
    bulk = bulk_sides(list(map(itemgetter(0), pairs)), list(map(itemgetter(1), pairs)))
    return bulk if bulk is None or not later else (*bulk, None)


def bulk_sides(a: list, b: list) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Two non-empty lists of sequences, every one of a single form, read in bulk: each list's
    symbols as one array with its offsets, ``(a, a_off, b, b_off)``, coded as :func:`encode` and
    :func:`exact_codes` code each sequence. The forms: ``str`` (ASCII as bytes; otherwise both
    lists as int32 code points, so that equal characters are equal codes across both), ``bytes``,
    and 1-D integer numpy arrays (one dtype a list). None for anything else (an empty list, mixed
    forms, any other element): the caller then reads each sequence by itself."""
    if not a or not b:
        return None
    types = set(map(type, a)) | set(map(type, b))
    if types == {str}:
        ta, tb = "".join(a), "".join(b)
        ascii_only = ta.isascii() and tb.isascii()
        return _symbols(ta, ascii_only), _offsets(a), _symbols(tb, ascii_only), _offsets(b)
    if types == {bytes}:
        return _bytes(b"".join(a)), _offsets(a), _bytes(b"".join(b)), _offsets(b)
    if types == {np.ndarray}:
        dtypes = [set(map(attrgetter("dtype"), side)) for side in (a, b)]
        if any(len(d) != 1 or next(iter(d)).kind not in "iu" for d in dtypes):
            return None
        if set(map(attrgetter("ndim"), a)) | set(map(attrgetter("ndim"), b)) != {1}:
            return None
        ca, cb = exact_codes(*(encode(np.concatenate(side), "pairs") for side in (a, b)))
        return ca, _offsets(a), cb, _offsets(b)
    return None


def uniform_rows(a, a_off, b, b_off) -> tuple[np.ndarray, np.ndarray] | None:
    """Pairs read in bulk (:func:`bulk_pairs`) whose sequences are all of one length on each side, as
    two 2-D arrays (views of ``a`` and ``b``, a row a pair), which a batch packs as rows (the pair
    count times the lengths: no offsets to read, no median of sizes to find); else None."""
    if a_off is None:  # read as rows already (strlists.read_pairs)
        return a, b
    la, lb = np.diff(a_off), np.diff(b_off)
    if not len(la) or (la != la[0]).any() or (lb != lb[0]).any():
        return None
    return a.reshape(len(la), int(la[0])), b.reshape(len(lb), int(lb[0]))


def join_codes(codes: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Sequences coded one by one (:func:`encode`) as one array of their symbols, exactly, and their
    ``len(codes) + 1`` offsets: in their common integer dtype, or as Python ints (an object array,
    ranked later by :func:`exact_codes`) where no integer dtype holds them all (int64 beside uint64,
    beyond 64 bits)."""
    off = _offsets(codes)
    dtypes = set(map(attrgetter("dtype"), codes))
    if not codes:
        return np.zeros(0, np.int64), off
    common = np.result_type(*dtypes) if object not in dtypes else np.dtype(object)
    if common.kind not in "iu":
        common = np.dtype(object)
    return np.concatenate([x.astype(common, copy=False) for x in codes]), off


def _bytes(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=np.uint8)
