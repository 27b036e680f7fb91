"""Sequence files: FASTA (one record or every record, gzip too, ``;`` comments) and plain sequence
files, read into the symbols the solvers compare, with one-line errors naming the file, the line
and the byte that is not a sequence symbol."""

from __future__ import annotations

import os

from gpudp.errors import InputError
from gpudp.inputs import is_gzip, read_bytes, strip_bom

__all__ = ["IGNORED", "SEQUENCE_SYMBOLS", "read_fasta", "read_fasta_records"]

#: bytes kept as sequence symbols: IUPAC letters (either case), '*' (stop), '-' and '.' (gaps)
SEQUENCE_SYMBOLS = bytes(range(ord("A"), ord("Z") + 1)) + bytes(range(ord("a"), ord("z") + 1)) + b"*-."
#: bytes dropped from sequence lines: spaces, tabs and digits (GenBank-style position numbers)
IGNORED = b" \t0123456789"


def _describe_byte(b: int) -> str:
    if b >= 0x80:
        return f"byte 0x{b:02x} (not ASCII)"
    if b < 0x20 or b == 0x7F:
        return f"byte 0x{b:02x} (a control character)"
    return f"{chr(b)!r}"


def _drop_comments(block: bytes) -> bytes:
    """``;`` comment lines (old FASTA) emptied, the line count kept."""
    if not (block.startswith(b";") or b"\n;" in block):
        return block
    return b"\n".join(b"" if line.startswith(b";") else line for line in block.split(b"\n"))


def _sequence(block: bytes, first_line: int, where: str, field: str) -> bytes:
    """The sequence symbols of ``block`` (the lines of one record, from line ``first_line``): spaces,
    tabs and digits dropped; any other byte that is not a sequence symbol raises InputError."""
    block = _drop_comments(block)
    seq = block.translate(None, IGNORED + b"\n")
    bad = seq.translate(None, SEQUENCE_SYMBOLS)
    if bad:
        pos = block.find(bad[:1])
        line = first_line + block.count(b"\n", 0, pos)
        col = pos - (block.rfind(b"\n", 0, pos) + 1) + 1
        raise InputError(
            field,
            f"{where} line {line} column {col}: {_describe_byte(bad[0])} is not a sequence symbol "
            "(letters, '*', '-' and '.'; digits and spaces are ignored)",
        )
    return seq


def _header_name(line: bytes, default: str) -> str:
    text = line[1:].decode("utf-8", errors="replace").strip()
    text = "".join(ch if ch.isprintable() else " " if ch == "\t" else "?" for ch in text)
    return text or default


def _no_text_before(raw: bytes, start: int, where: str, field: str) -> None:
    """InputError when anything but comments and blank lines precedes the first header."""
    head = _drop_comments(raw[:start])
    if head.strip():
        pos = len(head) - len(head.lstrip())
        line = 1 + head.count(b"\n", 0, pos)
        raise InputError(field, f"{where} line {line}: text before the first '>' header")


def read_fasta(path, case_sensitive: bool = False, field: str = "file") -> tuple[str, str]:
    """The first record of a FASTA file (plain or gzip-compressed) as ``(name, sequence)``.

    The conventions of sequence tools: a ``>`` line starts a record (its text is the name) and the
    record runs to the next ``>`` line; ``;`` lines (old FASTA comments) and blank lines are skipped;
    spaces, tabs and digits inside sequence lines are ignored (GenBank-style numbering); the symbols
    are ASCII letters, ``*``, ``-`` and ``.``, and any other byte (a control character, a non-ASCII
    byte, other punctuation) raises :class:`~gpudp.InputError` giving its line, column and value.
    LF, CRLF and CR line ends and a UTF-8 byte-order mark are accepted; a gzip file is recognised
    by its ``.gz`` name or its magic bytes. A file without any ``>`` line is read as one raw
    sequence. A record with no sequence lines is an empty sequence; a file with neither a record nor
    a sequence symbol is an error. Lower-case (soft-masked) letters are upper-cased unless
    ``case_sensitive``.
    """
    where = str(path)
    raw = strip_bom(read_bytes(path, field, gz=is_gzip(where)))
    if b"\r" in raw:
        raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    name = os.path.basename(where)
    start = 0 if raw.startswith(b">") else raw.find(b"\n>") + 1  # the first header line
    if start == 0 and not raw.startswith(b">"):  # no header: one raw sequence
        seq = _sequence(raw, 1, where, field)
        if not seq:
            raise InputError(field, f"{where} holds no sequence (no '>' record and no sequence letters)")
    else:
        _no_text_before(raw, start, where, field)
        first_line = 1 + raw.count(b"\n", 0, start)
        eol = raw.find(b"\n", start)
        if eol < 0:
            eol = len(raw)
        name = _header_name(raw[start:eol], name)
        stop = raw.find(b"\n>", eol)
        if stop < 0:
            stop = len(raw)
        seq = _sequence(raw[eol + 1 : stop], first_line + 1, where, field)
    if not case_sensitive:
        seq = seq.upper()
    return name, seq.decode("ascii")


def read_fasta_records(path, case_sensitive: bool = False, field: str = "file") -> list[tuple[str, str]]:
    """Every record of a FASTA file as ``(name, sequence)``, under :func:`read_fasta`'s rules (a file
    without a ``>`` line is one record, named after the file)."""
    where = str(path)
    raw = strip_bom(read_bytes(path, field, gz=is_gzip(where)))
    if b"\r" in raw:
        raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    if not raw.startswith(b">") and raw.find(b"\n>") < 0:
        return [read_fasta(path, case_sensitive, field)]
    start = 0 if raw.startswith(b">") else raw.find(b"\n>") + 1
    _no_text_before(raw, start, where, field)
    records = []
    first_line, counted = 1, 0  # the line of ``start``, counted on from the last record's (not from 0)
    while start < len(raw):
        first_line += raw.count(b"\n", counted, start)
        counted = start
        eol = raw.find(b"\n", start)
        eol = len(raw) if eol < 0 else eol
        name = _header_name(raw[start:eol], f"{os.path.basename(where)}#{len(records) + 1}")
        stop = raw.find(b"\n>", eol)
        stop = len(raw) if stop < 0 else stop
        seq = _sequence(raw[eol + 1 : stop], first_line + 1, where, field)
        records.append((name, (seq if case_sensitive else seq.upper()).decode("ascii")))
        start = stop + 1
    return records
