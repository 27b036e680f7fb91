"""Where a whole call's time goes: one warm call of an example's solver (or of an interval sweep of
tools/interval_gpu.py, or a batch of pairs) under cProfile, after a warm-up at full size, the
functions by cumulative and by own time, and the call's statistics (``stats.extra``).

    python tools/profile_call.py --example affine_alignment --n 131072 [--backend cuda] [--top 30]
    python tools/profile_call.py --interval triangulation --n 1500 [--backend cuda]
    python tools/profile_call.py --pairs nw --n 1000 [--side 316] [--backend cuda]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from pathlib import Path

import numpy as np
from examples_of import example, module

HERE = Path(__file__).resolve().parent


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--example", help="examples/NAME.py with align(a, b, **sweep_options)")
    ap.add_argument("--interval", help="chain, nussinov or triangulation (tools/interval_gpu.py)")
    ap.add_argument("--pairs", help="nw or sw: sweep_many over --side x --side pairs of --n bytes")
    ap.add_argument("--side", type=int, default=316)
    ap.add_argument("--n", type=int, default=131072)
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    if args.pairs:
        from gpudp import sweep_many

        mod = "local_alignment" if args.pairs == "sw" else "many_alignments"
        ex = example(mod)
        template = ex.SmithWaterman("A", "C") if args.pairs == "sw" else ex.GlobalAlignment("A", "C")
        acgt = np.frombuffer(b"ACGT", np.uint8)
        q = [acgt[rng.integers(0, 4, args.n)].tobytes().decode() for _ in range(args.side)]
        c = [acgt[rng.integers(0, 4, args.n)].tobytes().decode() for _ in range(args.side)]

        def call():
            opts = {"backend": args.backend, "traceback": False, "progress": False}
            res = sweep_many(template, queries=q, choices=c, **opts)
            scores = res.best_values if args.pairs == "sw" else res.values  # read, as a caller would
            assert len(scores) == len(res)
            return res.stats

    elif args.interval:
        from gpudp import sweep

        rec = module(HERE / "interval_gpu.py").instance(args.interval, args.n, rng)

        def call():
            return sweep(rec, backend=args.backend, progress=False).stats

    else:
        ex = example(args.example)
        a = "".join(rng.choice(list("ACGT"), args.n))
        b = "".join(rng.choice(list("ACGT"), args.n))

        def call():
            return ex.align(a, b, backend=args.backend, progress=False)[-1]

    call()  # compile, and every kernel a call of this size needs
    t = time.perf_counter()
    stats = call()
    print(f"warm call {time.perf_counter() - t:.4f} s, kernels {stats.kernel_seconds:.4f} s")
    print({k: v for k, v in stats.extra.items() if not isinstance(v, list | dict) or k == "traceback"})
    prof = cProfile.Profile()
    prof.enable()
    call()
    prof.disable()
    for key in ("cumulative", "tottime"):
        pstats.Stats(prof).sort_stats(key).print_stats(args.top)


if __name__ == "__main__":
    main()
