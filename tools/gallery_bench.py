"""Time the gallery's recurrences against a plain one-thread @njit loop of the same recurrence that
also stores the traceback decisions (issue 14's yardstick): Gotoh (examples/affine_alignment.py)
and Smith-Waterman with its best cell found by the engine's reduction (examples/local_alignment.py;
also the same sweep without the reduction, to show its cost).

    python tools/gallery_bench.py OUT.json [--problems gotoh,sw] [--sizes 4096,16384]
        [--backends cpu,cuda] [--repeat 3]

Writes one JSON row per (problem, size, backend): median seconds of align() after a warm-up, GCUPS,
and the plain loop's seconds beside it (its score must agree).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

from gpudp.info import info

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("affine_alignment", ROOT / "examples" / "affine_alignment.py")
gotoh = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gotoh)
spec = importlib.util.spec_from_file_location("local_alignment", ROOT / "examples" / "local_alignment.py")
local = importlib.util.module_from_spec(spec)
spec.loader.exec_module(local)


@njit(cache=True)
def plain_smith_waterman(a, b, match, mismatch, gap):
    """One row of H, a full table of 2-bit decisions and the best cell, one thread."""
    n, m = len(a), len(b)
    prev, cur = np.zeros(m + 1, np.int32), np.zeros(m + 1, np.int32)
    dec = np.zeros((n, m), np.uint8)
    best, bi, bj = 0, -1, -1
    for i in range(n):
        cur[0] = 0
        for j in range(m):
            h, how = prev[j] + (match if a[i] == b[j] else mismatch), 1
            if prev[j + 1] - gap > h:
                h, how = prev[j + 1] - gap, 2
            if cur[j] - gap > h:
                h, how = cur[j] - gap, 3
            if h <= 0:
                h, how = 0, 0
            cur[j + 1] = h
            dec[i, j] = how
            if h > best:
                best, bi, bj = h, i, j
        prev, cur = cur, prev
    return best, bi, bj, dec[0, 0]


@njit(cache=True)
def plain_gotoh(a, b, match, mismatch, gap_open, gap_extend):
    """Three rows of M, X, Y and a full table of 4-bit decisions, one thread."""
    n, m = len(a), len(b)
    neg = -(1 << 40)
    pm, px, py = np.full(m + 1, neg), np.full(m + 1, neg), np.full(m + 1, neg)
    cm, cx, cy = np.full(m + 1, neg), np.full(m + 1, neg), np.full(m + 1, neg)
    dec = np.zeros((n + 1, m + 1), np.uint8)
    pm[0] = 0
    for j in range(1, m + 1):
        o, e = pm[j - 1] - gap_open - gap_extend, py[j - 1] - gap_extend
        py[j] = max(o, e)
    for i in range(1, n + 1):
        cm[0], cy[0] = neg, neg
        cx[0] = max(pm[0] - gap_open - gap_extend, px[0] - gap_extend)
        for j in range(1, m + 1):
            o, e = pm[j] - gap_open - gap_extend, px[j] - gap_extend
            x, dx = (e, 1) if e > o else (o, 0)
            o, e = cm[j - 1] - gap_open - gap_extend, cy[j - 1] - gap_extend
            y, dy = (e, 1) if e > o else (o, 0)
            best, dm = pm[j - 1], 0
            if px[j - 1] > best:
                best, dm = px[j - 1], 1
            if py[j - 1] > best:
                best, dm = py[j - 1], 2
            cm[j] = best + (match if a[i - 1] == b[j - 1] else mismatch)
            cx[j], cy[j] = x, y
            dec[i, j] = dm | (dx << 2) | (dy << 3)
        pm, cm = cm, pm
        px, cx = cx, px
        py, cy = cy, py
    return max(pm[m], px[m], py[m]), dec[n, m]


class _NoReduce(local.SmithWaterman):
    reduce = None


def _variants(problem, a, b, backend):
    """(name, run) pairs; run() -> (score or None, stats)."""
    if problem == "gotoh":
        return [("gotoh", lambda: gotoh.align(a, b, backend=backend)[::2])]

    def sw():
        score, _, _, stats = local.align(a, b, backend=backend)
        return score, stats

    def sweep_only():
        r = gotoh.sweep(_NoReduce(a, b), backend=backend, progress=False)
        r.close()
        return None, r.stats

    return [("sw", sw), ("sw sweep without the reduction", sweep_only)]


def _plain(problem, a, b):
    ai, bi = np.frombuffer(a.encode(), np.uint8), np.frombuffer(b.encode(), np.uint8)
    fn, scores = (plain_gotoh, (2, -1, 3, 1)) if problem == "gotoh" else (plain_smith_waterman, (3, -3, 2))
    fn(ai[:8], bi[:8], *scores)
    t = time.perf_counter()
    score = int(fn(ai, bi, *scores)[0])
    return time.perf_counter() - t, score


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--problems", default="gotoh,sw")
    ap.add_argument("--sizes", default="4096,16384")
    ap.add_argument("--backends", default="cpu,cuda")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--plain-max", type=int, default=16384, help="largest size the plain loop runs")
    ap.add_argument("--cpu-max", type=int, default=32768, help="largest size the cpu backend runs")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    rows = []
    for problem in args.problems.split(","):
        for n in (int(x) for x in args.sizes.split(",")):
            a = "".join(rng.choice(list("ACGT"), n))
            b = "".join(rng.choice(list("ACGT"), n))
            plain_s, plain_score = _plain(problem, a, b) if n <= args.plain_max else (None, None)
            for backend in args.backends.split(","):
                if backend == "cpu" and n > args.cpu_max:
                    continue
                warm = _variants(problem, a[:64], b[:64], backend)
                for k, (name, run) in enumerate(_variants(problem, a, b, backend)):
                    warm[k][1]()  # compile
                    times, score, stats = [], None, None
                    try:
                        for _ in range(args.repeat):
                            t = time.perf_counter()
                            score, stats = run()
                            times.append(time.perf_counter() - t)
                    except ValueError as e:  # the example refuses the size (its score fields)
                        rows.append({"problem": name, "n": n, "backend": backend, "refused": str(e)})
                        print(json.dumps(rows[-1]), flush=True)
                        continue
                    med = statistics.median(times)
                    row = {
                        "problem": name,
                        "n": n,
                        "backend": backend,
                        "device": stats.device,
                        "seconds_median": med,
                        "seconds_runs": times,
                        "gcups": n * n / med / 1e9,
                        "kernel_seconds": stats.kernel_seconds,
                        "gcups_kernels": n * n / stats.kernel_seconds / 1e9 if stats.kernel_seconds else None,
                        "score": score,
                        "extra": {k: v for k, v in stats.extra.items() if isinstance(v, int | float | str)},
                        "plain_njit_1thread_seconds": plain_s,
                        "plain_score_agrees": None
                        if plain_score is None or score is None
                        else plain_score == score,
                    }
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    Path(args.out).write_text(json.dumps({"info": info(), "rows": rows}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
