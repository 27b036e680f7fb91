"""A batch over a Dask cluster's workers: cut into chunks of about equal work (:func:`chunk_bounds`),
one task a chunk, the results gathered by position as each task ends (:func:`map_chunks`, the
items sent from the client; :func:`map_blocks`, the data in the cluster already, cut by
:func:`row_blocks`), with where the time went. :func:`dask_distributed` is the one gate to the
optional ``dask.distributed``."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

import numpy as np

from ..errors import InputError

__all__ = [
    "CHUNKS_PER_WORKER",
    "chunk_bounds",
    "dask_distributed",
    "is_dask_collection",
    "map_blocks",
    "map_chunks",
    "page_locked",
    "row_blocks",
]

#: chunks per worker: enough that a slow or lost worker holds up a small part of the batch
CHUNKS_PER_WORKER = 4


def dask_distributed():
    """The ``distributed`` module, or :class:`InputError` saying how to install it."""
    try:
        import distributed
    except ImportError:  # the optional extra is missing
        raise InputError(
            "client", "a Dask cluster needs dask.distributed: pip install 'gpudp[dask]'"
        ) from None
    return distributed


def chunk_bounds(costs: Sequence[float] | np.ndarray, n_chunks: int) -> list[tuple[int, int]]:
    """Contiguous ranges ``[lo, hi)`` covering ``len(costs)`` items in at most ``n_chunks`` pieces of
    about equal total cost (each at least one item; an item costlier than a share is a chunk alone)."""
    costs = np.asarray(costs, dtype=np.float64)
    n = len(costs)
    if n == 0:
        return []
    n_chunks = max(1, min(int(n_chunks), n))
    cum = np.cumsum(np.maximum(costs, 0) + 1e-9 * max(costs.max(), 1))  # zero costs still count
    cuts = np.searchsorted(cum, cum[-1] * np.arange(1, n_chunks) / n_chunks) + 1  # past each share
    edges = np.unique(np.concatenate(([0], cuts, [n])))
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a]


def is_dask_collection(x) -> bool:
    """Whether ``x`` is a Dask collection (a dask array, a ``dask.delayed`` object ...), without
    importing dask for an object that has no Dask graph."""
    if getattr(x, "__dask_graph__", None) is None:
        return False
    import dask

    return dask.is_dask_collection(x)


def _workers(client) -> int:
    """How many workers ``client``'s cluster has (waiting up to a minute for a first one)."""
    dask_distributed()
    workers = len(client.scheduler_info().get("workers", {}))
    if workers == 0:
        client.wait_for_workers(1, timeout=60)
        workers = len(client.scheduler_info().get("workers", {}))
    if workers == 0:
        raise InputError("client", "the Dask cluster has no workers")
    return workers


def _timed(fn: Callable, *args) -> tuple:
    """``(fn(*args), (start, end))`` on a worker: the wall-clock times (epoch seconds) of the call."""
    t = time.time()
    out = fn(*args)
    return out, (t, time.time())


def _gather(futures: list) -> tuple[list, list]:
    """The results of :func:`_timed` tasks in their order, and their spans, each fetched as soon as
    its task ends (while the others still run; ``client.gather`` would wait for all and then fetch
    every result at once). The first error raised in a task is raised here."""
    at = {f.key: k for k, f in enumerate(futures)}
    results: list = [None] * len(futures)
    spans: list = [None] * len(futures)
    # on the futures' own client's loop: as_completed takes the default client's otherwise, and with
    # two clients in one process (a user's and gpudp's local cluster) two threads then share a comm
    loop = futures[0].client.loop if futures else None
    for fut, (res, span) in dask_distributed().as_completed(futures, with_results=True, loop=loop):
        results[at[fut.key]], spans[at[fut.key]] = res, span
    return results, spans


def _info(workers: int, chunks: int, t0: float, started: float, spans: list) -> dict:
    """A map's ``info``: workers, chunks and seconds, and where the time went (the workers' clocks
    against this process's: one host here; across hosts their skew enters): each chunk's seconds
    on its worker, the wait before the first one started and after the last one ended."""
    seconds = time.perf_counter() - t0
    info = {"workers": workers, "chunks": chunks, "seconds": seconds, "started": started}
    if spans:
        info.update(
            chunk_seconds=[float(b - a) for a, b in spans],
            first_chunk_wait=float(min(a for a, _ in spans) - started),
            last_result_wait=float(started + seconds - max(b for _, b in spans)),
        )
    return info


def map_chunks(
    client,
    solve_chunk: Callable,
    take: Callable[[int, int], object],
    costs: Sequence[float] | np.ndarray,
    chunks: int | None = None,
    retries: int = 2,
) -> tuple[list, list[tuple[int, int]], dict]:
    """Run ``solve_chunk(take(lo, hi))`` for every chunk on ``client``'s workers.

    Parameters
    ----------
    client : dask.distributed.Client
    solve_chunk : picklable callable (a module-level function or a ``functools.partial`` of one)
        the single-process batch solve of one chunk.
    take : ``take(lo, hi)`` gives the items ``lo .. hi - 1`` (sent with their task).
    costs : one number per item, its work (e.g. cells): chunks of about equal cost.
    chunks : how many chunks (default :data:`CHUNKS_PER_WORKER` per worker).
    retries : times Dask runs a chunk again after an exception in it (a worker that dies is
        handled by Dask itself: its tasks go to other workers).

    Returns
    -------
    ``(results, bounds, info)``: the chunks' results and ranges, in input order, and
    ``{"workers", "chunks", "seconds", "started"}`` (``started``: the wall-clock time, epoch
    seconds, the call began) and, with chunks, ``chunk_seconds`` (each chunk's on its worker),
    ``first_chunk_wait`` and ``last_result_wait`` (before the first started, after the last ended).

    Raises
    ------
    InputError
        without ``dask.distributed``, or a client with no workers.
    """
    workers = _workers(client)
    t0, started = time.perf_counter(), time.time()
    bounds = chunk_bounds(costs, chunks or CHUNKS_PER_WORKER * workers)
    futures = [
        client.submit(_timed, solve_chunk, take(lo, hi), retries=retries, pure=False) for lo, hi in bounds
    ]
    results, spans = _gather(futures)
    return results, bounds, _info(workers, len(bounds), t0, started, spans)


def map_blocks(
    client, solve_chunk: Callable, blocks: Sequence[tuple], sizes: Sequence[int], retries: int = 2
) -> tuple[list, list[tuple[int, int]], dict]:
    """Run ``solve_chunk(*blocks[k])`` for every chunk ``k`` on ``client``'s workers, the chunks'
    data in the cluster already: :func:`map_chunks` for data that is not on the client.

    Each chunk is one task that takes its arguments as Dask dependencies: Dask computes them on the
    workers (or finds them there when they are persisted or futures) and runs the task on a worker
    that holds its data where it can, moving a block between workers only where a chunk's blocks
    are on different ones; none passes through the client.

    Parameters
    ----------
    client : dask.distributed.Client
    solve_chunk : picklable callable (a module-level function or a ``functools.partial`` of one)
        the single-process batch solve of one chunk, called with the chunk's arguments as computed
        values (e.g. numpy arrays for the blocks of dask arrays).
    blocks : one tuple of arguments a chunk, in input order
        Dask collections (``dask.delayed`` objects, such as the blocks :func:`row_blocks` gives),
        ``dask.distributed`` futures, or plain values (sent from the client with the task).
    sizes : the items of each chunk: chunk ``k`` holds items ``sum(sizes[:k]) ..`` of the batch.
    retries : times Dask runs a chunk again after an exception in it.

    Returns
    -------
    ``(results, bounds, info)`` as :func:`map_chunks` gives them.

    Raises
    ------
    InputError
        without ``dask.distributed``, or a client with no workers.

    Example
    -------
    >>> blocks, sizes = row_blocks(A, B)  # doctest: +SKIP
    >>> results, bounds, info = map_blocks(client, solve_rows, blocks, sizes)  # doctest: +SKIP
    """
    if len(blocks) != len(sizes):
        raise ValueError(f"{len(blocks)} chunks of blocks against {len(sizes)} sizes")
    workers = _workers(client)
    import dask

    t0, started = time.perf_counter(), time.time()
    edges = np.concatenate(([0], np.cumsum(np.asarray(sizes, dtype=np.int64))))
    bounds = [(int(lo), int(hi)) for lo, hi in zip(edges[:-1], edges[1:], strict=True)]
    tasks = [dask.delayed(_timed, pure=False)(solve_chunk, *args) for args in blocks]
    results, spans = _gather(client.compute(tasks, retries=retries)) if tasks else ([], [])
    return results, bounds, _info(workers, len(bounds), t0, started, spans)


def row_blocks(*arrays) -> tuple[list[tuple], list[int]]:
    """The row blocks of dask arrays of as many rows, aligned, as :func:`map_blocks` takes them.

    The blocks are the first array's row chunks; each other array is rechunked along its rows to
    them, and every array is made one block along its other axes (each row whole in its block).
    Nothing is computed: the blocks are ``dask.delayed`` objects, computed (or found, where the
    arrays are persisted) on the workers.

    Parameters
    ----------
    *arrays : dask arrays of as many rows (of known chunk sizes); a numpy array among them is cut
        into the same blocks (and travels from the client with the tasks).

    Returns
    -------
    ``(blocks, sizes)``: per row block (empty ones left out), a tuple of one block of each array,
    in row order; and the rows of each block.

    Raises
    ------
    InputError
        when an array is not a dask or numpy array, has unknown chunk sizes, or the arrays' rows
        differ.

    Example
    -------
    >>> import dask
    >>> import dask.array as da
    >>> A = da.zeros((10, 4), chunks=(3, 2), dtype="u1")
    >>> B = da.zeros((10, 6), chunks=(5, 6), dtype="u1")
    >>> blocks, sizes = row_blocks(A, B)
    >>> sizes, [b.shape for b in dask.compute(*blocks[1])]
    ([3, 3, 3, 1], [(3, 4), (3, 6)])
    """
    import dask.array as da

    lead = next((x for x in arrays if isinstance(x, da.Array)), None)
    for k, x in enumerate(arrays):
        if not isinstance(x, (da.Array, np.ndarray)):
            raise InputError(f"arrays[{k}]", f"a dask or numpy array, got {type(x).__name__}")
        if any(math.isnan(n) for n in x.shape):
            raise InputError(
                f"arrays[{k}]", "unknown chunk sizes: call .compute_chunk_sizes() on the dask array first"
            )
        if x.ndim == 0 or x.shape[0] != arrays[0].shape[0]:
            n = x.shape[0] if x.ndim else "no"
            raise InputError(f"arrays[{k}]", f"{n} rows against {arrays[0].shape[0]}")
    if lead is None:
        raise InputError("arrays", "no dask array among them")
    rows = lead.chunks[0]
    cut = []
    for x in arrays:
        if not isinstance(x, da.Array):
            x = da.from_array(x, chunks=(rows,) + x.shape[1:])
        x = x.rechunk({0: rows, **{axis: -1 for axis in range(1, x.ndim)}})
        cut.append(x.to_delayed().reshape(len(rows)))
    keep = [k for k, n in enumerate(rows) if n > 0]
    return [tuple(c[k] for c in cut) for k in keep], [int(rows[k]) for k in keep]


def page_locked(x):
    """A dask array whose blocks are kept in page-locked host memory on the workers that hold them
    (:func:`gpudp.backends.page_locked` a block; a worker without a usable GPU keeps its blocks as
    they are), for batches solved from resident data: a chunk's blocks then go to the worker's GPU
    by DMA from where they lie, with no staging copy on the host. Persist the result
    (``client.persist``) so that the page-locked blocks stay; the copy is made once, where each
    block is.

    Parameters
    ----------
    x : dask array (a numpy array is page-locked in this process instead)

    Returns
    -------
    The lazy dask array of the page-locked blocks (same shape, chunks and dtype).

    Raises
    ------
    InputError
        for anything but a dask or numpy array.

    Example
    -------
    >>> A = client.persist(page_locked(A))  # doctest: +SKIP
    >>> lengths = lcs.solve_many((A, B), client=client).values  # doctest: +SKIP
    """
    from ..backends import page_locked as lock

    if isinstance(x, np.ndarray):
        return lock(x)
    import dask.array as da

    if not isinstance(x, da.Array):
        raise InputError("x", f"a dask or numpy array, got {type(x).__name__}")
    return x.map_blocks(lock, dtype=x.dtype, meta=np.empty((0,) * x.ndim, x.dtype))
