"""0/1 knapsack by dense dynamic programming on the wavefront engine (Boyer, El Baz & Elkihel).

``f_k(c) = f_{k-1}(c)`` for ``c < w_k``, else ``max(f_{k-1}(c), f_{k-1}(c - w_k) + p_k)``: one layer
per item, ``C + 1`` independent cells per layer, one decision bit per cell (did item ``k`` improve
``f(c)``?). A :class:`gpudp.LayeredRecurrence` with window 1, so the engine keeps two rows.

What makes it fast and small, all through the engine's generic contract:

- items sorted by decreasing ``p / w``; items heavier than ``C`` (and of negative profit) dropped,
  items of weight 0 and positive profit always taken;
- Toth's trimming as the lower end of the *active range*: states ``c < C - (weight of the items
  still to come)`` cannot lead to ``f_n(C)``, so layer ``k`` computes ``c >= C - remaining_k``;
- the upper trim: ``f_k(c)`` is constant for ``c >= S_k`` (the weight of items ``0..k``), so layer
  ``k`` computes ``c <= min(C, S_k)``; the cell reads ``f_{k-1}(min(c, S_{k-1}))`` and ``back``
  clamps in the same way;
- the ``"bands"`` decision codec (the sweep's ``codec`` option): with items in this order the
  decision words are 0 on the left and all ones on the right of a layer, so only the band between is
  stored (found on the GPU);
- the reach (the sweep's ``reach`` option, the weights): ``f_k(c)`` reads ``f_{k-1}`` only at
  ``c - w_k .. c``, so on CUDA the engine runs about 25 items per pass in shared memory (temporal
  blocking);
- the value type: int32 when the profits' sum fits, int64 when it fits that, float64 for real
  profits (one generated subclass per type, cached); integer profits whose sum passes int64 are
  refused (:class:`gpudp.InputError`), never rounded through float64.

The pre-check (:func:`check`, :func:`estimate_memory`) refuses, before anything large is allocated,
an instance whose rows do not fit the memory this process may use (:func:`gpudp.memory.available_memory`:
cgroup and ``ulimit`` included) or the device's.

The 0/1 vector is rebuilt by walking the stored decisions back from ``f_n(C)``.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

from gpudp import backends
from gpudp.backends import choose as choose_backend
from gpudp.backends import predicted_seconds as backend_seconds
from gpudp.backends import where as backend_words
from gpudp.engine import sweep
from gpudp.errors import CheckError, InputError, TimeLimitReached
from gpudp.footprint import layered_memory
from gpudp.grid import device_memory
from gpudp.inputs import parse_time_limit
from gpudp.progress import announce
from gpudp.recurrence import LayeredRecurrence
from gpudp.solution import Solution

from .io import KnapsackInstance, dantzig_bound, solution_checker

__all__ = [
    "solve",
    "solve_instance",
    "solve_prepared",
    "check",
    "Prepared",
    "estimate_memory",
    "predicted_seconds",
    "KnapsackDP",
]

I32_MAX = 2**31 - 1
I64_MAX = 2**63 - 1
#: the kernel family whose rate predicts a solve, single or batch (gpudp.backends.rates: measured
#: here, else assumed: 1e11 cells/s on the GPU, docs/knapsack_dp.md, and half the unit cell rate
#: on the CPU, docs/benchmarks.md, "Start-up")
FAMILY = "knapsack_dp"


def predicted_seconds(cells: int, backend: str) -> float:
    """Seconds the dense DP is predicted to take for ``cells`` cells on ``backend``: at the
    ``knapsack_dp`` family's rate (measured on this machine where it was, else assumed), plus the
    GPU's start-up (:func:`gpudp.backends.predicted_seconds`)."""
    if cells == 0:
        return 0.0
    return backend_seconds(cells, backend, FAMILY)


class KnapsackDP(LayeredRecurrence):
    """Layer ``t`` = item ``t`` (in efficiency order), cell ``c`` = capacity ``c`` in ``0..C``."""

    window = 1
    decision_bits = 1

    def __init__(self, weights: np.ndarray, profits: np.ndarray, capacity: int, value_dtype=None):
        if value_dtype is not None:  # the instance's own cell type (the engine compiles each once)
            self.value_dtype = np.dtype(value_dtype).type
        self.w = np.ascontiguousarray(weights, dtype=np.int64)
        self.p = np.ascontiguousarray(profits, dtype=self.value_dtype)
        self.cap = int(capacity)
        self.S = np.cumsum(self.w) if len(self.w) else np.zeros(0, np.int64)

    def num_layers(self):
        return len(self.w)

    def layer_size(self, t):
        return self.cap + 1

    def active_range(self):
        remaining = (self.S[-1] - self.S) if len(self.S) else self.S
        lo = np.maximum(self.cap - remaining, 0)
        hi = np.minimum(self.S, self.cap) + 1
        return lo, hi

    def data(self):
        return (self.w, self.p, self.S)

    @staticmethod
    def cell(t, c, prev, w, p, S):
        wt = w[t]
        keep = prev[min(c, S[t] - wt)]  # f_{t-1} is constant above S_{t-1} = S[t] - w[t]
        if c < wt:
            return keep, 0
        take = prev[c - wt] + p[t]
        if take > keep:
            return take, 1
        return keep, 0

    @staticmethod
    def back(t, c, d, w, p, S):
        c2 = c - d * w[t]
        if t > 0:
            c2 = min(c2, S[t - 1])
        return t - 1, c2


def value_dtype(profits: np.ndarray) -> np.dtype:
    """int32 when the sum of the (non-negative, integral) profits fits, int64 when it fits that, float64
    for real profits. Integer profits whose sum passes int64 raise :class:`gpudp.InputError`: float64
    would round them (the branch-and-bound solver has the same limit)."""
    if profits.dtype.kind in "iu" or (profits.size and np.all(profits == np.round(profits))):
        total = sum(int(v) for v in profits) if profits.dtype.kind in "iu" else math.fsum(profits.tolist())
        if total <= I32_MAX:
            return np.dtype(np.int32)
        if total <= I64_MAX:
            return np.dtype(np.int64)
        if profits.dtype.kind in "iu":
            raise InputError(
                "profits",
                f"the profits of the items that can be packed sum to {total}, past the 2^63 - 1 that the "
                "DP's int64 values hold (float64 would round them)",
            )
    return np.dtype(np.float64)


def _integral(values, field: str, hint: str) -> np.ndarray:
    a = np.asarray(values)
    if a.ndim != 1:
        raise InputError(field, "must be a one-dimensional list of numbers")
    if a.dtype.kind == "f":
        if not np.all(np.isfinite(a)) or not np.all(a == np.round(a)):
            raise InputError(field, f"the DP solver needs integer {field}; {hint}")
        if a.size and np.abs(a).max() >= 2.0**63:
            raise InputError(field, f"values beyond the int64 range (2^63 - 1); {hint}")
        a = a.astype(np.int64)
    elif a.dtype.kind == "u" and a.size and int(a.max()) > I64_MAX:
        raise InputError(field, f"values beyond the int64 range (2^63 - 1); {hint}")
    elif a.dtype.kind not in "iub" and a.size:
        raise InputError(field, f"not integers ({a.dtype}); {hint}")
    a = a.astype(np.int64)
    if a.size and a.min() < 0:
        raise InputError(field, f"{field} must be >= 0, got {a.min()} (item {int(a.argmin())})")
    return a


#: host bytes per item the solve takes besides the rows: the recurrence's arrays, the plan's active
#: ranges and word offsets, the traceback's path (a generous bound)
HOST_BYTES_PER_ITEM = 256


def estimate_memory(n: int, capacity: int, dtype, backend: str) -> dict:
    """Bytes the solve will need before it starts, as the engine plans a layered sweep of ``n``
    layers of ``C + 1`` cells with 1-bit decisions kept as bands (:func:`gpudp.footprint.layered_memory`):
    on the device two rows of values plus the slabs of decision words (two compute slabs, two
    compacted band buffers), on the host the rows (cpu), the staging or band slabs, the copy of the
    last layer, and per-item arrays. The bands can only be bounded (every computed word,
    ``n * (C + 1) / 8`` bytes at most): the store grows as they arrive and spills to disk past its
    budget, which :func:`solve` sets to at most half of the memory left over (see ``host_bytes``)."""
    need = layered_memory([capacity + 1] * n, 1, np.dtype(dtype).itemsize, 1, backend, "bands", 1 << 62)
    return {
        "rows_bytes": need.values,
        "slab_bytes": need.slab_words * 4,
        "bands_bound_bytes": need.decisions,
        "device_bytes": need.device,
        "host_bytes": need.host + n * HOST_BYTES_PER_ITEM,
    }


#: what a refusal of the DP for its memory suggests (auto tries them in turn: knapsack.choose_method)
OTHER_METHODS = (
    "use --method sparse or --method reach (integer data: their work follows the items, not the "
    "capacity), --method bb, or --method auto, which tries them"
)


def _check_memory(est: dict, backend: str) -> int:
    """Refuse before anything is allocated when the device or this process (cgroup, ulimit and the
    OS all counted: :func:`gpudp.memory.available_memory`) cannot hold the solve; returns the host
    bytes left over for the band store."""
    from gpudp import memory

    info = device_memory(backend)
    if info is not None:
        free, total = info
        if est["device_bytes"] > free:
            raise InputError(
                "capacity",
                f"the DP needs {est['device_bytes'] / 2**30:.2f} GiB of device memory (two rows of "
                f"{est['rows_bytes'] / 2**31:.2f} GiB, slabs {4 * est['slab_bytes'] / 2**30:.2f} GiB); "
                f"{free / 2**30:.2f} of {total / 2**30:.2f} GiB are free; {OTHER_METHODS}",
            )
    avail = memory.available_memory()
    if est["host_bytes"] > avail:
        raise InputError(
            "capacity",
            f"the DP needs {est['host_bytes'] / 2**30:.2f} GiB of host memory; "
            f"{memory.describe()}; {OTHER_METHODS}",
        )
    return avail - est["host_bytes"]


class Prepared:
    """An instance checked and sorted for the DP, its memory checked; nothing large allocated yet."""

    def __init__(self, profits, weights, capacity, backend):
        hint = "for real weights use the branch-and-bound solver (--method bb)"
        p = np.asarray(profits)
        if p.ndim != 1 or (p.size and p.dtype.kind not in "iuf"):
            raise InputError("profits", "must be a one-dimensional list of numbers")
        if p.dtype.kind == "f" and p.size and not np.all(np.isfinite(p)):
            raise InputError("profits", "holds a value that is not a finite number")
        if p.dtype.kind == "u" and p.size and int(p.max()) > I64_MAX:
            raise InputError("profits", "values beyond the int64 range (2^63 - 1)")
        w = _integral(weights, "weights", hint)
        if w.shape != p.shape:
            raise InputError("weights", f"{w.size} weights for {p.size} profits")
        if isinstance(capacity, bool):
            raise InputError("capacity", f"the DP solver needs an integer capacity, got {capacity!r}")
        if isinstance(capacity, int):
            cap = capacity
        else:
            c = np.asarray(capacity)
            if (
                c.ndim != 0
                or c.dtype.kind not in "iuf"
                or not math.isfinite(float(c))
                or float(c) != math.floor(float(c))
            ):
                raise InputError(
                    "capacity", f"the DP solver needs an integer capacity, got {capacity!r}; {hint}"
                )
            cap = int(c) if c.dtype.kind in "iu" else int(float(c))
        if cap < 0:
            raise InputError("capacity", f"must be >= 0, got {capacity!r}")
        if cap > I64_MAX:
            raise InputError("capacity", f"{capacity!r} is beyond the int64 range (2^63 - 1)")
        integral = p.dtype.kind in "iu" or bool(
            p.size and np.all(p == np.round(p)) and np.abs(p).max() < 2.0**62
        )
        if integral and p.dtype.kind != "i":
            p = p.astype(np.int64)
        self.p, self.w, self.cap, self.integral = p, w, cap, integral
        self.free = free = np.flatnonzero((w > 0) & (w <= cap) & (p > 0))
        self.order = order = free[np.lexsort((free, w[free], -(p[free] / w[free].astype(np.float64))))]
        self.ws, self.ps = w[order], p[order]
        self.all_fit = sum(int(v) for v in self.ws) <= cap  # Python integers: no overflow
        sweep_needed = len(order) and not self.all_fit
        work = len(order) * (cap + 1) if sweep_needed else 0  # the cells the sweep runs, as predicted
        self.backend, self.backend_choice = be, _ = choose_backend(backend, work, FAMILY)
        try:
            self.vt = value_dtype(self.ps)
        except InputError:
            if sweep_needed:
                raise
            self.vt = np.dtype(np.int64)  # nominal: no sweep runs, the value is a Python integer
        self.est = None
        self.spare = None
        if sweep_needed:
            self.est = estimate_memory(len(order), cap, self.vt, be)
            self.spare = _check_memory(self.est, be)


def check(profits, weights, capacity, backend: str = "auto") -> Prepared:
    """Raise :class:`gpudp.InputError` when :func:`solve` would refuse the instance (data, totals,
    memory), before anything large is allocated; else the instance as prepared (its ``backend``, the
    items swept, ``order``, and ``est`` None when no sweep is needed). ``auto``'s cost model asks this,
    then solves from it (:func:`solve_prepared`)."""
    return Prepared(profits, weights, capacity, backend)


def solve_instance(inst: KnapsackInstance, **kw) -> Solution:
    return solve(inst.profits, inst.weights, inst.capacity, name=inst.name, **kw)


def solve(
    profits,
    weights,
    capacity,
    backend: str = "auto",
    memory_budget=None,
    progress=None,
    name: str = "",
    time_limit=None,
) -> Solution:
    """Solve a 0/1 knapsack by dense DP; returns a checked :class:`gpudp.Solution`.

    ``solution`` is the 0/1 vector (int8) in the caller's item order; ``details["weight"]`` its
    weight. Weights and capacity must be non-negative integers (else :class:`gpudp.InputError`:
    use the branch-and-bound solver for real weights); profits may be integers or reals.
    ``memory_budget``: host bytes for the band store before it spills to disk.

    ``time_limit``: seconds after which the sweep stops (between chunks of layers); the solution is
    then not optimal (``optimal`` False, ``details["stopped"] == "time"``): the greedy packing by
    efficiency (checked; a lower bound) with ``details["upper_bound"]``, Dantzig's bound (the LP
    relaxation's value, exact for integer profits; the sum of the positive profits for real ones).
    A solve predicted to take over a minute says so on stderr first (unless ``progress=False``).
    """
    t0 = time.perf_counter()
    time_limit = parse_time_limit(time_limit)
    pre = Prepared(profits, weights, capacity, backend)
    return _solve(pre, t0, memory_budget, progress, time_limit)


def solve_prepared(pre: Prepared, memory_budget=None, progress=None, time_limit=None) -> Solution:
    """:func:`solve` for an instance :func:`check` has prepared (``auto``'s cost model does, to
    predict the DP): its data are not checked, sorted and sized again; only its memory figures are
    held against the memory free now (another method may have run since the check)."""
    t0 = time.perf_counter()
    time_limit = parse_time_limit(time_limit)
    if pre.est is not None:
        pre.spare = _check_memory(pre.est, pre.backend)
    return _solve(pre, t0, memory_budget, progress, time_limit)


def _solve(pre: Prepared, t0: float, memory_budget, progress, time_limit) -> Solution:
    """The sweep and the traceback of :func:`solve` (``time_limit`` parsed, ``t0`` its start)."""
    p, w, cap, integral, be, order, vt = pre.p, pre.w, pre.cap, pre.integral, pre.backend, pre.order, pre.vt
    x = np.zeros(len(p), np.int8)
    x[(w == 0) & (p > 0)] = 1  # free and profitable: always taken
    details = {
        "method": "dp",
        "n": len(p),
        "dp_items": len(order),
        "value_type": vt.name,
        "integral": integral,
    }
    ws, ps = pre.ws, pre.ps
    stats = None
    if len(order) and pre.all_fit:
        x[order] = 1  # everything fits
    elif len(order):
        details["memory_estimate"] = pre.est
        if memory_budget is None and not os.environ.get("GPUDP_MEMORY_BUDGET"):
            memory_budget = max(pre.spare // 2, 1 << 20)  # the bands spill to disk past half the rest
        rec = KnapsackDP(ws, ps, cap, vt)
        cells = len(order) * (cap + 1)
        what = f"knapsack dp {len(order):,} items x {cap + 1:.3g} capacities = {cells:.3g} cells"
        announce(what, predicted_seconds(cells, be), backend_words(be), time_limit, progress)
        try:
            result = sweep(
                rec,
                backend=be,
                memory_budget=memory_budget,
                progress=progress,
                time_limit=time_limit,
                started=t0,
                codec="bands",  # the decisions: 0 on a layer's left, 1 on its right (module doc)
                reach=rec.w,  # f_k(c) reads f_{k-1} at c - w_k .. c
            )
        except TimeLimitReached as stop:
            return _stopped(pre, x, stop, time.perf_counter() - t0)
        try:
            path = result.traceback((len(order) - 1, cap))
            x[order[path[path[:, 2] == 1, 0]]] = 1
            details["dp_optimum"] = result.last_layer[cap].item()
        finally:
            result.close()
        stats = result.stats
        backends.observe(FAMILY, cells, stats)
    if stats is None:
        from gpudp.backends import device_name
        from gpudp.solution import Stats

        stats = Stats(backend=be, device=device_name(be))
    sel = x == 1
    wsum = sum(int(v) for v in w[sel])
    value = sum(int(v) for v in p[sel]) if integral else math.fsum(p[sel].tolist())
    details["weight"] = wsum
    stats.seconds = time.perf_counter() - t0
    stats.extra["backend_choice"] = pre.backend_choice
    sol = Solution(
        "knapsack",
        value,
        x,
        stats=stats,
        details=details,
        checker=solution_checker(p, w, cap),
    )
    sol.check()
    if "dp_optimum" in details and vt.kind == "i":
        forced = p[(w == 0) & (p > 0)]
        dp_value = details["dp_optimum"]
        if integral and value != int(dp_value) + sum(int(v) for v in forced):
            raise CheckError("internal: the traced-back items do not attain the DP's optimum")
    return sol


def _stopped(pre: Prepared, x: np.ndarray, stop: TimeLimitReached, seconds: float) -> Solution:
    """The checked, not optimal :class:`Solution` of a sweep stopped by its time limit: the greedy
    packing of the swept items in efficiency order (``x`` holds the free items already), a proven
    lower bound, and Dantzig's bound above it (:func:`.io.dantzig_bound`)."""
    from gpudp.backends import device_name
    from gpudp.solution import Stats

    rest = pre.cap
    for k, wk in zip(pre.order.tolist(), pre.ws.tolist(), strict=True):
        if wk <= rest:
            x[k] = 1
            rest -= wk
    sel = x == 1
    value = sum(int(v) for v in pre.p[sel]) if pre.integral else math.fsum(pre.p[sel].tolist())
    forced = pre.p[(pre.w == 0) & (pre.p > 0)]
    forced_value = sum(int(v) for v in forced) if pre.integral else math.fsum(forced.tolist())
    upper = (
        forced_value + dantzig_bound(pre.ps, pre.ws, pre.cap)
        if pre.integral
        else math.fsum(pre.p[pre.p > 0].tolist())
    )
    stats = Stats(backend=pre.backend, device=device_name(pre.backend), cells=stop.done, seconds=seconds)
    sol = Solution(
        "knapsack",
        value,
        x,
        stats=stats,
        optimal=False,
        details={
            "method": "dp",
            "n": len(pre.p),
            "dp_items": len(pre.order),
            "integral": pre.integral,
            "weight": sum(int(v) for v in pre.w[sel]),
            "stopped": "time",
            "message": f"{stop}: the greedy packing (a lower bound), not proven optimal",
            "lower_bound": value,
            "upper_bound": upper,
        },
        checker=solution_checker(pre.p, pre.w, pre.cap),
    )
    sol.check()
    return sol


def _measure(backend: str, step: int):
    """The ``knapsack_dp`` family's measurement (:mod:`gpudp.backends.rates`): the dense DP of 200
    random items and a capacity of ``25,000 x 2^step`` (up to step 10; every item fits alone, not
    all together).

    Returns
    -------
    (cells swept, the solve's :class:`gpudp.Stats`)
    """
    rng = np.random.default_rng(step)
    cap = 25_000 << min(step, 10)
    w = rng.integers(cap // 400, cap // 40, 200)
    p = w + rng.integers(0, cap // 400, 200)
    pre = check(p, w, cap, backend=backend)
    sol = solve_prepared(pre, progress=False)
    return len(pre.order) * (pre.cap + 1), sol.stats


backends.calibrator(FAMILY, _measure)
