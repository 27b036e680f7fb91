"""Edit distance and the number of optimal alignments, one record cell: a score beside a count.

    python examples/alignment_count.py GATTACA GCATGCT [--backend cpu]

Cell ``(i, j)`` holds, for the prefixes ``a[:i]`` and ``b[:j]``, their edit distance ``d`` (unit
costs) and how many optimal alignments reach it, ``n``: the sum of the counts of the neighbours
that give the minimum. The two travel as one record, ``value_dtype = np.dtype([("d", np.int32),
("n", np.int64)])``: each field keeps its own type, so the count is an exact int64 while the
distance stays a cheap int32. Counts grow exponentially with the length; they saturate at
``CAP = 2**62`` (the answer then reads "at least 2^62"), never wrap around.
"""

from __future__ import annotations

import argparse

import numpy as np

from gpudp import GridRecurrence, sweep

CAP = 1 << 62  # counts stop here: exact below, "at least" at it
FAR = 1 << 30  # the distance of a cell outside the grid: never the minimum


class AlignmentCount(GridRecurrence):
    value_dtype = np.dtype([("d", np.int32), ("n", np.int64)])
    offsets = ((-1, 0), (0, -1), (-1, -1))
    symbols = True  # cell gets a[i - 1] and b[j - 1] as ri, cj

    def __init__(self, a: str, b: str):
        self.a = np.frombuffer(a.encode(), np.uint8).astype(np.int32)
        self.b = np.frombuffer(b.encode(), np.uint8).astype(np.int32)

    def shape(self):
        return len(self.a) + 1, len(self.b) + 1

    def row_symbols(self):
        return np.concatenate(([-1], self.a)).astype(np.int32)  # row i compares a[i - 1]

    def col_symbols(self):
        return np.concatenate(([-2], self.b)).astype(np.int32)

    @staticmethod
    def cell(i, j, up, left, diag, ri, cj):
        if i == 0 and j == 0:
            return 0, 1
        cost = 0 if ri == cj else 1
        d = min(up[0] + 1, left[0] + 1, diag[0] + cost)
        n = 0
        for dist, count in ((up[0] + 1, up[1]), (left[0] + 1, left[1]), (diag[0] + cost, diag[1])):
            if dist == d:
                n = n + count if count < CAP - n else CAP  # saturating: never past CAP
        return d, n

    @staticmethod
    def boundary(i, j):
        return FAR, 0


def count(a: str, b: str, **sweep_options) -> tuple[int, int, bool]:
    """``(distance, alignments, exact)``: the edit distance of ``a`` and ``b``, the number of
    optimal alignments (``exact`` False when it reached ``CAP``: at least that many).
    ``sweep_options`` go to :func:`gpudp.sweep`. Raises ``ValueError`` for non-ASCII text."""
    if not (a.isascii() and b.isascii()):
        raise ValueError("this example compares ASCII text (one byte a symbol)")
    last = sweep(AlignmentCount(a, b), **sweep_options).last_row[-1]
    n = int(last["n"])
    return int(last["d"]), n, n < CAP


def main(argv=None):
    parser = argparse.ArgumentParser(description="Edit distance and its number of optimal alignments")
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    args = parser.parse_args(argv)
    d, n, exact = count(args.a, args.b, backend=args.backend)
    print(f"distance {d}, {'' if exact else 'at least '}{n} optimal alignments")


if __name__ == "__main__":
    main()
