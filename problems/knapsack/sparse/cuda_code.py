"""The sparse knapsack step's device functions and kernels (:mod:`.cuda`), written as plain
numba-cuda code.

Not run from here: :func:`gpudp.kernel.load` compiles each function's text in the namespace of a
build (:func:`.cuda.kernels`), where these names are bound: ``cuda`` (the CUDA backend's kit), the
integer types, the masks ``M32``, ``S32``, ``LOW31``, ``FLIP``, ``LOW32``, the block size
``THREADS``, the merge's ``ub`` (:func:`gpudp.primitives.upper_bound`), and the device functions
below. Here they are placeholders, so that the module reads, lints and highlights as the Python it
is.
"""

from numba import cuda, int32, int64, uint64

M32 = S32 = LOW31 = FLIP = LOW32 = THREADS = 0
ub = None

# ----------------------------------------------------------------------------------------------------
# Device functions: the CPU's exact comparisons (exact._umul, uge, ge, kernels._keep), loaded as
# generated source (numba-cuda caches generated kernels by their source; closures cannot be cached).


def umul(a, b):
    a0 = a & M32
    a1 = a >> S32
    b0 = b & M32
    b1 = b >> S32
    p00 = a0 * b0
    p01 = a0 * b1
    p10 = a1 * b0
    mid = (p00 >> S32) + (p01 & M32) + (p10 & M32)
    hi = a1 * b1 + (p01 >> S32) + (p10 >> S32) + (mid >> S32)
    lo = (mid << S32) | (p00 & M32)
    return hi, lo


def uge(a, b, c, d):
    h1, l1 = umul(uint64(a), uint64(b))
    h2, l2 = umul(uint64(c), uint64(d))
    return h1 > h2 or (h1 == h2 and l1 >= l2)


def ge(a, b, c, d, small):
    if small:
        return a * b >= c * d
    if a >= 0:
        if c <= 0:
            return True
        return uge(a, b, c, d)
    if c > 0:
        return False
    return uge(-c, d, -a, b)


def keep(w, p, kk, cap, thr, rp, rw, lp, lw, small, ls, la, lu, lim):
    if w <= cap:
        ok = rw > 0 and ge(cap - w, rp, thr - p, rw, small)
    else:
        ok = lw > 0 and ge(p - thr, lw, w - cap, lp, small)
    if ok and ls > 0:
        ok = ls * p - la * kk - lu * w >= lim
    return ok


def last_le(W, L, limit, dw):
    lo = 0
    hi = L
    while lo < hi:
        mid = (lo + hi) >> 1
        if W[mid] - dw <= limit:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


# ----------------------------------------------------------------------------------------------------
# Kernels. The merged list has n2 = 2L entries: keys Wm (int64), payloads pay (uint32: source index,
# top bit for the shifted copy), profits Pm, their exclusive prefix maxima PX. res (int64, on the
# device): 0 z, 1 the incumbent's merged index (-1: not improved), 2 its node (-2: not improved),
# 3 the next free node after it, 4 the threshold, 5 S*thr - lagc, 6 the undominated count.


def gather(pay, n2, P, dp, Pm):
    q = cuda.grid(1)
    if q < n2:
        s = pay[q]
        v = P[int64(s & LOW31)]
        if s >= FLIP:
            v += dp
        Pm[q] = v


def incumbent(Wm, Pm, PX, pay, n2, N, cap, z, gp, target, ls, lagc, j, nn, par, itm, res):
    if cuda.grid(1) == 0:
        hi = ub(Wm, 0, n2, cap)
        newz = z
        qstar = int64(-1)
        node = int64(-2)
        nn2 = nn
        if hi > 0:
            best = PX[hi - 1]
            if Pm[hi - 1] > best:
                best = Pm[hi - 1]
            if best > z:
                lo = int64(0)
                h = hi - 1
                while lo < h:  # the first merged index whose prefix maximum reaches best
                    mid = (lo + h) >> 1
                    v = PX[mid]
                    if Pm[mid] > v:
                        v = Pm[mid]
                    if v >= best:
                        h = mid
                    else:
                        lo = mid + 1
                qstar = lo
                newz = best
                s = pay[qstar]
                src = int64(s & LOW31)
                if s >= FLIP:
                    par[nn] = N[src]
                    itm[nn] = j
                    node = nn
                    nn2 = nn + 1
                else:
                    node = N[src]
        thr = newz + gp
        if target > thr:
            thr = target
        res[0] = newz
        res[1] = qstar
        res[2] = node
        res[3] = nn2
        res[4] = thr
        res[5] = ls * thr - lagc
        res[6] = 0


def flags(Wm, Pm, PX, pay, n2, K, dk, counted, cap, rp, rw, lp, lw, small, ls, la, lu, res, v):
    sh = cuda.shared.array(THREADS, int32)
    t = cuda.threadIdx.x
    q = cuda.grid(1)
    dom = 0
    if q < n2:
        p = Pm[q]
        w = Wm[q]
        if p > PX[q]:
            dom = 1
            if q + 1 < n2 and Wm[q + 1] == w and Pm[q + 1] > p:
                dom = 0
        x = int64(0)
        if dom:
            s = pay[q]
            src = int64(s & LOW31)
            f = s >= FLIP
            kk = int64(0)
            if counted:
                kk = int64(K[src])
                if f:
                    kk += dk
            if keep(w, p, kk, cap, res[4], rp, rw, lp, lw, small, ls, la, lu, res[5]):
                x = int64(1)
                if f and q != res[1]:
                    x += int64(1) << 32
        v[q] = x
    sh[t] = dom
    cuda.syncthreads()
    half = THREADS // 2
    while half > 0:
        if t < half:
            sh[t] += sh[t + half]
        cuda.syncthreads()
        half //= 2
    if t == 0 and sh[0] > 0:
        cuda.atomic.add(res, 6, int64(sh[0]))


def scatter(Wm, Pm, pay, n2, v, off, N, K, dk, counted, j, res, W2, P2, N2, K2, par, itm):
    q = cuda.grid(1)
    if q < n2:
        x = v[q]
        if x & 1:
            o = off[q]
            pos = o & LOW32
            s = pay[q]
            src = int64(s & LOW31)
            f = s >= FLIP
            W2[pos] = Wm[q]
            P2[pos] = Pm[q]
            if counted:
                kk = K[src]
                if f:
                    kk += dk
                K2[pos] = kk
            if x >> 32:
                nid = res[3] + (o >> 32)
                par[nid] = N[src]
                itm[nid] = j
                N2[pos] = nid
            elif q == res[1]:
                N2[pos] = res[2]
            else:
                N2[pos] = N[src]


def iota(a, n):
    q = cuda.grid(1)
    if q < n:
        a[q] = q


def pair(W, P, L, cap, ws, ps, t, nr, nout, vals, qs):
    # one thread an item outside the core: right of it (added) for x < nr, left (removed) after
    x = cuda.grid(1)
    if x < nout:
        if x < nr:
            jj = t + 1 + x
            q = last_le(W, L, cap - ws[jj], 0)
            val = int64(0)
            if q >= 0:
                val = P[q] + ps[jj]
        else:
            jj = x - nr
            q = last_le(W, L, cap, ws[jj])
            val = int64(0)
            if q >= 0:
                val = P[q] - ps[jj]
        qs[x] = q
        vals[x] = val
