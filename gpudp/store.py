"""Where finished wavefronts' decisions go, and how they are laid out.

The store is one flat array of uint32 words: in host memory (page-locked when the CUDA backend
fills it, so that copies from the device are asynchronous DMA), or, when it would pass the memory
budget, in a disk memmap in a temporary folder. Decisions of ``bits`` bits are kept as bit planes:
32 cells share ``bits`` words, plane ``b`` holding bit ``b`` of each cell.

Two layouts, each contiguous per unit of eviction so that a group of finished wavefronts is one
slice of the store:

``TileLayout``  (tiled grid sweeps) tiles in tile-anti-diagonal order; inside a tile,
                ``[column group of 32][plane][row]``. Rows come in lanes of ``rpt`` rows (the
                rows one GPU thread owns), and lane ``k``'s columns are shifted by ``k``: its bit
                for column ``jj`` sits at position ``jj + k``. The GPU kernel runs lane ``k`` ``k``
                columns behind lane 0, so with this shift every lane completes a word at the same
                step and the warp writes its words together, coalesced.
``LayerLayout`` (layered sweeps) layers in order; inside a layer, ``[group of 32 cells][plane]``.

A layered recurrence may instead declare the ``"bands"`` codec: :class:`BandStore` keeps, per layer,
two run values and the band of words between the runs (``encode_bands``, ``band_decision``).

A backend with a device of its own may leave a layered sweep's words there instead
(:class:`DeviceStore`, the backend's ``device_store``): the kernels write into the store itself, and
the host copies only the pages a walk or a decision reads.
"""

from __future__ import annotations

import atexit
import errno
import os
import shutil
import signal
import tempfile
import threading
from dataclasses import dataclass

import numba
import numpy as np

from .errors import CheckError, InputError
from .jit import njit
from .memory import available_memory, default_budget, describe, parse_bytes  # noqa: F401  (re-exported)

WORD = np.uint32
WORD_BYTES = 4


#: spill folders alive in this process; removed at exit, on SIGTERM / SIGHUP, or by ``close()``
_LIVE_DIRS: set[str] = set()
_HANDLERS_SET = [False]


def remove_spill_folders():
    """Remove every spill folder this process still has (at exit, or when a command stops on a
    signal before its stores are collected)."""
    for d in list(_LIVE_DIRS):
        shutil.rmtree(d, ignore_errors=True)
        _LIVE_DIRS.discard(d)


def _on_fatal_signal(signum, frame):
    """Default-action signals (SIGTERM, SIGHUP) would kill the process without running ``atexit``:
    remove the spill folders first, then die of the same signal as before."""
    remove_spill_folders()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _register_dir(path: str):
    """Track a spill folder so that no exit path leaves it behind: normal exit and exceptions
    (``atexit``), Ctrl-C (an exception), and SIGTERM / SIGHUP where they still have their default
    action (a handler that cleans up, then re-raises the signal; handlers set by the application,
    such as the ``gpudp`` command's, are left alone). SIGKILL cannot be caught."""
    _LIVE_DIRS.add(path)
    if _HANDLERS_SET[0]:
        return
    _HANDLERS_SET[0] = True
    atexit.register(remove_spill_folders)
    if threading.current_thread() is threading.main_thread():
        for name in ("SIGTERM", "SIGHUP"):
            sig = getattr(signal, name, None)
            if sig is not None and signal.getsignal(sig) == signal.SIG_DFL:
                signal.signal(sig, _on_fatal_signal)


def fits_in_memory(nbytes: int, budget: int) -> bool:
    """Whether ``nbytes`` may be kept in host memory: within the budget and within what this process
    may still allocate (:func:`gpudp.memory.available_memory`, cgroup and ulimit included), with
    a tenth of it left for everything else. A budget above the machine's memory is only a ceiling."""
    return nbytes <= budget and nbytes <= available_memory() * 0.9


def spills(n_words: int, budget: int) -> bool:
    """Whether a :class:`DecisionStore` of ``n_words`` words goes to a disk memmap under ``budget``
    (the engine's memory plan asks the same question before the store exists)."""
    return not fits_in_memory(n_words * WORD_BYTES, budget)


def reserve(path: str, nbytes: int):
    """Make the file ``path`` ``nbytes`` long with every block allocated on disk (its contents kept):
    ``posix_fallocate``; where the file system cannot (``EOPNOTSUPP``) or the call is missing, the
    new part is written with zeros. Raises :class:`OSError` (``ENOSPC``...) when the disk cannot
    hold it, so that no later write through a memmap can fault."""
    with open(path, "ab") as f:
        fd = f.fileno()
        start = os.fstat(fd).st_size
        if nbytes <= start:
            return
        fallocate = getattr(os, "posix_fallocate", None)
        if fallocate is not None:
            try:
                fallocate(fd, start, nbytes - start)
                return
            except OSError as e:
                if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                    raise
        zeros = bytes(1 << 20)
        left = nbytes - start
        while left > 0:
            left -= f.write(zeros[: min(left, len(zeros))])
        f.flush()
        os.fsync(fd)


class _Spilling:
    """What the stores share: ``words`` may live in a memmap in a temporary folder of their own,
    removed with it by ``close()``, when the store is collected, or at exit (see
    :func:`_register_dir`)."""

    _dir = None

    def _spill_path(self, where: str, prefix: str, name: str) -> str:
        try:
            self._dir = tempfile.mkdtemp(prefix=prefix, dir=where)
        except OSError as e:
            raise InputError(
                "spill_dir", f"cannot make a spill folder in {where}: {e.strerror or e}"
            ) from None
        _register_dir(self._dir)
        return os.path.join(self._dir, name)

    def _reserved_memmap(self, path: str, n_words: int) -> np.memmap:
        """A memmap of ``n_words`` words at ``path`` whose disk blocks are reserved first
        (:func:`reserve`): a write through a mapping of a sparse file faults with SIGBUS, killing the
        process without a word, when the disk fills after the free-space check (another solve on
        the same small tmpfs). Words already in the file stay; a reservation that fails removes the
        spill folder and raises :class:`gpudp.InputError` with the path and size."""
        try:
            reserve(path, n_words * WORD_BYTES)
        except OSError as e:
            self.close()
            raise InputError(
                "spill_dir",
                f"cannot reserve {n_words * WORD_BYTES / 2**30:.2f} GiB on disk for the decisions at {path}: "
                f"{e.strerror or e} (the disk filled up; free some, or point GPUDP_SPILL_DIR elsewhere)",
            ) from None
        return np.memmap(path, dtype=WORD, mode="r+", shape=(n_words,))

    def close(self):
        """Let the words go now: a spill folder is removed, a leased page-locked block goes back to
        its pool for the next sweep (not when the store object happens to be collected)."""
        words, self.words = getattr(self, "words", None), None
        del words
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            _LIVE_DIRS.discard(self._dir)
            self._dir = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class DecisionStore(_Spilling):
    """A flat uint32 array of ``n_words`` words, in memory or spilled to a disk memmap."""

    def __init__(self, n_words: int, budget: int | None = None, allocate=None, spill_dir=None):
        self.n_words = int(n_words)
        self.nbytes = self.n_words * WORD_BYTES
        self.budget = default_budget() if budget is None else parse_bytes(budget)
        self.on_disk = spills(self.n_words, self.budget)
        self._dir = None
        if self.on_disk:
            where = spill_dir or os.environ.get("GPUDP_SPILL_DIR") or tempfile.gettempdir()
            try:
                free = shutil.disk_usage(where).free
            except OSError as e:
                raise InputError("spill_dir", f"cannot use {where} for spilling: {e.strerror or e}") from None
            if self.nbytes > free:
                raise InputError(
                    "memory_budget",
                    f"the decision store needs {self.nbytes / 2**30:.2f} GiB; that is over the memory "
                    f"budget ({self.budget / 2**30:.2f} GiB) or the memory this process may use "
                    f"({describe()}), and over the free disk in {where} ({free / 2**30:.2f} GiB)",
                )
            path = self._spill_path(where, "gpudp-store-", "decisions.u32")
            self.words = self._reserved_memmap(path, max(self.n_words, 1))
        elif allocate is not None:
            self.words = allocate(max(self.n_words, 1))
        else:
            self.words = np.zeros(max(self.n_words, 1), dtype=WORD)


#: a device store's page: the words one pull copies to the host (256 KiB)
PAGE_SHIFT = 16


class DeviceStore:
    """Decisions left in the device's memory, where the kernels wrote them (a backend makes one
    where the store fits there beside the sweep and copying it off would cost more than the walk's
    pulls: :meth:`gpudp.backends.base.Backend.device_store`).

    ``words`` is a host array of the store's layout in virtual memory: only the pages that a walk
    or :meth:`~gpudp.grid.result.SweepResult.decision` reads are copied there (:meth:`ensure`,
    ``pull(device_words, w0, w1, out)`` the backend's copy) and touched; ``have`` marks them. A
    reader must :meth:`ensure` the words it reads (the compiled walks ask for the pages they miss
    and resume); the other words of ``words`` are undefined."""

    on_disk = False

    def __init__(self, n_words: int, device_words, pull, page_shift: int | None = None):
        self.n_words = int(n_words)
        self.nbytes = self.n_words * WORD_BYTES
        self.device_words = device_words
        self._pull = pull
        self.page_shift = PAGE_SHIFT if page_shift is None else int(page_shift)
        n = max(self.n_words, 1)
        self.words = np.empty(n, WORD)  # untouched (no resident pages) until pulled
        self.have = np.zeros(((n - 1) >> self.page_shift) + 1, np.bool_)
        self.pulled = 0  # bytes copied to the host so far

    def ensure(self, w0: int, w1: int) -> None:
        """Pull the pages that hold words ``w0`` to ``w1`` (both included) that the host lacks, each
        run of adjacent missing pages in one copy."""
        p, last = int(w0) >> self.page_shift, int(w1) >> self.page_shift
        while p <= last:
            if self.have[p]:
                p += 1
                continue
            q = p
            while q + 1 <= last and not self.have[q + 1]:
                q += 1
            a = p << self.page_shift
            b = min((q + 1) << self.page_shift, self.n_words)
            if b > a:
                self._pull(self.device_words, a, b, self.words[a:b])
                self.pulled += (b - a) * WORD_BYTES
            self.have[p : q + 1] = True
            p = q + 1

    def ensure_all(self) -> np.ndarray:
        """Every word on the host (a walk that reads anywhere: a tree's); ``words``."""
        self.ensure(0, max(self.n_words - 1, 0))
        return self.words

    def close(self):
        """Let the device memory and the host pages go."""
        self.device_words, self.words, self.have = None, None, None


def store_place(store) -> str:
    """Where a store's words live: ``"device"`` (:class:`DeviceStore`), ``"disk"`` or ``"memory"``."""
    if isinstance(store, DeviceStore):
        return "device"
    return "disk" if store.on_disk else "memory"


@dataclass
class TileLayout:
    """Tiles of ``bh`` rows by ``tw`` columns over a ``rows x cols`` grid (``tw`` a multiple of 32),
    rows grouped in lanes of ``rpt`` (at most 32 lanes a tile)."""

    rows: int
    cols: int
    bh: int
    tw: int
    bits: int
    rpt: int = 0

    def __post_init__(self):
        self.rpt = self.rpt or -(-self.bh // 32)
        if self.tw % 32 or self.bh > 32 * self.rpt:
            raise CheckError(
                f"tile layout {self.bh} x {self.tw} (rpt {self.rpt}): columns must be a multiple of 32"
            )
        self.ni = -(-self.rows // self.bh) if self.rows else 0
        self.nj = -(-self.cols // self.tw) if self.cols else 0
        self.num_diagonals = self.ni + self.nj - 1 if self.ni and self.nj else 0
        d = np.arange(self.num_diagonals, dtype=np.int64)  # tiles_on(d) for every d, at once
        sizes = np.minimum(d, self.ni - 1) - np.maximum(0, d - (self.nj - 1)) + 1
        self.diag_off = np.zeros(self.num_diagonals + 1, dtype=np.int64)
        np.cumsum(sizes, out=self.diag_off[1:])
        #: column groups of a tile's row (words a plane): lane k's row runs from shifted column k
        #: to tw + k, and its last group's bits (shifted columns tw .. tw + k - 1) fill the first
        #: group's low bits, which the shift left free (the kernels OR them in)
        self.groups = self.tw // 32
        self.words_per_tile = self.groups * self.bits * self.bh
        self.n_words = int(self.diag_off[-1]) * self.words_per_tile

    def i_range(self, d: int) -> tuple[int, int]:
        return max(0, d - (self.nj - 1)), min(d, self.ni - 1)

    def tiles_on(self, d: int) -> int:
        lo, hi = self.i_range(d)
        return hi - lo + 1

    def words_of(self, d0: int, d1: int) -> tuple[int, int]:
        """The slice of the store holding diagonals d0 <= d < d1."""
        return int(self.diag_off[d0]) * self.words_per_tile, int(self.diag_off[d1]) * self.words_per_tile

    def params(self) -> tuple:
        """What the compiled decoder needs."""
        return (self.bh, self.tw, self.ni, self.nj, self.bits, self.diag_off, self.rpt)


@njit(cache=True)
def tile_decision(words, i, j, bh, tw, ni, nj, bits, diag_off, rpt):
    big, bjg = i // bh, j // tw
    d = big + bjg
    imin = max(0, d - (nj - 1))
    tile = diag_off[d] + (big - imin)
    ii = i - big * bh
    x = j - bjg * tw + ii // rpt  # the column, shifted by the row's lane
    groups = tw // 32
    base = tile * groups * bits * bh + (x // 32) % groups * bits * bh + ii  # the last group folds
    lane = x % 32
    out = 0
    for b in range(bits):
        out |= ((words[base + b * bh] >> lane) & 1) << b
    return out


@dataclass
class LayerLayout:
    """Layers of ``sizes[t]`` cells, each rounded up to whole groups of 32."""

    sizes: np.ndarray
    bits: int

    def __post_init__(self):
        self.sizes = np.asarray(self.sizes, dtype=np.int64)
        self.woff = np.zeros(len(self.sizes) + 1, dtype=np.int64)
        np.cumsum(self.layer_words(self.sizes, self.bits), out=self.woff[1:])
        self.n_words = int(self.woff[-1])

    @staticmethod
    def layer_words(sizes: np.ndarray, bits: int) -> np.ndarray:
        """Words of each layer of ``sizes`` cells: whole groups of 32, ``bits`` words a group (also
        on object arrays of Python integers, for the engine's memory figures at any size)."""
        return ((sizes + 31) >> 5) * bits

    def words_of(self, t0: int, t1: int) -> tuple[int, int]:
        return int(self.woff[t0]), int(self.woff[t1])

    def params(self) -> tuple:
        return (self.woff, self.bits)


@njit(cache=True)
def layer_decision(words, t, k, woff, bits):
    base = woff[t] + (k // 32) * bits
    lane = k % 32
    out = 0
    for b in range(bits):
        out |= ((words[base + b] >> lane) & 1) << b
    return out


# ---------------------------------------------------------------------------------------------
# The "bands" codec: per layer, a leading and a trailing run of one repeated group of words are
# kept as two run values; only the band of groups between them is stored.
# ---------------------------------------------------------------------------------------------

#: a band store starts with room for this many words and doubles as bands arrive
BAND_START_WORDS = 1 << 16


class BandStore(_Spilling):
    """Band-compressed decisions of a layered sweep, filled chunk by chunk.

    Per layer ``t`` (whose cells ``lo[t] <= k < hi[t]`` were computed, in groups of 32 from group
    ``lo[t] // 32``): ``lead_n[t]`` groups equal to ``lead_w[t]``, then ``band_n[t]`` groups stored
    at ``words[band_off[t]:]`` (``bits`` words a group), then groups equal to ``trail_w[t]`` up to
    the layer's last computed group. Cells outside ``[lo[t], hi[t])`` decode as 0.

    The band words grow in memory (doubling) up to the memory budget, then move to a disk memmap
    that grows in the same way; a growth that the free disk cannot hold raises
    :class:`gpudp.InputError` with the figures.
    """

    def __init__(self, lo, hi, bits: int, budget=None, spill_dir=None, full_words: int = 0):
        self.lo, self.hi, self.bits = lo, hi, int(bits)
        n = len(lo)
        self.lead_n = np.zeros(n, np.int64)
        self.band_n = np.zeros(n, np.int64)
        self.band_off = np.zeros(n, np.int64)
        self.lead_w = np.zeros((n, max(self.bits, 1)), WORD)
        self.trail_w = np.zeros((n, max(self.bits, 1)), WORD)
        self.budget = default_budget() if budget is None else parse_bytes(budget)
        self.spill_dir = spill_dir or os.environ.get("GPUDP_SPILL_DIR") or tempfile.gettempdir()
        #: words the plain layout would have taken (for the compression factor)
        self.full_words = int(full_words)
        self.size = 0
        self.on_disk = False
        self._dir = None
        self.words = np.zeros(min(BAND_START_WORDS, max(self.budget // WORD_BYTES, 1)), WORD)

    @property
    def header_bytes(self) -> int:
        return sum(a.nbytes for a in (self.lead_n, self.band_n, self.band_off, self.lead_w, self.trail_w))

    @property
    def nbytes(self) -> int:
        """Bytes kept: the band words and the per-layer headers."""
        return self.size * WORD_BYTES + self.header_bytes

    def _grow(self, need: int):
        cap = max(2 * len(self.words), need)
        if not self.on_disk and fits_in_memory(cap * WORD_BYTES + self.header_bytes, self.budget):
            bigger = np.zeros(cap, WORD)
            bigger[: self.size] = self.words[: self.size]
            self.words = bigger
            return
        free = shutil.disk_usage(self.spill_dir).free + (len(self.words) * WORD_BYTES if self.on_disk else 0)
        if cap * WORD_BYTES > free:
            cap = need  # no room to double: try the exact size
        if cap * WORD_BYTES > free:
            raise InputError(
                "memory_budget",
                f"the band-compressed decisions need {need * WORD_BYTES / 2**30:.2f} GiB so far "
                f"({self.full_words * WORD_BYTES / 2**30:.2f} GiB uncompressed); that is over the memory "
                f"budget ({self.budget / 2**30:.2f} GiB) and over the free disk in {self.spill_dir} "
                f"({free / 2**30:.2f} GiB)",
            )
        if not self.on_disk:
            path = self._spill_path(self.spill_dir, "gpudp-bands-", "bands.u32")
            mm = self._reserved_memmap(path, cap)
            mm[: self.size] = self.words[: self.size]
            self.words, self.on_disk = mm, True
            return
        path = self.words.filename
        self.words.flush()
        self.words = None
        self.words = self._reserved_memmap(path, cap)

    def append(self, words) -> int:
        """Add band words at the end; return the offset where they start."""
        n = len(words)
        if self.size + n > len(self.words):
            self._grow(self.size + n)
        off = self.size
        self.words[off : off + n] = words
        self.size += n
        return off

    def params(self) -> tuple:
        """What the compiled decoder :func:`band_decision` needs after the words."""
        return (
            self.lo,
            self.hi,
            self.lead_n,
            self.band_n,
            self.band_off,
            self.lead_w,
            self.trail_w,
            self.bits,
        )


@njit(cache=True)
def band_decision(words, t, k, lo, hi, lead_n, band_n, band_off, lead_w, trail_w, bits):
    if k < lo[t] or k >= hi[t]:
        return 0
    g = k // 32 - lo[t] // 32
    lane = k % 32
    out = 0
    if g < lead_n[t]:
        for b in range(bits):
            out |= ((np.int64(lead_w[t, b]) >> lane) & 1) << b
    elif g < lead_n[t] + band_n[t]:
        base = band_off[t] + (g - lead_n[t]) * bits
        for b in range(bits):
            out |= ((np.int64(words[base + b]) >> lane) & 1) << b
    else:
        for b in range(bits):
            out |= ((np.int64(trail_w[t, b]) >> lane) & 1) << b
    return out


@njit(cache=True)
def edge_word(x, g, ng, lo_bit, hi_bit):
    """Word ``x`` of group ``g`` (of ``ng``) with the bits outside the computed cells replaced by the
    nearest computed cell's bit (the first group's bits below ``lo_bit``, the last group's bits
    above ``hi_bit``), so that runs of all-0 or all-1 words reach the ends of the layer."""
    x = np.int64(x)
    if g == 0 and lo_bit > 0:
        below = (np.int64(1) << lo_bit) - 1
        x = x | below if (x >> lo_bit) & 1 else x & ~below
    if g == ng - 1 and hi_bit < 31:
        above = np.int64(0xFFFFFFFF) & ~((np.int64(2) << hi_bit) - 1)
        x = x | above if (x >> hi_bit) & 1 else x & ~above
    return x


@njit(cache=True)
def _group_differs(words, base, g, ng, bits, lo_bit, hi_bit, run):
    for q in range(bits):
        x = np.int64(words[base + g * bits + q])
        if g == 0 or g == ng - 1:
            x = edge_word(x, g, ng, lo_bit, hi_bit)
        if x != np.int64(run[q]):
            return True
    return False


@njit(cache=True)
def band_bounds(words, base, ng, bits, lo_bit, hi_bit, lead, trail):
    """``(a, b)``: groups ``[0, a)`` equal ``lead``, groups ``[b, ng)`` equal ``trail`` (the first and
    last group with their edge bits extended by :func:`edge_word`); the band is ``[a, b)``, empty
    when ``a >= b``."""
    a = ng
    for g in range(1, ng):
        if _group_differs(words, base, g, ng, bits, lo_bit, hi_bit, lead):
            a = g
            break
    if a == ng:
        return ng, ng
    b = 0
    for g in range(ng - 2, a - 1, -1):
        if _group_differs(words, base, g, ng, bits, lo_bit, hi_bit, trail):
            b = g + 1
            break
    return a, max(a, b)


@njit(cache=True, parallel=True)
def encode_bands(words, woff, wbase, t0, t1, lo, hi, bits, lead_n, band_n, band_off, lead_w, trail_w, out):
    """Band-encode layers ``t0 <= t < t1`` whose computed groups sit at ``words[woff[t] - wbase:]``.

    Writes each layer's header and its band words to ``out`` (offsets from 0, in layer order);
    returns the number of words written. Layers are encoded in parallel."""
    for t in numba.prange(t0, t1):
        base = woff[t] - wbase
        ng = (woff[t + 1] - woff[t]) // bits
        lead_n[t] = 0
        band_n[t] = 0
        if ng == 0:
            continue
        g0 = lo[t] // 32
        lo_bit = lo[t] - g0 * 32
        hi_bit = hi[t] - 1 - (g0 + ng - 1) * 32
        for q in range(bits):
            lead_w[t, q] = edge_word(words[base + q], 0, ng, lo_bit, hi_bit)
            trail_w[t, q] = edge_word(words[base + (ng - 1) * bits + q], ng - 1, ng, lo_bit, hi_bit)
        a, b = band_bounds(words, base, ng, bits, lo_bit, hi_bit, lead_w[t], trail_w[t])
        lead_n[t] = a
        band_n[t] = b - a
    pos = 0
    for t in range(t0, t1):
        band_off[t] = pos
        pos += band_n[t] * bits
    for t in numba.prange(t0, t1):
        src = woff[t] - wbase + lead_n[t] * bits
        for i in range(band_n[t] * bits):
            out[band_off[t] + i] = words[src + i]
    return pos


def tiled_last_row(bottom, lay):
    """The grid's last row, gathered from the per-chunk bottom edges ``[corner, values...]``."""
    edges = bottom[: lay.nj * (lay.tw + 1)].reshape(lay.nj, lay.tw + 1)[:, 1:]  # a chunk's tw columns a row
    return edges.reshape(-1)[: lay.cols].copy()
