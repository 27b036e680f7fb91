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

from __future__ import annotations

import contextlib
import logging
import math
import numbers
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence

import numpy as np

from .errors import InputError

__all__ = [
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
    "row_blocks",
    "signals_held",
    "visible_gpus",
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
    for fut, (res, span) in dask_distributed().as_completed(futures, with_results=True):
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
    from .backends import page_locked as lock

    if isinstance(x, np.ndarray):
        return lock(x)
    import dask.array as da

    if not isinstance(x, da.Array):
        raise InputError("x", f"a dask or numpy array, got {type(x).__name__}")
    return x.map_blocks(lock, dtype=x.dtype, meta=np.empty((0,) * x.ndim, x.dtype))


def visible_gpus() -> list[str]:
    """The GPUs a worker may be pinned to: ``CUDA_VISIBLE_DEVICES`` where set, else those
    ``nvidia-smi -L`` lists (read without starting CUDA in this process); empty without a driver."""
    seen = os.environ.get("CUDA_VISIBLE_DEVICES")
    if seen is not None:
        return [d.strip() for d in seen.split(",") if d.strip() and d.strip() != "-1"]
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(ln for ln in out.splitlines() if ln.startswith("GPU "))]


def parse_cpulist(text: str) -> set[int]:
    """The CPUs of a Linux CPU list (``"0-31,64-95"``, as ``/sys/.../local_cpulist`` writes it)."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def gpu_cpus(devices: Sequence[str], sysfs: str = "/sys/bus/pci/devices") -> dict[str, set[int]]:
    """For each of ``devices`` (``CUDA_VISIBLE_DEVICES`` entries: indices or UUIDs), the CPUs on
    its side of the host (its PCI device's ``local_cpulist``: the socket, or NUMA node, its PCIe
    root hangs off), among those this process may use. Read from ``nvidia-smi`` and sysfs without
    starting CUDA; a device that cannot be placed so (no driver, no sysfs, a list of every CPU or
    of none this process may use) is left out."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=index,uuid,pci.bus_id", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    bus = {}
    for line in out.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == 3:
            index, uuid, pci = fields
            # nvidia-smi writes an 8-digit PCI domain ("00000000:19:00.0"), sysfs a 4-digit one
            domain, _, rest = pci.lower().partition(":")
            bus[index] = bus[uuid] = f"{domain[-4:]}:{rest}"
    allowed = os.sched_getaffinity(0)
    found = {}
    for dev in devices:
        if dev not in bus:
            continue
        try:
            with open(os.path.join(sysfs, bus[dev], "local_cpulist")) as f:
                cpus = parse_cpulist(f.read()) & allowed
        except (OSError, ValueError):
            continue
        if cpus and cpus != allowed:
            found[dev] = cpus
    return found


def bind_threads(cpus: set[int]) -> None:
    """Every thread of this process on ``cpus`` (threads it starts later inherit it)."""
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            os.sched_setaffinity(int(tid), cpus)


def dask_setup(worker=None) -> None:
    """Dask's preload hook (a worker of :func:`cluster` with ``gpus`` preloads this module): with
    ``GPUDP_WORKER_CPUS`` set, the worker runs on those CPUs, its GPU's side of the host, before it
    holds anything, so what it allocates (its blocks, page-locked or not) lies in the memory
    nearest its GPU, as dask-cuda's CPU affinity does."""
    cpus = parse_cpulist(os.environ.get("GPUDP_WORKER_CPUS", ""))
    if cpus:
        bind_threads(cpus)


def _cpulist(cpus: set[int]) -> str:
    return ",".join(str(c) for c in sorted(cpus))


def check_cluster(scheduler: str | None = None, workers: int | None = None) -> None:
    """Refuse, before any work, what :func:`cluster` could not start: both a ``scheduler`` and
    ``workers``, a worker count below 1 (Dask would wait a minute for workers that never come), or
    a scheduler address Dask cannot read. Raises :class:`InputError` naming the argument."""
    if scheduler is not None and workers is not None:
        raise InputError(
            "workers", "workers start a local cluster, scheduler names a running one: give one of them"
        )
    if workers is not None and (
        isinstance(workers, bool) or not isinstance(workers, numbers.Integral) or workers < 1
    ):
        raise InputError("workers", f"a count of worker processes, at least 1 (got {workers!r})")
    if scheduler is not None:
        comm = dask_distributed().comm
        try:
            if not isinstance(scheduler, str) or not scheduler:
                raise ValueError("not an address")
            if comm.parse_address(scheduler)[0] != "inproc":
                comm.get_address_host_port(scheduler)
        except ValueError as e:
            raise InputError(
                "scheduler", f"{scheduler!r} is not a Dask scheduler address such as tcp://host:8786 ({e})"
            ) from None


def fit_workers(workers: int, items: int, gpus: bool = False) -> int:
    """The local workers worth starting for ``items`` pieces of work when ``workers`` are asked
    for: never more than the items (a worker without work only costs its start), and for CPU
    workers never more than this process's cores (more would share them, each at a slice of its
    numba threads). 0 for no items: no cluster at all."""
    n = min(int(workers), int(items))
    return n if gpus else min(n, len(os.sched_getaffinity(0)))


@contextlib.contextmanager
def cluster(
    scheduler: str | None = None, workers: int | None = None, gpus: bool = False, bind_cpus: bool = True
):
    """A ``Client``: of the scheduler at ``scheduler`` (an address), or of a local cluster of
    ``workers`` processes, each running its kernels on its share of the cores; with ``gpus``, one
    worker a GPU (``CUDA_VISIBLE_DEVICES`` set to its GPU alone in its process, as dask-cuda's
    ``LocalCUDACluster`` does; default: every visible GPU), closed on exit. The command line's
    ``--scheduler`` and ``--workers``. With ``gpus`` and ``bind_cpus`` (the default), each worker
    runs on the CPUs on its GPU's side of the host (:func:`gpu_cpus`; its numba threads its share of
    them), so the blocks it holds lie in the memory nearest its GPU: on a host of two sockets, a
    GPU copying from the other socket's memory shares the link between them with its neighbours.

    A local cluster leaves nothing behind, whether the block ends, raises, or is stopped by Ctrl-C
    or SIGTERM (:func:`local_cluster`): its scheduler listens on this host only, its workers ignore
    Ctrl-C (this process stops them), and their scratch space is a private temporary folder,
    removed with them.

    Raises
    ------
    InputError
        without ``dask.distributed``; for what :func:`check_cluster` refuses; with ``gpus``, when
        no GPU is visible or ``workers`` exceeds the GPUs.
    """
    dist = dask_distributed()
    check_cluster(scheduler, workers)
    if scheduler:
        with dist.Client(scheduler) as client:
            yield client
        return
    devices = visible_gpus() if gpus else []
    if gpus and not devices:
        raise InputError("workers", "one worker a GPU: no GPU is visible (nvidia-smi -L lists none)")
    n = workers or len(devices) or 1
    if gpus and n > len(devices):
        raise InputError("workers", f"{n} workers, one a GPU, but {len(devices)} GPUs are visible")
    # each worker's numba threads: its share of the cores (with bound workers, of its side's),
    # read by numba when the worker process starts (the environment it is spawned with, which
    # numba may read before a Nanny's env applies; set later, numba refuses the change)
    near = gpu_cpus(devices[:n]) if gpus and bind_cpus else {}
    threads = (os.cpu_count() or 1) // n
    for cpus in near.values():  # the workers on one side share its cores
        threads = min(threads, len(cpus) // sum(near.get(d) == cpus for d in devices[:n]))
    envs = [{} for _ in range(n)]
    preload: list[list[str]] = [[] for _ in range(n)]
    for i, dev in enumerate(devices[:n]):
        # the GPU is set in the worker's process before it runs anything (CUDA starts lazily)
        envs[i]["CUDA_VISIBLE_DEVICES"] = dev
        if dev in near:  # dask_setup binds the worker to its side's CPUs
            envs[i]["GPUDP_WORKER_CPUS"] = _cpulist(near[dev])
            preload[i] = [__name__]
    with local_cluster(envs, preload, max(1, threads)) as client:
        yield client


#: seconds a worker is given to stop when its cluster is stopped by an error or a signal (its task
#: is abandoned: then it is killed)
HALT_SECONDS = 0.5


@contextlib.contextmanager
def local_cluster(envs: list[dict], preload: list[list[str]], threads: int):
    """A ``Client`` of a local cluster of one worker process per entry of ``envs`` (its
    environment variables; ``preload``: the modules it preloads), each running one task at a time
    with ``threads`` numba threads and its share of the host's memory (a Nanny's default is the
    share of its threads among the cores: 1/32 on a 32-core host, too little for a band's walk).

    Nothing is left behind, on success, on an exception, on Ctrl-C or on SIGTERM
    (:class:`gpudp.cli.Terminated`): the workers' scratch space (Dask's ``dask-scratch-space``, and
    their ``TMPDIR``) is a private folder in the temporary folder, removed once they are stopped;
    the workers ignore SIGINT (a Ctrl-C reaches the terminal's whole process group: this process
    stops them), are given :data:`HALT_SECONDS` to stop when the block did not end normally, and are
    stopped with Dask's logs silenced (the workers print only their errors, at any time); a signal
    that arrives while the cluster starts or stops is raised once that is done
    (:func:`signals_held`), so that neither is cut halfway. The scheduler listens on 127.0.0.1
    only, on a free port, with no dashboard."""
    dist = dask_distributed()
    import dask

    scratch = _scratch_folder()
    local = client = None
    try:
        # the workers print their errors only: a halted worker warns of each task it drops
        options = {"nthreads": 1, "memory_limit": 1 / len(envs), "silence_logs": logging.ERROR}
        spec = {
            i: {"cls": dist.Nanny, "options": {**options, "env": {**env, "TMPDIR": scratch}, "preload": pre}}
            for i, (env, pre) in enumerate(zip(envs, preload, strict=True))
        }
        here = {"host": "127.0.0.1", "port": 0, "dashboard": False, "dashboard_address": "127.0.0.1:0"}
        scheduler = {"cls": dist.Scheduler, "options": here}
        with dask.config.set({"temporary-directory": scratch}), _DaskLogs() as logs:
            try:
                with signals_held():
                    local = _started(lambda: dist.SpecCluster(workers=spec, scheduler=scheduler), threads)
                    client = dist.Client(local)
                yield client
            except BaseException:
                with signals_held(replay=False):
                    _stop(local, client, logs, hurry=True)
                raise
            with signals_held():
                _stop(local, client, logs, hurry=False)
    except BaseException:
        with signals_held(replay=False):
            shutil.rmtree(scratch, ignore_errors=True)
        raise
    with signals_held():
        shutil.rmtree(scratch, ignore_errors=True)


class _DaskLogs(logging.Filter):
    """While a local cluster lives, the records of Dask's loggers that this process prints: its
    warnings and errors (as ``LocalCluster`` prints them), none at all once :attr:`level` is raised
    (while the cluster is stopped). A filter on the ``distributed`` logger's handlers, which the
    Nanny's own level changes leave alone."""

    level = logging.WARNING

    def filter(self, record) -> bool:
        return record.levelno >= self.level

    def __enter__(self):
        self._handlers = list(logging.getLogger("distributed").handlers)
        for handler in self._handlers:
            handler.addFilter(self)
        return self

    def __exit__(self, *exc):
        for handler in self._handlers:
            handler.removeFilter(self)


def _scratch_folder() -> str:
    """A new private folder in the temporary folder (``TMPDIR``; where that cannot be written,
    Python's next choice, as for gpudp's other temporary files) for a local cluster's scratch
    space; never the working directory, Python's last resort (:class:`InputError` then)."""
    base = os.path.abspath(tempfile.gettempdir())
    chosen = {os.path.abspath(os.environ[k]) for k in ("TMPDIR", "TEMP", "TMP") if os.environ.get(k)}
    if base == os.getcwd() and base not in chosen:
        raise InputError(
            "TMPDIR", "no writable temporary folder for the Dask workers' scratch space: set TMPDIR to one"
        )
    return tempfile.mkdtemp(prefix="gpudp-dask-", dir=base)


@contextlib.contextmanager
def signals_held(replay: bool = True):
    """Ctrl-C, SIGTERM and SIGHUP held back while the block runs (a cluster's start or stop, cut
    halfway, would leave processes or files behind) and, with ``replay``, the first of them sent
    again after it, to whatever handles it then (``KeyboardInterrupt``,
    :class:`gpudp.cli.Terminated`, the default action); without, dropped (an exception is on its
    way out already). Signal handlers are the main thread's: elsewhere the block runs as it is."""
    names = ("SIGINT", "SIGTERM", "SIGHUP")
    sigs = [getattr(signal, n) for n in names if hasattr(signal, n)]
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = {}
    for sig in sigs:
        if signal.getsignal(sig) is not None:  # None: a handler not set from Python, left alone
            previous[sig] = signal.signal(sig, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if held and replay:
            signal.raise_signal(held[0])


def _started(make: Callable, threads: int):
    """``make()`` (a cluster's start) with SIGINT blocked in this thread: the threads that start the
    workers (Dask's event loop, the Nanny's) are made in it and inherit the block, and so do the
    worker processes they spawn, from their first instruction on (a Ctrl-C reaches them only
    through this process). ``NUMBA_NUM_THREADS`` is ``threads`` in the environment they are
    spawned with."""
    from multiprocessing import resource_tracker

    # multiprocessing starts its resource tracker with the first process a spawn makes and then
    # unblocks SIGINT in the thread that made it (Dask's): started here, it is running already
    resource_tracker.ensure_running()
    saved = os.environ.get("NUMBA_NUM_THREADS")
    os.environ["NUMBA_NUM_THREADS"] = str(threads)
    blocks = hasattr(signal, "pthread_sigmask")  # POSIX
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if blocks else None
    try:
        return make()
    finally:
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if saved is None:
            del os.environ["NUMBA_NUM_THREADS"]
        else:
            os.environ["NUMBA_NUM_THREADS"] = saved


def _stop(local, client, logs: _DaskLogs, hurry: bool) -> None:
    """Close ``client`` and the cluster ``local`` (when made), its worker processes joined, Dask's
    logs silenced from here on (a worker cut off mid-task, the tasks it leaves, are no news to
    whoever stopped it). With ``hurry`` (the block ended by an exception or a signal) each worker
    has :data:`HALT_SECONDS` to stop before it is killed, and an error in the stop is dropped
    (the block's own is on its way)."""
    logs.level = logging.CRITICAL + 1
    try:
        if client is not None:
            client.close()
        if local is not None:
            if hurry:
                local.sync(_halt, local)
            local.close()
    except Exception:
        if not hurry:
            raise


async def _halt(local) -> None:
    """Stop every worker of ``local`` now: :data:`HALT_SECONDS` to end, then killed."""
    import asyncio

    workers = list(local.workers.values())
    await asyncio.gather(*(w.close(timeout=HALT_SECONDS) for w in workers), return_exceptions=True)


# ---------------------------------------------------------------------------------------------
# One large grid across workers: column bands (the CUDAlign scheme, at the granularity of blocks)


def sweep_bands(
    rec, client, bands: int | None = None, block_rows: int = 1 << 16, backend: str = "auto", tile=None
):
    """Sweep one large grid recurrence across ``client``'s workers, a band of columns each.

    The grid (tiled schedule: offsets among ``(-1, 0), (0, -1), (-1, -1)``) is cut into ``bands``
    column bands (default: one a worker) and ``block_rows`` rows, and block ``(r, w)`` runs on band
    ``w``'s worker as the recurrence of its own that :mod:`gpudp.linear` sweeps blocks with (its top
    row from block ``(r - 1, w)``, which stays on that worker, its left column from block
    ``(r, w - 1)``, the only values that move between workers). Dask runs the blocks as a wavefront:
    block ``(r, w)`` while band ``w + 1`` computes block ``(r - 1, w + 1)``. Each block keeps only its
    last row and column (values only); :meth:`BandResult.traceback` sweeps the blocks the path
    crosses again, with their decisions, on their band's worker (in linear space where a block is
    large, ``store="auto"``), so the path is the single sweep's.

    Returns a :class:`BandResult`. Raises :class:`InputError` for a recurrence off the tiled schedule
    or one declaring a reduction (not computed across bands).
    """
    import functools

    from .engine import plan_sweep

    plan = plan_sweep(rec, backend, tile)
    cls = type(rec)
    if plan.kind != "tiled":
        raise InputError("rec", f"{cls.__name__}: column bands need the tiled schedule (unit offsets)")
    if cls.reduce:
        raise InputError("rec", f"{cls.__name__}.reduce: reductions are not computed across bands")
    workers = sorted(client.scheduler_info()["workers"])
    if not workers:
        raise InputError("client", "the Dask cluster has no workers")
    rows, cols = plan.rows, plan.cols
    nb = max(1, min(int(bands or len(workers)), cols))
    width = -(-cols // nb)
    nb = -(-cols // width)
    k = max(1, int(block_rows))
    t0 = time.perf_counter()
    run = functools.partial(_forward_block, rec, backend=plan.backend, tile=tile)
    out: dict = {}
    for r in range(-(-rows // k)):
        for w in range(nb):
            r0, c0 = r * k, w * width
            where = workers[w % len(workers)]
            up = out.get((r - 1, w))
            corner = out.get((r - 1, w - 1))
            left = out.get((r, w - 1))
            out[r, w] = client.submit(
                run,
                r0,
                c0,
                min(k, rows - r0),
                min(width, cols - c0),
                up,
                corner,
                left,
                workers=[where],
                allow_other_workers=True,
                pure=False,
            )
    last_r = -(-rows // k) - 1
    ends = client.gather([out[last_r, w] for w in range(nb)] + [out[r, nb - 1] for r in range(last_r + 1)])
    last_row = np.concatenate([e[0] for e in ends[:nb]])
    last_col = np.concatenate([e[1] for e in ends[nb:]])
    from .solution import Stats

    stats = Stats(backend=plan.backend, device=f"{len(workers)} Dask workers", cells=rows * cols)
    stats.seconds = time.perf_counter() - t0
    stats.extra.update(bands=nb, band_width=width, block_rows=k, blocks=len(out), workers=len(workers))
    return BandResult(
        rec, client, out, workers, k, width, rows, cols, plan.backend, tile, last_row, last_col, stats
    )


def _edges(rec, up, corner, left):
    """The top row (the corner first) and the left column of a block, from its neighbours' ends."""
    from .values import full, structured

    fill = structured(type(rec), full(type(rec), 1))  # a record cell's: a structured array
    top = fill if up is None else np.concatenate([fill if corner is None else corner[0][-1:], up[0]])
    return top, fill if left is None else left[1]


def _block(rec, r0, c0, rows, cols, up, corner, left):
    from .linear import _block_class

    top, side = _edges(rec, up, corner, left)
    data = tuple(rec.data())
    syms = (np.asarray(rec.row_symbols()), np.asarray(rec.col_symbols())) if type(rec).symbols else None
    return _block_class(type(rec), len(data))(rec, data, syms, r0, c0, rows, cols, top, side)


def _forward_block(rec, r0, c0, rows, cols, up, corner, left, backend, tile):
    """One block's values-only sweep on a worker: its last row and last column."""
    from .engine import sweep

    res = sweep(
        _block(rec, r0, c0, rows, cols, up, corner, left), backend, progress=False, tile=tile, traceback=False
    )
    return res.last_row, res.last_col


def _walk_block(rec, r0, c0, i, j, up, corner, left, state, backend, tile):
    """The walk back from cell (i, j) inside its block (swept again up to it, with decisions):
    the path in grid coordinates and where ``back`` left the block."""
    from .engine import sweep

    res = sweep(
        _block(rec, r0, c0, i - r0 + 1, j - c0 + 1, up, corner, left), backend, progress=False, tile=tile
    )
    try:
        path, exit_ = res._walk((i - r0, j - c0), state)
    finally:
        res.close()
    path[:, 0] += r0
    path[:, 1] += c0
    exit_[:2] += (r0, c0)
    return path, exit_


class BandResult:
    """A band sweep's outcome (:func:`sweep_bands`): ``last_row``, ``last_col``, ``stats``, and
    :meth:`traceback`, walked block by block on the blocks' workers. The blocks' ends stay on the
    workers until this result is dropped."""

    def __init__(
        self, rec, client, ends, workers, k, width, rows, cols, backend, tile, last_row, last_col, stats
    ):
        self.recurrence, self._client, self._ends, self._workers = rec, client, ends, workers
        self._k, self._width, self.rows, self.cols = k, width, rows, cols
        self._backend, self._tile = backend, tile
        self.last_row, self.last_col, self.stats = last_row, last_col, stats
        self.best_value = self.best_cell = None

    def traceback(self, start, state=None):
        """Rows ``(i, j, decision[, state])`` from ``start`` back, as
        :meth:`gpudp.engine.SweepResult.traceback` gives them for the whole grid."""
        import functools

        cls = type(self.recurrence)
        from .recurrence import start_cell

        i, j = start_cell(start)
        if not (0 <= i < self.rows and 0 <= j < self.cols):
            raise IndexError(f"cell ({i}, {j}) outside the {self.rows} x {self.cols} grid")
        s = (0 if state is None else int(state)) if cls.traceback_state else None
        walk = functools.partial(_walk_block, self.recurrence, backend=self._backend, tile=self._tile)
        parts, t0, blocks = [], time.perf_counter(), 0
        while 0 <= i < self.rows and 0 <= j < self.cols:
            r, w = i // self._k, j // self._width
            e = self._ends
            fut = self._client.submit(
                walk,
                r * self._k,
                w * self._width,
                i,
                j,
                e.get((r - 1, w)),
                e.get((r - 1, w - 1)),
                e.get((r, w - 1)),
                s,
                workers=[self._workers[w % len(self._workers)]],
                allow_other_workers=True,
                pure=False,
            )
            path, exit_ = fut.result()
            parts.append(path)
            blocks += 1
            i, j = int(exit_[0]), int(exit_[1])
            if s is not None:
                s = int(exit_[2])
        self.stats.extra["traceback"] = {"blocks": blocks, "seconds": time.perf_counter() - t0}
        width = 4 if cls.traceback_state else 3
        return np.concatenate(parts) if parts else np.zeros((0, width), np.int64)

    def close(self):
        """Let the workers drop the blocks' ends."""
        self._ends = {}
