"""One tiled sweep of the gallery's Smith-Waterman or Gotoh (random DNA), for profiling its kernel with
Nsight Compute: the first sweep compiles, the second is the one to profile::

    ncu --clock-control none --kernel-name regex:run_tiles --launch-skip 1 --launch-count 1 \\
        --section WarpStateStats --section SourceCounters ... \\
        python3 tools/ncu_tiled.py [sw|gotoh] [n] [tile_rows] [tile_cols] [--decisions]

Values only (``traceback=False``, the kernel a checkpoint forward sweep runs) unless ``--decisions``
(the full store's kernel). Defaults: sw, n = 32768, tiles 256 x 1024."""

import sys

import numpy as np
from examples_of import example

from gpudp.engine import sweep

args = [a for a in sys.argv[1:] if not a.startswith("--")]
which = args[0] if args else "sw"
n = int(args[1]) if len(args) > 1 else 32768
tile = (int(args[2]) if len(args) > 2 else 256, int(args[3]) if len(args) > 3 else 1024)
cls = {"sw": example("local_alignment").SmithWaterman, "gotoh": example("affine_alignment").Gotoh}[which]
rng = np.random.default_rng(0)
a, b = ("".join(rng.choice(list("ACGT"), n)) for _ in range(2))
rec = cls(a, b)
decisions = "--decisions" in sys.argv
for _ in range(2):
    r = sweep(rec, backend="cuda", tile=tile, traceback=decisions, store="full", progress=False)
    r.close()
print(which, n, tile, r.best_value, r.stats.kernel_seconds, flush=True)
