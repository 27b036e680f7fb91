"""A grid cell that takes its dependencies as one tuple (``deps_tuple``), rewritten to read only the
dependencies it indexes.

Given the tuple, a cell of ``K`` offsets costs ``K`` reads of the window (each with its test for a
cell outside the grid) whatever it reads of them: coin change's "number of ways", ``deps[0] +
deps[1 + t]`` over 64 offsets, spent ~97 % of its sweep building tuples (docs/benchmarks.md,
"2-core CPU host"). Where the cell uses its tuple only as ``deps[expr]`` and ``len(deps)``, the
kernel that calls it may have it rewritten (:func:`lazy_cell`): ``deps[expr]`` becomes a call of
the kernel's own accessor ``dep(expr, i, j, *context, *data)``, which reads the one dependency
``expr`` names (or ``boundary`` outside the grid), and ``len(deps)`` the number of offsets. Any other
use of the tuple (``for x in deps``, ``a, b = deps``, passing it on), a coordinate or data argument
assigned in the cell, a cell whose source cannot be read, or one that asks ``len(deps)`` of at most
:data:`LOOP_OFFSETS` offsets leaves the cell as written: it gets its tuple.
"""

from __future__ import annotations

import ast
import builtins

from .codegen import compile_source
from .fingerprint import all_names
from .recurrence.source import Unsupported, function_ast

__all__ = ["ACCESSOR", "lazy_cell"]

#: the accessor's name in the rewritten cell's namespace
ACCESSOR = "_gpudp_dep"

#: a cell that asks ``len(deps)`` (a loop over its dependencies: it reads them all) is rewritten only
#: past this many offsets: given the tuple, the compiler unrolls the loop over constant offsets
#: (the fewest coins on a line of 10^6 amounts, one thread, 2026-12-06: 8 coins 19-24 ms with the
#: tuple, 48-58 ms through the accessor; 63 coins 407-436 ms with it, 280-286 ms through the
#: accessor, and its first compile 6.9 -> 1.7 s)
LOOP_OFFSETS = 16


def _reads(node: ast.FunctionDef, deps: str, fixed: set[str]) -> None:
    """:class:`Unsupported` unless every use of ``deps`` in the body is ``deps[expr]`` (a load, not
    a slice) or ``len(deps)``, and no name of ``fixed`` (the coordinates and data) is assigned;
    functions and lambdas inside the cell are not read."""
    allowed = set()
    for n in ast.walk(node):
        if (
            isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef)
            and n is not node
        ):
            raise Unsupported("a function inside the cell")
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == deps:
            if isinstance(n.ctx, ast.Load) and not isinstance(n.slice, ast.Slice):
                allowed.add(id(n.value))
        if _is_len(n, deps):
            allowed.add(id(n.args[0]))
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load) and n.id in fixed | {deps, "len"}:
            raise Unsupported(f"{n.id} assigned in the cell")
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id == deps and id(n) not in allowed:
            raise Unsupported(f"{deps} used otherwise than {deps}[k] and len({deps})")


def _is_len(n, deps: str) -> bool:
    return (
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id == "len"
        and len(n.args) == 1
        and not n.keywords
        and isinstance(n.args[0], ast.Name)
        and n.args[0].id == deps
    )


class _Lazy(ast.NodeTransformer):
    def __init__(self, deps: str, head: list[str], data: list[str], k: int):
        self.deps, self.head, self.data, self.k = deps, head, data, k

    def visit_Subscript(self, n):
        self.generic_visit(n)
        if isinstance(n.value, ast.Name) and n.value.id == self.deps:
            args = [n.slice, *(ast.Name(x, ast.Load()) for x in self.head + self.data)]
            return ast.copy_location(ast.Call(ast.Name(ACCESSOR, ast.Load()), args, []), n)
        return n

    def visit_Call(self, n):
        self.generic_visit(n)
        return ast.copy_location(ast.Constant(self.k), n) if _is_len(n, self.deps) else n


def lazy_cell(cls, n_context: int, accessor, between: int):
    """``cls.cell`` rewritten to read its dependencies through ``accessor`` (module doc), or None
    where it runs as written.

    Parameters
    ----------
    cls : a GridRecurrence class declaring ``deps_tuple``
    n_context : how many arguments take the tuple's place in the rewritten cell, ``cell(i, j,
        *context, *between, *data)``; they are passed on to the accessor after the cell's
        coordinates: ``accessor(k, i, j, *context, *data)``
    accessor : the kernel's compiled accessor (numba ``njit``)
    between : how many arguments come between the tuple and the data (a line that the cell reads,
        ``reads_line``; the row and column symbols)

    Returns
    -------
    The rewritten function (plain Python, to be compiled as the cell was), or None.
    """
    fn = cls.cell
    try:
        node = function_ast(fn)
        a = node.args
        if a.vararg or len(a.args) < 3 + between:
            raise Unsupported("a *data argument")
        names = [x.arg for x in a.args]
        deps, data = names[2], names[3 + between :]
        if fn.__closure__ or (fn.__globals__.get("len", builtins.len) is not builtins.len):
            raise Unsupported("a closure, or len redefined")
        _reads(node, deps, {*names[:2], *data})
        if len(cls.offsets) <= LOOP_OFFSETS and any(_is_len(n, deps) for n in ast.walk(node)):
            raise Unsupported("a loop over a few dependencies")
    except Unsupported:
        return None
    context = [f"{ACCESSOR}_{n}" for n in range(n_context)]  # names no user's cell takes
    node = _Lazy(deps, [*names[:2], *context], data, len(cls.offsets)).visit(node)
    node.args.args[2:3] = [ast.arg(x) for x in context]
    src = ast.unparse(ast.fix_missing_locations(ast.Module(body=[node], type_ignores=[]))) + "\n"
    g = fn.__globals__
    ns = {n: g[n] for n in all_names(fn.__code__) if n in g}
    ns[ACCESSOR] = accessor
    return compile_source(src, node.name, ns)
