"""One pair's checked :class:`gpudp.Solution` (its subsequence in the inputs' own type, checked
against both inputs as given), and the choice between the two methods of
:func:`gpudp.problems.lcs.solve`: the engine's sweep or the pair's bit vectors (:data:`PAIR`)."""

from __future__ import annotations

import time

import numpy as np

from gpudp import backends, lowering
from gpudp.backends import choose as choose_backend
from gpudp.backends import device_name, predicted_seconds
from gpudp.errors import InputError
from gpudp.memory import default_budget
from gpudp.solution import Solution, Stats

from . import batch

__all__ = [
    "METHODS",
    "PAIR",
    "PAIR_VECTORS_MAX",
    "checker",
    "choose_method",
    "solution",
    "solve_bitparallel",
    "subsequence",
]


def subsequence(kind: str, exact: np.ndarray, idx: np.ndarray):
    """The symbols of one input at ``idx``, in the input's own type."""
    if kind == "str":
        picked = exact[idx]
        if picked.dtype == np.uint8:
            return picked.tobytes().decode("ascii")
        return "".join(map(chr, picked.tolist()))
    if kind == "bytes":
        return exact[idx].astype(np.uint8).tobytes()
    return exact[idx]


def solution(ka, xa, xb, ea, eb, length, ia, ib, stats, checked: bool = True) -> Solution:
    """The checked :class:`Solution` of a pair (``xa``, ``xb``: the sequences' exact symbols,
    ``ea``, ``eb``: their kernel codes) with subsequence at positions ``ia`` / ``ib``."""
    sol = Solution(
        problem="lcs",
        value=length,
        solution=subsequence(ka, xa, ia),
        stats=stats,
        details={"indices_a": ia, "indices_b": ib, "len_a": len(xa), "len_b": len(xb)},
        checker=checker(ka, xa, xb, ea, eb),
    )
    if checked:
        sol.check()
    return sol


def checker(kind_a: str, xa: np.ndarray, xb: np.ndarray, ea: np.ndarray, eb: np.ndarray):
    """Checks a solution against the kernels' codes (``ea``, ``eb``) and, independently of the
    coding, against the symbols as given (``xa``, ``xb``, compared as Python values)."""

    def check(sol: Solution):
        ia = np.asarray(sol.details["indices_a"])
        ib = np.asarray(sol.details["indices_b"])
        if len(ia) != sol.value or len(ib) != sol.value:
            return f"{len(ia)} matched positions for a reported length of {sol.value}"
        if len(ia) and (ia.min() < 0 or ia.max() >= len(ea) or ib.min() < 0 or ib.max() >= len(eb)):
            return "a matched position lies outside its sequence"
        if (np.diff(ia) <= 0).any() or (np.diff(ib) <= 0).any():
            return "matched positions are not strictly increasing"
        if not np.array_equal(ea[ia], eb[ib]) or xa[ia].tolist() != xb[ib].tolist():
            return "the subsequence does not occur at the matched positions of both inputs"
        want, got = subsequence(kind_a, xa, ia), sol.solution
        if isinstance(want, np.ndarray):
            same = isinstance(got, np.ndarray) and got.tolist() == want.tolist()
        else:
            same = type(got) is type(want) and got == want
        if not same:
            return "the reported subsequence differs from the matched symbols"
        upper = sol.details.get("upper_bound")
        most = min(len(ea), len(eb))
        if upper is not None and not sol.details["lower_bound"] == sol.value <= upper <= most:
            return f"bounds {sol.details['lower_bound']} .. {upper} do not hold the length {sol.value}"
        return None

    return check


#: one pair's subsequence by the bit vectors of every column, walked back (``method="bitparallel"``),
#: a lowering a backend that has such a kernel (the cpu's: a GPU thread a pair is no match for a
#: core, and the GPU sweeps the recurrence with the engine instead)
PAIR = "lcs.pair"
lowering.declare(PAIR, cpu=f"{__package__}.cpu")
#: ``method="auto"`` keeps a pair's bit vectors up to this many bytes (``len(a) * len(b) / 8``)
PAIR_VECTORS_MAX = 4 << 30
METHODS = ("auto", "bitparallel", "wavefront")


#: the engine's options that the bit vectors have no use for, and what they would lack
ENGINE_ONLY = {
    "tile": "no tiles",
    "store": "no decision store to choose (it keeps every column's bit vector)",
    "checkpoint_every": "no checkpoints",
    "time_limit": "no point to stop at (one compiled call computes the vectors and walks them back)",
}


#: ``"auto"`` with a time limit takes the bit vectors only where they are predicted to take at most
#: this share of it: they cannot stop (one compiled call), and the engine they replace is 20-30x
#: slower (docs/benchmarks.md, hostile round 5), so a limit the prediction keeps far from is no
#: reason to take it
VECTORS_LIMIT_SHARE = 0.1


def choose_method(method, backend: str, engine_options: dict, m: int, n: int, budget):
    """``(backend, why)`` where :func:`gpudp.problems.lcs.solve` runs the pair's bit vectors
    (:data:`PAIR`), or ``(None, None)``: the engine sweeps it (see that function's ``method``).
    ``engine_options``: the options of :data:`ENGINE_ONLY` the caller gave (name -> value), which
    ``"bitparallel"`` refuses and with which ``"auto"`` takes the engine, except ``time_limit``:
    ``"auto"`` takes the vectors under a limit they are predicted to stay well within
    (:data:`VECTORS_LIMIT_SHARE`)."""
    if method not in METHODS:
        raise InputError("method", f"{method!r}: one of {', '.join(map(repr, METHODS))}")
    has = lowering.declared().get(PAIR, ())
    here = [b for b in has if backend in ("auto", b)]
    vectors = -(-min(m, n) // 64) * 8 * max(m, n)
    budget = default_budget() if budget is None else budget
    room = min(PAIR_VECTORS_MAX, budget // 2)
    if method == "bitparallel":
        if not here:
            raise InputError(
                "method",
                f"'bitparallel' runs on {' or '.join(has)}, not on backend {backend!r}: give "
                f"backend='auto' or one of those, or method='wavefront'",
            )
        if engine_options:
            name, value = next(iter(engine_options.items()))
            raise InputError(
                name,
                f"{value!r} applies to method='wavefront' (the engine's sweep); method='bitparallel' "
                f"has {ENGINE_ONLY[name]}: leave {name} out, or give method='wavefront' (or 'auto', "
                "which then takes the engine)",
            )
        if vectors > budget:
            raise InputError(
                "method",
                f"the bit vectors of {m:,} x {n:,} symbols take {vectors / 2**30:.2f} GiB, more than the "
                "memory budget: method='wavefront' (linear space with checkpoints), or a larger "
                "memory_budget",
            )
        return here[0], f"{here[0]}: method='bitparallel' asked for"
    limit = engine_options.get("time_limit")
    others = set(engine_options) - {"time_limit"}
    if method == "wavefront" or others or not here or vectors > room:
        return None, None
    cells = m * n
    # one pair is one thread's work: the batch family's rate, which counts every thread, over them
    seconds = predicted_seconds(cells, here[0], family=batch.FAMILY) * backends.cpu_threads()
    if limit is not None and seconds > VECTORS_LIMIT_SHARE * limit:
        return None, None  # the engine stops at its limit with proven bounds; the vectors cannot
    if backend != "auto":
        return here[0], f"{here[0]}: asked for, the bit vectors fit ({vectors / 2**20:.0f} MiB)"
    engine = choose_backend("auto", cells)[0]
    engine_s = predicted_seconds(cells, engine)
    if seconds > engine_s:
        return None, None
    return here[0], (
        f"{here[0]}: bit vectors, {seconds:.3g} s predicted against the engine's {engine_s:.3g} s on {engine}"
    )


def solve_bitparallel(ka, xa, xb, ea, eb, where: str, why: str, t_start: float) -> Solution:
    """:func:`gpudp.problems.lcs.solve` by the pair's bit vectors on ``where`` (:data:`PAIR`'s
    lowering there)."""
    t = time.perf_counter()
    length, ia, ib = lowering.get(PAIR, where).pair(ea, eb)
    kernel_s = time.perf_counter() - t
    stats = Stats(backend=where, device=device_name(where), cells=len(ea) * len(eb), kernel_seconds=kernel_s)
    stats.extra.update(
        method="bit-parallel (Hyyro 2004), every column's vector kept and walked back",
        backend_choice=why,
        vector_bytes=-(-min(len(ea), len(eb)) // 64) * 8 * max(len(ea), len(eb)),
    )
    sol = solution(ka, xa, xb, ea, eb, length, ia, ib, stats)
    stats.seconds = time.perf_counter() - t_start
    return sol
