"""The interval batch on the CPU (:mod:`gpudp.many.intervals`): one generated ``njit(parallel=True)``
kernel, ``prange`` over the threads, each sweeping its instances (dealt by their work, largest first:
:func:`gpudp.many.cpu.deal`) whole, one after the other."""

from __future__ import annotations

import time

import numba
import numpy as np

from ...backends.cpu import PARALLEL_LOCK, cell_namespace, compiled
from ...backends.threads import rerun_lost
from ...cache import jit_generated
from ...codegen import fill
from ...jit import njit
from ...kernel import KernelFactory
from .. import source
from ..cpu import deal
from . import sweep_source

_INTERVAL_KERNELS = KernelFactory("many.cpu.intervals", "rec", "kinds", "nrt")


_RUN_INTERVALS = """def run_intervals(wstart, order, ids, shapes, toff, S, D, FL{pk}):
    done = 0  # workers finished: fewer where one's raise was lost (gpudp.backends.cpu)
    for w in prange(len(wstart) - 1):
        for p in range(wstart[w], wstart[w + 1]):
            q = order[p]
            {body}
        done += 1
    return done
"""


def interval_kernel(rec_cls, kinds, nrt: bool):
    """The interval batch's kernel of ``rec_cls`` for packed items of ``kinds`` (its sweep of an
    instance: :func:`gpudp.many.intervals.sweep_source`), built once per class, kinds and ``nrt``
    (the cell with numba's reference counting: :func:`gpudp.many.cpu.kernel`)."""
    k = _INTERVAL_KERNELS.lookup(rec=rec_cls, kinds=tuple(kinds), nrt=nrt)
    if not k.ready:
        src = fill(_RUN_INTERVALS, pk=source.packed_args(len(kinds)), body=sweep_source(rec_cls, kinds))
        ns = cell_namespace(rec_cls, nrt)
        k = k.keep(jit_generated(src, "run_intervals", ns, njit, "cpu", parallel=True))
    return k.fn


class IntervalRunner:
    """Sweeps a chunk of an interval batch (:mod:`gpudp.many.intervals`): a thread an instance,
    the instances dealt to the threads by their work."""

    def __init__(self, rec_cls, kinds):
        self.cls = rec_cls
        self.make = lambda nrt: interval_kernel(rec_cls, kinds, nrt)
        self.fn = None
        self.compile_seconds = 0.0
        self.launches = 0

    def __call__(self, ids, work, shapes, toff, S, D, FL, packed):
        """Sweep instances ``ids`` (``work``: each one's, for the dealing) into ``S``, ``D``, ``FL``."""
        wstart, order = deal(work, numba.get_num_threads())
        args = (ids, shapes, toff, S, D, FL, *packed)
        with PARALLEL_LOCK:
            if self.fn is None:  # the first call compiles (no worker: types only), timed apart
                t = time.perf_counter()
                self.fn = compiled(self.make, np.zeros(1, np.int64), np.zeros(0, np.int64), *args)
                self.compile_seconds = time.perf_counter() - t
            if self.fn(wstart, order, *args) != len(wstart) - 1:  # a worker's raise lost: all on one
                rerun_lost(self.cls, self.fn, np.array([0, len(order)], np.int64), order, *args)
        self.launches += 1
