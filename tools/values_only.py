"""LCS sweeps with and without the decision store (``sweep(..., traceback=False)``) on the GPU.

python tools/values_only.py
"""

import statistics
import time

import numpy as np

from gpudp.bench.instances import random_dna
from gpudp.engine import sweep
from gpudp.problems.lcs import LCSRecurrence

rng = np.random.default_rng(0)
for n in (32768, 131072):
    a, b = random_dna(n, rng).astype(np.int32), random_dna(n, rng).astype(np.int32)
    for tb in (True, False):
        sweep(LCSRecurrence(a[:2048], b[:2048]), backend="cuda", traceback=tb, progress=False).close()
        ts, ks = [], []
        for _ in range(3):
            t = time.perf_counter()
            r = sweep(LCSRecurrence(a, b), backend="cuda", traceback=tb, progress=False)
            ts.append(time.perf_counter() - t)
            ks.append(r.stats.kernel_seconds)
            v = int(r.last_row[-1])
            r.close()
        med, kern = statistics.median(ts), statistics.median(ks)
        print(
            f"n={n} traceback={tb} sweep {med:.4f} s ({n * n / med / 1e9:.0f} GCUPS) "
            f"kernels {kern:.4f} s ({n * n / kern / 1e9:.0f} GCUPS) lcs {v}",
            flush=True,
        )
