"""The TSPLIB reader on tiny hand-made files (every weight format and type) and the real instances."""

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import InputError
from gpudp.problems.tsp import tsplib

DATA = Path(__file__).resolve().parents[1] / "data" / "tsplib"

# an asymmetric 4 x 4 matrix and its symmetric part, for the explicit formats
FULL = np.array([[0, 3, 5, 9], [4, 0, 7, 2], [6, 8, 0, 1], [9, 3, 2, 0]])
SYM = np.array([[0, 3, 5, 9], [3, 0, 7, 2], [5, 7, 0, 1], [9, 2, 1, 0]])


def write(tmp_path, text, name="x.tsp", newline="\n", encoding="latin-1"):
    p = tmp_path / name
    p.write_bytes(text.replace("\n", newline).encode(encoding))
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


# ------------------------------------------------------------------------------------------------
# Hostile files (issue 11): exact integers, non-finite numbers, huge sizes, spellings, structure

I64_MIN, I64_MAX = -(2**63), 2**63 - 1
HEAD = "NAME: h\nTYPE: TSP\nDIMENSION: {n}\nEDGE_WEIGHT_TYPE: {kind}\n"


def full_matrix_text(d, kind="ATSP") -> str:
    body = "\n".join(" ".join(str(x) for x in row) for row in d)
    return (
        f"TYPE: {kind}\nDIMENSION: {len(d)}\nEDGE_WEIGHT_TYPE: EXPLICIT\nEDGE_WEIGHT_FORMAT: FULL_MATRIX\n"
        f"EDGE_WEIGHT_SECTION\n{body}\nEOF\n"
    )


@settings(max_examples=40)
@given(
    n=st.integers(1, 6),
    data=st.data(),
    edge=st.sampled_from([I64_MIN, I64_MAX, 0, -1, 2**53 + 1, 2**62]),
)
def test_full_matrix_round_trip_is_exact_over_int64(tmp_path_factory, n, data, edge):
    ints = st.integers(I64_MIN, I64_MAX) | st.just(edge)
    d = [[data.draw(ints) for _ in range(n)] for _ in range(n)]
    p = write(tmp_path_factory.mktemp("rt"), full_matrix_text(d))
    m = tsplib.read_tsplib(p).matrix()
    assert m.dtype == np.int64
    assert m.tolist() == [[0 if i == j else d[i][j] for j in range(n)] for i in range(n)]


@settings(max_examples=20)
@given(n=st.integers(2, 5), data=st.data(), fmt=st.sampled_from(sorted(tsplib.MATRIX_FORMATS)))
def test_every_format_round_trips_exactly(tmp_path_factory, n, data, fmt):
    d = np.zeros((n, n), dtype=object)
    for i in range(n):
        for j in range(i, n):
            d[i, j] = d[j, i] = data.draw(st.integers(I64_MIN, I64_MAX)) if i != j else 0
    kind = tsplib.MATRIX_FORMATS[fmt]
    if kind == "FULL_MATRIX":
        nums = d.ravel().tolist()
    else:
        rows = range(n)
        lower = kind.startswith("LOWER")
        keep = (lambda i, j: j <= i) if lower else (lambda i, j: j >= i)
        diag = "DIAG" in kind
        nums = [d[i, j] for i in rows for j in range(n) if keep(i, j) and (diag or i != j)]
    body = "\n".join(str(x) for x in nums)
    text = HEAD.format(n=n, kind="EXPLICIT") + f"EDGE_WEIGHT_FORMAT: {fmt}\nEDGE_WEIGHT_SECTION\n{body}\n"
    m = tsplib.read_tsplib(write(tmp_path_factory.mktemp("fmt"), text)).matrix()
    assert m.tolist() == d.tolist()


@pytest.mark.parametrize(
    "token,match",
    [
        (str(2**63), "beyond int64"),
        (str(I64_MIN - 1), "beyond int64"),
        ("9" * 5000, "beyond int64"),
        ("1e19", "beyond int64"),
        ("9.3e18", "beyond int64"),
        ("1e999999999", "beyond int64"),
        ("nan", "'nan' is not a number"),
        ("inf", "'inf' is not a number"),
        ("0x10", "not a number"),
        ("1_000", "not a number"),
        ("１", "not a number"),  # a full-width digit: int() would take it
    ],
)
def test_bad_weights_are_refused_with_their_line(tmp_path, token, match):
    text = full_matrix_text([[0, 1], [2, 0]]).replace("0 1\n", f"0 {token}\n")
    with pytest.raises(InputError, match=match) as e:
        tsplib.read_tsplib(write(tmp_path, text, encoding="utf-8")).matrix()
    assert "line 6" in str(e.value)


def test_weights_in_real_syntax_are_exact_integers_or_reals(tmp_path):
    m = tsplib.read_tsplib(
        write(tmp_path, full_matrix_text([["0", "1e3", "2.0"], ["25E-1", "0", "+4"], ["-.5", "7", "0"]]))
    )
    assert m.matrix().dtype == np.float64 and m.matrix().tolist() == [[0, 1000, 2], [2.5, 0, 4], [-0.5, 7, 0]]
    m = tsplib.read_tsplib(
        write(tmp_path, full_matrix_text([["0", "1e3"], ["9223372036854775807.0", "1e-0"]]))
    )
    assert m.matrix().dtype == np.int64 and m.matrix().tolist() == [[0, 1000], [I64_MAX, 0]]


@pytest.mark.parametrize(
    "coord,match",
    [
        ("nan", "'nan' is not a number"),
        ("-inf", "not a number"),
        ("1e400", "beyond float64"),
        ("0x1", "not a number"),
    ],
)
def test_non_finite_coordinates_are_refused(tmp_path, coord, match):
    text = HEAD.format(n=2, kind="EUC_2D") + f"NODE_COORD_SECTION\n1 0 0\n2 {coord} 1\n"
    with pytest.raises(InputError, match=match):
        tsplib.read_tsplib(write(tmp_path, text)).matrix()


@pytest.mark.parametrize("kind", ["EUC_2D", "CEIL_2D", "ATT", "MAN_2D", "MAX_2D"])
@pytest.mark.parametrize("x", ["1e300", "1.7e308", "5e18"])
def test_coordinates_too_far_apart_are_refused_not_rounded(tmp_path, kind, x):
    text = HEAD.format(n=2, kind=kind) + f"NODE_COORD_SECTION\n1 -{x} 0\n2 {x} 1\n"
    if kind == "ATT" and x == "5e18":  # sqrt(d^2 / 10): 3.2e18, below 2^62
        assert tsplib.read_tsplib(write(tmp_path, text)).matrix()[0, 1] == 3162277660168379392
        return
    with pytest.raises(InputError, match="too far apart"):
        tsplib.read_tsplib(write(tmp_path, text)).matrix()
    with pytest.raises(InputError, match="not finite"):
        tsplib.coord_matrix(np.array([[0.0, 0.0], [np.nan, 1.0]]), kind)


def test_coord_matrix_takes_only_its_types_and_their_coordinates():
    """coord_matrix (public) took any other name as EUC_2D ("bogus", "EXPLICIT", lower case) and
    added a third coordinate into an EUC_2D or GEO distance; each is an InputError now."""
    three = np.array([[0.0, 0.0, 0.0], [3.0, 4.0, 12.0]])
    assert tsplib.coord_matrix(three, "EUC_3D").tolist() == [[0, 13], [13, 0]]
    assert tsplib.coord_matrix(three[:, :2], "EUC_2D").tolist() == [[0, 5], [5, 0]]
    for kind in ("bogus", "EXPLICIT", "euc_2d"):
        with pytest.raises(InputError, match="coord_matrix: .* is not a coordinate type"):
            tsplib.coord_matrix(three[:, :2], kind)
    for coords, kind in ((three, "EUC_2D"), (three, "GEO"), (three[:, :2], "MAN_3D"), (np.zeros(3), "ATT")):
        with pytest.raises(InputError, match="coordinates a node, got an array of shape"):
            tsplib.coord_matrix(coords, kind)


def test_far_but_representable_coordinates_round_exactly(tmp_path):
    text = HEAD.format(n=3, kind="EUC_2D") + "NODE_COORD_SECTION\n1 0 0\n2 4e18 0\n3 0 1e3\n"
    d = tsplib.read_tsplib(write(tmp_path, text)).matrix()
    assert d[0, 1] == 4 * 10**18 and d[0, 2] == 1000
    geo = HEAD.format(n=2, kind="GEO") + "NODE_COORD_SECTION\n1 1e300 -1e300\n2 16.47 96.10\n"
    assert 0 < tsplib.read_tsplib(write(tmp_path, geo)).matrix()[0, 1] <= 20039  # half the earth at most


def test_bom_crlf_cr_tabs_lower_case_and_colons(tmp_path):
    body = "type :\ttsp\nname:\tx\ndimension\t:\t3\nedge_weight_type: euc_2d\nnode_coord_section :\n"
    body += "\t1\t0\t0\n 2 3 4  \n3\t6\t0\n"
    for nl in ("\n", "\r\n", "\r"):
        p = tmp_path / "b.tsp"
        p.write_bytes(b"\xef\xbb\xbf" + body.replace("\n", nl).encode())
        assert tsplib.read_header(p).type == "TSP"  # the BOM is not part of the first key
        assert tsplib.read_tsplib(p).matrix().tolist() == [[0, 5, 6], [5, 0, 5], [6, 5, 0]]


def test_latin1_comment_with_byte_0x85_is_not_a_line_break(tmp_path):
    text = (
        "COMMENT: caf\xe9 \x85 done\n"
        + HEAD.format(n=2, kind="EUC_2D")
        + "NODE_COORD_SECTION\n1 0 0\n2 0 1\n"
    )
    inst = tsplib.read_tsplib(write(tmp_path, text))
    assert inst.comment == "café \x85 done" and inst.matrix()[0, 1] == 1


def test_eof_ends_the_file_and_comments_may_repeat(tmp_path):
    text = (
        "COMMENT: one\n"
        + HEAD.format(n=2, kind="EUC_2D")
        + "COMMENT: two\nNODE_COORD_SECTION\n1 0 0\n2 0 1\n-1\n"
    )
    text += "EOF\nanything at all\n3 4 5\n"
    inst = tsplib.read_tsplib(write(tmp_path, text))
    assert inst.comment == "one\ntwo" and inst.matrix()[0, 1] == 1


def test_numbers_on_the_section_line(tmp_path):
    text = full_matrix_text([[0, 1], [2, 0]]).replace(
        "EDGE_WEIGHT_SECTION\n0 1\n", "EDGE_WEIGHT_SECTION: 0 1\n"
    )
    assert tsplib.read_tsplib(write(tmp_path, text)).matrix().tolist() == [[0, 1], [2, 0]]


def test_header_reads_only_the_header(tmp_path, monkeypatch):
    p = tmp_path / "big.tsp"
    with open(p, "w") as f:
        f.write(HEAD.format(n=10**9, kind="EUC_2D") + "NODE_COORD_SECTION\n")
        f.write("1 0 0\n" * 200_000)
    monkeypatch.setattr(tsplib, "read_text", lambda *a, **k: pytest.fail("the whole file was read"))
    assert tsplib.read_header(p).dimension == 10**9
    monkeypatch.undo()
    with pytest.raises(InputError, match="node 1 given twice"):
        tsplib.read_tsplib(p)


def test_too_few_nodes_are_found_before_a_matrix_of_dimension_size_is_made(tmp_path):
    p = write(tmp_path, HEAD.format(n=10**15, kind="EUC_2D") + "NODE_COORD_SECTION\n1 0 0\n2 1 1\n")
    with pytest.raises(InputError, match="lacks node 3: it has 2 nodes, DIMENSION says 1000000000000000"):
        tsplib.read_tsplib(p)
    p = write(
        tmp_path,
        HEAD.format(n=10**15, kind="EXPLICIT") + "EDGE_WEIGHT_FORMAT: UPPER_ROW\nEDGE_WEIGHT_SECTION\n1\n",
    )
    with pytest.raises(InputError, match="needs 499999999999999500000000000000 weights"):
        tsplib.read_tsplib(p)


@pytest.mark.parametrize(
    "text,match",
    [
        ("", "empty"),
        ("\n  \n\t\n", "empty"),
        ("NAME: x\nDIMENSION: 2\n", r"no TYPE in the header.*keys found: NAME, DIMENSION"),
        ("TYPE: TSP\nDIMENSON: 2\nEDGE_WEIGHT_TYPE: EUC_2D\n", r"no DIMENSION.*DIMENSON"),
        ("TYPE: TSP\nDIMENSION: 2\n", "no EDGE_WEIGHT_TYPE"),
        ("TYPE: TSP\nDIMENSION: 2\nEDGE_WEIGHT_TYPE: EXPLICIT\n", "no EDGE_WEIGHT_FORMAT"),
        ("TYPE:\nDIMENSION: 2\n", "line 1: TYPE ''"),
        ("TYPE: TSP\nDIMENSION: 0\n", "line 2: DIMENSION must be at least 1, found 0"),
        ("TYPE: TSP\nDIMENSION: -4\n", "at least 1"),
        ("TYPE: TSP\nDIMENSION: 2.0\n", "whole number of nodes, found '2.0'"),
        ("TYPE: TSP\nDIMENSION: ٣\n", "whole number"),
        ("TYPE: TSP\nDIMENSION: " + "9" * 5000 + "\n", "too large"),
        ("TYPE: TSP\nDIMENSION: 2\nDIMENSION: 3\n", "line 3: DIMENSION given twice"),
        ("TYPE: TSP\n: 5\n", "a value with no key"),
        ("TYPE: TSP\n1 2 3\n", "numbers outside a data section"),
        ("TYPE: TSP\nNODE_COORDS_SECTION\n1 0 0\n", "unknown section 'NODE_COORDS_SECTION'"),
        (
            HEAD.format(n=2, kind="EUC_2D") + "NODE_COORD_SECTION\n1 0 0\n2 1 1\nNODE_COORD_SECTION\n",
            r"line 8: NODE_COORD_SECTION given twice \(first on line 5\)",
        ),
        (HEAD.format(n=2, kind="EUC_2D") + "NODE_COORD_SECTION\n1 0 0\n2.0 1 1\n", "'2.0' is not an integer"),
        (HEAD.format(n=2, kind="EUC_2D") + "NODE_COORD_SECTION\n1 0 0\n0 1 1\n", "node '0' outside 1..2"),
        (HEAD.format(n=2, kind="EUC_2D") + "NODE_COORD_SECTION\n1 0 0\n-1\n2 1 1\n", "wants a node number"),
        (HEAD.format(n=2, kind="EUC_2D") + "NODE_COORD_SECTION\n1 0 0 0\n", "found 4 numbers"),
        (HEAD.format(n=2, kind="EUC_3D") + "NODE_COORD_SECTION\n1 0 0\n", "3 coordinates"),
    ],
)
def test_hostile_headers_and_sections_name_what_was_expected(tmp_path, text, match):
    with pytest.raises(InputError, match=match) as e:
        tsplib.read_tsplib(write(tmp_path, text, encoding="utf-8")).matrix()
    assert e.value.field == "tsplib"


def test_folders_binary_and_missing_files_are_input_errors(tmp_path):
    (tmp_path / "binary.tsp").write_bytes(b"TYPE: TSP\n\x00\x01")
    for p, match in [
        (tmp_path, "folder"),
        (tmp_path / "binary.tsp", "binary"),
        (tmp_path / "no.tsp", "cannot open"),
    ]:
        for read in (tsplib.read_header, tsplib.read_tsplib):
            with pytest.raises(InputError, match=match):
                read(p)


def test_gzipped_files_and_headers_longer_than_the_streamed_part(tmp_path):
    import gzip

    text = HEAD.format(n=3, kind="EUC_2D") + "NODE_COORD_SECTION\n1 0 0\n2 3 4\n3 6 0\nEOF\n"
    gz = tmp_path / "x.tsp.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    assert tsplib.read_header(gz).dimension == 3
    assert tsplib.read_tsplib(gz).matrix().tolist() == [[0, 5, 6], [5, 0, 5], [6, 5, 0]]
    long = "COMMENT: " + "x" * (tsplib.HEADER_BYTES + 10) + "\n" + text
    p = write(tmp_path, long)
    assert tsplib.read_header(p).dimension == 3 and len(tsplib.read_header(p).comment) > tsplib.HEADER_BYTES
    p = write(tmp_path, text.replace("NODE_COORD_SECTION", "").replace("EOF\n", ""))
    with pytest.raises(InputError, match="numbers outside a data section"):
        tsplib.read_header(p)  # no section at all: the whole (small) file is the header


COORDS3 = "NODE_COORD_SECTION\n1 0 0\n2 3 4\n3 6 0\n"


@pytest.mark.parametrize(
    "text,match",
    [
        # sections and keys that change the problem are refused, never skipped (issue 35: a skipped
        # FIXED_EDGES_SECTION gave a tour without the required edge as optimal)
        (HEAD.format(n=3, kind="EUC_2D") + COORDS3 + "FIXED_EDGES_SECTION\n1 2\n-1\n", "line 9: FIXED_EDGES"),
        (HEAD.format(n=3, kind="EUC_2D") + "FIXED_EDGES_SECTION\n1 2\n-1\n" + COORDS3, "FIXED_EDGES_SECTION"),
        (HEAD.format(n=3, kind="EUC_2D") + COORDS3 + "DEPOT_SECTION\n1\n-1\n", "DEPOT_SECTION"),
        (HEAD.format(n=3, kind="EUC_2D") + COORDS3 + "DEMAND_SECTION\n1 0\n2 1\n3 1\n", "DEMAND_SECTION"),
        (HEAD.format(n=3, kind="EUC_2D") + COORDS3 + "TOUR_SECTION\n1 2 3\n-1\n", "TOUR_SECTION"),
        (HEAD.format(n=3, kind="EUC_2D") + COORDS3 + "EDGE_DATA_SECTION\n1 2\n-1\n", "EDGE_DATA_SECTION"),
        (HEAD.format(n=3, kind="EUC_2D") + "CAPACITY: 5\n" + COORDS3, "line 5: CAPACITY"),
        (HEAD.format(n=3, kind="EUC_2D") + "EDGE_DATA_FORMAT: ADJ_LIST\n" + COORDS3, "EDGE_DATA_FORMAT"),
        (HEAD.format(n=3, kind="EUC_2D") + "SALESMEN: 2\n" + COORDS3, "unknown keyword 'SALESMEN'"),
        (HEAD.format(n=3, kind="EUC_2D") + COORDS3 + "SALESMEN: 2\n", "line 9: unknown keyword"),
        (HEAD.format(n=3, kind="EUC_2D") + "NODE_COORD_TYPE: NO_COORDS\n" + COORDS3, "NODE_COORD_TYPE"),
        (HEAD.format(n=3, kind="EUC_3D") + "NODE_COORD_TYPE: TWOD_COORDS\n" + COORDS3, "NODE_COORD_TYPE"),
        (HEAD.format(n=3, kind="EUC_2D") + "NODE_COORD_TYPE: 2D\n" + COORDS3, "expected one of TWOD"),
        (HEAD.format(n=3, kind="EUC_2D") + "DISPLAY_DATA_TYPE: PRETTY\n" + COORDS3, "DISPLAY_DATA_TYPE"),
        (HEAD.format(n=3, kind="EUC_2D") + COORDS3 + "EDGE_WEIGHT_SECTION\n1 2 3\n", "which distances"),
        (HEAD.format(n=3, kind="EUC_2D") + "-1\n" + COORDS3, "numbers outside a data section"),
        (
            HEAD.format(n=3, kind="EXPLICIT") + "EDGE_WEIGHT_FORMAT: FULL_MATRIX\nEDGE_WEIGHT_SECTION\n"
            "7 1 2\n1 8 3\n2 4 9\n",
            r"TYPE TSP \(symmetric\), but the FULL_MATRIX gives node 2 to 3 as 3 and 3 to 2 as 4",
        ),
    ],
)
def test_what_would_change_the_problem_is_refused_not_ignored(tmp_path, text, match):
    with pytest.raises(InputError, match=match) as e:
        tsplib.read_tsplib(write(tmp_path, text)).matrix()
    assert e.value.field == "tsplib"


def test_a_refused_section_or_key_in_the_header_is_refused_by_read_header_too(tmp_path):
    for extra in ("FIXED_EDGES_SECTION\n1 2\n-1\n", "CAPACITY: 5\n"):
        with pytest.raises(InputError, match=extra.split()[0].rstrip(":")):
            tsplib.read_header(write(tmp_path, HEAD.format(n=3, kind="EUC_2D") + extra + COORDS3))


def test_keys_that_do_not_change_the_problem_are_read(tmp_path):
    text = (
        "NAME: k\nCOMMENT: one\nCOMMENT: two\nTYPE: TSP\nDIMENSION: 3\nEDGE_WEIGHT_TYPE: EUC_2D\n"
        "EDGE_WEIGHT_FORMAT: FUNCTION\nNODE_COORD_TYPE: twod_coords\nDISPLAY_DATA_TYPE: COORD_DISPLAY\n"
        + COORDS3
        + "DISPLAY_DATA_SECTION\n1 0 0\n2 3 4\n3 6 0\nEOF\n"
    )
    inst = tsplib.read_tsplib(write(tmp_path, text))
    assert inst.matrix().tolist() == [[0, 5, 6], [5, 0, 5], [6, 5, 0]] and inst.comment == "one\ntwo"
