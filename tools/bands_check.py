"""One LCS grid swept in column bands on a local Dask cluster against the single sweep (issue 17):
``python tools/bands_check.py [N] [BANDS] [WORKERS] [BACKEND] [BLOCK_ROWS]`` (block rows default
N / 4). Prints the times and whether the
last row and the traceback agree."""

import json
import sys
import time

import numpy as np

from gpudp import distributed, sweep
from gpudp.problems.lcs import LCSRecurrence

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 15
bands = int(sys.argv[2]) if len(sys.argv) > 2 else 2
workers = int(sys.argv[3]) if len(sys.argv) > 3 else 1
backend = sys.argv[4] if len(sys.argv) > 4 else "auto"
block_rows = int(sys.argv[5]) if len(sys.argv) > 5 else max(n // 4, 1)
if __name__ == "__main__":
    rng = np.random.default_rng(17)
    a, b = rng.integers(0, 4, n).astype(np.uint8), rng.integers(0, 4, n).astype(np.uint8)
    rec = LCSRecurrence(a, b)
    t = time.perf_counter()
    one = sweep(rec, backend=backend, progress=False)
    want = one.traceback((n - 1, n - 1))
    single = time.perf_counter() - t
    with distributed.cluster(workers=workers, gpus=backend == "cuda") as client:
        t = time.perf_counter()
        res = distributed.sweep_bands(rec, client, bands=bands, block_rows=block_rows, backend=backend)
        fwd = time.perf_counter() - t
        t = time.perf_counter()
        got = res.traceback((n - 1, n - 1))
        back = time.perf_counter() - t
    row = {
        "n": n,
        "bands": bands,
        "workers": workers,
        "block_rows": block_rows,
        "backend": one.stats.backend,
        "single_sweep_and_traceback_s": single,
        "bands_forward_s": fwd,
        "bands_traceback_s": back,
        "last_row_equal": bool(np.array_equal(res.last_row, one.last_row)),
        "path_equal": bool(np.array_equal(got, want)),
        "lcs": int(one.last_row[-1]),
    }
    print(json.dumps(row))
