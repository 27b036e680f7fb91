"""One search of the sparse-state DP (:class:`Search`): its state lists, node array and scalars,
grown on demand, run in chunks by the compiled loop on the CPU or by the GPU list steps."""

from __future__ import annotations

import time

import numpy as np

from .items import Items
from .kernels import (
    BIG,
    BUDGET,
    DONE,
    NEED_LISTS,
    NEED_NODES,
    NSLOTS,
    ST_CUR,
    ST_GEN,
    ST_IMPROVED,
    ST_LEN,
    ST_LNEXT,
    ST_NN,
    ST_PAIRED,
    ST_RNEXT,
    ST_S,
    ST_T,
    ST_TARGET,
    ST_Z,
    ST_ZNODE,
    advance,
    collect,
    count_items,
    expand,
    fixed_items,
    next_item,
    pair_due,
)

__all__ = ["GPU_LIST", "GPU_BACK", "LIST_START", "NODE_START", "Search"]

#: a list of this many states goes to the GPU for its steps, where one may be used
#: (:class:`.gpu.Gpu`); it comes back below GPU_BACK states
GPU_LIST = 1 << 16
GPU_BACK = 1 << 14
#: initial room: states per list and nodes (both grow on demand; the tests shrink them)
LIST_START = 1024
NODE_START = 4096


class Search:
    """The state lists, the node array and the scalars of one search, grown on demand. A search
    with a ``target`` (a probe) keeps only the states that may reach ``max(z + gp, target)``."""

    def __init__(self, items: Items, greedy_x, z, target=0):
        self.items = items
        b = items.b
        # the greedy solution as a chain of nodes: the break solution plus its items past b
        extra = np.flatnonzero(greedy_x[b:]) + b
        lcap, ncap = LIST_START, max(NODE_START, 2 * len(extra) + 8)
        self.SW = np.zeros((2, lcap), np.int64)
        self.SP = np.zeros((2, lcap), np.int64)
        self.SN = np.zeros((2, lcap), np.int64)
        self.SK = np.zeros((2, 1), np.int32)  # the item counts: sized when counted (chunk)
        self.F = np.zeros(lcap, np.int8)
        self.par = np.zeros(ncap, np.int64)
        self.itm = np.zeros(ncap, np.int64)
        self.par[: len(extra)] = np.arange(-1, len(extra) - 1)
        self.itm[: len(extra)] = extra
        self.SW[0, 0], self.SP[0, 0], self.SN[0, 0] = items.wsb, items.psb, -1
        st = np.zeros(NSLOTS, np.int64)
        st[ST_S], st[ST_T], st[ST_LEN], st[ST_Z], st[ST_ZNODE], st[ST_NN] = (
            b,
            b - 1,
            1,
            z,
            len(extra) - 1,
            len(extra),
        )
        st[ST_RNEXT], st[ST_LNEXT], st[ST_TARGET] = b, b - 1, target
        self.st = st
        self.target = target
        self.collections = 0
        n = len(items.ws)
        self.GL = np.zeros(n + 1, np.int64)
        self.GR = np.zeros(n + 1, np.int64)
        self._lag = None
        self._counted = False
        self._bnd = np.zeros(4, np.int64)
        self.dev = None  # the list on the GPU (sparse_cuda.DeviceList) while it is large
        self._gpu_off = False  # no more GPU for this search (its memory)

    @property
    def z(self) -> int:
        """The incumbent's value."""
        return int(self.st[ST_Z])

    @property
    def generated(self) -> int:
        """The states this search has generated."""
        return int(self.st[ST_GEN])

    def _gains(self):
        """``GL``, ``GR`` of the states' relaxation (:func:`state_gains`): the items' gains,
        those fixed at this search's threshold left out."""
        it = self.items
        if self._lag is it.lag:
            return
        self._lag = it.lag
        if it.lag[0] == 0:
            return  # no relaxation: GL and GR are not read
        thr = max(self.z + it.gp, self.target)
        fixed = fixed_items(thr, it.ws, it.ps, it.cap, it.b, it.wsb, it.psb, it.small, it.flipub)
        g = np.where(fixed, 0, it.gain)
        self.GL[0] = 0
        np.cumsum(g, out=self.GL[1:])
        self.GR[-1] = 0
        self.GR[:-1] = np.cumsum(g[::-1])[::-1]

    def chunk(self, budget) -> int:
        """Run the search for about ``budget`` state operations: the compiled loop on the CPU, or the
        list steps on the GPU while the list is large (:meth:`_gpu_chunk`); makes room when asked.
        Returns its code (``DONE``: this search is over). The states' item counts are kept only
        while the states' relaxation is on (:func:`count_items` counts them when it starts)."""
        it = self.items
        counting = it.lag[0] > 0
        if self.dev is not None and counting != self._counted:
            self._leave_gpu()  # the counts start or stop on the host
        if self.dev is not None:
            self._gains()
            return self._gpu_chunk(budget)
        if not counting and self._counted:
            self._counted = False
            self.SK = np.zeros((2, 1), np.int32)
        elif counting and not self._counted:
            self.SK = np.zeros(self.SW.shape, np.int32)
            count_items(self.par, self.itm, self.SN, self.SK, self.st, it.b)
            self._counted = True
        self._gains()
        big = GPU_LIST if not self._gpu_off and it.gpu.may() else 0
        code = self._cpu_chunk(budget, big)
        if code == BIG:
            if it.gpu.allowed() and self._enter_gpu():
                return self._gpu_chunk(budget)
            self._gpu_off = self._gpu_off or not it.gpu.may()
            code = self._cpu_chunk(budget, 0)
        return code

    def _cpu_chunk(self, budget, big) -> int:
        """One call of :func:`expand` (``big``: the list length at which it hands over to the GPU,
        0: never), then the room it asked for."""
        it = self.items
        lists = (self.SW, self.SP, self.SN, self.SK, self.F, self.par, self.itm, self.st)
        bounds = (budget, it.small, it.ubound, it.gp, it.flipub, it.lag, self.GL, self.GR, big)
        code = expand(it.ws, it.ps, it.cap, it.b, it.wsb, it.psb, *lists, *bounds)
        if code == NEED_LISTS:  # a merge needs room for 2L states: 3L leaves room to grow
            self._grow_lists(3 * int(self.st[ST_LEN]) + 2)
        elif code == NEED_NODES:
            live = collect(self.par, self.itm, self.SN, self.st)
            self.collections += 1
            need = live + int(self.st[ST_LEN]) + 2  # as expand asks
            if need > len(self.par) or live > len(self.par) // 2:
                self._grow_nodes(max(2 * len(self.par), 2 * need))
        return code

    # -- the GPU list steps (problems/knapsack/sparse/cuda.py) ------------------------------------------

    def _device_room(self, size: int, nodes: int) -> bool:
        """Whether the device lists and node arrays of these sizes fit in half the free GPU memory."""
        from .cuda import DeviceList

        return DeviceList.fits(size, nodes)

    def _enter_gpu(self) -> bool:
        """Move the list and the nodes to the GPU (False, and the search stays on the CPU, where its
        arrays would not fit in half the free GPU memory)."""
        from .cuda import DeviceList

        it, st = self.items, self.st
        L, cur, nn = int(st[ST_LEN]), int(st[ST_CUR]), int(st[ST_NN])
        size, nodes = 3 * L + 2, max(len(self.par), 2 * (nn + L + 2))
        if not self._device_room(size, nodes):
            self._gpu_off = True
            it.gpu.note = f"the GPU's free memory does not hold a list of {L} states: on the CPU"
            return False
        t = time.perf_counter()
        self.dev = DeviceList(it.ws, it.ps, size, nodes)
        K = self.SK[cur] if self._counted else None
        self.dev.upload(self.SW[cur], self.SP[cur], self.SN[cur], K, L, self.par, self.itm, nn)
        it.gpu.seconds += time.perf_counter() - t
        return True

    def _leave_gpu(self):
        """Bring the list and the nodes back to the host arrays and free the device's."""
        d, st = self.dev, self.st
        t = time.perf_counter()
        L, cur, nn = int(st[ST_LEN]), int(st[ST_CUR]), int(st[ST_NN])
        W, P, N, K = d.download(L, self._counted)
        par, itm = d.download_nodes(nn)
        if self.SW.shape[1] < 2 * L + 2:
            self._grow_lists(3 * L + 2, keep=False)
        if len(self.par) < nn + L + 2:
            self._grow_nodes(2 * (nn + L + 2), keep=False)
        self.SW[cur, :L], self.SP[cur, :L], self.SN[cur, :L] = W, P, N
        if K is not None:
            self.SK[cur, :L] = K
        self.par[:nn], self.itm[:nn] = par, itm
        self.dev = None
        self.items.gpu.seconds += time.perf_counter() - t

    def _gpu_collect(self):
        """Drop the unreachable nodes (:func:`collect` on the host, as the CPU search does) and grow
        the device's node arrays where more than half is still live."""
        d, st = self.dev, self.st
        L, cur = int(st[ST_LEN]), int(st[ST_CUR])
        par, itm = d.download_nodes(int(st[ST_NN]))
        SN = np.zeros((2, max(L, 1)), np.int64)
        if L:
            SN[cur, :L] = d.N[d.cur][:L].copy_to_host()
        live = collect(par, itm, SN, st)
        self.collections += 1
        nodes = d.nodes
        need = live + L + 2
        if need > nodes or live > nodes // 2:
            nodes = max(2 * nodes, 2 * need)
            self._room(16 * nodes)
        d.replace_nodes(par, itm, live, nodes)
        d.set_nodes(SN[cur], L)

    def _gpu_chunk(self, budget) -> int:
        """The steps of :func:`expand` with :func:`.cuda.step_cuda` for :func:`step` and
        :func:`.cuda.pair_cuda` for :func:`pair`, while the list holds at least
        :data:`GPU_BACK` states; then the list goes back to the host."""
        from . import cuda as sparse_cuda

        it, st, d = self.items, self.st, self.dev
        ws, ps, n, b = it.ws, it.ps, len(it.ws), it.b
        t0 = time.perf_counter()
        work = 0
        code = BUDGET
        while True:
            L = int(st[ST_LEN])
            if L == 0 or st[ST_Z] >= it.ubound:
                code = DONE
                break
            if work >= budget:
                break
            j = next_item(ws, ps, it.cap, b, it.wsb, it.psb, it.gp, it.small, it.flipub, st, self._bnd)
            if j < 0:
                code = DONE
                break
            if L < GPU_BACK:
                break
            if 2 * L > d.size:
                if not self._device_room(3 * L + 2, d.nodes):
                    self._gpu_off = True
                    it.gpu.note = f"the GPU's free memory does not hold a list of {L} states: on the CPU"
                    break
                d.grow_lists(3 * L + 2, L, self._counted)
            if st[ST_NN] + L + 2 > d.nodes:
                self._gpu_collect()
            s = j if j < b else int(st[ST_S])
            t = j if j >= b else int(st[ST_T])
            dk = 1 if j >= b else -1
            lagc = int(it.lag[3] + self.GL[s] + self.GR[t + 1]) if it.lag[0] > 0 else 0
            m, m2, nn, z, znode = sparse_cuda.step_cuda(
                d, L, dk * int(ws[j]), dk * int(ps[j]), dk, j, it.cap, int(st[ST_Z]), it.gp,
                int(st[ST_TARGET]), self._bnd, it.small, it.lag, lagc, int(st[ST_NN]),
            )  # fmt: skip
            advance(st, j, b, L, m, m2, nn, z, znode)
            work += 2 * L + m
            it.gpu.steps += 1
            cost = pair_due(n, st)
            if cost > 0:
                work += cost
                self._gpu_pair()
        it.gpu.seconds += time.perf_counter() - t0
        if code == DONE or self.st[ST_LEN] < GPU_BACK or self._gpu_off:
            self._leave_gpu()
        return code

    def _gpu_pair(self):
        """:func:`pair` on the device list (:func:`.cuda.pair_cuda`); the new incumbent's node
        is written into the device's node arrays."""
        from .cuda import pair_cuda

        d, st, it = self.dev, self.st, self.items
        st[ST_PAIRED] += 1
        best = pair_cuda(d, int(st[ST_LEN]), it.cap, int(st[ST_S]), int(st[ST_T]), len(it.ws), int(st[ST_Z]))
        if best is not None:
            val, q, j = best
            nn = int(st[ST_NN])
            d.put_node(nn, d.node_of(q), j)
            st[ST_NN] = nn + 1
            st[ST_Z] = val
            st[ST_ZNODE] = nn
            st[ST_IMPROVED] += 1

    @staticmethod
    def _room(nbytes):
        """Refuse (MemoryError, caught by the solver) a growth past half of the memory this process
        may still use (cgroup and ulimit included), before the system would kill it."""
        from gpudp.memory import available_memory

        if nbytes > available_memory() // 2:
            raise MemoryError(f"the state lists would need {nbytes / 2**30:.2f} GiB more")

    def _grow_lists(self, size, keep=True):
        """Lists of ``size`` states a row, the current row's states copied where ``keep``."""
        self._room(57 * size)  # two rows of weights, profits, nodes (int64), counts (int32), flags
        cur, L = int(self.st[ST_CUR]), int(self.st[ST_LEN]) if keep else 0
        for name in ("SW", "SP", "SN", "SK") if self._counted else ("SW", "SP", "SN"):
            old = getattr(self, name)
            new = np.zeros((2, size), old.dtype)
            new[cur, :L] = old[cur, :L]
            setattr(self, name, new)
        self.F = np.zeros(size, np.int8)

    def _grow_nodes(self, size, keep=True):
        """Node arrays of ``size`` entries, the nodes in use copied where ``keep``."""
        self._room(2 * 8 * size)
        nn = int(self.st[ST_NN]) if keep else 0
        for name in ("par", "itm"):
            new = np.zeros(size, np.int64)
            new[:nn] = getattr(self, name)[:nn]
            setattr(self, name, new)

    def vector(self) -> np.ndarray:
        """The incumbent's 0/1 vector (items in efficiency order); from the device's nodes while the
        list is there."""
        par, itm = self.par, self.itm
        if self.dev is not None:
            par, itm = self.dev.download_nodes(int(self.st[ST_NN]))
        x = np.zeros(len(self.items.ws), np.int8)
        x[: self.items.b] = 1
        node = int(self.st[ST_ZNODE])
        while node >= 0:
            x[itm[node]] ^= 1
            node = int(par[node])
        return x
