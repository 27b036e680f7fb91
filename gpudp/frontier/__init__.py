"""The branch-and-bound frontier engine: branch, bound, prune, compact, swap.

A *problem* is a maximisation over ``n_vars`` 0/1 decisions, taken in order (level ``k`` decides
variable ``k``). A node at level ``k`` has decided variables ``0 .. k-1``; it is two numbers
``(f0, f1)`` of the problem's value dtype plus its decisions, packed 32 to a ``uint32`` word. Node
arrays are ``f0[m]``, ``f1[m]`` and node-major ``bits[m, stride]``, ``stride`` = the words in use
at the nodes' level (at least one): a run of nodes is one contiguous range of each array. The
problem gives one plain Python function

    child(level, f0, f1, take, data, n_vars) -> (ok, c0, c1, upper, lower)

that makes the son of a node of ``level`` with variable ``level`` set to ``take`` (0 or 1): ``ok``
False when the son is infeasible, its fields ``c0, c1``, an upper bound on every completion of it,
and the value ``lower`` of one feasible completion (which the problem can rebuild from the son's
fields afterwards). ``data`` is one 2-D array of the value dtype holding whatever the function reads.
The engine compiles ``child`` for the CPU (numba ``njit``) and the GPU (a CUDA device function
inlined into the kernels below) and knows nothing else of the problem.

The search is breadth first and level synchronous (Lalami & El Baz): every node of level ``k`` is
expanded before level ``k+1``. Sons whose upper bound cannot beat the incumbent (``upper <= best -
slack``; ``slack`` = 0 for exact integer data) are pruned; the sons of the last level are leaves
and only feed the incumbent. Interchangeable variables (``symmetric[k]``: variable ``k`` is a copy
of variable ``k-1``, e.g. identical knapsack items) are branched in order only: a node that set
``k-1`` to 0 does not get the son with ``k`` set to 1 (that solution is reached with the copies
swapped), which removes the factorial duplication of identical items.

Where the nodes live (Shen, Shigeoka, Ino & Hagihara):

- a level of fewer than ``cpu_threshold`` nodes is expanded on the host (the GPU would be idle);
- a level of at most ``batch`` nodes stays resident on the GPU between levels (in core);
- larger levels live in a host FIFO (:class:`Ring`: page-locked blocks of a process-wide pool,
  taken and given back as it grows and shrinks) and stream through the GPU in batches of ``batch``
  nodes on two CUDA streams: three asynchronous copies per ring segment each way, and the host
  waits for a lane's kernels only, so that the copies of one lane overlap the work of the other;
  the survivors go back to the ring's tail.

Per GPU batch: ``expand_count`` (sons, bounds, per-block survivor count and best lower bound),
``scan_blocks`` (exclusive scan of the block counts, the batch's best lower bound and its son),
``scatter`` (sons again, block-local scan, write survivors to a separate output array: Shen's
"separated" compaction, the block's decision words written together so that they coalesce; and the
best son's node for the incumbent). The ring never outgrows
``host_budget_bytes``: when it would, or when ``time_limit`` passes, the search stops and the
result says so (``complete`` False): the incumbent is then a feasible solution, not a proven optimum.

The package: :mod:`~gpudp.frontier.nodes` (the problem and the result), :mod:`~gpudp.frontier.ring`
(the host FIFO), :mod:`~gpudp.frontier.search` (the level loop on the host),
:mod:`~gpudp.frontier.cpu` (the host kernels) and :mod:`~gpudp.frontier.cuda` (the GPU kernels and
lanes; imported only when the cuda backend runs). ``search`` and ``cuda`` are the frontier's
lowerings on the cpu and cuda backends (:mod:`gpudp.lowering`, family ``"frontier"``), each with
``make_search(...)`` and ``compact(...)``. Host blocks come from the backend's
:meth:`~gpudp.backends.base.Backend.host_pool`.
"""

from __future__ import annotations

import numpy as np

from .. import backends, lowering
from ..memory import BlockPool
from .nodes import BranchProblem, FrontierResult
from .ring import Ring, RingFull, Segment
from .search import DEFAULT_BATCH, DEFAULT_CPU_THRESHOLD

__all__ = [
    "DEFAULT_BATCH",
    "DEFAULT_CPU_THRESHOLD",
    "BlockPool",
    "BranchProblem",
    "FrontierResult",
    "Ring",
    "RingFull",
    "Segment",
    "compact",
    "exclusive_scan",
    "solve",
]

#: the search and the compaction on each backend (:func:`make_search`, :func:`compact`)
lowering.declare("frontier", cpu="gpudp.frontier.search", cuda="gpudp.frontier.cuda")


def compact(values: np.ndarray, flags: np.ndarray, backend: str = "cuda", threads: int | None = None):
    """``values[flags != 0]`` in order: on ``cuda`` by the engine's scan-based separated compaction."""
    return lowering.get("frontier", backend).compact(values, flags, threads)


def exclusive_scan(counts: np.ndarray, threads: int | None = None) -> tuple[np.ndarray, int]:
    """Exclusive scan of int64 ``counts`` on the GPU (the block-offset kernel); (offsets, total)."""
    from . import cuda

    return cuda.exclusive_scan(counts, threads)


def solve(
    problem: BranchProblem,
    backend: str = "cpu",
    host_budget_bytes: int = 1 << 30,
    batch: int = DEFAULT_BATCH,
    cpu_threshold: int = DEFAULT_CPU_THRESHOLD,
    threads: int | None = None,
    time_limit: float | None = None,
) -> FrontierResult:
    """Run the breadth-first branch and bound of ``problem`` on ``backend`` (``cpu`` or ``cuda``).

    ``batch``: the most nodes the GPU expands in one launch (the device holds 4 node arrays of
    ``2 * batch``); ``cpu_threshold``: levels with fewer nodes run on the host; ``host_budget_bytes``:
    the most the host ring's blocks may take. Returns the incumbent (the best son seen, whose
    ``lower`` completion the problem rebuilds) and whether the search completed.
    """
    if problem.n_vars < 1:
        raise ValueError("a branching problem needs at least one variable")
    if batch < 1:
        raise ValueError("batch must be >= 1")
    pool = backends.get(backend).host_pool()
    lowered = lowering.get("frontier", backend)  # cuda: the frontier's own CUDA module, imported now
    search = lowered.make_search(problem, pool, host_budget_bytes, batch, cpu_threshold, time_limit, threads)
    return search.run()
