"""The textbook dynamic programs of the LCS length and the Levenshtein distance, ``O(m n)`` steps
and one row of the table, compiled: the re-checks of a batch's and a cross product's values
(``verify``), an algorithm apart from the bit-parallel kernels they check, and cheap beside a
sweep's fixed costs (a 100 x 100 pair in microseconds, where a checked solve through the engine
takes about a millisecond)."""

from __future__ import annotations

import numpy as np

from gpudp.jit import njit

from .sequences import encode, kernel_codes

__all__ = ["TABLE_CELLS", "lcs_length", "lcs_value", "levenshtein", "levenshtein_value", "small"]

#: pairs of at most this many cells are re-checked by these tables (about 0.1 s, one thread, not
#: interruptible); the solvers re-check larger ones by the engine's sweep (every core, stopped by a
#: Ctrl-C between chunks)
TABLE_CELLS = 1 << 27


def small(a, b) -> bool:
    """Whether the pair ``(a, b)`` is re-checked by a table here (:data:`TABLE_CELLS`)."""
    return len(a) * len(b) <= TABLE_CELLS


@njit(cache=True, nogil=True)
def lcs_length(a, b):
    """``H[i, j] = H[i-1, j-1] + 1`` where ``a[i-1] == b[j-1]``, else ``max(H[i-1, j], H[i, j-1])``:
    ``H[len(a), len(b)]``."""
    row = np.zeros(len(b) + 1, np.int64)
    for i in range(len(a)):
        diag = 0
        for j in range(len(b)):
            up = row[j + 1]
            row[j + 1] = diag + 1 if a[i] == b[j] else max(up, row[j])
            diag = up
    return row[len(b)]


@njit(cache=True, nogil=True)
def levenshtein(a, b):
    """``D[i, j] = min(D[i-1, j] + 1, D[i, j-1] + 1, D[i-1, j-1] + (a[i-1] != b[j-1]))``, ``D[i, 0]
    = i``, ``D[0, j] = j``: ``D[len(a), len(b)]``."""
    row = np.arange(len(b) + 1).astype(np.int64)
    for i in range(len(a)):
        diag = row[0]
        row[0] = i + 1
        for j in range(len(b)):
            up = row[j + 1]
            row[j + 1] = min(up + 1, row[j] + 1, diag + (0 if a[i] == b[j] else 1))
            diag = up
    return row[len(b)]


def lcs_value(a, b) -> int:
    """The LCS length of two sequences as :func:`gpudp.problems.lcs.solve` takes them."""
    return int(lcs_length(*kernel_codes(encode(a, "a"), encode(b, "b"))))


def levenshtein_value(a, b) -> int:
    """The edit distance of two sequences as :func:`gpudp.problems.edit_distance.solve` takes them."""
    return int(levenshtein(*kernel_codes(encode(a, "a"), encode(b, "b"))))
