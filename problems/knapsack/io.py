"""Readers of 0/1 knapsack instances, shared by the knapsack solvers (branch and bound, DP).

Formats, chosen by the file's content (not its name; *Detection* below), or named by ``format=``:

- Pisinger-style text: ``n C`` on the first line, or ``n`` then ``C`` on two lines; then ``n`` lines
  ``p w`` (profit, weight); optionally one more line holding the ``n`` 0/1 values of a known optimal
  solution. Any line endings (LF, CRLF, CR); blank lines, ``#`` comment lines and surrounding spaces
  are ignored.
- CSV: a header naming the columns ``profit`` and ``weight`` (``p``/``w`` accepted) and an optional
  ``x`` column (a known solution); the capacity on a ``# capacity = C`` comment line or in a
  ``capacity`` column (its first non-empty cell).
- JSON: ``{"capacity": C, "profits": [...], "weights": [...], "solution": [...]?}``
  (``values`` is accepted for ``profits``; numbers may also be given as strings).
- Jooken text (the dataset of Jooken, Leyman & De Causmaecker, EJOR 301(3), 2022, files ``test.in``
  of github.com/JorikJooken/knapsackProblemInstances): ``n`` alone on the first line, then ``n``
  lines ``id profit weight``, then the capacity alone on the last line. The ids run consecutively
  from 0 (as the dataset's generator writes them) or from 1 (the repository's README example): a gap,
  a repeat or a different start is refused, since it means a lost, doubled or reordered line. Item
  ``i`` of the instance (and of the answer's 0/1 vector) is the ``i``-th item line, whatever the
  base. Nothing may follow the capacity.

Detection (:func:`parse_knapsack`, by the first line that is neither blank nor a ``#`` comment):
``{`` or ``[`` opens JSON; a comma makes a CSV header; otherwise the file is text, and the second
such line tells the two text formats apart: after a first line of one value, a line of three values
is a Jooken item (``id profit weight``), a line of one value Pisinger's capacity (Pisinger text has
no line of three values after ``n``: its item lines hold two). The one text both formats read is
``0`` then ``C`` (no items), and it means the same instance in both. ``format=`` (``--format``)
forces a format instead: ``pisinger``, ``csv``, ``json`` or ``jooken`` (``auto``: detected).

A UTF-8 byte-order mark is accepted; binary files, files over the input size limit and undecodable
bytes are refused (:func:`gpudp.inputs.read_text`).

Numbers (:func:`validate`)
--------------------------
Every number is read exactly, as a decimal: one whose value is an integer (``12``, ``-3``, ``1e5``,
``7.0``) is an integer and never passes through float64; any other (``0.5``, ``1e-3``) is a real,
rounded once to float64. ``nan``, ``inf`` and reals beyond the float64 range are refused.

- The profits are integers (an int64 array) when every profit is one, else reals (float64). The
  weights are integers when every weight is one (a fractional capacity is then rounded down: the
  same sets fit), else reals; the capacity follows the weights.
- Every integer must lie within ±(2^63 − 1). In a list holding reals, an integer must be exactly
  representable in float64 (every integer up to 2^53 is); otherwise it is refused rather than
  rounded. The solvers add their own limits on totals (docs/knapsack_bb.md, docs/knapsack_dp.md).
- Weights and the capacity must be ≥ 0; profits may be negative (such items are never taken).
- With integer weights, a capacity beyond int64 is accepted when it is at least the total weight
  Σw (every set fits): it is clamped to Σw, exactly, which leaves the same sets fitting and gives
  the solvers a capacity within int64. The capacity as given is kept in ``given_capacity``
  (:attr:`KnapsackInstance.stated_capacity`); the answer is checked against it too.

Feasibility and values (one definition, shared by the solvers and the checker)
------------------------------------------------------------------------------
Integer weights are exact: a set fits when its weight (a Python integer) is at most C.

Real weights have one tolerance, :func:`weight_tolerance` τ_w = ``REL_TOL·max(1, Σw)`` with
``REL_TOL`` = 1e-9 and Σw the float64 sum of all the weights: a set fits when its float64 weight is
at most ``C + τ_w``. The branch-and-bound solver uses ``C + τ_w`` as its capacity everywhere (which
items can be packed at all, the nodes, the bounds); :func:`solution_checker` accepts the same
``C + τ_w`` plus the rounding of a float64 sum of n terms (:func:`rounding_allowance`,
``(n + 16)·2^-51·(Σw + C)``), since the solver sums in its own order.

Integer profits are exact. Real profits have τ_p = :func:`value_tolerance` = ``REL_TOL·max(1,
Σ|p|)``: the value returned is within τ_p of the best value of the sets that fit, and the checker
accepts a claimed value within τ_p of the items' (correctly rounded) profit.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import math
import os
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction

import numpy as np

from gpudp.errors import CheckError, InputError
from gpudp.inputs import exact_in_float
from gpudp.solution import Solution

__all__ = [
    "KnapsackInstance",
    "read_knapsack",
    "parse_knapsack",
    "validate",
    "solution_checker",
    "checked_solution",
    "dantzig_bound",
    "fits",
    "weight_tolerance",
    "value_tolerance",
    "rounding_allowance",
    "REL_TOL",
    "INT64_MAX",
    "FORMATS",
]

#: the relative feasibility and value tolerance of real-valued data (see the module doc)
REL_TOL = 1e-9
INT64_MAX = 2**63 - 1
#: the largest integer float64 holds exactly along with all the smaller ones
FLOAT_EXACT = 2**53
#: integers with more decimal digits than this are refused before they are built (no huge numbers)
_MAX_DIGITS = 400
#: the formats :func:`parse_knapsack` reads (``auto``: detected from the content; the module doc)
FORMATS = ("auto", "pisinger", "csv", "json", "jooken")


@dataclass
class KnapsackInstance:
    profits: np.ndarray
    weights: np.ndarray
    capacity: int | float
    known_solution: np.ndarray | None = None
    name: str = ""
    #: the capacity as given, where :func:`validate` clamped it to the total weight (module doc)
    given_capacity: int | None = None

    @property
    def n(self) -> int:
        return len(self.profits)

    @property
    def integral(self) -> bool:
        return self.profits.dtype.kind in "iu" and self.weights.dtype.kind in "iu"

    @property
    def stated_capacity(self) -> int | float:
        """The capacity as the caller gave it (``capacity`` may be clamped to the total weight)."""
        return self.capacity if self.given_capacity is None else self.given_capacity


# --------------------------------------------------------------------------------------------
# Numbers, read exactly

_NUM = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INT = re.compile(r"[+-]?[0-9]+")


def _show(tok) -> str:
    s = str(tok)
    return repr(s if len(s) <= 40 else s[:20] + "..." + s[-10:])


def _from_decimal(d: Decimal, tok, field: str) -> int | float:
    if not d.is_finite():
        raise InputError(field, f"{_show(tok)} is not a finite number")
    if d.is_zero():
        return 0
    sign, digits, exp = d.as_tuple()
    if exp >= 0 or all(v == 0 for v in digits[exp:]):  # an integer, however it is written
        if d.adjusted() >= _MAX_DIGITS:
            raise InputError(field, f"{_show(tok)} is too large (integers must lie within ±(2^63 − 1))")
        return int(d)
    if d.adjusted() > 308:
        raise InputError(field, f"{_show(tok)} is not a finite float64 number (beyond ±1.8e308)")
    return float(d)


def _number(tok: str, field: str) -> int | float:
    """A number token, exactly: a Python int when its value is an integer, else a float64."""
    s = tok.strip()
    if _INT.fullmatch(s):
        if len(s.lstrip("+-").lstrip("0")) > _MAX_DIGITS:
            raise InputError(field, f"{_show(tok)} is too large (integers must lie within ±(2^63 − 1))")
        return int(s)
    if not _NUM.fullmatch(s):
        if s.lower().lstrip("+-") in ("nan", "inf", "infinity"):
            raise InputError(field, f"{_show(tok)} is not a finite number")
        raise InputError(field, f"{_show(tok)} is not a number")
    try:
        d = Decimal(s)
    except InvalidOperation:  # pragma: no cover - the pattern admits only valid decimals
        raise InputError(field, f"{_show(tok)} is not a number") from None
    return _from_decimal(d, tok, field)


def _scalar(v, field: str) -> int | float:
    """One value of any accepted type as an exact Python int (integral values) or a float."""
    if isinstance(v, bool | np.bool_):
        raise InputError(field, f"{v!r} is not a number")
    if isinstance(v, int | np.integer):
        return int(v)
    if isinstance(v, float | np.floating):
        f = float(v)
        if not math.isfinite(f):
            raise InputError(field, f"{v!r} is not a finite number")
        return int(f) if f == math.floor(f) else f
    if isinstance(v, Decimal):
        return _from_decimal(v, v, field)
    if isinstance(v, Fraction):
        if v.denominator == 1:
            return int(v)
        return _scalar(float(v), field)
    if isinstance(v, str):
        return _number(v, field)
    raise InputError(field, f"{_show(v)} is not a number")


def _fast_list(values: list) -> np.ndarray | None:
    """The common cases of :func:`_column` in bulk: Python ints within int64, or ints and floats all
    below 2^53 in magnitude (exact in float64); None for anything else (the exact path decides)."""
    if not values:
        return np.zeros(0, np.int64)
    types = set(map(type, values))
    try:
        if types == {int}:
            a = np.array(values, dtype=np.int64)
            return None if a.min() == np.iinfo(np.int64).min else a  # -2^63: the exact path refuses
        if types <= {int, float}:
            a = np.array(values, dtype=np.float64)
            if not np.all(np.isfinite(a)) or np.abs(a).max() >= 2.0**53:
                return None
            return a.astype(np.int64) if np.all(a == np.floor(a)) else a
    except (OverflowError, ValueError):
        return None
    return None


def _tokens(tokens: list[str], field: str) -> list:
    """Number tokens as Python numbers, exactly (:func:`_number`); in bulk where that is exact too.
    ``int()`` and ``float()`` accept a few spellings :func:`_number` does not (``1_000``, non-ASCII
    digits, ``nan``, ``inf``), so the bulk path is taken only for ASCII tokens without ``_``, and
    reals only when every value is finite, below 2^53 in magnitude and not all are integers (a real
    list, whose integers are then exact in float64)."""
    joined = "".join(tokens)
    if joined.isascii() and "_" not in joined:
        try:
            return list(map(int, tokens))
        except ValueError:
            pass
        try:
            fl = list(map(float, tokens))
        except ValueError:
            fl = None
        if fl:
            a = np.array(fl)
            if np.all(np.isfinite(a)) and np.abs(a).max() < 2.0**53 and not np.all(a == np.floor(a)):
                return fl
    out = []
    for i, t in enumerate(tokens):
        try:
            out.append(_number(t, field))
        except InputError as e:
            raise InputError(field, f"item {i}: {str(e).split(': ', 1)[1]}") from None
    return out


def _column(values, field: str) -> np.ndarray:
    """A list of numbers as an int64 array (all integers, each within ±(2^63 − 1)) or a float64
    array (some value is not an integer; every integer must then be exact in float64)."""
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise InputError(field, "must be a one-dimensional list of numbers")
        if values.dtype.kind == "i":
            a = values.astype(np.int64)
            if a.size and a.min() == np.iinfo(np.int64).min:
                raise InputError(
                    field, f"item {int(a.argmin())}: -2^63 is beyond the int64 range ±(2^63 − 1)"
                )
            return a
        if values.dtype.kind == "f":
            if values.size and not np.all(np.isfinite(values)):
                i = int(np.flatnonzero(~np.isfinite(values))[0])
                raise InputError(field, f"item {i}: {values[i]!r} is not a finite number")
            a = values.astype(np.float64)
            if not np.all(a == np.floor(a)):
                return a
            if a.size and np.abs(a).max() >= 2.0**63:
                i = int(np.abs(a).argmax())
                raise InputError(field, f"item {i}: {a[i]:.17g} is beyond the int64 range ±(2^63 − 1)")
            return a.astype(np.int64)
        values = values.tolist() if values.dtype.kind in "ub" else list(values)
    elif isinstance(values, str | bytes | dict) or not hasattr(values, "__iter__"):
        raise InputError(field, f"must be a list of numbers, got {type(values).__name__}")
    values = list(values)
    fast = _fast_list(values)
    if fast is not None:
        return fast
    out = []
    for i, v in enumerate(values):
        if isinstance(v, list | tuple | dict | np.ndarray):
            raise InputError(field, "must be a one-dimensional list of numbers")
        try:
            out.append(_scalar(v, field))
        except InputError as e:
            raise InputError(field, f"item {i}: {str(e).split(': ', 1)[1]}") from None
    if all(type(v) is int for v in out):
        for i, v in enumerate(out):
            if not -INT64_MAX <= v <= INT64_MAX:
                raise InputError(
                    field,
                    f"item {i}: {_show(v)} is beyond the int64 range ±(2^63 − 1) (integers are kept exact)",
                )
        return np.array(out, dtype=np.int64) if out else np.zeros(0, np.int64)
    for i, v in enumerate(out):
        if type(v) is int and not exact_in_float(v):
            raise InputError(
                field,
                f"item {i}: the integer {_show(v)} is not exactly representable in float64 (above 2^53) "
                "and the list also holds reals: give every value as an integer, or round it",
            )
    return np.array([float(v) for v in out], dtype=np.float64)


def _capacity(capacity, integer_weights: bool) -> int | float:
    if isinstance(capacity, list | tuple | dict | np.ndarray) and np.ndim(capacity) != 0:
        raise InputError("capacity", f"must be one number, got {_show(capacity)}")
    if isinstance(capacity, np.ndarray):
        capacity = capacity.item()
    c = _scalar(capacity, "capacity")
    if c < 0:
        raise InputError("capacity", f"must be >= 0, got {_show(capacity)}")
    if integer_weights:  # the same sets fit; validate() clamps it to the total weight
        return int(math.floor(c)) if type(c) is float else c
    if type(c) is int and not exact_in_float(c):
        raise InputError(
            "capacity",
            f"the integer {_show(c)} is not exactly representable in float64 (above 2^53) and the weights "
            "are reals",
        )
    return float(c)


# --------------------------------------------------------------------------------------------
# Tolerances and the check (one definition; see the module doc)


def weight_tolerance(weights) -> float:
    """τ_w: 0 for integer weights, else ``REL_TOL·max(1, Σw)`` (the float64 sum of all weights)."""
    w = np.asarray(weights)
    if w.dtype.kind in "iub":
        return 0.0
    return REL_TOL * max(1.0, math.fsum(w.tolist()))


def value_tolerance(profits) -> float:
    """τ_p: 0 for integer profits, else ``REL_TOL·max(1, Σ|p|)``."""
    p = np.asarray(profits)
    if p.dtype.kind in "iub":
        return 0.0
    return REL_TOL * max(1.0, math.fsum(np.abs(p).tolist()))


def rounding_allowance(weights, capacity) -> float:
    """What the check allows on top of ``C + τ_w`` for real weights: the rounding of a float64 sum
    of n terms in any order, ``(n + 16)·2^-51·(Σw + C)``; 0 for integer weights."""
    w = np.asarray(weights)
    if w.dtype.kind in "iub":
        return 0.0
    return (len(w) + 16) * 2.0**-51 * (math.fsum(w.tolist()) + float(capacity))


def fits(weights, selected, capacity) -> tuple[bool, int | float, int | float]:
    """Whether the items ``selected`` (indices) fit: (fits, their weight, the limit it is held to).
    Integer weights exactly (Python integers); real ones by the definition in the module doc."""
    w = np.asarray(weights)
    if w.dtype.kind in "iub":
        total = sum(int(w[i]) for i in selected)
        return total <= capacity, total, capacity
    total = math.fsum(float(w[i]) for i in selected)
    limit = float(capacity) + weight_tolerance(w) + rounding_allowance(w, capacity)
    return total <= limit, total, limit


def validate(profits, weights, capacity, known_solution=None, name: str = "") -> KnapsackInstance:
    """Check an instance and return it with exact arrays (see the module doc, *Numbers*).

    Raises :class:`gpudp.InputError` naming the field: lengths that differ, negative weights,
    negative or non-finite capacity, non-numbers, integers beyond int64 or that float64 would round,
    a solution that is not 0/1 or too heavy.
    """
    p = _column(profits, "profits")
    w = _column(weights, "weights")
    if len(p) != len(w):
        raise InputError("weights", f"{len(w)} weights for {len(p)} profits")
    if w.size and w.min() < 0:
        i = int(w.argmin())
        raise InputError("weights", f"weight {w[i]} of item {i} is negative")
    c = _capacity(capacity, w.dtype.kind == "i")
    given = None
    if w.dtype.kind == "i" and c > INT64_MAX:
        total = sum(w.tolist())  # exact
        if c > total:  # every set fits: the same sets under Σw, a capacity within int64
            given, c = c, total
        if c > INT64_MAX:
            raise InputError(
                "capacity",
                f"{_show(capacity)} is beyond the int64 range (at most 2^63 − 1) and below the total "
                f"weight {_show(total)[1:-1]}",
            )
    if p.dtype.kind == "f" and not math.isfinite(math.fsum(np.abs(p).tolist())):
        raise InputError("profits", "the profits' magnitudes sum past the float64 range")
    if w.dtype.kind == "f" and not math.isfinite(math.fsum(w.tolist()) + c):
        raise InputError("weights", "the weights and the capacity sum past the float64 range")
    x = None
    if known_solution is not None:
        xs = _column(known_solution, "solution")
        if xs.shape != (len(p),) or not np.all((xs == 0) | (xs == 1)):
            raise InputError("solution", f"must be {len(p)} values 0 or 1")
        x = xs.astype(np.int8)
        ok, total, _ = fits(w, np.flatnonzero(x == 1), c)
        if not ok:
            raise InputError("solution", f"the known solution weighs {total}, more than the capacity {c}")
    return KnapsackInstance(p, w, c, x, name, given)


def solution_checker(profits, weights, capacity, integral: bool | None = None):
    """The check of a knapsack :class:`gpudp.Solution` (shared by the DP and the B&B solvers): a 0/1
    vector of the right length, within the capacity (:func:`fits`) and worth the claimed value.
    Integer profits are summed exactly (Python integers) and must equal the claim; real ones are
    summed correctly rounded (``math.fsum``) and must be within :func:`value_tolerance` of it.
    ``integral`` is ignored (the arrays' types decide); it is kept for callers that pass it."""
    profits, weights = np.asarray(profits), np.asarray(weights)

    def check(sol):
        x = np.asarray(sol.solution)
        if x.shape != (len(profits),) or not np.all((x == 0) | (x == 1)):
            return f"solution must be {len(profits)} values 0 or 1"
        sel = np.flatnonzero(x == 1)
        ok, wsum, limit = fits(weights, sel, capacity)
        if not ok:
            return f"weight {wsum} exceeds the capacity {capacity} (limit {limit})"
        if profits.dtype.kind in "iub":
            psum = sum(int(profits[i]) for i in sel)
            wrong = psum != sol.value
        else:
            psum = math.fsum(float(profits[i]) for i in sel)
            wrong = not abs(psum - sol.value) <= value_tolerance(profits)
        if wrong:
            return f"the items' profit is {psum}, not the claimed {sol.value}"
        return None

    return check


def checked_solution(p, w, c, x, value, stats, details, optimal=True, claimed=None):
    """The knapsack :class:`gpudp.Solution` of the 0/1 vector ``x`` worth ``value``, checked against
    the instance (:func:`solution_checker`); ``claimed``: the value the search itself found for those
    items (integer data), which the rebuilt items must attain (else an internal error, never an
    answer)."""
    check = solution_checker(p, w, c)
    sol = Solution("knapsack", value, x, stats=stats, optimal=optimal, details=details, checker=check)
    sol.check()
    if claimed is not None and value != claimed:
        raise CheckError(f"internal: the rebuilt items are worth {value}, not the search's {claimed}")
    return sol


def dantzig_bound(profits, weights, capacity: int) -> int:
    """Dantzig's bound for integer items of positive weight and profit: the greedy prefix in exact
    efficiency order, then the fraction of the break item that fills the rest, rounded down. Every
    packing of these items within ``capacity`` is worth at most this (the LP relaxation's optimum).
    Exact (Python integers, the order by cross products)."""
    ws, ps = [int(v) for v in weights], [int(v) for v in profits]
    order = sorted(range(len(ws)), key=functools.cmp_to_key(lambda i, j: ps[j] * ws[i] - ps[i] * ws[j]))
    rest, bound = int(capacity), 0
    for k in order:
        if ws[k] > rest:
            return bound + ps[k] * rest // ws[k]
        rest -= ws[k]
        bound += ps[k]
    return bound


# --------------------------------------------------------------------------------------------
# Formats


def _content_lines(text: str) -> list[list[str]]:
    """The lines of ``text`` split into tokens, without blank and ``#`` comment lines."""
    return [t for t in map(str.split, text.splitlines()) if t and t[0][0] != "#"]


def _first_content_line(text: str) -> str:
    for ln in text.splitlines():
        s = ln.strip()
        if s and not s.startswith("#"):
            return s
    return ""


def _parse_text(text: str, name: str, detect: bool = True) -> KnapsackInstance:
    """Pisinger text, or (``detect``) Jooken text where the line after a lone ``n`` holds three
    values (the module doc, *Detection*)."""
    lines = _content_lines(text)
    if not lines:
        raise InputError("n", "empty: no instance (expected Pisinger text, Jooken text, CSV or JSON)")
    head = lines[0]
    tried = (
        "not Pisinger text ('n C'), Jooken text ('n', then 'id profit weight' lines), CSV (a header "
        "with commas) or JSON (an object)"
        if detect
        else "not Pisinger text ('n C', or 'n' then 'C')"
    ) + f": the first line is {' '.join(head)[:80]!r}"
    if not all(_NUM.fullmatch(t) or t.lower().lstrip("+-") in ("nan", "inf", "infinity") for t in head):
        raise InputError("n", tried)
    if len(head) == 2:
        n_tok, c_tok, rest = head[0], head[1], lines[1:]
    elif len(head) == 1:
        if detect and len(lines) > 1 and len(lines[1]) == 3:
            return _parse_jooken_lines(lines, name)
        if len(lines) < 2 or len(lines[1]) != 1:
            hint = ""
            if len(lines) > 1 and len(lines[1]) == 3:
                hint = (
                    " (a line of three values follows n: Jooken text's 'id profit weight'? --format jooken)"
                )
            raise InputError("capacity", f"expected the capacity on the line after n{hint}")
        n_tok, c_tok, rest = head[0], lines[1][0], lines[2:]
    else:
        raise InputError("n", tried)
    n = _item_count(n_tok)
    cap = _number(c_tok, "capacity")
    if len(rest) < n:
        raise InputError("items", f"n = {_show(n)[1:-1]} but only {len(rest)} item lines follow")
    items = rest[:n]
    for i, ln in enumerate(items):
        if len(ln) != 2:
            raise InputError(
                "items", f"item line {i + 1} must hold 'profit weight', got {' '.join(ln)[:80]!r}"
            )
    p = _tokens([ln[0] for ln in items], "profits")
    w = _tokens([ln[1] for ln in items], "weights")
    tail = [tok for ln in rest[n:] for tok in ln]
    x = None
    if tail:
        if len(tail) != n:
            raise InputError(
                "solution",
                f"after the {n} items, {len(tail)} more values follow; expected none or a solution line "
                f"of n = {n} values 0/1",
            )
        x = _tokens(tail, "solution")
    return validate(p, w, cap, x, name)


def _item_count(tok: str) -> int:
    n = _number(tok, "n")
    if type(n) is not int or n < 0:
        raise InputError("n", f"must be a non-negative integer, got {_show(tok)}")
    return n


def _parse_jooken_lines(lines: list[list[str]], name: str) -> KnapsackInstance:
    """Jooken text from its content lines (the module doc): ``n``; ``n`` lines ``id profit weight``,
    the ids consecutive from 0 or 1; the capacity, last."""
    if not lines:
        raise InputError("n", "empty: no instance (expected Jooken text: n, then 'id profit weight' lines)")
    if len(lines[0]) != 1:
        raise InputError(
            "n", f"Jooken text starts with n alone on its first line, got {' '.join(lines[0])[:80]!r}"
        )
    n = _item_count(lines[0][0])
    body = lines[1:]
    if len(body) < n:  # refused before anything of size n is built
        k = next((i for i, ln in enumerate(body) if len(ln) != 3), len(body))
        raise InputError("items", f"n = {n} but only {k} item lines follow")
    items, rest = body[:n], body[n:]
    for i, ln in enumerate(items):
        if len(ln) != 3:
            got = " ".join(ln)[:80]
            if len(ln) == 1 and i == len(body) - 1:
                raise InputError(
                    "items", f"n = {n} but only {i} item lines precede the capacity line {got!r}"
                )
            raise InputError("items", f"item line {i + 1} must hold 'id profit weight', got {got!r}")
    if not rest:
        raise InputError("capacity", f"missing: expected the capacity alone on the line after the {n} items")
    if len(rest[0]) != 1:
        more = " (more item lines than n?)" if len(rest[0]) == 3 else ""
        raise InputError(
            "capacity",
            f"expected the capacity alone on the line after the {n} items, got {' '.join(rest[0])[:80]!r}"
            f"{more}",
        )
    if len(rest) > 1:
        raise InputError(
            "capacity",
            f"the capacity ends Jooken text, but {len(rest) - 1} more lines follow it "
            f"(the first: {' '.join(rest[1])[:80]!r})",
        )
    ids = _tokens([ln[0] for ln in items], "ids")
    if any(type(v) is not int for v in ids):  # a real among them: each as itself, for the message
        ids = [_number(ln[0], "ids") for ln in items]
    _check_ids(ids)
    p = _tokens([ln[1] for ln in items], "profits")
    w = _tokens([ln[2] for ln in items], "weights")
    return validate(p, w, _number(rest[0][0], "capacity"), None, name)


def _check_ids(ids: list) -> None:
    """Jooken ids run 0, 1, ... or 1, 2, ..., one a line in order (the module doc)."""
    base = ids[0] if ids else 0
    if type(base) is not int or base not in (0, 1):
        raise InputError(
            "ids",
            f"the first item's id is {_show(base)[1:-1]}: Jooken text numbers its items from 0 (as the "
            "dataset's generator writes them) or from 1, one a line in order",
        )
    for i, v in enumerate(ids):
        if type(v) is int and v == base + i:
            continue
        shown = _show(v)[1:-1]
        if type(v) is int and v in ids[:i]:
            raise InputError(
                "ids", f"item line {i + 1} has id {shown}, the same as item line {ids.index(v) + 1}"
            )
        raise InputError(
            "ids",
            f"item line {i + 1} has id {shown} where {base + i} was expected: the ids run consecutively "
            f"from {base}, one a line (a line lost, added or out of order?)",
        )


def _json_int(s: str):
    return int(s) if len(s) <= 19 else Decimal(s)  # no int() of thousands of digits


def _json_float(s: str):
    f = float(s)
    return f if abs(f) < 2.0**53 else Decimal(s)  # float64 may round it: keep it exact


#: how deep a knapsack JSON may nest (it needs 2: an object of lists); deeper text is refused before
#: json.loads, whose C decoder recurses once per level (a high recursion limit would let it overflow
#: the C stack)
JSON_MAX_DEPTH = 32


def _json_depth(text: str) -> int:
    b = np.frombuffer(text.encode("utf-8", "surrogatepass"), np.uint8)
    step = (b == ord("[")).astype(np.int32) + (b == ord("{")) - (b == ord("]")) - (b == ord("}"))
    return int(np.cumsum(step).max(initial=0))


def _parse_json(text: str, name: str) -> KnapsackInstance:
    if _json_depth(text) > JSON_MAX_DEPTH:
        raise InputError("json", f"nested more than {JSON_MAX_DEPTH} levels deep: not a knapsack instance")
    try:
        d = json.loads(text, parse_float=_json_float, parse_int=_json_int, parse_constant=float)
    except ValueError as e:  # JSONDecodeError, or a number Decimal refuses
        raise InputError("json", f"not valid JSON: {str(e)[:200]}") from None
    except RecursionError:
        raise InputError("json", "nested too deeply") from None
    if not isinstance(d, dict):
        raise InputError("json", "expected an object with capacity, profits and weights")
    profits = d.get("profits", d.get("values"))
    for key, val in (("capacity", d.get("capacity")), ("profits", profits), ("weights", d.get("weights"))):
        if val is None:
            raise InputError(key, "missing from the JSON object")
    nm = d.get("name", name)
    return validate(
        profits, d["weights"], d["capacity"], d.get("solution"), nm if isinstance(nm, str) else name
    )


def _parse_csv(text: str, name: str) -> KnapsackInstance:
    cap = None
    body = []
    for ln in text.splitlines():
        s = ln.strip()
        if s.startswith("#"):
            key, _, val = s[1:].partition("=")
            if key.strip().lower() == "capacity":
                cap = _number(val.strip(), "capacity")
            continue
        if s:
            body.append(s)
    try:
        rows = list(csv.reader(io.StringIO("\n".join(body))))
    except csv.Error as e:
        raise InputError("csv", f"not valid CSV: {e}") from None
    if not rows:
        raise InputError("csv", "no header row")
    header = [h.strip().lower() for h in rows[0]]

    def col(*names):
        for nm in names:
            if nm in header:
                return header.index(nm)
        return None

    ip, iw, ix, ic = (
        col("profit", "profits", "p", "value", "values"),
        col("weight", "weights", "w"),
        col("x", "solution"),
        col("capacity", "c"),
    )
    shown = ",".join(rows[0])[:80]
    if ip is None:
        raise InputError("profits", f"CSV header {shown!r} has no profit column (profit, p or value)")
    if iw is None:
        raise InputError("weights", f"CSV header {shown!r} has no weight column (weight or w)")
    data = rows[1:]
    if cap is None and ic is not None:
        cells = [r[ic] for r in data if len(r) > ic and r[ic].strip()]
        cap = _number(cells[0], "capacity") if cells else None
    if cap is None:
        raise InputError("capacity", "give it as '# capacity = C' or in a capacity column")
    for k, r in enumerate(data):
        if len(r) <= max(ip, iw, ix if ix is not None else 0):
            raise InputError("csv", f"row {k + 1} has fewer cells than the header: {','.join(r)[:80]!r}")
    p = _tokens([r[ip].strip() for r in data], "profits")
    w = _tokens([r[iw].strip() for r in data], "weights")
    x = _tokens([r[ix].strip() for r in data], "solution") if ix is not None else None
    return validate(p, w, cap, x, name)


def parse_knapsack(text: str | bytes, name: str = "", format: str = "auto") -> KnapsackInstance:
    """Parse an instance from text in any of the formats above, detected from its content (the module
    doc, *Detection*: JSON, CSV, else text, Pisinger or Jooken; the errors of text that is none of
    them say which formats were tried), or forced by ``format`` (one of :data:`FORMATS`). ``bytes``
    are read as UTF-8 text, as a file's are; bytes that are not UTF-8, or anything but text, are an
    :class:`~gpudp.InputError` naming ``text``."""
    if format not in FORMATS:
        raise InputError("format", f"must be one of {', '.join(FORMATS)}, not {format!r}")
    if isinstance(text, bytes | bytearray | memoryview):
        raw = bytes(text)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            bad = raw[e.start : e.start + 1]
            raise InputError("text", f"not UTF-8 text (byte {e.start} is {bad!r})") from None
    if not isinstance(text, str):
        raise InputError("text", f"must be str or bytes, got {type(text).__name__}")
    if text.startswith("\ufeff"):
        text = text[1:]
    if format == "auto":
        if text.lstrip().startswith(("{", "[")):
            format = "json"
        elif "," in _first_content_line(text):
            format = "csv"
        else:
            return _parse_text(text, name)
    if format == "json":
        return _parse_json(text, name)
    if format == "csv":
        return _parse_csv(text, name)
    if format == "jooken":
        return _parse_jooken_lines(_content_lines(text), name)
    return _parse_text(text, name, detect=False)


def read_knapsack(path, format: str = "auto") -> KnapsackInstance:
    """Read an instance file (Pisinger text, Jooken text, CSV or JSON, detected or forced by
    ``format``; see the module doc). ``.gz`` files are decompressed; every failure is an
    :class:`~gpudp.InputError`."""
    from gpudp.inputs import read_text

    if format not in FORMATS:  # before the file is read
        raise InputError("format", f"must be one of {', '.join(FORMATS)}, not {format!r}")
    text = read_text(path, "knapsack file")
    return parse_knapsack(text, os.path.basename(str(path)), format)
