"""The plug-in contract: a recurrence declares its cells; the engine does the rest.

A recurrence is a class. Its *class attributes* describe the cell type and the dependency window;
its *static methods* are plain Python functions that the engine compiles for the CPU (numba
``njit``) and for the GPU (``cuda.jit(device=True)``) and inlines into generated kernels; its
*instance* carries the problem data (``data()``) and the sizes.

Four shapes share one engine, one module each beside the common part (:mod:`.base`:
:class:`Recurrence` and the helpers the shapes and the engine share); each shape's class names it
in ``family``, on which the engine dispatches a sweep:

``GridRecurrence`` (:mod:`.grid`, ``family = "grid"``)
    a 2-D grid of ``rows x cols`` cells; cell ``(i, j)`` reads the cells at constant ``offsets``
    (e.g. ``(-1, 0), (0, -1), (-1, -1)`` for alignment problems; an instance may give its own, such
    as coin change's ``(0, -c)`` per coin). Reads that fall outside the grid take
    ``boundary(i, j, *data)`` (0 unless the class defines it). The engine derives the wavefront order
    from the offsets. A grid of one row or column swept in order (a *line*) may declare
    ``reads_line = True``: its cell also gets the line's values, to read any earlier cell at an
    index computed from the data (weighted interval scheduling's ``OPT(p(j))``), one compile for
    every instance.

``LayeredRecurrence`` (:mod:`.layered`, ``family = "layered"``)
    ``num_layers()`` layers of ``layer_size(t)`` cells; a cell of layer ``t`` may read any cell of
    the ``window`` previous layers (passed to it as arrays). For recurrences whose dependencies are
    not constant offsets (knapsack's ``c - w_k``, Held-Karp's subsets). With ``layer_shape(t) ->
    (rows, cols)`` instead, the layers are 2-D: cells ``(t, i, j)``, the previous layers 2-D arrays
    (Floyd-Warshall). A ``back`` returning two predecessors makes a tree, walked by
    ``traceback_tree``.

``IntervalRecurrence`` (:mod:`.interval`, ``family = "interval"``)
    cell ``(i, j)``, ``i <= j < size()``, is the answer for the interval ``i..j`` and reads the whole
    table at shorter intervals inside its own (matrix-chain order, optimal BST, Nussinov, CYK); swept
    by interval length, its ``back`` splits an interval into up to two (a tree-shaped traceback).

``Grid3Recurrence`` (:mod:`.grid3`, ``family = "grid3"``)
    an ``n1 x n2 x n3`` grid whose cell ``(i, j, k)`` reads some of its seven neighbours behind it
    (three-way alignment), swept by planes ``i + j + k``.

All return ``value`` or ``(value, decision)`` from ``cell``; ``decision`` (``decision_bits`` bits,
0 = none) is evicted to the host store and read back by ``back`` during the traceback. With
``traceback_state = True`` the traceback carries a state from step to step (which matrix of an
affine-gap alignment, which phase of a walk): ``back(i, j, decision, state, *data) -> (i2, j2,
state2)``; an interval's tree carries one from node to node (CYK's nonterminal), ``back(i, j,
decision, state, T, *data) -> (i1, j1, state1, i2, j2, state2)`` reading the finished table ``T``.

**What is declared, and what is an option of the sweep.** A class attribute says what ``cell``
*is*: its arguments and what it returns. ``symbols`` (two more arguments, a row's and a column's
symbol) and ``deps_tuple`` (the dependencies as one tuple) change the cell's signature, so they
stay attributes, as ``offsets``, ``window``, ``value_dtype`` and ``decision_bits`` do. What only
changes *how* a sweep runs is an option of :func:`gpudp.sweep`: ``tile`` (a tiled grid's tiles),
``codec`` (how a layered sweep's decision store keeps its words) and ``reach`` (a layered cell's
promise of how far below itself it reads, for temporal blocking on CUDA). A layered class's
``decision_codec`` attribute and ``reach()`` method still work as the options' defaults; the options
are preferred, since the same recurrence may be swept either way.
"""

from .base import (
    MAX_DECISION_BITS,
    Recurrence,
    bad_step,
    contiguous,
    read_only,
    start_cell,
    values_only,
    whole_numbers,
)
from .grid import GridRecurrence
from .grid3 import GRID3_NEIGHBOURS, Grid3Recurrence
from .interval import IntervalRecurrence
from .layered import CODECS, LayeredRecurrence

__all__ = [
    "CODECS",
    "GRID3_NEIGHBOURS",
    "MAX_DECISION_BITS",
    "Grid3Recurrence",
    "GridRecurrence",
    "IntervalRecurrence",
    "LayeredRecurrence",
    "Recurrence",
    "bad_step",
    "contiguous",
    "read_only",
    "start_cell",
    "values_only",
    "whole_numbers",
]
