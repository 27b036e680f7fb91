"""Longest common subsequence on the wavefront engine, with the subsequence itself; and the lengths
of many pairs at once (:func:`solve_many`, bit-parallel).

``H[i, j] = H[i-1, j-1] + 1`` when ``a[i] == b[j]``, else ``max(H[i-1, j], H[i, j-1])``: a grid
recurrence over offsets ``(-1, 0), (0, -1), (-1, -1)``, so the engine runs it tiled by
anti-diagonals. One decision bit per cell suffices for the traceback: where the symbols match the
path always goes diagonally (taking a match is never worse), elsewhere the bit says up or left.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

from gpudp.engine import choose_backend, device_name, sweep
from gpudp.errors import CheckError, GpudpError, InputError
from gpudp.inputs import is_gzip, read_bytes, strip_bom
from gpudp.memory import parse_bytes
from gpudp.recurrence import GridRecurrence
from gpudp.solution import Solution, Stats

from . import bitparallel


class LCSRecurrence(GridRecurrence):
    value_dtype = np.int32
    decision_bits = 1
    offsets = ((-1, 0), (0, -1), (-1, -1))
    symbols = True  # a[i] and b[j] reach the cell as ai, bj (kept in registers on the GPU)

    def __init__(self, a: np.ndarray, b: np.ndarray):
        self.a, self.b = a, b

    def shape(self):
        return len(self.a), len(self.b)

    def data(self):
        return (self.a, self.b)

    def row_symbols(self):
        return self.a

    def col_symbols(self):
        return self.b

    @staticmethod
    def cell(i, j, up, left, diag, ai, bj, a, b):
        if ai == bj:
            return diag + 1, 0
        if up >= left:
            return up, 1
        return left, 0

    @staticmethod
    def boundary(i, j, a, b):
        return 0

    @staticmethod
    def back(i, j, d, a, b):
        if a[i] == b[j]:
            return i - 1, j - 1
        if d:
            return i - 1, j
        return i, j - 1


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _short(v, width: int = 40) -> str:
    text = repr(v)
    return text if len(text) <= width else text[: width - 3] + "..."


def _kind(x) -> str:
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
            raise InputError(field, f"item {k} is {_short(v)} ({type(v).__name__}): symbols must be integers")
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


def _codes(ea: np.ndarray, eb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two sequences as integer arrays of one dtype the kernels compare, in which two symbols are
    equal exactly when the given symbols are equal (never through floats, never wrapping): int32 or
    int64 only, so that the kernels are compiled for two dtypes, not for every one a caller uses."""
    ca, cb = _exact_codes(ea, eb)
    dt = np.int32 if ca.dtype.itemsize < 4 or ca.dtype == np.int32 else np.int64
    return ca.astype(dt, copy=False), cb.astype(dt, copy=False)


def _exact_codes(ea: np.ndarray, eb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def _subsequence(kind: str, exact: np.ndarray, idx: np.ndarray):
    """The symbols of one input at ``idx``, in the input's own type."""
    if kind == "str":
        picked = exact[idx]
        if picked.dtype == np.uint8:
            return picked.tobytes().decode("ascii")
        return "".join(map(chr, picked.tolist()))
    if kind == "bytes":
        return exact[idx].astype(np.uint8).tobytes()
    return exact[idx]


def solve(a, b, backend: str = "auto", memory_budget=None, progress=None, tile=None) -> Solution:
    """The length of a longest common subsequence of ``a`` and ``b`` and one such subsequence.

    ``a``, ``b``: str, bytes, or 1-D integer arrays, lists or tuples. Symbols compare as the values
    they are: integers exactly, whatever their dtypes (a uint64 2**64 - 1 never equals an int64 -1;
    Python ints beyond 64 bits are accepted), bytes as the integers 0..255, str as characters. A str
    pairs only with a str; floats, bools and arrays of more than one dimension raise
    :class:`~gpudp.InputError`. Returns a checked :class:`gpudp.Solution` whose ``value`` is the
    length and ``solution`` the subsequence (of the type of ``a``; for arrays, ``a``'s dtype);
    ``details["indices_a"]`` / ``["indices_b"]`` are its positions in each input.
    """
    xa, xb = encode(a, "a"), encode(b, "b")
    ka, kb = _kind(a), _kind(b)
    if (ka == "str") != (kb == "str"):
        raise InputError(
            "b",
            f"a is {type(a).__name__} but b is {type(b).__name__}: a str pairs only with a str "
            "(characters are not integers); encode both alike",
        )
    if memory_budget is not None:
        memory_budget = parse_bytes(memory_budget, "memory_budget")
    ea, eb = _codes(xa, xb)
    result = sweep(
        LCSRecurrence(ea, eb), backend=backend, memory_budget=memory_budget, progress=progress, tile=tile
    )
    try:
        n, m = len(ea), len(eb)
        length = int(result.last_row[-1]) if n and m else 0
        if n and m:
            path = result.traceback((n - 1, m - 1))
            i, j = path[:, 0], path[:, 1]
            match = ea[i] == eb[j]
            ia, ib = i[match][::-1].copy(), j[match][::-1].copy()
        else:
            ia = ib = np.zeros(0, dtype=np.int64)
    finally:
        result.close()
    sol = Solution(
        problem="lcs",
        value=length,
        solution=_subsequence(ka, xa, ia),
        stats=result.stats,
        details={"indices_a": ia, "indices_b": ib, "len_a": n, "len_b": m},
        _checker=_checker(ka, xa, xb, ea, eb),
    )
    sol.check()
    return sol


def _checker(kind_a: str, xa: np.ndarray, xb: np.ndarray, ea: np.ndarray, eb: np.ndarray):
    """Checks a solution against the kernels' codes (``ea``, ``eb``) and, independently of the
    coding, against the symbols as given (``xa``, ``xb``, compared as Python values)."""

    def check(sol: Solution):
        ia = np.asarray(sol.details["indices_a"])
        ib = np.asarray(sol.details["indices_b"])
        if len(ia) != sol.value or len(ib) != sol.value:
            return f"{len(ia)} matched positions for a reported length of {sol.value}"
        if len(ia) and (ia.min() < 0 or ia.max() >= len(ea) or ib.min() < 0 or ib.max() >= len(eb)):
            return "a matched position lies outside its sequence"
        if (np.diff(ia) <= 0).any() or (np.diff(ib) <= 0).any():
            return "matched positions are not strictly increasing"
        if not np.array_equal(ea[ia], eb[ib]) or xa[ia].tolist() != xb[ib].tolist():
            return "the subsequence does not occur at the matched positions of both inputs"
        want, got = _subsequence(kind_a, xa, ia), sol.solution
        if isinstance(want, np.ndarray):
            same = isinstance(got, np.ndarray) and got.tolist() == want.tolist()
        else:
            same = type(got) is type(want) and got == want
        if not same:
            return "the reported subsequence differs from the matched symbols"
        return None

    return check


# ------------------------------------------------------------------------------------------------
# Files


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
    while start < len(raw):
        first_line = 1 + raw.count(b"\n", 0, start)
        eol = raw.find(b"\n", start)
        eol = len(raw) if eol < 0 else eol
        name = _header_name(raw[start:eol], f"{os.path.basename(where)}#{len(records) + 1}")
        stop = raw.find(b"\n>", eol)
        stop = len(raw) if stop < 0 else stop
        seq = _sequence(raw[eol + 1 : stop], first_line + 1, where, field)
        records.append((name, (seq if case_sensitive else seq.upper()).decode("ascii")))
        start = stop + 1
    return records


def demo(backend: str = "auto") -> Solution:
    """The bundled example: HIV-1 (9,181 nt) against the Yersinia pestis plasmid pPCP1 (9,609 nt)."""
    data = resources.files("gpudp.data")
    with (
        resources.as_file(data / "hiv1_NC_001802.fna") as pa,
        resources.as_file(data / "yersinia_pPCP1_NC_005816.fna") as pb,
    ):
        (na, a), (nb, b) = read_fasta(pa), read_fasta(pb)
    sol = solve(a, b, backend=backend)
    sol.details.update(name_a=na, name_b=nb)
    return sol


def summary(sol: Solution, width: int = 70) -> str:
    seq = sol.solution if isinstance(sol.solution, str) else repr(sol.solution)
    shown = seq if len(seq) <= width else seq[: width - 3] + "..."
    st = sol.stats
    lines = []
    if "name_a" in sol.details:
        lines += [f"a: {sol.details['name_a']}", f"b: {sol.details['name_b']}"]
    spilled = " (spilled to disk)" if st.spilled_to_disk else ""
    compile_s = st.extra.get("compile_seconds", 0.0)
    compiling = f" ({compile_s:.2f} s of it compiling)" if compile_s > 0.05 else ""
    run_s = st.seconds - compile_s
    gcups = st.cells / run_s / 1e9 if run_s > 0 else 0.0
    lines += [
        f"LCS length {sol.value} of {sol.details['len_a']} x {sol.details['len_b']} (checked)",
        f"subsequence: {shown}",
        f"{st.backend} on {st.device}: {st.seconds:.3f} s{compiling}, {gcups:.2f} GCUPS, "
        f"{st.bytes_evicted / 2**20:.1f} MiB of decisions{spilled}",
    ]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# CLI


def cli_arguments(p):
    p.add_argument("a", help="FASTA file (first record; every record with --pairs) or plain sequence file")
    p.add_argument("b", help="FASTA file (first record; every record with --pairs) or plain sequence file")
    p.add_argument(
        "--pairs",
        choices=["zip", "all"],
        default=None,
        help="a batch over every record: zip pairs record k of a with record k of b, all every record "
        "of a with every record of b; one line a pair (TSV, or JSON lines with --json), lengths only "
        "unless --traceback",
    )
    p.add_argument(
        "--traceback", action="store_true", help="with --pairs: each pair's subsequence too (a sweep a pair)"
    )
    p.add_argument(
        "--case-sensitive",
        action="store_true",
        help="compare lower- and upper-case symbols as different (default: soft-masked "
        "lower-case bases equal upper-case)",
    )
    p.add_argument(
        "--memory-budget",
        default=None,
        help="host bytes for the decision store before it spills to disk (e.g. 8G)",
    )


def cli_solve(args) -> Solution | None:
    if args.pairs:
        _cli_batch(args)
        return None
    na, a = read_fasta(args.a, args.case_sensitive, field="a")
    nb, b = read_fasta(args.b, args.case_sensitive, field="b")
    sol = solve(a, b, backend=args.backend, memory_budget=args.memory_budget, progress=None)
    sol.details.update(name_a=na, name_b=nb)
    return sol


@dataclass
class BatchResult:
    """The LCS lengths of a batch of pairs, in input order.

    ``values[p]`` is pair ``p``'s length, or -1 where the pair could not be solved (``errors[p]``
    says why); ``solutions[p]`` is its checked :class:`gpudp.Solution` when the batch ran with
    ``traceback=True`` (else None); ``verified`` lists the pairs re-solved with their subsequence
    and checked against ``values``.
    """

    values: np.ndarray
    errors: dict[int, str] = field(default_factory=dict)
    solutions: list = field(default_factory=list)
    verified: list[int] = field(default_factory=list)
    stats: Stats = field(default_factory=Stats)


def _pair_codes(a, b, p: int) -> tuple[np.ndarray, np.ndarray]:
    xa, xb = encode(a, f"pairs[{p}][0]"), encode(b, f"pairs[{p}][1]")
    if (_kind(a) == "str") != (_kind(b) == "str"):
        raise InputError(f"pairs[{p}]", "a str pairs only with a str; encode both alike")
    return _exact_codes(xa, xb)  # bytes stay bytes: the batch packs them without widening


def _as_arrays(pairs):
    """``(A, B)`` when ``pairs`` is two 2-D integer arrays of as many rows, else None."""
    if not (isinstance(pairs, tuple) and len(pairs) == 2):
        return None
    a, b = pairs
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.ndim == 2 and b.ndim == 2):
        return None
    for name, x in (("pairs[0]", a), ("pairs[1]", b)):
        if x.dtype.kind not in "iu":
            raise InputError(name, f"2-D arrays of pairs must hold integers, got {x.dtype}")
    if a.shape[0] != b.shape[0]:
        raise InputError("pairs", f"{a.shape[0]} rows against {b.shape[0]}: one row of each per pair")
    if a.dtype != b.dtype:
        a, b = _exact_codes(a.reshape(-1), b.reshape(-1))
        a, b = a.reshape(pairs[0].shape), b.reshape(pairs[1].shape)
    return np.ascontiguousarray(a), np.ascontiguousarray(b)


def solve_many(pairs, backend: str = "auto", traceback: bool = False, verify: int = 2, progress=None):
    """The LCS lengths of many pairs of sequences in one call.

    Parameters
    ----------
    pairs : iterable of ``(a, b)``, or a tuple ``(A, B)`` of two 2-D integer arrays
        each pair as :func:`solve` takes it (str, bytes, 1-D integer arrays or lists); or pair
        ``p`` as rows ``A[p]`` and ``B[p]``, the fast form for many pairs of equal lengths (no
        Python work per pair).
    backend : "auto", "cpu" or "cuda"
    traceback : bool
        False (the default): lengths only, by the bit-parallel recurrence (64 cells per word
        operation; one pair per thread on the GPU, one per loop iteration on every CPU core).
        True: each pair solved by :func:`solve` with its subsequence, checked (one sweep a pair).
    verify : int
        with ``traceback=False``, how many pairs (chosen at random among the smaller ones) are
        re-solved with their subsequence on the cpu and checked against the batch's lengths; a
        disagreement raises :class:`gpudp.CheckError`. Lengths alone carry no certificate: this is
        the batch's cross-check with the checked path.
    progress : bool or None
        a progress bar over the pairs with ``traceback=True``.

    Returns
    -------
    BatchResult
        lengths in input order; a pair that cannot be read (a float array, a str beside bytes ...)
        gets -1 and its error in ``errors``, without stopping the batch.

    Raises
    ------
    gpudp.CheckError
        when a verified pair disagrees with the batch.

    Examples
    --------
    >>> from gpudp.problems.lcs import solve_many
    >>> solve_many([("GATTACA", "TACCA"), ("AB", "BA"), ("", "X")], backend="cpu").values.tolist()
    [4, 1, 0]
    """
    t0 = time.perf_counter()
    arrays = _as_arrays(pairs)
    if arrays is not None:  # rows of two arrays: no object per pair unless one is asked for
        pairs = _Rows(*arrays)
    else:
        pairs = list(pairs)
    values = np.full(len(pairs), -1, np.int64)
    errors: dict[int, str] = {}
    if traceback:
        solutions = [None] * len(pairs)
        bar = None
        if progress is not False and len(pairs) > 1:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(pairs), unit="pair", delay=1.0, disable=None if progress is None else False)
        kernel_s, cells, used = 0.0, 0, None
        for p, (a, b) in enumerate(pairs):
            try:
                sol = solve(a, b, backend=backend, progress=False)
            except GpudpError as e:
                errors[p] = str(e)
            else:
                solutions[p], values[p] = sol, sol.value
                kernel_s += sol.stats.kernel_seconds
                cells += sol.stats.cells
                used = sol.stats.backend
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
        used = used or choose_backend(backend, 0)[0]
        stats = Stats(backend=used, device=device_name(used), cells=cells, kernel_seconds=kernel_s)
        stats.extra.update(pairs=len(pairs), method="wavefront engine, one sweep a pair")
        stats.seconds = time.perf_counter() - t0
        return BatchResult(values, errors, solutions, list(range(len(pairs))), stats)
    coded, index = [], []
    if arrays is not None:
        packed = bitparallel.pack_arrays(*arrays, table=False)
        index = np.arange(len(pairs))
        sizes = np.full(len(pairs), arrays[0].shape[1] * arrays[1].shape[1], np.int64)
    else:
        for p, pair in enumerate(pairs):
            try:
                a, b = pair
                coded.append(_pair_codes(a, b, p))
                index.append(p)
            except (GpudpError, TypeError, ValueError) as e:
                errors[p] = str(e)
        packed = bitparallel.pack(coded, table=False)
        sizes = np.fromiter((len(a) * len(b) for a, b in coded), np.int64, len(coded))
    cells = packed.cells
    used, why = choose_backend(backend, cells / 32)  # about 32 cells a word operation, both sides
    picks = _picks(index, sizes, verify)
    if used == "cuda":
        from . import cuda as lcs_cuda

        run = lcs_cuda.launch(packed)
        wants = _checked_lengths(pairs, picks)  # on the host while the GPU computes
        got, kernel_s = run.finish()
    else:
        t = time.perf_counter()
        got = bitparallel.lengths_cpu(packed)
        kernel_s = time.perf_counter() - t
        wants = _checked_lengths(pairs, picks)
    values[index] = got
    for p, want in zip(picks, wants, strict=True):
        if want != values[p]:
            raise CheckError(f"pair {p}: the batch gave LCS length {values[p]}, a checked solve {want}")
    verified = picks
    stats = Stats(backend=used, device=device_name(used), cells=cells, kernel_seconds=kernel_s)
    stats.extra.update(pairs=len(pairs), method="bit-parallel (Hyyro 2004)", backend_choice=why)
    stats.seconds = time.perf_counter() - t0
    return BatchResult(values, errors, [None] * len(pairs), verified, stats)


class _Rows:
    """Pairs as rows of two 2-D arrays, indexed like a list of pairs."""

    def __init__(self, a, b):
        self.a, self.b = a, b

    def __len__(self):
        return len(self.a)

    def __getitem__(self, p):
        return self.a[p], self.b[p]

    def __iter__(self):
        return zip(self.a, self.b, strict=True)


def _picks(index, sizes, k: int) -> list[int]:
    """``k`` random pairs of the smaller half (``sizes``: cells of each packed pair) to cross-check."""
    if k <= 0 or not len(index):
        return []
    small = np.flatnonzero(sizes <= np.median(sizes))
    pick = np.random.default_rng().choice(small, min(k, len(small)), replace=False)
    return sorted(int(index[q]) for q in pick)


def _checked_lengths(pairs, picks) -> list[int]:
    """The lengths of ``picks`` by :func:`solve` on the cpu: with the subsequence, checked."""
    return [solve(*pairs[p], backend="cpu", progress=False).value for p in picks]


def _cli_batch(args) -> None:
    """``gpudp solve lcs A B --pairs zip|all``: one output line per pair, in order."""
    import json
    import sys

    ra = read_fasta_records(args.a, args.case_sensitive, field="a")
    rb = read_fasta_records(args.b, args.case_sensitive, field="b")
    if args.pairs == "zip":
        if len(ra) != len(rb):
            raise InputError(
                "b", f"--pairs zip needs as many records in b as in a ({len(rb)} against {len(ra)})"
            )
        index = [(k, k) for k in range(len(ra))]
    else:
        index = [(i, j) for i in range(len(ra)) for j in range(len(rb))]
    pairs = [(ra[i][1], rb[j][1]) for i, j in index]
    res = solve_many(pairs, backend=args.backend, traceback=args.traceback)
    out = sys.stdout
    if not args.json:
        out.write("name_a\tname_b\tlen_a\tlen_b\tlcs" + ("\tsubsequence" if args.traceback else "") + "\n")
    for p, (i, j) in enumerate(index):
        row = {"name_a": ra[i][0], "name_b": rb[j][0], "len_a": len(ra[i][1]), "len_b": len(rb[j][1])}
        row["lcs"] = int(res.values[p])
        if args.traceback:
            row["subsequence"] = res.solutions[p].solution
        if args.json:
            out.write(json.dumps(row) + "\n")
        else:
            out.write("\t".join(str(v) for v in row.values()) + "\n")
    st = res.stats
    print(
        f"# {len(index)} pairs, {st.cells:.3g} cells, {st.seconds:.3f} s on {st.backend} "
        f"({st.extra.get('method')}; {len(res.verified)} re-solved and checked)",
        file=sys.stderr,
    )
