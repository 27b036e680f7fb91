"""The checked mode of a sweep, ``gpudp.sweep(rec, check=True)`` (or ``GPUDP_CHECK=1`` in the
environment): the recurrence is swept once in plain Python on the CPU before the compiled sweep,
every read its cell makes checked against the schedule and every step its ``back`` takes against
the walk's rule, and the first mistake raised as a :class:`ContractError` naming the cell and the
read (or the step). The compiled sweep then runs as it would unchecked, and its result is returned:
the checked pass only refuses, it changes nothing.

What the pass checks, by shape (each the contract of docs/tutorial.md):

- every shape: each ``cell`` return (:func:`gpudp.checks.check_return`: the form, a float into an
  integer ``value_dtype``, an integer out of its range, a decision that is no integer), an integer
  overflow in the arithmetic of an integer cell on numpy scalars (which compiled code wraps) or a
  division by zero there (numpy gives 0 or inf; compiled, the CPU raises, the GPU's is undefined),
  and each decision's width, at every cell; ``cell`` gets its data read-only, so that an index past the end
  of a data array (which compiled code reads as whatever memory holds) or a write to the data is a
  :class:`ContractError` naming the cell, its cause chained; with a traceback to come, ``back`` is
  called on every computed cell with the cell's decision, and a step the walk would refuse is
  refused here, where the walk may never go (no state: a walk's states are not the sweep's);
- grids (2-D and 3-D): the dependencies are the values of the declared offsets and the
  ``boundary`` outside the grid, whose returns are checked too; a line that a cell reads at an index
  from its data (``reads_line``) is a guarded view (:class:`LineView`): a read of a cell not swept
  before the cell, or past the line's ends, is refused;
- layered: ``prev_w`` is a guarded view of layer ``t - w``: a read outside the cells its layer
  computed (its active range; every cell of the buffer before the first layer, which holds
  ``fill``), or outside the declared ``reach`` (``k - reach[t] .. k``), is refused: compiled, it
  reads a stale value of an older layer, and on CUDA's blocked kernel a cell that is not there;
- intervals: ``T`` is a guarded view of the table (:class:`gpudp.interval.table.ProbeView` with the
  values): a read outside the shorter intervals inside the cell's own (a longer interval, one not
  yet computed, an empty one) is refused.

The pass is plain Python, a few million cells a minute (fewer for a cell that loops: matrix chain
at n = 60, a million): for tests and small instances of a new recurrence, not for production
sizes. A method that cannot run in plain Python (a CUDA-only helper) cannot be checked so; its
error is raised, naming the cell.
"""

from __future__ import annotations

import os

import numpy as np

from . import values
from .checks import cell_symbols, check_return, check_value, probe_back
from .errors import ContractError, InputError, decision_overflow
from .recurrence import bad_step, contiguous, read_only

__all__ = ["ENV", "check_grid", "check_grid3", "check_interval", "check_layered", "checked_back", "wanted"]

#: the environment variable that turns the checked mode on for every sweep whose ``check`` is None
ENV = "GPUDP_CHECK"


def wanted(check) -> bool:
    """Whether a sweep runs checked: ``check`` (True or False) when given, else :data:`ENV` (``1``,
    ``true``, ``yes`` or ``on``; unset, empty, ``0``, ``false``, ``no`` or ``off`` leave it off;
    anything else is an :class:`InputError` naming the variable)."""
    if check is not None:
        if not isinstance(check, bool | np.bool_):
            raise InputError("check", f"{check!r}: must be True, False or None (None: {ENV})")
        return bool(check)
    said = os.environ.get(ENV, "").strip().lower()
    if said in ("", "0", "false", "no", "off"):
        return False
    if said in ("1", "true", "yes", "on"):
        return True
    raise InputError(ENV, f"{said!r}: must be 1 (check every sweep) or 0")


class BadRead(Exception):
    """A read outside what the cell may read: the message says which and why."""


def _run(cls, meth: str, at: tuple, args: tuple, data: tuple, passes=()):
    """``cls.meth(*at, *args, *data)`` in plain Python (``data`` read-only); a bad read or an
    exception it raises is a :class:`ContractError` naming the method and the cell (those of the
    types ``passes`` are the caller's to word)."""
    name = f"{cls.__name__}.{meth}"
    integer = "raise" if _integer(cls) else "ignore"
    try:
        with np.errstate(all="ignore", over=integer, divide=integer):
            return getattr(cls, meth)(*at, *args, *data)
    except (ContractError, *passes):
        raise
    except BadRead as e:
        raise ContractError(f"{name} at {at} {e}") from None
    except FloatingPointError as e:
        if "divide by zero" in str(e):  # numpy's scalars give 0 or inf where compiled code raises
            raise ContractError(
                f"{name} at {at}: {e} (a division by zero, found by the checked sweep: compiled, it "
                "raises ZeroDivisionError on the CPU and is undefined on the GPU)"
            ) from e
        # numpy's integer scalars: an overflow (over="raise")
        raise ContractError(
            f"{name} at {at}: {e} (an integer overflow in its arithmetic, found by the checked sweep: "
            "compiled, integers wrap around silently and the answer would be wrong; use a wider type, "
            "or bound the instance so that every value fits)"
        ) from e
    except Exception as e:
        raise ContractError(
            f"{name} at {at} raised {type(e).__name__} ({e}) in the checked sweep, which runs it in plain "
            "Python with its data read-only: compiled, an index past the end of an array reads whatever "
            "memory holds, and a write to data() is undefined (docs/tutorial.md, section 2)"
        ) from e


def _integer(cls) -> bool:
    """Whether the cell's values are integers (a record: any field): its arithmetic's overflows are
    then refused (a float's overflow to infinity is IEEE's, compiled or not)."""
    dt = np.dtype(cls.value_dtype)
    kinds = [dt.fields[n][0].kind for n in dt.names] if dt.names else [dt.kind]
    return any(k in "iu" for k in kinds)


def _decide(cls, out, at: tuple, axes: str):
    """``cell``'s return at ``at`` checked (:func:`check_return`, the decision's width): ``(value,
    decision)``, the decision 0 without decision bits."""
    check_return(cls, out, f"cell {at}")
    bits = getattr(cls, "_declared_bits", cls.decision_bits)
    value, decision = out if bits else (out, 0)
    d = int(decision)
    if bits and not 0 <= d < (1 << bits):
        raise decision_overflow(cls.__name__, np.array([1, d, *at]), axes, bits)
    return value, d


def _backs(call) -> bool:
    """Whether ``back``'s steps are checked: a traceback can follow (decisions kept), ``back`` is
    defined, and it takes no state (a walk's states are its own, not the sweep's)."""
    cls = type(call.rec)
    return bool(
        call.traceback and cls.decision_bits and getattr(cls, "back", None) and not cls.traceback_state
    )


def _step(cls, at: tuple, d: int, data: tuple, n: int, state=None, table=None) -> tuple:
    """``back(*at, d[, state][, table])`` in plain Python: a tuple of ``n`` integers, or the probe's
    error."""
    extra = (*(() if state is None else (state,)), *(() if table is None else (table,)))
    out = _run(cls, "back", at, (d, *extra), data)
    if not (isinstance(out, tuple) and len(out) == n and all(isinstance(x, int | np.integer) for x in out)):
        probe_back(cls, at, d, data, state, table)  # raises, worded as for the walk
        raise ContractError(f"{cls.__name__}.back{(*at, d)} returned {out!r}: a tuple of {n} integers is due")
    return tuple(int(x) for x in out)


def checked_back(cls, table: np.ndarray, data: tuple):
    """A stateful interval ``back`` as the checked walk calls it (the tree walk of a checked sweep's
    result, :meth:`gpudp.interval.IntervalResult.traceback_tree`): in plain Python, the data
    read-only, the table through :class:`~gpudp.interval.table.TableView` (a read outside the stored
    intervals, or a write, refused naming the node and its state), the return checked; what it
    raises names the node."""
    from .interval.table import TableView

    data = tuple(read_only(contiguous(x)) for x in data)
    n = len(cls._back_returns())

    def back(i, j, d, s, T, *_):
        at, s = (int(i), int(j)), int(s)
        return _step(cls, at, int(d), data, n, s, TableView(cls.__name__, table, *at, s))

    return back


# --- grids: the offsets' values and the boundary ---------------------------------------------------


def check_grid(call) -> int:
    """The checked pass of a :class:`~gpudp.GridRecurrence`, in the wavefront order of its schedule;
    the number of cells checked."""
    from .grid.plan import make_plan, plan_grid

    rec = call.rec
    plan = make_plan(rec, plan_grid, "cpu")
    cls = type(rec)
    data = tuple(read_only(contiguous(x)) for x in rec._validate_instance())
    syms = cell_symbols(rec, plan.rows, plan.cols) if cls.symbols else None
    s = plan.schedule
    order = (s.a, s.b)

    def extra(at):
        return () if syms is None else (syms[0][at[0]], syms[1][at[1]])

    def earlier(at, to):
        return s.a * to[0] + s.b * to[1] < s.a * at[0] + s.b * at[1]

    def refuse(at, d, to):
        bad_step(cls, np.array([[*at, d]]), to)

    line = None
    if cls.reads_line:  # the plan is a line (plan_grid refuses any other grid that reads its line)

        def line(table, at):
            return LineView(table.reshape(-1), at, not s.by_row_index, earlier)

    return _offset_grid(call, (plan.rows, plan.cols), order, data, extra, earlier, refuse, line)


def check_grid3(call) -> int:
    """The checked pass of a :class:`~gpudp.Grid3Recurrence`, by planes ``i + j + k``."""
    from .grid3 import step_error

    rec = call.rec
    cls = type(rec)
    cls._validate_class()
    shape = rec._checked_shape()
    data = tuple(read_only(contiguous(x)) for x in rec._validate_instance())

    def earlier(at, to):
        return all(b <= a for a, b in zip(at, to, strict=True)) and to != at

    def refuse(at, d, to):
        raise step_error(cls, at, d, to)

    return _offset_grid(call, shape, (1, 1, 1), data, lambda at: (), earlier, refuse)


def _offset_grid(call, shape, order, data, extra, earlier, refuse, line=None) -> int:
    """A grid of ``shape`` whose cells read constant offsets, swept cell by cell by ``order`` (a
    wavefront's coefficients): each cell's dependencies from the cells computed or ``boundary``
    (its return checked, once a cell outside), ``line(table, at)`` after them (the guarded view of
    a line's values, :class:`LineView`, for a grid that reads its line), ``extra(at)`` (its
    symbols) after that; its return and decision checked, and ``back``'s step (``earlier(at, to)``,
    else ``refuse(at, d, to)``)."""
    rec = call.rec
    cls = type(rec)
    fs = values.fields(cls)
    vt = np.dtype(cls.value_dtype)
    table = np.zeros(shape, vt)
    offsets = [tuple(int(x) for x in o) for o in cls.offsets]
    axes = ", ".join("ijk"[: len(shape)])
    outside = {}

    def held(x):  # a value as the kernels hold it: of value_dtype (each field's type for a record)
        return vt.type(x) if fs is None else tuple(f.type(v) for f, v in zip(fs, x, strict=True))

    backs = _backs(call)
    idx = np.indices(shape).reshape(len(shape), -1).T
    keys = idx @ np.array(order, np.int64) if idx.size else np.zeros(0, np.int64)
    for at in map(tuple, idx[np.argsort(keys, kind="stable")].tolist()):
        deps = []
        for o in offsets:
            q = tuple(a + b for a, b in zip(at, o, strict=True))
            if all(0 <= x < n for x, n in zip(q, shape, strict=True)):
                v = table[q]
                deps.append(tuple(v) if fs is not None else v)
                continue
            if q not in outside:
                got = _run(cls, "boundary", q, (), data)
                check_value(cls, f"{cls.__name__}.boundary", got, f"{q}", "", "a boundary value")
                outside[q] = held(got)
            deps.append(outside[q])
        args = (tuple(deps),) if getattr(cls, "deps_tuple", False) else tuple(deps)
        if line is not None:
            args = (*args, line(table, at))
        value, d = _decide(cls, _run(cls, "cell", at, (*args, *extra(at)), data), at, axes)
        table[at] = tuple(value) if fs is not None else value
        if backs:
            to = _step(cls, at, d, data, len(shape))
            if not earlier(at, to):
                refuse(at, d, to)
    return int(table.size)


class GuardedArray:
    """A 1-D array ``buf`` as a checked cell sees it: every read (an index, a slice, the whole
    through numpy) passes ``_check(q)`` first, which raises :class:`BadRead` for a read the cell may
    not make (the subclasses: :class:`LineView`, :class:`LayerView`)."""

    buf: np.ndarray

    def _check(self, q: int) -> None:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.buf)

    def __getitem__(self, q):
        if isinstance(q, slice):
            for x in range(*q.indices(len(self.buf))):
                self._check(x)
            return read_only(self.buf[q])
        if isinstance(q, tuple) and len(q) == 1:
            q = q[0]
        self._check(int(q))
        return self.buf[int(q)]

    def __iter__(self):
        return (self[x] for x in range(len(self.buf)))

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self[:], dtype=dtype)


class LineView(GuardedArray):
    """A line's values as cell ``at`` of a checked sweep sees them (``reads_line``): a 1-D array's
    reads (an index, a slice, the whole through numpy) checked against the cells swept before
    ``at`` (``earlier(at, cell)``); a read of a cell not yet computed, or past the line's ends,
    raises :class:`BadRead`. ``along_i``: the line is one column (cell ``q`` is row ``q``)."""

    def __init__(self, buf, at: tuple, along_i: bool, earlier):
        self.buf, self.at, self.along_i, self.earlier = buf, at, along_i, earlier
        self.shape, self.size, self.dtype, self.ndim = buf.shape, buf.size, buf.dtype, 1

    def _check(self, q: int) -> None:
        n = len(self.buf)
        cell = (q, 0) if self.along_i else (0, q)
        if not 0 <= q < n:
            why = f"the line has cells 0 .. {n - 1}" + (
                " (a negative index does not wrap around in the compiled sweep)" if q < 0 else ""
            )
        elif not self.earlier(self.at, cell):
            why = f"cell {cell} is not computed before {self.at} in the sweep's order"
        else:
            return
        raise BadRead(
            f"read line[{q}]: {why}. A cell reads only the cells of the line swept before it; compiled, "
            "such a read gives whatever the line's buffer holds (or memory past its end), not an error"
        )


# --- layers: guarded views of the window's layers --------------------------------------------------


class LayerView(GuardedArray):
    """Layer ``s``'s values as cell ``(t, k)`` of a checked layered sweep sees them, ``prev_w``: a
    1-D array's reads (an index, a slice, the whole through numpy) checked against the cells layer
    ``s`` computed, ``lo .. hi - 1`` (every cell of the buffer before the first layer, which holds
    ``fill``), and with a reach against ``k - reach .. k``; a read outside raises :class:`BadRead`."""

    def __init__(self, buf, t: int, k: int, w: int, s: int, lo: int, hi: int, cells: int, reach):
        self.buf, self.t, self.k, self.w, self.s = buf, t, k, w, s
        self.lo, self.hi, self.cells, self.reach = lo, hi, cells, reach
        self.shape, self.size, self.dtype, self.ndim = buf.shape, buf.size, buf.dtype, 1

    def _check(self, q: int) -> None:
        why = None
        if self.s < 0:
            if not 0 <= q < len(self.buf):
                why = (
                    f"there is no layer {self.s}: before the first layer the window holds fill at cells "
                    f"0 .. {len(self.buf) - 1}"
                    + (" (a negative index wraps around to the buffer's end)" if q < 0 else "")
                )
        elif not self.lo <= q < self.hi:
            why = (
                f"layer {self.s} has cells 0 .. {self.cells - 1}"
                if (self.lo, self.hi) == (0, self.cells)
                else f"layer {self.s} computed only cells {self.lo} .. {self.hi - 1} (active_range())"
            )
        tail = "Compiled, such a read gives whatever the layer's buffer holds (a stale value), not an error"
        if why is None and self.reach is not None and not self.k - self.reach <= q <= self.k:
            why = (
                f"the sweep's reach promises reads of the previous layer at {self.k - self.reach} .. "
                f"{self.k} only (reach[{self.t}] = {self.reach})"
            )
            tail = (
                "On CUDA, whose blocked kernel keeps only the reach in shared memory, such a read gives a "
                "wrong value; declare the largest offset any cell of the layer reads"
            )
        if why is not None:
            raise BadRead(f"read prev_{self.w}[{q}], cell {q} of layer {self.s}: {why}. {tail}")


class Layer2View:
    """A 2-D layer's values as cell ``(t, i, j)`` of a checked sweep sees them, ``prev_w``: any numpy
    index (``prev[i, j]``, a row, a slice) is applied to the layer's cell numbers first, and a read
    of a cell outside layer ``s``'s ``rows x cols`` (every cell of the buffer before the first
    layer, which holds ``fill``) raises :class:`BadRead`; a negative index, which numpy wraps, too."""

    def __init__(self, buf, w: int, s: int, shape: tuple[int, int]):
        self.buf, self.w, self.s, self.cells = buf, w, s, shape
        self.shape, self.size, self.dtype, self.ndim = buf.shape, buf.size, buf.dtype, 2

    def __getitem__(self, q):
        parts = q if isinstance(q, tuple) else (q,)
        neg = any(isinstance(x, int | np.integer) and x < 0 for x in parts)
        rows, cols = self.cells
        if len(parts) == 1 and isinstance(parts[0], int | np.integer) and 0 <= parts[0] < rows:
            return _Row(self, int(parts[0]))  # prev[i][j]: the cell is checked when it is read
        if len(parts) == 2 and all(isinstance(x, int | np.integer) for x in parts):
            outside = neg or parts[0] >= rows or parts[1] >= cols  # a cell, the common read
        else:
            try:  # the cells the index reads: past the buffer (the widest layer) is outside too
                got = np.indices(self.buf.shape)[(slice(None), *parts)]
                outside = neg or bool(got.size and ((got[0] >= rows) | (got[1] >= cols)).any())
            except IndexError:
                outside = True
        if outside:
            what = "the fill before the first layer" if self.s < 0 else f"layer {self.s}"
            raise BadRead(
                f"read prev_{self.w}[{', '.join(map(str, parts))}]: {what} has cells [0 .. {rows - 1}, "
                f"0 .. {cols - 1}]"
                + (" (a negative index wraps around only in numpy)" if neg else "")
                + ". Compiled, such a read gives whatever the ring holds there (a stale value), not an error"
            )
        out = self.buf[q]
        return read_only(out) if isinstance(out, np.ndarray) else out

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self[:, :], dtype=dtype)


class _Row:
    """Row ``i`` of a :class:`Layer2View`, ``prev[i]``: each read is the view's ``prev[i, q]``."""

    def __init__(self, view: Layer2View, i: int):
        self.view, self.i = view, i
        self.shape, self.dtype, self.ndim = view.shape[1:], view.dtype, 1

    def __getitem__(self, q):
        return self.view[self.i, q]

    def __len__(self) -> int:
        return self.shape[0]

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.view[self.i, :], dtype=dtype)


def check_layered(call) -> int:
    """The checked pass of a :class:`~gpudp.LayeredRecurrence`, layer after layer, the cells of each
    layer's active range in order (a 2-D layer's row by row)."""
    from .grid.plan import make_plan, plan_layered

    rec = call.rec
    plan = make_plan(rec, plan_layered, "cpu", None, call.codec, call.reach)
    cls = type(rec)
    data = tuple(read_only(contiguous(x)) for x in rec._validate_instance())
    sizes, lo, hi, reach = plan.sizes, plan.lo, plan.hi, plan.reach
    shapes = plan.shapes
    if shapes is not None:
        width = tuple(max(int(x.max(initial=0)), 1) for x in shapes)
        shape_of = lambda s: (int(shapes[0][s]), int(shapes[1][s])) if s >= 0 else width  # noqa: E731
    else:
        width = max(int(sizes.max(initial=0)), 1)
    vt = np.dtype(cls.value_dtype)
    before = read_only(np.full(width, cls.fill, vt))
    layers = {}
    backs = _backs(call)
    for t in range(len(sizes)):
        cur = np.full(width, cls.fill, vt)
        for k in range(int(lo[t]), int(hi[t])):
            at = (t, *divmod(k, int(shapes[1][t]))) if shapes is not None else (t, k)
            prev = []
            for w in range(1, cls.window + 1):
                s = t - w
                buf = before if s < 0 else layers[s]
                if shapes is not None:
                    prev.append(Layer2View(buf, w, s, shape_of(s)))
                    continue
                r = None if reach is None else int(reach[t])
                if s < 0:
                    prev.append(LayerView(before, t, k, w, s, 0, width, width, r))
                else:
                    prev.append(LayerView(buf, t, k, w, s, int(lo[s]), int(hi[s]), int(sizes[s]), r))
            value, d = _decide(cls, _run(cls, "cell", at, tuple(prev), data), at, ", ".join(cls._INDEX))
            cur[at[1:]] = value
            if backs:
                _check_layer_steps(cls, plan, at, d, data)
        layers[t] = read_only(cur)
        layers.pop(t - cls.window, None)
    return plan.cells


def _check_layer_steps(cls, plan, at: tuple, d: int, data: tuple) -> None:
    """``back`` at a layered cell: one predecessor (``traceback``) or two (``traceback_tree``), each
    on an earlier layer inside its cells, or absent (``t = -1``); a :class:`ContractError` as the
    walks word it otherwise."""
    from .grid.result import layer_step_error

    m = len(at)
    out = _run(cls, "back", at, (d,), data)
    if not (isinstance(out, tuple) and len(out) in (m, 2 * m) and all(map(_is_int, out))):
        probe_back(cls, at, d, data)  # raises, worded as for the walk
        raise ContractError(
            f"{cls.__name__}.back{(*at, d)} returned {out!r}: a tuple of {m} integers (one predecessor) "
            f"or {2 * m} (two, for traceback_tree) is due"
        )
    for c in range(0, len(out), m):
        to = tuple(int(x) for x in out[c : c + m])
        t2 = to[0]
        if t2 < 0:
            continue
        if plan.shapes is not None:
            inside = 0 <= to[1] < plan.shapes[0][t2] and 0 <= to[2] < plan.shapes[1][t2]
        else:
            inside = plan.lo[t2] <= to[1] < plan.hi[t2]
        if t2 >= at[0] or not inside:
            raise layer_step_error(cls, plan, (*at, d), to)


def _is_int(x) -> bool:
    return isinstance(x, int | np.integer) and not isinstance(x, bool)


# --- intervals: a guarded view of the table --------------------------------------------------------


def check_interval(call) -> int:
    """The checked pass of an :class:`~gpudp.IntervalRecurrence`, by length, each cell reading the
    table through :class:`~gpudp.interval.table.ProbeView` with the values computed."""
    from .interval.table import OutsideRead, ProbeView, child_error, outside_read_error

    rec = call.rec
    cls = type(rec)
    cls._validate_class()
    n = rec._checked_size()
    data = tuple(read_only(contiguous(x)) for x in rec._validate_instance())
    table = values.structured(cls, values.full(cls, (n, n)))  # (a record's fill: one number a field)
    shown = read_only(table)
    backs = _backs(call)
    for d in range(n):
        for i in range(n - d):
            j = i + d
            try:
                out = _run(cls, "cell", (i, j), (ProbeView(i, j, n, table=shown),), data, (OutsideRead,))
            except OutsideRead as e:
                raise outside_read_error(cls, e) from None
            table[i, j], dd = _decide(cls, out, (i, j), "i, j")
            if backs:
                kids = _step(cls, (i, j), dd, data, 4)
                for a, b in (kids[:2], kids[2:]):
                    if (a, b) == (-1, -1) or (b == a - 1 and i <= a <= j + 1):
                        continue
                    if a < i or b > j or a > b or (a, b) == (i, j):
                        raise child_error(cls, i, j, dd, a, b)
    return n * (n + 1) // 2
