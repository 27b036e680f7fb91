"""The frontier's CUDA kernels and block-wide device functions, written as plain numba-cuda code.

Not run from here: :func:`gpudp.kernel.load` compiles each function's text in the namespace of a
build (:mod:`gpudp.frontier.cuda`), where these names are bound: ``cuda`` (the CUDA backend's kit),
``numba``, the block size ``TPB``, the value type ``VT`` and its lowest value ``NEG``, ``SONS`` (two
a thread of a block), the problem's ``child_d`` and the node table's ``key_d`` and ``hash_d``, and
the block-wide functions below as device functions. Here they are placeholders, so that the module
reads, lints and highlights as the Python it is.
"""

import numba
from numba import cuda

TPB = SONS = 0
VT = NEG = None
child_d = key_d = hash_d = None


def block_inclusive_scan(s, tid):
    off = 1
    while off < TPB:
        t = s[tid - off] if tid >= off else 0
        cuda.syncthreads()
        s[tid] += t
        cuda.syncthreads()
        off *= 2


# the text as it was written (the kernels' cache entries stay)
# fmt: off
def reduce_best(s_best, s_arg, tid):
    """Tree reduction into slot 0: the largest ``s_best``, ties to the lowest non-negative
    ``s_arg`` (the son with the best lower bound, chosen the same way whatever the block order)."""
    half = TPB // 2
    while half > 0:
        if tid < half:
            ob = s_best[tid + half]
            oa = s_arg[tid + half]
            if ob > s_best[tid] or (
                ob == s_best[tid] and oa >= 0 and (s_arg[tid] < 0 or oa < s_arg[tid])
            ):
                s_best[tid] = ob
                s_arg[tid] = oa
        cuda.syncthreads()
        half //= 2
# fmt: on


def expand_count(
    m, level, cut, f0, f1, bits, data, nvars, sym, kb, keep, table, block_count, block_best, block_arg
):
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * TPB + tid
    s_cnt = cuda.shared.array(TPB, numba.int32)
    s_best = cuda.shared.array(TPB, VT)
    s_arg = cuda.shared.array(TPB, numba.int64)
    cnt = 0
    best = NEG
    arg = -1
    if i < m:
        last = level + 1 >= nvars
        blocked = sym[level] != 0 and ((bits[i, (level - 1) >> 5] >> ((level - 1) & 31)) & 1) == 0
        for t in range(2):
            ok, c0, c1, u, lo = child_d(level, f0[i], f1[i], 1 - t, data, nvars)
            if t == 0 and blocked:
                ok = False
            flag = 0
            if ok:
                if lo > best:
                    best = lo
                    arg = 2 * i + t
                if not last and u > cut:
                    flag = 1
                    if kb > 0:  # insert (fields, next-copy bit) in the table; a duplicate is dropped
                        key = key_d(c0, c1, (1 - t) if sym[level + 1] != 0 else 0, kb)
                        mask = table.shape[0] - 1
                        slot = hash_d(key, mask)
                        while True:
                            old = cuda.atomic.cas(table, slot, -1, key)
                            if old == -1:
                                flag = slot + 2
                                break
                            if old == key:
                                flag = 0
                                break
                            slot = (slot + 1) & mask
                    if flag != 0:
                        cnt += 1
            keep[2 * i + t] = flag
    s_cnt[tid] = cnt
    s_best[tid] = best
    s_arg[tid] = arg
    cuda.syncthreads()
    block_inclusive_scan(s_cnt, tid)
    reduce_best(s_best, s_arg, tid)
    if tid == 0:
        block_count[cuda.blockIdx.x] = s_cnt[TPB - 1]
        block_best[cuda.blockIdx.x] = s_best[0]
        block_arg[cuda.blockIdx.x] = s_arg[0]


def scan_blocks(nblocks, block_count, block_best, block_arg, block_offset, res_i, res_v):
    """One block: exclusive scan of the block counts; total, best lower bound and its son."""
    tid = cuda.threadIdx.x
    s = cuda.shared.array(TPB, numba.int64)
    s_best = cuda.shared.array(TPB, VT)
    s_arg = cuda.shared.array(TPB, numba.int64)
    carry = 0
    best = NEG
    arg = -1
    for base in range(0, nblocks, TPB):
        j = base + tid
        v = 0
        if j < nblocks:
            v = block_count[j]
            b = block_best[j]
            if b > best or (b == best and block_arg[j] >= 0 and arg < 0):
                best = b
                arg = block_arg[j]
        s[tid] = v
        cuda.syncthreads()
        block_inclusive_scan(s, tid)
        if j < nblocks:
            block_offset[j] = carry + s[tid] - v
        carry += s[TPB - 1]
        cuda.syncthreads()
    s_best[tid] = best
    s_arg[tid] = arg
    cuda.syncthreads()
    reduce_best(s_best, s_arg, tid)
    if tid == 0:
        res_i[0] = carry
        res_i[1] = s_arg[0]
        res_v[0] = s_best[0]


def scatter(
    m, level, f0, f1, bits, data, nvars, keep, table, block_offset, res_i, o0, o1, obits, inc_f, inc_bits
):
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * TPB + tid
    s = cuda.shared.array(TPB, numba.int64)
    son = cuda.shared.array(SONS, numba.int32)  # by rank in the block: 2 * thread + (1 - take)
    wl = level >> 5
    bp = level & 31
    k1 = False
    k0 = False
    a0 = b0 = f0[0]
    a1 = b1 = f1[0]
    u = f0[0]
    if i < m:  # the sons again (cheaper than storing them); expand_count decided which stay
        ok1, a0, a1, u, lo = child_d(level, f0[i], f1[i], 1, data, nvars)
        ok0, b0, b1, u, lo = child_d(level, f0[i], f1[i], 0, data, nvars)
        g1 = keep[2 * i]
        g0 = keep[2 * i + 1]
        k1 = g1 != 0
        k0 = g0 != 0
        if g1 >= 2:  # leave the table empty for the next batch
            table[g1 - 2] = -1
        if g0 >= 2:
            table[g0 - 2] = -1
    c = 0
    if k1:
        c += 1
    if k0:
        c += 1
    s[tid] = c
    cuda.syncthreads()
    block_inclusive_scan(s, tid)
    r = s[tid] - c  # the rank of this thread's first son among the block's
    base = block_offset[cuda.blockIdx.x]
    if i < m:
        pos = base + r
        if k1:
            o0[pos] = a0
            o1[pos] = a1
            son[r] = 2 * tid
            pos += 1
            r += 1
        if k0:
            o0[pos] = b0
            o1[pos] = b1
            son[r] = 2 * tid + 1
        arg = res_i[1]
        if arg >= 0 and arg // 2 == i:
            take = 1 - arg % 2
            inc_f[0] = a0 if take == 1 else b0
            inc_f[1] = a1 if take == 1 else b1
            for w in range(wl):
                inc_bits[w] = bits[i, w]
            inc_bits[wl] = (bits[i, wl] if bp != 0 else 0) | (take << bp)
    cuda.syncthreads()
    # The block's sons take one contiguous run of node-major words (wl + 1 per son): the block
    # writes it together, word q by thread q mod TPB, so that a warp writes consecutive words.
    nw = wl + 1
    q = tid
    while q < s[TPB - 1] * nw:
        r = q // nw
        w = q - r * nw
        p = cuda.blockIdx.x * TPB + (son[r] >> 1)
        if w < wl:
            obits[base + r, w] = bits[p, w]
        else:
            prev = bits[p, wl] if bp != 0 else 0
            obits[base + r, w] = prev | ((1 - (son[r] & 1)) << bp)
        q += TPB


def compact_kernel(m, values, flags, block_offset, out):
    """Stand-alone separated compaction (used by :func:`compact`): out[rank] = values[i]."""
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * TPB + tid
    s = cuda.shared.array(TPB, numba.int64)
    c = 0
    if i < m and flags[i] != 0:
        c = 1
    s[tid] = c
    cuda.syncthreads()
    block_inclusive_scan(s, tid)
    if c:
        out[block_offset[cuda.blockIdx.x] + s[tid] - 1] = values[i]


def count_flags(m, flags, block_count):
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * TPB + tid
    s = cuda.shared.array(TPB, numba.int64)
    s[tid] = 1 if (i < m and flags[i] != 0) else 0
    cuda.syncthreads()
    block_inclusive_scan(s, tid)
    if tid == TPB - 1:
        block_count[cuda.blockIdx.x] = s[tid]
