"""Global alignment (Needleman-Wunsch) inside a band |i - j| <= w, written as a band: n rows of
2w + 1 columns.

    python examples/banded_alignment.py GATTACAGATTACA GATTTACAGATACA --band 2 [--backend cpu]

Where two sequences are known to be close (a read against its reference, two versions of one text),
the best alignment stays near the diagonal, and only the cells with ``|i - j| <= w`` need a value:
``n (2w + 1)`` cells instead of ``n m``. The band is declared as a grid of its own: cell ``(i, k)``
is cell ``(i, j)``, ``j = i - w + k``, of the alignment's table. The table's three neighbours keep
constant offsets in the band's coordinates: ``D(i - 1, j - 1)`` is ``(i - 1, k)``, ``D(i - 1, j)``
is ``(i - 1, k + 1)``, ``D(i, j - 1)`` is ``(i, k - 1)``. A cell of the band outside the table
(``j < -1`` or ``j >= m``) and a read past the band's sides hold ``NEG``, which no alignment
crosses; column -1 of the table (``j = -1``: ``a[:i + 1]`` against gaps) lies inside the band for
the first ``w`` rows and is computed as a cell. The engine sweeps the band by anti-diagonals of its
own grid, ``2w + 1`` slots a wavefront (docs/tutorial.md, section 3), and the path from the last
cell maps back to ``(i, j)`` rows.

The score equals the full table's whenever the full table's best alignment stays in the band
(always for ``w >= max(n, m)``); a band narrower than ``|n - m|`` cannot hold the last cell and is
refused.
"""

from __future__ import annotations

import argparse

import numpy as np

from gpudp import GridRecurrence, sweep

DIAG, UP, LEFT = 0, 1, 2  # a[i] against b[j]; a[i] against a gap; a gap against b[j]
#: the value of a cell no alignment may cross (far from int32's ends: a gap or two added stays exact)
NEG = -(1 << 29)


class BandedAlignment(GridRecurrence):
    value_dtype = np.int32
    decision_bits = 2
    offsets = ((-1, 0), (-1, 1), (0, -1))  # D(i-1, j-1), D(i-1, j), D(i, j-1) in band coordinates

    def __init__(self, a: str, b: str, band: int, match=1, mismatch=-1, gap=1):
        if band < 0 or band < abs(len(a) - len(b)):
            raise ValueError(f"a band of {band} cannot reach the last cell of {len(a)} x {len(b)}")
        self.a = np.frombuffer(a.encode(), np.uint8)
        self.b = np.frombuffer(b.encode(), np.uint8)
        self.w = band
        self.params = np.array([match, mismatch, gap, band, len(b)], np.int32)

    def shape(self):
        return len(self.a), 2 * self.w + 1 if len(self.a) and len(self.b) else 0

    def data(self):
        return self.a, self.b, self.params

    @staticmethod
    def boundary(i, k, a, b, params):
        w, m, gap = params[3], params[4], params[2]
        j = i - w + k
        if i == -1 and -1 <= j < m:  # row -1: b[:j + 1] against gaps
            return -(j + 1) * gap
        if j == -1:  # column -1, left of the band: a[:i + 1] against gaps
            return -(i + 1) * gap
        return NEG

    @staticmethod
    def cell(i, k, diag, up, left, a, b, params):
        match, mismatch, gap, w, m = params[0], params[1], params[2], params[3], params[4]
        j = i - w + k
        if j == -1:
            return -(i + 1) * gap, UP
        if j < -1 or j >= m:
            return NEG, DIAG
        best, how = diag + (match if a[i] == b[j] else mismatch), DIAG
        if up - gap > best:
            best, how = up - gap, UP
        if left - gap > best:
            best, how = left - gap, LEFT
        return best, how

    @staticmethod
    def back(i, k, how, a, b, params):
        if how == DIAG:
            return i - 1, k
        if how == UP:
            return i - 1, k + 1
        return i, k - 1


def align(a: str, b: str, band: int, **sweep_options):
    """The best global alignment of ``a`` and ``b`` within ``|i - j| <= band``: ``(score, top,
    bottom, stats)``, ``top`` and ``bottom`` the two rows of the alignment (``-`` for a gap).
    ``sweep_options`` go to :func:`gpudp.sweep`."""
    rec = BandedAlignment(a, b, band)
    n, m, w = len(a), len(b), band
    if not n or not m:
        return -(n + m) * int(rec.params[2]), a or "-" * m, b or "-" * n, None
    result = sweep(rec, **sweep_options)
    k = m - 1 - (n - 1) + w  # the last cell, in the band's coordinates
    score = int(result.last_row[k])  # the band's last row is the table's row n - 1
    top, bottom = [], []
    path = result.traceback((n - 1, k))
    for i, kk, how in path:
        j = i - w + kk
        top.append(a[i] if how != LEFT else "-")
        bottom.append(b[j] if how != UP and j >= 0 else "-")
    i, kk = BandedAlignment.back(*path[-1], *rec.data())  # where the walk left the band
    j = i - w + kk
    top += [a[q] for q in range(i, -1, -1)] + ["-"] * (j + 1)  # (one of the two is empty)
    bottom += ["-"] * (i + 1) + [b[q] for q in range(j, -1, -1)]
    result.close()
    return score, "".join(top[::-1]), "".join(bottom[::-1]), result.stats


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--band", type=int, default=8)
    ap.add_argument("--backend", default="auto")
    args = ap.parse_args(argv)
    score, top, bottom, _ = align(args.a, args.b, args.band, backend=args.backend, progress=False)
    print(f"score {score} within a band of {args.band}")
    print(top)
    print(bottom)


if __name__ == "__main__":
    main()
