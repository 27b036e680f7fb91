"""Tune the temporally blocked layered CUDA kernel on Boyer's knapsack class: threads per block,
cells per thread per strip, shared memory per block and the span's share of it.

Run on the GPU machine: python3 tools/knapsack_tune.py [n]. Prints one JSON line per setting (the
optimum must not change between settings)."""

import json
import sys

from gpudp.backends.cuda import layered as cb
from gpudp.bench.instances import boyer_instance
from gpudp.problems.knapsack import dp as kd

n = int(sys.argv[1]) if len(sys.argv) > 1 else 50_000
p, w, c = boyer_instance(n, 0)
values = set()
SETTINGS = (  # threads, cells per thread per strip, shared KiB per block, span share, register cap
    (512, 4, 112, 0.75, 0),
    (512, 4, 224, 0.75, 0),
    (512, 2, 224, 0.75, 0),
    (512, 4, 160, 0.75, 0),
)

for setting in SETTINGS:
    threads, unroll, smem_kib, span, regs = setting
    cb.BLOCK_THREADS, cb.BLOCK_UNROLL, cb.BLOCK_SMEM = threads, unroll, smem_kib * 1024
    cb.BLOCK_SPAN, cb.BLOCK_MAX_REGISTERS = span, regs
    cb._BLOCKED_KERNELS.forget()
    row = {"n": n, "setting": setting, "threads": threads, "unroll": unroll, "smem_kib": smem_kib}
    row.update(span_share=span, max_registers=regs)
    try:
        kd.solve(*boyer_instance(200, 99), backend="cuda", progress=False)  # compile
        sol = kd.solve(p, w, c, backend="cuda", progress=False)
    except Exception as e:  # a setting the card refuses (shared memory, registers): say so, go on
        row["error"] = f"{type(e).__name__}: {e}"[:300]
        print(json.dumps(row), flush=True)
        continue
    st = sol.stats
    values.add(sol.value)
    row.update(value=sol.value, seconds=st.seconds, kernel_seconds=st.kernel_seconds)
    row["gcups_kernels"] = st.cells / st.kernel_seconds / 1e9
    for k in (
        "kernel",
        "grid",
        "registers_per_thread",
        "local_bytes_per_thread",
        "blocked_span",
        "blocked_passes",
    ):
        row[k] = st.extra.get(k)
    print(json.dumps(row), flush=True)
print(json.dumps({"same_optimum_everywhere": len(values) == 1}))
