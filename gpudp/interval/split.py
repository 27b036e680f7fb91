"""An interval cell's split-point loop shared by the lanes of a warp or of a block (the CUDA sweep's
long diagonals).

A cell of an interval recurrence typically keeps the best of its split points::

    best, split = T[i, i] + T[i + 1, j] + w(i, i, j), i
    for k in range(i + 1, j):
        cost = T[i, k] + T[k + 1, j] + w(i, k, j)
        if cost < best:
            best, split = cost, k
    return best, split

One thread a cell runs that loop serially, and on the long diagonals (few cells, long loops) the GPU
waits on one thread's chain of reads: an interval sweep on the GPU ran no faster than on the CPU's
cores. :func:`warp_cell` rewrites each such loop of the cell so that lane ``l`` of a group of
``width`` threads (a warp, 32, or a whole block of several warps) takes the iterations ``l, l +
width, l + 2 width, ...`` from the values the loop starts with, and the lanes then merge their bests:
five rounds of shuffles within each warp, then, in a group of several warps, each warp's best
through the block's shared memory between two barriers (every lane reading every warp's). Every lane
ends with the loop's result and runs the rest of the cell as written. The user writes the plain
loop; nothing is declared.

What the rewrite keeps exactly. A loop qualifies when it is a ``for`` over ``range(...)`` with a
constant step, not inside another loop, and its body (no ``return``, ``break``, ``continue``, nested
loop, or write to an array) does two things only:

- computes *temporaries*: names assigned before they are read in the same iteration, on every path,
  and read nowhere after the loop (nor is the loop's own variable);
- updates *the best* in one ``if X < best:`` (or ``<=``, ``>``, ``>=``, either side) whose body only
  assigns ``best = X`` (the same expression) and other *payload* names (the split point, a choice),
  none of which (``best`` aside, in that one comparison) the loop reads.

The serial loop's result is then the best of the starting value and the candidates, ties going to
the earliest (strict comparison) or the latest (``<=``, ``>=``) iteration, the starting value first
of all; a lane's loop gives that over its iterations, and the merge compares two lanes' results by
value, then by iteration (an order on every result, so the merge's order does not matter). Since
every lane starts from the loop's starting value, a candidate that compares false with everything
(a float NaN) is skipped as the serial loop skips it. The decisions are therefore those of the
serial cell, tie for tie (the tests compare them on tied instances).

A cell with no qualifying loop runs a thread a cell (:func:`warp_cell` says why); a loop that does
not qualify runs on every lane alike.
"""

from __future__ import annotations

import ast
import copy
import os

from ..kernel import KernelFactory
from ..recurrence.source import Unsupported, compile_function, function_ast, function_namespace

__all__ = ["SLOTS", "WARP", "Unsupported", "column_cell", "column_reads", "rewritten", "warp_cell"]

#: lanes of a warp
WARP = 32
#: the values a warp's best is handed to the other warps of its group in (shared memory: the best,
#: its iteration, and the payloads): a loop with more payloads is not shared
SLOTS = 8
#: iterations a lane runs a trip of its loop, one after the other (each with its own reads, which
#: then need not wait on the update before them); GPUDP_SPLIT_UNROLL for measurements. H100,
#: 2026-12-06 (tools/interval_gpu.py, whole sweeps 1 / 2 / 4): matrix chain n = 2,000 0.0321 /
#: 0.0265 / 0.0259 s, triangulation n = 1,500 0.0221 / 0.0209 / 0.0205 s, Nussinov n = 2,000
#: 0.0405 / 0.0403 / 0.0471 s: 2 is never slower than 1, 4 loses on Nussinov
UNROLL = int(os.environ.get("GPUDP_SPLIT_UNROLL", "2"))
#: the prefix of every name the rewrite adds
_P = "_gpudp_"
_LANE = _P + "lane"
_WIDTH = _P + "width"
_XB = _P + "xb"
_XOR = _P + "xor"
_SYNC = _P + "sync"
_PUT = _P + "put"
_GET = _P + "get"
#: the table's row-major and column-major copies the warp cell reads in its loops
ROWS = _P + "rows"
COLS = _P + "cols"

_REFUSED = (
    ast.Return,
    ast.Break,
    ast.Continue,
    ast.For,
    ast.While,
    ast.AsyncFor,
    ast.Global,
    ast.Nonlocal,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Lambda,
    ast.Try,
    ast.With,
    ast.Delete,
    ast.NamedExpr,
    ast.Yield,
    ast.YieldFrom,
    ast.Await,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)
#: ``X op best`` as ``X op' best`` with the candidate on the left
_FLIP = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}


_REWRITTEN = KernelFactory("interval.rewritten", "kind", "rec")


def rewritten(kind: str, rec_cls, build):
    """A backend's rewrite of ``rec_cls``'s cell, once per class and process: ``build()`` (the
    rewritten function, compiled for the backend), or the reason there is none (a str) where it
    raises :class:`Unsupported` (or the source does not parse). ``kind`` names the rewrite."""
    k = _REWRITTEN.lookup(kind=kind, rec=rec_cls)
    if not k.ready:
        try:
            fn = build()
        except (Unsupported, SyntaxError) as e:
            fn = str(e) or type(e).__name__
        k = k.keep(fn)
    return k.fn


def warp_cell(cell, xor, group=None):
    """``(function, source)``: ``cell`` (an interval recurrence's) with each qualifying split-point
    loop shared by a group of lanes, taking the lane, the group's width, the group's exchange buffers
    and the table's row-major and column-major copies first, ``f(lane, width, xb, rows, cols, i, j,
    T, *data)`` (``rows[a, b] == cols[b, a] == T[a, b]``; the loops read a row or a column of the
    table from them, :class:`_Reads`). ``width`` is 32 (a warp) or, with ``group``, a multiple of 32
    (a block, every thread of it running the cell). ``xor(x, m)`` is the lanes' exchange within a
    warp (a shuffle on the GPU); ``group``, ``(sync, put, get)``: the block's barrier, ``put(xb,
    slot, w, x)`` storing warp ``w``'s value ``x`` in slot ``slot`` (< :data:`SLOTS`) of ``xb``, and
    ``get(xb, slot, w, like)`` reading it back as ``like``'s type; all names in the new function's
    globals.

    Raises :class:`Unsupported` (its message says why) where no loop qualifies."""
    node = function_ast(cell)
    ns = function_namespace(cell)
    loops, why = [], []
    for loop in _loops(node.body):
        try:
            loops.append((loop, _reduction(loop)))
        except Unsupported as e:
            why.append(f"line {loop.lineno}: {e}")
    while True:  # drop a loop whose temporaries are read after it (which may leave another's read)
        keep = [(loop, red) for loop, red in loops if _left_behind(node, loop, red, loops) is None]
        if len(keep) == len(loops):
            break
        gone = [(lp, r) for lp, r in loops if (lp, r) not in keep]
        why += [f"line {lp.lineno}: {_left_behind(node, lp, r, loops)}" for lp, r in gone]
        loops = keep
    if not loops:
        raise Unsupported("; ".join(why) or "no for loop over range(...) outside other loops")
    table = node.args.args[2].arg if len(node.args.args) > 2 else None
    for n, (loop, red) in enumerate(loops):
        if table is not None:
            loop.body = [_Reads(table, red.local).visit(s) for s in loop.body]
        _replace(node, loop, _rewritten(loop, red, n, group is not None))
    node.args.args[:0] = [ast.arg(x) for x in (_LANE, _WIDTH, _XB, ROWS, COLS)]
    node.name = f"{node.name}_warp"
    ns[_XOR] = xor
    if group is not None:
        ns[_SYNC], ns[_PUT], ns[_GET] = group
    return compile_function(node, ns, "split")


class _Reads(ast.NodeTransformer):
    """``T[a, b]`` in a loop whose iterations vary ``b`` only, read from the row-major copy
    (``ROWS[a, b]``), or ``a`` only, from the column-major copy (``COLS[b, a]``): the lanes' reads
    of one row or one column are then consecutive in memory. ``local``: the names an iteration
    binds (an index naming one varies)."""

    def __init__(self, table: str, local: set, rows: bool = True):
        self.table, self.local, self.rows, self.changed = table, local, rows, False

    def varies(self, e) -> bool:
        return any(isinstance(n, ast.Name) and n.id in self.local for n in ast.walk(e))

    def visit_Subscript(self, node):
        self.generic_visit(node)
        ix = node.slice
        if not (isinstance(node.value, ast.Name) and node.value.id == self.table):
            return node
        if not (isinstance(ix, ast.Tuple) and len(ix.elts) == 2 and isinstance(node.ctx, ast.Load)):
            return node
        a, b = ix.elts
        if self.rows and self.varies(b) and not self.varies(a):
            self.changed = True
            return ast.Subscript(ast.Name(ROWS, ast.Load()), ast.Tuple([a, b], ast.Load()), ast.Load())
        if self.varies(a) and not self.varies(b):
            self.changed = True
            return ast.Subscript(ast.Name(COLS, ast.Load()), ast.Tuple([b, a], ast.Load()), ast.Load())
        return node


def column_cell(cell):
    """``(function, source)``: ``cell`` (an interval recurrence's) with its loops' reads down a
    column of the table, ``T[a, b]`` with only ``a`` varying from one iteration to the next, taken
    from a column-major copy instead, ``COLS[b, a]``; the new function takes that copy first,
    ``f(cols, i, j, T, *data)``. The CPU sweep's table is row-major, where such a read strides a
    whole row from one iteration to the next (matrix chain's ``T[k + 1, j]``): read from the copy it
    is the next item. Any loop qualifies (only which copy a read goes to changes, and both hold the
    same values); :class:`Unsupported` where no loop reads a column."""
    node = function_ast(cell)
    ns = function_namespace(cell)
    column_reads(node)
    return compile_function(node, ns, "split")


def column_reads(node: ast.FunctionDef) -> None:
    """:func:`column_cell`'s rewrite of the parsed ``def`` of a cell, in place (a record cell's reads
    are then made tuples of both tables, :mod:`gpudp.interval.records`)."""
    if len(node.args.args) < 3:
        raise Unsupported("no table argument")
    table, changed = node.args.args[2].arg, False
    for loop in _loops(node.body):
        bound = {n.id for n in ast.walk(loop) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        reads = _Reads(table, bound, rows=False)
        loop.body = [reads.visit(s) for s in loop.body]
        changed |= reads.changed
    if not changed:
        raise Unsupported("no loop reads down a column of the table")
    node.args.args.insert(0, ast.arg(COLS))
    node.name = f"{node.name}_cols"


def _loops(stmts):
    """The ``for`` statements of ``stmts`` not inside another loop."""
    for s in stmts:
        if isinstance(s, ast.For):
            yield s
        elif isinstance(s, ast.If):
            yield from _loops(s.body)
            yield from _loops(s.orelse)


class _Reduction:
    """A qualifying loop: its range, its update (``if X op key: ...``), and the names its iterations
    bind for themselves (``local``: the temporaries and the loop variable)."""

    def __init__(self, start, stop, step, update, key, op, payloads, local):
        self.start, self.stop, self.step = start, stop, step
        self.update, self.key, self.op, self.payloads, self.local = update, key, op, payloads, local


def _const_int(node) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _const_int(node.operand)
        return None if v is None else -v
    return None


def _same(a, b) -> bool:
    return ast.dump(a, include_attributes=False) == ast.dump(b, include_attributes=False)


def _names(target) -> list[str]:
    """The names a plain assignment target binds; :class:`Unsupported` for anything else."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for t in target.elts for n in _names(t)]
    raise Unsupported("an assignment to something other than names (an array, an attribute)")


def _stores(stmts) -> list[tuple[str, ast.stmt]]:
    out = []
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Assign):
                out += [(x, n) for t in n.targets for x in _names(t)]
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
                out += [(x, n) for x in _names(n.target)]
    return out


def _update(s: ast.If):
    """``(key, op, payloads)`` where ``s`` is ``if X op key: key = X; ...`` (the candidate on the
    left of ``op``), else None."""
    t = s.test
    if s.orelse or not isinstance(t, ast.Compare) or len(t.ops) != 1 or type(t.ops[0]) not in _FLIP:
        return None
    if not all(isinstance(b, ast.Assign) and len(b.targets) == 1 for b in s.body):
        return None
    assigned = {}
    for b in s.body:
        tgt, val = b.targets[0], b.value
        if isinstance(tgt, ast.Name):
            pairs = [(tgt, val)]
        elif isinstance(tgt, ast.Tuple) and isinstance(val, ast.Tuple) and len(tgt.elts) == len(val.elts):
            pairs = list(zip(tgt.elts, val.elts, strict=True))
        else:
            return None
        for x, v in pairs:
            if not isinstance(x, ast.Name) or x.id in assigned:
                return None
            assigned[x.id] = v
    left, right, op = t.left, t.comparators[0], type(t.ops[0])
    for key, cand, o in ((right, left, op), (left, right, _FLIP[op])):
        if isinstance(key, ast.Name) and key.id in assigned and _same(assigned[key.id], cand):
            return key, o, [x for x in assigned if x != key.id]
    return None


def _defined(stmts, defined: set, temps: set) -> set:
    """The temporaries assigned on every path through ``stmts``, starting from ``defined``;
    :class:`Unsupported` where one is read before it is assigned (its value would come from an
    earlier iteration, or from before the loop)."""

    def reads(node):
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in temps - defined:
                raise Unsupported(f"{n.id} is read before it is assigned in the iteration")

    defined = set(defined)
    for s in stmts:
        if isinstance(s, ast.If):
            reads(s.test)
            defined |= _defined(s.body, defined, temps) & _defined(s.orelse, defined, temps)
        elif isinstance(s, (ast.Assign, ast.AnnAssign)):
            if s.value is not None:
                reads(s.value)
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            defined |= {x for t in targets for x in _names(t)}
        elif isinstance(s, ast.AugAssign):
            reads(s.value)
            reads(ast.Name(s.target.id, ast.Load()))
        else:
            reads(s)
    return defined


def _reduction(loop: ast.For) -> _Reduction:
    if loop.orelse:
        raise Unsupported("a for ... else")
    if not isinstance(loop.target, ast.Name):
        raise Unsupported("a loop variable that is not one name")
    it = loop.iter
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"):
        raise Unsupported("a loop not over range(...)")
    if it.keywords or not 1 <= len(it.args) <= 3:
        raise Unsupported("range with keywords or more than three arguments")
    args = list(it.args)
    step = _const_int(args[2]) if len(args) == 3 else 1
    if not step:
        raise Unsupported("a range step that is not a nonzero integer constant")
    start, stop = (ast.Constant(0), args[0]) if len(args) == 1 else (args[0], args[1])
    for s in loop.body:
        for n in ast.walk(s):
            if isinstance(n, _REFUSED):
                raise Unsupported(f"{type(n).__name__.lower()} in the loop")
            if isinstance(n, ast.Name) and n.id.startswith(_P):
                raise Unsupported(f"a name starting {_P}")
    stores = _stores(loop.body)
    stored = {x for x, _ in stores}
    ups = []
    for s in loop.body:
        for n in ast.walk(s):
            if isinstance(n, ast.If):
                u = _update(n)
                if u is not None:
                    ups.append((n, *u))
    if len(ups) != 1:
        raise Unsupported("two updates of a best" if ups else "no 'if X < best: best = X, ...' in the loop")
    update, key, op, payloads = ups[0]
    accs = {key.id, *payloads}
    var = loop.target.id
    if var in accs or var in stored:
        raise Unsupported(f"the loop assigns its variable {var}")
    for x, s in stores:  # the best and its payloads change in the update only
        if x in accs and not any(s is b for b in update.body):
            raise Unsupported(f"{x} is assigned outside its update")
    for s in loop.body:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in accs and n is not key:
                raise Unsupported(f"the loop reads {n.id}")
    if 2 + len(payloads) > SLOTS:
        raise Unsupported(f"more than {SLOTS - 2} values updated with the best")
    temps = stored - accs
    _defined(loop.body, set(), temps)
    return _Reduction(start, stop, step, update, key.id, op, payloads, temps | {var})


def _left_behind(fn: ast.FunctionDef, loop: ast.For, red: _Reduction, loops: list) -> str | None:
    """Why the values the lanes leave in ``loop``'s temporaries (or its variable) would be seen: a
    read of one outside the loop, unless inside another rewritten loop that assigns it first."""
    inside = {id(n) for s in loop.body for n in ast.walk(s)}
    safe = set()  # reads inside another rewritten loop of a name it binds before reading
    for other, r in loops:
        if other is not loop:
            names = (n for s in other.body for n in ast.walk(s))
            safe |= {id(n) for n in names if isinstance(n, ast.Name) and n.id in r.local}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in red.local:
            if id(n) not in inside and id(n) not in safe:
                return f"{n.id} is read after the loop"
    return None


def _rewritten(loop: ast.For, red: _Reduction, n: int, group: bool) -> list[ast.stmt]:
    """The loop as the lanes run it, then the merge: within the warp, then (``group``, where the
    width is more than a warp) across the group's warps."""
    lo, hi, c, o, t = (f"{_P}{x}{n}" for x in ("lo", "hi", "c", "o", "t"))
    st = red.step
    a, b, s = (hi, lo, st) if st > 0 else (lo, hi, -st)
    count = f"max(0, ({a} - {b} + {s - 1}) // {s})"
    head = ast.parse(f"{lo} = 0\n{hi} = 0\n{c} = {count}\n{o} = -1").body
    head[0].value, head[1].value = red.start, red.stop
    red.update.body.append(ast.parse(f"{o} = {t}").body[0])
    body = ast.parse(f"{loop.target.id} = {lo} + {t} * {st}").body + loop.body
    if UNROLL > 1:  # UNROLL iterations a trip while that many are left, then one at a time
        step = ast.parse(f"{t} = {t} + {_WIDTH}").body
        trip = [s for u in range(UNROLL) for s in copy.deepcopy((step if u else []) + body)] + step
        lanes = [
            *ast.parse(f"{t} = {_LANE}").body,
            ast.While(ast.parse(f"{t} + {UNROLL - 1} * {_WIDTH} < {c}", mode="eval").body, trip, []),
            ast.While(ast.parse(f"{t} < {c}", mode="eval").body, copy.deepcopy(body) + step, []),
        ]
    else:
        lanes = [
            ast.For(
                target=ast.Name(t, ast.Store()),
                iter=ast.parse(f"range({_LANE}, {c}, {_WIDTH})", mode="eval").body,
                body=body,
                orelse=[],
            )
        ]
    better = "<" if red.op in (ast.Lt, ast.LtE) else ">"
    later = red.op in (ast.LtE, ast.GtE)  # ties to the later iteration
    names = [red.key, o, *red.payloads]
    got = [f"{_P}x{n}_{q}" for q in range(len(names))]
    tie = f"{got[1]} {'>' if later else '<'} {o}"
    wins = f"if {got[0]} {better} {red.key} or ({got[0]} == {red.key} and {tie}):"
    merge = []
    m = WARP // 2
    while m:
        merge += [f"{g} = {_XOR}({x}, {m})" for g, x in zip(got, names, strict=True)]
        merge += [wins, *(f"    {x} = {g}" for g, x in zip(got, names, strict=True))]
        m //= 2
    if group:  # each warp's best (its lane 0's) through the buffers, every lane taking the group's
        w, v = f"{_P}w{n}", f"{_P}v{n}"
        merge += [f"if {_WIDTH} > {WARP}:", f"    {w} = {_LANE} >> 5", f"    {_SYNC}()"]
        merge += [f"    if ({_LANE} & 31) == 0:"]
        merge += [f"        {_PUT}({_XB}, {q}, {w}, {x})" for q, x in enumerate(names)]
        merge += [f"    {_SYNC}()", f"    for {v} in range({_WIDTH} >> 5):"]
        pairs = list(enumerate(zip(got, names, strict=True)))
        merge += [f"        {g} = {_GET}({_XB}, {q}, {v}, {x})" for q, (g, x) in pairs]
        merge += [f"        {wins}", *(f"            {x} = {g}" for g, x in zip(got, names, strict=True))]
    return [*head, *lanes, *ast.parse("\n".join(merge)).body]


def _replace(fn: ast.FunctionDef, loop: ast.For, new: list[ast.stmt]) -> None:
    for holder in ast.walk(fn):
        for field in ("body", "orelse"):
            stmts = getattr(holder, field, None)
            if isinstance(stmts, list) and any(s is loop for s in stmts):
                k = next(q for q, s in enumerate(stmts) if s is loop)
                stmts[k : k + 1] = new
                return
    raise AssertionError("loop not found")
