"""Weighted interval scheduling, the data-dependent read ``OPT(p(j))``, in the two forms a user can
write it, against a plain one-thread ``@njit`` loop on the same data (issue 39's yardstick):

- ``offsets``: the form of tutorial section 14 before ``reads_line``: every distinct gap
  ``j - p(j)`` an offset of the instance (``deps_tuple``), the cell picking its gap's dependency;
  each distinct set of gaps compiles kernels of its own;
- ``reads_line``: examples/interval_scheduling.py, the cell reading ``opt[p[j - 1]]`` from the line;
  one compile for every instance.

    python tools/line_reads_bench.py [--sizes 100000,1000000] [--repeat 5] [--tiny 40]

Prints, per form and size, the best of ``--repeat`` warm sweeps (values and decisions, cpu backend,
the sweep's set-up included) beside the loop's best, their ratio and whether the values agree, and
``reads_line`` values only (``traceback=False``) against the loop without decisions; then
the seconds of ``--tiny`` instances of 30 intervals swept cold (each form in a fresh process and a
fresh kernel cache) and the kernels each form compiled.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from cdist_bench import best_of  # a warm-up call, then the best of repeat
from examples_of import example
from numba import njit

from gpudp import GridRecurrence, sweep

wis = example("interval_scheduling")


class GapOffsets(GridRecurrence):
    """``OPT(j) = max(OPT(j - 1), w[j - 1] + OPT(p[j - 1]))`` with every gap ``j - p[j - 1]`` an
    offset ``(0, -gap)`` of the instance: the form offsets allowed before ``reads_line``."""

    value_dtype = np.int64
    decision_bits = 1
    deps_tuple = True

    def __init__(self, w, p):
        self.w, self.p = w, p
        gaps = np.arange(1, len(w) + 1) - p
        self.gaps = np.unique(np.concatenate(([1], gaps))).astype(np.int64)  # gaps[0] == 1: OPT(j - 1)
        self.offsets = tuple((0, -int(g)) for g in self.gaps)

    def shape(self):
        return 1, len(self.w) + 1

    def data(self):
        return self.w, self.p, self.gaps

    @staticmethod
    def cell(i, j, deps, w, p, gaps):
        if j == 0:
            return 0, 0
        g = j - p[j - 1]
        take = 0
        for k in range(len(deps)):
            if gaps[k] == g:
                take = deps[k]
        take += w[j - 1]
        if take > deps[0]:
            return take, 1
        return deps[0], 0


FORMS = {"offsets": GapOffsets, "reads_line": wis.IntervalScheduling}


@njit(cache=True)
def plain(w, p):
    """The same DP, one thread, the decisions kept (one byte a cell)."""
    n = len(w)
    opt = np.zeros(n + 1, np.int64)
    took = np.zeros(n + 1, np.uint8)
    for j in range(1, n + 1):
        take = w[j - 1] + opt[p[j - 1]]
        if take > opt[j - 1]:
            opt[j], took[j] = take, 1
        else:
            opt[j] = opt[j - 1]
    return opt, took


@njit(cache=True)
def plain_values(w, p):
    """The same DP without its decisions: the yardstick of a values-only sweep."""
    n = len(w)
    opt = np.zeros(n + 1, np.int64)
    for j in range(1, n + 1):
        opt[j] = max(opt[j - 1], w[j - 1] + opt[p[j - 1]])
    return opt


def instance(n: int, seed: int):
    """``n`` intervals of lengths 1 to 39 starting in ``0 .. 4n``, weights 1 to 99, sorted by
    finish; ``(w, p)``, ``p[j]`` the intervals finishing by the start of interval ``j``."""
    rng = np.random.default_rng(seed)
    start = rng.integers(0, 4 * n, n)
    finish = start + rng.integers(1, 40, n)
    o = np.lexsort((start, finish))
    start, finish = start[o], finish[o]
    p = np.minimum(np.searchsorted(finish, start, side="right"), np.arange(n)).astype(np.int64)
    return rng.integers(1, 100, n).astype(np.int64), p


def tiny(form: str, count: int) -> dict:
    """``count`` instances of 30 intervals swept in this process (cold: the caller's fresh cache)."""
    from gpudp.kernel import counts

    t = time.perf_counter()
    for s in range(count):
        w, p = instance(30, 100 + s)
        got = sweep(FORMS[form](w, p), backend="cpu", progress=False).last_row
        assert (got == plain(w, p)[0]).all()
    built = sum(n for f, n in counts().items() if f == "cpu.line")
    return {"form": form, "instances": count, "seconds": time.perf_counter() - t, "line_kernels": built}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tiny", type=int, default=40)
    ap.add_argument("--tiny-form", help=argparse.SUPPRESS)  # the child process of the cold runs
    args = ap.parse_args(argv)
    if args.tiny_form:
        print(json.dumps(tiny(args.tiny_form, args.tiny)))
        return
    for n in map(int, args.sizes.split(",")):
        w, p = instance(n, 0)
        t_loop, (ref, _) = best_of(lambda w=w, p=p: plain(w, p), args.repeat)
        for form, cls in FORMS.items():
            rec = cls(w, p)
            t, res = best_of(lambda rec=rec: sweep(rec, backend="cpu", progress=False), args.repeat)
            same = bool((res.last_row == ref).all())
            extra = f", {len(rec.offsets)} offsets" if form == "offsets" else ""
            print(
                f"n={n:>9,} {form:<10} {t * 1e3:8.2f} ms, loop {t_loop * 1e3:7.2f} ms: "
                f"{t / t_loop:5.2f}x (kernel {res.stats.kernel_seconds * 1e3:.2f} ms{extra}), same={same}"
            )
        rec = wis.IntervalScheduling(w, p)
        t_vals, vals = best_of(lambda w=w, p=p: plain_values(w, p), args.repeat)
        t, res = best_of(lambda rec=rec: sweep(rec, backend="cpu", traceback=False), args.repeat)
        print(
            f"n={n:>9,} values only, reads_line {t * 1e3:8.2f} ms, loop {t_vals * 1e3:7.2f} ms: "
            f"{t / t_vals:5.2f}x (kernel {res.stats.kernel_seconds * 1e3:.2f} ms), "
            f"same={bool((res.last_row == vals).all())}"
        )
    for form in FORMS:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, GPUDP_CACHE_DIR=cache)
            cmd = [sys.executable, __file__, "--tiny", str(args.tiny), "--tiny-form", form]
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
            row = json.loads(out.strip().splitlines()[-1])
            print(
                f"{row['instances']} tiny instances, {form:<10} cold: {row['seconds']:.2f} s, "
                f"{row['line_kernels']} line kernels compiled"
            )


if __name__ == "__main__":
    main()
