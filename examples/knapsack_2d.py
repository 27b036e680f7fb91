"""0/1 knapsack with two constraints, weight and volume, on gpudp: the best profit and the items.

    python examples/knapsack_2d.py 3,1,5 1,4,6 2,2,4 --weight 4 --volume 4 [--backend auto|cpu|cuda]

``F(t, a, b)`` is the best profit of items ``0..t`` within weight ``a`` and volume ``b``::

    F(t, a, b) = max(F(t - 1, a, b),  F(t - 1, a - w[t], b - v[t]) + p[t]  if w[t] <= a and v[t] <= b)

A layer is an item; its cells are the ``(W + 1) x (V + 1)`` capacity pairs, flattened inside the
class (cell ``k = a * (V + 1) + b``), so that item ``t`` reads the previous layer ``w[t] * (V + 1)
+ v[t]`` cells back (declared as ``reach``, which lets the GPU keep several layers in shared
memory). The decision is one bit, taken or not; the traceback from the full capacities lists the
items taken.
"""

from __future__ import annotations

import argparse

import numpy as np

from gpudp import InputError, LayeredRecurrence, sweep


class Knapsack2D(LayeredRecurrence):
    value_dtype = np.int64
    decision_bits = 1  # item t taken or not
    fill = 0  # before the first item: nothing packed, profit 0

    def __init__(self, weights, volumes, profits, max_weight: int, max_volume: int):
        self.w, self.v, self.p = (np.asarray(x, dtype=np.int64) for x in (weights, volumes, profits))
        if not (self.w.ndim == 1 and self.w.size and self.w.shape == self.v.shape == self.p.shape):
            raise InputError("items", "need 1-D weights, volumes and profits, one value an item")
        if min(self.w.min(), self.v.min(), self.p.min(), max_weight, max_volume) < 0:
            raise InputError("items", "weights, volumes, profits and capacities must be >= 0")
        self.W, self.V1 = int(max_weight), int(max_volume) + 1
        self.volume_of = np.tile(np.arange(self.V1, dtype=np.int32), self.W + 1)  # cell k's volume k % V1

    def cell_of(self, weight: int, volume: int) -> int:
        """The flattened cell of the capacities ``(weight, volume)``."""
        return weight * self.V1 + volume

    def num_layers(self):
        return len(self.w)

    def layer_size(self, t):
        return (self.W + 1) * self.V1

    def reach(self):
        return self.w * self.V1 + self.v  # item t reads the previous layer at k - reach[t] and k

    def data(self):
        return self.w, self.v, self.p, self.V1, self.volume_of

    @staticmethod
    def cell(t, k, prev, w, v, p, V1, volume_of):
        skip = prev[k]
        fits = (k >= w[t] * V1) & (volume_of[k] >= v[t])  # weight k // V1 and volume k % V1 hold it
        take = prev[k - w[t] * V1 - v[t]] + p[t] if fits else skip
        return max(take, skip), int(take > skip)  # no branch to mispredict: 5x faster on the CPU

    @staticmethod
    def back(t, k, taken, w, v, p, V1, volume_of):
        return t - 1, (k - w[t] * V1 - v[t]) if taken else k


def pack(weights, volumes, profits, max_weight: int, max_volume: int, **sweep_options):
    """``(profit, items taken, stats)``: the best total profit within both capacities and the
    indices of one best set of items, ascending. ``sweep_options`` go to :func:`gpudp.sweep`."""
    rec = Knapsack2D(weights, volumes, profits, max_weight, max_volume)
    result = sweep(rec, **sweep_options)
    path = result.traceback((len(rec.w) - 1, rec.cell_of(rec.W, rec.V1 - 1)))  # rows (t, k, taken)
    result.close()
    return int(result.last_layer[-1]), sorted(int(t) for t, _, taken in path if taken), result.stats


def main(argv=None):
    parser = argparse.ArgumentParser(description="0/1 knapsack with weight and volume on gpudp")
    parser.add_argument("items", nargs="+", help="one item: WEIGHT,VOLUME,PROFIT")
    parser.add_argument("--weight", type=int, required=True, help="the weight capacity")
    parser.add_argument("--volume", type=int, required=True, help="the volume capacity")
    parser.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    args = parser.parse_args(argv)
    try:
        w, v, p = np.array([[int(x) for x in item.split(",")] for item in args.items]).T
    except ValueError:
        parser.error("an item is three integers WEIGHT,VOLUME,PROFIT")
    profit, taken, stats = pack(w, v, p, args.weight, args.volume, backend=args.backend)
    print(f"profit {profit} ({stats.backend} backend), items {taken}")
    print(f"weight {int(w[taken].sum())} of {args.weight}, volume {int(v[taken].sum())} of {args.volume}")


if __name__ == "__main__":
    main()
