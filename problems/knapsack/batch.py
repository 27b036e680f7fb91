"""Many small knapsacks at once (:func:`solve_many`): one exact int64 DP per instance, the
instances spread over every CPU core, each answer checked like a single solve's.

An instance of integer profits and weights whose DP fits :data:`MAX_BATCH_CELLS` cells runs in the
batch kernel: the classic one-row DP over capacities (descending, so each item is taken at most
once), a bit per (item, capacity) recording that the item improved that capacity, and the walk
back from the full capacity. Any other instance (real numbers, a DP too large for one core) is
solved by :func:`gpudp.problems.knapsack.solve` on its own, so every instance gets the answer the
single solve would give.
"""

from __future__ import annotations

import time

import numpy as np
from numba import prange

from gpudp.engine import device_name, progress_bar
from gpudp.errors import CheckError, GpudpError, InputError
from gpudp.jit import njit
from gpudp.problems.lcs.batch import BatchResult
from gpudp.solution import Solution, Stats

from .io import solution_checker, validate

__all__ = ["MAX_BATCH_CELLS", "solve_many"]

#: the largest DP (items x (capacity + 1)) an instance may have to run in the batch kernel: its
#: decision bits (128 MiB) and row are one core's working memory
MAX_BATCH_CELLS = 1 << 30
_SUM_LIMIT = 1 << 62  # profits summing below this stay exact in int64


@njit(parallel=True, cache=True)
def _knapsacks(p, w, off, caps, values, x):
    for k in prange(len(caps)):
        a, b, cap = off[k], off[k + 1], caps[k]
        n = b - a
        f = np.zeros(cap + 1, np.int64)
        words = (cap + 64) // 64
        dec = np.zeros((max(n, 1), words), np.uint64)
        for i in range(n):
            wi, pi = w[a + i], p[a + i]
            if pi <= 0 or wi > cap:
                continue
            for c in range(cap, wi - 1, -1):
                v = f[c - wi] + pi
                if v > f[c]:
                    f[c] = v
                    dec[i, c >> 6] |= np.uint64(1) << np.uint64(c & 63)
        values[k] = f[cap]
        c = cap
        for i in range(n - 1, -1, -1):
            if (dec[i, c >> 6] >> np.uint64(c & 63)) & np.uint64(1):
                x[a + i] = 1
                c -= w[a + i]


def _batchable(inst) -> bool:
    p, w = inst.profits, inst.weights
    if p.dtype.kind not in "iu" or w.dtype.kind not in "iu" or not isinstance(inst.capacity, int):
        return False
    if len(p) * (inst.capacity + 1) > MAX_BATCH_CELLS or inst.capacity >= _SUM_LIMIT:
        return False
    if not len(p) or max(int(p.max()), -int(p.min())) < _SUM_LIMIT // len(p):  # the sum cannot reach it
        return True
    return sum(abs(int(v)) for v in p) < _SUM_LIMIT


def solve_many(instances, solve, backend: str = "auto", progress=None) -> BatchResult:
    """Solve many 0/1 knapsacks in one call; every answer checked.

    Parameters
    ----------
    instances : iterable of ``(profits, weights, capacity)``
        each as :func:`gpudp.problems.knapsack.solve` takes it.
    solve : the single solve, for the instances that leave the batch
        (:func:`gpudp.problems.knapsack.solve_many` passes :func:`gpudp.problems.knapsack.solve`).
    backend : "auto" or "cpu"
        the batch kernel runs on the CPU cores (``auto`` picks it); instances that leave the batch
        are solved by :func:`~gpudp.problems.knapsack.solve` with this backend.
    progress : bool or None
        a progress bar over the instances solved one by one.

    Returns
    -------
    BatchResult
        ``values[k]``, the optimum (int64; -1 where instance ``k`` failed, ``errors[k]`` saying
        why; an object array of Python numbers, None for failures, when some profits are real),
        and ``solutions[k]``, its checked :class:`gpudp.Solution` (0/1 vector in the caller's
        order).

    Raises
    ------
    gpudp.InputError
        for a backend the batch cannot run on.

    Examples
    --------
    >>> from gpudp.problems import knapsack
    >>> knapsack.solve_many([([10, 7, 8], [5, 4, 3], 8), ([1], [2], 1)], backend="cpu").values.tolist()
    [18, 0]
    """
    if backend not in ("auto", "cpu"):
        raise InputError(
            "backend", f"the knapsack batch runs on the cpu (backend 'auto' or 'cpu'), not {backend!r}"
        )
    t0 = time.perf_counter()
    instances = list(instances)
    found: list = [None] * len(instances)
    solutions: list = [None] * len(instances)
    errors: dict[int, str] = {}
    batch, alone = [], []
    for k, item in enumerate(instances):
        try:
            profits, weights, capacity = item
            inst = validate(profits, weights, capacity, name=f"instances[{k}]")
        except (GpudpError, TypeError, ValueError) as e:
            errors[k] = str(e)
            continue
        (batch if _batchable(inst) else alone).append((k, inst))
    cells = 0
    t = time.perf_counter()
    if batch:
        off = np.zeros(len(batch) + 1, np.int64)
        np.cumsum([inst.n for _, inst in batch], out=off[1:])
        p = np.concatenate([inst.profits.astype(np.int64) for _, inst in batch])
        w = np.concatenate([inst.weights.astype(np.int64) for _, inst in batch])
        caps = np.array([inst.capacity for _, inst in batch], np.int64)
        got = np.zeros(len(batch), np.int64)
        x = np.zeros(int(off[-1]), np.int8)
        _knapsacks(p, w, off, caps, got, x)
        cells = int(np.dot(np.diff(off), caps + 1))
    kernel_s = time.perf_counter() - t
    for q, (k, inst) in enumerate(batch):
        sel = x[off[q] : off[q + 1]].copy()
        value = int(inst.profits[sel == 1].sum(dtype=np.int64))  # exact: profits sum below 2^62
        if value != got[q]:
            raise CheckError(f"instances[{k}]: the walk back gives {value}, the DP's optimum is {got[q]}")
        sol = Solution(
            "knapsack",
            value,
            sel,
            details={
                "method": "dp (batch)",
                "n": inst.n,
                "weight": int(inst.weights[sel == 1].sum(dtype=np.int64)),  # at most the capacity
            },
            _checker=solution_checker(inst.profits, inst.weights, inst.capacity),
        )
        sol.check()
        found[k], solutions[k] = value, sol
    bar = progress_bar(len(alone), progress, "knapsack")
    for k, inst in alone:
        try:
            sol = solve(inst.profits, inst.weights, inst.capacity, backend=backend)
        except GpudpError as e:
            errors[k] = str(e)
        else:
            found[k], solutions[k] = sol.value, sol
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    if all(v is None or isinstance(v, int) for v in found):
        values = np.array([-1 if v is None else v for v in found], np.int64)
    else:  # real-valued instances: the optima as Python numbers, None where an instance failed
        values = np.array(found, dtype=object)
    stats = Stats(backend="cpu", device=device_name("cpu"), cells=cells, kernel_seconds=kernel_s)
    stats.extra.update(instances=len(instances), batched=len(batch), alone=len(alone))
    stats.seconds = time.perf_counter() - t0
    return BatchResult(values, errors, solutions, [k for k, _ in batch], stats)
