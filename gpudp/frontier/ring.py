"""The host FIFO of a search's open nodes (:class:`Ring`), in blocks drawn from a
:class:`gpudp.memory.BlockPool`."""

from __future__ import annotations

import time
from collections import deque
from typing import NamedTuple

import numpy as np

from ..memory import BlockPool

__all__ = ["BLOCK_BYTES", "Ring", "RingFull", "Segment"]

BLOCK_BYTES = 64 << 20  # the smallest host block of a search (see search.block_bytes)


class RingFull(Exception):
    """A push would take the ring past its host budget."""


class Segment(NamedTuple):
    """Consecutive nodes of one ring block: views of its storage, ``bits`` of shape ``(count, stride)``."""

    f0: np.ndarray
    f1: np.ndarray
    bits: np.ndarray


class _Block:
    """One host block: ``f0[cap]``, ``f1[cap]`` and node-major ``bits[cap, stride]`` in one buffer,
    holding the ring's nodes ``first .. first + filled - 1`` (sequence numbers)."""

    __slots__ = ("buf", "stride", "cap", "first", "filled", "f0", "f1", "bits")

    def __init__(self, buf, dtype, stride, first):
        self.buf, self.stride, self.first, self.filled = buf, stride, first, 0
        self.cap = buf.nbytes // (2 * dtype.itemsize + 4 * stride)
        n = self.cap * dtype.itemsize
        self.f0 = buf[:n].view(dtype)
        self.f1 = buf[n : 2 * n].view(dtype)
        self.bits = buf[2 * n : 2 * n + 4 * stride * self.cap].view(np.uint32).reshape(self.cap, stride)

    def segment(self, a, b) -> Segment:
        return Segment(self.f0[a:b], self.f1[a:b], self.bits[a:b])


class Ring:
    """A FIFO of nodes in host blocks of ``block_bytes`` bytes taken from a :class:`BlockPool`: at
    most ``max_cap`` nodes of ``words`` bit words in bytes (the host budget), in whole blocks.

    A block holds nodes of one *stride*, the bit words in use at their level (``push`` takes it from
    the width of ``bits``), so a run of nodes is one contiguous range of each of its three arrays and
    only the words in use are stored and copied. Pushes fill the last block and take a new one when it
    is full or the stride changes: growing costs one block from the pool, nothing is copied or
    re-allocated. ``pop`` hands out segments, each within one block, that stay reserved until
    ``release`` (an asynchronous copy may still read them); a block goes back to the pool once all its
    nodes are released. ``push`` raises :class:`RingFull` rather than exceed the budget; partly
    released or partly filled blocks count whole against it.
    """

    def __init__(self, dtype, words: int, max_cap: int, block_bytes: int | None = None, pool=None):
        if max_cap < 1:
            raise RingFull("the host budget holds not even one node")
        self.dtype, self.words = np.dtype(dtype), int(words)
        self.budget = int(max_cap) * self.bytes_per_node
        block = BLOCK_BYTES if block_bytes is None else int(block_bytes)
        self.block_bytes = max(self.bytes_per_node, min(block, self.budget))
        self.max_blocks = self.budget // self.block_bytes
        self.pool = BlockPool() if pool is None else pool
        self.pool.keep = self.budget  # the spare blocks worth keeping for the next search
        self.pool.trim(self.budget, self.block_bytes)
        self.blocks: deque[_Block] = deque()
        self.start = self.head = self.tail = 0  # sequence numbers: released, popped, pushed so far
        self.new_blocks = self.reused_blocks = self.largest_bytes = 0
        self.seconds_alloc = 0.0

    @property
    def bytes_per_node(self) -> int:
        """Bytes of a node of all ``words`` bit words."""
        return 2 * self.dtype.itemsize + 4 * self.words

    @property
    def available(self) -> int:
        """Nodes pushed and not yet popped."""
        return self.tail - self.head

    @property
    def used(self) -> int:
        """Nodes held: popped-but-unreleased and available."""
        return self.tail - self.start

    @property
    def nbytes(self) -> int:
        """Bytes of the blocks held."""
        return len(self.blocks) * self.block_bytes

    def _take(self, stride):
        t = time.perf_counter()
        buf, new = self.pool.take(self.block_bytes)
        self.seconds_alloc += time.perf_counter() - t
        self.new_blocks += new
        self.reused_blocks += not new
        block = _Block(buf, self.dtype, stride, self.tail)
        self.blocks.append(block)
        self.largest_bytes = max(self.largest_bytes, self.nbytes)
        return block

    def push_segments(self, count: int, stride: int) -> list[Segment]:
        """Reserve ``count`` slots of ``stride`` bit words at the tail; their segments, to be filled."""
        last = self.blocks[-1] if self.blocks else None
        room = last.cap - last.filled if last is not None and last.stride == stride else 0
        if count > room:
            per_block = self.block_bytes // (2 * self.dtype.itemsize + 4 * stride)
            need = len(self.blocks) + -(-(count - room) // per_block)
            if need > self.max_blocks:
                raise RingFull(
                    f"{self.used + count} nodes would take {need} blocks of {self.block_bytes} B, "
                    f"the host budget holds {self.max_blocks}"
                )
        segs = []
        while count > 0:
            if room == 0:
                last = self._take(stride)
                room = last.cap
            n = min(count, room)
            segs.append(last.segment(last.filled, last.filled + n))
            last.filled += n
            self.tail += n
            count -= n
            room -= n
        return segs

    def push(self, f0, f1, bits):
        """Append nodes; ``bits`` is ``(count, stride)``: each node's decision words in use."""
        o = 0
        for seg in self.push_segments(len(f0), bits.shape[1]):
            n = len(seg.f0)
            seg.f0[:] = f0[o : o + n]
            seg.f1[:] = f1[o : o + n]
            seg.bits[:] = bits[o : o + n]
            o += n

    def pop(self, count: int) -> list[Segment]:
        """Take up to ``count`` nodes from the head: their segments, reserved until ``release``."""
        count = min(count, self.available)
        segs = []
        for block in self.blocks:
            if count == 0:
                break
            a = self.head - block.first
            n = min(count, block.filled - a)
            if n > 0:
                segs.append(block.segment(a, a + n))
                self.head += n
                count -= n
        return segs

    def release(self, count: int):
        """Free the oldest ``count`` popped slots; blocks left with none go back to the pool."""
        if count > self.head - self.start:
            raise ValueError("release of nodes that were not popped")
        self.start += count
        while self.blocks and self.blocks[0].first + self.blocks[0].filled <= self.start:
            self.pool.give(self.blocks.popleft().buf)

    def close(self):
        """Give every block back to the pool; the ring is empty afterwards. No copy may still use them."""
        while self.blocks:
            self.pool.give(self.blocks.popleft().buf)
        self.start = self.head = self.tail
        self.pool.trim(self.budget, self.block_bytes)

    def gather(self, segs):
        """Host copies of the nodes of ``segs``: ``f0``, ``f1`` and ``bits[count, words]`` (zero past
        each segment's stride)."""
        count = sum(len(seg.f0) for seg in segs)
        f0, f1 = np.empty(count, self.dtype), np.empty(count, self.dtype)
        bits = np.zeros((count, self.words), np.uint32)
        o = 0
        for seg in segs:
            n, stride = seg.bits.shape
            f0[o : o + n], f1[o : o + n], bits[o : o + n, :stride] = seg.f0, seg.f1, seg.bits
            o += n
        return f0, f1, bits
