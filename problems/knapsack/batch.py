"""Many small knapsacks at once (:func:`solve_many`): one exact DP per instance, on every CPU core
or on the GPU, each answer checked like a single solve's.

An instance of integer profits and weights whose DP fits :data:`MAX_BATCH_CELLS` cells and whose
profits' magnitudes sum below 2^62 runs in the batch kernel: the one-row DP over capacities, a bit
per (item, capacity) recording that the item improved that capacity, and the walk back from the
full capacity; item ``t`` computes only the capacities ``max(0, min(C, S_t) - R_t) .. min(C, S_t)``
(``S_t`` the weight of the items up to ``t``, ``R_t`` of those after it; see
:mod:`gpudp.problems.knapsack.cuda`), about half the cells when ``C`` is half the weights. On the
CPU (:func:`gpudp.problems.knapsack.cpu.knapsacks`) an instance is one numba ``prange`` iteration,
int64 values; on the GPU (:mod:`gpudp.problems.knapsack.cuda`) one thread block, int32 values where
the instance's DP stays below 2^31 (its positive profits of the items that fit sum below it), else
int64. Any other instance (real numbers, a DP too large, one the device memory cannot hold) is
solved by :func:`gpudp.problems.knapsack.solve` on its own, so every instance gets the answer the
single solve would give.

The host side is vectorized over the batch, so that 10,000 instances cost milliseconds, not the
~50 us an instance of a validate / build / check loop:

- **intake**: an instance given as two 1-D integer numpy arrays and an integer capacity is taken
  as it is (its arrays concatenated with the others'); the checks :func:`~.io.validate` would make
  (no negative weight, no -2^63) run once over the concatenation, and an instance they flag, or
  one given otherwise (lists, reals, strings), goes through :func:`~.io.validate` as before, with
  the same error for the same fault; a capacity above an instance's total weight is that weight
  (every set fits), so the kernel's row of ``C + 1`` values stays as small as the instance;
- **check**: every answer is checked on the concatenated 0/1 vectors with ``np.add.reduceat``: the
  chosen profits sum to the DP's optimum, every chosen item weighs at most the capacity and their
  sum too (exact in int64: profits sum below 2^62, a chosen weight is at most ``C`` and
  ``n * C < 2^30``); a mismatch is a :class:`gpudp.CheckError` naming the instance;
- **results**: each :class:`gpudp.Solution` gets a view of its slice of the 0/1 vectors, is marked
  checked (the batch check above is the check its ``check()`` would make, which stays available)
  and carries the usual checker.
"""

from __future__ import annotations

import operator
import time

import numpy as np

from gpudp import lowering
from gpudp.backends import choose as choose_backend
from gpudp.backends import device_name
from gpudp.errors import CheckError, GpudpError, InputError
from gpudp.memory import gc_paused
from gpudp.progress import progress_bar
from gpudp.solution import BatchResult, Solution, Stats

from .dp import FAMILY
from .io import INT64_MAX, KnapsackInstance, solution_checker, validate

__all__ = ["MAX_BATCH_CELLS", "solve_many"]

#: the largest DP (items x (capacity + 1)) an instance may have to run in the batch kernel: its
#: decision bits (128 MiB) and row are one core's working memory, or one thread block's work
MAX_BATCH_CELLS = 1 << 30
_SUM_LIMIT = 1 << 62  # profits summing below this stay exact in int64
_INT64_MIN = np.iinfo(np.int64).min

#: the batch kernel, a module a backend: ``launch_batch(pack)`` -> a run whose ``finish()`` gives
#: ``(values, x, kernel seconds)``, with ``refused`` (instances it left out: solved alone),
#: ``figures`` (for ``stats.extra``) and ``host_seconds`` (for ``host_seconds``)
#: (:func:`gpudp.problems.knapsack.cpu.launch_batch`)
BATCH = "knapsack.batch"
lowering.declare(BATCH, cpu=f"{__package__}.cpu", cuda=f"{__package__}.cuda")


def _segments(ufunc, values: np.ndarray, off: np.ndarray, empty) -> np.ndarray:
    """``ufunc`` reduced over each instance's items (``values[off[k]:off[k + 1]]``); ``empty`` for
    an instance without items."""
    n = np.diff(off)
    out = np.full(len(n), empty, dtype=values.dtype)
    nz = np.flatnonzero(n)
    if nz.size:
        out[nz] = ufunc.reduceat(values, off[nz])
    return out


class _Packed:
    """Integer instances as flat arrays: ``index[q]`` is instance ``q``'s position in the input, its
    items are ``p[off[q]:off[q + 1]]`` and ``w[...]`` (int64), its capacity ``caps[q]``."""

    def __init__(self, index, p, w, off, caps):
        self.index, self.p, self.w, self.off, self.caps = index, p, w, off, caps

    @classmethod
    def of(cls, rows: list) -> _Packed:
        """From ``(k, profits, weights, capacity)`` rows: integer arrays of equal length, an int."""
        m = len(rows)
        off = np.zeros(m + 1, np.int64)
        np.cumsum(np.fromiter((len(r[1]) for r in rows), np.int64, m), out=off[1:])
        if off[-1]:
            p = np.concatenate([r[1] for r in rows]).astype(np.int64, copy=False)
            w = np.concatenate([r[2] for r in rows]).astype(np.int64, copy=False)
        else:
            p, w = np.zeros(0, np.int64), np.zeros(0, np.int64)
        index = np.fromiter((r[0] for r in rows), np.int64, m)
        return cls(index, p, w, off, np.fromiter((r[3] for r in rows), np.int64, m))

    def __len__(self) -> int:
        return len(self.caps)

    @property
    def n(self) -> np.ndarray:
        return np.diff(self.off)

    def select(self, keep: np.ndarray) -> _Packed:
        """The instances where ``keep`` (bool) holds."""
        items = np.repeat(keep, self.n)
        off = np.zeros(int(keep.sum()) + 1, np.int64)
        np.cumsum(self.n[keep], out=off[1:])
        return _Packed(self.index[keep], self.p[items], self.w[items], off, self.caps[keep])

    def fit_profits(self) -> np.ndarray:
        """Per instance, its positive profits of the items that fit its capacity summed: its DP's
        values stay below this (the GPU's kernel takes int32 values where it is below 2^31)."""
        fits = (self.p > 0) & (self.w <= np.repeat(self.caps, self.n))
        return _segments(np.add, np.where(fits, self.p, 0), self.off, 0)

    def instance(self, q: int) -> KnapsackInstance:
        a, b = self.off[q], self.off[q + 1]
        name = f"instances[{self.index[q]}]"
        return KnapsackInstance(self.p[a:b].copy(), self.w[a:b].copy(), int(self.caps[q]), None, name)


def _plain(p, w, c) -> bool:
    """Two 1-D integer numpy arrays of one length (values within int64) and an integer capacity
    within 0..2^63 - 1: what :func:`validate` would take as it is."""
    return (
        isinstance(p, np.ndarray)
        and isinstance(w, np.ndarray)
        and p.ndim == 1
        and w.ndim == 1
        and len(p) == len(w)
        and (p.dtype.kind == "i" or (p.dtype.kind == "u" and p.dtype.itemsize < 8))
        and (w.dtype.kind == "i" or (w.dtype.kind == "u" and w.dtype.itemsize < 8))
        and (type(c) is int or isinstance(c, np.integer))
        and 0 <= c <= INT64_MAX
    )


def _intake(instances: list, errors: dict) -> tuple[_Packed, list]:
    """The integer instances the batch can keep exact, packed, and the others ``(k, instance)``
    for the single solve; an instance that is not a knapsack gets its error in ``errors``."""
    rows, alone = [], []
    for k, item in enumerate(instances):
        try:
            profits, weights, capacity = item
            if _plain(profits, weights, capacity):
                rows.append((k, profits, weights, int(capacity)))
                continue
            inst = validate(profits, weights, capacity, name=f"instances[{k}]")
        except (GpudpError, TypeError, ValueError) as e:
            errors[k] = str(e)
            continue
        if inst.integral and isinstance(inst.capacity, int):
            rows.append((k, inst.profits, inst.weights, inst.capacity))
        else:
            alone.append((k, inst))
    pack = _Packed.of(rows)
    # what validate() refuses in integer arrays: validate those instances, for their error
    flagged = np.flatnonzero((pack.w < 0) | (pack.p == _INT64_MIN))
    if flagged.size:
        keep = np.ones(len(pack), bool)
        for q in np.unique(np.searchsorted(pack.off, flagged, side="right") - 1):
            k = int(pack.index[q])
            try:
                validate(*instances[k], name=f"instances[{k}]")
            except GpudpError as e:
                errors[k] = str(e)
                keep[q] = False
        pack = pack.select(keep)
    # a capacity above the total weight is that weight (every set fits): the kernel's row is
    # ``C + 1`` long, so an instance with no items or light ones must not ask for a huge one
    total = _segments(np.add, pack.w, pack.off, 0)  # exact where the float sum is below 2^62
    light = (pack.caps > total) & (_segments(np.add, pack.w.astype(np.float64), pack.off, 0.0) < 2.0**62)
    pack.caps[light] = total[light]
    # the batch keeps exact what fits MAX_BATCH_CELLS and whose profits sum below 2^62
    n, caps = pack.n, pack.caps
    ok = (n * (caps.astype(np.float64) + 1) <= MAX_BATCH_CELLS) & (caps < _SUM_LIMIT)
    biggest = _segments(np.maximum, np.abs(pack.p), pack.off, 0)  # |p| < 2^63: -2^63 is refused
    for q in np.flatnonzero(ok & (biggest >= _SUM_LIMIT // np.maximum(n, 1))):  # the sum may reach it
        ok[q] = sum(abs(int(v)) for v in pack.p[pack.off[q] : pack.off[q + 1]]) < _SUM_LIMIT
    if not ok.all():
        alone += [(int(pack.index[q]), pack.instance(q)) for q in np.flatnonzero(~ok)]
        pack = pack.select(ok)
    return pack, alone


def _check(pack: _Packed, got: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Check every batch answer against its instance; return the chosen items' profits and weights.

    Raises
    ------
    gpudp.CheckError
        naming the first instance whose 0/1 vector is not 0/1, takes an item heavier than the
        capacity, weighs more than the capacity, or is not worth the DP's optimum.
    """
    caps = pack.caps
    bad = (x != 0) & (x != 1)
    heavy = (x == 1) & (pack.w > np.repeat(caps, pack.n))
    for mask, what in ((bad, "a value that is not 0 or 1"), (heavy, "an item heavier than the capacity")):
        if mask.any():
            i = int(np.flatnonzero(mask)[0])
            q = int(np.searchsorted(pack.off, i, side="right") - 1)
            k, item = pack.index[q], i - pack.off[q]
            raise CheckError(f"instances[{k}]: the walk back gives {what} (item {item})")
    value = _segments(np.add, pack.p * x, pack.off, 0)  # exact: |profits| sum below 2^62
    weight = _segments(np.add, pack.w * x, pack.off, 0)  # exact: each at most C, n * C < 2^30
    wrong = np.flatnonzero((value != got) | (weight > caps))
    if wrong.size:
        q = wrong[0]
        k = pack.index[q]
        if value[q] != got[q]:
            raise CheckError(f"instances[{k}]: the walk back gives {value[q]}, the DP's optimum is {got[q]}")
        raise CheckError(f"instances[{k}]: the walk back weighs {weight[q]}, over the capacity {caps[q]}")
    return value, weight


def _solutions(pack: _Packed, x: np.ndarray, value: np.ndarray, weight: np.ndarray, out: list) -> None:
    """A checked :class:`gpudp.Solution` per batch instance into ``out[k]``; its 0/1 vector a view of
    ``x`` (int8), its checker over views of the batch's int64 arrays."""
    off = pack.off.tolist()
    p, w = pack.p, pack.w
    for q, (k, cap, v, wt) in enumerate(
        zip(pack.index.tolist(), pack.caps.tolist(), value.tolist(), weight.tolist(), strict=True)
    ):
        a, b = off[q], off[q + 1]
        out[k] = Solution(
            "knapsack",
            v,
            x[a:b],
            details={"method": "dp (batch)", "n": b - a, "weight": wt},
            checker=solution_checker(p[a:b], w[a:b], cap),
            checked=True,  # by _check, the same check over the whole batch
        )


def check_options(instances, verify) -> int:
    """``verify`` as :func:`solve_many` uses it (a count; None: 0, False / True: 0 / 1), checked with
    ``instances`` before any work; anything else raises :class:`gpudp.InputError` naming it."""
    if isinstance(instances, str | bytes | bytearray | dict) or not hasattr(instances, "__iter__"):
        what = type(instances).__name__
        raise InputError("instances", f"must be an iterable of (profits, weights, capacity), got {what}")
    if verify is None:
        return 0
    try:
        count = operator.index(verify)  # ints, bools, numpy integers; not "2" or 1.5
    except TypeError:
        count = -1
    if count < 0:
        raise InputError("verify", f"must be a number of instances >= 0 (or True / False), got {verify!r}")
    return count


def _picks(pack: _Packed, count: int) -> list[int]:
    """``count`` batched instances (positions in ``pack``) at random among the smaller half by cells
    (among the ``count`` smallest when that is more; all when ``count`` is the batch or more)."""
    if count <= 0 or not len(pack):
        return []
    cells = pack.n * (pack.caps.astype(np.float64) + 1)
    pool = np.argsort(cells, kind="stable")[: max(count, (len(pack) + 1) // 2)]
    return sorted(np.random.default_rng().choice(pool, min(count, len(pool)), replace=False).tolist())


def _cross_check(pack: _Packed, got: np.ndarray, picks: list[int], solve) -> None:
    """Re-solve ``picks`` by the dense DP on the wavefront engine (``solve(..., method="dp")``, not
    the batch kernel) and compare the optima; a disagreement is a :class:`gpudp.CheckError`."""
    for q in picks:
        inst = pack.instance(q)
        want = solve(inst.profits, inst.weights, inst.capacity, method="dp", backend="cpu").value
        if want != got[q]:
            raise CheckError(f"{inst.name}: the batch's optimum is {got[q]}, the single DP's is {want}")


def solve_many(instances, solve, backend: str = "auto", progress=None, verify=None) -> BatchResult:
    """Solve many 0/1 knapsacks in one call; every answer checked.

    Parameters
    ----------
    instances : iterable of ``(profits, weights, capacity)``
        each as :func:`gpudp.problems.knapsack.solve` takes it; two 1-D integer numpy arrays and an
        int are taken without a copy per instance (the fast path).
    solve : the single solve, for the instances that leave the batch
        (:func:`gpudp.problems.knapsack.solve_many` passes :func:`gpudp.problems.knapsack.solve`).
    backend : "auto", "cpu" or "cuda"
        where the batch kernel runs: "auto" picks the GPU when one is usable and the batch's cells
        pay for its start-up (:func:`gpudp.backends.choose`), else the CPU cores; instances
        that leave the batch are solved by :func:`~gpudp.problems.knapsack.solve` with this backend.
    progress : bool or None
        a progress bar over the instances solved one by one.
    verify : int, bool or None
        how many batched instances (at random among the smaller half: :func:`_picks`) are re-solved
        by the dense DP of the single solve and compared with the batch's optimum (None or False:
        none, True: one); every answer is checked anyway (feasible, worth its value), this
        cross-checks the optimum. ``stats.extra["verified"]`` lists them.

    Returns
    -------
    BatchResult
        ``values[k]``, the optimum (int64; -1 where instance ``k`` failed, ``errors[k]`` saying
        why; an object array of Python numbers, None for failures, when some profits are real or
        some optimum lies beyond int64),
        and ``solutions[k]``, its checked :class:`gpudp.Solution` (0/1 vector in the caller's
        order). ``stats``: the backend, device, cells (``n * (C + 1)`` summed over the batch),
        ``kernel_seconds``; ``extra`` has ``instances``, ``batched``, ``alone``,
        ``backend_choice``, ``host_seconds`` (intake, check, solutions; on the GPU also launch:
        planning, copies and launches queued) and, on the GPU, ``cuda`` (launches, threads,
        shared memory, ...).

    Raises
    ------
    gpudp.BackendError
        for an unknown backend, or "cuda" where no GPU is usable.
    gpudp.InputError
        ``instances`` not an iterable, ``verify`` not a count.
    gpudp.CheckError
        when an answer fails its check or its cross-check (a bug in gpudp, never an answer).

    Examples
    --------
    >>> from gpudp.problems import knapsack
    >>> knapsack.solve_many([([10, 7, 8], [5, 4, 3], 8), ([1], [2], 1)], backend="cpu").values.tolist()
    [18, 0]
    """
    t0 = time.perf_counter()
    count = check_options(instances, verify)
    instances = list(instances)
    errors: dict[int, str] = {}
    with gc_paused():
        pack, alone = _intake(instances, errors)
    host = {"intake": time.perf_counter() - t0}
    n = pack.n
    cells = int(np.dot(n, pack.caps + 1)) if len(pack) else 0
    used, why = choose_backend(backend, cells, FAMILY)
    got = np.zeros(len(pack), np.int64)
    x = np.zeros(len(pack.p), np.int8)
    run, extra = None, {}
    t = time.perf_counter()
    if len(pack):
        run = lowering.get(BATCH, used).launch_batch(pack)
        host.update(run.host_seconds)
        extra.update(run.figures)
        if len(run.refused):  # more than the device memory a chunk may take: on their own
            alone += [(int(pack.index[q]), pack.instance(q)) for q in run.refused]
    kernel_s = time.perf_counter() - t
    found: dict[int, object] = {}
    solutions: list = [None] * len(instances)
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
    if run is not None:
        got, x, kernel_s = run.finish()
        if len(run.refused):
            keep = np.ones(len(pack), bool)
            keep[run.refused] = False
            pack, got, x = pack.select(keep), got[keep], x[np.repeat(keep, n)]
    t = time.perf_counter()
    value, weight = _check(pack, got, x)
    host["check"] = time.perf_counter() - t
    t = time.perf_counter()
    with gc_paused():
        _solutions(pack, x, value, weight, solutions)
    host["solutions"] = time.perf_counter() - t
    picks = _picks(pack, count)
    _cross_check(pack, got, picks, solve)
    if all(type(v) is int and -INT64_MAX <= v <= INT64_MAX for v in found.values()):
        values = np.full(len(instances), -1, np.int64)
        values[pack.index] = got
        for k, v in found.items():
            values[k] = v
    else:  # real-valued instances or optima past int64: Python numbers, None where an instance failed
        values = np.array([None] * len(instances), dtype=object)
        values[pack.index] = got.tolist()
        for k, v in found.items():
            values[k] = v
    stats = Stats(backend=used, device=device_name(used), cells=cells, kernel_seconds=kernel_s)
    stats.extra.update(instances=len(instances), batched=len(pack), alone=len(alone), backend_choice=why)
    stats.extra.update(host_seconds=host, verified=pack.index[picks].tolist(), **extra)
    stats.seconds = time.perf_counter() - t0
    return BatchResult(values, errors, solutions, pack.index.tolist(), stats)
