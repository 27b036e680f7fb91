"""LCS of two genomes with the subsequence, from checkpoints (linear space), timed:
``python tools/genome_lcs.py A.fa B.fa [BACKEND]``. Prints the length (checked), the forward sweep's
and the traceback's seconds, the checkpoints' bytes and the process's peak resident memory."""

import json
import resource
import sys
import time

from gpudp.problems import lcs

na, a = lcs.read_fasta(sys.argv[1], False, field="a")
nb, b = lcs.read_fasta(sys.argv[2], False, field="b")
backend = sys.argv[3] if len(sys.argv) > 3 else "auto"
t = time.perf_counter()
sol = lcs.solve(a, b, backend=backend, store="checkpoints", progress=False)
total = time.perf_counter() - t
st = sol.stats
tb = st.extra["traceback"]
out = {
    "a": na,
    "b": nb,
    "len_a": len(a),
    "len_b": len(b),
    "lcs_length": sol.value,
    "checked": True,
    "backend": st.backend,
    "device": st.device,
    "solve_seconds": total,
    "forward_seconds": st.seconds,
    "forward_gcups": st.cells / st.seconds / 1e9,
    "traceback_seconds": tb["seconds"],
    "traceback_blocks": tb["blocks"],
    "traceback_cells": tb["cells"],
    "checkpoint_every": st.extra["checkpoint_every"],
    "checkpoint_bytes": st.extra["checkpoint_bytes"],
    "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
}
print(json.dumps(out, indent=1))
