"""Levenshtein (edit) distance: one pair with its edit script on the wavefront engine, checked; many
pairs at once by Myers' bit-vector algorithm (:func:`solve_many`).

``D[i, j]`` is the distance between the prefixes ``a[:i + 1]`` and ``b[:j + 1]``: the least of
deleting ``a[i]`` (the cell above, + 1), inserting ``b[j]`` (the cell to the left, + 1) and keeping or
substituting (the diagonal, + 0 or 1); reads outside the grid are the distances to an empty prefix.
``examples/edit_distance.py`` is the same recurrence written as the tutorial's example.
"""

from __future__ import annotations

import time

import numpy as np

from gpudp import lowering
from gpudp.backends import choose as choose_backend
from gpudp.backends import device_name, predicted_seconds
from gpudp.backends import where as backend_words
from gpudp.engine import sweep
from gpudp.errors import CheckError, InputError, TimeLimitReached
from gpudp.inputs import parse_time_limit
from gpudp.problems.lcs import batch, count_bound, cross, greedy_common
from gpudp.problems.lcs.sequences import encode, kernel_codes, kind
from gpudp.progress import announce
from gpudp.recurrence import GridRecurrence
from gpudp.solution import Solution, Stats

__all__ = ["Levenshtein", "cdist", "solve", "solve_many"]

KEEP, DELETE, INSERT = 0, 1, 2


class Levenshtein(GridRecurrence):
    value_dtype = np.int64
    decision_bits = 2
    offsets = ((-1, 0), (0, -1), (-1, -1))
    symbols = True

    def __init__(self, a: np.ndarray, b: np.ndarray):
        self.a, self.b = a, b

    def shape(self):
        return len(self.a), len(self.b)

    def row_symbols(self):
        return self.a

    def col_symbols(self):
        return self.b

    @staticmethod
    def cell(i, j, up, left, diag, ai, bj):
        best, how = diag + (0 if ai == bj else 1), KEEP
        if up + 1 < best:
            best, how = up + 1, DELETE
        if left + 1 < best:
            best, how = left + 1, INSERT
        return best, how

    @staticmethod
    def boundary(i, j):
        return i + j + 2  # row -1 or column -1: the distance from or to an empty prefix

    @staticmethod
    def back(i, j, how):
        if how == KEEP:
            return i - 1, j - 1
        if how == DELETE:
            return i - 1, j
        return i, j - 1


def solve(a, b, backend: str = "auto", progress=None, time_limit=None) -> Solution:
    """The edit distance of ``a`` and ``b`` with one optimal edit script, checked.

    ``a``, ``b``: as :func:`gpudp.problems.lcs.solve` takes them. The solution is the script, a
    list of ``(operation, i, j)`` from the start of both sequences: ``"keep"`` or ``"substitute"``
    ``a[i]`` by ``b[j]``, ``"delete"`` ``a[i]`` (``j`` -1), ``"insert"`` ``b[j]`` (``i`` -1). The
    check applies it to ``a`` and compares with ``b`` and its cost with the distance.

    ``time_limit``: seconds after which the sweep stops (between chunks); the solution is then not
    optimal (``optimal`` False, ``details["stopped"] == "time"``): ``value`` and ``solution`` are a
    script built around a greedy common subsequence (checked like any other; an upper bound), and
    ``details["lower_bound"]`` is ``max(len(a), len(b))`` less an upper bound on the keeps
    (:func:`gpudp.problems.lcs.count_bound`). A solve predicted to take over a minute says so on
    stderr first (unless ``progress=False``).

    Raises :class:`gpudp.InputError` for sequences it cannot read (see :func:`~gpudp.problems.lcs.encode`).

    >>> solve("kitten", "sitting", backend="cpu").value
    3
    """
    t_start = time.perf_counter()
    time_limit = parse_time_limit(time_limit)
    xa, xb = encode(a, "a"), encode(b, "b")
    if (kind(a) == "str") != (kind(b) == "str"):
        raise InputError("b", "a str pairs only with a str; encode both alike")
    ea, eb = kernel_codes(xa, xb)
    n, m = len(ea), len(eb)
    chosen = choose_backend(backend, n * m)[0]  # the sweep's own choice
    what = f"edit distance {n:.3g} x {m:.3g} = {n * m:.3g} cells"
    announce(what, predicted_seconds(n * m, chosen), backend_words(chosen), time_limit, progress)
    try:
        result = sweep(
            Levenshtein(ea, eb),
            backend=backend,
            progress=progress,
            time_limit=time_limit,
            started=t_start,
        )
    except TimeLimitReached as stop:
        return _stopped(xa, xb, ea, eb, stop, chosen, time.perf_counter() - t_start)
    try:
        script = []
        i, j = n - 1, m - 1
        if n and m:
            distance = int(result.last_row[-1])
            path = result.traceback((n - 1, m - 1))
            for i, j, how in path:
                if how == KEEP:
                    script.append(("keep" if ea[i] == eb[j] else "substitute", int(i), int(j)))
                elif how == DELETE:
                    script.append(("delete", int(i), -1))
                else:
                    script.append(("insert", -1, int(j)))
            i, j = Levenshtein.back(*path[-1])  # where the walk left the grid
        else:
            distance = n + m
        script += [("delete", k, -1) for k in range(i, -1, -1)]
        script += [("insert", -1, k) for k in range(j, -1, -1)]
    finally:
        result.close()
    sol = Solution(
        problem="edit_distance",
        value=distance,
        solution=script[::-1],
        stats=result.stats,
        details={"len_a": n, "len_b": m},
        checker=_checker(xa, xb),
    )
    sol.check()
    return sol


def _stopped(xa, xb, ea, eb, stop: TimeLimitReached, backend: str, seconds: float) -> Solution:
    """The checked, not optimal :class:`Solution` of a sweep stopped by its time limit: a script that
    keeps a greedy common subsequence (:func:`gpudp.problems.lcs.greedy_common`) and, between two
    keeps, substitutes what it can and deletes or inserts the rest (its cost, an upper bound); the
    lower bound: a script of ``K`` keeps costs at least ``max(n, m) - K``, and ``K`` is at most the
    symbol-count bound on the LCS."""
    n, m = len(ea), len(eb)
    ia, ib = greedy_common(ea, eb)
    script, pi, pj = [], 0, 0
    for i, j in zip([*ia.tolist(), n], [*ib.tolist(), m], strict=True):
        both = min(i - pi, j - pj)
        for k in range(both):
            script.append(("keep" if ea[pi + k] == eb[pj + k] else "substitute", pi + k, pj + k))
        script += [("delete", k, -1) for k in range(pi + both, i)]
        script += [("insert", -1, k) for k in range(pj + both, j)]
        if i < n:
            script.append(("keep", i, j))
        pi, pj = i + 1, j + 1
    cost = sum(op != "keep" for op, _, _ in script)
    stats = Stats(backend=backend, device=device_name(backend), cells=stop.done, seconds=seconds)
    sol = Solution(
        problem="edit_distance",
        value=cost,
        solution=script,
        stats=stats,
        optimal=False,
        details={
            "len_a": n,
            "len_b": m,
            "stopped": "time",
            "message": f"{stop}: a script around a greedy common subsequence (an upper bound), "
            "not proven optimal",
            "lower_bound": max(n, m) - count_bound(ea, eb),
            "upper_bound": cost,
        },
        checker=_checker(xa, xb),
    )
    sol.check()
    return sol


def _checker(xa: np.ndarray, xb: np.ndarray):
    """Apply the script to ``a`` (each operation where it says, in order) and compare with ``b``;
    its cost must be the distance."""

    def check(sol):
        out, ia, cost = [], 0, 0
        for op, i, j in sol.solution:
            if op in ("keep", "substitute"):
                if i != ia or not (0 <= j < len(xb)) or (op == "keep") != (xa[i] == xb[j]):
                    raise CheckError(f"edit script: {op} at a[{i}], b[{j}] is not a {op}")
                out.append(xb[j])
                ia += 1
                cost += op == "substitute"
            elif op == "delete":
                if i != ia:
                    raise CheckError(f"edit script: delete a[{i}] out of order")
                ia += 1
                cost += 1
            else:
                out.append(xb[j])
                cost += 1
        if ia != len(xa) or len(out) != len(xb) or any(x != y for x, y in zip(out, xb, strict=True)):
            raise CheckError("edit script: applied to a it does not give b")
        if cost != sol.value:
            raise CheckError(f"edit script of cost {cost} for a distance of {sol.value}")

    return check


def solve_many(
    pairs, backend: str = "auto", traceback: bool = False, verify: int = 2, progress=None, client=None
):
    """The edit distances of many pairs in one call: Myers' bit-vector algorithm (64 cells a word
    operation), one pair per GPU thread (a warp a pair, its words over the lanes, in a batch whose
    longest pattern has 2,048 symbols or more) or per loop iteration on every CPU core;
    ``traceback=True`` solves each pair with its script instead. Parameters, result and errors as
    :func:`gpudp.problems.lcs.solve_many`.

    >>> solve_many([("kitten", "sitting"), ("", "abc")], backend="cpu").values.tolist()
    [3, 3]
    """
    return batch.run(_SOLVER, pairs, backend, traceback, verify, progress, client)


def cdist(queries, choices, *, backend: str = "auto", dtype=None, score_cutoff=None, verify: int = 2):
    """The Levenshtein distance of every query against every choice: a 2-D array, as rapidfuzz's
    ``process.cdist(queries, choices, scorer=Levenshtein.distance)`` gives it, without making the
    pairs.

    Myers' bit-vector algorithm in Hyyrö's block form (64 cells a word operation), each sequence of
    one side a pattern whose masks are built once and reused for every sequence of the other side
    (the queries, unless the choices make less work as patterns: the distance is symmetric). On
    the cpu a parallel loop over the patterns; on the GPU a thread a cell of the result (patterns
    of up to 1,024 symbols through kernels of their word count, as for the LCS). Exact
    integers throughout; non-ASCII text is compared by code point. Parameters, inputs and errors
    as :func:`gpudp.problems.lcs.cdist`, except:

    Parameters
    ----------
    dtype : integer dtype or None
        None: int32, or int64 where a distance could exceed it. A dtype that cannot hold the
        largest possible distance (the longest query or choice; with ``score_cutoff``, at most
        ``score_cutoff + 1``) is refused.
    score_cutoff : int or None
        rapidfuzz's semantics for a distance: a distance above ``score_cutoff`` is reported as
        ``score_cutoff + 1`` (None: every distance as it is). Every distance at or below it is
        exact. A pair whose lengths differ by more than ``score_cutoff`` is reported
        ``score_cutoff + 1`` without being computed; a pair stops once its distance so far, less
        the symbols left, passes ``score_cutoff`` (it can fall by at most one a symbol; tested
        every symbol on the cpu, every 32 on the GPU).

    Returns
    -------
    numpy.ndarray
        shape ``(len(queries), len(choices))``: ``out[i, j]`` is the edit distance of
        ``queries[i]`` and ``choices[j]`` (after ``score_cutoff``), checked on ``verify`` cells by
        the textbook dynamic program (:mod:`gpudp.problems.lcs.plain`). From the GPU, a result of
        up to 64 MB lies in page-locked memory, as :func:`gpudp.problems.lcs.cdist`'s.

    Examples
    --------
    >>> cdist(["kitten", "flaw"], ["sitting", "lawn", ""], backend="cpu").tolist()
    [[3, 5, 6], [7, 2, 4]]
    >>> cdist(["kitten", "flaw"], ["sitting", "lawn"], backend="cpu", score_cutoff=2).tolist()
    [[3, 3], [3, 2]]
    """
    return cross.run(_SOLVER, queries, choices, backend, dtype, score_cutoff, verify, distance=True)[0]


#: the batch's distances, a module a backend (:class:`gpudp.problems.lcs.batch.PairSolver`)
DISTANCES = "edit_distance.distances"
lowering.declare(DISTANCES, cpu=f"{__name__}.cpu", cuda=f"{__name__}.cuda")


_SOLVER = batch.PairSolver(
    solve=solve,
    family=DISTANCES,
    method="bit-parallel (Myers 1999, Hyyro's blocks)",
    what="edit distance",
    table="levenshtein_value",
)
