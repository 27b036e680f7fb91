"""The GPU twin of :func:`.bitparallel.lengths_cpu`: one pair per thread, its ``PM`` table and bit
vector in the thread's local memory. Imported only when the cuda backend runs."""

from __future__ import annotations

import functools

import numpy as np

from gpudp.backends.cuda import cuda, generated_kernel, sim_geometry

from .bitparallel import Packed, lcs_of, word_step

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


def lengths(packed: Packed) -> tuple[np.ndarray, float]:
    """The LCS length of every pair, and the kernel's seconds (CUDA events)."""
    n = len(packed.pat_off) - 1
    out = np.zeros(n, np.int64)
    if n == 0:
        return out, 0.0
    kernel = _kernel(_pow2(packed.sigma), _pow2(packed.max_words))
    args = [cuda.to_device(x) for x in (packed.pat, packed.pat_off, packed.txt, packed.txt_off)]
    args += [packed.sigma, cuda.to_device(packed.table), packed.mapped]
    d_out = cuda.device_array(n, np.int64)
    threads = sim_geometry(THREADS, 32)
    start, end = cuda.event(), cuda.event()
    start.record()
    kernel[(n + threads - 1) // threads, threads](*args, d_out)
    end.record()
    end.synchronize()
    d_out.copy_to_host(out)
    try:
        seconds = start.elapsed_time(end) / 1e3
    except Exception:  # the simulator's events carry no time
        seconds = 0.0
    return out, max(seconds, 0.0)
