"""The blocks of a traceback from checkpoints (:mod:`gpudp.checkpoints`), and what its rounds
compile: which blocks a round sweeps (:func:`band`), the grid's boundary values around them
(:func:`edge_filler`), the walk of ``back`` through a round's blocks (:func:`block_walker`), and the
grid recurrence of one block (:func:`block_class`), which the backends sweep again from the
checkpoints around it."""

from __future__ import annotations

import math

import numpy as np
from numba.extending import register_jitable

from .. import values
from ..codegen import block_decision, compile_source, data_args, fill, spec_of, walk_form
from ..errors import ContractError
from ..kernel import KernelFactory
from ..recurrence import GridRecurrence

__all__ = ["band", "block_class", "block_walker", "edge_filler"]


def _band_core(i, j, slope, k, reach, cap, sides):
    bi, bj = i // k, j // k
    seen = np.zeros((bi + 1) * (bj + 1), np.bool_)
    out = np.empty((max(1, min(cap, 1 + 2 * (2 * sides + 1) * reach)), 2), np.int64)
    out[0, 0], out[0, 1] = bi, bj
    seen[bi * (bj + 1) + bj] = True
    m = 1
    ahead = 0.5 * k / max(slope, 1.0)  # half a block along the longer side
    norm = math.hypot(slope, 1.0)
    py, px = 0.5 * k / norm, -0.5 * k * slope / norm  # half a block across
    for t in range(1, 2 * reach + 1):
        y, x = i + 0.5 - t * ahead * slope, j + 0.5 - t * ahead
        for side in range(2 * sides + 1):  # the line, then half a block more on either side in turn
            f = (side + 1) // 2 * (1 if side % 2 else -1)
            sy, sx = y + f * py, x + f * px
            a, b = int(math.floor(sy / k)), int(math.floor(sx / k))
            if 0 <= a <= bi and 0 <= b <= bj and not seen[a * (bj + 1) + b] and m < cap:
                seen[a * (bj + 1) + b] = True
                out[m, 0], out[m, 1] = a, b
                m += 1
    return out[:m]


_BAND = []


def band(i, j, slope, k, reach, cap, sides=1):
    """The blocks of a round (:meth:`CheckpointResult._round_blocks`), compiled: distinct, nearest
    first (numpy's dozen small operations a round cost about 0.3 ms)."""
    if not _BAND:
        from ..jit import njit

        _BAND.append(njit(cache=True)(_band_core))
    return _BAND[0](i, j, slope, k, reach, cap, sides)


_FILLERS = KernelFactory("linear.fill", "rec", "n_data")

_EDGE_FILL = """
def fill(R, C, brow, bcol{da}):
    for c in range(-1, C):
        ST(brow, c + 1, VT(boundary(-1, c{db})))
    for r in range(R):
        ST(bcol, r, VT(boundary(r, -1{db})))
"""


def edge_filler(cls, n_data: int):
    """Compiled (CPU): the grid's boundary values above row 0 and left of column 0."""
    k = _FILLERS.lookup(rec=cls, n_data=n_data)
    if not k.ready:
        from ..backends.cpu import cell_namespace
        from ..jit import njit

        src = values.expand(_EDGE_FILL.format(da=data_args(n_data), db=spec_of(cls).fn_args(n_data)), cls)
        k = k.keep(njit(compile_source(src, "fill", cell_namespace(cls))))
    return k.fn


_WALKERS = KernelFactory("linear.walk", "rec", "n_user", "planes")

# A walk through the blocks of a round, its cells into ``path`` from row ``n`` on (the rows after the
# walk's end returned with its exit): ``slot[bi, bj]`` is block (bi, bj)'s place among the round's
# decisions (-1: not swept), ``WS`` words each, laid out as the backend does (codegen.block_decision;
# the layout and the decision's bits constants of the walk: variables made it four times slower);
# status 0 left the grid, 1 a step back may not take, 2 a block not swept
_BLOCK_WALK = """
def walk(i, j{s0}, R, C, K, path, n, words, slot, WS, groups{da}):
    maxlen = len(path)
    while i >= 0 and i < R and j >= 0 and j < C:
        r0 = i // K * K
        c0 = j // K * K
        q = slot[r0 // K, c0 // K]
        if q < 0:
            return n, np.array([{exit}, 2], np.int64)
        nr = min(K, R - r0)
        nc = min(K, C - c0)
        base = q * WS
        while i >= r0 and i < r0 + nr and j >= c0 and j < c0 + nc:  # in this block
            if n >= maxlen:
                raise ContractError("{cls}.back() walked in a loop: it must step to one of the dependencies")
            a = i - r0
            b = j - c0
            d = block_decision(words, base, a, b, nc, K, {planes}, {bits}, groups)
            path[n, 0] = i
            path[n, 1] = j
            path[n, 2] = d
            {rec}
            n += 1
            {step}
            if i2 + j2 >= i + j:
                return n, np.array([{exit2}, 1], np.int64)
            i = i2
            j = j2
    return n, np.array([{exit}, 0], np.int64)
"""


def block_walker(cls, n_user: int, planes: bool):
    """The compiled walk of ``back`` through a round's blocks (``n_user``: the user's data;
    ``planes``: the blocks' layout, :func:`gpudp.codegen.block_decision`)."""
    k = _WALKERS.lookup(rec=cls, n_user=n_user, planes=planes)
    if not k.ready:
        from ..cache import jit_generated
        from ..jit import njit

        if not hasattr(cls, "back"):
            raise ContractError(f"{cls.__name__} defines no back(...): its decisions cannot be traced back")
        ns = {
            "np": np,
            "ContractError": ContractError,
            "back": njit(cls.back),
            "block_decision": block_decision,
        }
        form = walk_form(cls, n_user)
        src = fill(
            _BLOCK_WALK,
            cls=cls.__name__,
            da=data_args(n_user),
            planes=bool(planes),
            bits=cls.decision_bits,
            **form,
        )
        k = k.keep(jit_generated(src, "walk", ns, njit, "cpu"))
    return k.fn


_BLOCKS = KernelFactory("linear.block_class", "rec", "n_data")


def block_class(cls, n_data: int):
    """The grid recurrence of one block of ``cls``'s grid: cells ``(i, j)`` of the block are cells
    ``(r0 + i, c0 + j)`` of the grid; the row above the block and the column left of it come from
    the checkpoints (``top[1 + j]``, ``top[0]`` the corner; ``left[i]``), the grid's own boundary
    elsewhere. Made once per recurrence class and data count."""
    k = _BLOCKS.lookup(rec=cls, n_data=n_data)
    if k.ready:
        return k.fn
    da = "".join(f", d{k}" for k in range(n_data))
    deps = "".join(f", x{k}" for k in range(cls._n_deps()))
    sym = ", ri, cj" if cls.symbols else ""
    st = ", s" if cls.traceback_state else ""
    fs = values.fields(cls)  # a record: the edges come as one array per field
    nf = 1 if fs is None else len(fs)
    edges = "".join(f", top{f}" for f in range(nf)) + "".join(f", left{f}" for f in range(nf))

    def at(name, idx):
        if fs is None:
            return f"{name}0[{idx}]"
        return "(" + ", ".join(f"{name}{f}[{idx}]" for f in range(nf)) + ",)"

    src = f"""
def cell(i, j{deps}{sym}, r0, c0{edges}{da}):
    return user_cell(i + r0, j + c0{deps}{sym}{da})


def boundary(i, j, r0, c0{edges}{da}):
    if i < 0 and r0 > 0 and (j >= 0 or c0 > 0):
        return {at("top", "j + 1")}
    if j < 0 and c0 > 0 and i >= 0:
        return {at("left", "i")}
    return user_boundary(i + r0, j + c0{da})


def back(i, j, d{st}, r0, c0{edges}{da}):
    out = user_back(i + r0, j + c0, d{st}{da})
    return (out[0] - r0, out[1] - c0{", out[2]" if st else ""})
"""
    ns = {
        "user_cell": register_jitable(cls.cell),
        "user_boundary": register_jitable(cls.boundary),
        "user_back": register_jitable(cls.back),
    }
    fns = {name: compile_source(src, name, dict(ns)) for name in ("cell", "boundary", "back")}

    def __init__(self, user, data, syms, r0, c0, rows, cols, top, left):
        self.user, self._user_data, self._syms = user, data, syms
        self.r0, self.c0, self.rows, self.cols, self.top, self.left = r0, c0, rows, cols, top, left

    attrs = {
        "__init__": __init__,
        "__module__": cls.__module__,
        "__doc__": f"One block of {cls.__name__}'s grid, swept again for a traceback (gpudp.checkpoints).",
        "offsets": cls.offsets,
        "deps_tuple": cls.deps_tuple,
        "value_dtype": cls.value_dtype,
        "decision_bits": cls.decision_bits,
        "fill": cls.fill,
        "symbols": cls.symbols,
        "traceback_state": cls.traceback_state,
        "reduce": None,
        "shape": lambda self: (self.rows, self.cols),
        "data": lambda self: (
            self.r0,
            self.c0,
            *_fields_of(cls, self.top),
            *_fields_of(cls, self.left),
            *self._user_data,
        ),
        "row_symbols": lambda self: self._syms[0][self.r0 : self.r0 + self.rows],
        "col_symbols": lambda self: self._syms[1][self.c0 : self.c0 + self.cols],
        **{name: staticmethod(fn) for name, fn in fns.items()},
    }
    return k.keep(type(cls.__name__, (GridRecurrence,), attrs)).fn


def _fields_of(cls, edge: np.ndarray) -> tuple:
    """An edge of checkpoint values as the block's data: the array, or one array per field."""
    buf = values.split(cls, edge)
    return buf if isinstance(buf, tuple) else (buf,)
