"""The cross product on the GPU: a thread a cell of the result, the patterns' masks built once on
the device. Imported only when the cuda backend runs.

The two sides' symbols are copied to the device once. The patterns are taken in chunks of rows of
the result (each chunk's results and masks within :data:`CHUNK_BYTES`, and a quarter of the free
device memory): a kernel builds the masks of a chunk's patterns (a thread a pattern,
:func:`.cuda_code.pattern_masks`), then the cross kernel (:data:`_CROSS`, filled with a
:class:`gpudp.problems.lcs.cuda.PairKernel`'s lines) runs a thread a cell, its block's threads on
one pattern (its masks read by all of them) and on consecutive texts, each text's symbols through
the thread's own bit vectors; the score cut off (:func:`.bitparallel.clamp`) is written straight
into the chunk's part of the result. Chunks alternate between two streams and two sets of buffers,
so that a chunk's copy to the host overlaps the next one's kernels.
"""

from __future__ import annotations

import numpy as np

from gpudp.backends.cuda import cuda, event, generated_kernel, memory_info, sim_geometry, stream, stride_grid
from gpudp.codegen import fill
from gpudp.kernel import factory, load

from .. import cuda_code
from ..bitparallel import Packed, clamp, ensure_table, masks

__all__ = ["CHUNK_BYTES", "CrossLaunch", "elapsed", "launch", "row_chunks"]

#: threads a block: one pattern, consecutive texts (8 in the simulator, so that tiny tests still
#: make several blocks)
THREADS = sim_geometry(128, 8)
#: device bytes one chunk's results and pattern masks may take at most (two chunks are in flight)
CHUNK_BYTES = 2 << 30
#: blocks along the texts and along the patterns at most (the kernel strides over the rest)
MAX_GRID = sim_geometry((1 << 16, 1 << 15), (3, 3))

# Pattern ``i`` (rows ``r0 .. r1 - 1`` of the chunk) against text ``j``: its value goes to
# ``out[(i - r0) * rs + j * cs]``, not computed where the bounds of its lengths (``{lower}``,
# ``{upper}``) give the same cut-off score. ``{init}``, ``{step}`` and ``{value}`` are the
# algorithm's (:class:`gpudp.problems.lcs.cuda.PairKernel`); ``pm[row + q]`` is word ``q`` of the
# pattern's mask of the text symbol's code.
_CROSS = """
def cross(pat_off, pm, pm_off, txt, txt_off, table, mapped, r0, r1, lo, hi, out, rs, cs):
    n_txt = txt_off.shape[0] - 1
    first = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    stride = cuda.blockDim.x * cuda.gridDim.x
    for i in range(r0 + cuda.blockIdx.y, r1, cuda.gridDim.y):
        m = pat_off[i + 1] - pat_off[i]
        w = (m + 63) // 64
        base = pm_off[i - r0]
        for j in range(first, n_txt, stride):
            b0 = txt_off[j]
            b1 = txt_off[j + 1]
            p = (i - r0) * rs + j * cs
            n = b1 - b0
            v = clamp({lower}, lo, hi)
            if v == clamp({upper}, lo, hi):  # the lengths decide it: an empty side, or the cutoff
                out[p] = v
                continue
            {init}
            for k in range(b0, b1):
                x = txt[k]
                if mapped:
                    x = table[x]
                row = base + x * w
                {step}
            out[p] = clamp({value}, lo, hi)
"""


@factory("lcs.cuda.cross")
def _cross_kernel(spec, words: int):
    """The cross kernel of the algorithm ``spec`` for patterns of at most ``words`` 64-bit words (a
    power of two, so that few are compiled)."""
    import numba

    ns = {"cuda": cuda, "numba": numba, "WORDS": words, "clamp": clamp, **dict(spec.functions)}
    src = fill(_CROSS, lower=spec.lower, upper=spec.upper, init=spec.init, step=spec.step, value=spec.value)
    return generated_kernel(src.replace("def cross(", f"def {spec.name}_cross("), f"{spec.name}_cross", ns)


@factory("lcs.cuda.pattern_masks")
def _masks_kernel():
    return load(cuda_code.pattern_masks, {"cuda": cuda, "masks": masks}, generated_kernel)


def _pow2(x: int) -> int:
    return 1 << max(int(x) - 1, 0).bit_length()


def row_chunks(row_bytes: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Runs of rows ``[r0, r1)`` in order, each of at most ``budget`` bytes (``row_bytes[r]`` a row)
    unless it is a single row."""
    ends = np.cumsum(row_bytes)
    out, r0, before = [], 0, 0
    while r0 < len(row_bytes):
        r1 = max(int(np.searchsorted(ends, before + budget, side="right")), r0 + 1)
        out.append((r0, r1))
        before, r0 = int(ends[r1 - 1]), r1
    return out


class CrossLaunch:
    """A cross product on its way through the GPU: :func:`launch` starts it (its first two chunks
    queued), :meth:`finish` queues the rest as buffers free up and copies every chunk's results
    into ``out``."""

    def __init__(self, spec, packed: Packed, lo: int, hi: int, out: np.ndarray, turned: bool, budget: int):
        ensure_table(packed)  # the two sides are small beside the product: their bytes found here
        self.packed, self.lo, self.hi, self.out, self.turned = packed, lo, hi, out, turned
        self.n_txt = len(packed.txt_off) - 1
        words = (np.diff(packed.pat_off) + 63) // 64
        self.pm_off = np.zeros(len(words) + 1, np.int64)
        np.cumsum(words * packed.sigma, out=self.pm_off[1:])
        row_bytes = self.n_txt * out.dtype.itemsize + 8 * words * packed.sigma
        self.chunks = row_chunks(row_bytes, max(budget, 1))
        self.kernel = _cross_kernel(spec, _pow2(max(int(words.max(initial=1)), 1)))
        self.d_pat, self.d_pat_off = cuda.to_device(packed.pat), cuda.to_device(packed.pat_off)
        self.d_txt, self.d_txt_off = cuda.to_device(packed.txt), cuda.to_device(packed.txt_off)
        self.d_table = cuda.to_device(packed.table)
        slots = min(2, len(self.chunks))
        most_rows = max(r1 - r0 for r0, r1 in self.chunks)
        most_pm = max(int(self.pm_off[r1] - self.pm_off[r0]) for r0, r1 in self.chunks)
        self.streams = [stream() for _ in range(slots)]
        self.d_out = [cuda.device_array(max(most_rows * self.n_txt, 1), out.dtype) for _ in range(slots)]
        self.d_pm = [cuda.device_array(max(most_pm, 1), np.uint64) for _ in range(slots)]
        self.events: list[tuple] = []
        self.held = [None] * slots  # per slot: the chunk's mask offsets, read by its queued kernels
        self.info = {"chunks": len(self.chunks), "masks_bytes": int(self.pm_off[-1]) * 8}
        for k in range(slots):
            self._queue(k)

    def _queue(self, k: int) -> None:
        """Chunk ``k``'s masks and cross kernel, on stream ``k % 2`` into that slot's buffers."""
        r0, r1 = self.chunks[k]
        st, d_out, d_pm = self.streams[k % 2], self.d_out[k % 2], self.d_pm[k % 2]
        p = self.packed
        ev = (event(), event())
        ev[0].record(st)
        pm_off = cuda.to_device(self.pm_off[r0 : r1 + 1] - self.pm_off[r0], stream=st)
        blocks, threads = stride_grid(r1 - r0)
        _masks_kernel()[blocks, threads, st](
            self.d_pat, self.d_pat_off, r0, r1, p.sigma, self.d_table, p.mapped, pm_off, d_pm
        )
        rows = r1 - r0
        rs, cs = (1, rows) if self.turned else (self.n_txt, 1)
        grid = (min(-(-self.n_txt // THREADS), MAX_GRID[0]), min(rows, MAX_GRID[1]))
        self.kernel[grid, THREADS, st](
            self.d_pat_off, d_pm, pm_off, self.d_txt, self.d_txt_off, self.d_table, p.mapped,
            r0, r1, self.lo, self.hi, d_out, rs, cs,
        )  # fmt: skip
        ev[1].record(st)
        self.events.append(ev)
        self.held[k % 2] = pm_off

    def finish(self) -> tuple[np.ndarray, float]:
        """``(out, kernel seconds)``: every chunk's results copied into ``out`` (rows of the result,
        or its columns where the choices are the patterns), the next chunk queued in each slot as
        soon as its results are out."""
        for k, (r0, r1) in enumerate(self.chunks):
            st, d_out = self.streams[k % 2], self.d_out[k % 2]
            size = (r1 - r0) * self.n_txt
            if self.turned:  # a run of columns of the result, laid out as its rows
                part = np.empty(size, self.out.dtype)
                d_out[:size].copy_to_host(part, stream=st)
                st.synchronize()
                self.out[:, r0:r1] = part.reshape(self.n_txt, r1 - r0)
            else:
                d_out[:size].copy_to_host(self.out[r0:r1].reshape(-1), stream=st)
                st.synchronize()
            if k + 2 < len(self.chunks):
                self._queue(k + 2)
        self.d_out = self.d_pm = ()
        return self.out, elapsed(self.events)


def elapsed(events) -> float:
    """The seconds between each pair of CUDA events ``(start, end)`` of ``events``, summed (0 for
    the simulator's, which carry no time)."""
    seconds = 0.0
    for a, b in events:
        try:
            seconds += a.elapsed_time(b) / 1e3
        except Exception:  # the simulator's events carry no time
            pass
    return seconds


def launch(spec, packed: Packed, lo: int, hi: int, out: np.ndarray, turned: bool, budget: int | None = None):
    """Start the cross product of ``packed``'s patterns and texts by the algorithm ``spec`` into
    ``out`` (C-contiguous: ``out[i, j]`` pattern ``i`` against text ``j``, or ``out[j, i]`` when
    ``turned``), each value as :func:`.bitparallel.clamp` gives it with ``lo`` and ``hi``; chunks of
    at most ``budget`` device bytes (default: :data:`CHUNK_BYTES`, at most a quarter of the free
    device memory). :meth:`CrossLaunch.finish` waits for it."""
    if budget is None:
        budget = min(CHUNK_BYTES, memory_info()[0] // 4)
    return CrossLaunch(spec, packed, lo, hi, out, turned, budget)
