"""``gpudp info``: versions, devices, the memory this process may use, the kernel cache."""

from __future__ import annotations

import sys


def info() -> dict:
    import numba
    import numpy

    from ._version import __version__
    from .backends import cpu, cuda_usable

    out = {
        "gpudp": __version__,
        "python": sys.version.split()[0],
        "numpy": numpy.__version__,
        "numba": numba.__version__,
        "cpu": cpu.device_name(),
    }
    try:
        from importlib.metadata import version

        out["numba-cuda"] = version("numba-cuda")
    except Exception:
        out["numba-cuda"] = None
    from .backends import cuda as cuda_mod

    out["cuda_usable"] = cuda_usable()
    out["cuda_device"] = cuda_mod.device_name() if out["cuda_usable"] else cuda_mod.unavailable_reason()
    out["default_backend"] = (
        "auto: cpu for work it finishes before CUDA starts, else cuda" if out["cuda_usable"] else "auto: cpu"
    )
    from . import cache, memory

    out["memory"] = memory.describe()
    out["kernel_cache"] = cache.cache_dir() if cache.enabled() else "off (GPUDP_CACHE_DIR)"
    return out
