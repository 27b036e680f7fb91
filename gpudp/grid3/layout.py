"""The planes of a 3-D grid: their geometry, where each cell's decision lies, the chunks of planes
the backends run, the memory a sweep takes, and the source of one cell's computation that both
backends' kernels inline. Shared by the driver (:mod:`gpudp.grid3`) and both backends' modules.

Plane ``d`` holds the cells with ``i + j + k = d``: rows ``i`` from ``max(0, d - (n2 - 1) - (n3 -
1))`` to ``min(n1 - 1, d)``, and in row ``i`` the columns ``j`` from ``max(0, d - i - (n3 - 1))``
to ``min(n2 - 1, d - i)`` (``k = d - i - j``). The decisions are stored plane after plane, a plane
row after row, a row by ``j``: cell ``(i, j, k)`` at ``plane_start[d] + row_offset(d, i, n2, n3) +
j - j_lo``, where both offsets are closed forms (counts of lattice points below a plane), so a
kernel thread, the walker and :func:`position` find a cell without a table.
"""

from __future__ import annotations

import numpy as np

from ..codegen import decision_dtype

#: cells of one chunk of planes on the CPU: a kernel call, a progress step, a point where Ctrl-C
#: is seen
CPU_CHUNK_CELLS = 1 << 22
#: decision bytes of one chunk on CUDA: the size of each of the two device slabs (a chunk is at
#: least one plane)
SLAB_BYTES = 1 << 25


def num_planes(n1: int, n2: int, n3: int) -> int:
    """Planes of an ``n1 x n2 x n3`` grid: ``n1 + n2 + n3 - 2``, or 0 when it has no cells."""
    return n1 + n2 + n3 - 2 if n1 and n2 and n3 else 0


def row_offset(d, i, n2, n3):
    """Cells of plane ``d`` in the rows before ``i`` (``0 <= i <= n1``, ``i <= d + 1``): the pairs
    ``(j, k)`` of the ``n2 x n3`` box with ``d - i < j + k <= d``, counted by inclusion-exclusion
    from ``T(x) = x (x + 1) / 2`` (the pairs with ``j + k < x``). Plain Python, compiled for each
    target (``njit``, a CUDA device function) by the modules that inline it."""
    a = d + 1
    b = d - i + 1
    a0 = max(a, 0)
    a1 = max(a - n2, 0)
    a2 = max(a - n3, 0)
    a3 = max(a - n2 - n3, 0)
    b0 = max(b, 0)
    b1 = max(b - n2, 0)
    b2 = max(b - n3, 0)
    b3 = max(b - n2 - n3, 0)
    fa = a0 * (a0 + 1) - a1 * (a1 + 1) - a2 * (a2 + 1) + a3 * (a3 + 1)
    fb = b0 * (b0 + 1) - b1 * (b1 + 1) - b2 * (b2 + 1) + b3 * (b3 + 1)
    return (fa - fb) // 2


def plane_starts(n1: int, n2: int, n3: int) -> np.ndarray:
    """``starts[d]``: the cells on the planes before ``d``, for ``d`` = 0 .. planes (int64; the
    last is ``n1 * n2 * n3``)."""
    planes = num_planes(n1, n2, n3)
    d = np.arange(planes, dtype=np.int64)

    def below(e):  # pairs (j, k) of the n2 x n3 box with j + k < e
        t = [np.maximum(e - s, 0) for s in (0, n2, n3, n2 + n3)]
        return (t[0] * (t[0] + 1) - t[1] * (t[1] + 1) - t[2] * (t[2] + 1) + t[3] * (t[3] + 1)) // 2

    sizes = below(d + 1) - below(d + 1 - n1)
    out = np.zeros(planes + 1, np.int64)
    np.cumsum(sizes, out=out[1:])
    return out


def position(i: int, j: int, k: int, n2: int, n3: int, starts: np.ndarray) -> int:
    """Where cell ``(i, j, k)``'s decision lies in the store (plain Python; the kernels and the
    walker compute the same)."""
    d = i + j + k
    return int(starts[d]) + row_offset(d, i, n2, n3) + j - max(0, d - i - (n3 - 1))


def chunks(starts: np.ndarray, max_cells: int) -> list[tuple[int, int]]:
    """Consecutive planes ``[d0, d1)`` grouped so that each group holds at most ``max_cells`` cells
    (at least one plane a group)."""
    out, d0, planes = [], 0, len(starts) - 1
    while d0 < planes:
        d1 = int(np.searchsorted(starts, starts[d0] + max_cells, side="right")) - 1
        d1 = min(max(d1, d0 + 1), planes)
        out.append((d0, d1))
        d0 = d1
    return out


def ring_planes(offsets) -> int:
    """Planes the ring keeps: the furthest plane a cell reads back (1 to 3), plus its own."""
    return max(-sum(o) for o in offsets) + 1


def memory(shape, offsets, value_dtype, bits: int, on_device: bool) -> dict:
    """The bytes a sweep allocates, by the arithmetic of the code that allocates them: ``ring``
    (the planes kept, each ``n1 x n2`` values), ``faces`` (the far faces, ``n2 x n3 + n1 x n3 + n1 x
    n2`` values), ``decisions`` (the store, one decision a cell; 0 without decisions) and ``slabs``
    (on CUDA, two device buffers of a chunk's decisions). ``device`` is what lives in device memory
    (None on the CPU), ``host_values`` what the host keeps besides the store."""
    n1, n2, n3 = (int(x) for x in shape)
    cells = n1 * n2 * n3
    vsize = np.dtype(value_dtype).itemsize
    ring = ring_planes(offsets) * max(n1, 1) * max(n2, 1) * vsize if cells else 0
    faces = (n2 * n3 + n1 * n3 + n1 * n2) * vsize if cells else 0
    dsize = decision_dtype(bits).itemsize
    decisions = cells * dsize if bits else 0
    slabs = 0
    if on_device and bits and cells:
        widest = int(np.diff(plane_starts(n1, n2, n3)).max())
        slabs = 2 * max(widest * dsize, min(decisions, SLAB_BYTES))
    return {
        "cells": cells,
        "ring": ring,
        "faces": faces,
        "decisions": decisions,
        "slabs": slabs,
        "device": ring + faces + slabs if on_device else None,
        "host_values": faces if on_device else ring + faces,
    }


# ---------------------------------------------------------------------------------------------
# The source of one cell, shared by the CPU and CUDA kernels
# ---------------------------------------------------------------------------------------------


def axes_read(offsets) -> tuple[bool, bool, bool]:
    """Whether some offset steps back along ``i``, ``j`` and ``k``: the coordinates that can leave
    the grid, so the only ones a dependency's read must test."""
    return tuple(any(o[a] for o in offsets) for a in range(3))


def cell_source(rec_cls, n_data: int, read: str, store: str, checked: bool, faces: bool = True) -> str:
    """Lines computing cell ``(i, j, k)`` of plane ``d``: each dependency read from the ring
    (``read``, formatted with ``lag``, ``a``, ``b``: the plane ``lag`` back and the row and column
    there) or, when ``checked`` and one of its coordinates is -1, taken from ``boundary``; the
    user's ``cell`` called; a decision outside ``0 .. 2**bits - 1`` recorded in ``flag`` (``[count,
    decision, i, j, k]``) and stored as 0 (never truncated); the value stored (``store``, formatted
    with ``v``) and, with ``faces``, on the far faces into ``FI[j, k]``, ``FJ[i, k]``, ``FK[i, j]``
    (the CPU's rows write their faces once a row is done instead). Leaves the decision in ``dd`` (0
    without decisions)."""
    du = "".join(f", dat{m}" for m in range(n_data))
    lines = ["k = d - i - j"]
    deps = []
    for m, (di, dj, dk) in enumerate(rec_cls.offsets):
        lag = -(di + dj + dk)
        ii, jj, kk = (f"{c} - 1" if o else c for c, o in zip("ijk", (di, dj, dk), strict=True))
        got = read.format(lag=lag, a=ii, b=jj)
        outside = [f"{c} < 1" for c, o in zip("ijk", (di, dj, dk), strict=True) if o]
        if checked:
            lines += [
                f"if {' or '.join(outside)}:",
                f"    x{m} = VT(boundary({ii}, {jj}, {kk}{du}))",
                "else:",
                f"    x{m} = {got}",
            ]
        else:
            lines.append(f"x{m} = {got}")
        deps.append(f"x{m}")
    args = ", ".join(["i, j, k", *deps]) + du
    bits = rec_cls.decision_bits
    if bits:
        lines += [
            f"v, dd = cell({args})",
            "v = VT(v)",
            f"if dd < 0 or dd > {(1 << bits) - 1}:",
            "    flag[0] += 1",
            "    flag[1] = dd",
            "    flag[2] = i",
            "    flag[3] = j",
            "    flag[4] = k",
            "    dd = 0",
        ]
    elif getattr(rec_cls, "_drops_decisions", False):  # swept with traceback=False
        lines += [f"v, dd = cell({args})", "v = VT(v)", "dd = 0"]
    else:
        lines += [f"v = VT(cell({args}))", "dd = 0"]
    lines.append(store.format(v="v"))
    if faces:
        lines += ["if i == n1 - 1:", "    FI[j, k] = v", "if j == n2 - 1:", "    FJ[i, k] = v"]
        lines += ["if k == n3 - 1:", "    FK[i, j] = v"]
    return "\n".join(lines)


def data_params(n_data: int) -> str:
    """``", dat0, dat1"``: the user's data arguments of a generated kernel."""
    return "".join(f", dat{m}" for m in range(n_data))
