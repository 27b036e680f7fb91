"""Measure where the GPU starts to win, per bundled solver: each size solved in a fresh process on the
cpu, on cuda and by ``auto``, with a warm kernel cache, wall time as the user sees it.

    python tools/crossover.py OUT.jsonl [--repeat 3] [--problems lcs,knapsack,tsp,subset-sum]

Each line of OUT.jsonl is one (problem, size, backend) with its median wall seconds, the backend that
ran and, for ``auto``, the reason it gave. The summary on stderr says for each size which backend was
faster and whether ``auto`` chose it (or came within 10 % + 0.2 s of the better one). The figures
calibrate :data:`gpudp.backends.GPU_START_S` and :data:`gpudp.backends.CPU_CELLS_PER_THREAD_S`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from gpudp.bench.startup import run_fresh

rng = np.random.default_rng(7)


def _fasta(path, seq):
    with open(path, "w") as f:
        f.write(">s\n" + "\n".join(seq[k : k + 70] for k in range(0, len(seq), 70)) + "\n")


def lcs(folder, n):
    a, b = os.path.join(folder, f"a{n}.fa"), os.path.join(folder, f"b{n}.fa")
    _fasta(a, "".join(rng.choice(list("ACGT"), n)))
    _fasta(b, "".join(rng.choice(list("ACGT"), n)))
    return ["solve", "lcs", a, b], n * n


def knapsack(folder, cap):
    n = 1000
    path = os.path.join(folder, f"k{cap}.txt")
    w = rng.integers(1, max(2, 2 * cap // n * 2), n)
    with open(path, "w") as f:
        f.write(f"{n} {cap}\n" + "".join(f"{x + 10} {x}\n" for x in w))
    return ["solve", "knapsack", path, "--method", "dp"], n * (cap + 1)


def tsp(folder, n):
    path = os.path.join(folder, f"r{n}.tsp")
    xy = rng.integers(0, 1000, (n, 2))
    with open(path, "w") as f:
        f.write(f"NAME: r{n}\nTYPE: TSP\nDIMENSION: {n}\nEDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n")
        f.write("".join(f"{k + 1} {x} {y}\n" for k, (x, y) in enumerate(xy)) + "EOF\n")
    return ["solve", "tsp", path], (n - 1) ** 2 * 2 ** (n - 1)


def subset_sum(folder, n):
    path = os.path.join(folder, f"s{n}.txt")
    w = rng.integers(1, 1 << 40, n)
    with open(path, "w") as f:
        f.write(f"{int(w[::3].sum())}\n" + "".join(f"{x}\n" for x in w))
    return ["solve", "subset-sum", path], n * 2 ** (n // 2)


PROBLEMS = {
    "lcs": (lcs, [1000, 4000, 10000, 20000, 40000, 80000]),
    "knapsack": (knapsack, [10_000, 100_000, 1_000_000, 4_000_000, 10_000_000]),
    "tsp": (tsp, [10, 14, 17, 19, 21, 23]),
    "subset-sum": (subset_sum, [24, 32, 40, 46, 52]),
}


def run(argv, backend, cache_dir):
    r = run_fresh(argv, backend, cache_dir, timeout=600)
    if r["exit"]:
        return {"wall": r["wall_seconds"], "error": r.get("stderr")}
    return {"wall": r["wall_seconds"], "backend": r.get("backend"), "why": r.get("backend_choice")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--problems", default=",".join(PROBLEMS))
    args = ap.parse_args()
    # the fixed costs themselves: a process that imports numba, and one that starts CUDA
    for what, code in (
        ("python + numba", "import numba"),
        ("python + numba-cuda + context", "from numba import cuda; cuda.current_context()"),
        ("gpudp cpu threads", "import numba; print(numba.get_num_threads())"),
    ):
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        print(f"{what}: {time.perf_counter() - t:.2f} s {r.stdout.strip()}", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory() as folder, open(args.out, "w") as out:
        cache_dir = os.environ.get("GPUDP_CACHE_DIR") or os.path.join(folder, "cache")
        for name in args.problems.split(","):
            make, sizes = PROBLEMS[name]
            for size in sizes:
                argv, work = make(folder, size)
                row = {"problem": name, "size": size, "work": work}
                for be in ("cpu", "cuda", "auto"):
                    if size == sizes[0]:
                        run(argv, be, cache_dir)  # fill the kernel cache: the figures are warm ones
                    runs = [run(argv, be, cache_dir) for _ in range(args.repeat)]
                    bad = [r for r in runs if "error" in r]
                    row[be] = {
                        "median_wall": statistics.median(r["wall"] for r in runs),
                        "ran": runs[-1].get("backend"),
                        "why": runs[-1].get("why"),
                        "error": bad[0]["error"] if bad else None,
                    }
                best = min(row["cpu"]["median_wall"], row["cuda"]["median_wall"])
                row["auto_ok"] = row["auto"]["median_wall"] <= 1.1 * best + 0.2
                out.write(json.dumps(row) + "\n")
                out.flush()
                print(
                    f"{name:10s} {size:>9} work {work:.2e}: cpu {row['cpu']['median_wall']:6.2f} s, "
                    f"cuda {row['cuda']['median_wall']:6.2f} s, auto {row['auto']['median_wall']:6.2f} s "
                    f"({row['auto']['ran']}) {'ok' if row['auto_ok'] else 'WORSE'}",
                    file=sys.stderr,
                    flush=True,
                )


if __name__ == "__main__":
    main()
