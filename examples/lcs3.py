"""The longest common subsequence of three strings on gpudp: a 3-D grid swept by planes.

    python examples/lcs3.py ABCBDAB BDCABA BADACB [--backend cpu]
    python examples/lcs3.py --random 200 [--seed 1] [--backend cuda]

Cell ``(i, j, k)`` holds the length of the LCS of ``a[:i + 1]``, ``b[:j + 1]`` and ``c[:k + 1]``::

    L(i, j, k) = L(i - 1, j - 1, k - 1) + 1                          if a[i] == b[j] == c[k]
               = max(L(i - 1, j, k), L(i, j - 1, k), L(i, j, k - 1))  otherwise

with 0 outside the grid (a prefix that is empty). The decision says which of the four it took;
``back`` follows it from the last cell, and the cells where all three symbols matched, read
backwards, are the subsequence.
"""

from __future__ import annotations

import argparse

import numpy as np

from gpudp import CheckError, Grid3Recurrence, sweep

MATCH, SKIP_A, SKIP_B, SKIP_C = 0, 1, 2, 3


class LCS3(Grid3Recurrence):
    value_dtype = np.int32
    decision_bits = 2  # which of the four predecessors
    offsets = ((-1, -1, -1), (-1, 0, 0), (0, -1, 0), (0, 0, -1))

    def __init__(self, a, b, c):
        self.seqs = tuple(_codes(s) for s in (a, b, c))

    def shape(self):
        return tuple(len(s) for s in self.seqs)

    def data(self):
        return self.seqs

    @staticmethod
    def cell(i, j, k, diag, skip_a, skip_b, skip_c, a, b, c):
        if a[i] == b[j] and b[j] == c[k]:
            return diag + 1, 0  # MATCH
        best, how = skip_a, 1  # SKIP_A: drop a[i]
        if skip_b > best:
            best, how = skip_b, 2  # SKIP_B
        if skip_c > best:
            best, how = skip_c, 3  # SKIP_C
        return best, how

    @staticmethod
    def back(i, j, k, how, a, b, c):
        if how == 0:
            return i - 1, j - 1, k - 1
        if how == 1:
            return i - 1, j, k
        if how == 2:
            return i, j - 1, k
        return i, j, k - 1


def _codes(s) -> np.ndarray:
    """A string's code points, or a bytes object's bytes, as int32 (one compiled sweep for both)."""
    if isinstance(s, bytes | bytearray):
        return np.frombuffer(bytes(s), np.uint8).astype(np.int32)
    return np.array([ord(ch) for ch in s], np.int32)


def is_subsequence(sub, s) -> bool:
    it = iter(s)
    return all(ch in it for ch in sub)


def solve(a, b, c, **sweep_options):
    """The LCS of three strings with the sweep's statistics.

    Parameters
    ----------
    a, b, c : str or bytes
        The strings (any mix of lengths, empty ones included).
    **sweep_options
        Passed to :func:`gpudp.sweep`: ``backend``, ``memory_budget``, ``progress``.

    Returns
    -------
    (int, str or bytes, gpudp.Stats)
        The length, one longest common subsequence (of the type of ``a``), the statistics.

    Raises
    ------
    gpudp.CheckError
        The subsequence is not common to all three or not as long as the sweep's optimum (a bug).
    """
    result = sweep(LCS3(a, b, c), **sweep_options)
    try:
        length = 0 if result.last_value is None else int(result.last_value)
        path = result.traceback()
    finally:
        result.close()
    matched = [int(i) for i, _, _, how in path if how == MATCH][::-1]
    sub = a[:0].join(a[i : i + 1] for i in matched)
    if len(sub) != length or not all(is_subsequence(sub, s) for s in (a, b, c)):
        raise CheckError(f"the traceback gave {sub!r}, not a common subsequence of length {length}")
    return length, sub, result.stats


def lcs3(a, b, c, **sweep_options):
    """The length of the longest common subsequence of ``a``, ``b`` and ``c`` (str or bytes) and
    one such subsequence, checked (see :func:`solve`, which also returns the statistics).

    Example
    -------
    >>> lcs3("ABCBDAB", "BDCABA", "BADACB", backend="cpu")
    (4, 'BDAB')
    """
    length, sub, _ = solve(a, b, c, **sweep_options)
    return length, sub


def main(argv=None):
    parser = argparse.ArgumentParser(description="LCS of three strings on gpudp")
    parser.add_argument("strings", nargs="*", help="the three strings (or --random N)")
    parser.add_argument("--random", type=int, metavar="N", help="three random DNA strings of length N")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    args = parser.parse_args(argv)
    if args.random is not None:
        rng = np.random.default_rng(args.seed)
        args.strings = ["".join(rng.choice(list("ACGT"), args.random)) for _ in range(3)]
    if len(args.strings) != 3:
        parser.error("give three strings, or --random N")
    length, sub, stats = solve(*args.strings, backend=args.backend)
    print(f"length {length} ({stats.backend} backend)")
    print(sub)


if __name__ == "__main__":
    main()
