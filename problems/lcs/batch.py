"""Many pairs of sequences in one call: the batch runner the sequence solvers share.

A solver describes itself as a :class:`PairSolver`: its checked one-pair ``solve`` (the witness
path), the lowering family of its kernels for the values of a packed batch (a module a backend,
:mod:`gpudp.lowering`: :mod:`gpudp.problems.lcs.cpu` and :mod:`gpudp.problems.lcs.cuda` for the
LCS), and words for reports. :func:`run` reads the pairs (a pair
that cannot be read is an error of that pair, not of the batch), packs them, picks the backend,
runs the kernel, and re-solves a few pairs by the checked path on the host (while the GPU
computes) as the batch's cross-check. With ``traceback=True``, a solver that can build its
witnesses for the whole batch (the LCS: :mod:`.subsequences`) does so from the same packing; any
other solves each pair by its ``solve``.
"""

from __future__ import annotations

import functools
import math
import operator
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gpudp import backends, lowering
from gpudp.backends import choose as choose_backend
from gpudp.backends import device_name, is_device_array
from gpudp.errors import CheckError, GpudpError, InputError
from gpudp.memory import available_memory, describe
from gpudp.progress import progress_bar
from gpudp.solution import BatchResult, NoSolutions, Stats, ship

from . import arrow, bitparallel, plain, subsequences
from .sequences import bulk_pairs, encode, exact_codes, kind, uniform_rows
from .subsequences import Rows, Subsequences

#: the kernel family whose rate predicts a batch or a cdist, in cells (gpudp.backends.rates): the
#: bit-parallel kernels run about 32 cells a word operation
FAMILY = "bitparallel"

__all__ = ["PairSolver", "run"]


@dataclass(frozen=True)
class PairSolver:
    """What :func:`run` needs of a sequence solver."""

    solve: Callable  # solve(a, b, backend=, progress=) -> checked Solution
    family: str  # the lowering family of the batch kernels (gpudp.lowering): each backend's module
    # has launch(packed) -> an object whose finish() gives (values, kernel seconds); pairs in GPU
    # memory are read where they lie by a backend whose values live on the device, else copied
    method: str  # e.g. "bit-parallel (Hyyro 2004)"
    what: str  # e.g. "LCS length"
    # With both, traceback=True runs the whole batch's witnesses through :mod:`.subsequences`:
    # witness(a, b, value, indices_a, indices_b, stats) -> checked Solution; pick(a, indices_a) ->
    # the subsequence in a's type. Without, each pair is solved by ``solve``.
    witness: Callable | None = None
    pick: Callable | None = None
    # The re-solve of the ``verify`` pairs, apart from the batch's kernels: ``table``, the name of
    # the pair's textbook table in :mod:`.plain` (pairs of at most ``plain.TABLE_CELLS`` cells), and
    # past that ``engine(a, b, backend=, progress=)`` -> checked Solution (None: ``solve``)
    table: str | None = None
    engine: Callable | None = None

    def checked_value(self, a, b) -> int:
        """Pair ``(a, b)``'s value re-solved on the host: by its table where it is small, else by the
        engine's sweep (every core, stopped by a Ctrl-C between chunks)."""
        if self.table is not None and plain.small(a, b):
            return getattr(plain, self.table)(a, b)
        return (self.engine or self.solve)(a, b, backend="cpu", progress=False).value


def _shipped(fn: Callable, *args) -> tuple[np.ndarray, int, BatchResult]:
    """``fn(*args)`` on a worker, its result made ready for the way back (:func:`ship`)."""
    return ship(fn(*args))


def pair_codes(a, b, p: int) -> tuple[np.ndarray, np.ndarray]:
    xa, xb = encode(a, f"pairs[{p}][0]"), encode(b, f"pairs[{p}][1]")
    if (kind(a) == "str") != (kind(b) == "str"):
        raise InputError(f"pairs[{p}]", "a str pairs only with a str; encode both alike")
    return exact_codes(xa, xb)  # bytes stay bytes: the batch packs them without widening


def unpack(pair, p: int) -> tuple:
    """Pair ``p`` of a batch as ``(a, b)``. Raises :class:`InputError` naming ``pairs[p]`` for what
    is not two things (None, a number, a 1- or 3-tuple) and for a str or bytes (``"AC"`` is one
    sequence, not the pair ``("A", "C")``): the error of that pair, in every mode of :func:`run`."""
    if isinstance(pair, str | bytes | bytearray):
        raise InputError(f"pairs[{p}]", f"a pair is two sequences (a, b), got one {type(pair).__name__}")
    try:
        a, b = pair
    except (TypeError, ValueError):
        try:
            what = f"a {type(pair).__name__} of {len(pair)}"
        except TypeError:
            what = type(pair).__name__
        raise InputError(f"pairs[{p}]", f"a pair is two sequences (a, b), got {what}") from None
    return a, b


#: host bytes :func:`run` takes beyond the pairs as given, ``(a pair, a symbol)``: the pairs read
#: (two code arrays and a tuple each), packed, their values and places; peak RSS of 100,000 and
#: 200,000 pairs of 10 and of 400 symbols on the cpu, 2026-11-27: 530-570 bytes a pair and 2 a
#: symbol for lengths, 590-640 and 4 with the LCS's tracebacks, 1,840 and 41 where each pair is
#: solved with its witness (edit distance's scripts); rounded up
HOST_BYTES = {"lengths": (640, 3), "traceback": (720, 5), "solve": (2_100, 48)}


def host_bytes(solver: PairSolver, pairs: int, symbols: int, traceback: bool) -> int:
    """About the host bytes :func:`run` takes for ``pairs`` pairs of ``symbols`` symbols in all, a
    list of them (:data:`HOST_BYTES`)."""
    mode = "lengths" if not traceback else "traceback" if solver.witness is not None else "solve"
    per_pair, per_symbol = HOST_BYTES[mode]
    return pairs * per_pair + symbols * per_symbol


def check_memory(need: int, what: str, change: str, budget: int | None = None, option: str = "") -> None:
    """Refuse, before anything is made, a batch that needs ``need`` host bytes (:func:`host_bytes`)
    beyond what this process may allocate (:func:`gpudp.memory.available_memory`) or ``budget``
    (given as ``option``): one :class:`InputError` naming the bytes, the limit and ``change``, what
    to do instead."""
    avail = available_memory()
    by_budget = budget is not None and budget < avail
    if need <= (budget if by_budget else avail):
        return
    if by_budget:
        over, change = f"the memory budget of {budget / 2**30:.2f} GiB", f"{change}, or a larger {option}"
    else:
        over = describe()  # reads the host's figures again: only for the message
    need_words = f"{what} needs about {need / 2**30:.2f} GiB of host memory"
    raise InputError("memory", f"{need_words}, over {over}: {change}")


#: ``verify`` when not given (None) or True: pairs re-solved by the checked path
VERIFY = 2


def check_options(pairs, traceback, verify) -> tuple[bool, int]:
    """``traceback`` and ``verify`` as :func:`run` uses them, checked with ``pairs`` before any work.

    ``traceback``: a bool (or 0 / 1). ``verify``: a number of pairs >= 0; None or True: the default
    (:data:`VERIFY`), False: 0. ``pairs`` must be iterable and not a str or bytes (a whole batch
    given wrong, not a pair). Anything else raises :class:`InputError` naming the argument."""
    if not (isinstance(traceback, bool | np.bool_) or (isinstance(traceback, int) and traceback in (0, 1))):
        raise InputError("traceback", f"must be True or False, got {traceback!r}")
    if verify is None or verify is True:
        count = VERIFY
    elif verify is False:
        count = 0
    else:
        try:
            count = operator.index(verify)
        except TypeError:
            count = -1
        if count < 0:
            raise InputError(
                "verify",
                f"a number of pairs to re-solve and compare (0: none; None: {VERIFY}), got {verify!r}",
            )
    if isinstance(pairs, str | bytes | bytearray) or not hasattr(pairs, "__iter__"):
        raise InputError(
            "pairs",
            f"an iterable of (a, b) pairs or a tuple (A, B) of two 2-D arrays, got {type(pairs).__name__}",
        )
    return bool(traceback), count


def as_arrays(pairs):
    """``(A, B)`` when ``pairs`` is two 2-D integer arrays of as many rows, else None."""
    if not (isinstance(pairs, tuple) and len(pairs) == 2):
        return None
    a, b = pairs
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.ndim == 2 and b.ndim == 2):
        return None
    _check_arrays(a, b)
    if a.dtype != b.dtype:
        a, b = exact_codes(a.reshape(-1), b.reshape(-1))
        a, b = a.reshape(pairs[0].shape), b.reshape(pairs[1].shape)
    return np.ascontiguousarray(a), np.ascontiguousarray(b)


def device_arrays(pairs):
    """``(A, B)`` as numba device arrays when ``pairs`` is two 2-D arrays in GPU memory (CuPy,
    PyTorch CUDA tensors, numba's device arrays: :func:`gpudp.backends.is_device_array`), else None.

    Raises
    ------
    InputError
        one array on the GPU and the other not; an array that is not 2-D, not uint8 (the device
        path reads bytes, or codes below 256, as they are), or not C-contiguous; rows that differ.
    """
    if not (isinstance(pairs, tuple) and len(pairs) == 2):
        return None
    on = [is_device_array(x) for x in pairs]
    if not any(on):
        return None
    if not all(on):
        raise InputError("pairs", "one array in GPU memory and one in host memory: give both on one side")
    from . import cuda  # only now: the arrays are on a GPU

    out = tuple(cuda.as_device_array(x) for x in pairs)
    for name, x in zip(("pairs[0]", "pairs[1]"), out, strict=True):
        if x.ndim != 2 or x.dtype != np.uint8:
            raise InputError(
                name,
                f"pairs in GPU memory are two 2-D uint8 arrays (bytes, or codes below 256), got "
                f"{x.ndim}-D {x.dtype}: convert them on the device first",
            )
        if not x.is_c_contiguous():
            raise InputError(
                name, "a GPU array of pairs must be C-contiguous: make a contiguous copy on the device"
            )
    _check_arrays(*out)
    return out


def dask_arrays(pairs):
    """``(A, B)`` when ``pairs`` is two 2-D integer arrays of as many rows, one or both of them a
    Dask collection (a dask array: checked from its shape and dtype, nothing computed), else None."""
    from gpudp.distributed import is_dask_collection

    if is_dask_collection(pairs):
        raise InputError(
            "pairs", "a Dask collection of pairs: give (A, B), two 2-D dask arrays, a row of each a pair"
        )
    if not (isinstance(pairs, tuple | list) and len(pairs) == 2 and any(map(is_dask_collection, pairs))):
        return None
    if isinstance(pairs, list):  # a list is of pairs: two dask arrays would be two wrong pairs
        raise InputError("pairs", "dask arrays of pairs: give the tuple (A, B), not a list")
    for name, x in zip(("pairs[0]", "pairs[1]"), pairs, strict=True):
        if getattr(x, "ndim", None) != 2 or getattr(x, "dtype", None) is None:
            raise InputError(name, f"pairs with a Dask collection are two 2-D arrays, got {type(x).__name__}")
    _check_arrays(*pairs)
    return pairs


def _check_arrays(a, b):
    for name, x in (("pairs[0]", a), ("pairs[1]", b)):
        if x.dtype.kind not in "iu":
            raise InputError(name, f"2-D arrays of pairs must hold integers, got {x.dtype}")
    known = not (math.isnan(a.shape[0]) or math.isnan(b.shape[0]))  # a dask array's may be unknown
    if known and a.shape[0] != b.shape[0]:
        raise InputError("pairs", f"{a.shape[0]} rows against {b.shape[0]}: one row of each per pair")


def run(
    solver: PairSolver, pairs, backend: str, traceback: bool, verify: int, progress, client=None
) -> BatchResult:
    """Values of many pairs (see :func:`gpudp.problems.lcs.solve_many` for the parameters)."""
    traceback, verify = check_options(pairs, traceback, verify)
    resident = dask_arrays(pairs)
    if resident is not None and client is None:
        raise InputError(
            "client",
            "dask arrays need client=, a dask.distributed.Client, to be solved block by block on "
            "its workers (or .compute() them into numpy arrays first)",
        )
    if client is not None:
        return _run_on(client, solver, pairs, backend, traceback, verify, resident)
    t0 = time.perf_counter()
    device = device_arrays(pairs)
    if device is not None:  # run where they lie unless the caller's backend reads host arrays
        if not traceback and (backend == "auto" or backends.get(backend).values_on_device):
            return _run_device(solver, *device, verify, t0)
        pairs = tuple(x.copy_to_host() for x in device)  # the host's paths read host arrays
    arrays, bulk = as_arrays(pairs), None
    held = arrow.pair_sides(pairs) if arrays is None else None
    if arrays is not None:  # rows of two arrays: no object per pair unless one is asked for
        pairs = Rows(*arrays)
    else:
        if held is not None:  # Arrow arrays or Strs: read from their buffers (a side with nulls: by item)
            sa, sb, bulk = held
            pairs = Rows(sa, sb) if bulk is not None else list(zip(sa, sb, strict=True))
        else:
            pairs = list(pairs)
        n = len(pairs)
        check_memory(host_bytes(solver, n, 0, traceback), f"a batch of {n:,} pairs", "give fewer at a time")
    values = np.full(len(pairs), -1, np.int64)
    errors: dict[int, str] = {}
    if traceback and solver.witness is None:
        solutions = [None] * len(pairs)
        bar = progress_bar(len(pairs), progress, "pair")
        kernel_s, cells, used = 0.0, 0, None
        for p, pair in enumerate(pairs):
            try:
                a, b = unpack(pair, p)
                pair_codes(a, b, p)  # its error as the packed modes give it
                sol = solver.solve(a, b, backend=backend, progress=False)
            except GpudpError as e:
                errors[p] = str(e)
            else:
                solutions[p], values[p] = sol, sol.value
                kernel_s += sol.stats.kernel_seconds
                cells += sol.stats.cells
                used = sol.stats.backend
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
        used = used or choose_backend(backend, 0)[0]
        stats = Stats(backend=used, device=device_name(used), cells=cells, kernel_seconds=kernel_s)
        stats.extra.update(pairs=len(pairs), method="wavefront engine, one sweep a pair")
        stats.seconds = time.perf_counter() - t0
        return BatchResult(values, errors, solutions, list(range(len(pairs))), stats)
    coded, index, later = [], [], None
    if arrays is None and bulk is None:
        buffers = _host_buffers(solver, backend)
        # read into the backend's buffers, the rows' bytes (if rows) left for its launch to copy
        lazily = buffers is not None and not traceback
        bulk = bulk_pairs(pairs, buffers, later=lazily)
        if bulk is not None and lazily:
            *bulk, later = bulk
    if bulk is not None:  # all of one length a side: the rows' path, no offsets
        arrays = uniform_rows(*bulk)
        if arrays is not None:
            bulk = None
    if arrays is not None:
        packed = bitparallel.pack_arrays(*arrays, table=False)
        packed.fill = later and later.fill
        index, sizes = np.arange(len(pairs)), None
    elif bulk is not None:  # every pair two sequences of one form: read in bulk, no array per pair
        packed = bitparallel.pack_buffers(*bulk, table=False)
        index = np.arange(len(pairs))
        sizes = np.diff(bulk[1]) * np.diff(bulk[3])
    else:
        for p, pair in enumerate(pairs):
            try:
                coded.append(pair_codes(*unpack(pair, p), p))
                index.append(p)
            except GpudpError as e:
                errors[p] = str(e)
        packed = bitparallel.pack(coded, table=False)
        sizes = np.fromiter((len(a) * len(b) for a, b in coded), np.int64, len(coded))
    cells = packed.cells
    used, why = choose_backend(backend, cells, FAMILY)
    picks = _picks(index, sizes, verify)
    if traceback:
        return _run_traceback(
            solver, pairs, packed, np.asarray(index, np.int64), errors, picks, used, why, t0
        )
    got, wants, kernel_s = _computed(solver, packed, used, pairs, picks)
    if len(index) == len(values):  # every pair packed, in order: the kernel's array as it is
        values = np.asarray(got, np.int64)
    else:
        values[index] = got
    _compare(solver, values, picks, wants)
    verified = picks
    stats = Stats(backend=used, device=device_name(used), cells=cells, kernel_seconds=kernel_s)
    stats.extra.update(pairs=len(pairs), method=solver.method, backend_choice=why)
    stats.seconds = time.perf_counter() - t0
    backends.observe(FAMILY, cells, stats)
    return BatchResult(values, errors, NoSolutions(len(pairs)), verified, stats)


def _host_buffers(solver: PairSolver, backend: str):
    """Where a list read from its objects (:mod:`.strlists`) puts its symbols: with a backend asked
    for by name whose lowering of the batch offers ``host_symbols`` (the cuda one: page-locked
    blocks of the process's pool, which its launch copies to the device from where they lie, with
    no staging copy and no page to fault in on a warm call), that; else None (numpy's pageable
    arrays)."""
    if backend not in lowering.declared().get(solver.family, ()):
        return None
    return getattr(lowering.get(solver.family, backend), "host_symbols", None)


def _run_device(solver, a, b, verify: int, t0: float) -> BatchResult:
    """:func:`run` for two 2-D uint8 arrays in GPU memory (:func:`device_arrays`), on the cuda
    backend: packed where they lie (their table found on the device), one kernel over them, no copy
    of the pairs but the few re-solved on the host, fetched before the kernel starts."""
    from . import cuda

    packed = bitparallel.pack_arrays(a, b, table=False, offsets=cuda.device_row_offsets)
    n = a.shape[0]
    picks = _picks(range(n), None, verify)
    checked = {p: (a[p].copy_to_host(), b[p].copy_to_host()) for p in picks}
    values, wants, kernel_s = _computed(solver, packed, "cuda", checked, picks)
    _compare(solver, values, picks, wants)
    stats = Stats(backend="cuda", device=device_name("cuda"), cells=packed.cells, kernel_seconds=kernel_s)
    stats.extra.update(pairs=n, method=solver.method, backend_choice="the pairs are in GPU memory")
    stats.seconds = time.perf_counter() - t0
    return BatchResult(values, {}, NoSolutions(n), picks, stats)


def _computed(solver, packed, used: str, pairs, picks) -> tuple[np.ndarray, list[int], float]:
    """``(values, wants, kernel seconds)``: the packed batch's values by ``used``'s kernel, and the
    values of ``picks`` (``pairs[p]`` on the host) by the solver's checked path, computed while the
    GPU runs (after the CPU's kernel, which has finished when its launch returns). A batch whose
    symbols are still to be read (``packed.fill``) is read by the launch slice by slice where the
    lowering says it can (``reads_later``), else first."""
    lowered = lowering.get(solver.family, used)
    if not getattr(lowered, "reads_later", False):
        bitparallel.filled(packed)
    run = lowered.launch(packed)
    wants = _checked_values(solver, pairs, picks)
    got, kernel_s = run.finish()
    return got, wants, kernel_s


def _compare(solver, values: np.ndarray, picks, wants) -> None:
    """A :class:`CheckError` where a re-solved pair's checked value differs from the batch's."""
    for p, want in zip(picks, wants, strict=True):
        if want != values[p]:
            raise CheckError(
                f"pair {p}: the batch gave {solver.what} {values[p]}, the plain dynamic program {want}"
            )


def _run_traceback(solver, pairs, packed, index, errors, picks, used, why, t0) -> BatchResult:
    """:func:`run` with ``traceback=True`` for a solver that builds the whole batch's witnesses:
    lengths and checked positions of every packed pair (:func:`.subsequences.solve_packed`), the
    ``picks`` re-solved by the checked one-pair path meanwhile and compared."""
    values = np.full(len(pairs), -1, np.int64)
    wants: list[int] = []
    traced = subsequences.solve_packed(
        packed,
        used,
        solve_one=solver.solve,
        pair_of=lambda k: pairs[int(index[k])],
        while_busy=lambda: wants.extend(_checked_values(solver, pairs, picks)),
        names=index,
    )
    values[index] = traced.lengths
    start = np.full(len(pairs), -1, np.int64)
    start[index] = traced.start
    for k, why_failed in traced.failed.items():
        errors[int(index[k])] = why_failed
    _compare(solver, values, picks, wants)
    used = traced.backend
    why = traced.extra.pop("backend_choice", why)
    device = device_name(used)
    solved = {int(index[k]): sol for k, sol in traced.solved.items()}
    subs = Subsequences(
        pairs, values, start, traced.pos_a, traced.pos_b, solver.witness, solver.pick, used, device, solved
    )
    stats = Stats(backend=used, device=device, cells=packed.cells, kernel_seconds=traced.kernel_seconds)
    stats.extra.update(
        pairs=len(pairs),
        method=solver.method + ", every column's vector kept and walked back",
        backend_choice=why,
        rechecked=list(picks),
        **traced.extra,
    )
    stats.seconds = time.perf_counter() - t0
    verified = np.flatnonzero(values >= 0).tolist()
    return BatchResult(values, errors, subs.solutions(), verified, stats, subs)


def _run_on(client, solver, pairs, backend, traceback, verify, resident=None) -> BatchResult:
    """:func:`run` over a Dask cluster: chunks of about equal cells, each run by :func:`run` on a
    worker (``verify`` pairs cross-checked per chunk), joined in input order. ``resident``: the two
    dask arrays of :func:`dask_arrays`, whose row blocks are the chunks, each solved on a worker
    that holds it (nothing of them through the client)."""
    from gpudp import distributed

    fn = functools.partial(run, solver, backend=backend, traceback=traceback, verify=verify, progress=False)
    if resident is not None:
        blocks, sizes = distributed.row_blocks(*resident)
        rows = functools.partial(_shipped, functools.partial(_run_rows, fn))
        return BatchResult.concat(*distributed.map_blocks(client, rows, blocks, sizes))
    arrays = as_arrays(pairs)
    if arrays is not None:
        a, b = arrays
        costs = np.full(len(a), max(a.shape[1] * b.shape[1], 1), np.int64)

        def take(lo, hi):
            return a[lo:hi], b[lo:hi]
    else:
        pairs = list(pairs)
        costs = [_cells(pair) for pair in pairs]

        def take(lo, hi):
            return pairs[lo:hi]

    return BatchResult.concat(*distributed.map_chunks(client, functools.partial(_shipped, fn), take, costs))


def _run_rows(fn, a, b) -> BatchResult:
    """A chunk of rows on a worker: ``fn`` (:func:`run` with its options) on blocks ``a`` and ``b``
    (blocks in GPU memory as they are: read there, not copied to the host)."""
    return fn(tuple(x if is_device_array(x) else np.asarray(x) for x in (a, b)))


def _cells(pair) -> int:
    """A pair's cells, for sharing out the work (1 for a pair that is not two sized things: its
    error comes from the worker)."""
    try:
        a, b = pair
        return max(len(a) * len(b), 1)
    except (TypeError, ValueError):
        return 1


def _picks(index, sizes, k: int) -> list[int]:
    """``k`` random pairs of the smaller half (``sizes``: cells of each packed pair; None: all of one
    size, as rows of two arrays are) to cross-check."""
    if k <= 0 or not len(index):
        return []
    rng = np.random.default_rng()
    if sizes is None:  # no median to find: 40 ms for 4,000,000 pairs
        pick = rng.choice(len(index), min(k, len(index)), replace=False)
    else:
        small = np.flatnonzero(sizes <= np.median(sizes))
        pick = rng.choice(small, min(k, len(small)), replace=False)
    return sorted(int(index[q]) for q in pick)


def _checked_values(solver, pairs, picks) -> list[int]:
    """The values of ``picks`` by the solver's checked path on the cpu (a witness, checked)."""
    return [solver.checked_value(*pairs[p]) for p in picks]
