"""How fast the frontier engine streams nodes through its host ring on the GPU (GB/s).

Run on the GPU machine: python3 tools/ring_bench.py [--nodes-log2 24] [--shen-limit 10]. Prints one
JSON line per run. The defaults are sized to finish well within a minute on the H100 (an estimate
made without a GPU).

Synthetic runs: a problem of 1024 variables (int64 f0, f1 and 32 bit words per node at the levels
that matter, 144 B) keeps only the "leave" son for the first levels, then both sons for the last
``--nodes-log2``: the frontier doubles up to 2^nodes-log2 nodes and nothing is pruned. Levels up to one
batch run on the host (cpu_threshold = batch + 1), so every byte counted in bytes_h2d and bytes_d2h
moves in a streamed level and ``gb_per_s`` (bytes / seconds_streamed) is the streamed path's rate, its
kernels included. The first run page-locks the ring's blocks (seconds_host_alloc), the second takes
them from the process-wide pool. ``copy_gb_per_s`` divides the same bytes by the summed device time
of the copies (CUDA events around each batch's copies, queueing behind the other lane's included: a
lower bound on the rate of the copies themselves).

Then Shen's hardest instance of docs/benchmarks.md (n = 700, seed 4; 1.7 GB/s before the block ring)
runs once with a time limit (--shen-limit 0 skips it).
"""

import argparse
import json
import sys
import time

import numpy as np

from gpudp import frontier
from gpudp.backends.cuda import driver as cb
from gpudp.bench.instances import shen_instance
from gpudp.memory import parse_bytes
from gpudp.problems.knapsack import bb as kb

N_VARS = 1024  # 32 bit words per node


def _doubling_child(level, f0, f1, take, data, nvars):
    """Only the 'leave' son before level data[0, 0], both sons from there on; nothing is pruned."""
    c0 = f0 + take
    return take == 0 or level >= data[0, 0], c0, f1 + take * level, c0 + nvars, c0


def _row(name, res_stats, extra):
    st = res_stats
    moved = st["bytes_h2d"] + st["bytes_d2h"]
    row = {"run": name, **extra}
    row["seconds"] = round(st["seconds"], 3)
    row["seconds_streamed"] = round(st["seconds_streamed"], 3)
    row["bytes_moved"] = moved
    row["gb_per_s"] = round(moved / st["seconds_streamed"] / 1e9, 2) if st["seconds_streamed"] else None
    row["copy_gb_per_s"] = round(moved / st["seconds_swap"] / 1e9, 2) if st["seconds_swap"] else None
    for k in (
        "seconds_swap",
        "seconds_host_alloc",
        "host_blocks_new",
        "host_blocks_reused",
        "host_block_bytes",
        "largest_host_bytes",
        "largest_frontier",
        "streamed_levels",
        "gpu_batches",
    ):
        row[k] = round(st[k], 3) if isinstance(st[k], float) else st[k]
    return row


def synthetic(nodes_log2, batch, budget):
    data = np.array([[N_VARS - 1 - nodes_log2]], np.int64)
    prob = frontier.BranchProblem(N_VARS, data, _doubling_child)
    res = frontier.solve(prob, "cuda", budget, batch, cpu_threshold=batch + 1)
    if not (res.complete and res.best == nodes_log2 + 1 and res.stats["largest_frontier"] == 1 << nodes_log2):
        raise SystemExit(f"synthetic run went wrong: {res.message}, best {res.best}")
    return res.stats


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes-log2", type=int, default=24, help="largest frontier: 2^this nodes")
    ap.add_argument("--batch", type=int, default=frontier.DEFAULT_BATCH)
    ap.add_argument("--host-budget", default="16e9", help="bytes of host ring (e.g. 16e9, 16G)")
    ap.add_argument("--shen-limit", type=float, default=10.0, help="seconds for Shen n=700 seed 4; 0: skip")
    args = ap.parse_args(argv)
    if not cb.available():
        raise SystemExit("needs a CUDA GPU (or NUMBA_ENABLE_CUDASIM=1 with tiny --nodes-log2 and --batch)")
    budget = parse_bytes(args.host_budget, "--host-budget")
    t = time.perf_counter()
    synthetic(min(args.nodes_log2, 12), min(args.batch, 1 << 10), budget)  # compile the kernels
    print(
        json.dumps(
            {"run": "compile", "device": cb.device_name(), "seconds": round(time.perf_counter() - t, 3)}
        ),
        flush=True,
    )
    cb.pinned_pool().trim(0)  # the first run below page-locks every block it takes
    for name in ("synthetic, cold pool", "synthetic, warm pool"):
        st = synthetic(args.nodes_log2, args.batch, budget)
        print(json.dumps(_row(name, st, {"nodes": 1 << args.nodes_log2, "batch": args.batch})), flush=True)
    if args.shen_limit > 0:
        kb.solve(*shen_instance(100, 0), backend="cuda", cpu_threshold=0)  # compile its kernels
        sol = kb.solve(
            *shen_instance(700, 4), backend="cuda", time_limit=args.shen_limit, host_budget_bytes=budget
        )
        extra = {"optimal": sol.optimal, "value": sol.value, "time_limit": args.shen_limit}
        print(json.dumps(_row("shen n=700 seed 4", sol.stats.extra, extra)), flush=True)


if __name__ == "__main__":
    sys.exit(main())
