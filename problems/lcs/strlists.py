"""A list of pairs of str (or bytes) read where CPython keeps it: compiled passes over the objects.

To the builtins, a million pairs of ASCII str are a million tuples and two million str objects, and
every pass over them (``type``, ``len``, ``itemgetter``, ``"".join``, ``encode``) touches each one
again: bulk_pairs made eleven such passes, 1.0-1.4 s for 1,000,000 pairs of 100 on a loaded 2-core
host (2026-12-06), where the same pairs as two 2-D arrays take 0.03 s besides the kernel. Here a
compiled function (numba, every core) reads the list's item array, each pair's two items and each
str's header (its type, its length, and PEP 393's state: compact, ASCII or of which kind), and
copies the symbols into buffers: what :func:`.sequences.bulk_pairs` gives for the same list (bytes
where every str is ASCII, else int32 code points, both sides). Pairs of two ``bytes`` are read the
same way (a str pairs only with a str, as a pair read by itself does). Pairs of bytes or ASCII of
one length a side (the first pair's) are copied to their rows in that same pass; any other list
takes a second pass, to offsets (0.16 s in all for the million pairs above).

The objects are read as CPython lays them out (``ob_type``, ``ob_size``, a tuple's items inline and
a list's through ``ob_item``, a compact str's state bits and its symbols after its header, a bytes
object's after its own): :func:`layout` checks every offset and bit on probe objects first, and
where one does not hold (another interpreter, a free-threaded build, a later change of the structs)
this module reads nothing. Each pass holds the GIL while it runs (``nogil=False``), so that no
Python thread changes a list pair or frees an object meanwhile, and the second pass reads every
pair again before it copies (Python ran between the two: a changed list is refused, not read).

:func:`read_pairs` returns None for any list that is not exactly this: a pair that is not a tuple
or list of two, an item that is not a ``str`` or ``bytes`` (a subclass included, a str beside a
bytes), a str that is not compact (every str Python 3.12 and later make is). The builtins' path then
reads it as before (a bad pair its own error).
"""

from __future__ import annotations

import ctypes
import functools
import sys
import sysconfig

import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.core import cgutils
from numba.extending import intrinsic, register_jitable

from gpudp.errors import InputError
from gpudp.jit import njit
from gpudp.memory import available_memory

__all__ = ["LaterRows", "layout", "read_pairs"]

#: PEP 393's state word: ``kind`` (bits 2-4), ``compact`` (5), ``ascii`` (6); a compact ASCII str
#: has kind 1 and both flags
STATE_MASK, STATE_ASCII = 0x7C, 0x64
#: the state of a compact str that is not ASCII: ``compact`` set, ``ascii`` not (its kind apart)
WIDE_MASK, STATE_WIDE = 0x60, 0x20


def _loader(bits: int):
    """An intrinsic: the unsigned ``bits``-bit integer at address ``addr`` (an int64), as an int64."""

    @intrinsic
    def load(typingctx, addr):
        def codegen(context, builder, sig, args):
            value = builder.load(builder.inttoptr(args[0], ir.IntType(bits).as_pointer()))
            return value if bits == 64 else builder.zext(value, ir.IntType(64))

        return types.int64(types.int64), codegen

    return load


#: a word (pointers, lengths), a str's state, a 2-byte code unit and a byte, at an address
_word, _word32, _word16, _byte = map(_loader, (64, 32, 16, 8))


@intrinsic
def _copy(typingctx, dst, at, addr, n):
    """``dst[at : at + n] = `` the ``n`` bytes at address ``addr`` (``dst`` a 1-D uint8 array)."""

    def codegen(context, builder, sig, args):
        arr = context.make_array(sig.args[0])(context, builder, args[0])
        start = builder.gep(arr.data, [args[1]])
        cgutils.raw_memcpy(builder, start, builder.inttoptr(args[2], start.type), args[3], 1)
        return context.get_dummy_value()

    return types.void(dst, types.int64, types.int64, types.int64), codegen


@functools.cache
def layout() -> np.ndarray | None:
    """What the reader needs of CPython's objects, ``[ob_type, ob_size (a str's length too), items
    (inline in a tuple, behind a pointer in a list), a str's state, a compact ASCII str's
    characters, the type objects of tuple, list, str and bytes, a bytes object's bytes, a compact
    str's code units past ASCII]`` (offsets from an object's address), each checked on probe objects
    here; None where any of them does not hold (then nothing is read this way)."""
    if sys.implementation.name != "cpython" or sysconfig.get_config_var("Py_GIL_DISABLED"):
        return None
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        return None
    kind, size, items, state = 8, 16, 24, 32
    data = sys.getsizeof("") - 1  # a compact ASCII str: its header, then its characters and a NUL
    raw = sys.getsizeof(b"") - 1  # a bytes object: the same, its bytes after the header

    def word(addr):
        return ctypes.c_int64.from_address(addr).value

    def ascii_at(s) -> bool:
        return ctypes.c_uint32.from_address(id(s) + state).value & STATE_MASK == STATE_ASCII

    made = "".join(["gp", "udp"])  # made at run time: not a constant of this module's code
    # a compact str of other text: a longer header, then its units (one made here: CPython 3.12's
    # one-character strings are static, their UTF-8 form cached and counted by getsizeof)
    wide = sys.getsizeof(made + "\xe9") - (len(made) + 2)
    pair, listed = (made, made + "!"), [made * 3, ""]
    try:
        for seq, at in ((pair, id(pair) + items), (listed, word(id(listed) + items))):
            if word(id(seq) + kind) != id(type(seq)) or word(id(seq) + size) != 2:
                return None
            if [word(at), word(at + 8)] != [id(seq[0]), id(seq[1])]:
                return None
        for s in (made, made * 50, "", "\x7f" + made):
            if word(id(s) + kind) != id(str) or word(id(s) + size) != len(s) or not ascii_at(s):
                return None
            if sys.getsizeof(s) != data + len(s) + 1 or ctypes.string_at(id(s) + data, len(s)) != s.encode():
                return None
        if any(ascii_at(s) for s in (made + "\xe9", "\u4e2d" + made, made + "\U0001f600")):
            return None
        for s, unit, codec in (
            (made + "\xe9", 1, "latin-1"),
            ("\u4e2d" + made, 2, "utf-16-le"),
            (made + "\U0001f600", 4, "utf-32-le"),
            ("\ud800" + made, 2, "utf-16-le"),  # a lone surrogate: a code point like any other
        ):
            st = ctypes.c_uint32.from_address(id(s) + state).value
            if st & WIDE_MASK != STATE_WIDE or (st >> 2) & 7 != unit or word(id(s) + size) != len(s):
                return None
            if sys.getsizeof(s) != wide + (len(s) + 1) * unit:
                return None
            if ctypes.string_at(id(s) + wide, len(s) * unit) != s.encode(codec, "surrogatepass"):
                return None
        for x in (made.encode(), b"", made.encode() * 40 + b"\x00\xff"):
            if word(id(x) + kind) != id(bytes) or word(id(x) + size) != len(x):
                return None
            if sys.getsizeof(x) != raw + len(x) + 1 or ctypes.string_at(id(x) + raw, len(x)) != x:
                return None
    except Exception:  # noqa: BLE001 - any surprise means: do not read objects this way
        return None
    return np.array(
        [kind, size, items, state, data, id(tuple), id(list), id(str), id(bytes), raw, wide], np.int64
    )


@register_jitable
def _side(s, lay):
    """One side of a pair, the object at ``s``: ``(at, length, unit)``, where its symbols start, how
    many, and 0 for bytes or ASCII text (a byte a symbol, copied as it is) or else the bytes of a code
    point of its compact text (1, 2 or 4: PEP 393's kind); ``unit`` -1 for anything else."""
    t = _word(s + lay[0])
    if t == lay[8]:
        return s + lay[9], _word(s + lay[1]), 0
    if t != lay[7]:
        return 0, 0, -1
    st = _word32(s + lay[3])
    if st & STATE_MASK == STATE_ASCII:
        return s + lay[4], _word(s + lay[1]), 0
    unit = (st >> 2) & 7
    if st & WIDE_MASK == STATE_WIDE and (unit == 1 or unit == 2 or unit == 4):
        return s + lay[10], _word(s + lay[1]), unit
    return 0, 0, -1


@register_jitable
def _pair(items, p, lay):
    """Pair ``p`` of the list whose item array is at ``items``: its two sides (:func:`_side`),
    ``(at_a, at_b, len_a, len_b, unit_a, unit_b)``, or units -1 where it is not a tuple or list of
    two ``str`` or of two ``bytes`` (exact types: a str pairs only with a str)."""
    obj = _word(items + 8 * p)
    t = _word(obj + lay[0])
    if t == lay[5]:
        at = obj + lay[2]
    elif t == lay[6]:
        at = _word(obj + lay[2])
    else:
        return 0, 0, 0, 0, -1, -1
    if _word(obj + lay[1]) != 2:
        return 0, 0, 0, 0, -1, -1
    s0, s1 = _word(at), _word(at + 8)
    if (_word(s0 + lay[0]) == lay[8]) != (_word(s1 + lay[0]) == lay[8]):  # a str beside bytes
        return 0, 0, 0, 0, -1, -1
    d0, m0, u0 = _side(s0, lay)
    d1, m1, u1 = _side(s1, lay)
    return d0, d1, m0, m1, u0, u1


@njit(parallel=True, cache=True, nogil=False)  # the GIL held: no Python thread changes the objects
def _scan(seq, n, lay, lens, addr, units, la, lb, rows_a, rows_b, copy):
    """Each pair's two lengths, symbol addresses and units (:func:`_side`) into ``lens``, ``addr``
    and ``units`` (``(2, n)``), and where its sides are bytes or ASCII of ``la`` and ``lb`` symbols
    (the first pair's: most batches are of one length a side; -1: none), with ``copy`` its bytes
    into row ``p`` of ``rows_a`` and ``rows_b`` (``n * la`` and ``n * lb`` bytes) in the same pass.
    ``(ok, rows, wide)``: ``ok`` False where the list has not ``n`` items or a pair is not two
    ``str`` or two ``bytes``; ``rows`` True where every pair is of the rows (and with ``copy`` went
    there); ``wide`` where a str is not ASCII."""
    if _word(seq + lay[1]) != n:
        return False, False, False
    items = _word(seq + lay[2])
    ok = np.ones(n, np.bool_)
    rows = np.full(n, la >= 0)
    for p in prange(n):
        d0, d1, m0, m1, u0, u1 = _pair(items, p, lay)
        if u0 < 0 or u1 < 0:
            ok[p] = False
            continue
        lens[0, p], lens[1, p] = m0, m1
        addr[0, p], addr[1, p] = d0, d1
        units[0, p], units[1, p] = u0, u1
        if m0 == la and m1 == lb and u0 == 0 and u1 == 0:
            if copy:
                _copy(rows_a, p * la, d0, la)
                _copy(rows_b, p * lb, d1, lb)
        else:
            rows[p] = False
    return ok.all(), rows.all(), units.max() > 0


@njit(parallel=True, cache=True, nogil=False)
def _fill(seq, n, lay, addr, la, lb, rows_a, rows_b, p0, p1):
    """Copy pairs ``p0 .. p1 - 1`` to their rows (every pair of the list found bytes or ASCII of
    ``la`` and ``lb`` symbols by :func:`_scan`), each pair read again first: False (rows not to be
    used) where the list or one of these pairs has changed since (Python code ran in between), so
    that no address is read but of an object the list holds now."""
    if _word(seq + lay[1]) != n:
        return False
    items = _word(seq + lay[2])
    ok = np.ones(p1 - p0, np.bool_)
    for q in prange(p1 - p0):
        p = p0 + q
        d0, d1, m0, m1, u0, u1 = _pair(items, p, lay)
        if d0 != addr[0, p] or d1 != addr[1, p] or m0 != la or m1 != lb or u0 != 0 or u1 != 0:
            ok[q] = False
        else:
            _copy(rows_a, p * la, d0, la)
            _copy(rows_b, p * lb, d1, lb)
    return ok.all()


class LaterRows:
    """The rows of a list read by :func:`read_pairs` with ``later=True``, their bytes not yet copied:
    ``fill(p0, p1)`` copies those of pairs ``p0 .. p1 - 1`` (a launch calls it slice by slice, so that
    the host reads a slice while the GPU copies and computes the one before), every pair read again
    first. Raises :class:`gpudp.errors.InputError` where the list changed since it was scanned: the
    batch's earlier slices are already on their way, so it cannot fall back to reading the list as
    it is now."""

    def __init__(self, pairs, lay, addr, la: int, lb: int, rows_a, rows_b):
        self.pairs, self.lay, self.addr = pairs, lay, addr
        self.la, self.lb, self.rows_a, self.rows_b = la, lb, rows_a, rows_b

    def fill(self, p0: int, p1: int) -> None:
        n = len(self.addr[0])
        args = (self.lay, self.addr, self.la, self.lb, self.rows_a, self.rows_b, p0, p1)
        if p1 > p0 and not _fill(id(self.pairs), n, *args):
            raise InputError(
                "pairs", "the list changed while it was read (another thread changed it, or a pair in it)"
            )


@register_jitable
def _widen(dst, at, addr, n, unit):
    """``dst[at : at + n]`` (int32) = the ``n`` code points at ``addr``, ``unit`` bytes each (0: a
    byte each, as 1)."""
    if unit == 4:
        for i in range(n):
            dst[at + i] = _word32(addr + 4 * i)
    elif unit == 2:
        for i in range(n):
            dst[at + i] = _word16(addr + 2 * i)
    else:
        for i in range(n):
            dst[at + i] = _byte(addr + i)


@njit(parallel=True, cache=True, nogil=False)
def _gather(seq, n, lay, lens, addr, units, offsets, a, b):
    """Copy every pair's symbols to ``a`` and ``b`` at ``offsets`` (uint8: bytes and ASCII only;
    int32: code points), each pair read again first: False (nothing to use) where the list or a
    list pair has changed since :func:`_scan` (Python code ran in between), so that no address is
    read but of an object the list holds now."""
    if _word(seq + lay[1]) != n:
        return False
    items = _word(seq + lay[2])
    ok = np.ones(n, np.bool_)
    for p in prange(n):
        d0, d1, m0, m1, u0, u1 = _pair(items, p, lay)
        if d0 != addr[0, p] or d1 != addr[1, p] or m0 != lens[0, p] or m1 != lens[1, p]:
            ok[p] = False
        elif u0 != units[0, p] or u1 != units[1, p] or (a.itemsize == 1 and u0 + u1 > 0):
            ok[p] = False
        elif a.itemsize == 1:
            _copy(a, offsets[0, p], d0, m0)
            _copy(b, offsets[1, p], d1, m1)
        else:
            _widen(a, offsets[0, p], d0, m0, u0)
            _widen(b, offsets[1, p], d1, m1, u1)
    return ok.all()


def _uint8(count: int) -> np.ndarray:
    return np.empty(count, np.uint8)


def read_pairs(pairs, empty=None, later: bool = False) -> tuple | None:
    """``(a, a_off, b, b_off)`` of a non-empty ``list`` whose every item is a tuple or list of two
    ``str`` or of two ``bytes`` (exact types), as :func:`.sequences.bulk_pairs` reads it: both
    sides' symbols with their offsets, as uint8 where every str is ASCII, else as int32 code points
    (both sides; bytes as their values); or, where every pair's sides are bytes or ASCII of the
    first pair's lengths, ``(A, None, B, None)``, two 2-D uint8 arrays of a row a pair. None for
    any other list, or where CPython's layout was not confirmed (:func:`layout`).

    One compiled pass (holding the GIL) reads every pair's lengths, and copies the bytes of those
    of the first pair's lengths to their rows; where a pair is of other lengths, or of text past
    ASCII, a second pass copies them all to their offsets. ``empty(count)`` makes each pass's
    buffer (``count`` bytes, both sides in one: a page-locked block for the GPU, :mod:`.batch`;
    None: numpy's).

    ``later``: the first pass copies nothing, and the result has a fifth item, where the rows'
    bytes are left to copy a :class:`LaterRows` (its ``fill`` copies them), else None."""
    lay = layout()
    if lay is None or type(pairs) is not list or not pairs:
        return None
    empty = empty or _uint8
    n = len(pairs)
    lens, addr = np.empty((2, n), np.int64), np.empty((2, n), np.int64)
    units = np.empty((2, n), np.int8)
    la = lb = -1
    rows = np.zeros(0, np.uint8)
    first = pairs[0]  # its lengths, if it is a pair of str: the rows' (the pass checks every pair)
    if type(first) in (tuple, list) and len(first) == 2 and all(type(x) in (str, bytes) for x in first):
        # rows of its lengths, unless they could not fit (a long first pair before short ones)
        if n * (len(first[0]) + len(first[1])) <= available_memory() // 2:
            try:
                rows = empty(n * (len(first[0]) + len(first[1])))
                la, lb = len(first[0]), len(first[1])
            except MemoryError:
                pass
    rows_a, rows_b = rows[: n * max(la, 0)], rows[n * max(la, 0) :]
    ok, uniform, wide = _scan(id(pairs), n, lay, lens, addr, units, la, lb, rows_a, rows_b, not later)
    if not ok:
        return None
    rest = (LaterRows(pairs, lay, addr, la, lb, rows_a, rows_b),) if later else ()
    if uniform:
        return rows_a.reshape(n, la), None, rows_b.reshape(n, lb), None, *rest
    del rows, rows_a, rows_b  # a block of the pool goes back before the next is taken
    offsets = np.zeros((2, n + 1), np.int64)
    np.cumsum(lens, axis=1, out=offsets[:, 1:])
    total = int(offsets[0, n] + offsets[1, n])
    both = empty(4 * total).view(np.int32) if wide else empty(total)
    a, b = both[: offsets[0, n]], both[offsets[0, n] :]
    if not _gather(id(pairs), n, lay, lens, addr, units, offsets, a, b):
        return None
    return a, offsets[0], b, offsets[1], *((None,) if later else ())
