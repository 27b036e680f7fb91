"""The edit distance's batch kernel on the CPU (numba, every core: :func:`.bitparallel.distances_cpu`),
the ``edit_distance.distances`` family's lowering (:mod:`gpudp.lowering`) that
:func:`gpudp.problems.lcs.batch.run` launches; its GPU twin is in :mod:`.cuda`."""

from __future__ import annotations

from gpudp.problems.lcs.cpu import Computed, computed

from . import bitparallel

__all__ = ["launch"]


def launch(packed) -> Computed:
    """The edit distance of every pair of ``packed``, computed now."""
    return computed(bitparallel.distances_cpu, packed)
