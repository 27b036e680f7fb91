"""The edit distance's GPU kernel: Myers' block step (:func:`.bitparallel.block_step`), one pair per
thread, through the pair-kernel template of :mod:`gpudp.problems.lcs.cuda`, or for long patterns a
warp a pair (:func:`.cuda_code.levenshtein_long`). Imported only when the cuda backend runs."""

from __future__ import annotations

from gpudp.problems.lcs import cuda as lcs_cuda
from gpudp.problems.lcs.cross import cuda as cross_cuda
from gpudp.problems.lcs.cuda import Launch, PairKernel

from . import cuda_code
from .bitparallel import block_step

__all__ = ["LEVENSHTEIN", "cross", "host_result", "host_symbols", "launch", "reads_later"]

#: a list of str read from its objects goes where the LCS batch's goes (the same launch copies it)
host_symbols = lcs_cuda.host_symbols
reads_later = lcs_cuda.reads_later
#: a cross product's result goes where the LCS's goes (page-locked where small)
host_result = cross_cuda.host_result


LEVENSHTEIN = PairKernel(
    name="levenshtein",
    empty="m + (b1 - b0)",
    init="\n".join(
        [
            "pv = cuda.local.array(WORDS, numba.uint64)",
            "mv = cuda.local.array(WORDS, numba.uint64)",
            "for q in range(w):",
            "    pv[q] = ~numba.uint64(0)",
            "    mv[q] = numba.uint64(0)",
            "score = m",
            "last = numba.uint64(1) << numba.uint64((m - 1) & 63)",
            "top = numba.uint64(1) << numba.uint64(63)",
        ]
    ),
    step="\n".join(
        [
            "h = 1",
            "for q in range(w):",
            "    pv[q], mv[q], h = block_step(pv[q], mv[q], pm[row + q], h, last if q == w - 1 else top)",
            "score += h",
        ]
    ),
    value="score",
    functions=(("block_step", block_step),),
    long=cuda_code.levenshtein_long,
    lower="abs(m - n)",
    upper="max(m, n)",
    # D[m][k] moves by at most 1 a text symbol
    so_far="low = score - left\nhigh = score + left",
)


def launch(packed) -> Launch:
    """The edit distance of every pair of ``packed``, queued on the GPU (:func:`.lcs.cuda.launch`)."""
    return lcs_cuda.launch(packed, LEVENSHTEIN)


def cross(packed, lo: int, hi: int, out, turned: bool) -> cross_cuda.CrossLaunch:
    """The edit distance of every pattern of ``packed`` against every text, into ``out``: a cross
    product started on the GPU (:func:`gpudp.problems.lcs.cross.cuda.launch`)."""
    return cross_cuda.launch(LEVENSHTEIN, packed, lo, hi, out, turned)
