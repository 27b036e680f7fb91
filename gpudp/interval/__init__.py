"""Interval recurrences (:class:`gpudp.recurrence.IntervalRecurrence`): swept by interval length,
the whole table kept, decisions walked back as a tree.

Cell ``(i, j)`` reads shorter intervals inside ``[i, j]``, so the cells of one *diagonal* of the
upper-triangular table (one length, ``d = j - i``) are independent: diagonal ``d`` runs after
``d - 1``, its ``n - d`` cells in parallel, one thread a cell. Unlike the wavefront shapes no
window suffices (a cell reads its whole row and column of the triangle), so the table stays whole:
``n * n`` values and ``n * n`` decisions (the smallest unsigned type of ``decision_bits``).

- CPU (:mod:`gpudp.interval.cpu`): the table row-major, ``T[i, j]``, computed in place; a diagonal
  runs with ``prange`` over its cells unless its work is small (:data:`SERIAL_WORK`), then serially
  (a parallel region costs more than such a diagonal).
- CUDA (:mod:`gpudp.interval.cuda`): the table *by diagonals* in device memory, ``S[d, i] = T[i, i +
  d]``: the cells of a diagonal are consecutive, and so are the reads ``T[i, i + m]`` and
  ``T[i + m + 1, j]`` of consecutive threads, which coalesce. The cell still indexes ``T[a, b]``:
  it receives a strided view (:func:`make_diagonal_view`: ``T[a, b]`` at ``S`` + ``(b - a) * n +
  a`` items, a linear map, so strides ``(1 - n, n)``). Chunks of diagonals run as cooperative
  launches, a grid sync between diagonals; the long diagonals a warp a cell where the cell's
  split-point loop allows it (:mod:`gpudp.interval.split`), reading a row-major and a column-major
  copy of the table. The row-major copy and the decisions (row-major) come back at the end.

Each is the shape's *lowering* on its backend, a module with ``run(...)`` and ``device_bytes(...)``
(what it keeps on the device), declared to :mod:`gpudp.lowering` below and looked up by the driver
with the backend's name.

The driver (:func:`sweep_intervals`, reached through :func:`gpudp.engine.sweep`) checks the class
and instance (arities before compiling; in plain Python, the cell's return form and its reads of
the table on a few short intervals), refuses a table that does not fit, picks the backend as the
other shapes do (``auto`` from the work, counted as the sum of the intervals' lengths: a cell of
length ``L`` typically reads ``L`` split points), runs it, raises a :class:`ContractError` for a
decision wider than ``decision_bits`` and returns an :class:`IntervalResult`.
"""

from __future__ import annotations

import operator
import time
from dataclasses import dataclass

import numpy as np

from .. import backends, lowering, values
from ..cache import jit_generated
from ..checked import checked_back
from ..checks import check_memory, check_typed_return, probe_back, probe_cell, typing_errors
from ..codegen import data_args, decision_dtype, fill, source_code
from ..errors import ContractError, InputError, decision_overflow
from ..jit import njit
from ..kernel import KernelFactory
from ..progress import progress_bar
from ..recurrence import IntervalRecurrence, contiguous, read_only
from ..solution import Stats
from ..values import fill_values, full, is_record, map_buf, map_dtypes, structured
from .records import RecordTable, record_cell, record_function
from .table import (
    SERIAL_WORK,
    OutsideRead,
    ProbeView,
    TableView,
    child_error,
    interval_memory,
    make_diagonal_view,
    outside_read_error,
    work_of,
)
from .table import chunks as diagonal_chunks

__all__ = [
    "IntervalResult",
    "child_error",
    "outside_read_error",
    "sweep_intervals",
    "interval_memory",
    "make_diagonal_view",
    "SERIAL_WORK",
]

#: the shape's kernels on each backend (the driver finds them through the registry)
lowering.declare("interval", cpu="gpudp.interval.cpu", cuda="gpudp.interval.cuda")

# ---------------------------------------------------------------------------------------------
# The result and its tree walk
# ---------------------------------------------------------------------------------------------


@dataclass
class IntervalResult:
    """An interval sweep's outcome: ``table`` (``n x n``, row-major: ``table[i, j]`` is interval
    ``i..j``; ``fill`` below the diagonal), ``decisions`` (the same shape, an unsigned type; None
    without decisions or with ``traceback=False``) and ``stats``."""

    recurrence: IntervalRecurrence
    table: np.ndarray
    decisions: np.ndarray | None
    stats: Stats

    @property
    def n(self) -> int:
        return int(self.table.shape[0])

    def _cell(self, i, j) -> tuple[int, int]:
        i, j = int(i), int(j)
        if not 0 <= i <= j < self.n:
            raise IndexError(f"interval ({i}, {j}) outside 0 <= i <= j < {self.n}")
        return i, j

    def value(self, i, j):
        """The value of interval ``i..j``; ``value(0, n - 1)`` is the whole instance's."""
        return self.table[self._cell(i, j)]

    def decision(self, i, j) -> int:
        """The decision ``cell`` returned for interval ``i..j``."""
        self._need_decisions()
        return int(self.decisions[self._cell(i, j)])

    def traceback_tree(self, root=None, state=None, *, probe: bool = True) -> np.ndarray:
        """The tree of intervals ``back`` splits ``root`` (default ``(0, n - 1)``) into, walked
        compiled with an explicit stack: an int64 array of rows ``(i, j, decision)`` in preorder
        (a cell, its first child's subtree, its second's).

        With ``traceback_state = True`` the root starts in ``state`` (an integer, default 0),
        ``back(i, j, decision, state, T, *data)`` gives each child its state, reading the finished
        table ``T`` (read-only) as it needs, and the rows are ``(i, j, decision, state)``, each
        with the state ``back`` was called with; a class with ``decision_bits = 0`` walks with
        every decision 0. A result of a checked sweep (``sweep(rec, check=True)``) is walked once
        in plain Python first, ``back``'s reads of ``T`` and of its data checked at every node.

        Example (``examples/cyk_parse.py``: the state is the nonterminal a node derives)::

            rows = result.traceback_tree((0, n - 1), state=start)   # rows (i, j, 0, nonterminal)

        ``probe=False`` skips the call of ``back`` in plain Python that comes first (its return's
        form, before the walk compiles): for the later walks of a class already walked once (a
        batch's instances, :mod:`gpudp.many.intervals`); every child is still checked by the walk.

        Raises :class:`ContractError` when no decisions were kept (a class without
        ``traceback_state``), ``state`` is given to a class without ``traceback_state``, ``back``
        does not return four integers (six with a state), or returns a child that is not a shorter
        interval inside its own (or more intervals than the root holds: children that overlap);
        ``IndexError`` for a root outside; :class:`InputError` for a state that is not an int64."""
        cls = type(self.recurrence)
        if state is not None and not cls.traceback_state:
            raise ContractError(
                f"{cls.__name__}.traceback_tree(root, state=...): the class declares traceback_state = False"
            )
        if not cls.traceback_state or cls.decision_bits:  # a state's walk may read T alone
            self._need_decisions()
        i0, j0 = self._cell(*((0, self.n - 1) if root is None else root))
        s0 = root_state(state) if cls.traceback_state else 0
        data = tuple(contiguous(x) for x in self.recurrence.data())
        if getattr(cls, "back", None) is None:
            raise ContractError(
                f"{cls.__name__} defines no back(...): its decisions cannot be traced back; define "
                f"{cls._form('back', len(data))} as a @staticmethod"
            )
        D = self.decisions if self.decisions is not None else np.broadcast_to(np.uint8(0), self.table.shape)
        T = (read_only(self.table),) if cls.traceback_state else ()
        if T and is_record(cls):  # the compiled back reads a tuple of the fields' tables
            T = (map_buf(values.split(cls, self.table), read_only),)
        view = TableView(cls.__name__, self.table, i0, j0, s0) if T else None
        if probe:  # back's return, in plain Python, before compiling
            probe_back(cls, (i0, j0), int(D[i0, j0]), data, s0 if T else None, view)
        length = j0 - i0 + 1
        cap = length * (length + 1) // 2  # the intervals inside the root
        if self.stats.extra.get("checked") and T:  # the same walk in plain Python, each call checked
            walk = tree_walker(cls, len(data), checked_back(cls, self.table, data))
            self._walked(walk(i0, j0, s0, cap, D, *T, *data), i0, j0, cap)
        with typing_errors(cls):
            out = tree_walker(cls, len(data))(i0, j0, s0, cap, D, *T, *data)
        return self._walked(out, i0, j0, cap)

    def _walked(self, out, i0: int, j0: int, cap: int) -> np.ndarray:
        """The walk's path, or its error (``out``: what the walk returned)."""
        cls = type(self.recurrence)
        path, err, i, j, s, a, b = out
        if err == 1:
            d = int(path[-1, 2])
            raise child_error(cls, i, j, d, a, b, s if cls.traceback_state else None)
        if err == 2:
            raise ContractError(
                f"{cls.__name__}.back(): the walk from ({i0}, {j0}) met more than {cap} intervals, all "
                "that it holds: children overlap (each decision must split its interval)"
            )
        return path

    def _need_decisions(self):
        cls = type(self.recurrence)
        if self.decisions is None and cls.decision_bits:
            raise ContractError(f"{cls.__name__} was swept with traceback=False: no decisions were kept")
        if self.decisions is None:
            raise ContractError(f"{cls.__name__} declares decision_bits = 0: there is nothing to trace back")

    def close(self):
        """Nothing to release (the table and decisions live in memory); here for the shapes' API."""


_TREE_WALK = """
def walk(i0, j0, s0, cap, D{T}{da}):
    # err 0: done; 1: a bad child (i, j in state s, its child a, b); 2: more than cap intervals
    path = np.empty((min(2 * (j0 - i0 + 1), cap), {width}), np.int64)
    stack = np.empty((j0 - i0 + 2, 3), np.int64)  # a child is shorter: depth <= length
    stack[0, 0] = i0
    stack[0, 1] = j0
    stack[0, 2] = s0
    top = 1
    n = 0
    while top > 0:
        top -= 1
        i = stack[top, 0]
        j = stack[top, 1]
        s = stack[top, 2]
        if n == cap:
            return path[:n], 2, i, j, s, 0, 0
        if n == path.shape[0]:
            grown = np.empty((min(2 * n, cap), {width}), np.int64)
            for q in range(n):  # (a loop: a slice copy compiles numba's shape checks, seconds)
                for c in range({width}):
                    grown[q, c] = path[q, c]
            path = grown
        d = np.int64(D[i, j])
        path[n, 0] = i
        path[n, 1] = j
        path[n, 2] = d
        {rec}
        n += 1
        {step}
        for c in range(2):  # the second child first: the stack pops the first one next
            a = np.int64(i2) if c == 0 else np.int64(i1)
            b = np.int64(j2) if c == 0 else np.int64(j1)
            if (a == -1 and b == -1) or (b == a - 1 and a >= i and a <= j + 1):
                continue  # absent, or an empty interval
            if a < i or b > j or a > b or (a == i and b == j):
                return path[:n], 1, i, j, s, a, b
            stack[top, 0] = a
            stack[top, 1] = b
            stack[top, 2] = np.int64(s2) if c == 0 else np.int64(s1)
            top += 1
    return path[:n], 0, 0, 0, 0, 0, 0
"""

_WALKERS = KernelFactory("interval.walk", "rec", "n_data")


def _walk_source(rec_cls, n_data: int) -> str:
    """The tree walk's source: with ``traceback_state``, ``back`` takes each node's state and the
    table and gives the children theirs (a fourth column, the state); without, states stay 0."""
    da = data_args(n_data)
    if rec_cls.traceback_state:
        pieces = {
            "T": ", T",
            "width": 4,
            "rec": "path[n, 3] = s",
            "step": f"i1, j1, s1, i2, j2, s2 = back(i, j, d, s, T{da})",
        }
    else:
        step = f"i1, j1, i2, j2 = back(i, j, d{da})\ns1 = 0\ns2 = 0"  # no states: each 0
        pieces = {"T": "", "width": 3, "rec": "", "step": step}
    return fill(_TREE_WALK, da=da, **pieces)


def tree_walker(rec_cls, n_data: int, back=None):
    """The compiled walk of ``rec_cls.back``; with ``back`` (a plain-Python stand-in, the checked
    walk's), the same source run in plain Python calling it."""
    if back is not None:
        ns = {"np": np, "back": back}
        exec(source_code(_walk_source(rec_cls, n_data), "walk"), ns)
        return ns["walk"]
    k = _WALKERS.lookup(rec=rec_cls, n_data=n_data)
    if not k.ready:
        records = rec_cls.traceback_state and is_record(rec_cls)  # back reads T[a, b] as tuples
        ns = {"np": np, "back": njit(record_function(rec_cls, "back", 4)[0] if records else rec_cls.back)}
        k = k.keep(jit_generated(_walk_source(rec_cls, n_data), "walk", ns, njit, "cpu"))
    return k.fn


def root_state(state) -> int:
    """A tree walk's first state: an int64 (0 when None)."""
    if state is None:
        return 0
    try:
        s = operator.index(state)
    except TypeError:
        raise InputError("state", f"{state!r}: the root's state must be an integer") from None
    if not -(2**63) <= s < 2**63:
        raise InputError("state", f"{state!r}: the root's state must fit an int64")
    return int(s)


# ---------------------------------------------------------------------------------------------
# The sweep
# ---------------------------------------------------------------------------------------------


def probe(rec, n: int, data: tuple) -> None:
    """Call ``cell`` in plain Python before anything compiles, with read-only data: on ``(0, 0)``
    with a read-only table of ``fill``, where a return of the wrong form is a
    :class:`ContractError`; then on a few short intervals at both ends ((0, 0), (0, 1), (0, 3),
    (n - 2, n - 1), (n - 1, n - 1)) with a table whose every allowed read gives ``fill``
    (:class:`ProbeView`), where a read of ``T`` outside the cell's shorter sub-intervals (an empty
    interval such as ``T[i + 1, i]``, read without testing for it) is a :class:`ContractError`
    rather than whatever memory holds on the CPU and anything on the GPU. A cell that cannot run
    so (whatever else it raises) is left to the compiler."""
    cls = type(rec)
    if n == 0:
        return
    m = min(n, 64)  # the return's form, on a plain read-only table (any read there gives fill)
    plain = read_only(structured(cls, full(cls, (m, m))))
    probe_cell(cls, (0, 0), (RecordTable(plain) if is_record(cls) else plain,), data)
    if is_record(cls):  # every path's return typed as the compiled cell's: a float into an int field
        tables = map_buf(values.split(cls, plain), read_only)
        check_typed_return(cls, "cell", (0, 0, tables, *data), record_cell(cls))
    fill = fill_values(cls) if is_record(cls) else np.dtype(cls.value_dtype).type(cls.fill)
    args = tuple(read_only(x) for x in data)
    cells = dict.fromkeys(
        (i, j) for i, j in ((0, 0), (0, 1), (0, 3), (n - 2, n - 1), (n - 1, n - 1)) if 0 <= i <= j < n
    )
    for i, j in cells:
        try:
            with np.errstate(all="ignore"):
                cls.cell(i, j, ProbeView(i, j, n, fill), *args)
        except OutsideRead as e:
            raise outside_read_error(cls, e) from None
        except Exception:
            return


def _host_arrays(runner, n: int, cls, dt: np.dtype, bits: int) -> tuple:
    """The result's table (``n x n``; a record's: a tuple of one table per field, gathered into a
    structured array at the end) and decisions (``n x n``, or ``1 x 1`` without decision bits),
    their contents undefined (each lowering fills them), views of one block of the backend's host
    pool (page-locked on CUDA, so that the copy back is a DMA at full speed; a block the pool kept
    from an earlier sweep of the same size costs nothing). The block goes back when both are
    dropped. A record's tables are plain arrays."""
    shape = (n, n) if bits else (1, 1)
    vt = np.dtype(cls.value_dtype)
    tb = 0 if is_record(cls) else -(-n * n * vt.itemsize // 64) * 64
    block = runner.host_pool().lease(tb + shape[0] * shape[1] * dt.itemsize, np.uint8)
    # plain arrays for the caller, each a view of a view of the lease (which numpy keeps as their base;
    # np.asarray of the lease itself would skip it to the pool's block, and give the block back early)
    if is_record(cls):
        table = map_dtypes(cls, lambda f: np.empty((n, n), f))
    else:
        table = np.asarray(block[: n * n * vt.itemsize].view(vt).reshape(n, n))
    return table, np.asarray(block[tb:].view(dt).reshape(shape))


def sweep_intervals(
    rec: IntervalRecurrence, user_rec=None, backend="auto", memory_budget=None, progress=None, deadline=None
):
    """Sweep an interval recurrence (what :func:`gpudp.engine.sweep` does for one).

    ``rec`` may be the engine's values-only proxy of ``user_rec`` (``traceback=False``: its class
    declares 0 decision bits and drops what ``cell`` returns). ``memory_budget`` is accepted for the
    shapes' common signature; it does not apply here: the table that the cells read stays in memory
    whole, and the decisions (no larger) with it. ``progress``: as :func:`gpudp.engine.sweep`
    takes it (a bar over the cells, :func:`gpudp.progress.progress_bar`); ``deadline`` (a
    :class:`gpudp.progress.Deadline`) is checked between chunks of diagonals.
    """
    t_start = time.perf_counter()
    user_rec = rec if user_rec is None else user_rec
    cls = type(rec)
    cls._validate_class()
    n = rec._checked_size()
    bits = cls.decision_bits
    backend, why = backends.choose(backend, work_of(n))
    runner = backends.get(backend)
    table_bytes, dec_bytes = interval_memory(n, cls.value_dtype, bits)
    # both kept whole, on the host and, on CUDA, on the device; a record's table twice on the host
    # (its fields' tables, then the structured result gathered from them)
    twice = is_record(cls)
    total = table_bytes * (2 if twice else 1) + dec_bytes
    again = ", twice on the host: the fields' tables and the record result" if twice else ""
    what = (
        f"{cls.__name__}'s interval sweep of size {n} keeps the whole table, {n} x {n} values "
        f"({table_bytes / 2**30:.2f} GiB{again}) and decisions ({dec_bytes / 2**30:.2f} GiB)"
    )
    low = lowering.get("interval", backend)
    check_memory(what, total, low.device_bytes(table_bytes, dec_bytes), runner.memory())
    data = tuple(contiguous(x) for x in rec._validate_instance())
    probe(rec, n, data)
    if bits:  # the decision-overflow flag, last of the kernels' data (see codegen.n_flags)
        data = (*data, np.zeros(4, np.int64))
    table, decisions = _host_arrays(runner, n, cls, decision_dtype(bits), bits)
    cells = n * (n + 1) // 2
    stats = Stats(backend=backend, device=runner.device_name(), cells=cells)
    stats.extra.update(
        schedule="interval diagonals",
        backend_choice=why,
        work=work_of(n),
        table_bytes=table_bytes,
        decision_store_bytes=dec_bytes,
    )
    bar = progress_bar(cells, progress, deadline=deadline)
    try:
        low.run(cls, n, data, table, decisions, diagonal_chunks(n), bar, stats)
    finally:
        if bar is not None:
            bar.close()
    err = decision_overflow(cls.__name__, data[-1], "i, j", bits) if bits else None
    if err is not None:
        raise err
    stats.seconds = time.perf_counter() - t_start
    stats.bytes_evicted = dec_bytes
    return IntervalResult(user_rec, structured(cls, table), decisions if bits else None, stats)
