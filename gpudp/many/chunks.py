"""A batch's chunks: the instances one kernel call sweeps (:class:`Chunk`), where each one's results
lie in the chunk's arrays, and those arrays on the host (:class:`ChunkOut`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .. import values
from ..codegen import NO_CELL, decision_dtype, spec_of


@dataclass
class Chunk:
    """Instances ``ids`` (input positions) swept by one kernel call: their sizes, and where each
    one's decisions (``doff``), last row (``lroff``) and last column (``lcoff``) start in the
    chunk's arrays of ``n_words``, ``n_lr`` and ``n_lc`` items."""

    ids: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    cells: np.ndarray
    doff: np.ndarray
    lroff: np.ndarray
    lcoff: np.ndarray
    n_words: int
    n_lr: int
    n_lc: int

    @classmethod
    def of(cls, ids: np.ndarray, shapes: np.ndarray, keep_words: bool) -> Chunk:
        rows, cols = shapes[ids, 0], shapes[ids, 1]
        cells = rows * cols

        def starts(x):
            out = np.zeros(len(x) + 1, np.int64)
            np.cumsum(x, out=out[1:])
            return out

        d, r, c = starts(cells if keep_words else 0 * cells), starts(cols), starts(rows)
        return cls(ids, rows, cols, cells, d[:-1], r[:-1], c[:-1], int(d[-1]), int(r[-1]), int(c[-1]))


@dataclass
class ChunkOut:
    """A chunk's outputs on the host: ``words`` (decisions), ``lr`` and ``lc`` (the last rows and
    columns, packed; a record cell's: a tuple of one array per field, :mod:`gpudp.values`; the
    user's view of them: :func:`user_values`), ``rv`` and ``rc`` (a reduction's slots: ``slots`` a
    row, an instance a row),
    ``flags`` (an instance's decision-overflow flag ``[count, decision, i, j]`` a row).

    A runner may leave ``lr`` and ``lc`` where they were computed: it then sets ``values`` (each
    instance's last cell) and ``fetch`` (a callable that gives the two on the host), and
    :meth:`edges` calls it once, when the edges are first read."""

    words: np.ndarray
    lr: np.ndarray
    lc: np.ndarray
    rv: np.ndarray
    rc: np.ndarray
    flags: np.ndarray
    kernel_seconds: float = 0.0
    values: np.ndarray | None = None
    fetch: Callable | None = None

    @classmethod
    def allocate(cls, rec_cls, chunk: Chunk, slots: int, empty=np.empty, edges=None) -> ChunkOut:
        """Host arrays for ``chunk``, the slots at the reduction's start and the flags at 0;
        ``empty(n, dtype)`` allocates 1-D arrays (plain or page-locked), ``edges`` the last rows
        and columns (default: ``empty``)."""
        nq = len(chunk.ids)
        bits = rec_cls.decision_bits
        words = empty(max(chunk.n_words, 1), decision_dtype(bits))
        edges = edges or empty
        lr, lc = (
            values.map_dtypes(rec_cls, lambda dt, n=n: edges(n, dt))
            for n in (max(chunk.n_lr, 1), max(chunk.n_lc, 1))
        )
        n = nq if rec_cls.reduce else 1
        s = slots if rec_cls.reduce else 1
        rv = empty(n * s, values.key_dtype(rec_cls)).reshape(n, s)
        rc = empty(n * s * 2, np.int64).reshape(n, s, 2)
        flags = empty(4 * (nq if bits else 1), np.int64).reshape(-1, 4)
        rv[:] = spec_of(rec_cls).reduce_worst if rec_cls.reduce else 0
        rc[:] = NO_CELL
        flags[:] = 0
        return cls(words, lr, lc, rv, rc, flags)

    def wait(self) -> ChunkOut:
        return self

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """The last rows and columns on the host (fetched the first time where a runner left them)."""
        if self.fetch is not None:
            self.lr, self.lc = self.fetch()
            self.fetch = None
        return self.lr, self.lc

    def last_values(self, chunk: Chunk) -> np.ndarray:
        """Each instance's last cell (row ``rows - 1``, column ``cols - 1``)."""
        if self.values is not None:
            return self.values
        at = chunk.lroff + chunk.cols - 1
        return values.map_buf(self.edges()[0], lambda a: a[at])


def user_values(rec_cls, buf):
    """A buffer of ``rec_cls``'s values (an array, or a record's tuple of field arrays) as the user
    sees them: the array; a record's structured array; or, for a class that carries wide offsets
    as a record (:mod:`gpudp.grid.wide`), the user's own values (the record's first field)."""
    if not isinstance(buf, tuple):
        return buf
    if getattr(rec_cls, "_wide_offsets", None):
        return buf[0]
    return values.structured(rec_cls, buf)


def cut(order: np.ndarray, cells: np.ndarray, max_cells: int) -> list[np.ndarray]:
    """``order`` cut into consecutive runs of at most ``max_cells`` cells (at least one instance)."""
    cum = np.zeros(len(order) + 1, np.int64)
    np.cumsum(cells[order], out=cum[1:])
    out, u0 = [], 0
    while u0 < len(order):
        u1 = int(np.searchsorted(cum, cum[u0] + max_cells, side="right")) - 1
        u1 = min(max(u1, u0 + 1), len(order))
        out.append(order[u0:u1])
        u0 = u1
    return out
