"""One large grid across a Dask cluster's workers: column bands (the CUDAlign scheme, at the
granularity of blocks), swept as a wavefront of blocks (:func:`sweep_bands`) and walked back block
by block on the blocks' workers (:class:`BandResult`)."""

from __future__ import annotations

import time

import numpy as np

from ..errors import InputError

__all__ = ["BandResult", "sweep_bands"]


def sweep_bands(
    rec, client, bands: int | None = None, block_rows: int = 1 << 16, backend: str = "auto", tile=None
):
    """Sweep one large grid recurrence across ``client``'s workers, a band of columns each.

    The grid (tiled schedule: offsets among ``(-1, 0), (0, -1), (-1, -1)``) is cut into ``bands``
    column bands (default: one a worker) and ``block_rows`` rows, and block ``(r, w)`` runs on band
    ``w``'s worker as the recurrence of its own that :mod:`gpudp.checkpoints` sweeps blocks with (its top
    row from block ``(r - 1, w)``, which stays on that worker, its left column from block
    ``(r, w - 1)``, the only values that move between workers). Dask runs the blocks as a wavefront:
    block ``(r, w)`` while band ``w + 1`` computes block ``(r - 1, w + 1)``. Each block keeps only its
    last row and column (values only); :meth:`BandResult.traceback` sweeps the blocks the path
    crosses again, with their decisions, on their band's worker (in linear space where a block is
    large, ``store="auto"``), so the path is the single sweep's.

    Returns a :class:`BandResult`. Raises :class:`InputError` for a recurrence off the tiled schedule
    or one declaring a reduction (not computed across bands), and for ``bands`` or ``block_rows``
    that is not a whole number >= 1 (``bands`` past the grid's columns is as many bands as columns).
    """
    import functools

    from ..engine import plan_sweep

    if bands is not None:
        bands = _count(bands, "bands", "column bands")
    block_rows = _count(block_rows, "block_rows", "rows a block")
    plan = plan_sweep(rec, backend, tile)
    cls = type(rec)
    if plan.kind != "tiled":
        raise InputError("rec", f"{cls.__name__}: column bands need the tiled schedule (unit offsets)")
    if cls.reduce:
        raise InputError("rec", f"{cls.__name__}.reduce: reductions are not computed across bands")
    workers = sorted(client.scheduler_info()["workers"])
    if not workers:
        raise InputError("client", "the Dask cluster has no workers")
    rows, cols = plan.rows, plan.cols
    nb = max(1, min(bands or len(workers), cols))
    width = -(-cols // nb)
    nb = -(-cols // width)
    k = block_rows
    t0 = time.perf_counter()
    run = functools.partial(_forward_block, rec, backend=plan.backend, tile=tile)
    out: dict = {}
    for r in range(-(-rows // k)):
        for w in range(nb):
            r0, c0 = r * k, w * width
            where = workers[w % len(workers)]
            up = out.get((r - 1, w))
            corner = out.get((r - 1, w - 1))
            left = out.get((r, w - 1))
            out[r, w] = client.submit(
                run,
                r0,
                c0,
                min(k, rows - r0),
                min(width, cols - c0),
                up,
                corner,
                left,
                workers=[where],
                allow_other_workers=True,
                pure=False,
            )
    last_r = -(-rows // k) - 1
    ends = client.gather([out[last_r, w] for w in range(nb)] + [out[r, nb - 1] for r in range(last_r + 1)])
    last_row = np.concatenate([e[0] for e in ends[:nb]])
    last_col = np.concatenate([e[1] for e in ends[nb:]])
    from ..solution import Stats

    stats = Stats(backend=plan.backend, device=f"{len(workers)} Dask workers", cells=rows * cols)
    stats.seconds = time.perf_counter() - t0
    stats.extra.update(bands=nb, band_width=width, block_rows=k, blocks=len(out), workers=len(workers))
    return BandResult(
        rec, client, out, workers, k, width, rows, cols, plan.backend, tile, last_row, last_col, stats
    )


def _count(x, field: str, what: str) -> int:
    """A count the caller gives (``bands``, ``block_rows``): a whole number >= 1, else
    :class:`InputError` naming ``field`` (0, -3 or 1.7 were taken as 1 or as the default)."""
    if isinstance(x, bool | np.bool_) or not isinstance(x, int | np.integer) or x < 1:
        raise InputError(field, f"{x!r}: must be a whole number >= 1 ({what})")
    return int(x)


def _edges(rec, up, corner, left):
    """The top row (the corner first) and the left column of a block, from its neighbours' ends."""
    from ..values import full, structured

    fill = structured(type(rec), full(type(rec), 1))  # a record cell's: a structured array
    top = fill if up is None else np.concatenate([fill if corner is None else corner[0][-1:], up[0]])
    return top, fill if left is None else left[1]


def _block(rec, r0, c0, rows, cols, up, corner, left):
    from ..checkpoints import block_class

    top, side = _edges(rec, up, corner, left)
    data = tuple(rec.data())
    syms = (np.asarray(rec.row_symbols()), np.asarray(rec.col_symbols())) if type(rec).symbols else None
    return block_class(type(rec), len(data))(rec, data, syms, r0, c0, rows, cols, top, side)


def _forward_block(rec, r0, c0, rows, cols, up, corner, left, backend, tile):
    """One block's values-only sweep on a worker: its last row and last column."""
    from ..engine import sweep

    res = sweep(
        _block(rec, r0, c0, rows, cols, up, corner, left), backend, progress=False, tile=tile, traceback=False
    )
    return res.last_row, res.last_col


def _walk_block(rec, r0, c0, i, j, up, corner, left, state, backend, tile):
    """The walk back from cell (i, j) inside its block (swept again up to it, with decisions):
    the path in grid coordinates and where ``back`` left the block."""
    from ..engine import sweep

    res = sweep(
        _block(rec, r0, c0, i - r0 + 1, j - c0 + 1, up, corner, left), backend, progress=False, tile=tile
    )
    try:
        path, exit_ = res.walk((i - r0, j - c0), state)
    finally:
        res.close()
    path[:, 0] += r0
    path[:, 1] += c0
    exit_[:2] += (r0, c0)
    return path, exit_


class BandResult:
    """A band sweep's outcome (:func:`sweep_bands`): ``last_row``, ``last_col``, ``stats``, and
    :meth:`traceback`, walked block by block on the blocks' workers. The blocks' ends stay on the
    workers until this result is dropped."""

    def __init__(
        self, rec, client, ends, workers, k, width, rows, cols, backend, tile, last_row, last_col, stats
    ):
        self.recurrence, self._client, self._ends, self._workers = rec, client, ends, workers
        self._k, self._width, self.rows, self.cols = k, width, rows, cols
        self._backend, self._tile = backend, tile
        self.last_row, self.last_col, self.stats = last_row, last_col, stats
        self.best_value = self.best_cell = None

    def traceback(self, start, state=None):
        """Rows ``(i, j, decision[, state])`` from ``start`` back, as
        :meth:`gpudp.grid.result.SweepResult.traceback` gives them for the whole grid."""
        import functools

        cls = type(self.recurrence)
        from ..recurrence import start_cell

        i, j = start_cell(start)
        if not (0 <= i < self.rows and 0 <= j < self.cols):
            raise IndexError(f"cell ({i}, {j}) outside the {self.rows} x {self.cols} grid")
        s = (0 if state is None else int(state)) if cls.traceback_state else None
        walk = functools.partial(_walk_block, self.recurrence, backend=self._backend, tile=self._tile)
        parts, t0, blocks = [], time.perf_counter(), 0
        while 0 <= i < self.rows and 0 <= j < self.cols:
            r, w = i // self._k, j // self._width
            e = self._ends
            fut = self._client.submit(
                walk,
                r * self._k,
                w * self._width,
                i,
                j,
                e.get((r - 1, w)),
                e.get((r - 1, w - 1)),
                e.get((r, w - 1)),
                s,
                workers=[self._workers[w % len(self._workers)]],
                allow_other_workers=True,
                pure=False,
            )
            path, exit_ = fut.result()
            parts.append(path)
            blocks += 1
            i, j = int(exit_[0]), int(exit_[1])
            if s is not None:
                s = int(exit_[2])
        self.stats.extra["traceback"] = {"blocks": blocks, "seconds": time.perf_counter() - t0}
        width = 4 if cls.traceback_state else 3
        return np.concatenate(parts) if parts else np.zeros((0, width), np.int64)

    def close(self):
        """Let the workers drop the blocks' ends."""
        self._ends = {}
