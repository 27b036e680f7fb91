"""0/1 knapsack by a sparse-state dynamic programme: lists of undominated states, an expanding core
and bound fathoming (after Pisinger's minknap, with the cardinality bounds of Martello, Pisinger &
Toth's combo), exact for integer data; on the CPU, the steps of large lists on a GPU where one is
usable (:mod:`gpudp.problems.knapsack.sparse.cuda`). ``knapsack.solve(..., method="sparse")``.

Its work follows the core around the break item and the states that survive the bounds, not
``n·C``: it carries the large-coefficient instances (``C`` ~ 10^10 and past) that a dense table
cannot hold. See docs/knapsack_sparse.md for the measurements.

**Items.** The items that can be packed (``0 < w ≤ C``, ``p > 0``) are sorted by decreasing
efficiency ``p / w``, exactly (float64 ratios first, then an insertion pass comparing ``p_a·w_b``
with ``p_b·w_a`` as 128-bit products). Items of weight 0 and positive profit are always taken; the
others are dropped. When every remaining item fits, all are taken without a search. Every packing
weighs a multiple of ``g``, the gcd of the weights, so ``C`` is rounded down to one (the same sets
fit); every value is a multiple of ``gp``, the gcd of the profits, so "better than ``z``" means
"at least ``z + gp``".

**States.** The *break item* ``b`` is the first that no longer fits after items ``0..b-1``; the
*break solution* takes exactly those. A state is a solution that agrees with the break solution
outside the *core* ``[s, t]`` (items ``< s`` taken, items ``> t`` not): its weight, its profit, a
node that recovers its items and (while the states' relaxation is on) its number of items. The list
is sorted by weight with strictly increasing profit: no state dominates another (``w1 ≤ w2`` and
``p1 ≥ p2``; all states have the same items left to decide, so dominance holds whether or not a
state fits).

**A step** (:func:`.kernels.step`) grows the core by one item, alternately to the right (item ``t + 1``:
each state also with it added) and to the left (item ``s - 1``: each state also with it removed),
merging the list with its shifted copy in one pass and keeping the undominated states
(Nemhauser–Ullmann). Then

- **incumbent** ``z``: the most profitable state of weight ≤ C, if better (initially the greedy
  solution: the break solution, then every later item that still fits);
- **fathoming**: a state is kept only if its upper bounds reach the threshold ``z + gp`` (a probe's
  target where higher). With items sorted, the items that may still be added have efficiency at
  most ``e_r`` and those that may still be removed at least ``e_l ≥ e_r``, ``r`` and ``l`` the
  nearest items right and left of the core that item reduction has not fixed; so a state of weight
  ``W ≤ C`` is worth at most ``P + (C − W)·e_r`` and one of ``W > C`` at most
  ``P − (W − C)·e_l``; with no item left on the side it needs, a state can gain nothing (it was
  already offered as the incumbent) or never fit, and is dropped. Compared exactly. And, once the
  cardinality relaxation is known, its bound on the state's extensions (**the states' relaxation**,
  :func:`.bounds.state_gains`): ``(S·P − A·K − U·W + U·C + A·k + G) / S`` with ``A/S``, ``U/S`` its
  multipliers rounded to a power of two (:func:`.bounds.rounded_relaxation`), K the state's items and G
  what flipping the items outside the core can add;
- **item reduction** (before a step): item ``j`` keeps its break value (never enters the core) when
  every solution that flips it is worth less than the threshold: by the Lagrangian relaxation at the
  break item's efficiency, ``P' + (C − W')·p_b/w_b`` for the break solution flipped at ``j``, or by
  the cardinality relaxation with ``x_j`` flipped (**flip bounds**, :func:`.bounds.flip_bounds`: the
  relaxation's bound less j's reduced cost);
- **pairing** (a lower bound, now and then): each state with one item outside the core added or
  removed.

**Proof of optimality.** The search ends when the list is empty (nothing can lead to ``z + gp``),
when every item has been decided, or when ``z`` reaches a global upper bound: Dantzig's bound at
first, then the Lagrangian bounds with a cardinality constraint (:func:`.bounds.cardinality_bound`):
``Σx ≤ k_max`` (every feasible set) or ``Σx ≥ k_min`` (every set worth ``z + gp`` or more), with the
multiplier found in float64 and the bound evaluated exactly in integers, so that a float error can
only weaken it. Those are what close the strongly correlated classes, whose lists otherwise grow
without end. The same relaxation, rounded, gives the flip bounds and the states' relaxation (any
multipliers of the right signs give valid bounds).

**Probes** (:class:`.driver.Driver`). When the incumbent is found late (almost strongly correlated
instances), the lists grow with it far below the optimum. Once the main search has run a while,
probes run beside it on a small share of its work: searches that keep only the states that may
reach a target ``T`` near the upper bound. One that ends below ``T`` proves the upper bound
``T − 1``; the next target lies twice as far below the bound; one that reaches ``T`` is from then on
an exact search with a better incumbent, and replaces the main search.

**The 0/1 vector.** Every state carries a node of a persistent list of flips: a state made by
flipping item ``j`` gets a new node (parent: its source's node, item ``j``); a state that came
through unchanged keeps its node. Nodes are made only for the states that survive fathoming, for a
new incumbent and for the greedy solution's items past the break item; when the node array fills,
the nodes no longer reachable from the list or the incumbent are dropped (marked from those roots,
compacted in order; parents precede children) and the array grows only if more than half is still
live. The incumbent's items are the break solution with the items on its node's path flipped.

**The GPU** (:class:`.gpu.Gpu`, :meth:`.search.Search._gpu_chunk`). A list of
:data:`.search.GPU_LIST` states or more, in a search that has run :data:`.gpu.GPU_AFTER_S` seconds
(with ``backend="auto"`` also CUDA's predicted start-up), moves to a usable GPU with its nodes: each
step there is a merge path, a max-scan (the dominance filter), a scan and a compaction
(:mod:`.cuda`), with the same lists and nodes as the CPU step; the list comes back below
:data:`.search.GPU_BACK` states.

**Arithmetic** (integer data only: real-valued data are refused with :class:`gpudp.InputError`).
With ``P`` and ``W`` the profit and weight totals of the items that can be packed, the state values
need ``P ≤ 2^63 − 1`` (as the dense DP and the B&B) and ``W ≤ 2^63 − 1``, checked exactly and
refused past them. No sum leaves that range: a state is a subset of the items, and
``z + gp ≤ P`` since not every item fits (``z`` leaves one out, worth at least ``gp``). Every product
of a bound or of the sort is compared exactly: in int64 when all provably fit
(``max(C, W, P)·max(p, w) ≤ 2^63 − 1``), else as unsigned 128-bit products built from 32-bit
halves; the states' relaxation picks its power of two S so that every sum it forms stays within
2^62. The value and the weight of the answer are summed exactly and checked
(:func:`gpudp.problems.knapsack.io.solution_checker`).

**Stops.** The search runs in chunks of about 10^6 state operations. Past ``time_limit``, or when
its lists would take more than half of the memory this process may still use, it stops and
returns the incumbent, checked, with ``optimal`` False and ``details["message"]`` saying why (as the
branch and bound does at its time limit or host budget); an unproven value is never marked optimal.

**Modules.** :mod:`.exact` (128-bit comparisons, exact sums), :mod:`.kernels` (the compiled steps
and loop, the slots of a search's scalars), :mod:`.bounds` (the cardinality relaxation),
:mod:`.items` (the items' order and limits, what the searches of an instance share), :mod:`.gpu`
(whether the steps may go to the GPU), :mod:`.search` (one search), :mod:`.driver` (the main search
and its probes), :mod:`.cuda` (the GPU list step); this module: :func:`solve`, :func:`solve_instance`.
"""

from __future__ import annotations

import time

import numpy as np

from gpudp.backends import choose as choose_backend
from gpudp.backends import device_name
from gpudp.inputs import parse_time_limit
from gpudp.solution import Solution, Stats

from ..io import INT64_MAX, KnapsackInstance, checked_solution, validate
from .bounds import cardinality_bound
from .driver import Driver
from .exact import exact_sum
from .gpu import Gpu
from .items import Items, check_limits, efficiency_order, integer_data, split_items
from .kernels import (
    NSLOTS,
    ST_CORE,
    ST_IMPROVED,
    ST_LEN,
    ST_LNEXT,
    ST_PAIRED,
    ST_RED,
    ST_RNEXT,
    ST_S,
    ST_T,
    ST_Z,
    advance,
    greedy,
    next_item,
    pair_due,
)

__all__ = ["solve", "solve_instance", "cardinality_bound", "warm"]


def solve_instance(inst: KnapsackInstance, time_limit=None, backend: str = "auto") -> Solution:
    """Solve a validated instance (:func:`gpudp.problems.knapsack.io.validate`); see :func:`solve`."""
    t0 = time.perf_counter()
    if backend != "auto":  # an unknown backend, or "cuda" without a usable GPU: refused like every solver
        choose_backend(backend)
    gpu = Gpu(backend, t0)
    time_limit = parse_time_limit(time_limit)
    deadline = None if time_limit is None else t0 + time_limit
    p, w, cap = integer_data(inst)
    forced, free, x = split_items(p, w, cap)
    details = {"method": "sparse", "n": len(p), "free_items": len(free), "stopped": None}
    stats = Stats(backend="cpu", device=device_name("cpu"))
    complete, message = True, "no free items: trivially optimal"
    if len(free) and exact_sum(w[free]) <= cap:
        x[free] = 1
        message = "every item that can be packed fits: trivially optimal"
    elif len(free):
        small = check_limits(p[free], w[free], cap)
        order = free[efficiency_order(p[free], w[free])]
        ws, ps = np.ascontiguousarray(w[order]), np.ascontiguousarray(p[order])
        g = int(np.gcd.reduce(ws))
        cap_used = cap - cap % g  # every packing weighs a multiple of g: the same sets fit
        if cap_used != cap:
            details["capacity_used"] = cap_used
        b = int(np.searchsorted(np.cumsum(ws), cap_used, side="right"))  # first item that does not fit
        greedy_x = np.zeros(len(ws), np.int8)
        z0 = int(greedy(ws, ps, cap_used, greedy_x))
        items = Items(ws, ps, cap_used, b, small, gpu)
        driver = Driver(items, greedy_x, z0)
        try:
            complete = driver.run(deadline)
            message = "optimal: no state can lead above the incumbent"
            if not complete:
                details["stopped"] = "time"
                message = f"time limit of {time_limit} s reached: the best solution found, not proven optimal"
        except MemoryError as e:
            complete = False
            details["stopped"] = "memory"
            message = f"out of memory ({e}): the best solution found, not proven optimal"
        search = driver.best()
        st = search.st
        x[order] = search.vector()
        generated = driver.generated()
        details.update(
            break_item=b,
            greedy_value=z0,
            incumbent=int(st[ST_Z]),
            core_items=int(st[ST_CORE]),
            reduced_items=int(st[ST_RED]),
            core_range=[int(st[ST_S]), int(st[ST_T])],
            states_generated=generated,
            largest_list=driver.largest(),
            improvements=int(st[ST_IMPROVED]),
            node_collections=search.collections,
            pairings=int(st[ST_PAIRED]),
            probes=driver.record,
            upper_bound=items.ubound,
            bounds=items.bound_info,
            arithmetic="int64" if small else "128-bit products",
        )
        if gpu.steps:
            stats.backend, stats.device = "cuda", gpu.details()["device"]
        stats.cells = generated
        stats.extra.update(states_generated=generated, largest_list=details["largest_list"])
    sel = np.flatnonzero(x == 1)
    value = exact_sum(p[sel])
    details.update(weight=exact_sum(w[sel]), message=message, integral=True, gpu=gpu.details())
    stats.seconds = time.perf_counter() - t0
    claimed = details["incumbent"] + exact_sum(p[forced]) if "incumbent" in details else None
    return checked_solution(p, w, cap, x, value, stats, details, complete, claimed)


def solve(profits, weights, capacity, time_limit=None, name: str = "", backend: str = "auto") -> Solution:
    """Solve a 0/1 knapsack with integer profits and weights by the sparse-state DP; returns a
    checked :class:`gpudp.Solution`.

    The search runs on the CPU; with ``backend`` ``"auto"`` or ``"cuda"`` the steps of a list of
    :data:`.search.GPU_LIST` states or more run on a usable GPU (:class:`.gpu.Gpu`: ``"auto"`` only
    once CUDA has started in this process or the search has run as long as its start-up), with the
    same results; ``"cpu"`` keeps them on the CPU. ``details["gpu"]`` says how many steps ran there.
    ``"cuda"`` where no GPU is usable raises :class:`gpudp.BackendError`, as every solver does.

    ``solution`` is the 0/1 vector (int8) in the caller's item order, ``details["weight"]`` its
    weight, ``details["method"]`` is ``"sparse"``; ``details`` also gives the states generated, the
    largest list, the core and the bounds. ``optimal`` is False (``details["message"]`` says why,
    ``details["stopped"]`` is ``"time"`` or ``"memory"``) when ``time_limit`` seconds passed first or
    the lists outgrew the memory: the value is then that of the best solution found. Real-valued
    data, and totals past int64, raise :class:`gpudp.InputError`.

    >>> solve([10, 7, 8], [5, 4, 3], 8).value
    18
    """
    return solve_instance(
        validate(profits, weights, capacity, name=name), time_limit=time_limit, backend=backend
    )


def warm():
    """Compile every compiled function of the search (or load it from numba's cache) by solving two
    small instances with the bounds, the probes, the pairing and the node collection all made to run
    (the module's thresholds lowered meanwhile), so that a timed solve pays none of it: on a machine
    whose cache is cold, a function first used inside a timed solve compiles there (tenths of a
    second each)."""
    from . import driver as dm
    from . import search as sm

    saved = dm.CHUNK, dm.RELAX_STATES, dm.PROBE_SHARE, sm.LIST_START, sm.NODE_START
    dm.CHUNK, dm.RELAX_STATES, dm.PROBE_SHARE, sm.LIST_START, sm.NODE_START = 8, 0, 1, 2, 2
    try:
        from ..classes import pisinger_instance

        for cls, seed in ((14, 2), (5, 2)):  # probes that fail, a probe that answers
            p, w, c = pisinger_instance(cls, 60, 1000, seed=seed)
            solve(p, w, c, backend="cpu")
        solve([2**62, 3, 2**61], [2**61, 1, 2**60], 2**61 + 2**60, backend="cpu")  # 128-bit products
        # what the GPU path calls from Python (the argument types of Search._gpu_chunk)
        ws, ps = np.array([3, 2, 2], np.int64), np.array([6, 3, 2], np.int64)
        st = np.zeros(NSLOTS, np.int64)
        st[ST_S], st[ST_T], st[ST_LEN], st[ST_RNEXT], st[ST_LNEXT] = 1, 0, 1, 1, 0
        flipub = np.full(3, INT64_MAX, np.int64)
        j = next_item(ws, ps, 4, 1, 3, 6, 1, True, flipub, st, np.zeros(4, np.int64))
        advance(st, j, 1, 1, 2, 2, 0, 6, -2)
        pair_due(3, st)
    finally:
        dm.CHUNK, dm.RELAX_STATES, dm.PROBE_SHARE, sm.LIST_START, sm.NODE_START = saved
