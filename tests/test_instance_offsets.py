"""Dependency offsets and value types given by the instance, dependencies as one tuple, and grids of
one cell a wavefront swept as a line: each against a plain-Python reference, kernels compiled once
per set of offsets or value type (in the process and on disk)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import ContractError, GridRecurrence, ScheduleError
from gpudp.backends import cpu
from gpudp.engine import plan_sweep, sweep
from gpudp.kernel import counts, family

P = 1_000_003


class Mix(GridRecurrence):
    """Any offsets, given by the instance; the cell gets them as one tuple and picks the largest
    (its index is the decision), ``back`` reads the offsets from the data."""

    value_dtype = np.int64
    decision_bits = 3
    deps_tuple = True

    def __init__(self, h, offsets):
        self.h = np.asarray(h, dtype=np.int64)
        self.offsets = offsets
        self.steps = np.array(offsets, dtype=np.int64).reshape(-1, 2)

    def shape(self):
        return self.h.shape

    def data(self):
        return self.h, self.steps

    @staticmethod
    def cell(i, j, deps, h, steps):
        best, d, mix = deps[0], 0, 0
        for k in range(len(deps)):
            mix += (k + 1) * deps[k]
            if deps[k] > best:
                best, d = deps[k], k
        return (h[i, j] + mix) % P, d

    @staticmethod
    def boundary(i, j, h, steps):
        return (3 * abs(i) + 5 * abs(j) + 1) % 17

    @staticmethod
    def back(i, j, d, h, steps):
        return i + steps[d, 0], j + steps[d, 1]


def reference(h, offsets):
    rows, cols = h.shape

    @functools.cache
    def val(i, j):
        if not (0 <= i < rows and 0 <= j < cols):
            return (3 * abs(i) + 5 * abs(j) + 1) % 17, None
        xs = [val(i + di, j + dj)[0] for di, dj in offsets]
        d = max(range(len(xs)), key=lambda n: (xs[n], -n))
        return (int(h[i, j]) + sum((n + 1) * x for n, x in enumerate(xs))) % P, d

    return val


def check(h, offsets, backend="cpu", **options):
    """Values of the last row and column, every decision, and the traceback from the last cell."""
    rows, cols = h.shape
    res = sweep(Mix(h, offsets), backend=backend, progress=False, **options)
    val = reference(h, [tuple(o) for o in offsets])
    for i in range(rows):  # fill the reference's cache along rows: no deep recursion
        for j in range(cols):
            val(i, j)
    s = res.plan.schedule
    last_i, last_j = (0 if s.a < 0 else rows - 1), (0 if s.b < 0 else cols - 1)
    assert res.last_row.tolist() == [val(last_i, j)[0] for j in range(cols)]
    assert res.last_col.tolist() == [val(i, last_j)[0] for i in range(rows)]
    assert [[res.decision(i, j) for j in range(cols)] for i in range(rows)] == [
        [val(i, j)[1] for j in range(cols)] for i in range(rows)
    ]
    i, j = rows - 1, cols - 1
    expect = []
    while 0 <= i < rows and 0 <= j < cols:
        expect.append([i, j, val(i, j)[1]])
        di, dj = offsets[val(i, j)[1]]
        i, j = i + di, j + dj
    assert res.traceback((rows - 1, cols - 1)).tolist() == expect
    res.close()
    return res


#: (offsets, the plan they give a grid of several rows and columns)
OFFSETS = [
    (((-1, 0), (0, -1), (-1, -1)), "tiled"),
    (((-1, -1), (0, -1)), "tiled"),
    (((-1, -1), (-1, 0), (-1, 1)), "layered"),
    (((-1, 1), (0, -1), (-2, 0)), "layered"),
    (((0, -1), (0, -3), (-1, 0)), "tiled"),  # wide: anti-diagonals of a general order
    (((1, 0), (3, 0)), "layered"),
]
SHAPES = [(1, 1), (1, 70), (70, 1), (5, 9), (9, 5)]
h_values = st.integers(0, 9)


@pytest.fixture(scope="module")
def grids():
    rng = np.random.default_rng(3)
    return {shape: rng.integers(0, 10, shape) for shape in SHAPES}


@pytest.mark.parametrize("offsets", [o for o, _ in OFFSETS], ids=str)
def test_instance_offsets_on_every_shape(offsets, grids):
    for h in grids.values():
        check(h, list(offsets))


def test_one_row_or_column_runs_as_a_line_both_ways(grids):
    for offsets, shape, step in [
        ([(0, -1), (0, -4)], (1, 70), 1),
        ([(0, 2), (0, 1), (-1, 0)], (1, 70), -1),
        ([(-1, 0), (-3, 0)], (70, 1), 1),
        ([(5, 0), (1, 0)], (70, 1), -1),
    ]:
        res = check(grids[shape], offsets)
        assert res.plan.kind == "line" and res.plan.schedule.line_step == step
        assert res.stats.extra["plan"] == "line"
        assert res.plan.layout.n_words == 3 * 3  # 70 cells: 3 groups of 32, 3 bit planes each


def test_instance_offsets_with_checkpoints():
    h = np.random.default_rng(4).integers(0, 10, (40, 70))
    res = check(h, [(-1, -1), (0, -1), (-1, 0)], store="checkpoints", checkpoint_every=32, tile=(16, 32))
    assert res.stats.extra["store"] == "checkpoints" and res.stats.extra["traceback"]["blocks"] > 1


def test_a_line_in_many_chunks_spilled_to_disk(monkeypatch):
    monkeypatch.setattr(cpu, "CPU_CHUNK_CELLS", 64)  # chunks of 2 groups of 32
    h = np.random.default_rng(5).integers(0, 10, (1, 300))
    res = check(h, [(0, 1), (0, 7)], memory_budget=0)
    assert len(res.plan.chunks) == 5 and res.stats.spilled_to_disk
    assert res.plan.chunks[0] == (8, 10)  # swept down the line: its last groups first


def test_a_line_of_values_only_and_with_a_reduction():
    class Best(Mix):
        reduce = "max"

    h = np.random.default_rng(6).integers(0, 10, (1, 50))
    want = reference(h, [(0, -1), (0, -2)])
    values = sweep(Best(h, [(0, -1), (0, -2)]), backend="cpu", traceback=False)
    assert values.plan.kind == "line" and values.store is None
    assert values.last_row.tolist() == [want(0, j)[0] for j in range(50)]
    best = max(want(0, j)[0] for j in range(50))
    assert values.best_value == best
    assert values.best_cell == (0, next(j for j in range(50) if want(0, j)[0] == best))


@settings(max_examples=40)
@given(
    st.sampled_from([o for o, _ in OFFSETS[:4]]),
    st.integers(1, 6),
    st.integers(1, 6),
    st.integers(0, 2**32 - 1),
)
def test_instance_offsets_match_the_reference(offsets, rows, cols, seed):
    check(np.random.default_rng(seed).integers(0, 10, (rows, cols)), list(offsets))


def test_equal_offsets_share_kernels_and_others_get_their_own():
    h = np.arange(40).reshape(1, 40) % 7
    a, b, c = Mix(h, ((0, -1), (0, -2))), Mix(h, [[0, -1], [0, -2]]), Mix(h, [(0, -2), (0, -1)])
    assert type(a._specialized()) is type(b._specialized())  # the same offsets, however spelled
    assert type(a._specialized()) is not type(c._specialized())  # another order: another cell call
    assert type(a._specialized()).__name__ == "Mix" and type(a._specialized()).offsets == ((0, -1), (0, -2))
    check(h, a.offsets)
    kernels, classes = _cpu_kernels(), _swept()
    ra = sweep(b, backend="cpu")
    assert (_cpu_kernels(), _swept()) == (kernels, classes) and ra.recurrence is b
    check(h, c.offsets)
    assert _cpu_kernels() == kernels + 1 and _swept() == classes

    class Fixed(Mix):
        offsets = ((0, -1), (0, -2))

    same = Fixed(h, [(0, -1), (0, -2)])
    assert same._specialized() is same  # the class's own offsets: no subclass


def _swept() -> int:
    """The subclasses the engine made for instances' own parts, in this process (gpudp.kernel)."""
    return len(family("recurrence.swept").built())


def _cpu_kernels() -> int:
    """The CPU backend's sweeps built in this process (gpudp.kernel)."""
    return sum(n for f, n in counts().items() if f.startswith("cpu."))


def test_offsets_as_a_property():
    class Coins(Mix):
        @property
        def offsets(self):
            return tuple((0, -int(c)) for c in self.coins)

        def __init__(self, h, coins):
            self.coins = coins
            super().__init__(h, self.offsets)

        def __setattr__(self, name, value):
            if name != "offsets":
                super().__setattr__(name, value)

    h = np.arange(30).reshape(1, 30) % 5
    res = sweep(Coins(h, [1, 3]), backend="cpu")
    want = reference(h, [(0, -1), (0, -3)])
    assert res.last_row.tolist() == [want(0, j)[0] for j in range(30)]


def test_instance_offsets_are_checked_like_a_class_s():
    h = np.ones((3, 3), np.int64)
    for bad, match in [
        ([(0, 0), (0, -1)], "itself"),
        ([(0, -1), (0, -1)], "duplicate"),
        ([(0, -1), (0, 1)], "no evaluation order"),
        ([(0.5, -1)], "integers"),
        ([], "at least one"),
    ]:
        with pytest.raises(ScheduleError, match=match):
            sweep(Mix(h, bad), backend="cpu")

    class Two(GridRecurrence):
        def __init__(self, offsets):
            self.offsets = offsets

        def shape(self):
            return 2, 2

        @staticmethod
        def cell(i, j, a, b):
            return a + b + 1

    assert sweep(Two([(0, -1), (-1, 0)]), backend="cpu").last_row.tolist() == [2, 5]
    with pytest.raises(
        ContractError, match=r"Two.cell takes 4 arguments, but the engine passes 5.*\(0, -2\)"
    ):
        sweep(Two([(0, -1), (-1, 0), (0, -2)]), backend="cpu")

    class NotBool(Two):
        deps_tuple = 1

    with pytest.raises(ContractError, match="deps_tuple = 1: must be True or False"):
        sweep(NotBool([(0, -1), (-1, 0)]), backend="cpu")

    class Unpacked(Mix):
        deps_tuple = False

    with pytest.raises(ContractError, match=r"cell\(i, j, dep_0, dep_1, \*data\), one dep per offset"):
        sweep(Unpacked(h, [(0, -1), (-1, 0)]), backend="cpu")


def test_line_plan_memory_and_schedule_derivation_are_cheap():
    plan = plan_sweep(Mix(np.zeros((1, 10**6 + 1)), [(0, -c) for c in (1, 7, 250, 4_999, 50_000)]), "cpu")
    need = plan.memory()
    assert plan.kind == "line" and plan.n_units == -(-(10**6 + 1) // 32)
    assert need.decisions == plan.n_units * 3 * 4  # 3 bit planes of 32 cells a group, 4 bytes a word
    assert need.values == (10**6 + 2) * 8


RUN = """
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from test_instance_offsets import Mix
from gpudp.kernel import family
from gpudp.engine import sweep
h = np.arange(50).reshape(1, 50) % 7
out = []
for offsets in ([(0, -1), (0, -2)], [(0, -1), (0, -3)], [(0, -1), (0, -2)]):
    rec = Mix(h, offsets)
    r = sweep(rec, backend="cpu", progress=False)
    fn = next(k.fn for k in family("cpu.line").built() if k.parts["rec"] is type(rec._specialized()))
    out.append([int(r.last_row[-1]), sum(fn.stats.cache_hits.values()), sum(fn.stats.cache_misses.values())])
print(json.dumps(out))
"""


def test_the_disk_cache_keys_line_kernels_by_offsets(tmp_path):
    env = dict(os.environ, GPUDP_CACHE_DIR=str(tmp_path / "cache"))
    here = os.path.dirname(__file__)

    def run():
        done = subprocess.run([sys.executable, "-c", RUN, here], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    first, second = run(), run()
    want = [
        reference(np.arange(50).reshape(1, 50) % 7, o)(0, 49)[0]
        for o in ([(0, -1), (0, -2)], [(0, -1), (0, -3)])
    ]
    assert [v for v, _, _ in first] == [want[0], want[1], want[0]]
    assert [(hit, miss) for _, hit, miss in first[:2]] == [(0, 1), (0, 1)]  # a compile per set of offsets
    assert [v for v, _, _ in second] == [v for v, _, _ in first]
    assert [(hit, miss) for _, hit, miss in second[:2]] == [(1, 0), (1, 0)]  # each loaded from disk


@pytest.mark.sim
@pytest.mark.parametrize(
    "offsets, shape",
    [([(0, -1), (0, -3)], (1, 40)), ([(2, 0), (1, 0)], (37, 1)), ([(-1, 0), (0, -1)], (4, 5))],
)
def test_instance_offsets_on_cuda(offsets, shape):
    h = np.random.default_rng(7).integers(0, 10, shape)
    res = check(h, offsets, backend="cuda")
    assert res.stats.backend == "cuda"


class Sum(GridRecurrence):
    """Path sums of ``h`` (the larger of up and left, plus the cell): values past int32 where ``h``
    is large; the value type is the instance's own where it gives one."""

    offsets = ((-1, 0), (0, -1))

    def __init__(self, h, value_dtype=None):
        self.h = np.asarray(h, dtype=np.int64)
        if value_dtype is not None:
            self.value_dtype = value_dtype

    def shape(self):
        return self.h.shape

    def data(self):
        return (self.h,)

    @staticmethod
    def cell(i, j, up, left, h):
        return max(up, left) + h[i, j]


def _path_sums(h) -> list[int]:
    """The last row of :class:`Sum`, in Python integers."""
    rows, cols = h.shape
    f = [[0] * cols for _ in range(rows)]
    for i in range(rows):
        for j in range(cols):
            f[i][j] = max(f[i - 1][j] if i else 0, f[i][j - 1] if j else 0) + int(h[i, j])
    return f[-1]


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.sim)])
def test_an_instance_s_value_type_is_swept_and_keyed(backend):
    h = np.full((3, 4), 2**30, np.int64)  # path sums reach 6 * 2^30: past int32
    wide, also, narrow = Sum(h, np.int64), Sum(h, np.dtype("int64")), Sum(h)
    assert type(wide._specialized()) is type(also._specialized())  # one type, however spelled
    assert type(wide._specialized()).value_dtype is np.int64 and narrow._specialized() is narrow
    assert Sum(h, np.int32)._specialized().__class__ is Sum  # the class's own type: no subclass
    res = sweep(wide, backend=backend)
    assert res.last_row.dtype == np.int64 and res.last_row.tolist() == _path_sums(h)
    assert res.recurrence is wide
    before = _swept()
    sweep(also, backend=backend)
    assert _swept() == before


def test_an_instance_s_value_type_is_checked_like_a_class_s():
    with pytest.raises(ContractError, match=r"Sum\.value_dtype"):
        sweep(Sum(np.ones((2, 2)), np.uint8), backend="cpu")
