"""The 3-D grid shape: :class:`Grid3Recurrence`, cells ``(i, j, k)`` reading some of their seven
neighbours behind them (swept by planes in :mod:`gpudp.grid3`), and the checks of its offsets."""

from __future__ import annotations

import numpy as np

from ..errors import ContractError, InputError
from .base import Recurrence

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
        super()._validate_class()  # a missing shape() too
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

    _INSTANCE_PARTS = ("value_dtype", "offsets")

    def _instance_part(self, name: str, own):
        """An instance's ``offsets`` checked as a class's are."""
        if name == "offsets":
            return _check_offsets3(type(self).__name__, own)
        return super()._instance_part(name, own)

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
