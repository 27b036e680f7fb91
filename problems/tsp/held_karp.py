"""Exact travelling salesman tours by Held-Karp dynamic programming on the layered engine: the
solve front (:func:`solve`: an instance read and checked, its memory checked, the sweep, the tour
walked back and checked), its summary and command line.

The recurrence and its ranked subsets are :mod:`.recurrence`; instances, their value type and a
tour's length :mod:`.instance`; what ``n`` cities need and the refusals :mod:`.sizes`; the bounds
of a run stopped by its time limit :mod:`.bounds`.
"""

from __future__ import annotations

import math
import time

import numpy as np

from gpudp import backends
from gpudp.backends import choose as choose_backend
from gpudp.backends import device_name, predicted_seconds
from gpudp.backends import where as backend_words
from gpudp.engine import sweep
from gpudp.errors import InputError, TimeLimitReached
from gpudp.inputs import parse_time_limit
from gpudp.memory import parse_bytes
from gpudp.progress import announce
from gpudp.solution import Solution, Stats, warn_unproven

from .bounds import heuristic_tour, shortest_edges_bound
from .instance import Instance, from_matrix, from_networkx, from_tsplib, load, tour_length, value_dtype
from .recurrence import LAYOUTS, HeldKarp
from .sizes import EXACT_FIGURES, FAMILY, check_memory, memory_needed, transitions

__all__ = [
    # the solve front
    "cli_arguments",
    "cli_solve",
    "plain_label",
    "solve",
    "summary",
    "tour_checker",
    # re-exported: gpudp.problems.tsp.held_karp is the documented solver module (docs/tsp.md,
    # examples/tsp.py), and these were its names before the split
    "from_matrix",
    "from_networkx",
    "from_tsplib",
    "load",
    "memory_needed",
    "tour_length",
]


def solve(
    instance,
    backend: str = "auto",
    *,
    weight: str = "weight",
    allow_infinite: bool = False,
    memory_budget=None,
    progress=None,
    layout: str = "position",
    time_limit=None,
) -> Solution:
    """A shortest tour through every city, by Held-Karp: a checked :class:`gpudp.Solution`.

    ``instance``: a distance matrix (numpy or nested lists; symmetric or not; row = from), a
    networkx graph (complete, with ``weight`` on every edge; directed = asymmetric), a path to a
    TSPLIB file (TSP or ATSP), or an :class:`Instance`. ``allow_infinite`` admits ``inf`` matrix
    entries and missing graph edges. ``value`` is the tour's length, ``solution`` the tour as city
    labels starting at the first city (matrix: 0..n-1; TSPLIB: 1..n; graph: its nodes), without
    the return to it. ``details`` has ``length``, ``tour``, ``tour_index`` (0-based) and the
    memory figures; ``stats.extra["transitions"]`` counts the DP's work.

    ``time_limit``: seconds after which the sweep stops (between chunks of layers); the solution is
    then not optimal (``optimal`` False, ``details["stopped"] == "time"``): ``value`` and ``solution``
    are a heuristic tour (nearest neighbour from each city, then 2-opt), checked (its length a
    proven upper bound), and
    ``details["lower_bound"]`` the larger of the sums of each city's shortest edge out and in (a tour
    leaves and enters every city once). A solve predicted to take over a minute says so on stderr
    first (unless ``progress=False``).
    """
    if layout not in LAYOUTS:
        raise InputError("layout", f"one of {', '.join(LAYOUTS)}, got {layout!r}")
    t_start = time.perf_counter()
    time_limit = parse_time_limit(time_limit)
    if memory_budget is not None:
        memory_budget = parse_bytes(memory_budget, "memory_budget")
    inst = load(instance, weight=weight, allow_infinite=allow_infinite)
    n, d = inst.n, inst.matrix
    backend, why = choose_backend(backend, transitions(n) if n <= EXACT_FIGURES else None, FAMILY)
    dtype = value_dtype(d)
    need = check_memory(n, dtype, backend, memory_budget, inst.name)
    work = f"tsp {n} cities = {need['transitions']:.3g} transitions"
    seconds = predicted_seconds(need["transitions"], backend, FAMILY)
    announce(work, seconds, backend_words(backend), time_limit, progress)
    stopped = None
    if n <= 1:
        stats = Stats(backend=backend, device=device_name(backend))
        length, tour = d.dtype.type(0), [0]
    else:
        m = n - 1
        rec = HeldKarp(d, layout, dtype)
        try:
            result = sweep(
                rec,
                backend=backend,
                memory_budget=memory_budget,
                progress=progress,
                time_limit=time_limit,
                started=t_start,
            )
        except TimeLimitReached as stop:
            stopped = stop
            stats = Stats(backend=backend, device=device_name(backend), cells=stop.done)
            stats.seconds = time.perf_counter() - t_start
            tour = heuristic_tour(d)
            length = d.dtype.type(tour_length(d, tour))
        else:
            stats, length, tour = _shortest_tour(result, d, m)
            backends.observe(FAMILY, need["transitions"], stats)
    value = length.item()
    details = {}
    if stopped is not None:
        lower = shortest_edges_bound(d)
        details = {
            "stopped": "time",
            "message": f"{stopped}: a heuristic tour (an upper bound), not proven optimal",
            "lower_bound": lower,
            "upper_bound": value,
        }
    stats.extra["transitions"] = need["transitions"]
    stats.extra["backend_choice"] = why
    stats.extra["layout"] = layout
    stats.extra["solve_seconds"] = time.perf_counter() - t_start
    run_s = stats.seconds - stats.extra.get("compile_seconds", 0.0)
    if run_s > 0:  # the sweep without compilation
        stats.extra["transitions_per_second"] = need["transitions"] / run_s
    sol = Solution(
        problem="tsp",
        value=value,
        solution=[inst.labels[i] for i in tour],
        stats=stats,
        details={
            "length": value,
            "tour": [plain_label(inst.labels[i]) for i in tour],
            "tour_index": tour,
            "cities": n,
            "name": inst.name,
            "symmetric": inst.symmetric,
            "value_dtype": np.dtype(dtype).name,
            "memory": {k: need[k] for k in ("decisions", "values", "device", "spills_to_disk")},
            **details,
        },
        optimal=stopped is None,
        checker=tour_checker(inst),
    )
    sol.check()
    return sol


def _shortest_tour(result, d: np.ndarray, m: int):
    """The swept DP's ``(stats, length, tour)``: the best last layer's total, walked back."""
    try:
        stats = result.stats
        totals = result.last_layer.astype(d.dtype) + d[1:, 0]
        jbest = int(np.argmin(totals))
        length = totals[jbest]
        if not np.isfinite(length):
            raise InputError("distances", "no tour of finite length exists: too many edges are missing")
        path = result.traceback((m - 1, jbest))
    finally:
        result.close()
    if len(path) != m:
        raise AssertionError(f"the traceback visited {len(path)} layers, not {m}")
    ends = [jbest] + [int(x) for x in path[: m - 1, 2]]  # elements from the last one backwards
    return stats, length, [0] + [e + 1 for e in reversed(ends)]


def plain_label(label):
    """A label as a plain Python value (a numpy scalar's ``item()``), for JSON."""
    return label.item() if hasattr(label, "item") else label


def tour_checker(inst: Instance):
    """The check of a solution's tour against ``inst``: a permutation of its cities from the first,
    its labels, its length (to the last bit in the DP's order for reals) and, for a stopped run, the
    bounds around it."""

    def check(sol: Solution):
        tour = list(sol.details["tour_index"])
        if sorted(tour) != list(range(inst.n)):
            return "the tour is not a permutation of the cities"
        if tour[0] != 0:
            return "the tour does not start at the first city"
        if list(sol.solution) != [inst.labels[i] for i in tour]:
            return "the tour's labels do not match its cities"
        length = tour_length(inst.matrix, tour)
        if inst.matrix.dtype.kind == "f":
            ok = length == sol.value or math.isclose(length, sol.value, rel_tol=1e-12, abs_tol=0.0)
        else:
            ok = length == sol.value
        if not ok:
            return f"the tour's length is {length}, not the reported {sol.value}"
        lower, upper = sol.details.get("lower_bound"), sol.details.get("upper_bound")
        if sol.details.get("stopped") and not lower <= sol.value == upper:
            return f"bounds {lower} .. {upper} do not hold the tour"
        return None

    return check


# ------------------------------------------------------------------------------------------------
# CLI


def summary(sol: Solution) -> str:
    st = sol.stats
    d = sol.details
    what = f"{d['name']}: " if d.get("name") else ""
    kind = "" if d["symmetric"] else " (asymmetric)"
    tour = " ".join(str(x) for x in d["tour"])
    lines = [
        f"{what}tour length {sol.value} through {d['cities']} cities{kind} (optimal, checked)",
        f"tour: {tour}",
    ]
    if d.get("stopped"):  # a time limit: bounds, not the optimum
        lines[0] = (
            f"{what}shortest tour through {d['cities']} cities{kind}: between {d['lower_bound']} and "
            f"{d['upper_bound']} (not optimal: {d['message']}); the tour of length {sol.value} is checked"
        )
        return "\n".join(lines)
    if st.seconds > 0:
        compile_s = st.extra.get("compile_seconds", 0.0)
        compiling = f" ({compile_s:.2f} s of it compiling)" if compile_s > 0.05 else ""
        rate = st.extra.get("transitions_per_second", 0.0)
        lines.append(
            f"{st.backend} on {st.device}: {st.seconds:.3f} s{compiling}, {rate / 1e9:.2f} G transitions/s, "
            f"{st.bytes_evicted / 2**20:.1f} MiB of decisions"
            + (" (spilled to disk)" if st.spilled_to_disk else "")
        )
    return "\n".join(lines)


def cli_arguments(p):
    p.add_argument("file", help="TSPLIB file (TSP or ATSP; EXPLICIT, EUC_2D, CEIL_2D, GEO, ATT, ...)")
    p.add_argument(
        "--memory-budget",
        default=None,
        help="host bytes for the decision store before it spills to disk (e.g. 8G)",
    )
    p.add_argument(
        "--time-limit",
        default=None,
        help="stop after this many seconds with proven bounds (a heuristic tour and the "
        "shortest edges' sum), exit 1",
    )


def cli_solve(args) -> Solution:
    time_limit = parse_time_limit(args.time_limit, "--time-limit")
    sol = solve(args.file, backend=args.backend, memory_budget=args.memory_budget, time_limit=time_limit)
    warn_unproven(sol)
    return sol


def _measure(backend: str, step: int):
    """The ``tsp`` family's measurement (:mod:`gpudp.backends.rates`): Held-Karp on ``10 + step``
    cities (at most 24) at random integer distances (a city more about doubles the transitions).

    Returns
    -------
    (transitions, the solve's :class:`gpudp.Stats`)
    """
    n = 10 + min(step, 14)
    d = np.random.default_rng(step).integers(1, 1000, (n, n))
    sol = solve(d, backend=backend, progress=False)
    return transitions(n), sol.stats


backends.calibrator(FAMILY, _measure)
