"""``gpudp bench knapsack``: the dense knapsack DP on Boyer's class and O'Connell & Mumford's sweep.

Boyer, El Baz & Elkihel (2012), Table 2: strongly correlated items, ``w`` uniform in [1, 1000],
``p = w + 50``, ``C = sum(w) / 2``; n = 100,000 took 289 s on a GTX 260. For each n this records the
seconds end to end (solution vector included), the GCUPS over the cells actually computed (over the
whole solve and over the row kernels alone), the compression of the decisions and the bytes moved
to the host; beside them the DRAM bound measured on the card with a copy kernel in the same run, and
two peers: a plain two-row numba DP on the CPU (optimum only; stopped at a time limit and
extrapolated from the items done) and OR-Tools' dynamic-programming solver (in a subprocess, within
a time limit).

O'Connell & Mumford's set-up: n = 1,500 items, capacities swept upward; here ``w`` uniform in
[1, 1000], ``p = w + 50``, ``C`` doubling from 2^14 to 2^19 (``--sweep-caps``), seconds for each
backend. ``plot(json, png)`` draws seconds against capacity.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import time

import numba
import numpy as np

from gpudp.backends import device_name
from gpudp.jit import njit
from gpudp.problems.knapsack import dp as kd

from . import options
from .instances import boyer_instance, oconnell_instance

SEED_FIGURE = {
    "paper": "Boyer, El Baz & Elkihel 2012, Table 2",
    "n": 100_000,
    "seconds": 289.0,
    "gpu": "GTX 260",
}
#: DRAM bytes per computed cell of the row kernel, int32 values: prev[c] read, cur[c] written, one
#: decision bit (prev[c - w] is a cache hit: the block read it a few KB earlier)
BYTES_PER_CELL_INT32 = 4 + 4 + 1 / 8


@njit(parallel=True)
def _numba_rows(p, w, cap, deadline_items):
    """Plain two-row DP over all capacities, rows in parallel (prange); stops after deadline_items."""
    a = np.zeros(cap + 1, np.int64)
    b = np.zeros(cap + 1, np.int64)
    for k in range(min(len(w), deadline_items)):
        wk, pk = w[k], p[k]
        for c in numba.prange(cap + 1):
            v = a[c]
            if c >= wk and a[c - wk] + pk > v:
                v = a[c - wk] + pk
            b[c] = v
        a, b = b, a
    return a[cap]


def numba_peer(p, w, cap, limit: float) -> dict:
    """Time the plain numba row DP; past ``limit`` seconds (estimated from a probe) it runs only a
    part of the items and extrapolates."""
    _numba_rows(p[:2], w[:2], 10, 2)
    t = time.perf_counter()
    probe = max(1, min(len(w), 50))
    _numba_rows(p, w, cap, probe)
    per_item = (time.perf_counter() - t) / probe
    items = len(w) if per_item * len(w) <= limit else max(probe, int(limit / per_item))
    t = time.perf_counter()
    value = _numba_rows(p, w, cap, items)
    secs = time.perf_counter() - t
    cells = items * (cap + 1)
    out = {"items_done": items, "gcups": cells / secs / 1e9}
    if items == len(w):
        out.update(seconds=secs, value=int(value))
    else:
        out.update(seconds_extrapolated=secs * len(w) / items)
    return out


def _ortools_child(p, w, cap, q):
    from ortools.algorithms.python import knapsack_solver as ks

    s = ks.KnapsackSolver(ks.SolverType.KNAPSACK_DYNAMIC_PROGRAMMING_SOLVER, "dp")
    t = time.perf_counter()
    s.init([int(v) for v in p], [[int(v) for v in w]], [int(cap)])
    q.put((int(s.solve()), time.perf_counter() - t))


def ortools_peer(p, w, cap, limit: float) -> dict:
    """OR-Tools' KNAPSACK_DYNAMIC_PROGRAMMING_SOLVER in a subprocess killed after ``limit`` s."""
    try:
        import ortools.algorithms.python.knapsack_solver  # noqa: F401
    except ImportError as e:
        return {"error": f"not available: {e}"}
    q = mp.get_context("fork").Queue()
    proc = mp.get_context("fork").Process(target=_ortools_child, args=(p, w, cap, q))
    proc.start()
    proc.join(limit)
    if proc.is_alive():
        proc.kill()
        proc.join()
        return {"timed_out_after": limit}
    if q.empty():
        return {"error": f"exit code {proc.exitcode}"}
    value, secs = q.get()
    return {"seconds": secs, "value": value}


def dram_copy_bandwidth() -> dict:
    """Device-to-device copy by a simple grid-stride kernel: bytes read + written per second."""
    from gpudp.backends.cuda import cuda

    @cuda.jit
    def copy(src, dst):
        i = cuda.grid(1)
        n = src.shape[0]
        while i < n:
            dst[i] = src[i]
            i += cuda.gridDim.x * cuda.blockDim.x

    n = 1 << 28  # 1 GiB of int32 each way
    a = cuda.device_array(n, np.int32)
    b = cuda.device_array(n, np.int32)
    blocks = cuda.get_current_device().MULTIPROCESSOR_COUNT * 8
    copy[blocks, 256](a, b)
    cuda.synchronize()
    best = None
    for _ in range(5):
        s, e = cuda.event(), cuda.event()
        s.record()
        copy[blocks, 256](a, b)
        e.record()
        e.synchronize()
        secs = s.elapsed_time(e) / 1e3
        best = secs if best is None else min(best, secs)
    bw = 2 * n * 4 / best
    return {
        "copy_bytes_per_second": bw,
        "bound_gcups_int32": bw / BYTES_PER_CELL_INT32 / 1e9,
        "how": "bound = copy bandwidth (read + write bytes/s) / 8.125 bytes per cell (int32 prev[c] read, "
        "cur[c] written, 1/8 byte decision; prev[c-w] assumed a cache hit)",
    }


def run_dp(p, w, cap, backend: str) -> dict:
    sol = kd.solve(p, w, cap, backend=backend, progress=False)
    st = sol.stats
    ex = st.extra
    compile_s = ex.get("compile_seconds", 0.0)
    return {
        "backend": backend,
        "value": sol.value,
        "seconds": st.seconds,
        "kernel_seconds": st.kernel_seconds,
        "compile_seconds": compile_s,
        "cells_computed": st.cells,
        "cells_full_table": len(p) * (cap + 1),
        "gcups": st.cells / st.seconds / 1e9 if st.seconds else 0.0,
        "gcups_row_kernels": st.cells / st.kernel_seconds / 1e9 if st.kernel_seconds else 0.0,
        "compression": ex.get("compression"),
        "decision_bytes_stored": ex.get("decision_store_bytes"),
        "decision_bytes_uncompressed": ex.get("uncompressed_bytes"),
        "bytes_to_host": ex.get("bytes_to_host", ex.get("decision_store_bytes")),
        "launches": ex.get("launches"),
        "grid": ex.get("grid"),
        "registers_per_thread": ex.get("registers_per_thread"),
        "kernel": ex.get("kernel", "layered" if backend == "cuda" else "cpu"),
        "blocked_span": ex.get("blocked_span"),
        "blocked_passes": ex.get("blocked_passes"),
        "blocked_smem_bytes": ex.get("blocked_smem_bytes"),
        "value_type": sol.details.get("value_type"),
        "weight": sol.details["weight"],
    }


def bench_arguments(parser):
    parser.add_argument(
        "--sizes",
        type=options.int_list(1),
        default="10000,20000,50000,100000",
        help="Boyer's class: n values",
    )
    parser.add_argument("--seed", type=options.seed, default=0)
    parser.add_argument(
        "--numba-limit", type=options.seconds, default=20.0, help="seconds for the numba peer per n"
    )
    parser.add_argument(
        "--ortools-limit", type=options.seconds, default=60.0, help="seconds for OR-Tools per n"
    )
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument(
        "--sweep-n", type=options.positive_int, default=1500, help="O'Connell & Mumford: items"
    )
    parser.add_argument(
        "--sweep-caps",
        type=options.int_list(1),
        default=",".join(str(1 << k) for k in range(14, 20)),
        help="capacities (comma list)",
    )
    parser.add_argument("--plot", default=None, help="also draw the sweep to this PNG (needs matplotlib)")


def cli_bench(args) -> dict:
    backends = options.backend_list(args.backends)
    main = backends[0]
    out = {
        "date": time.strftime("%Y-%m-%d"),
        "device": {b: device_name(b) for b in backends},
        "seed_figure": SEED_FIGURE,
        "boyer": [],
        "sweep": [],
    }
    if main == "cuda":
        out["dram"] = dram_copy_bandwidth()
    for be in backends:  # compile before timing
        kd.solve(*boyer_instance(200, 99), backend=be, progress=False)
    ortools_ok = not args.no_peers
    for n in args.sizes:
        p, w, cap = boyer_instance(n, args.seed)
        row = {"n": n, "capacity": cap, "dp": run_dp(p, w, cap, main)}
        if not args.no_peers:
            row["numba_rows_cpu"] = numba_peer(p, w, cap, args.numba_limit)
            if ortools_ok:
                row["ortools_dp"] = ortools_peer(p, w, cap, args.ortools_limit)
                ortools_ok = "seconds" in row["ortools_dp"]  # larger n will not finish either
            else:
                row["ortools_dp"] = {"skipped": "a smaller n did not finish within the limit"}
        if "dram" in out:
            row["dp"]["fraction_of_dram_bound"] = (
                row["dp"]["gcups_row_kernels"] / out["dram"]["bound_gcups_int32"]
            )
        out["boyer"].append(row)
        print(json.dumps(row), flush=True)
    for cap in args.sweep_caps:
        p, w, _ = oconnell_instance(args.sweep_n, cap, args.seed)
        for be in backends:
            r = run_dp(p, w, cap, be)
            out["sweep"].append({"n": args.sweep_n, "capacity": cap, **r})
            print(json.dumps(out["sweep"][-1]), flush=True)
    if args.plot:
        plot(out, args.plot)
    return out


def plot(result: dict, png: str):
    """Seconds against capacity for each backend of the O'Connell & Mumford sweep."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for be in sorted({r["backend"] for r in result["sweep"]}):
        rs = [r for r in result["sweep"] if r["backend"] == be]
        label = f"{be}: {result['device'].get(be, '')[:40]}"
        ax.plot([r["capacity"] for r in rs], [r["seconds"] for r in rs], "o-", label=label)
    n = result["sweep"][0]["n"] if result["sweep"] else 0
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("capacity C")
    ax.set_ylabel("seconds, with the 0/1 vector")
    ax.set_title(f"0/1 knapsack DP, n = {n} ({result.get('date', '')})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
