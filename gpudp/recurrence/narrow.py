"""Narrow arithmetic: an int32 cell (a grid's or a layered recurrence's) computed in 32 bits where
that is proven exact, so that the GPU's ``max``/``min`` chains lower to Hopper's DPX instructions.

numba types ``int32 + int32`` as int64, so a cell written as plain Python, ``max(diag + s, up -
gap, 0)``, computes in 64 bits even where every value is an int32; 64-bit integer code takes twice
the instructions on a GPU and has no DPX form (``VIADDMNMX``: ``max(a + b, c)`` in one instruction).
The engine rewrites such a cell so that each sum, difference, product by a constant, negation,
``abs``, ``max``, ``min`` and conditional expression of int32 values is cast back to int32
(``np.int32(...)``), which numba lowers to 32-bit instructions; the user writes plain ``max(...)``.

A cast that wraps would change the answer, so the rewrite is used only where the engine proves,
before the sweep, that none does. The analysis (:func:`narrow_source`, over the source of ``cell``
and ``boundary``, path by path) bounds the magnitude of every rewritten expression and of every
value ``cell`` and ``boundary`` return by linear forms in the magnitudes of their *leaves*: a
dependency (``B``, the same for every cell; a layered cell's previous layers are arrays of them),
a data item (``Dk``: the largest ``|x|`` of item ``k``, an integer array or number of at most 32
bits, or a symbol array, measured on the host before the sweep),
a coordinate (``I``, ``J``: at most the grid's size) and constants. Where each
value ``cell`` returns is at most one dependency plus a constant (``max(up - gap, diag + s)``; or
no dependency at all), no value of the grid exceeds ``V``: the largest of ``|fill|`` and the
boundary's values, plus the longest chain of dependencies times the largest such constant
(:meth:`Narrow.proven`). If every rewritten expression stays within ``2**31 - 1`` when the
dependencies are within ``V``, the narrow cell computes what the cell as written computes, value
for value, and the sweep runs it; otherwise (or where the analysis cannot follow a value: a
helper's result, a float, 64-bit data, a product of two values, a variable that grows in a loop, a
cell it cannot read at all) the cell runs as written. No check runs in the kernels.

``stats.extra["arithmetic"]`` says which ran; ``GPUDP_NARROW=0`` turns the rewrite off (for
measurements).
"""

from __future__ import annotations

import ast
import builtins
import inspect
import math
import os

import numpy as np

from ..kernel import factory as kernel_factory
from .source import Unsupported, compile_function, function_ast, function_namespace

__all__ = ["LIMIT", "Narrow", "magnitude", "narrow_source", "prepare"]

#: the largest magnitude a rewritten (int32) expression may reach
LIMIT = (1 << 31) - 1

#: data of these types reach the cell as at most 32-bit integers numba keeps narrow
_NARROW_DTYPES = frozenset(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.uint8, np.uint16))

#: the cast the rewrite inserts (a name in the rewritten function's namespace)
_CAST = "_gpudp_i32"


# --------------------------------------------------------------------------------------------
# Abstract values. A *bound* is a frozenset of linear forms, the value's magnitude being at most the
# largest of them; a form is a sorted tuple of (term, coefficient), every coefficient >= 0, a term
# a product of leaves written "D2*I": "B" (a cell value), "Dk" (the largest |x| of data item k),
# "I" and "J" (a coordinate), or "1" alone (the constant term); "B" only alone (linear in it). A value
# is a bound, a tuple of values (_Tup), an array of narrow integers (_Arr), or None: anything else,
# left as numba types it.
# --------------------------------------------------------------------------------------------

#: forms a bound keeps before they are merged into one (their coefficientwise maximum)
_MAX_FORMS = 16


class _Arr:
    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k

    def __eq__(self, other):
        return isinstance(other, _Arr) and other.k == self.k

    def __hash__(self):
        return hash(("arr", self.k))


class _Tup(tuple):
    pass


def _const(v: int):
    return frozenset({(("1", abs(v)),)}) if abs(v) <= LIMIT else None


def _leaf(name: str) -> frozenset:
    return frozenset({((name, 1),)})


def _merge(forms) -> tuple:
    out: dict = {}
    for f in forms:
        for k, c in f:
            out[k] = max(out.get(k, 0), c)
    return tuple(sorted(out.items()))


def _below(f, g) -> bool:
    """Form ``f`` is at most ``g`` wherever the leaves are >= 0."""
    gd = dict(g)
    return all(c <= gd.get(k, 0) for k, c in f)


def _tidy(forms) -> frozenset:
    forms = set(forms)
    keep = {f for f in forms if not any(g != f and _below(f, g) for g in forms)}
    if len(keep) > _MAX_FORMS:
        keep = {_merge(keep)}
    return frozenset(keep)


def _sum(a: frozenset, b: frozenset) -> frozenset:
    out = []
    for f in a:
        for g in b:
            d = dict(f)
            for k, c in g:
                d[k] = d.get(k, 0) + c
            out.append(tuple(sorted(d.items())))
    return _tidy(out)


def _times(k: str, m: str) -> str:
    """The product of two terms."""
    if k == "1" or m == "1":
        return m if k == "1" else k
    return "*".join(sorted(k.split("*") + m.split("*")))


def _product(a: frozenset, b: frozenset) -> frozenset | None:
    """The bound of a product, None where both factors hold a value (``B``: not linear in it)."""
    if any(k == "B" for f in a for k, _ in f) and any(k == "B" for f in b for k, _ in f):
        return None
    out = []
    for f in a:
        for g in b:
            d: dict = {}
            for k, c in f:
                for m, e in g:
                    t = _times(k, m)
                    d[t] = d.get(t, 0) + c * e
            out.append(tuple(sorted(d.items())))
    if any("B*" in k or "*B" in k for f in out for k, _ in f):
        return None
    return _tidy(out)


def _is_bound(v) -> bool:
    return isinstance(v, frozenset)


def _join(a, b):
    """The least value above both (for bounds: the larger of their forms)."""
    if a is None or b is None:
        return None
    if _is_bound(a) and _is_bound(b):
        return _tidy(a | b)
    if isinstance(a, _Tup) and isinstance(b, _Tup) and len(a) == len(b):
        return _Tup(_join(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, _Arr) and a == b:
        return a
    return None


def _join_all(values):
    values = list(values)
    if not values:
        return None
    out = values[0]
    for v in values[1:]:
        out = _join(out, v)
    return out


def _join_envs(envs) -> dict | None:
    """The environments of the paths that reach a point joined (None: no path does)."""
    envs = [e for e in envs if e is not None]
    if not envs:
        return None
    out = dict(envs[0])
    for e in envs[1:]:
        for k, v in e.items():
            out[k] = _join(out[k], v) if k in out else v
    return out


class _Grow(Exception):
    """Variables whose bounds still grow around a loop: left wide, and the analysis run again."""

    def __init__(self, names):
        super().__init__(names)
        self.names = set(names)


class _Loop:
    __slots__ = ("breaks", "continues")

    def __init__(self):
        self.breaks, self.continues = [], []


class _Analysis:
    """The bounds of a function's values, path by path (an ``if`` joins its branches, a loop is
    iterated to a fixed point at its head; a variable still growing after :attr:`ROUNDS` trips is
    left wide), and of each arithmetic node whose operands are narrow: :attr:`marks`, by node."""

    ROUNDS = 12

    def __init__(self, params: dict, namespace: dict):
        self.params, self.ns = params, namespace
        self.pinned: set = set()
        self.marks: dict = {}  # id(node) -> bound, joined over every time the node is evaluated
        self.nodes: dict = {}  # id(node) -> node, for the marks
        self.cast: set = set()  # ids of the nodes the user's own np.int32(...) holds
        self.loops: list = []
        self.made: list = []  # nodes made here, kept alive so that no id is reused
        self.returns: list = []  # the value of every return, each time it is reached

    def solve(self, body) -> dict:
        for _ in range(self.ROUNDS):
            self.marks, self.nodes, self.returns = {}, {}, []
            try:
                self.block(body, dict(self.params))
                return self.marks
            except _Grow as g:
                self.pinned |= g.names
        raise Unsupported("bounds that do not settle")

    def changes_types(self) -> bool:
        """Whether the rewrite changes what numba computes in 64 bits: some marked sum, difference,
        product or negation, or ``max``/``min``/``abs``/conditional with an integer constant among
        its operands (numba types those in 64 bits), that the user's own ``np.int32(...)`` does
        not already hold. A cell written that way already computes in 32 bits: it is swept as
        written."""
        for k in self.marks:
            node = self.nodes[k]
            if k in self.cast:
                continue
            if isinstance(node, ast.BinOp | ast.UnaryOp | ast.AugAssign):
                return True
            ops = node.args if isinstance(node, ast.Call) else [node.body, node.orelse]
            if any(self._literal(a) for a in ops):
                return True
        return False

    def _literal(self, node) -> bool:
        """A Python integer constant (numba types it int64): a literal or a module constant."""
        if isinstance(node, ast.UnaryOp):
            return self._literal(node.operand)
        if isinstance(node, ast.Constant):
            return type(node.value) is int
        return isinstance(node, ast.Name | ast.Attribute) and type(self._resolve(node)) is int

    # -- names in the function's module -----------------------------------------------------
    def _resolve(self, node, env=()):
        """The object a global name or dotted attribute path denotes, or :data:`_MISSING` (also for
        a name that is a local variable, in ``env``)."""
        if isinstance(node, ast.Name):
            if node.id in env:
                return _MISSING
            if node.id in self.ns:
                return self.ns[node.id]
            return getattr(builtins, node.id, _MISSING)
        if isinstance(node, ast.Attribute):
            base = self._resolve(node.value, env)
            if base is _MISSING or not inspect.ismodule(base):
                return _MISSING
            return getattr(base, node.attr, _MISSING)
        return _MISSING

    def _index(self, node, env):
        """A subscript's index when it is a constant integer (a literal or a module constant)."""
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            k = self._index(node.operand, env)
            return None if k is None else -k
        if isinstance(node, ast.Name | ast.Attribute):
            obj = self._resolve(node, env)
            if isinstance(obj, int | np.integer) and not isinstance(obj, bool | np.bool_):
                return int(obj)
        return None

    # -- expressions ------------------------------------------------------------------------
    def ev(self, node, env):
        m = getattr(self, "ev_" + type(node).__name__, None)
        if m is not None:
            return m(node, env)
        if isinstance(node, ast.Lambda | ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
            raise Unsupported(type(node).__name__)
        if isinstance(node, ast.NamedExpr):
            raise Unsupported("an assignment expression")
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.ev(child, env)
        return None

    def _mark(self, node, bound):
        """Record ``node`` as rewritten with this bound, when it computes with values or data (a
        node of coordinates and constants alone, index arithmetic, is left as it is)."""
        if any(leaf[0] in "BD" for f in bound for k, _ in f for leaf in k.split("*")):
            self.marks[id(node)] = _tidy(self.marks.get(id(node), frozenset()) | bound)
            self.nodes[id(node)] = node
        return bound

    def ev_Constant(self, node, env):
        v = node.value
        if isinstance(v, bool) or not isinstance(v, int):
            return None
        return _const(v)

    def ev_Name(self, node, env):
        if node.id in env:
            return env[node.id]
        return _constant_value(self._resolve(node, env))

    def ev_Attribute(self, node, env):
        self.ev(node.value, env)
        return _constant_value(self._resolve(node, env))

    def ev_BinOp(self, node, env):
        folded = _folded(node)
        if folded is not None:
            return _const(folded)
        a, b = self.ev(node.left, env), self.ev(node.right, env)
        if not (_is_bound(a) and _is_bound(b)):
            return None
        if isinstance(node.op, ast.Add | ast.Sub):
            return self._mark(node, _sum(a, b))
        if isinstance(node.op, ast.Mult):
            product = _product(a, b)
            return None if product is None else self._mark(node, product)
        return None

    def ev_UnaryOp(self, node, env):
        a = self.ev(node.operand, env)
        if not _is_bound(a):
            return None
        if isinstance(node.op, ast.USub):
            return self._mark(node, a)
        return a if isinstance(node.op, ast.UAdd) else None

    def ev_IfExp(self, node, env):
        self.ev(node.test, env)
        j = _join(self.ev(node.body, env), self.ev(node.orelse, env))
        return self._mark(node, j) if _is_bound(j) else j

    def ev_Call(self, node, env):
        fn = self._resolve(node.func, env)
        if fn is _MISSING:
            self.ev(node.func, env)
        args = [self.ev(a, env) for a in node.args]
        for kw in node.keywords:
            self.ev(kw.value, env)
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            return None
        if fn in (max, min) and len(args) >= 2 and all(_is_bound(a) for a in args):
            return self._mark(node, _join_all(args))
        if fn is abs and len(args) == 1 and _is_bound(args[0]):
            return self._mark(node, args[0])
        if fn is np.int32 and len(args) == 1:
            self.cast.add(id(node.args[0]))
        if fn in (np.int32, np.int64) and len(args) == 1 and _is_bound(args[0]):
            return args[0]  # the user's own cast of a value proven in range: exact
        return None

    def ev_Subscript(self, node, env):
        base = self.ev(node.value, env)
        self.ev(node.slice, env)
        if isinstance(base, _Arr):
            return _leaf("B" if base.k == "B" else f"D{base.k}")
        if isinstance(base, _Tup) and not isinstance(node.slice, ast.Slice):
            k = self._index(node.slice, env)
            if k is None:
                return _join_all(base)  # a run-time index into a homogeneous tuple
            if -len(base) <= k < len(base):
                return base[k]
        return None

    def ev_Tuple(self, node, env):
        return _Tup(self.ev(e, env) for e in node.elts)

    # -- statements ---------------------------------------------------------------------------
    def _assign(self, target, value, env):
        if isinstance(target, ast.Name):
            env[target.id] = None if target.id in self.pinned else value
        elif isinstance(target, ast.Tuple | ast.List):
            same = isinstance(value, _Tup) and len(value) == len(target.elts)
            for k, t in enumerate(target.elts):
                self._assign(t, value[k] if same else None, env)
        elif isinstance(target, ast.Starred):
            self._assign(target.value, None, env)
        else:  # an item or attribute stored to: its parts are read
            self.ev(target, env)

    def block(self, body, env):
        """``env`` after the statements (None when every path left by return, break or continue)."""
        for s in body:
            env = self.stmt(s, env)
            if env is None:
                return None
        return env

    def stmt(self, s, env):
        if isinstance(s, ast.Assign):
            v = self.ev(s.value, env)
            for t in s.targets:
                self._assign(t, v, env)
        elif isinstance(s, ast.AugAssign):
            load = ast.copy_location(ast.BinOp(left=_as_load(s.target), op=s.op, right=s.value), s)
            self.made.append(load)
            v = self.ev(load, env)
            if id(load) in self.marks:
                self._mark(s, self.marks.pop(id(load)))
            self._assign(s.target, v, env)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self._assign(s.target, self.ev(s.value, env), env)
        elif isinstance(s, ast.If):
            self.ev(s.test, env)
            return _join_envs([self.block(s.body, dict(env)), self.block(s.orelse, dict(env))])
        elif isinstance(s, ast.For | ast.While):
            return self.loop(s, env)
        elif isinstance(s, ast.Return | ast.Expr):
            v = self.ev(s.value, env) if s.value is not None else None
            if isinstance(s, ast.Return):
                self.returns.append(v)
                return None
        elif isinstance(s, ast.Break | ast.Continue):
            loop = self.loops[-1]
            (loop.breaks if isinstance(s, ast.Break) else loop.continues).append(dict(env))
            return None
        elif not isinstance(s, ast.Pass):
            raise Unsupported(type(s).__name__)
        return env

    def loop(self, s, env):
        """A loop's head iterated to a fixed point; the environment after it."""
        item = None
        if isinstance(s, ast.For):
            it = self.ev(s.iter, env)
            item = _join_all(it) if isinstance(it, _Tup) else None
        head = env
        for _ in range(self.ROUNDS):
            if isinstance(s, ast.While):
                self.ev(s.test, head)
            inner = dict(head)
            if isinstance(s, ast.For):
                self._assign(s.target, item, inner)
            self.loops.append(_Loop())
            try:
                end = self.block(s.body, inner)
            finally:
                loop = self.loops.pop()
            new = _join_envs([head, end, *loop.continues])
            if new == head:
                break
            grown = [k for k in new if new[k] != head.get(k)]
            head = new
        else:
            raise _Grow(grown)
        done = self.block(s.orelse, dict(head))
        return _join_envs([done, *loop.breaks])


_MISSING = object()


def _constant_value(obj):
    """The abstract value of a module constant: an integer, or a tuple of them."""
    if isinstance(obj, bool | np.bool_):
        return None
    if isinstance(obj, int):
        return _const(obj)
    if isinstance(obj, np.integer) and np.dtype(type(obj)) in _NARROW_DTYPES:
        return _const(int(obj))
    if isinstance(obj, tuple) and obj and all(isinstance(x, int | np.integer) for x in obj):
        return _Tup(_constant_value(x) for x in obj)
    return None


def _folded(node) -> int | None:
    """The value of an expression of integer literals alone (``1 << 28``), else None."""
    if not all(
        isinstance(n, ast.Constant | ast.operator | ast.unaryop | ast.BinOp | ast.UnaryOp)
        for n in ast.walk(node)
    ):
        return None
    if not all(type(n.value) is int for n in ast.walk(node) if isinstance(n, ast.Constant)):
        return None
    try:
        v = eval(compile(ast.Expression(node), "<constant>", "eval"), {"__builtins__": {}})
    except (ArithmeticError, ValueError):
        return None
    return v if type(v) is int else None


def _as_load(target):
    node = ast.parse(ast.unparse(target), mode="eval").body
    return ast.copy_location(node, target)


class _Wrap(ast.NodeTransformer):
    """Each marked node cast to int32."""

    def __init__(self, marks: dict):
        self.marks = marks

    def visit(self, node):
        marked = id(node) in self.marks
        if isinstance(node, ast.AugAssign) and marked:
            value = ast.BinOp(left=_as_load(node.target), op=node.op, right=self.visit(node.value))
            call = ast.Call(func=ast.Name(_CAST, ast.Load()), args=[value], keywords=[])
            return ast.copy_location(ast.Assign(targets=[node.target], value=call), node)
        node = super().visit(node)
        if marked and isinstance(node, ast.expr):
            call = ast.Call(func=ast.Name(_CAST, ast.Load()), args=[node], keywords=[])
            return ast.copy_location(call, node)
        return node


def _analyse(fn, params: list, narrow: bool) -> tuple:
    """``fn`` (cell or boundary) read: ``(tree, marks, returns, namespace)``, its arguments' values
    ``params`` (``*data`` spelt out as the arguments after the named ones, the tuple rebuilt on
    entry); ``marks`` the nodes to cast (none unless ``narrow`` and the cast changes a type)."""
    node = function_ast(fn)
    ns = function_namespace(fn)
    ns[_CAST] = np.int32
    a = node.args
    names = [p.arg for p in a.args]
    n_named = len(names)
    if n_named > len(params) or (a.vararg is None and n_named != len(params)):
        raise Unsupported("argument count")
    env = dict(zip(names, params, strict=False))
    if a.vararg is not None:
        spelt = [f"_gpudp_d{k}" for k in range(len(params) - n_named)]
        inner = ", ".join(spelt) + ("," if len(spelt) == 1 else "")
        node.body = ast.parse(f"{a.vararg.arg} = ({inner})").body + node.body
        env[a.vararg.arg] = _Tup(params[n_named:])
        node.args.args += [ast.arg(n) for n in spelt]
        a.vararg = None
        env.update(zip(spelt, params[n_named:], strict=True))
    analysis = _Analysis(env, ns)
    marks = analysis.solve(node.body)
    if not (narrow and analysis.changes_types()):
        marks = {}
    return node, marks, analysis.returns, ns


def _compile(node, marks: dict, ns: dict, name: str):
    """The function of ``node`` with the marked nodes cast to int32, and its source."""
    node.body = [_Wrap(marks).visit(s) for s in node.body]
    node.name = f"{name}_narrow"
    return compile_function(node, ns, "narrow")


def _value_bounds(returns, has_decision: bool) -> list | None:
    """The bounds of the values a function returns (a record's fields together), None where one is
    not bounded."""
    out = []
    for r in returns:
        if has_decision:
            if not (isinstance(r, _Tup) and len(r) == 2):
                return None
            r = r[0]
        for v in r if isinstance(r, _Tup) else (r,):
            if not _is_bound(v):
                return None
            out.append(v)
    return out


class Narrow:
    """A recurrence class's narrow cell (:func:`narrow_source`): the rewritten ``cell``, its source,
    the bounds of its rewritten expressions (:attr:`marks`), of the values it returns
    (:attr:`values`) and of those ``boundary`` returns (:attr:`edges`)."""

    def __init__(self, cls, cell, source: str, marks: list, values: list, edges: list):
        self.cell, self.source, self.marks, self.values, self.edges = cell, source, marks, values, edges
        #: the class parts of the narrow subclass (:func:`gpudp.recurrence.specialized`), made once
        #: so that every sweep finds the one subclass
        self.parts = {"cell": staticmethod(cell), "_narrow": self, "_wide": cls}

    def proven(self, data, rows: int, cols: int, fill, chain: int) -> int | None:
        """``V``, a bound of every value of the grid, when the narrow cell is proven exact for this
        data: every value the cell returns is at most one dependency plus a constant, or a constant
        (so that no value exceeds the largest of ``|fill|`` and the boundary's, plus ``chain``, the
        longest chain of dependencies, times the largest constant), and every rewritten expression
        stays within :data:`LIMIT` when the dependencies are within ``V``. None otherwise."""
        leaves = {k for b in (*self.marks, *self.values, *self.edges) for f in b for k, _ in f}
        factors = {x for k in leaves for x in k.split("*")}
        mags = {k: magnitude(data[int(k[1:])]) for k in factors if k[0] == "D"}
        mags.update({"1": 1, "I": rows + chain, "J": cols + chain})

        def parts(form):  # (coefficient of B, the rest at these magnitudes)
            d = dict(form)
            return d.pop("B", 0), sum(c * math.prod(mags[x] for x in k.split("*")) for k, c in d.items())

        start = max((abs(int(f)) for f in fill), default=0)
        step = fixed = 0
        for b in self.edges:
            for form in b:
                start = max(start, parts(form)[1])
        for b in self.values:
            for form in b:
                a, rest = parts(form)
                if a > 1:
                    return None
                if a:
                    step = max(step, rest)
                else:
                    fixed = max(fixed, rest)
        v = max(start + chain * step, fixed)
        if v > LIMIT:
            return None
        for b in self.marks:
            for form in b:
                a, rest = parts(form)
                if a * v + rest > LIMIT:
                    return None
        return v


def magnitude(x) -> int:
    """The largest ``|x|`` of an integer array, tuple or number (0 for an empty array)."""
    if isinstance(x, tuple):
        return max((magnitude(v) for v in x), default=0)
    if isinstance(x, np.ndarray):
        return max(abs(int(x.max())), abs(int(x.min()))) if x.size else 0
    return abs(int(x))


def _kind(x) -> str:
    """How a data item reaches the cell: ``A`` an array of narrow integers (or a tuple of narrow
    numbers), ``S`` a narrow number, ``W`` anything else."""
    if isinstance(x, np.ndarray):
        return "A" if x.dtype in _NARROW_DTYPES else "W"
    if isinstance(x, np.integer) and not isinstance(x, np.bool_):
        return "S" if np.dtype(type(x)) in _NARROW_DTYPES else "W"
    if isinstance(x, tuple) and x and all(isinstance(v, np.integer) for v in x):
        if len({type(v) for v in x}) == 1 and np.dtype(type(x[0])) in _NARROW_DTYPES:
            return "A"
    return "W"


def _data_params(cls, kinds) -> list:
    """The values of the user's data items as ``cell`` and ``boundary`` get them."""
    first = 2 if getattr(cls, "symbols", False) else 0
    return [
        _Arr(k) if kind == "A" else _leaf(f"D{k}") if kind == "S" else None
        for k, kind in enumerate(kinds)
        if k >= first
    ]


def _cell_params(cls, kinds) -> list:
    """The values of the cell's arguments: the coordinates (``I``, ``J``), the dependencies (``B``;
    a record's: a tuple of them; a layered cell's: the previous layers, arrays of them; a line's
    values, with ``reads_line``: an array of them), the symbols
    (one item of each symbol array) and the data."""
    from ..values import fields

    if cls.family == "layered":  # the window's previous layers: arrays of values
        return [_leaf("I"), _leaf("J"), *[_Arr("B")] * cls.window, *_data_params(cls, kinds)]
    fs = fields(cls)
    dep = _leaf("B") if fs is None else _Tup(_leaf("B") for _ in fs)
    deps = [dep] * len(cls.offsets)
    if cls.deps_tuple:
        deps = [_Tup(deps)]
    if cls.reads_line:  # the line's values after the dependencies: an array of them
        deps = [*deps, _Arr("B")]
    syms = [_leaf(f"D{k}") if kinds[k] == "A" else None for k in range(2 if cls.symbols else 0)]
    return [_leaf("I"), _leaf("J"), *deps, *syms, *_data_params(cls, kinds)]


def eligible(cls) -> bool:
    """A grid or layered recurrence whose values are int32 (or a record of int32 fields)."""
    from ..values import fields

    if cls.family not in ("grid", "layered") or getattr(cls, "layer_shape", None) is not None:
        return False  # 2-D layers: their cells' arguments are not the analysis's (t, k, layers)
    fs = fields(cls)
    types_ = [np.dtype(cls.value_dtype)] if fs is None else list(fs)
    return all(t == np.dtype(np.int32) for t in types_)


@kernel_factory("recurrence.narrow")
def narrow_source(cls, kinds: tuple) -> Narrow | None:
    """The narrow form of ``cls``'s cell for data of these kinds (:func:`_kind`: the kernels' data,
    symbol arrays first), made once per class and kinds (in the kernel table); None where nothing
    would change or the analysis cannot bound the values."""
    has_decision = bool(cls.decision_bits) or bool(getattr(cls, "_drops_decisions", False))
    try:
        node, marks, returns, ns = _analyse(_plain(cls.cell), _cell_params(cls, kinds), True)
        values = _value_bounds(returns, has_decision)
        if not marks or values is None:
            return None
        edges = []  # a layered recurrence has no boundary: the layers before the first hold fill
        if cls.family == "grid":
            edge = _analyse(_plain(cls.boundary), [_leaf("I"), _leaf("J"), *_data_params(cls, kinds)], False)
            edges = _value_bounds(edge[2], False)
            if edges is None:
                return None
        cell, src = _compile(node, marks, ns, cls.cell.__name__)
    except (Unsupported, SyntaxError):
        return None
    return Narrow(cls, cell, src, list(marks.values()), values, edges)


def _plain(fn):
    fn = getattr(fn, "__func__", fn)
    return getattr(fn, "py_func", fn)


def enabled() -> bool:
    return os.environ.get("GPUDP_NARROW", "1") != "0"


def prepare(rec, data: tuple, rows: int, cols: int) -> tuple | None:
    """``(narrow rec, V)`` for a sweep of ``rec`` over ``data`` (the kernels' data: symbol arrays
    first, then the user's): a grid of ``rows x cols``, or ``rows`` layers of at most ``cols``
    cells; ``rec`` as the subclass whose ``cell`` is the narrow one, ``V`` the proven bound of every
    value. None where the cell runs as written: not int32 values, nothing to rewrite, nothing
    proven, or ``GPUDP_NARROW=0``."""
    cls = type(rec)
    if not enabled() or not eligible(cls):
        return None
    nar = narrow_source(cls, tuple(_kind(x) for x in data))
    if nar is None:
        return None
    from ..values import fields, fill_values

    fill = [cls.fill] if fields(cls) is None else list(fill_values(cls))
    if cls.family == "layered":  # a cell reads only earlier layers
        chain = rows
    else:  # an earlier anti-diagonal when no offset points down or right; else any earlier cell
        # (a line's reads at an index from the data included: any earlier cell of its rows * cols)
        forward = all(di <= 0 and dj <= 0 for di, dj in cls.offsets) and not cls.reads_line
        chain = rows + cols if forward else rows * cols
    bound = nar.proven(data, rows, cols, fill, chain)
    if bound is None:
        return None
    from .base import specialized

    return specialized(rec, **nar.parts), bound
