"""The result every solver returns: the optimum, the solution itself, a check and statistics; and
the result of a batch (:class:`BatchResult`), with the pieces a distributed batch's chunks travel
and are joined by (:func:`ship`, :meth:`BatchResult.concat`)."""

from __future__ import annotations

import itertools
import json
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .errors import CheckError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["COPY_PIECE", "BatchResult", "NoSolutions", "Solution", "Stats", "ship", "warn_unproven"]


@dataclass
class Stats:
    """What a solve cost. ``cells`` counts DP cells (or nodes / items for non-DP solvers)."""

    backend: str = ""
    device: str = ""
    cells: int = 0
    seconds: float = 0.0
    kernel_seconds: float = 0.0
    bytes_evicted: int = 0
    spilled_to_disk: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def cells_per_second(self) -> float:
        return self.cells / self.seconds if self.seconds > 0 else 0.0

    @property
    def gcups(self) -> float:
        return self.cells_per_second / 1e9

    def as_dict(self) -> dict[str, Any]:
        d = {
            "backend": self.backend,
            "device": self.device,
            "cells": int(self.cells),
            "seconds": self.seconds,
            "kernel_seconds": self.kernel_seconds,
            "cells_per_second": self.cells_per_second,
            "gcups": self.gcups,
            "bytes_evicted": int(self.bytes_evicted),
            "spilled_to_disk": self.spilled_to_disk,
        }
        d.update(self.extra)
        return d


@dataclass
class Solution:
    """An optimum with the solution that attains it.

    ``value`` is the optimum (LCS length, best profit, tour length ...), ``solution`` the object that
    attains it (the subsequence, the 0/1 vector, the tour ...). ``check()`` recomputes the value from
    the instance and raises :class:`gpudp.CheckError` if they disagree; every solver calls it before
    returning, so a returned Solution has been checked once already (``checked`` is True).
    ``checker(solution)`` is what ``check()`` runs: it recomputes from the instance and returns None,
    or the fault in words (a solver gives it; :meth:`check_with` replaces it).
    """

    problem: str
    value: Any
    solution: Any
    stats: Stats = field(default_factory=Stats)
    optimal: bool = True
    details: dict[str, Any] = field(default_factory=dict)
    checker: Callable[[Solution], str | None] | None = field(default=None, repr=False)
    checked: bool = False

    def check(self) -> bool:
        """Verify the solution against the instance; True, or raise CheckError naming the fault."""
        if self.checker is None:
            raise CheckError(f"{self.problem}: this solution carries no checker")
        fault = self.checker(self)
        if fault:
            raise CheckError(f"{self.problem}: {fault}")
        self.checked = True
        return True

    def check_with(self, checker: Callable[[Solution], str | None]) -> bool:
        """Check against ``checker`` from now on (one that knows more of the instance than the
        solver that made this solution, e.g. the capacity the user gave before it was reduced), and
        check now: :meth:`check`."""
        self.checker = checker
        return self.check()

    def as_dict(self) -> dict[str, Any]:
        sol = self.solution
        if hasattr(sol, "tolist"):
            sol = sol.tolist()
        value = self.value.item() if hasattr(self.value, "item") else self.value
        d = {"problem": self.problem, "value": value, "solution": sol, "optimal": self.optimal}
        d.update(self.details)
        d["stats"] = self.stats.as_dict()
        return d

    def to_json(self, **kw) -> str:
        """:meth:`as_dict` as JSON text (``kw``: :func:`json.dumps`'s). JSON has no infinity or NaN:
        a non-finite number (an unproven bound, a tour over a missing edge) is written as the string
        ``"inf"``, ``"-inf"`` or ``"nan"``, never as ``Infinity``, which JSON readers refuse. JSON
        has no bytes either: a ``bytes`` value (the LCS of two ``bytes``) is the list of its
        integers 0..255, the symbols as the solvers compare them. Integers are exact at any size."""
        return json.dumps(_finite(self.as_dict()), default=_json_default, allow_nan=False, **kw)


def _finite(o):
    """``o`` (dicts, lists, tuples, numbers, numpy values) with its non-finite floats as strings."""
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_finite(v) for v in o]
    if isinstance(o, bytes | bytearray):  # numpy's bytes_ too
        return list(o)
    if hasattr(o, "tolist") and not isinstance(o, str):  # numpy arrays and scalars
        v = o.tolist()
        return _finite(float(v) if type(v) is type(o) else v)  # a longdouble's tolist() is itself
    if isinstance(o, float) and not math.isfinite(o):
        return "nan" if math.isnan(o) else ("inf" if o > 0 else "-inf")
    return o


class NoSolutions(Sequence):
    """``BatchResult.solutions`` of a batch run without tracebacks: None for each of ``n`` pairs, in
    constant space (a list of a million Nones takes tens of milliseconds to send from a worker and
    to join with its neighbours, a fixed cost of every chunk of a distributed batch)."""

    __slots__ = ("n",)

    def __init__(self, n: int):
        self.n = int(n)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, k):
        if isinstance(k, slice):
            return NoSolutions(len(range(*k.indices(self.n))))
        k = operator.index(k)
        if not -self.n <= k < self.n:
            raise IndexError(f"pair {k} of a batch of {self.n}")
        return None

    def __iter__(self):
        return itertools.repeat(None, self.n)

    def __eq__(self, other) -> bool:
        if isinstance(other, NoSolutions):
            return self.n == other.n
        return isinstance(other, Sequence) and len(other) == self.n and all(x is None for x in other)

    __hash__ = None

    def __repr__(self) -> str:
        return f"NoSolutions({self.n})"


@dataclass
class BatchResult:
    """The values of a batch of instances, in input order: what every plug-in's ``solve_many``
    returns (sequence pairs, knapsacks, tours) and what :func:`gpudp.distributed.map_chunks`'
    chunks are joined into.

    ``values[p]`` is instance ``p``'s value (an LCS length, say), or -1 where it could not be
    solved (``errors[p]`` says why); ``solutions[p]`` is its checked :class:`gpudp.Solution` when
    the batch ran with ``traceback=True`` (else None); ``verified`` lists the instances whose
    witness was checked: with ``traceback=True`` every one solved, else the few re-solved with their
    witness and checked against ``values``. ``subsequences`` (LCS, ``traceback=True``): the batch's
    checked subsequences and their positions as flat arrays
    (:class:`gpudp.problems.lcs.subsequences.Subsequences`: any object with ``solutions()`` and a
    ``concat(parts, bounds)`` class method); ``solutions`` then makes each :class:`gpudp.Solution`
    when it is first read.
    """

    values: np.ndarray  # numpy is imported where it is used: `import gpudp` stays light
    errors: dict[int, str] = field(default_factory=dict)
    solutions: Sequence = field(default_factory=list)
    verified: list[int] = field(default_factory=list)
    stats: Stats = field(default_factory=Stats)
    subsequences: Any = None

    @classmethod
    def concat(cls, parts: list, bounds: list[tuple[int, int]], info: dict) -> BatchResult:
        """The results of a batch's chunks (items ``lo .. hi - 1`` each, :func:`gpudp.distributed.map_chunks`;
        each a :class:`BatchResult` or as :func:`ship` sent it) as one, in input order;
        ``stats.extra`` says how many workers and chunks ran it, and where the time went: the
        map's figures and ``join_seconds``, this join's."""
        import time

        t0 = time.perf_counter()
        shipped = [p if isinstance(p, tuple) else (p.values, 0, p) for p in parts]
        parts = [r for *_, r in shipped]
        values = _joined([(v, base) for v, base, _ in shipped])  # one pass, no int64 copy of each first
        errors = {lo + k: e for (lo, _), p in zip(bounds, parts, strict=True) for k, e in p.errors.items()}
        verified = [lo + k for (lo, _), p in zip(bounds, parts, strict=True) for k in p.verified]
        first = parts[0].stats if parts else Stats()
        stats = Stats(
            backend=first.backend,
            device=first.device,
            cells=sum(p.stats.cells for p in parts),
            kernel_seconds=sum(p.stats.kernel_seconds for p in parts),
        )
        stats.extra.update({k: v for k, v in first.extra.items() if k in ("method", "backend_choice")})
        stats.extra.update(items=len(values), dask_workers=info["workers"], dask_chunks=info["chunks"])
        where = ("chunk_seconds", "first_chunk_wait", "last_result_wait")  # map_chunks' figures
        stats.extra.update({k: info[k] for k in where if k in info})
        stats.extra["join_seconds"] = time.perf_counter() - t0
        stats.seconds = info["seconds"] + stats.extra["join_seconds"]
        if parts and all(p.subsequences is not None for p in parts):
            subs = type(parts[0].subsequences).concat([p.subsequences for p in parts], bounds)
            return cls(values, errors, subs.solutions(), verified, stats, subs)
        if all(isinstance(p.solutions, NoSolutions) for p in parts):
            return cls(values, errors, NoSolutions(len(values)), verified, stats)
        return cls(values, errors, [s for p in parts for s in p.solutions], verified, stats)


#: items a thread widens at once when :meth:`BatchResult.concat` joins a batch's values
COPY_PIECE = 1 << 20


def _joined(parts: list[tuple[np.ndarray, int]]) -> np.ndarray:
    """The ``parts``' values (each ``(v, base)``: ``v + base``) one after another as int64,
    widened where they land, in pieces of :data:`COPY_PIECE` items on up to 16 threads (numpy lets
    go of the GIL while it copies). The values are fresh pages: faulting in and widening 16,000,000
    took one thread about 0.03 s on the 4-GPU host, 2026-11-26, and these threads 0.010-0.011 s for
    one chunk or four; a numba parallel region a chunk, tried, took 0.012 s for one chunk but 0.045
    s for four (each region wakes all of the client's threads while the workers' hold the cores)."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    out = np.empty(sum(len(v) for v, _ in parts), np.int64)
    pieces, at = [], 0
    for v, base in parts:
        pieces += [(at + lo, v[lo : lo + COPY_PIECE], base) for lo in range(0, len(v), COPY_PIECE)]
        at += len(v)

    def put(piece) -> None:
        at, v, base = piece
        if base:
            np.add(v, np.int64(base), out=out[at : at + len(v)])
        else:
            out[at : at + len(v)] = v

    if len(pieces) > 1:
        with ThreadPoolExecutor(min(16, len(pieces), os.cpu_count() or 1)) as pool:
            list(pool.map(put, pieces))  # list: an exception in a piece is raised here
    elif pieces:
        put(pieces[0])
    return out


def ship(result: BatchResult) -> tuple[np.ndarray, int, BatchResult]:
    """A chunk's result made ready for the way back from its Dask worker: ``(v, base, result
    without its values)``, the values being ``v + base``, ``v`` in the smallest unsigned type that
    holds their range (LCS lengths of a batch of like pairs span some tens or hundreds: 1 or 2
    bytes a pair, not 8; a range of 2^32 or more goes as it is), for :meth:`BatchResult.concat` to
    widen straight into the batch's array (one pass over the batch on the client). A tuple, not an
    object holding the array: Dask sends a tuple's array as an array (a 32 MB one 0.06 s sooner,
    from a local worker on the development machine). The results' bytes bound a distributed
    batch's last wait: about 1 ms a MB on the 4-GPU host, 2026-11-26."""
    import numpy as np

    v, base = result.values, 0
    if v.dtype == np.int64 and v.size:
        lo, hi = int(v.min()), int(v.max())
        if hi - lo < 1 << 32:
            out = np.empty(v.shape, np.min_scalar_type(hi - lo))
            v, base = np.subtract(v, lo, out=out, casting="unsafe"), lo
    return v, base, replace(result, values=np.zeros(0, np.int64))


def warn_unproven(sol: Solution) -> None:
    """One line on stderr for a solution that is not proven optimal (a time limit stopped it), as
    the command line prints it before the result: ``gpudp: warning: not proven optimal: ...``."""
    if not sol.optimal:
        import sys

        print(f"gpudp: warning: not proven optimal: {sol.details.get('message', '')}", file=sys.stderr)


def _json_default(o):
    if hasattr(o, "tolist"):  # numpy arrays and scalars
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
