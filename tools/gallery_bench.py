"""Time the gallery's recurrences against a plain one-thread @njit loop of the same recurrence that
also stores the traceback decisions (issue 14's yardstick): Gotoh (examples/affine_alignment.py)
and Smith-Waterman with its best cell found by the engine's reduction (examples/local_alignment.py;
also the same sweep without the reduction, to show its cost); coin change with the coins
(examples/coin_change.py, a one-row grid swept as a line), Viterbi with 16-bit decisions
(examples/viterbi.py), the two-constraint knapsack with its items (examples/knapsack_2d.py), the
LCS of three strings (examples/lcs3.py, a 3-D grid swept by planes i + j + k) and dynamic time
warping with its path (examples/dtw.py, float64 cells).

    python tools/gallery_bench.py OUT.json [--problems gotoh,sw,coin,viterbi,knapsack2d,lcs3,dtw]
        [--sizes 4096,16384] [--backends cpu,cuda] [--repeat 3] [--threads 1,16]
        [--coin-amounts 1000000,10000000] [--viterbi-states 300,1000] [--viterbi-steps 1000]
        [--knapsack-capacities 300,1000] [--knapsack-items 100] [--lcs3-sizes 200,400]
        [--dtw-sizes 2000,4000]

Writes one JSON row per (problem, size, backend): median seconds of align() after a warm-up, GCUPS,
and the plain loop's seconds beside it (its score must agree). For coin, viterbi, knapsack2d, lcs3
and dtw each row is the whole solve (sweep, traceback, answer), best of ``--repeat``, once per CPU thread
count in ``--threads``, with the plain loop's best time, the ratio and whether the answers agree.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

import numba
import numpy as np
from numba import njit

from gpudp.info import info

ROOT = Path(__file__).resolve().parent.parent


def _example(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gotoh = _example("affine_alignment")
local = _example("local_alignment")
coin_change = _example("coin_change")
viterbi = _example("viterbi")
knapsack_2d = _example("knapsack_2d")
lcs3 = _example("lcs3")
dtw = _example("dtw")


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


@njit(cache=True)
def plain_coin_change(coins, amount):
    """F(j) = 1 + min over coins of F(j - c), the coin's index kept per amount, one thread."""
    none = 1 << 62
    f = np.empty(amount + 1, np.int64)
    dec = np.zeros(amount + 1, np.uint8)
    f[0] = 0
    for j in range(1, amount + 1):
        best, used = none, 0
        for k in range(len(coins)):
            c = coins[k]
            if c <= j and f[j - c] + 1 < best:
                best, used = f[j - c] + 1, k
        f[j] = best
        dec[j] = used
    return f[amount], dec[amount]


@njit(cache=True)
def plain_viterbi(log_init, trans_to, log_emit, obs):
    """Two rows of log-probabilities and a full table of uint16 predecessors, one thread."""
    n, steps = len(log_init), len(obs)
    prev, cur = np.empty(n), np.empty(n)
    dec = np.zeros((steps, n), np.uint16)
    for k in range(n):
        prev[k] = log_init[k] + log_emit[k, obs[0]]
    for t in range(1, steps):
        for k in range(n):
            row = trans_to[k]
            best, arg = prev[0] + row[0], 0
            for j in range(1, n):
                x = prev[j] + row[j]
                if x > best:
                    best, arg = x, j
            cur[k] = best + log_emit[k, obs[t]]
            dec[t, k] = arg
        prev, cur = cur, prev
    return prev.max(), dec[steps - 1, 0]


@njit(cache=True)
def plain_knapsack_2d(w, v, p, max_weight, max_volume):
    """The textbook in-place loop (capacities downwards) and a table of uint8 decisions, one thread."""
    v1 = max_volume + 1
    f = np.zeros((max_weight + 1) * v1, np.int64)
    dec = np.zeros((len(w), (max_weight + 1) * v1), np.uint8)
    for t in range(len(w)):
        for a in range(max_weight, w[t] - 1, -1):
            for b in range(max_volume, v[t] - 1, -1):
                k = a * v1 + b
                take = f[k - w[t] * v1 - v[t]] + p[t]
                if take > f[k]:
                    f[k] = take
                    dec[t, k] = 1
    return f[-1], dec[0, 0]


@njit(cache=True)
def plain_dtw(x, y):
    """Two rows of float64 distances and a full table of uint8 decisions (0 up, 1 left, 2 diagonal,
    as examples/dtw.py numbers them), one thread."""
    n, m = len(x), len(y)
    prev, cur = np.full(m + 1, np.inf), np.full(m + 1, np.inf)
    prev[0] = 0.0
    dec = np.zeros((n, m), np.uint8)
    for i in range(n):
        cur[0] = np.inf
        for j in range(m):
            best, how = prev[j], 2
            if prev[j + 1] < best:
                best, how = prev[j + 1], 0
            if cur[j] < best:
                best, how = cur[j], 1
            cur[j + 1] = abs(x[i] - y[j]) + best
            dec[i, j] = how
        prev, cur = cur, prev
    return prev[m], dec[n - 1, m - 1]


@njit(cache=True)
def plain_lcs3(a, b, c):
    """Two n2 x n3 planes of i and a full cube of uint8 decisions (which of the four predecessors,
    as examples/lcs3.py numbers them), one thread."""
    n1, n2, n3 = len(a), len(b), len(c)
    prev = np.zeros((n2 + 1, n3 + 1), np.int32)
    cur = np.zeros((n2 + 1, n3 + 1), np.int32)
    dec = np.zeros((n1, n2, n3), np.uint8)
    for i in range(n1):
        for j in range(n2):
            for k in range(n3):
                if a[i] == b[j] and b[j] == c[k]:
                    v, how = prev[j, k] + 1, 0
                else:
                    v, how = prev[j + 1, k + 1], 1
                    if cur[j, k + 1] > v:
                        v, how = cur[j, k + 1], 2
                    if cur[j + 1, k] > v:
                        v, how = cur[j + 1, k], 3
                cur[j + 1, k + 1] = v
                dec[i, j, k] = how
        prev, cur = cur, prev
    return prev[n2, n3], dec[n1 - 1, n2 - 1, n3 - 1] if n1 and n2 and n3 else 0


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


COINS = np.array([1, 5, 10, 21, 25, 50, 100, 200], np.int64)


def _cases(problem, args, rng):
    """``(size, cells, solve(backend) -> (answer, stats), plain() -> answer)`` per instance."""
    if problem == "coin":
        for amount in (int(x) for x in args.coin_amounts.split(",")):
            yield (
                amount,
                amount + 1,
                lambda b, a=amount: coin_change.change(COINS, a, backend=b, progress=False)[::2],
                lambda a=amount: int(plain_coin_change(COINS, a)[0]),
            )
    elif problem == "viterbi":
        steps = args.viterbi_steps
        for n in (int(x) for x in args.viterbi_states.split(",")):
            model, obs = viterbi.random_model(n, 4, 0), rng.integers(0, 4, steps)
            trans_to = np.ascontiguousarray(model[1].T)
            yield (
                n,
                n * steps,
                lambda b, m=model, o=obs: viterbi.decode(*m, o, backend=b, progress=False)[::2],
                lambda m=model, o=obs, tt=trans_to: float(plain_viterbi(m[0], tt, m[2], o)[0]),
            )
    elif problem == "knapsack2d":
        items = args.knapsack_items
        for cap in (int(x) for x in args.knapsack_capacities.split(",")):
            w, v = rng.integers(1, cap // 4 + 2, (2, items))
            p = rng.integers(1, 1000, items)
            yield (
                cap,
                items * (cap + 1) ** 2,
                lambda b, i=(w, v, p, cap, cap): knapsack_2d.pack(*i, backend=b, progress=False)[::2],
                lambda i=(w, v, p, cap, cap): int(plain_knapsack_2d(*i)[0]),
            )
    elif problem == "dtw":
        for n in (int(x) for x in args.dtw_sizes.split(",")):
            x, y = np.cumsum(rng.normal(size=(2, n)), axis=1)
            yield (
                n,
                n * n,
                lambda b, x=x, y=y: dtw.warp(x, y, backend=b, progress=False)[::2],
                lambda x=x, y=y: float(plain_dtw(x, y)[0]),
            )
    elif problem == "lcs3":
        for n in (int(x) for x in args.lcs3_sizes.split(",")):
            s = tuple("".join(rng.choice(list("ACGT"), n)) for _ in range(3))
            codes = tuple(np.frombuffer(x.encode(), np.uint8) for x in s)
            yield (
                n,
                n**3,
                lambda b, s=s: lcs3.solve(*s, backend=b, progress=False)[::2],
                lambda c=codes: int(plain_lcs3(*c)[0]),
            )


def _best(fn, repeat: int):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def _gallery_rows(problem, args, rng) -> list[dict]:
    """The rows of one of coin, viterbi, knapsack2d, lcs3, dtw: every size, backend and CPU thread count."""
    rows = []
    small = {
        "coin_amounts": "10",
        "viterbi_states": "3",
        "viterbi_steps": 3,
        "knapsack_capacities": "4",
        "lcs3_sizes": "4",
        "dtw_sizes": "4",
    }
    for backend in args.backends.split(","):
        for _, _, solve, _ in _cases(
            problem, argparse.Namespace(**{**vars(args), **small}), np.random.default_rng(0)
        ):
            solve(backend)  # compile
    for size, cells, solve, plain in _cases(problem, args, rng):
        plain()  # compile
        plain_s, want = _best(plain, args.repeat)
        for backend in args.backends.split(","):
            for threads in sorted({int(x) for x in args.threads.split(",")}) if backend == "cpu" else [None]:
                if threads:
                    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
                seconds, (answer, stats) = _best(functools.partial(solve, backend), args.repeat)
                row = {
                    "problem": problem,
                    "size": size,
                    "cells": cells,
                    "backend": backend,
                    "threads": threads,
                    "device": stats.device,
                    "seconds_best": seconds,
                    "kernel_seconds": stats.kernel_seconds,
                    "schedule": stats.extra.get("schedule"),
                    "plain_njit_1thread_seconds": plain_s,
                    "ratio_to_plain": seconds / plain_s,
                    "answer": answer,
                    "plain_answer_agrees": answer == want,
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--problems", default="gotoh,sw,coin,viterbi,knapsack2d,lcs3,dtw")
    ap.add_argument("--sizes", default="4096,16384")
    ap.add_argument("--backends", default="cpu,cuda")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--plain-max", type=int, default=16384, help="largest size the plain loop runs")
    ap.add_argument("--cpu-max", type=int, default=32768, help="largest size the cpu backend runs")
    ap.add_argument("--threads", default=f"1,{numba.config.NUMBA_NUM_THREADS}", help="cpu thread counts")
    ap.add_argument("--coin-amounts", default="1000000,10000000")
    ap.add_argument("--viterbi-states", default="300,1000")
    ap.add_argument("--viterbi-steps", type=int, default=1000)
    ap.add_argument("--knapsack-capacities", default="300,1000", help="weight = volume capacity")
    ap.add_argument("--knapsack-items", type=int, default=100)
    ap.add_argument("--lcs3-sizes", default="200,400", help="length of each of the three strings")
    ap.add_argument("--dtw-sizes", default="2000,4000", help="length of each of the two series")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    rows = []
    for problem in args.problems.split(","):
        if problem in ("coin", "viterbi", "knapsack2d", "lcs3", "dtw"):
            rows += _gallery_rows(problem, args, rng)
            continue
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
