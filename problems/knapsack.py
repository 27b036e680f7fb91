"""``gpudp solve knapsack FILE --method bb|dp|auto``: the 0/1 knapsack front end.

Methods:

- ``bb``: branch and bound on the frontier engine (:mod:`gpudp.problems.knapsack_bb`); any
  non-negative integer or real data.
- ``dp``: dense dynamic programming on the wavefront engine (issue #3). **Not available yet**: asking
  for it is an error that says so.
- ``auto`` (default): the rule is DP when the weights and the capacity are integers and the DP table
  is small, ``n * (C + 1) <= DP_CELL_LIMIT`` (1e10 cells, seconds on the H100 at the DP engine's
  measured rates), and B&B otherwise (real weights, or a capacity too large for a table). While the
  DP solver does not exist, ``auto`` runs B&B in every case and says in ``details["method_note"]``
  which method the rule picked.
"""

from __future__ import annotations

import importlib.util
import sys

from gpudp.errors import InputError

from . import knapsack_bb
from .knapsack_io import KnapsackInstance, read_knapsack

DP_CELL_LIMIT = 10**10


def dp_available() -> bool:
    return importlib.util.find_spec("gpudp.problems.knapsack_dp") is not None


def rule(inst: KnapsackInstance) -> str:
    """The method ``auto`` picks by the documented rule ('dp' or 'bb'), availability aside."""
    if inst.integral and isinstance(inst.capacity, int) and inst.n * (inst.capacity + 1) <= DP_CELL_LIMIT:
        return "dp"
    return "bb"


def cli_arguments(parser):
    parser.add_argument("file", help="instance: Pisinger text (n C / p w lines), CSV or JSON")
    parser.add_argument(
        "--method",
        default="auto",
        choices=["auto", "bb", "dp"],
        help="bb: branch and bound; dp: dynamic programming (not available yet); auto: dp when the "
        f"data are integers and n*(C+1) <= {DP_CELL_LIMIT:.0e}, else bb (bb for now in every case)",
    )
    parser.add_argument("--host-budget", type=float, default=None, help="bytes for the B&B host buffer")
    parser.add_argument("--time-limit", type=float, default=None, help="stop B&B after this many seconds")
    parser.add_argument("--cpu-threshold", type=int, default=knapsack_bb.frontier.DEFAULT_CPU_THRESHOLD)
    parser.add_argument("--batch", type=int, default=knapsack_bb.frontier.DEFAULT_BATCH)


def cli_solve(args):
    inst = read_knapsack(args.file)
    method, note = args.method, None
    if method == "dp":
        raise InputError(
            "method",
            "the dynamic-programming knapsack solver (issue #3) is not available yet; use --method bb",
        )
    if method == "auto":
        picked = rule(inst)
        if picked == "dp" and not dp_available():
            note = "the rule picks dp for this instance, but the DP solver is not available yet: ran bb"
        elif picked == "dp":
            note = "the rule picks dp; the DP solver exists but is not wired to this front yet: ran bb"
        else:
            note = "the rule picks bb"
    sol = knapsack_bb.solve_instance(
        inst,
        backend=args.backend,
        host_budget_bytes=None if args.host_budget is None else int(args.host_budget),
        batch=args.batch,
        cpu_threshold=args.cpu_threshold,
        time_limit=args.time_limit,
    )
    if note:
        sol.details["method_note"] = note
    if inst.known_solution is not None:
        known = inst.profits[inst.known_solution == 1].sum()
        sol.details["known_solution_value"] = int(known) if inst.integral else float(known)
    if not sol.optimal:
        print(f"gpudp: warning: not proven optimal: {sol.details['message']}", file=sys.stderr)
    return sol
