"""A user's function read as source and written back: what the engine's rewrites of a cell share
(:mod:`gpudp.recurrence.narrow`: int32 arithmetic; :mod:`gpudp.interval.split`: a split-point loop
shared by a warp)."""

from __future__ import annotations

import ast
import inspect
import textwrap

from ..codegen import source_code

__all__ = ["Unsupported", "function_ast", "function_namespace", "compile_function"]


class Unsupported(Exception):
    """A construct a rewrite does not read: the function runs as written."""


def function_ast(fn) -> ast.FunctionDef:
    """The ``def`` of ``fn`` (decorators dropped); :class:`Unsupported` where it has no source, is
    not one plain ``def``, or takes arguments other than plain positional ones (``*data`` is
    allowed)."""
    try:
        src = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as e:
        raise Unsupported(f"no source ({e})") from None
    tree = ast.parse(src)
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
        raise Unsupported("not a def")
    node = tree.body[0]
    node.decorator_list = []
    a = node.args
    if a.posonlyargs or a.kwonlyargs or a.kwarg or a.defaults or a.kw_defaults:
        raise Unsupported("arguments other than plain positional ones")
    return node


def function_namespace(fn) -> dict:
    """The function's globals, with its closure's values as globals (read as constants)."""
    ns = dict(fn.__globals__)
    if fn.__closure__:
        for name, c in zip(fn.__code__.co_freevars, fn.__closure__, strict=True):
            try:
                ns[name] = c.cell_contents
            except ValueError:
                raise Unsupported(f"closure variable {name} not bound") from None
    return ns


def compile_function(node: ast.FunctionDef, ns: dict, kind: str):
    """``node`` compiled in the namespace ``ns`` (a copy of the user's globals: numba reads a
    function's globals as constants), under a file name of its own: ``(function, source)``."""
    mod = ast.fix_missing_locations(ast.Module(body=[node], type_ignores=[]))
    src = ast.unparse(mod) + "\n"
    exec(source_code(src, node.name, kind), ns)
    return ns[node.name], src
