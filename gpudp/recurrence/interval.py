"""The interval shape: :class:`IntervalRecurrence`, cells ``(i, j)`` holding the answer for the
interval ``i..j`` and reading shorter intervals inside it (swept by :mod:`gpudp.interval`)."""

from __future__ import annotations

import numpy as np

from ..errors import ContractError, InputError
from .base import Recurrence


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
                                        # (traceback_state: back(i, j, decision, state, T,
                                        # *data) -> (i1, j1, state1, i2, j2, state2))

    ``T`` is the table, a 2-D array indexed ``T[a, b]``. ``cell`` may read it at every shorter
    interval inside its own, ``i <= a <= b <= j`` with ``(a, b) != (i, j)``, and must not write
    it. Other reads are undefined: empty intervals such as ``T[i + 1, i]`` are not stored (a cell
    that needs one tests for it: ``T[i + 1, j - 1] if i + 1 <= j - 1 else 0``). The sweep first
    runs ``cell`` in plain Python on a few short intervals at both ends of the table and refuses
    such a read there with a ``ContractError``; a read that only other cells make goes unseen:
    the CPU returns whatever its memory holds, the GPU anything, and the CUDA simulator raises
    ``IndexError``; ``gpudp.sweep(rec, check=True)`` checks every cell's reads, on any backend
    (:mod:`gpudp.checked`). The cells ``(i, i)`` of length 1 are computed by ``cell`` too. Do not
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

    **A tree whose nodes carry a state.** Where a child's meaning depends on its parent's, more than
    one decision per interval can hold (CYK: the nonterminal a node derives picks the production,
    and so its children's nonterminals), declare ``traceback_state = True``; ``back`` then takes the
    node's state and the finished table and gives each child its state::

        @staticmethod
        def back(i, j, decision, state, T, *data) -> (i1, j1, state1, i2, j2, state2)

    ``T`` is the whole table as the sweep left it (``result.table``, read-only, indexed ``T[a, b]``
    as in ``cell``): ``back`` may read any stored interval, ``0 <= a <= b < n``, to choose the
    split and the children's states (the value of ``(i, j)`` itself included). States are integers
    (int64); an absent child's state is ignored. ``traceback_tree(root, state=s0)`` starts the root
    in ``s0`` and returns rows ``(i, j, decision, state)``. Such a class may declare
    ``decision_bits = 0`` (a cell then returns its value alone) when ``back`` reads all it needs
    from ``T``: every decision is then 0.

    **Record cells.** ``value_dtype`` may be a record of int32, int64, float32 and float64 fields
    (:mod:`gpudp.values`), as a grid's: ``cell`` then reads ``T[a, b]`` as a tuple in field order
    and returns a tuple of as many numbers (or ``(that tuple, decision)``); a stateful ``back``
    reads ``T`` the same way. ``result.table`` is a structured array of ``value_dtype``
    (``result.table["t"]``) and ``result.value(i, j)`` a numpy record. The engine keeps one table
    per field and compiles ``cell`` (and ``back``) from its source, rewritten so that ``T[a, b]``
    reads each field's table (:mod:`gpudp.interval.records`): such a function must have its source
    (defined in a file or a notebook) and use ``T`` only as ``T[a, b]`` or ``T.shape``. On the GPU a
    record cell runs a thread a cell; :func:`gpudp.sweep_many` does not batch them. Example (the
    ways to parenthesize a boolean expression to true and to false)::

        class BoolCount(IntervalRecurrence):
            value_dtype = np.dtype([("t", np.int64), ("f", np.int64)])
            ...
            @staticmethod
            def cell(i, j, T, vals, ops):
                if i == j:
                    return vals[i], 1 - vals[i]
                t = f = 0
                for k in range(i, j):
                    lt, lf = T[i, k]
                    rt, rf = T[k + 1, j]
                    ...                                # t, f += the ways op k gives each
                return t, f

        sweep(BoolCount("T|F&T^T")).value(0, 3)         # (2, 3): a record, ("t", "f")

    Raises :class:`ContractError` (at the sweep) for a field of another type, a return of the wrong
    arity, or a ``cell``/``back`` that uses ``T`` otherwise or has no source.

    ``size() == 0`` gives an empty table (nothing to compute; ``value``, ``decision`` and the
    traceback then raise ``IndexError``). Not available on this shape: ``reduce`` (the whole table
    is the result: reduce ``result.table`` with numpy).
    """

    family = "interval"
    _SIZES = ("size",)

    def size(self) -> int:
        raise NotImplementedError

    @classmethod
    def _validate_class(cls):
        super()._validate_class()
        if cls.reduce:
            raise ContractError(
                f"{cls.__name__}.reduce = {cls.reduce!r}: an IntervalRecurrence has no reduce "
                "(result.table holds every cell: reduce it with numpy)"
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
            takes = "".join(f", {a}" for a in (*cls._back_takes(), *(f"data_{k}" for k in range(n_data))))
            returns = ", ".join(cls._back_returns())
            return f"back(i, j, decision{takes}) -> ({returns}), (-1, -1) for an absent child"
        return super()._form(meth, n_data)

    @classmethod
    def _back_takes(cls) -> tuple[str, ...]:
        return ("state", "T") if cls.traceback_state else ()

    @classmethod
    def _back_returns(cls) -> tuple[str, ...]:
        if cls.traceback_state:
            return ("i1", "j1", "state1", "i2", "j2", "state2")
        return ("i1", "j1", "i2", "j2")

    def _checked_size(self) -> int:
        n = self.size()
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
            raise InputError("size", f"{type(self).__name__}.size() must be an integer >= 0, got {n!r}")
        return int(n)
