"""Time ``knapsack.solve_many`` on the issue-15 workload: 10,000 knapsacks of n = 100 items, capacity
about 25,000 (weights uniform in 1..1,000, profits = weight + uniform 1..100), each with its 0/1
vector, checked. Goal: <= 0.5 s end to end on one H100.

``python tools/knapsack_many.py [COUNT] [--backend cpu|cuda] [--repeat 3] [--threads 512]
[--unroll 2] [--compare]``

The default backend is cuda where a GPU is usable, else cpu. Prints the median wall time and its
breakdown: kernel seconds (CUDA events on the GPU, the prange kernel's wall time on the CPU), the
host's measured parts (intake: reading and packing the instances; check: every answer against its
instance; solutions: building the results) and the rest (copies, launches, waiting). ``--threads``
and ``--unroll`` set the GPU kernel's block size and cells a thread a strip (tuning);
``--compare`` checks the values against the cpu backend once.
"""

import argparse
import statistics
import time

import numpy as np

from gpudp.backends import cuda_usable
from gpudp.problems import knapsack

ap = argparse.ArgumentParser()
ap.add_argument("count", nargs="?", type=int, default=10_000)
ap.add_argument("--backend", choices=["cpu", "cuda"], default=None)
ap.add_argument("--repeat", type=int, default=3)
ap.add_argument("--threads", type=int, default=None, help="GPU: threads a block (at most)")
ap.add_argument("--unroll", type=int, default=None, help="GPU: cells a thread a strip")
ap.add_argument("--compare", action="store_true", help="check the values against the cpu backend")
args = ap.parse_args()
backend = args.backend or ("cuda" if cuda_usable() else "cpu")
if backend == "cuda" and (args.threads or args.unroll):
    from gpudp.problems.knapsack import cuda as knapsack_cuda

    knapsack_cuda.THREADS = args.threads or knapsack_cuda.THREADS
    knapsack_cuda.UNROLL = args.unroll or knapsack_cuda.UNROLL

rng = np.random.default_rng(0)
instances = []
for _ in range(args.count):
    w = rng.integers(1, 1001, 100)
    instances.append((w + rng.integers(1, 101, 100), w, int(w.sum()) // 2))
knapsack.solve_many(instances[:8], backend=backend)  # compile, start the GPU
runs = []
for _ in range(args.repeat):
    t = time.perf_counter()
    r = knapsack.solve_many(instances, backend=backend)
    runs.append(time.perf_counter() - t)
med = statistics.median(runs)
st = r.stats
host = st.extra["host_seconds"]
rest = st.seconds - st.kernel_seconds - sum(host.values())
print(
    f"{args.count} knapsacks on {st.backend} ({st.device}): {med:.3f} s "
    f"(runs {', '.join(f'{x:.3f}' for x in runs)}); batched {st.extra['batched']}, alone {st.extra['alone']}"
)
print(
    f"last run {st.seconds:.3f} s: kernel {st.kernel_seconds:.3f} s "
    f"({st.cells / max(st.kernel_seconds, 1e-9) / 1e9:.1f} G cells/s of n*(C+1)), "
    f"host {sum(host.values()):.3f} s ({', '.join(f'{k} {v:.3f}' for k, v in host.items())}), "
    f"rest {rest:.3f} s"
)
if "cuda" in st.extra:
    print(f"cuda: {st.extra['cuda']}")
if args.compare and backend != "cpu":
    cpu = knapsack.solve_many(instances, backend="cpu")
    same = np.array_equal(cpu.values, r.values)
    print(f"values equal to the cpu backend's: {same}")
    if not same:
        raise SystemExit(1)
