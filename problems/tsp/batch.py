"""Many small travelling salesman instances at once (:func:`solve_many`): one exact Held-Karp per
instance, on every CPU core or on the GPU, every tour checked like a single solve's.

An instance of at most :data:`MAX_BATCH_CITIES` cities runs in the batch kernel: the single solve's
recurrence (:mod:`.kernels`: the same cells, the same order, the same ties, so the same tour), its
two layers of values and its decisions (``m 2^(m-1)`` bytes, 240 KiB at 16 cities) held for the one
instance. On the CPU an instance is one numba ``prange`` iteration; on the GPU
(:mod:`gpudp.problems.tsp.cuda`) one thread block. Values are int64 for integer distances and
float64 for real ones (and integer ones with infinite entries): every partial sum of a tour must
lie in the type, by the single solve's rules (:func:`~.instance.value_dtype`), and an instance
that cannot be kept exact gets the single solve's error. Instances of more cities go to
:func:`~.held_karp.solve` one by one.

The host side is vectorized where the input allows: a 3-D array ``(count, n, n)``, or a list of 2-D
numpy arrays (stacked by shape and type), is checked as a whole (NaN, ``-inf``, ``+inf`` without
``allow_infinite``, magnitudes small enough that no tour of 16 cities can leave the value type);
an instance it flags, and any other input (nested lists, networkx graphs, TSPLIB paths,
:class:`~.instance.Instance`), goes through :func:`~.instance.load` and
:func:`~.instance.value_dtype` on its own, with the single solve's error for the same fault.
Every tour is checked over the batch: a permutation of the cities starting at city 0 whose length,
recomputed from the matrix edge by edge from city 0 (the DP's order of additions: equal to the last
bit for reals), is the DP's optimum; a mismatch is a :class:`gpudp.CheckError` naming the instance.
"""

from __future__ import annotations

import time

import numpy as np

from gpudp import lowering
from gpudp.backends import choose as choose_backend
from gpudp.backends import device_name
from gpudp.errors import CheckError, GpudpError, InputError
from gpudp.memory import gc_paused
from gpudp.progress import progress_bar
from gpudp.solution import BatchResult, Solution, Stats

from . import held_karp as hk
from .instance import FLOAT_LIMIT, Instance, load, value_dtype
from .kernels import geometry
from .sizes import FAMILY, transitions

__all__ = ["MAX_BATCH_CITIES", "Group", "solve_many"]

#: the most cities an instance of the batch kernel may have (decisions: 240 KiB an instance)
MAX_BATCH_CITIES = 16
#: integer distances within +-2^58: 16 edges sum within +-2^62, no tour leaves int64
_INT_SAFE = 1 << 58
#: real distances within this: 16 edges sum within the single solve's float64 limit (with room for
#: the rounding of its bound)
_REAL_SAFE = FLOAT_LIMIT / 32

#: the batch kernel, a module a backend: ``launch(groups, tick)`` -> a run whose ``finish()`` gives
#: ``([(values, tours) a group], kernel seconds)``, ``tick(k)`` called as ``k`` more instances are
#: done, and whose ``figures`` go to ``stats.extra`` (:func:`gpudp.problems.tsp.cpu.launch`)
BATCH = "tsp.batch"
lowering.declare(BATCH, cpu=f"{__package__}.cpu", cuda=f"{__package__}.cuda")


class Group:
    """Batch instances of ``n`` cities and one value type: ``index[q]`` is instance ``q``'s position
    in the input, ``D[q]`` its matrix (int64 or float64, zero diagonal), ``insts`` the
    :class:`~.instance.Instance` of those read one by one (for their labels)."""

    def __init__(self, n: int, D: np.ndarray, index: np.ndarray, insts: dict):
        self.n, self.D, self.index, self.insts = n, D, index, insts

    def __len__(self) -> int:
        return len(self.index)

    @property
    def geometry(self):
        return geometry(self.n)


def _stack_check(X: np.ndarray, allow_infinite: bool) -> tuple[np.ndarray, np.ndarray]:
    """A stack ``(count, n, n)`` of integer or real matrices as int64 or float64 with a zero diagonal,
    and which of them the batch takes as they are (False: to be read one by one)."""
    n = X.shape[1]
    off = ~np.eye(n, dtype=bool)
    if X.dtype.kind == "f":
        D = X.astype(np.float64)
        bad = np.isnan(D) | np.isneginf(D) | (np.isfinite(D) & (np.abs(D) > _REAL_SAFE))
        if not allow_infinite:
            bad |= np.isposinf(D)
    else:
        bad = X > _INT_SAFE if X.dtype.kind == "u" else (X > _INT_SAFE) | (X < -_INT_SAFE)
        D = X.astype(np.int64)
    D[:, np.arange(n), np.arange(n)] = 0
    return D, ~(bad & off).any(axis=(1, 2))


def _stackable(x) -> bool:
    return (
        isinstance(x, np.ndarray)
        and x.ndim == 2
        and 2 <= x.shape[0] == x.shape[1] <= MAX_BATCH_CITIES
        and x.dtype.kind in "iuf"
    )


class _Intake:
    """The input sorted out: :class:`Group` s for the batch kernel, instances for the single solve
    (``alone``), instances of at most one city (``trivial``), errors."""

    def __init__(self, allow_infinite: bool):
        self.allow_infinite = allow_infinite
        self.parts: dict = {}  # (n, dtype) -> [(index array, D stack, {k: Instance})]
        self.alone: list = []
        self.trivial: dict = {}
        self.errors: dict[int, str] = {}

    def stack(self, X: np.ndarray, index: np.ndarray, instances) -> None:
        """Matrices ``X`` of instances ``index``; those the vectorized check flags are read one by one
        (``instances[k]``, the caller's object)."""
        D, ok = _stack_check(X, self.allow_infinite)
        if ok.all():
            self.parts.setdefault((X.shape[1], D.dtype), []).append((index, D, {}))
        elif ok.any():
            self.parts.setdefault((X.shape[1], D.dtype), []).append((index[ok], D[ok], {}))
        for q in np.flatnonzero(~ok):
            self.one(int(index[q]), instances[int(index[q])])

    def one(self, k: int, x) -> None:
        """Instance ``k`` read and checked on its own, as the single solve would."""
        try:
            inst = load(x, allow_infinite=self.allow_infinite)
            if inst.n > MAX_BATCH_CITIES:
                self.alone.append((k, inst))
                return
            dtype = value_dtype(inst.matrix)
        except (GpudpError, TypeError, ValueError) as e:
            self.errors[k] = str(e)
            return
        if inst.n <= 1:
            self.trivial[k] = inst
            return
        vt = np.dtype(np.float64 if dtype.kind == "f" else np.int64)
        D = inst.matrix.astype(vt)[None]
        self.parts.setdefault((inst.n, vt), []).append((np.array([k]), D, {k: inst}))

    def groups(self) -> list[Group]:
        out = []
        for (n, _), parts in sorted(self.parts.items(), key=lambda kv: (kv[0][0], kv[0][1].kind)):
            insts = {}
            for p in parts:
                insts.update(p[2])
            if len(parts) == 1:
                index, D = parts[0][0], parts[0][1]
            else:
                index, D = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
            out.append(Group(n, D, index, insts))
        return out


def _intake(matrices, allow_infinite: bool) -> tuple[_Intake, int]:
    """Sort the instances out (see :class:`_Intake`); returns it and the count."""
    take = _Intake(allow_infinite)
    if isinstance(matrices, np.ndarray) and matrices.ndim == 3 and matrices.dtype.kind in "iuf":
        count = len(matrices)
        if count and _stackable(matrices[0]):
            take.stack(matrices, np.arange(count), matrices)
        else:
            for k in range(count):
                take.one(k, matrices[k])
        return take, count
    matrices = list(matrices)
    stacks: dict = {}
    for k, x in enumerate(matrices):
        if _stackable(x):
            stacks.setdefault((x.shape[0], x.dtype), []).append(k)
        else:
            take.one(k, x)
    for ks in stacks.values():
        take.stack(np.stack([matrices[k] for k in ks]), np.array(ks), matrices)
    return take, len(matrices)


def _tick(bar, n: int) -> None:
    if bar is not None and n:
        bar.update(n)


def _check(g: Group, values: np.ndarray, tours: np.ndarray, errors: dict) -> np.ndarray:
    """Check every tour of group ``g``; returns which instances are solved (False: no finite tour,
    its error in ``errors``).

    Raises
    ------
    gpudp.CheckError
        naming the first instance whose tour is not a permutation of the cities from city 0, or
        whose length, recomputed from the matrix, is not the DP's optimum.
    """
    n, q = g.n, np.arange(len(g))
    t = tours.astype(np.int64)
    perm = (t[:, 0] == 0) & (np.sort(t, axis=1) == np.arange(n)).all(axis=1)
    length = np.zeros(len(g), g.D.dtype)
    for i in range(n):  # edge by edge from city 0, the order of the DP's additions
        length += g.D[q, t[:, i], t[:, (i + 1) % n]]
    wrong = np.flatnonzero(~perm | (length != values))
    if wrong.size:
        w = wrong[0]
        what = (
            f"the tour {t[w].tolist()} is not a permutation of the cities from city 0"
            if not perm[w]
            else f"the tour's length is {length[w]}, the DP's optimum {values[w]}"
        )
        raise CheckError(f"instances[{g.index[w]}]: {what}")
    finite = np.isfinite(values) if g.D.dtype.kind == "f" else np.ones(len(g), bool)
    for w in np.flatnonzero(~finite):
        errors[int(g.index[w])] = str(
            InputError("distances", "no tour of finite length exists: too many edges are missing")
        )
    return finite


def _solution(inst: Instance, value, tour: list, numbered: bool = False) -> Solution:
    """A checked :class:`gpudp.Solution` like :func:`~.held_karp.solve`'s (checked by the batch);
    ``numbered``: the labels are the city numbers."""
    return Solution(
        problem="tsp",
        value=value,
        solution=list(tour) if numbered else [inst.labels[i] for i in tour],
        details={
            "length": value,
            "tour": list(tour) if numbered else [hk.plain_label(inst.labels[i]) for i in tour],
            "tour_index": tour,
            "cities": inst.n,
            "name": inst.name,
            "value_dtype": inst.matrix.dtype.name,
            "method": "held-karp (batch)",
        },
        checker=hk.tour_checker(inst),
        checked=True,
    )


def solve_many(distance_matrices, backend: str = "auto", *, allow_infinite: bool = False, progress=None):
    """Shortest tours of many small instances in one call, each exact and checked.

    Parameters
    ----------
    distance_matrices : a 3-D array ``(count, n, n)``, or an iterable of instances
        each as :func:`~.held_karp.solve` takes it (a matrix, a networkx graph, a TSPLIB path, an
        :class:`~.instance.Instance`); 2-D integer or real numpy arrays of up to 16 cities (and the
        3-D array) are checked in bulk, without Python work per instance.
    backend : "auto", "cpu" or "cuda"
        where the batch kernel runs ("auto": the GPU when one is usable and the batch's transitions
        pay for its start-up, :func:`gpudp.backends.choose`); instances of more than
        :data:`MAX_BATCH_CITIES` cities are solved by :func:`~.held_karp.solve` with this backend.
    allow_infinite : bool
        ``inf`` entries (missing edges) admitted, as in :func:`~.held_karp.solve`.
    progress : bool or None
        a progress bar over the instances (None: only on a terminal).

    Returns
    -------
    BatchResult
        ``values[k]``, instance ``k``'s optimal tour length: an int64 array when every instance was
        solved with integer distances, float64 when every one was solved with real ones, else an
        object array of Python numbers with None where instance ``k`` failed (``errors[k]`` says
        why: distances may be negative, so no length can mark a failure). ``solutions[k]``: its
        checked :class:`gpudp.Solution` (``solution`` the tour as city labels from the first city,
        ``details["tour_index"]``), None where it failed. ``stats``: backend, device, cells (the DP
        states of the batch kernel's instances), ``kernel_seconds``; ``extra``: ``instances``,
        ``batched``, ``alone``, ``transitions``, ``backend_choice``, ``host_seconds`` and, on the
        GPU, ``cuda`` (launches, threads, shared memory).

    Raises
    ------
    gpudp.BackendError
        an unknown backend, or "cuda" without a usable GPU.
    gpudp.CheckError
        a tour that fails its check: a bug in gpudp, never an answer.

    Examples
    --------
    >>> import numpy as np
    >>> from gpudp.problems import tsp
    >>> d = np.array([[0, 2, 9, 10], [1, 0, 6, 4], [15, 7, 0, 8], [6, 3, 12, 0]])
    >>> tsp.solve_many([d, d.T, d[:3, :3]], backend="cpu").values.tolist()
    [21, 21, 17]
    """
    t0 = time.perf_counter()
    take, count = _intake(distance_matrices, allow_infinite)
    groups = take.groups()
    host = {"intake": time.perf_counter() - t0}
    work = sum(len(g) * transitions(g.n) for g in groups)
    used, why = choose_backend(backend, work, FAMILY)
    bar = progress_bar(count, progress, "instance")
    _tick(bar, count - len(take.alone) - sum(len(g) for g in groups))  # errors, one city
    t = time.perf_counter()
    run = lowering.get(BATCH, used).launch(groups, lambda k: _tick(bar, k)) if groups else None
    extra = run.figures if run is not None else {}
    results = []
    kernel_s = time.perf_counter() - t
    found, solutions, errors = {}, [None] * count, take.errors
    for k, inst in take.alone:  # the single solve, on the host while the GPU computes
        try:
            solutions[k] = hk.solve(inst, backend=backend, allow_infinite=allow_infinite, progress=False)
            found[k] = solutions[k].value
        except GpudpError as e:
            errors[k] = str(e)
        _tick(bar, 1)
    if run is not None:  # the bar moved as the instances were done (:func:`.cpu.launch`) or now
        results, kernel_s = run.finish()
    if bar is not None:
        bar.close()
    t = time.perf_counter()
    solved = [_check(g, v, tours, errors) for g, (v, tours) in zip(groups, results, strict=True)]
    host["check"] = time.perf_counter() - t
    t = time.perf_counter()
    with gc_paused():
        for g, (v, tours), ok in zip(groups, results, solved, strict=True):
            labels = list(range(g.n))
            for q, (k, value, tour) in enumerate(
                zip(g.index.tolist(), v.tolist(), tours.tolist(), strict=True)
            ):
                if not ok[q]:
                    continue
                inst = g.insts.get(k)
                numbered = inst is None
                if numbered:
                    inst = Instance(g.D[q], labels)
                found[k], solutions[k] = value, _solution(inst, value, tour, numbered)
        for k, inst in take.trivial.items():
            value = inst.matrix.dtype.type(0).item()
            found[k], solutions[k] = value, _solution(inst, value, [0])
    host["solutions"] = time.perf_counter() - t
    states = sum(len(g) * int(g.geometry[1][-1]) for g in groups)
    stats = Stats(backend=used, device=device_name(used), cells=states, kernel_seconds=kernel_s)
    stats.extra.update(
        instances=count,
        batched=sum(len(g) for g in groups),
        alone=len(take.alone),
        transitions=work,
        backend_choice=why,
        host_seconds=host,
        **extra,
    )
    stats.seconds = time.perf_counter() - t0
    return BatchResult(_values(found, count), errors, solutions, sorted(found), stats)


def _values(found: dict, count: int) -> np.ndarray:
    """The lengths in input order: int64 or float64 when every instance was solved with one kind of
    distances, else Python numbers with None for the failures."""
    kinds = {type(v) for v in found.values()}
    if len(found) == count and kinds <= {int}:
        out = np.zeros(count, np.int64)
    elif len(found) == count and kinds == {float}:
        out = np.zeros(count, np.float64)
    else:
        out = np.array([None] * count, dtype=object)
    for k, v in found.items():
        out[k] = v
    return out
