"""Coin change written as docs/tutorial.md section 14 suggests (a grid with the instance's own offsets
and ``deps_tuple``: row ``t`` takes coins ``0 .. t``) against a plain one-thread ``@njit`` loop of the
same DP (issue 39): the number of ways (values only), and the fewest coins (with its decisions,
traced back).

    NUMBA_NUM_THREADS=1 python tools/coinways_bench.py 63x100000 8x100000 --repeat 3

Prints, per size, the engine's sweep (warm: the second call on, best of ``--repeat``) and its
kernels' part (their least over the same calls), the plan, the loop's time and their ratio, in
milliseconds. ``--wavefronts`` sweeps by the wavefront
plan instead of row after row (the plan before the serial one, for A/B); ``--profile`` runs
cProfile over one warm sweep."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numba
import numpy as np
from examples_of import module

from gpudp import backends, sweep
from gpudp.bench.peers import best_of  # a warm-up call, then the best of repeat

#: the recurrences as the tests write them (tests/test_serial_sweep.py, which imports its neighbours)
sys.path.append(str(Path(__file__).resolve().parent.parent / "tests"))
_TESTS = module(Path(sys.path[-1]) / "test_serial_sweep.py")
BIG, CoinWays, FewestCoins = _TESTS.BIG, _TESTS.CoinWays, _TESTS.FewestCoins


@numba.njit(cache=True)
def ways_loop(coins, amount):
    ways = np.zeros(amount + 1, np.int64)
    ways[0] = 1
    for c in coins:
        for a in range(c, amount + 1):
            ways[a] += ways[a - c]
    return ways


@numba.njit(cache=True)
def fewest_loop(coins, amount):
    """The fewest coins, with the decision of every (coin, amount) kept (a byte each) and the coins
    of the last amount traced back, as the sweep's traceback does."""
    best = np.full(amount + 1, BIG, np.int64)
    best[0] = 0
    took = np.zeros((len(coins), amount + 1), np.uint8)
    for t in range(len(coins)):
        c = coins[t]
        for a in range(c, amount + 1):
            if best[a - c] + 1 < best[a]:
                best[a] = best[a - c] + 1
                took[t, a] = 1
    t, a, n = len(coins) - 1, amount, 0
    while t >= 0 and a > 0:
        if took[t, a]:
            a -= coins[t]
            n += 1
        else:
            t -= 1
    return best, n


def measure(rec, repeat: int, profile: bool) -> str:
    fewest = isinstance(rec, FewestCoins)

    kernels = []

    def run():
        res = sweep(rec, backend="cpu", traceback=fewest)
        if fewest:  # the coins of the last amount, as the loop finds them
            res.traceback((len(rec.coins) - 1, rec.amount))
        kernels.append(res.stats.kernel_seconds)
        return res

    t, res = best_of(run, repeat)
    if fewest:
        tl, (ref, _) = best_of(lambda: fewest_loop(rec.coins, rec.amount), repeat)
    else:
        tl, ref = best_of(lambda: ways_loop(rec.coins, rec.amount), repeat)
    assert np.array_equal(res.last_row, ref), "the sweep's values differ from the loop's"
    if profile:
        import cProfile
        import pstats

        cProfile.runctx("run()", globals(), {"run": run}, "/tmp/coinways.prof")
        pstats.Stats("/tmp/coinways.prof").sort_stats("cumulative").print_stats(15)
    ms = 1e3
    kernel = min(kernels)
    return (
        f"sweep {t * ms:.3f} ms (kernels {kernel * ms:.3f} ms, plan {res.plan.kind}), loop {tl * ms:.3f} ms, "
        f"{t / tl:.2f}x"
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("sizes", nargs="+", help="KxA: K distinct coins below 2,000, amounts 0..A")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--fewest", action="store_true", help="the fewest coins, traced back")
    ap.add_argument("--wavefronts", action="store_true", help="the wavefront plan (before)")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    if args.wavefronts:
        backends.get("cpu").serial_width = 0
    rng = np.random.default_rng(1)
    cls = FewestCoins if args.fewest else CoinWays
    for size in args.sizes:
        k, amount = (int(x) for x in size.split("x"))
        rec = cls(rng.choice(np.arange(1, 2000), k, replace=False), amount)
        line = measure(rec, args.repeat, args.profile)
        print(f"{cls.__name__} {k} x {amount:,}, {numba.get_num_threads()} threads: {line}", flush=True)


if __name__ == "__main__":
    main()
