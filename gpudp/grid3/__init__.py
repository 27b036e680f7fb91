"""3-D grid recurrences (:class:`gpudp.recurrence.Grid3Recurrence`): swept by planes ``d = i + j +
k``, a ring of planes kept, every cell's decision stored for the traceback.

A cell reads only neighbours behind it (offsets in ``{-1, 0}^3``), each on one of the three planes
before its own, so the cells of a plane are independent: plane ``d`` runs after ``d - 1``, its
cells in parallel. Only a ring of ``lag + 1`` planes (``lag`` the furthest a cell reads back, at
most 3) is kept, each plane an ``n1 x n2`` array indexed ``[i, j]``; the grid's values never
exist whole. What is kept: the last cell's value, the three far faces (``i = n1 - 1``, ``j = n2 -
1``, ``k = n3 - 1``) and, for the traceback, every cell's decision in the smallest unsigned type
holding ``decision_bits``, plane after plane (:mod:`gpudp.grid3.layout`), in a
:class:`gpudp.store.DecisionStore` (RAM, page-locked on CUDA, or a disk memmap past the memory
budget).

- CPU (:mod:`gpudp.grid3.cpu`): numba ``njit(parallel=True)``, a plane's rows in ``prange`` unless
  the plane is small (:data:`gpudp.grid3.cpu.SERIAL_CELLS`), the interior of each row with no
  boundary tests.
- CUDA (:mod:`gpudp.grid3.cuda`): the ring in device memory, cooperative launches over chunks of
  planes with a grid sync between planes, consecutive threads on consecutive ``j`` (coalesced);
  each chunk's decisions go to one of two device slabs and are copied to the host store while the
  next chunk computes.

Each is the shape's *lowering* on its backend, a module with ``run(...)``, declared to
:mod:`gpudp.lowering` below and looked up by the driver with the backend's name.

The driver (:func:`sweep_grid3`, reached through :func:`gpudp.engine.sweep`) checks the class and
the instance before anything compiles (arities, the cell's return form in plain Python), refuses
what does not fit the device or this process's memory with an :class:`InputError` naming the
bytes, picks the backend as the other shapes do (``auto`` from the cells), runs it, raises a
:class:`ContractError` for a decision wider than ``decision_bits`` and returns a
:class:`Grid3Result`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .. import backends, lowering
from ..cache import jit_generated
from ..checks import check_memory, probe_back, probe_boundary, probe_cell, typing_errors
from ..codegen import decision_dtype
from ..errors import ContractError, decision_overflow
from ..jit import njit
from ..kernel import KernelFactory
from ..memory import default_budget, parse_bytes
from ..progress import progress_bar
from ..recurrence import Grid3Recurrence, contiguous, values_only, whole_numbers
from ..solution import Stats
from ..store import WORD_BYTES, DecisionStore, spills
from . import layout
from .layout import plane_starts, position, row_offset

__all__ = [
    "Grid3Result",
    "sweep_grid3",
    "grid3_memory",
    "plane_starts",
    "position",
    "row_offset",
    "step_error",
]

#: the shape's kernels on each backend (the driver finds them through the registry)
lowering.declare("grid3", cpu="gpudp.grid3.cpu", cuda="gpudp.grid3.cuda")


def grid3_memory(shape, offsets, value_dtype, bits: int, backend: str = "cpu") -> dict:
    """The bytes a sweep of an ``n1 x n2 x n3`` grid takes, before any instance exists.

    Parameters
    ----------
    shape : (int, int, int)
        ``(n1, n2, n3)``.
    offsets : tuple of 3-tuples
        The recurrence's offsets (they set how many planes the ring keeps).
    value_dtype : numpy dtype
        The cell type.
    bits : int
        ``decision_bits`` (0: no decisions kept).
    backend : str
        ``"cpu"`` or ``"cuda"`` (the backend's ``values_on_device``: the ring and faces in device
        memory, or in the host's).

    Returns
    -------
    dict
        ``ring``, ``faces``, ``decisions``, ``slabs`` (bytes), ``device`` (bytes in device
        memory, None on the CPU) and ``host_values`` (host bytes besides the decision store).

    Example
    -------
    >>> grid3_memory((100, 100, 100), ((-1, 0, 0),), np.int32, 2)["decisions"]
    1000000
    """
    return layout.memory(shape, offsets, value_dtype, bits, backends.get(backend).values_on_device)


# ---------------------------------------------------------------------------------------------
# The result and its walk
# ---------------------------------------------------------------------------------------------


@dataclass
class Grid3Result:
    """A 3-D sweep's outcome.

    Attributes
    ----------
    recurrence : Grid3Recurrence
        The instance swept (the user's).
    shape : (int, int, int)
        ``(n1, n2, n3)``.
    last_value : numpy scalar or None
        The value of cell ``(n1 - 1, n2 - 1, n3 - 1)``; None when the grid has no cells.
    face_i, face_j, face_k : numpy.ndarray
        The far faces: ``face_i[j, k]`` is cell ``(n1 - 1, j, k)``, ``face_j[i, k]`` cell ``(i, n2
        - 1, k)``, ``face_k[i, j]`` cell ``(i, j, n3 - 1)``.
    stats : gpudp.Stats
        Backend, device, cells, seconds, kernel seconds, bytes of decisions; ``extra`` holds the
        schedule, the backend's choice, the ring's bytes and more.
    """

    recurrence: Grid3Recurrence
    shape: tuple
    last_value: object
    face_i: np.ndarray
    face_j: np.ndarray
    face_k: np.ndarray
    stats: Stats
    _cls: type = field(repr=False, default=None)
    _store: DecisionStore | None = field(repr=False, default=None)
    _starts: np.ndarray | None = field(repr=False, default=None)
    _dropped: bool = field(repr=False, default=False)

    def _decisions(self) -> np.ndarray:
        cls = self._cls
        if self._dropped:
            raise ContractError(f"{cls.__name__} was swept with traceback=False: no decisions were kept")
        if not cls.decision_bits:
            raise ContractError(f"{cls.__name__} declares decision_bits = 0: there is nothing to trace back")
        if self._store is None or self._store.words is None:
            raise ContractError(f"{cls.__name__}'s result was closed: its decisions are gone")
        cells = int(np.prod(self.shape))
        return np.asarray(self._store.words).view(decision_dtype(cls.decision_bits))[: max(cells, 1)]

    def _inside(self, cell) -> tuple[int, int, int]:
        try:
            i, j, k = whole_numbers(cell)
        except (TypeError, ValueError):
            raise IndexError(f"a cell is three integers (i, j, k), got {cell!r}") from None
        if not all(0 <= x < n for x, n in zip((i, j, k), self.shape, strict=True)):
            raise IndexError(f"cell {(i, j, k)} outside the {' x '.join(map(str, self.shape))} grid")
        return i, j, k

    def decision(self, i, j, k) -> int:
        """The decision ``cell`` returned at ``(i, j, k)``.

        Raises
        ------
        ContractError
            No decisions were kept (``decision_bits = 0``, ``traceback=False``, or closed).
        IndexError
            A cell outside the grid.
        """
        dec = self._decisions()
        i, j, k = self._inside((i, j, k))
        return int(dec[position(i, j, k, self.shape[1], self.shape[2], self._starts)])

    def traceback(self, start=None) -> np.ndarray:
        """Walk ``back`` from ``start`` (default: the last cell, ``(n1 - 1, n2 - 1, n3 - 1)``)
        until a coordinate falls below 0, compiled.

        Parameters
        ----------
        start : (int, int, int), optional
            The first cell. A start with a coordinate below 0 gives an empty walk (so does the
            default on a grid with a 0 in its shape).

        Returns
        -------
        numpy.ndarray
            int64 rows ``(i, j, k, decision)``, from ``start`` back.

        Raises
        ------
        ContractError
            No decisions were kept; ``back`` is missing, does not return three integers, or
            returns a cell that is not strictly behind its own (every coordinate ``<=``, not all
            equal): a walk can never loop.
        IndexError
            ``start`` has a coordinate past the grid.

        Example
        -------
        >>> res = sweep(LCS3("ABCBDAB", "BDCABA", "BADACB"))  # doctest: +SKIP
        >>> res.traceback()[:2].tolist()  # examples/lcs3.py: skip b[5], then match "B"
        [[6, 5, 5, 2], [6, 4, 5, 0]]
        """
        dec = self._decisions()
        cls = self._cls
        n1, n2, n3 = self.shape
        if start is None:
            start = (n1 - 1, n2 - 1, n3 - 1)
        try:
            i0, j0, k0 = whole_numbers(start)
        except (TypeError, ValueError):
            raise IndexError(f"start is a cell (i, j, k), got {start!r}") from None
        if min(i0, j0, k0) < 0:
            return np.empty((0, 4), np.int64)
        self._inside((i0, j0, k0))
        data = tuple(contiguous(x) for x in self.recurrence.data())
        if getattr(cls, "back", None) is None:
            raise ContractError(
                f"{cls.__name__} defines no back(...): its decisions cannot be traced back; define "
                f"{cls._form('back', len(data))} as a @staticmethod"
            )
        d0 = int(dec[position(i0, j0, k0, n2, n3, self._starts)])
        probe_back(cls, (i0, j0, k0), d0, data)  # the return's form, in plain Python, before compiling
        with typing_errors(cls):
            path, err, *cells = _walker(cls, len(data))(i0, j0, k0, n2, n3, self._starts, dec, *data)
        if err:
            i, j, k, d, i2, j2, k2 = (int(x) for x in cells)
            raise step_error(cls, (i, j, k), d, (i2, j2, k2))
        return path

    def close(self):
        """Let the decisions go now (a spilled store's folder is removed, a page-locked block goes
        back to its pool); the values stay."""
        if self._store is not None:
            self._store.close()


def step_error(cls, at: tuple, d: int, to: tuple) -> ContractError:
    """The error for ``back(*at, d)``'s step to ``to``, not strictly behind ``at`` (the walk's and
    the checked sweep's, :mod:`gpudp.checked`)."""
    (i, j, k), (i2, j2, k2) = at, to
    return ContractError(
        f"{cls.__name__}.back({i}, {j}, {k}, {d}) returned ({i2}, {j2}, {k2}), which is not strictly "
        f"behind ({i}, {j}, {k}): each coordinate must be <= its own and not all equal, or a "
        "coordinate < 0 to end the walk"
    )


_WALK = """
def walk(i, j, k, n2, n3, starts, D{da}):
    path = np.empty((i + j + k + 1, 4), np.int64)  # each step lowers i + j + k
    n = 0
    while i >= 0 and j >= 0 and k >= 0:
        d = i + j + k
        dec = np.int64(D[starts[d] + row_offset(d, i, n2, n3) + j - max(0, d - i - (n3 - 1))])
        path[n, 0] = i
        path[n, 1] = j
        path[n, 2] = k
        path[n, 3] = dec
        n += 1
        i2, j2, k2 = back(i, j, k, dec{da})
        i2 = np.int64(i2)
        j2 = np.int64(j2)
        k2 = np.int64(k2)
        if i2 > i or j2 > j or k2 > k or (i2 == i and j2 == j and k2 == k):
            return path[:n], 1, i, j, k, dec, i2, j2, k2
        i = i2
        j = j2
        k = k2
    return path[:n], 0, 0, 0, 0, 0, 0, 0, 0
"""

_WALKERS = KernelFactory("grid3.walk", "rec", "n_data")


def _walker(rec_cls, n_data: int):
    k = _WALKERS.lookup(rec=rec_cls, n_data=n_data)
    if not k.ready:
        ns = {"np": np, "back": njit(rec_cls.back), "row_offset": njit(row_offset)}
        src = _WALK.format(da=layout.data_params(n_data))
        k = k.keep(jit_generated(src, "walk", ns, njit, "cpu"))
    return k.fn


# ---------------------------------------------------------------------------------------------
# The sweep
# ---------------------------------------------------------------------------------------------


def _check_memory(name: str, shape, need: dict, device, budget: int) -> None:
    """:func:`gpudp.checks.check_memory` of a 3-D sweep's figures (``need``: :func:`grid3_memory`'s):
    the device's ring, faces and slabs; in host memory the values and the decision store unless it
    spills to disk past the budget (where the store refuses if the disk cannot hold it either)."""
    gib = 2**30
    what = (
        f"{name}'s 3-D sweep of {' x '.join(map(str, shape))} cells keeps a ring of planes "
        f"({need['ring'] / gib:.2f} GiB), the far faces ({need['faces'] / gib:.2f} GiB)"
    )
    words = -(-need["decisions"] // WORD_BYTES)
    in_ram = need["decisions"] if need["decisions"] and not spills(words, budget) else 0
    check_memory(
        what,
        need["host_values"] + in_ram,
        need["device"] or 0,
        device,
        device_parts=f" and two decision slabs ({need['slabs'] / gib:.2f} GiB)",
        host_parts=f" and decisions in memory ({in_ram / gib:.2f} GiB)",
    )


def sweep_grid3(
    rec: Grid3Recurrence,
    backend="auto",
    memory_budget=None,
    progress=None,
    traceback=True,
    deadline=None,
    specialized=None,
):
    """Sweep a 3-D grid recurrence by planes (what :func:`gpudp.sweep` does for one).

    Parameters
    ----------
    rec : Grid3Recurrence
        The instance.
    backend : str
        ``"auto"`` (the CPU for sweeps it finishes before the GPU could start, else cuda when a GPU
        is usable), ``"cpu"`` or ``"cuda"``.
    memory_budget : int or str, optional
        Host bytes the decision store may take before it spills to a disk memmap (``"8G"``;
        default: GPUDP_MEMORY_BUDGET or half of what this process may allocate).
    progress : bool, optional
        A progress bar on stderr (None: only on a terminal).
    traceback : bool
        False: values only; the cell's decisions are dropped as it returns them and none are kept.
    deadline : gpudp.progress.Deadline, optional
        Checked between chunks of planes (:class:`gpudp.errors.TimeLimitReached` once passed).
    specialized : Grid3Recurrence, optional
        ``rec`` as :meth:`~gpudp.recurrence.Recurrence._specialized` gives it, where the caller
        (the engine's driver) made it already; the result still holds ``rec``.

    Returns
    -------
    Grid3Result
        ``last_value``, the far faces, ``stats``, ``decision(i, j, k)``, ``traceback(start)``.

    Raises
    ------
    ContractError
        A declaration the engine cannot use (named), a cell returning the wrong form, or a decision
        outside ``0 .. 2**decision_bits - 1`` (never truncated).
    InputError
        A bad ``shape()``, or a sweep that does not fit the device or this process's memory (the
        bytes named).
    BackendError
        ``backend="cuda"`` without a usable GPU.

    Example
    -------
    >>> from gpudp import Grid3Recurrence, sweep
    >>> class Paths(Grid3Recurrence):  # monotone lattice paths from (0, 0, 0) to each cell
    ...     value_dtype = np.int64
    ...     offsets = ((-1, 0, 0), (0, -1, 0), (0, 0, -1))
    ...     def shape(self):
    ...         return (3, 3, 3)
    ...     @staticmethod
    ...     def cell(i, j, k, a, b, c):  # reads outside the grid are boundary(...) = 0
    ...         return 1 if i + j + k == 0 else a + b + c
    >>> int(sweep(Paths(), backend="cpu").last_value)  # 6! / (2! 2! 2!)
    90
    """
    t_start = time.perf_counter()
    user_rec = rec
    # an instance giving its own offsets or value type: a class declaring them (the engine's, made once)
    rec = rec._specialized() if specialized is None else specialized
    walk_cls = type(rec)
    walk_cls._validate_class()
    shape = rec._checked_shape()
    n1, n2, n3 = shape
    cells = n1 * n2 * n3
    dropped = bool(not traceback and walk_cls.decision_bits)
    if dropped:
        rec = values_only(rec)
    cls = type(rec)
    bits = cls.decision_bits
    backend, why = backends.choose(backend, cells)
    runner = backends.get(backend)
    budget = default_budget() if memory_budget is None else parse_bytes(memory_budget)
    need = layout.memory(shape, cls.offsets, cls.value_dtype, bits, runner.values_on_device)
    _check_memory(cls.__name__, shape, need, runner.memory(), budget)
    data = tuple(contiguous(x) for x in rec._validate_instance())
    if cells:  # the form of cell's return, in plain Python, on (0, 0, 0) with its reads at fill
        fill = np.dtype(cls.value_dtype).type(cls.fill)
        probe_cell(cls, (0, 0, 0), (fill,) * len(cls.offsets), data)
        probe_boundary(cls, cls.offsets[0], data)  # outside: every offset has a -1
    starts = plane_starts(n1, n2, n3)
    store = None
    ddt = decision_dtype(bits)
    if bits:
        words = -(-need["decisions"] // WORD_BYTES)
        store = DecisionStore(words, budget, allocate=runner.allocate_words)
        decisions = np.asarray(store.words).view(ddt)[: max(cells, 1)]
    else:
        decisions = np.zeros(1, ddt)
    flag = np.zeros(5, np.int64)  # [count, decision, i, j, k] of a decision that does not fit
    stats = Stats(backend=backend, device=runner.device_name(), cells=cells)
    stats.extra.update(
        schedule="planes i + j + k",
        backend_choice=why,
        planes=len(starts) - 1,
        ring_planes=layout.ring_planes(cls.offsets),
        ring_bytes=need["ring"],
        decision_store_bytes=need["decisions"],
    )
    bar = progress_bar(cells, progress, deadline=deadline)
    try:
        if cells == 0:
            vt = np.dtype(cls.value_dtype)
            faces = tuple(np.full(s, cls.fill, vt) for s in ((n2, n3), (n1, n3), (n1, n2)))
        else:
            run = lowering.get("grid3", backend).run
            faces = run(cls, shape, data, starts, decisions, flag, bar, stats)
    except BaseException:
        if store is not None:
            store.close()
        raise
    finally:
        if bar is not None:
            bar.close()
    del decisions
    err = decision_overflow(cls.__name__, flag, "i, j, k", bits)
    if err is not None:
        if store is not None:
            store.close()
        raise err
    stats.seconds = time.perf_counter() - t_start
    stats.bytes_evicted = need["decisions"]
    stats.spilled_to_disk = bool(store is not None and store.on_disk)
    last = faces[2][n1 - 1, n2 - 1] if cells else None
    return Grid3Result(
        user_rec, shape, last, *faces, stats, _cls=walk_cls, _store=store, _starts=starts, _dropped=dropped
    )
