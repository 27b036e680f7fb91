"""Re-solve every instance of a `gpudp bench knapsack-bb` JSON on the cpu backend and compare optima.

python tools/verify_knapsack_runs.py RUNS.json [--bb-max-n 200]: each run's instance is rebuilt
from its class, n and seed; the cpu dense DP must reproduce its value, and for n <= --bb-max-n the
cpu branch and bound too (a second method). Exits 1 on any mismatch."""

import argparse
import json
import sys

from gpudp.bench.instances import lalami_instance, shen_instance
from gpudp.problems.knapsack import bb as kb
from gpudp.problems.knapsack import dp as kd

parser = argparse.ArgumentParser()
parser.add_argument("runs")
parser.add_argument("--bb-max-n", type=int, default=200)
args = parser.parse_args()
gen = {"lalami": lalami_instance, "shen": shen_instance}
bad = checked = 0
for r in json.load(open(args.runs))["runs"]:
    if not r.get("solved"):
        continue
    p, w, c = gen[r["class"]](r["n"], r["seed"])
    found = {"cpu dp": kd.solve(p, w, c, backend="cpu", progress=False).value}
    if r["n"] <= args.bb_max_n:
        bb = kb.solve(p, w, c, backend="cpu")
        found["cpu bb"] = bb.value if bb.optimal else None
    checked += 1
    for method, v in found.items():
        if v != r["value"]:
            bad += 1
            print(f"MISMATCH {r['class']} n={r['n']} seed={r['seed']}: {method} {v}, run {r['value']}")
print(f"{checked} solved runs re-solved on the cpu, {bad} mismatches")
sys.exit(1 if bad else 0)
