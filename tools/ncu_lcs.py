"""One tiled LCS sweep, for profiling its kernel with Nsight Compute (tools/device-run.sh ncu)."""

import numpy as np

from gpudp.engine import sweep
from gpudp.problems.lcs import LCSRecurrence

n = 32768
rng = np.random.default_rng(0)
dna = np.frombuffer(b"ACGT", np.uint8)
rec = LCSRecurrence(dna[rng.integers(0, 4, n)], dna[rng.integers(0, 4, n)])
for _ in range(2):  # the first launch compiles; the second is profiled
    sweep(rec, backend="cuda", tile=(128, 128), progress=False).close()
