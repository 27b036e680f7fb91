"""Time the CPU layered sweep on small layers (docs/benchmarks.md, "CPU: small layers"): knapsack DP
n = 20,000, C = 400 and Held-Karp on 14 cities, warm, median of 5."""

import statistics
import time

import numpy as np

from gpudp.problems import tsp
from gpudp.problems.knapsack import dp as kd

rng = np.random.default_rng(0)
w = rng.integers(1, 50, 20000)
p = w + 5
d = rng.integers(1, 100, (14, 14))
cases = {
    "knapsack n=20000 C=400": lambda: kd.solve(p, w, 400, backend="cpu"),
    "tsp n=14": lambda: tsp.solve(d, backend="cpu"),
}
for name, solve in cases.items():
    solve()  # compile or load
    walls, kernels = [], []
    for _ in range(5):
        t = time.perf_counter()
        sol = solve()
        walls.append(time.perf_counter() - t)
        kernels.append(sol.stats.kernel_seconds)
    print(f"{name}: median {statistics.median(walls):.4f} s, kernels {statistics.median(kernels):.4f} s")
