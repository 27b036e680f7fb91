"""Dynamic time warping on gpudp: the distance between two series and one optimal warping path.

    python examples/dtw.py 1,2,3,3,5 1,3,5 [--backend auto|cpu|cuda]
    python examples/dtw.py --random 2000 [--backend ...]

``D(i, j)`` is the cheapest warping of ``x[0..i]`` onto ``y[0..j]``::

    D(i, j) = |x[i] - y[j]| + min(D(i - 1, j), D(i, j - 1), D(i - 1, j - 1)),   D(-1, -1) = 0

(any other cell outside the grid: infinity). The values are float64; the decision says which
neighbour the minimum came from, and the traceback from ``(n - 1, m - 1)`` walks the path back to
``(0, 0)``. The path is checked: it starts and ends at the corners, every step is one of the three
moves, and the costs along it, added in the order the sweep added them, give the distance exactly.
"""

from __future__ import annotations

import argparse

import numpy as np

from gpudp import CheckError, GridRecurrence, InputError, sweep

UP, LEFT, DIAG = 0, 1, 2  # which neighbour the minimum came from: the path's step back


class DTW(GridRecurrence):
    value_dtype = np.float64
    decision_bits = 2
    offsets = ((-1, 0), (0, -1), (-1, -1))

    def __init__(self, x, y):
        self.x, self.y = (np.ascontiguousarray(s, dtype=np.float64) for s in (x, y))
        for name, s in (("x", self.x), ("y", self.y)):
            if s.ndim != 1 or not s.size or not np.isfinite(s).all():
                raise InputError(name, "need a non-empty 1-D series of finite numbers")

    def shape(self):
        return len(self.x), len(self.y)

    def data(self):
        return self.x, self.y

    @staticmethod
    def cell(i, j, up, left, diag, x, y):
        best, how = diag, DIAG
        if up < best:
            best, how = up, UP
        if left < best:
            best, how = left, LEFT
        return abs(x[i] - y[j]) + best, how

    @staticmethod
    def boundary(i, j, x, y):
        return 0.0 if i == -1 and j == -1 else np.inf  # the path starts at (0, 0)

    @staticmethod
    def back(i, j, how, x, y):
        if how == UP:
            return i - 1, j
        if how == LEFT:
            return i, j - 1
        return i - 1, j - 1


def warp(x, y, **sweep_options):
    """``(distance, path, stats)``: the DTW distance of ``x`` and ``y`` and an optimal warping path,
    an ``(L, 2)`` array of index pairs from ``(0, 0)`` to ``(n - 1, m - 1)``, checked.
    ``sweep_options`` go to :func:`gpudp.sweep` (``backend``, ``memory_budget``, ...).

    Raises :class:`gpudp.InputError` for a series that is empty, not 1-D or not finite, and
    :class:`gpudp.CheckError` should the path not give the distance."""
    rec = DTW(x, y)
    n, m = rec.shape()
    result = sweep(rec, **sweep_options)
    distance = float(result.last_row[m - 1])
    path = result.traceback((n - 1, m - 1))[::-1, :2].copy()  # from (0, 0) on
    result.close()
    if path[0].tolist() != [0, 0] or path[-1].tolist() != [n - 1, m - 1]:
        raise CheckError(f"the warping path runs from {path[0].tolist()} to {path[-1].tolist()}")
    di, dj = np.diff(path, axis=0).T
    if not (((di == 1) | (dj == 1)) & (di >= 0) & (di <= 1) & (dj >= 0) & (dj <= 1)).all():
        raise CheckError("the warping path takes a step that is not one of (1, 0), (0, 1), (1, 1)")
    # the costs added one after the other from (0, 0), as the sweep added them: bit for bit its value
    total = float(np.add.accumulate(np.abs(rec.x[path[:, 0]] - rec.y[path[:, 1]]))[-1])
    if total != distance:
        raise CheckError(f"the warping path costs {total!r}, the sweep said {distance!r}")
    return distance, path, result.stats


def main(argv=None):
    parser = argparse.ArgumentParser(description="dynamic time warping on gpudp")
    parser.add_argument("x", nargs="?", help="comma-separated numbers")
    parser.add_argument("y", nargs="?", help="comma-separated numbers")
    parser.add_argument("--random", type=int, metavar="N", help="two random walks of N steps")
    parser.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    args = parser.parse_args(argv)
    if args.random:
        rng = np.random.default_rng(0)
        x, y = np.cumsum(rng.normal(size=(2, args.random)), axis=1)
    elif args.x and args.y:
        x, y = ([float(v) for v in s.split(",")] for s in (args.x, args.y))
    else:
        parser.error("give two series, or --random N")
    distance, path, stats = warp(x, y, backend=args.backend)
    print(f"distance {distance:.6g} ({stats.backend} backend), path of {len(path)} steps")
    if len(path) <= 20:
        print(" ".join(f"({i},{j})" for i, j in path.tolist()))


if __name__ == "__main__":
    main()
