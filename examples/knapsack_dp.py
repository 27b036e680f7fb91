"""0/1 knapsack by dense dynamic programming: a Pisinger file, then Boyer et al.'s class.

    python examples/knapsack_dp.py [--n 2000] [--seed 0] [--backend auto|cpu|cuda]

The first solve reads a bundled instance (optimum 9767); the second builds Boyer, El Baz &
Elkihel's strongly correlated class (w uniform in [1, 1000], p = w + 50, C = sum(w) / 2) and prints
what the sweep computed and stored: the cells left after Toth's trimming and the upper trim, and
the band-compressed decisions beside the full table's bits. Both answers are checked against the
instance before they return.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from gpudp.bench.instances import boyer_instance
from gpudp.problems.knapsack import dp as knapsack_dp
from gpudp.problems.knapsack.io import read_knapsack

HERE = Path(__file__).resolve().parent
F8 = HERE.parent / "tests" / "data" / "knapsack" / "f8_l-d_kp_23_10000"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    args = ap.parse_args(argv)

    inst = read_knapsack(F8)
    sol = knapsack_dp.solve_instance(inst, backend=args.backend)
    taken = np.flatnonzero(sol.solution)
    print(f"{inst.name}: optimum {sol.value} with items {taken.tolist()} (weight {sol.details['weight']})")

    p, w, c = boyer_instance(args.n, args.seed)
    sol = knapsack_dp.solve(p, w, c, backend=args.backend)
    st = sol.stats
    print(
        f"Boyer class n={args.n}, C={c}: optimum {sol.value}, {int(sol.solution.sum())} items, "
        f"weight {sol.details['weight']} ({st.backend}, {st.seconds:.2f} s)"
    )
    print(
        f"cells computed {st.cells:,} of {args.n * (c + 1):,}; decisions stored "
        f"{st.extra['decision_store_bytes']:,} bytes of {st.extra['uncompressed_bytes']:,} "
        f"({100 * st.extra['compression']:.3f}%)"
    )
    return sol


if __name__ == "__main__":
    main()
