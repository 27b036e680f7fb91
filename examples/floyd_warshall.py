"""All-pairs shortest paths (Floyd-Warshall) as 2-D layers, and a path as a tree of layers.

    python examples/floyd_warshall.py [--source 0] [--target 4] [--backend cpu|cuda]

Layer 0 holds the edge weights ``w[i, j]`` (``INF`` where there is no edge, 0 on the diagonal);
layer ``t`` holds the shortest distances whose intermediate vertices lie in ``0 .. t - 1``:

    D_t[i, j] = min(D_{t-1}[i, j], D_{t-1}[i, t-1] + D_{t-1}[t-1, j])

Each layer is an ``n x n`` table, declared by ``layer_shape``: the cell is ``(t, i, j)`` and the
previous layer a 2-D array (docs/tutorial.md, section 18). The decision says whether the path went
through vertex ``t - 1``; if it did, the path of ``(t, i, j)`` is the path of ``(t - 1, i, t - 1)``
followed by that of ``(t - 1, t - 1, j)``: ``back`` returns two predecessors, and
``SweepResult.traceback_tree`` walks the tree they make, compiled. Its leaves are the cells of layer
0, the path's edges, in order.
"""

from __future__ import annotations

import argparse

import numpy as np

from gpudp import LayeredRecurrence, sweep

#: no edge: far above any path's length, and two of them added stay far inside int64
INF = 1 << 40

#: the bundled digraph: (from, to, weight)
EDGES = [(0, 1, 4), (0, 2, 1), (2, 1, 2), (1, 3, 1), (2, 3, 5), (3, 4, 3), (4, 0, 2), (2, 4, 9)]


class FloydWarshall(LayeredRecurrence):
    value_dtype = np.int64
    decision_bits = 1  # 1: through vertex t - 1

    def __init__(self, weights):
        self.w = np.ascontiguousarray(weights, np.int64)

    def num_layers(self):
        return self.w.shape[0] + 1

    def layer_shape(self, t):
        return self.w.shape

    def data(self):
        return (self.w,)

    @staticmethod
    def cell(t, i, j, prev, w):
        if t == 0:
            return w[i, j], 0
        k = t - 1
        through = prev[i, k] + prev[k, j]
        if through < prev[i, j]:
            return through, 1
        return prev[i, j], 0

    @staticmethod
    def back(t, i, j, through, w):
        if t == 0:  # an edge: a leaf
            return -1, -1, -1, -1, -1, -1
        if through:  # i -> t - 1, then t - 1 -> j, both in the layer before
            return t - 1, i, t - 1, t - 1, t - 1, j
        return t - 1, i, j, -1, -1, -1


def weights(n: int, edges) -> np.ndarray:
    """The ``n x n`` weight table of a digraph given as ``(from, to, weight)`` edges."""
    w = np.full((n, n), INF, np.int64)
    for a, b, x in edges:
        w[a, b] = min(w[a, b], x)
    np.fill_diagonal(w, np.minimum(np.diagonal(w), 0))
    return w


def shortest_paths(w, **sweep_options):
    """Sweep Floyd-Warshall over the weights ``w``: the result (``result.last_layer``: the distances,
    ``INF`` where none). ``sweep_options`` go to :func:`gpudp.sweep`."""
    return sweep(FloydWarshall(w), **sweep_options)


def path(result, u: int, v: int) -> list[int]:
    """A shortest path from ``u`` to ``v`` as its vertices (``[]`` where ``v`` is unreachable): the
    tree of ``(n, u, v)``'s predecessors, walked in preorder; its layer-0 cells are the edges."""
    n = result.last_layer.shape[0]
    if result.last_layer[u, v] >= INF:
        return []
    rows = result.traceback_tree((n, u, v))
    return [u] + [int(j) for t, i, j, _ in rows if t == 0 and i != j]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=int, default=0)
    ap.add_argument("--target", type=int, default=4)
    ap.add_argument("--backend", default="auto")
    args = ap.parse_args(argv)
    n = 1 + max(max(a, b) for a, b, _ in EDGES)
    res = shortest_paths(weights(n, EDGES), backend=args.backend, progress=False)
    d = res.last_layer
    print(f"{n} vertices, {len(EDGES)} edges; distances ({res.stats.backend} backend):")
    for row in d:
        print(" ".join(f"{x:>3}" if x < INF else "  -" for x in row))
    u, v = args.source, args.target
    p = path(res, u, v)
    if p:
        print(f"shortest {u} -> {v}: {int(d[u, v])}, via {' -> '.join(map(str, p))}")
    else:
        print(f"no path {u} -> {v}")


if __name__ == "__main__":
    main()
