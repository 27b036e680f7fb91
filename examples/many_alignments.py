"""Global alignment (Needleman-Wunsch) of many read/reference pairs at once, with gpudp.sweep_many.

    python examples/many_alignments.py GATTACA:GCATGCT ACGT:AGT [--match 1 --mismatch -1 --gap 1]
    python examples/many_alignments.py --random 2000 --length 150 [--backend auto|cpu|cuda]
    python examples/many_alignments.py --cross GATTACA,ACGT GCATGCT,AGT,ACGT

``--cross`` scores every query against every choice (no alignment) with sweep_many's pairs form:
the recurrence once, as a template, and the two lists, read in bulk (no object a pair).

Cell ``(i, j)`` holds the best score of an alignment of the prefixes ``a[:i + 1]`` and ``b[:j + 1]``
(a match scores ``match``, a mismatch ``mismatch``, a letter against a gap ``-gap``); row -1 and
column -1 are the empty prefixes, whose alignments are all gaps. One ``sweep_many`` call sweeps
every pair (each its own grid size) and walks each pair's decisions back from its last cell; a pair
that fails (here: none can) would carry its own error while the others are aligned.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from gpudp import GridRecurrence, sweep_many

DIAG, UP, LEFT = 0, 1, 2  # where the best alignment of (i, j) came from


class GlobalAlignment(GridRecurrence):
    value_dtype = np.int32
    decision_bits = 2
    offsets = ((-1, 0), (0, -1), (-1, -1))
    symbols = True  # cell gets a[i] and b[j] as ri, cj

    def __init__(self, a: str, b: str, match=1, mismatch=-1, gap=1):
        self.a = np.frombuffer(a.encode(), np.uint8)
        self.b = np.frombuffer(b.encode(), np.uint8)
        self.scores = np.array([match, mismatch, gap], np.int32)

    def shape(self):
        return len(self.a), len(self.b)

    def row_symbols(self):
        return self.a

    def col_symbols(self):
        return self.b

    def data(self):
        return (self.scores,)

    @staticmethod
    def cell(i, j, up, left, diag, ri, cj, scores):
        best, how = diag + (scores[0] if ri == cj else scores[1]), DIAG
        if up - scores[2] > best:
            best, how = up - scores[2], UP
        if left - scores[2] > best:
            best, how = left - scores[2], LEFT
        return best, how

    @staticmethod
    def boundary(i, j, scores):
        return -scores[2] * (i + j + 2)  # row -1 or column -1: the other prefix against gaps

    @staticmethod
    def back(i, j, how, scores):
        if how == DIAG:
            return i - 1, j - 1
        if how == UP:
            return i - 1, j
        return i, j - 1


def align_many(pairs, match=1, mismatch=-1, gap=1, **options):
    """``([(score, (top, bottom))], stats)``: per pair ``(a, b)``, in order, the best global
    alignment score and one optimal alignment (``-`` for a gap); and the batch's statistics.
    ``options`` go to :func:`gpudp.sweep_many` (``backend``, ...).

    Raises ``ValueError`` for non-ASCII text, a gap that is not a cost, or scores that could
    overflow int32.
    """
    pairs = list(pairs)
    for a, b in pairs:
        if not (a.isascii() and b.isascii()):
            raise ValueError("this example aligns ASCII text (one byte a symbol)")
        if (len(a) + len(b) + 2) * max(abs(match), abs(mismatch), gap) >= 2**31 - 1:
            raise ValueError("scores could overflow int32: shorter sequences or smaller scores")
    if gap < 0:
        raise ValueError("gap is a cost: >= 0")
    recs = [GlobalAlignment(a, b, match, mismatch, gap) for a, b in pairs]
    result = sweep_many(recs, **options)
    out = []
    for (a, b), rec, item in zip(pairs, recs, result, strict=True):
        if item.error:
            raise RuntimeError(f"pair {item.index}: {item.error}")
        n, m = len(a), len(b)
        if item.value is None:  # an empty string: all gaps
            score = int(GlobalAlignment.boundary(n - 1, m - 1, *rec.data()))
            i, j, cols = n - 1, m - 1, []
        else:
            score, cols = int(item.value), []
            for i, j, how in item.path:  # from the last cell backwards
                cols.append((a[i] if how != LEFT else "-", b[j] if how != UP else "-"))
            i, j = item.exit
        cols += [(a[k], "-") for k in range(i, -1, -1)]  # where the walk left the grid: gaps
        cols += [("-", b[k]) for k in range(j, -1, -1)]
        cols.reverse()
        out.append((score, ("".join(x for x, _ in cols), "".join(y for _, y in cols))))
    return out, result.stats


def score_all(queries, choices, match=1, mismatch=-1, gap=1, **options):
    """``(scores, stats)``: the best global alignment score of every query against every choice,
    ``scores[k, m]`` for query ``k`` and choice ``m`` (an int64 array), from one ``sweep_many`` call
    in its pairs form. ``options`` go to :func:`gpudp.sweep_many`.

    Raises ``ValueError`` as :func:`align_many` does."""
    queries, choices = list(queries), list(choices)
    longest = max(map(len, queries + choices), default=0)
    if not all(x.isascii() for x in queries + choices):
        raise ValueError("this example aligns ASCII text (one byte a symbol)")
    if (2 * longest + 2) * max(abs(match), abs(mismatch), gap) >= 2**31 - 1:
        raise ValueError("scores could overflow int32: shorter sequences or smaller scores")
    if gap < 0:
        raise ValueError("gap is a cost: >= 0")
    template = GlobalAlignment("", "", match, mismatch, gap)
    result = sweep_many(template, queries=queries, choices=choices, traceback=False, **options)
    # the values read in bulk (no item made); an empty sequence has none: all gaps, the boundary's value
    values = np.array(result.values, object).reshape(len(queries), len(choices))
    lengths = [np.array([len(x) for x in side], np.int64) for side in (queries, choices)]
    all_gaps = -gap * (lengths[0][:, None] + lengths[1][None, :])
    return np.where(np.equal(values, None), all_gaps, values).astype(np.int64), result.stats


def _random_pairs(count: int, length: int, seed: int = 7):
    """Reads of about ``length`` letters and their references: each read a copy of its reference
    with about 5% of its letters substituted, deleted or inserted."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("ACGT"))
    pairs = []
    for _ in range(count):
        ref = rng.choice(letters, length)
        read = []
        for x in ref:
            r = rng.random()
            if r < 0.02:
                continue  # deleted
            read.append(rng.choice(letters) if r < 0.04 else x)
            if r > 0.99:
                read.append(rng.choice(letters))  # inserted
        pairs.append(("".join(read), "".join(ref)))
    return pairs


def main(argv=None):
    parser = argparse.ArgumentParser(description="Many global alignments in one gpudp.sweep_many call")
    parser.add_argument("pairs", nargs="*", help="READ:REFERENCE pairs")
    parser.add_argument("--random", type=int, default=0, help="align this many random pairs instead")
    parser.add_argument("--length", type=int, default=150, help="length of the random references")
    parser.add_argument("--match", type=int, default=1)
    parser.add_argument("--mismatch", type=int, default=-1)
    parser.add_argument("--gap", type=int, default=1)
    parser.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--cross", nargs=2, metavar=("QUERIES", "CHOICES"), help="comma-separated lists")
    args = parser.parse_args(argv)
    if args.cross:
        queries, choices = (x.split(",") for x in args.cross)
        scores, stats = score_all(queries, choices, args.match, args.mismatch, args.gap, backend=args.backend)
        print(f"{len(queries)} x {len(choices)} scores ({stats.backend} backend)")
        for q, row in zip(queries, scores, strict=True):
            print(q, *row.tolist())
        return
    if args.random:
        pairs = _random_pairs(args.random, args.length)
    else:
        pairs = [tuple(p.split(":", 1)) for p in args.pairs]
        if not pairs or any(len(p) != 2 for p in pairs):
            parser.error("give READ:REFERENCE pairs, or --random N")
    t = time.perf_counter()
    out, stats = align_many(pairs, args.match, args.mismatch, args.gap, backend=args.backend)
    seconds = time.perf_counter() - t
    if args.random:
        scores = np.array([s for s, _ in out])
        print(
            f"{len(out)} pairs ({stats.backend} backend): scores {scores.min()} .. {scores.max()}, "
            f"mean {scores.mean():.1f}; {stats.cells:,} cells in {seconds:.3f} s"
        )
        out = out[:1]
    else:
        print(f"{len(out)} pairs ({stats.backend} backend)")
    for score, (top, bottom) in out:
        print(f"score {score}")
        print(top)
        print(bottom)


if __name__ == "__main__":
    main()
