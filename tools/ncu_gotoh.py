"""One tiled Gotoh sweep (record cells, examples/affine_alignment.py), for profiling its kernel with
Nsight Compute: ``ncu ... --kernel-name regex:run_tiles --launch-skip 1 --launch-count 1 python3
tools/ncu_gotoh.py [n] [tile_rows]``."""

import importlib.util
import pathlib
import sys

import numpy as np

from gpudp.engine import sweep

path = pathlib.Path(__file__).resolve().parents[1] / "examples" / "affine_alignment.py"
spec = importlib.util.spec_from_file_location("affine_alignment", path)
gotoh = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gotoh)

n = int(sys.argv[1]) if len(sys.argv) > 1 else 32768
bh = int(sys.argv[2]) if len(sys.argv) > 2 else 128
rng = np.random.default_rng(0)
a = "".join(rng.choice(list("ACGT"), n))
b = "".join(rng.choice(list("ACGT"), n))
rec = gotoh.Gotoh(a, b)
for _ in range(2):  # the first launch compiles; the second is profiled
    sweep(rec, backend="cuda", tile=(bh, 256), progress=False).close()
