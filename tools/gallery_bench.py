"""Time the gallery's Gotoh alignment (examples/affine_alignment.py) against a plain one-thread
@njit loop of the same recurrence that also stores the traceback decisions (issue 14's yardstick).

    python tools/gallery_bench.py OUT.json [--sizes 4096,16384] [--backends cpu,cuda] [--repeat 3]

Writes one JSON row per (size, backend): median seconds of align() after a warm-up, GCUPS, and the
plain loop's seconds beside it (its score must agree).
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


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--sizes", default="4096,16384")
    ap.add_argument("--backends", default="cpu,cuda")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--plain-max", type=int, default=16384, help="largest size the plain loop runs")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    rows = []
    for n in (int(x) for x in args.sizes.split(",")):
        a = "".join(rng.choice(list("ACGT"), n))
        b = "".join(rng.choice(list("ACGT"), n))
        plain_s = plain_score = None
        if n <= args.plain_max:
            ai, bi = np.frombuffer(a.encode(), np.uint8), np.frombuffer(b.encode(), np.uint8)
            plain_gotoh(ai[:8], bi[:8], 2, -1, 3, 1)
            t = time.perf_counter()
            plain_score = int(plain_gotoh(ai, bi, 2, -1, 3, 1)[0])
            plain_s = time.perf_counter() - t
        for backend in args.backends.split(","):
            gotoh.align(a[:64], b[:64], backend=backend)  # compile
            times, score, stats = [], None, None
            for _ in range(args.repeat):
                t = time.perf_counter()
                score, _, stats = gotoh.align(a, b, backend=backend)
                times.append(time.perf_counter() - t)
            med = statistics.median(times)
            row = {
                "problem": "gotoh",
                "n": n,
                "backend": backend,
                "device": stats.device,
                "seconds_median": med,
                "seconds_runs": times,
                "gcups": (n + 1) ** 2 / med / 1e9,
                "kernel_seconds": stats.kernel_seconds,
                "score": score,
                "plain_njit_1thread_seconds": plain_s,
                "plain_score_agrees": None if plain_score is None else plain_score == score,
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    Path(args.out).write_text(json.dumps({"info": info(), "rows": rows}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
