"""Cross products of two lists of sequences: every query against every choice, a 2-D result in
the shape of rapidfuzz's ``process.cdist`` (:func:`gpudp.problems.lcs.cdist`,
:func:`gpudp.problems.edit_distance.cdist`).

Nothing of the size of the product is made but the result: the two lists are read once each
(in bulk where every sequence of both has one form, :func:`.sequences.bulk_sides`), coded to one
set of dense symbols (:func:`.bitparallel.dense`), and one side becomes the patterns of the
bit-parallel recurrences, its masks built once a sequence and reused for every sequence of the
other side, the texts. The queries are the patterns unless the choices make less work as patterns
(fewer 64-bit words of pattern against the other side's symbols); the scores are symmetric, so the
result is the same either way. The kernels are the solver's lowering family's ``cross`` (on all
CPU cores: :mod:`.cpu`; a GPU thread a cell of the result: :mod:`.cuda`), and a few cells are
re-solved on the host by the solver's ``check`` (the textbook dynamic program) while they run.
"""

from __future__ import annotations

import operator
import time

import numpy as np

from gpudp import lowering
from gpudp.backends import choose as choose_backend
from gpudp.backends import device_name, is_device_array, observe
from gpudp.errors import CheckError, InputError
from gpudp.solution import Stats

from .. import arrow, bitparallel
from ..batch import FAMILY, PairSolver, check_memory, check_options
from ..bitparallel import NO_CUTOFF
from ..sequences import bulk_sides, encode, exact_codes, join_codes, kind

__all__ = ["run", "host_bytes", "HOST_BYTES"]

#: host bytes a cross product takes beside its result, ``(a sequence, a symbol)``: the codes read,
#: their dense copy and the sort that finds them (an estimate from the arrays made, not measured)
HOST_BYTES = (200, 40)


def host_bytes(queries: int, choices: int, symbols: int, itemsize: int) -> int:
    """About the host bytes :func:`run` takes for ``queries`` x ``choices`` sequences of ``symbols``
    symbols in all and a result of ``itemsize`` bytes a cell."""
    per_seq, per_symbol = HOST_BYTES
    return queries * choices * itemsize + (queries + choices) * per_seq + symbols * per_symbol


def run(
    solver: PairSolver,
    queries,
    choices,
    backend: str,
    dtype,
    score_cutoff,
    verify,
    distance: bool,
) -> tuple[np.ndarray, Stats]:
    """``(result, stats)``: the score of every query against every choice (see
    :func:`gpudp.problems.lcs.cdist` for the parameters; ``distance``: the solver's value is a
    distance, cut off from above, else a similarity, cut off from below)."""
    t0 = time.perf_counter()
    count = check_options((), False, verify)[1]
    cutoff = _cutoff(score_cutoff)
    qs, cs = _side(queries, "queries"), _side(choices, "choices")
    q, q_off, c, c_off = _read(qs, cs)
    lq, lc = np.diff(q_off), np.diff(c_off)
    nq, nc = len(lq), len(lc)
    longest = (int(lq.max(initial=0)), int(lc.max(initial=0)))
    largest = max(longest) if distance else min(longest)
    if distance and cutoff is not None:
        largest = min(largest, cutoff + 1)
    dt = _dtype(dtype, largest, solver.what)
    check_memory(
        host_bytes(nq, nc, len(q) + len(c), dt.itemsize),
        f"a cross product of {nq:,} x {nc:,} sequences (its result {nq * nc * dt.itemsize / 2**30:.2f} GiB "
        f"of {dt})",
        "give fewer queries or choices at a time, or a narrower dtype",
    )
    out = np.zeros((nq, nc), dt) if not (nq and nc) else None
    cells = int(lq.sum()) * int(lc.sum())
    stats = Stats(cells=cells)
    if nq and nc:
        # the side of fewer pattern words x the other side's symbols is the patterns
        turned = int(((lc + 63) // 64).sum()) * int(lq.sum()) < int(((lq + 63) // 64).sum()) * int(lc.sum())
        sides = (c, c_off, q, q_off) if turned else (q, q_off, c, c_off)
        packed = bitparallel.dense(*sides, table=True)
        packed.cells = cells
        # a cutoff past any score (2^62: no sequence is that long) cuts as NO_CUTOFF does, in int64
        cut = NO_CUTOFF if cutoff is None else min(cutoff, NO_CUTOFF)
        lo, hi = (0, cut) if distance else (0 if cutoff is None else cut, NO_CUTOFF)
        used, why = choose_backend(backend, cells, FAMILY)
        picks = _picks(lq, lc, count)
        lowered = lowering.get(solver.family, used)
        t_read = time.perf_counter()
        # the result where the backend's copies fill it fastest (the cuda one: page-locked memory)
        out = getattr(lowered, "host_result", np.zeros)((nq, nc), dt)
        t_result = time.perf_counter()
        launched = lowered.cross(packed, lo, hi, out, turned)
        t_launch = time.perf_counter()
        wants = [solver.checked_value(qs[i], cs[j]) for i, j in picks]
        _, stats.kernel_seconds = launched.finish()
        t_finish = time.perf_counter()
        for (i, j), want in zip(picks, wants, strict=True):
            if bitparallel.clamp(want, lo, hi) != out[i, j]:
                raise CheckError(
                    f"queries[{i}] against choices[{j}]: the cross product gave {solver.what} {out[i, j]}, "
                    f"the plain dynamic program {want}"
                    + ("" if cutoff is None else f" (score_cutoff {cutoff})")
                )
        stats.backend, stats.device = used, device_name(used)
        stats.extra.update(
            method=solver.method + ", each pattern's masks built once",
            backend_choice=why,
            patterns="choices" if turned else "queries",
            rechecked=picks,
            **getattr(launched, "info", {}),
        )
        # where the call's time went: reading and coding both sides, making the result, the launch
        # (uploads, buffers, kernels queued), the wait for the kernels and the result's copy
        stats.extra["host_s"] = {
            "read": t_read - t0,
            "result": t_result - t_read,
            "launch": t_launch - t_result,
            "finish": t_finish - t_launch,
        }
        observe(FAMILY, cells, stats)
    stats.seconds = time.perf_counter() - t0
    return out, stats


def _cutoff(score_cutoff) -> int | None:
    """``score_cutoff`` as a whole number >= 0, or None; anything else raises :class:`InputError`."""
    if score_cutoff is None:
        return None
    try:
        if isinstance(score_cutoff, bool | np.bool_):
            raise TypeError
        cutoff = operator.index(score_cutoff)
    except TypeError:
        cutoff = -1
    if cutoff < 0:
        raise InputError("score_cutoff", f"a whole number >= 0 or None, got {score_cutoff!r}")
    return cutoff


def _dtype(dtype, largest: int, what: str) -> np.dtype:
    """The result's dtype: ``dtype`` when it is an integer dtype that holds ``largest``, the largest
    value a cell can take; by default int32 if that holds it, else int64."""
    if dtype is None:
        return np.dtype(np.int32 if largest <= np.iinfo(np.int32).max else np.int64)
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise InputError("dtype", f"an integer dtype or None, got {dtype!r}") from None
    if dt.kind not in "iu":
        raise InputError("dtype", f"an integer dtype or None, got {dt}: the scores are exact integers")
    if np.iinfo(dt).max < largest:
        raise InputError(
            "dtype",
            f"{dt} holds at most {np.iinfo(dt).max}, but a {what} of these sequences can reach {largest}: "
            "give a wider integer dtype (or None: int32, or int64 where needed)",
        )
    return dt.newbyteorder("=")


def _side(x, name: str):
    """One side as a list of sequences, a 2-D integer array whose rows are the sequences, or an
    Arrow array's or StringZilla ``Strs``'s (:class:`.arrow.HeldSequences`)."""
    if arrow.is_held(x):
        return arrow.side(x, name)
    if isinstance(x, str | bytes | bytearray):
        raise InputError(name, f"a list of sequences, got one {type(x).__name__}: put it in a list")
    if is_device_array(x):
        raise InputError(name, "an array in GPU memory: cdist reads host arrays (copy it to the host)")
    if isinstance(x, np.ndarray):
        if x.ndim == 2:
            if x.dtype.kind not in "iu":
                raise InputError(name, f"a 2-D array of sequences must hold integers, got {x.dtype}")
            return np.ascontiguousarray(x, dtype=x.dtype.newbyteorder("="))
        if x.ndim != 1 or x.dtype != object:
            raise InputError(
                name,
                f"a {x.ndim}-D {x.dtype} array is not a list of sequences: give a list, or a 2-D array "
                "whose rows are the sequences",
            )
        return x.tolist()
    try:
        return list(x)
    except TypeError:
        raise InputError(
            name, f"a list of sequences or a 2-D integer array, got {type(x).__name__}"
        ) from None


def _read(qs, cs) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Both sides' symbols and offsets, ``(q, q_off, c, c_off)``, as exact codes of one dtype."""
    if isinstance(qs, list) and isinstance(cs, list):
        bulk = bulk_sides(qs, cs)
        if bulk is not None:
            return bulk
    q, q_off = _coded(qs, "queries")
    c, c_off = _coded(cs, "choices")  # (an Arrow or Strs side's, read from its buffers)
    _check_kinds(qs, cs)  # after each sequence is read: one that cannot be is its own error
    q, c = exact_codes(q, c)
    return q, q_off, c, c_off


def _coded(x, name: str) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(x, arrow.HeldSequences):
        return x.packed()
    if isinstance(x, np.ndarray):  # rows of a 2-D array
        return x.reshape(-1), bitparallel.row_offsets(x.shape[0], x.shape[1])
    return join_codes([encode(v, f"{name}[{i}]") for i, v in enumerate(x)])


def _check_kinds(qs, cs) -> None:
    """A str compares only with a str (characters are not integers): every sequence of both sides
    is a str, or none is; else :class:`InputError` naming the first that differs from the first."""
    first = None
    for name, side in (("queries", qs), ("choices", cs)):
        if isinstance(side, np.ndarray):
            flags = [False] if len(side) else []
        elif isinstance(side, arrow.HeldSequences):
            flags = [side.text] if len(side) else []
        else:
            flags = [kind(v) == "str" for v in side]
        for i, is_str in enumerate(flags):
            if first is None:
                first = (f"{name}[{i}]", is_str)
            elif is_str != first[1]:
                what = "a str" if is_str else "not a str"
                other = "a str" if first[1] else "not a str"
                raise InputError(
                    f"{name}[{i}]" if not isinstance(side, np.ndarray) else name,
                    f"{what}, but {first[0]} is {other}: a str compares only with a str "
                    "(characters are not integers); encode both alike",
                )


def _picks(lq: np.ndarray, lc: np.ndarray, k: int) -> list[tuple[int, int]]:
    """``k`` distinct random cells ``(i, j)`` among the queries and choices no longer than their
    side's median (the cheaper ones to re-solve)."""
    if k <= 0 or not len(lq) or not len(lc):
        return []
    rows = np.flatnonzero(lq <= np.median(lq))
    cols = np.flatnonzero(lc <= np.median(lc))
    rng = np.random.default_rng()
    flat = rng.choice(len(rows) * len(cols), min(k, len(rows) * len(cols)), replace=False)
    return sorted((int(rows[f // len(cols)]), int(cols[f % len(cols)])) for f in flat)
