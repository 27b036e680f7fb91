"""A fifth set of user DPs written from the docs alone (issue 39's last check): each the way
README.md, docs/tutorial.md and docs/architecture.md suggest, against a plain-Python reference by
hypothesis on the cpu backend, swept checked (sweep(check=True), tutorial section 8), its answer's
witness checked (a state path, a tiling's profiles, two walks, an alignment, a subsequence, a
supersequence), and one tiny case of each in the CUDA simulator.

1. Viterbi decoding of an HMM: float64 log-probabilities, a layer a time step and a cell a state
   (tutorial section 10), with the most likely state path;
2. the domino tilings of a rows x n board counted by a transfer over column profiles (layers, int64
   counts past 2^31 and 2^53, exact; at 2^63 the machine's wrap, which check=True names), with one
   tiling's profiles walked back;
3. cherry pickup: two walkers from the top-left to the bottom-right cell, right or down, a cell's
   value counted once when both stand on it; layers that are tables (section 18), cell (t, r1, r2),
   with both walks;
4. global alignment with a gap cost per position read from two arrays (data-dependent penalties,
   their prefix sums for the boundary), with the alignment;
5. the longest common subsequence of three strings (a 3-D grid, docs/grid3.md), with the
   subsequence;
6. the shortest common supersequence of two strings (symbols in registers), with the supersequence;
7. batches of 6 (section 16): a list of instances with their paths, and every query against every
   choice through sweep_many(template, queries=, choices=), values and paths.
"""

from __future__ import annotations

import math
from itertools import pairwise, product

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gpudp import ContractError, Grid3Recurrence, GridRecurrence, LayeredRecurrence, sweep, sweep_many

SIM = pytest.mark.sim
FEW = settings(max_examples=15, deadline=None)

# =============================================================================================
# 1. Viterbi: V(0, k) = pi_k + e_k(o_0), V(t, k) = max_s V(t-1, s) + A[s, k] + e_k(o_t), the
#    decision the best s (the first of equal ones); the path from the last layer's best state back.
# =============================================================================================


class Viterbi(LayeredRecurrence):
    value_dtype = np.float64
    decision_bits = 8  # the best previous state: up to 256 states

    def __init__(self, log_start, log_trans, log_emit, obs):
        self.log_start = np.asarray(log_start, np.float64)
        self.log_trans = np.ascontiguousarray(log_trans, np.float64)  # [from, to]
        self.log_emit = np.ascontiguousarray(log_emit, np.float64)  # [state, symbol]
        self.obs = np.asarray(obs, np.int64)

    def num_layers(self):
        return len(self.obs)

    def layer_size(self, t):
        return len(self.log_start)

    def data(self):
        return self.log_start, self.log_trans, self.log_emit, self.obs

    @staticmethod
    def cell(t, k, prev, log_start, log_trans, log_emit, obs):
        if t == 0:
            return log_start[k] + log_emit[k, obs[0]], 0
        best, arg = prev[0] + log_trans[0, k], 0
        for s in range(1, len(log_start)):
            v = prev[s] + log_trans[s, k]
            if v > best:
                best, arg = v, s
        return best + log_emit[k, obs[t]], arg

    @staticmethod
    def back(t, k, s, log_start, log_trans, log_emit, obs):
        return t - 1, s  # from layer 0, t - 1 = -1 ends the walk


def viterbi(log_start, log_trans, log_emit, obs, **opts):
    """(log-probability of the most likely path, the path's states in time order)."""
    if len(obs) == 0:
        return 0.0, []
    res = sweep(Viterbi(log_start, log_trans, log_emit, obs), **opts)
    last = int(np.argmax(res.last_layer))  # the first of equal bests, as the reference
    path = [k for _, k, _ in res.traceback((len(obs) - 1, last)).tolist()][::-1]
    return float(res.last_layer[last]), path


def viterbi_ref(log_start, log_trans, log_emit, obs):
    n = len(log_start)
    if not obs:
        return 0.0
    V = [log_start[k] + log_emit[k][obs[0]] for k in range(n)]
    for o in obs[1:]:
        W = []
        for k in range(n):
            best = V[0] + log_trans[0][k]
            for s in range(1, n):
                best = max(best, V[s] + log_trans[s][k])
            W.append(best + log_emit[k][o])
        V = W
    return max(V)


def path_log_prob(log_start, log_trans, log_emit, obs, path):
    """The path's log-probability, added in the order the recurrence adds it."""
    v = log_start[path[0]] + log_emit[path[0]][obs[0]]
    for (s, k), o in zip(pairwise(path), obs[1:], strict=True):
        v = v + log_trans[s][k] + log_emit[k][o]
    return v


def check_viterbi(log_start, log_trans, log_emit, obs, **opts):
    value, path = viterbi(log_start, log_trans, log_emit, obs, **opts)
    assert value == viterbi_ref(log_start, log_trans, log_emit, obs)  # bit for bit
    assert len(path) == len(obs)
    if obs:
        assert path_log_prob(log_start, log_trans, log_emit, obs, path) == value


def log_probs(draw, rows, cols):
    """A table of log-probabilities: each row a distribution, some entries impossible (-inf)."""
    table = []
    for _ in range(rows):
        weights = draw(st.lists(st.sampled_from([0, 0, 1, 2, 3, 7, 1000]), min_size=cols, max_size=cols))
        total = sum(weights)
        table.append(
            [math.log(w / total) if w else -math.inf for w in weights] if total else [-math.inf] * cols
        )
    return table


@st.composite
def hmms(draw):
    n, symbols = draw(st.integers(1, 6)), draw(st.integers(1, 4))
    start = log_probs(draw, 1, n)[0]
    obs = draw(st.lists(st.integers(0, symbols - 1), max_size=12))
    return start, log_probs(draw, n, n), log_probs(draw, n, symbols), obs


@FEW
@given(hmms())
def test_viterbi(hmm):
    check_viterbi(*hmm, backend="cpu", check=True)


def test_viterbi_of_256_and_300_states():
    """256 states fit 8 decision bits; a best predecessor past 255 stops the sweep, never truncated."""
    rng = np.random.default_rng(5)
    n = 256
    start, trans, emit = (np.log(rng.dirichlet(np.ones(c), r)) for r, c in ((1, n), (n, n), (n, 3)))
    obs = rng.integers(0, 3, 20).tolist()
    check_viterbi(start[0], trans, emit, obs, backend="cpu")
    start = np.full(300, -9.0)
    start[299] = -0.1  # state 299 is every cell's best predecessor at t = 1: a decision of 9 bits
    with pytest.raises(ContractError, match="299"):
        viterbi(start, np.zeros((300, 300)), np.zeros((300, 1)), [0, 0], backend="cpu")


# =============================================================================================
# 2. Domino tilings of a rows x n board: layer t a column boundary, cell p a profile (the rows of
#    column t already covered by dominoes lying across from column t - 1); F(0, p) = [p == 0],
#    F(t, p) = sum over q of F(t-1, q) fits[q, p], the answer F(n, 0). The decision is the first q
#    with a tiling (fits[q, p] and F(t-1, q) > 0): walked back, one tiling's profiles.
# =============================================================================================


class Tilings(LayeredRecurrence):
    value_dtype = np.int64
    decision_bits = 6  # a profile: boards of up to 6 rows

    def __init__(self, rows, n, value_dtype=np.int64):
        self.fits = profile_fits(rows)
        self.n = n
        self.value_dtype = value_dtype  # the instance's own (tutorial section 2)

    def num_layers(self):
        return self.n + 1

    def layer_size(self, t):
        return len(self.fits)

    def data(self):
        return (self.fits,)

    @staticmethod
    def cell(t, p, prev, fits):
        if t == 0:
            return (1 if p == 0 else 0), 0
        total, first = 0, -1
        for q in range(fits.shape[0]):
            if fits[q, p]:
                total += prev[q]
                if first < 0 and prev[q] > 0:
                    first = q
        return total, max(first, 0)

    @staticmethod
    def back(t, p, q, fits):
        return t - 1, q  # layer 0: the walk ends


def profile_fits(rows):
    """fits[q, p] = 1 where a column entered with profile q can be filled leaving profile p: q and p
    disjoint, the rows in neither covered by vertical dominoes (runs of even length)."""
    fits = np.zeros((1 << rows, 1 << rows), np.int64)
    for q, p in product(range(1 << rows), repeat=2):
        if q & p:
            continue
        free, run = ~(q | p), 0
        for r in range(rows + 1):
            if r < rows and free >> r & 1:
                run += 1
            elif run % 2:
                break
            else:
                run = 0
        else:
            fits[q, p] = 1
    return fits


def tilings(rows, n, **opts):
    """(the count, one tiling's profiles F(0, .) .. F(n, .) from the walk back: None without a
    traceback)."""
    rec = Tilings(rows, n, opts.pop("value_dtype", np.int64))
    res = sweep(rec, **opts)
    if not opts.get("traceback", True):
        return int(res.last_layer[0]), None
    profiles = [p for _, p, _ in res.traceback((n, 0)).tolist()][::-1]
    return int(res.last_layer[0]), profiles


def tilings_ref(rows, n):
    """Python integers, exact at any size: a column filled a cell at a time (no profile table)."""

    def fill(col, r, mask, nxt, out):
        if r == rows:
            out[nxt] = out.get(nxt, 0) + col
            return
        if mask >> r & 1:
            fill(col, r + 1, mask, nxt, out)
            return
        fill(col, r + 1, mask, nxt | 1 << r, out)  # a domino across into the next column
        if r + 1 < rows and not mask >> (r + 1) & 1:
            fill(col, r + 2, mask, nxt, out)  # a vertical domino

    ways = {0: 1}
    for _ in range(n):
        out = {}
        for mask, count in ways.items():
            fill(count, 0, mask, 0, out)
        ways = out
    return ways.get(0, 0)


def check_tilings(rows, n, **opts):
    count, profiles = tilings(rows, n, **opts)
    assert count == tilings_ref(rows, n)
    if count:  # the walk: profile 0 at both ends, every step a fitting one
        fits = profile_fits(rows)
        assert len(profiles) == n + 1 and profiles[0] == profiles[-1] == 0
        assert all(fits[q, p] for q, p in pairwise(profiles))


@FEW
@given(st.integers(1, 6), st.integers(0, 27))  # 6 x 28 passes 2^63
@example(4, 0)  # one tiling of the empty board
@example(3, 5)  # an odd area: none
@example(6, 27)  # the largest 6-row count below 2^63
def test_tilings(rows, n):
    check_tilings(rows, n, backend="cpu", check=True)


def test_tiling_counts_past_2_31_and_2_53():
    """Counts past 2^31 and 2^53 stay exact in int64 (a float64 would round them)."""
    for rows, n in ((2, 50), (4, 30), (6, 26), (2, 90)):
        ref = tilings_ref(rows, n)
        assert ref > 1 << 31
        check_tilings(rows, n, backend="cpu", check=True)
    assert tilings_ref(6, 26) > 1 << 53 and tilings_ref(2, 90) > 1 << 53


def test_tiling_counts_at_2_63_wrap_and_the_check_names_the_cell():
    """Past 2^63 the int64 sum wraps as the docs say (machine arithmetic); check=True names the first
    cell whose sum overflows. int32 the same past 2^31."""
    ref = tilings_ref(2, 100)  # Fibonacci's 101st: past 2^63
    assert ref >= 1 << 63
    count, _ = tilings(2, 100, backend="cpu", traceback=False)
    assert count == (ref + (1 << 63)) % (1 << 64) - (1 << 63)
    with pytest.raises(ContractError, match=r"overflow"):
        tilings(2, 100, backend="cpu", check=True)
    with pytest.raises(ContractError, match=r"overflow"):
        tilings(2, 50, backend="cpu", check=True, value_dtype=np.int32)


# =============================================================================================
# 3. Cherry pickup: C(t, r1, r2) = the most two walkers collect in t steps right or down from (0,
#    0), walker 1 at (r1, t - r1), walker 2 at (r2, t - r2), a cell counted once; a 2-D layer a step,
#    the decision bit 0: walker 1 came from above, bit 1: walker 2 did.
# =============================================================================================

NEG = -(1 << 62)  # no walker stands there (values stay within +-2^40 over grids of 10 x 10)


class CherryPickup(LayeredRecurrence):
    value_dtype = np.int64
    decision_bits = 2

    def __init__(self, grid):
        self.grid = np.ascontiguousarray(grid, np.int64)

    def num_layers(self):
        n, m = self.grid.shape
        return n + m - 1 if n and m else 0

    def layer_shape(self, t):
        n = self.grid.shape[0]
        return n, n

    def data(self):
        return (self.grid,)

    @staticmethod
    def cell(t, r1, r2, prev, grid):
        m = grid.shape[1]
        c1, c2 = t - r1, t - r2
        if c1 < 0 or c1 >= m or c2 < 0 or c2 >= m:
            return NEG, 0
        gain = grid[r1, c1] + (grid[r2, c2] if r2 != r1 else 0)
        if t == 0:
            return gain, 0
        best, how = NEG, 0
        for d in range(4):
            p1, p2 = r1 - (d & 1), r2 - (d >> 1)
            if p1 >= 0 and p2 >= 0 and prev[p1, p2] > best:
                best, how = prev[p1, p2], d
        return best + gain, how

    @staticmethod
    def back(t, r1, r2, d, grid):
        if t == 0:
            return -1, 0, 0
        return t - 1, r1 - (d & 1), r2 - (d >> 1)


def cherry_pickup(grid, **opts):
    """(the most collected, walker 1's cells, walker 2's cells), each walk from (0, 0)."""
    grid = np.asarray(grid, np.int64)
    n, m = grid.shape
    res = sweep(CherryPickup(grid), **opts)
    rows = res.traceback((n + m - 2, n - 1, n - 1)).tolist()[::-1]
    walk1 = [(r1, t - r1) for t, r1, _, _ in rows]
    walk2 = [(r2, t - r2) for t, _, r2, _ in rows]
    return int(res.last_layer[n - 1, n - 1]), walk1, walk2


def cherry_ref(grid):
    n, m = len(grid), len(grid[0])
    C = {(0, 0): grid[0][0]}
    for t in range(1, n + m - 1):
        D = {}
        for r1, r2 in product(range(n), repeat=2):
            if not (0 <= t - r1 < m and 0 <= t - r2 < m):
                continue
            prev = [C[q] for q in product((r1, r1 - 1), (r2, r2 - 1)) if q in C]
            D[r1, r2] = max(prev) + grid[r1][t - r1] + (grid[r2][t - r2] if r1 != r2 else 0)
        C = D
    return C[n - 1, n - 1]


def check_cherries(grid, **opts):
    value, walk1, walk2 = cherry_pickup(grid, **opts)
    n, m = len(grid), len(grid[0])
    assert value == cherry_ref(grid)
    for walk in (walk1, walk2):
        assert walk[0] == (0, 0) and walk[-1] == (n - 1, m - 1)
        assert all((r2 - r, c2 - c) in ((1, 0), (0, 1)) for (r, c), (r2, c2) in pairwise(walk))
    assert sum(grid[r][c] for r, c in set(walk1) | set(walk2)) == value


@FEW
@given(st.integers(1, 7), st.integers(1, 7), st.sampled_from([1, 10, 1 << 40]), st.data())
def test_cherry_pickup(n, m, size, data):
    grid = data.draw(
        st.lists(st.lists(st.integers(-size, size), min_size=m, max_size=m), min_size=n, max_size=n)
    )
    check_cherries(grid, backend="cpu", check=True)


# =============================================================================================
# 4. Alignment with a gap cost per position: D(i, j) = max(D(i-1, j-1) + s(a_i, b_j),
#    D(i-1, j) - del[i], D(i, j-1) - ins[j]), D(-1, j) = -(ins[0] + .. + ins[j]),
#    D(i, -1) = -(del[0] + .. + del[i]): the prefix sums as data, read by boundary.
# =============================================================================================

DIAG, UP, LEFT = 0, 1, 2


class PositionGapAlign(GridRecurrence):
    value_dtype = np.int64
    decision_bits = 2
    offsets = ((-1, -1), (-1, 0), (0, -1))  # diag, up, left: cell() gets them in this order

    def __init__(self, a, b, dels, ins, match=2, mismatch=-1):
        self.a = np.frombuffer(a.encode(), np.uint8)
        self.b = np.frombuffer(b.encode(), np.uint8)
        self.dels = np.asarray(dels, np.int64)  # deleting a[i] (a[i] against a gap) costs dels[i]
        self.ins = np.asarray(ins, np.int64)  # inserting b[j] costs ins[j]
        self.pre_dels = np.concatenate(([0], np.cumsum(self.dels))).astype(np.int64)
        self.pre_ins = np.concatenate(([0], np.cumsum(self.ins))).astype(np.int64)
        self.match, self.mismatch = np.int64(match), np.int64(mismatch)  # scalars (section 17)

    def shape(self):
        return len(self.a), len(self.b)

    def data(self):
        return self.a, self.b, self.dels, self.ins, self.pre_dels, self.pre_ins, self.match, self.mismatch

    @staticmethod
    def cell(i, j, diag, up, left, a, b, dels, ins, pre_dels, pre_ins, match, mismatch):
        best, how = diag + (match if a[i] == b[j] else mismatch), DIAG
        if up - dels[i] > best:
            best, how = up - dels[i], UP
        if left - ins[j] > best:
            best, how = left - ins[j], LEFT
        return best, how

    @staticmethod
    def boundary(i, j, a, b, dels, ins, pre_dels, pre_ins, match, mismatch):
        if i == -1:
            return -pre_ins[j + 1]  # b[:j + 1] against gaps; (-1, -1): 0
        return -pre_dels[i + 1]

    @staticmethod
    def back(i, j, how, a, b, dels, ins, pre_dels, pre_ins, match, mismatch):
        if how == DIAG:
            return i - 1, j - 1
        if how == UP:
            return i - 1, j
        return i, j - 1


def gap_align(a, b, dels, ins, match=2, mismatch=-1, **opts):
    """(score, the two rows of the alignment, "-" for a gap)."""
    rec = PositionGapAlign(a, b, dels, ins, match, mismatch)
    n, m = len(a), len(b)
    if not n or not m:
        return int(PositionGapAlign.boundary(n - 1, m - 1, *rec.data())), a + "-" * m, "-" * n + b
    res = sweep(rec, **opts)
    top, bottom = [], []
    path = res.traceback((n - 1, m - 1))
    for i, j, how in path.tolist():
        top.append(a[i] if how != LEFT else "-")
        bottom.append(b[j] if how != UP else "-")
    i, j = PositionGapAlign.back(*path[-1], *rec.data())  # where the walk left the grid
    top += [a[k] for k in range(i, -1, -1)] + ["-"] * (j + 1)
    bottom += ["-"] * (i + 1) + [b[k] for k in range(j, -1, -1)]
    return int(res.last_row[-1]), "".join(top[::-1]), "".join(bottom[::-1])


def gap_align_ref(a, b, dels, ins, match=2, mismatch=-1):
    n, m = len(a), len(b)
    D = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        D[i][0] = D[i - 1][0] - dels[i - 1]
    for j in range(1, m + 1):
        D[0][j] = D[0][j - 1] - ins[j - 1]
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            s = match if a[i - 1] == b[j - 1] else mismatch
            D[i][j] = max(D[i - 1][j - 1] + s, D[i - 1][j] - dels[i - 1], D[i][j - 1] - ins[j - 1])
    return D[n][m]


def alignment_score(top, bottom, dels, ins, match, mismatch):
    score, i, j = 0, 0, 0
    for x, y in zip(top, bottom, strict=True):
        if y == "-":
            score, i = score - dels[i], i + 1
        elif x == "-":
            score, j = score - ins[j], j + 1
        else:
            score, i, j = score + (match if x == y else mismatch), i + 1, j + 1
    return score


def check_gap_align(a, b, dels, ins, match=2, mismatch=-1, **opts):
    score, top, bottom = gap_align(a, b, dels, ins, match, mismatch, **opts)
    assert score == gap_align_ref(a, b, dels, ins, match, mismatch)
    assert top.replace("-", "") == a and bottom.replace("-", "") == b
    assert not any(x == y == "-" for x, y in zip(top, bottom, strict=True))
    assert alignment_score(top, bottom, dels, ins, match, mismatch) == score


@st.composite
def gapped_pairs(draw):
    size = draw(st.sampled_from([1, 5, 1 << 40]))
    a, b = draw(st.text("ACG", max_size=12)), draw(st.text("ACG", max_size=12))
    costs = st.integers(-size, size)
    dels = draw(st.lists(costs, min_size=len(a), max_size=len(a)))
    ins = draw(st.lists(costs, min_size=len(b), max_size=len(b)))
    return a, b, dels, ins, draw(st.integers(-size, size)), draw(st.integers(-size, size))


@FEW
@given(gapped_pairs())
@example(("GATTACA", "GCATGCT", [1, 1, 9, 9, 1, 1, 1], [0, 0, 0, 5, 5, 0, 0], 2, -1))
def test_position_gap_alignment(case):
    check_gap_align(*case, backend="cpu", check=True)


# =============================================================================================
# 5. The LCS of three strings: L(i, j, k) = L(i-1, j-1, k-1) + 1 where a_i = b_j = c_k, else the best
#    of dropping one letter; 0 outside the cube (the default boundary).
# =============================================================================================

ALL3, DROP_A, DROP_B, DROP_C = 0, 1, 2, 3


class LCS3(Grid3Recurrence):
    value_dtype = np.int32
    decision_bits = 2
    offsets = ((-1, -1, -1), (-1, 0, 0), (0, -1, 0), (0, 0, -1))

    def __init__(self, a, b, c):
        self.seqs = tuple(np.array([ord(x) for x in s], np.int32) for s in (a, b, c))

    def shape(self):
        return tuple(len(s) for s in self.seqs)

    def data(self):
        return self.seqs

    @staticmethod
    def cell(i, j, k, all3, drop_a, drop_b, drop_c, a, b, c):
        if a[i] == b[j] and a[i] == c[k]:
            return all3 + 1, ALL3
        best, how = drop_a, DROP_A
        if drop_b > best:
            best, how = drop_b, DROP_B
        if drop_c > best:
            best, how = drop_c, DROP_C
        return best, how

    @staticmethod
    def back(i, j, k, how, a, b, c):
        if how == ALL3:
            return i - 1, j - 1, k - 1
        if how == DROP_A:
            return i - 1, j, k
        if how == DROP_B:
            return i, j - 1, k
        return i, j, k - 1


def lcs3(a, b, c, **opts):
    res = sweep(LCS3(a, b, c), **opts)
    if res.last_value is None:
        return 0, ""
    common = "".join(a[i] for i, _, _, how in res.traceback().tolist() if how == ALL3)
    return int(res.last_value), common[::-1]


def lcs3_ref(a, b, c):
    n1, n2, n3 = len(a), len(b), len(c)
    L = [[[0] * (n3 + 1) for _ in range(n2 + 1)] for _ in range(n1 + 1)]
    for i, j, k in product(range(1, n1 + 1), range(1, n2 + 1), range(1, n3 + 1)):
        if a[i - 1] == b[j - 1] == c[k - 1]:
            L[i][j][k] = L[i - 1][j - 1][k - 1] + 1
        else:
            L[i][j][k] = max(L[i - 1][j][k], L[i][j - 1][k], L[i][j][k - 1])
    return L[n1][n2][n3]


def is_subsequence(s, t):
    it = iter(t)
    return all(x in it for x in s)


def check_lcs3(a, b, c, **opts):
    length, common = lcs3(a, b, c, **opts)
    assert length == lcs3_ref(a, b, c) == len(common)
    assert all(is_subsequence(common, s) for s in (a, b, c))


@FEW
@given(st.text("ABC", max_size=9), st.text("ABC", max_size=9), st.text("ABCD", max_size=9))
def test_lcs3(a, b, c):
    check_lcs3(a, b, c, backend="cpu", check=True)


# =============================================================================================
# 6. The shortest common supersequence: S(i, j) = S(i-1, j-1) + 1 where a_i = b_j, else
#    1 + min(S(i-1, j), S(i, j-1)); S(-1, j) = j + 1, S(i, -1) = i + 1; the letters in the walk's
#    order, the leftover prefix where it leaves the grid.
# =============================================================================================

BOTH, TAKE_A, TAKE_B = 0, 1, 2


class SCS(GridRecurrence):
    value_dtype = np.int32
    decision_bits = 2
    offsets = ((-1, -1), (-1, 0), (0, -1))
    symbols = True  # cell(i, j, diag, up, left, ri, cj): ri = a[i], cj = b[j]

    def __init__(self, a="", b=""):
        self.a = np.frombuffer(a.encode("ascii"), np.uint8)
        self.b = np.frombuffer(b.encode("ascii"), np.uint8)

    def shape(self):
        return len(self.a), len(self.b)

    def row_symbols(self):
        return self.a

    def col_symbols(self):
        return self.b

    @staticmethod
    def cell(i, j, diag, up, left, ri, cj):
        if ri == cj:
            return diag + 1, BOTH
        if up <= left:
            return up + 1, TAKE_A
        return left + 1, TAKE_B

    @staticmethod
    def boundary(i, j):
        return i + j + 2  # (-1, j): b[:j + 1]; (i, -1): a[:i + 1]; (-1, -1): 0

    @staticmethod
    def back(i, j, how):
        if how == BOTH:
            return i - 1, j - 1
        if how == TAKE_A:
            return i - 1, j
        return i, j - 1


def supersequence(a, b, path, exit_):
    """The supersequence a walk spells: the walk's letters backwards, then the prefix left over."""
    out = [b[j] if how == TAKE_B else a[i] for i, j, how in path]
    i, j = exit_
    out += [a[k] for k in range(i, -1, -1)] + [b[k] for k in range(j, -1, -1)]
    return "".join(out[::-1])


def scs(a, b, **opts):
    n, m = len(a), len(b)
    if not n or not m:
        return n + m, a + b
    res = sweep(SCS(a, b), **opts)
    path = res.traceback((n - 1, m - 1))
    return int(res.last_row[-1]), supersequence(a, b, path.tolist(), SCS.back(*path[-1]))


def scs_ref(a, b):
    n, m = len(a), len(b)
    S = [[i + j for j in range(m + 1)] for i in range(n + 1)]
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            S[i][j] = S[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1] else 1 + min(S[i - 1][j], S[i][j - 1])
    return S[n][m]


def check_scs_answer(a, b, length, sup):
    assert length == scs_ref(a, b) == len(sup)
    assert is_subsequence(a, sup) and is_subsequence(b, sup)


@FEW
@given(st.text("AB", max_size=20), st.text("ABC", max_size=20))
@example("", "")
def test_scs(a, b):
    check_scs_answer(a, b, *scs(a, b, backend="cpu", check=True))


# =============================================================================================
# 7. Batches of 6 (section 16): a list of instances, values and paths; every query against every
#    choice from two lists (the template's class over the pairs), values and paths.
# =============================================================================================


def scs_many(pairs, traceback=True, **opts):
    """[(length, supersequence or None without a traceback)] of each pair."""
    return answers(pairs, sweep_many([SCS(a, b) for a, b in pairs], traceback=traceback, **opts), traceback)


def scs_cross(queries, choices, traceback=True, **opts):
    batch = sweep_many(SCS(), queries=queries, choices=choices, traceback=traceback, **opts)
    return answers(list(product(queries, choices)), batch, traceback)


def answers(pairs, batch, traceback):
    if not traceback:  # values only: from the batch's arrays
        return [
            (len(a) + len(b) if v is None else v, None) for (a, b), v in zip(pairs, batch.values, strict=True)
        ]
    out = []
    for (a, b), item in zip(pairs, batch, strict=True):
        if item.value is None:  # a grid without cells
            out.append((len(a) + len(b), a + b))
        else:
            out.append((int(item.value), supersequence(a, b, item.path.tolist(), item.exit)))
    return out


def check_scs_batch(pairs, got):
    for (a, b), (length, sup) in zip(pairs, got, strict=True):
        if sup is None:
            assert length == scs_ref(a, b)
        else:
            check_scs_answer(a, b, length, sup)


texts = st.text("ACGT", max_size=14)


@FEW
@given(st.lists(st.tuples(texts, texts), max_size=8), st.booleans())
def test_scs_many(pairs, traceback):
    check_scs_batch(pairs, scs_many(pairs, traceback, backend="cpu", check=True))


@FEW
@given(st.lists(texts, min_size=1, max_size=4), st.lists(texts, min_size=1, max_size=4), st.booleans())
def test_scs_cross(queries, choices, traceback):
    got = scs_cross(queries, choices, traceback, backend="cpu", check=True)
    check_scs_batch(list(product(queries, choices)), got)


# =============================================================================================
# every DP once, tiny, in the CUDA simulator
# =============================================================================================


@SIM
def test_user_dps5_in_the_simulator():
    lg = math.log
    start, trans = [lg(0.6), lg(0.4)], [[lg(0.7), lg(0.3)], [lg(0.4), lg(0.6)]]
    emit = [[lg(0.5), lg(0.4), lg(0.1)], [lg(0.1), lg(0.3), lg(0.6)]]
    check_viterbi(start, trans, emit, [0, 1, 2, 2, 0], backend="cuda")
    check_tilings(3, 8, backend="cuda")
    check_cherries([[3, -1, 2], [1 << 40, 5, -7], [0, 4, 1]], backend="cuda")
    check_gap_align("GATTA", "GCTA", [1, 3, 1, 1, 2], [2, 0, 2, 1], backend="cuda")
    check_lcs3("ABCAB", "BACB", "CABB", backend="cuda")
    check_scs_answer("ABAC", "CAB", *scs("ABAC", "CAB", backend="cuda"))
    pairs = [("GATT", "GCT"), ("", "AC"), ("A", "A")]
    check_scs_batch(pairs, scs_many(pairs, backend="cuda"))
    check_scs_batch(
        list(product(["AC", "G"], ["CA", "GG"])), scs_cross(["AC", "G"], ["CA", "GG"], backend="cuda")
    )
