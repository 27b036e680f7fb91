"""``gpudp bench scale``: a batch's throughput against the number of Dask workers (issue 17), JSON.

LCS lengths of ``--pairs`` pairs of random DNA of ``--length`` x ``--length``, given as two 2-D
arrays, by :func:`gpudp.problems.lcs.solve_many` with ``client=`` a local cluster of ``N`` workers
for each ``N`` of ``--workers``: CPU processes (``--backends cpu``, each with its share of the
cores), or with ``--backends cuda`` one worker a GPU (:func:`gpudp.distributed.cluster`; ``N`` at
most the GPUs). Where the pairs are (``--data``): ``client``, two numpy arrays in this process,
each chunk's rows sent with its task (timed); ``resident``, the same arrays as dask arrays of row
blocks of ``pairs / (chunks per worker x N)`` rows, block ``k`` of both arrays on worker
``k mod N``, placed and persisted before the timer starts (data already in the cluster: the
timed batch moves no pair through this process); ``pinned``, as ``resident`` with each block
page-locked on its worker (:func:`gpudp.distributed.page_locked`: copied to the GPU by DMA from
where it lies, no staging copy); ``device`` (cuda), as ``resident`` with each block copied to its
worker's GPU (data made or read there: the batch copies nothing to the device); ``both`` (the
default) runs ``client`` and ``resident``, ``all`` every one the backend has. Each cluster
first runs a small batch (the workers compile or load their kernels), then ``--repeat`` timed
batches; the single-process solve on the same backend is the baseline, and every run's values
must equal it. Speed-up and efficiency are against the first worker count, for each ``data``.

``--made-on workers`` makes each block's pairs on the worker that keeps it instead (``resident``,
``pinned`` and ``device`` only; :func:`made_rows`): each byte drawn from a counter-based hash of
its place, so that a row is the same whatever the worker count, made by the worker's threads or,
with ``device``, on its GPU, and no pair passes through this process: batches of tens of GB are
ready in seconds. There is then no single-process baseline; every run's values must equal the
first run's, and the first and last :data:`CHECK_ROWS` rows, made again here and solved in this
process, must give the values the cluster gave them.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import statistics
import time

import numpy as np
from numba import prange
from numba.extending import register_jitable

from gpudp import distributed
from gpudp.backends import device_name
from gpudp.distributed import chunks
from gpudp.errors import CheckError, InputError
from gpudp.jit import njit
from gpudp.problems import lcs

from ..kernel import factory
from . import options
from .instances import random_dna

DATA = ("client", "resident", "pinned", "device")

#: rows at each end of a batch made on the workers (``--made-on workers``) made again and solved here
CHECK_ROWS = 1 << 16


def bench_arguments(p):
    p.add_argument(
        "--workers", type=options.int_list(1), default="1,2,4", help="comma-separated worker counts"
    )
    p.add_argument("--pairs", type=options.positive_int, default=20_000, help="pairs in the batch")
    p.add_argument("--length", type=options.positive_int, default=1000, help="length of each sequence")
    p.add_argument(
        "--repeat", type=options.positive_int, default=3, help="timed runs per worker count (median)"
    )
    p.add_argument("--seed", type=options.seed, default=0)
    p.add_argument(
        "--data",
        type=options.choice_list(*DATA, "both", "all", alone=("both", "all")),
        default="both",
        help="client: the pairs sent from this process with their tasks; resident: dask arrays "
        "persisted on the workers before timing; pinned: resident, page-locked on the workers; "
        "device (cuda): resident, on the workers' GPUs; several comma-separated; both (default): "
        "client,resident; all: every one the backend has",
    )
    p.add_argument(
        "--bind",
        default="on",
        choices=("on", "off", "both"),
        help="GPU workers on the CPUs on their GPU's side of the host (gpudp.distributed.cluster's "
        "bind_cpus); both: each worker count bound, then not (an A/B on one machine). Where the "
        "host has one side (one NUMA node) nothing is bound and each count runs once",
    )
    p.add_argument(
        "--made-on",
        default="client",
        choices=("client", "workers"),
        help="client: the pairs made in this process (and placed on the workers); workers: each "
        "block's pairs made on the worker that keeps it (with device, on its GPU) from a hash of the "
        "seed and each byte's place (see above)",
    )
    p.add_argument(
        "--chunks-per-worker",
        type=options.positive_int,
        default=distributed.CHUNKS_PER_WORKER,
        help=f"chunks a worker (default {distributed.CHUNKS_PER_WORKER})",
    )


@contextlib.contextmanager
def _chunks_per_worker(k: int):
    """:func:`gpudp.distributed.map_chunks`'s chunks a worker set to ``k`` meanwhile (the client
    path; the resident path's chunks are its row blocks)."""
    saved = chunks.CHUNKS_PER_WORKER  # read by map_chunks in its own module
    chunks.CHUNKS_PER_WORKER = k
    try:
        yield
    finally:
        chunks.CHUNKS_PER_WORKER = saved


def _on_gpu(block):
    """A block copied to this worker's GPU (a numba device array: the batch reads it there)."""
    from numba import cuda

    return cuda.to_device(np.ascontiguousarray(block))


#: splitmix64's constants (Steele, Lea & Flood 2014): a 64-bit counter -> 64 random bits
_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
#: "ACGT" as a little-endian word: base k is its byte k
_ACGT = np.uint64(0x54474341)


@register_jitable
def _mix(key, g):
    """64 random bits for group ``g`` of 32 bytes (splitmix64's finaliser of ``key + g * gamma``)."""
    z = key + g * _GAMMA
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@register_jitable
def _base(h, f):
    """Byte ``f``'s base (A, C, G or T) from its group's bits ``h``: 2 bits a byte."""
    k = (h >> ((f & np.uint64(31)) * np.uint64(2))) & np.uint64(3)
    return np.uint8((_ACGT >> (k * np.uint64(8))) & np.uint64(255))


@njit(parallel=True, cache=True)
def _made_host(key, first, out):
    rows, length = out.shape
    for r in prange(rows):
        f = first + np.uint64(r) * np.uint64(length)
        h = _mix(key, f >> np.uint64(5))
        for c in range(length):
            if (f & np.uint64(31)) == 0:
                h = _mix(key, f >> np.uint64(5))
            out[r, c] = _base(h, f)
            f += np.uint64(1)


_MADE = """
def made(key, first, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        f = first + uint64(i)
        out[i] = base(mix(key, f >> uint64(5)), f)
"""


@factory("bench.made")
def _made_kernel():
    from numba import cuda

    from gpudp.backends.cuda import generated_kernel

    return generated_kernel(_MADE, "made", {"cuda": cuda, "uint64": np.uint64, "mix": _mix, "base": _base})


def made_rows(seed: int, x: int, lo: int, hi: int, pairs: int, length: int, device: bool = False):
    """Rows ``lo .. hi - 1`` of array ``x`` (0: A, 1: B) of a batch made where it is kept
    (``--made-on workers``): uniform random DNA, byte ``f`` of the batch's flat bytes (A's rows, then
    B's) from splitmix64 of ``(seed, f // 32)``, so that a row is the same whoever makes it and in
    whatever blocks. ``device``: made on this process's GPU (a numba device array; nothing made on
    the host or copied), else a numpy array made by this process's numba threads."""
    key, first = np.uint64(seed % (1 << 64)), np.uint64((x * pairs + lo) * length)
    if not device:
        out = np.empty((hi - lo, length), np.uint8)
        _made_host(key, first, out)
        return out
    from numba import cuda

    from gpudp.backends.cuda import stride_grid

    out = cuda.device_array((hi - lo, length), np.uint8)
    if out.size:
        _made_kernel()[stride_grid(out.size)](key, first, out.reshape(out.size))
    return out


def made_on_workers(client, seed: int, pairs: int, length: int, rows: int, **where) -> list:
    """:func:`resident`'s two dask arrays for a batch whose blocks of ``rows`` rows are made on the
    workers (block ``k`` on worker ``k mod N``, by :func:`made_rows`; with ``device``, on its GPU):
    no pair passes through this process."""
    import dask.array as da

    device = bool(where.get("device"))
    workers = sorted(client.scheduler_info()["workers"])
    out = [[], []]
    for k, lo in enumerate(range(0, pairs, rows)):
        hi, w = min(lo + rows, pairs), [workers[k % len(workers)]]
        for i in range(2):
            part = client.submit(made_rows, seed, i, lo, hi, pairs, length, device, workers=w, pure=False)
            meta = np.empty((0, 0), np.uint8)
            out[i].append(da.from_delayed(part, (hi - lo, length), np.uint8, meta=meta))
    return _settle(client, [da.concatenate(x, axis=0) for x in out], pinned=bool(where.get("pinned")))


def resident(client, arrays, rows: int, pinned: bool = False, device: bool = False) -> list:
    """``arrays`` (numpy, as many rows) as dask arrays of row blocks of ``rows`` rows, block ``k``
    of each kept on worker ``k mod N`` (a chunk's blocks on one worker), persisted: what the batch
    finds when its data was made in the cluster; with ``pinned``, each block page-locked there
    (:func:`gpudp.distributed.page_locked`). Returns once every block is in place."""
    import dask.array as da

    workers = sorted(client.scheduler_info()["workers"])
    out = []
    for x in arrays:
        blocks = []
        for k, lo in enumerate(range(0, len(x), rows)):
            part = x[lo : lo + rows]
            fut = client.scatter(part, workers=[workers[k % len(workers)]], hash=False)
            blocks.append(da.from_delayed(fut, part.shape, part.dtype))
        out.append(da.concatenate(blocks, axis=0))
    return _settle(client, out, pinned, device)


def _settle(client, arrays: list, pinned: bool = False, device: bool = False) -> list:
    """The dask arrays of a resident batch with each block page-locked (``pinned``) or copied to its
    worker's GPU (``device``) where it lies, persisted; returns once every block is in place."""
    out = []
    for x in arrays:
        if device:  # each block on its worker's GPU: data made or read there
            x = x.map_blocks(_on_gpu, dtype=x.dtype, meta=np.empty((0, 0), x.dtype))
        out.append(distributed.page_locked(x) if pinned else x)
    out = client.persist(out)
    with client.as_current():  # wait() asks the default client, which may be another of this process's
        distributed.dask_distributed().wait(out)
    return out


def _incoming_bytes(dask_worker) -> int:
    """Bytes this worker has fetched from other workers (its transfer log)."""
    return sum(int(e.get("total", 0)) for e in getattr(dask_worker, "transfer_incoming_log", ()))


def _moved(client) -> int:
    return sum(client.run(_incoming_bytes).values())


def _where(extra: dict) -> dict:
    """Where one batch's time went (:meth:`gpudp.BatchResult.concat`): the
    slowest chunk's seconds on its worker, the wait before the first chunk started and after the
    last one ended (scheduling, moving blocks, gathering the results), and the join of the
    results here."""
    return {
        "chunk_seconds_max": max(extra["chunk_seconds"]),
        "chunk_seconds_min": min(extra["chunk_seconds"]),
        "first_chunk_wait": extra["first_chunk_wait"],
        "last_result_wait": extra["last_result_wait"],
        "join_seconds": extra["join_seconds"],
    }


def cli_bench(args) -> dict:
    on_workers = args.made_on == "workers"
    backends = options.backend_list(args.backends, auto=["cpu"])
    if len(backends) != 1:
        raise InputError("--backends", f"{args.backends}: bench scale runs one backend, cpu or cuda")
    backend = backends[0]
    known = DATA if backend == "cuda" else DATA[:3]  # device: on the workers' GPUs
    modes = {"both": DATA[:2], "all": known}.get(args.data[0]) or tuple(args.data)
    if not set(modes) <= set(known):
        raise InputError("--data", f"{','.join(args.data)}: one or more of {', '.join(known)} (or both, all)")
    if on_workers and "client" in modes:
        raise InputError(
            "--data", "with --made-on workers the pairs are never here: resident, pinned or device"
        )
    gpus = backend == "cuda"
    visible = len(distributed.visible_gpus()) if gpus else 0
    if gpus and max(args.workers) > visible:
        raise InputError(
            "--workers", f"{max(args.workers)} workers, one a GPU, but {visible} GPUs are visible"
        )
    cpw = args.chunks_per_worker
    if on_workers:  # here only the first and the last rows: the warm-ups and the check
        ends = sorted({(0, min(CHECK_ROWS, args.pairs)), (max(0, args.pairs - CHECK_ROWS), args.pairs)})
        made = functools.partial(made_rows, args.seed, pairs=args.pairs, length=args.length)
        sample = [(lo, made(0, lo, hi), made(1, lo, hi)) for lo, hi in ends]
        a, b = sample[0][1:]
    else:
        rng = np.random.default_rng(args.seed)
        a = random_dna(args.pairs * args.length, rng).reshape(args.pairs, args.length)  # one draw an array
        b = random_dna(args.pairs * args.length, rng).reshape(args.pairs, args.length)
    cells = args.pairs * args.length * args.length
    lcs.solve_many((a[:64], b[:64]), backend=backend)  # warm-up
    if on_workers:  # every run against the first one, and the sample's tiles against this process
        want, single = None, None
        sampled = [(lo, lcs.solve_many((x, y), backend=backend).values) for lo, x, y in sample]
    else:
        t = time.perf_counter()
        want = lcs.solve_many((a, b), backend=backend)
        single = time.perf_counter() - t
    rows = []
    # each GPU's side of the host, where bound workers run (none where it cannot be told, or one
    # side holds every CPU: then binding changes nothing and "both" runs once)
    sides = distributed.gpu_cpus(distributed.visible_gpus()) if gpus else {}
    binds = {"on": (True,), "off": (False,), "both": (True, False)}[args.bind] if sides else (False,)
    for n, bound in ((x, bound) for x in args.workers for bound in binds):
        block_rows = max(1, -(-args.pairs // (cpw * n)))
        with distributed.cluster(workers=n, gpus=gpus, bind_cpus=bound) as client, _chunks_per_worker(cpw):
            lcs.solve_many((a[:256], b[:256]), backend=backend, client=client)  # the workers compile
            for mode in modes:
                if mode != "client":  # untimed: already there
                    where = {"pinned": mode == "pinned", "device": mode == "device"}
                    if on_workers:
                        pairs = tuple(
                            made_on_workers(client, args.seed, args.pairs, args.length, block_rows, **where)
                        )
                    else:
                        pairs = tuple(resident(client, (a, b), block_rows, **where))
                    lcs.solve_many((pairs[0][:256], pairs[1][:256]), backend=backend, client=client)
                else:
                    pairs = (a, b)
                runs, spans, moved = [], [], _moved(client)
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    got = lcs.solve_many(pairs, backend=backend, client=client)
                    runs.append(time.perf_counter() - t)
                    spans.append(_where(got.stats.extra))
                    spans[-1]["kernel_seconds_per_chunk"] = got.stats.kernel_seconds / len(
                        got.stats.extra["chunk_seconds"]
                    )
                    if on_workers:
                        want = got if want is None else want  # the first run, its tiles checked
                        for lo, v in sampled:
                            if not np.array_equal(got.values[lo : lo + len(v)], v):
                                raise CheckError(
                                    f"{n} workers, {mode}: rows {lo}.. differ from this process's"
                                )
                    if not np.array_equal(got.values, want.values):
                        than = "the first run's" if on_workers else "the single process's"
                        raise CheckError(f"{n} workers, {mode}: the values differ from {than}")
                moved = (_moved(client) - moved) / max(1, args.repeat)
                del pairs
                s = statistics.median(runs)
                rows.append(
                    {
                        "workers": n,
                        "data": mode,
                        "bound": bound,
                        "chunks": got.stats.extra["dask_chunks"],
                        "seconds_median": s,
                        "runs": runs,
                        "gcups": cells / s / 1e9,
                        "bytes_between_workers_per_run": moved,
                        **{k: statistics.median(x[k] for x in spans) for k in spans[0]},
                    }
                )
                w = rows[-1]
                print(
                    f"  {n:3d} workers{' bound' if w['bound'] else ''}, {mode:8s}: {s:8.3f} s, "
                    f"{cells / s / 1e9:9.1f} GCUPS (chunks "
                    f"{w['chunk_seconds_min']:.3f}-{w['chunk_seconds_max']:.3f} s, first waited "
                    f"{w['first_chunk_wait']:.3f} s, last result {w['last_result_wait']:.3f} s, joined in "
                    f"{w['join_seconds']:.3f} s)",
                    flush=True,
                )
    for mode, bound in ((m, b) for m in modes for b in binds):
        same = [r for r in rows if r["data"] == mode and r["bound"] == bound]
        first = same[0] if same else None
        for r in same:
            r["speedup_vs_first"] = first["seconds_median"] / r["seconds_median"]
            r["efficiency_vs_first"] = (
                first["seconds_median"] * first["workers"] / (r["seconds_median"] * r["workers"])
            )
    from gpudp.info import info

    return {
        "benchmark": "scale",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "environment": info(),
        "device": device_name(backend),
        "backend": backend,
        "workload": f"LCS lengths of {args.pairs} pairs of random DNA, {args.length} x {args.length}, "
        f"as two 2-D arrays, on a local Dask cluster, {cpw} chunks a worker; data 'client': numpy "
        "arrays in the calling process, each chunk's rows sent with its task, in the timed run; "
        "data 'resident': the same arrays as dask arrays of row blocks of pairs / (chunks a worker "
        "x workers) rows, block k of both arrays scattered to worker k mod workers and persisted "
        "before the timer starts (data already in the cluster, as when read by dask.array or made "
        "by an earlier step): each chunk's task runs where its blocks are, no pair passes through "
        "the client; data 'pinned': as 'resident', each block then copied into page-locked memory "
        "on its worker before the timer starts (gpudp.distributed.page_locked), so that it goes to "
        "the GPU by DMA with no staging copy; data 'device': as 'resident', each block then copied "
        "to its worker's GPU before the timer starts (data made or read there), so the batch "
        "copies no pair to the device"
        + (
            "; the pairs made on the workers, block by block (--made-on workers; with data 'device' "
            "on their GPUs, no byte on the host): no single-process baseline, the runs checked "
            "against the first and against the first and last rows solved in this process"
            if on_workers
            else ""
        ),
        "cells": cells,
        "single_process_seconds": single,
        "gpu_cpus": {d: ",".join(map(str, sorted(c))) for d, c in sides.items()},
        "results": rows,
        "goal": "batch LCS scores scale >= 0.9 x the number of GPUs (issue 17)",
    }
