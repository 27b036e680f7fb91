"""Generated source the batch's lowerings share: the per-instance views of the packed data, the
decision layouts, the value helpers and the compiled walker.

A batch kernel receives every data item of every instance *packed*: item ``m`` is one 1-D array
``Pm`` (the instances' arrays, flattened, one after the other, or their scalars side by side),
``Om``, its instance offsets (``Om[b] .. Om[b + 1]`` are instance ``b``'s items), and ``Sm``, the
instances' shapes (arrays of two or more dimensions; unused otherwise). :func:`views` spells the
lines that give instance ``b`` its own data under the names the engine's cell wrappers use
(``dat0``, ``dat1``, ...): a slice of ``Pm`` (a view, no copy), reshaped to the instance's shape,
or the scalar ``Pm[b]``. The outputs the engine's :func:`gpudp.codegen.cell_call` writes (a reduction's
slots, the decision-overflow flag) are given the same way, as instance ``q``'s rows of per-chunk
arrays, so the engine's wrapper ``tcell`` (:func:`gpudp.codegen.tile_cell_source`) runs unchanged.

A cell's value is a scalar or a record of fields (:mod:`gpudp.values`): the kernels read, write and
allocate buffers of values through the value macros (``LD``, ``ST``, ``VEMPTY``, ``SHUP``, ``SHFL``),
expanded for the cell type before they compile, so a record's buffer is a tuple of field arrays.
"""

from __future__ import annotations

from ..codegen import fill

#: the layouts of a chunk's decisions (one unsigned integer a cell, instance after instance):
#: ``rows``, cell (i, j) at i * C + j (the cpu's row-by-row sweep); ``diagonals``, anti-diagonal
#: after anti-diagonal, a diagonal's cells by increasing i (the cuda blocks' wavefront: the threads
#: of a diagonal write consecutive cells)
LAYOUTS = ("rows", "diagonals")


#: the decision of cell (i, j) of the instance whose words start at ``base``, in either layout
_DECODE = "(words[base + i * C + j] if by_rows else words[base + diagonal_index(i, j, R, C)])"


def packed_args(n: int) -> str:
    """``", P0, O0, S0, P1, O1, S1, ..."``: the packed items a kernel takes."""
    return "".join(f", P{m}, O{m}, S{m}" for m in range(n))


def views(kinds, first: int = 0, inst: str = "b") -> list[str]:
    """Lines binding ``dat{first + m}`` to instance ``inst``'s item ``m``: ``kinds[m]`` is ``"s"``
    (a scalar, ``Pm[b]``), ``"a1"`` (a slice of the packed array) or ``"a2"``, ``"a3"``, ...
    (that slice reshaped to the instance's own shape, row ``b`` of ``Sm``); in a pairs batch
    (:mod:`gpudp.many.pairs`) ``"q1"`` and ``"c1"``, the slices ``b // M`` and ``b % M`` (``M =
    Sm[0, 0]``, the choices) of a side's sequences, and ``"g1"``, ``"g2"``, ... one array shared by
    every instance (slice 0, shaped as row 0 of ``Sm``)."""
    out = []
    for m, kind in enumerate(kinds):
        if kind == "s":
            out.append(f"dat{first + m} = P{m}[{inst}]")
            continue
        at = {"q": f"{inst} // S{m}[0, 0]", "c": f"{inst} % S{m}[0, 0]", "g": "0"}.get(kind[0], inst)
        line = f"dat{first + m} = P{m}[O{m}[{at}] : O{m}[{at} + 1]]"
        ndim = int(kind[1:])
        if ndim > 1:
            row = "0" if kind[0] == "g" else inst
            line += ".reshape((" + "".join(f"S{m}[{row}, {n}], " for n in range(ndim)) + "))"
        out.append(line)
    return out


def output_views(n_reduce: int, n_flags: int, first: int, inst: str = "q") -> list[str]:
    """Lines binding the outputs :func:`gpudp.codegen.cell_call` writes, after the data: a
    reduction's slots (``RV[q]``, ``RC[q]``: this instance's) and the overflow flag (``FL[q]``)."""
    out = []
    if n_reduce:
        out += [f"dat{first} = RV[{inst}]", f"dat{first + 1} = RC[{inst}]"]
    if n_flags:
        out.append(f"dat{first + n_reduce} = FL[{inst}]")
    return out


_WALK = """
def walk_many(layout, ids, starts, states, shapes, doff, words, poff, paths, plen, exits, status{pk}):
    by_rows = layout == 0
    done = 0  # walks finished: fewer where a worker's raise was lost (gpudp.backends.cpu)
    for q in prange(len(ids)):
        b = ids[q]
        R = shapes[b, 0]
        C = shapes[b, 1]
        base = doff[q]
        {views}
        i = starts[q, 0]
        j = starts[q, 1]
        s = states[q]
        p0 = poff[q]
        room = poff[q + 1] - p0
        n = 0
        bad = 0
        while i >= 0 and i < R and j >= 0 and j < C:
            if n >= room:
                bad = 2
                break
            d = np.int64({decode})
            paths[p0 + n, 0] = i
            paths[p0 + n, 1] = j
            paths[p0 + n, 2] = d{rec}
            n += 1
            {step}
            if A * i2 + B * j2 >= A * i + B * j:
                bad = 1
                i = i2
                j = j2
                break
            i = i2
            j = j2{advance}
        plen[q] = n
        status[q] = bad
        exits[q, 0] = i
        exits[q, 1] = j
        exits[q, 2] = s
        done += 1
    return done
"""


def walker_source(rec_cls, kinds) -> str:
    """Source of ``walk_many``: the walk of ``back`` over the decisions of each instance ``ids[q]``
    of a chunk (laid out as ``LAYOUTS[layout]``), in parallel, from ``starts[q]`` (and
    ``states[q]`` with ``traceback_state``) while the cell is inside the grid, rows ``(i, j,
    decision[, state])`` into ``paths[poff[q]:]``; ``status[q]`` 1 when ``back`` returned a cell
    that is not on an earlier wavefront of the order ``A i + B j`` (``exits[q]`` then holds that
    cell), 2 when the walk outgrew its room; else ``exits[q]`` is where it left the grid (and its
    state). ``kinds``: the packed data items ``back`` receives (the recurrence's ``data()``)."""
    da = "".join(f", dat{m}" for m in range(len(kinds)))
    if rec_cls.traceback_state:
        rec = "\n            paths[p0 + n, 3] = s"
        step = f"i2, j2, s2 = back(i, j, d, s{da})"
        advance = "\n            s = np.int64(s2)"
    else:
        rec, step, advance = "", f"i2, j2 = back(i, j, d{da})", ""
    return fill(
        _WALK,
        pk=packed_args(len(kinds)),
        views=views(kinds) or "pass",
        decode=_DECODE,
        rec=rec,
        step=step,
        advance=advance,
    )


def path_width(rec_cls) -> int:
    """Columns of a path's rows: ``(i, j, decision)``, and ``state`` with ``traceback_state``."""
    return 4 if rec_cls.traceback_state else 3
