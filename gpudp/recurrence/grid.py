"""The grid shape: :class:`GridRecurrence`, a 2-D grid of cells reading constant offsets, swept
by wavefronts the engine derives from the offsets (:mod:`gpudp.schedule`)."""

from __future__ import annotations

import numpy as np

from ..errors import ContractError, InputError
from .base import Recurrence


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
    :meth:`gpudp.grid.result.SweepResult.traceback` is called, not before. ``back`` should return one
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

    **Reads at an index computed from the data.** On a grid of one row read along the row (every
    offset ``(0, -d)``, ``d > 0``; or ``(0, d)``, swept from the end), or of one column read along
    the column, the engine sweeps the cells in order by one thread (a *line*,
    :func:`gpudp.grid.plan._line_plan`). Declare ``reads_line = True`` and ``cell`` then receives,
    after its dependencies, the line itself: ``cell(i, j, dep_0, ..., line, *data)``, ``line[q]``
    the value of cell ``q`` of the line (column ``q`` of the row, or row ``q`` of the column), for
    any ``q`` the cell computes from its data, as long as cell ``q`` comes before the cell in the
    sweep's order (``q < j`` for offsets ``(0, -d)``). Weighted interval scheduling reads
    ``line[p[j]]``, ``p`` from the data: the offsets stay the class's (``(0, -1)`` for
    ``OPT(j - 1)``), so every instance shares one compile, whatever its ``p``. A read of a cell not
    yet computed is undefined (``gpudp.sweep(rec, check=True)`` refuses it, naming the cell and the
    read). The cells run one after the other, at the speed of a plain loop on the CPU; on a GPU the
    line is one thread's loop (a line is sequential on every backend). Any other grid declaring
    ``reads_line`` is a :class:`ContractError` when the sweep is planned.
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

    #: True: ``cell(i, j, dep_0, ..., line, *data)`` also receives the line's values (a grid of one
    #: row or column swept in order), to read any earlier cell at an index computed from the data
    #: (``line[p[j]]``): see "Reads at an index computed from the data" above
    reads_line = False

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

    _INSTANCE_PARTS = ("value_dtype", "offsets")

    def _instance_part(self, name: str, own):
        """An instance's ``offsets`` checked as a class's are (:class:`gpudp.ScheduleError`)."""
        if name == "offsets":
            from ..schedule import check_offsets

            return check_offsets(own)
        return super()._instance_part(name, own)

    @classmethod
    def _validate_class(cls):
        super()._validate_class()
        from ..schedule import check_offsets

        check_offsets(cls.offsets)
        if not isinstance(cls.deps_tuple, bool | np.bool_):
            raise ContractError(f"{cls.__name__}.deps_tuple = {cls.deps_tuple!r}: must be True or False")
        if not isinstance(cls.reads_line, bool | np.bool_):
            raise ContractError(f"{cls.__name__}.reads_line = {cls.reads_line!r}: must be True or False")
        if cls.symbols:
            for meth in ("row_symbols", "col_symbols"):
                if getattr(cls, meth) is getattr(GridRecurrence, meth):
                    raise ContractError(f"{cls.__name__}.symbols is True: define {meth}(self) -> 1-D array")

    @classmethod
    def _n_deps(cls) -> int:
        return 1 if cls.deps_tuple else len(cls.offsets)

    @classmethod
    def _cell_form(cls) -> str:
        sym = (", line" if cls.reads_line else "") + (", ri, cj" if cls.symbols else "")
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
