"""The items of one instance for the sparse-state DP: integer data, the int64 limits, the exact
efficiency order, and :class:`Items`, what the searches of one instance share (the break solution,
the proven upper bound, the flip bounds and the states' relaxation)."""

from __future__ import annotations

import numpy as np

from gpudp.errors import InputError
from gpudp.jit import njit

from ..io import INT64_MAX, KnapsackInstance
from .bounds import cardinality_relaxation, flip_bounds, rounded_relaxation, state_gains
from .exact import exact_sum, uge
from .gpu import Gpu

__all__ = ["integer_data", "split_items", "check_limits", "efficiency_order", "Items"]


@njit(cache=True)
def _exact_order(ps, ws, idx):
    """Insertion pass over ``idx`` (nearly sorted by decreasing float ratio): afterwards it is sorted
    by decreasing p/w exactly; exact ties keep their order. Linear when the floats were right."""
    for i in range(1, len(idx)):
        k = idx[i]
        j = i
        while j > 0 and not uge(ps[idx[j - 1]], ws[k], ps[k], ws[idx[j - 1]]):
            idx[j] = idx[j - 1]
            j -= 1
        idx[j] = k


def integer_data(inst: KnapsackInstance):
    if not inst.integral:
        field = "profits" if inst.profits.dtype.kind == "f" else "weights"
        raise InputError(
            field,
            "the sparse-state DP needs integer profits and weights (exact arithmetic); for real-valued "
            "data use the branch-and-bound solver (--method bb)",
        )
    return inst.profits.astype(np.int64), inst.weights.astype(np.int64), int(inst.capacity)


def split_items(p, w, cap):
    """``(forced, free, x)``: the items always taken (weight 0, profit > 0), those a search decides
    (``0 < w ≤ cap``, ``p > 0``; the others are never taken), and a 0/1 vector with the forced ones."""
    forced = np.flatnonzero((w == 0) & (p > 0))
    free = np.flatnonzero((w > 0) & (w <= cap) & (p > 0))
    x = np.zeros(len(p), np.int8)
    x[forced] = 1
    return forced, free, x


def check_limits(ps, ws, cap) -> bool:
    """Refuse totals past int64 (Python integers); True when every product of the search fits int64
    (see the module doc)."""
    total_p = exact_sum(ps)
    total_w = exact_sum(ws)
    if total_p > INT64_MAX:
        raise InputError(
            "profits",
            f"the profits of the items that can be packed sum to {total_p}, past the 2^63 - 1 that the "
            "sparse DP's int64 state values hold",
        )
    if total_w > INT64_MAX:
        raise InputError(
            "weights",
            f"the weights of the items that can be packed sum to {total_w}, past the 2^63 - 1 that the "
            "sparse DP's int64 state weights hold",
        )
    return max(cap, total_w, total_p) * max(int(ps.max()), int(ws.max())) <= INT64_MAX


def efficiency_order(ps, ws) -> np.ndarray:
    idx = np.argsort(-(ps / ws.astype(np.float64)), kind="stable").astype(np.int64)
    _exact_order(ps, ws, idx)
    return idx


class Items:
    """The items of one instance in efficiency order and what its searches share: the break
    solution, the profits' gcd, the proven upper bound ``ubound`` (Dantzig's, then the cardinality
    relaxation's and the failed probes'), the items' flip bounds and the states' relaxation."""

    def __init__(self, ws, ps, cap, b, small, gpu: Gpu):
        self.ws, self.ps, self.cap, self.b, self.small, self.gpu = ws, ps, cap, b, small, gpu
        self.wsb = int(ws[:b].sum())
        self.psb = int(ps[:b].sum())
        self.gp = int(np.gcd.reduce(ps))
        # Dantzig's bound, exactly, rounded down to a multiple of the profits' gcd
        self.ubound = self.round_down(self.psb + (cap - self.wsb) * int(ps[b]) // int(ws[b]))
        self.bound_info = {"dantzig": self.ubound}
        self.pcum = np.cumsum(np.sort(ps)[::-1])
        # per item, a bound on every solution that flips it (from the cardinality relaxations);
        # the states' relaxation (none yet: lag[0] = 0) and each item's gain in it
        self.flipub = np.full(len(ws), INT64_MAX, np.int64)
        self.lag = np.zeros(4, np.int64)
        self.gain = np.zeros(len(ws), np.int64)
        self._kmin = None
        self._used = None
        self._relaxed = None

    def round_down(self, v: int) -> int:
        """The largest multiple of the profits' gcd at most v (every value is one)."""
        return v - v % self.gp

    def bound(self, z: int):
        """Tighten ``ubound`` by the cardinality relaxation at incumbent z (when its ``k_min`` has
        changed since the last time)."""
        kmin = int(np.searchsorted(self.pcum, z + self.gp))
        if kmin == self._kmin:
            return
        self._kmin = kmin
        bound, info, self._used = cardinality_relaxation(self.ps, self.ws, self.cap, z + self.gp - 1)
        self.bound_info.update(info)
        if bound is not None:
            self.ubound = min(self.ubound, self.round_down(bound))

    def relax(self) -> bool:
        """The flip bounds and the states' relaxation of the last cardinality relaxation (once for
        each); True when they changed."""
        if self._used is None or self._used is self._relaxed:
            return False
        self._relaxed = self._used
        ps, ws, cap = self.ps, self.ws, self.cap
        lam, k, u = self._used
        rounded = rounded_relaxation(ps, ws, cap, lam, k, u)
        if rounded is None:
            return False
        lag, r = rounded
        np.minimum(self.flipub, flip_bounds(lag, r, self.b), out=self.flipub)
        self.lag, self.gain = lag, state_gains(r, self.b)
        self.bound_info["state_scale"] = int(lag[0])
        return True
