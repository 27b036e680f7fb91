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

**Short patterns** (at most :data:`SHORT_WORDS` 64-bit words, symbols below :data:`SHORT_SYMBOLS`)
take a kernel of their own, one a word count (:data:`_SHORT`): the same lines of the algorithm with
``w`` a constant, so that the compiler unrolls the loops over the words and keeps the bit vectors
in registers (the general kernel's ``w`` is read at run time: its vectors lie in local memory,
two loads and two stores a word a step; 72 local loads and stores in its PTX at 2 words, none in
the short one's); each block builds its pattern's masks in shared memory itself, a row per symbol
value as the sequences hold it (bytes as they are: a step reads no table), so short patterns need
neither the masks kernel nor room for their masks in device memory; a thread reads its text 8
bytes at a time (a warp's texts lie apart, so a byte load a step touches a cache line a thread). A
chunk's patterns are launched by kernel (their rows sorted so, :attr:`CrossLaunch.rows`), the
longer ones through the general kernel.

**Knobs** read at each launch, for A/B runs in one process (``tools/cdist_bench.py --variants``):
:data:`SHORT_WORDS` (0: every pattern through the general kernel, as before), :data:`WIDE_READS`
(False: the short kernels read a byte a step), :data:`ONE_UPLOAD`
(the inputs in one device allocation and one copy, :func:`gpudp.backends.cuda.upload`,
instead of a ``cuda.to_device`` each) and :data:`PINNED_RESULT_BYTES` (a result of at most that
many bytes is made in page-locked memory, :func:`host_result`: its copy from the device runs at the
bus's speed and writes no fresh pages; 0: plain memory) and :data:`STOP_EVERY` (0: every cell runs
its whole text, as before the knob).

**A score cutoff stops a cell early** (issue 38, as the cpu's text loops do): every
:data:`STOP_EVERY` text symbols, a cell whose cutoff lies within its lengths' bounds takes bounds of
its value from its vectors so far (the algorithm's ``so_far``: an LCS gains at most 1 a symbol left;
a Levenshtein distance's last row moves by at most 1 a symbol) and stops once both give one cut-off
score, which it writes: exactly the value the whole text would give. A thread a cell, so a
thread's stop is its own (it ends its text loop and takes its next cell; no barrier waits on it).
"""

from __future__ import annotations

import numpy as np
from numba.extending import register_jitable

from gpudp.backends.cuda import (
    cuda,
    event,
    generated_kernel,
    memory_info,
    pinned_pool,
    sim_geometry,
    stream,
    stride_grid,
    upload,
)
from gpudp.codegen import fill
from gpudp.kernel import factory, load

from .. import cuda_code
from ..bitparallel import NO_CUTOFF, Packed, clamp, ensure_table, masks

__all__ = ["CHUNK_BYTES", "CrossLaunch", "elapsed", "host_result", "launch", "row_chunks"]

#: threads a block: one pattern, consecutive texts (8 in the simulator, so that tiny tests still
#: make several blocks)
THREADS = sim_geometry(128, 8)
#: device bytes one chunk's results and pattern masks may take at most (two chunks are in flight)
CHUNK_BYTES = 2 << 30
#: blocks along the texts and along the patterns at most (the kernel strides over the rest)
MAX_GRID = sim_geometry((1 << 16, 1 << 15), (3, 3))
#: patterns of at most this many 64-bit words run through the kernel of their exact word count
#: (:data:`_SHORT`); 0: none (every pattern through the general kernel, as before this knob). H100,
#: 2026-12-06 (tools/cdist_bench.py --variants default,short16): 316 x 316 x 1,000 (16 words)
#: edit 0.0138 -> 0.0084 s, LCS 0.0099 -> 0.0061 s through the short kernel; 1,024 symbols take
#: 32 KiB of shared memory a block
SHORT_WORDS = 16
#: the short kernels' rows of masks in shared memory, one a symbol value: sequences of bytes, or
#: coded to fewer codes than this, can take them
SHORT_SYMBOLS = 256
#: the short kernels read their texts 8 bytes at a time (False: a byte a step)
WIDE_READS = True
#: the inputs go up in one device allocation and one copy (False: a ``cuda.to_device`` each)
ONE_UPLOAD = True
#: a result of at most this many bytes is made in page-locked memory (:func:`host_result`; 0: never)
PINNED_RESULT_BYTES = 64 << 20
#: a cell whose cutoff lies within its lengths' bounds tests, every this many text symbols, whether
#: its vectors so far decide its cut-off score, and stops if they do (:data:`_STOPS`); 0: never (the
#: whole text, as before this knob, and as a product with no cutoff runs either way)
STOP_EVERY = 32

# The cells of pattern ``i = rows[r]`` (one of the chunk's rows ``r0 .. r1 - 1``, ``m`` symbols)
# against the thread's texts ``j``: each value goes to ``out[(i - r0) * rs + j * cs]``, not computed
# where the bounds of its lengths (``{lower}``, ``{upper}``) give the same cut-off score. ``{init}``,
# ``{step}`` and ``{value}`` are the algorithm's (:class:`gpudp.problems.lcs.cuda.PairKernel`);
# ``pm[row + q]`` is word ``q`` of the pattern's mask of the text symbol ``txt[k]``, its row found by
# the schedule's ``{row}`` (after its ``{start}`` for the text); ``{text}`` runs the text through
# them and leaves the cut-off score in ``v`` (:data:`_WHOLE` or :data:`_STOPS`).
_CELLS = """
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
    {start}
    {text}
    out[p] = v
"""
# The whole text, then its score cut off.
_WHOLE = """
for k in range(b0, b1):
    {row}
    {step}
v = clamp({value}, lo, hi)
"""
# The text in runs of ``STOP`` symbols; after each, where the cutoff lies within the lengths' bounds
# (else no score passes it), the algorithm's ``{so_far}`` bounds the value from the vectors (``left``
# symbols to come) and the cell stops once both bounds give one cut-off score: the value lies
# between them and the cutoff is monotone. Only this thread's loop ends (a ``break``, no return):
# the short schedule's barriers, outside the cells' loop, are reached by every thread as before.
_STOPS = """
cut = lo > {lower} or hi < {upper}
decided = False
for k0 in range(b0, b1, STOP):
    k1 = min(k0 + STOP, b1)
    for k in range(k0, k1):
        {row}
        {step}
    if cut:
        left = b1 - k1
        {so_far}
        v = clamp(low, lo, hi)
        if v == clamp(high, lo, hi):
            decided = True
            break
if not decided:
    v = clamp({value}, lo, hi)
"""

# The general schedule: a block's threads on one pattern at a time, ``w`` its words (read at run
# time), its masks where the masks kernel left them (from ``pm_off[i - r0] - pm0`` in ``pm``), a
# symbol's row through ``table`` where ``mapped``.
_CROSS = """
def cross(rows, pat_off, pm, pm_off, pm0, txt, txt_off, table, mapped, r0, lo, hi, out, rs, cs):
    n_txt = txt_off.shape[0] - 1
    first = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    stride = cuda.blockDim.x * cuda.gridDim.x
    for r in range(cuda.blockIdx.y, rows.shape[0], cuda.gridDim.y):
        i = rows[r]
        m = pat_off[i + 1] - pat_off[i]
        w = (m + 63) // 64
        base = pm_off[i - r0] - pm0
        {cells}
"""
_GENERAL_ROW = (
    "",
    """x = txt[k]
if mapped:
    x = table[x]
row = base + x * w""",
)

# The short schedule, for patterns of exactly ``WORDS`` words (or none: the lengths decide those),
# ``w`` a constant: the block builds its pattern's masks in the shared ``pm`` itself, row ``x`` the
# masks of symbol value ``x`` (a byte as it is, or a code below :data:`SHORT_SYMBOLS`: equal values
# are equal symbols either way, so no table is read), a bit a pattern symbol set by its thread.
_SHORT = """
def cross_short(rows, pat, pat_off, txt, txt8, txt_off, r0, lo, hi, out, rs, cs):
    pm = cuda.shared.array(SHARED, numba.uint64)
    n_txt = txt_off.shape[0] - 1
    first = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    stride = cuda.blockDim.x * cuda.gridDim.x
    w = WORDS
    for r in range(cuda.blockIdx.y, rows.shape[0], cuda.gridDim.y):
        i = rows[r]
        a0 = pat_off[i]
        m = pat_off[i + 1] - a0
        cuda.syncthreads()  # the block's last pattern's masks are read no more
        for t in range(cuda.threadIdx.x, SHARED, cuda.blockDim.x):
            pm[t] = numba.uint64(0)
        cuda.syncthreads()
        for t in range(cuda.threadIdx.x, m, cuda.blockDim.x):
            bit = numba.uint64(1) << numba.uint64(t & 63)
            cuda.atomic.or_(pm, numba.int64(pat[a0 + t]) * WORDS + (t >> 6), bit)
        cuda.syncthreads()
        {cells}
"""
_SHORT_ROW = ("", "row = numba.int64(txt[k]) * WORDS")
# ... its text read 8 symbols at a time (bytes, as the short kernels' texts are: ``txt8`` the same
# memory as 64-bit words, the last partial word assembled by :func:`text_word`), where the byte
# loads a step would each touch a cache line a thread (a warp's texts lie apart)
_WIDE_ROW = (
    "word = text_word(txt, txt8, b0 >> 3)",
    """if k & 7 == 0:
    word = text_word(txt, txt8, k >> 3)
row = numba.int64((word >> numba.uint64((k & 7) << 3)) & numba.uint64(255)) * WORDS""",
)


@register_jitable
def text_word(txt, txt8, q):
    """Bytes ``8 q .. 8 q + 7`` of ``txt`` as one little-endian 64-bit word: ``txt8[q]`` (``txt``'s
    whole words), or past those, its last bytes (zeros after the end)."""
    if q < txt8.shape[0]:
        return txt8[q]
    word = np.uint64(0)
    for t in range(min(8, txt.shape[0] - 8 * q)):
        word |= np.uint64(txt[8 * q + t]) << np.uint64(8 * t)
    return word


def _generated(spec, template: str, row: tuple[str, str], name: str, words: int, stop: int):
    """``template`` (a schedule: :data:`_CROSS` or :data:`_SHORT`) with the algorithm ``spec``'s
    cells (:data:`_CELLS`, a symbol's row found by ``row``: the lines before a text and a step's),
    each stopped early every ``stop`` text symbols where its vectors decide its cut-off score
    (:data:`_STOPS`; 0: never, :data:`_WHOLE`), compiled as ``{spec.name}_{name}``."""
    import numba

    ns = {
        "cuda": cuda,
        "numba": numba,
        "WORDS": words,
        "SHARED": SHORT_SYMBOLS * words,  # shared.array takes a constant, not an expression
        "STOP": stop,
        "clamp": clamp,
        "text_word": text_word,
        **dict(spec.functions),
    }
    parts = {k: getattr(spec, k) for k in ("lower", "upper", "init", "step", "value", "so_far")}
    text = fill((_STOPS if stop else _WHOLE).strip("\n"), row=row[1], **parts)
    cells = fill(_CELLS.strip("\n"), start=row[0], text=text, **parts)
    head = template.split("(", 1)[0].split()[-1]  # the template's own name
    src = fill(template, cells=cells).replace(f"def {head}(", f"def {spec.name}_{name}(", 1)
    return generated_kernel(src, f"{spec.name}_{name}", ns)


@factory("lcs.cuda.cross")
def _cross_kernel(spec, words: int, stop: int):
    """The general cross kernel of the algorithm ``spec`` for patterns of at most ``words`` 64-bit
    words (a power of two, so that few are compiled), a cell stopped early as ``stop`` says
    (:func:`_generated`)."""
    return _generated(spec, _CROSS, _GENERAL_ROW, f"cross_stop{stop}", words, stop)


@factory("lcs.cuda.cross_short")
def _short_kernel(spec, words: int, wide: bool, stop: int):
    """The cross kernel of the algorithm ``spec`` for patterns of exactly ``words`` 64-bit words
    (:data:`_SHORT`), its texts read a byte a step or (``wide``) 8 bytes at a time, a cell stopped
    early as ``stop`` says (:func:`_generated`)."""
    row, name = (_WIDE_ROW, "cross_wide") if wide else (_SHORT_ROW, "cross_short")
    return _generated(spec, _SHORT, row, f"{name}{words}_stop{stop}", words, stop)


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
    into ``out``.

    ``rows``: the patterns in the order the kernels take them, each chunk's sorted by the kernel
    they run through (``kinds[i]``: pattern ``i``'s word count where it runs through a short
    kernel, else 0, the general one); ``segments[k]``: chunk ``k``'s runs of ``rows``, ``(kind,
    start, end)``, a launch each."""

    def __init__(self, spec, packed: Packed, lo: int, hi: int, out: np.ndarray, turned: bool, budget: int):
        ensure_table(packed)  # the two sides are small beside the product: their bytes found here
        self.spec, self.packed, self.lo, self.hi, self.out, self.turned = spec, packed, lo, hi, out, turned
        self.n_txt = len(packed.txt_off) - 1
        words = (np.diff(packed.pat_off) + 63) // 64
        short = SHORT_WORDS if packed.sigma <= SHORT_SYMBOLS else 0
        # an empty pattern (its lengths decide every cell) goes with the 1-word ones
        self.kinds = np.where(words <= short, np.maximum(words, 1), 0) if short else np.zeros_like(words)
        general = np.where(self.kinds == 0, words, 0)  # the short ones build their masks in the kernel
        self.pm_off = np.zeros(len(words) + 1, np.int64)
        np.cumsum(general * packed.sigma, out=self.pm_off[1:])
        row_bytes = self.n_txt * out.dtype.itemsize + 8 * general * packed.sigma
        self.chunks = row_chunks(row_bytes, max(budget, 1))
        self.rows = np.concatenate(
            [r0 + np.argsort(self.kinds[r0:r1], kind="stable") for r0, r1 in self.chunks]
        )
        self.segments = [self._segments(r0, r1) for r0, r1 in self.chunks]
        self.general_words = _pow2(max(int(words[self.kinds == 0].max(initial=1)), 1))
        slots = min(2, len(self.chunks))
        self.streams = [stream() for _ in range(slots)]
        p = packed
        arrays = (p.pat, p.pat_off, p.txt, p.txt_off, p.table, self.rows)
        # no cutoff (every value as it is): the kernels without the tests, as before the early stop
        self.uploaded, self.stop = ONE_UPLOAD, STOP_EVERY if lo > 0 or hi < NO_CUTOFF else 0
        if ONE_UPLOAD:  # the chunks' mask offsets with them: a chunk's are a slice
            *inputs, self.d_pm_off = upload((*arrays, self.pm_off), self.streams[0])
        else:  # as before the knob (a chunk's mask offsets copied with it)
            inputs, self.d_pm_off = [cuda.to_device(a) for a in arrays], None
        self.d_pat, self.d_pat_off, self.d_txt, self.d_txt_off, self.d_table, self.d_rows = inputs
        # the texts' whole 64-bit words (the short kernels' wide reads: their texts are bytes)
        self.wide = WIDE_READS and p.txt.dtype.itemsize == 1
        self.d_txt8 = self.d_txt[: len(p.txt) // 8 * 8].view(np.uint64) if self.wide else self.d_txt
        most_rows = max(r1 - r0 for r0, r1 in self.chunks)
        most_pm = max(int(self.pm_off[r1] - self.pm_off[r0]) for r0, r1 in self.chunks)
        self.d_out = [cuda.device_array(max(most_rows * self.n_txt, 1), out.dtype) for _ in range(slots)]
        self.d_pm = [cuda.device_array(max(most_pm, 1), np.uint64) for _ in range(slots)]
        self.events: list[tuple] = []
        self.held = [None] * slots  # per slot: the chunk's mask offsets, read by its queued kernels
        kinds = sorted({kind for segs in self.segments for kind, _, _ in segs})
        self.info = {
            "chunks": len(self.chunks),
            "stop_every": self.stop,
            "masks_bytes": int(self.pm_off[-1]) * 8,
            "kernels": [
                f"short, {k} word{'s' * (k > 1)}" if k else f"general, {self.general_words} words"
                for k in kinds
            ],
        }
        for k in range(slots):
            self._queue(k)

    def _segments(self, r0: int, r1: int) -> list[tuple[int, int, int]]:
        """The runs of one kernel among the chunk's sorted rows ``rows[r0:r1]``: ``(kind, start, end)``."""
        k = self.kinds[self.rows[r0:r1]]
        edges = (np.flatnonzero(np.diff(k)) + 1).tolist()
        return [(int(k[a]), r0 + a, r0 + b) for a, b in zip([0, *edges], [*edges, r1 - r0], strict=True)]

    def _queue(self, k: int) -> None:
        """Chunk ``k``'s masks and cross kernels, on stream ``k % 2`` into that slot's buffers."""
        r0, r1 = self.chunks[k]
        st, d_out, d_pm = self.streams[k % 2], self.d_out[k % 2], self.d_pm[k % 2]
        p = self.packed
        ev = (event(), event())
        ev[0].record(st)
        if self.uploaded:
            pm_off, pm0 = self.d_pm_off[r0 : r1 + 1], int(self.pm_off[r0])
        else:
            pm_off, pm0 = cuda.to_device(self.pm_off[r0 : r1 + 1] - self.pm_off[r0], stream=st), 0
        rs, cs = (1, r1 - r0) if self.turned else (self.n_txt, 1)
        tail = (r0, self.lo, self.hi, d_out, rs, cs)
        for kind, a, b in self.segments[k]:
            grid = (min(-(-self.n_txt // THREADS), MAX_GRID[0]), min(b - a, MAX_GRID[1]))
            rows = self.d_rows[a:b]
            if kind:
                args = (rows, self.d_pat, self.d_pat_off, self.d_txt, self.d_txt8, self.d_txt_off, *tail)
                _short_kernel(self.spec, kind, self.wide, self.stop)[grid, THREADS, st](*args)
                continue
            blocks, threads = stride_grid(r1 - r0)  # the general patterns' masks (a short one has none)
            _masks_kernel()[blocks, threads, st](
                self.d_pat, self.d_pat_off, r0, r1, p.sigma, self.d_table, p.mapped, pm_off, pm0, d_pm
            )
            args = (rows, self.d_pat_off, d_pm, pm_off, pm0, self.d_txt, self.d_txt_off, self.d_table)
            _cross_kernel(self.spec, self.general_words, self.stop)[grid, THREADS, st](*args, p.mapped, *tail)
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
                part = host_result((size,), self.out.dtype)  # page-locked where small
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


def host_result(shape: tuple, dtype) -> np.ndarray:
    """A C-contiguous array for a cross product's result (contents undefined: every cell is
    written): of at most :data:`PINNED_RESULT_BYTES` bytes, on a page-locked block leased from the
    process's pool (back to the pool when the caller drops the array; sizes rounded up to a
    sixteenth of their power of two, at least 1 MiB, so that the next product of about the same
    size takes the same block), so that its copy from the device is a DMA straight into it and
    writes no pages the system must first map (1,000 x 1,000 int32: about 2 ms of page faults on a
    small host); else, or where no block can be had, plain zeros."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    nbytes = n * dtype.itemsize
    if 0 < nbytes <= PINNED_RESULT_BYTES:
        step = 1 << max(nbytes.bit_length() - 4, 20)
        try:
            lease = pinned_pool().lease(-(-nbytes // step) * step // dtype.itemsize, dtype)
        except Exception:  # the driver would not page-lock it (CudaAPIError), or no memory at all
            lease = None
        if lease is not None:
            # a plain ndarray over the lease (a view of it would drop it: numpy makes a view's base
            # the block beneath); its base, a memoryview, holds the lease until the array goes
            return np.frombuffer(memoryview(lease[:n]), dtype, n).reshape(shape)
    return np.zeros(shape, dtype)


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
