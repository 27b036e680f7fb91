"""A local Dask cluster's life cycle: its workers (one a GPU, pinned to the CPUs on their GPU's
side of the host, :func:`gpu_cpus`), their start and stop (:func:`cluster`, :func:`local_cluster`)
with nothing left behind on an error, Ctrl-C or SIGTERM (signals held while the cluster starts or
stops: :func:`signals_held`), and the checks of what could not start (:func:`check_cluster`)."""

from __future__ import annotations

import contextlib
import logging
import numbers
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Sequence

from ..errors import InputError
from .chunks import dask_distributed

__all__ = [
    "HALT_SECONDS",
    "bind_threads",
    "check_cluster",
    "cluster",
    "dask_setup",
    "fit_workers",
    "gpu_cpus",
    "local_cluster",
    "parse_cpulist",
    "signals_held",
    "visible_gpus",
]


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


#: the folders Python tries after TMPDIR, TEMP and TMP, before the working directory (POSIX)
_SYSTEM_TEMP = ("/tmp", "/var/tmp", "/usr/tmp")


def _scratch_folder() -> str:
    """A new private folder in the temporary folder (``TMPDIR``; where that cannot be written,
    Python's next choice, as for gpudp's other temporary files) for a local cluster's scratch
    space; never the working directory, Python's last resort (:class:`InputError` then)."""
    base = os.path.abspath(tempfile.gettempdir())
    chosen = {os.path.abspath(os.environ[k]) for k in ("TMPDIR", "TEMP", "TMP") if os.environ.get(k)}
    if base == os.getcwd() and base not in chosen | set(_SYSTEM_TEMP):  # /tmp may be the cwd too
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
    pids = _worker_pids(local)
    try:
        if client is not None:
            if not hurry:  # a worker's heartbeat that meets the closed scheduler logs an error
                with contextlib.suppress(Exception):
                    client.run(_quiet, on_error="ignore")
            client.close()
        if local is not None:
            if hurry:
                local.sync(_halt, local)
            local.close()
    except Exception:
        if not hurry:
            raise
    finally:
        _reap(pids)


def _quiet() -> None:
    """Run in a worker before its cluster stops: nothing more from Dask's logs in that process
    (the results are in; a heartbeat cut off by the scheduler's close is no news)."""
    root = logging.getLogger("distributed")
    root.setLevel(logging.CRITICAL + 1)
    for handler in root.handlers:
        handler.setLevel(logging.CRITICAL + 1)


def _worker_pids(local) -> list[int]:
    """The process ids of ``local``'s worker processes now (a Nanny's ``process.process``)."""
    pids = []
    for w in getattr(local, "workers", {}).values():
        pid = getattr(getattr(getattr(w, "process", None), "process", None), "pid", None)
        if pid:
            pids.append(pid)
    return pids


def _reap(pids: list[int]) -> None:
    """Kill, and wait for, any of ``pids`` (this process's children) still running once its cluster
    was closed: a worker that a loaded host kept from stopping in Dask's time would otherwise live
    on, and could join the next cluster whose scheduler gets its old scheduler's port."""
    for pid in pids:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # reaped already (or not this process's child)
            continue
        if done == 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


async def _halt(local) -> None:
    """Stop every worker of ``local`` now: :data:`HALT_SECONDS` to end, then killed."""
    import asyncio

    workers = list(local.workers.values())
    await asyncio.gather(*(w.close(timeout=HALT_SECONDS) for w in workers), return_exceptions=True)
