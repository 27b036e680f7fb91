"""``gpudp bench tsp``: Held-Karp on random Euclidean instances, written as JSON.

For each size n: n points with integer coordinates uniform in [0, 1000)^2, TSPLIB EUC_2D distances
(rounded to the nearest integer, so int32 cells). For each backend: a warm-up solve (compilation)
first, then ``--repeat`` solves of each size; each time is the wall time of ``solve()``: the sweep,
the eviction of the decisions, the tour's traceback and its check. Rates are in transitions per
second (states times predecessors summed over the layers, :func:`gpudp.problems.tsp.sizes.transitions`).
Peers on the same machine and instances: the cpu backend, and python-tsp's
``solve_tsp_dynamic_programming`` in a subprocess with a time limit (``--backends none`` runs the
peer alone, ``--no-peers`` leaves it out; the same seed gives the same instances, so separate runs
compare). Every tour length is compared across backends and peers. A size whose time on a backend,
predicted from its last size's rate, passes ``--limit`` is skipped; extra ``--layouts`` run on cuda
only.
"""

from __future__ import annotations

import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from gpudp.backends import device_name
from gpudp.errors import CheckError
from gpudp.problems.tsp import held_karp as hk
from gpudp.problems.tsp.recurrence import LAYOUTS
from gpudp.problems.tsp.sizes import MAX_CITIES, transitions

from . import options
from .instances import random_euclidean
from .instances import tsp_instance as instance

#: the issue's goals on the H100, seconds per solve (tour included)
GOALS = {25: 2.0, 28: 10.0, 30: 60.0}


def bench_arguments(p):
    p.add_argument(
        "--sizes",
        type=options.int_list(1, MAX_CITIES),
        default="16,20,24,25,26,28,30",
        help="comma-separated numbers of cities",
    )
    p.add_argument(
        "--repeat",
        type=options.positive_int,
        default=1,
        help="timed solves per size (on cuda the first one pins the store)",
    )
    p.add_argument(
        "--repeat-under",
        type=options.seconds_or_inf,
        default=float("inf"),
        help="repeat only sizes whose first solve took less than this many seconds",
    )
    p.add_argument("--seed", type=options.seed, default=0)
    p.add_argument(
        "--layouts",
        type=options.choice_list(*LAYOUTS),
        default="position",
        help="comma-separated layer layouts to time on each backend (position, subset); the first "
        "runs at every size, the others up to --layouts-max-size",
    )
    p.add_argument("--layouts-max-size", type=options.non_negative_int, default=26)
    p.add_argument(
        "--limit",
        type=options.seconds_or_inf,
        default=120.0,
        help="skip a size whose predicted time on a backend (from its last size's rate) passes this "
        "many seconds",
    )
    p.add_argument(
        "--peer-timeout",
        type=options.seconds,
        default=600.0,
        help="seconds python-tsp may take per size; larger sizes are skipped after a timeout",
    )
    p.add_argument(
        "--peer-sizes",
        type=options.int_list(1, MAX_CITIES),
        default=None,
        help="sizes for python-tsp (default: --sizes)",
    )
    p.add_argument("--no-peers", action="store_true", help="do not run python-tsp")


def _solve_timed(d, backend, layout, repeat, repeat_under):
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        sol = hk.solve(d, backend=backend, layout=layout, progress=False)
        runs.append((time.perf_counter() - t, sol))
        if runs[0][0] >= repeat_under:
            break
    return runs


def _result(backend, layout, n, runs) -> dict:
    secs = [s for s, _ in runs]
    sols = [x for _, x in runs]
    if len({x.value for x in sols}) != 1:
        raise CheckError(
            f"{backend}/{layout}, n = {n}: repeated solves gave lengths {sorted({x.value for x in sols})}"
        )
    st = sols[-1].stats
    trans = transitions(n)
    solve_s = statistics.median(secs)
    return {
        "backend": backend,
        "layout": layout,
        "cities": n,
        "length": sols[0].value,
        "runs": len(runs),
        "seconds": secs,
        "solve_seconds_median": solve_s,
        "first_seconds": secs[0],
        "best_seconds": min(secs),
        "sweep_seconds": statistics.median(x.stats.seconds for x in sols),
        "kernel_seconds": statistics.median(x.stats.kernel_seconds for x in sols),
        "states": hk.memory_needed(n, backend="cpu")["states"],
        "transitions": trans,
        "transitions_per_second": trans / solve_s,
        "kernel_transitions_per_second": trans / st.kernel_seconds if st.kernel_seconds else None,
        "bytes_evicted": st.bytes_evicted,
        "device_bytes": sols[0].details["memory"]["device"],
        "value_dtype": sols[0].details["value_dtype"],
        "goal_seconds": GOALS.get(n) if backend == "cuda" else None,
        "extra": {
            k: st.extra.get(k)
            for k in ("grid", "launches", "gpu_seconds", "registers_per_thread", "decision_codec")
            if k in st.extra
        },
    }


_PEER = """
import json, sys, time
import numpy as np
from python_tsp.exact import solve_tsp_dynamic_programming
d = np.load(sys.argv[1])
t = time.perf_counter()
perm, length = solve_tsp_dynamic_programming(d)
seconds = time.perf_counter() - t
print(json.dumps({"seconds": seconds, "length": float(length), "tour": [int(x) for x in perm]}))
"""


def python_tsp_peer(d: np.ndarray, timeout: float) -> dict:
    """python-tsp's Held-Karp (pure Python, memoised recursion) on ``d``, in a subprocess that is
    killed after ``timeout`` seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "d.npy")
        np.save(path, d)
        try:
            r = subprocess.run(
                [sys.executable, "-c", _PEER, path], capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return {"error": f"did not finish within {timeout:g} s"}
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": f"failed: {last}"}
    out = json.loads(r.stdout)
    out["length_check"] = int(hk.tour_length(d, out.pop("tour")))
    return out


def cli_bench(args) -> dict:
    sizes, layouts = args.sizes, args.layouts
    backends = options.backend_list(args.backends, none=True)
    instances = {n: instance(n, args.seed) for n in sizes}
    results, peers, skipped = [], [], []
    warm = random_euclidean(8, np.random.default_rng(99))[1]
    compile_s = {}
    for backend in backends:
        t = time.perf_counter()
        for layout in layouts:
            hk.solve(warm, backend=backend, layout=layout, progress=False)
        compile_s[backend] = time.perf_counter() - t
    rates = {}  # backend -> transitions per second at its last size
    for n in sizes:
        d = instances[n]
        for backend in backends:
            for k, layout in enumerate(layouts):
                if k > 0 and (n > args.layouts_max_size or backend == "cpu"):
                    continue
                predicted = transitions(n) / rates[backend] if rates.get(backend) else 0.0  # 0 at n = 1
                if predicted > args.limit:
                    skipped.append(f"{backend} n={n}: predicted {predicted:.0f} s > --limit {args.limit:g}")
                    print(f"  skip {skipped[-1]}", file=sys.stderr)
                    continue
                runs = _solve_timed(d, backend, layout, args.repeat, args.repeat_under)
                results.append(_result(backend, layout, n, runs))
                _log(results[-1])
                if k == 0:
                    rates[backend] = results[-1]["transitions_per_second"]
    peer_sizes = args.peer_sizes or sizes
    timed_out = args.no_peers
    for n in peer_sizes if not args.no_peers else []:
        if timed_out:
            peers.append({"peer": "python-tsp", "cities": n, "error": "skipped: a smaller size timed out"})
            continue
        try:
            import python_tsp  # noqa: F401
        except ImportError:
            peers.append({"peer": "python-tsp", "cities": n, "error": "python-tsp is not installed"})
            break
        if n not in instances:
            instances[n] = instance(n, args.seed)
        out = python_tsp_peer(instances[n], args.peer_timeout)
        peers.append({"peer": "python-tsp solve_tsp_dynamic_programming (1 core)", "cities": n, **out})
        timed_out = "error" in out
        _log(peers[-1])
    lengths = {}
    for r in results:
        lengths.setdefault(r["cities"], set()).add(r["length"])
    for p in peers:
        if "length" in p:
            lengths.setdefault(p["cities"], set()).update({int(p["length"]), p["length_check"]})
    disagree = {n: sorted(v) for n, v in lengths.items() if len(v) > 1}
    from gpudp.info import info

    return {
        "benchmark": "tsp",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "environment": info(),
        "devices": {b: device_name(b) for b in backends},
        "workload": "random Euclidean: n points uniform in [0,1000)^2 (integer), EUC_2D distances; "
        "exact tour by Held-Karp, length and tour",
        "compile_and_warmup_seconds": compile_s,
        "results": results,
        "peers": peers,
        "skipped": skipped,
        "lengths_disagree": disagree,
        "goals_seconds_h100": GOALS,
    }


def _log(r: dict):
    if "peer" in r:
        what = f"{r['seconds']:9.3f} s, length {r['length']:.0f}" if "seconds" in r else r.get("error", "")
        print(f"  {'python-tsp':18s} n={r['cities']:>3d} {what}", file=sys.stderr)
        return
    rate = r["transitions_per_second"] / 1e9
    print(
        f"  {r['backend']:5s} {r['layout']:9s} n={r['cities']:>3d} solve {r['solve_seconds_median']:9.3f} s "
        f"(kernels {r['kernel_seconds']:8.3f} s), {rate:7.3f} G transitions/s, "
        f"{r['bytes_evicted'] / 2**20:9.1f} MiB evicted, length {r['length']}",
        file=sys.stderr,
    )
