"""Longest common subsequence on the wavefront engine, with the subsequence itself.

``H[i, j] = H[i-1, j-1] + 1`` when ``a[i] == b[j]``, else ``max(H[i-1, j], H[i, j-1])``: a grid
recurrence over offsets ``(-1, 0), (0, -1), (-1, -1)``, so the engine runs it tiled by
anti-diagonals. One decision bit per cell suffices for the traceback: where the symbols match the
path always goes diagonally (taking a match is never worse), elsewhere the bit says up or left.
"""

from __future__ import annotations

import gzip
import os
from importlib import resources

import numpy as np

from gpudp.engine import sweep
from gpudp.errors import InputError
from gpudp.recurrence import GridRecurrence
from gpudp.solution import Solution


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


def encode(x, field: str) -> np.ndarray:
    """A sequence as a 1-D integer array the kernels can compare: str, bytes or integer arrays."""
    if isinstance(x, str):
        try:
            return np.frombuffer(x.encode("ascii"), dtype=np.uint8)
        except UnicodeEncodeError:
            return np.array([ord(ch) for ch in x], dtype=np.int32)
    if isinstance(x, bytes | bytearray | memoryview):
        return np.frombuffer(bytes(x), dtype=np.uint8)
    if isinstance(x, np.ndarray | list | tuple):
        arr = np.asarray(x)
        if arr.ndim != 1:
            raise InputError(field, f"a sequence must be one-dimensional, got shape {arr.shape}")
        if arr.size == 0:
            return np.zeros(0, dtype=np.int32)
        if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
            raise InputError(
                field, f"integer arrays only (got dtype {arr.dtype}); encode symbols as integers"
            )
        if arr.dtype.itemsize > 8 or arr.dtype == np.uint64:
            arr = arr.astype(np.int64)
        return np.ascontiguousarray(arr)
    raise InputError(field, f"expected str, bytes or a 1-D integer array, got {type(x).__name__}")


def _decode_like(original, symbols: np.ndarray):
    if isinstance(original, str):
        return "".join(map(chr, symbols.tolist()))
    if isinstance(original, bytes | bytearray | memoryview):
        return bytes(symbols.astype(np.uint8).tobytes())
    return symbols


def solve(a, b, backend: str = "auto", memory_budget=None, progress=None, tile=None) -> Solution:
    """The length of a longest common subsequence of ``a`` and ``b`` and one such subsequence.

    ``a``, ``b``: str, bytes or 1-D integer arrays. Returns a checked :class:`gpudp.Solution` whose
    ``value`` is the length and ``solution`` the subsequence (of the type of ``a``);
    ``details["indices_a"]`` / ``["indices_b"]`` are its positions in each input.
    """
    ea, eb = encode(a, "a"), encode(b, "b")
    if ea.dtype != eb.dtype:
        ea, eb = ea.astype(np.int64), eb.astype(np.int64)
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
        solution=_decode_like(a, ea[ia]),
        stats=result.stats,
        details={"indices_a": ia, "indices_b": ib, "len_a": n, "len_b": m},
        _checker=_checker(ea, eb),
    )
    sol.check()
    return sol


def _checker(ea: np.ndarray, eb: np.ndarray):
    def check(sol: Solution):
        ia = np.asarray(sol.details["indices_a"])
        ib = np.asarray(sol.details["indices_b"])
        if len(ia) != sol.value or len(ib) != sol.value:
            return f"{len(ia)} matched positions for a reported length of {sol.value}"
        if len(ia) and (ia.min() < 0 or ia.max() >= len(ea) or ib.min() < 0 or ib.max() >= len(eb)):
            return "a matched position lies outside its sequence"
        if (np.diff(ia) <= 0).any() or (np.diff(ib) <= 0).any():
            return "matched positions are not strictly increasing"
        if not np.array_equal(ea[ia], eb[ib]):
            return "the subsequence does not occur at the matched positions of both inputs"
        if not np.array_equal(encode(sol.solution, "solution").astype(np.int64), ea[ia].astype(np.int64)):
            return "the reported subsequence differs from the matched symbols"
        return None

    return check


# ------------------------------------------------------------------------------------------------
# Files


def read_fasta(path, case_sensitive: bool = False, field: str = "file") -> tuple[str, str]:
    """The first record of a FASTA file (plain or .gz) as ``(name, sequence)``.

    Lower-case (soft-masked) bases are upper-cased unless ``case_sensitive``. A file without a
    ``>`` header is read as one raw sequence (white space removed).
    """
    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="ascii", errors="strict", newline=None) as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise InputError(field, f"{path}: not an ASCII FASTA/text file ({e.reason})") from e
    name, parts, records = os.path.basename(str(path)), [], 0
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(";"):
            continue
        if line.startswith(">"):
            records += 1
            if records > 1:
                break
            name = line[1:].strip() or name
            continue
        parts.append("".join(line.split()))
    seq = "".join(parts)
    if not case_sensitive:
        seq = seq.upper()
    return name, seq


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
    p.add_argument("a", help="FASTA file (first record) or plain sequence file")
    p.add_argument("b", help="FASTA file (first record) or plain sequence file")
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


def cli_solve(args) -> Solution:
    na, a = read_fasta(args.a, args.case_sensitive, field="a")
    nb, b = read_fasta(args.b, args.case_sensitive, field="b")
    sol = solve(a, b, backend=args.backend, memory_budget=args.memory_budget, progress=None)
    sol.details.update(name_a=na, name_b=nb)
    return sol
