"""A fourth set of user DPs written from the docs alone (issue 39's last check): each the way
README.md and docs/tutorial.md suggest, against a plain-Python reference by hypothesis on the cpu
backend, swept checked (sweep(check=True), tutorial section 8), its answer's witness checked (a
warping path, a grid path, a strategy, a merge tree, the cuts, the counts), and one tiny case of
each in the CUDA simulator.

1. dynamic time warping of two float64 series with the warping path, on the whole grid and inside
   a Sakoe-Chiba band |i - j| <= w written as n rows of 2w + 1 columns (tutorial section 3);
2. the minimum-cost path through a cost grid moving right, down or diagonally, with the path;
3. egg dropping, dp[e][f] = 1 + min_k max(dp[e-1][k-1], dp[e][f-k]), whose cell reads a range of
   its own row: the table flattened into a line with reads_line (section 14), with the first floor
   to try and the worst case's drops;
4. stone merging, an interval DP with prefix sums (section 13), with the merge tree;
5. palindrome partitioning (fewest cuts): the palindromes as an interval table, then the cuts as a
   line reading it;
6. the bounded knapsack (item counts) as layers reading a data-dependent range of the previous
   layer (section 10), with the counts taken;
7. batches (section 16): 5,000 DTW distances through sweep_many, values only, and every query
   series against every choice series through sweep_many(template, queries=, choices=).
"""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from numba.extending import register_jitable

from gpudp import GridRecurrence, IntervalRecurrence, LayeredRecurrence, sweep, sweep_many

SIM = pytest.mark.sim
FEW = settings(max_examples=15, deadline=None)

# =============================================================================================
# 1. Dynamic time warping: D(i, j) = |a_i - b_j| + min(D(i-1, j-1), D(i-1, j), D(i, j-1)),
#    D(-1, -1) = 0 and every other cell outside the grid +inf; the warping path from (n-1, m-1)
#    back to (0, 0). With a Sakoe-Chiba band the cells with |i - j| > w are +inf too.
# =============================================================================================

DIAG, UP, LEFT = 0, 1, 2
INF = math.inf


@register_jitable
def least(diag, up, left):
    """(the least of a grid cell's three neighbours, which: DIAG, UP or LEFT; ties in that order): a
    helper the cells call, compiled for the CPU and the GPU (tutorial section 2)."""
    best, how = diag, DIAG
    if up < best:
        best, how = up, UP
    if left < best:
        best, how = left, LEFT
    return best, how


@register_jitable
def step_back(i, j, how):
    """The cell a grid's decision (DIAG, UP or LEFT) came from."""
    if how == DIAG:
        return i - 1, j - 1
    if how == UP:
        return i - 1, j
    return i, j - 1


class DTW(GridRecurrence):
    value_dtype = np.float64
    decision_bits = 2
    offsets = ((-1, 0), (0, -1), (-1, -1))
    symbols = True  # cell(i, j, up, left, diag, ri, cj): ri = a[i], cj = b[j]

    def __init__(self, a=(), b=()):
        self.a = np.asarray(a, np.float64)
        self.b = np.asarray(b, np.float64)

    def shape(self):
        return len(self.a), len(self.b)

    def row_symbols(self):
        return self.a

    def col_symbols(self):
        return self.b

    @staticmethod
    def cell(i, j, up, left, diag, ri, cj):
        best, how = least(diag, up, left)
        return abs(ri - cj) + best, how

    @staticmethod
    def boundary(i, j):
        return 0.0 if i == -1 and j == -1 else INF

    @staticmethod
    def back(i, j, how):
        return step_back(i, j, how)


class BandDTW(GridRecurrence):
    """DTW inside |i - j| <= w: cell (i, k) is cell (i, j = i - w + k) of the table."""

    value_dtype = np.float64
    decision_bits = 2
    offsets = ((-1, 0), (-1, 1), (0, -1))  # D(i-1, j-1), D(i-1, j), D(i, j-1) in band coordinates

    def __init__(self, a, b, band):
        if band < abs(len(a) - len(b)):
            raise ValueError(f"a band of {band} cannot reach the last cell of {len(a)} x {len(b)}")
        self.a = np.asarray(a, np.float64)
        self.b = np.asarray(b, np.float64)
        self.w = np.int64(band)

    def shape(self):
        return len(self.a), 2 * int(self.w) + 1 if len(self.a) and len(self.b) else 0

    def data(self):
        return self.a, self.b, self.w

    @staticmethod
    def boundary(i, k, a, b, w):
        return 0.0 if i == -1 and k == w else INF  # (-1, -1) is band cell (-1, w)

    @staticmethod
    def cell(i, k, diag, up, left, a, b, w):
        j = i - w + k
        if j < 0 or j >= len(b):
            return INF, DIAG
        best, how = least(diag, up, left)
        return abs(a[i] - b[j]) + best, how

    @staticmethod
    def back(i, k, how, a, b, w):
        if how == DIAG:
            return i - 1, k
        if how == UP:
            return i - 1, k + 1
        return i, k - 1


def dtw(a, b, band=None, **opts):
    """(distance, path): the path as rows (i, j) from (0, 0) to (n - 1, m - 1); (inf, no rows) where a
    series is empty."""
    n, m = len(a), len(b)
    if n == 0 or m == 0:
        return INF, np.zeros((0, 2), np.int64)
    if band is None:
        res = sweep(DTW(a, b), **opts)
        dist, path = float(res.last_row[-1]), res.traceback((n - 1, m - 1))[:, :2]
    else:
        res = sweep(BandDTW(a, b, band), **opts)
        k = m - 1 - (n - 1) + band
        dist, path = float(res.last_row[k]), res.traceback((n - 1, k))[:, :2]
        path[:, 1] += path[:, 0] - band  # band cell (i, k) is (i, i - band + k)
    res.close()
    return dist, path[::-1]


def dtw_ref(a, b, band=None):
    n, m = len(a), len(b)
    D = [[INF] * (m + 1) for _ in range(n + 1)]
    D[0][0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if band is None or abs(i - j) <= band:
                D[i][j] = abs(a[i - 1] - b[j - 1]) + min(D[i - 1][j - 1], D[i - 1][j], D[i][j - 1])
    return D[n][m] if n and m else INF


def check_dtw(a, b, band=None, **opts):
    dist, path = dtw(a, b, band, **opts)
    path = [tuple(x) for x in path.tolist()]
    assert dist == dtw_ref(a, b, band)  # bit for bit: the same additions in the same order
    if not a or not b:
        return
    assert path[0] == (0, 0) and path[-1] == (len(a) - 1, len(b) - 1)
    for (i, j), (i2, j2) in pairwise(path):
        assert (i2 - i, j2 - j) in ((1, 1), (1, 0), (0, 1))
    if band is not None:
        assert all(abs(i - j) <= band for i, j in path)
    assert math.isclose(sum(abs(a[i] - b[j]) for i, j in path), dist, rel_tol=1e-9, abs_tol=1e-9)


series = st.lists(st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False), max_size=12)


@FEW
@given(series, series)
def test_dtw(a, b):
    check_dtw(a, b, backend="cpu", check=True)


@FEW
@given(series, series, st.integers(0, 4))
@example([0.0, 1.0, 2.0, 3.0, 0.0], [1.0, 2.0, 3.0, 0.0, 0.0], 0)  # the band binds: 6 at w = 0, 1 at w = 1
def test_dtw_band(a, b, extra):
    check_dtw(a, b, abs(len(a) - len(b)) + extra, backend="cpu", check=True)


# =============================================================================================
# 2. The minimum-cost path from (0, 0) to (n-1, m-1) moving right, down or diagonally:
#    P(i, j) = c[i, j] + min(P(i-1, j), P(i, j-1), P(i-1, j-1)), P(-1, -1) = 0, else +inf outside.
# =============================================================================================

BIG = 1 << 62  # outside the grid: never the minimum (costs stay within +-2^40, grids within 64 x 64)


class MinPath(GridRecurrence):
    value_dtype = np.int64
    decision_bits = 2
    offsets = ((-1, 0), (0, -1), (-1, -1))

    def __init__(self, cost):
        self.cost = np.ascontiguousarray(cost, np.int64)

    def shape(self):
        return self.cost.shape

    def data(self):
        return (self.cost,)

    @staticmethod
    def cell(i, j, up, left, diag, cost):
        best, how = least(diag, up, left)
        return cost[i, j] + best, how

    @staticmethod
    def boundary(i, j, cost):
        return 0 if i == -1 and j == -1 else BIG

    @staticmethod
    def back(i, j, how, cost):
        return step_back(i, j, how)


def min_path(cost, **opts):
    """(cost, path): the path as rows (i, j) from (0, 0) to (n - 1, m - 1)."""
    cost = np.asarray(cost, np.int64)
    n, m = cost.shape
    res = sweep(MinPath(cost), **opts)
    return int(res.last_row[-1]), res.traceback((n - 1, m - 1))[::-1, :2]


def min_path_ref(cost):
    n, m = len(cost), len(cost[0])
    P = [[BIG] * (m + 1) for _ in range(n + 1)]
    P[0][0] = 0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            P[i][j] = cost[i - 1][j - 1] + min(P[i - 1][j], P[i][j - 1], P[i - 1][j - 1])
    return P[n][m]


def check_min_path(cost, **opts):
    value, path = min_path(cost, **opts)
    path = [tuple(x) for x in path.tolist()]
    assert value == min_path_ref(cost)
    assert path[0] == (0, 0) and path[-1] == (len(cost) - 1, len(cost[0]) - 1)
    for (i, j), (i2, j2) in pairwise(path):
        assert (i2 - i, j2 - j) in ((1, 1), (1, 0), (0, 1))
    assert sum(cost[i][j] for i, j in path) == value


magnitudes = st.sampled_from([1, 10, 1 << 40])


@FEW
@given(st.integers(1, 9), st.integers(1, 9), magnitudes, st.data())
def test_min_path(n, m, size, data):
    cost = data.draw(
        st.lists(st.lists(st.integers(-size, size), min_size=m, max_size=m), min_size=n, max_size=n)
    )
    check_min_path(cost, backend="cpu", check=True)


# =============================================================================================
# 3. Egg dropping: E(e, f) = 1 + min_{1 <= k <= f} max(E(e-1, k-1), E(e, f-k)), E(e, 0) = 0,
#    E(0, f > 0) = +inf: the fewest drops that find the critical floor among f with e eggs in the
#    worst case. A cell reads its own row at f-k for every k: no constant offsets, no earlier layer
#    alone. The (eggs + 1) x (floors + 1) table flattened row by row into a line, cell
#    x = e (floors + 1) + f, reading the line at any earlier index (reads_line, section 14); the
#    decision is the best first floor k and which outcome of dropping there is the worse (back gets
#    the data, not the line: the cell records it), which back follows.
# =============================================================================================

NO_EGGS = 1 << 40  # E(0, f > 0): no strategy


class EggDrop(GridRecurrence):
    value_dtype = np.int64
    decision_bits = 17  # 2 k + (the egg breaking is the worse outcome): up to 65,535 floors
    offsets = ((0, -1),)  # the order only: the cell reads the line
    reads_line = True  # cell(i, x, left, line, width): line[y] = E at flat index y < x

    def __init__(self, eggs, floors):
        self.eggs, self.floors = eggs, floors
        self.width = np.int64(floors + 1)

    def shape(self):
        return 1, (self.eggs + 1) * (self.floors + 1)

    def data(self):
        return (self.width,)

    @staticmethod
    def cell(i, x, left, line, width):
        e, f = x // width, x % width
        if f == 0:
            return 0, 0
        if e == 0:
            return NO_EGGS, 0
        below, here = x - f - width - 1, x  # E(e-1, k-1) at below + k, E(e, f-k) at here - k
        best, how = NO_EGGS + 1, 0
        for k in range(1, f + 1):
            broken, kept = line[below + k], line[here - k]
            if broken >= kept:
                if broken < best:
                    best, how = broken, 2 * k + 1
            elif kept < best:
                best, how = kept, 2 * k
        return 1 + best, how

    @staticmethod
    def back(i, x, how, width):
        k = how >> 1
        if k == 0:
            return i, -1  # f = 0 or no eggs: the walk ends
        return (i, x - x % width - width - 1 + k) if how & 1 else (i, x - k)


def egg_drop(eggs, floors, **opts):
    """(drops, first floor to try, [(eggs, floors, floor tried)] along one worst case)."""
    rec = EggDrop(eggs, floors)
    res = sweep(rec, **opts)
    w = floors + 1
    line = res.last_row
    x = eggs * w + floors
    steps = [(y // w, y % w, how >> 1) for _, y, how in res.traceback((0, x)).tolist() if how >> 1]
    return int(line[x]), int(res.decision(0, x)) >> 1, steps


def egg_ref(eggs, floors):
    E = [[0] * (floors + 1) for _ in range(eggs + 1)]
    for f in range(1, floors + 1):
        E[0][f] = NO_EGGS
    for e in range(1, eggs + 1):
        for f in range(1, floors + 1):
            E[e][f] = 1 + min(max(E[e - 1][k - 1], E[e][f - k]) for k in range(1, f + 1))
    return E


def check_egg(eggs, floors, **opts):
    drops, first, steps = egg_drop(eggs, floors, **opts)
    E = egg_ref(eggs, floors)
    assert drops == E[eggs][floors]
    if floors == 0 or eggs == 0:
        assert first == 0 and steps == []
        return
    assert 1 <= first <= floors
    assert 1 + max(E[eggs - 1][first - 1], E[eggs][floors - first]) == drops  # trying it is optimal
    # the worst case: each drop on a floor of the floors left, down to no floor left, `drops` drops
    assert len(steps) == drops and steps[0] == (eggs, floors, first)
    for (e, f, k), (e2, f2, _) in pairwise(steps):
        assert 1 <= k <= f and (e2, f2) in ((e - 1, k - 1), (e, f - k))
        assert E[e2][f2] == E[e][f] - 1


@FEW
@given(st.integers(0, 5), st.integers(0, 40))
def test_egg_drop(eggs, floors):
    check_egg(eggs, floors, backend="cpu", check=True)


# =============================================================================================
# 4. Stone merging: piles s_0..s_{n-1} in a row, merging two neighbours costs their sizes' sum;
#    M(i, j) = min_{i <= k < j} M(i, k) + M(k+1, j) + (pre[j+1] - pre[i]), M(i, i) = 0, with the
#    prefix sums as data and the merge tree (section 13).
# =============================================================================================


class StoneMerge(IntervalRecurrence):
    value_dtype = np.int64
    decision_bits = 16  # the last merge's split k: up to 65,536 piles

    def __init__(self, stones):
        self.pre = np.concatenate(([0], np.cumsum(np.asarray(stones, np.int64)))).astype(np.int64)

    def size(self):
        return len(self.pre) - 1

    def data(self):
        return (self.pre,)

    @staticmethod
    def cell(i, j, T, pre):
        if i == j:
            return 0, 0
        best, split = T[i, i] + T[i + 1, j], i
        for k in range(i + 1, j):
            cost = T[i, k] + T[k + 1, j]
            if cost < best:
                best, split = cost, k
        return best + pre[j + 1] - pre[i], split

    @staticmethod
    def back(i, j, k, pre):
        if i == j:
            return -1, -1, -1, -1  # a pile: a leaf
        return i, k, k + 1, j


def stone_merge(stones, **opts):
    """(cost, tree): the tree as nested pairs of pile indices, ((0, 1), 2)."""
    n = len(stones)
    if n == 0:
        return 0, None
    res = sweep(StoneMerge(stones), **opts)
    rows = iter(res.traceback_tree().tolist())

    def tree():
        i, j, _ = next(rows)
        return i if i == j else (tree(), tree())

    return int(res.value(0, n - 1)), tree()


def stone_ref(stones):
    n = len(stones)
    pre = [0]
    for s in stones:
        pre.append(pre[-1] + s)
    M = {(i, i): 0 for i in range(n)}
    for length in range(2, n + 1):
        for i in range(n - length + 1):
            j = i + length - 1
            M[i, j] = min(M[i, k] + M[k + 1, j] for k in range(i, j)) + pre[j + 1] - pre[i]
    return M[0, n - 1] if n else 0


def tree_cost(tree, stones):
    """(cost of the merges, total size, leaves in order) of a merge tree."""
    if isinstance(tree, int):
        return 0, stones[tree], [tree]
    (c1, s1, l1), (c2, s2, l2) = tree_cost(tree[0], stones), tree_cost(tree[1], stones)
    return c1 + c2 + s1 + s2, s1 + s2, l1 + l2


def check_stones(stones, **opts):
    cost, tree = stone_merge(stones, **opts)
    assert cost == stone_ref(stones)
    if stones:
        merged, _, leaves = tree_cost(tree, stones)
        assert leaves == list(range(len(stones))) and merged == cost


@FEW
@given(st.integers(0, 12), magnitudes, st.data())
def test_stone_merge(n, size, data):
    check_stones(
        data.draw(st.lists(st.integers(-size, size), min_size=n, max_size=n)), backend="cpu", check=True
    )


# =============================================================================================
# 5. Palindrome partitioning, the fewest cuts: P(i, j) = s_i == s_j and (j - i < 2 or P(i+1, j-1))
#    over the intervals (section 13: the empty interval (i+1, i) tested for, not read), then the
#    line C(x) = min over q < x with P(q, x-1) of C(q) + 1, C(0) = 0, the pieces of s[:x] (section
#    14's reads_line), its decision the last piece's start; cuts = C(n) - 1.
# =============================================================================================


class Palindromes(IntervalRecurrence):
    value_dtype = np.int32  # 1: s[i..j] is a palindrome

    def __init__(self, s):
        self.s = np.array([ord(c) for c in s], np.int32)

    def size(self):
        return len(self.s)

    def data(self):
        return (self.s,)

    @staticmethod
    def cell(i, j, T, s):
        if s[i] != s[j]:
            return 0
        if j - i < 2:
            return 1
        return T[i + 1, j - 1]


class FewestPieces(GridRecurrence):
    value_dtype = np.int64
    decision_bits = 16  # the start of the last piece: strings of up to 65,535 letters
    offsets = ((0, -1),)
    reads_line = True  # cell(i, x, left, line, pal): line[q] = C(q) for q < x

    def __init__(self, pal):
        self.pal = np.ascontiguousarray(pal, np.int32)  # pal[q, r] = 1: s[q..r] is a palindrome

    def shape(self):
        return 1, len(self.pal) + 1

    def data(self):
        return (self.pal,)

    @staticmethod
    def cell(i, x, left, line, pal):
        if x == 0:
            return 0, 0
        best, start = x + 1, 0
        for q in range(x):
            if pal[q, x - 1] and line[q] + 1 < best:
                best, start = line[q] + 1, q
        return best, start

    @staticmethod
    def back(i, x, start, pal):
        return (i, start) if x > 0 else (i, -1)


def palindrome_cuts(s, **opts):
    """(fewest cuts, the pieces)."""
    n = len(s)
    if n == 0:
        return 0, []
    pal = sweep(Palindromes(s), **opts).table
    res = sweep(FewestPieces(pal), **opts)
    starts = [x for _, x, _ in res.traceback((0, n)).tolist()]  # n, then each piece's start
    bounds = starts[::-1]
    return int(res.last_row[n]) - 1, [s[a:b] for a, b in pairwise(bounds)]


def palindrome_ref(s):
    n = len(s)
    C = [0] + [None] * n
    for x in range(1, n + 1):
        C[x] = min(C[q] + 1 for q in range(x) if s[q:x] == s[q:x][::-1])
    return max(C[n] - 1, 0)


def check_palindromes(s, **opts):
    cuts, pieces = palindrome_cuts(s, **opts)
    assert cuts == palindrome_ref(s)
    assert "".join(pieces) == s and all(p and p == p[::-1] for p in pieces)
    assert len(pieces) == cuts + 1 or not s


@FEW
@given(st.text("abc", max_size=24))
def test_palindrome_partitioning(s):
    check_palindromes(s, backend="cpu", check=True)


# =============================================================================================
# 6. The bounded knapsack: item t of weight w_t, profit p_t, taken up to n_t times;
#    F_t(c) = max_{0 <= q <= min(n_t, c // w_t)} F_{t-1}(c - q w_t) + q p_t, F_{-1} = 0 (the layers'
#    fill), a layer an item (section 10), the decision the count q; back steps to c - q w_t.
# =============================================================================================


class BoundedKnapsack(LayeredRecurrence):
    value_dtype = np.int64
    decision_bits = 16  # the count taken: up to 65,535 copies of an item

    def __init__(self, weights, profits, counts, capacity):
        self.w = np.asarray(weights, np.int64)
        self.p = np.asarray(profits, np.int64)
        self.n = np.asarray(counts, np.int64)
        self.capacity = capacity

    def num_layers(self):
        return len(self.w)

    def layer_size(self, t):
        return self.capacity + 1

    def data(self):
        return self.w, self.p, self.n

    @staticmethod
    def cell(t, c, prev, w, p, n):
        most = n[t] if w[t] == 0 else min(n[t], c // w[t])
        best, count = prev[c], 0
        for q in range(1, most + 1):
            v = prev[c - q * w[t]] + q * p[t]
            if v > best:
                best, count = v, q
        return best, count

    @staticmethod
    def back(t, c, q, w, p, n):
        return t - 1, c - q * w[t]


def bounded_knapsack(weights, profits, counts, capacity, **opts):
    """(best profit, count taken of each item)."""
    if len(weights) == 0:
        return 0, []
    res = sweep(BoundedKnapsack(weights, profits, counts, capacity), **opts)
    taken = [0] * len(weights)
    for t, _, q in res.traceback((len(weights) - 1, capacity)).tolist():
        taken[t] = q
    return int(res.last_layer[capacity]), taken


def knapsack_ref(weights, profits, counts, capacity):
    F = [0] * (capacity + 1)
    for w, p, n in zip(weights, profits, counts, strict=True):
        F = [max(F[c - q * w] + q * p for q in range(n + 1) if q * w <= c) for c in range(capacity + 1)]
    return F[capacity]


def check_knapsack(items, capacity, **opts):
    weights, profits, counts = (list(x) for x in zip(*items, strict=True)) if items else ([], [], [])
    best, taken = bounded_knapsack(weights, profits, counts, capacity, **opts)
    assert best == knapsack_ref(weights, profits, counts, capacity)
    assert all(0 <= q <= n for q, n in zip(taken, counts, strict=True))
    assert sum(q * w for q, w in zip(taken, weights, strict=True)) <= capacity
    assert sum(q * p for q, p in zip(taken, profits, strict=True)) == best


@FEW
@given(
    st.lists(st.tuples(st.integers(0, 9), st.integers(-5, 1 << 40), st.integers(0, 6)), max_size=6),
    st.integers(0, 30),
)
def test_bounded_knapsack(items, capacity):
    check_knapsack(items, capacity, backend="cpu", check=True)


# =============================================================================================
# 7. Batches (section 16): many DTW distances in one sweep_many call, values only; and every query
#    series against every choice series, the template's class over the pairs (integer series: the
#    pairs form reads integer symbols only, where sweep and a list of instances take float64 ones).
# =============================================================================================


def dtw_many(pairs, **opts):
    return [
        INF if v is None else float(v)
        for v in sweep_many([DTW(a, b) for a, b in pairs], traceback=False, **opts).values
    ]


def dtw_cross(queries, choices, **opts):
    batch = sweep_many(DTW(), queries=queries, choices=choices, traceback=False, **opts)
    values = [INF if v is None else float(v) for v in batch.values]
    return np.array(values).reshape(len(queries), len(choices))


def check_dtw_many(pairs, **opts):
    assert dtw_many(pairs, **opts) == [dtw_ref(a, b) for a, b in pairs]


def check_dtw_cross(queries, choices, dtype=np.int32, **opts):
    got = dtw_cross([np.asarray(q, dtype) for q in queries], [np.asarray(c, dtype) for c in choices], **opts)
    assert got.tolist() == [[dtw_ref(q, c) for c in choices] for q in queries]


@FEW
@given(st.lists(st.tuples(series, series), max_size=8))
def test_dtw_many(pairs):
    check_dtw_many(pairs, backend="cpu", check=True)


int_series = st.lists(st.integers(-(10**6), 10**6), max_size=12)


@FEW
@given(st.lists(int_series, min_size=1, max_size=4), st.lists(int_series, min_size=1, max_size=4))
def test_dtw_cross(queries, choices):
    check_dtw_cross(queries, choices, backend="cpu", check=True)


@FEW
@given(st.lists(series, min_size=1, max_size=4), st.lists(series, min_size=1, max_size=4))
def test_dtw_cross_of_real_series(queries, choices):
    check_dtw_cross(queries, choices, np.float64, backend="cpu", check=True)


def test_dtw_many_5000():
    rng = np.random.default_rng(7)
    pairs = [
        (rng.normal(size=rng.integers(1, 25)).tolist(), rng.normal(size=rng.integers(1, 25)).tolist())
        for _ in range(5000)
    ]
    got = dtw_many(pairs, backend="cpu")
    sample = range(0, 5000, 97)
    assert [got[k] for k in sample] == [dtw_ref(*pairs[k]) for k in sample]


# =============================================================================================
# every DP once, tiny, in the CUDA simulator
# =============================================================================================


@SIM
def test_user_dps4_in_the_simulator():
    check_dtw([0.5, -1.0, 2.0, 3.5], [0.0, 2.5, 3.0], backend="cuda")
    check_dtw([0.5, -1.0, 2.0, 3.5, 1.0], [0.0, 2.5, 3.0], band=2, backend="cuda")
    check_min_path([[1, -3, 2], [4, 1 << 40, -1], [0, 2, 5]], backend="cuda")
    check_egg(2, 6, backend="cuda")
    check_stones([4, -1, 3, 2, 5], backend="cuda")
    check_palindromes("abacbb", backend="cuda")
    check_knapsack([(2, 3, 2), (3, 5, 1), (1, 1, 3)], 7, backend="cuda")
    check_dtw_many([([1.0, 2.0], [1.0, 0.0, 2.0]), ([], [1.0]), ([3.0], [-3.0])], backend="cuda")
    check_dtw_cross([[1, 2, 3], [0]], [[2, 2], [5, -1, 0]], backend="cuda")
    check_dtw_cross([[1.5, -2.25], [0.125]], [[2.0], [5.5, -1.0, 0.0]], np.float64, backend="cuda")


@SIM
def test_dtw_many_fractional_symbols_in_the_simulator():
    """Float symbols keep their fractions across the warp kernel's lanes (the simulator passed them
    through an int64 array once)."""
    check_dtw_many([([1.0, 2.0], [1.5, 0.0, 2.0])], backend="cuda")
