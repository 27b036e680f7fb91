"""Blocks of a tiled grid swept again from their edges for a traceback (:mod:`gpudp.checkpoints`), their
decisions packed into bit planes (:func:`blocks_kernel`, :func:`pack_kernel`)."""

from __future__ import annotations

import numpy as np
from numba import cuda

from ... import values
from ...codegen import fill, spec_of
from ...kernel import KernelFactory
from .kernels import CudaKernel, cell_namespace, device_jit, generated_kernel

#: the kernels of these families built in this process (gpudp.kernel)
_PACK_KERNELS = KernelFactory("cuda.pack", "bits", kernel=CudaKernel)
_BLOCK_KERNELS = KernelFactory(
    "cuda.blocks", "rec", "n_data", "every", "shared", "sym_dtypes", kernel=CudaKernel
)

# Blocks of a tiled grid swept again for a traceback (gpudp.checkpoints): a thread block a block, its
# anti-diagonals in turn (a barrier between them), thread t the rows imin + t, imin + t + nt, ...;
# the three live diagonals (indexed by the row) in shared memory where they fit, else in the thread
# block's row of ``scratch``; the values around the block from codegen.BLOCK_EDGES. Decisions one
# integer a cell into ``cells``, each anti-diagonal at its groups of 32 cells in a full K x K block
# (codegen.diagonal_groups: position i - f0 of group-aligned rows), which _PACK then turns into the
# bit planes that are copied (codegen.block_decision). Packing in this kernel, a warp ballot a plane
# a step, made Gotoh's rounds 40% slower (H100, 2026-11-26: 26 ms of kernels for 19).
_BLOCKS = """
def run_blocks(nb, bis, bjs, K, R, C, ckrow, ckcol, brow, bcol, cells, CS, groups, scratch{da}):
    th = cuda.threadIdx.x
    nt = cuda.blockDim.x
    s = cuda.blockIdx.x
    {buf}
    q = s
    while q < nb:
        {origin}
        {sym_load}
        for d in range(nr + nc - 1):
            imin = max(0, d - nc + 1)
            imax = min(d, nr - 1)
            cur = (d % 3) * K
            p1 = ((d + 2) % 3) * K
            p2 = ((d + 1) % 3) * K
            dbase = q * CS + groups[d] * 32 - max(0, d - K + 1)
            i = imin + th
            while i <= imax:
                j = d - i
                gi = r0 + i
                gj = c0 + j
                if i > 0:
                    up = LD(buf, p1 + i - 1)
                else:
                    up = top_at(gj, bi, r0, ckrow, brow, bcol)
                if j > 0:
                    lf = LD(buf, p1 + i)
                else:
                    lf = left_at(gi, bj, c0, ckcol, bcol)
                if i > 0 and j > 0:
                    dg = LD(buf, p2 + i - 1)
                elif i > 0:
                    dg = left_at(gi - 1, bj, c0, ckcol, bcol)
                else:
                    dg = top_at(gj - 1, bi, r0, ckrow, brow, bcol)
                v, dd = tcell(gi, gj, up, lf, dg, {ri}, {cj}{du})
                ST(buf, cur + i, v)
                cells[dbase + i] = dd
                i += nt
            cuda.syncthreads()
        q += cuda.gridDim.x
"""

# The blocks' decisions into bit planes (codegen.block_decision): a thread a group of 32 cells (group
# G of all the round's blocks: block G // GT, its group G % GT on anti-diagonal gdiag[G % GT]), its
# 32 integers read and each bit plane's word stored. Cells a block does not have (past its edges,
# or the last group's tail) give bits no walk reads.
_PACK = """
def pack_planes(n, GT, cells, gdiag, groups, words, WS):
    G = cuda.grid(1)
    while G < n:
        q = G // GT
        gl = G - q * GT
        d = gdiag[gl]
        g0 = groups[d]
        ng = groups[d + 1] - g0
        base = q * WS + g0 * BITS + gl - g0
        {init}
        for x in range(32):
            v = np.int64(cells[G * 32 + x])
            {acc}
        {store}
        G += cuda.gridsize(1)
"""


def pack_kernel(bits: int):
    """The kernel that packs a round's decisions into bit planes (``_PACK``), once per bit count."""
    k = _PACK_KERNELS.lookup(bits=bits)
    if not k.ready:
        ns = {"cuda": cuda, "np": np, "BITS": bits}
        src = fill(
            _PACK,
            init=[f"m{b} = np.int64(0)" for b in range(bits)] or "pass",
            acc=[f"m{b} |= ((v >> {b}) & 1) << x" for b in range(bits)] or "pass",
            store=[f"words[base + {b} * ng] = m{b}" for b in range(bits)] or "pass",
        )
        k = k.keep(generated_kernel(src, "pack_planes", ns))
    return k.fn


#: threads of a thread block of the blocks' sweep at most (a diagonal's cells past them loop): a
#: traceback of 4 rounds, 1,035 blocks of 512 (Smith-Waterman 2^17, H100, 2026-11-26) took 12.9 /
#: 9.2 / 7.9 ms of kernels with 512 / 256 / 128 threads a block (more cells a thread a barrier)
RETRACE_THREADS = 128
#: thread blocks of one launch of it at most (each steps through the blocks of its launch)
RETRACE_GRID = 1024
#: threads of a thread block of the packing into bit planes (a thread a group of 32 cells)
PACK_THREADS = 128
#: bytes of a block's three diagonals that go in shared memory (more: a row of a device array)
RETRACE_SHARED = 48 << 10


def block_shared(rec_cls, every: int) -> bool:
    return 3 * every * values.itemsize(rec_cls) <= RETRACE_SHARED


def _block_buffer(rec_cls, every: int) -> str:
    """The line that makes the blocks' kernel's buffer of three diagonals: shared arrays when they
    fit :data:`RETRACE_SHARED` (one per field of a record), else this thread block's row of
    ``scratch``."""
    fs = values.fields(rec_cls)
    if block_shared(rec_cls, every):
        n = 3 * every
        if fs is None:
            return f"buf = cuda.shared.array({n}, VT)"
        # a line each: the simulator tells shared arrays apart by their source line
        lines = [f"buf{k} = cuda.shared.array({n}, F{k})" for k in range(len(fs))]
        return "\n".join([*lines, "buf = (" + ", ".join(f"buf{k}" for k in range(len(fs))) + ",)"])
    if fs is None:
        return "buf = scratch[s]"
    return "buf = (" + ", ".join(f"scratch[{k}][s]" for k in range(len(fs))) + ",)"


#: a block's symbols, copied into shared memory before its diagonals (``{sym_load}``)
_BLOCK_SYMBOLS = """
x = th
while x < nr:
    rs[x] = dat0[r0 + x]
    x += nt
x = th
while x < nc:
    cs[x] = dat1[c0 + x]
    x += nt
cuda.syncthreads()
"""


def blocks_kernel(rec_cls, n_data: int, every: int, sym_dtypes=None):
    """The GPU sweep of blocks of a tiled grid from their edges (see ``_BLOCKS`` and
    :meth:`_CUDA.run_blocks`); compiled once per class, data count, block side and symbol types
    (``sym_dtypes``: a recurrence with symbols has a block's in shared memory with its diagonals)."""
    shared = block_shared(rec_cls, every)
    k = _BLOCK_KERNELS.lookup(rec=rec_cls, n_data=n_data, every=every, shared=shared, sym_dtypes=sym_dtypes)
    if k.ready:
        return k.fn
    import numba

    from ...codegen import block_source

    ns = cell_namespace(rec_cls)
    buf, ri, cj, load = _block_buffer(rec_cls, every), "0", "0", ""
    sym = spec_of(rec_cls).symbols
    if sym and shared:
        ns["SYM0"], ns["SYM1"] = (numba.from_dtype(np.dtype(t)) for t in sym_dtypes)
        buf += f"\nrs = cuda.shared.array({every}, SYM0)\ncs = cuda.shared.array({every}, SYM1)"
        ri, cj, load = "rs[i]", "cs[j]", _BLOCK_SYMBOLS
    elif sym:
        ri, cj = "dat0[gi]", "dat1[gj]"
    src = block_source(_BLOCKS, rec_cls, n_data, ns, device_jit, ri, cj, buf=buf, sym_load=load.rstrip("\n"))
    return k.keep(generated_kernel(src, "run_blocks", ns)).fn
