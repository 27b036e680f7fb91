"""The fifth set of user DPs (tests/test_user_dps5.py, written from the docs alone) against a plain
one-thread ``@njit`` loop of the same DP, each with its answer (the loops keep a byte a decision
and walk it back), values compared:

    NUMBA_NUM_THREADS=1 python tools/userdps5_bench.py [--only viterbi,tilings,...] [--repeat 3]

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
U = module(Path(sys.path[-1]) / "test_user_dps5.py")
NEG = U.NEG


@numba.njit(cache=True)
def viterbi_loop(log_start, log_trans, log_emit, obs):
    """The best log-probability and the path's first state (two layers of values, a byte a
    decision, walked back)."""
    n, T = len(log_start), len(obs)
    prev, cur = np.empty(n), np.empty(n)
    how = np.zeros((T, n), np.uint8)
    for k in range(n):
        prev[k] = log_start[k] + log_emit[k, obs[0]]
    for t in range(1, T):
        for k in range(n):
            best, arg = prev[0] + log_trans[0, k], 0
            for s in range(1, n):
                v = prev[s] + log_trans[s, k]
                if v > best:
                    best, arg = v, s
            cur[k], how[t, k] = best + log_emit[k, obs[t]], arg
        prev, cur = cur, prev
    k = np.argmax(prev)
    value = prev[k]
    for t in range(T - 1, 0, -1):
        k = how[t, k]
    return value, k


@numba.njit(cache=True)
def tilings_loop(fits, n):
    """The count (int64, wrapping as the sweep's does) and the number of profiles walked back."""
    P = fits.shape[0]
    prev, cur = np.zeros(P, np.int64), np.zeros(P, np.int64)
    how = np.zeros((n + 1, P), np.uint8)
    prev[0] = 1
    for t in range(1, n + 1):
        for p in range(P):
            total, first = 0, -1
            for q in range(P):
                if fits[q, p]:
                    total += prev[q]
                    if first < 0 and prev[q] > 0:
                        first = q
            cur[p], how[t, p] = total, max(first, 0)
        prev, cur = cur, prev
    p, steps = 0, 0
    for t in range(n, 0, -1):
        p, steps = how[t, p], steps + 1
    return prev[0], steps


@numba.njit(cache=True)
def cherry_loop(grid):
    """The most collected and walker 1's first row off the top (layers of n x n, walked back)."""
    n, m = grid.shape
    L = n + m - 1
    prev, cur = np.full((n, n), NEG, np.int64), np.full((n, n), NEG, np.int64)
    how = np.zeros((L, n, n), np.uint8)
    prev[0, 0] = grid[0, 0]
    for t in range(1, L):
        for r1 in range(n):
            for r2 in range(n):
                c1, c2 = t - r1, t - r2
                if c1 < 0 or c1 >= m or c2 < 0 or c2 >= m:
                    cur[r1, r2] = NEG
                    continue
                best, h = NEG, 0
                for d in range(4):
                    p1, p2 = r1 - (d & 1), r2 - (d >> 1)
                    if p1 >= 0 and p2 >= 0 and prev[p1, p2] > best:
                        best, h = prev[p1, p2], d
                gain = grid[r1, c1] + (grid[r2, c2] if r2 != r1 else 0)
                cur[r1, r2], how[t, r1, r2] = best + gain, h
        prev, cur = cur, prev
    r1, r2 = n - 1, n - 1
    for t in range(L - 1, 0, -1):
        d = how[t, r1, r2]
        r1, r2 = r1 - (d & 1), r2 - (d >> 1)
    return prev[n - 1, n - 1], r1


@numba.njit(cache=True)
def gap_align_loop(a, b, dels, ins, match, mismatch):
    n, m = len(a), len(b)
    prev, cur = np.zeros(m + 1, np.int64), np.zeros(m + 1, np.int64)
    how = np.zeros((n, m), np.uint8)
    for j in range(1, m + 1):
        prev[j] = prev[j - 1] - ins[j - 1]
    for i in range(1, n + 1):
        cur[0] = prev[0] - dels[i - 1]
        for j in range(1, m + 1):
            best, h = prev[j - 1] + (match if a[i - 1] == b[j - 1] else mismatch), 0
            if prev[j] - dels[i - 1] > best:
                best, h = prev[j] - dels[i - 1], 1
            if cur[j - 1] - ins[j - 1] > best:
                best, h = cur[j - 1] - ins[j - 1], 2
            cur[j], how[i - 1, j - 1] = best, h
        prev, cur = cur, prev
    return prev[m], walk(how, n, m, -1)


@numba.njit(cache=True)
def scs_loop(a, b):
    n, m = len(a), len(b)
    prev, cur = np.arange(m + 1).astype(np.int32), np.zeros(m + 1, np.int32)
    how = np.zeros((n, m), np.uint8)
    for i in range(1, n + 1):
        cur[0] = i
        for j in range(1, m + 1):
            if a[i - 1] == b[j - 1]:
                cur[j], how[i - 1, j - 1] = prev[j - 1] + 1, 0
            elif prev[j] <= cur[j - 1]:
                cur[j], how[i - 1, j - 1] = prev[j] + 1, 1
            else:
                cur[j], how[i - 1, j - 1] = cur[j - 1] + 1, 2
        prev, cur = cur, prev
    return prev[m], walk(how, n, m, -1)


@numba.njit(cache=True)
def scs_values(a, b):
    m = len(b)
    prev, cur = np.arange(m + 1).astype(np.int32), np.zeros(m + 1, np.int32)
    for i in range(1, len(a) + 1):
        cur[0] = i
        for j in range(1, m + 1):
            if a[i - 1] == b[j - 1]:
                cur[j] = prev[j - 1] + 1
            else:
                cur[j] = min(prev[j], cur[j - 1]) + 1
        prev, cur = cur, prev
    return prev[m]


@numba.njit(cache=True)
def scs_many_loop(a, aoff, b, boff, paths):
    """Each pair's length, and with ``paths`` its walk's steps (a byte a decision)."""
    out = np.empty(len(aoff) - 1, np.int64)
    for k in range(len(out)):
        x, y = a[aoff[k] : aoff[k + 1]], b[boff[k] : boff[k + 1]]
        out[k] = scs_loop(x, y)[0] if paths else scs_values(x, y)
    return out


@numba.njit(cache=True)
def lcs3_loop(a, b, c):
    n1, n2, n3 = len(a), len(b), len(c)
    L = np.zeros((2, n2 + 1, n3 + 1), np.int32)
    how = np.zeros((n1, n2, n3), np.uint8)
    for i in range(1, n1 + 1):
        cur, pre = L[i % 2], L[(i - 1) % 2]
        for j in range(1, n2 + 1):
            for k in range(1, n3 + 1):
                if a[i - 1] == b[j - 1] and a[i - 1] == c[k - 1]:
                    cur[j, k], h = pre[j - 1, k - 1] + 1, 0
                else:
                    best, h = pre[j, k], 1
                    if cur[j - 1, k] > best:
                        best, h = cur[j - 1, k], 2
                    if cur[j, k - 1] > best:
                        best, h = cur[j, k - 1], 3
                    cur[j, k] = best
                how[i - 1, j - 1, k - 1] = h
    i, j, k, length = n1 - 1, n2 - 1, n3 - 1, 0
    while i >= 0 and j >= 0 and k >= 0:
        h = how[i, j, k]
        if h == 0:
            i, j, k, length = i - 1, j - 1, k - 1, length + 1
        elif h == 1:
            i -= 1
        elif h == 2:
            j -= 1
        else:
            k -= 1
    return L[n1 % 2, n2, n3], length


def packed(seqs):
    return np.concatenate(seqs), np.concatenate(([0], np.cumsum([len(s) for s in seqs])))


def codes(s):
    return np.frombuffer(s.encode(), np.uint8)


class SelectSCS(U.SCS):
    """The test's supersequence with its cell's choices as conditional expressions, not a return a
    branch (the form the tutorial's section 3 advises): the same values and decisions."""

    @staticmethod
    def cell(i, j, diag, up, left, ri, cj):
        same = ri == cj
        best = diag + 1 if same else min(up, left) + 1
        how = U.BOTH if same else (U.TAKE_A if up <= left else U.TAKE_B)
        return best, how


def batch_call(pairs, paths, cls=U.SCS):
    """sweep_many over the pairs: the lengths, and with paths every item's path read."""

    def call():
        batch = U.sweep_many([cls(a, b) for a, b in pairs], traceback=paths, backend="cpu")
        if paths:
            return [(int(item.value), len(item.path)) for item in batch]
        return batch.values

    return call


def cases(rng):
    """(name, size, gpudp call, loop call, the two answers compared)."""
    n, T = 96, 30_000
    start, trans, emit = (np.log(rng.dirichlet(np.ones(c), r)) for r, c in ((1, n), (n, n), (n, 4)))
    obs = rng.integers(0, 4, T)
    yield (
        "Viterbi + path",
        f"{n} states, {T:,} steps",
        lambda: U.viterbi(start[0], trans, emit, obs, backend="cpu"),
        lambda: viterbi_loop(start[0], trans, emit, obs),
        "value",
    )
    fits = U.profile_fits(6)
    yield (
        "domino tilings + a tiling",
        "6 rows, 100,000 columns (int64, wraps)",
        lambda: U.tilings(6, 100_000, backend="cpu"),
        lambda: tilings_loop(fits, 100_000),
        "value",
    )
    grid = rng.integers(-1000, 1000, (400, 400))
    yield (
        "cherry pickup + both walks",
        "400 x 400 (799 layers of 400 x 400)",
        lambda: U.cherry_pickup(grid, backend="cpu"),
        lambda: cherry_loop(grid),
        "value",
    )
    a, b = "".join(rng.choice(list("ACGT"), 10_000)), "".join(rng.choice(list("ACGT"), 10_000))
    dels, ins = rng.integers(0, 10, 10_000), rng.integers(0, 10, 10_000)
    yield (
        "position gap costs + alignment",
        "10,000 x 10,000",
        lambda: U.gap_align(a, b, dels, ins, backend="cpu"),
        lambda: gap_align_loop(codes(a), codes(b), dels, ins, 2, -1),
        "value",
    )
    s3 = ["".join(rng.choice(list("ACGT"), 450)) for _ in range(3)]
    yield (
        "LCS of three + subsequence",
        "450 x 450 x 450",
        lambda: U.lcs3(*s3, backend="cpu"),
        lambda: lcs3_loop(*(codes(s) for s in s3)),
        "value",
    )
    yield (
        "shortest common supersequence + it",
        "10,000 x 10,000",
        lambda: U.scs(a, b, backend="cpu"),
        lambda: scs_loop(codes(a), codes(b)),
        "value",
    )
    pairs = [
        (
            "".join(rng.choice(list("ACGT"), rng.integers(100, 151))),
            "".join(rng.choice(list("ACGT"), rng.integers(100, 151))),
        )
        for _ in range(10_000)
    ]
    pa, pb = packed([codes(x) for x, _ in pairs]), packed([codes(y) for _, y in pairs])
    for paths in (False, True):
        yield (
            f"sweep_many SCS, {'paths' if paths else 'values'}",
            "10,000 pairs of 100-150",
            batch_call(pairs, paths),
            lambda paths=paths: scs_many_loop(*pa, *pb, paths),
            "pairs" if paths else "list",
        )
    yield (
        "sweep_many SCS, cell of conditional expressions, values",
        "10,000 pairs of 100-150",
        batch_call(pairs, False, SelectSCS),
        lambda: scs_many_loop(*pa, *pb, False),
        "list",
    )
    qs = ["".join(rng.choice(list("ACGT"), rng.integers(50, 101))) for _ in range(150)]
    cross = [(q, c) for q in qs for c in qs]
    ca, cb = packed([codes(x) for x, _ in cross]), packed([codes(y) for _, y in cross])
    yield (
        "sweep_many SCS queries x choices, values",
        "150 x 150 of 50-100",
        lambda: U.scs_cross(qs, qs, traceback=False, backend="cpu"),
        lambda: scs_many_loop(*ca, *cb, False),
        "pairs",
    )


def same(kind, got, ref):
    if kind == "value":
        return float(got[0]) == float(ref[0])
    if kind == "list":
        return np.array_equal(np.asarray(got), ref)
    return np.array_equal(np.array([x for x, _ in got]), ref)


def main(argv=None):
    table(__doc__.splitlines()[0], cases, same, argv)


if __name__ == "__main__":
    main()
