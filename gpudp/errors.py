"""The exceptions gpudp raises on purpose."""

import contextlib


class GpudpError(Exception):
    """Base class of every error gpudp raises on purpose."""


class InputError(GpudpError, ValueError):
    """The instance is not valid for the solver; raised before any kernel runs.

    ``field`` names the offending input (``"weights"``, ``"capacity"``, ``"a"``...).
    """

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


class ContractError(GpudpError, TypeError, ValueError):
    """A recurrence breaks the plug-in contract (:mod:`gpudp.recurrence`): a declaration the engine
    cannot use, or a cell that returns what it did not declare (a decision wider than
    ``decision_bits``). It is a ``TypeError`` and a ``ValueError`` too, for code that caught those."""


class ScheduleError(ContractError):
    """A recurrence's declared dependency window (``offsets``) admits no valid evaluation order."""


class BackendError(GpudpError, RuntimeError):
    """The requested backend cannot run here (no GPU, no CUDA driver, ...)."""


class TimeLimitReached(GpudpError):
    """A run passed its ``time_limit`` and stopped between two chunks of its work. ``limit`` is the
    limit in seconds, ``done`` and ``total`` the work finished and planned (in ``unit``s: cells of a
    sweep, or the solver's own steps). Solvers catch it and return the best bounds they have
    proven, flagged not optimal (``Solution.optimal`` False, ``details["stopped"] == "time"``); a
    solver that handed its sweep what was left of the caller's limit sets ``limit`` back to it."""

    def __init__(self, limit: float, done: int = 0, total: int = 0, unit: str = "cell"):
        self.limit, self.done, self.total, self.unit = limit, int(done), int(total), unit
        super().__init__(limit, done, total, unit)

    def __str__(self) -> str:
        part = f" after {self.done:,} of {self.total:,} {self.unit}s" if self.total else ""
        return f"time limit of {self.limit:g} s reached{part}"


class CheckError(GpudpError, AssertionError):
    """A check gpudp makes on itself failed: a solution against its certificate (the instance), or
    an internal invariant. Either is a bug in gpudp, never an answer; please report it."""


def worker_lost(name: str) -> ContractError:
    """The error for a parallel region of class ``name``'s compiled sweep that a worker thread left
    short (numba lost what it raised) and whose part, run again on one thread, raised nothing (a
    cell that raises only sometimes): :func:`gpudp.backends.threads.rerun_lost`."""
    return ContractError(
        f"{name}'s compiled sweep stopped: a worker thread of a parallel region failed (numba does "
        "not hand on what it raised) and the part run again on one thread raised nothing; "
        "sweep(rec, check=True) runs the cell, boundary and back in plain Python"
    )


def decision_too_wide(name: str, decision: int, axes: str, at: tuple, bits: int, count: int) -> ContractError:
    """The error for a cell that returned a decision outside ``0 .. 2**bits - 1`` (the kernels flag
    the first such cell and how many did so; a decision is never truncated): ``name`` the
    recurrence's class, ``axes`` the cell's coordinates' names (``"i, j"``), ``at`` their values."""
    many = "1 cell did so" if count == 1 else f"{count} cells did so, this one among them"
    return ContractError(
        f"{name}.cell returned the decision {decision} at cell ({axes}) = ({', '.join(map(str, at))}), "
        f"which does not fit decision_bits = {bits} (0 .. {(1 << bits) - 1}; {many}). Declare more "
        "decision_bits: decisions are never truncated"
    )


def decision_overflow(name: str, flag, axes: str, bits: int) -> ContractError | None:
    """The error a kernel's decision-overflow flag stands for, None when it is clear: ``flag`` is
    ``[count, decision, *cell]`` (how many cells returned a decision outside ``0 .. 2**bits - 1``,
    the first one's decision and coordinates, named by ``axes``), as every shape's kernels write it
    (:attr:`gpudp.codegen.Spec.flags`); see :func:`decision_too_wide`."""
    if not flag[0]:
        return None
    count, decision, *at = (int(x) for x in flag)
    return decision_too_wide(name, decision, axes, tuple(at), bits, count)


@contextlib.contextmanager
def kernel_raises(cls):
    """Around a call of ``cls``'s compiled sweep whose loops run outside numba's parallel regions
    too (a serial loop hands on what the cell raised as it is, a parallel region as
    :func:`gpudp.checks.typing_errors`'s ``SystemError``): either becomes the same :class:`ContractError`
    (:func:`raised_in_sweep`), the cell's exception chained; a :class:`ContractError` passes as it
    is (gpudp's own: :func:`gpudp.backends.threads.rerun_lost`'s). Only for a call of a kernel
    already compiled: its typing errors are :func:`gpudp.checks.typing_errors`'s."""
    try:
        yield
    except ContractError:
        raise  # gpudp's own word (a worker thread failed: gpudp.errors.worker_lost)
    except Exception as e:
        cause = e.__cause__ if raised_in_kernel(e) else e  # a parallel region's, on this thread
        raise raised_in_sweep(cls, cause) from cause


def raised_in_sweep(cls, cause: BaseException) -> ContractError:
    """The :class:`ContractError` for ``cause``, an exception that ``cls``'s compiled cell,
    boundary or back raised as the sweep ran (the caller chains it)."""
    return ContractError(
        f"{cls.__name__}'s compiled sweep stopped: its cell, boundary or back raised "
        f"{cause!r} (compiled, without saying at which cell); sweep(rec, check=True) runs "
        "them in plain Python and names the cell"
    )


def raised_in_kernel(e: Exception) -> bool:
    """Whether ``e`` is numba's word for an exception raised inside a compiled parallel function
    (the exception itself is its ``__cause__``)."""
    return type(e) is SystemError and e.__cause__ is not None and "with an exception set" in str(e)
