"""The TSPLIB reader on tiny hand-made files (every weight format and type) and the real instances."""

import math
from pathlib import Path

import numpy as np
import pytest

from gpudp import InputError
from gpudp.problems import tsplib

DATA = Path(__file__).resolve().parent / "data" / "tsplib"

# an asymmetric 4 x 4 matrix and its symmetric part, for the explicit formats
FULL = np.array([[0, 3, 5, 9], [4, 0, 7, 2], [6, 8, 0, 1], [9, 3, 2, 0]])
SYM = np.array([[0, 3, 5, 9], [3, 0, 7, 2], [5, 7, 0, 1], [9, 2, 1, 0]])


def write(tmp_path, text, name="x.tsp", newline="\n"):
    p = tmp_path / name
    p.write_bytes(text.replace("\n", newline).encode("latin-1"))
    return p


def explicit(tmp_path, fmt, numbers, kind="TSP", n=4):
    # numbers wrapped at odd places, as real files do
    body = "\n".join(" ".join(map(str, numbers[k : k + 5])) for k in range(0, len(numbers), 5))
    return write(
        tmp_path,
        f"NAME : t\nTYPE : {kind}\nDIMENSION : {n}\nEDGE_WEIGHT_TYPE : EXPLICIT\n"
        f"EDGE_WEIGHT_FORMAT : {fmt}\nEDGE_WEIGHT_SECTION\n{body}\nEOF\n",
    )


def reference_geo(a, b) -> int:
    """TSPLIB's GEO distance, transcribed from its C code (scalar, math module)."""

    def rad(x):
        deg = int(x)  # C's (int): truncation toward zero
        return 3.141592 * (deg + 5.0 * (x - deg) / 3.0) / 180.0

    lat_a, lon_a, lat_b, lon_b = rad(a[0]), rad(a[1]), rad(b[0]), rad(b[1])
    q1 = math.cos(lon_a - lon_b)
    q2 = math.cos(lat_a - lat_b)
    q3 = math.cos(lat_a + lat_b)
    return int(6378.388 * math.acos(0.5 * ((1.0 + q1) * q2 - (1.0 - q1) * q3)) + 1.0)


def test_full_matrix_atsp(tmp_path):
    inst = tsplib.read_tsplib(explicit(tmp_path, "FULL_MATRIX", FULL.ravel().tolist(), kind="ATSP"))
    assert inst.type == "ATSP" and not inst.symmetric
    assert np.array_equal(inst.matrix(), FULL)


@pytest.mark.parametrize(
    "fmt,rows",
    [
        ("UPPER_ROW", [SYM[i, i + 1 :] for i in range(4)]),
        ("LOWER_ROW", [SYM[i, :i] for i in range(4)]),
        ("UPPER_DIAG_ROW", [SYM[i, i:] for i in range(4)]),
        ("LOWER_DIAG_ROW", [SYM[i, : i + 1] for i in range(4)]),
        ("UPPER_COL", [SYM[:i, i] for i in range(4)]),
        ("LOWER_DIAG_COL", [SYM[i:, i] for i in range(4)]),
    ],
)
def test_triangular_formats(tmp_path, fmt, rows):
    numbers = np.concatenate(rows).tolist()
    inst = tsplib.read_tsplib(explicit(tmp_path, fmt, numbers))
    assert np.array_equal(inst.matrix(), SYM)
    assert inst.labels == [1, 2, 3, 4] and inst.matrix().dtype == np.int64


def test_diagonal_entries_are_dropped_and_reals_kept(tmp_path):
    full = FULL.astype(float) + 0.25
    inst = tsplib.read_tsplib(explicit(tmp_path, "FULL_MATRIX", full.ravel().tolist(), kind="ATSP"))
    d = inst.matrix()
    assert d.dtype == np.float64 and np.allclose(d[~np.eye(4, dtype=bool)], full[~np.eye(4, dtype=bool)])
    assert (np.diag(d) == 0).all()


def coords_file(tmp_path, kind, pts):
    lines = "\n".join(f"{k + 1} " + " ".join(map(str, p)) for k, p in enumerate(pts))
    return write(
        tmp_path,
        f"NAME: c\nTYPE: TSP\nDIMENSION: {len(pts)}\nEDGE_WEIGHT_TYPE: {kind}\nNODE_COORD_SECTION\n{lines}\n",
    )


def test_euc_2d_and_ceil_2d_round_as_tsplib(tmp_path):
    pts = [(0, 0), (3, 4), (1, 1), (2.5, 0)]
    euc = tsplib.read_tsplib(coords_file(tmp_path, "EUC_2D", pts)).matrix()
    # sqrt(2) = 1.41 -> 1; sqrt(13) = 3.61 -> 4; 2.5 -> 3 (nint = (int)(x + 0.5)); 1.5 + 0.5 -> 2
    assert euc[0, 1] == 5 and euc[0, 2] == 1 and euc[1, 2] == 4 and euc[0, 3] == 3
    assert euc[2, 3] == 2  # sqrt(1.5^2 + 1) = 1.80
    ceil = tsplib.read_tsplib(coords_file(tmp_path, "CEIL_2D", pts)).matrix()
    assert ceil[0, 1] == 5 and ceil[0, 2] == 2 and ceil[1, 2] == 4 and ceil[0, 3] == 3


def test_3d_manhattan_and_maximum_metrics(tmp_path):
    pts = [(0, 0, 0), (1, 2, 2.6)]
    assert tsplib.read_tsplib(coords_file(tmp_path, "EUC_3D", pts)).matrix()[0, 1] == 3  # 3.42
    assert tsplib.read_tsplib(coords_file(tmp_path, "MAN_3D", pts)).matrix()[0, 1] == 6  # 5.6
    assert tsplib.read_tsplib(coords_file(tmp_path, "MAX_3D", pts)).matrix()[0, 1] == 3  # nint(2.6)
    flat = [(0, 0), (1.2, 2.6)]
    assert tsplib.read_tsplib(coords_file(tmp_path, "MAN_2D", flat)).matrix()[0, 1] == 4  # 3.8
    assert tsplib.read_tsplib(coords_file(tmp_path, "MAX_2D", flat)).matrix()[0, 1] == 3


def test_att_is_pseudo_euclidean_rounded_up(tmp_path):
    pts = [(0, 0), (10, 0), (0, 30), (30, 10)]
    d = tsplib.read_tsplib(coords_file(tmp_path, "ATT", pts)).matrix()
    assert d[0, 1] == 4  # r = sqrt(10) = 3.16, nint 3 < r -> 4
    assert d[0, 2] == 10  # r = 9.49, nint 9 < r -> 10
    assert d[0, 3] == 10  # r = sqrt(1000 / 10) = 10 exactly: nint 10 = r -> 10


def test_geo_reads_degrees_and_minutes(tmp_path):
    pts = [(16.47, 96.10), (16.47, 94.44), (-5.21, 36.08), (41.23, 9.10), (16.53, -97.38)]
    d = tsplib.read_tsplib(coords_file(tmp_path, "GEO", pts)).matrix()
    for i in range(len(pts)):
        for j in range(len(pts)):
            if i != j:
                assert d[i, j] == reference_geo(pts[i], pts[j])
    assert d[0, 1] == 153  # burma14's first edge, as published
    # DDD.MM: 16.53 is 16 degrees 53 minutes (16.883 degrees), not 17 - 0.47
    assert abs(tsplib.geo_radians(16.53) - 3.141592 * (16 + 53 / 60) / 180) < 1e-12
    assert abs(tsplib.geo_radians(-5.21) + 3.141592 * (5 + 21 / 60) / 180) < 1e-12


def test_burma14_matrix_row_as_published():
    d = tsplib.read_tsplib(DATA / "burma14.tsp").matrix()
    assert d[0].tolist() == [0, 153, 510, 706, 966, 581, 455, 70, 160, 372, 157, 567, 342, 398]
    assert np.array_equal(d, d.T)


def test_header_spellings_crlf_display_data_and_node_order(tmp_path):
    text = (
        "NAME:odd\nTYPE : TSP\nCOMMENT : a: colon\nDIMENSION:3\nEDGE_WEIGHT_TYPE:EXPLICIT\n"
        "EDGE_WEIGHT_FORMAT: UPPER_ROW\nDISPLAY_DATA_TYPE: TWOD_DISPLAY\nEDGE_WEIGHT_SECTION\n  1\n 2 3\n"
        "DISPLAY_DATA_SECTION\n3 5.0 6.0\n1 1.0 2.0\n2 3.0 4.0\n"
    )
    inst = tsplib.read_tsplib(write(tmp_path, text, newline="\r\n"))
    assert inst.name == "odd" and inst.comment == "a: colon" and inst.path.endswith("x.tsp")
    assert inst.matrix().tolist() == [[0, 1, 2], [1, 0, 3], [2, 3, 0]]
    assert inst.coords.tolist() == [[1, 2], [3, 4], [5, 6]]


def test_read_header_stops_before_the_data(tmp_path):
    p = write(
        tmp_path,
        "NAME: h\nTYPE: TSP\nDIMENSION: 100000\nEDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n1 x 5\n",
    )
    head = tsplib.read_header(p)
    assert head.dimension == 100000 and head.coords is None
    with pytest.raises(InputError, match="not a number"):
        tsplib.read_tsplib(p)


@pytest.mark.parametrize(
    "text,match",
    [
        ("TYPE: HCP\nDIMENSION: 3\n", "only TSP and ATSP"),
        ("TYPE: TSP\nEDGE_WEIGHT_TYPE: EUC_2D\n", "DIMENSION"),
        ("TYPE: TSP\nDIMENSION: 2\nEDGE_WEIGHT_TYPE: XRAY1\n", "XRAY1"),
        ("TYPE: TSP\nDIMENSION: 2\nEDGE_WEIGHT_TYPE: EXPLICIT\nEDGE_WEIGHT_FORMAT: FUNCTION\n", "FUNCTION"),
        (
            "TYPE: ATSP\nDIMENSION: 2\nEDGE_WEIGHT_TYPE: EXPLICIT\nEDGE_WEIGHT_FORMAT: UPPER_ROW\n",
            "FULL_MATRIX",
        ),
        (
            "TYPE: TSP\nDIMENSION: 3\nEDGE_WEIGHT_TYPE: EXPLICIT\nEDGE_WEIGHT_FORMAT: UPPER_ROW\n"
            "EDGE_WEIGHT_SECTION\n1 2\n",
            "needs 3 weights",
        ),
        ("TYPE: TSP\nDIMENSION: 2\nEDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n1 0 0\n", "lacks node 2"),
        ("TYPE: TSP\nDIMENSION: 2\nEDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n1 0 0\n1 2 2\n", "twice"),
        ("TYPE: TSP\nDIMENSION: 2\nEDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n1 0 0\n3 2 2\n", "outside"),
        ("TYPE: TSP\nDIMENSION: 2\nEDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n1 0\n", "2 coordinates"),
        ("TYPE: TSP\nDIMENSION: 2\nEDGE_WEIGHT_TYPE: EUC_2D\n", "needs a NODE_COORD_SECTION"),
        ("TYPE: TSP\nDIMENSION 2\n", "KEY : VALUE"),
    ],
)
def test_bad_files_are_input_errors(tmp_path, text, match):
    with pytest.raises(InputError, match=match) as e:
        tsplib.read_tsplib(write(tmp_path, text)).matrix()
    assert e.value.field == "tsplib"


@pytest.mark.parametrize(
    "name,n,kind",
    [("burma14", 14, "GEO"), ("ulysses16", 16, "GEO"), ("gr17", 17, "EXPLICIT"), ("a280", 280, "EUC_2D")],
)
def test_real_instances_read(name, n, kind):
    inst = tsplib.read_tsplib(DATA / f"{name}.tsp")
    d = inst.matrix()
    assert inst.dimension == n and inst.edge_weight_type == kind and d.shape == (n, n)
    assert np.array_equal(d, d.T) and (d >= 0).all() and (np.diag(d) == 0).all()
