"""Not a tool: the table the user-DP benchmarks (``userdps4_bench.py``, ``userdps5_bench.py``)
print, each gpudp call against a plain ``@njit`` loop of the same DP, answers compared, and the
loops' walk back through a grid's decisions."""

from __future__ import annotations

import argparse

import numba
import numpy as np

from gpudp.bench.peers import best_of  # a warm-up call, then the best of repeat


@numba.njit(cache=True)
def walk(how, n, m, band):
    """The steps of the path back from (n - 1, m - 1) through decisions kept a byte each (row i of a
    band at how[i, j - i + band])."""
    i, j, steps = n - 1, m - 1, 0
    while i >= 0 and j >= 0:
        steps += 1
        h = how[i, j - (0 if band < 0 else i - band)]
        if h == 0:
            i, j = i - 1, j - 1
        elif h == 1:
            i -= 1
        else:
            j -= 1
    return steps


def table(description: str, cases, same, argv=None):
    """Print a markdown row a case of ``cases(rng)`` (``(name, size, gpudp call, loop call, kind)``):
    both calls' best of ``--repeat`` after a warm-up and their ratio, flagged where ``same(kind,
    gpudp's answer, the loop's)`` is false. ``--only`` keeps the rows whose names start with one of
    its comma-separated prefixes."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--only", default="", help="comma list of row-name prefixes")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    only = [x for x in args.only.split(",") if x]
    print(f"numba threads: {numba.get_num_threads()}")
    print("| DP | size | gpudp | njit loop | gpudp / loop |")
    print("| --- | --- | --- | --- | --- |")
    for name, size, ours, loop, kind in cases(np.random.default_rng(39)):
        if only and not any(name.startswith(o) for o in only):
            continue
        t_ours, got = best_of(ours, args.repeat)
        t_loop, ref = best_of(loop, args.repeat)
        ok = "" if same(kind, got, ref) else " **values differ**"
        print(
            f"| {name} | {size} | {t_ours:.3f} s | {t_loop:.3f} s | {t_ours / t_loop:.2f}x{ok} |", flush=True
        )
