"""One instance's outcome in a batch (:class:`ManyItem`): apart from :mod:`gpudp.many`, so that the
shapes' batch drivers (:mod:`gpudp.many.intervals`) make items without importing the package."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class ManyItem:
    """One instance's outcome in a :class:`ManyResult`.

    ``index``: its position in the input; ``shape``: ``(rows, cols)`` (None when its shape could
    not be read); ``last_row``, ``last_col``: the values of row ``rows - 1`` and column ``cols - 1``
    (empty arrays for a grid without cells, as :func:`gpudp.sweep` gives them); ``value``: the last
    cell's value, ``last_row[-1]`` (None without cells); ``best_value``, ``best_cell``: with
    ``reduce`` declared, the best value over the cells and the earliest cell in (i, j) order that
    holds it (None without cells); ``path``: the traceback, an int64 array of rows ``(i, j,
    decision)`` (``(i, j, decision, state)`` with ``traceback_state``) from the start cell backwards,
    as :meth:`gpudp.grid.result.SweepResult.traceback` returns it (empty for a grid without cells; None
    with ``traceback=False`` or ``decision_bits = 0``); ``exit``: where ``back`` left the grid,
    ``(i, j)`` or ``(i, j, state)``; ``error``: why this instance has no result, else None.

    An interval recurrence's item (:mod:`gpudp.many.intervals`) has ``shape`` ``(n, n)``, ``table``
    (its ``n x n`` table, ``fill`` below the diagonal), ``value`` (``table[0, n - 1]``, None for
    ``n = 0``) and ``path`` (the tree of decisions from ``(0, n - 1)``, the rows of
    :meth:`gpudp.interval.IntervalResult.traceback_tree`); no ``last_row``, ``last_col`` or ``exit``.

    An instance refused at intake (its shape, data or symbols) or whose ``cell`` returned a decision
    that does not fit ``decision_bits`` has only ``error`` (and ``shape`` where known). One whose
    ``back`` failed (a step that does not go back along the sweep's order) keeps its values, with
    ``path`` None and the error.
    """

    index: int
    shape: tuple[int, int] | None = None
    value: object = None
    last_row: np.ndarray | None = None
    last_col: np.ndarray | None = None
    best_value: object = None
    best_cell: tuple[int, int] | None = None
    path: np.ndarray | None = None
    exit: tuple | None = None
    error: str | None = None
    table: np.ndarray | None = None

    @property
    def ok(self) -> bool:
        """True when the instance has no error."""
        return self.error is None
