"""Readers of 0/1 knapsack instances, shared by the knapsack solvers (branch and bound, DP).

Formats, chosen by the file's content (not its name):

- Pisinger-style text: ``n C`` on the first line, or ``n`` then ``C`` on two lines; then ``n`` lines
  ``p w`` (profit, weight); optionally one more line holding the ``n`` 0/1 values of a known optimal
  solution. Any line endings (LF, CRLF, CR); blank lines and surrounding spaces are ignored.
- CSV: a header naming the columns ``profit`` and ``weight`` (``p``/``w`` accepted) and an optional
  ``x`` column (a known solution); the capacity on a ``# capacity = C`` comment line or in a
  ``capacity`` column (its first non-empty cell).
- JSON: ``{"capacity": C, "profits": [...], "weights": [...], "solution": [...]?}``
  (``values`` is accepted for ``profits``).

Numbers may be integers or reals; :func:`read_knapsack` returns integer arrays when every number is
integral and float64 arrays otherwise.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from dataclasses import dataclass

import numpy as np

from gpudp.errors import InputError

__all__ = ["KnapsackInstance", "read_knapsack", "parse_knapsack", "validate", "solution_checker"]


@dataclass
class KnapsackInstance:
    profits: np.ndarray
    weights: np.ndarray
    capacity: int | float
    known_solution: np.ndarray | None = None
    name: str = ""

    @property
    def n(self) -> int:
        return len(self.profits)

    @property
    def integral(self) -> bool:
        return self.profits.dtype.kind == "i" and self.weights.dtype.kind == "i"


def _number(tok: str, field: str) -> float:
    try:
        v = float(tok)
    except ValueError:
        raise InputError(field, f"{tok!r} is not a number") from None
    if not math.isfinite(v):
        raise InputError(field, f"{tok!r} is not a finite number")
    return v


def _as_array(values, field: str) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64)
    if a.ndim != 1:
        raise InputError(field, "must be a one-dimensional list of numbers")
    if a.size and not np.all(np.isfinite(a)):
        raise InputError(field, "holds a value that is not a finite number")
    return a


def validate(profits, weights, capacity, known_solution=None, name: str = "") -> KnapsackInstance:
    """Check an instance and return it with integer arrays when all data are integral.

    Raises :class:`gpudp.InputError` naming the field: lengths that differ, negative weights,
    negative or non-finite capacity, non-numbers, a solution that is not 0/1 or too heavy.
    """
    try:
        p = _as_array(profits, "profits")
        w = _as_array(weights, "weights")
    except (TypeError, ValueError) as e:
        if isinstance(e, InputError):
            raise
        raise InputError("profits/weights", f"not numeric: {e}") from None
    if len(p) != len(w):
        raise InputError("weights", f"{len(w)} weights for {len(p)} profits")
    if w.size and w.min() < 0:
        raise InputError("weights", f"weight {w.min()} of item {int(w.argmin())} is negative")
    try:
        c = float(capacity)
    except (TypeError, ValueError):
        raise InputError("capacity", f"{capacity!r} is not a number") from None
    if not math.isfinite(c) or c < 0:
        raise InputError("capacity", f"must be a finite number >= 0, got {capacity!r}")
    integral = bool(np.all(p == np.round(p)) and np.all(w == np.round(w)) and c == round(c))
    big = 2.0**62
    if integral and (np.abs(p).sum() >= big or w.sum() >= big or c >= big):
        integral = False
    if integral:
        p, w, c = p.astype(np.int64), w.astype(np.int64), int(c)
    x = None
    if known_solution is not None:
        x = np.asarray(known_solution)
        if x.shape != (len(p),) or not np.all((x == 0) | (x == 1)):
            raise InputError("solution", f"must be {len(p)} values 0 or 1")
        x = x.astype(np.int8)
        if float(w[x == 1].sum()) > c:
            raise InputError("solution", "the known solution exceeds the capacity")
    return KnapsackInstance(p, w, c, x, name)


def _parse_text(text: str, name: str) -> KnapsackInstance:
    lines = [ln.split() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln]
    if not lines:
        raise InputError("n", "empty file")
    head = lines[0]
    if len(head) == 2:
        n_tok, c_tok, rest = head[0], head[1], lines[1:]
    elif len(head) == 1:
        if len(lines) < 2 or len(lines[1]) != 1:
            raise InputError("capacity", "expected the capacity on the line after n")
        n_tok, c_tok, rest = head[0], lines[1][0], lines[2:]
    else:
        raise InputError("n", f"first line must be 'n C' or 'n', got {' '.join(head)!r}")
    nf = _number(n_tok, "n")
    if nf != int(nf) or nf < 0:
        raise InputError("n", f"must be a non-negative integer, got {n_tok!r}")
    n = int(nf)
    cap = _number(c_tok, "capacity")
    if len(rest) < n:
        raise InputError("items", f"n = {n} but only {len(rest)} item lines follow")
    p = np.empty(n)
    w = np.empty(n)
    for i, ln in enumerate(rest[:n]):
        if len(ln) != 2:
            raise InputError("items", f"item line {i + 1} must hold 'profit weight', got {' '.join(ln)!r}")
        p[i] = _number(ln[0], "profits")
        w[i] = _number(ln[1], "weights")
    tail = [tok for ln in rest[n:] for tok in ln]
    x = None
    if tail:
        if len(tail) != n:
            raise InputError("solution", f"trailing line holds {len(tail)} values, expected n = {n}")
        x = np.array([_number(t, "solution") for t in tail])
    return validate(p, w, cap, x, name)


def _parse_json(text: str, name: str) -> KnapsackInstance:
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError("json", f"not valid JSON: {e}") from None
    if not isinstance(d, dict):
        raise InputError("json", "expected an object with capacity, profits and weights")
    profits = d.get("profits", d.get("values"))
    for key, val in (("capacity", d.get("capacity")), ("profits", profits), ("weights", d.get("weights"))):
        if val is None:
            raise InputError(key, "missing from the JSON object")
    return validate(profits, d["weights"], d["capacity"], d.get("solution"), d.get("name", name))


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
    rows = list(csv.reader(io.StringIO("\n".join(body))))
    if not rows:
        raise InputError("csv", "no header row")
    header = [h.strip().lower() for h in rows[0]]

    def col(*names):
        for nm in names:
            if nm in header:
                return header.index(nm)
        return None

    ip, iw, ix, ic = (
        col("profit", "profits", "p", "value"),
        col("weight", "weights", "w"),
        col("x"),
        col("capacity"),
    )
    if ip is None:
        raise InputError("profits", "CSV header has no profit column")
    if iw is None:
        raise InputError("weights", "CSV header has no weight column")
    data = rows[1:]
    if cap is None and ic is not None:
        cells = [r[ic] for r in data if len(r) > ic and r[ic].strip()]
        cap = _number(cells[0], "capacity") if cells else None
    if cap is None:
        raise InputError("capacity", "give it as '# capacity = C' or in a capacity column")
    try:
        p = [_number(r[ip], "profits") for r in data]
        w = [_number(r[iw], "weights") for r in data]
        x = [_number(r[ix], "solution") for r in data] if ix is not None else None
    except IndexError:
        raise InputError("csv", "a row has fewer cells than the header") from None
    return validate(p, w, cap, x, name)


def parse_knapsack(text: str, name: str = "") -> KnapsackInstance:
    """Parse an instance from text in any of the formats above."""
    s = text.lstrip()
    if s.startswith(("{", "[")):
        return _parse_json(text, name)
    first = s.splitlines()[0] if s else ""
    if "," in first or first.startswith("#"):
        return _parse_csv(text, name)
    return _parse_text(text, name)


def read_knapsack(path) -> KnapsackInstance:
    """Read an instance file (Pisinger text, CSV or JSON; see the module doc)."""
    with open(path, newline="") as f:
        text = f.read()
    return parse_knapsack(text, os.path.basename(str(path)))


def solution_checker(profits, weights, capacity, integral: bool):
    """The check of a knapsack :class:`gpudp.Solution` (shared by the DP and the B&B solvers): a 0/1
    vector of the right length, within the capacity and worth the claimed value. Integer weights
    and, with ``integral``, profits are summed exactly (Python integers); real ones to a relative
    1e-9 of their total."""

    def check(sol):
        x = np.asarray(sol.solution)
        if x.shape != (len(profits),) or not np.all((x == 0) | (x == 1)):
            return f"solution must be {len(profits)} values 0 or 1"
        sel = np.flatnonzero(x == 1)
        if weights.dtype.kind in "iub":
            wsum, wtol = sum(int(weights[i]) for i in sel), 0
        else:
            wsum, wtol = weights[sel].sum(), 1e-9 * max(1.0, float(np.abs(weights).sum()))
        if wsum > capacity + wtol:
            return f"weight {wsum} exceeds the capacity {capacity}"
        if integral:
            psum = sum(int(profits[i]) for i in sel)
            wrong = psum != sol.value
        else:
            psum = float(np.sum(profits[sel], dtype=np.float64))
            wrong = abs(psum - sol.value) > 1e-9 * max(1.0, float(np.abs(profits).sum()))
        if wrong:
            return f"the items' profit is {psum}, not the claimed {sol.value}"
        return None

    return check
