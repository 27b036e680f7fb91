"""Issue 38's long pairs: ``lcs.solve_many`` and ``edit_distance.solve_many`` of ``--count`` random
DNA pairs of ``--length`` (two 2-D arrays) on the cuda backend, a warp a pair (``LONG_WORDS`` as the
tree has it) against a thread a pair (``LONG_WORDS = 0``), alternating in one process, medians of
``--repeat`` after a warm-up; every value compared between the two. JSON lines, one a run.

    python tools/long_pairs.py OUT.jsonl [--cases 2000x10000,20000x4096,100000x1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from gpudp.problems import edit_distance, lcs
from gpudp.problems.lcs import cuda as lcs_cuda


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--cases", default="2000x10000,20000x4096,100000x1000")
    ap.add_argument("--problems", default="lcs,edit")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    tree = lcs_cuda.LONG_WORDS
    solvers = {"lcs": lcs.solve_many, "edit": edit_distance.solve_many}
    with open(args.out, "w") as out:
        for case in args.cases.split(","):
            count, length = (int(x) for x in case.split("x"))
            a = rng.integers(0, 4, (count, length)).astype(np.uint8)
            b = rng.integers(0, 4, (count, length)).astype(np.uint8)
            for problem in args.problems.split(","):
                first = None
                for long_words in (tree, 0, tree, 0):
                    lcs_cuda.LONG_WORDS = long_words
                    solvers[problem]((a, b), backend="cuda", verify=0)  # warm-up: compile
                    times, kernels = [], []
                    for _ in range(args.repeat):
                        t = time.perf_counter()
                        r = solvers[problem]((a, b), backend="cuda", verify=0)
                        times.append(time.perf_counter() - t)
                        kernels.append(r.stats.kernel_seconds)
                    first = r.values if first is None else first
                    s = statistics.median(times)
                    row = {
                        "problem": problem,
                        "pairs": count,
                        "length": length,
                        "LONG_WORDS": long_words,
                        "seconds": s,
                        "kernel_seconds": statistics.median(kernels),
                        "tcups": count * length * length / s / 1e12,
                        "equal": bool(np.array_equal(r.values, first)),
                        "device": r.stats.device,
                    }
                    print(json.dumps(row), flush=True)
                    out.write(json.dumps(row) + "\n")
    lcs_cuda.LONG_WORDS = tree
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
