"""The merge-path merge and the exclusive scans (sum and max) on the GPU, written as plain
numba-cuda code.

Not run from here: :func:`gpudp.kernel.load` compiles each function's text in the namespace of a
build (:func:`gpudp.primitives.cuda.cuda_kernels`), where these names are bound: ``cuda`` (the CUDA
backend's kit), the integer types, the geometry (``THREADS``, ``ITEMS``, ``TILE = THREADS *
ITEMS``, ``SCAN_THREADS``), the merge path's ``cr`` (:func:`gpudp.primitives.corank`) and
``merge_tile_at`` as device functions. Here they are placeholders, so that the module reads, lints
and highlights as the Python it is.
"""

from numba import cuda, int32, int64, uint32

THREADS = ITEMS = TILE = SCAN_THREADS = 0
cr = None


def merge_tile_at(xk, xp, m, yk, yp, n, yadd, yor, outk, outp, d0, skey, spay, src, cut):
    # The block writes outputs [d0, d0 + TILE): merge path gives its input ranges, keys and payloads
    # are loaded coalesced into shared memory, each thread merges ITEMS outputs there (recording
    # where each came from), and the tile is written back coalesced. Payloads are uint32.
    t = cuda.threadIdx.x
    d1 = d0 + TILE
    if d1 > m + n:
        d1 = m + n
    if t == 0:
        cut[0] = cr(xk, 0, m, yk, 0, n, yadd, d0)
    if t == 1:
        cut[1] = cr(xk, 0, m, yk, 0, n, yadd, d1)
    cuda.syncthreads()
    i0 = cut[0]
    j0 = d0 - i0
    mx = cut[1] - i0
    ny = (d1 - cut[1]) - j0
    for p in range(t, mx, THREADS):
        skey[p] = xk[i0 + p]
        spay[p] = xp[i0 + p]
    for p in range(t, ny, THREADS):
        skey[mx + p] = yk[j0 + p] + yadd
        spay[mx + p] = yp[j0 + p] | yor
    cuda.syncthreads()
    size = mx + ny
    q0 = t * ITEMS
    if q0 > size:
        q0 = size
    q1 = q0 + ITEMS
    if q1 > size:
        q1 = size
    i = cr(skey, 0, mx, skey, mx, ny, 0, q0)
    j = q0 - i
    for q in range(q0, q1):
        if j >= ny or (i < mx and skey[i] <= skey[mx + j]):
            src[q] = i
            i += 1
        else:
            src[q] = mx + j
            j += 1
    cuda.syncthreads()
    for p in range(t, size, THREADS):
        outk[d0 + p] = skey[src[p]]
        outp[d0 + p] = spay[src[p]]


def merge_tile(xk, xp, m, yk, yp, n, yadd, yor, outk, outp):
    skey = cuda.shared.array(TILE, int64)
    spay = cuda.shared.array(TILE, uint32)
    src = cuda.shared.array(TILE, int32)
    cut = cuda.shared.array(2, int64)
    d0 = int64(cuda.blockIdx.x) * TILE
    merge_tile_at(xk, xp, m, yk, yp, n, yadd, yor, outk, outp, d0, skey, spay, src, cut)


def scan_blocks(a, n, out, sums):
    # Inclusive Hillis-Steele scan of one block's slice in shared memory, written out exclusive.
    s = cuda.shared.array(SCAN_THREADS, int64)
    t = cuda.threadIdx.x
    g = int64(cuda.blockIdx.x) * SCAN_THREADS + t
    v = int64(0)
    if g < n:
        v = a[g]
    s[t] = v
    cuda.syncthreads()
    off = 1
    while off < SCAN_THREADS:
        add = int64(0)
        if t >= off:
            add = s[t - off]
        cuda.syncthreads()
        s[t] += add
        cuda.syncthreads()
        off *= 2
    if g < n:
        out[g] = s[t] - v
    if t == SCAN_THREADS - 1:
        sums[cuda.blockIdx.x] = s[t]


def scan_add(out, n, offs):
    g = cuda.grid(1)
    if g < n:
        out[g] += offs[g // SCAN_THREADS]


def max_scan_blocks(a, n, init, out, maxes):
    # Inclusive Hillis-Steele max-scan of one block's slice in shared memory (init past the end),
    # written out exclusive (init first); the block's maximum into maxes.
    s = cuda.shared.array(SCAN_THREADS, int64)
    t = cuda.threadIdx.x
    g = int64(cuda.blockIdx.x) * SCAN_THREADS + t
    v = init
    if g < n:
        v = a[g]
    s[t] = v
    cuda.syncthreads()
    off = 1
    while off < SCAN_THREADS:
        x = init
        if t >= off:
            x = s[t - off]
        cuda.syncthreads()
        if x > s[t]:
            s[t] = x
        cuda.syncthreads()
        off *= 2
    if g < n:
        if t == 0:
            out[g] = init
        else:
            out[g] = s[t - 1]
    if t == SCAN_THREADS - 1:
        maxes[cuda.blockIdx.x] = s[t]


def max_scan_apply(out, n, offs):
    g = cuda.grid(1)
    if g < n:
        x = offs[g // SCAN_THREADS]
        if x > out[g]:
            out[g] = x
