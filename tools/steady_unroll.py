"""The LCS tiled kernel's steady-state unroll (GPUDP_STEADY_UNROLL) against compile time and speed:
one cold compile (cache off) and the kernels' GCUPS at n = 2^17, medians of 3, in this process.

    for u in 32 8 4 1; do GPUDP_CACHE_DIR=off GPUDP_STEADY_UNROLL=$u python3 tools/steady_unroll.py; done
"""

import json
import os
import time

import numpy as np

from gpudp.engine import sweep
from gpudp.problems.lcs import LCSRecurrence

n = int(os.environ.get("UNROLL_N", 1 << 17))
rng = np.random.default_rng(0)
dna = np.frombuffer(b"ACGT", np.uint8)
a, b = dna[rng.integers(0, 4, n)].astype(np.int32), dna[rng.integers(0, 4, n)].astype(np.int32)
t = time.perf_counter()
small = sweep(LCSRecurrence(a[:600], b[:600]), backend="cuda", progress=False)
compile_s = small.stats.extra["compile_seconds"]
res = small.stats.extra
rec = LCSRecurrence(a, b)
ks, ss, last = [], [], None
for _ in range(4):
    r = sweep(rec, backend="cuda", progress=False)
    ks.append(r.stats.kernel_seconds)
    ss.append(r.stats.seconds)
    last = int(r.last_row[-1])
    r.close()
k, s = float(np.median(ks[1:])), float(np.median(ss[1:]))
row = {
    "unroll": int(os.environ.get("GPUDP_STEADY_UNROLL", 32)),
    "compile_seconds": round(compile_s, 2),
    "registers": res.get("registers_per_thread"),
    "local_bytes": res.get("local_bytes_per_thread"),
    "n": n,
    "kernel_gcups": round(n * n / k / 1e9, 1),
    "sweep_gcups": round(n * n / s / 1e9, 1),
    "lcs": last,
}
print(json.dumps(row))
