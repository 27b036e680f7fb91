"""gpudp.checks: the one memory check and its one wording, every comparison it makes (the device's
is otherwise reached on a GPU only), and the one decision-overflow path."""

from __future__ import annotations

import numpy as np
import pytest

from gpudp.checks import cell_symbols, check_memory
from gpudp.errors import ContractError, InputError, decision_overflow

GIB = 2**30


def test_what_fits_passes(monkeypatch):
    monkeypatch.setattr("gpudp.checks.available_memory", lambda: 10 * GIB)
    check_memory("W", 10 * GIB, 3 * GIB, (3 * GIB, 8 * GIB), budget=GIB, in_budget=GIB)


def test_the_device_is_compared_first_and_named(monkeypatch):
    monkeypatch.setattr("gpudp.checks.available_memory", lambda: 0)  # never reached
    with pytest.raises(InputError) as err:
        check_memory("W's sweep", 1, 3 * GIB, (2 * GIB, 8 * GIB), device_parts=" (1.00 GiB of values)")
    assert err.value.field == "memory"
    assert str(err.value) == (
        f"memory: W's sweep (1.00 GiB of values): 3.00 GiB ({3 * GIB} bytes) of device memory needed; "
        "2.00 of 8.00 GiB are free"
    )


def test_host_memory_names_what_there_is(monkeypatch):
    monkeypatch.setattr("gpudp.checks.available_memory", lambda: GIB)
    monkeypatch.setattr("gpudp.checks.describe", lambda: "1.00 GiB available (OS 1.00 GiB)")
    with pytest.raises(
        InputError,
        match=r"^memory: W and more: 2\.00 GiB \(2147483648 bytes\) of host "
        r"memory needed; 1\.00 GiB available \(OS 1\.00 GiB\); give less$",
    ):
        check_memory("W", 2 * GIB, 2 * GIB, None, host_parts=" and more", advice="give less")


def test_the_budget_is_compared_before_the_memory(monkeypatch):
    monkeypatch.setattr("gpudp.checks.available_memory", lambda: 0)
    with pytest.raises(InputError, match=r"W: 2\.00 GiB .* over the memory budget of 1\.00 GiB; give more"):
        check_memory("W", 1, budget=GIB, in_budget=2 * GIB, advice="give more")


def test_a_clear_flag_is_no_error_and_a_set_one_names_the_cell():
    assert decision_overflow("R", np.zeros(4, np.int64), "i, j", 2) is None
    err = decision_overflow("R", np.array([3, 9, 1, 2, 5]), "i, j, k", 3)
    assert isinstance(err, ContractError)
    assert "R.cell returned the decision 9 at cell (i, j, k) = (1, 2, 5)" in str(err) and "3 cells" in str(
        err
    )


def test_symbols_are_widened_alike():
    class Rec:
        def row_symbols(self):
            return np.array([1, 2], np.uint8)

        def col_symbols(self):
            return np.array([], np.uint32)

    rows, cols = cell_symbols(Rec(), 2, 0)
    assert rows.dtype == np.int32 and cols.dtype == np.int64 and len(cols) == 1
    with pytest.raises(ContractError, match=r"Rec.row_symbols\(\) must be 1-D of length 3"):
        cell_symbols(Rec(), 3, 0)


def _grid(ret, bits=0):
    """A 2 x 3 grid whose cell returns ``ret(i, j)``."""
    from gpudp import GridRecurrence

    class Wrong(GridRecurrence):
        decision_bits = bits

        def shape(self):
            return (2, 3)

        @staticmethod
        def cell(i, j, up, left, diag):
            return ret(i, j)

        @staticmethod
        def back(i, j, d):
            return i - 1, j - 1

    return Wrong()


@pytest.mark.parametrize(
    "ret, bits, match",
    [
        (lambda i, j: "a", 0, r"Wrong\.cell returned 'a' \(str\) as the value at the first cell, \(0, 0\)"),
        (lambda i, j: None, 0, r"returned None \(NoneType\) as the value.*value_dtype int32"),
        (lambda i, j: [1], 0, r"returned \[1\] \(list\) as the value"),
        (lambda i, j: 1 + 2j, 0, r"\(complex\) as the value"),
        (lambda i, j: ("a", 0), 2, r"returned 'a' \(str\) as the value"),
        (lambda i, j: (1, 0.5), 2, r"returned 0\.5 \(float\) as the decision.*decision_bits = 2"),
        (lambda i, j: (1, "x"), 2, r"returned 'x' \(str\) as the decision"),
    ],
)
def test_a_cell_of_the_wrong_type_is_named_before_numba_sees_it(ret, bits, match):
    """The probe's call of ``cell`` in plain Python checks what it returns: a value that is no number,
    a decision that is no integer, is a ContractError naming the method, the cell and the fix (not
    numba's TypingError pointing into generated code)."""
    from gpudp import sweep

    with pytest.raises(ContractError, match=match):
        sweep(_grid(ret, bits), backend="cpu")


@pytest.mark.parametrize("value", [3, np.int16(3), np.float32(1.5), True, np.bool_(False), 2.5])
def test_numbers_of_any_kind_are_values(value):
    """Any real number converts to a float value_dtype; an integer type takes integers (a float
    there would be truncated without a word: refused, tests/test_cell_types.py)."""
    from gpudp.checks import check_return

    def cls(bits):
        own = type(_grid(None, bits))
        return (
            type("F", (own,), {"value_dtype": np.float64}) if isinstance(value, float | np.floating) else own
        )

    check_return(cls(0), value, "the first cell")  # no error: converted to value_dtype exactly
    check_return(cls(2), (value, np.uint8(3)), "the first cell")
