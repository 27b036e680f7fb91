"""Reads at an index computed from the data (``GridRecurrence.reads_line``): a line's cell reads any
earlier cell of the line, ``line[q]``. Against plain-Python references on the cpu and, tiny, on CUDA
(the simulator without a GPU); weighted interval scheduling (examples/interval_scheduling.py)
against a brute force over subsets; one compile for every instance; the misuses refused."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from examples_loader import load_example
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import ContractError, GridRecurrence, LayeredRecurrence, sweep, sweep_many
from gpudp.kernel import family

wis = load_example("interval_scheduling")


class Jump(GridRecurrence):
    """A generic line: cell ``c`` of a line of ``n`` is ``a[c] + max(its neighbour before it, 2 *
    line[q[c]])``, ``q[c]`` from the data, earlier in the sweep's order (a row swept left to right,
    a column top down, or a row swept from its end: ``axis`` and ``sign`` in the subclasses)."""

    value_dtype = np.int64
    decision_bits = 1
    offsets = ((0, -1),)
    reads_line = True

    def __init__(self, a, q):
        self.a, self.q = np.asarray(a, np.int64), np.asarray(q, np.int64)

    def shape(self):
        return 1, len(self.a)

    def data(self):
        return self.a, self.q

    @staticmethod
    def boundary(i, j, a, q):
        return -7

    @staticmethod
    def cell(i, j, near, line, a, q):
        c = i + j  # the line's index, one of i, j being 0
        far = 2 * line[q[c]] if q[c] >= 0 else -1000
        if far > near:
            return a[c] + far, 1
        return a[c] + near, 0

    @staticmethod
    def back(i, j, jumped, a, q):
        c = i + j
        step = q[c] - c if jumped else (1 if j < 0 else -1)  # unused shape: see the subclasses
        return (i, j + step) if i == 0 else (i + step, j)


class JumpDown(Jump):
    """One column, swept top down: cell ``(c, 0)`` reads ``(c - 1, 0)``."""

    offsets = ((-1, 0),)

    def shape(self):
        return len(self.a), 1

    @staticmethod
    def back(i, j, jumped, a, q):
        return (q[i], 0) if jumped else (i - 1, 0)


class JumpBack(Jump):
    """One row swept from its end: cell ``(0, c)`` reads ``(0, c + 1)``, and ``q[c] > c``."""

    offsets = ((0, 1),)

    @staticmethod
    def back(i, j, jumped, a, q):
        return (0, q[j]) if jumped else (0, j + 1)


class JumpRight(Jump):
    @staticmethod
    def back(i, j, jumped, a, q):
        return (0, q[j]) if jumped else (0, j - 1)


class JumpRight32(JumpRight):
    """In int32: the engine may run the cell narrow (proven exact for the data), line and all."""

    value_dtype = np.int32


def reference(a, q, order):
    """The line in plain Python, cells in ``order``; the boundary -7 past the first."""
    v = {}
    prev = -7
    for c in order:
        far = 2 * v[q[c]] if q[c] >= 0 else -1000
        v[c] = a[c] + max(far, prev)
        prev = v[c]
    return [v[c] for c in range(len(a))]


@st.composite
def lines(draw):
    n = draw(st.integers(1, 25))
    a = draw(st.lists(st.integers(-20, 20), min_size=n, max_size=n))
    q = [draw(st.integers(-1, c - 1)) if c else -1 for c in range(n)]  # an earlier cell, or none
    return a, q


def swept(cls, a, q, backend, **options):
    """``cls``'s line over ``a, q`` (in its own direction: ``q`` given as for a left-to-right
    sweep, mirrored for one from the end) against the reference; the result."""
    n = len(a)
    if cls is JumpBack:  # cell c is swept n - 1 - c-th: mirror the data
        a, q = a[::-1], [n - 1 - x if x >= 0 else -1 for x in q[::-1]]
        order = range(n - 1, -1, -1)
    else:
        order = range(n)
    rec = cls(a, q)
    res = sweep(rec, backend=backend, progress=False, **options)
    got = res.last_col if cls is JumpDown else res.last_row
    assert got.tolist() == reference(list(a), list(q), order)
    assert res.stats.extra["plan"] == "line"
    return rec, res


@settings(max_examples=40)
@given(lines(), st.sampled_from([JumpRight, JumpDown, JumpBack, JumpRight32]))
def test_lines_read_at_indices_from_the_data_cpu(line, cls):
    swept(cls, *line, "cpu")


class Best32(wis.IntervalScheduling):
    """The example's recurrence in int32 over int32 weights: the engine proves every value within
    int32 and runs the cell narrow, the line an array of its values."""

    value_dtype = np.int32

    def __init__(self, w, p):
        super().__init__(w, p)
        self.w = self.w.astype(np.int32)  # data of 32 bits: what the proof of the bounds reads


def test_a_line_reader_runs_narrow_where_proven():
    rng = np.random.default_rng(3)
    w = rng.integers(1, 100, 200).astype(np.int32)
    p = np.array([rng.integers(0, j + 1) for j in range(200)], np.int64)
    opt = [0]
    for j in range(1, 201):
        opt.append(max(opt[j - 1], int(w[j - 1]) + opt[p[j - 1]]))
    res = sweep(Best32(w, p), backend="cpu")
    assert res.last_row.tolist() == opt
    assert res.stats.extra["arithmetic"].startswith("int32")
    path = res.traceback((0, 200)).tolist()  # the intervals taken weigh the best
    assert sum(int(w[j - 1]) for _, j, taken in path if taken) == opt[-1]


def test_an_empty_line_and_the_backend_a_line_runs_on():
    assert sweep(JumpRight([], []), backend="cpu", check=True).last_row.tolist() == []
    res = sweep(JumpRight([1, 2], [-1, 0]), backend="auto")
    assert res.stats.backend == "cpu"  # one cell after the other: one GPU thread would be slower
    assert "a line's cells run one after the other" in res.stats.extra["backend_choice"]


def test_a_traceback_follows_reads_from_the_line():
    a, q = [3, -1, 4, 1, -5, 9], [-1, 0, 0, 2, 1, 3]
    rec, res = swept(JumpRight, a, q, "cpu")
    vals = res.last_row
    path = res.traceback((0, 5)).tolist()
    for (_, j, jumped), (_, j2, _) in itertools.pairwise(path):  # each step to the cell it read
        assert j2 == (q[j] if jumped else j - 1)
        assert vals[j] == a[j] + (2 * vals[j2] if jumped else vals[j2])


@pytest.mark.sim
@pytest.mark.parametrize("cls", [JumpRight, JumpBack])
def test_lines_read_at_indices_from_the_data_cuda(cls):
    swept(cls, [3, -1, 4, 1, -5, 9, 2], [-1, 0, 0, 2, 1, 3, 5], "cuda")


# --- weighted interval scheduling (examples/interval_scheduling.py) ---------------------------------


def brute_force(start, finish, weight) -> int:
    """The heaviest set of pairwise disjoint half-open intervals, over every subset."""
    n, best = len(start), 0
    for mask in range(1 << n):
        picked = [k for k in range(n) if mask >> k & 1]
        spans = sorted((start[k], finish[k]) for k in picked)
        if all(f <= s for (_, f), (s, _) in itertools.pairwise(spans)):
            best = max(best, sum(weight[k] for k in picked))
    return best


@st.composite
def intervals(draw):
    n = draw(st.integers(0, 9))
    start = draw(st.lists(st.integers(0, 20), min_size=n, max_size=n))
    length = draw(st.lists(st.integers(0, 8), min_size=n, max_size=n))
    weight = draw(st.lists(st.integers(1, 30), min_size=n, max_size=n))
    return start, [s + d for s, d in zip(start, length, strict=True)], weight


def check_schedule(start, finish, weight, **options):
    if not start:  # no intervals: weight 0, nothing chosen (the traceback needs a cell)
        return
    best, chosen, stats = wis.schedule(start, finish, weight, **options)
    assert best == brute_force(start, finish, weight)
    assert sum(weight[k] for k in chosen) == best
    spans = sorted((start[k], finish[k]) for k in chosen)
    assert all(f <= s for (_, f), (s, _) in itertools.pairwise(spans))
    return stats


@settings(max_examples=40)
@given(intervals(), st.booleans())
def test_interval_scheduling_matches_brute_force_cpu(ivs, check):
    check_schedule(*ivs, backend="cpu", check=check)


def test_interval_scheduling_command_line(capsys):
    wis.main(["1", "4", "3", "2", "6", "2", "5", "8", "4", "7", "9", "1", "--backend", "cpu"])
    assert capsys.readouterr().out.splitlines() == [
        "weight 7 (cpu backend, line)",
        "  [1, 4) weight 3",
        "  [5, 8) weight 4",
    ]
    with pytest.raises(SystemExit):
        wis.main(["1", "4", "--backend", "cpu"])  # not a whole number of triples


@pytest.mark.sim
def test_interval_scheduling_cuda():
    stats = check_schedule([1, 2, 5, 7, 0, 3], [4, 6, 8, 9, 2, 5], [3, 2, 4, 1, 2, 2], backend="cuda")
    assert stats.backend == "cuda"


def test_every_instance_shares_one_compile():
    rng = np.random.default_rng(5)
    for n in (5, 9, 300):  # other sizes, other predecessors, other gaps j - p[j]
        start = rng.integers(0, 4 * n, n)
        finish = start + rng.integers(1, 30, n)
        weight = rng.integers(1, 50, n)
        best, chosen, _ = wis.schedule(start, finish, weight, backend="cpu", progress=False)
        assert best == sum(weight[chosen])
        if n < 10:  # the brute force takes the small ones
            assert best == brute_force(start.tolist(), finish.tolist(), weight.tolist())
    built = [k for k in family("cpu.line").built() if k.parts["rec"] is wis.IntervalScheduling]
    assert len(built) == 1 and len(built[0].fn.signatures) == 1


# --- misuse --------------------------------------------------------------------------------------


def test_a_read_of_a_cell_not_yet_computed_is_refused_in_the_checked_mode():
    a, q = [1, 2, 3, 4, 5], [-1, 0, 3, 1, 2]  # cell 2 reads cell 3, later in the sweep
    rec = JumpRight(a, q)
    with pytest.raises(
        ContractError, match=r"JumpRight.cell at \(0, 2\) read line\[3\]: cell \(0, 3\) is not"
    ):
        sweep(rec, backend="cpu", check=True)
    back = JumpBack([1, 2, 3, 4], [-1, 2, 0, -1])  # swept from the end: cell 2 reads cell 0
    with pytest.raises(ContractError, match=r"at \(0, 2\) read line\[0\]: cell \(0, 0\) is not computed"):
        sweep(back, backend="cpu", check=True)


def test_a_read_past_the_line_is_refused_in_the_checked_mode():
    with pytest.raises(ContractError, match=r"read line\[9\]: the line has cells 0 \.\. 3"):
        sweep(JumpDown([1, 2, 3, 4], [-1, 0, 9, 1]), backend="cpu", check=True)


def test_reads_line_on_a_grid_that_is_no_line_is_refused():
    class Square(JumpRight):
        offsets = ((0, -1), (-1, 0))

        def shape(self):
            return 3, 3

    with pytest.raises(
        ContractError, match=r"reads_line is True, but its 3 x 3 grid .* is not a line.* row by row"
    ):
        sweep(Square([1] * 3, [-1] * 3), backend="cpu")

    class Twice(JumpRight):
        reads_line = "yes"

    with pytest.raises(ContractError, match=r"Twice.reads_line = 'yes': must be True or False"):
        sweep(Twice([1], [-1]), backend="cpu")

    class Short(JumpRight):
        @staticmethod
        def cell(i, j, near, a, q):  # forgets the line
            return a[j], 0

    with pytest.raises(ContractError, match=r"Short.cell takes 5 arguments, but the engine passes 6"):
        sweep(Short([1], [-1]), backend="cpu")


def test_sweep_many_refuses_a_line_reader():
    with pytest.raises(ContractError, match="reads_line is True: sweep_many"):
        sweep_many([JumpRight([1, 2], [-1, 0])] * 2, backend="cpu")


def test_layered_cells_read_earlier_layers_at_indices_from_the_data():
    """The parallel form of data-dependent reads: a layered cell reads its window's layers at any
    index (here ``prev[q[t, k]]``), one compile for every instance."""

    class Gather(LayeredRecurrence):
        value_dtype = np.int64

        def __init__(self, q):
            self.q = q

        def num_layers(self):
            return self.q.shape[0]

        def layer_size(self, t):
            return self.q.shape[1]

        def data(self):
            return (self.q,)

        @staticmethod
        def cell(t, k, prev, q):
            return (prev[q[t, k]] if t else 0) + k + 1

    q = np.random.default_rng(1).integers(0, 6, (4, 6))
    v = np.zeros(6, np.int64)
    for t in range(4):
        v = np.array([(v[q[t, k]] if t else 0) + k + 1 for k in range(6)])
    assert sweep(Gather(q), backend="cpu", check=True).last_layer.tolist() == v.tolist()
