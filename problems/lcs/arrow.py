"""Sequences held in Arrow's layout, one buffer of symbols and one of offsets (the layout the solvers
use): Apache Arrow arrays (pyarrow) and StringZilla's ``Strs``. A batch's side is read from those
two buffers, with no Python object made per sequence.

An Arrow ``string`` / ``large_string`` array holds text (symbols by code point, as a list of
``str`` does: ASCII as bytes, other text as int32 code points), a ``binary`` / ``large_binary``
array bytes; a ``ChunkedArray`` (a column of a ``pyarrow.Table``) is joined first. An array with
nulls is read item by item as a list, its nulls then the errors a ``None`` in a list gives. A
StringZilla ``Strs`` (``stringzilla.Strs(...)``, ``Str.split(...)``, their slices, sorted or shuffled
copies) holds bytes, compared byte by byte as StringZilla's own distances are (its UTF-8 text is not
decoded: for code points, give a list of str or an Arrow string array). Neither package is needed:
nothing here imports one unless an argument is one of its objects already.
"""

from __future__ import annotations

import ctypes

import numpy as np

from gpudp.errors import InputError

__all__ = ["ArrowSequences", "HeldSequences", "StrsSequences", "is_held", "pair_sides", "side"]


def _package(x) -> str:
    return type(x).__module__.split(".")[0]


def is_held(x) -> bool:
    """Whether ``x`` is a pyarrow object or a StringZilla ``Strs`` (without importing either)."""
    package = _package(x)
    return package == "pyarrow" or (package == "stringzilla" and type(x).__name__ == "Strs")


def side(x, name: str):
    """``x`` (a pyarrow array or chunked array, or a StringZilla ``Strs``) as :class:`HeldSequences`,
    or, an Arrow array with nulls, as a list of its items; any other Arrow object raises
    :class:`InputError` naming ``name``."""
    if _package(x) == "stringzilla":
        return StrsSequences(x, name)
    import pyarrow as pa

    if isinstance(x, pa.ChunkedArray):
        x = x.combine_chunks()
    if not isinstance(x, pa.Array):
        raise InputError(name, f"an Arrow array of strings or binaries, got {type(x).__name__}")
    t = x.type
    text = pa.types.is_string(t) or pa.types.is_large_string(t)
    if not (text or pa.types.is_binary(t) or pa.types.is_large_binary(t)):
        raise InputError(
            name,
            f"an Arrow array of strings or binaries (string, large_string, binary, large_binary), got {t}: "
            "cast it first",
        )
    if x.null_count:
        return x.to_pylist()  # a null is then that item's error, as None in a list
    return ArrowSequences(x, text, name)


def pair_sides(x) -> tuple | None:
    """For ``x`` a tuple ``(A, B)`` of two Arrow arrays or StringZilla ``Strs``, pair ``p`` being
    ``(A[p], B[p])``: ``(sa, sb, bulk)``, the two sides as :func:`side` gives them and, where both
    are :class:`HeldSequences`, ``bulk = (a, a_off, b, b_off)``, their symbols as exact codes of one
    dtype and their offsets (None where a side has nulls: its items are then read one by one).
    None for anything else.

    Raises
    ------
    InputError
        sides of different lengths; strings against binaries (a str compares only with a str)."""
    from .sequences import exact_codes

    if not (isinstance(x, tuple) and len(x) == 2 and all(map(is_held, x))):
        return None
    sa, sb = side(x[0], "pairs[0]"), side(x[1], "pairs[1]")
    if len(sa) != len(sb):
        raise InputError("pairs", f"{len(sa):,} sequences against {len(sb):,}: one of each per pair")
    if isinstance(sa, list) or isinstance(sb, list):
        return sa, sb, None
    if sa.text != sb.text:
        raise InputError(
            "pairs",
            "strings (an Arrow string array) against bytes (an Arrow binary array or a StringZilla "
            "Strs): a str compares only with a str (characters are not bytes); cast one side",
        )
    (a, a_off), (b, b_off) = sa.packed(), sb.packed()
    a, b = exact_codes(a, b)
    return sa, sb, (a, a_off, b, b_off)


class HeldSequences:
    """A side of a batch held in Arrow's layout (:func:`side`): ``len``, item ``i`` as Python's
    ``str`` or ``bytes`` (what the per-pair re-checks read), ``text`` (whether its items are str),
    ``name`` (the argument's, for errors), and :meth:`packed`, every sequence's symbols in one array
    with their offsets."""

    text: bool
    name: str

    def packed(self) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError


class ArrowSequences(HeldSequences):
    """A pyarrow string or binary array without nulls."""

    def __init__(self, array, text: bool, name: str):
        self.array, self.text, self.name = array, text, name

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, i: int):
        return self.array[i].as_py()

    def __iter__(self):
        return iter(self.array.to_pylist())

    def packed(self) -> tuple[np.ndarray, np.ndarray]:
        """``(symbols, offsets)``: the sequences' symbols one after another (uint8; int32 code points
        for text that is not all ASCII) and the ``len + 1`` offsets of each (int64), read from the
        array's buffers (its symbols not copied unless decoded).

        Raises
        ------
        InputError
            text that is not valid UTF-8 (an array built from raw buffers unchecked)."""
        import pyarrow as pa

        a, n = self.array, len(self.array)
        _, offs, data = a.buffers()[:3]
        wide = pa.types.is_large_string(a.type) or pa.types.is_large_binary(a.type)  # 64-bit offsets
        off = np.frombuffer(offs, np.int64 if wide else np.int32)[a.offset : a.offset + n + 1].astype(
            np.int64
        )
        if not n:
            return np.zeros(0, np.uint8), np.zeros(1, np.int64)
        symbols = (
            np.frombuffer(data, np.uint8)[off[0] : off[-1]] if data is not None else np.zeros(0, np.uint8)
        )
        off -= off[0]
        if not self.text or not (symbols >= 0x80).any():
            return symbols, off
        try:
            points = symbols.tobytes().decode("utf-8").encode("utf-32-le", "surrogatepass")
        except UnicodeDecodeError as e:
            raise InputError(
                self.name, f"an Arrow string array that is not valid UTF-8 ({e.reason})"
            ) from None
        # each sequence's offset in code points: the bytes that begin a character, counted
        starts = np.zeros(len(symbols) + 1, np.int64)
        np.cumsum((symbols & 0xC0) != 0x80, out=starts[1:])
        return np.frombuffer(points, "<u4").astype(np.int32), starts[off]


class StrsSequences(HeldSequences):
    """A StringZilla ``Strs``: bytes, read from its tape and offsets (``tape_address``,
    ``offsets_address``, ``offsets_are_large``: the ``len + 1`` offsets of each string in the tape,
    32- or 64-bit, Arrow's layout) and copied, so that nothing outlives the ``Strs``."""

    text = False

    def __init__(self, strs, name: str):
        self.strs, self.name, self._packed = strs, name, None

    def __len__(self) -> int:
        return len(self.strs)

    def __getitem__(self, i: int) -> bytes:  # from the copy (StringZilla 5.3 crashes on some items)
        symbols, off = self.packed()
        return symbols[off[i] : off[i + 1]].tobytes()

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def packed(self) -> tuple[np.ndarray, np.ndarray]:
        """``(symbols, offsets)``: the strings' bytes one after another (uint8) and the ``len + 1``
        offsets of each (int64), read once.

        Raises
        ------
        InputError
            a ``Strs`` whose buffers do not hold what its length says (offsets that are not
            ``len + 1`` rising values within the tape): nothing is read from them."""
        if self._packed is None:
            self._packed = self._read()
        return self._packed

    def _read(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`packed`'s reading."""
        x, n = self.strs, len(self.strs)
        if not n:
            return np.zeros(0, np.uint8), np.zeros(1, np.int64)
        try:  # the offsets first: StringZilla 5.3 crashes on ``tape_nbytes`` where the tape is empty
            wide, size, at = bool(x.offsets_are_large), int(x.offsets_nbytes), int(x.offsets_address)
        except (AttributeError, TypeError, ValueError) as e:
            raise InputError(self.name, f"a StringZilla Strs whose buffers cannot be read ({e})") from None
        if not at:  # no buffers at all: StringZilla 5.3 makes none where every string is empty (and
            return np.zeros(0, np.uint8), np.zeros(n + 1, np.int64)  # crashes reading their items)
        if size != (n + 1) * (8 if wide else 4):
            what = f"a StringZilla Strs of {n:,} strings with {size:,} bytes of offsets"
            raise InputError(self.name, f"{what}: not its layout")
        raw = (ctypes.c_char * size).from_address(at)
        off = np.frombuffer(raw, np.uint64 if wide else np.uint32).astype(np.int64)
        if (np.diff(off) < 0).any() or off[0] < 0:
            raise InputError(self.name, "a StringZilla Strs whose offsets do not rise: not its layout")
        used = int(off[-1] - off[0])
        if not used:
            return np.zeros(0, np.uint8), off - off[0]
        tape_at, tape_size = int(x.tape_address), int(x.tape_nbytes)
        if off[-1] > tape_size or not tape_at:
            raise InputError(self.name, "a StringZilla Strs whose offsets go past its tape: not its layout")
        tape = (ctypes.c_char * used).from_address(tape_at + int(off[0]))
        return np.frombuffer(tape, np.uint8).copy(), off - off[0]
