"""The breadth-first search driver, on the host (the cuda path extends it): the frontier's cpu
lowering (:mod:`gpudp.lowering`, family ``"frontier"``: :func:`make_search` and :func:`compact`,
as :mod:`gpudp.frontier.cuda` has them). The host kernels it runs, :mod:`gpudp.frontier.cpu`, serve
both backends (the cuda search expands small levels on the host)."""

from __future__ import annotations

import time

import numpy as np

from . import cpu
from .nodes import FrontierResult, lowest, stride
from .ring import BLOCK_BYTES, Ring, RingFull

__all__ = ["DEFAULT_BATCH", "DEFAULT_CPU_THRESHOLD", "Search", "compact", "make_search"]

DEFAULT_CPU_THRESHOLD = 1024  # measured on the H100: see docs/knapsack_bb.md
DEFAULT_BATCH = 1 << 20


class TimeUp(Exception):
    """The search's time limit passed."""


def block_bytes(budget: int, batch: int, bpn: int) -> int:
    """Host block size of a search: the smallest power of two from BLOCK_BYTES up that holds a batch of
    full-width nodes (``bpn`` bytes each), but at most an eighth of the budget (coarse blocks would
    waste much of a small one)."""
    want = max(BLOCK_BYTES, 1 << (batch * bpn - 1).bit_length())
    return max(bpn, min(want, budget // 8))


class Search:
    """A breadth-first search on the host: every level is expanded by the CPU ``expand`` kernel.
    The cuda path (:class:`gpudp.frontier.cuda.CudaSearch`) overrides :meth:`_setup`, :meth:`_level`
    and :meth:`_sync_all` to put large levels on the GPU."""

    def __init__(self, problem, pool, host_budget_bytes, batch, cpu_threshold, time_limit):
        self.p = problem
        self.n = int(problem.n_vars)
        self.words = max(1, (self.n + 31) // 32)
        self.dtype = np.dtype(problem.dtype)
        self.slack = self.dtype.type(problem.slack)
        self.key_bits = int(problem.key_bits)
        self.sym = np.zeros(self.n, np.uint8)
        if problem.symmetric is not None:
            self.sym[:] = np.asarray(problem.symmetric, bool)
            self.sym[0] = 0
        self.batch = int(batch)
        self.cpu_threshold = int(cpu_threshold)
        self.time_limit = time_limit
        self.best = lowest(self.dtype)
        self.inc = None  # (level, f0, f1, bits)
        self._cpu_out = None
        bpn = 2 * self.dtype.itemsize + 4 * self.words
        self.max_nodes = int(host_budget_bytes // bpn)
        self.st = {
            "nodes_explored": 0,
            "largest_frontier": 1,
            "bytes_h2d": 0,
            "bytes_d2h": 0,
            "gpu_batches": 0,
            "gpu_levels": 0,
            "cpu_levels": 0,
            "streamed_levels": 0,
            "seconds_gpu": 0.0,
            "seconds_cpu": 0.0,
            "seconds_swap": 0.0,
            "seconds_streamed": 0.0,
            "bytes_per_node": bpn,
            "host_budget_bytes": int(host_budget_bytes),
            "host_budget_nodes": self.max_nodes,
            "largest_host_buffer": 0,
            "stopped": None,  # "time" or "memory" when open nodes remained
        }
        self.cpu_expand, self.child_c = cpu.kernels(problem.child)
        if self.max_nodes < 1:
            raise RingFull(f"host budget {host_budget_bytes} B is less than one node ({bpn} B)")
        block = block_bytes(self.max_nodes * bpn, self.batch, bpn)
        self.ring = Ring(self.dtype, self.words, self.max_nodes, block, pool)
        self.st["host_block_bytes"] = self.ring.block_bytes
        self.t0 = time.perf_counter()

    # -- helpers -------------------------------------------------------------------------
    def _timed_out(self):
        return self.time_limit is not None and time.perf_counter() - self.t0 > self.time_limit

    def _offer(self, value, level, f0, f1, bits):
        if value > self.best:
            self.best = value
            self.inc = (level, f0, f1, np.array(bits, np.uint32, copy=True))

    def _cpu_level(self, level, count):
        """Expand ``count`` ring nodes of ``level`` on the host; sons go to the ring's tail."""
        t = time.perf_counter()
        chunk = 1 << 16
        if self._cpu_out is None:
            self._cpu_out = (
                np.empty(2 * chunk, self.dtype),
                np.empty(2 * chunk, self.dtype),
                np.empty(2 * chunk * self.words, np.uint32),
                np.full(8 * chunk if self.key_bits else 1, -1, np.int64),
                np.empty(2 * chunk, np.int64),
            )
        out_f0, out_f1, out_flat, table, used = self._cpu_out
        s_out = stride(level + 1)
        out_bits = out_flat[: 2 * chunk * s_out].reshape(2 * chunk, s_out)
        wu = (level + 31) // 32
        done = 0
        while done < count:
            if level and self._timed_out():
                raise TimeUp()
            for seg in self.ring.pop(min(chunk, count - done)):
                m = len(seg.f0)
                cnt, best, barg = self.cpu_expand(
                    m,
                    level,
                    self.best,
                    self.slack,
                    seg.f0,
                    seg.f1,
                    seg.bits,
                    self.p.data,
                    self.n,
                    self.sym,
                    self.key_bits,
                    table,
                    used,
                    out_f0,
                    out_f1,
                    out_bits,
                )
                if barg >= 0 and best > self.best:
                    i, take = barg // 2, 1 - barg % 2
                    _, c0, c1, _, _ = self.child_c(level, seg.f0[i], seg.f1[i], take, self.p.data, self.n)
                    inc = np.zeros(self.words, np.uint32)
                    inc[:wu] = seg.bits[i, :wu]
                    inc[level >> 5] |= np.uint32(take << (level & 31))
                    self._offer(best, level, c0, c1, inc)
                self.ring.release(m)
                done += m
                self.st["nodes_explored"] += m
                self.ring.push(out_f0[:cnt], out_f1[:cnt], out_bits[:cnt])
        self.st["seconds_cpu"] += time.perf_counter() - t

    # -- placement (the cuda path overrides these) ------------------------------------------
    def _setup(self):
        pass

    def _level(self, level, m):
        """Expand the ``m`` nodes of ``level``; return how many sons survive (in the ring)."""
        self.st["cpu_levels"] += 1
        self._cpu_level(level, m)
        return self.ring.available

    def _sync_all(self):
        pass

    # -- driver --------------------------------------------------------------------------
    def run(self):
        p = self.p
        root_f0 = np.array([p.root[0]], self.dtype)
        root_f1 = np.array([p.root[1]], self.dtype)
        self.ring.push(root_f0, root_f1, np.zeros((1, 1), np.uint32))
        m = 1
        complete, message = True, "search complete: the incumbent is optimal"
        self._setup()
        level = 0
        try:
            for level in range(self.n):
                if m == 0:
                    break
                if level and self._timed_out():  # the root is always expanded: an incumbent
                    raise TimeUp()
                self.st["largest_frontier"] = max(self.st["largest_frontier"], m)
                m = self._level(level, m)
                self.st["largest_host_buffer"] = max(self.st["largest_host_buffer"], self.ring.used)
        except TimeUp:
            complete, self.st["stopped"] = False, "time"
            message = f"time limit of {self.time_limit} s reached at level {level}: open nodes remain"
        except RingFull as e:
            complete, self.st["stopped"] = False, "memory"
            message = (
                f"host budget exceeded at level {level}: {e} "
                f"({self.st['bytes_per_node']} B per node, budget {self.st['host_budget_bytes']} B); "
                "open nodes remained, so the incumbent is the best found, not a proven optimum"
            )
        finally:
            self._sync_all()  # no copy may still use a block when the ring gives them back
            self.st["largest_host_bytes"] = self.ring.largest_bytes
            self.st["host_blocks_new"] = self.ring.new_blocks
            self.st["host_blocks_reused"] = self.ring.reused_blocks
            self.st["seconds_host_alloc"] = self.ring.seconds_alloc
            self.ring.close()
        self.st["seconds"] = time.perf_counter() - self.t0
        if self.inc is None:
            return FrontierResult(None, -1, (), np.zeros(self.words, np.uint32), complete, message, self.st)
        lvl, f0, f1, bits = self.inc
        return FrontierResult(self.best, lvl, (f0, f1), bits, complete, message, self.st)


def make_search(problem, pool, host_budget_bytes, batch, cpu_threshold, time_limit, threads=None) -> Search:
    """A search with every level on the host (``threads``, the GPU's block size, is unused)."""
    return Search(problem, pool, host_budget_bytes, batch, cpu_threshold, time_limit)


def compact(values: np.ndarray, flags: np.ndarray, threads: int | None = None) -> np.ndarray:
    """``values[flags != 0]`` in order, by numpy (``threads`` is unused)."""
    return np.ascontiguousarray(values)[np.ascontiguousarray(flags, np.int8) != 0]
