"""The band encoder: the device half of the bands codec (:func:`encode_kernel`, driven by
:class:`BandEncoder` in :func:`gpudp.backends.cuda.run.run_plan`)."""

from __future__ import annotations

import numpy as np
from numba import cuda

from ...kernel import KernelFactory, load
from . import bands_code
from .driver import is_simulator, pinned_empty
from .kernels import CudaKernel, device_jit, generated_kernel

#: the kernels of this family built in this process (gpudp.kernel)
_KERNELS = KernelFactory("cuda.encode", "bits", kernel=CudaKernel)

#: threads per block of the band encoder (one block per layer, grid-stride over the chunk's layers)
ENCODE_THREADS = 1024


def encode_kernel(bits: int):
    """The band encoder of a chunk of layers (the device side of :class:`gpudp.store.BandStore`):
    one block per layer finds, with shared-memory atomics, the first group that differs from the
    layer's first and the last that differs from its last (edge bits extended as in
    :func:`gpudp.store.edge_word`), reserves room for the band in ``out`` with a global atomic, and
    copies the band there; ``hdr[r] = (lead groups, band groups, offset in out)``, ``runs[r]`` the two
    run values."""
    k = _KERNELS.lookup(bits=bits)
    if k.ready:
        return k.fn
    from ...codegen import compile_source

    ns = {"cuda": cuda, "np": np, "BITS": bits}
    ns["edge_word"] = device_jit(load(bands_code.edge_word, dict(ns), compile_source))
    ns["differs"] = device_jit(load(bands_code.differs, dict(ns), compile_source))
    return k.keep(load(bands_code.encode, ns, generated_kernel)).fn


class BandEncoder:
    """The device half of the bands codec in :func:`run_plan`: per slab, a compact buffer of band
    words, the chunk's headers and a word count on the device, their page-locked host copies."""

    def __init__(self, plan, bits, slab_words, compute, copier):
        self.plan, self.bits, self.compute, self.copier = plan, bits, compute, copier
        self.kernel = encode_kernel(bits)
        m = max((u1 - u0 for u0, u1 in plan.chunks), default=1)
        self.lo = cuda.to_device(plan.lo, stream=compute)
        self.hi = cuda.to_device(plan.hi, stream=compute)
        self.zero = cuda.to_device(np.zeros(1, np.int64), stream=compute)
        self.out, self.hdr, self.runs, self.count = [], [], [], []
        self.h_hdr, self.h_runs, self.h_count = [], [], []
        for _ in range(2):
            self.out.append(cuda.device_array(max(slab_words, 1), np.uint32, stream=compute))
            self.hdr.append(cuda.device_array((m, 3), np.int64, stream=compute))
            self.runs.append(cuda.device_array((m, 2 * bits), np.uint32, stream=compute))
            self.count.append(cuda.device_array(1, np.int64, stream=compute))
            self.h_hdr.append(pinned_empty((m, 3), np.int64))
            self.h_runs.append(pinned_empty((m, 2 * bits), np.uint32))
            self.h_count.append(pinned_empty(1, np.int64))
        self.blocks = 1 if is_simulator() else max(1, min(m, 4096))
        self.threads = 32 if is_simulator() else ENCODE_THREADS
        self.bytes_to_host = 0
        self.seconds = 0.0

    def launch(self, slot, u0, u1, slab, woff):
        """Encode the chunk's layers (on the compute stream, after the chunk's kernel)."""
        self.count[slot].copy_to_device(self.zero, stream=self.compute)
        self.kernel[self.blocks, self.threads, self.compute](
            u0,
            u1,
            slab,
            woff,
            int(self.plan.layout.woff[u0]),
            self.lo,
            self.hi,
            self.hdr[slot],
            self.runs[slot],
            self.out[slot],
            self.count[slot],
        )

    def headers_to_host(self, slot, m):
        """Copy the headers and the count out on the copy stream; the event that marks them done."""
        ready = cuda.event()
        ready.record(stream=self.compute)
        ready.wait(stream=self.copier)
        self.hdr[slot][:m].copy_to_host(self.h_hdr[slot][:m], stream=self.copier)
        self.runs[slot][:m].copy_to_host(self.h_runs[slot][:m], stream=self.copier)
        self.count[slot].copy_to_host(self.h_count[slot], stream=self.copier)
        done = cuda.event()
        done.record(stream=self.copier)
        return done

    def land(self, slot, u0, u1, store, staging):
        """With the headers on the host: copy the chunk's band words out, append them to the store."""
        m, bits = u1 - u0, self.bits
        n = int(self.h_count[slot][0])
        if n:
            self.out[slot][:n].copy_to_host(staging[:n], stream=self.copier)
            self.copier.synchronize()
        base = store.append(staging[:n])
        hdr, runs = self.h_hdr[slot][:m], self.h_runs[slot][:m]
        store.lead_n[u0:u1] = hdr[:, 0]
        store.band_n[u0:u1] = hdr[:, 1]
        store.band_off[u0:u1] = hdr[:, 2] + base
        store.lead_w[u0:u1] = runs[:, :bits]
        store.trail_w[u0:u1] = runs[:, bits:]
        self.bytes_to_host += n * 4 + hdr.nbytes + runs.nbytes + 8
