"""Coin change on gpudp: the fewest coins that make an amount, and which coins.

    python examples/coin_change.py 63 --coins 1 5 10 21 25 [--backend auto|cpu|cuda]

Cell ``j`` of a one-row grid (columns ``0 .. amount``) holds the fewest coins summing to ``j``::

    F(0) = 0        F(j) = 1 + min over coins c <= j of F(j - c)        (no way: NONE)

so cell ``(0, j)`` reads ``(0, j - c)`` for every coin: the offsets come from the instance's coin
values (``self.offsets`` set in ``__init__``), and with ``deps_tuple = True`` the cell receives them
as one tuple, whatever the number of coins. The decision is the index of the coin taken; ``back``
steps back by that coin. A one-row grid is one cell a wavefront: the engine sweeps it as a *line*,
one thread walking the cells in order.
"""

from __future__ import annotations

import argparse

import numpy as np

from gpudp import GridRecurrence, InputError, sweep

NONE = 1 << 62  # the value of an amount no coins make


class CoinChange(GridRecurrence):
    value_dtype = np.int64
    decision_bits = 8  # the index of the coin taken: up to 256 coin values
    deps_tuple = True  # cell(i, j, deps, coins): deps[k] = F(j - coins[k])

    def __init__(self, coins, amount: int):
        self.coins = np.unique(np.asarray(coins, dtype=np.int64))
        if self.coins.ndim != 1 or not 1 <= len(self.coins) <= 256 or self.coins[0] < 1:
            raise InputError("coins", f"need 1 to 256 positive coin values, got {coins!r}")
        if amount < 0:
            raise InputError("amount", f"must be >= 0, got {amount}")
        self.amount = int(amount)
        self.offsets = tuple((0, -int(c)) for c in self.coins)  # cell (0, j) reads (0, j - c)

    def shape(self):
        return 1, self.amount + 1

    def data(self):
        return (self.coins,)

    @staticmethod
    def cell(i, j, deps, coins):
        if j == 0:
            return 0, 0
        best, used = NONE, 0
        for k in range(len(deps)):
            if deps[k] + 1 < best:
                best, used = deps[k] + 1, k
        return best, used

    @staticmethod
    def boundary(i, j, coins):
        return NONE  # a negative amount: no way

    @staticmethod
    def back(i, j, k, coins):
        return (i, j - coins[k]) if j > 0 else (i, -1)  # amount 0: the walk ends


def change(coins, amount: int, **sweep_options):
    """``(count, coins used, stats)``: the fewest coins making ``amount`` and one such multiset (in
    the order the walk finds them, largest amount first), or ``(None, [], stats)`` when no coins
    make it. ``sweep_options`` go to :func:`gpudp.sweep` (``backend``, ``memory_budget``, ...)."""
    rec = CoinChange(coins, amount)
    result = sweep(rec, **sweep_options)
    count = int(result.last_row[amount])
    used = []
    if count < NONE:
        path = result.traceback((0, amount))  # rows (0, j, k), from the amount down to 0
        used = rec.coins[path[path[:, 1] > 0, 2]].tolist()  # the coin of every step above 0
    result.close()
    return (count if count < NONE else None), used, result.stats


def main(argv=None):
    parser = argparse.ArgumentParser(description="fewest coins for an amount, on gpudp")
    parser.add_argument("amount", type=int)
    parser.add_argument("--coins", type=int, nargs="+", default=[1, 5, 10, 21, 25])
    parser.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    args = parser.parse_args(argv)
    count, used, stats = change(args.coins, args.amount, backend=args.backend)
    if count is None:
        print(f"no way to make {args.amount} from {args.coins} ({stats.backend} backend)")
        return
    print(
        f"{count} coins ({stats.backend} backend, schedule: {stats.extra['schedule']}, {stats.extra['plan']})"
    )
    print(" + ".join(map(str, sorted(used, reverse=True))) or "no coins", f"= {args.amount}")


if __name__ == "__main__":
    main()
