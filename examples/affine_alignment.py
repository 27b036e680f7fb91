"""Global alignment with affine gaps (Gotoh) on gpudp, with the alignment from a stateful traceback.

    python examples/affine_alignment.py GATTACA GCATGCT [--match 2 --mismatch -1 --open 3 --extend 1]

A gap of length L costs ``open + extend * L``. Gotoh's recurrence keeps three values per cell: ``M``
(the prefixes end in a pair of symbols), ``X`` (they end in a gap in ``b``: ``a[i-1]`` against
``-``) and ``Y`` (a gap in ``a``)::

    M(i, j) = max(M, X, Y)(i-1, j-1) + s(a[i-1], b[j-1])
    X(i, j) = max(M(i-1, j) - open - extend, X(i-1, j) - extend)
    Y(i, j) = max(M(i, j-1) - open - extend, Y(i, j-1) - extend)

Row 0 and column 0 are the empty prefixes. The three values travel packed in one int64 (21 bits
each, so scores stay within +-2^20: :func:`align` refuses longer inputs), and the decision keeps,
in 4 bits, where each of the three came from. The traceback needs to know which of the three
matrices it is in: the class declares ``traceback_state = True`` and ``back`` maps (cell,
decision, matrix) to (predecessor, its matrix), compiled like every other static method.
"""

from __future__ import annotations

import argparse

import numpy as np
from numba.extending import register_jitable

from gpudp import GridRecurrence, sweep

FIELD = 21
BIAS = 1 << (FIELD - 1)  # a field holds score + BIAS in 0 .. 2^21 - 1
MASK = (1 << FIELD) - 1
NEG = -BIAS  # minus infinity: no alignment ends this way
M, X, Y = 0, 1, 2  # the traceback's states: which matrix


@register_jitable
def pack(m, x, y):
    return ((np.int64(m) + BIAS) << (2 * FIELD)) | ((np.int64(x) + BIAS) << FIELD) | (np.int64(y) + BIAS)


@register_jitable
def unpack(v):
    return ((v >> (2 * FIELD)) & MASK) - BIAS, ((v >> FIELD) & MASK) - BIAS, (v & MASK) - BIAS


@register_jitable
def gap(open_from, extend_from, gap_open, gap_extend):
    """The better of opening a gap after M and extending one; (score, 1 when extended)."""
    o = max(open_from - gap_open - gap_extend, NEG)
    e = max(extend_from - gap_extend, NEG)
    if e > o:
        return e, 1
    return o, 0


class Gotoh(GridRecurrence):
    value_dtype = np.int64
    decision_bits = 4  # bits 0-1: M's predecessor matrix; bit 2: X extended; bit 3: Y extended
    offsets = ((-1, 0), (0, -1), (-1, -1))
    traceback_state = True
    symbols = True  # cell gets a[i - 1] and b[j - 1] as ri, cj (kept in registers on the GPU)

    def __init__(self, a, b, match=2, mismatch=-1, gap_open=3, gap_extend=1):
        self.a = np.frombuffer(a.encode(), np.uint8).astype(np.int32)
        self.b = np.frombuffer(b.encode(), np.uint8).astype(np.int32)
        self.scores = np.array([match, mismatch, gap_open, gap_extend], np.int64)

    def shape(self):
        return len(self.a) + 1, len(self.b) + 1

    def row_symbols(self):
        return np.concatenate(([-1], self.a)).astype(np.int32)  # row i compares a[i - 1]

    def col_symbols(self):
        return np.concatenate(([-2], self.b)).astype(np.int32)

    def data(self):
        return (self.scores,)

    @staticmethod
    def cell(i, j, up, left, diag, ri, cj, scores):
        if i == 0 and j == 0:
            return pack(0, NEG, NEG), 0
        x, dx, y, dy, m, dm = NEG, 0, NEG, 0, NEG, 0
        if i > 0:
            um, ux, _ = unpack(up)
            x, dx = gap(um, ux, scores[2], scores[3])
        if j > 0:
            lm, _, ly = unpack(left)
            y, dy = gap(lm, ly, scores[2], scores[3])
        if i > 0 and j > 0:
            pm, px, py = unpack(diag)
            best = pm
            if px > best:
                best, dm = px, X
            if py > best:
                best, dm = py, Y
            m = max(best + (scores[0] if ri == cj else scores[1]), NEG)
        return pack(m, x, y), dm | (dx << 2) | (dy << 3)

    @staticmethod
    def boundary(i, j, scores):
        return pack(NEG, NEG, NEG)  # outside row 0 and column 0: read by no valid alignment

    @staticmethod
    def back(i, j, decision, state, scores):
        if state == M:
            if i == 0 and j == 0:
                return -1, -1, M  # the empty prefixes: the alignment starts here
            return i - 1, j - 1, decision & 3
        if state == X:
            return i - 1, j, X if (decision >> 2) & 1 else M
        return i, j - 1, Y if (decision >> 3) & 1 else M


def align(a: str, b: str, match=2, mismatch=-1, gap_open=3, gap_extend=1, **sweep_options):
    """The optimal global alignment score and one optimal alignment ``(top, bottom)`` (``-`` for a
    gap), with the sweep's statistics. ``sweep_options`` go to :func:`gpudp.sweep`.

    Raises ``ValueError`` for non-ASCII text, or when the scores could leave the 21 bits a packed
    value holds.
    """
    if not (a.isascii() and b.isascii()):
        raise ValueError("this example aligns ASCII text (one byte a symbol)")
    worst = (len(a) + len(b) + 1) * (max(abs(match), abs(mismatch)) + abs(gap_open) + abs(gap_extend))
    if worst >= BIAS:
        raise ValueError(
            f"scores of up to {worst} do not fit the 21-bit fields of this example (< {BIAS}): "
            "shorter sequences or smaller scores"
        )
    if gap_open < 0 or gap_extend < 0:
        raise ValueError("gap_open and gap_extend are costs: >= 0")
    rec = Gotoh(a, b, match, mismatch, gap_open, gap_extend)
    result = sweep(rec, **sweep_options)
    scores = unpack(int(result.last_row[-1]))
    state = int(np.argmax(scores))
    path = result.traceback((len(a), len(b)), state=state)  # rows (i, j, decision, state)
    i, j, _, s = path[::-1][1:].T  # from the start on, without the empty prefixes' cell (0, 0)
    gap, sa, sb = (
        ord("-"),
        np.frombuffer(b" " + a.encode(), np.uint8),
        np.frombuffer(b" " + b.encode(), np.uint8),
    )
    top = np.where(s == Y, gap, sa[i]).astype(np.uint8).tobytes().decode()
    bottom = np.where(s == X, gap, sb[j]).astype(np.uint8).tobytes().decode()
    result.close()
    return int(scores[state]), (top, bottom), result.stats


def main(argv=None):
    parser = argparse.ArgumentParser(description="Affine-gap global alignment (Gotoh) on gpudp")
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--match", type=int, default=2)
    parser.add_argument("--mismatch", type=int, default=-1)
    parser.add_argument("--open", type=int, default=3)
    parser.add_argument("--extend", type=int, default=1)
    parser.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    args = parser.parse_args(argv)
    score, (top, bottom), stats = align(
        args.a, args.b, args.match, args.mismatch, args.open, args.extend, backend=args.backend
    )
    print(f"score {score} ({stats.backend} backend, schedule: {stats.extra['schedule']})")
    print(top)
    print(bottom)


if __name__ == "__main__":
    main()
