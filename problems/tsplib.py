"""A reader for TSPLIB 95 files (Reinelt, 1995): TSP and ATSP instances, as a distance matrix.

Supported: ``EDGE_WEIGHT_TYPE`` ``EXPLICIT`` in the formats ``FULL_MATRIX``, ``UPPER_ROW``,
``LOWER_ROW``, ``UPPER_DIAG_ROW``, ``LOWER_DIAG_ROW`` (and their ``*_COL`` twins, which list the
same numbers as the transposed ``*_ROW`` format), and the coordinate types ``EUC_2D``, ``EUC_3D``,
``MAN_2D``, ``MAN_3D``, ``MAX_2D``, ``MAX_3D``, ``CEIL_2D``, ``GEO`` and ``ATT``, each with TSPLIB's
own integer rounding (``nint(x) = (int)(x + 0.5)``; GEO reads ``DDD.MM`` as degrees and minutes,
with ``PI = 3.141592`` and ``RRR = 6378.388``; ATT is the pseudo-Euclidean distance). Why a reader
of our own: the ``tsplib95`` package has had no release since 2020; this one is small and tested
against the instances in ``../shared/data/tsplib``.

The header is read first (:func:`read_header` stops at the first data section), so a caller can
refuse an instance by its ``DIMENSION`` before its matrix is built.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from gpudp.errors import InputError

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
        else:
            if self.coords is None:
                raise InputError(FIELD, f"{self.where}: {self.edge_weight_type} but no NODE_COORD_SECTION")
            d = coord_matrix(self.coords, self.edge_weight_type)
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


def coord_matrix(coords: np.ndarray, kind: str) -> np.ndarray:
    """The int64 distance matrix of node coordinates under a TSPLIB distance function."""
    c = np.asarray(coords, dtype=np.float64)
    if kind == "GEO":
        lat, lon = geo_radians(c[:, 0]), geo_radians(c[:, 1])
        q1 = np.cos(lon[:, None] - lon[None, :])
        q2 = np.cos(lat[:, None] - lat[None, :])
        q3 = np.cos(lat[:, None] + lat[None, :])
        arg = np.clip(0.5 * ((1.0 + q1) * q2 - (1.0 - q1) * q3), -1.0, 1.0)
        return np.trunc(6378.388 * np.arccos(arg) + 1.0).astype(np.int64)
    diff = c[:, None, :] - c[None, :, :]
    if kind.startswith("MAN"):
        return nint(np.abs(diff).sum(axis=2))
    if kind.startswith("MAX"):
        return np.maximum.reduce(nint(np.abs(diff)), axis=2)
    sq = (diff * diff).sum(axis=2)
    if kind == "ATT":
        r = np.sqrt(sq / 10.0)
        t = nint(r)
        return np.where(t < r, t + 1, t)
    if kind == "CEIL_2D":
        return np.ceil(np.sqrt(sq)).astype(np.int64)
    return nint(np.sqrt(sq))  # EUC_2D, EUC_3D


def explicit_matrix(weights: np.ndarray, n: int, fmt: str | None, where: str = "") -> np.ndarray:
    """The n x n matrix of an ``EDGE_WEIGHT_SECTION`` in format ``fmt`` (symmetric unless full)."""
    if fmt not in MATRIX_FORMATS:
        raise InputError(
            FIELD,
            f"{where}: EDGE_WEIGHT_FORMAT {fmt!r} is not supported (one of {', '.join(MATRIX_FORMATS)})",
        )
    kind = MATRIX_FORMATS[fmt]
    w = np.asarray(weights)
    if kind == "FULL_MATRIX":
        need = n * n
    elif "DIAG" in kind:
        need = n * (n + 1) // 2
    else:
        need = n * (n - 1) // 2
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


def _number(tok: str, where: str, lineno: int):
    try:
        return int(tok)
    except ValueError:
        pass
    try:
        return float(tok)
    except ValueError:
        raise InputError(FIELD, f"{where}, line {lineno}: {tok!r} is not a number") from None


def _is_number(tok: str) -> bool:
    try:
        float(tok)
        return True
    except ValueError:
        return False


def read_header(path) -> TSPLIBInstance:
    """The specification part of a TSPLIB file (up to its first data section), checked."""
    return _read(path, header_only=True)


def read_tsplib(path) -> TSPLIBInstance:
    """A TSPLIB file with its data sections (coordinates or explicit weights)."""
    return _read(path, header_only=False)


def _read(path, header_only: bool) -> TSPLIBInstance:
    where = os.fspath(path)
    try:
        with open(path, encoding="latin-1", newline=None) as f:
            lines = f.read().splitlines()
    except IsADirectoryError as e:
        raise InputError(FIELD, f"{where}: is a folder, not a TSPLIB file") from e
    header: dict[str, str] = {}
    sections: dict[str, list[tuple[int, list[str]]]] = {}
    current = None
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        toks = line.split()
        if current is not None and _is_number(toks[0]):
            sections[current].append((lineno, toks))
            continue
        current = None
        key, sep, value = line.partition(":")
        key = key.strip().upper()
        if key == "EOF" or line == "-1":
            continue
        if key in _SECTIONS:
            if header_only:
                break
            current = key
            sections.setdefault(key, [])
            continue
        if not sep:
            raise InputError(FIELD, f"{where}, line {lineno}: expected 'KEY : VALUE', got {line[:60]!r}")
        header[key] = value.strip()
    inst = _instance(header, where)
    if not header_only:
        _fill_sections(inst, sections, where)
    return inst


def _instance(header: dict, where: str) -> TSPLIBInstance:
    kind = header.get("TYPE", "").split()[0].upper() if header.get("TYPE") else ""
    if kind not in ("TSP", "ATSP"):
        raise InputError(
            FIELD, f"{where}: TYPE {header.get('TYPE', '(missing)')!r}: only TSP and ATSP instances are read"
        )
    try:
        n = int(header["DIMENSION"])
    except (KeyError, ValueError):
        raise InputError(FIELD, f"{where}: DIMENSION missing or not an integer") from None
    if n < 1:
        raise InputError(FIELD, f"{where}: DIMENSION must be >= 1, got {n}")
    ewt = header.get("EDGE_WEIGHT_TYPE", "").upper()
    if ewt != "EXPLICIT" and ewt not in COORD_TYPES:
        raise InputError(
            FIELD,
            f"{where}: EDGE_WEIGHT_TYPE {ewt or '(missing)'!r} is not supported "
            f"(EXPLICIT, {', '.join(COORD_TYPES)})",
        )
    fmt = header.get("EDGE_WEIGHT_FORMAT", "").upper() or None
    if ewt == "EXPLICIT" and fmt not in MATRIX_FORMATS:
        raise InputError(
            FIELD,
            f"{where}: EDGE_WEIGHT_FORMAT {fmt!r} is not supported for EXPLICIT weights "
            f"(one of {', '.join(MATRIX_FORMATS)})",
        )
    if kind == "ATSP" and ewt == "EXPLICIT" and fmt != "FULL_MATRIX":
        raise InputError(FIELD, f"{where}: an ATSP's weights must be a FULL_MATRIX, got {fmt}")
    return TSPLIBInstance(
        name=header.get("NAME", os.path.splitext(os.path.basename(where))[0]),
        type=kind,
        dimension=n,
        edge_weight_type=ewt,
        edge_weight_format=fmt,
        comment=header.get("COMMENT", ""),
        header=header,
        path=where,
    )


def _coords(rows: list[tuple[int, list[str]]], n: int, dims: int, where: str, section: str) -> np.ndarray:
    out = np.full((n, dims), np.nan)
    seen = np.zeros(n, dtype=bool)
    for lineno, toks in rows:
        if len(toks) != dims + 1:
            raise InputError(
                FIELD, f"{where}, line {lineno}: {section} wants a node number and {dims} coordinates"
            )
        node = _number(toks[0], where, lineno)
        if not isinstance(node, int) or not 1 <= node <= n:
            raise InputError(FIELD, f"{where}, line {lineno}: node {toks[0]} outside 1..{n}")
        if seen[node - 1]:
            raise InputError(FIELD, f"{where}, line {lineno}: node {node} given twice")
        seen[node - 1] = True
        out[node - 1] = [float(_number(t, where, lineno)) for t in toks[1:]]
    if not seen.all():
        missing = int(np.flatnonzero(~seen)[0]) + 1
        raise InputError(FIELD, f"{where}: {section} lacks node {missing} (of {n})")
    return out


def _fill_sections(inst: TSPLIBInstance, sections: dict, where: str):
    n = inst.dimension
    if inst.edge_weight_type in COORD_TYPES:
        if "NODE_COORD_SECTION" not in sections:
            raise InputError(FIELD, f"{where}: {inst.edge_weight_type} needs a NODE_COORD_SECTION")
        dims = COORD_TYPES[inst.edge_weight_type]
        inst.coords = _coords(sections["NODE_COORD_SECTION"], n, dims, where, "NODE_COORD_SECTION")
    else:
        if "EDGE_WEIGHT_SECTION" not in sections:
            raise InputError(FIELD, f"{where}: EXPLICIT weights need an EDGE_WEIGHT_SECTION")
        nums = [_number(t, where, ln) for ln, toks in sections["EDGE_WEIGHT_SECTION"] for t in toks]
        integral = all(isinstance(x, int) or float(x).is_integer() for x in nums)
        inst.weights = np.array(nums, dtype=np.int64 if integral else np.float64)
        if "DISPLAY_DATA_SECTION" in sections:
            rows = sections["DISPLAY_DATA_SECTION"]
            dims = 3 if rows and len(rows[0][1]) == 4 else 2
            inst.coords = _coords(rows, n, dims, where, "DISPLAY_DATA_SECTION")
