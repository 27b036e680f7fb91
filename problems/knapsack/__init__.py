"""``gpudp solve knapsack FILE --method bb|dp|auto``: the 0/1 knapsack front end.

Methods:

- ``bb``: branch and bound on the frontier engine (:mod:`gpudp.problems.knapsack.bb`); any
  non-negative integer or real data.
- ``dp``: dense dynamic programming on the wavefront engine (:mod:`gpudp.problems.knapsack.dp`,
  Boyer et al.); integer weights and capacity, integer or real profits.
- ``auto`` (default): the rule is DP when the weights and the capacity are integers and the DP table
  is small, ``n * (C + 1) <= DP_CELL_LIMIT`` (1e10 cells: seconds on the H100 at the DP engine's
  measured rates, minutes on a few CPU cores), and B&B otherwise (real weights, or a capacity too
  large for a table). When the rule picks DP but the DP refuses the instance (not enough memory for
  its rows here, a total past its int64 values), B&B runs instead. ``details["method_note"]`` says
  which method ran and why.

Numbers are read exactly and every limit is a clear :class:`gpudp.InputError`, never a rounded
value (see :mod:`gpudp.problems.knapsack.io`).
"""

from __future__ import annotations

import importlib.util
import math
import sys

import numpy as np

from gpudp.errors import InputError
from gpudp.memory import parse_bytes

from . import batch
from . import bb as knapsack_bb
from .io import KnapsackInstance, read_knapsack, validate

__all__ = [
    "solve",
    "solve_many",
    "solve_instance",
    "rule",
    "read_knapsack",
    "validate",
    "KnapsackInstance",
    "DP_CELL_LIMIT",
]

DP_CELL_LIMIT = 10**10


def dp_available() -> bool:
    return importlib.util.find_spec("gpudp.problems.knapsack.dp") is not None


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


def rule(inst: KnapsackInstance) -> str:
    """The method ``auto`` picks by the documented rule ('dp' or 'bb'), availability aside: DP for
    integer weights and capacity with ``n * (C + 1) <= DP_CELL_LIMIT`` (Python integers: no
    overflow at any magnitude), else B&B."""
    cap = _integer_capacity(inst)
    if cap is not None and 0 <= cap and inst.n * (cap + 1) <= DP_CELL_LIMIT:
        return "dp"
    return "bb"


def cli_arguments(parser):
    parser.add_argument("file", help="instance: Pisinger text (n C / p w lines), CSV or JSON")
    parser.add_argument(
        "--method",
        default="auto",
        choices=["auto", "bb", "dp"],
        help="bb: branch and bound; dp: dynamic programming (integer weights); auto: dp when the "
        f"weights and capacity are integers and n*(C+1) <= {DP_CELL_LIMIT:.0e}, else bb",
    )
    parser.add_argument(
        "--memory-budget", default=None, help="DP: host bytes for the decisions before they spill to disk"
    )
    parser.add_argument(
        "--host-budget", default=None, help="bytes for the B&B host buffer (e.g. 4e9, 512M, 8G)"
    )
    parser.add_argument("--time-limit", default=None, help="stop B&B after this many seconds")
    parser.add_argument("--cpu-threshold", type=int, default=knapsack_bb.frontier.DEFAULT_CPU_THRESHOLD)
    parser.add_argument("--batch", type=int, default=knapsack_bb.frontier.DEFAULT_BATCH)


def cli_solve(args):
    # every option is checked before the file is read: one clear line for a bad one, never a traceback
    host = None if args.host_budget is None else parse_bytes(args.host_budget, "--host-budget")
    memory_budget = None if args.memory_budget is None else parse_bytes(args.memory_budget, "--memory-budget")
    time_limit = knapsack_bb.parse_time_limit(args.time_limit, "--time-limit")
    if args.batch < 1:
        raise InputError("--batch", f"must be >= 1, got {args.batch}")
    return solve_instance(
        read_knapsack(args.file),
        method=args.method,
        backend=args.backend,
        memory_budget=memory_budget,
        host_budget_bytes=host,
        batch=args.batch,
        cpu_threshold=args.cpu_threshold,
        time_limit=time_limit,
    )


def solve(profits, weights, capacity, method: str = "auto", backend: str = "auto", memory_budget=None, **bb):
    """The 0/1 knapsack: the best set of items of total weight at most ``capacity``, checked.

    Parameters
    ----------
    profits, weights : sequences of non-negative numbers (integers stay exact at every magnitude)
    capacity : non-negative number
    method : ``"auto"`` (the documented :func:`rule`), ``"dp"`` or ``"bb"``
    backend : ``"auto"``, ``"cpu"`` or ``"cuda"``
    memory_budget : host bytes for the DP's decisions before they spill to disk
    **bb : options of the branch and bound (``host_budget_bytes``, ``batch``, ``time_limit``, ...)

    Returns
    -------
    Solution : ``value``, ``solution`` (0/1 per item, the caller's order), ``details["method_note"]``

    Raises
    ------
    InputError : data that are not a knapsack, or beyond what the method can keep exact

    Example
    -------
    >>> from gpudp.problems import knapsack
    >>> knapsack.solve([10, 7, 8], [5, 4, 3], 8, backend="cpu").value
    18
    """
    inst = validate(profits, weights, capacity)
    return solve_instance(inst, method=method, backend=backend, memory_budget=memory_budget, **bb)


def solve_instance(
    inst: KnapsackInstance, method: str = "auto", backend: str = "auto", memory_budget=None, **bb
):
    """Solve by ``method`` (``dp``, ``bb``, or ``auto``: the documented :func:`rule`);
    ``memory_budget`` goes to DP, the other keywords (host budget, batch, ...) to B&B;
    ``details["method_note"]`` says what ``auto`` picked."""
    note = None
    if method == "auto":
        method = rule(inst)
        note = f"the rule picks {method}"
        if method == "dp":
            from . import dp as knapsack_dp

            try:
                knapsack_dp.check(inst.profits, inst.weights, inst.capacity, backend=backend)
            except InputError as e:
                method = "bb"
                note = f"the rule picks dp, but the DP refuses ({e}): bb instead"
    if method == "dp":
        from . import dp as knapsack_dp

        sol = knapsack_dp.solve_instance(inst, backend=backend, memory_budget=memory_budget)
    elif method == "bb":
        sol = knapsack_bb.solve_instance(inst, backend=backend, **bb)
    else:
        raise ValueError(f"method must be auto, dp or bb, not {method!r}")
    return _finish(sol, inst, note)


def _finish(sol, inst, note):
    if note:
        sol.details["method_note"] = note
    if inst.known_solution is not None:
        chosen = np.asarray(inst.profits)[np.asarray(inst.known_solution) == 1].tolist()
        known = (
            sum(int(v) for v in chosen) if np.asarray(inst.profits).dtype.kind in "iu" else math.fsum(chosen)
        )
        sol.details["known_solution_value"] = known
    if not sol.optimal:
        print(f"gpudp: warning: not proven optimal: {sol.details['message']}", file=sys.stderr)
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


def solve_many(instances, backend: str = "auto", progress=None):
    """Many knapsacks in one call, each answer checked: see :func:`.batch.solve_many`.

    >>> from gpudp.problems import knapsack
    >>> knapsack.solve_many([([10, 7, 8], [5, 4, 3], 8), ([1], [2], 1)], backend="cpu").values.tolist()
    [18, 0]
    """
    return batch.solve_many(instances, solve, backend=backend, progress=progress)
