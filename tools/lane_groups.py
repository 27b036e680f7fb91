"""A/B of the tiled CUDA kernel's lane groups (gpudp.backends.cuda.tiled.LANE_GROUPS) on the GPU:
the gallery's Smith-Waterman and Gotoh forward sweeps (values only) and their whole alignments.

    python tools/lane_groups.py OUT.json [--size 131072] [--groups 1,2,4,8] \
        [--tiles 256x256,256x1024] [--repeat 3]

For each class, tile and group count: the median of ``--repeat`` warm sweeps (``traceback=False``,
random DNA), kernel seconds and GCUPS, and whether the last row, column and best cell equal the
first group count's (they must); then each example's ``align`` with its alignment (store "auto")
per group count, the whole call's median and a digest of the answer (equal across groups). The
groups are switched in one process (the kernels are keyed by them). One JSON list, printed as it
goes, one line a row.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import time

import numpy as np
from examples_of import example

from gpudp import sweep
from gpudp.backends.cuda import tiled


def _median_of(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--size", type=int, default=1 << 17)
    ap.add_argument("--groups", default="1,2,4,8")
    ap.add_argument("--tiles", default="256x256,256x1024")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    n = args.size
    groups = [int(g) for g in args.groups.split(",")]
    tiles = [tuple(int(x) for x in t.split("x")) for t in args.tiles.split(",")]
    rng = np.random.default_rng(0)
    a, b = ("".join(rng.choice(list("ACGT"), n)) for _ in range(2))
    sw, go = example("local_alignment"), example("affine_alignment")
    rows = []

    def emit(row):
        rows.append(row)
        print(json.dumps(row), flush=True)

    for cls in (sw.SmithWaterman, go.Gotoh):
        rec, first = cls(a, b), None
        for tile in tiles:
            for g in groups:
                tiled.LANE_GROUPS = g
                sweep(rec, backend="cuda", tile=tile, traceback=False, progress=False)  # compile, warm
                sweeps = []

                def run(rec=rec, tile=tile, sweeps=sweeps):
                    sweeps.append(sweep(rec, backend="cuda", tile=tile, traceback=False, progress=False))
                    return sweeps[-1]

                whole, r = _median_of(run, args.repeat)
                k = statistics.median(s.stats.kernel_seconds for s in sweeps)
                answer = (np.asarray(r.last_row).tobytes(), np.asarray(r.last_col).tobytes())
                answer += (str(r.best_value), str(r.best_cell))
                first = first or answer
                emit(
                    dict(cls=cls.__name__, tile=list(tile), groups=g, kernel_s=k, whole_s=whole,
                         kernel_gcups=n * n / k / 1e9, same=answer == first)
                )  # fmt: skip
    for name, align in (("SmithWaterman", sw.align), ("Gotoh", go.align)):
        for g in groups:
            tiled.LANE_GROUPS = g
            align(a[:3000], b[:3000], backend="cuda", store="checkpoints")  # the traceback's kernels too
            whole, res = _median_of(lambda align=align: align(a, b, backend="cuda"), args.repeat)
            digest = hashlib.sha256(repr(res[:-1]).encode()).hexdigest()[:16]
            emit(dict(align=name, groups=g, whole_s=whole, gcups=n * n / whole / 1e9, answer=digest))
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
