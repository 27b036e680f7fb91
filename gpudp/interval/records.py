"""Record cells of an interval recurrence: the table as one array per field (structure of arrays,
as :mod:`gpudp.values` keeps every buffer of a record), read by the user's functions as tuples.

A record class's ``cell(i, j, T, *data)`` (and a stateful ``back(i, j, decision, state, T,
*data)``) reads ``T[a, b]`` as a tuple in field order, as a grid's cell gets its dependencies. The
compiled sweeps hand it a tuple of the fields' tables instead, and the function is rewritten
(:func:`tuple_reads`) so that each read ``T[a, b]`` becomes ``(T[0][a, b], T[1][a, b], ...,)`` and
``T.shape`` becomes ``T[0].shape``; any other use of ``T`` (passing it on, a write, one index) is
refused with a :class:`ContractError` naming the method and the line. A scalar class is never
rewritten: its kernels are what they were.

In plain Python (the probe, the checked pass, a walk's first call) the table is a structured array
read through :func:`item`, which gives the same tuples.
"""

from __future__ import annotations

import ast

import numpy as np

from ..errors import ContractError
from ..recurrence.source import Unsupported, compile_function, function_ast, function_namespace
from ..values import fields
from .split import rewritten

__all__ = ["RecordTable", "item", "record_cell", "record_function", "tuple_reads"]


def item(table: np.ndarray, a, b):
    """``table[a, b]``: a number, or (a structured table) the tuple of its fields in order."""
    v = table[a, b]
    return tuple(v) if table.dtype.names is not None else v


class _TupleReads(ast.NodeTransformer):
    """``T[a, b]`` as the tuple of the fields' reads, ``T.shape`` as the first field's; any other
    use of ``T`` is :class:`Unsupported`."""

    def __init__(self, table: str, n: int):
        self.table, self.n = table, n

    def _is_table(self, node) -> bool:
        return isinstance(node, ast.Name) and node.id == self.table

    def visit_Subscript(self, node):
        if not self._is_table(node.value):
            return self.generic_visit(node)
        ix = self.visit(node.slice)
        if not (isinstance(node.ctx, ast.Load) and isinstance(ix, ast.Tuple) and len(ix.elts) == 2):
            raise Unsupported(f"line {node.lineno}: {ast.unparse(node)} (read it as {self.table}[a, b])")
        reads = [
            ast.Subscript(
                ast.Subscript(ast.Name(self.table, ast.Load()), ast.Constant(k), ast.Load()), ix, ast.Load()
            )
            for k in range(self.n)
        ]
        return ast.copy_location(ast.Tuple(reads, ast.Load()), node)

    def visit_Attribute(self, node):
        if self._is_table(node.value) and node.attr == "shape" and isinstance(node.ctx, ast.Load):
            first = ast.Subscript(ast.Name(self.table, ast.Load()), ast.Constant(0), ast.Load())
            return ast.copy_location(ast.Attribute(first, "shape", ast.Load()), node)
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id == self.table:
            raise Unsupported(
                f"line {node.lineno}: {self.table} used but as {self.table}[a, b] or {self.table}.shape"
            )
        return node

    def visit_Lambda(self, node):
        raise Unsupported(f"line {node.lineno}: a lambda")

    def visit_FunctionDef(self, node):
        raise Unsupported(f"line {node.lineno}: a nested def")


def tuple_reads(node: ast.FunctionDef, table: str, n: int) -> None:
    """Rewrite, in place, the body of ``node`` so that its reads of the table argument ``table`` give
    tuples of ``n`` fields from a tuple of ``n`` arrays (see the module's text);
    :class:`Unsupported` (saying where) for any other use of it."""
    rw = _TupleReads(table, n)
    node.body = [rw.visit(s) for s in node.body]


def record_function(rec_cls, meth: str, at: int, table_names=(), prefix=None):
    """``(function, source)``: ``rec_cls``'s ``meth`` (``cell`` or ``back``), whose argument ``at``
    is the table, reading it (and each name of ``table_names``, tables a rewrite added before it)
    as tuples of the record's fields (:func:`tuple_reads`). ``prefix``: a rewrite of the parsed
    ``def`` to make first (``prefix(node)``, in place; :mod:`gpudp.interval.split`'s column reads).
    :class:`ContractError` naming the method where its source cannot be read so."""
    n = len(fields(rec_cls))
    fn = getattr(rec_cls, meth)

    def refused(why) -> ContractError:
        names = np.dtype(rec_cls.value_dtype).names
        return ContractError(
            f"{rec_cls.__name__}.{meth}: value_dtype is a record {names}, so the table is read as "
            f"tuples and {meth} is compiled from its source, which failed: {why}. Read the table only "
            f"as T[a, b] (a tuple in field order: t, f = T[a, b], or T[a, b][0]) or T.shape"
        )

    try:
        node, ns = function_ast(fn), function_namespace(fn)
    except (Unsupported, SyntaxError) as e:
        raise refused(e) from None
    if len(node.args.args) <= at:
        raise refused(f"it takes no table argument (argument {at + 1})")
    table = node.args.args[at].arg
    if prefix is not None:  # its Unsupported is its own reason, passed on
        prefix(node)
    try:
        for name in (table, *table_names):
            tuple_reads(node, name, n)
    except Unsupported as e:
        raise refused(e) from None
    node.name = f"{node.name}_records"
    return compile_function(node, ns, "records")


class RecordTable:
    """A structured table as a record cell reads it in plain Python (the driver's first probe):
    ``T[a, b]`` is the tuple :func:`item` gives; ``shape`` the table's; read-only."""

    def __init__(self, table: np.ndarray):
        self.table, self.shape = table, table.shape

    def __getitem__(self, ab):
        a, b = ab
        return item(self.table, a, b)


def record_cell(rec_cls):
    """``rec_cls.cell`` reading the table as tuples (:func:`record_function`), in plain Python (each
    backend compiles it), made once per class."""
    return rewritten("records", rec_cls, lambda: record_function(rec_cls, "cell", 2)[0])
