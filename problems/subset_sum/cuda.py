"""The two-list stages on the GPU: merge-path generation, pruning and search kernels (Wan et al.).
Imported only when the cuda backend runs."""

from __future__ import annotations

import math

import numpy as np

from gpudp import primitives as pr
from gpudp.backends.cuda import cuda, generated_kernel, sim_geometry
from gpudp.kernel import factory, load
from gpudp.primitives import cuda as prc

from . import cpu, cuda_code
from .kernels import INT64_MAX, build

SEARCH_THREADS = 256
#: the pruning block size ``e`` unless the caller gives one
BLOCK = 256


def _geometry():
    """(merge threads, merge items, scan threads, search threads): small under the simulator so that
    tiny instances still span several blocks."""
    return sim_geometry((pr.MERGE_THREADS, pr.MERGE_ITEMS, pr.SCAN_THREADS, SEARCH_THREADS), (4, 3, 8, 8))


@factory("subset_sum.cuda")
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
        start_list=load(cuda_code.start_list, {"cuda": cuda}, generated_kernel),
        generate_step=load(cuda_code.generate_step, dict(ns), generated_kernel),
        prune=load(cuda_code.prune, dict(ns), generated_kernel),
        search=load(cuda_code.search, dict(ns), generated_kernel),
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
