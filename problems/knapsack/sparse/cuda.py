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

from types import SimpleNamespace

import numpy as np

from gpudp import primitives as pr
from gpudp.backends.cuda import cuda, generated_kernel, memory_info, sim_geometry
from gpudp.codegen import compile_source
from gpudp.kernel import factory, load
from gpudp.primitives import cuda as prc

from . import cuda_code as K

__all__ = ["DeviceList", "step_cuda", "pair_cuda", "kernels", "warm"]


#: threads a block of the element-wise kernels
THREADS = 256

_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_LOW31 = np.uint32(0x7FFFFFFF)
_FLIP = np.uint32(1 << 31)


@factory("knapsack.sparse.cuda")
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
    for fn in (K.umul, K.uge, K.ge, K.keep, K.last_le):
        ns[fn.__name__] = dev(load(fn, dict(ns), compile_source))
    ns["ub"] = prim.upper_bound
    return SimpleNamespace(
        prim=prim,
        threads=threads,
        gather=load(K.gather, dict(ns), generated_kernel),
        incumbent=load(K.incumbent, dict(ns), generated_kernel),
        flags=load(K.flags, dict(ns), generated_kernel),
        scatter=load(K.scatter, dict(ns), generated_kernel),
        iota=load(K.iota, dict(ns), generated_kernel),
        pair=load(K.pair, dict(ns), generated_kernel),
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
