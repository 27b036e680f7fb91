"""A second set of user DPs written from the docs alone (issue 39): each the way README.md and
docs/tutorial.md suggest, against a plain-Python reference by hypothesis on the cpu backend, its
traceback's answer checked (a valid subsequence, tree, set of breaks or path whose cost is the
optimum), and one tiny case in the CUDA simulator.

1. longest increasing subsequence, O(n^2): a line whose cell reads every earlier cell (reads_line),
   the answer the best cell anywhere (reduce = "max");
2. Knuth's optimal binary search tree: an interval DP with a split point and weight sums;
3. longest palindromic subsequence: an interval DP without a split;
4. text justification (word wrap): a line whose cell reads a window of earlier cells;
5. shortest paths of at most k edges: Bellman-Ford as layers;
6. boolean parenthesization: the ways an expression evaluates to true and to false, a record of
   two exact int64 counts;
7. the HMM forward algorithm: log-sum-exp over the previous layer, float64.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from examples_loader import load_example
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import GridRecurrence, InputError, IntervalRecurrence, LayeredRecurrence, sweep

SIM = pytest.mark.sim
FEW = settings(max_examples=10, deadline=None)

# =============================================================================================
# 1. Longest increasing subsequence: L(j) = 1 + max over q < j with a[q] < a[j] of L(q)
# =============================================================================================


class LIS(GridRecurrence):
    value_dtype = np.int64
    decision_bits = 32  # the predecessor q + 1 (0: none)
    offsets = ((0, -1),)  # required by a line; the cell reads the whole line instead
    reads_line = True  # cell(i, j, left, L, a): L[q] for every q < j
    reduce = "max"  # the answer is the best cell anywhere on the line

    def __init__(self, a):
        self.a = np.asarray(a, dtype=np.int64)

    def shape(self):
        return 1, len(self.a)

    def data(self):
        return (self.a,)

    @staticmethod
    def cell(i, j, left, L, a):
        best, pred = 1, 0
        for q in range(j):
            if a[q] < a[j] and L[q] + 1 > best:
                best, pred = L[q] + 1, q + 1
        return best, pred

    @staticmethod
    def back(i, j, pred, a):
        return i, pred - 1  # pred 0: (i, -1), outside the line, ends the walk


def lis(a, **opts):
    """(length, indices of one longest strictly increasing subsequence)."""
    if len(a) == 0:
        return 0, []
    res = sweep(LIS(a), **opts)
    path = res.traceback(res.best_cell)
    return int(res.best_value), [int(j) for _, j, _ in path[::-1]]


def lis_ref(a):
    L = [1] * len(a)
    for j in range(len(a)):
        for q in range(j):
            if a[q] < a[j]:
                L[j] = max(L[j], L[q] + 1)
    return max(L, default=0)


def check_lis(a, **opts):
    n, idx = lis(a, **opts)
    assert n == lis_ref(a) == len(idx)
    assert all(p < q and a[p] < a[q] for p, q in zip(idx, idx[1:], strict=False))


@FEW
@given(st.lists(st.integers(0, 12), max_size=40))
def test_lis(a):
    check_lis(a, backend="cpu")


# =============================================================================================
# 2. Knuth's optimal binary search tree (CLRS 15.5): keys 0..n-1 searched with weight p[k], the
#    gaps 0..n (below key 0, between keys, above key n-1) with weight q[d]
#    e(i, j) = min over r in i..j of e(i, r - 1) + e(r + 1, j) + w(i, j), e(i, i - 1) = q[i]
# =============================================================================================


class OptimalBST(IntervalRecurrence):
    value_dtype = np.int64
    decision_bits = 16  # r - i: up to 65,536 keys

    def __init__(self, p, q):
        self.p = np.asarray(p, dtype=np.int64)
        self.q = np.asarray(q, dtype=np.int64)
        if len(self.q) != len(self.p) + 1:
            raise InputError("q", "one gap weight more than key weights is due")
        self.sp = np.concatenate(([0], np.cumsum(self.p)))  # weight sums: sp[j + 1] - sp[i]
        self.sq = np.concatenate(([0], np.cumsum(self.q)))

    def size(self):
        return len(self.p)

    def data(self):
        return self.q, self.sp, self.sq

    @staticmethod
    def cell(i, j, T, q, sp, sq):
        w = sp[j + 1] - sp[i] + sq[j + 2] - sq[i]
        best, root = (1 << 62), 0
        for r in range(i, j + 1):
            left = T[i, r - 1] if r > i else q[i]
            right = T[r + 1, j] if r < j else q[j + 1]
            if left + right < best:
                best, root = left + right, r - i
        return best + w, root

    @staticmethod
    def back(i, j, root, q, sp, sq):
        r = i + root
        return i, r - 1, r + 1, j  # (i, i - 1) and (j + 1, j) are empty: a gap, no child


def obst(p, q, **opts):
    """(expected cost, root and children: ``{key: (left key or None, right key or None)}``, root)."""
    n = len(p)
    if n == 0:
        return int(q[0]), {}, None
    res = sweep(OptimalBST(p, q), **opts)
    rows = iter(res.traceback_tree().tolist())
    tree = {}

    def node(i, j):  # the subtree over keys i..j, read off the preorder
        if i > j:
            return None
        ri, rj, root = next(rows)
        assert (ri, rj) == (i, j)
        r = i + root
        tree[r] = (node(i, r - 1), node(r + 1, j))
        return r

    top = node(0, n - 1)
    assert next(rows, None) is None
    return int(res.value(0, n - 1)), tree, top


def obst_ref(p, q):
    n = len(p)
    e = {(i, i - 1): q[i] for i in range(n + 1)}
    for length in range(1, n + 1):
        for i in range(n - length + 1):
            j = i + length - 1
            w = sum(p[i : j + 1]) + sum(q[i : j + 2])
            e[i, j] = min(e[i, r - 1] + e[r + 1, j] for r in range(i, j + 1)) + w
    return e[0, n - 1]


def tree_cost(p, q, tree, top):
    """Sum of weight x (depth + 1) over the keys and the gaps; checks the tree is a BST of all keys."""
    keys = []

    def walk(r, lo, hi, depth):  # subtree of keys lo..hi
        if r is None:
            return q[lo] * (depth + 1)  # the gap left of key lo
        assert lo <= r <= hi
        left, right = tree[r]
        cost = p[r] * (depth + 1) + walk(left, lo, r - 1, depth + 1)
        keys.append(r)
        return cost + walk(right, r + 1, hi, depth + 1)

    cost = walk(top, 0, len(p) - 1, 0)
    assert keys == list(range(len(p)))  # in order: every key once, sorted
    return cost


def check_obst(p, q, **opts):
    cost, tree, top = obst(p, q, **opts)
    assert cost == obst_ref(p, q) == tree_cost(p, q, tree, top)


@FEW
@given(
    st.integers(0, 14).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 9), min_size=n, max_size=n),
            st.lists(st.integers(0, 9), min_size=n + 1, max_size=n + 1),
        )
    )
)
def test_obst(pq):
    check_obst(*pq, backend="cpu")


# =============================================================================================
# 3. Longest palindromic subsequence: P(i, j) = P(i + 1, j - 1) + 2 if s[i] == s[j],
#    else max(P(i + 1, j), P(i, j - 1)); P(i, i) = 1
# =============================================================================================

PAIR, DROP_I, DROP_J, MIDDLE = 0, 1, 2, 3


class Palindrome(IntervalRecurrence):
    value_dtype = np.int32
    decision_bits = 2

    def __init__(self, s):
        self.s = np.frombuffer(s.encode(), np.uint8)

    def size(self):
        return len(self.s)

    def data(self):
        return (self.s,)

    @staticmethod
    def cell(i, j, T, s):
        if i == j:
            return 1, MIDDLE
        if s[i] == s[j]:
            return (T[i + 1, j - 1] if i + 1 <= j - 1 else 0) + 2, PAIR
        if T[i + 1, j] >= T[i, j - 1]:
            return T[i + 1, j], DROP_I
        return T[i, j - 1], DROP_J

    @staticmethod
    def back(i, j, how, s):
        if how == PAIR:
            return i + 1, j - 1, -1, -1
        if how == DROP_I:
            return i + 1, j, -1, -1
        if how == DROP_J:
            return i, j - 1, -1, -1
        return -1, -1, -1, -1


def palindrome(s, **opts):
    """(length, one longest palindromic subsequence)."""
    if not s:
        return 0, ""
    res = sweep(Palindrome(s), **opts)
    half, middle = [], ""
    for i, _, how in res.traceback_tree().tolist():
        if how == PAIR:
            half.append(s[i])
        elif how == MIDDLE:
            middle = s[i]
    return int(res.value(0, len(s) - 1)), "".join(half) + middle + "".join(reversed(half))


def palindrome_ref(s):
    n = len(s)
    P = [[0] * n for _ in range(n)]
    for i in range(n - 1, -1, -1):
        P[i][i] = 1
        for j in range(i + 1, n):
            P[i][j] = P[i + 1][j - 1] + 2 if s[i] == s[j] else max(P[i + 1][j], P[i][j - 1])
    return P[0][n - 1] if n else 0


def is_subsequence(sub, s):
    it = iter(s)
    return all(c in it for c in sub)


def check_palindrome(s, **opts):
    n, pal = palindrome(s, **opts)
    assert n == palindrome_ref(s) == len(pal)
    assert pal == pal[::-1] and is_subsequence(pal, s)


@FEW
@given(st.text("abc", max_size=40))
def test_palindrome(s):
    check_palindrome(s, backend="cpu")


# =============================================================================================
# 4. Text justification: the least sum of cubed slack over every line but the last.
#    f(0) = 0; f(j) = min over i < j, words i..j-1 fitting a line, of f(i) + slack(i, j)^3
# =============================================================================================


class WordWrap(GridRecurrence):
    value_dtype = np.int64
    decision_bits = 16  # the words on the line that ends at word j - 1
    offsets = ((0, -1),)
    reads_line = True  # cell(i, j, left, f, lens, width): f[k] for every k < j

    def __init__(self, lens, width):
        self.lens = np.asarray(lens, dtype=np.int64)
        self.width = np.int64(width)
        if len(self.lens) and self.lens.max() > width or width >= 1 << 16:
            raise InputError("lens", f"every word must fit a line of {width} (< 65,536)")

    def shape(self):
        return 1, len(self.lens) + 1

    def data(self):
        return self.lens, self.width

    @staticmethod
    def cell(i, j, left, f, lens, width):
        if j == 0:
            return 0, 0
        best, words = 1 << 62, 0
        used = -1
        for k in range(j - 1, -1, -1):  # the line holds words k..j-1
            used += lens[k] + 1
            if used > width:
                break
            slack = width - used
            cost = f[k] + (0 if j == len(lens) else slack * slack * slack)
            if cost < best:
                best, words = cost, j - k
        return best, words

    @staticmethod
    def back(i, j, words, lens, width):
        if j == 0:
            return i, -1
        return i, j - words


def wrap(lens, width, **opts):
    """(cost, lines as (first word, end word) pairs, in order)."""
    n = len(lens)
    res = sweep(WordWrap(lens, width), **opts)
    path = res.traceback((0, n))[::-1]  # rows (0, j, words): the first line's end first
    path = path[path[:, 1] > 0]
    return int(res.last_row[-1]), list(
        zip((path[:, 1] - path[:, 2]).tolist(), path[:, 1].tolist(), strict=True)
    )


def wrap_ref(lens, width):
    n = len(lens)
    f = [0] + [None] * n
    for j in range(1, n + 1):
        f[j] = min(
            f[k] + (0 if j == n else (width - (sum(lens[k:j]) + j - k - 1)) ** 3)
            for k in range(j)
            if sum(lens[k:j]) + j - k - 1 <= width
        )
    return f[n]


def check_wrap(lens, width, **opts):
    cost, lines = wrap(lens, width, **opts)
    assert [w for a, b in lines for w in range(a, b)] == list(range(len(lens)))
    total = 0
    for a, b in lines:
        used = sum(lens[a:b]) + b - a - 1
        assert used <= width
        total += 0 if b == len(lens) else (width - used) ** 3
    assert cost == total == wrap_ref(lens, width)


@FEW
@given(st.lists(st.integers(1, 6), max_size=30), st.integers(6, 14))
def test_wrap(lens, width):
    check_wrap(lens, width, backend="cpu")


# =============================================================================================
# 5. Shortest paths of at most k edges: layer t holds D_t(v), the least cost of a walk from s to v
#    of at most t edges; D_t(v) = min(D_{t-1}(v), min over edges u -> v of D_{t-1}(u) + w)
# =============================================================================================

INF = 1 << 60


class BellmanFord(LayeredRecurrence):
    value_dtype = np.int64
    decision_bits = 32  # the edge taken last, + 1 (0: no edge this layer)

    def __init__(self, n, edges, source, k):
        e = sorted(edges, key=lambda x: x[1])  # grouped by head: each vertex's incoming edges
        self.n, self.k = n, k
        self.tail = np.array([u for u, _, _ in e], np.int64)
        self.head = np.array([v for _, v, _ in e], np.int64)
        self.w = np.array([x for _, _, x in e], np.int64)
        self.start = np.searchsorted(self.head, np.arange(n + 1)).astype(np.int64)
        self.source = np.int64(source)

    def num_layers(self):
        return self.k + 1

    def layer_size(self, t):
        return self.n

    def data(self):
        return self.start, self.tail, self.w, self.source

    @staticmethod
    def cell(t, v, prev, start, tail, w, source):
        if t == 0:
            return (0 if v == source else INF), 0
        best, edge = prev[v], 0
        for e in range(start[v], start[v + 1]):
            u = tail[e]
            if prev[u] < INF and prev[u] + w[e] < best:
                best, edge = prev[u] + w[e], e + 1
        return best, edge

    @staticmethod
    def back(t, v, edge, start, tail, w, source):
        if t == 0:
            return -1, 0
        if edge == 0:
            return t - 1, v
        return t - 1, tail[edge - 1]


def shortest(n, edges, source, k, **opts):
    """(costs from source by walks of at most k edges, INF unreachable; function target -> edges)."""
    rec = BellmanFord(n, edges, source, k)
    res = sweep(rec, **opts)

    def walk(target):
        rows = res.traceback((k, target)).tolist()
        return [
            (int(rec.tail[e - 1]), int(rec.head[e - 1]), int(rec.w[e - 1])) for _, _, e in rows[::-1] if e
        ]

    return [int(x) for x in res.last_layer], walk


def shortest_ref(n, edges, source, k):
    d = [INF] * n
    d[source] = 0
    for _ in range(k):
        d2 = list(d)
        for u, v, w in edges:
            if d[u] < INF:
                d2[v] = min(d2[v], d[u] + w)
        d = d2
    return d


def check_shortest(n, edges, source, k, **opts):
    dist, walk = shortest(n, edges, source, k, **opts)
    assert dist == shortest_ref(n, edges, source, k)
    for v in range(n):
        if dist[v] < INF:
            path = walk(v)
            assert len(path) <= k and sum(w for _, _, w in path) == dist[v]
            here = source
            for u, x, w in path:
                assert u == here and (u, x, w) in edges
                here = x
            assert here == v


graphs = st.integers(1, 7).flatmap(
    lambda n: st.tuples(
        st.just(n),
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.integers(-3, 9)), max_size=20),
        st.integers(0, n - 1),
        st.integers(0, 6),
    )
)


@FEW
@given(graphs)
def test_shortest(g):
    check_shortest(*g, backend="cpu")


# =============================================================================================
# 6. Boolean parenthesization: the number of ways to parenthesize v0 op0 v1 op1 ... so that it is
#    true. T(i, j), F(i, j) = sums over the operator k of the ways op_k combines T/F(i, k) and
#    T/F(k + 1, j): a record cell (t, f), both counts kept for every interval.
# =============================================================================================

AND, OR, XOR = 0, 1, 2
MAX_OPERANDS = 36  # t + f = Catalan(n - 1) parenthesizations in all: Catalan(35) < 2^63


class BoolParen(IntervalRecurrence):
    value_dtype = np.dtype([("t", np.int64), ("f", np.int64)])  # ways to true, ways to false
    decision_bits = 0

    def __init__(self, expr):
        self.vals = np.array([c == "T" for c in expr[::2]], np.int64)
        self.ops = np.array(["&|^".index(c) for c in expr[1::2]], np.int64)
        if not 1 <= len(self.vals) <= MAX_OPERANDS:
            raise InputError("expr", f"1 to {MAX_OPERANDS} operands (int64 counts), got {len(self.vals)}")

    def size(self):
        return len(self.vals)

    def data(self):
        return self.vals, self.ops

    @staticmethod
    def cell(i, j, T, vals, ops):
        if i == j:
            return vals[i], 1 - vals[i]
        true = 0
        false = 0
        for k in range(i, j):
            lt, lf = T[i, k]
            rt, rf = T[k + 1, j]
            if ops[k] == AND:
                t = lt * rt
            elif ops[k] == OR:
                t = lt * rt + lt * rf + lf * rt
            else:
                t = lt * rf + lf * rt
            true += t
            false += (lt + lf) * (rt + rf) - t
        return true, false


def count_true(expr, **opts):
    rec = BoolParen(expr)
    v = sweep(rec, **opts).value(0, rec.size() - 1)
    return int(v["t"]), int(v["f"])


def count_true_ref(expr):
    vals, ops = expr[::2], expr[1::2]
    n = len(vals)
    t, f = {}, {}
    for i in range(n):
        t[i, i], f[i, i] = int(vals[i] == "T"), int(vals[i] == "F")
    for length in range(2, n + 1):
        for i in range(n - length + 1):
            j = i + length - 1
            t[i, j] = f[i, j] = 0
            for k in range(i, j):
                a, b, c, d = t[i, k], f[i, k], t[k + 1, j], f[k + 1, j]
                tt = {"&": a * c, "|": a * c + a * d + b * c, "^": a * d + b * c}[ops[k]]
                t[i, j] += tt
                f[i, j] += (a + b) * (c + d) - tt
    return t[0, n - 1], f[0, n - 1]


def exprs(max_operands):
    return (
        st.integers(1, max_operands)
        .flatmap(
            lambda n: st.tuples(
                st.text("TF", min_size=n, max_size=n), st.text("&|^", min_size=n - 1, max_size=n - 1)
            )
        )
        .map(lambda vo: "".join(v + o for v, o in zip(vo[0], vo[1] + " ", strict=True))[:-1])
    )


@FEW
@given(exprs(12))
def test_bool_paren(expr):
    assert count_true(expr, backend="cpu") == count_true_ref(expr)


def test_bool_paren_largest_is_exact():
    ops = "|^|&|" * 7  # 36 operands: counts near 2^61, past int32 and float64's 2^53
    expr = "".join(v + o for v, o in zip("TTFT" * 9, ops[:35] + " ", strict=True))[:-1]
    t, f = count_true(expr, backend="cpu")
    assert (t, f) == count_true_ref(expr) and t > 1 << 53 and f > 1 << 53
    with pytest.raises(InputError):
        BoolParen(expr + "&T")


# =============================================================================================
# 7. HMM forward algorithm: alpha(t, k) = logsumexp_j(alpha(t - 1, j) + log A[j, k]) + log B[k, o_t]
# =============================================================================================


class Forward(load_example("viterbi").Viterbi):
    """Viterbi's model and layers (examples/viterbi.py), the max over predecessors made a log-sum-exp."""

    decision_bits = 0

    @staticmethod
    def cell(t, k, prev, log_init, trans_to, log_emit, obs):
        if t == 0:
            return log_init[k] + log_emit[k, obs[0]]
        row = trans_to[k]
        top = prev[0] + row[0]
        for j in range(1, len(row)):
            top = max(top, prev[j] + row[j])
        total = 0.0
        for j in range(len(row)):
            total += math.exp(prev[j] + row[j] - top)
        return top + math.log(total) + log_emit[k, obs[t]]


def log_likelihood(log_init, log_trans, log_emit, obs, **opts):
    last = sweep(Forward(log_init, log_trans, log_emit, obs), **opts).last_layer
    top = last.max()
    return float(top + np.log(np.exp(last - top).sum()))


def log_likelihood_ref(init, trans, emit, obs):
    """Plain probabilities (no logs): fine for the short sequences of the tests."""
    n = len(init)
    alpha = [init[k] * emit[k][obs[0]] for k in range(n)]
    for o in obs[1:]:
        alpha = [sum(alpha[j] * trans[j][k] for j in range(n)) * emit[k][o] for k in range(n)]
    return math.log(sum(alpha))


def random_hmm(seed, states, symbols, steps):
    rng = np.random.default_rng(seed)

    def dist(*shape):
        p = rng.random(shape) + 0.05
        return p / p.sum(axis=-1, keepdims=True)

    return dist(states), dist(states, states), dist(states, symbols), rng.integers(0, symbols, steps)


def check_forward(seed, states, symbols, steps, **opts):
    init, trans, emit, obs = random_hmm(seed, states, symbols, steps)
    got = log_likelihood(np.log(init), np.log(trans), np.log(emit), obs, **opts)
    want = log_likelihood_ref(init.tolist(), trans.tolist(), emit.tolist(), obs.tolist())
    assert got == pytest.approx(want, rel=1e-9, abs=1e-9)


@FEW
@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.integers(1, 4), st.integers(1, 20))
def test_forward(seed, states, symbols, steps):
    check_forward(seed, states, symbols, steps, backend="cpu")


# =============================================================================================
# every DP once, tiny, in the CUDA simulator
# =============================================================================================


@SIM
def test_user_dps_in_the_simulator():
    check_lis([3, 1, 4, 1, 5, 9, 2, 6, 5, 3], backend="cuda")
    check_obst([3, 1, 4, 1, 5], [2, 0, 1, 3, 0, 1], backend="cuda")
    check_palindrome("abacbcab", backend="cuda")
    check_wrap([3, 2, 2, 5, 1, 4, 2, 3], 8, backend="cuda")
    check_shortest(4, [(0, 1, 4), (0, 2, 1), (2, 1, 1), (1, 3, 1), (2, 3, 7)], 0, 3, backend="cuda")
    assert count_true("T|F&T^F", backend="cuda") == count_true_ref("T|F&T^F")
    check_forward(1, 3, 2, 5, backend="cuda")
