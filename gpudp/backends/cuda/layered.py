"""The layered kernels: the persistent kernel over layers (:func:`layered_kernel`) and the temporally
blocked one for recurrences that declare their reach (:func:`blocked_kernel`, planned by
:class:`Blocking`)."""

from __future__ import annotations

import numpy as np

from ...kernel import KernelFactory
from .driver import is_simulator
from .kernels import CudaKernel, cell_namespace, device_jit, generated_kernel

#: the kernels of these families built in this process (gpudp.kernel)
_LAYERED_KERNELS = KernelFactory("cuda.layered", "rec", "n_data", "schedule", kernel=CudaKernel)
_BLOCKED_KERNELS = KernelFactory(
    "cuda.blocked", "rec", "n_data", "unroll", "max_registers", kernel=CudaKernel
)
#: threads per block of the layered kernel
LAYER_THREADS = 256
#: cells per thread per step of the layered kernel (computed before any is stored). 1 measured best
#: on the H100 for the knapsack DP (2026-11-23: 84 GCUPS; 78 with 4, 63 with 8: more registers,
#: fewer blocks, and a cell's branches keep the next cell's loads behind it); tools/knapsack_tune.py
LAYER_UNROLL = 1

_LAYERED = """
def run_layers(t0, t1, ring, lo, hi, g0, gn, woff, words, wbase, last_row, last_col, R, C{lc}{da}):
    grid = cuda.cg.this_grid()
    th = cuda.threadIdx.x
    nb = cuda.gridDim.x
    lane = cuda.laneid
    W1 = ring.shape[0]
    {prologue}
    for t in range(t0, t1):
        a = lo[t]
        b = hi[t]
        first = g0[t] * 32
        stop = first + gn[t] * 32
        span = ((gn[t] + nb - 1) // nb) * 32
        base = first + cuda.blockIdx.x * span
        end = min(base + span, stop)
        while base < end:
            {cells}
            {stores}
            base += UNROLL * cuda.blockDim.x
        if t + 1 < t1:
            grid.sync()
"""

_BLOCKED = """
def run_blocked(q0, q1, pstart, pu0, pu1, rcum, pspan, ring, lo, hi, g0, gn, woff, words, wbase{da}):
    grid = cuda.cg.this_grid()
    sm = cuda.shared.array(0, VT)
    th = cuda.threadIdx.x
    nt = cuda.blockDim.x
    lane = cuda.laneid
    CH = UNROLL * nt
    {prologue}
    for q in range(q0, q1):
        t0 = pstart[q]
        t1 = pstart[q + 1]
        H = rcum[t1] - rcum[t0]
        S = pspan[q]
        src = ring[q % 2]
        dst = ring[(q + 1) % 2]
        a = pu0[q] + cuda.blockIdx.x * S
        while a < pu1[q]:
            base = a - H
            e = min(a + S, pu1[q])
            prev = shifted(sm, base)
            k = max(base, 0) + th
            while k + 3 * nt < e:  # four loads in flight, then their stores
                r0 = src[k]
                r1 = src[k + nt]
                r2 = src[k + 2 * nt]
                r3 = src[k + 3 * nt]
                prev[k] = r0
                prev[k + nt] = r1
                prev[k + 2 * nt] = r2
                prev[k + 3 * nt] = r3
                k += 4 * nt
            while k < e:
                prev[k] = src[k]
                k += nt
            cuda.syncthreads()
            for t in range(t0, t1):
                clo = max(lo[t], base + rcum[t + 1] - rcum[t0])
                chi = min(hi[t], e)
                wlo = max(g0[t] * 32, a)
                whi = min((g0[t] + gn[t]) * 32, e)
                has = chi > clo
                top = a
                bot = a
                if has:
                    top = chi
                    bot = clo
                if whi > wlo:
                    if has:
                        top = max(top, whi)
                        bot = min(bot, wlo)
                    else:
                        top = whi
                        bot = wlo
                top = ((top + 31) >> 5) << 5
                dw = woff[t] - wbase - g0[t] * BITS
                while top > bot:
                    c0 = top - CH
                    wl = top > wlo and c0 < whi
                    if c0 >= clo and top <= chi:
                        {full_cells}
                        cuda.syncthreads()
                        {full_stores}
                    else:
                        {edge_cells}
                        cuda.syncthreads()
                        {edge_stores}
                    top = c0
                cuda.syncthreads()
            k = a + th
            while k < e:
                dst[k] = prev[k]
                k += nt
            cuda.syncthreads()
            a += cuda.gridDim.x * S
        if q + 1 < q1:
            grid.sync()
"""

#: threads per block of the temporally blocked layered kernel (:func:`blocked_kernel`)
BLOCK_THREADS = 512
#: cells per thread per strip of the blocked kernel
BLOCK_UNROLL = 4
#: dynamic shared memory per block of the blocked kernel, bytes (H100, n = 100,000: 224 KiB 257
#: GCUPS, 160 KiB 249, 112 KiB 233; tools/knapsack_tune.py)
BLOCK_SMEM = 224 * 1024
#: register cap of the blocked kernel (0: none)
BLOCK_MAX_REGISTERS = 0
#: the share of a block's shared cells that is its own span; the rest holds the halo below it
BLOCK_SPAN = 0.75
#: at most this many layers per pass of the blocked kernel
BLOCK_MAX_LAYERS = 256
#: the blocked kernel runs only when a reach leaves a span of at least this many cells
BLOCK_MIN_SPAN = 1024


class _SimShifted:
    """The simulator's stand-in for :func:`shifted`: ``view[k]`` is ``array[k - base]``."""

    def __init__(self, array, base):
        self.array, self.base = array, int(base)

    def _index(self, k):
        i = int(k) - self.base
        if i < 0 or i >= len(self.array):
            raise IndexError(
                f"cell {int(k)} lies outside the block's shared span (a read beyond the declared reach?)"
            )
        return i

    def __getitem__(self, k):
        return self.array[self._index(k)]

    def __setitem__(self, k, v):
        self.array[self._index(k)] = v


_SHIFTED: list = []


def _shifted_intrinsic():
    """``shifted(array, base)``: a 1-D view ``v`` of ``array`` with ``v[k] == array[k - base]``, so
    that a recurrence's cell can index a shared-memory window of a layer by the layer's own cell
    numbers. Only the data pointer moves; nothing is copied and nothing is bounds-checked."""
    if _SHIFTED:
        return _SHIFTED[0]
    from numba.cuda import cgutils, types
    from numba.cuda.extending import intrinsic
    from numba.cuda.np.arrayobj import make_array

    @intrinsic
    def shifted(typingctx, array, base):
        if not (isinstance(array, types.Array) and array.ndim == 1 and isinstance(base, types.Integer)):
            return None
        ret = array.copy(layout="C")

        def codegen(context, builder, sig, args):
            src = make_array(sig.args[0])(context, builder, args[0])
            out = make_array(sig.return_type)(context, builder)
            off = context.cast(builder, args[1], sig.args[1], types.intp)
            context.populate_array(
                out,
                data=builder.gep(src.data, [builder.neg(off)]),
                shape=[context.get_constant(types.intp, 1 << 62)],
                strides=cgutils.unpack_tuple(builder, src.strides),
                itemsize=src.itemsize,
                meminfo=src.meminfo,
                parent=src.parent,
            )
            return out._getvalue()

        return ret(array, base), codegen

    _SHIFTED.append(shifted)
    return shifted


def _word_stores(u: int, bits: int, sim: bool, cond: str, index: str) -> list[str]:
    """Lines that gather the decision bits ``dd{u}`` of a warp's 32 consecutive cells into one word
    per bit plane (a warp ballot; shared memory in the simulator, which has none) and let lane 0
    store plane ``b`` at ``words[index]`` when ``cond`` holds (``index`` may use ``{b}``)."""
    lines = []
    for b in range(bits):
        bit = f"((dd{u} >> {b}) & 1)"
        if sim:
            lines += [
                f"bal[cuda.threadIdx.x] = {bit}",
                "cuda.syncthreads()",
                f"m{b} = 0",
                "if lane == 0:",
                "    for xb in range(32):",
                f"        m{b} |= bal[cuda.threadIdx.x + xb] << xb",
                "cuda.syncthreads()",
            ]
        else:
            lines.append(f"m{b} = cuda.ballot_sync(FULL, {bit} != 0)")
        lines += [f"if lane == 0 and {cond}:", f"    words[{index.format(b=b)}] = m{b}"]
    return lines


def layered_kernel(rec_cls, n_data: int, schedule):
    """A persistent (cooperative) kernel over layers: each block sweeps one contiguous span of a
    layer's groups of 32 cells (so that reads a little behind the current cell, such as knapsack's
    ``c - w``, hit the block's cache), computing the cells of the active range; decision bit planes
    gathered by warp ballots (zero words for groups outside the range); one grid sync between
    layers. Each thread takes ``UNROLL`` cells a step, ``blockDim`` apart, and computes all of them
    before it stores any: their loads are then independent of the stores, so they overlap."""
    deps = schedule and schedule.key
    k = _LAYERED_KERNELS.lookup(rec=rec_cls, n_data=n_data, schedule=deps)
    if k.ready:
        return k
    from ...codegen import compile_source, data_args, fill, layer_cell_source

    bits = rec_cls.decision_bits
    ns = cell_namespace(rec_cls)
    ns["lcell"] = device_jit(compile_source(layer_cell_source(rec_cls, n_data, schedule), "lcell", dict(ns)))
    sim = is_simulator()
    da = data_args(n_data)
    # 2-D layers (layer_shape): the ring's layers are 2-D, flat cell p of layer t at (i, j) =
    # (p // LC[t], p % LC[t]), LC the layers' columns
    lc = ", LC" if schedule is None and rec_cls._two_d() else ""
    cells, stores = [], []
    for u in range(LAYER_UNROLL):
        at = f"i{u}, j{u}" if lc else f"p{u}"
        cells += [f"p{u} = base + th + {u} * cuda.blockDim.x"]
        if lc:
            cells += [f"i{u} = p{u} // max(LC[t], 1)", f"j{u} = p{u} - i{u} * LC[t]"]
        cells += [
            f"v{u} = VT(FILL)",
            f"dd{u} = 0",
            f"ok{u} = p{u} < end and p{u} >= a and p{u} < b",
            f"if ok{u}:",
            f"    v{u}, dd{u} = lcell(t, {at}, ring, W1, last_row, last_col, R, C{da})",
        ]
        stores += [f"if ok{u}:", f"    ring[t % W1, {at}] = v{u}"]
        stores += _word_stores(
            u, bits, sim, f"p{u} < end", f"woff[t] - wbase + (p{u} // 32 - g0[t]) * {bits} + {{b}}"
        )
    prologue = f"bal = cuda.shared.array({LAYER_THREADS}, np.int64)" if sim and bits else "pass"
    src = fill(_LAYERED, da=da, cells=cells, stores=stores, prologue=prologue, lc=lc)
    ns["UNROLL"] = LAYER_UNROLL
    return k.keep(generated_kernel(src, "run_layers", ns))


def blocked_kernel(rec_cls, n_data: int):
    """The temporally blocked kernel of a LayeredRecurrence that declares ``reach`` (window 1).

    Layers run in passes (``pstart``); a pass is one cooperative step of the grid. Each block takes
    spans of ``pspan[q]`` cells of the layer in turn; for a span ``[a, a + S)`` it loads the pass's
    input layer over ``[a - H, a + S)`` into shared memory, ``H`` being the sum of the pass's
    reaches, and updates it there in place, layer after layer: layer ``i`` of the pass is valid from
    ``a - H + reach_0 + .. + reach_i`` up, so the last one is valid on the whole span, which goes
    back to device memory (a ring of two layers, one per pass parity). In place works because a
    cell reads only itself and cells below it: each layer runs from the top down in strips of
    ``UNROLL * blockDim`` cells, every thread computing its strip cells before a barrier and
    storing them after it (the next strip's reads lie below, so they overlap the stores). Cells
    below ``a`` are recomputed by the block that owns them, as in overlapped tiling; only the
    span's own decisions are stored. A layer so costs shared-memory traffic, and device memory is
    touched once per pass instead of once per layer. (A variant with two shared buffers, one
    barrier per layer instead of one per strip, measured 30 % slower on the H100.)"""
    kern = _BLOCKED_KERNELS.lookup(
        rec=rec_cls, n_data=n_data, unroll=BLOCK_UNROLL, max_registers=BLOCK_MAX_REGISTERS
    )
    if kern.ready:
        return kern
    from ...codegen import cell_call, cell_function, compile_source, data_args, fill

    bits = rec_cls.decision_bits
    ns = cell_namespace(rec_cls)
    da = data_args(n_data)
    body = cell_call(rec_cls, "t, p", ["prev"], n_data, "v", "dd")
    bcell = cell_function(f"def bcell(t, p, prev{da}):", body)
    ns["bcell"] = device_jit(compile_source(bcell, "bcell", dict(ns)))
    sim = is_simulator()
    ns["shifted"] = _SimShifted if sim else _shifted_intrinsic()
    full_cells, full_stores, edge_cells, edge_stores = [], [], [], []
    for u in range(BLOCK_UNROLL):
        k = f"k{u}"
        full_cells += [f"{k} = c0 + {u} * nt + th", f"v{u}, dd{u} = bcell(t, {k}, prev{da})"]
        # at an edge every thread still computes a cell (clamped into the range), so that the
        # strip's loads are unconditional and the recurrence's per-layer data loads are shared
        edge_cells += [
            f"{k} = c0 + {u} * nt + th",
            f"ok{u} = {k} >= clo and {k} < chi",
            f"v{u} = VT(FILL)",
            f"dd{u} = 0",
            "if has:",
            f"    v{u}, dd{u} = bcell(t, min(max({k}, clo), chi - 1), prev{da})",
            f"if not ok{u}:",
            f"    dd{u} = 0",
        ]
        full_stores.append(f"prev[{k}] = v{u}")
        edge_stores += [f"if ok{u}:", f"    prev[{k}] = v{u}"]
        words_ = _word_stores(u, bits, sim, f"{k} >= wlo and {k} < whi", f"dw + ({k} >> 5) * {bits} + {{b}}")
        if words_:
            for lst in (full_stores, edge_stores):
                lst += ["if wl:", *("    " + x for x in words_)]
    prologue = "bal = cuda.shared.array(1024, np.int64)" if sim and bits else "pass"
    src = fill(
        _BLOCKED,
        da=da,
        full_cells=full_cells,
        full_stores=full_stores,
        edge_cells=edge_cells,
        edge_stores=edge_stores,
        prologue=prologue,
    )
    ns.update(UNROLL=BLOCK_UNROLL, BITS=bits)
    kw = {} if sim or not BLOCK_MAX_REGISTERS else {"max_registers": BLOCK_MAX_REGISTERS}
    return kern.keep(generated_kernel(src, "run_blocked", ns, **kw))


class Blocking:
    """How :func:`blocked_kernel` runs a plan: the span ``S`` each block owns, the passes (layers
    ``pstart[q] .. pstart[q + 1] - 1``, never across a chunk, each with a sum of reaches that fits
    the shared memory beside the span), the 32-aligned cells ``pu0[q] .. pu1[q]`` a pass covers
    (every computed cell and every decision word of its layers), and each chunk's passes."""

    def __init__(self, span, threads, smem, pstart, pu0, pu1, rcum, chunk_passes):
        self.span, self.threads, self.smem = span, threads, smem
        self.pstart, self.pu0, self.pu1, self.rcum = pstart, pu0, pu1, rcum
        self.chunk_passes = chunk_passes
        self.spans = max(1, int(((pu1 - pu0 + span - 1) // span).max(initial=1)))

    @classmethod
    def plan(cls, plan, vt) -> Blocking | None:
        """The blocking of a plan with declared reaches, or None when one reach does not leave a
        useful span in shared memory (the plain layered kernel runs then)."""
        sim = is_simulator()
        smem = 256 * vt.itemsize if sim else BLOCK_SMEM  # small in the simulator: many spans and passes
        threads = 32 if sim else BLOCK_THREADS
        min_span = 64 if sim else BLOCK_MIN_SPAN
        cells = smem // vt.itemsize
        reach = plan.reach
        span = int(cells * BLOCK_SPAN) // 32 * 32
        rmax = int(reach.max(initial=0))
        if rmax > cells - span:
            span = (cells - rmax) // 32 * 32
        if span < min_span:
            return None
        budget = cells - span
        rcum = np.zeros(len(reach) + 1, np.int64)
        np.cumsum(reach, out=rcum[1:])
        starts, chunk_passes = [], {}
        for u0, u1 in plan.chunks:
            q0 = len(starts)
            t = u0
            while t < u1:
                t1 = int(np.searchsorted(rcum, rcum[t] + budget, side="right")) - 1
                t1 = min(max(t1, t + 1), u1, t + BLOCK_MAX_LAYERS)
                starts.append(t)
                t = t1
            chunk_passes[u0] = (q0, len(starts))
        pstart = np.array([*starts, plan.n_units], np.int64)
        first = np.minimum(plan.lo, plan.g0 * 32)
        last = np.maximum(plan.hi, (plan.g0 + plan.gn) * 32)
        pu0 = (np.minimum.reduceat(first, pstart[:-1]) // 32 * 32) if len(starts) else np.zeros(0, np.int64)
        pu1 = (
            (-(-np.maximum.reduceat(last, pstart[:-1]) // 32) * 32) if len(starts) else np.zeros(0, np.int64)
        )
        return cls(
            span, threads, smem, pstart, pu0.astype(np.int64), pu1.astype(np.int64), rcum, chunk_passes
        )

    def spans_for(self, blocks: int) -> np.ndarray:
        """Per pass, the span that gives every one of ``blocks`` blocks the same number of spans
        (32-aligned, at most ``span``; not under a quarter of it, where a narrow layer would
        otherwise be cut into spans much shorter than their halo)."""
        width = self.pu1 - self.pu0
        spans = -(-width // self.span)
        rounds = -(-spans // blocks)
        s = -(-width // np.maximum(rounds * blocks, 1))
        s = np.maximum(-(-s // 32) * 32, max(32, self.span // 4 // 32 * 32))
        return np.minimum(s, self.span).astype(np.int64)

    def stats(self) -> dict:
        return {
            "kernel": "blocked",
            "blocked_span": self.span,
            "blocked_passes": len(self.pstart) - 1,
            "blocked_smem_bytes": self.smem,
        }
