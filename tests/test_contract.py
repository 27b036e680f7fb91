"""Mistakes in declaring a recurrence: one ContractError, raised before anything compiles, naming
the attribute or method at fault and the form the engine expects."""

from __future__ import annotations

import numpy as np
import pytest
from numba.extending import register_jitable

from gpudp import ContractError, GridRecurrence, InputError, LayeredRecurrence, ScheduleError
from gpudp.engine import sweep


class Grid(GridRecurrence):
    """A valid 3 x 4 LCS-like grid: the base of the broken variants below."""

    decision_bits = 2

    def __init__(self, h=None):
        self.h = np.ones((3, 4), np.int64) if h is None else h

    def shape(self):
        return self.h.shape

    def data(self):
        return (self.h,)

    @staticmethod
    def cell(i, j, up, left, diag, h):
        return max(up, left, diag + h[i, j]), 1

    @staticmethod
    def back(i, j, d, h):
        return i - 1, j - 1


class Layers(LayeredRecurrence):
    window = 2

    def num_layers(self):
        return 3

    def layer_size(self, t):
        return 4

    @staticmethod
    def cell(t, k, prev_1, prev_2):
        return prev_1[k] + prev_2[k] + 1


def _raises(rec, *pieces):
    with pytest.raises(ContractError) as e:
        sweep(rec, backend="cpu", progress=False)
    for p in pieces:
        assert p in str(e.value), (p, str(e.value))
    return e.value


def test_the_valid_declarations_run():
    assert sweep(Grid(), backend="cpu").last_row[-1] == 3
    assert list(sweep(Layers(), backend="cpu").last_layer) == [4, 4, 4, 4]


def test_cell_arity_against_offsets_and_data():
    class TooFew(Grid):
        @staticmethod
        def cell(i, j, up, left, h):
            return up, 0

    _raises(TooFew(), "TooFew.cell takes 5 arguments, but the engine passes 6", "dep_2", "data_0")

    class NoData(Grid):
        def data(self):
            return ()

    _raises(NoData(), "NoData.cell takes 6 arguments, but the engine passes 5")

    class Window(Layers):
        @staticmethod
        def cell(t, k, prev_1):
            return prev_1[k]

    _raises(Window(), "Window.cell takes 3 arguments, but the engine passes 4", "window = 2")


def test_back_and_boundary_arity():
    class Back(Grid):
        @staticmethod
        def back(i, j, h):
            return i - 1, j

    _raises(Back(), "Back.back takes 3 arguments, but the engine passes 4", "back(i, j, decision, data_0)")

    class Boundary(Grid):
        @staticmethod
        def boundary(i, j):
            return 0

    _raises(Boundary(), "Boundary.boundary takes 2 arguments, but the engine passes 3")


def test_star_args_are_accepted():
    class Star(Grid):
        @staticmethod
        def boundary(i, j, *data):
            return 0

    sweep(Star(), backend="cpu")


def test_methods_must_be_static():
    class Method(Grid):
        def cell(self, i, j, up, left, diag, h):
            return 0, 0

    _raises(Method(), "Method.cell must be a @staticmethod")


def test_missing_pieces():
    class NoShape(GridRecurrence):
        @staticmethod
        def cell(i, j, up, left, diag):
            return 0

    _raises(NoShape(), "NoShape must define shape(self)")

    class NoSize(LayeredRecurrence):
        def num_layers(self):
            return 1

        @staticmethod
        def cell(t, k, prev_1):
            return 0

    _raises(NoSize(), "NoSize must define layer_size(self)")

    class NoCell(GridRecurrence):
        def shape(self):
            return (1, 1)

    _raises(NoCell(), "NoCell must define cell(...) as a @staticmethod", "cell(i, j, dep_0, dep_1, dep_2")

    class Symbols(Grid):
        symbols = True

    _raises(Symbols(), "Symbols.symbols is True: define row_symbols(self)")


@pytest.mark.parametrize(
    "attr, value, piece",
    [
        ("value_dtype", np.int8, "value_dtype"),
        ("value_dtype", "banana", "value_dtype"),
        ("decision_bits", 33, "decision_bits = 33"),
        ("decision_bits", True, "decision_bits = True"),
        ("decision_bits", 2.0, "decision_bits = 2.0"),
    ],
)
def test_bad_attributes(attr, value, piece):
    bad = type("Bad", (Grid,), {attr: value})
    _raises(bad(), piece)


def test_bad_window_and_codec():
    _raises(type("W", (Layers,), {"window": 0})(), "W.window = 0")
    _raises(type("C", (Layers,), {"decision_codec": "zip"})(), "C.decision_codec = 'zip'")


def test_data_must_be_a_tuple():
    class Listed(Grid):
        def data(self):
            return [self.h]

    _raises(Listed(), "Listed.data() must return a tuple", "got list")

    class Bare(Grid):
        def data(self):
            return self.h

    _raises(Bare(), "got ndarray", "trailing comma")


def test_offsets_mistakes_are_contract_errors():
    cls = type("Self", (Grid,), {"offsets": ((0, 0), (-1, 0), (0, -1))})
    e = _raises(cls(), "itself")
    assert isinstance(e, ScheduleError)


def test_back_that_does_not_step_back():
    class Stuck(Grid):
        @staticmethod
        def back(i, j, d, h):
            return i, j

    res = sweep(Stuck(), backend="cpu")
    with pytest.raises(ContractError, match=r"Stuck.back\(2, 3, 1\) returned \(2, 3\), which is not on an"):
        res.traceback((2, 3))

    class Forth(Grid):  # off the grid's right edge: leaving the grid, but not backwards
        @staticmethod
        def back(i, j, d, h):
            return i, j + 1

    with pytest.raises(ContractError, match=r"Forth.back\(1, 3, 1\) returned \(1, 4\)"):
        sweep(Forth(), backend="cpu").traceback((1, 3))


def test_a_traceback_start_is_a_cell():
    res = sweep(Grid(), backend="cpu")
    for bad in (3, (1, 2, 3), "ab", (1.5, None)):
        with pytest.raises(InputError, match="the cell to walk back from, two integers"):
            res.traceback(bad)


def test_a_layered_back_must_stay_in_the_layer_it_returns():
    """A step to a cell past its layer's cells (or before them) would read another layer's
    decisions: the walk names the step instead; t2 = -1 ends it."""

    class Off(LayeredRecurrence):
        decision_bits = 1

        def num_layers(self):
            return 4

        def layer_size(self, t):
            return 5 + t

        @staticmethod
        def cell(t, k, prev):
            return prev[k] + 1, 1

        @staticmethod
        def back(t, k, d):
            if t == 0:
                return -1, k  # the walk ends
            return (t - 1, k - 2) if t == 1 else (t - 1, k + 1)

    res = sweep(Off(), backend="cpu", progress=False)
    assert res.traceback((3, 2)).tolist() == [[3, 2, 1], [2, 3, 1], [1, 4, 1], [0, 2, 1]]
    with pytest.raises(ContractError, match=r"back\(3, 6, 1\) returned \(2, 7\): layer 2 has cells 0 .. 6"):
        res.traceback((3, 6))
    with pytest.raises(ContractError, match=r"back\(1, 1, 1\) returned \(0, -1\): layer 0 has cells 0 .. 4"):
        res.traceback((2, 0))


@pytest.mark.parametrize("codec", ["plain", "bands"])
def test_a_layered_back_must_stay_in_the_cells_its_layer_computed(codec):
    """A layer computes only its active range; no decision is kept for its other cells, so a step
    back to one of them (a user's back that forgets the range) is named, not walked on with a
    made-up decision (issue 39)."""

    class Narrow(LayeredRecurrence):
        decision_bits = 1

        def num_layers(self):
            return 4

        def layer_size(self, t):
            return 10

        def active_range(self):
            return np.array([2, 2, 3, 3]), np.array([8, 8, 7, 7])

        @staticmethod
        def cell(t, k, prev):
            return prev[k] + 1, 1

        @staticmethod
        def back(t, k, d):
            return t - 1, k - 1  # from (3, 3): (2, 2), before layer 2's computed cells 3 .. 6

    res = sweep(Narrow(), backend="cpu", progress=False, codec=codec)
    assert res.traceback((3, 6)).tolist() == [[3, 6, 1], [2, 5, 1], [1, 4, 1], [0, 3, 1]]
    with pytest.raises(ContractError, match=r"back\(3, 3, 1\) returned \(2, 2\): layer 2 computed only its "):
        res.traceback((3, 3))


def test_contract_errors_are_still_type_and_value_errors():
    """Code written against the older TypeError / ValueError keeps catching them."""
    assert issubclass(ContractError, TypeError) and issubclass(ContractError, ValueError)


def _wide(bits: int):
    class Wide(GridRecurrence):
        """Each cell records a decision of up to ``bits`` bits that depends on its place."""

        decision_bits = bits
        value_dtype = np.int64

        def __init__(self, rows, cols, top):
            self.rows, self.cols, self.top = rows, cols, top

        def shape(self):
            return self.rows, self.cols

        def data(self):
            return (np.int64(self.top),)

        @staticmethod
        def cell(i, j, up, left, diag, top):
            return up + left - diag + 1, (i * 7919 + j * 104729 + top) % (top + 1)

        @staticmethod
        def back(i, j, d, top):
            return i - 1, j - 1

    return Wide


@pytest.mark.parametrize("tile", [None, (64, 32)])
@pytest.mark.parametrize("bits", [1, 8, 9, 16, 32])
def test_decisions_up_to_32_bits(bits, tile):
    """Decisions wider than a byte keep every bit, up to a uint32 (issue 14), in every cell: tiles
    cut by the grid's edges, lanes' column shifts across groups of 32 (64 x 32 tiles). Each width
    is a kernel of its own (its planes unrolled, 5 to 10 s to compile here): the ends of the byte
    path (1, 8: ``bits <= 8`` in gpudp.backends.cpu._plane_lines) and of the word path (9, 32: the
    top bit), and 16, the end of a uint16 decision (gpudp.codegen.decision_dtype)."""
    top = (1 << bits) - 1
    rec = _wide(bits)(37, 75, top)
    res = sweep(rec, backend="cpu", tile=tile)
    i, j = np.indices((37, 75))
    want = (i * 7919 + j * 104729 + top) % (top + 1)
    got = [[res.decision(a, b) for b in range(75)] for a in range(37)]
    assert np.array_equal(np.array(got), want)


def test_a_decision_past_32_bits_is_refused():
    rec = _wide(32)(3, 4, (1 << 33) - 1)  # decisions up to 2^33 - 1 with 32 bits declared
    with pytest.raises(ContractError, match="does not fit decision_bits = 32"):
        sweep(rec, backend="cpu")


@pytest.mark.sim
def test_wide_decisions_on_cuda():
    """The CUDA kernels store every bit plane too (the simulator here, the GPU on the device)."""
    top = (1 << 20) - 1
    res = sweep(_wide(20)(5, 40, top), backend="cuda", tile=(32, 32))
    for i in range(5):
        for j in range(40):
            assert res.decision(i, j) == (i * 7919 + j * 104729 + top) % (top + 1)


@register_jitable
def _clamp_gain(x, h):
    """A helper the cell calls: compiled into the CPU and the CUDA kernels alike."""
    return min(x + h, 1000)


class Helped(Grid):
    @staticmethod
    def cell(i, j, up, left, diag, h):
        return max(up, left, _clamp_gain(diag, h[i, j])), 1


def test_a_register_jitable_helper_runs_on_the_cpu():
    h = np.arange(12, dtype=np.int64).reshape(3, 4) * 300
    res = sweep(Helped(h), backend="cpu")
    assert res.last_row.tolist() == [1000, 1000, 1000, 1000]


def _plain_gain(x, h):
    """The same helper, not compiled."""
    return min(x + h, 1000)


def test_a_plain_python_helper_is_named_with_the_fix():
    """numba's typing error becomes a ContractError naming the method, the helper and the fix (issue
    39; numba's error is its cause)."""
    from numba.core.errors import TypingError

    class Plain(Grid):
        @staticmethod
        def cell(i, j, up, left, diag, h):
            return max(up, left, _plain_gain(diag, h[i, j])), 1

    with pytest.raises(ContractError) as e:
        sweep(Plain(np.ones((3, 4), np.int64)), backend="cpu")
    msg = str(e.value)
    assert msg.startswith("Plain.cell does not compile: numba says \"Untyped global name '_plain_gain'")
    assert "_plain_gain is a plain Python function" in msg and "register_jitable" in msg
    assert isinstance(e.value.__cause__, TypingError)


@pytest.mark.sim
def test_a_register_jitable_helper_runs_on_cuda():
    h = np.arange(12, dtype=np.int64).reshape(3, 4) * 300
    assert (
        sweep(Helped(h), backend="cuda").last_row.tolist()
        == sweep(Helped(h), backend="cpu").last_row.tolist()
    )


# ---------------------------------------------------------------------------------------------
# traceback_state: back(i, j, decision, state, *data) -> (i2, j2, state2)
# ---------------------------------------------------------------------------------------------


class StatefulRows(GridRecurrence):
    """Rows order (offsets below): ``back`` steps up, left or right by the decision and counts
    its steps in the state."""

    decision_bits = 2
    offsets = ((-1, -1), (-1, 0), (-1, 1))
    traceback_state = True

    def __init__(self, rows=5, cols=4):
        self.rows, self.cols = rows, cols

    def shape(self):
        return self.rows, self.cols

    @staticmethod
    def cell(i, j, ul, up, ur):
        return up + 1, (i + j) % 3

    @staticmethod
    def back(i, j, d, state):
        return i - 1, j + d - 1, state + 1


class StatefulLayers(LayeredRecurrence):
    decision_bits = 1
    traceback_state = True

    def num_layers(self):
        return 4

    def layer_size(self, t):
        return 3

    @staticmethod
    def cell(t, k, prev):
        return prev[k] + 1, k % 2

    @staticmethod
    def back(t, k, d, state):
        return t - 1, k, state * 2 + d


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.sim)])
def test_a_stateful_traceback_carries_its_state(backend):
    r = sweep(StatefulRows(), backend=backend, progress=False)
    assert r.plan.schedule.kind() == "rows"
    path = r.traceback((4, 1), state=10)
    i, j, s = 4, 1, 10
    for row in path:  # each row: the cell, its decision, the state back was called with
        assert tuple(row) == (i, j, (i + j) % 3, s)
        i, j, s = i - 1, j + (i + j) % 3 - 1, s + 1
    assert not (0 <= i < 5 and 0 <= j < 4)  # the walk ended by leaving the grid
    assert r.traceback((4, 1)).tolist()[0] == [4, 1, 2, 0]  # the state starts at 0 by default
    lay = sweep(StatefulLayers(), backend=backend, progress=False)
    assert lay.traceback((3, 1), state=1).tolist() == [
        [3, 1, 1, 1],
        [2, 1, 1, 3],
        [1, 1, 1, 7],
        [0, 1, 1, 15],
    ]


def test_traceback_state_mistakes_are_contract_errors():
    class NotBool(StatefulRows):
        traceback_state = 1

    _raises(NotBool(), "NotBool.traceback_state = 1", "True or False")

    class OldBack(StatefulRows):
        @staticmethod
        def back(i, j, d):
            return i - 1, j

    _raises(OldBack(), "OldBack.back takes 3 arguments", "back(i, j, decision, state) -> (i2, j2, state2)")
    r = sweep(Grid(), backend="cpu", progress=False)
    with pytest.raises(ContractError, match="traceback_state = False"):
        r.traceback((2, 3), state=1)


class BareValue(Grid):
    @staticmethod
    def cell(i, j, up, left, diag, h):
        return max(up, left, diag + h[i, j])


class PairWithoutDecisions(Layers):
    decision_bits = 0

    @staticmethod
    def cell(t, k, prev_1, prev_2):
        return prev_1[k] + 1, 0


class WritesItsData(Grid):
    decision_bits = 0

    @staticmethod
    def cell(i, j, up, left, diag, h):
        h[i, j] = 7  # not obeyed by the probe (read-only there), so the probe steps aside
        return up + 1


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.sim)])
def test_the_form_of_cells_return_is_checked_before_compiling(backend):
    with pytest.raises(
        ContractError, match=r"BareValue.cell returned .* decision_bits = 2: return \(value, decision\)"
    ):
        sweep(BareValue(), backend=backend, progress=False)
    with pytest.raises(
        ContractError, match="PairWithoutDecisions.cell returned the tuple .* decision_bits = 0"
    ):
        sweep(PairWithoutDecisions(), backend=backend, progress=False)
    h = np.ones((3, 4), np.int64)
    sweep(WritesItsData(h), backend="cpu", progress=False)  # compiled, the cell may write (its business)


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.sim)])
def test_a_values_only_sweep_keeps_no_decisions(backend):
    h = np.arange(12, dtype=np.int64).reshape(3, 4) % 3
    full = sweep(Grid(h), backend=backend, progress=False)
    values = sweep(Grid(h), backend=backend, progress=False, traceback=False)
    assert (
        values.last_row.tolist() == full.last_row.tolist()
        and values.last_col.tolist() == full.last_col.tolist()
    )
    assert values.store is None and values.stats.extra["decision_store_bytes"] == 0
    assert type(values.recurrence) is Grid  # the caller's recurrence, unchanged
    with pytest.raises(ContractError, match="swept with traceback=False"):
        values.traceback((2, 3))
    lay = sweep(StatefulLayers(), backend=backend, progress=False, traceback=False)
    assert (
        lay.last_layer.tolist()
        == sweep(StatefulLayers(), backend=backend, progress=False).last_layer.tolist()
    )
    with pytest.raises(ContractError, match="BareValue.cell returned .* decision_bits = 2"):
        sweep(BareValue(), backend=backend, progress=False, traceback=False)
