"""Time ``knapsack.solve_many`` on the issue-15 workload: 10,000 knapsacks of n = 100 items, capacity
about 25,000 (weights uniform in 1..1,000, profits = weight + uniform 1..100), each with its 0/1
vector, checked. ``python tools/knapsack_many.py [COUNT]``"""

import statistics
import sys
import time

import numpy as np

from gpudp.problems import knapsack

count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
rng = np.random.default_rng(0)
instances = []
for _ in range(count):
    w = rng.integers(1, 1001, 100)
    instances.append((w + rng.integers(1, 101, 100), w, int(w.sum()) // 2))
knapsack.solve_many(instances[:8], backend="cpu")  # compile
runs = []
for _ in range(3):
    t = time.perf_counter()
    r = knapsack.solve_many(instances, backend="cpu")
    runs.append(time.perf_counter() - t)
med = statistics.median(runs)
st = r.stats
print(
    f"{count} knapsacks: {med:.3f} s (runs {', '.join(f'{x:.3f}' for x in runs)}), "
    f"kernel {st.kernel_seconds:.3f} s, "
    f"{st.cells / st.kernel_seconds / 1e9:.2f} G cells/s, batched {st.extra['batched']}, on {st.device}"
)
