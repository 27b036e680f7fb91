"""One knapsack DP solve on Boyer's class, for profiling the blocked layered kernel with Nsight
Compute (tools/device-run.sh ncu-knapsack); also writes the kernel's PTX and SASS where asked."""

import sys

from gpudp.backends.cuda import driver as cb
from gpudp.bench.instances import boyer_instance
from gpudp.problems.knapsack import dp as kd

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
kd.solve(*boyer_instance(200, 99), backend="cuda", progress=False)  # compiles
sol = kd.solve(*boyer_instance(n, 0), backend="cuda", progress=False)
print(sol.value, sol.stats.extra.get("kernel"), sol.stats.cells / sol.stats.kernel_seconds / 1e9, "GCUPS")
if len(sys.argv) > 2:
    (launcher,) = cb.LAST_LAUNCHER
    with open(sys.argv[2] + ".ptx", "w") as f:
        f.write(next(iter(launcher.inspect_asm().values())))
    try:
        with open(sys.argv[2] + ".sass", "w") as f:
            f.write(next(iter(launcher.inspect_sass().values())))
    except Exception as e:
        print("no SASS:", e)
