"""``gpudp bench lcs``: the LCS plug-in against its peers on random DNA, written as JSON.

For each size n (both strings of length n) and each backend: one cold solve (compilation, pinned
memory), then ``--repeat`` timed solves; medians of the sweep (kernels + eviction, end to end),
of the kernels alone (CUDA events) and of the whole solve (with traceback and check). Peers on the
same machine: rapidfuzz's bit-parallel LCSseq (length only, one core) and a hand-written numba
row loop (length only, one core), beside the cpu backend run on one thread.
"""

from __future__ import annotations

import datetime
import statistics
import sys
import time

import numba
import numpy as np

from gpudp.backends import device_name
from gpudp.errors import CheckError
from gpudp.problems.lcs import solve
from gpudp.problems.lcs.pair import METHODS

from . import options
from .instances import random_dna


def bench_arguments(p):
    p.add_argument(
        "--sizes",
        type=options.int_list(1),
        default="32768,131072",
        help="comma-separated string lengths (default 2^15,2^17)",
    )
    p.add_argument(
        "--repeat",
        type=options.non_negative_int,
        default=3,
        help="timed runs per size and backend (median; 0: the cold run)",
    )
    p.add_argument("--seed", type=options.seed, default=0)
    p.add_argument(
        "--peer-max-size",
        type=options.non_negative_int,
        default=32768,
        help="largest size for the single-core peers and the one-thread cpu run",
    )
    p.add_argument(
        "--cpu-max-size",
        type=options.non_negative_int,
        default=1 << 17,
        help="largest size for the cpu backend",
    )
    p.add_argument(
        "--tile",
        type=options.int_list(1, count=2),
        default=None,
        help="tile ROWS,COLS for the tiled sweep (tuning)",
    )
    p.add_argument(
        "--store",
        choices=["auto", "full", "checkpoints"],
        default="auto",
        help="the traceback's decisions: a full store, or checkpoints and blocks swept again (linear "
        "space); auto: checkpoints when the full store would not fit the memory budget",
    )
    p.add_argument(
        "--checkpoint-every", type=options.positive_int, default=None, help="K, the checkpoints' spacing"
    )
    p.add_argument(
        "--method",
        choices=list(METHODS),
        default="wavefront",
        help="lcs.solve's method: the engine's sweep (default: the figures this benchmark has always "
        "given), the pair's bit vectors on one CPU thread, or auto",
    )


@numba.njit(cache=True, nogil=True)
def handwritten_lcs_length(a, b):
    """The plain serial numba loop the cpu backend is held to: one row, no traceback."""
    m = b.shape[0]
    row = np.zeros(m + 1, np.int32)
    for i in range(a.shape[0]):
        diag = 0
        left = 0
        ai = a[i]
        for j in range(m):
            up = row[j + 1]
            if ai == b[j]:
                v = diag + 1
            elif up >= left:
                v = up
            else:
                v = left
            diag = up
            left = v
            row[j + 1] = v
    return row[m]


def _timed(fn, repeat):
    """The peers' runs: ``repeat`` of them, one where ``--repeat 0`` (the cold run) is asked for."""
    out = []
    for _ in range(max(1, repeat)):
        t = time.perf_counter()
        val = fn()
        out.append((time.perf_counter() - t, val))
    return out


def cli_bench(args) -> dict:
    sizes = args.sizes
    tile = tuple(args.tile) if args.tile else None
    backends = options.backend_list(args.backends)
    rng = np.random.default_rng(args.seed)
    results, peers = [], []
    warm = random_dna(2048, rng)
    opts = {"tile": tile, "store": args.store, "checkpoint_every": args.checkpoint_every}
    opts["method"] = args.method
    for backend in backends:
        solve(warm, warm[::-1].copy(), backend=backend, progress=False, **opts)
    handwritten_lcs_length(warm[:64], warm[:64])
    for n in sizes:
        a, b = random_dna(n, rng), random_dna(n, rng)
        for backend in backends:
            if backend == "cpu" and n > args.cpu_max_size:
                continue
            results.append(_bench_backend(backend, a, b, args.repeat, opts))
            _log(results[-1])
            if backend == "cpu" and n <= args.peer_max_size:
                threads = numba.get_num_threads()
                numba.set_num_threads(1)
                try:
                    r = _bench_backend("cpu", a, b, args.repeat, opts)
                finally:
                    numba.set_num_threads(threads)
                r["backend"] = "cpu (1 thread)"
                results.append(r)
                _log(r)
        if n > args.peer_max_size:
            continue
        runs = _timed(lambda a=a, b=b: int(handwritten_lcs_length(a, b)), args.repeat)
        peers.append(_peer("numba hand-written row loop (1 core, length only)", n, runs))
        _log(peers[-1])
        try:
            from rapidfuzz.distance import LCSseq

            sa, sb = a.tobytes().decode(), b.tobytes().decode()
            runs = _timed(lambda sa=sa, sb=sb: int(LCSseq.similarity(sa, sb)), args.repeat)
            peers.append(_peer("rapidfuzz LCSseq (1 core, bit-parallel, length only)", n, runs))
            _log(peers[-1])
        except ImportError:
            peers.append({"peer": "rapidfuzz", "size": n, "error": "rapidfuzz is not installed"})
    from gpudp.info import info

    return {
        "benchmark": "lcs",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "environment": info(),
        "devices": {b: device_name(b) for b in {r["backend"].split()[0] for r in results}},
        "workload": "random DNA (ACGT, uniform), both strings of length n, LCS length and one subsequence",
        "results": results,
        "peers": peers,
        "reference_figures": {
            "DESIGN.md, H100, one launch per anti-diagonal, 16k x 16k": "0.13 GCUPS",
            "DESIGN.md, H100, persistent kernel with grid sync per anti-diagonal, 64k x 64k": "13 GCUPS",
            "DESIGN.md, rapidfuzz LCSseq on one core, 56k x 72k": "about 45 GCUPS",
            "goal (issue 2), H100, 2^17 x 2^17 with eviction": ">= 200 GCUPS",
        },
    }


def _bench_backend(backend, a, b, repeat, opts) -> dict:
    n = len(a)
    t = time.perf_counter()
    cold = solve(a, b, backend=backend, progress=False, **opts)
    cold_s = time.perf_counter() - t
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        sol = solve(a, b, backend=backend, progress=False, **opts)
        runs.append((time.perf_counter() - t, sol))
    if not runs:  # --repeat 0: the one (cold) solve is the figure, for sizes that take minutes
        runs = [(cold_s, cold)]
    if any(s.value != cold.value for _, s in runs):
        raise CheckError(f"{backend}, n = {n}: repeated solves gave different lengths")
    cells = n * n
    solve_s = statistics.median(x for x, _ in runs)
    sweep_s = statistics.median(s.stats.seconds for _, s in runs)
    kern_s = statistics.median(s.stats.kernel_seconds for _, s in runs)
    st = runs[0][1].stats
    return {
        "backend": backend,
        "size": n,
        "cells": cells,
        "lcs_length": int(cold.value),
        "runs": repeat,
        "cold_solve_seconds": cold_s,
        "solve_seconds_median": solve_s,
        "sweep_seconds_median": sweep_s,
        "kernel_seconds_median": kern_s,
        "gcups_solve": cells / solve_s / 1e9,
        "gcups_sweep": cells / sweep_s / 1e9,
        "gcups_kernel": cells / kern_s / 1e9 if kern_s else None,
        "bytes_evicted": st.bytes_evicted,
        "device": st.device,
        "launches": st.extra.get("launches"),
        "grid": st.extra.get("grid"),
        "store": st.extra.get("store", "full"),
        **_checkpoint_figures(runs),
    }


def _checkpoint_figures(runs) -> dict:
    """With checkpoints: their spacing and bytes, and the traceback's blocks, cells and seconds."""
    st = runs[0][1].stats if runs else None
    if st is None or "traceback" not in st.extra:
        return {}
    tb = [s.stats.extra["traceback"] for _, s in runs]
    return {
        "checkpoint_every": st.extra["checkpoint_every"],
        "checkpoint_bytes": st.extra["checkpoint_bytes"],
        "traceback_blocks": tb[0]["blocks"],
        "traceback_cells": tb[0]["cells"],
        "traceback_seconds_median": statistics.median(x["seconds"] for x in tb),
    }


def _peer(name, n, runs) -> dict:
    s = statistics.median(x for x, _ in runs)
    return {
        "peer": name,
        "size": n,
        "cells": n * n,
        "lcs_length": runs[0][1],
        "seconds_median": s,
        "gcups": n * n / s / 1e9,
        "runs": len(runs),
    }


def _log(r: dict):
    if "peer" in r and "gcups" in r:
        print(
            f"  {r['peer']:55s} n={r['size']:>7d} {r['seconds_median']:9.4f} s {r['gcups']:8.2f} GCUPS",
            file=sys.stderr,
        )
    elif "backend" in r:
        print(
            f"  {r['backend']:16s} n={r['size']:>7d} solve {r['solve_seconds_median']:8.4f} s "
            f"({r['gcups_solve']:7.2f} GCUPS), sweep {r['gcups_sweep']:7.2f}, kernels "
            f"{(r['gcups_kernel'] or 0):7.2f} GCUPS",
            file=sys.stderr,
        )
