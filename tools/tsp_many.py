"""Time ``tsp.solve_many`` on the issue-15 Held-Karp workloads: 10,000 instances of 12 cities and
1,000 of 16 (random integer distances 0..1,000, asymmetric; ``--real`` for float64 ones), every tour
checked, on each backend, and the same workload as a loop over ``tsp.solve`` for comparison.

``python tools/tsp_many.py [--scale 1.0] [--backends cpu,cuda] [--loop 200] [--repeat 3] [--real]``

``--scale`` multiplies the instance counts (0.1: 1,000 and 100); ``--backends`` defaults to cpu, and
cuda where a GPU is usable; ``--loop N`` times the single solve on the first N instances of each
workload (a loop over the whole workload takes minutes; 0 skips it) with the backend the single
solve's ``auto`` picks for one instance, and gives its instances/s. Prints, per workload and
backend, the median seconds end to end (after a warm-up call that compiles the kernels), the
instances a second, the kernel's seconds and the host's (intake, check, solutions), and whether
the lengths and the tours equal the first backend's.
"""

import argparse
import statistics
import time

import numpy as np

from gpudp.backends import cuda_usable
from gpudp.problems import tsp

WORKLOADS = [(12, 10_000), (16, 1_000)]

ap = argparse.ArgumentParser()
ap.add_argument("--scale", type=float, default=1.0, help="multiply the instance counts")
ap.add_argument("--backends", default=None, help="comma-separated: cpu, cuda (default: both where usable)")
ap.add_argument("--loop", type=int, default=200, help="instances timed as a loop over tsp.solve (0: none)")
ap.add_argument("--repeat", type=int, default=3)
ap.add_argument("--real", action="store_true", help="float64 distances instead of integers")
args = ap.parse_args()
backends = args.backends.split(",") if args.backends else ["cpu"] + (["cuda"] if cuda_usable() else [])

rng = np.random.default_rng(0)
for n, full in WORKLOADS:
    count = max(1, round(full * args.scale))
    if args.real:
        D = rng.random((count, n, n)) * 1000
    else:
        D = rng.integers(0, 1001, (count, n, n))
    first = None
    for backend in backends:
        tsp.solve_many(D[:4], backend=backend)  # compile, start the GPU
        runs = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            r = tsp.solve_many(D, backend=backend, progress=False)
            runs.append(time.perf_counter() - t)
        med = statistics.median(runs)
        st = r.stats
        tours = np.array([s.details["tour_index"] for s in r.solutions])
        same = ""
        if first is None:
            first = (backend, r.values, tours)
        else:
            same = (
                f"; lengths equal to {first[0]}'s: {np.array_equal(r.values, first[1])}, "
                f"tours: {np.array_equal(tours, first[2])}"
            )
        print(
            f"n = {n}, {count} instances, {backend} ({st.device}): {med:.3f} s, "
            f"{count / med:,.0f} instances/s "
            f"(runs {', '.join(f'{x:.3f}' for x in runs)}); kernel {st.kernel_seconds:.3f} s, "
            f"{st.extra['transitions'] / max(st.kernel_seconds, 1e-9) / 1e9:.2f} G transitions/s{same}",
            flush=True,
        )
        host = st.extra["host_seconds"]
        print(f"  host: {', '.join(f'{k} {v:.3f} s' for k, v in host.items())}")
        if "cuda" in st.extra:
            print(f"  cuda: {st.extra['cuda']}")
    loop = min(args.loop, count)
    if loop:
        tsp.solve(D[0])  # compile
        t = time.perf_counter()
        sols = [tsp.solve(D[k]) for k in range(loop)]
        sec = time.perf_counter() - t
        agree = first is None or all(s.value == first[1][k] for k, s in enumerate(sols))
        print(
            f"n = {n}, loop over tsp.solve on the first {loop} ({sols[0].stats.backend}): {sec:.3f} s, "
            f"{loop / sec:,.0f} instances/s ({count / (loop / sec):.1f} s for all {count} at that rate); "
            f"lengths equal to the batch's: {agree}",
            flush=True,
        )
