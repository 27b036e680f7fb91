"""Time a gallery alignment (examples/affine_alignment.py or local_alignment.py) on the GPU over
several tile shapes: which tile suits a cell type (registers a thread, kernel GCUPS).

    python tools/tile_sweep.py OUT.jsonl --example affine_alignment --sizes 131072 \
        --tiles 64x256,128x256,256x256 [--repeat 3]     (a tile "default": the engine's choice)

One JSON line per (size, tile): median seconds of the whole ``align`` after a warm-up, kernel
seconds, GCUPS of both, registers a thread, the device.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
from examples_of import example


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--example", default="affine_alignment")
    ap.add_argument("--sizes", default="131072")
    ap.add_argument("--tiles", default="64x256,128x256,256x256")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    ex = example(args.example)
    rng = np.random.default_rng(0)
    with open(args.out, "w") as out:
        for n in (int(x) for x in args.sizes.split(",")):
            a = "".join(rng.choice(list("ACGT"), n))
            b = "".join(rng.choice(list("ACGT"), n))
            for tile in args.tiles.split(","):
                opts = {"backend": args.backend, "progress": False}
                if tile != "default":  # "default": the engine's own choice
                    opts["tile"] = tuple(int(x) for x in tile.split("x"))
                ex.align(a[:300], b[:300], **opts)  # compile
                times, stats = [], None
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    stats = ex.align(a, b, **opts)[-1]
                    times.append(time.perf_counter() - t)
                med = statistics.median(times)
                row = {
                    "example": args.example,
                    "n": n,
                    "tile": list(opts.get("tile", ())) or "default",
                    "seconds": med,
                    "gcups": n * n / med / 1e9,
                    "kernel_seconds": stats.kernel_seconds,
                    "gcups_kernels": n * n / stats.kernel_seconds / 1e9,
                    "registers_per_thread": stats.extra.get("registers_per_thread"),
                    "store": stats.extra.get("store"),
                    "traceback": stats.extra.get("traceback"),  # checkpoints: rounds, seconds
                    "device": stats.device,
                }
                print(json.dumps(row), flush=True)
                out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
