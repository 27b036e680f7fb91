"""Where a whole call's time goes: one warm call of an example's solver (or of an interval sweep of
tools/interval_gpu.py, or a batch of pairs) under cProfile, after a warm-up at full size, the
functions by cumulative and by own time, and the call's statistics (``stats.extra``).

    python tools/profile_call.py --example affine_alignment --n 131072 [--backend cuda] [--top 30]
    python tools/profile_call.py --interval triangulation --n 1500 [--backend cuda]
    python tools/profile_call.py --pairs nw --n 1000 [--side 316] [--backend cuda] [--timeline]

``--timeline`` (with ``--pairs``): instead of cProfile, the milliseconds from the call's start at which
each step of ``sweep_many`` began and ended on the host (intake, the runner, each chunk's start and
wait, the scores read), and on the GPU the first chunk's first kernel and the last one's end: the
time before the GPU starts and after it stops is what the whole call adds to its kernels.
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
    ap.add_argument("--timeline", action="store_true", help="--pairs: when each step ran, host and GPU")
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
    if args.timeline and args.pairs:
        for _ in range(3):
            timeline(call)
        return
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


def timeline(call) -> None:
    """One call with each step of sweep_many's path timed (host milliseconds from the call's start)
    and its first and last GPU events placed on the same clock."""
    from numba import cuda

    from gpudp import many
    from gpudp.many import cuda as mcuda

    marks, handles = [], []
    t0 = time.perf_counter()

    def timed(owner, name, label):
        fn = getattr(owner, name)

        def wrapper(*a, **kw):
            s = time.perf_counter()
            r = fn(*a, **kw)
            marks.append((label, (s - t0) * 1e3, (time.perf_counter() - t0) * 1e3))
            if name == "start":
                handles.append(r)
            return r

        setattr(owner, name, wrapper)
        return fn

    spots = [
        (many, "intake_pairs", "intake"),
        (many, "choose_backend", "backend"),
        (many, "device_name", "device_name"),
        (many, "values_only", "values_only"),
        (many, "default_budget", "budget"),
        (many._Batch, "__init__", "batch"),
        (many, "_narrowed", "narrowed"),
        (many, "cut", "cut"),
        (mcuda.Runner, "__init__", "runner"),
        (mcuda.Runner, "start", "start"),
        (mcuda._Handle, "wait", "wait"),
        (many._Batch, "finish", "finish"),
        (many.Items, "values", "values"),
        (many.Items, "best_values", "best_values"),
    ]
    saved = [(o, n, timed(o, n, lab)) for o, n, lab in spots]
    try:
        e0 = cuda.event()
        t0 = time.perf_counter()
        e0.record()
        call()
        t1 = (time.perf_counter() - t0) * 1e3
    finally:
        for o, n, fn in saved:
            setattr(o, n, fn)
    first = e0.elapsed_time(handles[0].start) if handles and handles[0].start else float("nan")
    last = e0.elapsed_time(handles[-1].end) if handles and handles[-1].end else float("nan")
    print(f"call {t1:.1f} ms; GPU: first kernel at {first:.1f} ms, last kernel ends at {last:.1f} ms")
    for label, s, e in marks:
        print(f"  {label:12s} {s:8.2f} -> {e:8.2f} ms ({e - s:6.2f})")


if __name__ == "__main__":
    main()
