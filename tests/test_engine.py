"""The engine on generic grid and layered recurrences, against independent references.

Each recurrence mixes its dependencies with coefficients and a per-cell weight, modulo a prime, and
records which dependency was largest (2 decision bits); ``back`` follows that dependency. The
reference evaluates the same definition by memoised recursion, knowing nothing of schedules.
"""

import functools
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import GridRecurrence, LayeredRecurrence
from gpudp.engine import sweep
from gpudp.errors import InputError

OFFSET_SETS = [
    ((-1, 0), (0, -1), (-1, -1)),  # tiled
    ((0, -1), (-1, 0)),  # tiled, no diagonal
    ((-1, -1), (-1, 0), (-1, 1)),  # rows
    ((0, -1),),  # columns
    ((-1, 1), (0, -1)),  # 2i + j
    ((1, 0), (0, -1)),  # bottom-up rows, left to right
    ((-2, 0), (0, -3), (-1, -1)),  # window 3
]
P = 1009


def boundary_value(i, j):
    return (3 * abs(i) + 5 * abs(j) + 1) % 17


@functools.cache
def make_class(offsets):
    """A GridRecurrence class for these offsets (its cell's arity depends on them)."""
    k = len(offsets)
    deps = ", ".join(f"x{n}" for n in range(k))
    mix = " + ".join(f"{n + 1} * x{n}" for n in range(k))
    pick = "\n".join(f"    if x{n} > best:\n        best = x{n}\n        d = {n}" for n in range(1, k))
    back = "\n".join(
        f"    if d == {n}:\n        return i + {di}, j + {dj}" for n, (di, dj) in enumerate(offsets)
    )
    src = f"""
def cell(i, j, {deps}, h):
    best = x0
    d = 0
{pick}
    return (h[i, j] + {mix}) % {P}, d

def boundary(i, j, h):
    return (3 * abs(i) + 5 * abs(j) + 1) % 17

def back(i, j, d, h):
{back}
    return -1, -1
"""
    ns = {}
    exec(compile(src, f"<test-recurrence-{offsets}>", "exec"), ns)

    class Mix(GridRecurrence):
        value_dtype = np.int64
        decision_bits = 2

        def __init__(self, h):
            self.h = h

        def shape(self):
            return self.h.shape

        def data(self):
            return (self.h,)

    Mix.offsets = offsets
    Mix.cell = staticmethod(ns["cell"])
    Mix.boundary = staticmethod(ns["boundary"])
    Mix.back = staticmethod(ns["back"])
    Mix.__name__ = f"Mix{len(offsets)}"
    return Mix


def reference(offsets, h):
    rows, cols = h.shape

    @functools.cache
    def val(i, j):
        if not (0 <= i < rows and 0 <= j < cols):
            return boundary_value(i, j), None
        xs = [val(i + di, j + dj)[0] for di, dj in offsets]
        d = max(range(len(xs)), key=lambda n: (xs[n], -n))
        return (int(h[i, j]) + sum((n + 1) * x for n, x in enumerate(xs))) % P, d

    def deep(i, j):
        # the recursion is as deep as the grid is wide and tall: raise the limit for it alone (left
        # raised, it lets C recursion in other tests, json's decoder, overflow the stack)
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, 100000))
        try:
            return val(i, j)
        finally:
            sys.setrecursionlimit(old)

    return deep


def check_against_reference(offsets, h, backend, tile=None):
    rows, cols = h.shape
    res = sweep(make_class(offsets)(h), backend=backend, tile=tile, progress=False)
    val = reference(offsets, h)
    s = res.plan.schedule
    last_i = 0 if s.a < 0 else rows - 1  # the row / column the schedule finishes on
    last_j = 0 if s.b < 0 else cols - 1
    assert [int(v) for v in res.last_row] == [val(last_i, j)[0] for j in range(cols)]
    assert [int(v) for v in res.last_col] == [val(i, last_j)[0] for i in range(rows)]
    for i in range(rows):
        for j in range(cols):
            assert res.decision(i, j) == val(i, j)[1], (i, j)
    # traceback from the last cell follows the reference's choices
    i, j = rows - 1, cols - 1
    path = res.traceback((i, j))
    expect = []
    while 0 <= i < rows and 0 <= j < cols:
        d = val(i, j)[1]
        expect.append((i, j, d))
        i, j = i + offsets[d][0], j + offsets[d][1]
    assert [tuple(map(int, r)) for r in path] == expect
    res.close()


grids = st.tuples(st.integers(1, 23), st.integers(1, 23), st.integers(0, 2**31 - 1)).map(
    lambda t: np.random.default_rng(t[2]).integers(0, P, size=(t[0], t[1])).astype(np.int64)
)


@pytest.mark.parametrize("offsets", OFFSET_SETS, ids=str)
@settings(max_examples=12)
@given(h=grids, tile=st.sampled_from([(1, 32), (3, 32), (8, 64), None]))
def test_cpu_matches_reference(offsets, h, tile):
    check_against_reference(offsets, h, "cpu", tile)


@pytest.mark.sim
@pytest.mark.parametrize(
    "offsets,shape,tile",
    [
        (OFFSET_SETS[0], (37, 41), (32, 32)),  # 2 x 2 tiles, ragged
        (OFFSET_SETS[2], (5, 9), None),
        (OFFSET_SETS[5], (6, 4), None),
        (OFFSET_SETS[4], (9, 4), None),  # 2i + j, taller than wide: wavefront cells by column
        (OFFSET_SETS[6], (8, 3), None),  # window 3, by column
    ],
    ids=["tiled", "rows", "bottom-up", "2i+j-by-column", "window-3-by-column"],
)
def test_cuda_matches_reference(offsets, shape, tile):
    h = np.random.default_rng(7).integers(0, P, size=shape).astype(np.int64)
    check_against_reference(offsets, h, "cuda", tile)


def test_wavefront_slots_follow_the_shorter_side():
    """Issue 39: a band of a long alignment written as rows x (2 * 64 + 1) columns, offsets (-1, 0),
    (-1, 1), (0, -1) (order 2i + j), kept a slot for each of its rows in every wavefront: 200 MB of
    decisions and 131x the time of its transpose. The slots now follow the shorter side."""
    from gpudp.engine import plan_sweep

    offsets = ((-1, 0), (-1, 1), (0, -1))
    tall = np.random.default_rng(5).integers(0, P, size=(400, 9)).astype(np.int64)
    plan = plan_sweep(make_class(offsets)(tall), "cpu")
    assert not plan.schedule.by_row_index and int(plan.sizes.max()) == 9
    wide = np.ascontiguousarray(tall[:9, :])
    assert plan_sweep(make_class(offsets)(wide), "cpu").schedule.by_row_index
    check_against_reference(offsets, tall, "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("offsets", OFFSET_SETS, ids=str)
def test_gpu_matches_cpu_large(offsets):
    h = np.random.default_rng(3).integers(0, P, size=(700, 1300)).astype(np.int64)
    cls = make_class(offsets)
    a = sweep(cls(h), backend="cpu", progress=False)
    b = sweep(cls(h), backend="cuda", progress=False)
    assert np.array_equal(a.last_row, b.last_row) and np.array_equal(a.last_col, b.last_col)
    assert np.array_equal(a.traceback((699, 1299)), b.traceback((699, 1299)))


@pytest.mark.gpu
@pytest.mark.parametrize("slab_words", [None, 1 << 11], ids=["one-launch", "many-launches"])
def test_gpu_tile_rows_pipelined(monkeypatch, slab_words):
    """The tiled kernel runs its tile rows at once, each behind the row above (progress flags, no
    grid sync): small tiles make 90 rows run together and race if a flag is wrong; small slabs cut
    the sweep into launches whose rows start part-way along; repeated, since a race need not show
    every time. Values, the path and the checkpoints equal the cpu's."""
    from gpudp import backends

    if slab_words:
        monkeypatch.setattr(type(backends.get("cuda")), "slab_words_max", slab_words)
    h = np.random.default_rng(11).integers(0, P, size=(2890, 1500)).astype(np.int64)
    cls = make_class(OFFSET_SETS[0])
    a = sweep(cls(h), backend="cpu", progress=False)
    want = a.traceback((2889, 1499))
    for _ in range(3):
        b = sweep(cls(h), backend="cuda", progress=False, tile=(32, 32))
        assert np.array_equal(a.last_row, b.last_row) and np.array_equal(a.last_col, b.last_col)
        assert np.array_equal(want, b.traceback((2889, 1499)))
        assert slab_words is None or b.stats.extra["launches"] > 10
    opts = {"tile": (32, 64), "store": "checkpoints", "checkpoint_every": 128}
    ck = sweep(cls(h), backend="cuda", progress=False, **opts)
    assert np.array_equal(a.last_row, ck.last_row) and np.array_equal(want, ck.traceback((2889, 1499)))


class Paths(LayeredRecurrence):
    """Layer t has t + 1 cells; cell k reads cells k - 1 and k of layer t - 1 (Pascal-like paths,
    maximum weight), and remembers which."""

    value_dtype = np.int64
    decision_bits = 1

    def __init__(self, w):
        self.w = w

    def num_layers(self):
        return self.w.shape[0]

    def layer_size(self, t):
        return t + 1

    def data(self):
        return (self.w,)

    @staticmethod
    def cell(t, k, prev, w):
        if t == 0:
            return w[0, 0], 0
        left = prev[k - 1] if k > 0 else -(1 << 60)
        up = prev[k] if k < t else -(1 << 60)
        if left > up:
            return left + w[t, k], 1
        return up + w[t, k], 0

    @staticmethod
    def back(t, k, d, w):
        return t - 1, k - d


def paths_reference(w):
    n = w.shape[0]
    best = [[0] * (t + 1) for t in range(n)]
    choice = [[0] * (t + 1) for t in range(n)]
    best[0][0] = int(w[0, 0])
    for t in range(1, n):
        for k in range(t + 1):
            cands = []
            if k < t:
                cands.append((best[t - 1][k], 0))
            if k > 0:
                cands.append((best[t - 1][k - 1], 1))
            v, d = max(cands, key=lambda c: (c[0], -c[1]))
            if k > 0 and k < t and best[t - 1][k - 1] == best[t - 1][k]:
                d = 0
            best[t][k] = v + int(w[t, k])
            choice[t][k] = d
    return best, choice


@settings(max_examples=15)
@given(st.integers(1, 40), st.integers(0, 2**31 - 1))
def test_layered_cpu_matches_reference(n, seed):
    w = np.random.default_rng(seed).integers(-50, 50, size=(n, n)).astype(np.int64)
    res = sweep(Paths(w), backend="cpu", progress=False)
    best, choice = paths_reference(w)
    assert res.last_layer.tolist() == best[-1]
    k = int(np.argmax(res.last_layer))
    path = res.traceback((n - 1, k))
    assert len(path) == n
    for t, kk, d in path:
        assert d == choice[t][kk]
    assert sum(int(w[t, kk]) for t, kk, _ in path) == best[-1][k]


@pytest.mark.sim
def test_layered_cuda_matches_reference():
    w = np.random.default_rng(5).integers(-50, 50, size=(9, 9)).astype(np.int64)
    res = sweep(Paths(w), backend="cuda", progress=False)
    best, choice = paths_reference(w)
    assert res.last_layer.tolist() == best[-1]
    path = res.traceback((8, int(np.argmax(res.last_layer))))
    assert [int(d) for t, k, d in path] == [choice[t][k] for t, k, _ in path]


def test_store_spills_to_disk_and_traceback_is_unchanged():
    h = np.random.default_rng(11).integers(0, P, size=(60, 70)).astype(np.int64)
    cls = make_class(OFFSET_SETS[0])
    mem = sweep(cls(h), backend="cpu", tile=(8, 32), progress=False)
    disk = sweep(cls(h), backend="cpu", tile=(8, 32), memory_budget=64, progress=False, store="full")
    assert not mem.store.on_disk and disk.store.on_disk and disk.stats.spilled_to_disk
    assert np.array_equal(mem.traceback((59, 69)), disk.traceback((59, 69)))
    assert np.array_equal(np.asarray(mem.store.words), np.asarray(disk.store.words))
    disk.close()


@pytest.mark.sim
def test_store_spills_to_disk_on_cuda_path():
    h = np.random.default_rng(12).integers(0, P, size=(33, 40)).astype(np.int64)
    cls = make_class(OFFSET_SETS[0])
    mem = sweep(cls(h), backend="cpu", tile=(32, 32), progress=False)
    disk = sweep(cls(h), backend="cuda", tile=(32, 32), memory_budget=64, progress=False, store="full")
    assert disk.store.on_disk
    assert np.array_equal(mem.traceback((32, 39)), disk.traceback((32, 39)))


def test_empty_grid_and_bad_sizes():
    cls = make_class(OFFSET_SETS[0])
    res = sweep(cls(np.zeros((0, 5), np.int64)), backend="cpu", progress=False)
    assert res.last_row.size == 0 and res.last_col.size == 0

    class Bad(cls):
        def shape(self):
            return (-1, 3)

    with pytest.raises(InputError, match="rows"):
        sweep(Bad(np.zeros((1, 1), np.int64)), backend="cpu")


def test_contract_errors():
    class NoCell(GridRecurrence):
        def shape(self):
            return (1, 1)

    with pytest.raises(TypeError, match="cell"):
        sweep(NoCell(), backend="cpu")

    class Float(GridRecurrence):
        value_dtype = np.float16

        @staticmethod
        def cell(i, j, up, left, diag):
            return 0

        def shape(self):
            return (1, 1)

    with pytest.raises(TypeError, match="value_dtype"):
        sweep(Float(), backend="cpu")

    class NoBits(make_class(OFFSET_SETS[0])):
        decision_bits = 0

        @staticmethod
        def cell(i, j, x0, x1, x2, h):
            return x0 + x1

    res = sweep(NoBits(np.ones((3, 3), np.int64)), backend="cpu")
    with pytest.raises(ValueError, match="decision_bits = 0"):
        res.traceback((2, 2))
