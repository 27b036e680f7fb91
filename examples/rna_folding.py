"""RNA folding (Nussinov) on gpudp: the most base pairs of a secondary structure, as dot-bracket.

    python examples/rna_folding.py GGGAAAUCC [--min-loop 3] [--backend cpu]

Bases pair Watson-Crick (A-U, G-C) or wobble (G-U); pairs do not cross, and a hairpin closes over at
least ``min_loop`` unpaired bases. Cell ``(i, j)`` holds the most pairs inside ``s[i..j]``: either
``s[i]`` stays unpaired, or it pairs with some ``s[k]``, splitting the rest into ``i+1..k-1`` (inside
the pair) and ``k+1..j`` (after it)::

    N(i, j) = max( N(i + 1, j),
                   max over k of 1 + N(i + 1, k - 1) + N(k + 1, j),  s[i], s[k] pair, k - i > min_loop )

Empty intervals count 0 (the cell tests for them: they are not stored). The decision is ``k - i``
(0: ``s[i]`` unpaired); ``back`` gives the two sub-intervals, and the tree's pairs are the structure.
"""

from __future__ import annotations

import argparse

import numpy as np

from gpudp import IntervalRecurrence, sweep

BASES = "ACGU"
#: PAIRS[a, b] = 1 when bases a and b (indices into BASES) pair: A-U, C-G, G-U and back
PAIRS = np.zeros((4, 4), np.uint8)
for _a, _b in ("AU", "UA", "CG", "GC", "GU", "UG"):
    PAIRS[BASES.index(_a), BASES.index(_b)] = 1


class Nussinov(IntervalRecurrence):
    value_dtype = np.int32
    decision_bits = 16  # k - i: sequences of up to 65,536 bases

    def __init__(self, seq: str, min_loop: int = 3):
        self.s = np.array([BASES.index(c) for c in seq.upper().replace("T", "U")], np.uint8)
        self.min_loop = int(min_loop)

    def size(self):
        return len(self.s)

    def data(self):
        return self.s, PAIRS, self.min_loop

    @staticmethod
    def cell(i, j, T, s, pairs, min_loop):
        best, how = 0, 0  # s[i] unpaired
        if i < j:
            best = T[i + 1, j]
        for k in range(i + min_loop + 1, j + 1):
            if pairs[s[i], s[k]]:
                inside = T[i + 1, k - 1] if i + 1 <= k - 1 else 0
                after = T[k + 1, j] if k + 1 <= j else 0
                if inside + after + 1 > best:
                    best, how = inside + after + 1, k - i
        return best, how

    @staticmethod
    def back(i, j, how, s, pairs, min_loop):
        if how == 0:
            return i + 1, j, -1, -1  # (i + 1, i) when i == j: empty, the walk ends
        k = i + how
        return i + 1, k - 1, k + 1, j  # inside the pair (i, k), and after it (either may be empty)


def fold(seq: str, min_loop: int = 3, **sweep_options):
    """The most base pairs, the structure in dot-bracket (``((...))``) and the sweep's statistics.
    ``sweep_options`` go to :func:`gpudp.sweep`."""
    rec = Nussinov(seq, min_loop)
    n = len(rec.s)
    if n == 0:
        return 0, "", None
    result = sweep(rec, **sweep_options)
    structure = ["."] * n
    for i, _, how in result.traceback_tree((0, n - 1)):
        if how:
            structure[i], structure[i + how] = "(", ")"
    return int(result.value(0, n - 1)), "".join(structure), result.stats


def main(argv=None):
    parser = argparse.ArgumentParser(description="Nussinov RNA folding on gpudp")
    parser.add_argument("seq", help="bases A, C, G, U (T reads as U)")
    parser.add_argument("--min-loop", type=int, default=3)
    parser.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    args = parser.parse_args(argv)
    pairs, structure, stats = fold(args.seq, args.min_loop, backend=args.backend)
    print(f"{pairs} base pairs" + (f" ({stats.backend} backend)" if stats else ""))
    print(args.seq)
    print(structure)


if __name__ == "__main__":
    main()
