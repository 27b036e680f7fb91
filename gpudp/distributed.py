"""Batches on a Dask cluster: many instances over many workers (and GPUs), results in input order.

gpudp writes no scheduler of its own. A batch (:func:`map_chunks`) is cut into contiguous chunks of
about equal work, one ``dask.distributed`` task a chunk, each task the plug-in's own single-process
``solve_many`` on its chunk; Dask places the tasks on the workers, runs a task again elsewhere when
its worker dies (the chunk's answers come back once: the results are the tasks' return values,
gathered by position), and the plug-in joins the chunks' results in input order. With dask-cuda's
``LocalCUDACluster`` each worker sees one GPU, so each chunk runs on its worker's GPU.

``pip install gpudp[dask]`` brings ``dask.distributed`` (and ``dask-cuda`` where wanted); without
it, asking for a cluster raises :class:`~gpudp.InputError` saying so, and everything else works.

Example
-------
>>> from dask.distributed import Client, LocalCluster           # doctest: +SKIP
>>> from gpudp.problems import lcs
>>> with LocalCluster(n_workers=4) as cluster, Client(cluster) as client:  # doctest: +SKIP
...     lengths = lcs.solve_many(pairs, client=client).values
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence

import numpy as np

from .errors import InputError

__all__ = ["chunk_bounds", "cluster", "dask_distributed", "map_chunks"]

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
    ``{"workers", "chunks", "seconds"}``.

    Raises
    ------
    InputError
        without ``dask.distributed``, or a client with no workers.
    """
    dask_distributed()
    workers = len(client.scheduler_info().get("workers", {}))
    if workers == 0:
        client.wait_for_workers(1, timeout=60)
        workers = len(client.scheduler_info().get("workers", {}))
    if workers == 0:
        raise InputError("client", "the Dask cluster has no workers")
    t0 = time.perf_counter()
    bounds = chunk_bounds(costs, chunks or CHUNKS_PER_WORKER * workers)
    futures = [client.submit(solve_chunk, take(lo, hi), retries=retries, pure=False) for lo, hi in bounds]
    results = client.gather(futures)
    info = {"workers": workers, "chunks": len(bounds), "seconds": time.perf_counter() - t0}
    return results, bounds, info


@contextlib.contextmanager
def cluster(scheduler: str | None = None, workers: int | None = None, gpus: bool = False):
    """A ``Client``: of the scheduler at ``scheduler`` (an address), or of a local cluster of
    ``workers`` processes, each running its kernels on its share of the cores (with ``gpus``:
    dask-cuda's ``LocalCUDACluster``, one worker a GPU), closed on exit. The command line's
    ``--scheduler`` and ``--workers``."""
    dist = dask_distributed()
    if scheduler:
        with dist.Client(scheduler) as client:
            yield client
        return
    if gpus:
        try:
            from dask_cuda import LocalCUDACluster
        except ImportError:
            raise InputError("workers", "one worker a GPU needs dask-cuda: pip install dask-cuda") from None
        local = LocalCUDACluster(n_workers=workers)
    else:
        n = workers or 1
        share = str(max(1, (os.cpu_count() or 1) // n))  # each worker's numba threads: its share of cores
        local = dist.LocalCluster(
            n_workers=n,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            env={"NUMBA_NUM_THREADS": share},
        )
    with local, dist.Client(local) as client:
        yield client
