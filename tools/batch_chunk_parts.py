"""Where a batch chunk's time goes on a multi-GPU host, without Dask (issue 18).

    python tools/batch_chunk_parts.py [PAIRS]      # a host with 4 GPUs; default 1,000,000 pairs

One process a GPU (``CUDA_VISIBLE_DEVICES``, numba's threads its share of the cores, as
``gpudp.distributed.cluster`` gives its workers), each solving its own ``PAIRS`` pairs of 1,000 x
1,000 DNA held in GPU memory (``lcs.solve_many``), all at the same moments (a barrier), 5 times:
1 process then 4 with ``verify=2``, 4 then 1 with ``verify=0``. Prints one JSON line a process:
medians of the whole call, the kernels, and the parts (packing, launching, the cross-checked
pairs' host solves, waiting for the results).
"""

import json
import multiprocessing as mp
import os
import sys
import time


def child(gpu, k, n, verify, barrier, q):
    os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu)
    os.environ["NUMBA_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // k))
    import numpy as np
    from numba import cuda

    from gpudp.problems import lcs
    from gpudp.problems.lcs import batch, bitparallel
    from gpudp.problems.lcs import cuda as lcuda

    parts = {}

    def timed(name, fn):
        def w(*a, **kw):
            t = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                parts.setdefault(name, []).append(time.perf_counter() - t)

        return w

    batch.bitparallel.pack_arrays = timed("pack", bitparallel.pack_arrays)
    batch._checked_values = timed("checked", batch._checked_values)
    lcuda.launch = timed("launch", lcuda.launch)
    lcuda.Launch.finish = timed("finish", lcuda.Launch.finish)
    rng = np.random.default_rng(gpu)
    codes = np.frombuffer(b"ACGT", np.uint8)
    A = cuda.to_device(codes[rng.integers(0, 4, (n, 1000), dtype=np.uint8)])
    B = cuda.to_device(codes[rng.integers(0, 4, (n, 1000), dtype=np.uint8)])
    lcs.solve_many((A, B), backend="cuda", verify=verify)
    parts.clear()
    whole, kern = [], []
    for _ in range(5):
        barrier.wait()
        t = time.perf_counter()
        r = lcs.solve_many((A, B), backend="cuda", verify=verify)
        whole.append(time.perf_counter() - t)
        kern.append(r.stats.kernel_seconds)
    med = {k: float(np.median(v)) for k, v in parts.items()}
    q.put(
        dict(
            gpu=gpu,
            procs=k,
            verify=verify,
            whole=float(np.median(whole)),
            kernel=float(np.median(kern)),
            **med,
        )
    )


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    ctx = mp.get_context("spawn")
    for k, verify in ((1, 2), (4, 2), (4, 0), (1, 0)):
        barrier, q = ctx.Barrier(k), ctx.Queue()
        ps = [ctx.Process(target=child, args=(g, k, n, verify, barrier, q)) for g in range(k)]
        for p in ps:
            p.start()
        rows = [q.get() for _ in ps]
        for p in ps:
            p.join()
        for r in sorted(rows, key=lambda r: r["gpu"]):
            print(
                json.dumps({x: (round(y, 4) if isinstance(y, float) else y) for x, y in r.items()}),
                flush=True,
            )
