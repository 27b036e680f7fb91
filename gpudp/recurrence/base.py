"""The contract's common part: :class:`Recurrence` (what every shape declares: the cell type, the
decisions, ``fill``, ``reduce``, ``data()``, and the checks of the declaration), and the helpers
the engine and the shapes share: a recurrence's data as the kernels take it (:func:`contiguous`,
:func:`read_only`), the subclasses the engine sweeps in a user's class's place
(:func:`specialized`, :func:`values_only`), and the traceback's errors (:func:`bad_step`,
:func:`start_cell`). The shapes live beside it, one module each (see :mod:`gpudp.recurrence`).
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import operator
import weakref

import numpy as np

from ..errors import ContractError, InputError
from ..kernel import KernelFactory
from .constants import METHODS, changed_helpers, read_by

#: the widest decision a cell may record (one bit plane per bit in the store, up to a uint32)
MAX_DECISION_BITS = 32


def contiguous(x):
    """A recurrence's data item as the kernels take it: arrays C-contiguous, scalars as they are."""
    return np.ascontiguousarray(x) if isinstance(x, np.ndarray) else x


def read_only(x):
    """A read-only view of an array data item (the probe's calls of ``cell`` must not write)."""
    if isinstance(x, np.ndarray):
        x = x.view()
        x.flags.writeable = False
    return x


def specialized(rec, **parts):
    """``rec`` swept as a subclass of its class declaring ``parts`` (class attributes by name): a
    shallow copy of ``rec`` (sharing its data) whose class is that subclass, keeping its name.

    The subclass is the kernel key's part for what an instance declares beyond its class (its own
    ``value_dtype`` or ``offsets``, :meth:`Recurrence._specialized`) and for how a sweep runs it
    (values only, :func:`values_only`): every kernel, walker and cache of the engine is keyed by the
    class it sweeps, so one subclass per class and set of parts, made once per process (in the
    kernel table, :mod:`gpudp.kernel`), keys them all; instances declaring equal parts share it."""
    proxy = copy.copy(rec)
    proxy.__class__ = specialized_class(type(rec), **parts)
    return proxy


def specialized_class(cls, **parts):
    """The subclass of ``cls`` declaring ``parts`` that :func:`specialized` gives its instances (one
    per class and set of parts in the process)."""
    key = tuple(sorted(parts.items()))
    k = _SWEPT.lookup(cls=cls, parts=key)
    if not k.ready:
        attrs = {**parts, "__module__": cls.__module__, "__qualname__": cls.__qualname__}
        k = k.keep(type(cls.__name__, (cls,), attrs))
    return k.fn


def values_only(rec):
    """``rec`` with its class dropping the decisions its cell returns (``decision_bits`` 0; codegen
    unpacks ``(value, decision)`` and keeps the value): a sweep with ``traceback=False``."""
    bits = type(rec).decision_bits
    return specialized(rec, decision_bits=0, _drops_decisions=True, _declared_bits=bits)


#: what each recurrence class's compiled methods read of their modules' constants at its first sweep
#: (:mod:`gpudp.recurrence.constants`)
_FIRST_READ: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: (class, parts) -> the subclass of that class declaring the parts (:func:`specialized`)
_SWEPT = KernelFactory("recurrence.swept", "cls", "parts")

#: the contract's names the engine reads from the class, never the instance (what it compiles, and
#: the options that shape the kernels); an instance setting one is refused (it would be ignored)
_CLASS_ONLY = (
    "cell",
    "boundary",
    "back",
    "fill",
    "decision_bits",
    "symbols",
    "reduce",
    "deps_tuple",
    "reads_line",
    "traceback_state",
    "window",
    "decision_codec",
)

#: what each recurrence class declared at its first sweep (:func:`declaration`)
_FIRST_DECLARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: the contract's names of each gpudp base class (those a subclass may declare), by base
_CONTRACT: dict = {}


def _contract_names(cls) -> tuple[str, ...]:
    """The public names the gpudp base classes of ``cls`` define and the methods the backends
    compile (its contract: ``offsets``, ``value_dtype``, ``cell``, ``boundary``, ``back``, ...),
    sorted."""
    bases = tuple(k for k in cls.__mro__ if k.__module__.startswith("gpudp.recurrence"))
    names = _CONTRACT.get(bases)
    if names is None:
        public = {n for k in bases for n in vars(k) if not n.startswith("_")}
        names = _CONTRACT[bases] = tuple(sorted(public | set(METHODS)))  # (back: no default to define)
    return names


def _declared_form(v, outer: bool = True):
    """A declared value as :func:`declaration` compares it: a function by its code and the values
    it closes over and defaults to (a method replaced, or rebuilt by a factory, is another; a
    function among those values by identity), a tuple or list by its items, a number, string, dtype
    or type as it is, anything else by identity."""
    v = getattr(v, "__func__", v)  # staticmethod, classmethod
    code = getattr(v, "__code__", None)
    if code is not None:
        if not outer:
            return ("id", id(v))
        cells = tuple(_cell_form(c) for c in v.__closure__ or ())
        return ("fn", code, cells, _declared_form(v.__defaults__ or (), False))
    if isinstance(v, tuple | list):
        return (type(v).__name__, *(_declared_form(x, outer) for x in v))
    if v is None or isinstance(v, bool | int | float | complex | str | bytes | np.generic | np.dtype | type):
        return v
    return ("id", id(v))


def _cell_form(cell):
    """:func:`_declared_form` of a closure's cell's value (an empty cell: a name not yet bound)."""
    try:
        return _declared_form(cell.cell_contents, False)
    except ValueError:
        return ("empty",)


#: each class's last declared values as read (:func:`declaration`) and their form
_LAST_DECLARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _holds_list(v) -> bool:
    """A list, or a tuple with a list among its items (offsets written so): changeable in place."""
    return isinstance(v, list) or isinstance(v, tuple) and any(isinstance(x, list) for x in v)


def declaration(cls) -> tuple:
    """What ``cls`` declares of its contract now (:func:`_contract_names`: offsets, types, fill, the
    methods, the options), in a form that compares equal while it is unchanged. The same objects
    as the last call read (no list among them, which could have changed in place) give the last
    form again: ~2 us, where the form takes ~20."""
    raw = tuple(getattr(cls, n, None) for n in _contract_names(cls))
    last = _LAST_DECLARED.get(cls)
    if last is not None and all(map(operator.is_, raw, last[0])):
        return last[1]
    form = tuple(map(_declared_form, raw))
    if not any(_holds_list(v) for v in raw):
        _LAST_DECLARED[cls] = (raw, form)
    return form


#: a method's function -> (its code, how many positional arguments it takes): :func:`_arity`
_ARITY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _arity(fn) -> int | None:
    """How many positional arguments ``fn`` takes; None where it takes ``*args`` or has no signature
    to read (a compiled or builtin function: numba will say). Read once per function and code (its
    signature, read at every sweep, was ~10 us a method)."""
    code = getattr(fn, "__code__", None)
    try:
        known = _ARITY.get(fn)
    except TypeError:  # not weakly referable: read each time
        known = None
    if known is not None and known[0] is code:
        return known[1]
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        got = None
    else:
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
        got = None if varargs else sum(p.kind in positional for p in params)
    with contextlib.suppress(TypeError):
        _ARITY[fn] = (code, got)
    return got


def _scalar_or_record(name: str, dtype):
    """A ``value_dtype`` as a class declares it: the numpy scalar type (``np.int64``), or the
    structured dtype of a record cell."""
    from ..values import check_value_dtype

    check_value_dtype(name, dtype)
    dt = np.dtype(dtype)
    return dt if dt.names else dt.type


class Recurrence:
    """Common part of the contract."""

    #: the shape, named by each shape's class (``"grid"``, ``"layered"``, ``"interval"``,
    #: ``"grid3"``): the engine dispatches a sweep on it. None here: not a shape of its own
    family = None

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
        from ..values import check_fill, check_value_dtype

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
            if "family" in vars(owner):  # the shape's own placeholder: the subclass defines none
                raise ContractError(f"{name} must define {meth}(self)")

    @classmethod
    def _cell_form(cls) -> str:
        raise NotImplementedError

    @classmethod
    def _n_deps(cls) -> int:
        raise NotImplementedError

    def _validate_instance(self) -> tuple:
        """``data()`` checked, and the static methods' arities against it; returns the data.

        Raises
        ------
        ContractError
            ``data()`` not a tuple; a static method taking another number of arguments.
        InputError
            a Python int beyond 64 bits among the items (numba passes none: the cell's compilation
            failed, naming the cell)."""
        cls = type(self)
        name = cls.__name__
        data = self.data()
        if not isinstance(data, tuple):
            raise ContractError(
                f"{name}.data() must return a tuple of numpy arrays and scalars, got {type(data).__name__}"
                + (" (a one-item tuple needs a trailing comma: (x,))" if data is not None else "")
            )
        for m, x in enumerate(data):
            if type(x) is int and not -(2**63) <= x < 2**64:
                raise InputError(
                    f"data()[{m}]",
                    f"{name}.data()[{m}] = {x} fits no 64-bit integer (int64 or uint64), the widest "
                    "a compiled cell takes: scale it down, or split it into 64-bit parts",
                )
        n_data = len(data)
        n_sym = 2 if getattr(cls, "symbols", False) else 0
        n_sym += 1 if getattr(cls, "reads_line", False) else 0  # the line: one argument more
        want = {"cell": len(cls._INDEX) + cls._n_deps() + n_sym + n_data}
        if getattr(cls, "back", None) is not None:
            want["back"] = len(cls._INDEX) + 1 + len(cls._back_takes()) + n_data
        if hasattr(cls, "boundary"):
            want["boundary"] = len(cls._INDEX) + n_data
        for meth, n in want.items():
            got = _arity(getattr(cls, meth))
            if got is not None and got != n:
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

    @classmethod
    def _back_takes(cls) -> tuple[str, ...]:
        """The names of what ``back`` takes between the decision and the data: the state with
        ``traceback_state``."""
        return ("state",) if cls.traceback_state else ()

    @classmethod
    def _back_returns(cls) -> tuple[str, ...]:
        """The names of what ``back`` returns, in order: the predecessor's coordinates (``i2, j2``),
        and its state third with ``traceback_state``."""
        names = tuple(f"{a}2" for a in cls._INDEX)
        return (*names, "state2") if cls.traceback_state else names

    #: the class attributes an instance may declare for itself (``self.value_dtype = np.int64`` in
    #: ``__init__``, or a property): the engine sweeps such an instance as the subclass declaring
    #: them (:meth:`_specialized`), so its kernels are keyed by them
    _INSTANCE_PARTS: tuple[str, ...] = ("value_dtype",)

    def _instance_part(self, name: str, own):
        """``own``, the instance's ``name``, checked and in the form its class would declare it
        (errors as for a class's declaration)."""
        if name == "value_dtype":
            return _scalar_or_record(type(self).__name__, own)
        raise NotImplementedError(name)

    def _specialized(self, constants: tuple | None = None) -> Recurrence:
        """This recurrence as the engine compiles it: itself, or, where the instance declares one of
        :attr:`_INSTANCE_PARTS` other than its class does (a value type chosen from the data,
        offsets given by the data), a shallow copy whose class is the subclass declaring them
        (:func:`specialized`: one per class and set of parts); and where a module constant that
        ``cell``, ``boundary`` or ``back`` reads changed since the class's first sweep, the subclass
        keyed by the constants as they are now (:mod:`gpudp.recurrence.constants`), so the kernels
        are compiled with them. ``constants``: what :func:`~gpudp.recurrence.constants.read_by`
        gives for the class, when the caller read it already (a batch, once per class)."""
        cls = type(self)
        own = getattr(self, "__dict__", {})
        for name in _CLASS_ONLY:
            if name in own and name not in cls._INSTANCE_PARTS and name in _contract_names(cls):
                raise ContractError(
                    f"{cls.__name__}: the instance sets {name} (self.{name} = ...), but the engine reads "
                    f"{name} from the class, and compiles it once per class: declare it on the class (a "
                    "subclass for each variant), or pass what varies through data(); an instance may "
                    f"declare only {' and '.join(cls._INSTANCE_PARTS)} for itself"
                )
        parts = {}
        for name in cls._INSTANCE_PARTS:
            own, declared = getattr(self, name), getattr(cls, name)
            if own is declared:
                continue
            own = self._instance_part(name, own)
            if isinstance(declared, property) or own != self._instance_part(name, declared):
                parts[name] = own
        declared = declaration(cls)
        if _FIRST_DECLARED.setdefault(cls, declared) != declared:
            # a class attribute reassigned since the class's first sweep (offsets, cell, fill, ...):
            # kernels, plans and walkers are keyed by the class, so it is swept as the subclass keyed
            # by what it declares now (back at the first declaration, the class's own serve again)
            parts["_declared"] = declared
        direct, helpers = read_by(cls) if constants is None else constants
        first = _FIRST_READ.setdefault(cls, (direct, helpers))
        if first[0] != direct:  # the methods' constants changed since the first sweep: a key part
            parts["_constants"] = direct
        stale = changed_helpers(first[1], helpers)
        if stale:
            raise ContractError(
                f"{cls.__name__}: a module constant changed since its helpers compiled ({'; '.join(stale)}); "
                "numba keeps a compiled helper's constants for the process, so the sweep would run the "
                "old value: pass the value through data() (or read it in cell itself), or restart Python"
            )
        return specialized(self, **parts) if parts else self

    @staticmethod
    def cell(*args):  # pragma: no cover - the contract's placeholder
        raise NotImplementedError


def bad_step(rec_cls, path, out, layers=None) -> None:
    """Raise :class:`ContractError` naming the step on which a compiled walk stopped (they stop on a
    step ``back`` may not take and leave the message to this): ``path``'s last row called ``back``,
    which returned ``out``; a step to a cell not on an earlier wavefront, or for layers (``layers``:
    their sizes and active ranges, ``(sizes, lo, hi)``) one not on an earlier layer or outside the
    cells its layer computed."""
    a, b, d = (int(v) for v in path[-1, :3])
    a2, b2 = (int(v) for v in out[:2])
    if layers is not None:
        size, lo, hi = (int(x[a2]) if a2 < a else 0 for x in layers)
        why = (
            f"layer {a2} is not earlier than layer {a}"
            if a2 >= a
            else f"layer {a2} has cells 0 .. {size - 1}"
            if (lo, hi) == (0, size)
            else f"layer {a2} computed only its active range, cells {lo} .. {hi - 1} (active_range()), "
            "and no decision is kept for the others"
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


def whole_numbers(xs) -> tuple[int, ...]:
    """The items of ``xs`` as ints: :class:`TypeError` for a bool or an item that is not a whole
    number (``1.5``, ``"3"``: refused, not truncated or parsed), and for an ``xs`` that is not
    iterable. Numpy integers (and anything with ``__index__``) are taken."""
    if any(isinstance(x, bool | np.bool_) for x in xs):
        raise TypeError("a bool is not a whole number here")
    return tuple(operator.index(x) for x in xs)


def start_cell(
    start, names: tuple[str, ...] = ("i", "j"), field: str = "start", role: str = "the cell to walk back from"
) -> tuple[int, ...]:
    """A traceback's start, ``(i, j)`` or ``(t, k)`` (or as many ints as ``names``, a 2-D layer's
    ``(t, i, j)``), as ints; :class:`InputError` naming ``field`` for anything else (a bare number,
    a wrong length, a coordinate that is not an integer: ``1.5``, ``"3"`` or ``True`` is refused,
    not truncated or parsed). ``decision(...)``'s cell is read alike (``field`` "cell", ``role`` "a
    cell")."""
    try:
        cell = whole_numbers(start)
    except TypeError:
        cell = ()
    if len(cell) != len(names):
        count = {2: "two", 3: "three"}.get(len(names), str(len(names)))
        kinds = f"({', '.join(names)})" if len(names) != 2 else "(i, j) or (t, k)"
        what = f"{role}, {count} integers {kinds}"
        raise InputError(field, f"{start!r}: {what}") from None
    return cell
