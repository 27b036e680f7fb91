"""gpudp.sweep_many against gpudp.sweep, instance by instance: values, reductions and paths.

Random batches of the examples' recurrences (edit distance; Smith-Waterman, whose traceback starts
at the best cell and stops where ``back`` leaves the grid; an affine-gap alignment with a stateful
traceback) of every size down to 0 and 1 rows or columns, on the cpu and on the cuda backend (the
CUDA simulator without a GPU: tiny batches). Then what refuses a batch, what fails one instance
only, and a large batch on a real GPU against the cpu.
"""

import numpy as np
import pytest
from examples_loader import load_example
from hypothesis import given, settings
from hypothesis import strategies as st
from numba.extending import register_jitable

import gpudp.many
import gpudp.many.cuda
from gpudp import Grid3Recurrence, GridRecurrence, LayeredRecurrence, sweep, sweep_many
from gpudp.codegen import diag_start, diagonal_index
from gpudp.errors import ContractError, InputError

ED = load_example("edit_distance")
SW = load_example("local_alignment")
MANY = load_example("many_alignments")

# An affine-gap global alignment (Gotoh) whose three values travel packed in one int64, with a
# stateful traceback (which of the three matrices the walk is in). The examples' Gotoh keeps them as
# a record cell (tests/test_many_records.py): this one is a scalar of its own.
FIELD = 21
BIAS = 1 << (FIELD - 1)
MASK = (1 << FIELD) - 1
NEG = -BIAS
M, X, Y = 0, 1, 2


@register_jitable
def pack(m, x, y):
    return ((np.int64(m) + BIAS) << (2 * FIELD)) | ((np.int64(x) + BIAS) << FIELD) | (np.int64(y) + BIAS)


@register_jitable
def unpack(v):
    return ((v >> (2 * FIELD)) & MASK) - BIAS, ((v >> FIELD) & MASK) - BIAS, (v & MASK) - BIAS


@register_jitable
def gap(open_from, extend_from, gap_open, gap_extend):
    o = max(open_from - gap_open - gap_extend, NEG)
    e = max(extend_from - gap_extend, NEG)
    if e > o:
        return e, 1
    return o, 0


class PackedGotoh(GridRecurrence):
    value_dtype = np.int64
    decision_bits = 4
    offsets = ((-1, 0), (0, -1), (-1, -1))
    traceback_state = True
    symbols = True

    def __init__(self, a, b, match=2, mismatch=-1, gap_open=3, gap_extend=1):
        self.a = np.frombuffer(a.encode(), np.uint8).astype(np.int32)
        self.b = np.frombuffer(b.encode(), np.uint8).astype(np.int32)
        self.scores = np.array([match, mismatch, gap_open, gap_extend], np.int64)

    def shape(self):
        return len(self.a) + 1, len(self.b) + 1

    def row_symbols(self):
        return np.concatenate(([-1], self.a)).astype(np.int32)

    def col_symbols(self):
        return np.concatenate(([-2], self.b)).astype(np.int32)

    def data(self):
        return (self.scores,)

    @staticmethod
    def cell(i, j, up, left, diag, ri, cj, scores):
        if i == 0 and j == 0:
            return pack(0, NEG, NEG), 0
        x, dx, y, dy, m, dm = NEG, 0, NEG, 0, NEG, 0
        if i > 0:
            um, ux, _ = unpack(up)
            x, dx = gap(um, ux, scores[2], scores[3])
        if j > 0:
            lm, _, ly = unpack(left)
            y, dy = gap(lm, ly, scores[2], scores[3])
        if i > 0 and j > 0:
            pm, px, py = unpack(diag)
            best = pm
            if px > best:
                best, dm = px, X
            if py > best:
                best, dm = py, Y
            m = max(best + (scores[0] if ri == cj else scores[1]), NEG)
        return pack(m, x, y), dm | (dx << 2) | (dy << 3)

    @staticmethod
    def boundary(i, j, scores):
        return pack(NEG, NEG, NEG)

    @staticmethod
    def back(i, j, decision, state, scores):
        if state == M:
            if i == 0 and j == 0:
                return -1, -1, M
            return i - 1, j - 1, decision & 3
        if state == X:
            return i - 1, j, X if (decision >> 2) & 1 else M
        return i, j - 1, Y if (decision >> 3) & 1 else M


class Mix(GridRecurrence):
    """A generic grid with a 2-D array of its own shape as data, its dependencies as one tuple in an
    order of its own (left, then up: a subset of the three), and one decision bit."""

    value_dtype = np.int64
    decision_bits = 1
    deps_tuple = True
    offsets = ((0, -1), (-1, 0))

    def __init__(self, h):
        self.h = h

    def shape(self):
        return self.h.shape

    def data(self):
        return (self.h,)

    @staticmethod
    def cell(i, j, deps, h):
        left, up = deps
        return (h[i, j] + 2 * left + 3 * up) % 1009, 1 if up > left else 0

    @staticmethod
    def boundary(i, j, h):
        return (3 * abs(i) + 5 * abs(j) + 1) % 17

    @staticmethod
    def back(i, j, d, h):
        return (i - 1, j) if d else (i, j - 1)


def grids(max_n, side):
    """Lists of random 2-D int64 arrays, each of its own shape (0 to ``side`` rows and columns)."""
    shape = st.tuples(st.integers(0, side), st.integers(0, side))
    return st.lists(st.tuples(shape, st.integers(0, 2**32 - 1)), min_size=1, max_size=max_n).map(
        lambda xs: [np.random.default_rng(seed).integers(0, 1000, s) for s, seed in xs]
    )


def best_state(rec, value):
    """The matrix an alignment ending at the last cell scores best in: the walk's start state."""
    return int(np.argmax(unpack(int(value))))


def seqs(max_len):
    return st.text(alphabet="ACGT", min_size=0, max_size=max_len)


def pairs(max_n, max_len):
    return st.lists(st.tuples(seqs(max_len), seqs(max_len)), min_size=1, max_size=max_n)


def same(rec, item, backend="cpu", state=None):
    """``item`` (of a batch) equals what ``sweep`` gives for ``rec``: values, reduction, path."""
    assert item.error is None, item.error
    res = sweep(rec, backend=backend)
    R, C = rec.shape()
    assert item.shape == (R, C)
    assert item.last_row.dtype == res.last_row.dtype
    assert np.array_equal(item.last_row, res.last_row) and np.array_equal(item.last_col, res.last_col)
    if R and C:
        assert item.value == res.last_row[-1]
    else:
        assert item.value is None
    assert (item.best_value, item.best_cell) == (res.best_value, res.best_cell)
    start = res.best_cell if type(rec).reduce else ((R - 1, C - 1) if R and C else None)
    if start is None:
        assert item.path.shape[0] == 0
    else:
        path, ex = res.walk(start, state)
        assert item.path.dtype == np.int64
        assert np.array_equal(item.path, path), (item.path, path)
        assert item.exit == tuple(int(x) for x in ex)
    res.close()


def check_batch(recs, backend, states=None):
    res = sweep_many(recs, backend=backend, start_state=best_state if states else None)
    assert len(res) == len(recs) and not res.errors
    for k, rec in enumerate(recs):
        state = best_state(rec, res[k].value) if states else None
        same(rec, res[k], state=state)
    return res


# ---------------------------------------------------------------------------------------------
# Against sweep, on the cpu
# ---------------------------------------------------------------------------------------------


@settings(max_examples=5)
@given(pairs(7, 16))
def test_edit_distance_matches_sweep(batch):
    recs = [ED.EditDistance(a, b) for a, b in batch]
    res = check_batch(recs, "cpu")
    assert res.stats.backend == "cpu"
    assert res.stats.cells == sum(len(a) * len(b) for a, b in batch)
    for (a, b), item in zip(batch, res, strict=True):  # the distance itself, where it is a cell
        if a and b:
            assert item.value == ED.edit_distance(a, b, backend="cpu")[0]


@settings(max_examples=4)
@given(pairs(6, 14), st.integers(1, 4), st.integers(-4, 0), st.integers(0, 3))
def test_local_alignment_matches_sweep(batch, match, mismatch, gap_cost):
    recs = [SW.SmithWaterman(a, b, match, mismatch, gap_cost) for a, b in batch]
    res = check_batch(recs, "cpu")
    for item in res:  # the walk stops at a STOP decision (back leaves at (-1, -1)) or at an edge
        if len(item.path):
            assert (item.path[:-1, 2] != SW.STOP).all() and min(item.exit) == -1
            assert item.path[-1, 2] != SW.STOP or item.exit == (-1, -1)


@settings(max_examples=4)
@given(pairs(6, 12))
def test_affine_alignment_matches_sweep(batch):
    recs = [PackedGotoh(a, b) for a, b in batch]
    res = check_batch(recs, "cpu", states=True)
    for (a, b), item in zip(batch, res, strict=True):  # the path covers both strings
        assert item.path.shape[1] == 4 and item.exit[:2] == (-1, -1)
        steps = item.path[::-1][1:]
        assert (steps[:, 3] != Y).sum() == len(a) and (steps[:, 3] != X).sum() == len(b)


# ---------------------------------------------------------------------------------------------
# Against sweep, on the cuda backend (the simulator without a GPU: tiny)
# ---------------------------------------------------------------------------------------------


@settings(max_examples=4)
@given(grids(7, 12))
def test_generic_grid_matches_sweep(hs):
    check_batch([Mix(h) for h in hs], "cpu")


@pytest.mark.sim
@pytest.mark.parametrize("kind", ["edit", "local", "affine", "mix"])
@settings(max_examples=2)
@given(batch=pairs(4, 7), hs=grids(4, 8))
def test_cuda_batch_matches_sweep(kind, batch, hs):
    if kind == "edit":
        recs = [ED.EditDistance(a, b) for a, b in batch]
    elif kind == "local":
        recs = [SW.SmithWaterman(a, b) for a, b in batch]
    elif kind == "affine":
        recs = [PackedGotoh(a, b) for a, b in batch]
    else:
        recs = [Mix(h) for h in hs]
    res = check_batch(recs, "cuda", states=kind == "affine")
    assert res.stats.backend == "cuda"


@pytest.mark.sim
def test_cuda_buffers_shared_and_in_device_memory():
    """An 8-row instance's diagonals do not fit the simulator's shared memory (device memory), a
    2-row one's do (a real GPU's shared memory holds all three); grids with more rows than columns
    index the diagonals by column."""
    from gpudp.backends.cuda import sim_geometry

    recs = [
        ED.EditDistance("ACGTTGCA", "ACTGGTCA"),
        ED.EditDistance("AC", "GTTCA"),
        ED.EditDistance("ACGTA", "T"),
    ]
    res = check_batch(recs, "cuda")
    info = res.stats.extra["cuda"]
    assert info["shared_bytes_max"] > 0
    assert info["device_buffers"] >= sim_geometry(0, 1)


def check_values(group, max_rows=None):
    """``sweep_many(group, traceback=False)`` on the cuda backend (with the warp kernel's rows
    limited to ``max_rows``) against sweep on the cpu; how many instances took a warp."""
    with pytest.MonkeyPatch.context() as mp:
        if max_rows is not None:
            mp.setattr(gpudp.many.cuda, "MAX_ROWS", max_rows)
        res = sweep_many(group, backend="cuda", traceback=False)
    assert not res.errors
    # read before any item is made: the values picked on the device, the edges still there
    values, best = res.values, res.best_values
    assert res.stats.extra.get("cuda", {}).get("edges_on_device", 0) == res.stats.extra["chunks"]
    for rec, item, v, b in zip(group, res, values, best, strict=True):
        ref = sweep(rec, backend="cpu")  # with decisions: the kernels the cpu tests above compiled
        assert np.array_equal(item.last_row, ref.last_row) and np.array_equal(item.last_col, ref.last_col)
        assert (item.best_value, item.best_cell) == (ref.best_value, ref.best_cell)
        assert (v, b) == (item.value, item.best_value)
    return res.stats.extra.get("cuda", {}).get("warp_instances", 0)


@pytest.mark.sim
@settings(max_examples=2, deadline=None)
@given(batch=pairs(3, 6), hs=grids(3, 5), reward=st.integers(1, 3))
def test_cuda_values_a_warp_an_instance(batch, hs, reward):
    """Values only, a warp an instance (gpudp.many.cuda.warp_kernel): symbols, a reduction, and a
    generic cell with data of its own, against sweep on the cpu."""
    for group in (
        [SW.SmithWaterman(a, b, reward + 1, -reward, reward) for a, b in batch],
        [ED.EditDistance(a, b) for a, b in batch],
        [Mix(h) for h in hs],
    ):
        assert check_values(group) == sum(r.shape()[0] * r.shape()[1] > 0 for r in group)


class LowFloat(GridRecurrence):
    """A float32 grid whose minimum most cells share (a min reduction's ties, across a warp's lanes)."""

    value_dtype = np.float32
    reduce = "min"

    def __init__(self, w):
        self.w = w

    def shape(self):
        return self.w.shape

    def data(self):
        return (self.w,)

    @staticmethod
    def cell(i, j, up, left, diag, w):
        return max(-1.0, min(up, left, diag) + w[i, j])


@pytest.mark.sim
@settings(max_examples=2, deadline=None)
@given(st.lists(st.tuples(st.integers(33, 40), st.integers(1, 3)), min_size=1, max_size=2), st.integers(0, 9))
def test_cuda_values_float_min_ties_across_lanes(shapes, seed):
    """Lanes of two rows each hold a best cell of equal value: the earliest wins (the warp's merge)."""
    rng = np.random.default_rng(seed)
    group = [LowFloat(rng.integers(-1, 1, (r, c)).astype(np.float32)) for r, c in shapes]
    assert check_values(group) == len(group)


@pytest.mark.sim
def test_cuda_values_lanes_of_two_rows_and_the_block_kernel_beside():
    """33 and 34 rows take lanes of two rows (the last lane's partly outside the grid); 35 rows,
    past MAX_ROWS (lowered here), run in the block kernel of the same chunk."""
    rng = np.random.default_rng(3)
    word = lambda n: "".join(rng.choice(list("ACGT"), n))  # noqa: E731
    group = [SW.SmithWaterman(word(r), word(2)) for r in (33, 34, 35)] + [SW.SmithWaterman(word(3), word(4))]
    assert check_values(group, max_rows=34) == 3


def test_diagonal_layout():
    """The cuda chunks' layout numbers a grid's cells diagonal by diagonal, each diagonal by row."""
    for R, C in [(1, 1), (1, 5), (5, 1), (3, 4), (4, 3), (6, 6)]:
        cells = sorted(((i, j) for i in range(R) for j in range(C)), key=lambda c: (c[0] + c[1], c[0]))
        assert [diagonal_index(i, j, R, C) for i, j in cells] == list(range(R * C))
        assert diag_start(R + C - 1, R, C) == R * C


# ---------------------------------------------------------------------------------------------
# What refuses a batch
# ---------------------------------------------------------------------------------------------


def test_mixed_classes_refused():
    with pytest.raises(InputError, match=r"recs\[1\].*one recurrence class"):
        sweep_many([ED.EditDistance("AC", "G"), SW.SmithWaterman("AC", "G")], backend="cpu")


def test_mismatched_data_refused():
    odd = ED.EditDistance("ACG", "TT")
    odd.b = odd.b.astype(np.int64)
    with pytest.raises(InputError, match=r"recs\[2\]: data\(\)\[1\] is a 1-d array of int64, instance 0's"):
        sweep_many([ED.EditDistance("A", "C"), ED.EditDistance("G", "T"), odd], backend="cpu")


def test_other_offsets_refused():
    class Seam(GridRecurrence):
        offsets = ((-1, -1), (-1, 0), (-1, 1))

        def shape(self):
            return 2, 2

        @staticmethod
        def cell(i, j, a, b, c):
            return a + b + c

    with pytest.raises(ContractError, match=r"offsets = \(\(-1, -1\), \(-1, 0\), \(-1, 1\)\).*gpudp.sweep"):
        sweep_many([Seam()], backend="cpu")


def test_other_shapes_refused_by_name():
    """A layered recurrence and a 3-D grid are each named as what they are (a 3-D grid was called a
    layered recurrence once)."""

    class Layers(LayeredRecurrence):
        def num_layers(self):
            return 2

        def layer_size(self, t):
            return 2

        @staticmethod
        def cell(t, k, prev):
            return prev[k] + 1

    class Cube(Grid3Recurrence):
        def shape(self):
            return 2, 2, 2

        @staticmethod
        def cell(i, j, k, *deps):
            return max(deps)

    for rec, kind in ((Layers(), "a layered recurrence"), (Cube(), "a 3-D grid")):
        said = f"^{type(rec).__name__} is {kind}: .* one by one with gpudp.sweep"
        with pytest.raises(ContractError, match=said):
            sweep_many([rec], backend="cpu")


# ---------------------------------------------------------------------------------------------
# What fails one instance only
# ---------------------------------------------------------------------------------------------


class Flagged(GridRecurrence):
    """Counts paths through a grid; an instance whose ``wide`` is set returns decision 4, which does
    not fit 2 bits, at its cell (1, 1); ``loop`` makes back stand still at (0, 0)."""

    value_dtype = np.int64
    decision_bits = 2

    def __init__(self, rows, cols, wide=0, loop=0):
        self.rows, self.cols = rows, cols
        self.flags = np.array([wide, loop], np.int64)

    def shape(self):
        return self.rows, self.cols

    def data(self):
        return (self.flags,)

    @staticmethod
    def cell(i, j, up, left, diag, flags):
        if i == 0 and j == 0:
            return 1, 0
        if flags[0] and i == 1 and j == 1:
            return up + left, 4
        return up + left, 1 if up >= left else 2

    @staticmethod
    def boundary(i, j, flags):
        return 0

    @staticmethod
    def back(i, j, d, flags):
        if flags[1] and i == 0 and j == 0:
            return 0, 0
        return (i - 1, j) if d == 1 else (i, j - 1) if d == 2 else (-1, -1)


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.sim)])
def test_per_instance_errors(backend):
    """A decision overflow, a negative shape, a data() that raises and a back that stands still
    fail their own instance; the others are solved."""

    def no_data():
        raise RuntimeError("no data today")

    broken = Flagged(2, 2)
    broken.data = no_data  # one class for the batch, a data() that raises for this instance
    recs = [
        Flagged(3, 4),
        Flagged(3, 3, wide=1),
        Flagged(-1, 2),
        Flagged(2, 5),
        Flagged(3, 2, loop=1),
        broken,
    ]
    res = sweep_many(recs, backend=backend)
    assert set(res.errors) == {1, 2, 4, 5}
    assert "decision 4 at cell (i, j) = (1, 1)" in res[1].error and res[1].value is None
    assert "rows" in res[2].error
    assert "no data today" in res[5].error
    assert "not on an earlier wavefront" in res[4].error and res[4].path is None
    assert res[4].value == 3  # its values stand: only the walk failed
    for k in (0, 3):
        same(recs[k], res[k])
    assert res.stats.extra["failed"] == 4


def test_instances_swept_alone_fail_alone(monkeypatch):
    """Past MAX_BATCH_CELLS an instance goes to sweep; its overflow or loop is its own error too."""
    monkeypatch.setattr(gpudp.many, "MAX_BATCH_CELLS", 4)
    recs = [Flagged(3, 3, wide=1), Flagged(3, 4), Flagged(2, 3, loop=1), Flagged(2, 2)]
    res = sweep_many(recs, backend="cpu")
    assert res.stats.extra["alone"] == 3 and res.stats.extra["batched"] == 1
    assert set(res.errors) == {0, 2}
    assert "decision 4" in res[0].error and "not on an earlier wavefront" in res[2].error
    for k in (1, 3):
        same(recs[k], res[k])


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.sim)])
def test_traceback_false(backend):
    recs = [ED.EditDistance("ACGTAC", "AGTTC"), ED.EditDistance("", "A"), ED.EditDistance("G", "TGA")]
    res = sweep_many(recs, backend=backend, traceback=False)
    # the values from the chunks' arrays (no item made yet), then the items made when read
    assert res.values == [sweep(r, backend="cpu").last_row[-1] if r.shape()[0] else None for r in recs]
    assert res.best_values == [None] * 3 and res.errors == {}
    assert [it.index for it in res[::-1]] == [2, 1, 0] and res[-1] is res[2]
    for rec, item in zip(recs, res, strict=True):
        ref = sweep(rec, backend="cpu")  # the kernel of the values above
        assert item.path is None and item.exit is None
        assert np.array_equal(item.last_row, ref.last_row) and np.array_equal(item.last_col, ref.last_col)
    assert res.stats.extra["decision_bytes"] == 0
    rec = SW.SmithWaterman("GGTTGACTA", "TGTTACGG")
    local, ref = sweep_many([rec], backend=backend, traceback=False)[0], sweep(rec, backend="cpu")
    assert (local.best_value, local.best_cell, local.path) == (ref.best_value, ref.best_cell, None)


class ScratchEdit(ED.EditDistance):
    """Edit distance through a scratch array the cell allocates: it needs numba's runtime."""

    @staticmethod
    def cell(i, j, up, left, diag, a, b):
        c = np.empty(3, np.int64)
        c[0], c[1], c[2] = diag + (a[i] != b[j]), up + 1, left + 1
        return c.min(), c.argmin()  # the example's decisions: keep, delete, insert


def test_cpu_batch_cells_run_without_reference_counts_unless_they_allocate():
    """The batch's cell is compiled without numba's reference counting (whose atomics, unpruned
    where a cell reads its data in a branch, made a record cell 10x slower), and with it only where
    the cell needs the runtime; both give the single sweep's values."""
    from gpudp.kernel import family

    pairs = [("ACGTAC", "AGTTC"), ("G", "TGA"), ("TTTT", "TT")]
    # ScratchEdit's cells are EditDistance's: one single sweep's values for both (the sweep of a
    # cell that allocates: tests/test_backends.py::test_cpu_cells_with_and_without_numba_runtime)
    want = [sweep(ED.EditDistance(a, b), backend="cpu").last_row[-1] for a, b in pairs]
    for cls in (ED.EditDistance, ScratchEdit):
        got = sweep_many([cls(a, b) for a, b in pairs], backend="cpu", traceback=False).values
        assert got == want
    built = {}  # the recurrence's name (the engine may have made a narrowed class of it): nrt flags
    for k in family("many.cpu").built():
        if k.parts["rec"].__name__ in ("EditDistance", "ScratchEdit"):
            built.setdefault(k.parts["rec"].__name__, set()).add(k.parts["nrt"])
    # the first try, without the runtime, made for both; the second only for the cell that allocates
    assert built == {"EditDistance": {False}, "ScratchEdit": {False, True}}


def test_large_instances_and_chunks(monkeypatch):
    """Instances past MAX_BATCH_CELLS go to sweep; small chunk limits cut the batch in chunks."""
    monkeypatch.setattr(gpudp.many, "MAX_BATCH_CELLS", 30)
    monkeypatch.setattr(gpudp.many, "CHUNK_CELLS", 40)
    rng = np.random.default_rng(5)
    batch = [
        ("".join(rng.choice(list("ACGT"), n)), "".join(rng.choice(list("ACGT"), m)))
        for n, m in rng.integers(0, 9, (12, 2))
    ]
    recs = [SW.SmithWaterman(a, b) for a, b in batch]
    res = check_batch(recs, "cpu")
    assert res.stats.extra["alone"] == sum(len(a) * len(b) > 30 for a, b in batch) > 0
    assert res.stats.extra["chunks"] > 1


@pytest.mark.sim
@pytest.mark.parametrize("traceback", [False, True])
def test_cuda_chunks_reuse_their_buffers(monkeypatch, traceback):
    """Chunks of growing counts (the largest instances first) on the GPU's two sets of reused
    device buffers, with and without decisions, against sweep on the cpu."""
    monkeypatch.setattr(gpudp.many.cuda.Runner, "chunk_cells", 24)
    rng = np.random.default_rng(11)
    word = lambda n: "".join(rng.choice(list("ACGT"), n))  # noqa: E731
    recs = [SW.SmithWaterman(word(n), word(m)) for n, m in [(5, 4), (4, 4), (3, 3), (3, 2), *[(2, 2)] * 7]]
    if traceback:
        res = check_batch(recs, "cuda")
    else:
        res = sweep_many(recs, backend="cuda", traceback=False)
        for rec, item in zip(recs, res, strict=True):
            ref = sweep(rec, backend="cpu")
            assert np.array_equal(item.last_row, ref.last_row) and np.array_equal(item.last_col, ref.last_col)
            assert (item.best_value, item.best_cell) == (ref.best_value, ref.best_cell)
    assert res.stats.extra["chunks"] >= 4


def test_start_state_forms():
    recs = [PackedGotoh("ACG", "AG"), PackedGotoh("T", "TT")]
    fixed = sweep_many(recs, backend="cpu", start_state=[M, Y])
    for rec, item, s in zip(recs, fixed, [M, Y], strict=True):
        same(rec, item, state=s)
        assert item.path[0, 3] == s
    with pytest.raises(InputError, match="start_state"):
        sweep_many(recs, backend="cpu", start_state=[0])
    with pytest.raises(ContractError, match="traceback_state = False"):
        sweep_many([ED.EditDistance("A", "C")], backend="cpu", start_state=1)


def nw_score(a, b, match, mismatch, gap) -> int:
    """Needleman-Wunsch in plain Python: the best global alignment score."""
    row = [-gap * j for j in range(len(b) + 1)]
    for i in range(1, len(a) + 1):
        new = [-gap * i]
        for j in range(1, len(b) + 1):
            s = match if a[i - 1] == b[j - 1] else mismatch
            new.append(max(row[j - 1] + s, row[j] - gap, new[j - 1] - gap))
        row = new
    return row[-1]


@settings(max_examples=4)
@given(pairs(6, 12), st.integers(0, 3), st.integers(-3, 1), st.integers(0, 3))
def test_example_many_alignments(batch, match, mismatch, gap_cost):
    out, stats = MANY.align_many(batch, match, mismatch, gap_cost, backend="cpu")
    assert stats.extra["instances"] == len(batch)
    for (a, b), (score, (top, bottom)) in zip(batch, out, strict=True):
        assert score == nw_score(a, b, match, mismatch, gap_cost)
        assert top.replace("-", "") == a and bottom.replace("-", "") == b and len(top) == len(bottom)
        rescored = sum(
            -gap_cost if "-" in (x, y) else match if x == y else mismatch
            for x, y in zip(top, bottom, strict=True)
        )
        assert rescored == score


# ---------------------------------------------------------------------------------------------
# On a real GPU
# ---------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_gpu_batch_equals_cpu():
    rng = np.random.default_rng(2026)
    letters = np.array(list("ACGT"))
    recs = [
        ED.EditDistance("".join(rng.choice(letters, 300)), "".join(rng.choice(letters, 300)))
        for _ in range(2000)
    ]
    gpu = sweep_many(recs, backend="cuda")
    cpu = sweep_many(recs, backend="cpu")
    assert gpu.stats.backend == "cuda" and not gpu.errors and not cpu.errors
    for g, c in zip(gpu, cpu, strict=True):
        assert g.value == c.value
        assert np.array_equal(g.last_row, c.last_row) and np.array_equal(g.last_col, c.last_col)
        assert np.array_equal(g.path, c.path) and g.exit == c.exit
    same(recs[0], gpu[0], backend="cuda")


@pytest.mark.sim
def test_cuda_batch_failing_mid_way_waits_for_the_device(monkeypatch):
    """A failure while the batch's chunks are in flight (here the first chunk's results, as a
    walk's ContractError would) waits for the device before it goes on: the next chunk still copies
    into the runner's page-locked leases, which the unwinding gives back to the pool."""
    import gpudp.many as many
    from gpudp.many import cuda as many_cuda

    waits = []
    real = many_cuda.cuda.synchronize
    monkeypatch.setattr(many_cuda.cuda, "synchronize", lambda: (waits.append(1), real())[1])

    def fails(self, *args):
        raise RuntimeError("a chunk's results failed")

    monkeypatch.setattr(many._Batch, "finish", fails)
    recs = [SW.SmithWaterman("ACGTAC", "TTGCA") for _ in range(3)]
    with pytest.raises(RuntimeError, match="results failed"):
        sweep_many(recs, backend="cuda")
    assert waits
