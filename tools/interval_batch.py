"""Batches of interval recurrences (``sweep_many`` of :class:`~gpudp.IntervalRecurrence`): many RNA
sequences folded (examples/rna_folding.py's Nussinov) and many matrix chains ordered, on each
backend, against the same instances swept one by one with ``gpudp.sweep`` (a sample of them).

    python tools/interval_batch.py OUT.json [--cases nussinov:10000x150,chain:20000x60]
        [--backends cpu,cuda] [--repeat 3] [--traceback 0|1] [--warp-from 48,0]

Every batch's values are compared with the cpu backend's batch (and the sample with gpudp.sweep);
figures are medians of ``--repeat`` whole calls after a warm-up; cells are the tables' upper
triangles, work the split points read (n^3 / 6 an instance).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
from examples_of import example

from gpudp import sweep, sweep_many
from gpudp.backends import device_name
from gpudp.info import info


def instances(problem: str, count: int, length: int, rng) -> list:
    """``count`` instances of lengths ``length / 2 .. length``."""
    sizes = rng.integers(max(length // 2, 1), length + 1, count)
    if problem == "nussinov":
        fold = example("rna_folding")
        return [fold.Nussinov("".join(rng.choice(list("ACGU"), n))) for n in sizes]
    chain = example("matrix_chain")
    return [chain.MatrixChain(rng.integers(1, 100, n + 1)) for n in sizes]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--cases", default="nussinov:10000x150,chain:20000x60")
    ap.add_argument("--backends", default="cpu,cuda")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--traceback", type=int, default=1)
    ap.add_argument("--warp-from", default=None, help="cuda: INTERVAL_WARP_FROM values to compare, e.g. 48,0")
    args = ap.parse_args(argv)
    warp_froms = [None] if args.warp_from is None else [int(x) for x in args.warp_from.split(",")]
    rng = np.random.default_rng(0)
    rows = []
    for case in args.cases.split(","):
        problem, shape = case.split(":")
        count, length = (int(x) for x in shape.split("x"))
        recs = instances(problem, count, length, rng)
        sizes = np.array([r.size() for r in recs], np.int64)
        cells, work = int((sizes * (sizes + 1) // 2).sum()), int((sizes**3 // 6).sum())
        want = None
        runs = [(b, w) for b in args.backends.split(",") for w in (warp_froms if b == "cuda" else [None])]
        for backend, warp_from in runs:
            if warp_from is not None:  # 0: no warps (a thread an instance throughout)
                from gpudp.many.intervals import cuda as many_cuda

                many_cuda.INTERVAL_WARP_FROM = warp_from or 1 << 40
            traceback = bool(args.traceback)
            sweep_many(recs[:8], backend=backend, traceback=traceback, progress=False)  # compile
            times, res = [], None
            for _ in range(args.repeat):
                t = time.perf_counter()
                res = sweep_many(recs, backend=backend, traceback=traceback, progress=False)
                values = res.values
                times.append(time.perf_counter() - t)
            assert not res.errors, list(res.errors.items())[:3]
            if want is None:
                want = values
                for k in range(0, count, max(count // 5, 1)):  # a sample against gpudp.sweep
                    assert values[k] == sweep(recs[k], backend="cpu").value(0, sizes[k] - 1)
            seconds = statistics.median(times)
            row = {
                "problem": problem,
                "instances": count,
                "length": length,
                "backend": backend,
                "device": device_name(backend),
                "traceback": traceback,
                "warp_from": warp_from,
                "cuda": res.stats.extra.get("cuda"),
                "seconds": seconds,
                "kernel_seconds": res.stats.kernel_seconds,
                "per_instance_ms": seconds / count * 1e3,
                "gcups": cells / seconds / 1e9,
                "split_points_per_s": work / seconds,
                "equal": values == want,
                "versions": info() if not rows else None,
            }
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "versions"}), flush=True)
    Path(args.out).write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    main()
