"""A third set of user DPs written from the docs alone (issue 39's last check): each the way
README.md and docs/tutorial.md suggest, against a plain-Python reference by hypothesis on the cpu
backend, swept checked (sweep(check=True), tutorial section 8), its traceback's answer checked (an
alignment, a set of coins, an order, a substring, a set of items, a structure, whose cost is the
optimum), and one tiny case of each in the CUDA simulator.

1. Needleman-Wunsch with a 20 x 20 substitution matrix as data and linear gaps, with the alignment;
2. coin change: the number of ways to make every amount (a grid of coins x amounts whose offsets
   come with the instance) and the fewest coins with the coins used (a line, section 14);
3. burst balloons: an interval DP whose split point is the balloon burst last, and the order;
4. longest common substring: a grid reduced to its best cell (reduce = "max"), and the substring;
5. the 0/1 knapsack with a weight and a volume capacity: layers that are tables (layer_shape);
6. batches through sweep_many: affine-gap edit distances (a record cell, a stateful traceback) and
   Nussinov foldings (interval instances) with their structures.
"""

from __future__ import annotations

import functools
import random

import numpy as np
import pytest
from examples_loader import load_example
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import GridRecurrence, IntervalRecurrence, LayeredRecurrence, sweep, sweep_many

SIM = pytest.mark.sim
FEW = settings(max_examples=15, deadline=None)

# =============================================================================================
# 1. Needleman-Wunsch with a substitution matrix: D(i, j) = max(D(i-1, j-1) + S[a_i, b_j],
#    D(i-1, j) - gap, D(i, j-1) - gap), D(-1, j) = -(j + 1) gap, D(i, -1) = -(i + 1) gap
# =============================================================================================

DIAG, UP, LEFT = 0, 1, 2


class SubstitutionNW(GridRecurrence):
    value_dtype = np.int32
    decision_bits = 2
    offsets = ((-1, 0), (0, -1), (-1, -1))
    symbols = True  # cell(i, j, up, left, diag, ri, cj, subst, gap): ri = a[i], cj = b[j]

    def __init__(self, a, b, subst, gap):
        self.a = np.asarray(a, np.int32)  # residues as indices 0..19 of the matrix
        self.b = np.asarray(b, np.int32)
        self.subst = np.ascontiguousarray(subst, np.int32)
        self.gap = np.int32(gap)  # a scalar: a kernel argument (section 17)

    def shape(self):
        return len(self.a), len(self.b)

    def row_symbols(self):
        return self.a

    def col_symbols(self):
        return self.b

    def data(self):
        return self.subst, self.gap

    @staticmethod
    def cell(i, j, up, left, diag, ri, cj, subst, gap):
        best, how = diag + subst[ri, cj], DIAG
        if up - gap > best:
            best, how = up - gap, UP
        if left - gap > best:
            best, how = left - gap, LEFT
        return best, how

    @staticmethod
    def boundary(i, j, subst, gap):
        return -(i + j + 2) * gap  # row -1: b[:j+1] against gaps; column -1: a[:i+1]

    @staticmethod
    def back(i, j, how, subst, gap):
        if how == DIAG:
            return i - 1, j - 1
        if how == UP:
            return i - 1, j
        return i, j - 1


def nw_align(a, b, subst, gap, **opts):
    """(score, columns): the alignment as a list of (index into a or None, index into b or None)."""
    rec = SubstitutionNW(a, b, subst, gap)
    n, m = len(a), len(b)
    if n == 0 or m == 0:  # no cells: the answer is a boundary value (tutorial section 5)
        score, i, j, cols = int(SubstitutionNW.boundary(n - 1, m - 1, *rec.data())), n - 1, m - 1, []
    else:
        res = sweep(rec, **opts)
        score, cols = int(res.last_row[-1]), []
        path = res.traceback((n - 1, m - 1))
        for i, j, how in path.tolist():
            cols.append((i, j) if how == DIAG else (i, None) if how == UP else (None, j))
        i, j = SubstitutionNW.back(*path[-1], *rec.data())
    cols += [(k, None) for k in range(i, -1, -1)] + [(None, k) for k in range(j, -1, -1)]
    return score, cols[::-1]


def nw_ref(a, b, subst, gap):
    n, m = len(a), len(b)
    D = [[-(i + j) * gap if i == 0 or j == 0 else 0 for j in range(m + 1)] for i in range(n + 1)]
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            D[i][j] = max(D[i - 1][j - 1] + subst[a[i - 1]][b[j - 1]], D[i - 1][j] - gap, D[i][j - 1] - gap)
    return D[n][m]


def random_subst(seed):
    """A BLOSUM-like 20 x 20 table: symmetric, the diagonal positive and above its row."""
    rng = np.random.default_rng(seed)
    s = rng.integers(-4, 3, (20, 20))
    s = np.triu(s) + np.triu(s, 1).T
    np.fill_diagonal(s, rng.integers(4, 12, 20))
    return s


def check_nw(a, b, seed, gap, **opts):
    subst = random_subst(seed)
    score, cols = nw_align(a, b, subst, gap, **opts)
    assert score == nw_ref(a, b, subst, gap)
    assert [i for i, _ in cols if i is not None] == list(range(len(a)))
    assert [j for _, j in cols if j is not None] == list(range(len(b)))
    assert all(i is not None or j is not None for i, j in cols)
    cost = sum(-gap if i is None or j is None else subst[a[i], b[j]] for i, j in cols)
    assert cost == score


@FEW
@given(
    st.lists(st.integers(0, 19), max_size=14),
    st.lists(st.integers(0, 19), max_size=14),
    st.integers(0, 1000),
    st.integers(1, 8),
)
def test_substitution_nw(a, b, seed, gap):
    check_nw(a, b, seed, gap, backend="cpu", check=True)


# =============================================================================================
# 2. Coin change. The ways to make each amount from coins c_0..c_{K-1} (combinations):
#    W(t, a) = W(t - 1, a) + W(t, a - c_t), W(-1, 0) = 1, W(-1, a > 0) = 0, W(t, a < 0) = 0;
#    a grid of K rows (coins) by amount + 1 columns whose offsets are (-1, 0) and (0, -c) for every
#    coin: the instance's offsets (section 14), read as one tuple. Exact while the count fits int64:
#    the docs say integer sums wrap silently and sweep(check=True) names the first that overflows.
#    The fewest coins, with the coins: a second sweep, section 14's line (examples/coin_change.py).
# =============================================================================================

coin_example = load_example("coin_change")


class CoinWays(GridRecurrence):
    value_dtype = np.int64
    deps_tuple = True  # cell(t, a, deps, coins): deps[0] = W(t-1, a), deps[1 + k] = W(t, a - c_k)

    def __init__(self, coins, amount):
        self.coins = np.unique(np.asarray(coins, np.int64))
        self.amount = int(amount)
        self.offsets = ((-1, 0),) + tuple((0, -int(c)) for c in self.coins)

    def shape(self):
        return len(self.coins), self.amount + 1

    def data(self):
        return (self.coins,)

    @staticmethod
    def cell(t, a, deps, coins):
        return deps[0] + deps[1 + t]  # a row reads its own coin's offset only

    @staticmethod
    def boundary(t, a, coins):
        return 1 if t == -1 and a == 0 else 0


def coin_change(coins, amount, **opts):
    """(ways to make every amount 0..amount, fewest coins for every amount (None: no way), the
    coins of one fewest way to make ``amount``)."""
    ways = sweep(CoinWays(coins, amount), traceback=False, **opts).last_row.tolist()
    rec = coin_example.CoinChange(coins, amount)  # section 14's line, as the example writes it
    res = sweep(rec, **opts)
    fewest = [None if f >= coin_example.NONE else int(f) for f in res.last_row]
    used = []
    if fewest[amount] is not None:
        path = res.traceback((0, amount))
        used = rec.coins[path[path[:, 1] > 0, 2]].tolist()
    return ways, fewest, used


def coin_ref(coins, amount):
    coins = sorted(set(coins))
    ways = [1] + [0] * amount
    for c in coins:
        for a in range(c, amount + 1):
            ways[a] += ways[a - c]
    fewest = [0] + [None] * amount
    for a in range(1, amount + 1):
        options = [fewest[a - c] for c in coins if c <= a and fewest[a - c] is not None]
        fewest[a] = min(options) + 1 if options else None
    return ways, fewest


def check_coins(coins, amount, **opts):
    ways, fewest, used = coin_change(coins, amount, **opts)
    assert (ways, fewest) == coin_ref(coins, amount)
    if fewest[amount] is None:
        assert used == []
    else:
        assert sum(used) == amount and len(used) == fewest[amount] and set(used) <= set(coins)


@FEW
@given(st.integers(0, 150))
def test_coin_change(amount):
    # each distinct coin set compiles its own kernels (its offsets are spelled into them, section
    # 14: seconds a set), so here the amounts vary; the simulator's case takes another set
    check_coins([1, 5, 10, 25], amount, backend="cpu", check=True)


# =============================================================================================
# 3. Burst balloons: B(i, j) = max over the balloon k burst last in i..j of
#    B(i, k - 1) + B(k + 1, j) + v[i - 1] v[k] v[j + 1] (v = 1 past both ends)
# =============================================================================================


class BurstBalloons(IntervalRecurrence):
    value_dtype = np.int64
    decision_bits = 16  # k, the balloon burst last

    def __init__(self, nums):
        self.v = np.concatenate(([1], np.asarray(nums, np.int64), [1]))  # balloon k is v[k + 1]

    def size(self):
        return len(self.v) - 2

    def data(self):
        return (self.v,)

    @staticmethod
    def cell(i, j, T, v):
        best, last = -1, i
        for k in range(i, j + 1):
            left = T[i, k - 1] if k > i else 0
            right = T[k + 1, j] if k < j else 0
            coins = left + right + v[i] * v[k + 1] * v[j + 2]
            if coins > best:
                best, last = coins, k
        return best, last

    @staticmethod
    def back(i, j, k, v):
        return i, k - 1, k + 1, j  # (i, i - 1) and (j + 1, j) are empty: no child


def burst(nums, **opts):
    """(most coins, an order of bursting that earns them, as balloon indices)."""
    if len(nums) == 0:
        return 0, []
    res = sweep(BurstBalloons(nums), **opts)
    tree = res.traceback_tree()  # preorder: a node, then the subtrees of what is burst before it
    return int(res.value(0, len(nums) - 1)), [int(k) for _, _, k in tree[::-1]]


def burst_ref(nums):
    v = [1, *nums, 1]

    @functools.cache
    def best(i, j):  # balloons i..j, 0-based
        return max(
            (best(i, k - 1) + best(k + 1, j) + v[i] * v[k + 1] * v[j + 2] for k in range(i, j + 1)), default=0
        )

    return best(0, len(nums) - 1)


def coins_of_order(nums, order):
    left, total = list(range(len(nums))), 0
    for k in order:
        p = left.index(k)
        lo = nums[left[p - 1]] if p > 0 else 1
        hi = nums[left[p + 1]] if p + 1 < len(left) else 1
        total += lo * nums[k] * hi
        left.pop(p)
    return total


def check_burst(nums, **opts):
    value, order = burst(nums, **opts)
    assert value == burst_ref(nums)
    assert sorted(order) == list(range(len(nums)))
    assert coins_of_order(nums, order) == value


@FEW
@given(st.lists(st.integers(0, 9), max_size=9))
def test_burst_balloons(nums):
    check_burst(nums, backend="cpu", check=True)


# =============================================================================================
# 4. Longest common substring: L(i, j) = L(i-1, j-1) + 1 if a[i] == b[j] else 0, the best cell
# =============================================================================================


class CommonSubstring(GridRecurrence):
    value_dtype = np.int32
    offsets = ((-1, -1),)
    symbols = True
    reduce = "max"  # result.best_value, result.best_cell

    def __init__(self, a, b):
        self.a = np.frombuffer(a.encode(), np.uint8)
        self.b = np.frombuffer(b.encode(), np.uint8)

    def shape(self):
        return len(self.a), len(self.b)

    def row_symbols(self):
        return self.a

    def col_symbols(self):
        return self.b

    @staticmethod
    def cell(i, j, diag, ri, cj):
        return diag + 1 if ri == cj else 0


def common_substring(a, b, **opts):
    res = sweep(CommonSubstring(a, b), **opts)
    if res.best_cell is None:
        return ""
    i, _ = res.best_cell
    return a[i + 1 - int(res.best_value) : i + 1]


def common_substring_ref(a, b):
    return max((k for k in range(len(a) + 1) for p in range(len(a) - k + 1) if a[p : p + k] in b), default=0)


def check_substring(a, b, **opts):
    s = common_substring(a, b, **opts)
    assert len(s) == common_substring_ref(a, b) and s in a and s in b


@FEW
@given(st.text("ab", max_size=16), st.text("abc", max_size=16))
def test_common_substring(a, b):
    check_substring(a, b, backend="cpu", check=True)


# =============================================================================================
# 5. 0/1 knapsack with a weight and a volume capacity, a layer an item and each layer the table of
#    (weight, volume) capacities (section 18): F_t(c, d) = max(F_{t-1}(c, d),
#    F_{t-1}(c - w_t, d - v_t) + p_t), F_{-1} = 0 (fill)
# =============================================================================================


class Knapsack2(LayeredRecurrence):
    value_dtype = np.int64
    decision_bits = 1  # 1: item t taken
    fill = 0  # the layer before the first: nothing packed

    def __init__(self, w, v, p, cap_w, cap_v):
        self.w, self.v, self.p = (np.asarray(x, np.int64) for x in (w, v, p))
        self.cap = (int(cap_w), int(cap_v))

    def num_layers(self):
        return len(self.w)

    def layer_shape(self, t):
        return self.cap[0] + 1, self.cap[1] + 1

    def data(self):
        return self.w, self.v, self.p

    @staticmethod
    def cell(t, c, d, prev, w, v, p):
        skip = prev[c, d]
        if w[t] <= c and v[t] <= d and prev[c - w[t], d - v[t]] + p[t] > skip:
            return prev[c - w[t], d - v[t]] + p[t], 1
        return skip, 0

    @staticmethod
    def back(t, c, d, took, w, v, p):
        if took:
            return t - 1, c - w[t], d - v[t]
        return t - 1, c, d


def knapsack2(w, v, p, cap_w, cap_v, **opts):
    """(best profit, the items taken)."""
    if len(w) == 0:
        return 0, []
    res = sweep(Knapsack2(w, v, p, cap_w, cap_v), **opts)
    path = res.traceback((len(w) - 1, cap_w, cap_v))  # rows (t, c, d, decision)
    return int(res.last_layer[cap_w, cap_v]), sorted(int(t) for t, _, _, took in path if took)


def knapsack2_ref(w, v, p, cap_w, cap_v):
    best = 0
    for mask in range(1 << len(w)):
        items = [t for t in range(len(w)) if mask >> t & 1]
        if sum(w[t] for t in items) <= cap_w and sum(v[t] for t in items) <= cap_v:
            best = max(best, sum(p[t] for t in items))
    return best


def check_knapsack2(items, cap_w, cap_v, **opts):
    w, v, p = ([it[k] for it in items] for k in range(3))
    value, taken = knapsack2(w, v, p, cap_w, cap_v, **opts)
    assert value == knapsack2_ref(w, v, p, cap_w, cap_v)
    assert sum(w[t] for t in taken) <= cap_w and sum(v[t] for t in taken) <= cap_v
    assert sum(p[t] for t in taken) == value


@FEW
@given(
    st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9), st.integers(0, 20)), max_size=8),
    st.integers(0, 15),
    st.integers(0, 15),
)
def test_knapsack_two_capacities(items, cap_w, cap_v):
    check_knapsack2(items, cap_w, cap_v, backend="cpu", check=True)


# =============================================================================================
# 6a. Many affine-gap edit distances at once: Gotoh's three matrices as a record cell (costs:
#     mismatch 1, a gap of length L: open + extend L), through sweep_many, with the alignments
# =============================================================================================

INF = 1 << 29  # no alignment ends this way (clamped: int32 stays exact)
M, X, Y = 0, 1, 2  # the record's fields and the traceback's states


class AffineEdit(GridRecurrence):
    value_dtype = np.dtype([("m", np.int32), ("x", np.int32), ("y", np.int32)])
    decision_bits = 4  # bits 0-1: M's predecessor; bit 2: X extended; bit 3: Y extended
    offsets = ((-1, 0), (0, -1), (-1, -1))
    traceback_state = True

    def __init__(self, a, b, gap_open=2, gap_extend=1):
        self.a = np.frombuffer(a.encode(), np.uint8)
        self.b = np.frombuffer(b.encode(), np.uint8)
        self.costs = (np.int32(gap_open + gap_extend), np.int32(gap_extend))

    def shape(self):
        return len(self.a) + 1, len(self.b) + 1  # row 0 and column 0: the empty prefixes

    def data(self):
        return (self.a, self.b, *self.costs)

    @staticmethod
    def cell(i, j, up, left, diag, a, b, opening, extend):
        if i == 0 and j == 0:
            return (0, INF, INF), 0
        x, dx = min(up[M] + opening, INF), 0
        if up[X] + extend < x:
            x, dx = up[X] + extend, 1
        y, dy = min(left[M] + opening, INF), 0
        if left[Y] + extend < y:
            y, dy = left[Y] + extend, 1
        m, dm = INF, M
        if i > 0 and j > 0:
            m = min(diag[M], diag[X], diag[Y])
            dm = M if m == diag[M] else X if m == diag[X] else Y
            m = min(m + (0 if a[i - 1] == b[j - 1] else 1), INF)
        return (m, x, y), dm | (dx << 2) | (dy << 3)

    @staticmethod
    def boundary(i, j, a, b, opening, extend):
        return (INF, INF, INF)

    @staticmethod
    def back(i, j, decision, state, a, b, opening, extend):
        if state == M:
            if i == 0 and j == 0:
                return -1, -1, M
            return i - 1, j - 1, decision & 3
        if state == X:
            return i - 1, j, X if (decision >> 2) & 1 else M
        return i, j - 1, Y if (decision >> 3) & 1 else M


def best_state(value):
    return int(np.argmin([int(value[k]) for k in (M, X, Y)]))


def affine_many(pairs, **opts):
    """[(cost, (top, bottom))] for every pair, in one sweep_many call."""
    batch = sweep_many(
        [AffineEdit(a, b) for a, b in pairs], start_state=lambda rec, value: best_state(value), **opts
    )
    out = []
    for (a, b), item in zip(pairs, batch, strict=True):
        assert item.error is None, item.error
        top, bottom = "", ""
        for i, j, _, s in item.path[::-1][1:].tolist():  # from the start, without cell (0, 0)
            top += "-" if s == Y else a[i - 1]
            bottom += "-" if s == X else b[j - 1]
        out.append((min(item.value), (top, bottom)))
    return out


def affine_ref(a, b, opening=3, extend=1):
    n, m = len(a), len(b)
    Mx = [[INF] * (m + 1) for _ in range(n + 1)]
    Xx = [[INF] * (m + 1) for _ in range(n + 1)]
    Yx = [[INF] * (m + 1) for _ in range(n + 1)]
    Mx[0][0] = 0
    for i in range(n + 1):
        for j in range(m + 1):
            if i > 0:
                Xx[i][j] = min(Mx[i - 1][j] + opening, Xx[i - 1][j] + extend)
            if j > 0:
                Yx[i][j] = min(Mx[i][j - 1] + opening, Yx[i][j - 1] + extend)
            if i > 0 and j > 0:
                prev = min(Mx[i - 1][j - 1], Xx[i - 1][j - 1], Yx[i - 1][j - 1])
                Mx[i][j] = prev + (a[i - 1] != b[j - 1])
    return min(Mx[n][m], Xx[n][m], Yx[n][m])


def alignment_cost(top, bottom, opening=3, extend=1):
    cost, prev = 0, None
    for x, y in zip(top, bottom, strict=True):
        kind = "x" if y == "-" else "y" if x == "-" else "m"
        cost += (x != y) if kind == "m" else extend if kind == prev else opening
        prev = kind
    return cost


def check_affine(pairs, sample, **opts):
    out = affine_many(pairs, **opts)
    for k in sample:
        (a, b), (cost, (top, bottom)) = pairs[k], out[k]
        assert cost == affine_ref(a, b)
        assert top.replace("-", "") == a and bottom.replace("-", "") == b
        assert not any(x == y == "-" for x, y in zip(top, bottom, strict=True))
        assert alignment_cost(top, bottom) == cost


def random_pairs(count, seed, longest=12):
    rng = random.Random(seed)
    word = lambda: "".join(rng.choice("ACGT") for _ in range(rng.randint(0, longest)))  # noqa: E731
    return [(word(), word()) for _ in range(count)]


@FEW
@given(st.lists(st.tuples(st.text("ACG", max_size=10), st.text("ACG", max_size=10)), min_size=1, max_size=6))
def test_affine_many(pairs):
    check_affine(pairs, range(len(pairs)), backend="cpu", check=True)


def test_affine_many_2000():
    pairs = random_pairs(2000, 1)
    check_affine(pairs, random.Random(2).sample(range(2000), 60), backend="cpu")


# =============================================================================================
# 6b. Many Nussinov foldings at once: N(i, j) = max(N(i + 1, j) [i unpaired],
#     max over k in i+4..j pairing with i of 1 + N(i + 1, k - 1) + N(k + 1, j))
# =============================================================================================

PAIRS = {("A", "U"), ("U", "A"), ("G", "C"), ("C", "G"), ("G", "U"), ("U", "G")}
LOOP = 3  # a hairpin holds at least 3 unpaired bases


class Nussinov(IntervalRecurrence):
    value_dtype = np.int32
    decision_bits = 16  # k - i: i pairs with k (0: i unpaired)

    def __init__(self, rna):
        codes = {"A": 0, "C": 1, "G": 2, "U": 3}
        self.s = np.array([codes[c] for c in rna], np.int64)
        ok = np.zeros((4, 4), np.int64)
        for x, y in PAIRS:
            ok[codes[x], codes[y]] = 1
        self.ok = ok

    def size(self):
        return len(self.s)

    def data(self):
        return self.s, self.ok

    @staticmethod
    def cell(i, j, T, s, ok):
        best, how = T[i + 1, j] if i < j else 0, 0
        for k in range(i + LOOP + 1, j + 1):
            if ok[s[i], s[k]]:
                inside = T[i + 1, k - 1] if i + 1 <= k - 1 else 0
                after = T[k + 1, j] if k < j else 0
                if inside + after + 1 > best:
                    best, how = inside + after + 1, k - i
        return best, how

    @staticmethod
    def back(i, j, how, s, ok):
        if how == 0:
            return i + 1, j, -1, -1  # (j + 1, j) when i == j: empty, no child
        return i + 1, i + how - 1, i + how + 1, j


def fold_many(rnas, **opts):
    """[(pairs, dot-bracket)] of every sequence, in one sweep_many call."""
    batch = sweep_many([Nussinov(r) for r in rnas], **opts)
    out = []
    for rna, item in zip(rnas, batch, strict=True):
        assert item.error is None, item.error
        dots = ["."] * len(rna)
        if item.path is not None:
            for i, _, how in item.path.tolist():
                if how:
                    dots[i], dots[i + how] = "(", ")"
        out.append((0 if item.value is None else int(item.value), "".join(dots)))
    return out


def nussinov_ref(rna):
    @functools.cache
    def best(i, j):
        if i >= j:
            return 0
        pairs = (
            1 + best(i + 1, k - 1) + best(k + 1, j)
            for k in range(i + LOOP + 1, j + 1)
            if (rna[i], rna[k]) in PAIRS
        )
        return max([best(i + 1, j), *pairs])

    return best(0, len(rna) - 1)


def check_structure(rna, value, dots):
    stack, count = [], 0
    for k, c in enumerate(dots):
        if c == "(":
            stack.append(k)
        elif c == ")":
            i = stack.pop()
            assert (rna[i], rna[k]) in PAIRS and k - i > LOOP
            count += 1
    assert not stack and count == value


def check_folds(rnas, **opts):
    for rna, (value, dots) in zip(rnas, fold_many(rnas, **opts), strict=True):
        assert value == nussinov_ref(rna)
        check_structure(rna, value, dots)


@FEW
@given(st.lists(st.text("ACGU", max_size=14), min_size=1, max_size=6))
def test_nussinov_many(rnas):
    check_folds(rnas, backend="cpu", check=True)


def test_nussinov_many_500():
    rng = random.Random(3)
    check_folds(
        ["".join(rng.choice("ACGU") for _ in range(rng.randint(0, 16))) for _ in range(500)], backend="cpu"
    )


# =============================================================================================
# every DP once, tiny, in the CUDA simulator
# =============================================================================================


@SIM
def test_user_dps3_in_the_simulator():
    check_nw([3, 1, 4, 1, 5], [9, 2, 6, 5], 7, 3, backend="cuda")
    check_coins([2, 3, 7], 12, backend="cuda")
    check_burst([3, 1, 5, 8], backend="cuda")
    check_substring("abcabd", "bcabx", backend="cuda")
    check_knapsack2([(2, 3, 5), (3, 1, 4), (1, 2, 3)], 4, 4, backend="cuda")
    check_affine([("ACGT", "AGT"), ("", "AC")], [0, 1], backend="cuda")
    check_folds(["GGGAAAUCC", "ACGU"], backend="cuda")
