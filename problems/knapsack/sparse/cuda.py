"""The sparse-state DP's list step on the GPU (issue 16): merge path, max-scan, scan and compaction
(:mod:`gpudp.primitives`), the same step as :func:`gpudp.problems.knapsack.sparse.kernels.step` on the CPU.

Imported only when a search hands a large list to the GPU (importing it imports the CUDA compiler).
A step of item j on the device list ``(W, P, N, K)`` (weights ascending, profits strictly rising, node
ids, item counts) of length L:

1. **merge** the list with its copy shifted by ``(±w_j, ±p_j)``: merge path on the weights (the
   unshifted copy first on equal weights), each output carrying its source index with the top bit
   set for the shifted copy (:func:`gpudp.primitives.cuda.merge_shifted_cuda`);
2. **gather** the merged profits, and their exclusive **max-scan**
   (:func:`gpudp.primitives.cuda.exclusive_max_scan_cuda`): a merged state is undominated iff its
   profit beats every profit before it, and no state of the same weight right after it has more;
3. **incumbent** (one thread): the best merged state that fits is the first whose prefix maximum
   reaches the prefix maximum at the last weight within the capacity; it becomes the incumbent if
   better (with a new node if it is a flipped state), and the fathoming threshold follows;
4. **flags**: undominated and not fathomed (the bounds of the CPU step, exact: 128-bit products
   where int64 could overflow); the count of undominated states (block sums, one atomic a block);
   each kept state's flag and, in the high 32 bits, whether it needs a new node;
5. an exclusive **scan** of the flags gives each kept state its place and each new node its id;
6. **scatter** the kept states into the other list, and the new nodes (parent: the source state's
   node, item j) into the node arrays, which stay on the device.

The node ids come out in the CPU step's order (the incumbent's node first, then the kept flipped
states in list order), so the lists and the node arrays equal the CPU step's, entry for entry.
**Pairing** (:func:`pair_cuda`) runs one thread per item outside the core (a binary search in the
list each); the best pair is picked on the host in the CPU's order.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np

from gpudp import primitives as pr
from gpudp.backends.cuda import cuda, generated_kernel, memory_info, sim_geometry
from gpudp.codegen import compile_source
from gpudp.primitives import cuda as prc

__all__ = ["DEVICE_LISTS", "DeviceList", "step_cuda", "pair_cuda", "kernels", "warm"]

#: whether this backend's list steps take a large list to a device (:func:`.gpu.device_lists`)
DEVICE_LISTS = True

#: threads a block of the element-wise kernels
THREADS = 256

_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_LOW31 = np.uint32(0x7FFFFFFF)
_FLIP = np.uint32(1 << 31)

# ----------------------------------------------------------------------------------------------------
# Device functions: the CPU's exact comparisons (exact._umul, uge, ge, kernels._keep) as generated
# source (numba-cuda caches generated kernels by their source; closures cannot be cached).

_UMUL = """
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
"""

_UGE = """
def uge(a, b, c, d):
    h1, l1 = umul(uint64(a), uint64(b))
    h2, l2 = umul(uint64(c), uint64(d))
    return h1 > h2 or (h1 == h2 and l1 >= l2)
"""

_GE = """
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
"""

_KEEP = """
def keep(w, p, kk, cap, thr, rp, rw, lp, lw, small, ls, la, lu, lim):
    if w <= cap:
        ok = rw > 0 and ge(cap - w, rp, thr - p, rw, small)
    else:
        ok = lw > 0 and ge(p - thr, lw, w - cap, lp, small)
    if ok and ls > 0:
        ok = ls * p - la * kk - lu * w >= lim
    return ok
"""

_LAST_LE = """
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
"""

# ----------------------------------------------------------------------------------------------------
# Kernels. The merged list has n2 = 2L entries: keys Wm (int64), payloads pay (uint32: source index,
# top bit for the shifted copy), profits Pm, their exclusive prefix maxima PX. res (int64, on the
# device): 0 z, 1 the incumbent's merged index (-1: not improved), 2 its node (-2: not improved),
# 3 the next free node after it, 4 the threshold, 5 S*thr - lagc, 6 the undominated count.

_GATHER = """
def gather(pay, n2, P, dp, Pm):
    q = cuda.grid(1)
    if q < n2:
        s = pay[q]
        v = P[int64(s & LOW31)]
        if s >= FLIP:
            v += dp
        Pm[q] = v
"""

_INCUMBENT = """
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
"""

_FLAGS = """
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
"""

_SCATTER = """
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
"""

_IOTA = """
def iota(a, n):
    q = cuda.grid(1)
    if q < n:
        a[q] = q
"""

_PAIR = """
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
"""


@functools.cache
def kernels():
    """Compile (once) and return the step's kernels and the primitives they use: small blocks under
    the simulator, so that a test list of a few hundred states spans several blocks."""
    from numba import int32, int64, uint32, uint64

    mt, mi, scan, threads = sim_geometry(
        (pr.MERGE_THREADS, pr.MERGE_ITEMS, pr.SCAN_THREADS, THREADS), (4, 3, 8, 8)
    )
    prim = prc.cuda_kernels(mt, mi, scan)
    ns = {"cuda": cuda, "int32": int32, "int64": int64, "uint32": uint32, "uint64": uint64}
    ns.update(M32=_M32, S32=_S32, LOW31=_LOW31, FLIP=_FLIP, LOW32=np.int64(0xFFFFFFFF), THREADS=int(threads))
    dev = cuda.jit(device=True)
    for src in (_UMUL, _UGE, _GE, _KEEP, _LAST_LE):
        name = src.split("(", 1)[0].split()[-1]
        ns[name] = dev(compile_source(src, name, dict(ns)))
    ns["ub"] = prim.upper_bound
    return SimpleNamespace(
        prim=prim,
        threads=threads,
        gather=generated_kernel(_GATHER, "gather", dict(ns)),
        incumbent=generated_kernel(_INCUMBENT, "incumbent", dict(ns)),
        flags=generated_kernel(_FLAGS, "flags", dict(ns)),
        scatter=generated_kernel(_SCATTER, "scatter", dict(ns)),
        iota=generated_kernel(_IOTA, "iota", dict(ns)),
        pair=generated_kernel(_PAIR, "pair", dict(ns)),
    )


def _blocks(n, threads):
    """Blocks of ``threads`` covering n elements (at least one)."""
    return max(1, (n + threads - 1) // threads)


class DeviceList:
    """A search's list and node arrays on the device: two rows of ``(W, P, N, K)`` (the current one
    ``cur``), the merge buffers, the node arrays ``par``, ``itm`` and the items ``ws``, ``ps``.
    ``size``: the states a row holds (a step needs ``2L ≤ size``); ``nodes``: the node arrays'."""

    #: device bytes per state of room: two rows (three int64 and an int32 each), the source indices
    #: (uint32) and the merge buffers (keys, profits, prefix maxima, flags, offsets: int64; payloads)
    BYTES_PER_STATE = 2 * (3 * 8 + 4) + 4 + 5 * 8 + 4

    def __init__(self, ws, ps, size: int, nodes: int):
        self.k = kernels()
        self.ws = cuda.to_device(ws)
        self.ps = cuda.to_device(ps)
        self.size = 0
        self.nodes = 0
        self.cur = 0
        self.res = cuda.device_array(8, np.int64)
        self._alloc_lists(size)
        self._alloc_nodes(nodes)

    @staticmethod
    def bytes_needed(size: int, nodes: int) -> int:
        """Device bytes for lists of ``size`` states a row and ``nodes`` nodes."""
        return DeviceList.BYTES_PER_STATE * size + 16 * nodes

    @staticmethod
    def fits(size: int, nodes: int) -> bool:
        """Whether lists and nodes of these sizes fit in half the free GPU memory."""
        return DeviceList.bytes_needed(size, nodes) <= memory_info()[0] // 2

    def _alloc_lists(self, size):
        """Fresh rows and merge buffers of ``size`` states (the source indices filled in)."""
        k = self.k
        self.W = [cuda.device_array(size, np.int64) for _ in range(2)]
        self.P = [cuda.device_array(size, np.int64) for _ in range(2)]
        self.N = [cuda.device_array(size, np.int64) for _ in range(2)]
        self.K = [cuda.device_array(size, np.int32) for _ in range(2)]
        self.idx = cuda.device_array(size, np.uint32)
        k.iota[_blocks(size, k.threads), k.threads](self.idx, np.int64(size))
        self.Wm = cuda.device_array(size, np.int64)
        self.pay = cuda.device_array(size, np.uint32)
        self.Pm = cuda.device_array(size, np.int64)
        self.PX = cuda.device_array(size, np.int64)
        self.v = cuda.device_array(size, np.int64)
        self.off = cuda.device_array(size, np.int64)
        self.size = size

    def _alloc_nodes(self, nodes):
        """Fresh node arrays of ``nodes`` entries."""
        self.par = cuda.device_array(nodes, np.int64)
        self.itm = cuda.device_array(nodes, np.int64)
        self.nodes = nodes

    def upload(self, W, P, N, K, L: int, par, itm, nn: int):
        """The current row from host arrays ``[:L]`` (K None: the counts are not kept) and the nodes
        ``[:nn]``."""
        c = self.cur
        if L:
            self.W[c][:L].copy_to_device(np.ascontiguousarray(W[:L]))
            self.P[c][:L].copy_to_device(np.ascontiguousarray(P[:L]))
            self.N[c][:L].copy_to_device(np.ascontiguousarray(N[:L]))
            if K is not None:
                self.K[c][:L].copy_to_device(np.ascontiguousarray(K[:L]))
        if nn:
            self.par[:nn].copy_to_device(np.ascontiguousarray(par[:nn]))
            self.itm[:nn].copy_to_device(np.ascontiguousarray(itm[:nn]))

    def download(self, L: int, counted: bool):
        """The current row's ``(W, P, N, K)`` ``[:L]`` as host arrays (K None unless counted)."""
        c = self.cur
        if L == 0:
            z = np.zeros(0, np.int64)
            return z, z, z, (np.zeros(0, np.int32) if counted else None)
        out = [a[c][:L].copy_to_host() for a in (self.W, self.P, self.N)]
        out.append(self.K[c][:L].copy_to_host() if counted else None)
        return tuple(out)

    def download_nodes(self, nn: int):
        """The node arrays ``par``, ``itm`` ``[:nn]`` as host arrays."""
        if nn == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return self.par[:nn].copy_to_host(), self.itm[:nn].copy_to_host()

    def grow_lists(self, size: int, L: int, counted: bool):
        """Room for ``size`` states a row, keeping the current row's ``L`` states."""
        W, P, N, K = (a[self.cur] for a in (self.W, self.P, self.N, self.K))
        self._alloc_lists(size)
        c = self.cur
        if L:
            self.W[c][:L].copy_to_device(W[:L])
            self.P[c][:L].copy_to_device(P[:L])
            self.N[c][:L].copy_to_device(N[:L])
            if counted:
                self.K[c][:L].copy_to_device(K[:L])

    def replace_nodes(self, par, itm, nn: int, nodes: int):
        """Node arrays of ``nodes`` entries holding the host's ``[:nn]`` (after a collection)."""
        if nodes != self.nodes:
            self._alloc_nodes(nodes)
        if nn:
            self.par[:nn].copy_to_device(np.ascontiguousarray(par[:nn]))
            self.itm[:nn].copy_to_device(np.ascontiguousarray(itm[:nn]))

    def set_nodes(self, N, L: int):
        """The current row's node ids from the host (after a collection remapped them)."""
        if L:
            self.N[self.cur][:L].copy_to_device(np.ascontiguousarray(N[:L]))

    def node_of(self, q: int) -> int:
        """The node id of the current row's state q."""
        return int(self.N[self.cur][q : q + 1].copy_to_host()[0])

    def put_node(self, nn: int, parent: int, item: int):
        """Node ``nn`` := (parent, item)."""
        self.par[nn : nn + 1].copy_to_device(np.array([parent], np.int64))
        self.itm[nn : nn + 1].copy_to_device(np.array([item], np.int64))


def step_cuda(d: DeviceList, L, dw, dp, dk, j, cap, z, gp, target, bnd, small, lag, lagc, nn):
    """One step on the device (the module doc; :func:`gpudp.problems.knapsack.sparse.kernels.step`'s
    arguments): the current row ``d.cur`` of L states, merged and fathomed into the other row, which
    becomes current; the item counts ``K`` are read and written where the states' relaxation is on
    (``lag[0] > 0``), as on the CPU. Needs ``2L ≤ d.size`` and ``nn + L + 2 ≤ d.nodes``. Returns
    ``(merged, length, nn, z, znode)`` as the CPU step does (two small copies to the host)."""
    k = d.k
    c, o = d.cur, 1 - d.cur
    n2 = 2 * L
    th = k.threads
    blocks = _blocks(n2, th)
    i64 = np.int64
    prc.merge_shifted_cuda(d.W[c], d.idx, L, d.W[c], d.idx, L, dw, _FLIP, d.Wm, d.pay, kernels=k.prim)
    k.gather[blocks, th](d.pay, i64(n2), d.P[c], i64(dp), d.Pm)
    prc.exclusive_max_scan_cuda(d.Pm, n2, d.PX, -1, kernels=k.prim, want_total=False)
    ls, la, lu = (i64(x) for x in lag[:3])
    k.incumbent[1, 1](
        d.Wm, d.Pm, d.PX, d.pay, i64(n2), d.N[c], i64(cap), i64(z), i64(gp), i64(target), ls, i64(lagc),
        i64(j), i64(nn), d.par, d.itm, d.res,
    )  # fmt: skip
    rp, rw, lp, lw = (i64(x) for x in bnd)
    flag = i64(1 if lag[0] > 0 else 0)
    small = i64(1 if small else 0)
    k.flags[blocks, th](
        d.Wm, d.Pm, d.PX, d.pay, i64(n2), d.K[c], i64(dk), flag, i64(cap), rp, rw, lp, lw, small, ls, la, lu,
        d.res, d.v,
    )  # fmt: skip
    total = prc.exclusive_scan_cuda(d.v, n2, d.off, kernels=k.prim)
    k.scatter[blocks, th](
        d.Wm, d.Pm, d.pay, i64(n2), d.v, d.off, d.N[c], d.K[c], i64(dk), flag, i64(j), d.res, d.W[o], d.P[o],
        d.N[o], d.K[o], d.par, d.itm,
    )  # fmt: skip
    res = d.res.copy_to_host()
    d.cur = o
    m2 = total & 0xFFFFFFFF
    made = total >> 32
    znode = int(res[2]) if int(res[1]) >= 0 else -2
    return int(res[6]), int(m2), int(res[3]) + int(made), int(res[0]), znode


def pair_cuda(d: DeviceList, L, cap, s, t, n, z):
    """Pairing on the device list (:func:`gpudp.problems.knapsack.sparse.kernels.pair`): each item outside the
    core ``[s, t]`` with the heaviest state it fits with; returns ``(value, q, j)`` of the best pair
    worth more than z, the first in the CPU's order (items right of the core ascending, then left of
    it ascending), or None."""
    k = d.k
    nr = n - t - 1
    nout = nr + s
    if nout == 0 or L == 0:
        return None
    vals = cuda.device_array(nout, np.int64)
    qs = cuda.device_array(nout, np.int64)
    i64 = np.int64
    k.pair[_blocks(nout, k.threads), k.threads](
        d.W[d.cur], d.P[d.cur], i64(L), i64(cap), d.ws, d.ps, i64(t), i64(nr), i64(nout), vals, qs
    )
    v, q = vals.copy_to_host(), qs.copy_to_host()
    ok = q >= 0
    if not ok.any():
        return None
    cand = np.where(ok, v, np.iinfo(np.int64).min)
    x = int(np.argmax(cand))  # the first of the best
    if cand[x] <= z:
        return None
    j = t + 1 + x if x < nr else x - nr
    return int(cand[x]), int(q[x]), j


def warm():
    """Compile (or load from the disk cache) every kernel of the step and of the pairing, by one step
    and one pairing on a list of three states: a timed solve then pays none of it."""
    ws, ps = np.array([2, 3, 4], np.int64), np.array([3, 4, 5], np.int64)
    d = DeviceList(ws, ps, 8, 8)
    W, P = np.array([1, 3, 6], np.int64), np.array([1, 4, 7], np.int64)
    N, K = np.full(3, -1, np.int64), np.ones(3, np.int32)
    d.upload(W, P, N, K, 3, N, N, 0)
    lag = np.array([1, 0, 1, 0], np.int64)
    step_cuda(d, 3, 2, 3, 1, 0, 5, 0, 1, 0, np.array([3, 2, 5, 4], np.int64), True, lag, 0, 0)
    pair_cuda(d, 3, 5, 1, 1, 3, 0)
