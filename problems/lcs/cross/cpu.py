"""The cross product's kernel on the CPU (numba, every core): one generic loop over the patterns,
each pattern's masks built once and every text run through them by the algorithm's ``text``
function (:func:`.bitparallel.lcs_text`, :func:`gpudp.problems.edit_distance.bitparallel.levenshtein_text`).

The loop is compiled once an algorithm with the algorithm's functions as globals
(:func:`gpudp.cache.jit_generated`, kept on disk for later processes), not passed in as arguments:
numba's own cache cannot match a signature that holds a compiled function (its type is the function
object itself, a new one in every process), so such an entry never loads again, the index grows a
stale entry every process, and rewriting it can fail when one of them has been collected."""

from __future__ import annotations

import functools
import inspect

import numba
import numpy as np
from numba import prange

from gpudp.cache import jit_generated
from gpudp.jit import njit

from ..bitparallel import Packed, clamp, ensure_table, masks

__all__ = ["run"]

#: tasks (a pattern against a run of texts) a thread takes at least, for balance: the texts are
#: split into runs only where there are fewer patterns than this many tasks
TASKS_PER_THREAD = 8


def _cross(pat, pat_off, txt, txt_off, sigma, table, mapped, runs, lo, hi, out, rs, cs):
    n_txt = len(txt_off) - 1
    per = (n_txt + runs - 1) // runs
    for t in prange((len(pat_off) - 1) * runs):
        i = t // runs
        j0 = (t % runs) * per
        j1 = min(j0 + per, n_txt)
        a0 = pat_off[i]
        m = pat_off[i + 1] - a0
        w = max((m + 63) // 64, 1)
        pm = np.empty(sigma * w, np.uint64)
        masks(pat, a0, m, w, sigma, table, mapped, pm)
        scratch = np.empty(2 * w, np.uint64)
        for j in range(j0, j1):
            lower, upper = bounds(m, txt_off[j + 1] - txt_off[j])  # noqa: F821 (a global of _kernel)
            v = clamp(lower, lo, hi)
            if v != clamp(upper, lo, hi):  # else the lengths decide it: not computed
                v = text(pm, w, m, txt, txt_off[j], txt_off[j + 1], table, mapped, scratch, lo, hi)  # noqa: F821
                v = clamp(v, lo, hi)
            out[i * rs + j * cs] = v


def run(text, bounds, packed: Packed, lo: int, hi: int, out: np.ndarray, turned: bool) -> np.ndarray:
    """Fill ``out`` (C-contiguous) with every pattern of ``packed`` against every text by ``text``,
    each value as :func:`.bitparallel.clamp` gives it with ``lo`` and ``hi`` (not computed where
    ``bounds(m, n)``, the value's bounds from the two lengths, give one cut-off score): ``out[i, j]`` is
    pattern ``i`` against text ``j``, or (``turned``) ``out[j, i]``. On all of numba's threads, a
    task a pattern (its masks built once), or a pattern against a run of the texts where there are
    too few patterns to keep every thread busy."""
    ensure_table(packed)
    n_pat, n_txt = len(packed.pat_off) - 1, len(packed.txt_off) - 1
    if n_pat == 0 or n_txt == 0:
        return out
    threads = numba.get_num_threads()
    runs = max(1, min(n_txt, -(-TASKS_PER_THREAD * threads // n_pat)))
    rs, cs = (1, out.shape[1]) if turned else (out.shape[1], 1)
    p = packed
    pat, txt = _read_only(p.pat), _read_only(p.txt)  # one kernel for bytes read in bulk (read-only) or not
    with numba.parallel_chunksize(max(1, n_pat * runs // (64 * threads))):
        _kernel(text, bounds)(
            pat, p.pat_off, txt, p.txt_off, p.sigma, p.table, p.mapped, runs, lo, hi,
            out.reshape(-1), rs, cs,
        )  # fmt: skip
    return out


@functools.cache
def _kernel(text, bounds):
    """:func:`_cross` compiled with ``text`` and ``bounds`` (the algorithm's) as its globals."""
    ns = {"text": text, "bounds": bounds, "masks": masks, "clamp": clamp, "np": np, "prange": prange}
    return jit_generated(inspect.getsource(_cross), "_cross", ns, njit, "cpu", parallel=True)


def _read_only(x: np.ndarray) -> np.ndarray:
    view = x.view()
    view.flags.writeable = False
    return view
