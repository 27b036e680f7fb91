"""Subset sum with gpudp: an exact target, and the fairest split of a set into two piles.

    python examples/subset_sum.py [--n 40] [--seed 1] [--backend auto|cpu|cuda]

``solve`` finds items summing exactly to a target (or proves there are none); ``maximize`` finds the
largest sum not above a capacity, which is what a fair split needs: the best pile under half the
total makes the other pile as close as it can be. Both use the two-list algorithm of Wan et al. on
the GPU (docs/subset_sum.md), and both answers come back checked.
"""

from __future__ import annotations

import argparse

import numpy as np

from gpudp.problems import subset_sum


def fair_split(weights, backend="auto"):
    """Two piles of indices whose sums differ as little as possible; returns (pile, rest, difference)."""
    total = sum(weights)
    best = subset_sum.maximize(weights, total // 2, backend=backend)
    pile = best.solution
    rest = sorted(set(range(len(weights))) - set(pile))
    return pile, rest, total - 2 * best.value


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=40, help="number of random weights")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    args = p.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    weights = rng.integers(1, 10**8, args.n, endpoint=True).tolist()

    # 1. An exact target: the sum of a random half of the items, so a subset certainly exists.
    target = sum(w for w, keep in zip(weights, rng.random(args.n) < 0.5, strict=True) if keep)
    sol = subset_sum.solve(weights, target, backend=args.backend)
    print(f"target {target}: items {sol.solution}")
    print(f"  {sol.stats.backend} on {sol.stats.device}, {sol.stats.seconds * 1e3:.1f} ms (first call: JIT)")

    # 2. Doubled weights and an odd target: no subset can exist, and the full search proves it; the
    #    closest sum below the target comes back as the witness.
    doubled = [2 * w for w in weights]
    sol = subset_sum.solve(doubled, target * 2 + 1, backend=args.backend)
    print(f"odd target {target * 2 + 1} over doubled weights: feasible={sol.details['feasible']}, ", end="")
    print(f"closest {sol.details['closest_sum']}")

    # 3. The fairest split into two piles.
    pile, rest, diff = fair_split(weights, backend=args.backend)
    print(f"fair split: {len(pile)} + {len(rest)} items, sums differ by {diff}")
    return diff


if __name__ == "__main__":
    main()
