"""Time the interval sweep's CPU backend against a plain one-thread @njit loop of the same recurrence.

    .venv/bin/python tools/interval_bench.py [--sizes 500,2000] [--repeat 3] [--threads 1,2]

Matrix-chain order (examples/matrix_chain.py) on random dimensions 1..100; both sides store every
cell's value and split point (int64 and uint16, n x n, row-major). Compilation is excluded (a warm-up
sweep first); each figure is the best of ``--repeat`` runs. Prints one JSON line per size and thread
count, with the ratio gpudp / plain (goal: within 2x).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
from functools import partial
from pathlib import Path

import numba
import numpy as np

from gpudp import sweep
from gpudp.jit import njit

ROOT = Path(__file__).resolve().parent.parent


def _example():
    spec = importlib.util.spec_from_file_location("matrix_chain", ROOT / "examples" / "matrix_chain.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@njit(cache=True)
def plain_matrix_chain(p):
    """The textbook loop: lengths 2..n, every split point, values and decisions stored."""
    n = len(p) - 1
    T = np.zeros((n, n), np.int64)
    D = np.zeros((n, n), np.uint16)
    for d in range(1, n):
        for i in range(n - d):
            j = i + d
            best, split = T[i, i] + T[i + 1, j] + p[i] * p[i + 1] * p[j + 1], i
            for k in range(i + 1, j):
                cost = T[i, k] + T[k + 1, j] + p[i] * p[k + 1] * p[j + 1]
                if cost < best:
                    best, split = cost, k
            T[i, j] = best
            D[i, j] = split
    return T, D


def run_gpudp(rec, kernel_seconds: list, backend: str = "cpu") -> None:
    kernel_seconds.append(sweep(rec, backend=backend, progress=False).stats.kernel_seconds)


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,2000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", default=f"1,{numba.config.NUMBA_NUM_THREADS}")
    parser.add_argument("--cuda", action="store_true", help="time the cuda backend too (same answer)")
    args = parser.parse_args(argv)
    mc = _example()
    rng = np.random.default_rng(1)
    for n in (int(x) for x in args.sizes.split(",")):
        p = rng.integers(1, 101, n + 1).astype(np.int64)
        want, _ = plain_matrix_chain(p)  # compile, and the answer to check against
        res = sweep(mc.MatrixChain(p), backend="cpu", progress=False)
        assert res.value(0, n - 1) == want[0, n - 1]
        plain = best_of(partial(plain_matrix_chain, p), args.repeat)
        for threads in sorted({int(x) for x in args.threads.split(",")}):
            numba.set_num_threads(threads)
            kernel = []
            total = best_of(partial(run_gpudp, mc.MatrixChain(p), kernel), args.repeat)
            row = {
                "n": n,
                "threads": threads,
                "plain_s": round(plain, 4),
                "gpudp_s": round(total, 4),
                "gpudp_kernel_s": round(min(kernel), 4),
                "ratio": round(total / plain, 2),
                "split_reads": n * (n + 1) * (n + 2) // 6,
            }
            print(json.dumps(row), flush=True)
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        if args.cuda:
            res = sweep(mc.MatrixChain(p), backend="cuda", progress=False)  # compile; the same answer
            if res.value(0, n - 1) != want[0, n - 1]:
                raise SystemExit(f"n = {n}: cuda gives {res.value(0, n - 1)}, plain {want[0, n - 1]}")
            kernel = []
            total = best_of(partial(run_gpudp, mc.MatrixChain(p), kernel, "cuda"), args.repeat)
            row = {"n": n, "backend": "cuda", "plain_s": round(plain, 4), "gpudp_s": round(total, 4)}
            row.update(gpudp_kernel_s=round(min(kernel), 4), ratio=round(total / plain, 2))
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
