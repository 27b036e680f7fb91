"""``gpudp bench scale``: a batch's throughput against the number of Dask workers (issue 17), JSON.

LCS lengths of ``--pairs`` pairs of random DNA of ``--length`` x ``--length``, given as two 2-D
arrays, by :func:`gpudp.problems.lcs.solve_many` with ``client=`` a local cluster of ``N`` workers
for each ``N`` of ``--workers``: CPU processes (``--backends cpu``, each with its share of the
cores), or with ``--backends cuda`` one worker a GPU (:func:`gpudp.distributed.cluster`; ``N`` at
most the GPUs). Each cluster first runs a small batch (the
workers compile or load their kernels), then ``--repeat`` timed batches; the single-process solve
on the same backend is the baseline, and every run's values must equal it. Speed-up and
efficiency are against the first worker count.
"""

from __future__ import annotations

import datetime
import statistics
import time

import numpy as np

from gpudp import distributed
from gpudp.backends import device_name
from gpudp.errors import CheckError
from gpudp.problems import lcs

from .instances import random_dna


def bench_arguments(p):
    p.add_argument("--workers", default="1,2,4", help="comma-separated worker counts")
    p.add_argument("--pairs", type=int, default=20_000, help="pairs in the batch")
    p.add_argument("--length", type=int, default=1000, help="length of each sequence")
    p.add_argument("--repeat", type=int, default=3, help="timed runs per worker count (median)")
    p.add_argument("--seed", type=int, default=0)


def cli_bench(args) -> dict:
    rng = np.random.default_rng(args.seed)
    a = np.stack([random_dna(args.length, rng) for _ in range(args.pairs)])
    b = np.stack([random_dna(args.length, rng) for _ in range(args.pairs)])
    cells = args.pairs * args.length * args.length
    backend = args.backends if args.backends in ("cpu", "cuda") else "cpu"
    lcs.solve_many((a[:64], b[:64]), backend=backend)  # warm-up
    t = time.perf_counter()
    want = lcs.solve_many((a, b), backend=backend)
    single = time.perf_counter() - t
    rows = []
    for n in (int(x) for x in args.workers.split(",")):
        with distributed.cluster(workers=n, gpus=backend == "cuda") as client:
            lcs.solve_many((a[:256], b[:256]), backend=backend, client=client)  # the workers compile
            runs = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                got = lcs.solve_many((a, b), backend=backend, client=client)
                runs.append(time.perf_counter() - t)
                if not np.array_equal(got.values, want.values):
                    raise CheckError(f"{n} workers: the values differ from the single process's")
        s = statistics.median(runs)
        rows.append(
            {
                "workers": n,
                "chunks": got.stats.extra["dask_chunks"],
                "seconds_median": s,
                "runs": runs,
                "gcups": cells / s / 1e9,
            }
        )
        print(f"  {n:3d} workers: {s:8.3f} s, {cells / s / 1e9:9.1f} GCUPS", flush=True)
    base = rows[0]["seconds_median"] * rows[0]["workers"] if rows else None
    for r in rows:
        r["speedup_vs_first"] = rows[0]["seconds_median"] / r["seconds_median"]
        r["efficiency_vs_first"] = base / (r["seconds_median"] * r["workers"]) if base else None
    from gpudp.info import info

    return {
        "benchmark": "scale",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "environment": info(),
        "device": device_name(backend),
        "backend": backend,
        "workload": f"LCS lengths of {args.pairs} pairs of random DNA, {args.length} x {args.length}, "
        "as two 2-D arrays, on a local Dask cluster",
        "cells": cells,
        "single_process_seconds": single,
        "results": rows,
        "goal": "batch LCS scores scale >= 0.9 x the number of GPUs (issue 17)",
    }
