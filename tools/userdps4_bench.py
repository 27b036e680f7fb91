"""The fourth set of user DPs (tests/test_user_dps4.py, written from the docs alone) against a plain
one-thread ``@njit`` loop of the same DP, each with its answer (the loops keep a byte or an int a
decision where the DP has a traceback, and walk it back), values compared:

    NUMBA_NUM_THREADS=1 python tools/userdps4_bench.py [--only dtw,band,...] [--repeat 3]

Prints a row a DP: the gpudp call (the test file's function: sweep, traceback, answer) and the loop,
each the best of ``--repeat`` after a warm-up, and their ratio."""

from __future__ import annotations

import sys
from pathlib import Path

import numba
import numpy as np
from examples_of import module
from versus_loop import table, walk

sys.path.append(str(Path(__file__).resolve().parent.parent / "tests"))
U = module(Path(sys.path[-1]) / "test_user_dps4.py")
INF, BIG, NO_EGGS = U.INF, U.BIG, U.NO_EGGS


@numba.njit(cache=True)
def dtw_loop(a, b, band):
    """The distance and the path's length (band < 0: the whole grid): two rows of values, a byte a
    decision, walked back."""
    n, m = len(a), len(b)
    prev, cur = np.full(m + 1, np.inf), np.full(m + 1, np.inf)
    prev[0] = 0.0
    lo, hi, off = 1, m, 0  # decisions of row i at how[i, j - off]: the band's 2 band + 1 where band >= 0
    if band >= 0:
        off = -band
    how = np.zeros((n, m if band < 0 else 2 * band + 1), np.uint8)
    for i in range(1, n + 1):
        if band >= 0:
            cur[max(0, i - band - 2) : min(m, i + band) + 1] = np.inf
            lo, hi, off = max(1, i - band), min(m, i + band), i - 1 - band
        else:
            cur[0] = np.inf
        for j in range(lo, hi + 1):
            best, h = prev[j - 1], 0
            if prev[j] < best:
                best, h = prev[j], 1
            if cur[j - 1] < best:
                best, h = cur[j - 1], 2
            cur[j] = abs(a[i - 1] - b[j - 1]) + best
            how[i - 1, j - 1 - off] = h
        prev, cur = cur, prev
    return prev[m], walk(how, n, m, band)


@numba.njit(cache=True)
def dtw_values_loop(a, b):
    m = len(b)
    prev, cur = np.full(m + 1, np.inf), np.full(m + 1, np.inf)
    prev[0] = 0.0
    for i in range(1, len(a) + 1):
        cur[0] = np.inf
        for j in range(1, m + 1):
            cur[j] = abs(a[i - 1] - b[j - 1]) + min(prev[j - 1], prev[j], cur[j - 1])
        prev, cur = cur, prev
    return prev[m]


@numba.njit(cache=True)
def dtw_many_loop(a, aoff, b, boff):
    out = np.empty(len(aoff) - 1)
    for k in range(len(out)):
        out[k] = dtw_values_loop(a[aoff[k] : aoff[k + 1]], b[boff[k] : boff[k + 1]])
    return out


@numba.njit(cache=True)
def min_path_loop(cost):
    n, m = cost.shape
    prev, cur = np.full(m + 1, BIG), np.full(m + 1, BIG)
    prev[0] = 0
    how = np.zeros((n, m), np.uint8)
    for i in range(1, n + 1):
        cur[0] = BIG
        for j in range(1, m + 1):
            best, h = prev[j - 1], 0
            if prev[j] < best:
                best, h = prev[j], 1
            if cur[j - 1] < best:
                best, h = cur[j - 1], 2
            cur[j] = cost[i - 1, j - 1] + best
            how[i - 1, j - 1] = h
        prev, cur = cur, prev
    return prev[m], walk(how, n, m, -1)


@numba.njit(cache=True)
def egg_loop(eggs, floors):
    """The drops and the first floor to try (the table kept whole, as the line does)."""
    E = np.zeros((eggs + 1, floors + 1), np.int64)
    first = np.zeros((eggs + 1, floors + 1), np.int64)
    E[0, 1:] = NO_EGGS
    for e in range(1, eggs + 1):
        for f in range(1, floors + 1):
            best, k1 = NO_EGGS + 1, 0
            for k in range(1, f + 1):
                worst = max(E[e - 1, k - 1], E[e, f - k])
                if worst < best:
                    best, k1 = worst, k
            E[e, f], first[e, f] = 1 + best, k1
    return E[eggs, floors], first[eggs, floors]


@numba.njit(cache=True)
def stone_loop(pre):
    n = len(pre) - 1
    M = np.zeros((n, n), np.int64)
    S = np.zeros((n, n), np.uint16)
    for length in range(2, n + 1):
        for i in range(n - length + 1):
            j = i + length - 1
            best, split = M[i, i] + M[i + 1, j], i
            for k in range(i + 1, j):
                c = M[i, k] + M[k + 1, j]
                if c < best:
                    best, split = c, k
            M[i, j], S[i, j] = best + pre[j + 1] - pre[i], split
    return M[0, n - 1], S


@numba.njit(cache=True)
def palindrome_loop(s):
    n = len(s)
    pal = np.zeros((n, n), np.uint8)
    for length in range(1, n + 1):
        for i in range(n - length + 1):
            j = i + length - 1
            pal[i, j] = s[i] == s[j] and (length < 3 or pal[i + 1, j - 1])
    C = np.zeros(n + 1, np.int64)
    start = np.zeros(n + 1, np.int64)
    for x in range(1, n + 1):
        best = x + 1
        for q in range(x):
            if pal[q, x - 1] and C[q] + 1 < best:
                best, start[x] = C[q] + 1, q
        C[x] = best
    x, pieces = n, 0
    while x > 0:
        x, pieces = start[x], pieces + 1
    return C[n] - 1, pieces


@numba.njit(cache=True)
def knapsack_loop(w, p, cnt, capacity):
    T = len(w)
    prev, cur = np.zeros(capacity + 1, np.int64), np.zeros(capacity + 1, np.int64)
    took = np.zeros((T, capacity + 1), np.uint16)
    for t in range(T):
        for c in range(capacity + 1):
            most = cnt[t] if w[t] == 0 else min(cnt[t], c // w[t])
            best, q1 = prev[c], 0
            for q in range(1, most + 1):
                v = prev[c - q * w[t]] + q * p[t]
                if v > best:
                    best, q1 = v, q
            cur[c], took[t, c] = best, q1
        prev, cur = cur, prev
    c, items = capacity, 0
    for t in range(T - 1, -1, -1):
        items += took[t, c]
        c -= took[t, c] * w[t]
    return prev[capacity], items


def packed(seqs):
    return np.concatenate(seqs), np.concatenate(([0], np.cumsum([len(s) for s in seqs])))


U64 = np.uint64


class EggDropUnsigned(U.EggDrop):
    """The test's egg dropping with its two reads of the line at unsigned indices (docs/tutorial.md,
    "Computed indices, written unsigned")."""

    @staticmethod
    def cell(i, x, left, line, width):
        e, f = x // width, x % width
        if f == 0:
            return 0, 0
        if e == 0:
            return NO_EGGS, 0
        below, here = x - f - width - 1, x
        best, how = NO_EGGS + 1, 0
        for k in range(1, f + 1):
            broken, kept = line[U64(below + k)], line[U64(here - k)]
            if broken >= kept:
                if broken < best:
                    best, how = broken, 2 * k + 1
            elif kept < best:
                best, how = kept, 2 * k
        return 1 + best, how


class BoundedKnapsackUnsigned(U.BoundedKnapsack):
    """The test's bounded knapsack with its read of the previous layer at an unsigned index."""

    @staticmethod
    def cell(t, c, prev, w, p, n):
        most = n[t] if w[t] == 0 else min(n[t], c // w[t])
        best, count = prev[c], 0
        for q in range(1, most + 1):
            v = prev[U64(c - q * w[t])] + q * p[t]
            if v > best:
                best, count = v, q
        return best, count


def _with_class(fn, name, cls):
    """Call the test's ``fn`` with its module's class ``name`` replaced by ``cls``."""
    real = getattr(U, name)
    setattr(U, name, cls)
    try:
        return fn()
    finally:
        setattr(U, name, real)


def cases(rng):
    """(name, size, gpudp call, loop call, the two answers compared)."""
    a, b = rng.normal(size=6000), rng.normal(size=6000)
    yield (
        "dtw + path",
        "6,000 x 6,000",
        lambda: U.dtw(a, b, backend="cpu"),
        lambda: dtw_loop(a, b, -1),
        "value",
    )
    a2, b2 = rng.normal(size=300_000), rng.normal(size=300_000)
    yield (
        "dtw in a band + path",
        "300,000, |i - j| <= 64",
        lambda: U.dtw(a2, b2, 64, backend="cpu"),
        lambda: dtw_loop(a2, b2, 64),
        "value",
    )
    cost = rng.integers(-(1 << 20), 1 << 20, (6000, 6000))
    yield (
        "min-cost path + path",
        "6,000 x 6,000",
        lambda: U.min_path(cost, backend="cpu"),
        lambda: min_path_loop(cost),
        "value",
    )
    yield (
        "egg drop + first floor",
        "10 eggs, 7,000 floors",
        lambda: U.egg_drop(10, 7000, backend="cpu"),
        lambda: egg_loop(10, 7000),
        "two",
    )
    yield (
        "egg drop, unsigned reads",
        "10 eggs, 7,000 floors",
        lambda: _with_class(lambda: U.egg_drop(10, 7000, backend="cpu"), "EggDrop", EggDropUnsigned),
        lambda: egg_loop(10, 7000),
        "two",
    )
    stones = rng.integers(1, 1000, 1000)
    pre = np.concatenate(([0], np.cumsum(stones)))
    yield (
        "stone merging + tree",
        "1,000 piles",
        lambda: U.stone_merge(stones, backend="cpu"),
        lambda: stone_loop(pre),
        "value",
    )
    s = "".join(rng.choice(list("ab"), 6000))
    codes = np.frombuffer(s.encode(), np.uint8)
    yield (
        "palindrome cuts + cuts",
        "6,000 letters of ab",
        lambda: U.palindrome_cuts(s, backend="cpu"),
        lambda: palindrome_loop(codes),
        "value",
    )
    w, p, cnt = rng.integers(1, 200, 100), rng.integers(1, 1000, 100), rng.integers(1, 20, 100)
    yield (
        "bounded knapsack + counts",
        "100 items, capacity 100,000",
        lambda: U.bounded_knapsack(w, p, cnt, 100_000, backend="cpu"),
        lambda: knapsack_loop(w, p, cnt, 100_000),
        "value",
    )
    yield (
        "bounded knapsack, unsigned reads",
        "100 items, capacity 100,000",
        lambda: _with_class(
            lambda: U.bounded_knapsack(w, p, cnt, 100_000, backend="cpu"),
            "BoundedKnapsack",
            BoundedKnapsackUnsigned,
        ),
        lambda: knapsack_loop(w, p, cnt, 100_000),
        "value",
    )
    pairs = [
        (rng.normal(size=rng.integers(100, 151)), rng.normal(size=rng.integers(100, 151)))
        for _ in range(5000)
    ]
    pa, pb = packed([x for x, _ in pairs]), packed([y for _, y in pairs])
    yield (
        "sweep_many DTW, values",
        "5,000 pairs of 100-150",
        lambda: U.dtw_many(pairs, backend="cpu"),
        lambda: dtw_many_loop(*pa, *pb),
        "list",
    )
    qs = [rng.integers(-100, 100, rng.integers(50, 101)).astype(np.int32) for _ in range(150)]
    qs_f = [q.astype(np.float64) for q in qs]
    cross = [(q, c) for q in qs_f for c in qs_f]
    ca, cb = packed([x for x, _ in cross]), packed([y for _, y in cross])
    yield (
        "sweep_many DTW queries x choices, values",
        "150 x 150 of 50-100",
        lambda: U.dtw_cross(qs, qs, backend="cpu"),
        lambda: dtw_many_loop(*ca, *cb),
        "cross",
    )


def same(kind, got, ref):
    if kind == "value":
        return float(got[0]) == float(ref[0])
    if kind == "two":
        return (int(got[0]), int(got[1])) == (int(ref[0]), int(ref[1]))
    if kind == "list":
        return np.array_equal(np.asarray(got), ref)
    return np.array_equal(np.asarray(got).ravel(), ref)


def main(argv=None):
    table(__doc__.splitlines()[0], cases, same, argv)


if __name__ == "__main__":
    main()
