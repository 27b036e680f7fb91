"""The result every solver returns: the optimum, the solution itself, a check and statistics."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import CheckError


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
    """

    problem: str
    value: Any
    solution: Any
    stats: Stats = field(default_factory=Stats)
    optimal: bool = True
    details: dict[str, Any] = field(default_factory=dict)
    _checker: Callable[[Solution], str | None] | None = field(default=None, repr=False)
    checked: bool = False

    def check(self) -> bool:
        """Verify the solution against the instance; True, or raise CheckError naming the fault."""
        if self._checker is None:
            raise CheckError(f"{self.problem}: this solution carries no checker")
        fault = self._checker(self)
        if fault:
            raise CheckError(f"{self.problem}: {fault}")
        self.checked = True
        return True

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
        return json.dumps(self.as_dict(), default=_json_default, **kw)


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
