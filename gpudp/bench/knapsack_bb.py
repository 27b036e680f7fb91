"""``gpudp bench knapsack-bb``: branch and bound on the instance classes of Lalami & El Baz and of
Shen et al., with OR-Tools' B&B beside it when installed."""

from __future__ import annotations

import functools
import time

from gpudp import frontier
from gpudp.backends import device_name
from gpudp.memory import parse_bytes
from gpudp.problems.knapsack import KnapsackInstance, solve_instance
from gpudp.problems.knapsack.bb import solve

from . import options
from .instances import lalami_instance, shen_instance


def bench_arguments(parser):
    parser.add_argument(
        "--classes",
        type=options.choice_list("lalami", "shen"),
        default="lalami,shen",
        help="comma list of lalami, shen",
    )
    parser.add_argument("--lalami-sizes", type=options.int_list(1), default="100,200,300,400,500")
    parser.add_argument(
        "--shen-sizes", type=options.int_list(1), default="100,200,300,400,500,600,700,800,900,1000"
    )
    parser.add_argument("--lalami-seeds", type=options.positive_int, default=10)
    parser.add_argument("--shen-seeds", type=options.positive_int, default=20)
    parser.add_argument("--time-limit", type=options.seconds, default=60.0, help="seconds per instance")
    parser.add_argument(
        "--host-budget",
        type=options.checked(functools.partial(parse_bytes, field="--host-budget"), "size"),
        default="20e9",
        help="bytes of host buffer (e.g. 20e9, 16G)",
    )
    parser.add_argument(
        "--cpu-threshold", type=options.non_negative_int, default=frontier.DEFAULT_CPU_THRESHOLD
    )
    parser.add_argument("--batch", type=options.positive_int, default=frontier.DEFAULT_BATCH)
    parser.add_argument("--ortools", action="store_true", help="also time OR-Tools' B&B solver")
    parser.add_argument(
        "--ortools-time-limit", type=options.seconds, default=None, help="default: --time-limit"
    )
    parser.add_argument(
        "--deadline", type=options.seconds, default=None, help="stop the whole bench after this"
    )
    parser.add_argument(
        "--method",
        default="bb",
        choices=["bb", "auto"],
        help="auto: the knapsack front's cost model (knapsack.choose_method: dp, sparse or bb)",
    )


def _ortools_time(p, w, c, limit):
    from ortools.algorithms.python import knapsack_solver as ks

    s = ks.KnapsackSolver(ks.SolverType.KNAPSACK_MULTIDIMENSION_BRANCH_AND_BOUND_SOLVER, "bb")
    s.set_time_limit(limit)
    t = time.perf_counter()
    s.init([int(v) for v in p], [[int(v) for v in w]], [int(c)])
    val = s.solve()
    return time.perf_counter() - t, int(val), bool(s.is_solution_optimal())


def cli_bench(args) -> dict:
    backends = options.backend_list(args.backends)
    solve(*lalami_instance(60, 0), backend=backends[0], cpu_threshold=0)  # compile before timing
    solve(*lalami_instance(60, 0), backend="cpu")
    if args.method == "auto":
        for be in backends:  # compile the DP kernels too
            solve_instance(KnapsackInstance(*lalami_instance(60, 0)), method="dp", backend=be)
    t_start = time.perf_counter()
    out = {"device": {b: device_name(b) for b in backends}, "bound": "Martello-Toth U2", "runs": []}
    plan = []
    if "lalami" in args.classes:
        plan += [("lalami", n, s) for n in args.lalami_sizes for s in range(args.lalami_seeds)]
    if "shen" in args.classes:
        plan += [("shen", n, s) for n in args.shen_sizes for s in range(args.shen_seeds)]
    gen = {"lalami": lalami_instance, "shen": shen_instance}
    for cls, n, seed in plan:
        if args.deadline and time.perf_counter() - t_start > args.deadline:
            out["stopped_early"] = f"deadline {args.deadline} s reached before {cls} n={n} seed={seed}"
            break
        p, w, c = gen[cls](n, seed)
        for be in backends:
            solve_options = dict(
                backend=be,
                host_budget_bytes=args.host_budget,
                batch=args.batch,
                cpu_threshold=args.cpu_threshold,
                time_limit=args.time_limit,
            )
            if args.method == "auto":
                sol = solve_instance(KnapsackInstance(p, w, c), method="auto", **solve_options)
            else:
                sol = solve(p, w, c, **solve_options)
            st = sol.stats.extra
            out["runs"].append(
                {
                    "class": cls,
                    "n": n,
                    "seed": seed,
                    "backend": be,
                    "method": sol.details.get("method", "bb"),
                    "solved": sol.optimal,
                    "value": sol.value,
                    "seconds": sol.stats.seconds,
                    "nodes": st.get("nodes_explored", 0),
                    "largest_frontier": st.get("largest_frontier", 0),
                    "bytes_swapped": st.get("bytes_h2d", 0) + st.get("bytes_d2h", 0),
                    "gpu_levels": st.get("gpu_levels", 0),
                    "cpu_levels": st.get("cpu_levels", 0),
                    "streamed_levels": st.get("streamed_levels", 0),
                    "seconds_gpu": st.get("seconds_gpu", 0.0),
                    "seconds_cpu": st.get("seconds_cpu", 0.0),
                    "seconds_swap": st.get("seconds_swap", 0.0),
                    "seconds_streamed": st.get("seconds_streamed", 0.0),
                    "seconds_host_alloc": st.get("seconds_host_alloc", 0.0),
                }
            )
        if args.ortools:
            try:
                secs, val, opt = _ortools_time(p, w, c, args.ortools_time_limit or args.time_limit)
                out["runs"].append(
                    {
                        "class": cls,
                        "n": n,
                        "seed": seed,
                        "backend": "ortools-bb",
                        "solved": opt,
                        "value": val,
                        "seconds": secs,
                    }
                )
            except (ImportError, AttributeError) as e:
                out["ortools"] = f"not available: {type(e).__name__}: {e}"
                args.ortools = False
    out["summary"] = _summary(out["runs"])
    return out


def _summary(runs):
    groups = {}
    for r in runs:
        groups.setdefault((r["class"], r["n"], r["backend"]), []).append(r)
    rows = []
    for (cls, n, be), rs in sorted(groups.items()):
        secs = sorted(r["seconds"] for r in rs if r["solved"])
        rows.append(
            {
                "class": cls,
                "n": n,
                "backend": be,
                "instances": len(rs),
                "solved": sum(r["solved"] for r in rs),
                "median_seconds_solved": secs[len(secs) // 2] if secs else None,
                "max_seconds_solved": secs[-1] if secs else None,
            }
        )
    return rows
