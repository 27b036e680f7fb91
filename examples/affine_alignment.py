"""Global alignment with affine gaps (Gotoh) on gpudp, with the alignment from a stateful traceback.

    python examples/affine_alignment.py GATTACA GCATGCT [--match 2 --mismatch -1 --open 3 --extend 1]
    python examples/affine_alignment.py --random 2000 --length 150 [--backend auto|cpu|cuda]

``--random`` aligns many pairs in one :func:`gpudp.sweep_many` call (:func:`align_many`): the record
cell runs in the batch kernels, each pair's walk starting in its best matrix.

A gap of length L costs ``open + extend * L``. Gotoh's recurrence keeps three values per cell: ``M``
(the prefixes end in a pair of symbols), ``X`` (they end in a gap in ``b``: ``a[i-1]`` against
``-``) and ``Y`` (a gap in ``a``)::

    M(i, j) = max(M, X, Y)(i-1, j-1) + s(a[i-1], b[j-1])
    X(i, j) = max(M(i-1, j) - open - extend, X(i-1, j) - extend)
    Y(i, j) = max(M(i, j-1) - open - extend, Y(i, j-1) - extend)

Row 0 and column 0 are the empty prefixes. The cell is a *record* of three int32 fields ``m``,
``x``, ``y`` (``value_dtype`` a numpy structured dtype): ``cell`` receives each neighbour as a tuple
``(m, x, y)`` and returns one, and the engine keeps each field in its own arrays. The decision
keeps, in 4 bits, where each of the three came from. The traceback needs to know which of the three
matrices it is in: the class declares ``traceback_state = True`` and ``back`` maps (cell, decision,
matrix) to (predecessor, its matrix), compiled like every other static method.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from gpudp import GridRecurrence, sweep, sweep_many

NEG = -(1 << 29)  # minus infinity: no alignment ends this way (clamped, so int32 never overflows)
M, X, Y = 0, 1, 2  # the record's fields, and the traceback's states: which matrix
I32 = np.int32


class Gotoh(GridRecurrence):
    value_dtype = np.dtype([("m", np.int32), ("x", np.int32), ("y", np.int32)])
    fill = NEG
    decision_bits = 4  # bits 0-1: M's predecessor matrix; bit 2: X extended; bit 3: Y extended
    offsets = ((-1, 0), (0, -1), (-1, -1))
    traceback_state = True
    symbols = True  # cell gets a[i - 1] and b[j - 1] as ri, cj (kept in registers on the GPU)

    def __init__(self, a, b, match=2, mismatch=-1, gap_open=3, gap_extend=1):
        self.a = np.frombuffer(a.encode(), np.uint8).astype(np.int32)
        self.b = np.frombuffer(b.encode(), np.uint8).astype(np.int32)
        self.scores = tuple(I32(s) for s in (match, mismatch, gap_open + gap_extend, gap_extend))

    def shape(self):
        return len(self.a) + 1, len(self.b) + 1

    def row_symbols(self):
        return np.concatenate(([-1], self.a)).astype(np.int32)  # row i compares a[i - 1]

    def col_symbols(self):
        return np.concatenate(([-2], self.b)).astype(np.int32)

    def data(self):
        return self.scores  # scalars: kernel arguments, in registers (an array is read from memory)

    @staticmethod
    def cell(i, j, up, left, diag, ri, cj, match, mismatch, opening, extend):
        # I32(...) keeps the arithmetic in 32 bits (numba computes int32 + int32 in 64)
        if i == 0 and j == 0:
            return (I32(0), I32(NEG), I32(NEG)), 0
        x, dx = max(I32(up[M] - opening), I32(NEG)), 0  # open a gap after M, or extend one: X
        t = I32(up[X] - extend)
        if t > x:
            x, dx = t, 1
        y, dy = max(I32(left[M] - opening), I32(NEG)), 0
        t = I32(left[Y] - extend)
        if t > y:
            y, dy = t, 1
        m, dm = diag[M], M
        if diag[X] > m:
            m, dm = diag[X], X
        if diag[Y] > m:
            m, dm = diag[Y], Y
        m = max(I32(m + (match if ri == cj else mismatch)), I32(NEG)) if i > 0 and j > 0 else I32(NEG)
        return (m, x, y), dm | (dx << 2) | (dy << 3)

    @staticmethod
    def boundary(i, j, match, mismatch, opening, extend):
        return (NEG, NEG, NEG)  # outside row 0 and column 0: read by no valid alignment

    @staticmethod
    def back(i, j, decision, state, match, mismatch, opening, extend):
        if state == M:
            if i == 0 and j == 0:
                return -1, -1, M  # the empty prefixes: the alignment starts here
            return i - 1, j - 1, decision & 3
        if state == X:
            return i - 1, j, X if (decision >> 2) & 1 else M
        return i, j - 1, Y if (decision >> 3) & 1 else M


def _checked(a: str, b: str, match, mismatch, gap_open, gap_extend) -> None:
    """ValueError for what the int32 fields cannot hold exactly (see :func:`align`)."""
    if not (a.isascii() and b.isascii()):
        raise ValueError("this example aligns ASCII text (one byte a symbol)")
    if gap_open < 0 or gap_extend < 0:
        raise ValueError("gap_open and gap_extend are costs: >= 0")
    worst = (len(a) + len(b) + 1) * (max(abs(match), abs(mismatch)) + abs(gap_open) + abs(gap_extend))
    if worst >= 1 << 28:
        raise ValueError(f"scores of up to {worst} come too close to minus infinity ({NEG}) for int32 fields")


def _strings(a: str, b: str, path) -> tuple[str, str]:
    """The alignment's two rows from a path of rows ``(i, j, decision, state)`` (last cell first)."""
    i, j, _, s = path[::-1][1:].T  # from the start on, without the empty prefixes' cell (0, 0)
    gap, sa, sb = (
        ord("-"),
        np.frombuffer(b" " + a.encode(), np.uint8),
        np.frombuffer(b" " + b.encode(), np.uint8),
    )
    top = np.where(s == Y, gap, sa[i]).astype(np.uint8).tobytes().decode()
    bottom = np.where(s == X, gap, sb[j]).astype(np.uint8).tobytes().decode()
    return top, bottom


def _best(value) -> int:
    """The matrix (M, X or Y) whose score at the last cell is best: where the walk starts."""
    return int(np.argmax([int(value[k]) for k in (M, X, Y)]))


def align(a: str, b: str, match=2, mismatch=-1, gap_open=3, gap_extend=1, **sweep_options):
    """The optimal global alignment score and one optimal alignment ``(top, bottom)`` (``-`` for a
    gap), with the sweep's statistics. ``sweep_options`` go to :func:`gpudp.sweep`.

    Raises ``ValueError`` for non-ASCII text, negative gap costs, or scores that could reach minus
    infinity (``NEG``, -2^29: the int32 fields' headroom).
    """
    _checked(a, b, match, mismatch, gap_open, gap_extend)
    rec = Gotoh(a, b, match, mismatch, gap_open, gap_extend)
    result = sweep(rec, **sweep_options)
    last = result.last_row[-1]
    state = _best(last)
    path = result.traceback((len(a), len(b)), state=state)  # rows (i, j, decision, state)
    result.close()
    return int(last[state]), _strings(a, b, path), result.stats


def align_many(pairs, match=2, mismatch=-1, gap_open=3, gap_extend=1, **options):
    """:func:`align` for many pairs ``(a, b)`` in one :func:`gpudp.sweep_many` call (the record cell
    runs in the batch kernels): a list of ``(score, (top, bottom))`` in input order, and the batch's
    statistics. ``options`` go to sweep_many; ``traceback=False`` gives ``(score, None)``."""
    for a, b in pairs:
        _checked(a, b, match, mismatch, gap_open, gap_extend)
    recs = [Gotoh(a, b, match, mismatch, gap_open, gap_extend) for a, b in pairs]
    res = sweep_many(recs, start_state=lambda rec, value: _best(value), **options)
    out = []
    for (a, b), item in zip(pairs, res, strict=True):
        if item.error is not None:
            raise ValueError(f"pair {item.index}: {item.error}")
        score = int(item.value[_best(item.value)])
        out.append((score, None if item.path is None else _strings(a, b, item.path)))
    return out, res.stats


def main(argv=None):
    parser = argparse.ArgumentParser(description="Affine-gap global alignment (Gotoh) on gpudp")
    parser.add_argument("a", nargs="?")
    parser.add_argument("b", nargs="?")
    parser.add_argument("--match", type=int, default=2)
    parser.add_argument("--mismatch", type=int, default=-1)
    parser.add_argument("--open", type=int, default=3)
    parser.add_argument("--extend", type=int, default=1)
    parser.add_argument("--random", type=int, metavar="N", help="align N random DNA pairs in one batch")
    parser.add_argument("--length", type=int, default=150, help="of each random sequence")
    parser.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    args = parser.parse_args(argv)
    scores = (args.match, args.mismatch, args.open, args.extend)
    if args.random is not None:
        rng = np.random.default_rng(0)
        dna = lambda: "".join(rng.choice(list("ACGT"), args.length))  # noqa: E731
        pairs = [(dna(), dna()) for _ in range(args.random)]
        t = time.perf_counter()
        out, stats = align_many(pairs, *scores, backend=args.backend)
        seconds = time.perf_counter() - t
        print(f"{len(pairs)} pairs of {args.length} aligned in {seconds:.3f} s ({stats.backend} backend)")
        if out:
            score, (top, bottom) = out[0]
            print(f"pair 0: score {score}\n{top}\n{bottom}")
        return
    if args.a is None or args.b is None:
        parser.error("give two sequences, or --random N")
    score, (top, bottom), stats = align(args.a, args.b, *scores, backend=args.backend)
    print(f"score {score} ({stats.backend} backend, schedule: {stats.extra['schedule']})")
    print(top)
    print(bottom)


if __name__ == "__main__":
    main()
