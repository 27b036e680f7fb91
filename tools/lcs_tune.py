"""Device diagnostics for the tiled LCS sweep: resources of the generated kernel, tile sizes,
pinned-memory and copy costs. Run on the GPU machine by tools/device-run.sh (tune)."""

import os
import time

import numpy as np

from gpudp.backends.cuda import driver as cb
from gpudp.engine import sweep
from gpudp.problems.lcs import LCSRecurrence, solve

cuda = cb.cuda
rng = np.random.default_rng(0)
dna = np.frombuffer(b"ACGT", np.uint8)


def seq(n):
    return dna[rng.integers(0, 4, n)]


# 1. pinned allocation and PCIe copy
for gib in (0.5, 2):
    n = int(gib * (1 << 30)) // 4
    t = time.perf_counter()
    h = cb.pinned_empty(n, np.uint32)
    t_alloc = time.perf_counter() - t
    d = cuda.device_array(n, np.uint32)
    d.copy_to_host(h)
    t = time.perf_counter()
    d.copy_to_host(h)
    cuda.synchronize()
    t_copy = time.perf_counter() - t
    print(f"pinned alloc {gib} GiB: {t_alloc:.3f} s; D2H copy {gib / t_copy:.1f} GiB/s")
    del h, d

# 2. tile sizes
sizes = [int(x) for x in os.environ.get("TUNE_SIZES", "32768,131072").split(",")]
tiles = [
    tuple(map(int, t.split("x")))
    for t in os.environ.get("TUNE_TILES", "256x256,256x512,128x256,512x256,256x1024,128x128").split(",")
]
best = {}
for n in sizes:
    a, b = seq(n), seq(n)
    for tile in tiles:
        rec = LCSRecurrence(a, b)
        sweep(rec, backend="cuda", tile=tile, progress=False).close()  # compile + warm
        ks, ss = [], []
        for _ in range(3):
            r = sweep(rec, backend="cuda", tile=tile, progress=False)
            ks.append(r.stats.kernel_seconds)
            ss.append(r.stats.seconds)
            last = r.last_row[-1]
            r.close()
        k, s = float(np.median(ks)), float(np.median(ss))
        print(
            f"n={n} tile={tile}: kernels {k:.4f} s = {n * n / k / 1e9:7.1f} GCUPS; sweep {s:.4f} s = "
            f"{n * n / s / 1e9:7.1f} GCUPS; grid {r.stats.extra['grid']} launches {r.stats.extra['launches']}"
            f" len {last}"
        )
        if k < best.get(n, (1e9, None))[0]:
            best[n] = (k, tile)
with open(os.path.join(os.environ.get("OUT", "."), "best_tile"), "w") as f:
    f.write("{},{}".format(*best[sizes[-1]][1]))
print(f"best tile at n={sizes[-1]}:", best[sizes[-1]][1])

# 3. the generated kernel of the last sweep: resources and machine code
print("kernel resources:", {k: v for k, v in r.stats.extra.items() if k.endswith("per_thread")})
try:
    sass = cb.LAST_LAUNCHER[0].inspect_sass()
    text = sass if isinstance(sass, str) else "\n".join(map(str, sass.values()))
    with open(os.path.join(os.environ.get("OUT", "."), "tiled.sass"), "w") as f:
        f.write(text)
    lines = [x for x in text.splitlines() if x.strip().startswith("/*")]
    local = sum(("LDL" in x or "STL" in x) for x in lines)
    print("SASS instructions:", len(lines), "local-memory ops:", local)
except Exception as e:  # nvdisasm missing, or the API differs between numba-cuda versions
    print("SASS n/a:", type(e).__name__, e)

# 4. a whole solve with traceback at the largest size
n = sizes[-1]
a, b = seq(n), seq(n)
for _ in range(2):
    t = time.perf_counter()
    sol = solve(a, b, backend="cuda", progress=False)
    print(
        f"solve n={n}: {time.perf_counter() - t:.3f} s, length {sol.value}, sweep {sol.stats.seconds:.3f} s,"
        f" kernels {sol.stats.kernel_seconds:.3f} s"
    )
