"""The LCS's batch kernels on the CPU (numba, every core: :mod:`.bitparallel`), as the lowerings of
the ``lcs.lengths`` and ``lcs.subsequences`` families (:mod:`gpudp.lowering`) that :mod:`.batch` and
:mod:`.subsequences` run; their GPU twins are in :mod:`.cuda`."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

import numpy as np

from gpudp.errors import CheckError

from . import bitparallel
from .cross import cpu as cross_cpu

__all__ = ["Computed", "computed", "cross", "launch", "pair", "refusal", "subsequences"]


class Computed:
    """A batch's values, computed on the host when it was launched (nothing runs on meanwhile):
    :meth:`finish` gives them as a GPU launch's ``finish`` does."""

    def __init__(self, values: np.ndarray, seconds: float):
        self.values, self.seconds = values, seconds

    def finish(self) -> tuple[np.ndarray, float]:
        """``(values, kernel seconds)``."""
        return self.values, self.seconds


def computed(kernel: Callable, packed) -> Computed:
    """``kernel(packed)`` run now and timed."""
    t = time.perf_counter()
    values = kernel(packed)
    return Computed(values, time.perf_counter() - t)


def launch(packed) -> Computed:
    """The LCS length of every pair of ``packed`` (:func:`.bitparallel.lengths_cpu`)."""
    return computed(bitparallel.lengths_cpu, packed)


def cross(packed, lo: int, hi: int, out: np.ndarray, turned: bool) -> Computed:
    """The LCS length of every pattern of ``packed`` against every text, into ``out`` (a cross
    product: :func:`.cross.cpu.run`), computed now."""
    algorithm = (bitparallel.lcs_text, bitparallel.lcs_bounds)
    run = functools.partial(cross_cpu.run, *algorithm, lo=lo, hi=hi, out=out, turned=turned)
    return computed(run, packed)


def pair(ea: np.ndarray, eb: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """The ``lcs.pair`` lowering: one pair's LCS length and the increasing positions (int64) in
    ``ea`` and ``eb`` of one LCS, by the bit-vector recurrence with every column's vector kept and
    walked back (:func:`.bitparallel.subsequences_cpu`, one thread), checked by
    :func:`.bitparallel.check_subsequences`. Raises :class:`gpudp.CheckError` where the walk fails it."""
    packed = bitparallel.pack([(ea, eb)], table=True)
    one = np.zeros(1, np.int64)
    lengths, found = np.full(1, -1, np.int64), np.full(1, -1, np.int64)
    pos_a, pos_b = (np.empty(min(len(ea), len(eb)), np.int64) for _ in range(2))
    # one pair: no parallel region (solves on several Python threads must not share one)
    bitparallel.subsequences_cpu(packed, one, one, lengths, found, pos_a, pos_b, serial=True)
    fault = int(
        bitparallel.check_subsequences(packed, one, one, lengths, found, pos_a, pos_b, serial=True)[0]
    )
    if fault:
        raise CheckError(bitparallel.FAULTS[fault].format(found=found[0], length=lengths[0]))
    k = int(lengths[0])
    return k, pos_a[:k], pos_b[:k]


def refusal(packed, pl) -> str | None:
    """Why this backend cannot take the batch's subsequences: never (None), the host takes any."""
    return None


def subsequences(packed, pl, lengths, found, while_busy: Callable, extra: dict):
    """The lengths (into ``lengths``, ``found``) and positions of the pairs ``pl.order`` of the
    :class:`.subsequences.Plan` ``pl`` (:func:`.bitparallel.subsequences_cpu`), then
    ``while_busy()``: ``(pos_a, pos_b, kernel seconds)``; ``extra["vectors_and_walk_s"]``: the
    kernel's seconds."""
    t = time.perf_counter()
    pos_a, pos_b = np.empty(pl.size, pl.dtype), np.empty(pl.size, pl.dtype)
    bitparallel.subsequences_cpu(packed, pl.order, pl.start, lengths, found, pos_a, pos_b)
    kernel_s = extra["vectors_and_walk_s"] = time.perf_counter() - t
    while_busy()
    return pos_a, pos_b, kernel_s
