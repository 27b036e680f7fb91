"""Interval recurrences on the GPU against the cpu backend on all the host's threads (issue 37's
goal: the GPU >= 10x): matrix-chain order, Nussinov folding and a polygon's minimum-weight
triangulation, each with its decisions; the two backends' tables and decisions must be equal.

    python tools/interval_gpu.py OUT.json [--problems chain,nussinov,triangulation]
        [--sizes 2000,2000,1500] [--repeat 3]

A warm-up sweep of each first (compile), then one with the backend's host pool emptied
(``first_seconds``: its result's block allocated, page-locked on the GPU); figures are medians of
``--repeat`` whole sweeps, and the GPU's kernel seconds; ``split_loop`` says whether a warp shared
each cell's split points (:mod:`gpudp.interval.split`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numba
import numpy as np
from examples_of import example

from gpudp import IntervalRecurrence, backends, sweep


class Triangulation(IntervalRecurrence):
    """The convex polygon's triangulation of least total perimeter: ``T[i, j]`` the best of the
    polygon ``i .. j``, a split vertex ``k`` making the triangle ``(i, k, j)`` (the perimeters from a
    table of distances, so that both backends add the same float64 numbers)."""

    value_dtype = np.float64
    fill = 0.0
    decision_bits = 16

    def __init__(self, dist):
        self.dist = np.ascontiguousarray(dist, np.float64)

    def size(self):
        return len(self.dist)

    def data(self):
        return (self.dist,)

    @staticmethod
    def cell(i, j, T, dist):
        if j - i < 2:
            return 0.0, 0
        best, at = np.inf, 0
        for k in range(i + 1, j):
            c = T[i, k] + T[k, j] + dist[i, k] + dist[k, j] + dist[i, j]
            if c < best:
                best, at = c, k - i
        return best, at

    @staticmethod
    def back(i, j, a, dist):
        if j - i < 2:
            return -1, -1, -1, -1
        return i, i + a, i + a, j


def instance(problem: str, n: int, rng):
    if problem == "chain":
        return example("matrix_chain").MatrixChain(rng.integers(1, 101, n + 1).astype(np.int64))
    if problem == "nussinov":
        return example("rna_folding").Nussinov("".join(rng.choice(list("ACGU"), n)), 3)
    if problem == "triangulation":
        t = np.sort(rng.random(n)) * 2 * np.pi
        xy = np.stack([np.cos(t), np.sin(t)], 1)
        return Triangulation(np.sqrt(((xy[:, None] - xy[None]) ** 2).sum(-1)))
    raise SystemExit(f"unknown problem {problem}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--problems", default="chain,nussinov,triangulation")
    ap.add_argument("--sizes", default="2000,2000,1500", help="one size a problem, in order")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(1)
    rows = []
    for problem, n in zip(args.problems.split(","), (int(x) for x in args.sizes.split(",")), strict=True):
        rec = instance(problem, n, rng)
        results = {}
        for backend in ("cpu", "cuda"):
            sweep(rec, backend=backend, progress=False)  # compile
            backends.get(backend).host_pool().trim(0)  # a first sweep's host block: allocated now
            t = time.perf_counter()
            sweep(rec, backend=backend, progress=False)
            first = time.perf_counter() - t
            times, kernels = [], []
            for _ in range(args.repeat):
                t = time.perf_counter()
                r = sweep(rec, backend=backend, progress=False)
                times.append(time.perf_counter() - t)
                kernels.append(r.stats.kernel_seconds)
            results[backend] = r
            row = {
                "problem": problem,
                "n": n,
                "backend": backend,
                "threads": numba.config.NUMBA_NUM_THREADS if backend == "cpu" else None,
                "seconds": statistics.median(times),
                "kernel_seconds": statistics.median(kernels),
                "first_seconds": first,
                "split_loop": r.stats.extra.get("split_loop"),
                "launch_seconds": r.stats.extra.get("launch_seconds"),  # cuda: [d0, d1, seconds] a launch
                "group_widths": r.stats.extra.get("group_widths"),  # cuda: [d0, d1, threads] a block a cell
                "device": r.stats.device,
            }
            rows.append(row)
            brief = {k: v for k, v in row.items() if k not in ("launch_seconds", "group_widths")}
            print(json.dumps(brief), flush=True)
        a, b = results["cpu"], results["cuda"]
        same = np.array_equal(a.table, b.table) and np.array_equal(a.decisions, b.decisions)
        if not same:
            raise SystemExit(f"{problem} n = {n}: the cuda table or decisions differ from the cpu's")
        rows[-1]["cpu_over_cuda"] = rows[-2]["seconds"] / rows[-1]["seconds"]
        print(f"{problem} n = {n}: cuda {rows[-1]['cpu_over_cuda']:.1f}x the cpu, equal tables", flush=True)
    Path(args.out).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
