"""The two-list solver: input checks, memory plan, the halves, and the public API (see the package)."""

from __future__ import annotations

import time
from math import comb

import numpy as np

from gpudp import backends, lowering
from gpudp.backends import choose as choose_backend
from gpudp.backends import device_name, predicted_seconds
from gpudp.backends import resolve as resolve_backend
from gpudp.backends import where as backend_words
from gpudp.errors import CheckError, InputError, TimeLimitReached
from gpudp.inputs import parse_time_limit, short_repr
from gpudp.progress import Deadline, announce, progress_bar
from gpudp.solution import Solution, Stats

from .kernels import INT64_MAX

#: the kernel family whose rate predicts a solve (gpudp.backends.rates)
FAMILY = "subset_sum"
MAX_ITEMS = 64  # two halves of at most 32 items: one uint32 mask per sum
BYTES_PER_SUM = 12  # int64 sum + uint32 mask

#: the two-list stages, a module a backend: ``two_list``, ``generate_host``, ``prune_pairs``,
#: ``free_memory`` and the backend's tuning, ``BLOCK`` (the default pruning block); the steps of
#: :func:`_work_of` a second are the ``subset_sum`` family's rate (:mod:`gpudp.backends.rates`)
TWO_LIST = "subset_sum.two_list"
lowering.declare(TWO_LIST, cpu=f"{__package__}.cpu", cuda=f"{__package__}.cuda")


# ----------------------------------------------------------------------------------------------------
# Input checking and memory planning


def _int_list(values, field):
    """The weights as a list of Python ints (exact), each >= 0 and their sum within int64; anything
    else raises InputError naming ``field``."""
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise InputError(
                field, f"must be a 1-D sequence of integers, got an array of shape {values.shape}"
            )
        if values.dtype.kind not in "iuO":
            raise InputError(field, f"must be integers, got an array of dtype {values.dtype}")
        values = values.tolist()
    if isinstance(values, str | bytes | bytearray | memoryview | set | frozenset | dict):
        raise InputError(
            field, f"must be a sequence (list, tuple or 1-D array) of integers, got {type(values).__name__}"
        )
    try:
        values = list(values)
    except TypeError:
        raise InputError(field, f"must be a sequence of integers, got {type(values).__name__}") from None
    out = []
    for k, v in enumerate(values):
        if isinstance(v, bool | np.bool_) or not isinstance(v, int | np.integer):
            raise InputError(field, f"item {k} is {short_repr(v)}: weights must be integers")
        v = int(v)
        if v < 0:
            raise InputError(field, f"item {k} is {v}: weights must be non-negative")
        out.append(v)
    if sum(out) > INT64_MAX:
        raise InputError(field, "the weights sum past 2**63 - 1 (int64 sums)")
    return out


def _int_scalar(v, field):
    if isinstance(v, bool | np.bool_) or not isinstance(v, int | np.integer):
        raise InputError(field, f"must be an integer, got {short_repr(v)}")
    v = int(v)
    if v < 0:
        raise InputError(field, f"must be non-negative, got {short_repr(v)}")
    if v > INT64_MAX:
        raise InputError(field, "must be below 2**63")
    return v


MAX_BLOCK = 2**31 - 1


def _block(block):
    """The pruning block size: None (the backend's default) or an integer 1 .. 2**31 - 1."""
    if block is None:
        return None
    if isinstance(block, bool | np.bool_) or not isinstance(block, int | np.integer):
        raise InputError("block", f"must be an integer, got {short_repr(block)}")
    if not 1 <= int(block) <= MAX_BLOCK:
        raise InputError("block", f"must be 1 .. {MAX_BLOCK}, got {short_repr(int(block))}")
    return int(block)


def _list_bound(ws, cap):
    """Upper bound on the list length of one half (sums <= cap): no more subsets than those of at most
    r items, r the most of the smallest weights that fit; 2**h when all fit."""
    r = 0
    total = 0
    for w in sorted(ws):
        if total + w > cap:
            break
        total += w
        r += 1
    return sum(comb(len(ws), k) for k in range(r + 1))


def plan_memory(wa, wb, cap, e):
    """Bytes the two-list run needs at its peak: list A kept, list B double-buffered while it grows
    (ping-pong buffers of the last two steps' bounds), and the per-block pruning arrays."""

    def buffers(ws):
        if not ws:
            return 1, 0
        return _list_bound(ws, cap), min(_list_bound(ws[:-1], cap), 2 ** (len(ws) - 1))

    fa, oa = buffers(wa)
    fb, ob = buffers(wb)
    ka = -(-fa // e)
    gen_a = BYTES_PER_SUM * (fa + oa)
    peak = BYTES_PER_SUM * fa + max(BYTES_PER_SUM * (fb + ob), BYTES_PER_SUM * fb + 3 * 8 * ka)
    return {"peak": max(gen_a, peak), "a_buffers": (fa, oa), "b_buffers": (fb, ob)}


def _free_memory(backend, need=0):
    """(free bytes, where) for the memory the backend's lists live in (its lowering's
    ``free_memory``: the GPU's free memory, or what this process may still allocate on the host)."""
    return lowering.get(TWO_LIST, backend).free_memory(need)


def _largest_n(free):
    """The largest n whose worst case (no sum pruned) fits in ``free`` bytes, as plan_memory counts."""

    def peak(n):
        ha, hb = (n + 1) // 2, n // 2
        return BYTES_PER_SUM * (2**ha + max(2 ** (ha - 1), 2**hb + 2 ** max(hb - 1, 0)))

    n = 1
    while n < MAX_ITEMS and peak(n + 1) <= free:
        n += 1
    return n


# ----------------------------------------------------------------------------------------------------
# The two stages on each backend


def _halves(weights, cap):
    """Usable items (0 < w <= cap), non-increasing, dealt alternately into two halves of (index, w)."""
    items = sorted(((w, k) for k, w in enumerate(weights) if 0 < w <= cap), key=lambda t: (-t[0], t[1]))
    if len(items) > MAX_ITEMS:
        raise InputError(
            "weights",
            f"{len(items)} non-zero weights <= {cap}; at most {MAX_ITEMS} are supported (a uint32 mask "
            "per sum in each half)",
        )
    half_a = [(k, w) for w, k in items[0::2]]
    half_b = [(k, w) for w, k in items[1::2]]
    return half_a, half_b


def _two_list(half_a, half_b, cap, backend, block, tick=None):
    """Run the three stages; returns (gap, mask_a, mask_b, stats dict). ``tick(k)``: see
    :func:`.cpu.two_list` (the progress bar and the time limit)."""
    wa = [w for _, w in half_a]
    wb = [w for _, w in half_b]
    e = _block(block) or lowering.get(TWO_LIST, backend).BLOCK
    plan = plan_memory(wa, wb, cap, e)
    free, where = _free_memory(backend, plan["peak"])
    if plan["peak"] > free:
        raise InputError(
            "weights",
            f"{len(wa) + len(wb)} usable items need up to {plan['peak'] / 2**30:.2f} GiB for the two lists "
            f"but {free / 2**30:.2f} GiB are free {where}; the limit here is about n = {_largest_n(free)} "
            "(fewer when the capacity prunes little)",
        )
    gap, mask_a, mask_b, pairs, (na, nb), stages = lowering.get(TWO_LIST, backend).two_list(
        wa, wb, cap, e, plan, tick
    )
    if gap == INT64_MAX:
        raise CheckError("two-list search found no pair: the empty subset should always be one")
    info = {
        "list_sizes": [int(na), int(nb)],
        "halves": [len(wa), len(wb)],
        "block": e,
        "pairs": int(pairs),
        "memory_bytes": int(plan["peak"]),
        "stages": stages,
    }
    return gap, mask_a, mask_b, info


def _unmask(half, mask):
    return [half[s][0] for s in range(len(half)) if mask >> s & 1]


# ----------------------------------------------------------------------------------------------------
# Public API


class _Run:
    """A solve's time limit and progress bar (:func:`_best_subset` starts them once the split is
    known; a split search's parts share them). ``tick(k)`` moves the bar by ``k`` sums and raises
    :class:`TimeLimitReached` past the limit; the exception then carries ``found``, the best
    ``(sum, subset)`` seen so far, when there is one (:func:`_found`). A split search's bar counts
    parts, each moved through by its sums (at most ``per_part`` of them: the lists at full capacity)
    so that it shows from the first part on."""

    def __init__(self, time_limit, progress):
        self.limit, self.progress = time_limit, progress
        self.deadline = Deadline.of(time_limit)  # counted from the call, as the user counts it
        self.bar = None
        self.per_part, self.in_part = 0, 0.0

    def start(self, n: int, split: int, rest: list, cap: int, backend: str):
        """Announce a run predicted over a minute; start the bar over the sums made and searched
        (list A twice, list B once) of the lists of ``rest``, the weights left to the two lists."""
        steps = (1 << split) * _work_of(n - split)
        what = f"subset sum of {n} usable items" + (f" (2^{split} parts)" if split else "")
        announce(
            f"{what} = {steps:.3g} steps",
            predicted_seconds(steps, backend, FAMILY),
            backend_words(backend),
            self.limit,
            self.progress,
        )
        ws = sorted(rest, reverse=True)  # dealt into the halves as _halves deals them
        self.per_part = max(2 * _list_bound(ws[0::2], cap) + _list_bound(ws[1::2], cap), 1)
        if not split:
            self.bar = progress_bar(self.per_part, self.progress, "sum", self.deadline)

    def over_parts(self, parts: int) -> None:
        """A split search of ``parts`` parts: the bar counts them."""
        self.bar = progress_bar(parts, self.progress, "part", self.deadline)

    def tick(self, k: int) -> None:
        if self.bar is None:
            return
        if self.bar.unit != "part":
            self.bar.update(k)
            return
        step = min(k / self.per_part, 1.0 - self.in_part)  # within the part that runs
        self.in_part += step
        self.bar.update(step)

    def part_done(self) -> None:
        if self.bar is not None:
            self.bar.update(1.0 - self.in_part)
        self.in_part = 0.0

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _found(stop: TimeLimitReached, total: int, subset: list) -> None:
    """Keep ``(total, subset)`` on ``stop`` as the best found so far when it beats what is there."""
    if total > getattr(stop, "found", (-1, None))[0]:
        stop.found = (total, subset)


def _best_subset(weights, cap, backend, block, split=None, client=None, run=None, tick=None):
    """Largest subset sum <= cap: (sum, indices, info or None when settled without lists).

    ``split``: fix the ``split`` largest usable items (:func:`_split_search`); None: as few as make
    the rest fit the memory here and the 64-item masks (0 when it already fits). ``run`` (a
    :class:`_Run`): the solve's time limit and bar, started here; ``tick``: a part's look at them."""
    usable = [k for k, w in enumerate(weights) if 0 < w <= cap]
    total = sum(weights[k] for k in usable)
    if total <= cap:
        return total, usable, None
    hit = next((k for k in usable if weights[k] == cap), None)
    if hit is not None:
        return cap, [hit], None
    if split is None:
        split = _split_needed(weights, usable, cap, backend, block)
    half_a, half_b = _halves(weights, cap) if not split else ([], [])
    if run is not None:
        rest = sorted((weights[k] for k in usable), reverse=True)[split:]
        run.start(len(usable), split, rest, cap, backend)
        tick = run.tick
    if split:
        return _split_search(weights, usable, cap, backend, block, split, client, run)
    try:
        gap, mask_a, mask_b, info = _two_list(half_a, half_b, cap, backend, block, tick)
    except TimeLimitReached as stop:  # the search's best pair so far (.cpu.two_list)
        gap, ma, mb = getattr(stop, "partial", (INT64_MAX, 0, 0))
        if gap != INT64_MAX:
            _found(stop, cap - gap, sorted(_unmask(half_a, ma) + _unmask(half_b, mb)))
        raise
    return cap - gap, sorted(_unmask(half_a, mask_a) + _unmask(half_b, mask_b)), info


#: at most this many items are fixed by a split (2^k parts)
MAX_SPLIT = 16


def _split_needed(weights, usable, cap, backend, block) -> int:
    """How many of the largest usable items to fix so that the rest's two lists fit here: 0 when
    all fit as they are; else enough to bring the rest within 64 items and within the largest n
    whose worst case fits the free memory. Raises InputError past :data:`MAX_SPLIT`."""
    n = len(usable)
    if n <= MAX_ITEMS:
        half_a, half_b = _halves(weights, cap)
        e = _block(block) or lowering.get(TWO_LIST, backend).BLOCK
        plan = plan_memory([w for _, w in half_a], [w for _, w in half_b], cap, e)
        if plan["peak"] <= _free_memory(backend, plan["peak"])[0]:
            return 0
    free, where = _free_memory(backend)
    k = max(n - min(MAX_ITEMS, _largest_n(free)), 1)
    if k > MAX_SPLIT:
        raise InputError(
            "weights",
            f"{n} usable items: the lists of at most {_largest_n(free)} fit {where}, and splitting on "
            f"{k} items (2^{k} parts) is past the limit of {MAX_SPLIT}",
        )
    return k


def _split_search(weights, usable, cap, backend, block, k, client, run=None):
    """Fix the ``k`` largest usable items: for each of their ``2^k`` subsets S (with sum(S) <= cap)
    the rest's best sum <= cap - sum(S) by the two lists (a part); the best of the parts is the best
    of all, since every subset is one S plus a subset of the rest. Parts run one after the other,
    or as tasks on ``client``'s workers (one GPU each); an exact hit of ``cap`` stops the others.
    Returns what :func:`_best_subset` returns, with ``info["split"]`` describing the parts. Past
    ``run``'s time limit (checked within each part here, between finished parts on workers) the
    :class:`TimeLimitReached` raised carries the best subset found in the parts run (:func:`_found`)."""
    k = min(k, len(usable))
    order = sorted(usable, key=lambda q: (-weights[q], q))
    fixed, rest = order[:k], sorted(order[k:])
    rest_w = [weights[q] for q in rest]
    parts = []
    for mask in range(1 << k):
        s = sum(weights[fixed[b]] for b in range(k) if mask >> b & 1)
        if s <= cap:
            parts.append((mask, s))
    parts.sort(key=lambda t: -t[1])  # heaviest fixed part first: the smallest lists, the likeliest hit
    if run is not None:
        run.over_parts(len(parts))
    best = (-1, None, None, None)
    done = []

    def chosen(mask, sub):
        return sorted([fixed[b] for b in range(k) if mask >> b & 1] + [rest[q] for q in sub])

    def stopped(stop, mask=None, s=0):
        """Put on ``stop`` the best of the finished parts and of the stopped part's own find (a
        subset of the rest, with the fixed items of ``mask``, summing ``s``)."""
        part = stop.__dict__.pop("found", None)
        if part is not None and mask is not None:
            _found(stop, s + part[0], chosen(mask, part[1]))
        if best[1] is not None:
            _found(stop, best[0], chosen(best[1], best[2]))

    if client is None:
        for mask, s in parts:
            try:
                got = _part(rest_w, cap - s, backend, block, run and run.tick)
            except TimeLimitReached as stop:
                stopped(stop, mask, s)
                raise
            done.append(got[2])
            if s + got[0] > best[0]:
                best = (s + got[0], mask, got[1], got[2])
            if best[0] == cap:
                break
            if run is not None:
                try:
                    run.part_done()
                except TimeLimitReached as stop:
                    stopped(stop)
                    raise
    else:
        from gpudp.distributed import dask_distributed

        wait = dask_distributed().as_completed
        futures = {
            client.submit(_part, rest_w, cap - s, backend, block, pure=False): (mask, s) for mask, s in parts
        }
        for fut in wait(list(futures), loop=client.loop):  # this client's loop, not the default's
            mask, s = futures[fut]
            got = fut.result()
            done.append(got[2])
            if s + got[0] > best[0]:
                best = (s + got[0], mask, got[1], got[2])
            if best[0] == cap:
                client.cancel([f for f in futures if not f.done()])
                break
            if run is not None:
                try:
                    run.part_done()
                except TimeLimitReached as stop:
                    client.cancel([f for f in futures if not f.done()])
                    stopped(stop)
                    raise
    total, mask, sub, _ = best
    subset = chosen(mask, sub)
    infos = [x for x in done if x]
    info = {
        "list_sizes": [sum(x["list_sizes"][0] for x in infos), sum(x["list_sizes"][1] for x in infos)],
        "stages": {
            key: sum(x["stages"].get(key, 0.0) for x in infos)
            for key in (infos[0]["stages"] if infos else {})
        },
        "memory_bytes": max((x["memory_bytes"] for x in infos), default=0),
        "split": {"fixed_items": k, "parts": len(parts), "parts_run": len(done), "workers": bool(client)},
    }
    return total, subset, info


def _part(rest_w, cap, backend, block, tick=None):
    """One part of a split search: the best sum <= cap of ``rest_w`` with its indices (a task);
    ``tick``: the solve's time limit, looked at between the part's steps."""
    return _best_subset(rest_w, cap, backend, block, split=0, tick=tick)


def _subset_fault(weights, subset, expected, limit):
    if subset is None:
        return "no subset given"
    if any(not isinstance(k, int) or k < 0 or k >= len(weights) for k in subset):
        return f"subset {subset} has indices outside 0..{len(weights) - 1}"
    if len(set(subset)) != len(subset):
        return f"subset {subset} repeats an index"
    s = sum(weights[k] for k in subset)
    if s != expected:
        return f"subset sums to {s}, not {expected}"
    if s > limit:
        return f"subset sum {s} exceeds {limit}"
    return None


def _run(weights, limit, field, backend, block, split=None, client=None, time_limit=None, progress=None):
    """Check the inputs, choose the backend, solve: ``(weights, limit, (best, subset, info), backend,
    why, stop)``; ``stop`` is the :class:`TimeLimitReached` that ended the search (None: it ran to the
    end), and then ``best``, ``subset`` the best found: the search's, or the greedy one."""
    ws = _int_list(weights, "weights")
    cap = _int_scalar(limit, field)
    block = _block(block)
    if split is not None and (
        isinstance(split, bool) or not isinstance(split, int) or not 0 <= split <= MAX_SPLIT
    ):
        raise InputError("split", f"{split!r}: must be an int in 0..{MAX_SPLIT} (items fixed), or None")
    time_limit = parse_time_limit(time_limit)
    backend, why = choose_backend(backend, _work(ws, cap), FAMILY)
    run = _Run(time_limit, progress)
    try:
        return ws, cap, _best_subset(ws, cap, backend, block, split, client, run), backend, why, None
    except TimeLimitReached as stop:
        best, subset = max(getattr(stop, "found", (-1, None)), _greedy(ws, cap), key=lambda t: t[0])
        return ws, cap, (best, subset, None), backend, why, stop
    finally:
        run.close()


def _greedy(ws, cap) -> tuple[int, list]:
    """A subset sum <= cap taken greedily, heaviest item first: ``(sum, indices)``."""
    total, subset = 0, []
    for k in sorted(range(len(ws)), key=lambda q: -ws[q]):
        if 0 < ws[k] <= cap - total:
            total += ws[k]
            subset.append(k)
    return total, sorted(subset)


def _work(ws, cap) -> float:
    """The solve's size for the backend choice, in steps (n: the usable items; see
    :func:`_work_of`)."""
    return _work_of(sum(1 for w in ws if 0 < w <= cap))


def _work_of(n: int) -> float:
    """The work of the two lists of ``n`` items, in steps: their merges touch about
    ``4 x 2^(n/2)`` sums, the pruning and the search about as many again."""
    return 8.0 * 2.0 ** ((n + 1) // 2)


def _unproven(stop, best, bound) -> dict:
    """The details of a search stopped by its time limit: the best sum found and the bound."""
    return {
        "stopped": "time",
        "message": f"{stop}: the best subset sum found (a lower bound), not proven optimal",
        "lower_bound": best,
        "upper_bound": bound,
    }


def _stats(backend, info, t0, why, ws, cap, whole: bool):
    """The solve's statistics; a search that ran ``whole`` (no exact hit ended it early, no time
    limit) tells the rates what its steps cost (:func:`gpudp.backends.observe`)."""
    stats = Stats(backend=backend, device=device_name(backend), seconds=time.perf_counter() - t0)
    stats.extra["backend_choice"] = why
    if info:
        stats.cells = sum(info["list_sizes"])
        stats.kernel_seconds = sum(info["stages"].values())
        stats.extra.update(info)
        if whole:
            backends.observe(FAMILY, _work(ws, cap), stats)
    return stats


def solve(
    weights,
    target,
    backend: str = "auto",
    block: int | None = None,
    split: int | None = None,
    client=None,
    time_limit=None,
    progress=None,
) -> Solution:
    """A subset of ``weights`` summing exactly to ``target``, or proof that none exists.

    ``solution`` is the sorted list of indices (zero weights are never included) and ``value`` the
    target; when no subset exists, ``value`` and ``solution`` are None and ``details`` holds the
    closest sum below the target (``closest_sum``) with its subset (``closest``), the witness that the
    whole search ran. ``block`` is the pruning block size ``e`` (default 256 on the GPU).

    Past one device's memory (or past 64 usable items) the search splits: the ``split`` largest items
    are fixed in each of their ``2^split`` combinations and the rest searched for each (None: as few
    as make the rest fit, 0 when everything fits; ``stats.extra["split"]`` tells). The parts run one
    after the other, or with ``client`` (a ``dask.distributed.Client``, :mod:`gpudp.distributed`)
    on its workers, one GPU each; a part that hits the target exactly stops the others.

    ``time_limit``: seconds after which the search stops (between the steps of the lists, chunks of
    the search, or parts); unless a subset found by then hits the target, the answer is then not
    optimal (``optimal`` False, ``details["stopped"] == "time"``, ``details["feasible"]`` None:
    unknown): ``closest_sum`` and ``closest`` are the best sum found below the target (the search's,
    or the greedy heaviest-first one), ``lower_bound`` .. ``upper_bound`` (the target) bound the
    closest sum. ``progress``: a bar on stderr (None: only on a terminal; False: none, and no
    prediction line either: a solve predicted over a minute says so on stderr first).
    """
    t0 = time.perf_counter()
    ws, m, (best, subset, info), backend, why, stop = _run(
        weights, target, "target", backend, block, split, client, time_limit, progress
    )
    feasible = best == m
    details = {"feasible": feasible if feasible or stop is None else None, "target": m}
    if not feasible:
        details.update(closest_sum=best, closest=subset)
        if stop is not None:
            details.update(_unproven(stop, best, m))

    def check(sol):
        if sol.details["feasible"]:
            return _subset_fault(ws, sol.solution, m, m)
        if sol.solution is not None or sol.value is not None:
            return "an infeasible answer carries a subset"
        cs = sol.details["closest_sum"]
        return _subset_fault(ws, sol.details["closest"], cs, m - 1)

    sol = Solution(
        problem="subset-sum",
        value=m if feasible else None,
        solution=subset if feasible else None,
        stats=_stats(backend, info, t0, why, ws, m, not feasible and stop is None),
        details=details,
        optimal=feasible or stop is None,
        checker=check,
    )
    sol.check()
    return sol


def maximize(
    weights,
    capacity,
    backend: str = "auto",
    block: int | None = None,
    split: int | None = None,
    client=None,
    time_limit=None,
    progress=None,
) -> Solution:
    """The largest subset sum not above ``capacity`` (``value``) with its subset (``solution``);
    ``split``, ``client``, ``time_limit`` and ``progress`` as for :func:`solve` (stopped by the
    time limit short of the capacity: ``value`` is the best sum found, ``optimal`` False)."""
    t0 = time.perf_counter()
    ws, cap, (best, subset, info), backend, why, stop = _run(
        weights, capacity, "capacity", backend, block, split, client, time_limit, progress
    )
    details = {"capacity": cap}
    if stop is not None and best < cap:
        details.update(_unproven(stop, best, cap))

    def check(sol):
        return _subset_fault(ws, sol.solution, sol.value, cap)

    sol = Solution(
        problem="subset-sum-max",
        value=best,
        solution=subset,
        stats=_stats(backend, info, t0, why, ws, cap, best < cap and stop is None),
        details=details,
        optimal="stopped" not in details,
        checker=check,
    )
    sol.check()
    return sol


def generate_list(weights, cap, backend: str = "cpu"):
    """The sorted subset sums <= cap of ``weights`` (taken in the given order) with their bit masks,
    as the generation stage builds them (host numpy arrays); for tests and inspection."""
    ws = _int_list(weights, "weights")
    cap = _int_scalar(cap, "capacity")
    if any(w == 0 or w > cap for w in ws) or len(ws) > MAX_ITEMS // 2:
        raise InputError("weights", f"must be 1..{cap}, at most {MAX_ITEMS // 2} of them")
    sizes = (_list_bound(ws, cap), min(_list_bound(ws[:-1], cap), 2 ** max(len(ws) - 1, 0)))
    return lowering.get(TWO_LIST, resolve_backend(backend)).generate_host(ws, cap, sizes)


def _sorted_sums(values, field: str, cap: int) -> np.ndarray:
    """A list of subset sums as the stages take it: 1-D integers, ascending, within 0 .. ``cap``
    (int64); anything else raises InputError naming ``field`` (the stages would read it silently
    wrong)."""
    x = np.asarray(values)
    if x.ndim != 1 or (x.size and x.dtype.kind not in "iu"):
        raise InputError(field, f"must be a 1-D sequence of integers, got {short_repr(values)}")
    if x.size and (x[0] < 0 or x[-1] > cap or (np.diff(x) < 0).any()):
        raise InputError(field, f"must be ascending sums within 0 .. {cap} (the capacity)")
    return np.ascontiguousarray(x, np.int64)


def prune_pairs(a, b, cap, e, backend: str = "cpu"):
    """IPS on sorted lists a and b (ascending, values <= cap): per A-block, (first C-block, count).

    Raises :class:`InputError` for lists that are not ascending integers within 0 .. ``cap``, a
    negative ``cap`` or a block size ``e`` outside 1 .. 2^31 - 1."""
    cap = _int_scalar(cap, "cap")
    if isinstance(e, bool | np.bool_) or not isinstance(e, int | np.integer) or not 1 <= e <= MAX_BLOCK:
        raise InputError("e", f"the block size: an integer 1 .. {MAX_BLOCK}, got {short_repr(e)}")
    e = int(e)
    a = _sorted_sums(a, "a", cap)
    b = _sorted_sums(b, "b", cap)
    return lowering.get(TWO_LIST, resolve_backend(backend)).prune_pairs(a, b, cap, e)


def _measure(backend: str, step: int):
    """The ``subset_sum`` family's measurement (:mod:`gpudp.backends.rates`): ``20 + 2 step`` random
    even weights (at most 52) of about 2^41 and an odd target (``step`` doubles the steps): no
    subset hits it, so the search runs whole.

    Returns
    -------
    (steps, the solve's :class:`gpudp.Stats`)
    """
    rng = np.random.default_rng(step)
    ws = 2 * rng.integers(1 << 40, 1 << 41, 20 + 2 * min(step, 16))
    target = int(ws.sum()) // 2 | 1
    sol = solve(ws, target, backend=backend, progress=False)
    return _work([int(w) for w in ws], target), sol.stats


backends.calibrator(FAMILY, _measure)
