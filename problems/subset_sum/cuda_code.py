"""The two-list search's GPU kernels (:mod:`.cuda`), written as plain numba-cuda code.

Not run from here: :func:`gpudp.kernel.load` compiles each function's text in the namespace of a
build (:func:`.cuda._cuda_funcs`), where these names are bound: ``cuda`` (the CUDA backend's kit),
the integer types, the geometry ``TILE`` and ``THREADS``, the merge's ``ub`` and
``merge_tile_at`` (:mod:`gpudp.primitives.cuda`) and the block functions ``ips`` and
``pair_search`` (:mod:`.block_code`), as device functions. Here they are placeholders, so that the
module reads, lints and highlights as the Python it is.
"""

from numba import cuda, int32, int64, uint32

from .block_code import INT64_MAX

TILE = THREADS = 0
ub = merge_tile_at = ips = pair_search = None


def start_list(keys, pay, lens):
    if cuda.grid(1) == 0:
        keys[0] = 0
        pay[0] = 0
        lens[0] = 1


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


def prune(a, na, b, nb, cap, e, ka, out_jlo, out_cnt):
    i = cuda.grid(1)
    if i < ka:
        out_jlo[i], out_cnt[i] = ips(a, na, b, nb, cap, e, i)


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
