"""Issue 40's table, again: each row solved by ``gpudp solve ... --backend B`` in a fresh process (warm
kernel cache), wall time as the user sees it, the backend that ran and ``auto``'s reason (which names
the rates it used). Run ``gpudp warmup --calibrate`` first, with the same ``GPUDP_CACHE_DIR``.

    python tools/auto_rows.py [--backends auto,cpu,cuda] [--rows ss48,ss58,tsp26,knap1200,lcs56k]
                              [--scale 1.0] [--out ROWS.jsonl]

The instances are generated (seeded) in the shape of the issue's: subset sum of 48 and 58 int64
weights with no subset hitting the target (the search runs whole), Held-Karp on 26 random cities,
the knapsack DP of 1,200 items at C = 10^6, the LCS of random DNA of 56 k x 72 k. ``--scale``
shrinks the sizes (lengths, capacity; items and cities by its logarithm) for a quick run on a small
machine. A summary line says, per row, whether ``auto`` came within 1.25x of the faster backend.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile

import numpy as np

from gpudp.bench.startup import run_fresh


def _subset_sum(folder, n):
    w = 2 * np.random.default_rng(n).integers(1 << 40, 1 << 48, n)
    path = os.path.join(folder, f"ss{n}.txt")
    with open(path, "w") as f:
        f.write(f"{int(w.sum()) // 2 | 1}\n" + "".join(f"{x}\n" for x in w))
    return ["solve", "subset-sum", path]


def _tsp(folder, n):
    xy = np.random.default_rng(n).integers(0, 1000, (n, 2))
    path = os.path.join(folder, f"r{n}.tsp")
    with open(path, "w") as f:
        f.write(f"NAME: r{n}\nTYPE: TSP\nDIMENSION: {n}\nEDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n")
        f.write("".join(f"{k + 1} {x} {y}\n" for k, (x, y) in enumerate(xy)) + "EOF\n")
    return ["solve", "tsp", path]


def _knapsack(folder, n, cap):
    w = np.random.default_rng(n).integers(1, max(2, 25 * cap // (10 * n)), n)  # not all fit
    path = os.path.join(folder, f"k{n}_{cap}.txt")
    with open(path, "w") as f:
        f.write(f"{n} {cap}\n" + "".join(f"{x + 10} {x}\n" for x in w))
    return ["solve", "knapsack", path, "--method", "dp"]


def _lcs(folder, n, m):
    rng = np.random.default_rng(n)
    paths = []
    for name, length in (("a", n), ("b", m)):
        seq = "".join(rng.choice(list("ACGT"), length))
        paths.append(os.path.join(folder, f"{name}{length}.fa"))
        with open(paths[-1], "w") as f:
            f.write(f">{name}\n" + "\n".join(seq[k : k + 70] for k in range(0, length, 70)) + "\n")
    return ["solve", "lcs", *paths]


def rows(scale: float) -> dict:
    """Row name -> a function of the folder that writes the instance and returns the argv."""
    less = int(round(math.log2(scale))) if scale < 1 else 0  # items and cities: the work is exponential
    return {
        "ss48": lambda d: _subset_sum(d, 48 + 2 * less),
        "ss58": lambda d: _subset_sum(d, 58 + 2 * less),
        "tsp26": lambda d: _tsp(d, 26 + less),
        "knap1200": lambda d: _knapsack(d, 1200, int(1e6 * scale)),
        "lcs56k": lambda d: _lcs(d, int(56_000 * scale), int(72_000 * scale)),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backends", default="auto,cpu,cuda")
    ap.add_argument("--rows", default="ss48,ss58,tsp26,knap1200,lcs56k")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    made = rows(args.scale)
    cache = os.environ.get("GPUDP_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "gpudp")
    out = open(args.out, "w") if args.out else None
    with tempfile.TemporaryDirectory() as folder:
        for name in args.rows.split(","):
            argv = made[name](folder)
            walls = {}
            for be in args.backends.split(","):
                r = run_fresh(argv, be, cache, timeout=590)
                walls[be] = r["wall_seconds"] if not r["exit"] else math.inf
                print(
                    f"{name:9s} {be:4s} wall {r['wall_seconds']:7.2f} s  ran {r.get('backend')}  "
                    f"{r.get('backend_choice') or r.get('stderr', '')}",
                    flush=True,
                )
                if out:
                    out.write(json.dumps({"row": name, "asked": be, **r}) + "\n")
            sides = [walls[b] for b in ("cpu", "cuda") if b in walls]
            if "auto" in walls and sides:
                ok = walls["auto"] <= 1.25 * min(sides)
                verdict = "within" if ok else "NOT within"
                print(f"{name:9s} auto {verdict} 1.25x of the faster side", flush=True)
    if out:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
