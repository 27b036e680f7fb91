"""The tiled grid kernel: one warp a tile row, the rows pipelined, each a few columns behind the row
above it (:func:`tiled_kernel`)."""

from __future__ import annotations

import os

import numba
import numpy as np

from ... import values
from ...codegen import spec_of
from ...kernel import KernelFactory
from .driver import is_simulator
from .kernels import CudaKernel, cell_namespace, device_jit, generated_kernel

#: the kernels of this family built in this process (gpudp.kernel)
_KERNELS = KernelFactory("cuda.tiled", "rec", "n_data", "bh", "tw", "sym_dtype", "unroll", kernel=CudaKernel)

_TILED = """
def run_tiles(
    d0, d1, NI, NJ, R, C, bottom, right, words, wtile0, diag_off, ckrow, ckcol, CK, done, tickets, launch{da}
):
    k = cuda.threadIdx.x
    ticket = cuda.shared.array(1, I64)
    {prologue}
    ilo = max(0, d0 - (NJ - 1))
    ihi = min(d1 - 1, NI - 1)
    while True:  # a tile row a ticket, taken in order: the row above is always taken already
        cuda.syncthreads()
        if k == 0:
            ticket[0] = cuda.atomic.add(tickets, launch, 1)
        cuda.syncthreads()
        I = ilo + ticket[0]
        if I > ihi:
            break
        seen = 0  # lane 0: the columns the row above is known to have finished
        for J in range(max(0, d0 - I), min(NJ, d1 - I)):
            d = I + J
            imin = max(0, d - (NJ - 1))
            twb = (diag_off[d] + I - imin - wtile0) * WPT + k * RPT
            r0 = I * BH
            c0 = J * TW
            eb = J * (TW + 1)
            ncol = min(TW, C - c0)
            lastrow = min(r0 + BH, R) - 1
            i0 = r0 + k * RPT
            full = i0 + RPT <= R
            ckr = CK > 0 and (lastrow + 1) % CK == 0 and lastrow + 1 < R
            # the row above, where it sweeps tile J in this launch (an earlier launch has finished
            # it): the first 32 columns of this tile (and its corner)
            above = I > 0 and I - 1 + J >= d0
            if above and k == 0:
                seen = wait_above(done, I, c0 + min(32, ncol), seen)
            cuda.syncthreads()  # (and the lanes' right edges of the tile before, read below)
            {load_left}
            {rows_red_init}
            if k == 0:
                if I == 0:
                    uprev = VT(boundary(-1, c0 - 1{db}))
                elif J == 0:
                    uprev = VT(boundary(r0 - 1, -1{db}))
                else:
                    uprev = LD(bottom, eb)
            elif i0 - 1 < R:
                if J == 0:
                    uprev = VT(boundary(i0 - 1, c0 - 1{db}))
                else:
                    uprev = LD(right, i0 - 1)
            else:
                uprev = VT(FILL)
            own = (lastrow - r0) // RPT == k
            rl = (lastrow - r0) % RPT
            {corner_pick}
            tcur = top(I, eb, c0, k, ncol, bottom{db})
            {col_prefetch}
            cuda.syncthreads()
            if own:
                ST(bottom, eb, cn)
            {planes_init}
            mine = VT(FILL)
            nsteps = ncol + 31
            steady = r0 + BH <= R
            for blk in range((nsteps + 31) >> 5):
                s0 = blk << 5
                if blk > 0:
                    # the row above, the block's 32 columns (read as the block starts: a prefetch of
                    # the next block's, 32 columns more a row of lag, measured slower on an H100)
                    if above and s0 < ncol:
                        if k == 0:
                            seen = wait_above(done, I, c0 + min(s0 + 32, ncol), seen)
                        cuda.syncthreads()
                    tcur = top(I, eb, c0, s0 + k, ncol, bottom{db})
                {col_advance}
                if steady and s0 >= 31 and s0 + 32 <= ncol:
                    j0 = c0 + s0 - k
                    {steady_steps}
                    cuda.syncthreads()  # lane 31's bottom row of these 32 steps, one column a lane
                    ST(bottom, eb - 30 + s0 + k, LD(bsh, k))
                else:
                    for st in range(32):
                        {exchange}
                        jj = s0 + st - k
                        {planes_skip}
                        if jj >= 0 and jj < ncol:
                            j = c0 + jj
                            {rows}
                            uprev = upin
                            {shift_left}
                            if own:
                                {bottom_pick}
                                ST(bottom, eb + 1 + jj, bv)
                        {planes_acc}
                {planes_flush}
                # columns up to s0 of the tile's bottom row are written (a column a lane of the last
                # 32): a checkpoint row copies them before the row below may overwrite them, then
                # the row below is told
                cuda.syncthreads()
                if ckr:
                    jj = s0 - 31 + k
                    if jj >= 0 and jj < ncol:
                        ST(ckrow, ((lastrow + 1) // CK - 1, c0 + jj), LD(bottom, eb + 1 + jj))
                    cuda.syncthreads()
                if k == 0:
                    publish(done, I, c0 + min(s0 + 1, ncol))
            {rows_red_merge}
            {store_right}
            if CK > 0 and (c0 + ncol) % CK == 0 and c0 + ncol < C:  # checkpoint column (gpudp.checkpoints)
                m = (c0 + ncol) // CK - 1
                {store_ck}
    {red_flush}
"""

_WAIT = """
def wait_above(done, I, need, seen):
    # lane 0 of tile row I: until the row above has published column ``need`` of its bottom edge
    # (``seen``: the most it was last seen to have), then a fence before the warp reads it
    while seen < need:
        seen = cuda.atomic.max(done, I - 1, 0)
    cuda.threadfence()
    return seen


def publish(done, I, col):
    # lane 0 of tile row I: the warp's writes so far before the column it tells the row below
    cuda.threadfence()
    cuda.atomic.max(done, I, col)
"""

_WAIT_PTX = """
def wait_above(done, I, need, seen):
    # the same by an acquire load (no atomic, no separate fence)
    while seen < need:
        seen = LOAD_ACQUIRE(done, I - 1)
    return seen


def publish(done, I, col):
    # the same by a release reduction
    MAX_RELEASE(done, I, col)
"""

_ORDER: list = []


def _order_intrinsics():
    """``LOAD_ACQUIRE(a, i)`` (``ld.acquire.gpu`` of ``a[i]``) and ``MAX_RELEASE(a, i, v)``
    (``red.release.gpu.max`` into ``a[i]``) for int64 arrays, by inline PTX."""
    if _ORDER:
        return _ORDER[0]
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    def address(context, builder, aryty, ary, idxty, idx):
        arr = context.make_array(aryty)(context, builder, ary)
        ptr = builder.gep(arr.data, [context.cast(builder, idx, idxty, types.intp)])
        return builder.ptrtoint(ptr, ir.IntType(64))

    @intrinsic
    def load_acquire(typingctx, ary, idx):
        if not (isinstance(ary, types.Array) and ary.dtype == types.int64 and isinstance(idx, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            a = address(context, builder, sig.args[0], args[0], sig.args[1], args[1])
            fn = ir.FunctionType(ir.IntType(64), [ir.IntType(64)])
            asm = ir.InlineAsm(fn, "ld.acquire.gpu.b64 $0, [$1];", "=l,l", side_effect=True)
            return builder.call(asm, [a])

        return types.int64(ary, idx), codegen

    @intrinsic
    def max_release(typingctx, ary, idx, val):
        if not (isinstance(ary, types.Array) and ary.dtype == types.int64 and isinstance(idx, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            a = address(context, builder, sig.args[0], args[0], sig.args[1], args[1])
            v = context.cast(builder, args[2], sig.args[2], types.int64)
            fn = ir.FunctionType(ir.VoidType(), [ir.IntType(64), ir.IntType(64)])
            asm = ir.InlineAsm(fn, "red.release.gpu.max.s64 [$0], $1;", "l,l", side_effect=True)
            builder.call(asm, [a, v])
            return context.get_dummy_value()

        return types.none(ary, idx, val), codegen

    _ORDER.append((load_acquire, max_release))
    return _ORDER[0]


_TOP = """
def top(I, eb, c0, col, ncol, bottom{db}):
    if col >= ncol:
        return VT(FILL)
    if I == 0:
        return VT(boundary(-1, c0 + col{db}))
    return LD(bottom, eb + 1 + col)
"""


_FUNNEL: list = []


def _funnel_intrinsic():
    """``funnel(x, w, b)`` (``b`` a literal): ``w >> 1`` with bit ``b`` of ``x`` on top, the low 32
    bits of ``(x >> b):w`` shifted right one place: how the tiled kernel puts a step's decision bit
    into a plane's word, in one ``shf.r`` (and a 32-bit shift for b > 0) where numba's shifts and
    ors take five instructions, some in 64 bits. The simulator gets the same in Python."""
    if _FUNNEL:
        return _FUNNEL[0]
    if is_simulator():

        def funnel(x, w, b):
            return np.uint32((((int(x) >> b) & 1) << 31) | (int(w) >> 1))

        _FUNNEL.append(funnel)
        return funnel
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    @intrinsic
    def funnel(typingctx, x, w, b):
        if not (isinstance(x, types.Integer) and isinstance(w, types.Integer)):
            return None
        if not isinstance(b, types.IntegerLiteral):
            return None

        def codegen(context, builder, sig, args):
            # inline PTX: NVVM expands llvm.fshr with a constant shift into two shifts and an or
            i32 = ir.IntType(32)
            hi, lo = (
                context.cast(builder, a, t, types.uint32) for a, t in zip(args[:2], sig.args[:2], strict=True)
            )
            pre = f"shr.b32 t, $1, {b.literal_value}; " if b.literal_value else "mov.b32 t, $1; "
            src = "{.reg .b32 t; " + pre + "shf.r.wrap.b32 $0, $2, t, 1;}"
            return builder.call(ir.InlineAsm(ir.FunctionType(i32, [i32, i32]), src, "=r,r,r"), [hi, lo])

        return types.uint32(x, w, b), codegen

    _FUNNEL.append(funnel)
    return funnel


def tiled_kernel(rec_cls, n_data: int, bh: int, tw: int, sym_dtype=None):
    """One warp per tile: lane k owns bh/32 consecutive rows and runs one column behind lane k-1,
    taking the value above its first row (and the column's symbol) from lane k-1 by shuffle.

    Steps go in blocks of 32. Step st of a block sets bit st of each row's decision word; the
    store's tile layout shifts lane k's columns by k, so every lane completes its words with the
    block and the warp writes them together. A block in which every lane is on a column of a
    whole-height tile runs unrolled with no edge or range tests (the steady state, nearly all of a
    large grid); the blocks at a tile's start and end, and tiles cut by the grid's last row, run a
    checked loop.

    A block (one warp) takes a row of tiles at a time, by ticket (``tickets[launch]``), and sweeps
    the row's tiles of the launch's tile anti-diagonals ``d0 <= d < d1`` left to right. Rows run at
    once, each behind the row above: after each block of 32 steps a row publishes how many columns
    of its bottom edge are written (``done[I]``, a global column), and before reading the next 32
    columns of its top edge a row waits until the row above has passed them. So a launch costs the
    columns of a row plus a lag of about 64 columns a row, where a grid sync between tile
    anti-diagonals cost a whole tile's columns a diagonal (H100 figures in docs/benchmarks.md). The
    rows are taken in order, so the row a block waits for is always held by a running block: no
    deadlock, however many blocks are resident. One edge array serves all rows: a row reads a
    column of the row above before it writes its own there, and writes only after the row above."""
    unroll = steady_unroll()
    k = _KERNELS.lookup(rec=rec_cls, n_data=n_data, bh=bh, tw=tw, sym_dtype=sym_dtype, unroll=unroll)
    if k.ready:
        return k
    from ...codegen import (
        compile_source,
        data_args,
        fill,
        indent,
        local_reduction,
        row_reduction,
        tile_cell_source,
    )

    rpt = bh // 32
    bits = rec_cls.decision_bits
    sp = spec_of(rec_cls)
    sym = sp.symbols
    da, du, db = data_args(n_data), sp.user_args(n_data), sp.fn_args(n_data)
    sim = is_simulator()
    ns = cell_namespace(rec_cls)
    ns.update(BH=bh, TW=tw, RPT=rpt, WPT=(tw // 32) * bits * bh, U32=numba.uint32, I64=numba.int64)
    ns.update(U0=np.uint32(0), SYMD=np.dtype(sym_dtype or np.int64), FUNNEL=_funnel_intrinsic())
    red = bool(sp.reduce_slots)  # the lane keeps its best cell in registers, its slot at the end
    if red:
        names, red_init, _, red_flush_src = local_reduction(rec_cls, n_data, "cuda.grid(1)")
        ns.update(names, I32=numba.int32)
    ns["tcell"] = device_jit(
        compile_source(tile_cell_source(rec_cls, n_data, rec_cls.offsets, not red), "tcell", dict(ns))
    )
    ns["top"] = device_jit(compile_source(values.expand(_TOP.format(db=db), rec_cls), "top", dict(ns)))
    wait = _WAIT if sim else _WAIT_PTX  # (no inline PTX in the simulator)
    if not sim:
        ns["LOAD_ACQUIRE"], ns["MAX_RELEASE"] = _order_intrinsics()
    ns["wait_above"] = device_jit(compile_source(wait, "wait_above", dict(ns)))
    ns["publish"] = device_jit(compile_source(wait, "publish", dict(ns)))
    j = "\n".join
    load_left, corner, bottom_pick, fast, slow, store_right, store_ck = [], [], [], [], [], [], []
    red_rows, red_merge = [], []
    if red:
        row_best, row_merge = row_reduction(rec_cls)
    for r in range(rpt):
        load_left += [
            f"l{r} = VT(FILL)",
            f"if i0 + {r} < R:",
            "    if J == 0:",
            f"        l{r} = VT(boundary(i0 + {r}, c0 - 1{db}))",
            "    else:",
            f"        l{r} = LD(right, i0 + {r})",
        ]
        if sym:
            load_left.append(f"y{r} = dat0[min(i0 + {r}, R - 1)]")
        corner.append(f"{'if' if r == 0 else 'elif'} rl == {r}:\n    cn = l{r}")
        bottom_pick.append(f"{'if' if r == 0 else 'elif'} rl == {r}:\n    bv = v{r}")
        up = "upin" if r == 0 else f"v{r - 1}"
        dg = "uprev" if r == 0 else f"l{r - 1}"
        ri = f"y{r}" if sym else "0"
        call = f"v{r}, e{r} = tcell(i0 + {r}, j, {up}, l{r}, {dg}, {ri}, cj{du})"
        if red:  # the row's best in this tile (a lane takes a row's cells in column order)
            call += f"\nkv = {values.key(rec_cls, f'v{r}')}\n" + row_best(f"rb{r}", f"rj{r}", "I32(j)")
            red_rows += [f"rb{r} = KT(RED_WORST)", f"rj{r} = I32(-1)"]
            red_merge += [
                f"if i0 + {r} < R:",
                indent(row_merge(f"rb{r}", f"rj{r}", f"i0 + {r}", "I32(c0)"), 4),
            ]
        fast.append(call)
        slow += [f"v{r} = VT(FILL)", f"e{r} = 0", f"if i0 + {r} < R:", indent(call, 4)]
        store_right += [f"if i0 + {r} < R:", f"    ST(right, i0 + {r}, l{r})"]
        store_ck += [f"if i0 + {r} < R:", f"    ST(ckcol, (m, i0 + {r}), l{r})"]
    corner.append("else:\n    cn = VT(FILL)")
    bottom_pick.append("else:\n    bv = VT(FILL)")
    rows = ["if full:", indent(j(fast), 4), "else:", indent(j(slow), 4)]
    shift = [f"l{r} = v{r}" for r in range(rpt)] + [f"mine = v{rpt - 1}"]
    # decision bits: the step st (0..31) of a block of 32 steps sets bit st of each row's word; lane
    # k's step s is column s - k, stored at shifted position s, so all lanes fill their words in the
    # same block and the warp writes them together (coalesced) after it
    planes = [(r, b) for r in range(rpt) for b in range(bits)]
    init = [f"w{r}_{b} = U0" for r, b in planes]

    # each step shifts every word right by one and puts its bit at the top (one funnel shift), so
    # that after the 32 steps of a block step st's bit is bit st (a shift by the step's number was
    # done in 64 bits), and a step with no cell shifts in a 0
    acc = [f"w{r}_{b} = FUNNEL(e{r}, w{r}_{b}, {b})" for r, b in planes]
    skip = [f"e{r} = 0" for r in range(rpt)] if bits else []

    # a row's last block (shifted columns from tw on) folds into its first, whose low bits the lane
    # shift left free (store.TileLayout): no word of padding a row
    flush = [f"if blk < {tw // 32}:", "    wb = twb + blk * " + str(bits * bh)]
    flush += [f"    words[wb + {b * bh + r}] = w{r}_{b}" for r, b in planes]
    flush += ["else:"] + [f"    words[twb + {b * bh + r}] |= w{r}_{b}" for r, b in planes]
    col_prefetch, col_advance = ["cj = 0"], []
    if sym:
        col_prefetch = [
            "ccur = dat1[c0 + min(k, ncol - 1)]",
            "cnext = dat1[c0 + min(32 + k, ncol - 1)]",
            "cj = ccur",
        ]
        col_advance = ["if blk > 0:", "    ccur = cnext", "    cnext = dat1[c0 + min(s0 + 32 + k, ncol - 1)]"]

    def exchange(step):
        """Lane k takes the value above its first row (and the column's symbol) from lane k - 1;
        lane 0 takes them from the tile's top edge (and the column symbols) held across the warp."""
        if sim:  # no warp shuffles in the simulator: the same through shared memory (block = warp)
            out = [
                "ST(xch, k, mine)",
                "cuda.syncthreads()",
                "upin = LD(xch, k - 1) if k > 0 else mine",
                "cuda.syncthreads()",
                "ST(xch, k, tcur)",
                "cuda.syncthreads()",
                f"tv = LD(xch, {step})",
                "cuda.syncthreads()",
            ]
            if sym:
                out += [
                    "sxch[k] = cj",
                    "cuda.syncthreads()",
                    "cin = sxch[k - 1] if k > 0 else cj",
                    "cuda.syncthreads()",
                    "sxch[k] = ccur",
                    "cuda.syncthreads()",
                    f"cv = sxch[{step}]",
                    "cuda.syncthreads()",
                ]
        else:
            out = ["upin = SHUP(mine)", f"tv = SHFL(tcur, {step})"]
            if sym:
                out += ["cin = cuda.shfl_up_sync(FULL, cj, 1)", f"cv = cuda.shfl_sync(FULL, ccur, {step})"]
        out.append("if k == 0:\n    upin = tv")
        if sym:
            out.append("cj = cv if k == 0 else cin")
        return out

    # the steady state: a whole tile height, and every lane on a column of the tile for all 32 steps
    # of the block (no edge or range tests; lane 31 owns the tile's last row)
    # STEADY_UNROLL steps unrolled in the source, looping over the block's 32. Measured on the H100
    # (2026-11, n = 2^17; the script is in git history): unrolling all 32 (constant shuffle lanes and
    # bit positions) took 39 s to compile (numba's front end is superlinear in the function's size),
    # 255 registers and 288 GCUPS; one step a loop trip compiles in 5.8 s, takes 96 registers and
    # runs 324 GCUPS; four steps a trip (2026-12-07) are faster again (see STEADY_UNROLL)
    u = unroll
    # (a while loop: numba's range loop keeps a count beside the index, both in 64 bits)
    steady = ["sb = 0", "while sb < 32:"] if u < 32 else []
    body = []
    for q in range(u):
        st = f"(sb + {q})" if u < 32 else str(q)
        body += exchange(st) + [f"j = j0 + {st}"] + fast
        body += acc + ["uprev = upin"] + shift + ["if k == 31:", f"    ST(bsh, {st}, mine)"]
    steady += [indent(j([*body, f"sb += {u}"]), 4)] if u < 32 else body

    def shared_values(name: str) -> list[str]:
        """A shared buffer of 32 values (a record's: one array per field, each on its own line: the
        simulator tells shared arrays apart by their line)."""
        fs = values.fields(rec_cls)
        if fs is None:
            return [f"{name} = cuda.shared.array(32, VTD)"]
        out = [f"{name}{q} = cuda.shared.array(32, F{q}D)" for q in range(len(fs))]
        return out + [f"{name} = (" + ", ".join(f"{name}{q}" for q in range(len(fs))) + ",)"]

    # the steady state's bottom row: lane 31 leaves a step's value here, the warp stores the 32
    prologue = shared_values("bsh")
    if sim:  # the exchange through shared memory
        prologue += shared_values("xch") + ["sxch = cuda.shared.array(32, SYMD)"]
    red_flush = ["pass"]
    if red:  # the lane's best of this launch, merged into its slot (slots outlive the launches)
        prologue += [red_init]
        red_flush = [red_flush_src]
    src = fill(
        _TILED,
        da=da,
        du=du,
        db=db,
        prologue=prologue,
        rows_red_init=red_rows or "pass",
        rows_red_merge=red_merge or "pass",
        red_flush=red_flush,
        load_left=load_left,
        corner_pick=corner,
        col_prefetch=col_prefetch,
        planes_init=init or "pass",
        col_advance=col_advance or "pass",
        steady_steps=steady,
        exchange=exchange("st"),
        rows=rows,
        planes_skip=skip or "pass",
        planes_acc=acc or "pass",
        shift_left=shift,
        bottom_pick=bottom_pick,
        planes_flush=flush if bits else "pass",
        store_right=store_right,
        store_ck=store_ck,
    )
    return k.keep(generated_kernel(values.expand(src, rec_cls), "run_tiles", ns))


#: steps of the tiled kernel's steady state unrolled in its source (a divisor of 32; see the figures
#: in tiled_kernel). Four: H100, 2^17 random DNA, values only (tiles 256 x 1024; 128 x 1024 for
#: Gotoh), kernel seconds, median of 3 (2026-12-07, docs/benchmarks.md): Smith-Waterman 581 / 665 /
#: 671 GCUPS unrolling 1 / 2 / 4 steps, Gotoh 253 / 255 / 262; with decisions (the full store, 2^16)
#: Smith-Waterman 256 x 256 46.2 -> 40.3 ms and Gotoh 128 x 256 92.2 -> 78.2 ms from 1 to 4; answers
#: equal. The copies of a step's values into the next step's registers go (Gotoh's step 120 -> 77
#: SASS instructions). ``GPUDP_STEADY_UNROLL`` overrides it for tuning
STEADY_UNROLL = 4


def steady_unroll() -> int:
    """How many of a block's 32 steady-state steps the tiled kernel unrolls: ``GPUDP_STEADY_UNROLL``
    (tuning), else :data:`STEADY_UNROLL`."""
    u = int(os.environ.get("GPUDP_STEADY_UNROLL", STEADY_UNROLL))
    if u not in (1, 2, 4, 8, 16, 32):
        raise ValueError(f"GPUDP_STEADY_UNROLL must divide 32, got {u}")
    return u
