"""The GPU twins of the bit-parallel pair kernels: one pair per thread, its masks and bit vectors in
the thread's local memory (:data:`LCS` here; the edit distance's in
:mod:`gpudp.problems.edit_distance.cuda`); the LCS of long patterns a warp a pair
(:data:`LONG_WORDS`, :func:`.cuda_code.lcs_long`): a pair a thread leaves most of the GPU idle when
the pairs are few and long (2,000 pairs of 10,000: 2,000 threads), and its vectors in local memory
cost a load and a store a word a step. Imported only when the cuda backend runs."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from gpudp.backends.cuda import (
    as_device_array,  # noqa: F401  (for .batch, which reaches the GPU only through this module)
    cached_grid,
    cuda,
    device_jit,
    drained,
    event,
    generated_kernel,
    is_device_array,
    is_page_locked,
    pinned_pool,
    resident_threads,
    sim_geometry,
    stream,
    stride_grid,
)
from gpudp.codegen import fill
from gpudp.kernel import factory, load
from gpudp.memory import available_memory

from . import cuda_code
from . import subsequences as traced
from .bitparallel import (
    Packed,
    ensure_table,
    filled,
    lane_masks,
    lcs_of,
    masks,
    popcount64,
    span,
    stage_copy,
    store_columns,
    table_of,
    walk_back,
    word_step,
)
from .cross import cuda as cross_cuda

#: a cross product's result: page-locked where small (:func:`.cross.cuda.host_result`)
host_result = cross_cuda.host_result

THREADS = 128
#: a batch whose symbols are still to be read (``Packed.fill``) is read here slice by slice
reads_later = True
#: bytes of symbols from which a batch is staged in page-locked memory and pipelined slice by slice
#: (:func:`launch`); a smaller batch is copied from where it lies (tests make it tiny)
STAGE_MIN_BYTES = 64 << 20
#: a new staging block takes at most this share of the memory the process may still allocate
#: (page-locked memory is never swapped out; a quarter, as the branch-and-bound ring's pinned budget)
STAGE_HOST_SHARE = 0.25
#: bytes of symbols one task of the parallel staging copy takes (:func:`stage_copy`)
COPY_CHUNK_BYTES = 1 << 20
#: bytes of symbols in one slice of a staged batch (about): the host stages slice ``k + 1`` while the
#: GPU runs slice ``k``'s kernel, so that only the first slice's staging is not hidden behind a kernel
SLICE_BYTES = 128 << 20
#: pairs a slice holds at least (all but the last), so that every kernel still has threads enough
#: to keep the GPU busy
MIN_SLICE_PAIRS = 4096
#: slices staged at once: the page-locked block holds this many slices (each slot reused once its
#: copy is done), so that it stays small however large the batch (a block of the whole batch would
#: be 8 GB for 4 million pairs of 1000; that batch took 1.5 s on one worker of the 4-GPU host, most
#: likely by the pageable way, 0.9 s with three slots)
STAGE_SLOTS = 3

# One pair at a time per thread, looping over the batch (the grid holds only as many threads as
# keep their local memory in L1: :func:`gpudp.backends.cuda.cached_grid`). The pattern's bit masks
# ``pm`` (a row of ``w`` words per symbol code) and the kernel's own bit vectors live in the
# thread's local memory; a text symbol's code comes through ``table`` when the batch holds raw
# bytes. ``{empty}``, ``{init}``, ``{step}`` and ``{value}`` are the algorithm's (:class:`PairKernel`).
_PAIRS = """
def pairs(pat, pat_off, txt, txt_off, sigma, table, mapped, out):
    pm = cuda.local.array(PMSIZE, numba.uint64)
    for p in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):
        a0 = pat_off[p]
        m = pat_off[p + 1] - a0
        b0 = txt_off[p]
        b1 = txt_off[p + 1]
        if m == 0 or b1 == b0:
            out[p] = {empty}
            continue
        w = (m + 63) // 64
        masks(pat, a0, m, w, sigma, table, mapped, pm)
        {init}
        for k in range(b0, b1):
            x = txt[k]
            if mapped:
                x = table[x]
            row = x * w
            {step}
        out[p] = {value}
"""


@dataclass(frozen=True)
class PairKernel:
    """A bit-parallel algorithm over one pair, as lines of the kernel :data:`_PAIRS` (and of the
    cross product's, :mod:`.cross.cuda`): the value of a pair with an empty side (an expression of
    ``m``, ``b0``, ``b1``), the vectors' set-up, one text symbol's step (``row``: its masks' offset
    in ``pm``), the value after the whole text (an expression), and the device functions they
    call; ``lower`` and ``upper``: bounds of the value from the lengths alone (expressions of ``m``
    and ``n``), which let the cross product skip a cell whose cut-off score they decide;
    ``so_far``: lines that set ``low`` and ``high``, bounds of the value from the vectors after
    part of the text, ``left`` its symbols still to come, which let the cross product stop a cell
    once they decide its cut-off score (:data:`.cross.cuda.STOP_EVERY`)."""

    name: str
    empty: str
    init: str
    step: str
    value: str
    lower: str
    upper: str
    so_far: str
    functions: tuple = ()
    #: the kernel a warp a pair (long patterns: :data:`LONG_WORDS`), plain numba-cuda code compiled
    #: by :func:`_long_kernel`; None: a thread a pair whatever the length
    long: object = None


LCS = PairKernel(
    name="lcs_lengths",
    empty="0",
    init="s = cuda.local.array(WORDS, numba.uint64)\nfor q in range(w):\n    s[q] = ~numba.uint64(0)",
    step="carry = numba.uint64(0)\nfor q in range(w):\n    s[q], carry = word_step(s[q], pm[row + q], carry)",
    value="lcs_of(s, w, m)",
    functions=(("word_step", word_step), ("lcs_of", lcs_of)),
    long=cuda_code.lcs_long,
    lower="0",
    upper="min(m, n)",
    # each text symbol adds at most 1 to the length, which is at most the pattern's
    so_far="low = lcs_of(s, w, m)\nhigh = min(low + left, m)",
)


@factory("lcs.cuda.pairs")
def _kernel(spec: PairKernel, sigma: int, words: int):
    """The kernel for at most ``sigma`` symbols and ``words`` 64-bit words a pattern (rounded up to
    powers of two by the caller, so that few are compiled)."""
    import numba

    ns = {
        "cuda": cuda,
        "numba": numba,
        "WORDS": words,
        "PMSIZE": sigma * words,  # local.array takes a constant, not an expression
        "masks": masks,
        **dict(spec.functions),
    }
    src = fill(_PAIRS, empty=spec.empty, init=spec.init, step=spec.step, value=spec.value)
    src = src.replace("def pairs(", f"def {spec.name}(")
    return generated_kernel(src, spec.name, ns)


#: a batch whose longest pattern has at least this many 64-bit words runs a warp a pair (the LCS and
#: the edit distance: a spec's ``long``, :func:`_long_kernel`), its words spread over the lanes; 0:
#: never (a thread a pair throughout). Measured on an H100 (tools/long_pairs.py, 2026-12-06,
#: docs/benchmarks.md): from 16 words (1,000 symbols) the warp's kernels win at every batch size
#: tried, 2,000 to 100,000 pairs (1.2x to 2.6x; 2,000 pairs of 10,000: 20x, 0.41 -> 0.020 s); at 4
#: to 5 words with 50,000 or more pairs a thread a pair fills the GPU and wins (2.3-3.4x)
LONG_WORDS = 16


@factory("lcs.cuda.long")
def _long_kernel(spec: PairKernel, sigma: int, wpl: int):
    """``spec``'s kernel a warp a pair (its ``long``: :func:`.cuda_code.lcs_long`, the edit
    distance's :func:`gpudp.problems.edit_distance.cuda_code.levenshtein_long`) for at most
    ``sigma`` symbols and ``wpl`` words a lane (powers of two, so that few are compiled)."""
    import numba

    real = sim_geometry(True, False)
    ns = {
        "cuda": cuda,
        "numba": numba,
        "WPL": wpl,
        "PMSIZE": sigma * wpl,
        "popcount64": popcount64,
        "lane_masks": lane_masks,
        "span": span,
        **dict(spec.functions),
        "from_left": device_jit(cuda_code.from_left if real else cuda_code.from_left_sim),
        "warp_sum": device_jit(cuda_code.warp_sum if real else cuda_code.warp_sum_sim),
    }
    return load(spec.long, ns, generated_kernel)


def cross(packed: Packed, lo: int, hi: int, out: np.ndarray, turned: bool) -> cross_cuda.CrossLaunch:
    """The LCS length of every pattern of ``packed`` against every text, into ``out``: a cross
    product started on the GPU (:func:`.cross.cuda.launch`)."""
    return cross_cuda.launch(LCS, packed, lo, hi, out, turned)


def device_row_offsets(n: int, length: int):
    """:func:`.bitparallel.row_offsets` made in GPU memory (a device array): a batch whose rows
    lie there gets its offsets without making them on the host and copying them (two arrays of 8
    MB for 1,000,000 pairs, ~10 ms a batch on the H200 host, 2026-11-26)."""
    off = cuda.device_array(n + 1, np.int64)
    _rows_kernel()[stride_grid(n + 1, 1024)](off, length)
    return off


@factory("lcs.cuda.rows")
def _rows_kernel():
    return load(cuda_code.rows, {"cuda": cuda}, generated_kernel)


def _pow2(x: int) -> int:
    return 1 << max(int(x) - 1, 0).bit_length()


@factory("lcs.cuda.present")
def _present_kernel():
    import numba

    return load(cuda_code.present, {"cuda": cuda, "numba": numba}, generated_kernel)


class Launch:
    """A batch on its way through the GPU: :func:`launch` starts it, :meth:`finish` waits for it."""

    def __init__(self, n, d_out, start, end, held=()):
        self.n, self.d_out, self.start, self.end = n, d_out, start, end
        # what the queued copies and kernels read (device arrays, the slices' tables, the page-locked
        # staging block), kept until they are done; the block then goes back to the pinned pool
        self.held = held

    def finish(self) -> tuple[np.ndarray, float]:
        """The value of every pair, and the kernels' seconds: from the first kernel's start to the
        last one's end (CUDA events on the compute stream; a slice whose copy is late shows up as a
        gap inside that span)."""
        out = np.zeros(self.n, np.int64)
        if self.n == 0:
            return out, 0.0
        self.end.synchronize()
        self.held = ()
        self.d_out.copy_to_host(out)
        try:
            seconds = self.start.elapsed_time(self.end) / 1e3
        except Exception:  # the simulator's events carry no time
            seconds = 0.0
        return out, max(seconds, 0.0)


def _stage_block(items: int, dtype):
    """A page-locked array of at least ``items`` of ``dtype`` leased from the process's pool (it goes
    back there when every view of it is dropped), or None: where no spare block of the pool holds it
    and a new one would take more than :data:`STAGE_HOST_SHARE` of the memory this process may
    still allocate, or where page-locking fails. Sizes are rounded up to a sixteenth of their power
    of two, so that a batch a little larger than the last still takes its block."""
    dtype = np.dtype(dtype)
    nbytes = max(items, 1) * dtype.itemsize
    step = 1 << max(nbytes.bit_length() - 4, 20)
    nbytes = -(-nbytes // step) * step
    pool = pinned_pool()
    if all(size < nbytes for size in pool.spare) and nbytes > STAGE_HOST_SHARE * available_memory():
        return None
    try:
        return pool.lease(nbytes // dtype.itemsize, dtype)
    except Exception:  # the driver would not page-lock that much (CudaAPIError), or no memory at all
        return None


def host_symbols(count: int) -> np.ndarray:
    """``count`` bytes of host memory for a batch's symbols as the host reads them (a list of str:
    :mod:`.strlists`): from :data:`STAGE_MIN_BYTES` on, a page-locked block of the process's pool
    (:func:`_stage_block`, given back when the last view of it goes), which :func:`launch` copies to
    the device from where it lies, slice by slice, with no staging copy; a smaller batch, or one for
    which no block can be had, in pageable memory."""
    if count >= STAGE_MIN_BYTES:
        block = _stage_block(count, np.uint8)
        if block is not None:
            # the lease's own type: a plain ndarray view of it would not hold it (numpy makes a view's
            # base the array beneath the lease), and the pool would lend the block again meanwhile
            return block[:count]
    return np.empty(count, np.uint8)


def _staging_block(packed: Packed, items: int):
    """The page-locked block of ``items`` symbols a batch of at least :data:`STAGE_MIN_BYTES` of
    symbols is staged through, or None: a smaller batch, or one for which no block can be had
    (:func:`_stage_block`), is copied from where it lies."""
    if (len(packed.pat) + len(packed.txt)) * packed.pat.dtype.itemsize < STAGE_MIN_BYTES:
        return None
    return _stage_block(items, packed.pat.dtype)


def _growing(packed: Packed) -> bool:
    """Whether the batch is bytes packed without their table (``pack(..., table=False)``): its table
    is found on the device (:func:`launch`'s slices, :func:`_pageable`) or, for the subsequences'
    single upload, by its staging copy (:func:`_upload`)."""
    return bool(packed.mapped and packed.sigma == 0)


def _device_table(packed: Packed, d_pat, d_txt, st=0) -> None:
    """A byte batch packed without its table, copied from where it lies, gets it here: the bytes
    present are found on the device (one pass over ``d_pat`` and ``d_txt`` on stream ``st``, a flag
    per byte value), so the host never reads the sequences; the host waits for the flags (the
    kernel is compiled for the number of codes)."""
    if _growing(packed):
        flags = cuda.to_device(np.zeros(256, np.int32), stream=st)
        for d in (d_pat, d_txt):
            _flag_bytes(d, flags, st)
        present = flags.copy_to_host(stream=st)
        if st:
            st.synchronize()
        packed.table, packed.sigma = table_of(present != 0)


def _flag_bytes(d, flags, st=0) -> None:
    """Queue on stream ``st`` the kernel that sets ``flags[v]`` (int32, 256) for every byte value
    ``v`` the device array ``d`` holds."""
    if len(d):
        _present_kernel()[(*stride_grid(len(d)), st)](d, len(d), flags)


def _pageable(packed: Packed, st=0):
    """A batch that is not staged on the device, ``(d_pat, d_txt)``: ``cuda.to_device`` from where
    it lies (one synchronous copy from pageable memory each, at a third of a staged copy's speed),
    or the arrays themselves when they lie in GPU memory already, and a byte batch's table found
    there (:func:`_device_table`, on stream ``st``)."""
    if is_device_array(packed.pat):
        d_pat, d_txt = packed.pat, packed.txt
    else:
        d_pat, d_txt = cuda.to_device(packed.pat), cuda.to_device(packed.txt)
    _device_table(packed, d_pat, d_txt, st)
    return d_pat, d_txt


def _stage(packed: Packed, region, d_pat, d_txt, p0: int, p1: int, st, mark: bool) -> np.ndarray:
    """Stage pairs ``p0 .. p1 - 1``: their patterns' and then their texts' symbols copied by all of
    numba's threads (:func:`stage_copy`) into ``region`` (page-locked, at least that long), and from
    there to their places in ``d_pat`` and ``d_txt`` asynchronously on stream ``st`` (at once on the
    default stream ``0``). Each pair's symbols are read once; with ``mark``, the byte values they
    hold come back (256 flags). With ``region`` None (a batch page-locked where it lies) the copies
    to the device go from there, and nothing is marked."""
    chunk = max(COPY_CHUNK_BYTES // packed.pat.dtype.itemsize, 1)
    present = np.zeros(256, np.bool_)
    o = 0
    for host, off, dev in ((packed.pat, packed.pat_off, d_pat), (packed.txt, packed.txt_off, d_txt)):
        a0, a1 = int(off[p0]), int(off[p1])
        if region is None:  # page-locked where they lie: copied from there
            part = host[a0:a1]
        else:
            part = region[o : o + a1 - a0]
            present |= stage_copy(part, host[a0:a1], chunk, mark)
        if a1 > a0:
            dev[a0:a1].copy_to_device(part, stream=st)
        o += a1 - a0
    return present


def _upload(packed: Packed):
    """The batch's symbols on the device, ``(d_pat, d_txt)``, and a byte batch's table, on the
    default stream (done on return): for the subsequences' kernels, which need the whole batch
    before they start. A batch of at least :data:`STAGE_MIN_BYTES` is staged in one page-locked
    block in one pass (its table found by that staging copy: the host waits for the whole upload
    anyway), a smaller one copied from where it lies (:func:`_pageable`)."""
    direct = is_page_locked(packed.pat) and is_page_locked(packed.txt)
    block = None if direct else _staging_block(packed, len(packed.pat) + len(packed.txt))
    if block is None:  # small, or page-locked already (then copied by DMA from where it lies)
        return _pageable(packed)
    d_pat = cuda.device_array(len(packed.pat), packed.pat.dtype)
    d_txt = cuda.device_array(len(packed.txt), packed.txt.dtype)
    grow = _growing(packed)
    present = _stage(packed, block.view(np.ndarray), d_pat, d_txt, 0, len(packed.pat_off) - 1, 0, grow)
    if grow:
        packed.table, packed.sigma = table_of(present)
    return d_pat, d_txt


def _slices(packed: Packed) -> list[tuple[int, int]]:
    """A staged batch's slices ``[p0, p1)``: runs of whole pairs in order, as many as make about
    :data:`SLICE_BYTES` of symbols each (at least one). Each cut comes at the first pair boundary
    with an equal share of the symbols still to cut before it; every slice but the last holds at
    least :data:`MIN_SLICE_PAIRS` pairs, and so does the last unless it is the only one."""
    n = len(packed.pat_off) - 1
    before = packed.pat_off - packed.pat_off[0] + packed.txt_off - packed.txt_off[0]
    total = int(before[-1])
    least = max(int(MIN_SLICE_PAIRS), 1)
    count = max(1, min(-(-total * packed.pat.dtype.itemsize // max(int(SLICE_BYTES), 1)), n // least))
    out, p0 = [], 0
    for left in range(count, 1, -1):  # slices still to cut, this one included
        target = int(before[p0]) + (total - int(before[p0])) // left
        p1 = max(int(np.searchsorted(before, target)), p0 + least)
        if n - p1 < least:
            break
        out.append((p0, p1))
        p0 = p1
    out.append((p0, n))
    return out


def launch(packed: Packed, spec: PairKernel = LCS) -> Launch:
    """Copy the batch to the device and start its kernels; the host is free until ``finish()``.

    A batch of at least :data:`STAGE_MIN_BYTES` of symbols is cut into slices of whole pairs
    (:func:`_slices`) and pipelined on two streams: slice by slice, the host stages its symbols in
    one page-locked block (:func:`_stage`: all the process's threads, each symbol read once) and
    queues their copy on the copy stream, and the compute stream, after waiting for that copy (an
    event), runs the slice's kernel, so that the host stages slice ``k + 1`` while the GPU computes
    slice ``k``. The device arrays are the whole batch's, made up front; a slice's copy fills its
    range and its kernel takes views of the offsets (absolute positions) and of the results.

    A byte batch's table (``table=False``) is found on the device: behind each slice's copy, a
    kernel on the copy stream flags the byte values the slice holds and the flags come back to
    page-locked memory; the host stages slice ``k + 1`` before it waits for slice ``k``'s flags, so
    its part of a slice stays one plain copy (marking every byte on the host cost more than the
    copy, and with several processes on one host their staging shares the cores). The table only
    grows, slice by slice, the bytes first seen in a slice taking the next free codes, so that
    every slice's bytes map one to one. Each slice's kernel reads its own copy of the table as it
    stood then (uploaded on the compute stream), and is the one compiled for that many codes: a
    pair's value depends only on which of its symbols are equal, never on their codes.
    ``packed.table`` / ``packed.sigma`` end as the whole batch's table.

    A batch whose symbols lie in page-locked memory already (:func:`gpudp.backends.page_locked`, e.g.
    a Dask worker's resident blocks) goes the same way without the host's part: each slice is
    copied to the device from where it lies (DMA), whatever the batch's size.

    A smaller batch, or one for which no page-locked block can be had, is one slice copied from
    where it lies, its table found on the device (:func:`_pageable`); a batch whose symbols lie in
    GPU memory (``pat`` and ``txt`` device arrays: :func:`gpudp.problems.lcs.batch.device_arrays`)
    is one slice read where it lies, nothing copied."""
    n = len(packed.pat_off) - 1
    if n == 0:
        return Launch(0, None, None, None)
    copy, compute = stream(), stream()
    resident = is_device_array(packed.pat)  # in GPU memory already: one slice, read where it lies
    direct = is_page_locked(packed.pat) and is_page_locked(packed.txt)
    if not direct:  # symbols still to read (packed.fill) are read slice by slice on the direct path
        filled(packed)
    slices = [(0, n)] if resident else _slices(packed)
    grow = _growing(packed)
    ring = min(STAGE_SLOTS, len(slices))
    slot, block = 0, None  # a slice's symbols, and the block they are staged in
    if not (direct or resident):
        ends = packed.pat_off + packed.txt_off
        slot = max(int(ends[p1] - ends[p0]) for p0, p1 in slices)
        block = _staging_block(packed, ring * slot)
    if block is None and not direct:
        slices, grow = [(0, n)], False
        d_pat, d_txt = _pageable(packed, copy)
    else:
        d_pat = cuda.device_array(len(packed.pat), packed.pat.dtype, stream=copy)
        d_txt = cuda.device_array(len(packed.txt), packed.txt.dtype, stream=copy)
    # everything is allocated before the first kernel is queued (freeing device memory waits for
    # the device), and the offsets are copied (from pageable memory) while the copy stream is idle
    pat_off, txt_off = (
        x if is_device_array(x) else cuda.to_device(x, stream=copy) for x in (packed.pat_off, packed.txt_off)
    )
    d_out = cuda.device_array(n, np.int64, stream=compute)
    if grow:
        d_table = cuda.device_array(256 * len(slices), np.uint8, stream=copy)
        table, sigma = np.zeros(256, np.uint8), 0
        seen = np.zeros(256, np.bool_)
    else:
        d_table = cuda.to_device(packed.table, stream=copy)
        table, sigma = packed.table, packed.sigma
    staged = None if block is None else block.view(np.ndarray)
    copied = [None] * ring  # per slot: its last copy's event (the slot is free again after it)
    marked = [None] * len(slices)  # per slice: its copy (and its byte flags) done
    if grow:  # each slice's bytes found on the device, their flags back in page-locked memory
        d_flags = cuda.to_device(np.zeros((len(slices), 256), np.int32), stream=copy)
        small = pinned_pool().lease(2 * 256 * len(slices), np.int32)  # flags, then the tables
        host_flags = small[: 256 * len(slices)].reshape(len(slices), 256)
        host_tabs = small[256 * len(slices) :].view(np.uint8)[: 256 * len(slices)].reshape(len(slices), 256)

    def queue(k: int) -> None:
        """Stage slice ``k`` (the host's part: a plain copy into a free slot) and queue its copy to
        the device, and with a growing table its bytes' flags, on the copy stream."""
        p0, p1 = slices[k]
        if copied[k % ring] is not None and not direct:
            copied[k % ring].synchronize()
        region = None if direct else staged[(k % ring) * slot : (k % ring + 1) * slot]
        if packed.fill is not None:  # read now, while the GPU copies and computes the slices before
            packed.fill(p0, p1)
        _stage(packed, region, d_pat, d_txt, p0, p1, copy, False)
        if grow:
            for d, off in ((d_pat, packed.pat_off), (d_txt, packed.txt_off)):
                _flag_bytes(d[int(off[p0]) : int(off[p1])], d_flags[k], copy)
            d_flags[k].copy_to_host(host_flags[k], stream=copy)
        copied[k % ring] = marked[k] = event(timing=False)
        marked[k].record(copy)

    words = _pow2(packed.max_words)
    threads = sim_geometry(THREADS, 32)
    start, end = event(), event()
    pipelined = direct or staged is not None
    with drained(copy, compute):  # a failed read (packed.fill): nothing left in flight into leases
        if pipelined:
            queue(0)
        for k, (p0, p1) in enumerate(slices):
            if pipelined and k + 1 < len(slices):
                queue(k + 1)  # the host stages the next slice before waiting for this one's flags
            tab, ready = d_table, marked[k]
            if grow:
                ready.synchronize()
                new = np.flatnonzero((host_flags[k] != 0) & ~seen)
                table[new] = sigma + np.arange(len(new))
                seen[new] = True
                sigma += len(new)
                host_tabs[k] = table
                tab = d_table[256 * k : 256 * (k + 1)]
            if ready is None:  # not staged: copied from where it lies, on the copy stream
                ready = event(timing=False)
                ready.record(copy)
            ready.wait(compute)
            if grow:
                tab.copy_to_device(host_tabs[k], stream=compute)
            if k == 0:
                start.record(compute)
            codes = max(sigma, 1)
            long = spec.long is not None and LONG_WORDS and packed.max_words >= LONG_WORDS
            if long:  # a warp a pair: the words over its 32 lanes
                kernel = _long_kernel(spec, _pow2(codes), -(-words // 32))
            else:
                kernel = _kernel(spec, _pow2(codes), words)
            args = (
                d_pat,
                pat_off[p0 : p1 + 1],
                d_txt,
                txt_off[p0 : p1 + 1],
                codes,
                tab,
                packed.mapped,
                d_out[p0:p1],
            )
            grid = cached_grid(kernel, args, threads, -(-(p1 - p0) * (32 if long else 1) // threads))
            kernel[grid, threads, compute](*args)  # (a warp a pair for the long kernel)
    end.record(compute)
    packed.fill = None  # every slice read
    if grow:
        packed.table, packed.sigma = table, max(sigma, 1)
    held = (block, d_pat, d_txt, pat_off, txt_off, d_table)
    if grow:
        held += (d_flags, small)
    return Launch(n, d_out, start, end, held=held)


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

# One thread a pair walks back through its vectors; its matched positions go to ``out_a`` /
# ``out_b`` (positions in the pair's ``a`` and ``b``) from ``ostart[t] - o0`` on.


@factory("lcs.cuda.traceback")
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
        "span": span,
    }
    return load(cuda_code.lcs_columns, ns, generated_kernel), load(cuda_code.lcs_walk, ns, generated_kernel)


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
        return lengths, found, cross_cuda.elapsed(self.events)


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
    d_pat, d_txt = _upload(packed)  # on the default stream: copied on return
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
        args = (
            *common,
            packed.sigma,
            d_table,
            packed.mapped,
            d_order,
            t0,
            t1,
            d_goff,
            d_gw,
            base0,
            store,
            d_len,
        )
        columns[cached_grid(columns, args, threads, blocks), threads, st](*args)
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


def refusal(packed: Packed, pl) -> str | None:
    """Why the vectors' kernel cannot take the batch (the pairs ``pl.order`` of the
    :class:`.subsequences.Plan` ``pl``): its pattern masks need more than :data:`.subsequences.PM_LIMIT` local
    words a thread (the bytes present are found on the host before a byte batch is refused); None
    when it can."""
    limit = traced.PM_LIMIT
    words = int(((np.diff(packed.pat_off)[pl.order] + 63) // 64).max(initial=1))
    sigma = 256 if packed.mapped and packed.sigma == 0 else packed.sigma  # bytes: at most 256
    if pm_words(sigma, words) > limit and packed.mapped:
        sigma = ensure_table(packed).sigma  # the bytes present, found on the host
    if pm_words(sigma, words) > limit:
        return (
            f"{sigma} symbol codes x {words} words a pattern need {pm_words(sigma, words)} words of "
            f"masks a GPU thread (at most {limit})"
        )
    return None


def subsequences(packed: Packed, pl, lengths, found, while_busy, extra: dict):
    """:func:`gpudp.problems.lcs.cpu.subsequences` on the GPU (:func:`launch_subsequences`),
    ``while_busy()`` on the host while it computes: ``(pos_a, pos_b, kernel seconds)``;
    ``extra["vectors_and_walk_s"]``: the wall time from the copy of the symbols to the positions
    on the host, the launch's figures beside it."""
    t = time.perf_counter()
    pos_a, pos_b = host_positions(pl.size, pl.dtype)
    run = launch_subsequences(packed, pl.order, pl.start, pos_a, pos_b) if len(pl.order) else None
    while_busy()
    kernel_s = 0.0
    if run is not None:
        got_len, got_found, kernel_s = run.finish()
        lengths[pl.order], found[pl.order] = got_len[: len(pl.order)], got_found[: len(pl.order)]
        extra.update(run.info)
    extra["vectors_and_walk_s"] = time.perf_counter() - t
    return pos_a, pos_b, kernel_s
