"""Compile a gallery recurrence's tiled CUDA kernel to PTX on a machine without a GPU, and count the
instructions of its loops: what a kernel change does to the steady state (the loops with the warp
shuffles) before any device time is spent on it (issue 14).

    python tools/ptx_steady.py EXAMPLE [--class NAME] [--n 4096] [--tile 64x128] [--ptx OUT.ptx]

EXAMPLE is a file of examples/ (local_alignment, affine_alignment, edit_distance ...); the class is
the first grid recurrence it defines unless ``--class`` names one. Prints, for every innermost loop
whose body holds a warp shuffle, its PTX instructions, how many work on 64 bits, and its loads and
stores: the steady state (the compiler may unroll it: two steps, twice the shuffles) and the
checked loops of a tile's first and last blocks.

Needs NVVM (numba-cuda finds it as on the GPU machine) and NVRTC, which numba-cuda uses for the grid
sync: ``pip install --target DIR nvidia-cuda-nvrtc-cu12`` and ``LD_LIBRARY_PATH=DIR/nvidia/cuda_nvrtc/lib``.
PTX is not SASS: figures compare kernels, they do not time them. On 2026-11-26 the Smith-Waterman
steady loop (int32 cell, 64 x 128 tiles) held about 100 PTX instructions a step for two cells.
"""

from __future__ import annotations

import argparse
import collections
import re
import types

import numba
import numba.cuda.dispatcher as dispatcher
import numpy as np
from numba import cuda

# compile for sm_90 without a device: device functions ask the current device for its capability
dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))

from tile_sweep import _example  # noqa: E402  (tools/ is the script's folder)

from gpudp import GridRecurrence, values  # noqa: E402
from gpudp.backends import cuda as gcuda  # noqa: E402
from gpudp.backends.base import checkpoint_arrays  # noqa: E402
from gpudp.engine import _reduction_slots, _symbols, plan_sweep  # noqa: E402


def kernel_ptx(rec, bh: int, tw: int) -> str:
    """The PTX of ``rec``'s tiled kernel, built with the arguments a sweep passes it."""
    plan = plan_sweep(rec, "cpu", (bh, tw))  # the layout only: no backend runs
    rec = rec._specialized()
    cls = type(rec)
    data = tuple(rec.data())
    if cls.symbols:
        data = (*_symbols(rec, plan), *data)
    if cls.reduce:
        data = (*data, *_reduction_slots(cls, 1024))
    if cls.decision_bits:
        data = (*data, np.zeros(4, np.int64))  # the decision-overflow flag
    lay = plan.layout
    kernel = gcuda.tiled_kernel(cls, len(data), lay.bh, lay.tw, data[1].dtype if cls.symbols else None)
    bottom, right = values.full(cls, lay.nj * (lay.tw + 1)), values.full(cls, max(plan.rows, 1))
    ck = checkpoint_arrays(plan, cls, np.empty)
    words = np.zeros(1, np.uint32)
    args = (0, 1, lay.ni, lay.nj, plan.rows, plan.cols, bottom, right, words, 0, lay.diag_off, *ck, *data)
    ptx, _ = cuda.compile_ptx(kernel.py_func, tuple(numba.typeof(x) for x in args), cc=(9, 0))
    return ptx


def shuffle_loops(ptx: str) -> list[dict]:
    """Each innermost loop (a label and the backward branch to it) whose body holds a warp shuffle."""
    lines = ptx.splitlines()
    labels = {
        ln.strip()[:-1]: k for k, ln in enumerate(lines) if re.fullmatch(r"\$L__BB\d+_\d+:", ln.strip())
    }
    out = []
    for k, ln in enumerate(lines):
        m = re.search(r"bra(?:\.uni)?\s+(\$L__BB\d+_\d+);", ln)
        if not m or labels.get(m.group(1), k + 1) >= k:
            continue
        body = [x.strip() for x in lines[labels[m.group(1)] : k + 1]]
        ins = [x for x in body if x.endswith(";") and not x.startswith(("//", "{", "}"))]
        for x in body:  # an inline asm block on one line: {.reg ..; a; b;}
            if x.startswith("{") and x.endswith("}"):
                ins += [
                    y.strip() + ";"
                    for y in x[1:-1].split(";")
                    if y.strip() and not y.strip().startswith(".reg")
                ]
        ops = collections.Counter(re.sub(r"^@!?%p\d+\s+", "", x).split()[0].split(".")[0] for x in ins)
        if not ops["shfl"]:
            continue
        out.append(
            {
                "lines": (labels[m.group(1)], k),
                "loop": m.group(1),
                "instructions": len(ins),
                "on_64_bits": sum(bool(re.search(r"\.[sub]64\b", x)) for x in ins),
                "shuffles": ops["shfl"],
                "loads": ops["ld"],
                "stores": ops["st"],
            }
        )

    def inside(x, y):  # loop y's body lies within loop x's
        return y is not x and x["lines"][0] <= y["lines"][0] and y["lines"][1] <= x["lines"][1]

    inner = [x for x in out if not any(inside(x, y) for y in out)]
    return [{k: v for k, v in x.items() if k != "lines"} for x in inner]


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("example")
    ap.add_argument("--class", dest="cls", default=None)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--tile", default="64x128")
    ap.add_argument("--ptx", default=None, help="write the PTX here")
    args = ap.parse_args(argv)
    mod = _example(args.example)
    grids = [
        v
        for v in vars(mod).values()
        if isinstance(v, type) and issubclass(v, GridRecurrence) and v.__module__ == mod.__name__
    ]
    cls = getattr(mod, args.cls) if args.cls else grids[0]
    rng = np.random.default_rng(0)
    a, b = ("".join(rng.choice(list("ACGT"), args.n)) for _ in range(2))
    bh, tw = (int(x) for x in args.tile.split("x"))
    ptx = kernel_ptx(cls(a, b), bh, tw)
    if args.ptx:
        with open(args.ptx, "w") as f:
            f.write(ptx)
    total = sum(ln.strip().endswith(";") for ln in ptx.splitlines())
    print(f"{cls.__name__}, tile {bh} x {tw}: {total} PTX lines; innermost loops with shuffles:")
    for loop in shuffle_loops(ptx):
        print("  " + ", ".join(f"{k} {v}" for k, v in loop.items()))


if __name__ == "__main__":
    main()
