"""Batches of interval recurrences: :func:`gpudp.sweep_many` of :class:`~gpudp.IntervalRecurrence`
instances (many RNA sequences folded, many sentences parsed, many expressions counted at once).

Each instance is small next to the machine (larger ones, of more than :data:`MAX_CELLS`, go to
:func:`gpudp.sweep` one by one), so one worker sweeps it whole: a CPU thread (instances dealt round
robin by their work, :func:`gpudp.many.cpu.deal`), or on the GPU a warp (where the cell's
split-point loop can be shared by the lanes) or a thread. Its table is a ``n x n`` slice of the
chunk's packed table (``fill`` below the diagonal, as the single sweep keeps it), swept row by row
from the bottom up, each row from left to right: every interval inside ``(i, j)`` is on a lower row
or further left on row ``i``, so the order is the recurrence's, and the cells one after the other
read the same row. Decisions go to the same slice of a packed array of the decision type; the
overflow flag is a row of the chunk's flags an instance (an instance whose ``cell`` returns a
decision too wide fails alone). The source of an instance's sweep is here (:func:`sweep_source`);
each backend's kernel and runner in its own module of the ``many_intervals`` lowering
(:mod:`gpudp.many.intervals.cpu`, :mod:`gpudp.many.intervals.cuda`).

An item's ``table`` is its ``n x n`` table, ``value`` the whole interval's ``table[0, n - 1]``, and
``path`` the tree of decisions from ``(0, n - 1)`` (the rows of
:meth:`gpudp.interval.IntervalResult.traceback_tree`, checked as it checks them).
"""

from __future__ import annotations

import time

import numpy as np

from ...codegen import cell_call, decision_dtype, fill
from ...errors import ContractError, InputError, decision_overflow
from ...interval import IntervalResult
from ...memory import gc_paused
from ...recurrence import values_only
from ...solution import Stats
from ...values import is_record
from .. import source
from ..chunks import cut
from ..items import ManyItem

#: cells (of the instances' tables) of one chunk at most
CHUNK_CELLS = 1 << 27
#: instances of more cells than this (n > 1,024) are swept alone by :func:`gpudp.sweep`, whose
#: kernels spread one table over every core or the whole GPU, and which checks its memory
MAX_CELLS = 1 << 20

_SWEEP = """
b = ids[q]
n = shapes[b, 0]
{views}
T = S[toff[q] : toff[q] + n * n].reshape((n, n))
{copy}
{decisions}
for i in range(n - 1, -1, -1):
    for j in range(i, n):
        {call}
        {stores}
        {sync}
"""


def sweep_source(rec_cls, kinds, warp_sync: str | None = None) -> list[str]:
    """Lines sweeping instance ``ids[q]`` (its items bound by :func:`gpudp.many.source.views`) into
    its slice of ``S`` (and ``D``) from ``toff[q]``: what both backends' kernels run a worker. With
    ``warp_sync`` (the warp's barrier), by a warp: every lane runs each cell, the split-point loop
    shared (``wcell``, :func:`gpudp.interval.split.warp_cell`, which reads rows of ``T`` and columns
    of its column-major copy ``CT``, a slice of ``CC``), lane 0 stores, and the barrier comes before
    the next cell reads what it stored."""
    bits = rec_cls.decision_bits
    n_data = len(kinds) + (1 if bits else 0)
    stores = ["T[i, j] = v", *(["DD[i, j] = dd"] if bits else [])]
    head, copy, sync = "cell(", "pass", "pass"
    if warp_sync is not None:
        head, copy, sync = (
            "wcell(lane, 32, xb, T, CT, ",  # a warp's lanes (xb: the kernel's, unused by one warp)
            "CT = CC[toff[q] : toff[q] + n * n].reshape((n, n))",
            warp_sync,
        )
        stores = ["if lane == 0:", *(f"    {x}" for x in [*stores, "CT[j, i] = v"])]
    src = fill(
        _SWEEP,
        views=[*source.views(kinds), *source.output_views(0, 1 if bits else 0, len(kinds))],
        copy=copy,
        decisions="DD = D[toff[q] : toff[q] + n * n].reshape((n, n))" if bits else "pass",
        call=cell_call(rec_cls, "i, j", ["T"], n_data, "v", "dd", head=head, only=warp_sync and "lane == 0"),
        stores=stores,
        sync=sync,
    )
    return src.strip("\n").split("\n")


def sweep_intervals(objs, take, runner_of, traceback, start_state, progress_bar, stats, items, t0):
    """The interval batch of :func:`gpudp.sweep_many` (``take`` its intake; ``runner_of(cls)`` the
    backend's ``interval_kernel`` runner; ``items`` filled in place; ``stats`` completed)."""
    cls = take.cls
    if is_record(cls):
        raise ContractError(
            f"{cls.__name__}.value_dtype is a record {np.dtype(cls.value_dtype).names}: sweep_many does not "
            "batch interval recurrences of record cells; sweep them one at a time with gpudp.sweep"
        )
    bits = cls.decision_bits
    walking = bool(traceback and (bits or cls.traceback_state))  # (a state walks the table alone)
    if walking and getattr(cls, "back", None) is None:
        raise ContractError(
            f"{cls.__name__} defines no back(...): its decisions cannot be traced back; define "
            f"{cls._form('back', len(take.kinds))} as a @staticmethod, or pass traceback=False"
        )
    valid = np.array([k for k in range(len(objs)) if k not in take.errors], np.int64)
    first = take.recs[int(valid[0])]
    kcls = type(values_only(first)) if bits and not traceback else cls
    sizes = take.shapes[:, 0]
    for k in valid[sizes[valid] == 0].tolist():
        items[k] = ManyItem(k, (0, 0), table=np.zeros((0, 0), cls.value_dtype), path=None)
    cells = sizes * sizes
    batched = valid[(sizes[valid] > 0) & (cells[valid] <= MAX_CELLS)]
    alone = valid[cells[valid] > MAX_CELLS]
    order = batched[np.argsort(-cells[batched], kind="stable")]
    runner = runner_of(kcls) if len(batched) else None
    vt, dt = np.dtype(cls.value_dtype), decision_dtype(kcls.decision_bits)
    bar = progress_bar(int((sizes[batched] * (sizes[batched] + 1) // 2).sum()))
    walks = _Walks() if walking else None
    swept = kernel_seconds = 0.0
    chunks = cut(order, cells, CHUNK_CELLS) if len(order) else []
    try:
        for ids in chunks:
            n = sizes[ids]
            toff = np.zeros(len(ids) + 1, np.int64)
            np.cumsum(n * n, out=toff[1:])
            S = np.full(int(toff[-1]), cls.fill, vt)
            D = np.zeros(int(toff[-1]) if kcls.decision_bits else 1, dt)
            FL = np.zeros((len(ids), 4), np.int64)
            t = time.perf_counter()
            runner(ids, n**3, take.shapes, toff[:-1], S, D, FL, take.packed)
            kernel_seconds += time.perf_counter() - t
            with gc_paused():
                for q, k in enumerate(ids.tolist()):
                    items[k] = _item(objs[k], k, int(n[q]), S, D, FL[q], toff[q], kcls, walks, start_state)
            swept += float((n * (n + 1) // 2).sum())
            if bar is not None:
                bar.update(int((n * (n + 1) // 2).sum()))
        for k in alone.tolist():
            items[k] = _alone(objs[k], k, stats.backend, traceback, start_state)
            swept += float(sizes[k] * (sizes[k] + 1) // 2)
    finally:
        if bar is not None:
            bar.close()
    stats.cells = int(swept)
    stats.kernel_seconds = kernel_seconds
    stats.extra.update(
        failed=len(items.errors()),
        batched=len(batched),
        alone=len(alone),
        empty=len(valid) - len(batched) - len(alone),
        chunks=len(chunks),
        launches=getattr(runner, "launches", 0),
        compile_seconds=getattr(runner, "compile_seconds", 0.0),
        layout="interval rows",
    )
    if getattr(runner, "info", None):
        stats.extra["cuda"] = dict(runner.info)
    stats.seconds = time.perf_counter() - t0


def _alone(rec, k, backend, traceback, start_state):
    """Instance ``k``'s :class:`ManyItem` from its own :func:`gpudp.sweep` (a large one); a
    mistake of its own (a decision too wide, its memory) is its error."""
    from ...engine import sweep

    n = rec.size()
    try:
        res = sweep(rec, backend=backend, traceback=traceback, progress=False)
    except (ContractError, InputError) as e:
        return ManyItem(k, (n, n), error=str(e))
    item = ManyItem(k, (n, n), value=res.value(0, n - 1), table=res.table)
    cls = type(rec)
    if traceback and (cls.decision_bits or cls.traceback_state) and getattr(cls, "back", None) is not None:
        state = start_state(k, rec, item.value) if cls.traceback_state else None
        try:
            item.path = res.traceback_tree(state=state)
        except ContractError as e:
            item.error = str(e)
    return item


def _item(rec, k, n, S, D, flags, off, kcls, walks, start_state):
    """Instance ``k``'s :class:`ManyItem` from its slice of the chunk's arrays (``walks``: the
    batch's :class:`_Walks`, None without trees)."""
    if flags[0]:
        return ManyItem(
            k, (n, n), error=str(decision_overflow(kcls.__name__, flags, "i, j", kcls.decision_bits))
        )
    table = S[off : off + n * n].reshape(n, n)
    item = ManyItem(k, (n, n), value=table[0, n - 1], table=table)
    if walks is not None:
        decisions = D[off : off + n * n].reshape(n, n) if kcls.decision_bits else None
        state = start_state(k, rec, item.value) if type(rec).traceback_state else None
        try:
            item.path = walks.tree(IntervalResult(rec, table, decisions, Stats(backend="batch")), state)
        except ContractError as e:
            item.error = str(e)
    return item


class _Walks:
    """The batch's tree walks, each :meth:`IntervalResult.traceback_tree`'s: the first with its
    plain-Python call of ``back`` first, the others without (the class's walk compiled and its
    return's form checked once; each child is still checked by the walk)."""

    def __init__(self):
        self.probed = False

    def tree(self, result: IntervalResult, state) -> np.ndarray:
        path = result.traceback_tree(state=state, probe=not self.probed)
        self.probed = True
        return path
