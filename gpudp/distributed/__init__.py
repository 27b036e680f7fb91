"""Batches on a Dask cluster: many instances over many workers (and GPUs), results in input order.

gpudp writes no scheduler of its own. A batch (:func:`map_chunks`) is cut into contiguous chunks of
about equal work, one ``dask.distributed`` task a chunk, each task the plug-in's own single-process
``solve_many`` on its chunk; Dask places the tasks on the workers, runs a task again elsewhere when
its worker dies (the chunk's answers come back once: the results are the tasks' return values,
gathered by position), and the plug-in joins the chunks' results in input order. In a cluster of
one worker a GPU (:func:`cluster` with ``gpus=True``, or dask-cuda's ``LocalCUDACluster``) each
worker sees one GPU, so each chunk runs on its worker's GPU.

:func:`map_chunks` sends each chunk's items from the client with its task. A batch whose data is in
the cluster already (dask arrays read from files, or made by an earlier step, or persisted) runs
by :func:`map_blocks` instead: the chunks are the arrays' row blocks (:func:`row_blocks`), each
task takes its blocks as Dask dependencies, and Dask computes them, or finds them where they are
kept, and runs the task on a worker holding its data; nothing of the arrays passes through the
client.

The package: :mod:`.chunks` (a batch over the workers), :mod:`.workers` (a local cluster: its
workers, their GPUs and CPUs, its start and stop under signals), :mod:`.bands` (one large grid in
column bands).

``pip install gpudp[dask]`` brings ``dask.distributed``; without
it, asking for a cluster raises :class:`~gpudp.InputError` saying so, and everything else works.

Example
-------
>>> import dask.array as da                                     # doctest: +SKIP
>>> from dask.distributed import Client, LocalCluster           # doctest: +SKIP
>>> from gpudp.problems import lcs
>>> with LocalCluster(n_workers=4) as cluster, Client(cluster) as client:  # doctest: +SKIP
...     lengths = lcs.solve_many(pairs, client=client).values  # the pairs sent from here
...     A, B = da.from_zarr("a.zarr"), da.from_zarr("b.zarr")  # a row of each: a pair
...     lengths = lcs.solve_many((A, B), client=client).values  # each block solved where it is read
"""

from .bands import BandResult, sweep_bands
from .chunks import (
    CHUNKS_PER_WORKER,
    chunk_bounds,
    dask_distributed,
    is_dask_collection,
    map_blocks,
    map_chunks,
    page_locked,
    row_blocks,
)
from .workers import (
    check_cluster,
    cluster,
    fit_workers,
    gpu_cpus,
    local_cluster,
    parse_cpulist,
    signals_held,
    visible_gpus,
)

__all__ = [
    "CHUNKS_PER_WORKER",
    "BandResult",
    "chunk_bounds",
    "check_cluster",
    "cluster",
    "dask_distributed",
    "fit_workers",
    "gpu_cpus",
    "is_dask_collection",
    "local_cluster",
    "map_blocks",
    "map_chunks",
    "page_locked",
    "parse_cpulist",
    "row_blocks",
    "signals_held",
    "sweep_bands",
    "visible_gpus",
]
