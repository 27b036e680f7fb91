"""gpudp.codegen: templates whose blocks of generated code carry their own indentation (``fill``), and
the one spec a recurrence class gives code generation (``spec_of``)."""

import numpy as np
import pytest

from gpudp import GridRecurrence
from gpudp.codegen import cell_function, fill, indent, spec_of
from gpudp.kernel import family
from gpudp.recurrence import values_only


def test_block_takes_the_placeholders_column():
    template = "def f(x):\n    {body}\n    return y\n"
    assert fill(template, body="y = x\nif y < 0:\n    y = -y") == (
        "def f(x):\n    y = x\n    if y < 0:\n        y = -y\n    return y\n"
    )


def test_block_from_a_list_of_lines():
    template = "while k:\n        {cells}\n"
    assert (
        fill(template, cells=["a = 1", "if a:", "    b = 2"])
        == "while k:\n        a = 1\n        if a:\n            b = 2\n"
    )


def test_block_is_the_indent_helper_bit_for_bit():
    """Blank and whitespace-only lines come out empty, a common margin goes, a trailing newline stays
    (one more line), as indent(value, column) gives them."""
    value = "\n    a = 1\n  \n\n    if a:\n        b = 2\n"
    out = fill("x\n            {v}\ny", v=value)
    assert out == "x\n" + indent(value, 12) + "\ny"
    assert out == "x\n\n            a = 1\n\n\n            if a:\n                b = 2\n\ny"


def test_inline_fields_as_str_format():
    template = "def f(a{da}):\n    return {{'k': {n:>3}}} + {expr}\n"
    fields = {"da": ", d0", "n": 7, "expr": "a\n+ 1"}
    assert fill(template, **fields) == template.format(**fields)


def test_placeholder_with_more_on_its_line_is_inline():
    """Only a placeholder alone on its line is a block: one after code, one before it, one with a
    format spec, all go in as str.format puts them (a multi-line value's later lines unindented)."""
    value = "p\nq"
    for template in ("    x = {v}", "    {v} = 1", "    {v}  ", "    {v!s}", "{v:4}"):
        assert fill(template, v=value) == template.format(v=value)
    assert fill("    {v}", v=value) == "    p\n    q"


def test_block_values_are_not_formatted_again_and_fields_must_exist():
    assert fill("  {b}\n{a}", b="d = {}", a="{x}") == "  d = {}\n{x}"
    with pytest.raises(KeyError):
        fill("    {missing}\n", other=1)
    with pytest.raises(KeyError):
        fill("x = {missing}\n", other=1)


def test_empty_block_leaves_an_empty_line():
    assert fill("a\n    {b}\nc", b="") == "a\n\nc"
    assert fill("a\n    {b}\nc", b=[]) == "a\n\nc"


def test_cell_function():
    assert (
        cell_function("def tcell(i, j):", "v = i\ndd = 0")
        == "def tcell(i, j):\n    v = i\n    dd = 0\n    return v, dd\n"
    )


class _Scored(GridRecurrence):
    """Symbols, decisions and a min reduction: every part of the kernels' argument layout."""

    symbols = True
    decision_bits = 2
    reduce = "min"
    value_dtype = np.int32

    def shape(self):
        return (2, 2)

    @staticmethod
    def cell(i, j, up, left, diag, a, b):
        return min(up, left, diag), 0


def test_spec_lays_out_the_kernels_arguments():
    """Symbols first, then the user's data, the reduction's two slots, the overflow flag last."""
    sp = spec_of(_Scored)
    assert (sp.symbols, sp.reduce_slots, sp.flags, sp.outputs) == (2, 2, 1, 3)
    n_data = 2 + 1 + 3  # two symbol arrays, one of the user's own, slots and flag
    assert sp.user_args(n_data) == ", dat2, dat3, dat4, dat5"  # what tcell takes after the symbols
    assert sp.fn_args(n_data) == ", dat2"  # what cell and boundary receive
    assert sp.slots(n_data) == ("dat3", "dat4")
    assert sp.reduce_worst == np.iinfo(np.int32).max and sp.reduce_op == "<"
    assert sp.better("v", "b", "i", "bi", "j", "bj").startswith("v < b or (v == b")


def test_spec_is_made_once_per_class_and_values_only_has_its_own():
    assert spec_of(_Scored) is spec_of(_Scored)
    assert any(k.parts["cls"] is _Scored for k in family("recurrence.spec").built())
    vo = spec_of(type(values_only(_Scored())))
    assert vo is not spec_of(_Scored) and vo.flags == 0 and vo.drops_decisions and vo.outputs == 2
