"""The plug-in contract: a recurrence declares its cells; the engine does the rest.

A recurrence is a class. Its *class attributes* describe the cell type and the dependency window;
its *static methods* are plain Python functions that the engine compiles for the CPU (numba
``njit``) and for the GPU (``cuda.jit(device=True)``) and inlines into generated kernels; its
*instance* carries the problem data (``data()``) and the sizes.

Four shapes share one engine, each base class naming its own in ``family`` (what
:func:`gpudp.sweep` dispatches on):

``GridRecurrence``
    a 2-D grid of ``rows x cols`` cells; cell ``(i, j)`` reads the cells at constant ``offsets``
    (e.g. ``(-1, 0), (0, -1), (-1, -1)`` for alignment problems; an instance may give its own, such
    as coin change's ``(0, -c)`` per coin). Reads that fall outside the grid take
    ``boundary(i, j, *data)`` (0 unless the class defines it). The engine derives the wavefront order
    from the offsets.

``LayeredRecurrence``
    ``num_layers()`` layers of ``layer_size(t)`` cells; a cell of layer ``t`` may read any cell of
    the ``window`` previous layers (passed to it as arrays). For recurrences whose dependencies are
    not constant offsets (knapsack's ``c - w_k``, Held-Karp's subsets).

``IntervalRecurrence``
    cell ``(i, j)``, ``i <= j < size()``, is the answer for the interval ``i..j`` and reads the whole
    table at shorter intervals inside its own (matrix-chain order, optimal BST, Nussinov, CYK); swept
    by interval length, its ``back`` splits an interval into up to two (a tree-shaped traceback).

``Grid3Recurrence``
    a 3-D grid of ``n1 x n2 x n3`` cells, each reading neighbours behind it (offsets in ``{-1,
    0}^3``); swept by planes ``i + j + k`` (three-way alignment).

All return ``value`` or ``(value, decision)`` from ``cell``; ``decision`` (``decision_bits`` bits,
0 = none) is evicted to the host store and read back by ``back`` during the traceback. With
``traceback_state = True`` the traceback carries a state from step to step (which matrix of an
affine-gap alignment, which phase of a walk): ``back(i, j, decision, state, *data) -> (i2, j2,
state2)``.
"""

from __future__ import annotations

import copy
import inspect

import numpy as np

from .errors import ContractError, InputError

#: the widest decision a cell may record (one bit plane per bit in the store, up to a uint32)
MAX_DECISION_BITS = 32
#: decision-store codecs a LayeredRecurrence may declare
CODECS = ("plain", "bands")


def contiguous(x):
    """A recurrence's data item as the kernels take it: arrays C-contiguous, scalars as they are."""
    return np.ascontiguousarray(x) if isinstance(x, np.ndarray) else x


def read_only(x):
    """A read-only view of an array data item (the probe's calls of ``cell`` must not write)."""
    if isinstance(x, np.ndarray):
        x = x.view()
        x.flags.writeable = False
    return x


def _proxy(rec, table: dict, key, attrs: dict):
    """A shallow copy of ``rec`` (sharing its data) whose class is a subclass of its class with the
    class attributes ``attrs``, keeping its name: one such subclass per class and ``key``, kept in
    ``table`` for the process, so that every kernel, walker and cache keyed by the class sees it."""
    cls = type(rec)
    sub = table.get((cls, key))
    if sub is None:
        attrs = {**attrs, "__module__": cls.__module__, "__qualname__": cls.__qualname__}
        sub = table[(cls, key)] = type(cls.__name__, (cls,), attrs)
    proxy = copy.copy(rec)
    proxy.__class__ = sub
    return proxy


def _with_offsets(rec, offs):
    """``rec`` with its class declaring ``offs``."""
    return _proxy(rec, _BY_OFFSETS, offs, {"offsets": offs})


def values_only(rec):
    """``rec`` with its class dropping the decisions its cell returns (``decision_bits`` 0; codegen
    unpacks ``(value, decision)`` and keeps the value): a sweep with ``traceback=False``."""
    bits = type(rec).decision_bits
    return _proxy(
        rec, _VALUES_ONLY, None, {"decision_bits": 0, "_drops_decisions": True, "_declared_bits": bits}
    )


class Recurrence:
    """Common part of the contract."""

    #: cell type: one of int32, int64, float32, float64, or a *record* of named fields of those
    #: types, ``np.dtype([("m", np.int32), ("x", np.int32)])``: the cell then gets and returns tuples
    #: (see :mod:`gpudp.values`; grids on the tiled plan, offsets among up, left and diagonal)
    value_dtype = np.int32
    #: bits of traceback information per cell kept in the decision store (0..32; 0 = value only)
    decision_bits = 0
    #: value the engine's buffers start from (and padding cells hold)
    fill = 0
    #: True: ``back`` takes the state of its cell after the decision and returns the predecessor's
    #: state third, ``back(i, j, decision, state, *data) -> (i2, j2, state2)``; the traceback
    #: starts from a given state and reports each step's (see :meth:`SweepResult.traceback`)
    traceback_state = False
    #: a whole-table result computed during the sweep: ``"max"`` or ``"min"`` of every computed
    #: cell's value, with the cell holding it (the earliest such cell in (i, j) / (t, k) order);
    #: read as ``result.best_value`` and ``result.best_cell``. None: no reduction
    reduce = None
    #: the shape the engine sweeps it as, named by each base class below (``"grid"``, ``"layered"``,
    #: ``"interval"``, ``"grid3"``): :func:`gpudp.sweep` dispatches on it (:data:`gpudp.engine.SHAPES`),
    #: and a class naming none or an unknown one is a :class:`ContractError` that lists the shapes
    family: str | None = None

    def data(self) -> tuple:
        """The problem data passed, after the cell's own arguments, to every static method.

        A tuple of numpy arrays and scalars; arrays go to the device once per solve.
        """
        return ()

    #: the arguments every static method takes before the dependencies or the decision
    _INDEX = ("i", "j")
    #: methods a subclass must define (instance methods giving the sizes)
    _SIZES: tuple[str, ...] = ()

    @classmethod
    def _validate_class(cls):
        """Check the declaration before anything compiles; :class:`ContractError` names the
        attribute or method at fault and the fix."""
        from .values import check_fill, check_value_dtype

        name = cls.__name__
        check_value_dtype(name, cls.value_dtype)  # a scalar type, or a record of them (gpudp.values)
        check_fill(cls)
        bits = cls.decision_bits
        if isinstance(bits, bool) or not (
            isinstance(bits, int | np.integer) and 0 <= bits <= MAX_DECISION_BITS
        ):
            raise ContractError(
                f"{name}.decision_bits = {bits!r}: must be an int in 0..{MAX_DECISION_BITS} (0: value only)"
            )
        if cls.reduce not in (None, "max", "min"):
            raise ContractError(f"{name}.reduce = {cls.reduce!r}: must be None, 'max' or 'min'")
        if not isinstance(cls.traceback_state, bool | np.bool_):
            raise ContractError(f"{name}.traceback_state = {cls.traceback_state!r}: must be True or False")
        if cls.cell is Recurrence.cell:
            raise ContractError(f"{name} must define cell(...) as a @staticmethod: {cls._cell_form()}")
        for meth in ("cell", "back", "boundary"):
            for klass in cls.__mro__:
                if meth in vars(klass):
                    if not isinstance(vars(klass)[meth], staticmethod):
                        raise ContractError(
                            f"{klass.__name__}.{meth} must be a @staticmethod (it is compiled as a plain "
                            "function of its arguments; the instance's data reaches it through data())"
                        )
                    break
        for meth in cls._SIZES:
            owner = next(k for k in cls.__mro__ if meth in vars(k))
            if owner in (GridRecurrence, LayeredRecurrence, IntervalRecurrence):
                raise ContractError(f"{name} must define {meth}(self)")

    @classmethod
    def _cell_form(cls) -> str:
        raise NotImplementedError

    @classmethod
    def _n_deps(cls) -> int:
        raise NotImplementedError

    def _validate_instance(self) -> tuple:
        """``data()`` checked, and the static methods' arities against it; returns the data."""
        cls = type(self)
        name = cls.__name__
        data = self.data()
        if not isinstance(data, tuple):
            raise ContractError(
                f"{name}.data() must return a tuple of numpy arrays and scalars, got {type(data).__name__}"
                + (" (a one-item tuple needs a trailing comma: (x,))" if data is not None else "")
            )
        n_data = len(data)
        n_sym = 2 if getattr(cls, "symbols", False) else 0
        want = {"cell": len(cls._INDEX) + cls._n_deps() + n_sym + n_data}
        if getattr(cls, "back", None) is not None:
            want["back"] = len(cls._INDEX) + 1 + bool(cls.traceback_state) + n_data
        if hasattr(cls, "boundary"):
            want["boundary"] = len(cls._INDEX) + n_data
        for meth, n in want.items():
            fn = getattr(cls, meth)
            try:
                params = inspect.signature(fn).parameters.values()
            except (TypeError, ValueError):  # a compiled or builtin function: numba will say
                continue
            if any(p.kind == p.VAR_POSITIONAL for p in params):
                continue
            got = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
            if got != n:
                raise ContractError(
                    f"{name}.{meth} takes {got} arguments, but the engine passes {n}: "
                    f"{cls._form(meth, n_data)}"
                )
        return data

    @classmethod
    def _form(cls, meth: str, n_data: int) -> str:
        idx = ", ".join(cls._INDEX)
        data = ", ".join(f"data_{k}" for k in range(n_data))
        data = f", {data}" if data else ""
        if meth == "cell":
            return cls._cell_form() + f" with data() giving {n_data} items{data and ':'}{data[1:]}"
        if meth == "back":
            if cls.traceback_state:
                a, b = cls._INDEX
                return f"back({idx}, decision, state{data}) -> ({a}2, {b}2, state2)"
            return f"back({idx}, decision{data})"
        return f"{meth}({idx}{data})"

    def _specialized(self) -> Recurrence:
        """This recurrence as the engine compiles it: itself (a grid whose instance gives its own
        ``offsets`` returns a copy whose class declares them, see :class:`GridRecurrence`)."""
        return self

    @staticmethod
    def cell(*args):  # pragma: no cover - the contract's placeholder
        raise NotImplementedError


#: (class, offsets) -> the subclass declaring those offsets (GridRecurrence._specialized)
_BY_OFFSETS: dict = {}
_VALUES_ONLY: dict = {}


class GridRecurrence(Recurrence):
    """A 2-D grid recurrence with constant dependency offsets.

    Subclasses set ``offsets`` (default ``((-1, 0), (0, -1), (-1, -1))``) and define::

        def shape(self) -> (rows, cols)             # required
        @staticmethod
        def cell(i, j, dep_0, dep_1, ..., *data) -> value or (value, decision)  # required
        @staticmethod
        def boundary(i, j, *data) -> value          # optional, default 0: reads outside the grid
        @staticmethod
        def back(i, j, decision, *data) -> (i2, j2) # traceback only: the predecessor of (i, j)
                                                    # (traceback_state: back(i, j, decision,
                                                    # state, *data) -> (i2, j2, state2))

    ``dep_k`` is the value of cell ``(i + offsets[k][0], j + offsets[k][1])``.

    **What is required, and when it is checked.** A missing ``shape`` or ``cell`` is a
    :class:`ContractError` when the sweep starts, before anything compiles. ``boundary`` is
    optional: the default gives 0 for every cell outside the grid, and nothing reports its absence,
    so a recurrence whose boundary is not 0 (edit distance: ``D(-1, j) = j + 1``) must define it.
    ``back`` is needed only for a traceback: a missing one is a :class:`ContractError` when
    :meth:`gpudp.engine.SweepResult.traceback` is called, not before. ``back`` should return one
    of the cell's dependencies; the engine checks only that the cell returned lies on an earlier
    wavefront of the sweep's order (a :class:`ContractError` naming the step otherwise). A cell
    outside the grid ends the walk.

    **Offsets given by the instance.** When the offsets depend on the problem's data (coin change:
    ``(0, -c)`` for every coin value ``c``), set them on the instance, ``self.offsets = ...`` in
    ``__init__`` (or define ``offsets`` as a property); the instance's offsets then take the class
    attribute's place. The engine checks them as it checks a class's
    (:func:`gpudp.schedule.check_offsets`: integer pairs, none ``(0, 0)``, no duplicates, an
    order must exist), derives the schedule from them, and compiles the kernels for each distinct
    set once: instances with equal offsets share the compiled kernels, in the process and in the
    kernel cache on disk (internally the engine sweeps a shallow copy of the instance whose class is
    a subclass of yours declaring those offsets, made once per class and set of offsets: see
    :meth:`_specialized`).

    **Dependencies as one tuple.** ``cell`` gets one argument per offset, so the number of offsets
    is fixed by its signature. When it varies from instance to instance (coin sets of any size),
    declare ``deps_tuple = True``: ``cell(i, j, deps, *data)`` then receives the dependencies as
    one tuple in the order of the offsets, ``deps[k]`` the value of cell ``(i + offsets[k][0], j +
    offsets[k][1])``; ``len(deps)``, ``deps[k]`` with a run-time ``k`` and ``for x in deps`` compile
    on every backend. A tuple, not an array: it lives in registers, with no allocation per cell on
    the CPU and no local memory on the GPU, and its length is a compile-time constant (each number
    of offsets compiles its own kernels anyway, since the offsets are spelled into them).
    """

    family = "grid"
    offsets: tuple[tuple[int, int], ...] = ((-1, 0), (0, -1), (-1, -1))

    #: True: ``cell(i, j, deps, *data)`` receives the dependencies as one tuple in the order of the
    #: offsets (``deps[k]`` is cell ``(i + offsets[k][0], j + offsets[k][1])``), for recurrences
    #: whose number of offsets varies from instance to instance. False: one argument per offset
    deps_tuple = False

    #: Set True when the cell compares one symbol of its row with one of its column (alignment,
    #: LCS, edit distance, DTW ...): ``row_symbols()`` and ``col_symbols()`` then give one value per
    #: row and per column, passed to ``cell`` as two arguments after the dependencies:
    #: ``cell(i, j, dep_0, ..., ri, cj, *data)``. The engine keeps them in registers on the GPU
    #: instead of the cell loading them from memory at every step. Integer symbols narrower than
    #: 32 bits reach the cell widened to int32 (uint32 to int64), on every backend alike.
    symbols = False

    _SIZES = ("shape",)

    def shape(self) -> tuple[int, int]:
        raise NotImplementedError

    def row_symbols(self) -> np.ndarray:
        raise NotImplementedError

    def col_symbols(self) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def boundary(i, j, *data):
        return 0

    def _specialized(self) -> GridRecurrence:
        """Itself, or, when the instance's ``offsets`` differ from its class's, a shallow copy whose
        class is a subclass declaring the instance's offsets (one subclass per class and set of
        offsets, kept for the process): every kernel, walker and cache the engine keys by the
        recurrence's class is then keyed by the offsets too. Malformed offsets raise
        :class:`gpudp.ScheduleError`, as a class's do."""
        from .schedule import check_offsets

        cls = type(self)
        own = self.offsets
        if own is cls.offsets:
            return self
        offs = check_offsets(own)
        if offs == cls.offsets:
            return self
        return _with_offsets(self, offs)

    @classmethod
    def _validate_class(cls):
        super()._validate_class()
        from .schedule import check_offsets

        check_offsets(cls.offsets)
        if not isinstance(cls.deps_tuple, bool | np.bool_):
            raise ContractError(f"{cls.__name__}.deps_tuple = {cls.deps_tuple!r}: must be True or False")
        if cls.symbols:
            for meth in ("row_symbols", "col_symbols"):
                if getattr(cls, meth) is getattr(GridRecurrence, meth):
                    raise ContractError(f"{cls.__name__}.symbols is True: define {meth}(self) -> 1-D array")

    @classmethod
    def _n_deps(cls) -> int:
        return 1 if cls.deps_tuple else len(cls.offsets)

    @classmethod
    def _cell_form(cls) -> str:
        sym = ", ri, cj" if cls.symbols else ""
        if cls.deps_tuple:
            return f"cell(i, j, deps{sym}, *data), deps one tuple in the order of the offsets {cls.offsets}"
        deps = ", ".join(f"dep_{k}" for k in range(len(cls.offsets)))
        return f"cell(i, j, {deps}{sym}, *data), one dep per offset of {tuple(cls.offsets)}"

    def _checked_shape(self) -> tuple[int, int]:
        rows, cols = self.shape()
        for name, v in (("rows", rows), ("cols", cols)):
            if int(v) != v or v < 0:
                raise InputError(name, f"grid {name} must be a non-negative integer, got {v!r}")
        return int(rows), int(cols)


class LayeredRecurrence(Recurrence):
    """Explicit layers; a cell reads whole previous layers.

    Subclasses may set ``window`` (default 1: the previous layer only) and define::

        def num_layers(self) -> int
        def layer_size(self, t) -> int
        @staticmethod
        def cell(t, k, prev_1, ..., prev_window, *data) -> value or (value, decision)
        @staticmethod
        def back(t, k, decision, *data) -> (t2, k2)  # traceback only: the predecessor of (t, k)

    ``prev_w`` is the array of layer ``t - w``'s values (holding ``fill`` when ``t - w < 0``).
    ``boundary`` is not used (never called): the layers before the first hold ``fill``. The sweep's
    result keeps the values of the last layer, ``last_layer`` (:class:`gpudp.engine.SweepResult`;
    its ``last_row`` and ``last_col`` are None). ``back`` returns a cell ``(t2, k2)`` of an earlier
    layer, ``t2 < t``, which must lie in layer ``t2``'s cells, ``0 <= k2 < layer_size(t2)``;
    ``t2 = -1`` ends the walk. Any other step is a :class:`ContractError` when the traceback is
    walked.

    Optional:

    ``active_range(self) -> (lo, hi)``
        two integer arrays over the layers: only cells ``lo[t] <= k < hi[t]`` of layer ``t`` are
        computed; the others keep decision 0 and an unspecified value, and the recurrence promises
        that no cell (and no ``back``) reads them. ``None`` (the default) computes every cell.
    ``decision_codec``
        how the decision store keeps each layer's words: ``"plain"`` (every word of every layer) or
        ``"bands"``: per layer, the leading and the trailing run of one repeated word (group of
        ``decision_bits`` words) are kept as two run values, and only the band of words between
        them is stored. Worth it when decisions are constant towards both ends of a layer.
    ``reach(self) -> array``
        with ``window = 1``: one non-negative integer per layer, the promise that cell ``k`` of
        layer ``t`` reads the previous layer only at ``k - reach[t] .. k`` (knapsack: the item's
        weight). ``None`` (the default) promises nothing. On CUDA the engine then runs several
        layers per pass over the layer, each thread block keeping a span of the layer and the
        ``sum(reach)`` cells below it in shared memory, so that a layer costs no trip to device
        memory (temporal blocking); a cell that reads outside its reach gets wrong values there.
    """

    family = "layered"
    window = 1
    decision_codec = "plain"
    _INDEX = ("t", "k")
    _SIZES = ("num_layers", "layer_size")

    def num_layers(self) -> int:
        raise NotImplementedError

    def layer_size(self, t: int) -> int:
        raise NotImplementedError

    def active_range(self):
        return None

    def reach(self):
        return None

    @classmethod
    def _validate_class(cls):
        if isinstance(cls.window, bool) or not (isinstance(cls.window, int) and cls.window >= 1):
            raise ContractError(f"{cls.__name__}.window = {cls.window!r}: must be an int >= 1")
        super()._validate_class()
        if cls.decision_codec not in CODECS:
            raise ContractError(
                f"{cls.__name__}.decision_codec = {cls.decision_codec!r}: must be one of {', '.join(CODECS)}"
            )

    @classmethod
    def _n_deps(cls) -> int:
        return cls.window

    @classmethod
    def _cell_form(cls) -> str:
        prev = ", ".join(f"prev_{w}" for w in range(1, cls.window + 1))
        return f"cell(t, k, {prev}, *data), one previous layer per window = {cls.window}"

    def _checked_reach(self, n: int) -> np.ndarray | None:
        """``reach()`` as an int64 array (ContractError when malformed), or None."""
        got = self.reach()
        if got is None:
            return None
        if type(self).window != 1:
            raise ContractError(
                f"{type(self).__name__}.reach() needs window = 1, the class has {type(self).window}"
            )
        a = np.asarray(got)
        if a.shape != (n,) or (a.size and a.dtype.kind not in "iu"):
            raise ContractError(
                f"{type(self).__name__}.reach() must give {n} integers, one per layer, "
                f"got shape {a.shape} {a.dtype}"
            )
        a = a.astype(np.int64)
        if a.size and a.min() < 0:
            raise ContractError(
                f"{type(self).__name__}.reach(), layer {int(a.argmin())}: reach must be >= 0, got {a.min()}"
            )
        return a

    def _checked_active_range(self, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(lo, hi)`` as int64 arrays, checked against the layer sizes (ContractError otherwise)."""
        got = self.active_range()
        if got is None:
            return np.zeros(len(sizes), np.int64), sizes.copy()
        try:
            lo, hi = got
        except (TypeError, ValueError):
            raise ContractError(
                f"{type(self).__name__}.active_range() must return a pair (lo, hi) of arrays, or None"
            ) from None
        out = []
        for name, a in (("lo", lo), ("hi", hi)):
            a = np.asarray(a)
            if a.shape != sizes.shape:
                raise ContractError(
                    f"{type(self).__name__}.active_range(): {name} must hold one value per layer "
                    f"({len(sizes)})"
                )
            if a.size and a.dtype.kind not in "iu":
                raise ContractError(
                    f"{type(self).__name__}.active_range(): {name} must be integers, got {a.dtype}"
                )
            out.append(a.astype(np.int64))
        lo, hi = out
        bad = np.flatnonzero((lo < 0) | (lo > hi) | (hi > sizes))
        if bad.size:
            t = int(bad[0])
            raise ContractError(
                f"{type(self).__name__}.active_range(), layer {t}: need 0 <= lo <= hi <= layer_size, "
                f"got lo={lo[t]}, hi={hi[t]}, size={sizes[t]}"
            )
        return lo, hi


class IntervalRecurrence(Recurrence):
    """An interval recurrence: cell ``(i, j)``, ``0 <= i <= j < size()``, holds the answer for the
    interval ``i..j`` and reads answers of shorter intervals inside it: matrix-chain order, optimal
    binary search trees, Nussinov RNA folding, CYK parsing (sweep with :func:`gpudp.sweep`,
    implemented in :mod:`gpudp.interval`).

    Subclasses define::

        def size(self) -> n                            # intervals over 0 .. n - 1
        @staticmethod
        def cell(i, j, T, *data) -> value or (value, decision)
        @staticmethod
        def back(i, j, decision, *data) -> (i1, j1, i2, j2)

    ``T`` is the table, a 2-D array indexed ``T[a, b]``. ``cell`` may read it at every shorter
    interval inside its own, ``i <= a <= b <= j`` with ``(a, b) != (i, j)``, and must not write
    it. Other reads are undefined: empty intervals such as ``T[i + 1, i]`` are not stored (a cell
    that needs one tests for it: ``T[i + 1, j - 1] if i + 1 <= j - 1 else 0``). The sweep first
    runs ``cell`` in plain Python on a few short intervals at both ends of the table and refuses
    such a read there with a ``ContractError``; a read that only other cells make goes unseen:
    the CPU returns whatever its memory holds, the GPU anything, and the CUDA simulator raises
    ``IndexError`` (so tests catch it). The cells ``(i, i)`` of length 1 are computed by ``cell`` too. Do not
    assume a memory layout: the GPU stores the table by diagonals (``T`` is a strided view there).

    The engine sweeps by length (the table's diagonals: length 1, 2, .., n), the cells of one
    diagonal in parallel, one thread a cell (so a cell's own loop over its split points runs on one
    thread), and keeps the whole table, ``n * n`` values, and the decisions, ``n * n`` of the
    smallest unsigned type holding ``decision_bits`` (8, 16 or 32 bits); a table that does not fit
    the device or this process's memory is refused with an ``InputError`` naming the bytes. A
    decision outside ``0 .. 2**decision_bits - 1`` is a ``ContractError``, never truncated. Integer
    values are machine integers: a sum that overflows ``value_dtype`` wraps around silently, as in
    the other shapes; pick the type for the largest value the recurrence can reach.

    ``back`` gives the (up to two) sub-intervals ``(i1, j1)`` and ``(i2, j2)`` that the cell's
    decision split it into; a child that is absent is ``(-1, -1)`` or an empty interval ``(a, a -
    1)`` (Nussinov's pair of neighbours leaves ``(i + 1, i)`` inside). A child must lie inside
    ``(i, j)`` and be shorter, so a walk cannot loop. :meth:`gpudp.interval.IntervalResult.
    traceback_tree` walks the tree (compiled, an explicit stack) and returns rows ``(i, j,
    decision)`` in preorder: a cell, then its first child's subtree, then its second's.

    ``size() == 0`` gives an empty table (nothing to compute; ``value``, ``decision`` and the
    traceback then raise ``IndexError``). Not available on this shape: ``traceback_state``,
    ``reduce`` (the whole table is the result: reduce ``result.table`` with numpy).
    """

    family = "interval"
    _SIZES = ("size",)

    def size(self) -> int:
        raise NotImplementedError

    @classmethod
    def _validate_class(cls):
        super()._validate_class()
        for attr in ("traceback_state", "reduce"):
            if getattr(cls, attr):
                raise ContractError(
                    f"{cls.__name__}.{attr} = {getattr(cls, attr)!r}: an IntervalRecurrence has no {attr} "
                    "(its traceback is a tree, and result.table holds every cell)"
                )
        if np.dtype(cls.value_dtype).names is not None:
            raise ContractError(
                f"{cls.__name__}.value_dtype is a record: an IntervalRecurrence keeps scalar cells (one "
                "table of one type); pack the fields into one number"
            )

    @classmethod
    def _n_deps(cls) -> int:
        return 1  # the table

    @classmethod
    def _cell_form(cls) -> str:
        return "cell(i, j, T, *data), T the table: read T[a, b] for i <= a <= b <= j, (a, b) != (i, j)"

    @classmethod
    def _form(cls, meth: str, n_data: int) -> str:
        if meth == "back":
            data = "".join(f", data_{k}" for k in range(n_data))
            return f"back(i, j, decision{data}) -> (i1, j1, i2, j2), (-1, -1) for an absent child"
        return super()._form(meth, n_data)

    def _checked_size(self) -> int:
        n = self.size()
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
            raise InputError("size", f"{type(self).__name__}.size() must be an integer >= 0, got {n!r}")
        return int(n)


#: the seven neighbours behind a cell of a 3-D grid, the default offsets of a Grid3Recurrence
GRID3_NEIGHBOURS = (
    (-1, 0, 0),
    (0, -1, 0),
    (0, 0, -1),
    (-1, -1, 0),
    (-1, 0, -1),
    (0, -1, -1),
    (-1, -1, -1),
)


def _check_offsets3(name: str, offsets) -> tuple[tuple[int, int, int], ...]:
    """``offsets`` as a tuple of 3-tuples of ints, or a ContractError naming the class and the fault."""
    form = (
        f"{name}.offsets: a tuple of 3-tuples with components in {{-1, 0}}, not all 0, "
        f"e.g. {GRID3_NEIGHBOURS[:3]}"
    )
    try:
        offs = tuple(tuple(o) for o in offsets)
    except TypeError:
        raise ContractError(f"{form}; got {offsets!r}") from None
    if not offs:
        raise ContractError(f"{form}; got none: a cell needs at least one dependency")
    for o in offs:
        if len(o) != 3 or any(isinstance(x, bool) or not isinstance(x, int | np.integer) for x in o):
            raise ContractError(f"{form}; got {o!r}")
        if any(int(x) not in (-1, 0) for x in o):
            raise ContractError(
                f"{form}; got {tuple(int(x) for x in o)}: a cell reads only its neighbours behind it "
                "(one step back along any of the axes)"
            )
        if not any(o):
            raise ContractError(f"{form}; got (0, 0, 0): a cell cannot depend on itself")
    offs = tuple(tuple(int(x) for x in o) for o in offs)
    if len(set(offs)) != len(offs):
        dup = next(o for o in offs if offs.count(o) > 1)
        raise ContractError(f"{form}; {dup} is given twice")
    return offs


class Grid3Recurrence(Recurrence):
    """A 3-D grid recurrence: cell ``(i, j, k)`` of an ``n1 x n2 x n3`` grid reads some of its seven
    neighbours behind it (three-way alignment, the LCS of three strings). Swept with
    :func:`gpudp.sweep`, implemented in :mod:`gpudp.grid3`.

    Subclasses set ``offsets`` and define::

        def shape(self) -> (n1, n2, n3)
        @staticmethod
        def cell(i, j, k, dep_0, dep_1, ..., *data) -> value or (value, decision)
        @staticmethod
        def boundary(i, j, k, *data) -> value            # for reads outside the grid (default 0)
        @staticmethod
        def back(i, j, k, decision, *data) -> (i2, j2, k2)  # the traceback's predecessor

    ``offsets`` is a tuple of 3-tuples with components in ``{-1, 0}``, not all zero, no duplicates
    (any non-empty subset of :data:`GRID3_NEIGHBOURS`, in any order; the default is all seven);
    ``dep_m`` is the value of cell ``(i + offsets[m][0], j + offsets[m][1], k + offsets[m][2])``,
    or ``boundary`` of those coordinates when one of them is -1. An instance may give its own
    ``offsets`` (checked alike; kernels are compiled once per class and set of offsets).

    The engine sweeps the grid by planes ``d = i + j + k``: a plane's cells are independent, and
    a cell reads at most three planes back, so only a ring of the last planes is kept (values of
    the whole grid never exist). The result (:class:`gpudp.grid3.Grid3Result`) holds the value of
    the last cell, the three far faces of the grid (``i = n1 - 1``, ``j = n2 - 1``, ``k = n3 -
    1``), and the decisions of every cell, one unsigned integer of the smallest type holding
    ``decision_bits`` (uint8, uint16 or uint32), for the traceback: from a start cell, ``back``
    gives each predecessor until a coordinate falls below 0. A predecessor must lie strictly
    behind its cell (every coordinate ``<=``, not all equal), so a walk cannot loop; anything
    else is a :class:`ContractError`. A decision outside ``0 .. 2**decision_bits - 1`` is a
    ``ContractError``, never truncated.

    A grid with a 0 in its shape has no cells. Not available on this shape: ``traceback_state``,
    ``reduce``, ``symbols``, ``deps_tuple`` and record value types (a ``ContractError`` names
    the attribute).
    """

    family = "grid3"
    offsets: tuple[tuple[int, int, int], ...] = GRID3_NEIGHBOURS

    _INDEX = ("i", "j", "k")
    _SIZES = ("shape",)

    def shape(self) -> tuple[int, int, int]:
        raise NotImplementedError

    @staticmethod
    def boundary(i, j, k, *data):
        return 0

    @classmethod
    def _validate_class(cls):
        name = cls.__name__
        for attr in ("traceback_state", "reduce", "symbols", "deps_tuple"):
            if getattr(cls, attr, None):
                raise ContractError(
                    f"{name}.{attr} = {getattr(cls, attr)!r}: a Grid3Recurrence has no {attr} "
                    "(remove it; its traceback carries no state, and its result keeps the last value "
                    "and the far faces of the grid)"
                )
        super()._validate_class()
        if cls.shape is Grid3Recurrence.shape:
            raise ContractError(f"{name} must define shape(self) -> (n1, n2, n3)")
        if np.dtype(cls.value_dtype).names is not None:
            raise ContractError(
                f"{name}.value_dtype is a record: a Grid3Recurrence keeps scalar cells (one of np.int32, "
                "np.int64, np.float32, np.float64); pack the fields into one number"
            )
        _check_offsets3(name, cls.offsets)

    @classmethod
    def _n_deps(cls) -> int:
        return len(cls.offsets)

    @classmethod
    def _cell_form(cls) -> str:
        deps = ", ".join(f"dep_{m}" for m in range(len(cls.offsets)))
        return f"cell(i, j, k, {deps}, *data), one dep per offset of {tuple(cls.offsets)}"

    @classmethod
    def _form(cls, meth: str, n_data: int) -> str:
        if meth == "back":
            data = "".join(f", data_{m}" for m in range(n_data))
            return f"back(i, j, k, decision{data}) -> (i2, j2, k2), a cell strictly behind (i, j, k)"
        return super()._form(meth, n_data)

    def _specialized(self) -> Grid3Recurrence:
        """Itself, or, when the instance gives ``offsets`` other than its class's, a shallow copy
        whose class is a subclass declaring them (one per class and set of offsets, kept for the
        process, as :meth:`GridRecurrence._specialized` does)."""
        cls = type(self)
        own = self.offsets
        if own is cls.offsets:
            return self
        offs = _check_offsets3(cls.__name__, own)
        if offs == tuple(tuple(o) for o in cls.offsets):
            return self
        return _with_offsets(self, offs)

    def _checked_shape(self) -> tuple[int, int, int]:
        """``shape()`` as three ints >= 0 (InputError naming ``shape`` otherwise)."""
        got = self.shape()
        try:
            n1, n2, n3 = got
        except (TypeError, ValueError):
            raise InputError(
                "shape", f"{type(self).__name__}.shape() must return (n1, n2, n3), got {got!r}"
            ) from None
        for name, v in (("n1", n1), ("n2", n2), ("n3", n3)):
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 0:
                raise InputError(
                    "shape", f"{type(self).__name__}.shape(): {name} must be an integer >= 0, got {v!r}"
                )
        return int(n1), int(n2), int(n3)


def bad_step(rec_cls, path, out, layer_sizes=None) -> None:
    """Raise :class:`ContractError` naming the step on which a compiled walk stopped (they stop on a
    step ``back`` may not take and leave the message to this): ``path``'s last row called ``back``,
    which returned ``out``; a step to a cell not on an earlier wavefront, or for layers (their
    sizes given) one not on an earlier layer or outside its layer's cells."""
    a, b, d = (int(v) for v in path[-1, :3])
    a2, b2 = (int(v) for v in out[:2])
    if layer_sizes is not None:
        why = (
            f"layer {a2} is not earlier than layer {a}"
            if a2 >= a
            else f"layer {a2} has cells 0 .. {int(layer_sizes[a2]) - 1}"
        )
        raise ContractError(
            f"{rec_cls.__name__}.back({a}, {b}, {d}) returned ({a2}, {b2}): {why}; back must return "
            "a cell (t2, k2) of an earlier layer, t2 < t, inside it, or t2 = -1 to end the walk"
        )
    raise ContractError(
        f"{rec_cls.__name__}.back({a}, {b}, {d}) returned ({a2}, {b2}), which is not on an earlier "
        f"wavefront of the sweep's order: it must step to an earlier cell, normally one of the "
        f"dependencies {tuple(tuple(int(x) for x in o) for o in rec_cls.offsets)} (or leave the grid)"
    )


def start_cell(start) -> tuple[int, int]:
    """A traceback's start, ``(i, j)`` or ``(t, k)``, as two ints; :class:`InputError` for anything
    else (a bare number, a wrong length)."""
    try:
        a, b = (int(x) for x in start)
    except (TypeError, ValueError):
        what = "the cell to walk back from, two integers (i, j) or (t, k)"
        raise InputError("start", f"{start!r}: {what}") from None
    return a, b
