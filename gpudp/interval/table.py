"""The interval table: its two layouts (row-major on the CPU, by diagonals on the GPU), the sizes
and the work of a sweep, the chunks of diagonals the backends run, and the guarded views of it that
plain-Python calls read (with the errors they and the tree walk raise). Shared by the driver
(:mod:`gpudp.interval`), both backends' modules and the checked pass (:mod:`gpudp.checked`).
"""

from __future__ import annotations

import numpy as np

from ..codegen import cell_call, data_args, decision_dtype, fill, indent
from ..errors import ContractError
from ..kernel import KernelFactory
from ..values import expand, is_record
from .records import item

#: a diagonal whose work (cells x length, the split points its cells read) is below this runs on
#: one thread on the CPU: a parallel region costs more (2 threads, matrix chain n = 200..1000: 2^13
#: beat 2^10, 2^15 and 2^17 by 0-25 %; tools/interval_bench.py times the whole sweep)
SERIAL_WORK = 1 << 13
#: work (cells x length) of one chunk of diagonals: one kernel call or cooperative launch, a
#: progress step, a point where Ctrl-C is seen
CHUNK_WORK = 1 << 26


def interval_memory(n: int, value_dtype, bits: int) -> tuple[int, int]:
    """``(table bytes, decision bytes)`` of an interval sweep over ``0 .. n - 1``: what the host
    keeps (the CUDA sweep keeps the decisions and three copies of the table: :mod:`gpudp.interval.cuda`)."""
    cells = int(n) * int(n)
    dec = cells * np.dtype(decision_dtype(bits)).itemsize if bits else 0
    return cells * np.dtype(value_dtype).itemsize, dec


def work_of(n: int) -> int:
    """The sweep's work in split-point reads: the sum of every interval's length, n(n+1)(n+2)/6."""
    return n * (n + 1) * (n + 2) // 6


def chunks(n: int, max_work: int = CHUNK_WORK) -> list[tuple[int, int]]:
    """Consecutive diagonals ``[d0, d1)`` grouped so that each group's work (cells x length) stays
    within ``max_work``, at least one diagonal a group."""
    out, d0 = [], 0
    while d0 < n:
        d1, w = d0 + 1, (n - d0) * (d0 + 1)
        while d1 < n and w + (n - d1) * (d1 + 1) <= max_work:
            w += (n - d1) * (d1 + 1)
            d1 += 1
        out.append((d0, d1))
        d0 = d1
    return out


def cells_of(n: int, d0: int, d1: int) -> int:
    """Cells on diagonals ``d0 .. d1 - 1``."""
    return sum(n - d for d in range(d0, d1))


def make_diagonal_view(intrinsic, make_array, types):
    """Build ``diagonal_view(S, n)`` with a target's ``intrinsic``, ``make_array`` and ``types``
    (numba's for the CPU, numba-cuda's for the GPU: the code generated is the same): a 2-D view ``T``
    of the C-contiguous table ``S`` stored by diagonals, ``T[a, b] == S.flat[(b - a) * n + a]``
    for ``a <= b`` (strides ``(1 - n, n)`` items; shape ``(n, n)``; nothing is copied or checked,
    and ``a > b`` points outside ``S``)."""

    @intrinsic
    def diagonal_view(typingctx, array, n):
        if not (isinstance(array, types.Array) and array.layout == "C" and isinstance(n, types.Integer)):
            return None
        ret = types.Array(array.dtype, 2, "A")

        def codegen(context, builder, sig, args):
            src = make_array(sig.args[0])(context, builder, args[0])
            out = make_array(sig.return_type)(context, builder)
            nn = context.cast(builder, args[1], sig.args[1], types.intp)
            one = context.get_constant(types.intp, 1)
            context.populate_array(
                out,
                data=src.data,
                shape=[nn, nn],
                strides=[builder.mul(builder.sub(one, nn), src.itemsize), builder.mul(nn, src.itemsize)],
                itemsize=src.itemsize,
                meminfo=src.meminfo,
                parent=src.parent,
            )
            value = out._getvalue()
            if context.enable_nrt:  # the view shares the array's reference: count it
                context.nrt.incref(builder, sig.return_type, value)
            return value

        return ret(array, n), codegen

    return diagonal_view


class SimDiagonalView:
    """The CUDA simulator's stand-in for :func:`make_diagonal_view`'s view: ``T[a, b]`` reads
    ``S[b - a, a]``, and a read outside ``0 <= a <= b < n`` raises ``IndexError`` (a cell reading
    outside its contract is caught by tests, not given garbage)."""

    def __init__(self, table, n):
        self.table, self.n = table, int(n)
        self.shape = (self.n, self.n)

    def __getitem__(self, ab):
        a, b = (int(x) for x in ab)
        if not 0 <= a <= b < self.n:
            raise IndexError(
                f"T[{a}, {b}]: a cell may read T[a, b] only at shorter intervals inside its own, "
                f"0 <= a <= b < {self.n}"
            )
        return self.table[b - a, a]

    def __setitem__(self, ab, v):
        raise IndexError("the table is read-only to the cell")


class ProbeView:
    """The table as cell ``(i, j)`` sees it in plain Python (``shape`` that of the ``n x n``
    table): in the driver's probe (:func:`gpudp.interval._probe`) every read gives ``fill``; in the
    checked sweep (:mod:`gpudp.checked`) it gives ``table[a, b]``, the value computed. A read outside
    the cell's contract, a shorter interval inside ``i..j``, raises :class:`OutsideRead` naming it
    (on the CPU such a read would give whatever memory holds, on the GPU anything)."""

    def __init__(self, i: int, j: int, n: int, fill=None, table=None):
        self.i, self.j, self.fill, self.table = int(i), int(j), fill, table
        self.shape = (int(n), int(n))

    def __getitem__(self, ab):
        a, b = (int(x) for x in ab)
        if not (self.i <= a <= b <= self.j and (a, b) != (self.i, self.j)):
            raise OutsideRead(self.i, self.j, a, b)
        return self.fill if self.table is None else item(self.table, a, b)


class TableView:
    """The finished table as a stateful ``back`` (``traceback_state``) sees it in plain Python, at
    node ``(i, j)`` in state ``s`` (the tree walk's probe at its root, the checked walk at every
    node): ``T[a, b]`` gives ``table[a, b]`` at a stored interval, ``0 <= a <= b < n``; any other
    read (an empty interval, an index outside), or a write, is a :class:`ContractError` naming the
    call (compiled, such a read gives ``fill`` or whatever memory holds)."""

    def __init__(self, name: str, table, i: int, j: int, s: int):
        self.name, self.table, self.at = name, table, (int(i), int(j), int(s))
        self.shape = table.shape

    def _where(self) -> str:
        i, j, s = self.at
        return f"{self.name}.back at ({i}, {j}) in state {s}"

    def __getitem__(self, ab):
        a, b = (int(x) for x in ab)
        n = self.shape[0]
        if not 0 <= a <= b < n:
            raise ContractError(
                f"{self._where()} read T[{a}, {b}]: back may read T[a, b] only at a stored interval, "
                f"0 <= a <= b < {n} (an empty interval is not stored: test for it)"
            )
        return item(self.table, a, b)

    def __setitem__(self, ab, v):
        raise ContractError(f"{self._where()} wrote T[{ab}]: the table is read-only to back")


class OutsideRead(Exception):
    """A probed cell ``(i, j)`` read ``T[a, b]`` outside its contract."""

    def __init__(self, i: int, j: int, a: int, b: int):
        super().__init__(i, j, a, b)
        self.cell, self.read = (i, j), (a, b)


def outside_read_error(cls, e: OutsideRead) -> ContractError:
    """The error for cell ``e.cell``'s read ``e.read`` outside its shorter sub-intervals (the probe's
    and the checked sweep's, :mod:`gpudp.checked`)."""
    (i, j), (a, b) = e.cell, e.read
    return ContractError(
        f"{cls.__name__}.cell at ({i}, {j}) read T[{a}, {b}]: a cell may read T[a, b] only at "
        f"the shorter intervals inside its own, {i} <= a <= b <= {j} and (a, b) != ({i}, {j}); "
        "other reads give whatever memory holds on the CPU and anything on the GPU. Test for an "
        "empty interval instead of reading it: T[i + 1, j - 1] if i + 1 <= j - 1 else 0"
    )


def child_error(cls, i: int, j: int, decision, a: int, b: int, state=None) -> ContractError:
    """The error for ``back(i, j, decision[, state, T])``'s child ``(a, b)``, not a shorter interval
    inside (the tree walk's and the checked sweep's)."""
    call = f"{i}, {j}, {decision}" + ("" if state is None else f", {state}, T")
    return ContractError(
        f"{cls.__name__}.back({call}) returned the child ({a}, {b}): a "
        f"child must be a shorter interval inside ({i}, {j}) (an empty one is written (a, a - 1)), "
        "or (-1, -1) for none"
    )


_SWEEPS = KernelFactory("interval.sweep", "backend", "rec", "n_data")


def compiled_sweep(
    kind: str, rec_cls, n_data: int, template: str, at, namespace, build, head="cell(", warp=None
):
    """A backend's compiled diagonal sweep of a recurrence class, made once per process (``kind``
    names the variant): ``template`` (``{da}``: the data arguments; ``{body}``: computing cell
    ``(i, i + d)`` from the view ``T`` by the call beginning ``head`` (:func:`gpudp.codegen.cell_call`)
    and storing its value at each of ``at[:-1]`` (array items, such as ``"S[d, i]"``) and its
    decision at ``at[-1]``; a block, :func:`fill`; with ``warp``, the warp cell's call head
    (``"wcell(lane, R, C, "``), ``{wbody}``: the same by every lane of a warp, lane 0 storing)
    compiled by ``build(source, namespace())``."""
    k = _SWEEPS.lookup(backend=kind, rec=rec_cls, n_data=n_data)
    if not k.ready:
        store = "".join(f"{_store(rec_cls, x)}\n" for x in at[:-1])
        store += f"{at[-1]} = dd\n" if rec_cls.decision_bits else ""
        body = f"j = i + d\n{cell_call(rec_cls, 'i, j', ['T'], n_data, 'v', 'dd', head=head)}\n{store}"
        wbody = "pass"
        if warp is not None:
            call = cell_call(rec_cls, "i, j", ["T"], n_data, "v", "dd", head=warp, only="lane == 0")
            wbody = f"j = i + d\n{call}\nif lane == 0:\n" + indent(store, 4)
        k = k.keep(build(fill(template, da=data_args(n_data), body=body, wbody=wbody), namespace()))
    return k.fn


def _store(rec_cls, at: str) -> str:
    """The line storing the cell's value ``v`` at ``at`` (``"S[d, i]"``): a record's field by field,
    into the tuple of the fields' tables (``S[0][d, i] = v[0]; S[1][d, i] = v[1]``)."""
    if not is_record(rec_cls):
        return f"{at} = v"
    name, index = at[:-1].split("[", 1)
    return expand(f"ST({name}, ({index}), v)", rec_cls)
