"""Weighted interval scheduling on gpudp: the heaviest set of non-overlapping intervals.

    python examples/interval_scheduling.py 1 4 3  2 6 2  5 8 4  7 9 1 [--backend auto|cpu|cuda]

(each interval as ``start finish weight``). With the intervals sorted by finish (ties by start), ``p[j]`` is
how many of them finish by the time interval ``j`` starts (a half-open interval ``[start, finish)``
may start where another finishes), and cell ``j`` of a one-row grid (columns ``0 .. n``) holds the
best weight of the first ``j`` intervals::

    OPT(0) = 0        OPT(j) = max(OPT(j - 1), w[j - 1] + OPT(p[j - 1]))

``OPT(j - 1)`` is the constant offset ``(0, -1)``; ``OPT(p[j - 1])`` is at an index computed from
the data. With ``reads_line = True`` the cell receives the row's values, ``opt``, and reads
``opt[p[j - 1]]``: the offsets are the class's, so every instance shares one compile, whatever its
``p``. The row is swept as a *line*, one cell after the other (a sequential loop, at a plain loop's
speed on the CPU). The decision says whether interval ``j - 1`` was taken; ``back`` steps to
``p[j - 1]`` or to ``j - 1``.
"""

from __future__ import annotations

import argparse

import numpy as np

from gpudp import GridRecurrence, InputError, sweep


class IntervalScheduling(GridRecurrence):
    value_dtype = np.int64
    decision_bits = 1  # 1: the cell's interval is taken
    offsets = ((0, -1),)  # OPT(j - 1); OPT(p[j - 1]) is read from the line
    reads_line = True  # cell(i, j, left, opt, w, p): opt[q] = OPT(q) for q < j

    def __init__(self, weight, p):
        self.w = np.asarray(weight, dtype=np.int64)
        self.p = np.asarray(p, dtype=np.int64)
        if self.w.shape != self.p.shape or self.w.ndim != 1:
            raise InputError("p", "one predecessor count per weight is due")
        if ((self.p < 0) | (self.p >= np.arange(1, len(self.p) + 1))).any():
            raise InputError("p", "p[j] must lie in 0 .. j: the intervals that finish before j starts")

    def shape(self):
        return 1, len(self.w) + 1

    def data(self):
        return self.w, self.p

    @staticmethod
    def cell(i, j, left, opt, w, p):
        if j == 0:
            return 0, 0
        take = w[j - 1] + opt[p[j - 1]]
        if take > left:
            return take, 1
        return left, 0

    @staticmethod
    def back(i, j, taken, w, p):
        if j == 0:
            return i, -1  # the walk ends
        return (i, p[j - 1]) if taken else (i, j - 1)


def schedule(start, finish, weight, **sweep_options):
    """``(best weight, the chosen intervals' indices in the input, ascending, stats)``.
    ``sweep_options`` go to :func:`gpudp.sweep` (``backend``, ``check``, ...)."""
    start, finish = np.asarray(start, np.int64), np.asarray(finish, np.int64)
    weight = np.asarray(weight, np.int64)
    if not start.shape == finish.shape == weight.shape or (finish < start).any():
        raise InputError("intervals", "one start, finish and weight each, finish >= start")
    order = np.lexsort((start, finish))  # by finish, ties by start: [0, 8) before [8, 8)
    s, f = start[order], finish[order]
    p = np.minimum(np.searchsorted(f, s, side="right"), np.arange(len(s)))  # those finishing by s
    rec = IntervalScheduling(weight[order], p)
    result = sweep(rec, **sweep_options)
    n = len(s)
    path = result.traceback((0, n))  # rows (0, j, taken), from the last cell down to 0
    chosen = sorted(int(order[j - 1]) for _, j, taken in path.tolist() if taken)
    best = int(result.last_row[n])
    result.close()
    return best, chosen, result.stats


def main(argv=None):
    parser = argparse.ArgumentParser(description="weighted interval scheduling, on gpudp")
    parser.add_argument("triples", type=int, nargs="+", help="start finish weight, for each interval")
    parser.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    args = parser.parse_args(argv)
    if len(args.triples) % 3:
        parser.error("give each interval as three numbers: start finish weight")
    start, finish, weight = np.array(args.triples).reshape(-1, 3).T
    best, chosen, stats = schedule(start, finish, weight, backend=args.backend)
    print(f"weight {best} ({stats.backend} backend, {stats.extra['plan']})")
    for k in chosen:
        print(f"  [{start[k]}, {finish[k]}) weight {weight[k]}")


if __name__ == "__main__":
    main()
