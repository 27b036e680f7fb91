"""The batch pair kernels' grid on the GPU (docs/benchmarks.md, "Batch kernels and the L1 cache").

    python tools/pairs_grid.py OUT.jsonl

For pairs of several lengths and alphabets in GPU memory: one launch of the LCS and edit-distance
kernels at the grid ``gpudp.backends.cuda.cached_grid`` picks, against 1-8 blocks of 128 threads an
SM and the full grid (CUDA events, median of 3); then ``solve_many`` of 1,000,000 DNA pairs of 1,000
from numpy, page-locked and GPU arrays, with the cap and without it (median of 5).
"""

import json
import sys

import numpy as np
from numba import cuda

import gpudp.backends.cuda.driver as bc
from gpudp.problems import edit_distance, lcs
from gpudp.problems.edit_distance import cuda as ec
from gpudp.problems.lcs import bitparallel
from gpudp.problems.lcs import cuda as lc

#: (length, symbols, pairs)
SHAPES = ((100, 4, 4 * 10**6), (1000, 4, 10**6), (1000, 20, 300_000), (3000, 4, 100_000), (10000, 4, 8000))


def timed(launch, reps: int = 3) -> float:
    launch()
    cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = cuda.event(), cuda.event()
        s.record()
        launch()
        e.record()
        e.synchronize()
        ts.append(cuda.event_elapsed_time(s, e) / 1e3)
    return float(np.median(ts))


def main(out: str) -> None:
    rng = np.random.default_rng(1)
    dev = cuda.get_current_device()
    sms = dev.MULTIPROCESSOR_COUNT
    rows = [dict(device=dev.name.decode() if isinstance(dev.name, bytes) else dev.name, sms=sms)]

    def emit(r):
        print(json.dumps(r), flush=True)
        rows.append(r)

    def symbols(n, length, sigma):
        return rng.integers(65, 65 + sigma, (n, length), dtype=np.uint8)

    for length, sigma, n in SHAPES:
        packed = bitparallel.pack_arrays(
            cuda.to_device(symbols(n, length, sigma)), cuda.to_device(symbols(n, length, sigma)), table=False
        )
        lc._device_table(packed, packed.pat, packed.txt)
        args = (
            packed.pat, cuda.to_device(packed.pat_off), packed.txt, cuda.to_device(packed.txt_off),
            packed.sigma, cuda.to_device(packed.table), True, cuda.device_array(n, np.int64),
        )  # fmt: skip
        for spec in (lc.LCS, ec.LEVENSHTEIN):
            k = lc._kernel(spec, lc._pow2(packed.sigma), lc._pow2(packed.max_words))
            full = -(-n // 128)
            chosen = bc.cached_grid(k, args, 128, full)
            local = int(k.overloads[tuple(k.typeof_pyval(x) for x in args)].local_mem_per_thread)
            for grid in sorted({chosen, full, *[min(full, q * sms) for q in (1, 2, 3, 4, 8)]}):
                t = timed(lambda k=k, grid=grid, args=args: k[grid, 128](*args))
                emit(dict(length=length, sigma=sigma, pairs=n, kernel=spec.name, local_bytes=local, grid=grid,
                          chosen=grid == chosen, blocks_per_sm=round(grid / sms, 2), seconds=t,
                          gcups=n * length * length / t / 1e9))  # fmt: skip
    a, b = symbols(1_000_000, 1000, 4), symbols(1_000_000, 1000, 4)
    pa, pb = bc.pinned_empty(a.shape, a.dtype), bc.pinned_empty(b.shape, b.dtype)
    pa[:], pb[:] = a, b
    da, db = cuda.to_device(a), cuda.to_device(b)
    share = bc.L1_LOCAL_SHARE
    for capped in (True, False, True, False):
        bc.L1_LOCAL_SHARE = share if capped else 1e9
        bc._L1_BLOCKS.clear()
        for where, x, y in (("numpy", a, b), ("page-locked", pa, pb), ("gpu", da, db)):
            for solver in (lcs, edit_distance):
                solver.solve_many((x, y), backend="cuda")
                runs = sorted(
                    (r.stats.seconds, r.stats.kernel_seconds)
                    for r in (solver.solve_many((x, y), backend="cuda") for _ in range(5))
                )
                emit(dict(solve_many=solver.__name__.split(".")[-1], where=where, l1_cap=capped,
                          seconds=runs[2][0], kernel_seconds=runs[2][1]))  # fmt: skip
    bc.L1_LOCAL_SHARE = share
    with open(out, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "pairs-grid.jsonl")
