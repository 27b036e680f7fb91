"""``gpudp solve knapsack FILE --method auto|dp|sparse|bb``: the 0/1 knapsack front end.

Methods:

- ``dp``: dense dynamic programming on the wavefront engine (:mod:`gpudp.problems.knapsack.dp`,
  Boyer et al.); integer weights and capacity, integer or real profits; time and memory follow
  ``n * (C + 1)``.
- ``sparse``: the sparse-state DP (:mod:`gpudp.problems.knapsack.sparse`, after Pisinger's minknap
  and combo): lists of undominated states over an expanding core, fathomed by bounds; integer data;
  its work follows the core, not ``C``, so it carries large coefficients; on the CPU, the steps of
  large lists on a usable GPU (not with ``--backend cpu``).
- ``reach``: the sparse-state DP fathomed by the reachable sums of the items left
  (:mod:`gpudp.problems.knapsack.reach`, issue 41): items in decreasing weight, each state bounded by
  ``P + λ·S + G`` with ``S`` the largest weight the remaining items can add within the room
  (intervals built backwards), searched against targets descending from the bound; integer data, on
  the CPU. For profits that follow the weights with a capacity no table holds (Jooken et al.'s
  class at ``C = 10^10``), where the LP-type bounds of ``sparse`` assume the room can be filled.
- ``bb``: branch and bound on the frontier engine (:mod:`gpudp.problems.knapsack.bb`); any
  non-negative integer or real data.
- ``auto`` (default): a cost model (:func:`choose_method`). The DP's time is predicted from the
  cells it sweeps, ``n' * (C + 1)`` (``n'`` the items that can be packed; none when they all fit),
  and the ``knapsack_dp`` family's rate on the backend it would run on, measured on this machine
  where it was (``gpudp warmup --calibrate``), else assumed: on the CPU ``GPUDP_CPU_CELL_RATE`` or
  2e8 unit cells a second per thread, two a knapsack cell; on the GPU 1e11 cells a second plus its
  start-up (:func:`gpudp.problems.knapsack.dp.predicted_seconds`, :mod:`gpudp.backends.rates`).
  The sparse DP's time cannot be told from ``n`` and ``C`` (milliseconds on most classes, seconds
  on a few), so ``auto`` bounds the regret instead of guessing it:

  1. real weights: ``bb`` (the only method for them);
  2. the DP can run (``knapsack_dp.check``: memory, int64 totals) and is predicted at most
     :data:`DP_AT_ONCE_S`, or the profits are real: ``dp``;
  3. the DP can run, integer data: ``sparse`` for at most the DP's predicted time, then ``dp`` if
     sparse has not proved its answer by then; so never much more than twice the DP, and the
     sparse DP's time when it is the faster; where few items fit (as in 4.), ``sparse`` for at most
     :data:`SPARSE_FIRST_S` (:data:`SPARSE_FIRST_FOLLOW_S` where the profits also follow the
     weights), then ``reach`` for at most the DP's predicted time, then ``dp`` (Jooken's class at
     C = 10^8, n = 400, on 2 cores: sparse proved it in 69 s, reach in 1.1 s);
  4. the DP refuses (``C`` too large for its rows, say), integer data: ``sparse``, then ``bb`` if
     sparse refuses or stops unproven (memory); but where an item that can be packed weighs at least
     ``C / REACH_WEIGHT_SHARE`` (few items fit: the sums they reach near ``C`` are sparse, as in
     Jooken et al.'s class, where sparse's LP-type bounds stall), ``sparse`` for at most
     :data:`SPARSE_FIRST_S` (or :data:`SPARSE_FIRST_FOLLOW_S`), then ``reach``, then ``bb``; real
     profits go to ``bb``.

  An unproven answer is returned only when no method that could prove it is left (a time limit or
  the memory stopped the last search); the DP, when it runs, proves unless the time limit stops it.
  ``details["method_note"]`` says what ran and why, ``details["auto"]`` the prediction (cells,
  backend, seconds) and each attempt (method, seconds, proven). The time limit (``time_limit=``,
  ``--time-limit``) bounds every method (the DP stops with the greedy packing and Dantzig's bound,
  so after a step that found a packing it starts only when predicted at most
  :data:`DP_LEFT_SHARE` times the time left); a DP predicted to take over a minute says so on stderr
  first.

Numbers are read exactly and every limit is a clear :class:`gpudp.InputError`, never a rounded
value (see :mod:`gpudp.problems.knapsack.io`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from gpudp.errors import InputError
from gpudp.inputs import parse_time_limit
from gpudp.memory import parse_bytes
from gpudp.solution import warn_unproven

from . import batch
from . import bb as knapsack_bb
from .io import FORMATS, KnapsackInstance, read_knapsack, solution_checker, validate

if TYPE_CHECKING:
    from .dp import Prepared

__all__ = [
    "solve",
    "solve_many",
    "solve_instance",
    "choose_method",
    "rule",
    "read_knapsack",
    "validate",
    "KnapsackInstance",
    "METHODS",
]

METHODS = ("auto", "dp", "sparse", "bb", "reach")
#: a DP predicted this fast runs at once: a sparse attempt would cost as much to set up
DP_AT_ONCE_S = 0.05
#: where the DP refuses: ``reach`` joins the plan when an item that can be packed weighs at least
#: ``C`` over this (few items fit), after ``sparse`` for at most :data:`SPARSE_FIRST_S` seconds
REACH_WEIGHT_SHARE = 16
#: (sparse answers those it proves in milliseconds there; where it stalls, reach proves in tenths of
#: a second what sparse leaves unproven at 5 s: docs/knapsack_reach.md, "auto")
SPARSE_FIRST_S = 0.1
#: the same where the profits also follow the weights (:func:`_profits_follow_weights`: Jooken's
#: class): reach proves in about the same time what sparse proves there in tenths of a second (all
#: 1,080 published instances at C = 10^8: the 242 sparse proves within 0.1 s, reach proved too, 6.1 s
#: in all against 6.7 s), so sparse gets a fiftieth of a second, not a tenth, before it
SPARSE_FIRST_FOLLOW_S = 0.02
#: profits follow the weights where the mean ``|p − λ·w|`` of the items that can be packed is at most
#: ``C`` over this (``λ``: the ratio of those weighing at least ``C / REACH_WEIGHT_SHARE``)
FOLLOW_SHARE = 1000
#: under a time limit, with a packing found by an earlier step, the DP is not started when predicted
#: more than this many times the time left: stopped, it returns the greedy packing and Dantzig's
#: bound, which add nothing, after setting up its rows (n = 1,200, C = 10^8 on the cpu: 3.5-4 s past
#: a limit that reach had spent)
DP_LEFT_SHARE = 4.0


def _integer_capacity(inst: KnapsackInstance) -> int | None:
    """The capacity as an exact integer when the weights and the capacity are integers, else None."""
    w = np.asarray(inst.weights)
    if w.dtype.kind == "f":
        if not (np.all(np.isfinite(w)) and np.all(w == np.floor(w))):
            return None
    elif w.dtype.kind not in "iub" and w.size:
        return None
    c = inst.capacity
    if isinstance(c, bool):
        return None
    if isinstance(c, int | np.integer):
        return int(c)
    try:
        f = float(c)
    except (TypeError, ValueError):
        return None
    return int(f) if math.isfinite(f) and f == math.floor(f) else None


@dataclass
class MethodChoice:
    """What ``auto`` runs: ``steps``, each a method and the seconds it is given (None: until it is
    done or its own limit), the next run only when the one before refused or did not prove; the
    reason; and the DP's prediction (``dp_cells``, ``dp_backend``, ``dp_seconds``) where it can run,
    with the instance as the DP's check prepared it (``prepared``: the DP, when it runs, starts from
    it rather than preparing the instance again)."""

    steps: list[tuple[str, float | None]]
    reason: str
    dp_cells: int | None = None
    dp_backend: str | None = None
    dp_seconds: float | None = None
    attempts: list[dict] = field(default_factory=list)
    prepared: Prepared | None = field(default=None, repr=False)

    @property
    def method(self) -> str:
        return self.steps[0][0]

    def as_dict(self) -> dict:
        return {
            "steps": [{"method": m, "seconds": s} for m, s in self.steps],
            "reason": self.reason,
            "dp_cells": self.dp_cells,
            "dp_backend": self.dp_backend,
            "dp_predicted_seconds": self.dp_seconds,
            "attempts": self.attempts,
        }


def choose_method(inst: KnapsackInstance, backend: str = "auto", time_limit=None) -> MethodChoice:
    """The methods ``auto`` runs for ``inst``, by the cost model of the module doc; nothing is
    solved (the DP's pre-check runs: sorting, memory figures; kept in the result's ``prepared``)."""
    time_limit = parse_time_limit(time_limit)
    cap = _integer_capacity(inst)
    if cap is None:
        return MethodChoice([("bb", time_limit)], "real weights: dp and sparse need integer weights")
    from . import dp as knapsack_dp

    try:
        pre = knapsack_dp.check(inst.profits, inst.weights, inst.capacity, backend=backend)
    except InputError as e:
        if inst.integral and _few_fit(inst, cap):
            first = _sparse_first(inst, cap)
            first = first if time_limit is None else min(first, time_limit)
            why = (
                f"the DP refuses ({e}) and an item weighs at least C/{REACH_WEIGHT_SHARE}: sparse for at "
                f"most {first:.3g} s, then reach, then bb if neither proves it"
            )
            return MethodChoice([("sparse", first), ("reach", time_limit), ("bb", time_limit)], why)
        if inst.integral:
            why = f"the DP refuses ({e}): sparse, then bb if sparse cannot prove it"
            return MethodChoice([("sparse", time_limit), ("bb", time_limit)], why)
        return MethodChoice([("bb", time_limit)], f"the DP refuses ({e}) and sparse needs integer profits")
    cells = len(pre.order) * (pre.cap + 1) if pre.est is not None else 0
    t = knapsack_dp.predicted_seconds(cells, pre.backend)
    pred = f"the DP is predicted {t:.3g} s for {cells:.3g} cells on {pre.backend}"
    out = MethodChoice([("dp", None)], "", cells, pre.backend, t, prepared=pre)
    if not inst.integral:
        out.reason = f"real profits: dp ({pred})"
    elif t <= DP_AT_ONCE_S:
        out.reason = f"{pred}: dp at once"
    else:
        budget = t if time_limit is None else min(t, time_limit)
        out.steps = [("sparse", budget), ("dp", None)]
        out.reason = f"{pred}: sparse for at most {budget:.3g} s, then dp if sparse has not proved it"
        if _few_fit(inst, cap):  # reach's case (4. below), within the DP's time all the same
            first = min(_sparse_first(inst, cap), budget)
            out.steps = [("sparse", first), ("reach", budget), ("dp", None)]
            out.reason = (
                f"{pred} and an item weighs at least C/{REACH_WEIGHT_SHARE}: sparse for at most "
                f"{first:.3g} s, then reach for at most {budget:.3g} s, then dp if neither has proved it"
            )
    return out


def _few_fit(inst: KnapsackInstance, cap: int) -> bool:
    """Whether an item that can be packed (``0 < w ≤ C``, ``p > 0``) weighs at least
    ``C / REACH_WEIGHT_SHARE`` (Python integers: exact at every magnitude)."""
    _, packable = _packable(inst, cap)
    return bool(len(packable)) and int(packable.max()) * REACH_WEIGHT_SHARE >= cap


def _packable(inst: KnapsackInstance, cap: int):
    """The profits and weights of the items that can be packed (``0 < w ≤ C``, ``p > 0``)."""
    w, p = np.asarray(inst.weights), np.asarray(inst.profits)
    keep = (w > 0) & (w <= cap) & (p > 0)
    return p[keep], w[keep]


def _sparse_first(inst: KnapsackInstance, cap: int) -> float:
    """How long ``sparse`` runs before ``reach`` where few items fit: :data:`SPARSE_FIRST_FOLLOW_S`
    where the profits follow the weights, else :data:`SPARSE_FIRST_S`."""
    return SPARSE_FIRST_FOLLOW_S if _profits_follow_weights(inst, cap) else SPARSE_FIRST_S


def _profits_follow_weights(inst: KnapsackInstance, cap: int) -> bool:
    """Whether the items that can be packed have profits near ``λ·w``: the mean ``|p − λ·w|`` at
    most ``C / FOLLOW_SHARE``, ``λ`` the profit-to-weight ratio of those weighing at least ``C /
    REACH_WEIGHT_SHARE`` (reach's envelopes then carry small gains: its bound is near exact). In
    float64: it sets how long a step runs, never an answer."""
    p, w = (a.astype(np.float64) for a in _packable(inst, cap))
    heavy = w * REACH_WEIGHT_SHARE >= float(cap)
    if not heavy.any():
        return False
    lam = p[heavy].sum() / w[heavy].sum()
    return bool(np.abs(p - lam * w).mean() * FOLLOW_SHARE <= float(cap))


def rule(inst: KnapsackInstance, backend: str = "auto") -> str:
    """The method ``auto`` runs first for ``inst`` ('dp', 'sparse' or 'bb'): :func:`choose_method`."""
    return choose_method(inst, backend).method


def cli_arguments(parser):
    parser.add_argument(
        "file",
        help="instance: Pisinger text (n C / p w lines), Jooken text (n / id p w lines / C), CSV or "
        "JSON; or a batch: a directory of such files or a .jsonl file (one JSON instance a line), one "
        "output line an instance",
    )
    parser.add_argument(
        "--format",
        default="auto",
        choices=list(FORMATS),
        help="the file's format (every file of a directory batch): auto detects it from the content "
        "(JSON: '{'; CSV: a comma on the first line; Jooken: a line of three values after a lone n; "
        "else Pisinger)",
    )
    parser.add_argument(
        "--method",
        default="auto",
        choices=list(METHODS),
        help="dp: dense DP (integer weights); sparse: sparse-state DP (integer data, large "
        "coefficients); reach: sparse-state DP bounded by the sums the remaining items can reach "
        "(integer data, profits near the weights, large C); bb: branch and bound; auto: a cost model "
        "(the DP's predicted time; sparse first where the DP is slow or cannot run)",
    )
    parser.add_argument(
        "--memory-budget", default=None, help="DP: host bytes for the decisions before they spill to disk"
    )
    parser.add_argument(
        "--host-budget", default=None, help="bytes for the B&B host buffer (e.g. 4e9, 512M, 8G)"
    )
    parser.add_argument(
        "--time-limit", default=None, help="stop B&B, sparse or reach after this many seconds"
    )
    parser.add_argument("--cpu-threshold", type=int, default=knapsack_bb.frontier.DEFAULT_CPU_THRESHOLD)
    parser.add_argument("--batch", type=int, default=knapsack_bb.frontier.DEFAULT_BATCH)


def cli_solve(args):
    # every option is checked before the file is read: one clear line for a bad one, never a traceback
    host = None if args.host_budget is None else parse_bytes(args.host_budget, "--host-budget")
    memory_budget = None if args.memory_budget is None else parse_bytes(args.memory_budget, "--memory-budget")
    time_limit = parse_time_limit(args.time_limit, "--time-limit")
    if args.batch < 1:
        raise InputError("--batch", f"must be >= 1, got {args.batch}")
    from . import many

    if many.is_batch(args.file):  # prints one line an instance; the exit status
        return many.cli_batch(args, solve_many)
    sol = solve_instance(
        read_knapsack(args.file, args.format),
        method=args.method,
        backend=args.backend,
        memory_budget=memory_budget,
        host_budget_bytes=host,
        batch=args.batch,
        cpu_threshold=args.cpu_threshold,
        time_limit=time_limit,
    )
    warn_unproven(sol)
    return sol


def solve(profits, weights, capacity, method: str = "auto", backend: str = "auto", memory_budget=None, **bb):
    """The 0/1 knapsack: the best set of items of total weight at most ``capacity``, checked.

    Parameters
    ----------
    profits, weights : sequences of non-negative numbers (integers stay exact at every magnitude)
    capacity : non-negative number
    method : ``"auto"`` (the cost model of :func:`choose_method`), ``"dp"``, ``"sparse"``, ``"reach"``
        (integer data: the reachable-sums DP of :mod:`gpudp.problems.knapsack.reach`) or ``"bb"``
    backend : ``"auto"``, ``"cpu"`` or ``"cuda"`` (``sparse`` runs on the CPU, its steps on large lists
        on a usable GPU unless ``"cpu"``; ``reach`` runs on the CPU whatever the backend)
    memory_budget : host bytes for the DP's decisions before they spill to disk
    **bb : ``time_limit`` (B&B, sparse and reach) and the branch and bound's options (``host_budget_bytes``,
        ``batch``, ...)

    Returns
    -------
    Solution : ``value``, ``solution`` (0/1 per item, the caller's order), ``optimal`` (False only
    when a time limit or the memory stopped a search that no other method could finish;
    ``details["message"]`` says why, which the command line prints as a warning: this function
    prints nothing), ``details["method"]``, ``details["method_note"]`` and ``details["auto"]`` (what
    auto ran and why); an unproven answer carries ``details["stopped"]`` (``"time"`` or
    ``"memory"``) and its proven ``details["upper_bound"]`` (``reach``: and ``details["gap"]``)

    Raises
    ------
    InputError : data that are not a knapsack, or beyond what the method can keep exact (``sparse``
        and ``reach``: real-valued data, or profit or weight totals of the items that can be packed
        past 2^63 - 1; the message gives the figures)

    Example
    -------
    >>> from gpudp.problems import knapsack
    >>> knapsack.solve([10, 7, 8], [5, 4, 3], 8, backend="cpu").value
    18
    """
    _check_method(method)
    return _solve(validate(profits, weights, capacity), method, backend, memory_budget, bb)


def solve_instance(
    inst: KnapsackInstance, method: str = "auto", backend: str = "auto", memory_budget=None, **bb
):
    """Solve by ``method`` (``dp``, ``sparse``, ``reach``, ``bb``, or ``auto``: :func:`choose_method`);
    ``memory_budget`` goes to the DP, ``time_limit`` to sparse, reach and B&B, the other keywords (host
    budget, batch, ...) to B&B; ``details["method_note"]`` says what ``auto`` ran and why.

    ``inst`` is checked as :func:`validate` checks data, so one built by hand (from Python lists,
    say) is solved like one read from a file, or refused with an :class:`gpudp.InputError`."""
    _check_method(method)
    if not isinstance(inst, KnapsackInstance):
        raise InputError(
            "inst", f"must be a KnapsackInstance (read_knapsack, validate), got {type(inst).__name__}"
        )
    inst = validate(inst.profits, inst.weights, inst.stated_capacity, inst.known_solution, inst.name)
    return _solve(inst, method, backend, memory_budget, bb)


def _check_method(method) -> None:
    if not isinstance(method, str) or method not in METHODS:
        raise InputError("method", f"must be one of {', '.join(METHODS)}, not {method!r}")


def _solve(inst, method, backend, memory_budget, bb):
    if method == "auto":
        return _auto(inst, backend, memory_budget, bb)
    return _finish(_run(method, inst, backend, memory_budget, bb), inst, None)


def _run(method, inst, backend, memory_budget, bb, prepared=None):
    if method == "dp":
        from . import dp as knapsack_dp

        kw = {"memory_budget": memory_budget, "time_limit": bb.get("time_limit")}
        if prepared is not None:  # auto's cost model prepared it (checked, sorted, sized): not twice
            return knapsack_dp.solve_prepared(prepared, **kw)
        return knapsack_dp.solve_instance(inst, backend=backend, **kw)
    if method == "sparse":
        from . import sparse as knapsack_sparse
        from .sparse.gpu import device_lists

        sol = knapsack_sparse.solve_instance(inst, time_limit=bb.get("time_limit"), backend=backend)
        if device_lists(backend) and not sol.details["gpu"]["steps"]:
            why = sol.details["gpu"].get("note") or "no list reached the GPU's size"
            sol.details["backend_note"] = f"the sparse DP runs on the CPU here ({why})"
        return sol
    if method == "reach":
        from . import reach as knapsack_reach

        return knapsack_reach.solve_instance(inst, time_limit=bb.get("time_limit"))
    return knapsack_bb.solve_instance(inst, backend=backend, **bb)


def _auto(inst, backend, memory_budget, bb):
    """Run :func:`choose_method`'s steps: each next one only when the one before refused the
    instance or stopped unproven; the first proven answer is returned, else the best one found."""
    t0 = time.perf_counter()
    time_limit = parse_time_limit(bb.get("time_limit"))
    choice = choose_method(inst, backend, time_limit)
    best, outcome = None, []
    for k, (method, seconds) in enumerate(choice.steps):
        if method in ("bb", "dp", "reach") and time_limit is not None:  # what is left of the caller's limit
            seconds = max(0.0, time_limit - (time.perf_counter() - t0))
            if seconds == 0.0 and best is not None:  # (with nothing to return, bb stops at once)
                outcome.append(f"no time left for {method}")
                break
            if method == "dp" and best is not None and choice.dp_seconds > DP_LEFT_SHARE * seconds:
                # stopped early, the DP returns the greedy packing: it can add nothing to ``best``
                outcome.append(
                    f"no time left for dp (predicted {choice.dp_seconds:.3g} s, {seconds:.3g} s left)"
                )
                break
        t = time.perf_counter()
        try:
            sol = _run(method, inst, backend, memory_budget, {**bb, "time_limit": seconds}, choice.prepared)
        except InputError as e:
            choice.attempts.append({"method": method, "refused": str(e)})
            outcome.append(f"{method} refuses ({e})")
            if k == len(choice.steps) - 1 and best is None:
                raise
            continue
        secs = time.perf_counter() - t
        choice.attempts.append({"method": method, "seconds": secs, "proven": sol.optimal})
        if best is None or sol.optimal or sol.value > best.value:
            best = sol
        if sol.optimal:
            outcome.append(f"{method} proved it in {secs:.3g} s")
            break
        why = sol.details.get("stopped") or sol.details.get("message")
        outcome.append(f"{method} stopped unproven after {secs:.3g} s ({why})")
    note = f"auto picks {choice.method}: {choice.reason}; " + "; ".join(outcome)
    best.details["auto"] = choice.as_dict()
    return _finish(best, inst, note)


def _finish(sol, inst, note):
    if note:
        sol.details["method_note"] = note
    if inst.given_capacity is not None:  # solved under the total weight: checked against the given one
        sol.check_with(solution_checker(inst.profits, inst.weights, inst.given_capacity))
    if inst.known_solution is not None:
        chosen = np.asarray(inst.profits)[np.asarray(inst.known_solution) == 1].tolist()
        known = (
            sum(int(v) for v in chosen) if np.asarray(inst.profits).dtype.kind in "iu" else math.fsum(chosen)
        )
        sol.details["known_solution_value"] = known
    return sol


def summary(sol) -> str:
    """The optimum, the method, the items taken and what the solve cost, in a few lines."""
    st, d = sol.stats, sol.details
    taken = [int(i) for i in (sol.solution == 1).nonzero()[0]]
    shown = ", ".join(map(str, taken[:20])) + (", ..." if len(taken) > 20 else "")
    proven = "optimal" if sol.optimal else "not proven optimal"
    lines = [
        f"knapsack: {sol.value} ({proven}, checked; method {d.get('method')})",
        f"items taken ({len(taken)}): {shown}",
        f"weight {d.get('weight')}; {st.backend} on {st.device}: {st.seconds:.3f} s",
    ]
    if d.get("method_note"):
        lines.append(d["method_note"])
    return "\n".join(lines)


def solve_many(instances, backend: str = "auto", progress=None, verify=None):
    """Many knapsacks in one call, each answer checked (``verify`` of them also re-solved by the
    dense DP and compared): see :func:`.batch.solve_many`.

    >>> from gpudp.problems import knapsack
    >>> knapsack.solve_many([([10, 7, 8], [5, 4, 3], 8), ([1], [2], 1)], backend="cpu").values.tolist()
    [18, 0]
    """
    return batch.solve_many(instances, solve, backend=backend, progress=progress, verify=verify)
