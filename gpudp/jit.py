"""The project's CPU compiler: ``numba.njit`` with gpudp's defaults, used by the engine's helpers,
the cpu backend and the plug-ins' CPU kernels alike."""

from __future__ import annotations

import numba


def njit(fn=None, **kw):
    """numba.njit with the project's defaults (no Python fallback, fastmath off: exact DP).

    ``cache=True`` is dropped when the kernel cache is off (``GPUDP_CACHE_DIR=off``) or numba finds
    no writable place for it (a read-only installation): caching is a speed-up, never a failure."""
    kw.setdefault("nogil", True)
    if fn is None:
        return lambda f: njit(f, **kw)
    if kw.get("cache"):
        from .cache import enabled

        if not enabled():
            kw.pop("cache")
        else:
            try:
                return numba.njit(**kw)(fn)
            except RuntimeError:  # "cannot cache function ...: no locator available"
                kw.pop("cache")
    return numba.njit(**kw)(fn)
