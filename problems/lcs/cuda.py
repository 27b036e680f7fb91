"""The GPU twins of the bit-parallel pair kernels: one pair per thread, its masks and bit vectors in
the thread's local memory (:data:`LCS` here; the edit distance's in
:mod:`gpudp.problems.edit_distance.cuda`). Imported only when the cuda backend runs."""

from __future__ import annotations

import functools
import textwrap
from dataclasses import dataclass

import numpy as np

from gpudp.backends.cuda import cuda, generated_kernel, sim_geometry

from .bitparallel import Packed, lcs_of, table_of, word_step

THREADS = 128

# One pair per thread. The pattern's bit masks ``pm`` (a row of ``w`` words per symbol code) and the
# kernel's own bit vectors live in the thread's local memory; a text symbol's code comes through
# ``table`` when the batch holds raw bytes. ``{empty}``, ``{init}``, ``{step}`` and ``{finish}``
# are the algorithm's (:class:`PairKernel`).
_PAIRS = """
def pairs(pat, pat_off, txt, txt_off, sigma, table, mapped, out):
    p = cuda.grid(1)
    if p >= out.shape[0]:
        return
    a0 = pat_off[p]
    m = pat_off[p + 1] - a0
    b0 = txt_off[p]
    b1 = txt_off[p + 1]
    if m == 0 or b1 == b0:
        out[p] = {empty}
        return
    w = (m + 63) // 64
    pm = cuda.local.array(PMSIZE, numba.uint64)
    for q in range(sigma * w):
        pm[q] = numba.uint64(0)
    for i in range(m):
        x = pat[a0 + i]
        if mapped:
            x = table[x]
        pm[x * w + (i >> 6)] |= numba.uint64(1) << numba.uint64(i & 63)
{init}
    for k in range(b0, b1):
        x = txt[k]
        if mapped:
            x = table[x]
        row = x * w
{step}
{finish}
"""


@dataclass(frozen=True)
class PairKernel:
    """A bit-parallel algorithm over one pair, as lines of the kernel :data:`_PAIRS`: the value of
    a pair with an empty side, the vectors' set-up, one text symbol's step (``row``: its masks'
    offset in ``pm``), the result, and the device functions they call."""

    name: str
    empty: str
    init: str
    step: str
    finish: str
    functions: tuple = ()


LCS = PairKernel(
    name="lcs_lengths",
    empty="0",
    init="s = cuda.local.array(WORDS, numba.uint64)\nfor q in range(w):\n    s[q] = ~numba.uint64(0)",
    step="carry = numba.uint64(0)\nfor q in range(w):\n    s[q], carry = word_step(s[q], pm[row + q], carry)",
    finish="out[p] = lcs_of(s, w, m)",
    functions=(("word_step", word_step), ("lcs_of", lcs_of)),
)


@functools.cache
def _kernel(spec: PairKernel, sigma: int, words: int):
    """The kernel for at most ``sigma`` symbols and ``words`` 64-bit words a pattern (rounded up to
    powers of two by the caller, so that few are compiled)."""
    import numba

    ns = {
        "cuda": cuda,
        "numba": numba,
        "WORDS": words,
        "PMSIZE": sigma * words,  # local.array takes a constant, not an expression
        **dict(spec.functions),
    }
    src = _PAIRS.format(
        empty=spec.empty,
        init=textwrap.indent(spec.init, "    "),
        step=textwrap.indent(spec.step, "        "),
        finish=textwrap.indent(spec.finish, "    "),
    ).replace("def pairs(", f"def {spec.name}(")
    return generated_kernel(src, spec.name, ns)


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


def launch(packed: Packed, spec: PairKernel = LCS) -> Launch:
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
    kernel = _kernel(spec, _pow2(packed.sigma), _pow2(packed.max_words))
    args = (d_pat, cuda.to_device(packed.pat_off), d_txt, cuda.to_device(packed.txt_off))
    args += (packed.sigma, cuda.to_device(packed.table), packed.mapped)
    d_out = cuda.device_array(n, np.int64)
    threads = sim_geometry(THREADS, 32)
    start, end = cuda.event(), cuda.event()
    start.record()
    kernel[(n + threads - 1) // threads, threads](*args, d_out)
    end.record()
    return Launch(n, d_out, start, end)
