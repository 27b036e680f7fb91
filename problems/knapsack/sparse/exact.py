"""Exact integer arithmetic of the sparse-state DP: 128-bit products compared from 32-bit halves,
and exact sums of int64 arrays (see the package doc, **Arithmetic**)."""

from __future__ import annotations

import numpy as np

from gpudp.jit import njit

__all__ = ["uge", "ge", "exact_sum"]

_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


@njit(cache=True)
def _umul(a, b):
    """The 128-bit product of two uint64 values as (high, low) words."""
    a0 = a & _M32
    a1 = a >> _S32
    b0 = b & _M32
    b1 = b >> _S32
    p00 = a0 * b0
    p01 = a0 * b1
    p10 = a1 * b0
    mid = (p00 >> _S32) + (p01 & _M32) + (p10 & _M32)
    hi = a1 * b1 + (p01 >> _S32) + (p10 >> _S32) + (mid >> _S32)
    lo = (mid << _S32) | (p00 & _M32)
    return hi, lo


@njit(cache=True)
def uge(a, b, c, d):
    """a·b >= c·d, exactly, for non-negative int64 a, b, c, d."""
    h1, l1 = _umul(np.uint64(a), np.uint64(b))
    h2, l2 = _umul(np.uint64(c), np.uint64(d))
    return h1 > h2 or (h1 == h2 and l1 >= l2)


@njit(cache=True)
def ge(a, b, c, d, small):
    """a·b >= c·d, exactly, for |a|, |c| < 2^63 and b, d > 0; in int64 when ``small`` says every
    such product fits."""
    if small:
        return a * b >= c * d
    if a >= 0:
        if c <= 0:
            return True
        return uge(a, b, c, d)
    if c > 0:
        return False
    return uge(-c, d, -a, b)


def exact_sum(a) -> int:
    """The sum of an int64 array as a Python integer, exactly: the high and low 32-bit halves of
    the non-negative entries are summed apart in uint64 (fewer than 2^31 entries: no wrap), the
    negative entries (none in the solver's use) in Python integers."""
    a = np.asarray(a, np.int64)
    if len(a) >= 1 << 31 or (len(a) and a.min() < 0):
        return sum(int(v) for v in a.tolist())
    u = a.view(np.uint64)
    return (int((u >> _S32).sum(dtype=np.uint64)) << 32) + int((u & _M32).sum(dtype=np.uint64))
