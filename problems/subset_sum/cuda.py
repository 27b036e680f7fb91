"""The two-list stages on the GPU: merge-path generation, pruning and search kernels (Wan et al.).
Imported only when the cuda backend runs."""

from __future__ import annotations

import functools
import math

import numpy as np

from gpudp import primitives as pr
from gpudp.backends.cuda import cuda, generated_kernel, sim_geometry
from gpudp.primitives import cuda as prc

from . import cpu
from .kernels import INT64_MAX, build

SEARCH_THREADS = 256
#: the pruning block size ``e`` unless the caller gives one
BLOCK = 256
#: cell updates one step of the solver's work costs here, for the predicted time: one, at the GPU's
#: rate (:data:`gpudp.backends.GPU_CELLS_PER_S`)
STEP_COST = 1.0


def _geometry():
    """(merge threads, merge items, scan threads, search threads): small under the simulator so that
    tiny instances still span several blocks."""
    return sim_geometry((pr.MERGE_THREADS, pr.MERGE_ITEMS, pr.SCAN_THREADS, SEARCH_THREADS), (4, 3, 8, 8))


_START_LIST = """
def start_list(keys, pay, lens):
    if cuda.grid(1) == 0:
        keys[0] = 0
        pay[0] = 0
        lens[0] = 1
"""

_GENERATE_STEP = """
def generate_step(keys, pay, lens, s, w, bit, cap, outk, outp):
    # IGS step s: merge list A = keys[0:lens[s]] with A[0:k] + w, k = #{a <= cap - w}, into out;
    # the lengths stay on the device (no host round trip per item); blocks past the end idle.
    skey = cuda.shared.array(TILE, int64)
    spay = cuda.shared.array(TILE, uint32)
    src = cuda.shared.array(TILE, int32)
    cut = cuda.shared.array(3, int64)
    m = lens[s]
    if cuda.threadIdx.x == 0:
        cut[2] = ub(keys, 0, m, cap - w)
    cuda.syncthreads()
    k = cut[2]
    d0 = int64(cuda.blockIdx.x) * TILE
    if d0 < m + k:
        merge_tile_at(keys, pay, m, keys, pay, k, w, bit, outk, outp, d0, skey, spay, src, cut)
    if cuda.grid(1) == 0:
        lens[s + 1] = m + k
"""

_PRUNE_CUDA = """
def prune(a, na, b, nb, cap, e, ka, out_jlo, out_cnt):
    i = cuda.grid(1)
    if i < ka:
        out_jlo[i], out_cnt[i] = ips(a, na, b, nb, cap, e, i)
"""

_SEARCH_CUDA = """
def search(a, na, b, nb, cap, e, off, jlo, ka, npairs, out_g, out_i, out_q):
    # One thread per surviving block pair; the block keeps its least gap (shared-memory reduction).
    sg = cuda.shared.array(THREADS, int64)
    si = cuda.shared.array(THREADS, int64)
    sq = cuda.shared.array(THREADS, int64)
    t = cuda.threadIdx.x
    p = cuda.grid(1)
    g = INT64_MAX
    gi = -1
    gq = -1
    if p < npairs:
        i = ub(off, 0, ka, p) - 1
        g, gi, gq = pair_search(a, na, b, nb, cap, e, i, jlo[i] + p - off[i])
    sg[t] = g
    si[t] = gi
    sq[t] = gq
    cuda.syncthreads()
    s = THREADS // 2
    while s > 0:
        if t < s and sg[t + s] < sg[t]:
            sg[t] = sg[t + s]
            si[t] = si[t + s]
            sq[t] = sq[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        out_g[cuda.blockIdx.x] = sg[0]
        out_i[cuda.blockIdx.x] = si[0]
        out_q[cuda.blockIdx.x] = sq[0]
"""


@functools.cache
def _cuda_funcs():
    from types import SimpleNamespace

    from numba import int32, int64, uint32

    mt, mi, st, threads = _geometry()
    prim = prc.cuda_kernels(mt, mi, st)
    ns = build(cuda.jit(device=True), prim.upper_bound)
    ns.update(cuda=cuda, int32=int32, int64=int64, uint32=uint32, ub=prim.upper_bound)
    ns.update(TILE=int(prim.tile), THREADS=int(threads), merge_tile_at=prim.merge_tile_at)
    return SimpleNamespace(
        prim=prim,
        start_list=generated_kernel(_START_LIST, "start_list", {"cuda": cuda}),
        generate_step=generated_kernel(_GENERATE_STEP, "generate_step", dict(ns)),
        prune=generated_kernel(_PRUNE_CUDA, "prune", dict(ns)),
        search=generated_kernel(_SEARCH_CUDA, "search", dict(ns)),
        threads=threads,
    )


def generate(ws, cap, sizes, k=None):
    k = k or _cuda_funcs()
    final, other = sizes
    bufs = [(cuda.device_array(final, np.int64), cuda.device_array(final, np.uint32))]
    bufs.append((cuda.device_array(max(other, 1), np.int64), cuda.device_array(max(other, 1), np.uint32)))
    h = len(ws)
    lens = cuda.device_array(h + 1, np.int64)
    src = bufs[h % 2]
    k.start_list[1, 1](src[0], src[1], lens)
    tile = k.prim.tile
    for s, w in enumerate(ws):
        dst = bufs[(h - s - 1) % 2]
        blocks = -(-min(2 ** (s + 1), final) // tile)  # enough for the longest list step s can make
        k.generate_step[blocks, k.prim.threads](
            src[0], src[1], lens, s, np.int64(w), np.uint32(1 << s), np.int64(cap), dst[0], dst[1]
        )
        src = dst
    n = int(lens[h : h + 1].copy_to_host()[0])
    return src[0][:n], src[1][:n]


def generate_host(ws, cap, sizes):
    a, m = generate(ws, cap, sizes)
    return a.copy_to_host(), m.copy_to_host()


def prune_pairs(a, b, cap, e):
    k = _cuda_funcs()
    ka = -(-len(a) // e)
    jlo = cuda.device_array(ka, np.int64)
    cnt = cuda.device_array(ka, np.int64)
    k.prune[-(-ka // 256), 256](cuda.to_device(a), len(a), cuda.to_device(b), len(b), cap, e, ka, jlo, cnt)
    return jlo.copy_to_host(), cnt.copy_to_host()


def free_memory(need=0) -> tuple[int, str]:
    """(free bytes, where): the device's free bytes (numba's lazily freed arrays flushed when short
    of ``need``); the host's (:func:`.cpu.free_memory`) where the device tells none (the simulator)."""
    ctx = cuda.current_context()
    free, _total = ctx.get_memory_info()
    pending = getattr(ctx, "deallocations", None)
    if free < need and pending is not None:  # numba frees device arrays lazily: flush, count again
        pending.clear()
        free, _total = ctx.get_memory_info()
    return (int(free), "on the GPU") if math.isfinite(free) else cpu.free_memory(need)


def two_list(wa, wb, cap, e, plan, tick=None):
    """Generate both lists, prune and search: ``(gap, mask_a, mask_b, pairs, (na, nb), stages)``;
    ``tick(k)`` once the lists are made (``k`` sums), where a time limit may stop the part."""
    k = _cuda_funcs()
    ev = [cuda.event() for _ in range(4)]
    ev[0].record()
    a, am = generate(wa, cap, plan["a_buffers"], k)
    b, bm = generate(wb, cap, plan["b_buffers"], k)
    ev[1].record()
    na, nb = a.shape[0], b.shape[0]
    if tick is not None:
        tick(na + nb)
    ka = -(-na // e)
    jlo = cuda.device_array(ka, np.int64)
    cnt = cuda.device_array(ka, np.int64)
    off = cuda.device_array(ka, np.int64)
    k.prune[-(-ka // 256), 256](a, na, b, nb, cap, e, ka, jlo, cnt)
    pairs = prc.exclusive_scan_cuda(cnt, ka, off, k.prim)
    ev[2].record()
    blocks = -(-pairs // k.threads)
    out = [cuda.device_array(blocks, np.int64) for _ in range(3)]
    k.search[blocks, k.threads](a, na, b, nb, cap, e, off, jlo, ka, pairs, *out)
    g, gi, gq = (o.copy_to_host() for o in out)
    ev[3].record()
    ev[3].synchronize()
    best = int(np.argmin(g))
    gap, ia, q = int(g[best]), int(gi[best]), int(gq[best])
    stages = {
        "generate_s": ev[0].elapsed_time(ev[1]) / 1e3,
        "prune_s": ev[1].elapsed_time(ev[2]) / 1e3,
        "search_s": ev[2].elapsed_time(ev[3]) / 1e3,
    }
    if q < 0:  # no pair at all: the caller reports it
        return INT64_MAX, 0, 0, pairs, (na, nb), stages
    mask_a = int(am[ia : ia + 1].copy_to_host()[0])
    mask_b = int(bm[nb - 1 - q : nb - q].copy_to_host()[0])
    return gap, mask_a, mask_b, pairs, (na, nb), stages
