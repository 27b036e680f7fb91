"""A longest common subsequence of every pair of a batch (``lcs.solve_many(..., traceback=True)``).

Each pair runs Hyyrö's bit-vector recurrence with every column's vector kept (one bit a cell), then
walks back from its last cell through those vectors (:mod:`.bitparallel` derives the walk): on all
CPU cores (:func:`.bitparallel.subsequences_cpu`, a pair an iteration) or on the GPU
(:func:`.cuda.launch_subsequences`, chunks of pairs, a thread a pair). Every pair's positions are
then checked (:func:`.bitparallel.check_subsequences`) before anything is returned. A pair whose
vectors would take more than :data:`PAIR_STORE_BYTES` is solved alone by :func:`gpudp.problems.lcs.solve`
(the wavefront engine, in linear space when it must), and checked the same way.

The results stay as flat arrays (:class:`Subsequences`): each pair's matched positions in ``a``
and ``b``, its subsequence and a :class:`gpudp.Solution` made when asked for.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from gpudp import lowering
from gpudp.errors import CheckError, GpudpError
from gpudp.solution import Stats

from . import bitparallel
from .bitparallel import Packed

__all__ = ["PAIR_STORE_BYTES", "PM_LIMIT", "Plan", "Subsequences", "plan", "solve_packed"]

#: a pair whose vectors (``m * n / 8`` bytes) would take more is solved alone by ``solve``
PAIR_STORE_BYTES = 64 << 20
#: most local words of pattern masks a GPU thread may keep (symbol codes x words a pattern, rounded
#: up to powers of two: 256 bytes x 1,024 symbols, 4 bases x 65,536): 32 KiB a thread, which the
#: device reserves for every thread it can hold at once; a batch that needs more runs on the cpu
PM_LIMIT = 1 << 12
#: the backend a batch runs on when its own refuses it (the GPU's threads cannot hold its masks)
FALLBACK = "cpu"

#: the batch's lengths and positions, a module a backend: ``refusal(packed, plan)`` (why the
#: backend cannot take the batch, or None) and ``subsequences(packed, plan, lengths, found,
#: while_busy, extra)`` (:func:`gpudp.problems.lcs.cpu.subsequences`)
SUBSEQUENCES = "lcs.subsequences"
lowering.declare(SUBSEQUENCES, cpu=f"{__package__}.cpu", cuda=f"{__package__}.cuda")


@dataclass
class Plan:
    """Where each pair of a packed batch is solved and where its positions go."""

    order: np.ndarray  # pairs run by the bit-vector kernels, in the order the GPU takes them
    alone: np.ndarray  # pairs too big for the stored vectors: solved one by one by ``solve``
    start: np.ndarray  # per pair: the first of its positions in the flat arrays
    size: int  # positions in all (min(m, n) a pair)
    dtype: np.dtype  # of the positions


def plan(packed: Packed) -> Plan:
    """Pairs of equal sizes keep their order; others are sorted by (words, columns), so that the
    GPU's groups of 32 pairs are alike and pad little. Positions run contiguously along that
    order, then the pairs solved alone."""
    m = np.diff(packed.pat_off)
    n = np.diff(packed.txt_off)
    alone_mask = m * n > 8 * PAIR_STORE_BYTES
    todo = np.flatnonzero(~alone_mask)
    w = (m[todo] + 63) // 64
    cols = n[todo]
    if len(todo) and not ((w == w[0]).all() and (cols == cols[0]).all()):
        todo = todo[np.lexsort((cols, w))]
    alone = np.flatnonzero(alone_mask)
    seq = np.concatenate([todo, alone])
    cap = np.minimum(m, n)[seq]
    start = np.full(len(m), -1, np.int64)
    start[seq] = np.cumsum(cap) - cap
    longest = int(max(m.max(initial=0), n.max(initial=0)))
    dtype = np.dtype(np.uint16 if longest <= 1 << 16 else np.int32 if longest <= 1 << 31 else np.int64)
    return Plan(todo, alone, start, int(cap.sum()), dtype)


@dataclass
class Traced:
    """What :func:`solve_packed` gives for the pairs of a packed batch."""

    lengths: np.ndarray  # per pair; -1 where it failed
    start: np.ndarray
    pos_a: np.ndarray
    pos_b: np.ndarray
    solved: dict  # packed pair -> its Solution (pairs solved alone)
    failed: dict  # packed pair -> why
    kernel_seconds: float
    backend: str  # the backend that ran the kernels
    extra: dict = field(default_factory=dict)


def solve_packed(
    packed: Packed,
    backend: str,
    solve_one: Callable,
    pair_of: Callable,
    while_busy: Callable = lambda: None,
    names=None,
) -> Traced:
    """Lengths and checked positions of every pair of ``packed`` on ``backend`` (its lowering of
    :data:`SUBSEQUENCES`; :data:`FALLBACK` when it refuses the batch).

    ``solve_one(a, b, backend=, progress=)`` solves a pair alone (``pair_of(k)``: pair ``k``'s
    sequences as given); ``while_busy()`` runs on the host while the GPU computes; ``names[k]``
    is pair ``k``'s number in error messages. Raises :class:`gpudp.CheckError` when a pair's
    positions fail the check."""
    t0 = time.perf_counter()
    count = len(packed.pat_off) - 1
    pl = plan(packed)
    extra = {"stored_bit_vectors": len(pl.order), "solved_alone": len(pl.alone)}
    low = lowering.get(SUBSEQUENCES, backend)
    why = low.refusal(packed, pl)
    if why is not None:
        backend, extra["backend_choice"] = FALLBACK, f"{FALLBACK}: {why}"
        low = lowering.get(SUBSEQUENCES, backend)
    lengths = np.full(count, -1, np.int64)
    found = np.full(count, -1, np.int64)
    extra["plan_s"] = time.perf_counter() - t0
    pos_a, pos_b, kernel_s = low.subsequences(packed, pl, lengths, found, while_busy, extra)
    solved, failed = {}, {}
    for k in pl.alone.tolist():
        try:
            sol = solve_one(*pair_of(k), backend=backend, progress=False)
        except GpudpError as e:
            failed[k] = str(e)
            continue
        ia, ib = np.asarray(sol.details["indices_a"]), np.asarray(sol.details["indices_b"])
        o = pl.start[k]
        pos_a[o : o + len(ia)], pos_b[o : o + len(ib)] = ia, ib
        lengths[k] = found[k] = sol.value
        solved[k] = sol
    t = time.perf_counter()
    checked = np.concatenate([pl.order, np.fromiter(solved, np.int64, len(solved))])
    fault = bitparallel.check_subsequences(packed, checked, pl.start, lengths, found, pos_a, pos_b)
    bad = np.flatnonzero(fault)
    if len(bad):
        k = int(checked[bad[0]])
        why = bitparallel.FAULTS[int(fault[bad[0]])].format(found=found[k], length=lengths[k])
        name = names[k] if names is not None else k
        more = f" ({len(bad) - 1} more pairs failed)" if len(bad) > 1 else ""
        raise CheckError(f"pair {name}: {why}{more}")
    extra["check_s"] = time.perf_counter() - t
    for k in failed:
        lengths[k] = -1
    start = pl.start.copy()
    start[list(failed)] = -1
    return Traced(lengths, start, pos_a, pos_b, solved, failed, kernel_s, backend, extra)


class Subsequences(Sequence):
    """The checked longest common subsequences of a batch, in input order.

    ``subs[p]`` is pair ``p``'s subsequence in the type of its ``a`` (str, bytes or an array of
    ``a``'s dtype), or None where the pair failed; :meth:`positions` gives its positions in ``a``
    and ``b``; :meth:`solution` a checked :class:`gpudp.Solution` (as :func:`gpudp.problems.lcs.solve`
    returns), made when asked for. In bulk: pair ``p``'s positions are ``pos_a[start[p] : start[p]
    + lengths[p]]`` and ``pos_b[...]`` (``start[p]`` -1 where it failed), strictly increasing,
    checked before the batch returned."""

    def __init__(
        self, pairs, lengths, start, pos_a, pos_b, witness, pick, backend="", device="", solved=None
    ):
        self.pairs, self.lengths, self.start = pairs, lengths, start
        self.pos_a, self.pos_b = pos_a, pos_b
        self.witness, self.pick = witness, pick
        self.backend, self.device = backend, device
        self._solutions = dict(solved or {})

    def __len__(self) -> int:
        return len(self.lengths)

    def _index(self, p) -> int:
        p = int(p)
        if p < 0:
            p += len(self)
        if not 0 <= p < len(self):
            raise IndexError(f"pair {p} of a batch of {len(self)}")
        return p

    def positions(self, p) -> tuple[np.ndarray, np.ndarray] | None:
        """Pair ``p``'s matched positions in ``a`` and in ``b`` (int64), or None where it failed."""
        p = self._index(p)
        o, k = int(self.start[p]), int(self.lengths[p])
        if o < 0:
            return None
        return self.pos_a[o : o + k].astype(np.int64), self.pos_b[o : o + k].astype(np.int64)

    def __getitem__(self, p):
        if isinstance(p, slice):
            return [self[q] for q in range(*p.indices(len(self)))]
        at = self.positions(p)
        if at is None:
            return None
        return self.pick(self.pairs[self._index(p)][0], at[0])

    def solution(self, p):
        """Pair ``p``'s :class:`gpudp.Solution`, checked against the sequences as given (symbols
        compared as Python values), or None where it failed."""
        p = self._index(p)
        if p not in self._solutions:
            at = self.positions(p)
            if at is None:
                return None
            a, b = self.pairs[p]
            stats = Stats(backend=self.backend, device=self.device, cells=len(a) * len(b))
            stats.extra["batch"] = True
            self._solutions[p] = self.witness(a, b, int(self.lengths[p]), at[0], at[1], stats)
        return self._solutions[p]

    def solutions(self) -> Sequence:
        """The pairs' solutions as a sequence, each made (and checked) when first read."""
        return _Solutions(self)

    @classmethod
    def concat(cls, parts: list, bounds: list[tuple[int, int]]) -> Subsequences:
        """The subsequences of a batch's chunks (items ``lo .. hi - 1`` each) as one."""
        if parts and all(isinstance(s.pairs, Rows) for s in parts):
            pairs = Rows(
                np.concatenate([s.pairs.a for s in parts]), np.concatenate([s.pairs.b for s in parts])
            )
        else:
            pairs = [pair for s in parts for pair in s.pairs]
        shift = np.cumsum([0] + [len(s.pos_a) for s in parts])
        start = np.concatenate(
            [np.where(s.start >= 0, s.start + o, -1) for s, o in zip(parts, shift, strict=False)]
        )
        solved = {
            lo + k: sol for (lo, _), s in zip(bounds, parts, strict=True) for k, sol in s._solutions.items()
        }
        first = parts[0] if parts else None
        return cls(
            pairs,
            np.concatenate([s.lengths for s in parts]) if parts else np.zeros(0, np.int64),
            start if parts else np.zeros(0, np.int64),
            np.concatenate([s.pos_a for s in parts]) if parts else np.zeros(0, np.uint16),
            np.concatenate([s.pos_b for s in parts]) if parts else np.zeros(0, np.uint16),
            first.witness if first else None,
            first.pick if first else None,
            first.backend if first else "",
            first.device if first else "",
            solved,
        )


class _Solutions(Sequence):
    def __init__(self, subs: Subsequences):
        self.subs = subs

    def __len__(self) -> int:
        return len(self.subs)

    def __getitem__(self, p):
        if isinstance(p, slice):
            return [self.subs.solution(q) for q in range(*p.indices(len(self)))]
        return self.subs.solution(p)


class Rows:
    """Pairs as rows of two 2-D arrays, indexed like a list of pairs."""

    def __init__(self, a, b):
        self.a, self.b = a, b

    def __len__(self):
        return len(self.a)

    def __getitem__(self, p):
        return self.a[p], self.b[p]

    def __iter__(self):
        return zip(self.a, self.b, strict=True)
