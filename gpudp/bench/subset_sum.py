"""``gpudp bench subset-sum``: Wan et al.'s Table II and Table V set-ups, with a numpy two-list as
the CPU peer."""

from __future__ import annotations

import time

import numpy as np

from gpudp.backends import device_name, resolve
from gpudp.errors import InputError
from gpudp.problems.subset_sum import solve

from . import options
from .instances import wan_instance as bench_instance

# The paper's figures quoted in issue 5 (Tesla C2050; w_i uniform in [1, 10^8], M = sum / 2).
PAPER = {
    "source": "Wan, Li, Liu & Li, Concurrency and Computation 2014, Table II (as quoted in gpudp issue 5)",
    "table_ii": {"54": {"gpu_tesla_c2050_s": 2.27, "sequential_two_list_s": 16.1, "sequential_dp_s": 33.9}},
}


def numpy_two_list(weights, target):
    """The CPU peer: two-list with numpy only (lists by sorting, search by np.searchsorted).
    Returns the largest subset sum <= target."""
    ws = sorted((w for w in weights if 0 < w <= target), reverse=True)

    def sums(half):
        a = np.zeros(1, np.int64)
        for w in half:
            k = np.searchsorted(a, target - w, side="right")
            a = np.sort(np.concatenate([a, a[:k] + w]), kind="stable")  # timsort merges the two runs
        return a

    a, b = sums(ws[0::2]), sums(ws[1::2])
    c = target - b
    return int(target - (c - a[np.searchsorted(a, c, side="right") - 1]).min())


def bench_arguments(parser):
    parser.add_argument("--n-min", type=options.positive_int, default=36)
    parser.add_argument("--n-max", type=options.positive_int, default=54)
    parser.add_argument("--n-step", type=options.positive_int, default=2)
    parser.add_argument("--instances", type=options.positive_int, default=5, help="seeded instances per n")
    parser.add_argument(
        "--repeats", type=options.positive_int, default=3, help="timed runs per instance (median)"
    )
    parser.add_argument(
        "--alpha-n", type=options.positive_int, default=46, help="n of the capacity sweep (Table V)"
    )
    parser.add_argument(
        "--alphas",
        type=options.int_list(1, 100, empty=True),
        default="20,25,30,35,40,45,50,55",
        help="targets, percent of the sum ('' for none)",
    )
    parser.add_argument(
        "--cpu-max-n", type=options.non_negative_int, default=44, help="largest n timed on the CPU backends"
    )
    parser.add_argument(
        "--large",
        type=options.int_list(1, empty=True),
        default="60,62,64",
        help="extra n, one instance, GPU only ('' for none)",
    )
    parser.add_argument("--block", type=options.positive_int, default=None, help="pruning block size e")
    parser.add_argument(
        "--time-budget", type=options.seconds, default=300.0, help="seconds; later cases are skipped"
    )


def _time_case(w, m, backend, repeats, block):
    runs = []
    for _ in range(repeats):
        sol = solve(w, m, backend=backend, block=block)
        runs.append(sol)
    walls = sorted(s.stats.seconds for s in runs)
    st = runs[0].stats.extra
    out = {
        "median_s": float(np.median(walls)),
        "runs_s": walls,
        "feasible": runs[0].details["feasible"],
        "list_sizes": st.get("list_sizes"),
        "pairs": st.get("pairs"),
        "memory_bytes": st.get("memory_bytes"),
    }
    if st.get("stages"):
        for key in st["stages"]:
            out[key] = float(np.median([s.stats.extra["stages"][key] for s in runs]))
    best = m if runs[0].details["feasible"] else runs[0].details["closest_sum"]
    return out, best


def cli_bench(args):
    if args.n_min > args.n_max:
        raise InputError("--n-min", f"{args.n_min} is above --n-max {args.n_max}")
    backends = [resolve(b) for b in options.backend_list(args.backends)]
    t_start = time.perf_counter()
    for b in backends:  # warm-up: JIT compilation stays out of the figures
        solve(*bench_instance(20, 99), backend=b, block=args.block)
    result = {
        "problem": "subset-sum",
        "devices": {b: device_name(b) for b in backends},
        "method": "wall seconds of solve() (median of --repeats after a warm-up); stage seconds from CUDA "
        "events (cuda) or perf_counter (cpu); numpy peer timed once",
        "paper": PAPER,
        "table_ii": [],
        "table_v": [],
        "large": [],
    }

    def case(n, seed, percent, backends_here, repeats):
        w, m = bench_instance(n, seed, percent)
        row = {"n": n, "seed": seed, "percent": percent, "target": m}
        bests = {}
        for b in backends_here:
            if time.perf_counter() - t_start > args.time_budget:
                row[b] = "skipped: time budget"
                continue
            if b == "cpu" and n > args.cpu_max_n:
                continue
            row[b], bests[b] = _time_case(w, m, b, repeats, args.block)
        if n <= args.cpu_max_n and time.perf_counter() - t_start <= args.time_budget:
            t0 = time.perf_counter()
            bests["numpy"] = numpy_two_list(w, m)
            row["numpy_peer_s"] = time.perf_counter() - t0
        row["agree"] = len(set(bests.values())) <= 1
        return row

    for n in range(args.n_min, args.n_max + 1, args.n_step):
        rows = [case(n, s, 50, backends, args.repeats) for s in range(args.instances)]
        summary = {"n": n, "instances": rows}
        for key in backends:
            med = [r[key]["median_s"] for r in rows if isinstance(r.get(key), dict)]
            if med:
                summary[f"{key}_median_s"] = float(np.median(med))
        peer = [r["numpy_peer_s"] for r in rows if "numpy_peer_s" in r]
        if peer:
            summary["numpy_peer_median_s"] = float(np.median(peer))
        result["table_ii"].append(summary)
    for pct in args.alphas:
        rows = [case(args.alpha_n, s, pct, backends, args.repeats) for s in range(args.instances)]
        entry = {"n": args.alpha_n, "alpha": pct / 100, "instances": rows}
        for key in backends:
            med = [r[key]["median_s"] for r in rows if isinstance(r.get(key), dict)]
            if med:
                entry[f"{key}_median_s"] = float(np.median(med))
        result["table_v"].append(entry)
    gpu = [b for b in backends if b == "cuda"]
    for n in args.large:
        if not gpu:
            result["large"].append({"n": n, "skipped": "no GPU"})
            continue
        try:
            result["large"].append(case(n, 0, 50, gpu, args.repeats))
        except InputError as e:  # the memory check's verdict is a result too
            result["large"].append({"n": n, "refused": str(e)})
    result["total_bench_s"] = time.perf_counter() - t_start
    return result
