"""The GPU twins of the bit-parallel pair kernels: one pair per thread, its masks and bit vectors in
the thread's local memory (:data:`LCS` here; the edit distance's in
:mod:`gpudp.problems.edit_distance.cuda`). Imported only when the cuda backend runs."""

from __future__ import annotations

import functools
import textwrap
from dataclasses import dataclass

import numpy as np

from gpudp.backends.cuda import cuda, generated_kernel, resident_threads, sim_geometry

from .bitparallel import Packed, lcs_of, masks, store_columns, table_of, walk_back, word_step

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


def _upload(packed: Packed):
    """The batch's symbols on the device, ``(d_pat, d_txt)``. A byte batch packed without its table
    gets it here: the bytes present are found on the device (one pass, a flag per byte value), so
    the host never reads the sequences."""
    d_pat, d_txt = cuda.to_device(packed.pat), cuda.to_device(packed.txt)
    if packed.mapped and packed.sigma == 0:
        flags = cuda.to_device(np.zeros(256, np.int32))
        threads = sim_geometry(256, 32)
        for d in (d_pat, d_txt):
            blocks = max(1, min(4096, -(-len(d) // threads)))
            _present_kernel()[blocks, threads](d, len(d), flags)
        packed.table, packed.sigma = table_of(flags.copy_to_host() != 0)
    return d_pat, d_txt


def launch(packed: Packed, spec: PairKernel = LCS) -> Launch:
    """Copy the batch to the device and start its kernel; the host is free until ``finish()``."""
    n = len(packed.pat_off) - 1
    if n == 0:
        return Launch(0, None, None, None)
    d_pat, d_txt = _upload(packed)
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


# ------------------------------------------------------------------------------------------------
# Subsequences: every column's vector kept on the device, then walked back (one thread a pair)

#: pairs of a group: one warp, whose vectors are interleaved word by word in the store (4 in the
#: simulator, so that a few pairs make several groups and chunks)
GROUP = sim_geometry(32, 4)
#: device bytes the stored vectors of one chunk of pairs may take (and at most a quarter of the
#: free device memory; a chunk is never less than one group): two chunks are in flight
CHUNK_BYTES = 8 << 30

# Vectors of pair ``t`` (in kernel order) of group ``g = t // GROUP``: word ``q`` of column ``j`` at
# ``store[goff[g] - base0 + (j * gwords[g] + q) * GROUP + t % GROUP]``, so that the 32 threads of a
# warp write 256 consecutive bytes a word; ``gwords`` and the group's columns are its largest pair's.
_COLUMNS = """
def lcs_columns(pat, pat_off, txt, txt_off, sigma, table, mapped, order, t0, t1, goff, gwords, base0,
                store, lengths):
    t = t0 + cuda.grid(1)
    if t >= t1:
        return
    p = order[t]
    a0 = pat_off[p]
    m = pat_off[p + 1] - a0
    b0 = txt_off[p]
    n = txt_off[p + 1] - b0
    if m == 0 or n == 0:
        lengths[t] = 0
        return
    w = (m + 63) // 64
    g = t // GROUP
    pm = cuda.local.array(PMSIZE, numba.uint64)
    masks(pat, a0, m, w, sigma, table, mapped, pm)
    s = cuda.local.array(WORDS, numba.uint64)
    for q in range(w):
        s[q] = ~numba.uint64(0)
    base = goff[g] - base0 + t % GROUP
    store_columns(txt, b0, n, pm, w, table, mapped, s, store, base, gwords[g] * GROUP, GROUP)
    lengths[t] = lcs_of(s, w, m)
"""

# One thread a pair walks back through its vectors; its matched positions go to ``out_a`` /
# ``out_b`` (positions in the pair's ``a`` and ``b``) from ``ostart[t] - o0`` on.
_WALK = """
def lcs_walk(pat, pat_off, txt, txt_off, swapped, order, t0, t1, goff, gwords, base0, store, lengths,
             ostart, o0, out_a, out_b, found):
    t = t0 + cuda.grid(1)
    if t >= t1:
        return
    p = order[t]
    a0 = pat_off[p]
    m = pat_off[p + 1] - a0
    b0 = txt_off[p]
    n = txt_off[p + 1] - b0
    if m == 0 or n == 0:
        found[t] = 0
        return
    g = t // GROUP
    base = goff[g] - base0 + t % GROUP
    col = gwords[g] * GROUP
    o = ostart[t] - o0
    if swapped[p]:
        found[t] = walk_back(pat, a0, m, txt, b0, n, store, base, col, GROUP, lengths[t], out_b, out_a, o)
    else:
        found[t] = walk_back(pat, a0, m, txt, b0, n, store, base, col, GROUP, lengths[t], out_a, out_b, o)
"""


@functools.cache
def _traceback_kernels(sigma: int, words: int):
    """The vectors' and the walk's kernels for at most ``sigma`` codes and ``words`` words a pattern
    (powers of two)."""
    import numba

    ns = {
        "cuda": cuda,
        "numba": numba,
        "GROUP": GROUP,
        "WORDS": words,
        "PMSIZE": sigma * words,
        "masks": masks,
        "store_columns": store_columns,
        "walk_back": walk_back,
        "word_step": word_step,
        "lcs_of": lcs_of,
    }
    return generated_kernel(_COLUMNS, "lcs_columns", ns), generated_kernel(_WALK, "lcs_walk", ns)


def pm_words(sigma: int, words: int) -> int:
    """Local words of pattern masks a thread of the vectors' kernel keeps (``sigma`` codes, ``words``
    words a pattern)."""
    return _pow2(sigma) * _pow2(words)


def _groups(m: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per group of :data:`GROUP` pairs (kernel order): its words a column and its offset in the
    store (``G + 1`` offsets, in words)."""
    g = -(-len(m) // GROUP)
    w = np.zeros(g * GROUP, np.int64)
    c = np.zeros(g * GROUP, np.int64)
    w[: len(m)] = (m + 63) // 64
    c[: len(m)] = np.where(m > 0, n, 0)
    gw = w.reshape(g, GROUP).max(axis=1, initial=0)
    gc = c.reshape(g, GROUP).max(axis=1, initial=0)
    goff = np.zeros(g + 1, np.int64)
    np.cumsum(gw * gc * GROUP, out=goff[1:])
    return gw, goff


def _chunks(goff: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Runs of whole groups ``[g0, g1)`` of about equal store, each within ``budget`` words unless it
    is a single group."""
    groups, out, g0 = len(goff) - 1, [], 0
    while g0 < groups:
        rest = int(goff[-1] - goff[g0])
        k = max(1, -(-rest // budget))
        target = goff[g0] + rest / k
        g1 = int(np.searchsorted(goff, target, side="right")) - 1
        g1 = min(max(g1, g0 + 1), groups)
        out.append((g0, g1))
        g0 = g1
    return out


class TracebackLaunch:
    """A batch's subsequences on their way through the GPU: :func:`launch_subsequences` starts
    them, :meth:`finish` waits."""

    def __init__(self, order, lengths, found, streams, events, info, buffers):
        self.order, self.d_len, self.d_found = order, lengths, found
        self.streams, self.events, self.info = streams, events, info
        self.buffers = buffers  # the device arrays the queued work uses, held until it is done

    def finish(self) -> tuple[np.ndarray, np.ndarray, float]:
        """``(lengths, found, kernel seconds)``: each pair's, in kernel order."""
        for s in self.streams:
            s.synchronize()
        self.buffers = None
        lengths, found = self.d_len.copy_to_host(), self.d_found.copy_to_host()
        seconds = 0.0
        for a, b in self.events:
            try:
                seconds += a.elapsed_time(b) / 1e3
            except Exception:  # the simulator's events carry no time
                pass
        return lengths, found, seconds


def launch_subsequences(packed: Packed, order, start, pos_a, pos_b, chunk_bytes: int | None = None):
    """Start the subsequences of the pairs ``order`` (indices into ``packed``, in the order the
    kernels take them) on the GPU; their positions arrive in ``pos_a`` / ``pos_b`` (host arrays,
    page-locked for asynchronous copies) from ``start[p]`` on, where ``start`` runs contiguously
    along ``order`` (``start[order[t + 1]] = start[order[t]] + min(m, n)`` of pair ``order[t]``).

    The batch's symbols are copied to the device once; then, chunk by chunk (whole groups of
    :data:`GROUP` pairs, stores of at most ``chunk_bytes``), the vectors' kernel and the walk's run
    on one of two streams and the chunk's positions are copied back on the same stream, so that a
    chunk's copy overlaps the next chunk's kernels. :meth:`TracebackLaunch.finish` waits."""
    from gpudp.backends.cuda import memory_info

    t_count = len(order)
    d_pat, d_txt = _upload(packed)
    pat_off, txt_off = packed.pat_off, packed.txt_off
    m = (pat_off[1:] - pat_off[:-1])[order]
    n = (txt_off[1:] - txt_off[:-1])[order]
    gw, goff = _groups(m, n)
    cap = np.minimum(m, n)
    ostart = np.asarray(start)[order]
    oend = ostart + cap
    words = int(((m + 63) // 64).max(initial=1))
    columns, walk = _traceback_kernels(_pow2(packed.sigma), _pow2(words))
    if chunk_bytes is None:
        free = memory_info()[0]
        # the threads' local memory, reserved for all the device holds at once
        free -= (8 * (pm_words(packed.sigma, words) + _pow2(words)) + 1024) * resident_threads()
        chunk_bytes = min(CHUNK_BYTES, max(free, 0) // 4)
    chunks = _chunks(goff, max(1, chunk_bytes // 8))
    d_order = cuda.to_device(np.ascontiguousarray(order, np.int64))
    common = (d_pat, cuda.to_device(pat_off), d_txt, cuda.to_device(txt_off))
    d_goff, d_gw = cuda.to_device(goff), cuda.to_device(gw)
    d_ostart, d_swapped = cuda.to_device(ostart), cuda.to_device(packed.swapped)
    d_table = cuda.to_device(packed.table)
    d_len = cuda.device_array(max(t_count, 1), np.int64)
    d_found = cuda.device_array(max(t_count, 1), np.int64)
    slots = min(2, len(chunks))
    most = max((int(goff[g1] - goff[g0]) for g0, g1 in chunks), default=1)
    out_most = max(
        (int(oend[min(g1 * GROUP, t_count) - 1] - ostart[g0 * GROUP]) for g0, g1 in chunks), default=1
    )
    stores = [cuda.device_array(max(most, 1), np.uint64) for _ in range(slots)]
    outs = [
        (cuda.device_array(max(out_most, 1), pos_a.dtype), cuda.device_array(max(out_most, 1), pos_b.dtype))
        for _ in range(slots)
    ]
    streams = [cuda.stream() for _ in range(slots)]
    threads = sim_geometry(THREADS, 2 * GROUP)
    events = []
    for c, (g0, g1) in enumerate(chunks):
        k = c % slots
        st, store, (out_a, out_b) = streams[k], stores[k], outs[k]
        t0, t1 = g0 * GROUP, min(g1 * GROUP, t_count)
        base0, o0, o1 = int(goff[g0]), int(ostart[t0]), int(oend[t1 - 1])
        blocks = -(-(t1 - t0) // threads)
        ev = (cuda.event(), cuda.event())
        ev[0].record(st)
        columns[blocks, threads, st](
            *common, packed.sigma, d_table, packed.mapped, d_order, t0, t1, d_goff, d_gw, base0, store, d_len
        )
        walk[blocks, threads, st](
            *common, d_swapped, d_order, t0, t1, d_goff, d_gw, base0, store, d_len, d_ostart, o0,
            out_a, out_b, d_found,
        )  # fmt: skip
        ev[1].record(st)
        events.append(ev)
        if o1 > o0:
            out_a[: o1 - o0].copy_to_host(pos_a[o0:o1], stream=st)
            out_b[: o1 - o0].copy_to_host(pos_b[o0:o1], stream=st)
    info = {"chunks": len(chunks), "store_bytes": int(goff[-1]) * 8, "chunk_store_bytes": most * 8}
    buffers = (common, d_order, d_goff, d_gw, d_ostart, d_swapped, d_table, stores, outs)
    return TracebackLaunch(order, d_len, d_found, streams, events, info, buffers)


def host_positions(size: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    """Two arrays of ``size`` positions on one page-locked block of the process's pool (it goes back
    to the pool when both are dropped)."""
    from gpudp.backends.cuda import pinned_pool

    block = pinned_pool().lease(2 * max(size, 1), dtype)
    return block[:size].view(np.ndarray), block[max(size, 1) : max(size, 1) + size].view(np.ndarray)
