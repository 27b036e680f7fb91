"""What ``cell``, ``boundary`` and ``back`` return, checked (issue 39): a return of the wrong type is a
ContractError naming the class, the method, the cell and the fix, on every shape, never numba's raw
TypingError into generated code nor a value converted silently.

Two places catch it. The probes call each method once in plain Python before anything compiles
(``cell`` on the first cell, ``boundary`` on a cell the first one reads outside the grid, ``back``
where a traceback starts): these errors have no ``__cause__``. A float on another path into an
integer value type the probes find too, before any sweep, by numba's typing of the method for the
engine's argument types (no kernel compiled). What else they cannot see (a wrong return on another
path, a method that cannot run in plain Python) numba's typing finds as the kernels compile, and
the engine words its error the same way, numba's chained."""

from __future__ import annotations

import numpy as np
import pytest
from numba.core.errors import TypingError

from gpudp import (
    ContractError,
    Grid3Recurrence,
    GridRecurrence,
    IntervalRecurrence,
    LayeredRecurrence,
    sweep,
    sweep_many,
)


def _grid(cell, bits=0, vt=np.int32, boundary=None, back=None, shape=(2, 3), data=(), **more):
    """A grid of ``shape`` whose static methods are the functions given (named G in messages)."""
    ns = {
        "decision_bits": bits,
        "value_dtype": vt,
        "shape": lambda self: shape,
        "data": lambda self: data,
        "cell": staticmethod(cell),
        **more,
    }
    if boundary is not None:
        ns["boundary"] = staticmethod(boundary)
    if back is not None:
        ns["back"] = staticmethod(back)
    return type("G", (GridRecurrence,), ns)()


def _layers(cell, bits=0, back=None):
    ns = {
        "decision_bits": bits,
        "num_layers": lambda self: 3,
        "layer_size": lambda self, t: 4,
        "cell": staticmethod(cell),
    }
    if back is not None:
        ns["back"] = staticmethod(back)
    return type("L", (LayeredRecurrence,), ns)()


def _intervals(cell, bits=0, back=None):
    ns = {"decision_bits": bits, "size": lambda self: 4, "cell": staticmethod(cell)}
    if back is not None:
        ns["back"] = staticmethod(back)
    return type("I", (IntervalRecurrence,), ns)()


def _grid3(cell, bits=0, boundary=None, back=None):
    ns = {
        "decision_bits": bits,
        "offsets": ((-1, 0, 0), (0, -1, 0)),
        "shape": lambda self: (2, 2, 2),
        "cell": staticmethod(cell),
    }
    if boundary is not None:
        ns["boundary"] = staticmethod(boundary)
    if back is not None:
        ns["back"] = staticmethod(back)
    return type("C", (Grid3Recurrence,), ns)()


def _refused(run, *pieces, compiled=False) -> ContractError:
    """``run()`` raises a ContractError holding every piece; ``compiled``: numba's TypingError is its
    cause (found as the kernels compiled), else it has none (found by a probe, before compiling)."""
    with pytest.raises(ContractError) as e:
        run()
    msg = str(e.value)
    for p in pieces:
        assert p in msg, (p, msg)
    if compiled:
        assert isinstance(e.value.__cause__, TypingError), e.value.__cause__
        assert "numba says" in msg
    else:
        assert e.value.__cause__ is None, msg
    return e.value


def _cpu(rec):
    return lambda: sweep(rec, backend="cpu", progress=False)


# --- the probes: what one plain-Python call shows, before anything compiles ---------------------


@pytest.mark.parametrize(
    "make, name, at",
    [
        (lambda f: _grid(lambda i, j, up, left, diag: f()), "G", "(0, 0)"),
        (lambda f: _layers(lambda t, k, prev: f()), "L", "(0, 0)"),
        (lambda f: _intervals(lambda i, j, T: f()), "I", "(0, 0)"),
        (lambda f: _grid3(lambda i, j, k, up, left: f()), "C", "(0, 0, 0)"),
    ],
    ids=["grid", "layered", "interval", "grid3"],
)
def test_every_shape_names_a_str_cell_before_compiling(make, name, at):
    rec = make(lambda: "a")
    _refused(_cpu(rec), f"{name}.cell returned 'a' (str) as the value at the first cell, {at}", "not str")


def test_a_batch_names_a_str_cell_before_compiling():
    rec = _grid(lambda i, j, up, left, diag: "a")
    _refused(lambda: sweep_many([rec, rec], backend="cpu"), "G.cell returned 'a' (str) as the value")


@pytest.mark.parametrize(
    "ret, pieces",
    [
        (lambda: None, ["returned None (NoneType) as the value", "value_dtype int32"]),
        (lambda: object(), ["(object) as the value"]),
        (lambda: np.zeros(1, np.int32), ["(ndarray) as the value"]),
        (
            lambda: 2.5,
            ["returned 2.5 (float)", "value_dtype is int32", "truncate", "(2.5 -> 2)", "np.float64"],
        ),
        (lambda: np.float32(7.0), ["(float32)", "value_dtype is int32", "// divides integers"]),
        (lambda: 2**40, ["returned 1099511627776 (int)", "does not fit value_dtype int32", "np.int64"]),
    ],
    ids=["none", "object", "array", "float", "float32", "too-big"],
)
def test_a_value_that_does_not_convert_exactly_is_named(ret, pieces):
    """No number, a float into an integer type (numba truncates it without a word: a cell returning
    ``up + 0.7`` swept to all zeros), an integer the type does not hold (it would wrap)."""
    _refused(_cpu(_grid(lambda i, j, up, left, diag: ret())), "G.cell returned", *pieces)


def test_a_decision_pair_of_the_wrong_length_and_a_float_decision():
    _refused(
        _cpu(_grid(lambda i, j, u, w, d: (u, 1, 2), bits=2)),
        "(0, 0), but decision_bits = 2: return (value, decision)",
    )
    _refused(_cpu(_grid(lambda i, j, u, w, d: (u, 1.0), bits=2)), "returned 1.0 (float) as the decision")
    _refused(
        _cpu(_grid(lambda i, j, u, w, d: (2.5, 1), bits=2)),
        "2.5 (float) as the value",
        "value_dtype is int32",
    )


def test_a_record_field_is_checked_by_its_own_type():
    from gpudp.checks import check_value

    rec_t = np.dtype([("m", np.int32), ("x", np.float64)])
    edge = {"vt": rec_t, "boundary": lambda i, j: (0, 0.0)}
    check_value(type(_grid(None, **edge)), "G.cell", (np.int64(3), 2.5), "(0, 0)", "", "")  # a float field
    bad = _grid(lambda i, j, u, w, d: (u[0] + 0.5, u[1]), **edge)
    _refused(
        _cpu(bad),
        "G.cell returned np.float64(0.5) (float64) as field 'm' of the value",
        "value_dtype is int32",
    )
    short = _grid(lambda i, j, u, w, d: (1,), **edge)
    _refused(_cpu(short), "record of 2 fields ('m', 'x')", "so it returns a tuple of 2 numbers")
    edge["boundary"] = lambda i, j: (0.5, 0.0)
    _refused(
        _cpu(_grid(lambda i, j, u, w, d: u, **edge)),
        "G.boundary returned 0.5 (float) as field 'm' of the value at (-1, 0)",
    )


def test_a_record_cell_needs_a_boundary():
    """The default boundary gives 0, one number: a record cell's kernels could not use it (numba's
    typing error into the engine's value caster, before issue 39)."""
    rec = _grid(lambda i, j, u, w, d: u, vt=np.dtype([("m", np.int32), ("x", np.int32)]))
    _refused(_cpu(rec), "G defines no boundary", "define boundary(i, j) as a @staticmethod returning a tuple")


@pytest.mark.parametrize(
    "ret, pieces",
    [
        (lambda i, j: "x", ["G.boundary returned 'x' (str) at (-1, 0)", "a boundary value is one number"]),
        (lambda i, j: 0.5, ["G.boundary returned 0.5 (float) at (-1, 0)", "truncate", "np.float64"]),
        (lambda i, j: (1, 2), ["G.boundary returned (1, 2) (tuple)"]),
    ],
    ids=["str", "float", "tuple"],
)
def test_a_boundary_of_the_wrong_type_is_named(ret, pieces):
    _refused(_cpu(_grid(lambda i, j, up, left, diag: up + 1, boundary=ret)), *pieces)


def test_a_grid3_boundary_is_probed_too():
    rec = _grid3(lambda i, j, k, up, left: up + 1, boundary=lambda i, j, k: "edge")
    _refused(_cpu(rec), "C.boundary returned 'edge' (str) at (-1, 0, 0)")


def _pair(i, j, up, left, diag):
    return up + 1, 1


@pytest.mark.parametrize(
    "back, pieces",
    [
        (lambda i, j, d: (i - 1, j - 1, 0), ["G.back(1, 2, 1) returned (0, 1, 0), a tuple of 3"]),
        (lambda i, j, d: i - 1, ["G.back(1, 2, 1) returned 0 (int)"]),
        (lambda i, j, d: "up", ["G.back(1, 2, 1) returned 'up' (str)"]),
        (lambda i, j, d: (i - 1.0, j), ["whose i2 is 0.0 (float)", "// divides integers"]),
    ],
    ids=["three", "bare", "str", "float"],
)
def test_back_of_the_wrong_form_is_named_before_the_walk_compiles(back, pieces):
    res = sweep(_grid(_pair, bits=1, back=back), backend="cpu")
    _refused(lambda: res.traceback((1, 2)), *pieces, "must return a tuple of 2 integers", "-> (i2, j2)")


def test_back_is_probed_on_every_shape():
    """Layers, intervals (a float child: the walk would truncate it), a batch (before its sweep), a
    state, a walk from checkpoints; the 3-D grid's probe is tests/test_grid3.py's."""
    layers = sweep(_layers(lambda t, k, prev: (prev[k] + 1, 1), 1, back=lambda t, k, d: t - 1), backend="cpu")
    _refused(lambda: layers.traceback((2, 3)), "L.back(2, 3, 1) returned 1 (int)", "(t2, k2)")
    tree = sweep(_intervals(lambda i, j, T: (1, 0), 1, back=lambda i, j, d: (i, i, 1.5, j)), backend="cpu")
    _refused(
        tree.traceback_tree, "I.back(0, 3, 0) returned (0, 0, 1.5, 3), whose i2 is 1.5", "(i1, j1, i2, j2)"
    )
    rec = _grid(_pair, bits=1, back=lambda i, j, d: (i - 1, j - 1, d))
    _refused(lambda: sweep_many([rec], backend="cpu"), "G.back(1, 2, 0) returned (0, 1, 0), a tuple of 3")
    state = _grid(_pair, bits=1, back=lambda i, j, d, s: (i - 1, j - 1), traceback_state=True)
    res = sweep(state, backend="cpu")
    _refused(lambda: res.traceback((1, 2), state=5), "G.back(1, 2, 1, 5) returned (0, 1)", "(i2, j2, state2)")
    kept = sweep(rec, backend="cpu", store="checkpoints", checkpoint_every=32)
    _refused(lambda: kept.traceback((1, 2)), "G.back(1, 2, 0) returned (0, 1, 0), a tuple of 3")


# --- numba's typing: what the probes cannot see, worded as the kernels compile -------------------


def _str_later(i, j, up, left, diag):
    if i > 0:
        return "a"  # the probe's first cell never gets here
    return up + 1


def test_a_str_on_another_path_is_named_as_the_kernel_compiles():
    err = _refused(
        _cpu(_grid(_str_later)),
        "G.cell does not compile: numba says \"Can't unify return type",
        "test_cell_types.py, line",
        'return "a"',
        "every return of cell must give the same kind of thing, one number (value_dtype int32)",
        compiled=True,
    )
    assert "gpudp-generated" not in str(err)  # numba's own text, with its generated source, is the cause


def _none_later(i, j, up, left, diag):
    if i > 0:
        return None
    return up + 1


def _unreadable(i, j, up, left, diag, a):
    a[i + 5]  # past the end: an IndexError in plain Python, so the probe steps aside
    return "s"


@pytest.mark.parametrize(
    "rec, pieces",
    [
        (_grid(_none_later), ["G.cell does not compile", "a path of cell returns None"]),
        (
            _grid(_unreadable, data=(np.zeros(2, np.int64),)),
            ["G.cell does not compile", "cell returns a str"],
        ),
        (
            _grid(lambda i, j, u, w, d: u + 1, boundary=lambda i, j: "x" if j > 0 else 0),
            ["G.boundary does not compile", "Cannot unify Literal[str](x)", "boundary returns a str"],
        ),
    ],
    ids=["none-later", "probe-cannot-run", "boundary-later"],
)
def test_what_the_probe_cannot_see_is_named_as_the_kernel_compiles(rec, pieces):
    _refused(_cpu(rec), *pieces, compiled=True)


def _back_later(i, j, d):
    if d == 0:
        return i - 1, j - 1, 0  # never the probe's decision (every cell decides 1)
    return i - 1, j - 1


def test_back_on_another_path_is_named_as_the_walk_compiles():
    res = sweep(_grid(_pair, bits=1, back=_back_later), backend="cpu")
    _refused(lambda: res.traceback((1, 2)), "G.back does not compile", "(i2, j2), 2 integers", compiled=True)


def _str_later_layer(t, k, prev):
    return "a" if t > 0 else prev[k] + 1


def _str_later_interval(i, j, T):
    return "a" if j > i else 1


def _str_later_cube(i, j, k, up, left):
    return "a" if i > 0 else up + 1


@pytest.mark.parametrize(
    "run, name",
    [
        (_cpu(_layers(_str_later_layer)), "L"),
        (_cpu(_intervals(_str_later_interval)), "I"),
        (_cpu(_grid3(_str_later_cube)), "C"),
        (lambda: sweep_many([_grid(_str_later)] * 2, backend="cpu"), "G"),
    ],
    ids=["layered", "interval", "grid3", "batch"],
)
def test_every_shape_words_numbas_typing_error(run, name):
    _refused(run, f"{name}.cell does not compile", "nify", "Literal[str](a)", compiled=True)


# --- numba's typing of every path, before any sweep: a float where value_dtype is an integer type ---


def _float_at(i, j, *rest):
    if i == 37 and j == 47:  # a cell the probe's plain-Python calls never visit
        return 1.5
    return 1


def _float_at_pair(i, j, *rest):
    if i == 37 and j == 47:
        return 1.5, 0
    return 1, 0


def _no_sweep(monkeypatch):
    """Any sweep run fails the test (a lowering's ``run``, a backend's ``run_plan``): what is refused
    is refused before any kernel is built."""
    import gpudp.lowering

    real = gpudp.lowering.get

    class NoRun:
        def __init__(self, low):
            self.low = low

        def __getattr__(self, name):
            if name in ("run", "BACKEND"):
                raise AssertionError("a sweep ran")
            return getattr(self.low, name)

    monkeypatch.setattr("gpudp.lowering.get", lambda *a, **k: NoRun(real(*a, **k)))


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: _grid(_float_at), "G"),
        (lambda: _layers(_float_at_pair, bits=1), "L"),
        (lambda: _intervals(_float_at), "I"),
        (lambda: _grid3(_float_at_pair, bits=1), "C"),
    ],
    ids=["grid", "layered", "interval", "grid3"],
)
def test_a_float_on_a_path_the_probe_does_not_take_is_refused_before_sweeping(make, name, monkeypatch):
    """numba unifies the path's 1.5 with the others' 1 into float64, and the store would truncate
    every value: the probes type the method for the engine's argument types (numba's CPU typing, no
    kernel compiled) and refuse it, naming the class, the method, the type, value_dtype and the fix."""
    _no_sweep(monkeypatch)
    _refused(
        _cpu(make()),
        f"{name}.cell returns a float64 as the value on some path, but value_dtype is int32",
        "truncate it to an integer without a word",
        f"numba types {name}.cell(int64, int64, ",
        "int(x) or round(x)",
        "or declare a float value_dtype (np.float64)",
    )


def _float_boundary(i, j):
    return 0.5 if j == 7 else 0  # the probe asks (-1, 0)


def _float_field(i, j, up, left, diag):
    if i == 37:
        return (up[0] + 1, 0.5), 0
    return (up[0] + 1, up[1]), 0


def _float_decision(i, j, up, left, diag):
    return up + 1, (0.5 if i == 37 else 1)


@pytest.mark.parametrize(
    "rec, pieces",
    [
        (_grid(lambda i, j, u, w, d: u + 1, boundary=_float_boundary), ["G.boundary returns a float64"]),
        (
            _grid(
                _float_field,
                bits=1,
                vt=np.dtype([("m", np.float64), ("x", np.int64)]),
                boundary=lambda i, j: (0.0, 0),
            ),
            ["G.cell returns a float64 as field 'x' of the value", "value_dtype is int64"],
        ),
        (_grid(_float_decision, bits=1), ["G.cell returns a float64 as the decision on some path"]),
    ],
    ids=["boundary", "record-field", "decision"],
)
def test_every_value_a_method_returns_is_typed(rec, pieces, monkeypatch):
    _no_sweep(monkeypatch)
    _refused(_cpu(rec), *pieces)


def _int_into_float(i, j, up, left, diag):
    if i == 37:
        return 2  # an integer into a float type: exact, allowed
    return up + 0.5


def _narrow_int(i, j, up, left, diag):
    if i == 37:
        return np.int16(3)  # any integer width: its range is checked where it is known
    return np.int64(up) + 1


def test_integers_into_any_type_pass_and_each_method_is_typed_once(monkeypatch):
    calls = []
    real = __import__("gpudp.checks", fromlist=["return_type"]).return_type
    monkeypatch.setattr("gpudp.checks.return_type", lambda fn, types: calls.append(fn) or real(fn, types))
    for rec in (_grid(_int_into_float, vt=np.float64), _grid(_narrow_int)):
        first = sweep(rec, backend="cpu")
        assert sweep(rec, backend="cpu").last_row.tolist() == first.last_row.tolist()
    assert calls == [_int_into_float, _narrow_int]  # each typed once, the second sweep from the table


# --- valid returns run as they did ---------------------------------------------------------------


@pytest.mark.parametrize(
    "vt, value",
    [
        (np.int32, np.int32(3)),
        (np.int32, np.int64(-(2**31))),  # an int64 in range
        (np.int32, True),
        (np.int32, np.bool_(False)),
        (np.int64, np.uint64(2**63 - 1)),
        (np.int64, -(2**63)),
        (np.float64, 3),  # ints into a float type
        (np.float32, np.int64(2**40)),
        (np.float32, np.float64(0.1)),
        (np.float64, np.float16(2.5)),
        (np.float64, float("inf")),
    ],
)
def test_numbers_that_convert_exactly_pass_the_probe(vt, value):
    from gpudp.checks import check_return

    cls = type(_grid(None, vt=vt))
    check_return(cls, value, "the first cell")
    check_return(type(_grid(None, bits=3, vt=vt)), (value, np.uint8(7)), "the first cell")


def _numpy_scalars(i, j, up, left, diag):
    return np.int64(up) + np.int32(1), np.uint8(1)  # an int64 value in range of int32


def _numpy_back(i, j, d):
    return np.int64(i - 1), np.int32(j - 1)


def _numpy_boundary(i, j):
    return np.int64(5)


def test_numpy_scalars_run_everywhere_they_are_returned():
    rec = _grid(_numpy_scalars, bits=1, back=_numpy_back, boundary=_numpy_boundary)
    res = sweep(rec, backend="cpu")
    assert res.last_row.tolist() == [7, 7, 7] and res.last_row.dtype == np.int32
    assert res.traceback((1, 2))[:, :2].tolist() == [[1, 2], [0, 1]]


# --- the CUDA kernels (the simulator here): the same probes, before any kernel -------------------


@pytest.mark.sim
def test_the_cuda_backend_gets_the_same_errors():
    _refused(lambda: sweep(_grid(lambda i, j, u, w, d: "a"), backend="cuda"), "G.cell returned 'a' (str)")
    _refused(lambda: sweep(_grid(lambda i, j, u, w, d: u + 0.5), backend="cuda"), "value_dtype is int32")
    res = sweep(_grid(lambda i, j, u, w, d: np.int32(u + 1), shape=(2, 2)), backend="cuda")
    assert res.last_row.tolist() == [2, 2]


@pytest.mark.sim
def test_a_float_on_another_path_is_refused_before_the_cuda_kernels(monkeypatch):
    """The same typing on the CUDA backend, whose compiler (here the simulator) types nothing."""
    _no_sweep(monkeypatch)
    for rec, name in ((_grid(_float_at), "G"), (_intervals(_float_at), "I")):
        run = lambda rec=rec: sweep(rec, backend="cuda")  # noqa: E731
        _refused(run, f"{name}.cell returns a float64 as the value on some path, but value_dtype is int32")
