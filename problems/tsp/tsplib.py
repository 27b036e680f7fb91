"""A reader for TSPLIB 95 files (Reinelt, 1995): TSP and ATSP instances, as a distance matrix.

Supported: ``EDGE_WEIGHT_TYPE`` ``EXPLICIT`` in the formats ``FULL_MATRIX``, ``UPPER_ROW``,
``LOWER_ROW``, ``UPPER_DIAG_ROW``, ``LOWER_DIAG_ROW`` (and their ``*_COL`` twins, which list the
same numbers as the transposed ``*_ROW`` format), and the coordinate types ``EUC_2D``, ``EUC_3D``,
``MAN_2D``, ``MAN_3D``, ``MAX_2D``, ``MAX_3D``, ``CEIL_2D``, ``GEO`` and ``ATT``, each with TSPLIB's
own integer rounding (``nint(x) = (int)(x + 0.5)``; GEO reads ``DDD.MM`` as degrees and minutes,
with ``PI = 3.141592`` and ``RRR = 6378.388``; ATT is the pseudo-Euclidean distance). Why a reader
of our own: the ``tsplib95`` package has had no release since 2020; this one is small and tested
against the instances in ``../shared/data/tsplib``.

The header is read first (:func:`read_header` reads the file only up to its first data section), so
a caller can refuse an instance by its ``DIMENSION`` before its data are read or its matrix built.

What the reader accepts, and refuses with an :class:`~gpudp.InputError` naming the line:

- numbers are ASCII decimals (``12``, ``-3``, ``4.5``, ``1e3``); ``nan``, ``inf``, ``0x10`` or
  ``1_000`` are not numbers. Coordinates are float64 and must be finite.
- explicit weights written as integers (or as reals with an integral value, ``1e3``) are read
  exactly as integers, and must lie in int64 (-2^63 .. 2^63 - 1); if any weight is not integral,
  all are read as float64 (and must be below 2^63 in magnitude; an integer float64 does not hold
  exactly, such as 2^53 + 1, is refused). Negative weights are read as given.
- a coordinate distance must be below 2^62 before its rounding to an integer (coordinates too far
  apart are refused rather than rounded into a wrong integer).
- a UTF-8 byte-order mark, CR, LF or CRLF line ends, tabs, lower-case keys, a colon after a
  section name and a missing ``EOF`` are fine; anything after ``EOF`` is ignored. A key given twice
  with different values, a section given twice, an unknown ``*_SECTION``, numbers outside a
  section, too few or too many numbers, node numbers out of range or repeated are refused.
- what would change the problem is refused, never skipped: ``FIXED_EDGES_SECTION`` (Held-Karp here
  solves the plain TSP/ATSP), ``DEPOT_``, ``DEMAND_``, ``TOUR_`` and ``EDGE_DATA_SECTION``,
  ``CAPACITY``, ``EDGE_DATA_FORMAT``, any keyword not in :data:`_KEYS`, a ``NODE_COORD_TYPE`` that does
  not fit the ``EDGE_WEIGHT_TYPE``, an ``EDGE_WEIGHT_SECTION`` beside coordinate distances, a
  ``TYPE : TSP`` whose ``FULL_MATRIX`` is not symmetric.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from dataclasses import dataclass, field
from decimal import Decimal

import numpy as np

from gpudp.errors import InputError
from gpudp.inputs import exact_in_float, read_text, strip_bom

FIELD = "tsplib"

#: coordinate-based weight types and the number of coordinates each node has
COORD_TYPES = {
    "EUC_2D": 2,
    "EUC_3D": 3,
    "MAN_2D": 2,
    "MAN_3D": 3,
    "MAX_2D": 2,
    "MAX_3D": 3,
    "CEIL_2D": 2,
    "GEO": 2,
    "ATT": 2,
}
#: explicit formats: the ``*_COL`` formats list the numbers of the transposed ``*_ROW`` format
MATRIX_FORMATS = {
    "FULL_MATRIX": "FULL_MATRIX",
    "UPPER_ROW": "UPPER_ROW",
    "LOWER_ROW": "LOWER_ROW",
    "UPPER_DIAG_ROW": "UPPER_DIAG_ROW",
    "LOWER_DIAG_ROW": "LOWER_DIAG_ROW",
    "UPPER_COL": "LOWER_ROW",
    "LOWER_COL": "UPPER_ROW",
    "UPPER_DIAG_COL": "LOWER_DIAG_ROW",
    "LOWER_DIAG_COL": "UPPER_DIAG_ROW",
}
_SECTIONS = (
    "NODE_COORD_SECTION",
    "EDGE_WEIGHT_SECTION",
    "DISPLAY_DATA_SECTION",
    "FIXED_EDGES_SECTION",
    "DEPOT_SECTION",
    "DEMAND_SECTION",
    "TOUR_SECTION",
    "EDGE_DATA_SECTION",
)
#: sections that would change the problem, which the Held-Karp solvers do not honour: refused, never
#: skipped (a FIXED_EDGES_SECTION skipped would give a tour without the required edges as optimal)
_REFUSED_SECTIONS = {
    "FIXED_EDGES_SECTION": "edges every tour must use",
    "DEPOT_SECTION": "depots, of a vehicle routing problem",
    "DEMAND_SECTION": "demands, of a vehicle routing problem",
    "TOUR_SECTION": "a tour, of a TOUR file or a tour to start from",
    "EDGE_DATA_SECTION": "the edges of a sparse graph",
}
#: the header keys read; any other key is refused (it may change the problem)
_KEYS = (
    "NAME",
    "TYPE",
    "COMMENT",
    "DIMENSION",
    "EDGE_WEIGHT_TYPE",
    "EDGE_WEIGHT_FORMAT",
    "NODE_COORD_TYPE",
    "DISPLAY_DATA_TYPE",
)
#: keys of TSPLIB that change the problem, and what they give
_REFUSED_KEYS = {
    "CAPACITY": "a vehicle capacity, of a vehicle routing problem",
    "EDGE_DATA_FORMAT": "the edges of a sparse graph",
}
#: NODE_COORD_TYPE's values and the coordinates a node has under each (0: none)
_NODE_COORD_TYPES = {"TWOD_COORDS": 2, "THREED_COORDS": 3, "NO_COORDS": 0}
_DISPLAY_DATA_TYPES = ("COORD_DISPLAY", "TWOD_DISPLAY", "NO_DISPLAY")
#: keys whose repeats are joined rather than refused
_REPEATABLE = ("COMMENT",)
#: the largest DIMENSION read (no file can list more nodes; keeps every size an int64)
MAX_DIMENSION = 1 << 62
#: an explicit integer weight must lie in int64; a real weight must be below 2^63 in magnitude
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
#: a coordinate distance must be below this before its rounding to an integer
MAX_DISTANCE = float(1 << 62)
#: bytes of a file read for its header before giving up on finding the first data section
HEADER_BYTES = 1 << 20

_INT = re.compile(r"[+-]?[0-9]+")
_REAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


@dataclass
class TSPLIBInstance:
    """One TSPLIB file: its header, and its nodes' coordinates or explicit weights.

    ``labels`` are the node numbers of the file (1..n). ``matrix()`` builds the n x n distance
    matrix (int64: every TSPLIB distance function rounds to integers; float64 only for explicit
    weights that are not integers); ``coords`` holds the node coordinates (or, for explicit
    instances, the ``DISPLAY_DATA_SECTION``'s), ``None`` when the file has none.
    """

    name: str
    type: str
    dimension: int
    edge_weight_type: str
    edge_weight_format: str | None = None
    comment: str = ""
    header: dict = field(default_factory=dict)
    coords: np.ndarray | None = None
    weights: np.ndarray | None = None  # the EDGE_WEIGHT_SECTION's numbers, in file order
    path: str = ""

    @property
    def labels(self) -> list[int]:
        return list(range(1, self.dimension + 1))

    @property
    def symmetric(self) -> bool:
        return self.type != "ATSP"

    def matrix(self) -> np.ndarray:
        """The n x n distance matrix (row = from, column = to); the diagonal is 0."""
        n = self.dimension
        if self.edge_weight_type == "EXPLICIT":
            if self.weights is None:
                raise InputError(FIELD, f"{self.where}: EXPLICIT weights but no EDGE_WEIGHT_SECTION")
            d = explicit_matrix(self.weights, n, self.edge_weight_format, self.where)
            if self.type == "TSP":  # a symmetric instance: a FULL_MATRIX must say so (no direction chosen)
                off = d != d.T
                np.fill_diagonal(off, False)
                if off.any():
                    i, j = (int(x) for x in np.argwhere(off)[0])
                    raise InputError(
                        FIELD,
                        f"{self.where}: TYPE TSP (symmetric), but the {self.edge_weight_format} gives node "
                        f"{i + 1} to {j + 1} as {d[i, j]} and {j + 1} to {i + 1} as {d[j, i]}: write "
                        "TYPE : ATSP for a directed instance",
                    )
        else:
            if self.coords is None:
                raise InputError(FIELD, f"{self.where}: {self.edge_weight_type} but no NODE_COORD_SECTION")
            d = coord_matrix(self.coords, self.edge_weight_type, self.where)
        np.fill_diagonal(d, 0)
        return d

    @property
    def where(self) -> str:
        return self.path or self.name or "TSPLIB input"


def nint(x):
    """TSPLIB's rounding to the nearest integer: ``(int)(x + 0.5)`` (C truncation)."""
    return np.trunc(np.asarray(x, dtype=np.float64) + 0.5).astype(np.int64)


def geo_radians(x) -> np.ndarray:
    """TSPLIB GEO coordinates ``DDD.MM`` (degrees, minutes) to radians, as TSPLIB computes them.

    The degrees are the coordinate truncated toward zero (C's ``(int)``; TSPLIB's text writes
    ``nint``, but its reference code and every published optimum use truncation, which is the
    only reading under which ``.MM`` are minutes), then ``PI * (deg + 5 * min / 3) / 180`` with
    ``PI = 3.141592``.
    """
    x = np.asarray(x, dtype=np.float64)
    deg = np.trunc(x)
    minutes = x - deg
    return 3.141592 * (deg + 5.0 * minutes / 3.0) / 180.0


def coord_matrix(coords: np.ndarray, kind: str, where: str = "") -> np.ndarray:
    """The int64 distance matrix of node coordinates under a TSPLIB distance function.

    Coordinates must be finite, and every distance below :data:`MAX_DISTANCE` (2^62) before it is
    rounded: an :class:`InputError` otherwise (a rounding of ``inf`` or of 1e300 to int64 would be
    a wrong number, not a distance). ``kind`` must be one of :data:`COORD_TYPES` and ``coords`` an
    ``n x d`` array of its ``d`` coordinates a node (another name, ``"bogus"`` or ``"euc_2d"``, was
    taken as EUC_2D, and a third coordinate added to an EUC_2D distance).
    """
    where = where or "coord_matrix"
    if kind not in COORD_TYPES:
        raise InputError(
            FIELD, f"{where}: {kind!r} is not a coordinate type (one of {', '.join(COORD_TYPES)})"
        )
    c = np.asarray(coords, dtype=np.float64)
    if c.ndim != 2 or c.shape[1] != COORD_TYPES[kind]:
        raise InputError(
            FIELD,
            f"{where}: {kind} takes {COORD_TYPES[kind]} coordinates a node, got an array of shape {c.shape}",
        )
    if c.size and not np.isfinite(c).all():
        i = int(np.argwhere(~np.isfinite(c))[0][0])
        raise InputError(FIELD, f"{where}: node {i + 1} has a coordinate that is not finite: {c[i].tolist()}")
    if kind == "GEO":
        lat, lon = geo_radians(c[:, 0]), geo_radians(c[:, 1])
        q1 = np.cos(lon[:, None] - lon[None, :])
        q2 = np.cos(lat[:, None] - lat[None, :])
        q3 = np.cos(lat[:, None] + lat[None, :])
        arg = np.clip(0.5 * ((1.0 + q1) * q2 - (1.0 - q1) * q3), -1.0, 1.0)
        return np.trunc(6378.388 * np.arccos(arg) + 1.0).astype(np.int64)  # at most 20038
    with np.errstate(over="ignore", invalid="ignore"):
        diff = c[:, None, :] - c[None, :, :]
        if kind.startswith("MAN"):
            f = np.abs(diff).sum(axis=2)
        elif kind.startswith("MAX"):
            f = np.abs(diff).max(axis=2)
        else:
            sq = (diff * diff).sum(axis=2)
            f = np.sqrt(sq / 10.0) if kind == "ATT" else np.sqrt(sq)
    bad = ~(f < MAX_DISTANCE)  # NaN and inf too
    if bad.any():
        i, j = (int(x) for x in np.argwhere(bad)[0])
        raise InputError(
            FIELD,
            f"{where}: the {kind} distance from node {i + 1} to node {j + 1} is {f[i, j]:.3g} (coordinates "
            f"{c[i].tolist()} and {c[j].tolist()}): too far apart to round to an integer distance "
            "(at most 2^62 here)",
        )
    if kind == "ATT":
        t = nint(f)
        return np.where(t < f, t + 1, t)
    if kind == "CEIL_2D":
        return np.ceil(f).astype(np.int64)
    return nint(f)  # EUC, MAN, MAX (nint is monotone: the max of the rounded = the rounded max)


def weights_needed(n: int, fmt: str) -> int:
    """How many numbers an ``EDGE_WEIGHT_SECTION`` of format ``fmt`` holds for ``n`` nodes."""
    kind = MATRIX_FORMATS[fmt]
    if kind == "FULL_MATRIX":
        return n * n
    if "DIAG" in kind:
        return n * (n + 1) // 2
    return n * (n - 1) // 2


def explicit_matrix(weights: np.ndarray, n: int, fmt: str | None, where: str = "") -> np.ndarray:
    """The n x n matrix of an ``EDGE_WEIGHT_SECTION`` in format ``fmt`` (symmetric unless full)."""
    if fmt not in MATRIX_FORMATS:
        raise InputError(
            FIELD,
            f"{where}: EDGE_WEIGHT_FORMAT {fmt!r} is not supported (one of {', '.join(MATRIX_FORMATS)})",
        )
    kind = MATRIX_FORMATS[fmt]
    w = np.asarray(weights)
    need = weights_needed(n, fmt)
    if w.size != need:
        raise InputError(
            FIELD, f"{where}: {fmt} of dimension {n} needs {need} weights, the file has {w.size}"
        )
    if kind == "FULL_MATRIX":
        return w.reshape(n, n).copy()
    d = np.zeros((n, n), dtype=w.dtype)
    if kind == "UPPER_ROW":
        rows, cols = np.triu_indices(n, 1)
    elif kind == "UPPER_DIAG_ROW":
        rows, cols = np.triu_indices(n, 0)
    elif kind == "LOWER_ROW":
        rows, cols = np.tril_indices(n, -1)
    else:  # LOWER_DIAG_ROW
        rows, cols = np.tril_indices(n, 0)
    d[rows, cols] = w
    d[cols, rows] = w
    return d


def _is_number(tok: str) -> bool:
    return _REAL.fullmatch(tok) is not None


def _short(text: str, k: int = 60) -> str:
    return repr(text if len(text) <= k else text[:k] + "...")


def _coordinate(tok: str, where: str, lineno: int) -> float:
    if not _is_number(tok):
        raise InputError(FIELD, f"{where}, line {lineno}: coordinate {_short(tok)} is not a number")
    x = float(tok)
    if not np.isfinite(x):
        raise InputError(FIELD, f"{where}, line {lineno}: coordinate {_short(tok)} is beyond float64's range")
    return x


def _weight(tok: str, where: str, lineno: int):
    """A weight token: a Python int when its value is integral (exactly), else a float."""
    if _INT.fullmatch(tok):
        digits = len(tok.lstrip("+-"))
        v = int(tok) if digits <= 40 else None
        if v is None or not INT64_MIN <= v <= INT64_MAX:
            raise InputError(
                FIELD,
                f"{where}, line {lineno}: weight {_short(tok, 40)} is beyond int64 "
                f"({INT64_MIN} .. {INT64_MAX}): tour lengths could not be held exactly",
            )
        return v
    if not _is_number(tok):
        raise InputError(FIELD, f"{where}, line {lineno}: weight {_short(tok)} is not a number")
    dec = Decimal(tok)
    if dec and dec.adjusted() >= 19 or dec.copy_abs() >= (1 << 63):
        raise InputError(
            FIELD,
            f"{where}, line {lineno}: weight {_short(tok, 40)} is beyond int64 (magnitude 2^63 or more)",
        )
    if dec == dec.to_integral_value():
        return int(dec)
    return float(tok)


def read_header(path) -> TSPLIBInstance:
    """The specification part of a TSPLIB file (up to its first data section), checked.

    Only the header's bytes are read (streamed, at most :data:`HEADER_BYTES`), so that a file
    whose ``DIMENSION`` is refused costs no time whatever its size."""
    lines = _header_lines(path)
    if lines is None:  # no section in the first HEADER_BYTES, or an odd file: read it whole
        lines = _split_lines(read_text(path, FIELD, encoding="latin-1"))
    return _parse(lines, os.fspath(path), header_only=True)


def read_tsplib(path) -> TSPLIBInstance:
    """A TSPLIB file with its data sections (coordinates or explicit weights)."""
    lines = _split_lines(read_text(path, FIELD, encoding="latin-1"))
    return _parse(lines, os.fspath(path), header_only=False)


def _header_lines(path) -> list[str] | None:
    """The lines of a file up to (and with) its first section line or ``EOF``, read in small pieces;
    None when that is not found in the first :data:`HEADER_BYTES` or the file cannot be read this
    way (then :func:`gpudp.inputs.read_text` reads it whole, or says why it cannot)."""
    name = os.fspath(path)
    try:
        if os.path.isdir(name):
            return None
        f = gzip.open(name, "rb") if str(name).endswith(".gz") else open(name, "rb")
    except (OSError, TypeError, ValueError):
        return None
    buf = b""
    try:
        with f:
            while len(buf) < HEADER_BYTES:
                chunk = f.read(1 << 14)
                if b"\x00" in chunk:
                    return None
                buf += chunk
                text = strip_bom(buf)
                lines = _split_lines(text.decode("latin-1"))
                if chunk and not text.endswith((b"\n", b"\r")):
                    lines.pop()  # a line still being read
                for k, line in enumerate(lines):
                    key = line.partition(":")[0].strip().upper()
                    if key in _SECTIONS or key == "EOF":
                        return lines[: k + 1]
                if not chunk:  # the whole file, without a section
                    return lines
    except (OSError, EOFError, zlib.error):
        return None
    return None


_NEWLINE = re.compile(r"\r\n|\r|\n")


def _split_lines(text: str) -> list[str]:
    """Lines ended by LF, CRLF or CR only (not by the other characters ``str.splitlines`` takes,
    such as byte 0x85 of a latin-1 comment)."""
    lines = _NEWLINE.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _unsupported(where: str, lineno: int, key: str, what: str) -> InputError:
    return InputError(
        FIELD,
        f"{where}, line {lineno}: {key} ({what}) is not supported: gpudp solves the plain TSP and ATSP "
        "and refuses what it would otherwise ignore",
    )


def _parse(lines: list[str], where: str, header_only: bool) -> TSPLIBInstance:
    header: dict[str, tuple[str, int]] = {}
    sections: dict[str, tuple[int, list[tuple[int, list[str]]]]] = {}
    current = None
    rows = None
    last_key = None
    seen_any = False
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        seen_any = True
        toks = line.split()
        if current is not None and _is_number(toks[0]):
            rows.append((lineno, toks))
            continue
        current = None
        key, sep, value = line.partition(":")
        key = key.strip().upper()
        value = value.strip()
        if key == "EOF":
            break
        if key in _REFUSED_SECTIONS:
            raise _unsupported(where, lineno, key, _REFUSED_SECTIONS[key])
        if key in _SECTIONS:
            if header_only:
                break
            if key in sections:
                raise InputError(
                    FIELD, f"{where}, line {lineno}: {key} given twice (first on line {sections[key][0]})"
                )
            current, rows = key, []
            sections[key] = (lineno, rows)
            if value:  # numbers on the section's own line
                rows.append((lineno, value.split()))
            last_key = key
            continue
        if not sep:
            if _is_number(toks[0]):
                after = f" (after {last_key}, which takes no numbers here)" if last_key else ""
                raise InputError(
                    FIELD, f"{where}, line {lineno}: numbers outside a data section{after}: {_short(line)}"
                )
            if key.endswith("_SECTION"):
                raise InputError(
                    FIELD,
                    f"{where}, line {lineno}: unknown section {_short(key)} (known: {', '.join(_SECTIONS)})",
                )
            raise InputError(
                FIELD,
                f"{where}, line {lineno}: expected 'KEY : VALUE' or a section name, found {_short(line)}",
            )
        if not key:
            raise InputError(FIELD, f"{where}, line {lineno}: a value with no key: {_short(line)}")
        if key in header:
            old, old_line = header[key]
            if key in _REPEATABLE:
                header[key] = (f"{old}\n{value}" if old else value, old_line)
            elif old != value:
                raise InputError(
                    FIELD,
                    f"{where}, line {lineno}: {key} given twice, as {_short(old)} on line {old_line} "
                    f"and as {_short(value)}",
                )
        else:
            header[key] = (value, lineno)
        last_key = key
    if not seen_any:
        raise InputError(FIELD, f"{where}: the file is empty, not a TSPLIB file")
    inst = _instance(header, where)
    if not header_only:
        _fill_sections(inst, sections, where)
    return inst


def _instance(header: dict, where: str) -> TSPLIBInstance:
    found = ", ".join(header) or "none"

    def missing(key, expected):
        return InputError(
            FIELD, f"{where}: no {key} in the header: expected {expected} (keys found: {found})"
        )

    if "TYPE" not in header:
        raise missing("TYPE", "'TYPE : TSP' or 'TYPE : ATSP'")
    tvalue, tline = header["TYPE"]
    kind = tvalue.split()[0].upper() if tvalue.split() else ""
    if kind not in ("TSP", "ATSP"):
        raise InputError(
            FIELD, f"{where}, line {tline}: TYPE {tvalue!r}: only TSP and ATSP instances are read"
        )
    if "DIMENSION" not in header:
        raise missing("DIMENSION", "'DIMENSION : n', the number of nodes")
    dvalue, dline = header["DIMENSION"]
    if not _INT.fullmatch(dvalue):
        raise InputError(
            FIELD, f"{where}, line {dline}: DIMENSION must be a whole number of nodes, found {_short(dvalue)}"
        )
    digits = dvalue.lstrip("+-").lstrip("0")
    if len(digits) > 19 or int(dvalue) > MAX_DIMENSION:
        raise InputError(
            FIELD,
            f"{where}, line {dline}: DIMENSION {_short(dvalue, 40)} is too large (no file holds more than "
            f"2^62 nodes)",
        )
    n = int(dvalue)
    if n < 1:
        raise InputError(FIELD, f"{where}, line {dline}: DIMENSION must be at least 1, found {n}")
    supported = f"one of EXPLICIT, {', '.join(COORD_TYPES)}"
    if "EDGE_WEIGHT_TYPE" not in header:
        raise missing("EDGE_WEIGHT_TYPE", supported)
    evalue, eline = header["EDGE_WEIGHT_TYPE"]
    ewt = evalue.upper()
    if ewt != "EXPLICIT" and ewt not in COORD_TYPES:
        raise InputError(
            FIELD,
            f"{where}, line {eline}: EDGE_WEIGHT_TYPE {evalue!r} is not supported: expected {supported}",
        )
    # after the checks above, whose messages name a misspelled key among the keys found
    for key, (_, line) in header.items():
        if key in _REFUSED_KEYS:
            raise _unsupported(where, line, key, _REFUSED_KEYS[key])
        if key not in _KEYS:
            raise InputError(
                FIELD,
                f"{where}, line {line}: unknown keyword {_short(key, 40)}: it may change the problem "
                f"(read: {', '.join(_KEYS)})",
            )
    cvalue, cline = header.get("NODE_COORD_TYPE", ("", 0))
    if cvalue:
        dims = _NODE_COORD_TYPES.get(cvalue.upper())
        if dims is None or ewt in COORD_TYPES and dims != COORD_TYPES[ewt]:
            raise InputError(
                FIELD,
                f"{where}, line {cline}: NODE_COORD_TYPE {cvalue!r} does not fit EDGE_WEIGHT_TYPE {evalue}"
                + ("" if dims is not None else f" (expected one of {', '.join(_NODE_COORD_TYPES)})"),
            )
    svalue, sline = header.get("DISPLAY_DATA_TYPE", ("", 0))
    if svalue and svalue.upper() not in _DISPLAY_DATA_TYPES:
        raise InputError(
            FIELD,
            f"{where}, line {sline}: DISPLAY_DATA_TYPE {svalue!r} is not one of "
            f"{', '.join(_DISPLAY_DATA_TYPES)}",
        )
    fvalue, fline = header.get("EDGE_WEIGHT_FORMAT", ("", 0))
    fmt = fvalue.upper() or None
    if ewt == "EXPLICIT":
        if fmt is None:
            raise missing("EDGE_WEIGHT_FORMAT", f"with EXPLICIT weights one of {', '.join(MATRIX_FORMATS)}")
        if fmt not in MATRIX_FORMATS:
            raise InputError(
                FIELD,
                f"{where}, line {fline}: EDGE_WEIGHT_FORMAT {fvalue!r} is not supported for EXPLICIT "
                f"weights: expected one of {', '.join(MATRIX_FORMATS)}",
            )
        if kind == "ATSP" and fmt != "FULL_MATRIX":
            raise InputError(
                FIELD, f"{where}, line {fline}: an ATSP's weights must be a FULL_MATRIX, found {fvalue}"
            )
    return TSPLIBInstance(
        name=header.get("NAME", ("", 0))[0] or os.path.splitext(os.path.basename(where))[0],
        type=kind,
        dimension=n,
        edge_weight_type=ewt,
        edge_weight_format=fmt,
        comment=header.get("COMMENT", ("", 0))[0],
        header={k: v for k, (v, _) in header.items()},
        path=where,
    )


def _coords(section, n: int, dims: int, where: str, name: str) -> np.ndarray:
    start, rows = section
    if rows and rows[-1][1] == ["-1"]:  # a terminator some writers add
        rows = rows[:-1]
    seen: dict[int, int] = {}
    values = []
    for lineno, toks in rows:
        if len(toks) != dims + 1:
            raise InputError(
                FIELD,
                f"{where}, line {lineno}: {name} wants a node number and {dims} coordinates, "
                f"found {len(toks)} numbers: {_short(' '.join(toks))}",
            )
        if not _INT.fullmatch(toks[0]):
            raise InputError(
                FIELD, f"{where}, line {lineno}: node number {_short(toks[0])} is not an integer"
            )
        node = int(toks[0]) if len(toks[0]) <= 25 else 0
        if not 1 <= node <= n:
            raise InputError(FIELD, f"{where}, line {lineno}: node {_short(toks[0], 30)} outside 1..{n}")
        if node in seen:
            raise InputError(
                FIELD, f"{where}, line {lineno}: node {node} given twice (first on line {seen[node]})"
            )
        seen[node] = lineno
        values.append((node, [_coordinate(t, where, lineno) for t in toks[1:]]))
    if len(seen) < n:  # found before anything of size n is allocated
        missing = next(k for k in range(1, n + 1) if k not in seen)
        raise InputError(
            FIELD,
            f"{where}: {name} (line {start}) lacks node {missing}: it has {len(seen)} nodes, "
            f"DIMENSION says {n}",
        )
    out = np.empty((n, dims))
    for node, xs in values:
        out[node - 1] = xs
    return out


def _fill_sections(inst: TSPLIBInstance, sections: dict, where: str):
    n = inst.dimension
    if inst.edge_weight_type in COORD_TYPES:
        if "NODE_COORD_SECTION" not in sections:
            raise InputError(FIELD, f"{where}: {inst.edge_weight_type} needs a NODE_COORD_SECTION")
        if "EDGE_WEIGHT_SECTION" in sections:
            raise InputError(
                FIELD,
                f"{where}, line {sections['EDGE_WEIGHT_SECTION'][0]}: an EDGE_WEIGHT_SECTION with "
                f"EDGE_WEIGHT_TYPE {inst.edge_weight_type}: which distances are meant is unclear",
            )
        dims = COORD_TYPES[inst.edge_weight_type]
        inst.coords = _coords(sections["NODE_COORD_SECTION"], n, dims, where, "NODE_COORD_SECTION")
    else:
        if "EDGE_WEIGHT_SECTION" not in sections:
            raise InputError(FIELD, f"{where}: EXPLICIT weights need an EDGE_WEIGHT_SECTION")
        start, rows = sections["EDGE_WEIGHT_SECTION"]
        need = weights_needed(n, inst.edge_weight_format)
        have = sum(len(toks) for _, toks in rows)
        if have != need:
            last = f", lines {start}..{rows[-1][0]}" if rows else f", line {start}"
            raise InputError(
                FIELD,
                f"{where}: {inst.edge_weight_format} of dimension {n} needs {need} weights, the "
                f"EDGE_WEIGHT_SECTION has {have}{last}",
            )
        nums = [(_weight(t, where, ln), ln) for ln, toks in rows for t in toks]
        integral = all(isinstance(x, int) for x, _ in nums)
        if not integral:  # read as float64: an integer it would round is refused, never rounded
            for x, ln in nums:
                if isinstance(x, int) and not exact_in_float(x):
                    raise InputError(
                        FIELD,
                        f"{where}, line {ln}: weight {x} is an integer that float64 does not hold exactly "
                        "(above 2^53), and other weights are reals: give every weight as an integer, "
                        "or round it",
                    )
        nums = [x for x, _ in nums]
        inst.weights = np.array(nums, dtype=np.int64 if integral else np.float64)
        if "DISPLAY_DATA_SECTION" in sections:
            section = sections["DISPLAY_DATA_SECTION"]
            dims = 3 if section[1] and len(section[1][0][1]) == 4 else 2
            inst.coords = _coords(section, n, dims, where, "DISPLAY_DATA_SECTION")
