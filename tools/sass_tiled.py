"""The tiled CUDA kernel compiled for sm_90 on a machine with no GPU: PTX by numba's CUDA target
(NVVM), then ``ptxas`` (registers, spills) and ``nvdisasm`` (SASS): the steady state's loop, its
instructions and DPX instructions, for the gallery's Smith-Waterman and Gotoh. A static look, not a
speed: what a kernel change does to the code before a GPU measures it (and numba's real CUDA typing,
which the simulator skips).

    python tools/sass_tiled.py [--tile 256x256] [--keep DIR]

Needs NVVM and NVRTC as tools/ptx_check.py says (``pip install nvidia-nvvm nvidia-cuda-nvrtc``,
``LD_LIBRARY_PATH`` at their ``cu13/lib``), ``ptxas`` on the PATH (a CUDA toolkit) and ``nvdisasm``
(the toolkit's, or ``pip install nvidia-cuda-nvdisasm``). Each line:
class, registers a thread, spill stores/loads, SASS instructions in all, the steady loop's
instructions (the innermost backward branch's body, the loop the steady state runs a step a trip),
how many of them are DPX (``VIADDMNMX``, ``VIMNMX3``, ``VIMNMX``) and shuffles, and the loop body's
longest chain of dependent instructions (:func:`chain`, with a latency model: what a trip costs a
warp alone on its scheduler, if the model's latencies hold).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numba
import numba.cuda.dispatcher as dispatcher
import numpy as np
from numba import cuda
from ptx_check import NoDevice, generated

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))


def _sweep_inputs(rec, tile):
    """The recurrence class and data tuple the engine gives a tiled sweep of ``rec`` (values only),
    caught at the cpu backend's door (the same class, narrowed or not, and data as on the GPU)."""
    from gpudp import sweep
    from gpudp.backends import cpu

    got = {}

    class Caught(Exception):
        pass

    def catch(plan, r, data, store, stats, bar):
        got.update(cls=type(r), data=data)
        raise Caught

    real = cpu.run_plan
    cpu.run_plan = catch
    try:
        sweep(rec, backend="cpu", traceback=False, tile=tile, progress=False)
    except Caught:
        pass
    finally:
        cpu.run_plan = real
    return got["cls"], got["data"]


def _signature(cls, data, bh, tw):
    from gpudp import values
    from gpudp.backends.base import checkpoint_arrays

    class _Plan:  # what checkpoint_arrays reads: no checkpoints
        checkpoint, rows, cols = 0, 1, 1

    edge = values.full(cls, 4)
    ckrow, ckcol, ck = checkpoint_arrays(_Plan, cls, np.empty)
    i64 = np.int64(0)
    ints = np.zeros(2, np.int64)
    args = (i64, i64, i64, i64, i64, i64, edge, edge, np.zeros(4, np.uint32), i64, ints, ckrow, ckcol)
    args += (i64, ints, ints, i64, *data)
    return tuple(numba.typeof(a) for a in args)


def _tool(name):
    path = shutil.which(name)
    if path is None and name == "nvdisasm":
        try:
            import nvidia

            for p in Path(nvidia.__path__[0]).glob("*/bin/nvdisasm"):
                path = str(p)
        except ImportError:
            pass
    if path is None:
        raise SystemExit(f"{name} not found (see this tool's docstring)")
    return path


def _steady_loop(sass: list[str]) -> list[str]:
    """The instructions of the innermost loop (a backward branch whose body holds no other
    backward branch's target) with the most shuffles: the steady state's step loop."""
    addr = {}
    for n, ln in enumerate(sass):
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/", ln)
        if m:
            addr[int(m.group(1), 16)] = n
    labels = {}
    for n, ln in enumerate(sass):
        m = re.match(r"(\.L_x_\d+):", ln.strip())
        if m:
            labels[m.group(1)] = n
    loops = []
    for n, ln in enumerate(sass):
        m = re.search(r"BRA\s+(?:`\(|)?(\.L_x_\d+)", ln)
        if m and labels.get(m.group(1), n + 1) < n:
            loops.append((labels[m.group(1)], n))
    inner = [(a, b) for a, b in loops if not any(a < c < d <= b and (c, d) != (a, b) for c, d in loops)]
    best = max(inner, key=lambda ab: sum("SHFL" in x for x in sass[ab[0] : ab[1] + 1]), default=None)
    if best is None:
        return []
    return [x for x in sass[best[0] : best[1] + 1] if re.match(r"\s*/\*[0-9a-f]{4,}\*/", x)]


#: a latency model for :func:`chain` (cycles): a shuffle's and a memory load's, and every other
#: instruction's (Hopper's fixed-latency integer and DPX instructions: about 4-6; a model, not a
#: measurement)
LATENCY = {"SHFL": 24, "LD": 30, "LDS": 24, "LDG": 200}
OTHER = 5


def chain(loop: list[str]) -> tuple[int, int]:
    """The loop body's longest chain of dependent instructions within one trip (registers and
    predicates written, then read), as ``(instructions, cycles by LATENCY)``: what bounds a trip's
    time when the warp has nothing else to issue (its instruction count bounds it otherwise)."""
    ready: dict[str, tuple[int, int]] = {}  # register -> (chain length, cycles) when written
    best = (0, 0)
    for ln in loop:
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s*(@!?U?P\d+\s+)?([A-Z0-9_.]+)\s*(.*?);", ln)
        if not m:
            continue
        guard, op, rest = m.groups()
        regs = re.findall(r"\b(U?R\d+|U?P\d+)\b", rest)
        if guard:
            regs.append(guard.strip().lstrip("@!"))
        dests = regs[:1]
        if op.startswith(("ISETP", "IADD3", "VIADD")) and len(regs) > 1 and regs[1].startswith("P"):
            dests = regs[:2]  # a compare's (or a carry's) predicate beside its register
        if op.startswith(("ST", "BRA", "BAR", "EXIT", "RED", "ATOM")):
            dests = []
        srcs = [r for r in regs if r not in dests or regs.count(r) > 1]
        n0, c0 = max((ready.get(r, (0, 0)) for r in srcs), default=(0, 0))
        lat = next((v for k, v in LATENCY.items() if op.startswith(k)), OTHER)
        out = (n0 + 1, c0 + lat)
        for d in dests:
            ready[d] = out
        best = max(best, out)
    return best


def report(cls_name, rec, tile, keep):
    from gpudp.backends.cuda import tiled

    cls, data = _sweep_inputs(rec, tile)
    sym_dtype = data[1].dtype if getattr(cls, "symbols", False) else None
    bh, tw = tile
    fn = generated(tiled, lambda: tiled.tiled_kernel(cls, len(data), bh, tw, sym_dtype))
    ptx, _ = cuda.compile_ptx(fn, _signature(cls, data, bh, tw), cc=(9, 0), lineinfo=False)
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(keep or tmp) / f"{cls_name}"
        # NVVM's PTX version may be newer than the toolkit's ptxas reads; the kernel uses nothing
        # of the newer versions (sm_90's PTX is the same)
        p.with_suffix(".ptx").write_text(re.sub(r"^\.version \d+\.\d+", ".version 9.0", ptx, flags=re.M))
        out = subprocess.run(
            [_tool("ptxas"), "-arch=sm_90", "-O3", "-v", str(p.with_suffix(".ptx")),
             "-o", str(p.with_suffix(".cubin"))],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        regs = re.search(r"Used (\d+) registers", out.stderr)
        spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", out.stderr)
        sass = subprocess.run(
            [_tool("nvdisasm"), "-c", str(p.with_suffix(".cubin"))],
            capture_output=True, text=True, check=True,
        ).stdout.splitlines()  # fmt: skip
        if keep:
            p.with_suffix(".sass").write_text("\n".join(sass))
    ins = [x for x in sass if re.match(r"\s*/\*[0-9a-f]{4,}\*/", x)]
    loop = _steady_loop(sass)
    dpx = sum(bool(re.search(r"VIADDMNMX|VIMNMX", x)) for x in loop)
    shfl = sum("SHFL" in x for x in loop)
    depth, cycles = chain(loop)
    print(
        f"{cls_name:14s} registers {regs.group(1) if regs else '?':>4s}  spills "
        f"{spill.group(1) if spill else '?'}/{spill.group(2) if spill else '?'} B  SASS {len(ins):5d}  "
        f"steady loop {len(loop):4d} (DPX {dpx}, SHFL {shfl})  "
        f"longest chain {depth} ({cycles} cycles, model)",
        flush=True,
    )


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--tile", default="256x256")
    ap.add_argument("--keep", default=None, help="a folder to keep the PTX, cubin and SASS in")
    args = ap.parse_args(argv)
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        raise SystemExit("run without NUMBA_ENABLE_CUDASIM: this compiles for a real GPU")
    import affine_alignment as af
    import local_alignment as la

    dispatcher.get_current_device = lambda: NoDevice()  # compile for sm_90 with no device
    tile = tuple(int(x) for x in args.tile.split("x"))
    a, b = "ACGT" * 80, "AGCT" * 80
    report("SmithWaterman", la.SmithWaterman(a, b), tile, args.keep)
    report("Gotoh", af.Gotoh(a, b), tile, args.keep)


if __name__ == "__main__":
    main()
