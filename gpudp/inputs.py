"""Reading users' files safely: bounded in size, binary data refused early, a UTF-8 BOM accepted, and
every failure an :class:`~gpudp.InputError` naming the file, never a traceback.

Every reader of an instance format goes through :func:`read_text` (or :func:`read_bytes` for
formats that decode themselves), so that ``/dev/zero``, a 50 GB file given by mistake, a truncated
``.gz`` or a spreadsheet saved as binary end in one clear line before any memory is exhausted.
"""

from __future__ import annotations

import gzip
import math
import os
import zlib

from .errors import InputError

__all__ = [
    "exact_in_float",
    "parse_time_limit",
    "read_bytes",
    "read_text",
    "decode_text",
    "strip_bom",
    "is_gzip",
    "max_input_bytes",
    "short_repr",
]

#: the UTF-8 byte-order mark some editors put at the start of a text file
BOM = b"\xef\xbb\xbf"
#: the first two bytes of every gzip stream
GZIP_MAGIC = b"\x1f\x8b"

#: default ceiling on the bytes of one input file (after decompression); GPUDP_MAX_INPUT_BYTES
#: overrides it. The reader also stops at a quarter of the memory this process may still use.
DEFAULT_MAX_INPUT = 16 << 30
_CHUNK = 1 << 20


def short_repr(value, width: int = 40) -> str:
    """``repr(value)`` cut to ``width`` characters (ending in ``...`` when cut): a user's value
    quoted in an error message, however long it was."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def max_input_bytes() -> int:
    """The size limit for one input file: GPUDP_MAX_INPUT_BYTES (default 16 GiB), and at most a
    quarter of :func:`gpudp.memory.available_memory` (reading needs the text and a decoded copy)."""
    from .memory import available_memory, parse_bytes

    env = os.environ.get("GPUDP_MAX_INPUT_BYTES")
    limit = parse_bytes(env, "GPUDP_MAX_INPUT_BYTES") if env else DEFAULT_MAX_INPUT
    return max(min(limit, available_memory() // 4), 1 << 20)


class _Prefixed:
    """A binary stream with its first bytes (already read, to look at them) put back in front: what
    a pipe needs, which cannot seek back."""

    def __init__(self, head: bytes, f):
        self.head, self.f = head, f

    def read(self, n: int = -1) -> bytes:
        if not self.head:
            return self.f.read(n)
        if n is None or n < 0:
            out, self.head = self.head + self.f.read(), b""
            return out
        out, self.head = self.head[:n], self.head[n:]
        return out


def _open(name: str, gz: bool):
    """``name`` opened for reading bytes, decompressed when ``gz`` or when it starts with gzip's
    magic bytes (looked at on the stream itself, so a pipe or ``/dev/stdin`` is recognised too)."""
    f = open(name, "rb")
    try:
        head = f.read(2)
    except BaseException:
        f.close()
        raise
    if gz or head == GZIP_MAGIC:
        return gzip.GzipFile(fileobj=_Prefixed(head, f), mode="rb"), f
    return _Prefixed(head, f), f


def read_bytes(path, what: str, *, gz: bool | None = None, allow_nul: bool = False, limit=None) -> bytes:
    """The bytes of ``path``, decompressed when it is gzip: named ``.gz`` or ``gz=True`` (then it
    must be gzip), or starting with gzip's magic bytes whatever its name (a pipe too).

    ``what`` names the input in messages (``"knapsack file"``, ``"FASTA file a"``). Raises
    :class:`~gpudp.InputError` when the file cannot be opened, is over the size limit
    (:func:`max_input_bytes`), holds a NUL byte (binary data; unless ``allow_nul``), or is a corrupt
    or truncated gzip stream.
    """
    name = str(path)
    if gz is None:
        gz = name.endswith(".gz")
    limit = max_input_bytes() if limit is None else int(limit)
    try:
        if os.path.isdir(name):
            raise InputError(what, f"{name} is a folder, not a file")
        f, raw = _open(name, gz)
    except InputError:
        raise
    except OSError as e:
        raise InputError(what, f"cannot open {name}: {e.strerror or e}") from None
    parts, total = [], 0
    try:
        with raw:
            while True:
                chunk = f.read(_CHUNK)
                if not chunk:
                    break
                if not allow_nul:
                    k = chunk.find(b"\x00")
                    if k >= 0:
                        at = total + k
                        raise InputError(what, f"{name} holds binary data (a NUL byte at offset {at})")
                total += len(chunk)
                if total > limit:
                    raise InputError(
                        what,
                        f"{name} is larger than the {limit / 2**30:.2f} GiB limit for one input file "
                        "(GPUDP_MAX_INPUT_BYTES, and a quarter of the available memory)",
                    )
                parts.append(chunk)
    except (EOFError, zlib.error, gzip.BadGzipFile) as e:
        why = f"{type(e).__name__}: {e}"
        raise InputError(what, f"{name} is a corrupt or truncated gzip file ({why})") from None
    except OSError as e:
        raise InputError(what, f"cannot read {name}: {e.strerror or e}") from None
    return b"".join(parts)


def strip_bom(raw: bytes) -> bytes:
    """``raw`` without a leading UTF-8 byte-order mark."""
    return raw[len(BOM) :] if raw.startswith(BOM) else raw


def is_gzip(path) -> bool:
    """Whether ``path`` is gzip-compressed: named ``.gz``, or a regular file that starts with gzip's
    magic bytes whatever its name (an unreadable file is left to :func:`read_bytes` to report)."""
    name = str(path)
    if name.endswith(".gz"):
        return True
    try:
        if not os.path.isfile(name):
            return False
        with open(name, "rb") as f:
            return f.read(2) == GZIP_MAGIC
    except OSError:
        return False


def decode_text(raw: bytes, what: str, name: str = "", encoding: str = "utf-8") -> str:
    """Text from bytes: a UTF-8 byte-order mark is dropped; bytes that are not valid in ``encoding``
    raise :class:`~gpudp.InputError` with the offset of the first one."""
    raw = strip_bom(raw)
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as e:
        bad = raw[e.start : e.start + 1].hex()
        where = f"{name} " if name else ""
        raise InputError(
            what, f"{where}is not {encoding.upper()} text (byte 0x{bad} at offset {e.start}): a binary file?"
        ) from None


def read_text(path, what: str, *, encoding: str = "utf-8", gz: bool | None = None, limit=None) -> str:
    """The text of ``path``: :func:`read_bytes` then :func:`decode_text` (BOM dropped, line endings
    kept as they are)."""
    return decode_text(read_bytes(path, what, gz=gz, limit=limit), what, str(path), encoding)


def exact_in_float(x: int) -> bool:
    """Whether float64 holds the integer ``x`` exactly: every integer up to 2^53 in magnitude, and
    past that those whose low bits are zero (2^60 is, 2^53 + 1 is not). A reader that turns a list
    of integers and reals into float64 refuses an integer for which this is False, rather than
    rounding it silently."""
    try:
        return abs(x) <= 1 << 53 or int(float(x)) == x
    except OverflowError:  # past float64's range (2^1024 - 1 rounds up to it)
        return False


def parse_time_limit(value, field: str = "time_limit") -> float | None:
    """Seconds from a number or text; None (no limit) for None or infinity; InputError for NaN,
    negative numbers and words. Every solver's ``time_limit`` (``--time-limit``) is read by it."""
    if value is None:
        return None
    try:
        t = float(value)
    except (TypeError, ValueError):
        raise InputError(field, f"not a number of seconds: {value!r}") from None
    if math.isnan(t) or t < 0:
        raise InputError(field, f"must be a number of seconds >= 0, got {value!r}")
    return None if math.isinf(t) else t
