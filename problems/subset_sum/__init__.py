"""Subset sum by the parallel two-list algorithm of Wan, Li, Liu & Li (Concurrency and Computation, 2014).

``solve(weights, target)`` finds a subset of non-negative integers summing exactly to ``target`` (or
proves that none exists, returning the closest sum below it as a witness); ``maximize(weights,
capacity)`` finds the largest subset sum that does not exceed ``capacity``. Both return the subset
(indices in the caller's order) in a checked :class:`gpudp.Solution`.

The two-list method (Horowitz & Sahni) on the GPU, as in Wan et al.:

* generation (their IGS): the usable items (0 < w <= capacity) are sorted non-increasingly and dealt
  alternately into two halves; each half's list of subset sums is built item by item by merging the
  sorted list A with A + w (a merge-path merge, :mod:`gpudp.primitives`), and the sums that exceed
  the capacity are never formed (only the prefix of A with a <= capacity - w is shifted). Each sum
  carries a uint32 bit mask of its items, so the subset is recovered, not only the answer.
* pruning (their IPS): list A is cut into blocks of ``e`` sums, and the second list is read as
  C = capacity - B, ascending. A-block i owns the values [A[i e], A[(i+1) e]); it is paired only with
  the C-blocks whose value range meets that interval, found with two binary searches; the pairs form a
  staircase, at most kA + kC - 1 of them.
* search (their ISS): for each pair, four binary searches narrow the C-block to the values the A-block
  owns and the A-block to the predecessors of those values; one thread then walks the two narrowed
  runs, finding for each c the largest a <= c. The least gap c - a over all pairs gives the best sum
  capacity - gap; gap 0 means an exact hit. ``solve`` is ``maximize`` with capacity = target.

The CPU backend (numba) runs the same functions; zero weights never change a sum and are left out of
the lists (and of the returned subset).
"""

from __future__ import annotations

from gpudp.inputs import parse_time_limit
from gpudp.solution import warn_unproven

from .io import read_instance
from .solver import MAX_ITEMS, generate_list, maximize, plan_memory, prune_pairs, solve


def narrow_cpu(a, b, cap, e, i, j):
    """ISS narrowing of block pair (i, j) on the CPU: (q0, q1, a0, a1); see the module docstring."""
    from .cpu import narrow_cpu as narrow

    return narrow(a, b, cap, e, i, j)


__all__ = [
    "solve",
    "maximize",
    "generate_list",
    "prune_pairs",
    "narrow_cpu",
    "plan_memory",
    "read_instance",
    "MAX_ITEMS",
]


def summary(sol):
    """One human line for ``gpudp solve subset-sum``."""
    d = sol.details
    if d.get("stopped"):  # a time limit: the best found and the bounds, not the optimum
        bounds = f"between {d['lower_bound']} and {d['upper_bound']} (not optimal: {d['message']})"
        if sol.problem == "subset-sum-max":
            return f"best sum {bounds}; found {sol.value}: items {sol.solution}"
        return (
            f"no subset summing to {d['target']} found, none proven not to exist; the closest sum below is "
            f"{bounds}; found {d['closest_sum']}: items {d['closest']}"
        )
    if sol.problem == "subset-sum-max":
        return f"best sum {sol.value} <= {sol.details['capacity']}: items {sol.solution}"
    if sol.details["feasible"]:
        return f"subset summing to {sol.value}: items {sol.solution}"
    return (
        f"no subset sums to {sol.details['target']}; closest below: {sol.details['closest_sum']} "
        f"(items {sol.details['closest']})"
    )


def cli_arguments(parser):
    parser.add_argument("file", help="one integer a line: the target first, then the weights")
    parser.add_argument(
        "--maximize", action="store_true", help="the largest subset sum <= the first number (a capacity)"
    )
    parser.add_argument("--block", type=int, default=None, help="pruning block size e (default: per backend)")
    parser.add_argument(
        "--time-limit",
        default=None,
        help="stop after this many seconds with the best subset sum found and its bounds, exit 1",
    )


def cli_solve(args):
    time_limit = parse_time_limit(args.time_limit, "--time-limit")
    target, weights = read_instance(args.file)
    run = maximize if args.maximize else solve
    sol = run(weights, target, backend=args.backend, block=args.block, time_limit=time_limit)
    warn_unproven(sol)
    return sol
