"""The full decision store against checkpoints, for alignments with their path: the gallery's
Smith-Waterman (2 bits a cell) and Gotoh (4 bits), and LCS (1 bit), at several sizes; what
``store="auto"`` picks beside (the backend's ``full_store_max``).

    python tools/store_bench.py OUT.json [--sizes 32768,65536,131072] [--backend cuda] [--repeat 3]

Each row: the median seconds of the whole call (sweep and path) after a warm-up, per store, the
decision bytes of the full store, and the two scores (equal, or the run stops).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np
from gallery_bench import gotoh, local  # the gallery's examples, loaded once (tools/ is on the path)

from gpudp.info import info
from gpudp.problems import lcs


def _run(problem, a, b, backend, store):
    if problem == "lcs":
        s = lcs.solve(a, b, backend=backend, store=store)
        return s.value, s.stats
    text_a, text_b = (x.tobytes().decode() for x in (a, b))
    align = local.align if problem == "sw" else gotoh.align
    out = align(text_a, text_b, backend=backend, store=store)
    return out[0], out[-1]


BITS = {"lcs": 1, "sw": 2, "gotoh": 4}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--sizes", default="32768,65536,131072")
    p.add_argument("--problems", default="lcs,sw,gotoh")
    p.add_argument("--backend", default="cuda")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    rng = np.random.default_rng(11)
    rows = []
    for problem in args.problems.split(","):
        for n in (int(x) for x in args.sizes.split(",")):
            a = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, n)].copy()
            b = np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, n)].copy()
            times, scores, picked = {}, {}, None
            for store in ("full", "checkpoints", "auto"):
                scores[store], stats = _run(problem, a, b, args.backend, store)  # warm-up
                ts = []
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    _, stats = _run(problem, a, b, args.backend, store)
                    ts.append(time.perf_counter() - t)
                times[store] = statistics.median(ts)
                if store == "auto":
                    picked = "checkpoints" if "checkpoint_bytes" in stats.extra else "full"
            if len(set(map(int, scores.values()))) != 1:
                sys.exit(f"{problem} n={n}: scores differ {scores}")
            row = {
                "problem": problem,
                "n": n,
                "decision_bytes": (n + 1) * (n + 1) * BITS[problem] // 8,
                "seconds": times,
                "auto_picked": picked,
                "score": int(scores["full"]),
            }
            rows.append(row)
            print(
                f"{problem:6} n={n:7} {row['decision_bytes'] / 2**30:6.2f} GiB  full {times['full']:.4f} s  "
                f"checkpoints {times['checkpoints']:.4f} s  auto {times['auto']:.4f} s ({picked})",
                flush=True,
            )
    with open(args.out, "w") as f:
        json.dump({"info": info(), "rows": rows}, f, indent=1, default=str)


if __name__ == "__main__":
    main()
