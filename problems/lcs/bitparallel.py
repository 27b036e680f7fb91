"""LCS lengths by Hyyrö's bit-vector recurrence: 64 cells of the DP table per word operation.

For a pattern ``a`` of ``m`` symbols, ``PM[c]`` has bit ``i`` set where ``a[i] == c``. A vector
``S`` of ``m`` bits starts all ones; each symbol ``c`` of the text ``b`` updates it as

    U = S & PM[c];   S = (S + U) | (S - U)

(``S - U`` is ``S ^ U``, as ``U`` lies inside ``S``), the addition carrying across the 64-bit words
of ``S``. After the whole text, the number of zero bits among the ``m`` is the LCS length (Hyyrö,
"Bit-parallel LCS-length computation revisited", 2004; the same recurrence as Allison and Dix).

The batch is packed once (:func:`pack`): patterns and texts concatenated as dense symbol codes with
offsets, the shorter sequence of each pair as the pattern. :func:`lengths_cpu` runs one pair per
iteration of a parallel loop; the GPU twin, one pair per thread, is in :mod:`.cuda`. The word
step and the final count are ``register_jitable``: one source for both compilers.

**Subsequences from the vectors.** Write ``D[i][j]`` for the LCS length of ``a[:i]`` and ``b[:j]``
and ``V_j`` for the vector after ``j`` text symbols (``V_0`` all ones). Bit ``i - 1`` of ``V_j`` is
0 exactly when ``D[i][j] - D[i-1][j] = 1`` and 1 when that difference is 0 (the differences down a
column are 0 or 1: Hyyrö's invariant, which is why the zero bits of ``V_n`` count ``D[m][n]``;
``tests/test_lcs_many.py`` compares the vectors with the textbook table bit by bit). Kept for every column
(:func:`store_columns`, ``ceil(m / 64)`` words a column), these vectors are the whole table, one
bit a cell, and :func:`walk_back` recovers a longest common subsequence from ``(m, n)``, keeping
``D[i][j]`` equal to the number of matches still to find:

* ``a[i-1] == b[j-1]``: ``D[i][j] = D[i-1][j-1] + 1`` (``>=``: append the match; ``<=``: a common
  subsequence of the prefixes less its last pair is one of ``a[:i-1]`` and ``b[:j-1]``), so the pair
  ``(i-1, j-1)`` is taken and the walk goes diagonally;
* else ``D[i][j] = max(D[i-1][j], D[i][j-1])``: when bit ``i - 1`` of ``V_j`` is 1, ``D[i-1][j] =
  D[i][j]`` and the walk goes up; when it is 0, ``D[i-1][j] < D[i][j]``, so the maximum is
  ``D[i][j-1] = D[i][j]`` and the walk goes left.

The walk ends on row 0 or column 0, where ``D`` is 0: it has taken exactly ``D[m][n]`` pairs, at
positions strictly decreasing in both sequences, each a pair of equal symbols. One bit is read a
step (none for a match), at most ``m + n`` steps a pair. :func:`subsequences_cpu` runs vectors and
walk a pair per iteration of a parallel loop; :mod:`.cuda` runs them as two kernels over chunks of
pairs; :func:`check_subsequences` checks every result independently of both.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numba
import numpy as np
from numba import prange
from numba.extending import register_jitable

from gpudp.jit import njit

__all__ = [
    "Packed",
    "pack",
    "pack_arrays",
    "row_offsets",
    "ensure_table",
    "table_of",
    "lengths_cpu",
    "dense",
    "lcs_of",
    "lcs_text",
    "clamp",
    "span",
    "popcount64",
    "word_step",
    "masks",
    "lane_masks",
    "store_columns",
    "walk_back",
    "filled",
    "stage_copy",
    "subsequences_cpu",
    "check_subsequences",
    "FAULTS",
]


@dataclass
class Packed:
    """A batch of pairs: ``pat[pat_off[p]:pat_off[p + 1]]`` is pair ``p``'s pattern (its shorter
    sequence), ``txt[...]`` its text; ``sigma`` symbol codes in all. Bytes stay as given and the
    kernels read their codes through ``table`` (byte -> code, ``mapped`` True), so that packing does
    not rewrite the batch; other symbols are renumbered to codes once (``mapped`` False)."""

    pat: np.ndarray
    pat_off: np.ndarray
    txt: np.ndarray
    txt_off: np.ndarray
    sigma: int
    table: np.ndarray = field(default_factory=lambda: np.zeros(1, np.uint8))
    mapped: bool = False
    #: ``swapped[p]`` (uint8) is 1 where pair ``p``'s pattern is its second sequence ``b``
    swapped: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))
    #: where the pairs' symbols are still to be read (a list read later: :class:`.strlists.LaterRows`),
    #: ``fill(p0, p1)`` reads those of pairs ``p0 .. p1 - 1`` into ``pat`` and ``txt`` (a launch that
    #: copies slice by slice calls it a slice at a time; anything else reads them all first,
    #: :func:`filled`); None: every symbol is there
    fill: object = None

    @functools.cached_property  # found once (a pass over 4,000,000 offsets: 30 ms), or given
    def cells(self) -> int:
        return int(np.dot(np.diff(self.pat_off), np.diff(self.txt_off)))

    @functools.cached_property
    def max_words(self) -> int:
        m = int(np.diff(self.pat_off).max(initial=0))
        return max(1, -(-m // 64))


def filled(packed: Packed) -> Packed:
    """``packed`` with every pair's symbols read (its ``fill`` called for all of them, then dropped)."""
    if packed.fill is not None:
        fill, packed.fill = packed.fill, None
        fill(0, len(packed.pat_off) - 1)
    return packed


def pack(pairs: list[tuple[np.ndarray, np.ndarray]], table: bool = True) -> Packed:
    """Pack integer-coded pairs (each pair's two arrays compare as integers) into dense codes.

    Symbols are renumbered over the whole batch (through a 256-entry table when all are bytes), so
    that ``PM`` needs one row per symbol that occurs."""
    la = np.fromiter((len(ea) for ea, _ in pairs), np.int64, len(pairs))
    lb = np.fromiter((len(eb) for _, eb in pairs), np.int64, len(pairs))
    swapped = (la > lb).astype(np.uint8)  # the shorter sequence is the pattern
    pats = [eb if s else ea for (ea, eb), s in zip(pairs, swapped.tolist(), strict=True)]
    txts = [ea if s else eb for (ea, eb), s in zip(pairs, swapped.tolist(), strict=True)]
    pat_off = np.zeros(len(pairs) + 1, np.int64)
    txt_off = np.zeros(len(pairs) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, pats), np.int64, len(pats)), out=pat_off[1:])
    np.cumsum(np.fromiter(map(len, txts), np.int64, len(txts)), out=txt_off[1:])
    if all(x.dtype == np.uint8 for x in pats) and all(x.dtype == np.uint8 for x in txts):
        allp = np.concatenate(pats) if pats else np.zeros(0, np.uint8)
        allt = np.concatenate(txts) if txts else np.zeros(0, np.uint8)
    else:
        allp = np.concatenate([np.asarray(x, np.int64) for x in pats]) if pats else np.zeros(0, np.int64)
        allt = np.concatenate([np.asarray(x, np.int64) for x in txts]) if txts else np.zeros(0, np.int64)
    packed = dense(allp, pat_off, allt, txt_off, table)
    packed.swapped = swapped
    return packed


@njit(parallel=True, cache=True)
def _turned(a, a_off, b, b_off, swapped, pat_off, txt_off):
    """Each pair's pattern and text (``b`` and ``a`` where ``swapped``, else ``a`` and ``b``) copied
    to their offsets in two new arrays, a slice copy each, in one parallel pass over the pairs."""
    pat = np.empty(pat_off[-1], a.dtype)
    txt = np.empty(txt_off[-1], a.dtype)
    for p in prange(len(swapped)):
        x0, x1, y0, y1 = a_off[p], a_off[p + 1], b_off[p], b_off[p + 1]
        if swapped[p]:
            pat[pat_off[p] : pat_off[p + 1]] = b[y0:y1]
            txt[txt_off[p] : txt_off[p + 1]] = a[x0:x1]
        else:
            pat[pat_off[p] : pat_off[p + 1]] = a[x0:x1]
            txt[txt_off[p] : txt_off[p + 1]] = b[y0:y1]
    return pat, txt


def pack_buffers(a, a_off, b, b_off, table: bool = True) -> Packed:
    """Pack pairs given as two arrays of symbols with offsets (pair ``p`` is ``a[a_off[p]:a_off[p +
    1]]`` and the same of ``b``; both arrays bytes, or both exact integer codes of one dtype): the
    shorter of each pair becomes its pattern, patterns and texts copied from ``a`` and ``b`` in one
    parallel pass (no array per pair), or none at all where no pair or every pair turns round."""
    la, lb = np.diff(a_off), np.diff(b_off)
    swapped = la > lb
    if not swapped.any() or swapped.all():  # no pair to turn round (all of one length): as given
        out = [a, a_off, b, b_off] if not swapped.any() else [b, b_off, a, a_off]
    else:
        pat_off, txt_off = np.zeros(len(la) + 1, np.int64), np.zeros(len(la) + 1, np.int64)
        np.cumsum(np.minimum(la, lb), out=pat_off[1:])
        np.cumsum(np.maximum(la, lb), out=txt_off[1:])
        if a.dtype != b.dtype:  # one dtype for both (the callers' already is)
            dt = np.promote_types(a.dtype, b.dtype)
            a, b = a.astype(dt), b.astype(dt)
        pat, txt = _turned(a, a_off, b, b_off, swapped, pat_off, txt_off)
        out = [pat, pat_off, txt, txt_off]
    packed = dense(*out, table)
    packed.swapped = swapped.astype(np.uint8)
    return packed


def row_offsets(n: int, length: int) -> np.ndarray:
    """``0, length, .., n * length``: the offsets of ``n`` rows of ``length`` symbols."""
    return np.arange(n + 1, dtype=np.int64) * length


def pack_arrays(a: np.ndarray, b: np.ndarray, table: bool = True, offsets=row_offsets) -> Packed:
    """Pack pairs given as two 2-D integer arrays, row ``p`` of each being pair ``p`` (no Python
    loop over the pairs). ``table=False`` leaves a byte batch's table to be made where it runs
    (:func:`ensure_table` on the host; the cuda module finds the bytes present on the device, or
    for the subsequences' single upload as it stages it). ``offsets(n, length)`` makes the rows'
    offsets (:func:`row_offsets`; the cuda module makes them on the device for arrays there)."""
    swapped = a.shape[1] > b.shape[1]
    if swapped:
        a, b = b, a
    n = a.shape[0]
    pat_off, txt_off = offsets(n, a.shape[1]), offsets(n, b.shape[1])
    packed = dense(a.reshape(-1), pat_off, b.reshape(-1), txt_off, table)
    packed.swapped = np.full(n, swapped, np.uint8)
    packed.cells, packed.max_words = n * a.shape[1] * b.shape[1], max(1, -(-a.shape[1] // 64))
    return packed


@njit(cache=True)
def _bytes_present_serial(x):
    """Which of the 256 byte values occur in ``x``, on this thread."""
    out = np.zeros(256, np.bool_)
    for i in range(len(x)):
        out[x[i]] = True
    return out


@njit(parallel=True, cache=True)
def _bytes_present(x, chunks):
    """Which of the 256 byte values occur in ``x``: one row of flags per chunk (no two threads
    write one cache line), OR-ed at the end."""
    flags = np.zeros((chunks, 256), np.bool_)
    n = len(x)
    for c in prange(chunks):
        row = flags[c]
        for i in range(n * c // chunks, n * (c + 1) // chunks):
            row[x[i]] = True
    out = np.zeros(256, np.bool_)
    for c in range(chunks):
        out |= flags[c]
    return out


#: bytes from which :func:`ensure_table` marks the bytes present on every thread: below it one
#: thread takes 17 us for 100 KB where a parallel region took 34 us at best and up to 70 ms when
#: the pool's threads had to be woken on a shared 2-core host (2026-12-07: mean 5.4 ms over 100 calls)
PRESENT_PARALLEL = 1 << 22

#: symbols the staging copy moves before it marks them (:func:`stage_copy`): the marking loop then
#: reads them from the core's L1 cache, not from memory a second time
MARK_BLOCK = 16 << 10


@njit(parallel=True, cache=True)
def stage_copy(dst, src, chunk, mark):
    """``dst[:] = src`` (1-D, equal lengths) on all of numba's threads, ``chunk`` items a task; with
    ``mark`` (``src`` holds bytes), also which of the 256 byte values ``src`` holds (else all False).

    A task copies :data:`MARK_BLOCK` items at a time by slice assignment (vectorised: an indexed loop
    over ``range(lo, hi)`` is not, as its signed index may wrap), then marks them from its L1 cache
    in its own row of flags (no two tasks write one cache line); the rows are OR-ed at the end."""
    n = len(src)
    tasks = (n + chunk - 1) // chunk
    flags = np.zeros((tasks if mark else 0, 256), np.bool_)
    for c in prange(tasks):
        lo = c * chunk
        hi = min(lo + chunk, n)
        if mark:
            row = flags[c]
            for j in range(lo, hi, MARK_BLOCK):
                k = min(j + MARK_BLOCK, hi)
                dst[j:k] = src[j:k]
                s = src[j:k]
                for i in range(k - j):
                    row[s[i]] = True
        else:
            dst[lo:hi] = src[lo:hi]
    present = np.zeros(256, np.bool_)
    for c in range(flags.shape[0]):
        present |= flags[c]
    return present


def table_of(present: np.ndarray) -> tuple[np.ndarray, int]:
    """The byte -> code table of the bytes ``present`` (256 flags), and how many codes."""
    present = np.asarray(present, bool)
    return (np.cumsum(present) - 1).astype(np.uint8), max(int(present.sum()), 1)


def ensure_table(packed: Packed) -> Packed:
    """Give a byte batch packed with ``table=False`` its table, found on the host."""
    if packed.mapped and packed.sigma == 0:
        chunks = 4 * numba.get_num_threads()
        present = np.zeros(256, bool)
        for x in (packed.pat, packed.txt):
            present |= _bytes_present(x, chunks) if len(x) >= PRESENT_PARALLEL else _bytes_present_serial(x)
        packed.table, packed.sigma = table_of(present)
    return packed


def dense(allp, pat_off, allt, txt_off, table: bool = True) -> Packed:
    """Patterns ``allp`` and texts ``allt`` with their offsets (both exact integer codes of one
    dtype) as a :class:`Packed` batch: bytes as given, read through their table (found now unless
    ``table=False``), other symbols renumbered to dense codes over both."""
    if allp.dtype == np.uint8 and allt.dtype == np.uint8:
        packed = Packed(allp, pat_off, allt, txt_off, 0, np.zeros(256, np.uint8), True)
        return ensure_table(packed) if table else packed
    both = np.concatenate([allp.astype(np.int64), allt.astype(np.int64)])
    uniq, inv = np.unique(both, return_inverse=True)
    sigma = max(len(uniq), 1)
    dt = np.uint8 if sigma <= 256 else np.int32
    return Packed(inv[: len(allp)].astype(dt), pat_off, inv[len(allp) :].astype(dt), txt_off, sigma)


@register_jitable
def popcount64(x):
    """Set bits of a uint64 (SWAR; the same source compiles for the CPU and the GPU)."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (x * np.uint64(0x0101010101010101)) >> np.uint64(56)


@register_jitable
def span(pat_off, txt_off, p):
    """Pair ``p`` of a packed batch: ``(a0, m, b0, n)``, where its pattern and text start and their
    lengths (the same source compiles for the CPU and the GPU)."""
    a0 = pat_off[p]
    b0 = txt_off[p]
    return a0, pat_off[p + 1] - a0, b0, txt_off[p + 1] - b0


@register_jitable
def word_step(s, pm, carry):
    """One 64-bit word of ``S = (S + U) | (S - U)``, ``U = S & PM``: (new word, carry out)."""
    u = s & pm
    t = s + u
    c1 = t < s
    x = t + carry
    c2 = x < t
    return x | (s ^ u), np.uint64(c1 or c2)


@register_jitable
def lcs_of(s, w, m):
    """The zero bits among the first ``m`` of the ``w`` words ``s``: the LCS length."""
    ones = 0
    for q in range(w - 1):
        ones += popcount64(s[q])
    tail = m - 64 * (w - 1)
    last = s[w - 1]
    if tail < 64:
        last &= (np.uint64(1) << np.uint64(tail)) - np.uint64(1)
    return m - ones - popcount64(last)


#: symbols of the text between two tests of :func:`lcs_text`'s early stop (each counts ``w`` words)
CUT_EVERY = 32
#: ``hi`` of a score with no upper cutoff (no value comes near it)
NO_CUTOFF = 1 << 62


@njit(cache=True)
def lcs_text(pm, w, m, txt, b0, b1, table, mapped, s, lo, hi):
    """The LCS length of a pattern of ``m`` symbols, its masks ``pm`` (:func:`masks`, ``w`` words a
    code), and the text ``txt[b0:b1]`` (codes through ``table`` when ``mapped``); ``s``: at least
    ``w`` words of scratch for the vector. ``lo``, ``hi``: the score cutoff's bounds (a similarity
    has only ``lo``, :func:`clamp`); a length below ``lo`` is reported as 0 as soon as it
    is certain, the length so far plus the symbols left below ``lo`` (each text symbol adds at most
    1), tested every :data:`CUT_EVERY` symbols (the length so far is a count of ``w`` words)."""
    if m == 0 or b1 == b0:
        return 0
    cut = lo > 0
    for q in range(w):
        s[q] = ~np.uint64(0)
    for k in range(b0, b1):
        x = txt[k]
        if mapped:
            x = table[x]
        row = x * w
        carry = np.uint64(0)
        for q in range(w):
            s[q], carry = word_step(s[q], pm[row + q], carry)
        if cut and (k - b0) % CUT_EVERY == CUT_EVERY - 1 and lcs_of(s, w, m) + (b1 - 1 - k) < lo:
            return np.int64(0)
    return np.int64(lcs_of(s, w, m))


@njit(cache=True)
def lcs_bounds(m, n):
    """Bounds of the LCS length of sequences of ``m`` and ``n`` symbols, from the lengths alone."""
    return 0, min(m, n)


@register_jitable
def clamp(v, lo, hi):
    """``v`` as a score cutoff reports it: 0 below ``lo`` (a similarity under its cutoff), ``hi +
    1`` above ``hi`` (a distance over its cutoff), else ``v`` itself (the same source compiles for
    the CPU and the GPU)."""
    if v < lo:
        return 0
    if v > hi:
        return hi + 1
    return v


@njit(parallel=True, cache=True)
def _lengths(pat, pat_off, txt, txt_off, sigma, table, mapped, out):
    for p in prange(len(out)):
        a0, m = pat_off[p], pat_off[p + 1] - pat_off[p]
        w = max((m + 63) // 64, 1)
        pm = np.empty(sigma * w, np.uint64)
        masks(pat, a0, m, w, sigma, table, mapped, pm)
        s = np.empty(w, np.uint64)
        out[p] = lcs_text(pm, w, m, txt, txt_off[p], txt_off[p + 1], table, mapped, s, 0, NO_CUTOFF)


def run_cpu(kernel, packed: Packed) -> np.ndarray:
    """``out[p]`` for every pair of ``packed`` by a compiled ``kernel(pat, pat_off, txt, txt_off,
    sigma, table, mapped, out)`` (a parallel loop over the pairs)."""
    ensure_table(packed)
    out = np.zeros(len(packed.pat_off) - 1, np.int64)
    if len(out):
        p = packed
        kernel(p.pat, p.pat_off, p.txt, p.txt_off, p.sigma, p.table, p.mapped, out)
    return out


def lengths_cpu(packed: Packed) -> np.ndarray:
    """The LCS length of every pair of ``packed``, on all CPU cores."""
    return run_cpu(_lengths, packed)


# ------------------------------------------------------------------------------------------------
# Subsequences: the column vectors kept, then walked back (see the module's docstring)


@register_jitable
def masks(pat, a0, m, w, sigma, table, mapped, pm):
    """``pm[c * w + q]``: word ``q`` of the bit mask of symbol code ``c`` in the pattern
    ``pat[a0:a0 + m]`` (``pm`` holds at least ``sigma * w`` words)."""
    for q in range(sigma * w):
        pm[q] = np.uint64(0)
    for i in range(m):
        x = pat[a0 + i]
        if mapped:
            x = table[x]
        pm[x * w + (i >> 6)] |= np.uint64(1) << np.uint64(i & 63)


@register_jitable
def lane_masks(pat, a0, m, lane, sigma, table, mapped, pm, wpl):
    """A warp-a-pair kernel's lane ``lane``: its share of the ``w`` 64-bit words of the pattern
    ``pat[a0:a0 + m]`` (``nq`` words from word ``q0``, ``ceil(w / 32)`` a lane, none past the
    pattern) and their masks, ``pm[c * wpl + q]`` for word ``q0 + q`` of symbol code ``c``
    (``pm`` holds ``sigma * wpl`` words). Returns ``(w, q0, nq)``."""
    w = (m + 63) // 64
    wl = (w + 31) // 32
    q0 = lane * wl
    nq = min(wl, max(w - q0, 0))
    for r in range(sigma * wpl):
        pm[r] = np.uint64(0)
    for i in range(64 * q0, min(m, 64 * (q0 + nq))):
        x = pat[a0 + i]
        if mapped:
            x = table[x]
        pm[x * wpl + (i >> 6) - q0] |= np.uint64(1) << np.uint64(i & 63)
    return w, q0, nq


@register_jitable
def store_columns(txt, b0, n, pm, w, table, mapped, s, store, base, col_stride, word_stride):
    """Run the ``n`` text symbols ``txt[b0:b0 + n]`` through the ``w``-word vector ``s`` (all ones on
    entry) and keep ``V_j`` (``j = 1 .. n``): its word ``q`` at ``store[base + (j - 1) * col_stride +
    q * word_stride]``."""
    for j in range(n):
        x = txt[b0 + j]
        if mapped:
            x = table[x]
        row = x * w
        col = base + j * col_stride
        carry = np.uint64(0)
        for q in range(w):
            s[q], carry = word_step(s[q], pm[row + q], carry)
            store[col + q * word_stride] = s[q]


@register_jitable
def walk_back(pat, a0, m, txt, b0, n, store, base, col_stride, word_stride, length, out_pat, out_txt, o):
    """Walk from ``(m, n)`` to row or column 0 through the vectors :func:`store_columns` kept, taking
    a match wherever the symbols are equal. The ``k``-th pair taken from the end goes to
    ``out_pat[o + length - k]`` / ``out_txt[...]`` (0-based positions in pattern and text, so that
    they come out increasing) while ``k <= length``; returns how many pairs were taken (``length``
    when the vectors and ``length`` agree: the caller checks)."""
    i = m
    j = n
    found = 0
    cached = -1
    word = np.uint64(0)
    while i > 0 and j > 0:
        if pat[a0 + i - 1] == txt[b0 + j - 1]:
            i -= 1
            j -= 1
            found += 1
            if found <= length:
                out_pat[o + length - found] = i
                out_txt[o + length - found] = j
        else:
            at = base + (j - 1) * col_stride + ((i - 1) >> 6) * word_stride
            if at != cached:
                word = store[at]
                cached = at
            if (word >> np.uint64((i - 1) & 63)) & np.uint64(1):
                i -= 1  # D[i-1][j] == D[i][j]: up
            else:
                j -= 1  # D[i][j-1] == D[i][j]: left
    return found


@register_jitable
def _pair_subsequence(
    p, pat, pat_off, txt, txt_off, sigma, table, mapped, swapped, start, lengths, found, pos_a, pos_b
):
    a0, m = pat_off[p], pat_off[p + 1] - pat_off[p]
    b0, n = txt_off[p], txt_off[p + 1] - txt_off[p]
    if m == 0 or n == 0:
        lengths[p] = 0
        found[p] = 0
        return
    w = (m + 63) // 64
    pm = np.empty(sigma * w, np.uint64)
    masks(pat, a0, m, w, sigma, table, mapped, pm)
    s = np.full(w, ~np.uint64(0), np.uint64)
    store = np.empty(n * w, np.uint64)  # this pair's vectors, freed with the iteration
    store_columns(txt, b0, n, pm, w, table, mapped, s, store, 0, w, 1)
    length = lcs_of(s, w, m)
    lengths[p] = length
    if swapped[p]:
        found[p] = walk_back(pat, a0, m, txt, b0, n, store, 0, w, 1, length, pos_b, pos_a, start[p])
    else:
        found[p] = walk_back(pat, a0, m, txt, b0, n, store, 0, w, 1, length, pos_a, pos_b, start[p])


@njit(parallel=True, cache=True)
def _subsequences(pat, pat_off, txt, txt_off, sigma, table, mapped, swapped, todo, *out):
    for t in prange(len(todo)):
        _pair_subsequence(todo[t], pat, pat_off, txt, txt_off, sigma, table, mapped, swapped, *out)


@njit(cache=True)
def _subsequences_serial(pat, pat_off, txt, txt_off, sigma, table, mapped, swapped, todo, *out):
    for t in range(len(todo)):  # one thread, no parallel region: callers on many Python threads
        _pair_subsequence(todo[t], pat, pat_off, txt, txt_off, sigma, table, mapped, swapped, *out)


def subsequences_cpu(packed: Packed, todo, start, lengths, found, pos_a, pos_b, serial: bool = False) -> None:
    """For every pair ``p`` of ``todo``: its LCS length into ``lengths[p]``, and its matched positions
    in ``a`` and ``b`` into ``pos_a`` / ``pos_b`` from ``start[p]`` on (``found[p]``: how many the
    walk took), one pair per iteration of a parallel loop on all CPU cores (``serial``: a plain loop,
    no parallel region, which numba's workqueue layer refuses to run from two Python threads at
    once); each iteration keeps its own pair's vectors only (``m * n / 8`` bytes), so memory holds
    one pair a thread."""
    ensure_table(packed)
    if len(todo):
        p = packed
        args = (p.pat, p.pat_off, p.txt, p.txt_off, p.sigma, p.table, p.mapped, p.swapped, todo)
        if serial:
            _subsequences_serial(*args, start, lengths, found, pos_a, pos_b)
            return
        chunk = max(1, len(todo) // (64 * numba.get_num_threads()))  # pairs of unequal sizes balance
        with numba.parallel_chunksize(chunk):
            _subsequences(*args, start, lengths, found, pos_a, pos_b)


#: what :func:`check_subsequences` reports for a pair, by its fault code
FAULTS = {
    1: "the walk back took {found} matched pairs for a bit-parallel length of {length}",
    2: "matched positions outside the sequences or not strictly increasing",
    3: "the symbols at a matched pair of positions differ",
}


@register_jitable
def _pair_fault(p, pat, pat_off, txt, txt_off, swapped, start, lengths, found, pos_a, pos_b):
    a0, m = pat_off[p], pat_off[p + 1] - pat_off[p]
    b0, n = txt_off[p], txt_off[p + 1] - txt_off[p]
    length = lengths[p]
    if found[p] != length or length < 0 or length > min(m, n):
        return 1
    o = start[p]
    last_i, last_j = -1, -1
    for k in range(length):
        ia, ib = np.int64(pos_a[o + k]), np.int64(pos_b[o + k])
        i, j = (ib, ia) if swapped[p] else (ia, ib)  # pattern and text positions
        if i <= last_i or j <= last_j or i >= m or j >= n:
            return 2
        if pat[a0 + i] != txt[b0 + j]:
            return 3
        last_i, last_j = i, j
    return 0


@njit(parallel=True, cache=True)
def _check(pat, pat_off, txt, txt_off, swapped, todo, start, lengths, found, pos_a, pos_b, fault):
    for t in prange(len(todo)):
        fault[t] = _pair_fault(
            todo[t], pat, pat_off, txt, txt_off, swapped, start, lengths, found, pos_a, pos_b
        )


@njit(cache=True)
def _check_serial(pat, pat_off, txt, txt_off, swapped, todo, start, lengths, found, pos_a, pos_b, fault):
    for t in range(len(todo)):
        fault[t] = _pair_fault(
            todo[t], pat, pat_off, txt, txt_off, swapped, start, lengths, found, pos_a, pos_b
        )


def check_subsequences(
    packed: Packed, todo, start, lengths, found, pos_a, pos_b, serial: bool = False
) -> np.ndarray:
    """A fault code (0: none, else a key of :data:`FAULTS`) for each pair of ``todo``: its positions
    ``pos_a`` / ``pos_b`` from ``start[p]`` must be ``lengths[p]`` pairs (``found[p]`` of them taken),
    strictly increasing in both sequences, inside them, on equal symbols. Independent of the walk:
    reads only the packed symbols and the positions (all CPU cores; ``serial``: one thread, as
    :func:`subsequences_cpu`)."""
    fault = np.zeros(len(todo), np.uint8)
    if len(todo):
        p = packed
        run = _check_serial if serial else _check
        run(p.pat, p.pat_off, p.txt, p.txt_off, p.swapped, todo, start, lengths, found, pos_a, pos_b, fault)
    return fault
