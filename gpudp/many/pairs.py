"""A batch given as one recurrence and two lists of sequences: every query against every choice (a
cross product), or query ``k`` against choice ``k``, read without Python work per instance.

``sweep_many(template, queries=Q, choices=C)`` sweeps the instances of ``template``'s class whose row
symbols are a query and whose column symbols are a choice, every other item of ``data()`` the
template's own (shared by all). Each side is read once into one buffer with offsets (Arrow's
layout): a list or tuple of ``str`` (by code point; one join and one encode), of ``bytes``, of 1-D
arrays of integers or reals of one dtype, or a 2-D such array whose rows are the sequences. The kernels index
the two buffers directly (item kinds ``q1`` and ``c1`` of :func:`gpudp.many.source.views`: instance
``b`` reads query ``b // M`` and choice ``b % M``), so nothing of size queries x choices x length is
built; the template's data items are packed once (kind ``g``, shared). The instance objects the rest
of the batch may need (an instance too large for the batch kernels goes to :func:`gpudp.sweep`; a
``start_state`` callable) are made on demand (:class:`Instances`).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np

from ..checks import check_symbol_types, widened_symbols
from ..errors import ContractError, InputError
from ..recurrence import GridRecurrence
from ..recurrence.constants import read_by
from .intake import Intake, check_class, read_item

__all__ = ["Instances", "intake_pairs", "read_side"]


def read_side(seqs, name: str) -> tuple[np.ndarray, np.ndarray, type | None]:
    """``(buffer, offsets, form)`` of a list of sequences: sequence ``k`` is ``buffer[offsets[k] :
    offsets[k + 1]]``; ``form`` is ``str``, ``bytes`` or ``np.ndarray`` for a side of text, bytes
    or arrays (a 2-D array's rows too), None for an empty side. InputError naming ``name[k]`` for an
    element of another form than the first's."""
    if isinstance(seqs, np.ndarray) and seqs.ndim == 2:
        if seqs.dtype.kind not in "biuf":
            raise InputError(name, f"a 2-D array of {seqs.dtype}: symbols are integers or reals")
        n, m = seqs.shape
        rows = np.arange(n + 1, dtype=np.int64) * m
        return widened_symbols(np.ascontiguousarray(seqs).reshape(-1)), rows, np.ndarray
    if isinstance(seqs, str | bytes | np.ndarray) or not isinstance(seqs, Sequence):
        raise InputError(
            name, f"a {type(seqs).__name__}: give a list or tuple of sequences, or a 2-D array of rows"
        )
    # one reading of the items (a copy of the list): the lengths and the symbols below are two
    # passes, between which another thread's writes to the list would give offsets of other items
    seqs = list(seqs)
    offsets = np.zeros(len(seqs) + 1, np.int64)
    if not seqs:
        return np.zeros(1, np.int32), offsets, None
    first = type(seqs[0])
    for k, x in enumerate(seqs):
        if type(x) is not first:
            raise InputError(
                f"{name}[{k}]", f"a {type(x).__name__} among {first.__name__}s: give sequences of one form"
            )
    if first is str or first is bytes:
        np.cumsum(np.fromiter(map(len, seqs), np.int64, len(seqs)), out=offsets[1:])
        if first is bytes:
            buf = np.frombuffer(b"".join(seqs), np.uint8)
        else:
            text = "".join(seqs)
            if text.isascii():
                buf = np.frombuffer(text.encode("ascii"), np.uint8)
            else:  # by code point
                buf = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)
        return widened_symbols(buf), offsets, first
    if first is np.ndarray:
        dt = seqs[0].dtype
        for k, x in enumerate(seqs):
            if x.ndim != 1 or x.dtype != dt or dt.kind not in "biuf":
                if x.dtype.kind not in "biuf":
                    why = "symbols are integers or reals"
                elif x.dtype != dt:
                    why = f"{name}[0] is of {dt}"
                else:
                    why = "a sequence must be 1-D"
                raise InputError(
                    f"{name}[{k}]", f"a {x.ndim}-d array of {x.dtype}: {why}; give 1-D arrays of one dtype"
                )
        np.cumsum(np.fromiter(map(len, seqs), np.int64, len(seqs)), out=offsets[1:])
        return widened_symbols(np.concatenate(seqs)), offsets, np.ndarray
    raise InputError(
        f"{name}[0]", f"a {first.__name__}: give str, bytes or 1-D arrays of numbers (or a 2-D array of rows)"
    )


def _form_name(form: type) -> str:
    """A side's form in words: ``str``, ``bytes`` or ``arrays``."""
    return "arrays" if form is np.ndarray else form.__name__


class Instances(Sequence):
    """The instances of a pairs batch as objects, each made when asked for: a copy of the template
    whose ``shape``, ``row_symbols`` and ``col_symbols`` are its query's and choice's."""

    def __init__(self, template, sides, qi, ci):
        self.template, self.sides, self.qi, self.ci = template, sides, qi, ci

    def __len__(self) -> int:
        return len(self.qi)

    def __getitem__(self, k):
        if not isinstance(k, int | np.integer):
            raise TypeError("Instances are read one at a time")
        (qb, qo), (cb, co) = self.sides
        q, c = int(self.qi[k]), int(self.ci[k])
        a, b = qb[qo[q] : qo[q + 1]], cb[co[c] : co[c + 1]]
        rec = copy.copy(self.template)
        rec.shape = lambda: (len(a), len(b))
        rec.row_symbols = lambda: a
        rec.col_symbols = lambda: b
        return rec


def intake_pairs(template, queries, choices, pairs: str) -> tuple[Intake, Instances]:
    """The checked batch of ``template``'s class over ``queries`` and ``choices`` (see the module's
    text): ``pairs`` "cross" (instance ``k * len(choices) + m``: query ``k``, choice ``m``) or
    "zip" (instance ``k``: query ``k``, choice ``k``; the lists of one length)."""
    if not isinstance(template, GridRecurrence):
        raise InputError(
            "recs",
            f"a {type(template).__name__}: with queries= and choices=, give one grid recurrence instance "
            "(the template whose data() every pair shares)",
        )
    if pairs not in ("cross", "zip"):
        raise InputError("pairs", f"{pairs!r}: 'cross' (every query against every choice) or 'zip'")
    spec = template._specialized(read_by(type(template)))
    cls = type(spec)
    check_class(cls)
    if not cls.symbols:
        raise ContractError(
            f"{cls.__name__} declares symbols = False: queries= and choices= are its row and column "
            "symbols; declare symbols = True (cell then gets queries[k][i] and choices[m][j])"
        )
    qb, qo, q_form = read_side(queries, "queries")
    cb, co, c_form = read_side(choices, "choices")
    check_symbol_types(qb, cb, "queries", "choices")
    if str in (q_form, c_form) and None not in (q_form, c_form) and q_form is not c_form:
        # as lcs.cdist: text is no alphabet of numbers (bytes and arrays are: bytes are 0..255)
        raise InputError(
            "choices",
            f"{_form_name(c_form)} beside queries of {_form_name(q_form)}: text is read by code point, so "
            "'a' would match b'a' or the number 97; give both sides str, or encode the text alike",
        )
    nq, nc = len(qo) - 1, len(co) - 1
    if pairs == "zip" and nq != nc:
        raise InputError("choices", f"{nc} choices for {nq} queries: pairs='zip' takes lists of one length")
    if pairs == "cross":
        qi, ci = np.repeat(np.arange(nq), nc), np.tile(np.arange(nc), nq)
    else:
        qi = ci = np.arange(nq)
    count = len(qi)
    shapes = np.empty((count, 2), np.int64)
    shapes[:, 0], shapes[:, 1] = np.diff(qo)[qi], np.diff(co)[ci]
    data = spec.data()
    if not isinstance(data, tuple):
        raise ContractError(
            f"{cls.__name__}.data() must return a tuple of numpy arrays and scalars, got "
            f"{type(data).__name__}"
        )
    spec._validate_instance()
    one = np.zeros((1, 1), np.int64)
    if pairs == "cross":  # the kernels index the sides: query b // nc, choice b % nc
        packed = [qb, qo, np.full((1, 1), nc, np.int64), cb, co, np.full((1, 1), nc, np.int64)]
        kinds = ["q1", "c1"]
    else:
        packed, kinds = [qb, qo, one, cb, co, one], ["a1", "a1"]
    for m, x in enumerate(data):
        sig, v = read_item(x, 0, m + 2, 2)
        if sig[0] == "scalar":  # a number a pair (the batch's scalar form)
            packed += [np.full(count, v), np.zeros(1, np.int64), one]
            kinds.append("s")
        else:  # one array every pair reads
            flat = np.concatenate([v.reshape(-1), np.zeros(1, v.dtype)])
            packed += [flat, np.array([0, v.size], np.int64), np.array([v.shape], np.int64)]
            kinds.append(f"g{v.ndim}")
    names = ("row_symbols()", "col_symbols()", *(f"data()[{m}]" for m in range(len(data))))
    objs = Instances(spec, ((qb, qo), (cb, co)), qi, ci)
    return Intake(cls, objs, shapes, {}, tuple(kinds), names, tuple(packed), 2), objs
