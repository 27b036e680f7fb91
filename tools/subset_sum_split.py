"""Subset sum past one GPU's memory by splitting (issue 17): ``python tools/subset_sum_split.py [N ...]``.

For each n (default 62, 64): Wan et al.'s random instance (weights 1..10^8, target half the sum;
feasible, so the first part that hits stops the search) and its "proof" twin (weights doubled,
target odd: no subset hits, every part runs, the closest sum below is the witness). Both solved by
``subset_sum.solve`` on the best backend, split as the free memory asks; prints one JSON line each.
With ``WORKERS=k`` (and ``SPLIT=s``: that many fixed items), the parts run on a local Dask cluster
of ``k`` workers, one a GPU where ``BACKEND=cuda`` (issue 18).
"""

import contextlib
import json
import os
import sys
import time

from gpudp import distributed
from gpudp.bench.instances import wan_instance
from gpudp.problems import subset_sum as ss

if __name__ == "__main__":  # the workers (spawned processes) import this file again
    sizes = [int(x) for x in sys.argv[1:]] or [62, 64]
    backend = os.environ.get("BACKEND", "auto")
    workers = int(os.environ.get("WORKERS", "0"))
    split = int(os.environ["SPLIT"]) if "SPLIT" in os.environ else None
    ss.solve(*wan_instance(30, 0), backend=backend)  # warm-up
    with contextlib.ExitStack() as stack:
        client = None
        if workers:
            client = stack.enter_context(distributed.cluster(workers=workers, gpus=backend == "cuda"))
        for n in sizes:
            w, target = wan_instance(n, 0)
            for kind, ws, t in (("feasible", w, target), ("proof", [2 * x for x in w], 2 * target + 1)):
                t0 = time.perf_counter()
                sol = ss.solve(ws, t, backend=backend, split=split, client=client)
                row = {
                    "n": n,
                    "kind": kind,
                    "workers": workers,
                    "seconds": time.perf_counter() - t0,
                    "feasible": sol.details["feasible"],
                    "closest_sum": sol.details.get("closest_sum"),
                    "checked": sol.checked,
                    "backend": sol.stats.backend,
                    "device": sol.stats.device,
                    "split": sol.stats.extra.get("split"),
                    "memory_bytes": sol.stats.extra.get("memory_bytes"),
                }
                print(json.dumps(row), flush=True)
