"""Where the LCS tiled kernel's compile time goes (run on the GPU machine): cProfile of one cold
compile, grouped into numba's front end (typing, lowering), LLVM/NVVM, and the PTX assembler.

    GPUDP_CACHE_DIR=off python3 tools/compile_profile.py [BH TW]
"""

import cProfile
import io
import pstats
import sys
import time

import numpy as np

from gpudp.engine import sweep
from gpudp.problems.lcs import LCSRecurrence

bh, tw = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (256, 256)
rng = np.random.default_rng(0)
a = rng.integers(0, 4, 2 * bh).astype(np.int32)
b = rng.integers(0, 4, 2 * tw).astype(np.int32)
prof = cProfile.Profile()
t = time.perf_counter()
prof.enable()
r = sweep(LCSRecurrence(a, b), backend="cuda", tile=(bh, tw), progress=False)
prof.disable()
first, comp = time.perf_counter() - t, r.stats.extra.get("compile_seconds")
print(f"tile {bh}x{tw}: first sweep {first:.2f} s, compile {comp:.2f} s")
s = io.StringIO()
pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(45)
print(s.getvalue())
s = io.StringIO()
pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(25)
print(s.getvalue())
