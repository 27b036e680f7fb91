"""2-D layers (``LayeredRecurrence.layer_shape``) and the splitting walk over layers
(``SweepResult.traceback_tree``): a recurrence whose 2-D layers change shape, trees over 1-D layers,
and the misuses (examples/floyd_warshall.py's own tests: tests/test_examples.py)."""

import numpy as np
import pytest
from examples_loader import load_example
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import ContractError, InputError, LayeredRecurrence, sweep
from gpudp.engine import plan_sweep

fw = load_example("floyd_warshall")


class Staircase(LayeredRecurrence):
    """Layers of changing shapes: layer t is (t % 3 + 1) x (4 - t % 2); cell (t, i, j) adds x[t, i, j]
    to the largest cell of the previous layer at most one row and column away (decision: which)."""

    value_dtype = np.int64
    decision_bits = 4

    def __init__(self, x):
        self.x = x

    def num_layers(self):
        return self.x.shape[0]

    def layer_shape(self, t):
        return t % 3 + 1, 4 - t % 2

    def data(self):
        return (self.x,)

    @staticmethod
    def cell(t, i, j, prev, x):
        if t == 0:
            return x[0, i, j], 0
        rows, cols = (t - 1) % 3 + 1, 4 - (t - 1) % 2
        best, how = -1, 0
        for di in range(3):
            for dj in range(3):
                a, b = i + di - 1, j + dj - 1
                if 0 <= a < rows and 0 <= b < cols and prev[a, b] > best:
                    best, how = prev[a, b], 3 * di + dj
        if best < 0:  # no neighbour: start afresh
            return x[t, i, j], 9
        return best + x[t, i, j], how

    @staticmethod
    def back(t, i, j, how, x):
        if t == 0 or how == 9:
            return -1, -1, -1
        return t - 1, i + how // 3 - 1, j + how % 3 - 1


def staircase_ref(x):
    layers = []
    for t in range(len(x)):
        rows, cols = t % 3 + 1, 4 - t % 2
        cur = np.zeros((rows, cols), np.int64)
        for i in range(rows):
            for j in range(cols):
                near = [
                    layers[-1][a, b]
                    for a in range(i - 1, i + 2)
                    for b in range(j - 1, j + 2)
                    if t and 0 <= a < layers[-1].shape[0] and 0 <= b < layers[-1].shape[1]
                ]
                cur[i, j] = x[t, i, j] + (max(near) if near else 0)
        layers.append(cur)
    return layers


def check_staircase(x, **opts):
    res = sweep(Staircase(x), progress=False, **opts)
    ref = staircase_ref(x)
    assert np.array_equal(res.last_layer, ref[-1])
    t = len(x) - 1
    i, j = np.unravel_index(int(np.argmax(ref[-1])), ref[-1].shape)
    rows = res.traceback((t, int(i), int(j)))
    assert rows.shape[1] == 4 and tuple(rows[0, :3]) == (t, i, j)
    total = sum(int(x[a, b, c]) for a, b, c, _ in rows)
    assert total == ref[-1][i, j]  # the walk's cells add up to the value
    for (a, b, c, _), (a2, b2, c2, _) in zip(rows, rows[1:], strict=False):
        assert a2 == a - 1 and abs(b2 - b) <= 1 and abs(c2 - c) <= 1
    assert res.decision(*rows[0, :3]) == rows[0, 3]
    return res


@settings(max_examples=25)
@given(st.integers(1, 7), st.integers(0, 2**32 - 1))
def test_layers_of_changing_shapes_cpu(n, seed):
    x = np.random.default_rng(seed).integers(0, 9, (n, 3, 4)).astype(np.int64)
    check_staircase(x, backend="cpu")
    check_staircase(x, backend="cpu", check=True)


@pytest.mark.sim
def test_layers_of_changing_shapes_cuda():
    x = np.random.default_rng(5).integers(0, 9, (4, 3, 4)).astype(np.int64)
    check_staircase(x, backend="cuda")


def test_a_layer_wider_than_32_cells_and_rows_that_split_groups():
    # 3 x 45 cells: groups of 32 run inside a row and across rows (the cpu kernel's two paths)
    class Sum(LayeredRecurrence):
        value_dtype = np.int64

        def num_layers(self):
            return 3

        def layer_shape(self, t):
            return 3, 45

        @staticmethod
        def cell(t, i, j, prev):
            return (prev[i, j] if t else 0) + 100 * i + j

    res = sweep(Sum(), backend="cpu", progress=False)
    i, j = np.indices((3, 45))
    assert np.array_equal(res.last_layer, 3 * (100 * i + j))


class Halves(LayeredRecurrence):
    """A sum tree over 1-D layers: layer 0 is x (2^L cells), cell (t, k) adds cells 2k and 2k + 1 of
    layer t - 1; back splits each cell into those two."""

    value_dtype = np.int64
    decision_bits = 1

    def __init__(self, x):
        self.x = x

    def num_layers(self):
        return int(np.log2(len(self.x))) + 1

    def layer_size(self, t):
        return len(self.x) >> t

    def data(self):
        return (self.x,)

    @staticmethod
    def cell(t, k, prev, x):
        return (x[k] if t == 0 else prev[2 * k] + prev[2 * k + 1]), 0

    @staticmethod
    def back(t, k, d, x):
        if t == 0:
            return -1, -1, -1, -1
        return t - 1, 2 * k, t - 1, 2 * k + 1


def halves_preorder(t, k):
    if t < 0:
        return []
    kids = halves_preorder(t - 1, 2 * k) + halves_preorder(t - 1, 2 * k + 1) if t else []
    return [[t, k, 0], *kids]


@pytest.mark.parametrize("levels", [0, 1, 4])
@pytest.mark.parametrize("codec", ["plain", "bands"])
def test_a_tree_over_1d_layers_in_preorder(levels, codec):
    x = np.arange(1 << levels, dtype=np.int64)
    res = sweep(Halves(x), backend="cpu", codec=codec, progress=False)
    assert res.last_layer.tolist() == [x.sum()]
    for t, k in [(levels, 0), (levels - 1, 1)]:
        if t >= 0:
            assert res.traceback_tree((t, k)).tolist() == halves_preorder(t, k)


class Pascal(LayeredRecurrence):
    """Binomial coefficients: each cell the sum of the two above it, back returning both. The tree
    from (t, k) reaches cells many times over: no tree of distinct cells."""

    value_dtype = np.int64
    decision_bits = 1

    def num_layers(self):
        return 8

    def layer_size(self, t):
        return t + 1

    @staticmethod
    def cell(t, k, prev):
        if t == 0:
            return 1, 0
        return (prev[k - 1] if k else 0) + (prev[k] if k < t else 0), 0

    @staticmethod
    def back(t, k, d):
        a = k - 1 if k else -1
        return (t - 1 if k else -1), a, (t - 1 if k < t else -1), k


def test_a_tree_that_repeats_cells_is_refused():
    res = sweep(Pascal(), backend="cpu", progress=False)
    assert res.last_layer.tolist() == [1, 7, 21, 35, 35, 21, 7, 1]

    def nodes(t, k):  # the tree's cells in plain Python, repeats and all
        t1, k1, t2, k2 = Pascal.back(t, k, 0)
        return 1 + (nodes(t1, k1) if t1 >= 0 else 0) + (nodes(t2, k2) if t2 >= 0 else 0)

    assert len(res.traceback_tree((3, 1))) == nodes(3, 1) == 9
    assert nodes(7, 3) > 36  # the cells the sweep computed
    with pytest.raises(ContractError, match=r"the tree from \(7, 3\) met more than 36 cells"):
        res.traceback_tree((7, 3))


# --- misuse ---------------------------------------------------------------------------------------


def test_both_sizes_is_a_contract_error():
    class Both(fw.FloydWarshall):
        def layer_size(self, t):
            return 4

    with pytest.raises(ContractError, match="both layer_size and layer_shape"):
        sweep(Both(fw.weights(2, [])), backend="cpu")


@pytest.mark.parametrize("attr, value", [("traceback_state", True), ("reduce", "max")])
def test_features_of_1d_layers_are_refused(attr, value):
    cls = type("Odd", (fw.FloydWarshall,), {attr: value})
    with pytest.raises(ContractError, match=f"{attr} = .*1-D layers only"):
        sweep(cls(fw.weights(2, [])), backend="cpu")


def test_active_range_and_reach_are_refused():
    class Ranged(fw.FloydWarshall):
        def active_range(self):
            return np.zeros(3, np.int64), np.ones(3, np.int64)

    with pytest.raises(ContractError, match="active_range.*1-D layers"):
        sweep(Ranged(fw.weights(2, [])), backend="cpu")
    with pytest.raises(InputError, match="reach.*2-D layers"):
        sweep(fw.FloydWarshall(fw.weights(2, [])), backend="cpu", reach=np.zeros(3, np.int64))


@pytest.mark.parametrize("shape", [(2,), (2, -1), (2.0, 3), "ab"])
def test_a_bad_layer_shape_is_an_input_error(shape):
    class Bad(fw.FloydWarshall):
        def layer_shape(self, t):
            return shape

    with pytest.raises(InputError, match="layer_shape.*layer 0"):
        sweep(Bad(fw.weights(2, [])), backend="cpu")


class Stray(fw.FloydWarshall):
    """Floyd-Warshall whose back's second predecessor is wrong in the way ``mode`` says."""

    def __init__(self, w, mode):
        super().__init__(w)
        self.mode = np.array([mode], np.int64)

    def data(self):
        return self.w, self.mode

    @staticmethod
    def cell(t, i, j, prev, w, mode):
        if t == 0:
            return w[i, j], 0
        through = prev[i, t - 1] + prev[t - 1, j]
        return (through, 1) if through < prev[i, j] else (prev[i, j], 0)

    @staticmethod
    def back(t, i, j, d, w, mode):
        if t == 0:
            return -1, -1, -1, -1, -1, -1
        if mode[0] == 0:
            return t - 1, i, j, t, i, j  # not an earlier layer
        if mode[0] == 1:
            return t - 1, i, j, t - 1, i, 5  # past the layer's columns
        return t - 1, i, j, t - 1, -1, j  # a negative row


@pytest.mark.parametrize(
    "mode, why",
    [
        (0, "layer 2 is not earlier than layer 2"),
        (1, "layer 1 has 2 x 2 cells"),
        (2, "layer 1 has 2 x 2 cells"),
    ],
)
def test_a_bad_step_names_the_cell(mode, why):
    w = fw.weights(2, [(0, 1, 1)])
    res = sweep(Stray(w, mode), backend="cpu", progress=False)
    with pytest.raises(ContractError, match=rf"Stray\.back\(2, 0, 1, 0\) returned .*{why}"):
        res.traceback_tree((2, 0, 1))
    first = why.replace("layer 2", "layer 1").replace("layer 1 has", "layer 0 has")  # at cell (1, 0, 0)
    with pytest.raises(ContractError, match=rf"Stray\.back\(1, 0, 0, 0\) returned .*{first}"):
        sweep(Stray(w, mode), backend="cpu", check=True)


def test_a_chain_walk_of_a_splitting_back_and_the_starts_are_refused():
    res = fw.shortest_paths(fw.weights(3, [(0, 1, 1)]), backend="cpu", progress=False)
    with pytest.raises(ContractError, match="a tuple of 6"):
        res.traceback((3, 0, 1))  # back returns two predecessors: traceback_tree walks them
    with pytest.raises(InputError, match=r"three integers \(t, i, j\)"):
        res.traceback_tree((3, 0))
    with pytest.raises(IndexError, match="outside the layers"):
        res.traceback_tree((3, 0, 3))


def test_a_checked_read_outside_the_layer_names_it():
    class Peek(fw.FloydWarshall):
        @staticmethod
        def cell(t, i, j, prev, w):
            return prev[i, j + 1] if t else w[i, j], 0

    with pytest.raises(ContractError, match=r"Peek\.cell at \(1, 0, 1\) read prev_1\[0, 2\]: layer 0"):
        sweep(Peek(fw.weights(2, [])), backend="cpu", check=True)


class Wide(fw.FloydWarshall):
    @staticmethod
    def cell(t, i, j, prev, w):
        return w[i, j], 2 if (t == 1 and i == 1 and j == 0) else 0


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.sim)])
def test_a_decision_too_wide_names_the_2d_cell(backend):
    with pytest.raises(ContractError, match=r"decision 2 at cell \(t, i, j\) = \(1, 1, 0\)"):
        sweep(Wide(fw.weights(2, [])), backend=backend, progress=False)


def test_the_memory_counts_the_ring_of_2d_layers():
    # layers of 1 x 4 and 3 x 1 cells: the ring keeps 3 x 4 cells a layer, 2 layers (window 1)
    class Turn(LayeredRecurrence):
        value_dtype = np.int64

        def num_layers(self):
            return 2

        def layer_shape(self, t):
            return (1, 4) if t == 0 else (3, 1)

        @staticmethod
        def cell(t, i, j, prev):
            return prev[0, i] + 1 if t else j

    assert plan_sweep(Turn(), "cpu").memory().values == 2 * 3 * 4 * 8
    assert sweep(Turn(), backend="cpu", progress=False).last_layer.tolist() == [[1], [2], [3]]


class Fib2(LayeredRecurrence):
    """Window 2 over 2-D layers: cell (t, i, j) = prev_1[i, j] + prev_2[i, j], 1 and i + j first."""

    value_dtype = np.int64
    window = 2

    def num_layers(self):
        return 6

    def layer_shape(self, t):
        return 2, 3

    @staticmethod
    def cell(t, i, j, prev_1, prev_2):
        if t < 2:
            return 1 if t == 0 else i + j
        return prev_1[i, j] + prev_2[i, j]


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.sim)])
def test_a_window_of_two_2d_layers(backend):
    res = sweep(Fib2(), backend=backend, progress=False)
    a, b = np.ones((2, 3), np.int64), np.add.outer(np.arange(2), np.arange(3))
    for _ in range(4):
        a, b = b, a + b
    assert np.array_equal(res.last_layer, b)


class Reads(LayeredRecurrence):
    """A 3 x 4 layer after a 2 x 3 one: layer 1's cells read layer 0 as ``mode`` says (a row then
    a cell, a whole row, a whole column, the whole layer, a row then a cell past it)."""

    value_dtype = np.int64

    def __init__(self, mode):
        self.mode = np.array([mode], np.int64)

    def num_layers(self):
        return 2

    def layer_shape(self, t):
        return (2, 3) if t == 0 else (3, 4)

    def data(self):
        return (self.mode,)

    @staticmethod
    def cell(t, i, j, prev, mode):
        if t == 0:
            return i + j
        if mode[0] == 0:
            return prev[min(i, 1)][min(j, 2)]
        if mode[0] == 1:
            return prev[0, :].max()
        if mode[0] == 2:
            return prev[:, 0].min()
        if mode[0] == 3:
            return np.sum(prev)
        return prev[0][3]


def test_checked_reads_by_a_row_then_a_cell():
    res = sweep(Reads(0), backend="cpu", check=True, progress=False)
    assert res.last_layer.tolist() == [[0, 1, 2, 2], [1, 2, 3, 3], [1, 2, 3, 3]]


@pytest.mark.parametrize("mode", [1, 2, 3, 4])
def test_checked_reads_of_rows_columns_and_the_whole_past_the_layer(mode):
    # layer 0 is 2 x 3 inside the ring's 3 x 4: a whole row, column or layer reads past its cells
    with pytest.raises(
        ContractError,
        match=r"Reads\.cell at \(1, 0, 0\) read prev_1\[.*layer 0 has cells \[0 \.\. 1, 0 \.\. 2\]",
    ):
        sweep(Reads(mode), backend="cpu", check=True)


def test_a_grid_has_no_tree_walk():
    from gpudp import GridRecurrence

    class Steps(GridRecurrence):
        offsets = ((-1, 0),)
        decision_bits = 1

        def shape(self):
            return 3, 3

        @staticmethod
        def cell(i, j, up):
            return up + 1, 0

        @staticmethod
        def back(i, j, d):
            return i - 1, j

    res = sweep(Steps(), backend="cpu", progress=False)
    with pytest.raises(ContractError, match="traceback_tree: a walk that splits is offered for layered"):
        res.traceback_tree((2, 2))
