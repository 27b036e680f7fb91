"""The int32 rewrite's two claims (gpudp.recurrence.narrow), on random cell programs: for inputs
within the bound it proves, the rewritten cell returns exactly what the cell as written returns;
and what the cell as written returns is within the bound its value forms give (at most one input
plus a constant, or a constant). Together they are the induction that makes a narrow sweep exact.

Each program is a module written to a temporary file (the analysis reads the source), compiled with
numba's ``njit`` twice (as written, and rewritten), and run on random inputs up to the bound."""

from __future__ import annotations

import importlib.util
import itertools
import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numba import njit

from gpudp.recurrence.narrow import LIMIT, narrow_source

_COUNT = itertools.count()

LEAVES = ["up", "left", "diag", "s0", "d0[(i + j) % 4]", "1", "2", "7", "NEG"]


@st.composite
def expr(draw, names, depth=0):
    if depth > 2 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(LEAVES + names))
    kind = draw(st.sampled_from(["+", "-", "*c", "max", "min", "abs", "if", "neg"]))
    a = draw(expr(names, depth + 1))
    b = draw(expr(names, depth + 1))
    if kind in "+-":
        return f"({a} {kind} {b})"
    if kind == "*c":
        return f"({draw(st.sampled_from(['2', '3', '-1']))} * {a})"
    if kind in ("max", "min"):
        return f"{kind}({a}, {b})"
    if kind == "abs":
        return f"abs({a})"
    if kind == "neg":
        return f"(-{a})"
    return f"({a} if {a} > {b} else {b})"


@st.composite
def program(draw):
    lines, names = [], []
    for k in range(draw(st.integers(0, 3))):
        e = draw(expr(names))
        how = draw(st.sampled_from(["assign", "if", "loop"])) if names else "assign"
        if how == "if":
            lines.append(f"    if {draw(expr(names))} > {draw(expr(names))}:")
            lines.append(f"        {names[-1]} = {e}")
        elif how == "loop":  # a variable updated around a loop (it may grow: then left wide)
            lines.append(f"    for t in range({draw(st.integers(0, 3))}):")
            lines.append(f"        {names[-1]} = {e}")
        else:
            lines.append(f"    x{k} = {e}")
            names.append(f"x{k}")
    ret = draw(expr(names))
    return "\n".join(lines), ret


MODULE = """
import numpy as np
from gpudp import GridRecurrence

NEG = -(1 << 20)


class Cell(GridRecurrence):
    value_dtype = np.int32

    @staticmethod
    def cell(i, j, up, left, diag, d0, s0):
{body}
        return {ret}
"""


def _load(tmp_path, body: str, ret: str):
    src = MODULE.format(body="\n".join("    " + line for line in body.splitlines()), ret=ret)
    path = tmp_path / f"narrow_fuzz_{next(_COUNT)}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.Cell


def _out_bound(nar, mags: dict, b: int) -> int:
    """The largest value the cell's value forms allow when every input is within ``b``."""
    worst = 0
    for bound in nar.values:
        for form in bound:
            total = 0
            for term, c in form:
                total += c * (b if term == "B" else math.prod(mags[x] for x in term.split("*")))
            worst = max(worst, total)
    return worst


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prog=program(), scale=st.sampled_from([1, 100, 1 << 12, 1 << 20]), seed=st.integers(0, 2**16))
def test_random_cells_keep_the_analysis_claims(tmp_path, prog, scale, seed):
    body, ret = prog
    cls = _load(tmp_path, body, ret)
    nar = narrow_source(cls, ("A", "S"))
    if nar is None:
        return  # nothing rewritten, or nothing proven: runs as written
    rng = np.random.default_rng(seed)
    d0 = rng.integers(-scale, scale + 1, 4).astype(np.int16 if scale < 1 << 15 else np.int32)
    s0 = np.int32(rng.integers(-scale, scale + 1))
    rows = cols = 64
    v = nar.proven((d0, s0), rows, cols, [0], rows + cols)
    if v is None:
        return
    mags = {"D0": max(abs(int(d0.max())), abs(int(d0.min()))), "D1": abs(int(s0)), "1": 1}
    mags.update({"I": rows + rows + cols, "J": cols + rows + cols})
    wide, narrow = njit(cls.cell), njit(nar.cell)
    edges = [0, 1, -1, v, -v, v // 2, -(v // 2)]
    for _ in range(30):
        i, j = (int(x) for x in rng.integers(0, rows, 2))
        deps = [np.int32(rng.choice(edges) if rng.random() < 0.5 else rng.integers(-v, v + 1)) for _ in "abc"]
        want = wide(i, j, *deps, d0, s0)
        got = narrow(i, j, *deps, d0, s0)
        assert int(got) == int(want), (body, ret, i, j, deps, want, got)
        # what the cell as written returns is within its value forms at these inputs
        most = _out_bound(nar, mags, max(abs(int(x)) for x in deps))
        assert abs(int(want)) <= most, (body, ret, deps, want, most)
        assert abs(int(want)) <= LIMIT
