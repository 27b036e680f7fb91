"""0/1 knapsack by GPU branch and bound: a real-valued instance file, then a hard generated one.

    python examples/knapsack_bb.py [--n 300] [--seed 1] [--backend auto|cpu|cuda] [--host-budget 2e9]

The first solve reads a Pisinger-format file with real profits and weights (its optimum is 481.0694);
the second builds Shen et al.'s class (w uniform in [1, 10000], p = w + 1000 +- 20) and solves it with
a host budget: if the frontier outgrows it, the answer comes back as the best solution found, marked
not optimal, with the reason. Both answers are checked against the instance before they return.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from gpudp import InputError
from gpudp.bench.instances import shen_instance
from gpudp.memory import parse_bytes
from gpudp.problems.knapsack import bb as knapsack_bb
from gpudp.problems.knapsack.io import read_knapsack

HERE = Path(__file__).resolve().parent
F5 = HERE.parent / "tests" / "data" / "knapsack" / "f5_l-d_kp_15_375"


def _bytes(text):
    """A size in bytes for argparse: a bad one is a usage error (exit 2), not a traceback."""
    try:
        return parse_bytes(text, "--host-budget")
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--host-budget", type=_bytes, default="2e9", help="bytes of host ring (e.g. 2e9, 16G)")
    args = ap.parse_args(argv)

    inst = read_knapsack(F5)
    sol = knapsack_bb.solve_instance(inst, backend=args.backend)
    taken = np.flatnonzero(sol.solution)
    weight = sol.details["weight"]
    print(f"{inst.name}: optimum {sol.value:.4f} with items {taken.tolist()} (weight {weight:.4f})")

    p, w, c = shen_instance(args.n, args.seed)
    sol = knapsack_bb.solve(p, w, c, backend=args.backend, host_budget_bytes=args.host_budget)
    st = sol.stats.extra
    state = "optimal" if sol.optimal else f"NOT proven optimal ({sol.details['message']})"
    print(
        f"Shen n={args.n} seed={args.seed}: {sol.value} {state}; {sol.stats.seconds:.3f} s on "
        f"{sol.stats.device}; {st['nodes_explored']:,} nodes, largest frontier {st['largest_frontier']:,}, "
        f"{(st['bytes_h2d'] + st['bytes_d2h']) / 1e6:.1f} MB swapped"
    )


if __name__ == "__main__":
    main()
