"""Held-Karp batches on the GPU (:func:`launch`): one thread block an instance, all the instances of
a size and value type in one launch. Imported only when the cuda backend runs; the host side
(intake, checks, results) is :mod:`gpudp.problems.tsp.batch`.

Block ``k`` sweeps instance ``k`` layer by layer with the single solve's cell
(:func:`gpudp.problems.tsp.kernels.layer`): its threads take the cells of a layer in turn (thread
``i`` cells ``i, i + threads, ...``), a barrier after each layer. The two layers of values alternate
in one buffer of ``2 * width`` values: in shared memory (dynamic, opted in beyond 48 KiB) when it
fits a block's shared memory (int64 or float64 values: up to 14 cities on an H100), else in the
block's slice of a device array. The decisions (one byte a cell, ``m 2^(m-1)`` an instance) go to
device memory; after the last layer thread 0 picks the best last city and walks the decisions back
(:func:`gpudp.problems.tsp.kernels.close`), so that only the lengths and the tours (a byte a
city) come back to the host.

A launch holds as many instances as keep its device memory (matrices, decisions, layers in device
memory, tours) within :data:`DEVICE_SHARE` of the free device memory; all launches are queued on one
stream and the host is free until :meth:`Launch.finish`.

Under the CUDA simulator a block has :data:`SIM_THREADS` threads and shared memory holds
:data:`SIM_SMEM` bytes, so that tiny test instances take both buffers and several cells a thread.
"""

from __future__ import annotations

import numpy as np

from gpudp.backends.cuda import (
    coop_blocks,
    cuda,
    event,
    generated_kernel,
    memory_info,
    shared_memory_optin,
    sim_geometry,
    stream,
)
from gpudp.kernel import factory

from .kernels import close, layer

__all__ = ["launch", "Launch", "THREADS", "DEVICE_SHARE"]

#: threads a block (at most; fewer for narrow layers, at least a warp)
THREADS = 256
SIM_THREADS = 4
#: the share of the free device memory one launch may take
DEVICE_SHARE = 0.5
SIM_SMEM = 128

_KERNEL = """
def tsp_many(D, binom, poff, width, parents, layers, values, tours):
    k = cuda.blockIdx.x
    th = cuda.threadIdx.x
    nt = cuda.blockDim.x
    m = binom.shape[0] - 1
    {buf}
    d = D[k]
    par = parents[k]
    for t in range(m):
        layer(t, th, nt, buf, width, par, poff, binom, d)
        cuda.syncthreads()
    if th == 0:
        values[k] = close(buf, width, par, poff, binom, d, tours[k])
"""


@factory("tsp.cuda")
def _kernel(vt: str, shared: bool):
    """The kernel for values of type ``vt`` ("int64" or "float64"), its two layers in shared memory
    or in device memory (``layers[k]``)."""
    import numba

    buf = "buf = cuda.shared.array(0, VT)" if shared else "buf = layers[k]"
    ns = {"cuda": cuda, "VT": getattr(numba, vt), "layer": layer, "close": close}
    return generated_kernel(_KERNEL.format(buf=buf), "tsp_many", ns)


class _Chunk:
    """One launch: instances ``a .. b - 1`` of a group, their device arrays."""

    def __init__(self, group, a: int, b: int):
        self.group, self.a, self.b = group, a, b
        self.d_values = self.d_tours = self.args = None


class Launch:
    """A batch on its way through the GPU: :func:`launch` queues it, :meth:`finish` waits for it."""

    def __init__(self, groups, chunks, start, end, info, tick):
        self.groups, self.chunks, self.start, self.end, self.info = groups, chunks, start, end, info
        self.tick = tick
        #: what goes to the batch's ``stats.extra``: the launches' figures
        self.figures = {"cuda": info}

    def finish(self) -> tuple[list, float]:
        """``([(values, tours) a group], kernel seconds)``: the lengths (the group's value type)
        and tours (int8, a row an instance) in the groups' order, and the seconds from the first
        launch's start to the last one's end (CUDA events; 0 under the simulator); ``tick`` is
        given all the instances once they are back."""
        out = [(np.zeros(len(g), g.D.dtype), np.zeros((len(g), g.n), np.int8)) for g in self.groups]
        if not self.chunks:
            self.tick(sum(len(g) for g in self.groups))
            return out, 0.0
        self.end.synchronize()
        where = {id(g): i for i, g in enumerate(self.groups)}
        for ch in self.chunks:
            values, tours = out[where[id(ch.group)]]
            values[ch.a : ch.b] = ch.d_values.copy_to_host()
            tours[ch.a : ch.b] = ch.d_tours.copy_to_host()
        try:
            seconds = self.start.elapsed_time(self.end) / 1e3
        except Exception:  # the simulator's events carry no time
            seconds = 0.0
        self.tick(sum(len(g) for g in self.groups))
        return out, max(seconds, 0.0)


def launch(groups, tick=lambda k: None) -> Launch:
    """Queue the Held-Karp of every instance of ``groups`` (:class:`gpudp.problems.tsp.batch.Group`:
    ``n`` cities, matrices ``D`` int64 or float64) on the GPU, a launch a group (more where a group
    exceeds :data:`DEVICE_SHARE` of the free device memory); :meth:`Launch.finish` calls ``tick(k)``
    with the ``k`` instances done."""
    budget = int(memory_info()[0] * DEVICE_SHARE)
    smem_max = shared_memory_optin(SIM_SMEM)
    threads_max = sim_geometry(THREADS, SIM_THREADS)
    s = stream()
    start, stop = event(), event()
    start.record(s)
    chunks, info = [], {"launches": 0, "threads": set(), "shared_bytes_max": 0, "device_layers": 0}
    for g in groups:
        binom, poff, width = g.geometry
        item = g.D.dtype.itemsize
        smem = 2 * width * item
        shared = smem <= smem_max
        threads = int(min(threads_max, max(sim_geometry(32, 1), 1 << (width - 1).bit_length())))
        per = g.n * g.n * item + int(poff[-1]) + g.n + item + (0 if shared else smem)
        step = max(1, budget // per)
        d_binom, d_poff = cuda.to_device(binom, stream=s), cuda.to_device(poff, stream=s)
        kernel = _kernel(g.D.dtype.name, shared)
        for a in range(0, len(g), step):
            ch = _Chunk(g, a, min(a + step, len(g)))
            c = ch.b - ch.a
            d_D = cuda.to_device(np.ascontiguousarray(g.D[ch.a : ch.b]), stream=s)
            d_par = cuda.device_array((c, int(poff[-1])), np.int8, stream=s)
            d_layers = cuda.device_array((1, 1) if shared else (c, 2 * width), g.D.dtype, stream=s)
            ch.d_values = cuda.device_array(c, g.D.dtype, stream=s)
            ch.d_tours = cuda.device_array((c, g.n), np.int8, stream=s)
            args = (d_D, d_binom, d_poff, width, d_par, d_layers, ch.d_values, ch.d_tours)
            kern, _ = coop_blocks(kernel, args, threads, 1 << 30, smem if shared else 0)
            kern[c, threads, s, smem if shared else 0](*args)
            ch.args = args  # alive until finish(): freeing device memory a queued kernel reads would wait
            chunks.append(ch)
            info["launches"] += 1
            info["device_layers"] += 0 if shared else c
        info["threads"].add(threads)
        info["shared_bytes_max"] = max(info["shared_bytes_max"], smem if shared else 0)
    stop.record(s)
    info["threads"] = sorted(info["threads"])
    return Launch(groups, chunks, start, stop, info, tick)
