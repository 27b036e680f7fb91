"""Sequences held by Apache Arrow arrays (pyarrow): a batch's side read from the array's own two
buffers, its symbols and its offsets (the layout the solvers use), with no Python object made per
sequence.

An Arrow ``string`` / ``large_string`` array holds text (symbols by code point, as a list of
``str`` does: ASCII as bytes, other text as int32 code points), a ``binary`` / ``large_binary``
array bytes; a ``ChunkedArray`` (a column of a ``pyarrow.Table``) is joined first. An array with
nulls is read item by item as a list, its nulls then the errors a ``None`` in a list gives. pyarrow
itself is optional: nothing here imports it unless an argument is an Arrow object already.
"""

from __future__ import annotations

import numpy as np

from gpudp.errors import InputError

__all__ = ["ArrowSequences", "is_arrow", "pair_sides", "side"]


def is_arrow(x) -> bool:
    """Whether ``x`` is a pyarrow object (without importing pyarrow)."""
    return type(x).__module__.split(".")[0] == "pyarrow"


def side(x, name: str):
    """``x`` (a pyarrow array or chunked array) as :class:`ArrowSequences`, or as a list of its items
    where it has nulls; any other Arrow object raises :class:`InputError` naming ``name``."""
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
    """For ``x`` a tuple ``(A, B)`` of two Arrow arrays, pair ``p`` being ``(A[p], B[p])``:
    ``(sa, sb, bulk)``, the two sides as :func:`side` gives them and, where both are
    :class:`ArrowSequences`, ``bulk = (a, a_off, b, b_off)``, their symbols as exact codes of one
    dtype and their offsets (None where a side has nulls: its items are then read one by one).
    None for anything else.

    Raises
    ------
    InputError
        sides of different lengths; strings against binaries (a str compares only with a str)."""
    from .sequences import exact_codes

    if not (isinstance(x, tuple) and len(x) == 2 and all(map(is_arrow, x))):
        return None
    sa, sb = side(x[0], "pairs[0]"), side(x[1], "pairs[1]")
    if len(sa) != len(sb):
        raise InputError("pairs", f"{len(sa):,} sequences against {len(sb):,}: one of each per pair")
    if isinstance(sa, list) or isinstance(sb, list):
        return sa, sb, None
    if sa.text != sb.text:
        raise InputError(
            "pairs",
            "an Arrow array of strings against one of binaries: a str compares only with a str "
            "(characters are not bytes); cast one side",
        )
    (a, a_off), (b, b_off) = sa.packed(), sb.packed()
    a, b = exact_codes(a, b)
    return sa, sb, (a, a_off, b, b_off)


class ArrowSequences:
    """A side of a batch held by a pyarrow string or binary array without nulls (:func:`side`):
    ``len``, item ``i`` as Python's ``str`` or ``bytes`` (what the per-pair re-checks read), and
    :meth:`packed`, every sequence's symbols in one array with their offsets."""

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
