"""Local alignment (Smith-Waterman) on gpudp: the best-scoring pair of substrings and their alignment.

    python examples/local_alignment.py TGTTACGG GGTTGACTA [--match 3 --mismatch -3 --gap 2]

Cell ``(i, j)`` holds the best score of an alignment ending at ``a[i]`` and ``b[j]``, never below
0 (an alignment may start anywhere)::

    H(i, j) = max(0, H(i-1, j-1) + s(a[i], b[j]), H(i-1, j) - gap, H(i, j-1) - gap)

The answer is the largest ``H`` anywhere in the table, which the engine finds during the sweep
(``reduce = "max"``: ``result.best_value`` and ``result.best_cell``), and the alignment is the
traceback from that cell until a cell whose score started from 0 (decision ``STOP``).
"""

from __future__ import annotations

import argparse

import numpy as np

from gpudp import GridRecurrence, sweep

STOP, DIAG, UP, LEFT = 0, 1, 2, 3  # where H(i, j) came from; STOP: the alignment starts at (i, j)
I32 = np.int32


class SmithWaterman(GridRecurrence):
    value_dtype = np.int32
    decision_bits = 2
    offsets = ((-1, 0), (0, -1), (-1, -1))
    symbols = True  # cell gets a[i] and b[j] as ri, cj (kept in registers on the GPU)
    reduce = "max"  # the best cell of the whole table, found during the sweep

    def __init__(self, a: str, b: str, match=3, mismatch=-3, gap=2):
        self.a = np.frombuffer(a.encode(), np.uint8)
        self.b = np.frombuffer(b.encode(), np.uint8)
        self.scores = (I32(match), I32(mismatch), I32(gap))

    def shape(self):
        return len(self.a), len(self.b)

    def row_symbols(self):
        return self.a

    def col_symbols(self):
        return self.b

    def data(self):
        return self.scores  # scalars: kernel arguments, in registers (an array is read from memory)

    @staticmethod
    def cell(i, j, up, left, diag, ri, cj, match, mismatch, gap):
        # I32(...): numba computes int32 + int32 in 64 bits; kept in 32 the GPU does half the work
        d = I32(diag + (match if ri == cj else mismatch))
        lf = I32(left - gap)
        u = I32(up - gap)
        # up last: a GPU warp's cells of a step wait for it (the cell above, this step); the rest
        # is ready before
        h = max(max(d, lf), u)
        if h <= 0:
            return I32(0), STOP
        return h, (LEFT if lf > max(d, u) else UP if u > d else DIAG)  # ties: DIAG, then UP

    @staticmethod
    def boundary(i, j, match, mismatch, gap):
        return 0

    @staticmethod
    def back(i, j, how, match, mismatch, gap):
        if how == DIAG:
            return i - 1, j - 1
        if how == UP:
            return i - 1, j
        if how == LEFT:
            return i, j - 1
        return -1, -1  # STOP: leave the grid, the walk ends


def align(a: str, b: str, match=3, mismatch=-3, gap=2, **sweep_options):
    """The best local alignment score, the aligned substrings ``(top, bottom)`` with ``-`` for gaps,
    where they start in ``a`` and ``b``, and the sweep's statistics.

    Raises ``ValueError`` for non-ASCII text, or when int32 scores could overflow or the gap is
    not a cost.
    """
    if not (a.isascii() and b.isascii()):
        raise ValueError("this example aligns ASCII text (one byte a symbol)")
    if gap < 0 or match < 0:
        raise ValueError("match must be >= 0 and gap a cost (>= 0)")
    if min(len(a), len(b)) * max(abs(match), abs(mismatch), gap) >= 2**31 - 1:
        raise ValueError("scores could overflow int32: shorter sequences or smaller scores")
    result = sweep(SmithWaterman(a, b, match, mismatch, gap), **sweep_options)
    score = result.best_value or 0
    top, bottom, start = "", "", (len(a), len(b))
    if score > 0:
        path = result.traceback(result.best_cell)  # rows (i, j, decision), from the best cell back
        stop = np.flatnonzero(path[:, 2] == STOP)
        i, j, how = path[: stop[0] if stop.size else len(path)][::-1].T  # from the start on
        gap = ord("-")
        top = np.where(how == LEFT, gap, np.frombuffer(a.encode(), np.uint8)[i]).astype(np.uint8).tobytes()
        bottom = np.where(how == UP, gap, np.frombuffer(b.encode(), np.uint8)[j]).astype(np.uint8).tobytes()
        top, bottom, start = top.decode(), bottom.decode(), (int(i[0]), int(j[0]))
    result.close()
    return int(score), (top, bottom), start, result.stats


def main(argv=None):
    parser = argparse.ArgumentParser(description="Smith-Waterman local alignment on gpudp")
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--match", type=int, default=3)
    parser.add_argument("--mismatch", type=int, default=-3)
    parser.add_argument("--gap", type=int, default=2)
    parser.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    args = parser.parse_args(argv)
    score, (top, bottom), (i, j), stats = align(
        args.a, args.b, args.match, args.mismatch, args.gap, backend=args.backend
    )
    print(f"score {score} ({stats.backend} backend), a[{i}:] against b[{j}:]")
    print(top)
    print(bottom)


if __name__ == "__main__":
    main()
