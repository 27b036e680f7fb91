"""The edit distance's batch kernel on the CPU (numba, every core: :func:`.bitparallel.distances_cpu`),
the ``edit_distance.distances`` family's lowering (:mod:`gpudp.lowering`) that
:func:`gpudp.problems.lcs.batch.run` launches; its GPU twin is in :mod:`.cuda`."""

from __future__ import annotations

import functools

import numpy as np

from gpudp.problems.lcs.cpu import Computed, computed
from gpudp.problems.lcs.cross import cpu as cross_cpu

from . import bitparallel

__all__ = ["cross", "launch"]


def launch(packed) -> Computed:
    """The edit distance of every pair of ``packed``, computed now."""
    return computed(bitparallel.distances_cpu, packed)


def cross(packed, lo: int, hi: int, out: np.ndarray, turned: bool) -> Computed:
    """The edit distance of every pattern of ``packed`` against every text, into ``out`` (a cross
    product: :func:`gpudp.problems.lcs.cross.cpu.run`), computed now."""
    algorithm = (bitparallel.levenshtein_text, bitparallel.levenshtein_bounds)
    run = functools.partial(cross_cpu.run, *algorithm, lo=lo, hi=hi, out=out, turned=turned)
    return computed(run, packed)
