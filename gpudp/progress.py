"""What a long run tells its user: the progress bar that sweeps, tracebacks and batches share, the
time limit they check between chunks of work (:class:`Deadline`), and the predicted time a solver
announces before a run of more than a minute (:func:`announce`)."""

from __future__ import annotations

import sys
import time

from .errors import TimeLimitReached

#: a run predicted longer than this many seconds says so on stderr before it starts (:func:`announce`)
ANNOUNCE_SECONDS = 60.0


class Deadline:
    """The end of a time limit of ``limit`` seconds counted from ``start`` (``time.perf_counter()``,
    default now). :meth:`check` raises :class:`~gpudp.errors.TimeLimitReached` once it has passed;
    solvers call it between chunks of their work, so a run stops within a chunk of the limit."""

    def __init__(self, limit: float, start: float | None = None):
        self.limit = float(limit)
        self.start = time.perf_counter() if start is None else start
        self.end = self.start + self.limit

    @classmethod
    def of(cls, limit, start: float | None = None) -> Deadline | None:
        """A deadline for ``limit`` seconds (None: no limit, None returned)."""
        return None if limit is None else cls(limit, start)

    def passed(self) -> bool:
        return time.perf_counter() >= self.end

    def left(self) -> float:
        """Seconds left (0 once passed)."""
        return max(self.end - time.perf_counter(), 0.0)

    def check(self, done: int = 0, total: int = 0, unit: str = "cell") -> None:
        """Raise :class:`TimeLimitReached` (with how far the run got) once the limit has passed."""
        if self.passed():
            raise TimeLimitReached(self.limit, done, total, unit)


class Meter:
    """A progress bar (or none) and a deadline, ticked between chunks: :meth:`update` moves the bar
    by ``n`` units (a fraction too) and then checks the deadline. Sweeps hand it to the backends as
    their ``bar``."""

    def __init__(self, bar, deadline: Deadline | None, total: int, unit: str):
        self.bar, self.deadline, self.total, self.unit = bar, deadline, int(total), unit
        self.done = 0

    def update(self, n: float) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
        if self.deadline is not None and self.done < self.total:  # finished work is never thrown away
            self.deadline.check(self.done, self.total, self.unit)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


#: a run predicted shorter than this many seconds builds no bar (tqdm shows one after a second
#: anyway; building it, ~40 us, was a large part of a small sweep's fixed cost)
BAR_SECONDS = 0.5


def progress_bar(total: int, progress, unit: str = "cell", deadline: Deadline | None = None, seconds=None):
    """A bar on stderr over ``total`` units, shown after a second (``progress`` None: only on a
    terminal; False: none), with ``deadline`` checked at each update (:class:`Meter`); None when
    there is neither a bar to show nor a deadline. Sweeps and batches share it.

    ``seconds``: the run's predicted length, a generous figure (None: not predicted); below
    :data:`BAR_SECONDS` no bar is built. With ``progress`` None and stderr no terminal (outside a
    notebook) none is built either: tqdm would build one disabled."""
    bar = None
    if progress is not False and total and not (seconds is not None and seconds < BAR_SECONDS):
        from tqdm.auto import tqdm

        if progress is not None or _notebook(tqdm) or _terminal(sys.stderr):
            bar = tqdm(
                total=total,
                unit=unit,
                unit_scale=True,
                delay=1.0,
                disable=None if progress is None else False,
                desc="gpudp",
                leave=False,
            )
    if bar is None and deadline is None:
        return None
    return Meter(bar, deadline, total, unit)


def _notebook(tqdm) -> bool:
    """Whether ``tqdm`` (``tqdm.auto``'s) is the notebook's, which shows a bar with ``disable=None``
    whatever stderr is."""
    return any(k.__module__ == "tqdm.notebook" for k in tqdm.__mro__)


def _terminal(file) -> bool:
    """Whether ``file`` is a terminal, as tqdm asks it with ``disable=None`` (a file without
    ``isatty`` counts as one)."""
    isatty = getattr(file, "isatty", None)
    return isatty is None or bool(isatty())


def format_seconds(s: float) -> str:
    """Seconds in the unit that reads best: ``45 s``, ``12 min``, ``3.5 h``, ``4.2 days``."""
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    if s < 2 * 86400:
        return f"{s / 3600:.1f} h"
    if s < 3 * 365.25 * 86400:
        return f"{s / 86400:.1f} days"
    return f"{s / (365.25 * 86400):.3g} years"


def announce(what: str, seconds: float, where: str, time_limit: float | None = None, progress=None) -> bool:
    """Say on stderr, before a run starts, how long it is predicted to take, when that is over
    :data:`ANNOUNCE_SECONDS`: one line ``gpudp: <what>, predicted about <time> on <where>; ...``.
    ``what`` is the solver's work in words (``lcs 1e+06 x 1e+06 = 1e+12 cells``), ``where`` the
    backend (``cpu (2 threads)``). Nothing is printed with ``progress=False`` (the caller wants
    silence). Returns whether the line was printed."""
    if progress is False or not seconds > ANNOUNCE_SECONDS:
        return False
    if time_limit is None:
        tail = "--time-limit (time_limit=) stops it earlier"
    elif time_limit < seconds:
        tail = f"the time limit stops it after {format_seconds(time_limit)}"
    else:
        tail = f"within the time limit of {format_seconds(time_limit)}"
    print(f"gpudp: {what}, predicted about {format_seconds(seconds)} on {where}; {tail}", file=sys.stderr)
    sys.stderr.flush()
    return True
