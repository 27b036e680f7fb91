"""Levenshtein (edit) distance as a new gpudp recurrence, with the edit script from its traceback.

    python examples/edit_distance.py kitten sitting [--backend auto|cpu|cuda]

Cell ``(i, j)`` holds the distance between the prefixes ``a[:i + 1]`` and ``b[:j + 1]``. It reads
the cell above (delete ``a[i]``), the cell to its left (insert ``b[j]``) and the one diagonally
above-left (keep or substitute), so the engine sweeps the grid by anti-diagonals, in tiles.
docs/tutorial.md walks through this file.
"""

from __future__ import annotations

import argparse

import numpy as np

from gpudp import GridRecurrence, sweep

KEEP, DELETE, INSERT = 0, 1, 2  # the decision stored per cell: which neighbour the best edit came from


class EditDistance(GridRecurrence):
    value_dtype = np.int32
    decision_bits = 2  # three decisions fit in two bits
    offsets = ((-1, 0), (0, -1), (-1, -1))  # up, left, diag: cell() gets them in this order

    def __init__(self, a, b):
        self.a = np.array([ord(c) for c in a], dtype=np.int32)
        self.b = np.array([ord(c) for c in b], dtype=np.int32)

    def shape(self):
        return len(self.a), len(self.b)

    def data(self):
        return self.a, self.b

    @staticmethod
    def cell(i, j, up, left, diag, a, b):
        best, how = diag + (0 if a[i] == b[j] else 1), KEEP
        if up + 1 < best:
            best, how = up + 1, DELETE
        if left + 1 < best:
            best, how = left + 1, INSERT
        return best, how

    @staticmethod
    def boundary(i, j, a, b):
        return i + j + 2  # row -1 or column -1: the distance from or to an empty prefix

    @staticmethod
    def back(i, j, how, a, b):
        if how == KEEP:
            return i - 1, j - 1
        if how == DELETE:
            return i - 1, j
        return i, j - 1


def edit_distance(a: str, b: str, **sweep_options):
    """The distance, one optimal edit script and the sweep's statistics.

    The script is a list of ``(operation, char of a, char of b)`` in order from the start of both
    strings; ``operation`` is ``"match"``, ``"substitute"``, ``"delete"`` (the char of b is ``""``)
    or ``"insert"`` (the char of a is ``""``).
    ``sweep_options`` go to :func:`gpudp.sweep` (``backend``, ``memory_budget``, ...).
    """
    rec = EditDistance(a, b)
    n, m = len(a), len(b)
    result = sweep(rec, **sweep_options)
    distance = int(result.last_row[-1]) if n and m else EditDistance.boundary(n - 1, m - 1, *rec.data())
    script = []
    i, j = n - 1, m - 1
    if n and m:
        path = result.traceback((i, j))  # rows (i, j, decision), from the last cell backwards
        for i, j, how in path:
            if how == KEEP:
                script.append(("match" if a[i] == b[j] else "substitute", a[i], b[j]))
            elif how == DELETE:
                script.append(("delete", a[i], ""))
            else:
                script.append(("insert", "", b[j]))
        i, j = EditDistance.back(*path[-1], *rec.data())  # where the walk left the grid
    script += [("delete", a[k], "") for k in range(i, -1, -1)]
    script += [("insert", "", b[k]) for k in range(j, -1, -1)]
    result.close()
    return distance, script[::-1], result.stats


def alignment(script) -> str:
    """Three lines: a with gaps, a marker per column (| match, * substitute, - delete, + insert), b."""
    mark = {"match": "|", "substitute": "*", "delete": "-", "insert": "+"}
    top = "".join(x or "-" for _, x, _ in script)
    bottom = "".join(y or "-" for _, _, y in script)
    return f"{top}\n{''.join(mark[op] for op, _, _ in script)}\n{bottom}"


def main(argv=None):
    parser = argparse.ArgumentParser(description="Levenshtein distance and alignment on gpudp")
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    args = parser.parse_args(argv)
    distance, script, stats = edit_distance(args.a, args.b, backend=args.backend)
    print(f"distance {distance} ({stats.backend} backend, schedule: {stats.extra['schedule']})")
    print(alignment(script))


if __name__ == "__main__":
    main()
