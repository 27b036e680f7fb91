"""Matrix-chain order on gpudp: the cheapest parenthesisation of a product of matrices.

    python examples/matrix_chain.py 10 30 5 60 [--backend cpu]     # A0: 10x30, A1: 30x5, A2: 5x60

Matrix ``A_k`` is ``p[k] x p[k + 1]``. Cell ``(i, j)`` of the interval table holds the fewest scalar
multiplications that compute ``A_i ... A_j``; the last product splits it at some ``k``::

    M(i, i) = 0
    M(i, j) = min over i <= k < j of  M(i, k) + M(k + 1, j) + p[i] * p[k + 1] * p[j + 1]

The decision is the best ``k``; ``back`` splits ``(i, j)`` into ``(i, k)`` and ``(k + 1, j)``, and
the tree walked from ``(0, n - 1)`` is the parenthesisation.
"""

from __future__ import annotations

import argparse

import numpy as np

from gpudp import IntervalRecurrence, sweep


class MatrixChain(IntervalRecurrence):
    value_dtype = np.int64
    decision_bits = 16  # the split point k: chains of up to 65,536 matrices

    def __init__(self, dims):
        self.p = np.asarray(dims, dtype=np.int64)  # A_k is p[k] x p[k + 1]

    def size(self):
        return len(self.p) - 1

    def data(self):
        return (self.p,)

    @staticmethod
    def cell(i, j, T, p):
        if i == j:
            return 0, 0  # one matrix: nothing to multiply
        best, split = T[i, i] + T[i + 1, j] + p[i] * p[i + 1] * p[j + 1], i
        for k in range(i + 1, j):
            cost = T[i, k] + T[k + 1, j] + p[i] * p[k + 1] * p[j + 1]
            if cost < best:
                best, split = cost, k
        return best, split

    @staticmethod
    def back(i, j, k, p):
        if i == j:
            return -1, -1, -1, -1  # a leaf: the matrix A_i
        return i, k, k + 1, j


def parenthesise(tree) -> str:
    """The product as text, ``((A0A1)A2)``, from the tree's rows ``(i, j, k)`` in preorder."""
    out, ends = [], []
    for i, j, _ in tree:
        if i < j:
            out.append("(")
            ends.append(j)  # this product closes after its last matrix, A_j
            continue
        out.append(f"A{i}")
        while ends and ends[-1] == i:
            out.append(")")
            ends.pop()
    return "".join(out)


def matrix_chain(dims, **sweep_options):
    """The fewest scalar multiplications, the parenthesisation attaining it and the sweep's
    statistics, for matrices ``p[k] x p[k + 1]``. ``sweep_options`` go to :func:`gpudp.sweep`.

    Products must stay below 2**63 (int64 wraps around silently): ``ValueError`` otherwise."""
    p = [int(x) for x in dims]
    if len(p) < 2 or min(p) < 1:
        raise ValueError("give at least two dimensions, all >= 1 (matrix k is p[k] x p[k + 1])")
    if max(p) ** 3 * (len(p) - 1) >= 2**63:
        raise ValueError("costs could overflow int64: smaller dimensions or fewer matrices")
    result = sweep(MatrixChain(p), **sweep_options)
    n = len(p) - 1
    cost = int(result.value(0, n - 1))
    return cost, parenthesise(result.traceback_tree((0, n - 1))), result.stats


def main(argv=None):
    parser = argparse.ArgumentParser(description="matrix-chain order on gpudp")
    parser.add_argument("dims", nargs="+", type=int, help="p0 p1 ... pn: matrix k is p[k] x p[k + 1]")
    parser.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    args = parser.parse_args(argv)
    cost, order, stats = matrix_chain(args.dims, backend=args.backend)
    print(f"cost {cost} ({stats.backend} backend)")
    print(order)


if __name__ == "__main__":
    main()
