"""Source generation shared by the backends.

A recurrence's static methods are plain Python; each backend compiles them (numba ``njit`` or
``cuda.jit(device=True)``) and generates, from the templates in its own module, kernels whose
source names the data arguments and dependency values explicitly. This module holds the
backend-independent parts: argument lists, the cell call, and the wrapper that turns a grid with
any valid linear schedule into layers (wavefronts).
"""

from __future__ import annotations

import functools
import hashlib
import linecache
import re
import sys
import textwrap
import types
from collections.abc import Callable

import numpy as np
from numba.extending import register_jitable

from .fingerprint import fingerprint
from .kernel import factory as kernel_factory
from .schedule import Schedule
from .values import key, key_dtype

_COUNTER = [0]

#: name of each unit-window dependency in the tiled kernels
TILE_DEP_NAMES = {(-1, 0): "up", (0, -1): "left", (-1, -1): "diag"}


def data_args(n: int) -> str:
    """``", dat0, dat1"`` for n data arguments (with the leading comma), or ``""``."""
    return "".join(f", dat{k}" for k in range(n))


#: a reduction slot's cell before its thread computes one: later than every cell
NO_CELL = 1 << 62


class Spec:
    """What code generation reads of a recurrence class, derived once per class (:func:`spec_of`):
    the kernels' argument layout (the symbols first, then the user's data, the reduction's slots
    and the decision-overflow flag last), the reduction, the value type.

    ``symbols``: 2 when the kernels' first two data arguments are the row and column symbols, else
    0. ``flags``: 1 when the kernels' last data argument is the decision-overflow flag (a
    recurrence that keeps decisions gets, after its own data, an int64 array ``[count, decision, a,
    b]``: a cell whose decision does not fit ``decision_bits`` bits, or is negative, sets it, and
    the engine raises after the sweep instead of storing a truncated decision; see
    :func:`gpudp.engine.sweep`), else 0. ``reduce_slots``: 2 when the data end, before the flag,
    with the reduction's slots (``values[slots]`` and ``cells[slots, 2]``, one slot per thread,
    ``red_slot()`` from the backend's namespace, reduced on the host after the sweep), else 0.
    ``outputs``: how many of the last data arguments the kernels write (slots and flag).
    ``reduce_worst``: the value every cell beats in the reduction (its slots start there).
    ``drops_decisions``: swept with ``traceback=False`` (the cell's decision is dropped)."""

    def __init__(self, cls):
        self.cls = cls
        self.symbols = 2 if getattr(cls, "symbols", False) else 0
        self.flags = 1 if cls.decision_bits else 0
        self.reduce = getattr(cls, "reduce", None)
        self.reduce_slots = 2 if self.reduce else 0
        self.outputs = self.reduce_slots + self.flags
        self.drops_decisions = bool(getattr(cls, "_drops_decisions", False))
        self.deps_tuple = bool(getattr(cls, "deps_tuple", False))
        self.key_dtype = key_dtype(cls)
        self.reduce_op = ">" if self.reduce == "max" else "<"
        if self.reduce:
            vt = self.key_dtype
            worst = (-np.inf, np.inf) if vt.kind == "f" else (np.iinfo(vt).min, np.iinfo(vt).max)
            self.reduce_worst = worst[self.reduce == "min"]
        else:
            self.reduce_worst = None

    def user_args(self, n_data: int) -> str:
        """The data arguments after any symbols: what the generated cell wrappers (``tcell``,
        ``lcell``) take, the overflow flag included."""
        return "".join(f", dat{n}" for n in range(self.symbols, n_data))

    def fn_args(self, n_data: int) -> str:
        """The data arguments that the recurrence's own functions (``cell``, ``boundary``) receive."""
        return "".join(f", dat{n}" for n in range(self.symbols, n_data - self.outputs))

    def slots(self, n_data: int) -> tuple[str, str]:
        """The names of the reduction's two slot arrays among ``n_data`` data arguments."""
        return tuple(f"dat{n_data - self.flags - k}" for k in (2, 1))

    def better(self, v: str, bv: str, a: str, ba: str, b: str, bb: str) -> str:
        """The condition under which value ``v`` at cell ``(a, b)`` beats the best so far ``bv`` at
        ``(ba, bb)``: a better value, or an equal one at an earlier cell (a deterministic winner)."""
        op = self.reduce_op
        return f"{v} {op} {bv} or ({v} == {bv} and ({a} < {ba} or ({a} == {ba} and {b} < {bb})))"

    def take(self, kv: str, lin: str) -> str:
        """Lines that take key ``kv`` at row-major index ``lin`` into :func:`local_reduction`'s
        locals when it beats them (ties to the earlier cell)."""
        op = self.reduce_op
        return f"if {kv} {op} bv_ or ({kv} == bv_ and {lin} < bk_):\n    bv_ = {kv}\n    bk_ = {lin}"

    def numba_type(self):
        """The numba type of the cells' values (a record's: its structured type)."""
        import numba

        return numba.from_dtype(np.dtype(self.cls.value_dtype))

    def layer_rows(self) -> list[str]:
        """The names of a LayeredRecurrence's previous layers in its window, newest first, as
        ``layer_cell_source(..., rows=True)`` takes them (``pr1`` is layer ``t - 1``)."""
        return [f"pr{w}" for w in range(1, self.cls.window + 1)]

    def __repr__(self) -> str:
        return f"Spec({self.cls.__qualname__})"


@kernel_factory("recurrence.spec")
def spec_of(cls) -> Spec:
    """The :class:`Spec` of a recurrence class, made once per class (in the kernel table)."""
    return Spec(cls)


def local_reduction(rec_cls, n_data: int, slot: str) -> tuple[dict, str, Callable[[str, str], str], str]:
    """A kernel's reduction kept in two locals while it sweeps, merged into its slot once: ``bv_``
    (the best value's key: a record's first field) and ``bk_`` (its cell's row-major index ``i * C +
    j``, which breaks ties as :meth:`Spec.better` does). Returns ``(names, init, update, flush)``:
    the names the lines need in the kernel's namespace, the lines that start the locals, a function
    ``update(value, index)`` giving the lines that take a cell into them (the cpu kernel's; the
    CUDA kernel takes a row at a time, :func:`row_reduction`), and the lines that merge them into
    slot ``slot`` (an expression: the thread's id) of the kernel's reduction arrays."""
    import numba

    sp = spec_of(rec_cls)
    rv, rc = sp.slots(n_data)
    names = {
        "RED_WORST": sp.reduce_worst,
        "NO_CELL": NO_CELL,
        "KT": numba.from_dtype(key_dtype(rec_cls)),
    }

    def update(v: str, lin: str) -> str:
        return sp.take(key(rec_cls, v), lin)

    better = sp.better("bv_", f"{rv}[rs]", "bi_", f"{rc}[rs, 0]", "bj_", f"{rc}[rs, 1]")
    flush = (
        f"rs = {slot}\nbi_ = bk_ // C\nbj_ = bk_ % C\nif bk_ != NO_CELL and ({better}):\n"
        f"    {rv}[rs] = bv_\n    {rc}[rs, 0] = bi_\n    {rc}[rs, 1] = bj_"
    )
    return names, "bv_ = KT(RED_WORST)\nbk_ = NO_CELL", update, flush


def row_reduction(rec_cls) -> tuple[Callable[[str, str, str], str], Callable[[str, str, str, str], str]]:
    """A reduction kept by rows, for a kernel that takes a row's cells in column order and holds
    :func:`local_reduction`'s locals (``bv_``, ``bk_``): ``best(rb, rj, column)`` gives the lines
    that take a cell (its key in ``kv``) into the row's best ``rb`` and its column ``rj`` with one
    strict compare (the row's first best column: the row-major tie-break within a row, and no
    64-bit index a cell), and ``merge(rb, rj, row, first)`` those that merge the row into the
    locals once, with the full tie-break. ``rj`` starts negative. An integer row none of whose
    cells beats the worst value is all worst values, and its first column (``first``) is taken at
    the merge; a float row also takes a first cell equal to the worst (NaN never wins)."""
    sp = spec_of(rec_cls)
    op = sp.reduce_op
    exact = sp.key_dtype.kind == "f"

    def best(rb: str, rj: str, column: str) -> str:
        cond = f"kv {op} {rb}"
        if exact:
            cond = f"({cond}) | ((kv == {rb}) & ({rj} < 0))"
        return f"if {cond}:\n    {rb} = kv\n    {rj} = {column}"

    def merge(rb: str, rj: str, row: str, first: str) -> str:
        take = sp.take(rb, f"({row}) * C + {rj}")
        if exact:
            return f"if {rj} >= 0:\n{indent(take, 4)}"
        return f"if {rj} < 0:\n    {rj} = {first}\n{take}"

    return best, merge


def cell_call(
    rec_cls,
    coords: str,
    deps: list[str],
    n_data: int,
    v: str,
    d: str,
    syms=(),
    reduce_here=True,
    head="cell(",
    only=None,
    line=None,
    context=None,
) -> str:
    """Lines calling the recurrence's cell, leaving its value in v and decision in d.

    ``n_data`` counts the kernel's data arguments (symbols and the overflow flag included);
    ``syms`` are the expressions of the row and column symbols when the recurrence declares them.
    A grid with ``deps_tuple`` gets ``deps`` as one tuple argument.
    With a reduction (``reduce``) the call also updates this thread's slot, unless ``reduce_here``
    is False (a kernel that keeps the thread's best in registers itself). A decision outside
    ``0 .. 2**decision_bits - 1`` is recorded in the flag (``coords`` are the cell's two
    coordinates) and stored as 0. ``head`` begins the call: a variant of the cell taking arguments
    of its own first (the interval sweeps' ``"wcell(lane, R, C, "``, ``"ccell(C, "``); ``only``, a
    condition under which alone an overflow is recorded (``"lane == 0"``: a warp's lanes all run the
    same cell). ``line``: the name of the line's array, passed after the dependencies to a grid that
    declares ``reads_line`` (:func:`line_sweep_source`). ``context``: the arguments that take the
    dependencies' place for a cell rewritten by :func:`gpudp.lazy_deps.lazy_cell`."""
    sp = spec_of(rec_cls)
    if context is not None:  # a cell rewritten to read its dependencies itself (gpudp.lazy_deps)
        deps = context
    elif sp.deps_tuple:  # cell(i, j, deps, ...): one tuple in offsets order
        deps = [f"({', '.join(deps)},)"]
    if getattr(rec_cls, "reads_line", False):  # cell(i, j, deps..., line, ...): the line's values
        if line is None:
            raise ValueError(f"{rec_cls.__name__} reads its line: only a line's sweep calls its cell")
        deps = [*deps, line]
    args = ", ".join([coords, *deps, *(syms if sp.symbols else ())]) + sp.fn_args(n_data)
    call = f"{head}{args})"
    bits = rec_cls.decision_bits
    at = [x.strip() for x in coords.split(",")]
    a, b = at[:2]
    red = ""
    if sp.reduce_slots and reduce_here:  # this thread's slot keeps its best so far
        rv, rc = sp.slots(n_data)
        kv = key(rec_cls, v)  # a record is compared by its first field
        red = (
            f"\nrs = red_slot()\n"
            f"if {sp.better(kv, f'{rv}[rs]', a, f'{rc}[rs, 0]', b, f'{rc}[rs, 1]')}:\n"
            f"    {rv}[rs] = {kv}\n    {rc}[rs, 0] = {a}\n    {rc}[rs, 1] = {b}"
        )
    if bits:
        flag = f"dat{n_data - 1}"
        wide = f"{d} < 0 or {d} > {(1 << bits) - 1}"
        if only is not None:
            wide = f"{only} and ({wide})"
        return (
            f"{v}, {d} = {call}\n{v} = VT({v}){red}\n"
            f"if {wide}:\n"
            f"    {flag}[0] += 1\n    {flag}[1] = {d}\n"
            + "".join(f"    {flag}[{2 + m}] = {x}\n" for m, x in enumerate(at))
            + f"    {d} = 0"
        )
    if sp.drops_decisions:  # swept with traceback=False
        return f"{v}, {d} = {call}\n{v} = VT({v}){red}\n{d} = 0"
    return f"{v} = VT({call}){red}\n{d} = 0"


def indent(code: str, n: int) -> str:
    """``code`` dedented, then each line that is not blank indented by ``n`` spaces (blank lines come
    out empty)."""
    return textwrap.indent(textwrap.dedent(code), " " * n)


#: a template line that holds nothing but one placeholder: a block (:func:`fill`)
_BLOCK = re.compile(r"^( *)\{([A-Za-z_]\w*)\}$")


def fill(template: str, **fields) -> str:
    """``template`` filled in as ``str.format`` does, except that a placeholder standing alone on its
    line (``<spaces>{name}``) is a block: its value (a string, possibly of several lines, or a list
    of lines) replaces that line, indented to the placeholder's column by :func:`indent`.

    So a template shows where each block of generated code sits, and the code that builds a block
    writes it at column 0: no builder has to know (and keep in step with the template) how deep
    the placeholder is. A placeholder with anything else on its line is filled in inline."""
    out = []
    for line in template.split("\n"):
        m = _BLOCK.match(line)
        if m is None:
            out.append(line.format(**fields))
            continue
        value = fields[m[2]]
        if isinstance(value, (list, tuple)):
            value = "\n".join(value)
        out.append(indent(str(value), len(m[1])))
    return "\n".join(out)


#: a cell wrapper: its ``def`` line, the body that leaves the cell's value in v and decision in dd
_CELL_FUNCTION = """{head}
    {body}
    return v, dd
"""


def cell_function(head: str, body: str) -> str:
    """Source of a cell wrapper (``tcell``, ``lcell``, the backends' own): ``head``, its ``def``
    line, then ``body`` (:func:`cell_call`'s lines) and ``return v, dd``."""
    return fill(_CELL_FUNCTION, head=head, body=body)


def source_code(src: str, name: str, kind: str = "generated"):
    """``src`` compiled under a fake file name of its own, ``<gpudp-{kind}-{name}-N>``, whose lines
    ``linecache`` holds, so that tracebacks, ``inspect`` and numba's messages can show them."""
    _COUNTER[0] += 1
    filename = f"<gpudp-{kind}-{name}-{_COUNTER[0]}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    return compile(src, filename, "exec")


def compile_source(src: str, name: str, namespace: dict):
    """exec the generated source under a fake file name (so tracebacks and numba can show it).

    The code runs in a module of its own, registered in ``sys.modules`` under a name that hashes the
    source and the namespace (:func:`gpudp.cache.fingerprint`): numba's on-disk cache rebuilds a
    compiled function's environment by importing its module by name, so a kernel that inlines this
    function can be loaded in a later process as soon as the same source is generated again."""
    code = source_code(src, name)
    digest = hashlib.sha256(src.encode() + fingerprint(namespace).encode()).hexdigest()[:20]
    modname = f"gpudp_generated_{name}_{digest}"
    mod = sys.modules.get(modname)
    if mod is None or not hasattr(mod, name):
        mod = types.ModuleType(modname)
        mod.__dict__.update(namespace)
        exec(code, mod.__dict__)
        sys.modules[modname] = mod
    namespace.update((k, v) for k, v in mod.__dict__.items() if not k.startswith("__"))
    return getattr(mod, name)


def layer_cell_source(
    rec_cls, n_data: int, schedule: Schedule | None, rows: bool = False, lazy: bool = False
) -> str:
    """Source of ``lcell(t, p, ring, W1, last_row, last_col, R, C, d0..) -> (value, decision)``.

    For a LayeredRecurrence it passes the window's previous layers to the user's cell: the rows
    ``ring[(t - w) % W1]``, or with ``rows`` the arguments :meth:`Spec.layer_rows` names instead of
    ``ring, W1`` (the caller takes the views once a layer: made a cell, they cost the cpu's
    two-constraint knapsack about 40 % of its sweep, one thread, 2026-11-26). For a grid
    with a linear schedule it maps (wavefront t, slot p) to (i, j), reads each dependency from the
    ring of wavefronts (or from ``boundary`` outside the grid), and records the last row and column.
    Slots that hold no cell return ``fill`` and decision 0. ``lazy``: the grid's cell is rewritten
    to read its dependencies itself (:func:`dep_source`): none is read here.
    """
    da = data_args(n_data)
    du = spec_of(rec_cls).fn_args(n_data)
    if schedule is None:
        ring = [f"ring[(t - {w}) % W1]" for w in range(1, rec_cls.window + 1)]
        prev = spec_of(rec_cls).layer_rows() if rows else ring
        args = ", ".join(prev) if rows else "ring, W1"
        if rec_cls._two_d():  # cell (t, i, j) of 2-D layers, the ring's layers 2-D: the caller
            # finds (i, j) from the layer's flat cell (cpu: once a group of 32 cells; cuda: a cell)
            body = cell_call(rec_cls, "t, i, j", prev, n_data, "v", "dd")
            return cell_function(f"def lcell(t, i, j, {args}, last_row, last_col, R, C{da}):", body)
        body = cell_call(rec_cls, "t, p", prev, n_data, "v", "dd")
        return cell_function(f"def lcell(t, p, {args}, last_row, last_col, R, C{da}):", body)
    s = schedule
    lines = [f"def lcell(t, p, ring, W1, last_row, last_col, R, C{da}):"]
    # t counts from the first wavefront; t_min depends on the grid's size, so it is computed here
    tt = f"(t + min(0, {s.a} * (R - 1)) + min(0, {s.b} * (C - 1)))"
    if s.by_row_index:
        lines += ["    i = p", f"    num = {tt} - {s.a} * i"]
        if abs(s.b) != 1:
            lines += [f"    if num % {s.b} != 0:", "        return VT(FILL), 0"]
        lines += [f"    j = num // {s.b}", "    if j < 0 or j >= C:", "        return VT(FILL), 0"]
    else:
        lines += ["    j = p", f"    num = {tt} - {s.b} * j"]
        if abs(s.a) != 1:
            lines += [f"    if num % {s.a} != 0:", "        return VT(FILL), 0"]
        lines += [f"    i = num // {s.a}", "    if i < 0 or i >= R:", "        return VT(FILL), 0"]
    deps = []
    for k, (di, dj) in enumerate(() if lazy else s.offsets):
        lag = -(s.a * di + s.b * dj)
        slot = f"i + {di}" if s.by_row_index else f"j + {dj}"
        lines += [
            f"    ii = i + {di}",
            f"    jj = j + {dj}",
            "    if ii < 0 or ii >= R or jj < 0 or jj >= C:",
            f"        x{k} = VT(boundary(ii, jj{du}))",
            "    else:",
            f"        x{k} = ring[(t - {lag}) % W1, {slot}]",
        ]
        deps.append(f"x{k}")
    context = list(DEP_READS["layered"][1]) if lazy else None
    call = cell_call(rec_cls, "i, j", deps, n_data, "v", "dd", ("dat0[i]", "dat1[j]"), context=context)
    lines.append(indent(call, 4))
    # the row and column the schedule finishes on: R - 1 and C - 1, or 0 when it runs backwards
    last_i = "0" if s.a < 0 else "R - 1"
    last_j = "0" if s.b < 0 else "C - 1"
    lines += [
        f"    if i == {last_i}:",
        "        last_row[j] = v",
        f"    if j == {last_j}:",
        "        last_col[i] = v",
        "    return v, dd",
    ]
    return "\n".join(lines) + "\n"


_RUN_LINE = """def run_line(g0, g1, line, words, wbase, R, C{da}):
    {setup}
    for c in range(start, stop, {step}):
        {cell}
"""


def line_sweep_source(
    rec_cls, n_data: int, schedule: Schedule, guard: str = "pass", lazy: bool = False
) -> str:
    """Source of ``run_line(g0, g1, line, words, wbase, R, C, d0..)``, the sweep of a *line* (a grid
    of one cell a wavefront, :func:`gpudp.grid.plan._line_plan`) over its groups of 32 cells ``g0 <=
    g < g1``, in the schedule's direction, by one thread (``guard``: the lines that let only one
    thread of a launch through). Cell ``c`` of the line (column ``j`` of one row, or row ``i`` of
    one column) reads the line's earlier cells at ``line[c + d]``; a dependency off the line takes
    ``boundary``. A recurrence declaring ``reads_line`` gets ``line`` itself after its dependencies
    (to read any earlier cell at an index computed from its data). Decision bits gather in
    registers, a group's ``bits`` words written as it ends (word ``(c // 32) * bits + b - wbase`` of
    ``words``). ``lazy``: the cell is rewritten to read its dependencies itself (:func:`dep_source`):
    none is read here."""
    s = schedule
    da, du = data_args(n_data), spec_of(rec_cls).fn_args(n_data)
    along_j, step, bits = s.by_row_index, s.line_step, rec_cls.decision_bits
    n = "C" if along_j else "R"
    cell = ["i = 0", "j = c"] if along_j else ["i = c", "j = 0"]
    deps = []
    for k, (di, dj) in enumerate(() if lazy else s.offsets):
        d, across = (dj, di) if along_j else (di, dj)
        outside = f"x{k} = VT(boundary(i + {di}, j + {dj}{du}))"
        if across:  # off a grid one cell wide
            cell.append(outside)
        else:  # the schedule's order puts d behind c: only one end of the line can be crossed
            q, off = (f"c - {-d}", "< 0") if d < 0 else (f"c + {d}", f">= {n}")
            cell += [f"if {q} {off}:", f"    {outside}", "else:", f"    x{k} = line[{q}]"]
        deps.append(f"x{k}")
    context = list(DEP_READS["line"][1]) if lazy else None
    call = cell_call(
        rec_cls, "i, j", deps, n_data, "v", "dd", ("dat0[i]", "dat1[j]"), line="line", context=context
    )
    cell += [call, "line[c] = v"]
    if bits:
        last, end = (31, "stop - 1") if step > 0 else (0, "stop + 1")  # a group's last cell
        cell += gathered_bits(bits, "c", f"(c & 31) == {last} or c == {end}", f"(c >> 5) * {bits} - wbase")
    if step > 0:
        bounds = f"start = g0 * 32\nstop = min(g1 * 32, {n})"
    else:
        bounds = f"start = min(g1 * 32, {n}) - 1\nstop = g0 * 32 - 1"
    setup = [guard, bounds, *(f"w{b} = 0" for b in range(bits))]
    return fill(_RUN_LINE, da=da, setup=setup, step=step, cell=cell)


def gathered_bits(bits: int, pos: str, last: str, base: str) -> list[str]:
    """Lines that put a cell's decision ``dd`` into registers ``w0..`` (bit ``pos & 31`` of each
    plane's word) and, where ``last`` holds (the group of 32's last cell), write the group's
    ``bits`` words at ``words[base + b]`` and clear them: a line's and a serial sweep's decisions."""
    out = [f"w{b} |= ((dd >> {b}) & 1) << ({pos} & 31)" for b in range(bits)]
    out += [f"if {last}:", f"    base = {base}"]
    return out + [f"    words[base + {b}] = w{b}\n    w{b} = 0" for b in range(bits)]


_RUN_SERIAL = """def run_serial(u0, u1, ring, rk, words, last_row, last_col, R, C{da}):
    W1 = ring.shape[0]
    GW = ((C + 31) >> 5) * {bits}
    for u in range(u0, u1):
        i = {row}
        {rows}
        row = ring[i % W1]
        {setup}
        for j in range({start}, {stop}, {step}):
            {cell}
        if i == {last_i}:
            for j in range(C):
                last_row[j] = row[j]
        last_col[i] = row[{last_j}]
"""

#: a dependency of a cell rewritten by :func:`gpudp.lazy_deps.lazy_cell` (``DI``, ``DJ``: the
#: offsets' rows and columns, constants of the namespace): read by a serial sweep from its ring of
#: rows, offset ``k``'s row's place in it from ``rk`` (-1: a row outside the grid), set once a row
_SERIAL_DEP = """def dep(k, i, j, ring, rk, R, C{du}):
    jj = j + DJ[k]
    r = rk[k]
    if r < 0 or jj < 0 or jj >= C:
        return VT(boundary(i + DI[k], jj{du}))
    return ring[r, jj]
"""

#: the same read by a layered sweep from its ring of wavefronts (``LAG``: each offset's wavefronts
#: back; ``{slot}``: the dependency's row or column, as the schedule tells a wavefront's cells apart)
_WAVE_DEP = """def dep(k, i, j, t, ring, W1, R, C{du}):
    ii = i + DI[k]
    jj = j + DJ[k]
    if ii < 0 or ii >= R or jj < 0 or jj >= C:
        return VT(boundary(ii, jj{du}))
    return ring[(t - LAG[k]) % W1, {slot}]
"""

#: the same read by a line's sweep from the line (a grid of one row or one column: a cell inside
#: the grid is on the line, at ``{at}``, its column or row)
_LINE_DEP = """def dep(k, i, j, line, R, C{du}):
    ii = i + DI[k]
    jj = j + DJ[k]
    if ii < 0 or ii >= R or jj < 0 or jj >= C:
        return VT(boundary(ii, jj{du}))
    return line[{at}]
"""

#: each sweep's accessor of a rewritten cell's dependencies, and what the sweep passes the cell in
#: its tuple's place (the accessor's context, after the cell's coordinates)
DEP_READS = {
    "serial": (_SERIAL_DEP, ("ring", "rk", "R", "C")),
    "layered": (_WAVE_DEP, ("t", "ring", "W1", "R", "C")),
    "line": (_LINE_DEP, ("line", "R", "C")),
}


def dep_source(rec_cls, n_data: int, schedule: Schedule, kind: str) -> tuple[str, dict, tuple[str, ...]]:
    """The accessor ``dep(k, i, j, *context, *data)`` that a cell rewritten by
    :func:`gpudp.lazy_deps.lazy_cell` calls for ``deps[k]`` in a sweep of ``kind`` (``"serial"``,
    ``"layered"`` or ``"line"``: :data:`DEP_READS`): its source, the constants it reads (``DI``,
    ``DJ``: the offsets' rows and columns; ``LAG``: their wavefronts back) and the context."""
    du = spec_of(rec_cls).fn_args(n_data)
    offs = np.array(schedule.offsets, np.int64).reshape(-1, 2)
    consts = {"DI": offs[:, 0].copy(), "DJ": offs[:, 1].copy()}
    consts["LAG"] = -(schedule.a * consts["DI"] + schedule.b * consts["DJ"])
    src, context = DEP_READS[kind]
    at = ("jj", "ii") if schedule.by_row_index else ("ii", "jj")  # a line's cell; a wavefront's slot
    return src.format(du=du, at=at[0], slot=at[1]), consts, context


def serial_sweep_source(rec_cls, n_data: int, schedule: Schedule, step: tuple[int, int], lazy: bool) -> str:
    """Source of ``run_serial(u0, u1, ring, rk, words, last_row, last_col, R, C, d0..)``, one
    thread's sweep of a grid row after row (:func:`gpudp.grid.plan.serial_order`), rows ``u0 <= u
    < u1`` of its order: ``step = (row step, column step)``, each +1 or -1. ``ring`` holds the last
    ``W1`` rows (row ``i`` at ``ring[i % W1]``); ``rk[k]``, set once a row, is where offset ``k``'s
    row lies in it (-1 outside the grid). ``lazy``: the cell is rewritten to read its dependencies
    through the accessor (:func:`dep_source`), else each dependency
    is read before the call. Decisions as the layered sweep's, a row a layer (bits gathered in
    registers, a group's words written as it ends); the last row and column as a wavefront sweep
    records them (by the schedule's direction)."""
    s = schedule
    da, du, bits = data_args(n_data), spec_of(rec_cls).fn_args(n_data), rec_cls.decision_bits
    rows, cell, deps = [], [], []
    for k, (di, dj) in enumerate(s.offsets):
        if di:
            rows += [f"ii = i + {di}", f"rk[{k}] = ii % W1 if ii >= 0 and ii < R else -1"]
        else:
            rows.append(f"rk[{k}] = i % W1")
        out = ([f"rk[{k}] < 0"] if di else []) + (["jj < 0"] if dj < 0 else ["jj >= C"] if dj > 0 else [])
        if not lazy:
            cell += [f"jj = j + {dj}", f"if {' or '.join(out) or 'False'}:"]
            cell += [f"    x{k} = VT(boundary(i + {di}, jj{du}))", "else:", f"    x{k} = ring[rk[{k}], jj]"]
        deps.append(f"x{k}")
    context = list(DEP_READS["serial"][1]) if lazy else None
    cell.append(cell_call(rec_cls, "i, j", deps, n_data, "v", "dd", ("dat0[i]", "dat1[j]"), context=context))
    cell.append("row[j] = v")
    if bits:
        end = "(j & 31) == 31 or j == C - 1" if step[1] > 0 else "(j & 31) == 0"
        cell += gathered_bits(bits, "j", end, f"i * GW + (j >> 5) * {bits}")
    return fill(
        _RUN_SERIAL,
        da=da,
        bits=bits,
        row="u" if step[0] > 0 else "R - 1 - u",
        rows=rows,
        setup=[f"w{b} = 0" for b in range(bits)] or "pass",
        start="0" if step[1] > 0 else "C - 1",
        stop="C" if step[1] > 0 else "-1",
        step=step[1],
        cell=cell,
        last_i="0" if s.a < 0 else "R - 1",
        last_j="0" if s.b < 0 else "C - 1",
    )


@register_jitable
def diag_start(d, R, C):
    """Cells of an ``R x C`` grid on the anti-diagonals before ``d`` (``i + j < d``): pairs with
    ``i + j < d`` less those with ``i >= R`` or ``j >= C``, plus those with both."""
    t0 = d * (d + 1) // 2
    x = d - R
    t1 = x * (x + 1) // 2 if x > 0 else 0
    x = d - C
    t2 = x * (x + 1) // 2 if x > 0 else 0
    x = d - R - C
    t3 = x * (x + 1) // 2 if x > 0 else 0
    return t0 - t1 - t2 + t3


@register_jitable
def diagonal_index(i, j, R, C):
    """Cell (i, j)'s position in the ``diagonals`` layout (the host, compiled walkers, the tests)."""
    d = i + j
    return diag_start(d, R, C) + i - max(0, d - C + 1)


def decision_dtype(bits: int) -> np.dtype:
    """The smallest unsigned type holding ``bits`` decision bits (uint8 for 0 bits: a placeholder)."""
    return np.dtype(np.uint8 if bits <= 8 else np.uint16 if bits <= 16 else np.uint32)


@functools.lru_cache(maxsize=16)
def diagonal_groups(k: int) -> np.ndarray:
    """``g[d]``: the groups of 32 cells on the anti-diagonals before ``d`` of a ``k x k`` block, each
    anti-diagonal's cells (by row) in groups of 32 (``d = 0 .. 2k - 1``; ``g[2k - 1]``: all of them).
    A block's decisions in *bit planes* (:func:`block_decision`) take ``g[2k - 1] * bits`` words.
    Made once per ``k`` (a traceback asks for it a few times a round) and read-only."""
    d = np.arange(2 * k - 1)
    length = np.minimum(d, k - 1) - np.maximum(0, d - k + 1) + 1
    g = np.concatenate(([0], np.cumsum((length + 31) // 32))).astype(np.int64)
    g.setflags(write=False)
    return g


@register_jitable
def block_decision(words, base, a, b, nc, k, planes, bits, groups):
    """Cell ``(a, b)``'s decision among a block's from ``words[base]``: row-major, one integer a
    cell (``planes`` false; ``nc`` the block's columns), or in bit planes: anti-diagonal ``d = a + b``
    of the ``k x k`` block (whatever the block's own size) in groups of 32 cells by row, from word
    ``groups[d] * bits`` (:func:`diagonal_groups`), plane ``x`` (bit ``x`` of 32 cells) after ``x``
    planes of the diagonal's groups, the cell's bit at its place in its group."""
    if not planes:
        return np.int64(words[base + a * nc + b])
    d = a + b
    p = a - max(0, d - k + 1)
    g0 = groups[d]
    w = base + g0 * bits + (p >> 5)
    n = groups[d + 1] - g0
    s = p & 31
    v = np.int64(0)
    for x in range(bits):
        v |= ((np.int64(words[w + x * n]) >> s) & 1) << x
    return v


#: The values around one block of a tiled grid that :mod:`gpudp.checkpoints` sweeps again: ``top_at(c,
#: ..)`` the value at row ``r0 - 1``, column ``c >= -1``; ``left_at(r, ..)`` the value at row ``r``,
#: column ``c0 - 1``. They come from the forward sweep's checkpoints (``ckrow[m]``: row ``(m + 1) K - 1``;
#: ``ckcol[m]``: column ``(m + 1) K - 1``) or, at the grid's edges, from the boundary's values
#: (``brow[c + 1]``: ``boundary(-1, c)``; ``bcol[r]``: ``boundary(r, -1)``). Value macros
#: (:func:`gpudp.values.expand`) keep one source for scalar and record cells, and both backends.
BLOCK_EDGES = """
def top_at(c, bi, r0, ckrow, brow, bcol):
    if r0 == 0:
        return LD(brow, c + 1)
    if c < 0:
        return LD(bcol, r0 - 1)
    return LD(ckrow, (bi - 1, c))


def left_at(r, bj, c0, ckcol, bcol):
    if c0 == 0:
        return LD(bcol, r)
    return LD(ckcol, (bj - 1, r))
"""


#: block ``q`` of a round (``bis[q]``, ``bjs[q]``): its first row and column and its rows and columns
#: (the last blocks of the grid may be smaller than ``K``); both backends' block kernels start so
BLOCK_ORIGIN = """
bi = bis[q]
bj = bjs[q]
r0 = bi * K
c0 = bj * K
nr = min(K, R - r0)
nc = min(K, C - c0)
"""


def block_edges(rec_cls, namespace: dict, compile_fn) -> None:
    """Put the compiled ``top_at`` and ``left_at`` of :data:`BLOCK_EDGES` (``compile_fn``: the
    backend's compiler of device functions) into a kernel's ``namespace``."""
    from .values import expand

    src = expand(BLOCK_EDGES, rec_cls)
    for name in ("top_at", "left_at"):
        namespace[name] = compile_fn(compile_source(src, name, dict(namespace)))


def block_source(template: str, rec_cls, n_data: int, namespace: dict, compile_fn, ri: str, cj: str, **more):
    """A backend's kernel of blocks swept again (:mod:`gpudp.checkpoints`) from its ``template``: the
    cell wrapper ``tcell`` (no reduction: the forward sweep made it) and :data:`BLOCK_EDGES`'s
    functions compiled into ``namespace`` by ``compile_fn``, the template filled in by :func:`fill`
    (``{origin}``: :data:`BLOCK_ORIGIN`, a block; ``{da}``, ``{du}``: the data arguments; ``{ri}``,
    ``{cj}``: the symbols' expressions; ``more``) and its value macros expanded."""
    from .values import expand

    cell = tile_cell_source(rec_cls, n_data, rec_cls.offsets, False)
    namespace["tcell"] = compile_fn(compile_source(cell, "tcell", dict(namespace)))
    block_edges(rec_cls, namespace, compile_fn)
    src = fill(
        template,
        origin=BLOCK_ORIGIN.rstrip("\n"),
        da=data_args(n_data),
        du=spec_of(rec_cls).user_args(n_data),
        ri=ri,
        cj=cj,
        **more,
    )
    return expand(src, rec_cls)


def walk_form(rec_cls, n_data: int) -> dict:
    """The pieces of a compiled walk's source that differ with ``traceback_state``: its extra
    argument, the path's width, the state column, the step (``back``'s call) and the exits (``rec``
    and ``step`` are blocks, for :func:`fill`)."""
    da = data_args(n_data)
    a, b = rec_cls._INDEX
    if rec_cls.traceback_state:
        return {
            "s0": ", s",
            "width": 4,
            "rec": "path[n, 3] = s",
            "step": f"{a}2, {b}2, s2 = back({a}, {b}, d, s{da})\ns = np.int64(s2)",
            "exit": f"{a}, {b}, s",
            "exit2": f"{a}2, {b}2, s",
        }
    return {
        "s0": "",
        "width": 3,
        "rec": "",
        "step": f"{a}2, {b}2 = back({a}, {b}, d{da})",
        "exit": f"{a}, {b}",
        "exit2": f"{a}2, {b}2",
    }


def tile_cell_source(rec_cls, n_data: int, offsets, reduce_here=True) -> str:
    """Source of ``tcell(i, j, up, left, diag, ri, cj, <user data>)`` calling the user's cell with
    its dependencies in declared order (``ri``, ``cj``: the symbols, ignored when it has none)."""
    deps = [TILE_DEP_NAMES[tuple(o)] for o in offsets]
    body = cell_call(rec_cls, "i, j", deps, n_data, "v", "dd", ("ri", "cj"), reduce_here)
    args = f"i, j, up, left, diag, ri, cj{spec_of(rec_cls).user_args(n_data)}"
    return cell_function(f"def tcell({args}):", body)
