"""The GPU twin of :func:`.bitparallel.lengths_cpu`: one pair per thread, its ``PM`` table and bit
vector in the thread's local memory. Imported only when the cuda backend runs."""

from __future__ import annotations

import functools

import numpy as np

from gpudp.backends.cuda import cuda, generated_kernel, sim_geometry

from .bitparallel import Packed, lcs_of, table_of, word_step

THREADS = 128

_LENGTHS = """
def lengths(pat, pat_off, txt, txt_off, sigma, table, mapped, out):
    p = cuda.grid(1)
    if p >= out.shape[0]:
        return
    a0 = pat_off[p]
    m = pat_off[p + 1] - a0
    b0 = txt_off[p]
    b1 = txt_off[p + 1]
    if m == 0 or b1 == b0:
        out[p] = 0
        return
    w = (m + 63) // 64
    pm = cuda.local.array(PMSIZE, numba.uint64)
    s = cuda.local.array(WORDS, numba.uint64)
    for q in range(sigma * w):
        pm[q] = numba.uint64(0)
    for q in range(w):
        s[q] = ~numba.uint64(0)
    for i in range(m):
        x = pat[a0 + i]
        if mapped:
            x = table[x]
        pm[x * w + (i >> 6)] |= numba.uint64(1) << numba.uint64(i & 63)
    for k in range(b0, b1):
        x = txt[k]
        if mapped:
            x = table[x]
        row = x * w
        carry = numba.uint64(0)
        for q in range(w):
            s[q], carry = word_step(s[q], pm[row + q], carry)
    out[p] = lcs_of(s, w, m)
"""


@functools.cache
def _kernel(sigma: int, words: int):
    """The kernel for at most ``sigma`` symbols and ``words`` 64-bit words a pattern (rounded up to
    powers of two by the caller, so that few are compiled)."""
    import numba

    ns = {
        "cuda": cuda,
        "numba": numba,
        "WORDS": words,
        "PMSIZE": sigma * words,  # local.array takes a constant, not an expression
        "word_step": word_step,
        "lcs_of": lcs_of,
    }
    return generated_kernel(_LENGTHS, "lengths", ns)


def _pow2(x: int) -> int:
    return 1 << max(int(x) - 1, 0).bit_length()


_PRESENT = """
def present(x, n, flags):
    seen = cuda.shared.array(256, numba.int32)
    t = cuda.threadIdx.x
    for v in range(t, 256, cuda.blockDim.x):
        seen[v] = 0
    cuda.syncthreads()
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        seen[x[i]] = 1
    cuda.syncthreads()
    for v in range(t, 256, cuda.blockDim.x):
        if seen[v] != 0:
            flags[v] = 1
"""


@functools.cache
def _present_kernel():
    import numba

    return generated_kernel(_PRESENT, "present", {"cuda": cuda, "numba": numba})


class Launch:
    """A batch on its way through the GPU: :func:`launch` starts it, :meth:`finish` waits for it."""

    def __init__(self, n, d_out, start, end):
        self.n, self.d_out, self.start, self.end = n, d_out, start, end

    def finish(self) -> tuple[np.ndarray, float]:
        """The LCS length of every pair, and the kernel's seconds (CUDA events)."""
        out = np.zeros(self.n, np.int64)
        if self.n == 0:
            return out, 0.0
        self.end.synchronize()
        self.d_out.copy_to_host(out)
        try:
            seconds = self.start.elapsed_time(self.end) / 1e3
        except Exception:  # the simulator's events carry no time
            seconds = 0.0
        return out, max(seconds, 0.0)


def launch(packed: Packed) -> Launch:
    """Copy the batch to the device and start its kernel; the host is free until ``finish()``.

    A byte batch packed without its table gets it here: the bytes present are found on the device
    (one pass, a flag per byte value), so the host never reads the sequences."""
    n = len(packed.pat_off) - 1
    if n == 0:
        return Launch(0, None, None, None)
    d_pat, d_txt = cuda.to_device(packed.pat), cuda.to_device(packed.txt)
    if packed.mapped and packed.sigma == 0:
        flags = cuda.to_device(np.zeros(256, np.int32))
        threads = sim_geometry(256, 32)
        for d in (d_pat, d_txt):
            blocks = max(1, min(4096, -(-len(d) // threads)))
            _present_kernel()[blocks, threads](d, len(d), flags)
        packed.table, packed.sigma = table_of(flags.copy_to_host() != 0)
    kernel = _kernel(_pow2(packed.sigma), _pow2(packed.max_words))
    args = (d_pat, cuda.to_device(packed.pat_off), d_txt, cuda.to_device(packed.txt_off))
    args += (packed.sigma, cuda.to_device(packed.table), packed.mapped)
    d_out = cuda.device_array(n, np.int64)
    threads = sim_geometry(THREADS, 32)
    start, end = cuda.event(), cuda.event()
    start.record()
    kernel[(n + threads - 1) // threads, threads](*args, d_out)
    end.record()
    return Launch(n, d_out, start, end)


def lengths(packed: Packed) -> tuple[np.ndarray, float]:
    """The LCS length of every pair, and the kernel's seconds."""
    return launch(packed).finish()
