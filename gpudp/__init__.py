"""gpudp: a generic GPU dynamic-programming framework.

Declare a recurrence by subclassing :class:`GridRecurrence`, :class:`LayeredRecurrence`,
:class:`IntervalRecurrence` (interval DPs, swept by length: :mod:`gpudp.interval`) or
:class:`Grid3Recurrence` (3-D grids swept by planes: :mod:`gpudp.grid3`); the
engine derives the wavefront schedule, compiles the cell function for the CPU (numba) and the GPU
(numba-cuda), sweeps it keeping only the dependency window in memory, evicts the decisions to a host
(or disk) store and walks them back for the solution. Ready-made solvers live in
:mod:`gpudp.problems`.
"""

from ._version import __version__
from .errors import (
    BackendError,
    CheckError,
    ContractError,
    GpudpError,
    InputError,
    ScheduleError,
    TimeLimitReached,
)
from .solution import BatchResult, Solution, Stats

__all__ = [
    "BackendError",
    "BatchResult",
    "CheckError",
    "ContractError",
    "GpudpError",
    "Grid3Recurrence",
    "GridRecurrence",
    "InputError",
    "IntervalRecurrence",
    "LayeredRecurrence",
    "Recurrence",
    "ScheduleError",
    "Solution",
    "Stats",
    "TimeLimitReached",
    "__version__",
    "sweep",
    "sweep_many",
]


def __getattr__(name):
    # The engine pulls in numba; import it on first use so `import gpudp` stays light.
    if name in ("GridRecurrence", "Grid3Recurrence", "IntervalRecurrence", "LayeredRecurrence", "Recurrence"):
        from . import recurrence

        return getattr(recurrence, name)
    if name in ("sweep",):
        from . import engine

        return getattr(engine, name)
    if name in ("sweep_many",):
        from . import many

        return getattr(many, name)
    raise AttributeError(name)


def __dir__():
    # the names loaded on first use (__getattr__) are listed too
    return sorted(set(globals()) | set(__all__))
