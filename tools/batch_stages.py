"""Where one cuda batch of LCS lengths spends its time, alone and with N processes at once (issue 18).

Run (a GPU machine with N GPUs; the repository on ``PYTHONPATH``)::

    python3 tools/batch_stages.py --pairs 500000 --length 1000 --repeat 5 --procs 4 --out stages.jsonl
    python3 tools/batch_stages.py --dry-run --procs 4             # the plan only: no process, no GPU
    NUMBA_ENABLE_CUDASIM=1 python tools/batch_stages.py --pairs 8 --length 20 --repeat 1 --procs 1 \
        --stage-min-mb 0 --chunk-kb 0.0625 --slice-mb 0.0001 --min-slice-pairs 1
                                                                  # the sliced path, in the simulator

Each process makes its own batch of ``--pairs`` random pairs of ``--length`` x ``--length`` DNA
(two uint8 arrays of ``ACGT`` bytes, shape ``(pairs, length)``: what ``gpudp bench scale`` gives
:func:`gpudp.problems.lcs.solve_many`), so ``--pairs`` is one worker's chunk: 4 workers of a
2,000,000-pair batch hold 500,000 each. It times every stage of the batch's cuda path in turn,
``--repeat`` times after one untimed pass (compiles, the page-locked block), and keeps the median.

A batch of at least ``STAGE_MIN_BYTES`` of symbols (``--stage-min-mb``) is staged and pipelined:
``launch`` cuts it into slices of about ``SLICE_BYTES`` (``--slice-mb``; at least
``MIN_SLICE_PAIRS`` pairs a slice, ``--min-slice-pairs``), and stages slice ``k + 1`` on the host
(the copy into page-locked memory that also finds the bytes' table) while the GPU runs slice
``k``'s kernel. The parts of that path that can be timed apart, then the whole of it, of it
without the overlap, and of the old pageable path:

``pack``              ``as_arrays`` and ``pack_arrays(table=False)``, as ``batch.run`` packs
``stage_copy``        ``stage_copy`` of both arrays into one page-locked block from the process's
                      pool (``_stage_block``) without marking bytes: the bare copy, all the
                      process's numba threads, as every slice of ``launch`` stages (the whole
                      batch's worth: the host's share of the pipeline; the bytes are found on
                      the device)
``stage_marked``      the same copy marking the bytes present on the host, as the subsequences'
                      upload (``_upload``) stages (and every slice of ``launch`` did before)
``h2d_pinned``        the asynchronous copy of that block to the device on one stream (CUDA events)
``h2d_pageable``      ``cuda.to_device`` of both arrays from pageable memory (the old upload)
``launch_host``       ``launch`` until it returns: every slice staged and its copy and kernel queued
                      (the first slices' kernels run meanwhile; the host's time)
``kernel``            from the first slice's kernel start to the last one's end (``Launch.finish``'s
                      CUDA events; a slice whose copy came late is a gap inside it)
``results_back``      ``Launch.finish`` once the device is idle (the values copied back)
``launch_total``      ``launch`` + ``finish`` of the whole batch, wall time
``launch_one_slice``  the same with ``SLICE_BYTES`` out of reach: the whole batch staged, then one
                      kernel (nothing overlaps: what the pipeline saves)
``verify``            ``_checked_values`` of ``--verify`` pairs (the cpu cross-check of ``solve_many``)
``solve_many``        the whole ``solve_many((A, B), backend="cuda")`` call (staged as configured)
``solve_many_pageable``  the same with ``STAGE_MIN_BYTES`` out of reach: the old pageable upload,
                      one kernel, the table found on the device

Before every stage the processes of a round wait at one ``multiprocessing`` barrier, so that all do
the same stage at the same moment: a stage that slows from 1 to N processes is one they share (host
memory bandwidth, cores, the PCIe root). Each round's processes are spawned fresh, process ``r``
with ``CUDA_VISIBLE_DEVICES`` its own GPU (the ``r``-th of this process's ``CUDA_VISIBLE_DEVICES``,
else ``r``) and ``NUMBA_NUM_THREADS`` its share of the cores, as ``gpudp.distributed.cluster`` gives
a worker. Rounds: the counts of ``--procs`` and 1 (the baseline), smallest first.

Prints, and writes to ``--out`` (JSON lines): one ``{"record": "process", ...}`` line per process
and stage (median and every run's seconds, GB/s for the copies, the device, whether the batch was
staged and in how many slices, numba's threads), then one ``{"record": "stage", ...}`` line per
round and stage: the median over the processes of their medians, the slowest process's, and
``slowdown`` against the one-process round. Event times are null under the simulator (its events
carry no time); the values of every launch and call must agree, and the byte table a launch ends
with must map the bytes present one to one, else the process fails.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import queue
import statistics
import sys
import time
import traceback

import numpy as np

STAGES = (
    "pack",
    "stage_copy",
    "stage_marked",
    "h2d_pinned",
    "h2d_pageable",
    "launch_host",
    "kernel",
    "results_back",
    "launch_total",
    "launch_one_slice",
    "verify",
    "solve_many",
    "solve_many_pageable",
)
COPIES = ("stage_copy", "stage_marked", "h2d_pinned", "h2d_pageable")  # stages that move the batch's bytes


def arguments(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=500_000, help="pairs a process (one worker's chunk)")
    ap.add_argument("--length", type=int, default=1000, help="length of every sequence")
    ap.add_argument("--repeat", type=int, default=3, help="timed passes (median), after one untimed")
    ap.add_argument("--procs", default="1", help="processes at once, comma-separated (1 is always run)")
    ap.add_argument("--verify", type=int, default=2, help="pairs the cpu cross-checks (solve_many's default)")
    ap.add_argument(
        "--stage-min-mb", type=float, default=None, help="STAGE_MIN_BYTES in MiB (default: the module's)"
    )
    ap.add_argument(
        "--chunk-kb", type=float, default=None, help="COPY_CHUNK_BYTES in KiB (default: the module's)"
    )
    ap.add_argument("--slice-mb", type=float, default=None, help="SLICE_BYTES in MiB (default: the module's)")
    ap.add_argument(
        "--min-slice-pairs", type=int, default=None, help="MIN_SLICE_PAIRS (default: the module's)"
    )
    ap.add_argument("--threads", type=int, default=None, help="numba threads a process (default: cores / N)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=600, help="seconds a process may wait at a barrier")
    ap.add_argument("--out", default=None, help="also write the JSON lines here")
    ap.add_argument("--dry-run", action="store_true", help="print the plan; start no process, touch no GPU")
    args = ap.parse_args(argv)
    args.rounds = sorted({1, *(int(x) for x in args.procs.split(","))})
    if args.pairs < 1 or args.length < 1 or args.repeat < 1 or min(args.rounds) < 1:
        ap.error("--pairs, --length, --repeat and --procs must be positive")
    return args


def gpus(n: int) -> list[str]:
    """The GPU of each of ``n`` processes: this process's visible ones in order, else 0 .. n - 1."""
    visible = [x for x in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if x.strip()]
    return visible[:n] if len(visible) >= n else [str(r) for r in range(n)]


def dna(rng, pairs: int, length: int) -> np.ndarray:
    """Random ACGT bytes, shape ``(pairs, length)`` (drawn as uint8, not int64: 1 byte a symbol)."""
    return np.frombuffer(b"ACGT", np.uint8)[rng.integers(0, 4, (pairs, length), dtype=np.uint8)]


def measure(args, rank: int, sync) -> dict:
    """This process's stages: ``{stage: [seconds of each timed pass]}`` and what it ran on. ``sync``
    is called before every stage (the round's barrier)."""
    import numba

    from gpudp.backends.cuda import cuda, device_name, event, is_simulator, stream
    from gpudp.problems import lcs
    from gpudp.problems.lcs import batch, bitparallel
    from gpudp.problems.lcs import cuda as lcs_cuda
    from gpudp.problems.lcs.subsequences import Rows

    if args.stage_min_mb is not None:
        lcs_cuda.STAGE_MIN_BYTES = int(args.stage_min_mb * (1 << 20))
    if args.chunk_kb is not None:
        lcs_cuda.COPY_CHUNK_BYTES = max(1, int(args.chunk_kb * (1 << 10)))
    if args.slice_mb is not None:
        lcs_cuda.SLICE_BYTES = max(1, int(args.slice_mb * (1 << 20)))
    if args.min_slice_pairs is not None:
        lcs_cuda.MIN_SLICE_PAIRS = max(1, args.min_slice_pairs)
    stage_min, slice_bytes = lcs_cuda.STAGE_MIN_BYTES, lcs_cuda.SLICE_BYTES
    timed = not is_simulator()  # the simulator's events carry no time
    rng = np.random.default_rng(args.seed + rank)
    a, b = dna(rng, args.pairs, args.length), dna(rng, args.pairs, args.length)
    nbytes = a.nbytes + b.nbytes
    flat = (a.reshape(-1), b.reshape(-1))
    chunk = max(1, lcs_cuda.COPY_CHUNK_BYTES)
    d_all = cuda.device_array(nbytes, np.uint8)
    st = stream()
    picks = batch._picks(np.arange(args.pairs), np.full(args.pairs, args.length**2), args.verify)
    host = bitparallel.ensure_table(bitparallel.pack_arrays(a, b, table=False))  # bytes, on the host
    present = np.zeros(256, bool)
    for x in flat:
        present |= np.bincount(x, minlength=256) > 0
    slices = len(lcs_cuda._slices(host))
    times = {s: [] for s in STAGES}
    want = None

    def check(values, what):
        nonlocal want
        if want is None:
            want = values.copy()
        elif not np.array_equal(values, want):
            raise AssertionError(f"process {rank}: {what} gave other values than the first launch")

    def check_table(packed):
        """The launch's table: as many codes as there are bytes present, those bytes one to one."""
        codes = np.sort(packed.table[present])
        if packed.sigma != host.sigma or not np.array_equal(codes, np.arange(host.sigma)):
            raise AssertionError(f"process {rank}: the launch's byte table does not map the bytes one to one")

    @contextlib.contextmanager
    def setting(name, value):
        old = getattr(lcs_cuda, name)
        setattr(lcs_cuda, name, value)
        try:
            yield
        finally:
            setattr(lcs_cuda, name, old)

    def staging(mark):
        """Both arrays into the launches' page-locked block (from the pool), marked or not."""
        block = lcs_cuda._stage_block(nbytes, np.uint8)
        if block is None:
            raise RuntimeError(f"process {rank}: no page-locked block of {nbytes} bytes")
        staged = block[:nbytes].view(np.ndarray)
        t0 = time.perf_counter()
        found = lcs_cuda.stage_copy(staged[: len(flat[0])], flat[0], chunk, mark)
        found |= lcs_cuda.stage_copy(staged[len(flat[0]) :], flat[1], chunk, mark)
        seconds = time.perf_counter() - t0
        if not np.array_equal(staged[: len(flat[0])], flat[0]):
            raise AssertionError(f"process {rank}: the staging copy differs")
        if not np.array_equal(found, present if mark else np.zeros(256, bool)):
            raise AssertionError(f"process {rank}: the staging copy marked other bytes than are present")
        return seconds, staged

    for rep in range(args.repeat + 1):
        t = {}
        sync()
        t0 = time.perf_counter()
        bitparallel.pack_arrays(*batch.as_arrays((a, b)), table=False)
        t["pack"] = time.perf_counter() - t0

        sync()
        t["stage_copy"], staged = staging(False)
        del staged  # back to the pool

        sync()
        t["stage_marked"], staged = staging(True)

        sync()
        e0, e1 = event(), event()
        e0.record(st)
        d_all.copy_to_device(staged, stream=st)
        e1.record(st)
        st.synchronize()
        t["h2d_pinned"] = e0.elapsed_time(e1) / 1e3 if timed else None
        del staged  # back to the pool, for the launches below

        sync()
        t0 = time.perf_counter()
        d = [cuda.to_device(x) for x in flat]
        cuda.synchronize()
        t["h2d_pageable"] = time.perf_counter() - t0
        del d

        sync()
        fresh = bitparallel.pack_arrays(a, b, table=False)
        t0 = time.perf_counter()
        run = lcs_cuda.launch(fresh)
        t["launch_host"] = time.perf_counter() - t0
        cuda.synchronize()
        t0 = time.perf_counter()
        values, kernel_s = run.finish()
        t["results_back"] = time.perf_counter() - t0
        t["kernel"] = kernel_s if timed else None
        check(values, "one launch")
        check_table(fresh)

        sync()
        fresh = bitparallel.pack_arrays(a, b, table=False)
        t0 = time.perf_counter()
        values, _ = lcs_cuda.launch(fresh).finish()
        t["launch_total"] = time.perf_counter() - t0
        check(values, "the second launch")

        sync()
        fresh = bitparallel.pack_arrays(a, b, table=False)
        with setting("SLICE_BYTES", 1 << 62):
            t0 = time.perf_counter()
            values, _ = lcs_cuda.launch(fresh).finish()
            t["launch_one_slice"] = time.perf_counter() - t0
        check(values, "a launch of one slice")

        sync()
        t0 = time.perf_counter()
        batch._checked_values(lcs._SOLVER, Rows(a, b), picks)
        t["verify"] = time.perf_counter() - t0

        sync()
        t0 = time.perf_counter()
        values = lcs.solve_many((a, b), backend="cuda", verify=args.verify).values
        t["solve_many"] = time.perf_counter() - t0
        check(values, "solve_many")

        sync()
        with setting("STAGE_MIN_BYTES", 1 << 62):
            t0 = time.perf_counter()
            values = lcs.solve_many((a, b), backend="cuda", verify=args.verify).values
            t["solve_many_pageable"] = time.perf_counter() - t0
        check(values, "solve_many from pageable memory")

        if rep:  # the first pass warms up
            for s in STAGES:
                times[s].append(t[s])
    return {
        "times": times,
        "device": device_name(),
        "bytes": nbytes,
        "staged": nbytes >= stage_min,
        "stage_min_bytes": stage_min,
        "copy_chunk_bytes": chunk,
        "slice_bytes": slice_bytes,
        "slices": slices if nbytes >= stage_min else 1,
        "numba_threads": numba.get_num_threads(),
    }


def child(args, rank: int, gpu: str, threads: int, barrier, out) -> None:
    """One process of a round: its GPU and threads set before CUDA or numba starts, then
    :func:`measure`; puts ``("ok" | "error", rank, result)`` on ``out``."""
    os.environ["CUDA_VISIBLE_DEVICES"] = gpu
    os.environ["NUMBA_NUM_THREADS"] = str(threads)
    try:
        result = measure(args, rank, lambda: barrier.wait(args.timeout))
        out.put(("ok", rank, result))
    except BaseException:
        barrier.abort()  # the others stop waiting for this one
        out.put(("error", rank, traceback.format_exc()))


def run_round(args, n: int) -> dict:
    """``n`` processes at once; their results by rank (an error's traceback raises here)."""
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(n), ctx.Queue()
    threads = args.threads or max(1, (os.cpu_count() or 1) // n)
    devs = gpus(n)
    procs = [ctx.Process(target=child, args=(args, r, devs[r], threads, barrier, out)) for r in range(n)]
    for p in procs:
        p.start()
    results, errors = {}, {}
    while len(results) + len(errors) < n:
        try:
            kind, rank, value = out.get(timeout=1)
        except queue.Empty:
            for r, p in enumerate(procs):
                if p.exitcode not in (None, 0) and r not in results and r not in errors:
                    barrier.abort()
                    errors[r] = f"exited with code {p.exitcode}"
            continue
        (results if kind == "ok" else errors)[rank] = value
    for p in procs:
        p.join()
    if errors:
        raise RuntimeError(
            f"{n} processes: " + "\n".join(f"process {r}: {e}" for r, e in sorted(errors.items()))
        )
    for r, res in results.items():
        res["gpu"] = devs[r]
        res["threads"] = threads
    return results


def _median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def records(args, rounds: dict) -> list[dict]:
    """The process lines, then the stage lines (see the module's docstring)."""
    lines, base = [], {}
    common = {"pairs": args.pairs, "length": args.length, "repeat": args.repeat}
    for n, results in rounds.items():
        for r in sorted(results):
            res = results[r]
            for s in STAGES:
                med = _median(res["times"][s])
                line = {"record": "process", "procs": n, "rank": r, "stage": s, "median_s": med}
                line["runs_s"] = res["times"][s]
                if s in COPIES and med:
                    line["gb_per_s"] = res["bytes"] / med / 1e9
                line.update(common, gpu=res["gpu"], device=res["device"], threads=res["threads"])
                line.update(bytes=res["bytes"], staged=res["staged"], stage_min_bytes=res["stage_min_bytes"])
                line.update(copy_chunk_bytes=res["copy_chunk_bytes"], numba_threads=res["numba_threads"])
                line.update(slice_bytes=res["slice_bytes"], slices=res["slices"])
                lines.append(line)
    for n, results in rounds.items():
        for s in STAGES:
            meds = [_median(res["times"][s]) for res in results.values()]
            med = _median(meds)
            worst = max((m for m in meds if m is not None), default=None)
            if n == min(rounds):
                base[s] = med
            slow = med / base[s] if med is not None and base.get(s) else None
            lines.append(
                {"record": "stage", "procs": n, "stage": s, "median_s": med, "max_s": worst, "slowdown": slow}
                | common
            )
    return lines


def main(argv=None) -> int:
    args = arguments(argv)
    if args.dry_run:
        plan = {"record": "plan", "rounds": args.rounds, "gpus": {n: gpus(n) for n in args.rounds}}
        plan.update(pairs=args.pairs, length=args.length, repeat=args.repeat, verify=args.verify)
        plan.update(bytes_per_process=2 * args.pairs * args.length, stages=list(STAGES))
        plan.update(stage_min_mb=args.stage_min_mb, chunk_kb=args.chunk_kb)
        plan.update(slice_mb=args.slice_mb, min_slice_pairs=args.min_slice_pairs)
        print(json.dumps(plan))
        return 0
    rounds = {n: run_round(args, n) for n in args.rounds}
    lines = [json.dumps(line) for line in records(args, rounds)]
    print("\n".join(lines))
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
