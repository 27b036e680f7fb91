"""Tune the layered CUDA kernel on Boyer's knapsack class: threads per block x cells per thread.

Run on the GPU machine: python3 tools/knapsack_tune.py [n]. Prints one JSON line per setting (the
optimum must not change between settings)."""

import json
import sys

from gpudp.backends import cuda as cb
from gpudp.problems import knapsack_dp as kd
from gpudp.problems.knapsack_dp_bench import boyer_instance

n = int(sys.argv[1]) if len(sys.argv) > 1 else 50_000
p, w, c = boyer_instance(n, 0)
values = set()
for threads, unroll in ((256, 1), (256, 4), (256, 8), (512, 4)):
    cb.LAYER_THREADS, cb.LAYER_UNROLL = threads, unroll
    cb._CACHE.clear()
    kd.solve(*boyer_instance(200, 99), backend="cuda", progress=False)  # compile
    sol = kd.solve(p, w, c, backend="cuda", progress=False)
    st = sol.stats
    values.add(sol.value)
    row = {"n": n, "threads": threads, "unroll": unroll, "value": sol.value, "seconds": st.seconds}
    row["gcups_kernels"] = st.cells / st.kernel_seconds / 1e9
    row.update(grid=st.extra.get("grid"), registers=st.extra.get("registers_per_thread"))
    print(json.dumps(row), flush=True)
print(json.dumps({"same_optimum_everywhere": len(values) == 1}))
