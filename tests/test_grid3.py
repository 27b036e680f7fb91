"""3-D grid recurrences (gpudp.Grid3Recurrence, swept by planes i + j + k: gpudp.grid3): the LCS of
three strings (examples/lcs3.py) and a min-plus recurrence over any set of the seven offsets,
against plain-Python 3-D loops, on the cpu backend and, for tiny grids, on CUDA (the simulator
without a GPU); the traceback; the contract's edges; memory refusals and spilling."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from examples_loader import load_example
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import ContractError, Grid3Recurrence, InputError, sweep

ROOT = Path(__file__).resolve().parent.parent
SIM = pytest.mark.sim

ex = load_example("lcs3")


# ---------------------------------------------------------------------------------------------
# references: plain Python over the whole cube, in (i, j, k) order
# ---------------------------------------------------------------------------------------------


def lcs3_length(a, b, c) -> int:
    n1, n2, n3 = len(a), len(b), len(c)
    L = [[[0] * (n3 + 1) for _ in range(n2 + 1)] for _ in range(n1 + 1)]
    for i in range(1, n1 + 1):
        for j in range(1, n2 + 1):
            for k in range(1, n3 + 1):
                if a[i - 1] == b[j - 1] == c[k - 1]:
                    L[i][j][k] = L[i - 1][j - 1][k - 1] + 1
                else:
                    L[i][j][k] = max(L[i - 1][j][k], L[i][j - 1][k], L[i][j][k - 1])
    return L[n1][n2][n3]


def is_subsequence(sub, s) -> bool:
    pos = 0
    for ch in s:
        if pos < len(sub) and sub[pos] == ch:
            pos += 1
    return pos == len(sub)


def edge(i, j, k) -> int:
    """MinPath's boundary: a value that depends on every coordinate (a read at the wrong place shows)."""
    return 1000 + 7 * i + 3 * j + 5 * k


def minpath_reference(w, offsets):
    """Values and decisions of every cell: the least dependency (the first one on ties) plus the
    cell's weight; decision = that dependency's index in ``offsets``."""
    n1, n2, n3 = w.shape
    V, D = {}, {}
    for i in range(n1):
        for j in range(n2):
            for k in range(n3):
                best, arg = None, None
                for m, (di, dj, dk) in enumerate(offsets):
                    p = (i + di, j + dj, k + dk)
                    x = V[p] if min(p) >= 0 else edge(*p)
                    if best is None or x < best:
                        best, arg = x, m
                V[i, j, k] = best + int(w[i, j, k])
                D[i, j, k] = arg
    return V, D


def reference_walk(D, offsets, start):
    rows, (i, j, k) = [], start
    while min(i, j, k) >= 0:
        d = D[i, j, k]
        rows.append([i, j, k, d])
        di, dj, dk = offsets[d]
        i, j, k = i + di, j + dj, k + dk
    return rows


# ---------------------------------------------------------------------------------------------
# the recurrences under test
# ---------------------------------------------------------------------------------------------

ALL7 = ((0, -1, 0), (-1, -1, -1), (0, 0, -1), (-1, 0, -1), (-1, 0, 0), (0, -1, -1), (-1, -1, 0))


class MinPath(Grid3Recurrence):
    """Least-weight monotone path over any of the seven moves: int64 values, 3-bit decisions, a
    boundary that depends on every coordinate. ``bump`` is added to each decision (a test makes
    some overflow); ``mode`` makes ``back`` misbehave (1: a cell returns itself, 2: a step sideways);
    ``offsets`` may be the instance's own (any subset, any order)."""

    value_dtype = np.int64
    decision_bits = 3
    offsets = ALL7
    fill = -(2**50)  # what the buffers start from: a read of a slot never written wins every min

    def __init__(self, w, offsets=None, bump=0, mode=0):
        self.w = np.asarray(w, np.int64)
        if offsets is not None:
            self.offsets = offsets
        self.offs = np.array(self.offsets, np.int64).reshape(-1, 3)
        self.bump, self.mode = bump, mode

    def shape(self):
        return self.w.shape

    def data(self):
        return self.w, self.offs, self.bump, self.mode

    @staticmethod
    def boundary(i, j, k, w, offs, bump, mode):
        return 1000 + 7 * i + 3 * j + 5 * k

    @staticmethod
    def cell(i, j, k, *args):  # the dependencies, one per offset, then w, offs, bump, mode
        deps = args[:-4]
        w = args[-4]
        bump = args[-2]
        best, arg = deps[0], 0
        for m in range(1, len(deps)):
            if deps[m] < best:
                best, arg = deps[m], m
        return best + w[i, j, k], arg + bump

    @staticmethod
    def back(i, j, k, dec, w, offs, bump, mode):
        if mode == 1 and i + j + k < 4:
            return i, j, k
        if mode == 2:
            return i, j + 1, k - 1
        m = dec - bump
        return i + offs[m, 0], j + offs[m, 1], k + offs[m, 2]


def check_minpath(w, offsets, backend, starts=(), cls=None):
    offsets = offsets or ALL7
    V, D = minpath_reference(w, offsets)
    res = sweep((cls or MinPath)(w, offsets), backend=backend, progress=False)
    n1, n2, n3 = w.shape
    assert res.stats.cells == n1 * n2 * n3 and res.stats.backend == backend
    if not V:
        assert res.last_value is None and res.traceback().shape == (0, 4)
        return res
    assert int(res.last_value) == V[n1 - 1, n2 - 1, n3 - 1]
    assert res.face_i.tolist() == [[V[n1 - 1, j, k] for k in range(n3)] for j in range(n2)]
    assert res.face_j.tolist() == [[V[i, n2 - 1, k] for k in range(n3)] for i in range(n1)]
    assert res.face_k.tolist() == [[V[i, j, n3 - 1] for j in range(n2)] for i in range(n1)]
    assert all(res.decision(*cell) == d for cell, d in D.items())
    for start in [(n1 - 1, n2 - 1, n3 - 1), *starts]:
        assert res.traceback(start).tolist() == reference_walk(D, offsets, start)
    return res


# ---------------------------------------------------------------------------------------------
# the LCS of three strings against the reference
# ---------------------------------------------------------------------------------------------

strings = st.text(alphabet="ABC", max_size=8)


def check_lcs3(a, b, c, backend):
    length, sub, stats = ex.solve(a, b, c, backend=backend, progress=False)
    assert length == lcs3_length(a, b, c) == len(sub)
    assert all(is_subsequence(sub, s) for s in (a, b, c))
    assert stats.cells == len(a) * len(b) * len(c) and stats.backend == backend


@given(strings, strings, strings, st.booleans())
@settings(max_examples=15)
def test_lcs3_cpu(a, b, c, parallel):
    """Every plane in prange (``SERIAL_CELLS = 0``) or the small ones serial: the same answers."""
    from gpudp.grid3 import cpu

    was = cpu.SERIAL_CELLS
    cpu.SERIAL_CELLS = 0 if parallel else was
    try:
        check_lcs3(a, b, c, "cpu")
    finally:
        cpu.SERIAL_CELLS = was


@SIM
@given(
    st.text(alphabet="AB", max_size=5), st.text(alphabet="AB", max_size=5), st.text(alphabet="AB", max_size=5)
)
@settings(max_examples=5)
def test_lcs3_cuda(a, b, c):
    check_lcs3(a, b, c, "cuda")


def test_the_worked_example_and_bytes():
    assert ex.lcs3("ABCBDAB", "BDCABA", "BADACB", backend="cpu") == (4, "BDAB")
    assert ex.lcs3(b"hello", b"yellow", b"mellow", backend="cpu") == (4, b"ello")
    assert ex.lcs3("", "ABC", "ABC", backend="cpu") == (0, "")


# ---------------------------------------------------------------------------------------------
# any offsets, int64 values, boundaries, decisions and walks against the reference
# ---------------------------------------------------------------------------------------------

# small weights (the boundary's values compete with the cells') or near 2^40 (int64 stays exact)
weights = st.tuples(
    st.integers(0, 5),
    st.integers(0, 5),
    st.integers(0, 5),
    st.sampled_from([60, 2**40]),
    st.integers(0, 2**32),
).map(lambda t: np.random.default_rng(t[4]).integers(-t[3], t[3], t[:3]))


@given(weights, st.data())
@settings(max_examples=8)
def test_all_seven_offsets_cpu(w, data):
    start = tuple(data.draw(st.integers(-1, n - 1)) for n in w.shape)
    check_minpath(w, None, "cpu", starts=[start] if min(w.shape) else [])


@pytest.mark.parametrize(
    "offsets",
    [
        ((-1, 0, 0),),  # one axis: rows never read j or k behind them
        ((0, -1, -1), (0, 0, -1)),  # never along i
        ((-1, -1, -1),),  # only three planes back: a ring of four planes, one read
    ],
)
def test_subsets_of_offsets_cpu(offsets):
    rng = np.random.default_rng(len(offsets))
    for shape, big in [
        ((4, 5, 3), 60),
        ((1, 6, 2), 60),
        ((5, 1, 1), 60),
        ((3, 3, 7), 60),
        ((4, 3, 5), 2**40),
    ]:
        check_minpath(rng.integers(-big, big, shape), offsets, "cpu", starts=[(0, 0, 0)])


@SIM
@pytest.mark.parametrize("offsets", [None, ((0, -1, -1), (-1, 0, 0))])
def test_offsets_cuda(offsets):
    w = np.random.default_rng(1).integers(-60, 60, (3, 4, 5))
    check_minpath(w, offsets, "cuda", starts=[(2, 0, 3)])


class MinPath32(MinPath):
    value_dtype = np.float32  # small integer weights: every value exact in float32


@SIM
def test_float32_cells_cuda():
    w = np.random.default_rng(6).integers(-99, 99, (2, 3, 4))
    res = check_minpath(w, None, "cuda", cls=MinPath32)
    assert res.face_k.dtype == np.float32 and isinstance(res.last_value, np.float32)


@SIM
def test_chunks_of_planes_reuse_both_slabs_cuda(monkeypatch):
    """Slabs of a few cells: a chunk per plane, each slab copied out and reused many times."""
    from gpudp.grid3 import layout

    monkeypatch.setattr(layout, "SLAB_BYTES", 1)
    res = check_minpath(np.random.default_rng(2).integers(-99, 99, (3, 3, 4)), None, "cuda")
    assert res.stats.extra["launches"] == res.stats.extra["planes"] == 8


def test_chunks_of_planes_cpu(monkeypatch):
    from gpudp.grid3 import layout

    monkeypatch.setattr(layout, "CPU_CHUNK_CELLS", 5)
    res = check_minpath(np.random.default_rng(3).integers(-99, 99, (4, 3, 5)), None, "cpu")
    assert res.stats.extra["launches"] > 4


def test_the_store_layout_is_a_bijection():
    """Every cell's position (the closed form both backends and the walker use) is distinct and
    fills 0 .. n1 n2 n3 - 1, plane after plane, row after row."""
    from gpudp.grid3 import plane_starts, position

    for shape in [(1, 1, 1), (2, 3, 4), (5, 2, 3), (4, 4, 1), (3, 7, 2)]:
        n1, n2, n3 = shape
        starts = plane_starts(*shape)
        cells = sorted(
            (i + j + k, i, j) for i in range(n1) for j in range(n2) for k in range(n3)
        )  # plane, then row, then j
        got = [position(i, j, d - i - j, n2, n3, starts) for d, i, j in cells]
        assert got == list(range(n1 * n2 * n3))
        assert starts[-1] == n1 * n2 * n3


# ---------------------------------------------------------------------------------------------
# decisions: overflow, traceback=False, empty grids, walks that would loop
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=SIM)])
def test_a_decision_too_wide_is_a_contract_error(backend):
    w = np.random.default_rng(4).integers(-99, 99, (3, 3, 3))
    _, D = minpath_reference(w, ALL7)
    bump = 2  # argmin + 2 > 7 where the argmin is 6
    wide = {cell for cell, d in D.items() if d + bump > 7}
    assert wide
    with pytest.raises(
        ContractError, match=r"decision 8 at cell \(i, j, k\) = \((\d), (\d), (\d)\).*bits = 3"
    ) as e:
        sweep(MinPath(w, bump=bump), backend=backend, progress=False)
    import re

    cell = tuple(int(x) for x in re.search(r"= \((\d), (\d), (\d)\)", str(e.value)).groups())
    assert cell in wide


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=SIM)])
def test_values_only(backend):
    a, b, c = "ABCAB", "BACBA", "CABBA"
    full = sweep(ex.LCS3(a, b, c), backend=backend, progress=False)
    values = sweep(ex.LCS3(a, b, c), backend=backend, progress=False, traceback=False)
    assert int(values.last_value) == int(full.last_value) == lcs3_length(a, b, c)
    for f in ("face_i", "face_j", "face_k"):
        assert (getattr(values, f) == getattr(full, f)).all()
    assert values.stats.bytes_evicted == 0 and full.stats.bytes_evicted == len(a) * len(b) * len(c)
    assert type(values.recurrence) is ex.LCS3
    with pytest.raises(ContractError, match="swept with traceback=False"):
        values.traceback()
    with pytest.raises(ContractError, match="swept with traceback=False"):
        values.decision(0, 0, 0)
    full.close()
    with pytest.raises(ContractError, match="closed"):
        full.traceback()


@pytest.mark.parametrize("shape", [(0, 3, 2), (2, 0, 2), (3, 2, 0), (0, 0, 0)])
def test_empty_dimensions(shape):
    res = sweep(MinPath(np.zeros(shape, np.int64)), backend="cpu", progress=False)
    n1, n2, n3 = shape
    assert res.last_value is None and res.stats.cells == 0
    assert res.face_i.shape == (n2, n3) and res.face_j.shape == (n1, n3) and res.face_k.shape == (n1, n2)
    assert res.traceback().shape == (0, 4)
    with pytest.raises(IndexError):
        res.traceback((0, 0, 0))
    with pytest.raises(IndexError):
        res.decision(0, 0, 0)


def test_walks_cannot_loop():
    w = np.random.default_rng(5).integers(-99, 99, (3, 4, 3))
    res = sweep(MinPath(w, mode=1), backend="cpu", progress=False)
    with pytest.raises(
        ContractError, match=r"returned \((\d), (\d), (\d)\), which is not strictly behind \(\1, \2, \3\)"
    ):
        res.traceback()
    res = sweep(MinPath(w, mode=2), backend="cpu", progress=False)
    with pytest.raises(
        ContractError, match=r"back\(2, 3, 2, \d\) returned \(2, 4, 1\), which is not strictly"
    ):
        res.traceback()
    with pytest.raises(IndexError, match="outside the 3 x 4 x 3 grid"):
        res.traceback((3, 0, 0))
    assert sweep(MinPath(w), backend="cpu").traceback((-1, 2, 2)).shape == (0, 4)


@SIM
def test_a_back_of_the_wrong_form_is_named():
    class Pair(MinPath):
        @staticmethod
        def back(i, j, k, dec, w, offs, bump, mode):
            return i - 1, j

    res = sweep(Pair(np.zeros((2, 2, 2), np.int64)), backend="cuda", progress=False)
    with pytest.raises(ContractError, match=r"back\(1, 1, 1, \d\) returned \(0, 1\).*-> \(i2, j2, k2\)"):
        res.traceback()


# ---------------------------------------------------------------------------------------------
# the contract, checked before anything compiles
# ---------------------------------------------------------------------------------------------


class Ok(Grid3Recurrence):
    value_dtype = np.int32
    decision_bits = 2
    offsets = ((-1, 0, 0), (0, -1, 0))

    def shape(self):
        return (2, 2, 2)

    @staticmethod
    def cell(i, j, k, up, left):
        return max(up, left) + 1, 0

    @staticmethod
    def back(i, j, k, d):
        return i - 1, j, k


def _compiled(cls) -> bool:
    from gpudp.kernel import family

    return any(issubclass(k.parts["rec"], cls) for k in family("grid3.cpu").built())


@pytest.mark.parametrize(
    "offsets, message",
    [
        (((1, 0, 0),), r"got \(1, 0, 0\): a cell reads only its neighbours behind it"),
        (((0, 0, 0), (-1, 0, 0)), r"got \(0, 0, 0\): a cell cannot depend on itself"),
        (((-1, 0, 0), (-1, 0, 0)), r"\(-1, 0, 0\) is given twice"),
        (((-1, 0),), r"got \(-1, 0\)"),
        ((), "got none"),
        (5, "got 5"),
        (((-1, 0, 0.5),), r"got \(-1, 0, 0.5\)"),
    ],
)
def test_bad_offsets(offsets, message):
    class Bad(Ok):
        pass

    Bad.offsets = offsets
    with pytest.raises(ContractError, match=r"Bad\.offsets: a tuple of 3-tuples.*" + message):
        sweep(Bad(), backend="cpu")
    inst = Ok()
    inst.offsets = offsets  # an instance's own offsets are checked alike
    with pytest.raises(ContractError, match=message):
        sweep(inst, backend="cpu")
    assert not _compiled(Bad)


def test_contract_mistakes_are_named_before_compiling():
    class Arity(Ok):
        @staticmethod
        def cell(i, j, k, up):
            return up, 0

    with pytest.raises(
        ContractError,
        match=r"Arity.cell takes 4 arguments, but the engine passes 5: cell\(i, j, k, dep_0, dep_1",
    ):
        sweep(Arity(), backend="cpu")

    class BackArity(Ok):
        @staticmethod
        def back(i, j, d):
            return i, j, 0

    with pytest.raises(
        ContractError, match=r"back takes 3 arguments, but the engine passes 4.*-> \(i2, j2, k2\)"
    ):
        sweep(BackArity(), backend="cpu")

    class BoundaryArity(Ok):
        @staticmethod
        def boundary(i, j):
            return 0

    with pytest.raises(ContractError, match=r"boundary takes 2 arguments, but the engine passes 3"):
        sweep(BoundaryArity(), backend="cpu")

    class Bare(Ok):
        @staticmethod
        def cell(i, j, k, up, left):
            return up

    with pytest.raises(
        ContractError,
        match=r"Bare.cell returned (np.int32\()?0\)? \(int32\) at the first cell, \(0, 0, 0\).*"
        r"\(value, decision\)",
    ):
        sweep(Bare(), backend="cpu")

    for attr, value in [
        ("reduce", "max"),
        ("traceback_state", True),
        ("symbols", True),
        ("deps_tuple", True),
    ]:
        cls = type("Declares", (Ok,), {attr: value})
        with pytest.raises(ContractError, match=rf"Declares\.{attr} = .*a Grid3Recurrence has no {attr}"):
            sweep(cls(), backend="cpu")

    class NoShape(Grid3Recurrence):
        @staticmethod
        def cell(i, j, k, *deps):
            return 0

    with pytest.raises(ContractError, match=r"NoShape must define shape\(self\)"):
        sweep(NoShape(), backend="cpu")

    class Record(Ok):
        value_dtype = np.dtype([("a", np.int32), ("b", np.int32)])

    with pytest.raises(ContractError, match="value_dtype is a record"):
        sweep(Record(), backend="cpu")

    class NotStatic(Ok):
        def cell(self, i, j, k, up, left):
            return 0, 0

    with pytest.raises(ContractError, match=r"NotStatic.cell must be a @staticmethod"):
        sweep(NotStatic(), backend="cpu")

    class Negative(Ok):
        def shape(self):
            return (2, -1, 2)

    with pytest.raises(InputError, match=r"shape: Negative.shape\(\): n2 must be an integer >= 0, got -1"):
        sweep(Negative(), backend="cpu")
    for cls in (Arity, BackArity, BoundaryArity, Bare, NoShape, Record, NotStatic, Negative):
        assert not _compiled(cls)


# ---------------------------------------------------------------------------------------------
# memory: refused with the figures, or the decisions spilled to disk
# ---------------------------------------------------------------------------------------------


class Huge(Ok):
    def shape(self):
        return (10**6, 10**6, 10**6)


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=SIM)])
def test_a_grid_too_large_is_refused_with_figures(backend):
    with pytest.raises(
        InputError, match=r"memory: Huge's 3-D sweep of 1000000 x 1000000 x 1000000 cells.*\d{13,} bytes"
    ):
        sweep(Huge(), backend=backend, progress=False)  # before allocating or compiling anything


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=SIM)])
def test_decisions_spill_to_disk_past_the_budget(backend):
    a, b, c = "ABCBDAB", "BDCABA", "BADACB"
    res = sweep(ex.LCS3(a, b, c), backend=backend, progress=False, memory_budget=1)
    assert res.stats.spilled_to_disk and int(res.last_value) == lcs3_length(a, b, c)
    path = res.traceback()
    matched = "".join(a[i] for i, _, _, how in path[::-1] if how == 0)
    assert len(matched) == 4 and all(is_subsequence(matched, s) for s in (a, b, c))
    res.close()


# ---------------------------------------------------------------------------------------------
# the example as a script; a large grid on a real GPU
# ---------------------------------------------------------------------------------------------


def test_the_example_runs_as_a_script():
    cmd = [
        sys.executable,
        str(ROOT / "examples" / "lcs3.py"),
        "ABCBDAB",
        "BDCABA",
        "BADACB",
        "--backend",
        "cpu",
    ]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["length 4 (cpu backend)", "BDAB"]


@pytest.mark.gpu
def test_a_large_grid_on_the_gpu_equals_the_cpu():
    rng = np.random.default_rng(7)
    a, b, c = ("".join(rng.choice(list("ACGT"), n)) for n in (200, 190, 210))
    gpu = sweep(ex.LCS3(a, b, c), backend="cuda", progress=False)
    cpu = sweep(ex.LCS3(a, b, c), backend="cpu", progress=False)
    assert int(gpu.last_value) == int(cpu.last_value)
    for f in ("face_i", "face_j", "face_k"):
        assert (getattr(gpu, f) == getattr(cpu, f)).all()
    assert (gpu.traceback() == cpu.traceback()).all()
    assert ex.lcs3(a, b, c, backend="cuda") == ex.lcs3(a, b, c, backend="cpu")
    w = rng.integers(-(2**40), 2**40, (64, 48, 80))
    g, c_ = (sweep(MinPath(w), backend=be, progress=False) for be in ("cuda", "cpu"))
    assert int(g.last_value) == int(c_.last_value) and (g.face_k == c_.face_k).all()
    assert (g.traceback() == c_.traceback()).all()


class Allocates(Grid3Recurrence):
    """A cell that allocates an array: it needs numba's runtime, which the cpu backend leaves out of
    cells that do not (see gpudp.grid3.cpu.runner)."""

    value_dtype = np.int64
    offsets = ((-1, 0, 0),)

    def shape(self):
        return (4, 2, 3)

    @staticmethod
    def cell(i, j, k, up):
        buf = np.zeros(3, np.int64)
        buf[k] = up + j
        return buf.sum() + 1


def test_a_cell_that_allocates_compiles_with_the_runtime():
    from gpudp.kernel import family

    res = sweep(Allocates(), backend="cpu", progress=False)
    assert res.face_i.tolist() == [[4, 4, 4], [8, 8, 8]]  # (j + 1) per step along i, 4 steps
    assert family("grid3.cpu").lookup(rec=Allocates, n_data=0, nrt=True).ready
