"""Where knapsack ``reach``'s time goes at each thread count: one instance file, each thread count a
fresh process (numba fixes its threads at start), the solve run twice (the first compiles or loads
the cache), the second's wall and CPU seconds, envelope builds and each search's seconds, and the
method ``auto`` takes with its steps' seconds.

    python tools/reach_threads.py OUT.jsonl FILE [FILE ...] [--threads 1,2,4,16] [--time-limit 30]

One JSON line a run: ``file``, ``threads``, ``layer`` (numba's threading layer), ``reach``
(``wall_s``, ``cpu_s``, ``states``, ``envelopes`` and ``fine_envelopes`` seconds, ``searches``:
each search's or beam's seconds and states) and ``auto`` (``wall_s``, its attempts).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

_ONE = """
import json, resource, sys, time
import numba
from gpudp.problems import knapsack
from gpudp.problems.knapsack import io
path, limit = sys.argv[1], float(sys.argv[2])
inst = io.read_knapsack(path)

def timed(method):
    knapsack.solve_instance(inst, method=method, time_limit=limit)  # compile, or load the cache
    r0, t = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    sol = knapsack.solve_instance(inst, method=method, time_limit=limit)
    wall, r1 = time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF)
    cpu = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
    out = dict(wall_s=round(wall, 4), cpu_s=round(cpu, 3), optimal=bool(sol.optimal), value=str(sol.value))
    return sol, out

sol, reach = timed("reach")
d = sol.details
reach.update(states=d.get("states_generated"))
for key in ("envelopes", "fine_envelopes"):
    if key in d:
        reach[key] = round(d[key]["seconds"], 4)
KEYS = ("seconds", "states", "beam", "stopped")
reach["searches"] = [
    {k: (round(v, 4) if isinstance(v, float) else v) for k, v in s.items() if k in KEYS}
    for s in d.get("searches", [])
]
sol, auto = timed("auto")
auto["attempts"] = sol.details.get("auto", {}).get("attempts")
layer = numba.threading_layer()
print(json.dumps(dict(threads=numba.get_num_threads(), layer=layer, reach=reach, auto=auto)))
"""


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--threads", default="1,2,4,16")
    ap.add_argument("--time-limit", type=float, default=30.0)
    args = ap.parse_args(argv)
    with open(args.out, "w") as f:
        for path in args.files:
            for t in (int(x) for x in args.threads.split(",")):
                env = {**os.environ, "NUMBA_NUM_THREADS": str(t)}
                argv = [sys.executable, "-c", _ONE, path, str(args.time_limit)]
                out = subprocess.run(argv, capture_output=True, text=True, env=env)
                if out.returncode:
                    raise SystemExit(f"{path} on {t} threads failed:\n{out.stderr[-3000:]}")
                row = {"file": path, **json.loads(out.stdout.strip().splitlines()[-1])}
                f.write(json.dumps(row) + "\n")
                print(json.dumps(row)[:300], flush=True)


if __name__ == "__main__":
    main()
