"""``gpudp bench knapsack-classes``: Pisinger's classes solved by ``--method auto``, CP-SAT beside.

Issue 16's benchmark: classes 1-6 (uncorrelated, weakly, strongly, inverse strongly, almost strongly
correlated, subset sum; :mod:`gpudp.problems.knapsack.classes`) at n in {1,000, 10,000} and
R in {10^6, 10^7}, ``C`` half the total weight; ``--classes hard`` (or ``all``) adds spanner,
multiple strongly correlated, profit ceiling and circle instances; ``--classes jooken`` (named: not
in ``all``) Jooken et al.'s class (issue 41; :func:`~gpudp.problems.knapsack.classes.jooken_instance`),
whose capacity is ``c = R`` for each of ``--ranges`` and whose other parameters ``--jooken`` sets
(``g=10,f=0.1,eps=1e-4,s=100`` by default; c at most 2^51). Each instance is solved by
``knapsack.solve_instance(method="auto")`` on each backend: the method auto ran, the seconds end to
end (the 0/1 vector and its check included, after compilation), whether the value is proven, the
DP's predicted time that chose the method, and the sparse DP's work (states, largest list, core,
the probes, the list steps that ran on the GPU) or the reachable-sums DP's (states, largest list,
upper bound, searches, whether the fine envelopes were built). Before anything is timed, every
compiled function of the sparse search, of the reachable-sums search and, where cuda runs, the
sparse GPU list step are compiled (``sparse.warm()``, ``reach.warm()``, ``sparse_cuda.warm()``): on
a machine whose cache is cold they would otherwise compile inside the first instances that use
them.
OR-Tools CP-SAT (``--peers``, on by default) runs the same instance with the same time limit on
every core when ``ortools`` imports; otherwise the JSON says why it was skipped. ``--combo PATH``
runs Pisinger's combo on each instance too, on this machine, for at most ``--peer-limit`` seconds
(:mod:`gpudp.bench.combo`): its optimum held to ours, its seconds over ours where both proved it.
Goals (issue 16): every instance proven, at most 1 s on the H100 and 10 s on the cpu backend.
"""

from __future__ import annotations

import json
import os
import time

from gpudp.backends import device_name
from gpudp.errors import InputError
from gpudp.problems.knapsack import solve_instance, validate
from gpudp.problems.knapsack.classes import (
    JOOKEN,
    JOOKEN_C_MAX,
    R_MAX,
    class_instance,
    class_name,
    parse_classes,
    parse_jooken,
    pisinger_instance,
)

from . import combo, options

GOAL_SECONDS = {"cuda": 1.0, "cpu": 10.0}


def bench_arguments(parser):
    parser.add_argument(
        "--classes",
        type=options.checked(parse_classes, "class"),
        default="1-6",
        help="1-6, hard (11-16), all (1-16), jooken (Jooken et al. 2022, c = R), or a comma list",
    )
    parser.add_argument(
        "--jooken",
        type=options.checked(parse_jooken, "parameter"),
        default="",
        help="the jooken class's parameters, NAME=VALUE comma list of g (groups), f (fraction of small "
        "items), eps, s (perturbation); default g=10,f=0.1,eps=1e-4,s=100",
    )
    parser.add_argument(
        "--sizes", type=options.int_list(1), default="1000,10000", help="n values (comma list)"
    )
    parser.add_argument(
        "--ranges",
        type=options.whole_list(10, R_MAX),
        default="1e6,1e7",
        help="R values (comma list); the capacity c of the jooken class",
    )
    parser.add_argument(
        "--seeds", type=options.positive_int, default=1, help="instances per (class, n, R): seeds 0.."
    )
    parser.add_argument("--time-limit", type=options.seconds, default=60.0, help="limit a solve (s)")
    parser.add_argument("--no-peers", action="store_true", help="skip CP-SAT")
    parser.add_argument(
        "--peer-limit", type=options.seconds, default=None, help="CP-SAT s (default: --time-limit)"
    )
    combo.add_argument(parser, "--peer-limit")


def cpsat_peer(p, w, c, limit: float) -> dict:
    """OR-Tools CP-SAT on the 0/1 model (one Boolean an item, one capacity row), all cores."""
    try:
        from ortools.sat.python import cp_model
    except ImportError as e:
        return {"skipped": f"ortools not importable: {e}"}
    m = cp_model.CpModel()
    x = [m.new_bool_var(f"x{i}") for i in range(len(p))]
    m.add(cp_model.LinearExpr.weighted_sum(x, [int(v) for v in w]) <= int(c))
    m.maximize(cp_model.LinearExpr.weighted_sum(x, [int(v) for v in p]))
    s = cp_model.CpSolver()
    s.parameters.max_time_in_seconds = float(limit)
    s.parameters.num_workers = os.cpu_count() or 1
    t = time.perf_counter()
    status = s.solve(m)
    secs = time.perf_counter() - t
    out = {"seconds": secs, "status": s.status_name(status), "workers": s.parameters.num_workers}
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        out.update(value=int(s.objective_value), proven=status == cp_model.OPTIMAL)
    return out


def combo_peer(exe: str, inst, limit: float, row: dict, backends) -> dict:
    """combo on the instance here (:func:`.combo.run`), held to our answers: ``agrees`` where both
    proved the optimum, ``contradicts`` where its packing beats one of ours proven optimal or its
    proven optimum is below ours; ``combo_over_ours`` its seconds over each backend's where both
    proved it."""
    _, out = combo.run(exe, inst, limit)
    if out["status"] != "proven":
        return out
    ours = {be: row[be] for be in backends if be in row}
    proven = [r["value"] for r in ours.values() if r["proven"]]
    out["agrees"] = all(v == out["optimum"] for v in proven) if proven else None
    out["contradicts"] = any(v != out["optimum"] for v in proven) or any(
        r["value"] > out["optimum"] for r in ours.values()
    )
    out["combo_over_ours"] = {
        be: out["seconds"] / max(r["seconds"], 1e-9) for be, r in ours.items() if r["proven"]
    }
    return out


def run_auto(inst, backend: str, time_limit: float) -> dict:
    t = time.perf_counter()
    sol = solve_instance(inst, method="auto", backend=backend, time_limit=time_limit)
    secs = time.perf_counter() - t
    d = sol.details
    auto = d.get("auto", {})
    out = {
        "method": d.get("method"),
        "seconds": secs,
        "proven": bool(sol.optimal),
        "value": int(sol.value),
        "dp_cells": auto.get("dp_cells"),
        "dp_backend": auto.get("dp_backend"),
        "dp_predicted_seconds": auto.get("dp_predicted_seconds"),
        "attempts": auto.get("attempts"),
        "method_note": d.get("method_note"),
    }
    if d.get("method") == "sparse":
        out.update(
            states_generated=d.get("states_generated"),
            largest_list=d.get("largest_list"),
            core_items=d.get("core_items"),
            reduced_items=d.get("reduced_items"),
            probes=d.get("probes"),
            gpu_steps=(d.get("gpu") or {}).get("steps"),
        )
    elif d.get("method") == "reach":
        out.update(
            states_generated=d.get("states_generated"),
            largest_list=d.get("largest_list"),
            upper_bound=d.get("upper_bound"),
            searches=len(d.get("searches") or []),
            fine_envelopes="fine_envelopes" in d,
        )
    return out


def warm(backends):
    """Compile the sparse DP (its GPU list step too where cuda runs), the reachable-sums DP and the
    dense DP (each backend) before anything is timed (also used by ``bench knapsack-files``).

    Parameters
    ----------
    backends : the backends the bench times (``cpu``, ``cuda``)
    """
    from gpudp.problems.knapsack import reach, sparse

    sparse.warm()  # every compiled function of the search, not only those a small solve uses
    reach.warm()
    p, w, c = pisinger_instance(3, 60, 1000, seed=99)
    if "cuda" in backends:
        from gpudp.problems.knapsack.sparse import cuda as sparse_cuda

        sparse_cuda.warm()
    for be in backends:
        solve_instance(validate(p, w, c), method="dp", backend=be)


def cli_bench(args) -> dict:
    backends = options.backend_list(args.backends)
    classes, sizes, ranges = args.classes, args.sizes, args.ranges
    peer_limit = args.time_limit if args.peer_limit is None else args.peer_limit
    jooken = getattr(args, "jooken", None) or parse_jooken("")
    if JOOKEN in classes and max(ranges) > JOOKEN_C_MAX:
        raise InputError("--ranges", f"{max(ranges)}: the jooken class's capacity c = R is at most 2^51")
    warm(backends)
    out = {
        "date": time.strftime("%Y-%m-%d"),
        "device": {b: device_name(b) for b in backends},
        "cpu_count": os.cpu_count(),
        "settings": {
            "classes": classes,
            "sizes": sizes,
            "ranges": ranges,
            "seeds": args.seeds,
            "time_limit": args.time_limit,
            "capacity": "half the total weight" + ("; jooken: c = R" if JOOKEN in classes else ""),
        },
        "runs": [],
    }
    if JOOKEN in classes:
        out["settings"]["jooken"] = jooken
    peers = not args.no_peers
    for R in ranges:
        for n in sizes:
            for k in classes:
                for seed in range(args.seeds):
                    p, w, c = class_instance(k, n, R, seed=seed, jooken=jooken)
                    inst = validate(p, w, c)
                    row = {"class": k, "name": class_name(k), "n": n, "R": R, "seed": seed, "capacity": c}
                    if k == JOOKEN:
                        row["jooken"] = jooken
                    for be in backends:
                        row[be] = run_auto(inst, be, args.time_limit)
                    if args.combo:
                        row["combo"] = combo_peer(args.combo, inst, peer_limit, row, backends)
                    if peers:
                        row["cpsat"] = cpsat_peer(p, w, c, peer_limit)
                        if "skipped" in row["cpsat"]:
                            out["cpsat"] = row.pop("cpsat")["skipped"]
                            peers = False
                        else:
                            _compare(row, backends)
                    out["runs"].append(row)
                    print(json.dumps(row, default=str), flush=True)
    out["summary"] = summary(out["runs"], backends)
    return out


def _compare(row, backends):
    """CP-SAT's value against ours: ``agrees`` where both are proven; a value of CP-SAT's above one
    of ours proven optimal would be a contradiction (``contradicts``); ``gap`` below ours otherwise."""
    cp = row["cpsat"]
    ours = [row[be]["value"] for be in backends if row[be]["proven"]]
    if "value" not in cp or not ours:
        return
    if cp["proven"]:
        cp["agrees"] = all(v == cp["value"] for v in ours)
    else:
        cp["gap"] = max(ours) - cp["value"]
    cp["contradicts"] = any(cp["value"] > v for v in ours)


def summary(runs, backends) -> dict:
    """Per backend: instances proven, the slowest, the methods auto ran, the goal met or not; CP-SAT's
    proven count where it ran."""
    out = {}
    for be in backends:
        rs = [r[be] for r in runs if be in r]
        slowest = max(rs, key=lambda r: r["seconds"], default=None)
        goal = GOAL_SECONDS.get(be)
        out[be] = {
            "instances": len(rs),
            "proven": sum(r["proven"] for r in rs),
            "max_seconds": slowest["seconds"] if slowest else None,
            "methods": {m: sum(r["method"] == m for r in rs) for m in sorted({r["method"] for r in rs})},
            "goal_seconds": goal,
            "goal_met": bool(rs) and all(r["proven"] and r["seconds"] <= goal for r in rs),
        }
    cb = [r["combo"] for r in runs if "combo" in r]
    if cb:
        ratios = {be: [x.get("combo_over_ours", {}).get(be) for x in cb] for be in backends}
        ratios = {be: [v for v in vs if v is not None] for be, vs in ratios.items()}
        out["combo"] = {
            "instances": len(cb),
            "proven": sum(x["status"] == "proven" for x in cb),
            "max_seconds": max(x["seconds"] for x in cb),
            "disagreements": sum(x.get("agrees") is False or bool(x.get("contradicts")) for x in cb),
            "packing_errors": sum("error" in x for x in cb),
            "combo_over_ours_geomean": {be: combo.geomean(v) for be, v in ratios.items()},
            "combo_over_ours_min": {be: min(v, default=None) for be, v in ratios.items()},
        }
    cp = [r["cpsat"] for r in runs if "cpsat" in r]
    if cp:
        out["cpsat"] = {
            "instances": len(cp),
            "proven": sum(bool(r.get("proven")) for r in cp),
            "max_seconds": max(r["seconds"] for r in cp),
            "disagreements": sum(r.get("agrees") is False or bool(r.get("contradicts")) for r in cp),
        }
    return out
