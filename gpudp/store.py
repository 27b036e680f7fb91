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
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass

import numba
import numpy as np

from .errors import InputError

WORD = np.uint32
WORD_BYTES = 4


def available_memory() -> int:
    """Physical memory free now, in bytes (a conservative guess when the OS does not say)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 2 << 30


def default_budget() -> int:
    """Host-memory budget for decision stores: GPUDP_MEMORY_BUDGET bytes, else half of free RAM."""
    env = os.environ.get("GPUDP_MEMORY_BUDGET")
    if env:
        return parse_bytes(env)
    return available_memory() // 2


def parse_bytes(text) -> int:
    if isinstance(text, int | np.integer):
        return int(text)
    s = str(text).strip().upper().replace("IB", "").replace("B", "")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    try:
        if s and s[-1] in mult:
            return int(float(s[:-1]) * mult[s[-1]])
        return int(float(s))
    except ValueError as e:
        raise InputError("memory_budget", f"not a size in bytes: {text!r} (e.g. 512M, 8G)") from e


class DecisionStore:
    """A flat uint32 array of ``n_words`` words, in memory or spilled to a disk memmap."""

    def __init__(self, n_words: int, budget: int | None = None, allocate=None, spill_dir=None):
        self.n_words = int(n_words)
        self.nbytes = self.n_words * WORD_BYTES
        self.budget = default_budget() if budget is None else parse_bytes(budget)
        self.on_disk = self.nbytes > self.budget
        self._dir = None
        if self.on_disk:
            where = spill_dir or os.environ.get("GPUDP_SPILL_DIR") or tempfile.gettempdir()
            free = shutil.disk_usage(where).free
            if self.nbytes > free:
                raise InputError(
                    "memory_budget",
                    f"the decision store needs {self.nbytes / 2**30:.2f} GiB; that is over the memory "
                    f"budget ({self.budget / 2**30:.2f} GiB) and over the free disk in {where} "
                    f"({free / 2**30:.2f} GiB)",
                )
            self._dir = tempfile.mkdtemp(prefix="gpudp-store-", dir=where)
            path = os.path.join(self._dir, "decisions.u32")
            self.words = np.memmap(path, dtype=WORD, mode="w+", shape=(max(self.n_words, 1),))
        elif allocate is not None:
            self.words = allocate(max(self.n_words, 1))
        else:
            self.words = np.zeros(max(self.n_words, 1), dtype=WORD)

    def close(self):
        if self._dir is not None:
            words, self.words = self.words, None
            del words
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


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
        assert self.tw % 32 == 0
        self.rpt = self.rpt or -(-self.bh // 32)
        assert self.bh <= 32 * self.rpt
        self.ni = -(-self.rows // self.bh) if self.rows else 0
        self.nj = -(-self.cols // self.tw) if self.cols else 0
        self.num_diagonals = self.ni + self.nj - 1 if self.ni and self.nj else 0
        sizes = np.array([self.tiles_on(d) for d in range(self.num_diagonals)], dtype=np.int64)
        self.diag_off = np.zeros(self.num_diagonals + 1, dtype=np.int64)
        np.cumsum(sizes, out=self.diag_off[1:])
        #: column groups of a tile: lane shifts of up to 31 columns need one group more
        self.groups = self.tw // 32 + 1
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


@numba.njit(cache=True, nogil=True)
def tile_decision(words, i, j, bh, tw, ni, nj, bits, diag_off, rpt):
    big, bjg = i // bh, j // tw
    d = big + bjg
    imin = max(0, d - (nj - 1))
    tile = diag_off[d] + (big - imin)
    ii = i - big * bh
    x = j - bjg * tw + ii // rpt  # the column, shifted by the row's lane
    wpt = (tw // 32 + 1) * bits * bh
    base = tile * wpt + (x // 32) * bits * bh + ii
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
        groups = (self.sizes + 31) // 32
        self.woff = np.zeros(len(self.sizes) + 1, dtype=np.int64)
        np.cumsum(groups * self.bits, out=self.woff[1:])
        self.n_words = int(self.woff[-1])

    def words_of(self, t0: int, t1: int) -> tuple[int, int]:
        return int(self.woff[t0]), int(self.woff[t1])

    def params(self) -> tuple:
        return (self.woff, self.bits)


@numba.njit(cache=True, nogil=True)
def layer_decision(words, t, k, woff, bits):
    base = woff[t] + (k // 32) * bits
    lane = k % 32
    out = 0
    for b in range(bits):
        out |= ((words[base + b] >> lane) & 1) << b
    return out
