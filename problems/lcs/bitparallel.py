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
"""

from __future__ import annotations

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
    "ensure_table",
    "table_of",
    "lengths_cpu",
    "lcs_of",
    "popcount64",
    "word_step",
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

    @property
    def cells(self) -> int:
        return int(np.dot(np.diff(self.pat_off), np.diff(self.txt_off)))

    @property
    def max_words(self) -> int:
        m = int(np.diff(self.pat_off).max(initial=0))
        return max(1, -(-m // 64))


def pack(pairs: list[tuple[np.ndarray, np.ndarray]], table: bool = True) -> Packed:
    """Pack integer-coded pairs (each pair's two arrays compare as integers) into dense codes.

    Symbols are renumbered over the whole batch (through a 256-entry table when all are bytes), so
    that ``PM`` needs one row per symbol that occurs."""
    pats, txts = [], []
    for ea, eb in pairs:
        a, b = (ea, eb) if len(ea) <= len(eb) else (eb, ea)
        pats.append(a)
        txts.append(b)
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
    return _dense(allp, pat_off, allt, txt_off, table)


def pack_arrays(a: np.ndarray, b: np.ndarray, table: bool = True) -> Packed:
    """Pack pairs given as two 2-D integer arrays, row ``p`` of each being pair ``p`` (no Python
    loop over the pairs). ``table=False`` leaves a byte batch's table to be made where it runs
    (:func:`ensure_table` on the host; the cuda module finds the bytes present on the device)."""
    if a.shape[1] > b.shape[1]:
        a, b = b, a
    n = a.shape[0]
    pat_off = np.arange(n + 1, dtype=np.int64) * a.shape[1]
    txt_off = np.arange(n + 1, dtype=np.int64) * b.shape[1]
    return _dense(a.reshape(-1), pat_off, b.reshape(-1), txt_off, table)


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


def table_of(present: np.ndarray) -> tuple[np.ndarray, int]:
    """The byte -> code table of the bytes ``present`` (256 flags), and how many codes."""
    present = np.asarray(present, bool)
    return (np.cumsum(present) - 1).astype(np.uint8), max(int(present.sum()), 1)


def ensure_table(packed: Packed) -> Packed:
    """Give a byte batch packed with ``table=False`` its table, found on the host."""
    if packed.mapped and packed.sigma == 0:
        chunks = 4 * numba.get_num_threads()
        present = _bytes_present(packed.pat, chunks) | _bytes_present(packed.txt, chunks)
        packed.table, packed.sigma = table_of(present)
    return packed


def _dense(allp, pat_off, allt, txt_off, table: bool = True) -> Packed:
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


@njit(parallel=True, cache=True)
def _lengths(pat, pat_off, txt, txt_off, sigma, table, mapped, out):
    for p in prange(len(out)):
        a0, m = pat_off[p], pat_off[p + 1] - pat_off[p]
        b0, b1 = txt_off[p], txt_off[p + 1]
        if m == 0 or b1 == b0:
            out[p] = 0
            continue
        w = (m + 63) // 64
        pm = np.zeros((sigma, w), np.uint64)
        for i in range(m):
            x = pat[a0 + i]
            pm[table[x] if mapped else x, i >> 6] |= np.uint64(1) << np.uint64(i & 63)
        s = np.full(w, ~np.uint64(0), np.uint64)
        for k in range(b0, b1):
            c = table[txt[k]] if mapped else txt[k]
            carry = np.uint64(0)
            for q in range(w):
                s[q], carry = word_step(s[q], pm[c, q], carry)
        out[p] = lcs_of(s, w, m)


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
