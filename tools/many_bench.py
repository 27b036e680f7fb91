"""Time ``gpudp.sweep_many`` against a Python loop over ``gpudp.sweep``: N edit-distance instances
(random DNA strings, ``n x n`` cells each), distances and edit scripts (the tracebacks), on one
backend; writes JSON.

``python tools/many_bench.py [--count 2000] [--n 300] [--backend cpu|cuda|auto] [--loop 200]
[--repeat 3] [--no-traceback] [--json FILE]``

Both sides are warmed up first (a small call that compiles the kernels and starts the GPU). The
batch runs ``--repeat`` times (the median is kept); the loop runs ``sweep`` and its traceback on the
first ``--loop`` instances (0: none; a loop over thousands takes minutes) with the same backend, and
its time is scaled to the whole batch (``loop_seconds_all``). The batch's distances and paths are
compared with the loop's on the instances both ran (``equal``). The JSON holds the device, the
sizes, the seconds and GCUPS of both, the batch's statistics (kernel, walk and compile seconds,
chunks, launches) and the speed-up.
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from edit_distance import EditDistance  # noqa: E402

from gpudp import sweep, sweep_many  # noqa: E402
from gpudp.backends import device_name
from gpudp.backends import resolve as resolve_backend

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("--count", type=int, default=2000, help="instances")
ap.add_argument("--n", type=int, default=300, help="length of both strings (n x n cells an instance)")
ap.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
ap.add_argument("--loop", type=int, default=200, help="instances timed as a loop over sweep (0: none)")
ap.add_argument("--repeat", type=int, default=3)
ap.add_argument("--no-traceback", dest="traceback", action="store_false", help="values only")
ap.add_argument("--seed", type=int, default=0)
ap.add_argument("--json", default=None, help="write the figures here (default: stdout only)")
args = ap.parse_args()

rng = np.random.default_rng(args.seed)
letters = np.array(list("ACGT"))


def word(n):
    return "".join(rng.choice(letters, n))


recs = [EditDistance(word(args.n), word(args.n)) for _ in range(args.count)]
cells = args.count * args.n * args.n
backend = resolve_backend(args.backend, cells)

sweep_many(recs[:4], backend=backend, traceback=args.traceback, progress=False)  # compile, start the GPU
runs, res = [], None
for _ in range(args.repeat):
    t = time.perf_counter()
    res = sweep_many(recs, backend=backend, traceback=args.traceback, progress=False)
    runs.append(time.perf_counter() - t)
many_s = statistics.median(runs)
assert not res.errors, res.errors
out = {
    "tool": "many_bench",
    "device": device_name(backend),
    "backend": backend,
    "count": args.count,
    "n": args.n,
    "cells": cells,
    "traceback": args.traceback,
    "many_seconds": many_s,
    "many_runs": runs,
    "many_gcups": cells / many_s / 1e9,
    "many_kernel_seconds": res.stats.kernel_seconds,
    "many_kernel_gcups": cells / max(res.stats.kernel_seconds, 1e-12) / 1e9,
    "many_stats": res.stats.as_dict(),
}

loop = min(args.loop, args.count)
if loop:
    first = sweep(recs[0], backend=backend, traceback=args.traceback, progress=False)  # compile
    if args.traceback:
        first.traceback((args.n - 1, args.n - 1))
    t = time.perf_counter()
    equal = True
    for k in range(loop):
        r = sweep(recs[k], backend=backend, traceback=args.traceback, progress=False)
        equal &= bool(r.last_row[-1] == res[k].value and np.array_equal(r.last_col, res[k].last_col))
        if args.traceback:
            equal &= bool(np.array_equal(r.traceback((args.n - 1, args.n - 1)), res[k].path))
        r.close()
    loop_s = time.perf_counter() - t
    out.update(
        loop_instances=loop,
        loop_seconds=loop_s,
        loop_seconds_all=loop_s * args.count / loop,
        loop_gcups=loop * args.n * args.n / loop_s / 1e9,
        speedup=loop_s * args.count / loop / many_s,
        equal=equal,
    )

print(
    f"{args.count} x {args.n}^2 edit distance on {backend} ({out['device']}): sweep_many {many_s:.3f} s, "
    f"{out['many_gcups']:.2f} GCUPS (kernel {out['many_kernel_seconds']:.3f} s, "
    f"{out['many_kernel_gcups']:.2f} GCUPS)"
    + (
        f"; loop over sweep {out['loop_seconds']:.3f} s for {loop} ({out['loop_seconds_all']:.2f} s for all, "
        f"{out['loop_gcups']:.3f} GCUPS): x{out['speedup']:.1f}, equal: {out['equal']}"
        if loop
        else ""
    ),
    flush=True,
)
if args.json:
    Path(args.json).write_text(json.dumps(out, indent=2, default=lambda o: o.tolist()) + "\n")
