"""``gpudp info``: versions, devices, the memory this process may use, the kernel cache, and the
rates ``auto`` predicts by, with where each came from (:mod:`gpudp.backends.rates`)."""

from __future__ import annotations

import sys


def info() -> dict:
    import numba
    import numpy

    from . import backends
    from ._version import __version__

    out = {
        "gpudp": __version__,
        "python": sys.version.split()[0],
        "numpy": numpy.__version__,
        "numba": numba.__version__,
        "cpu": backends.device_name("cpu"),
    }
    try:
        from importlib.metadata import version

        out["numba-cuda"] = version("numba-cuda")
    except Exception:
        out["numba-cuda"] = None
    out["cuda_usable"] = backends.cuda_usable()
    out["cuda_device"] = backends.device_name("cuda") if out["cuda_usable"] else backends.unavailable_reason()
    out["default_backend"] = (
        "auto: cpu for work it finishes before CUDA starts, else cuda" if out["cuda_usable"] else "auto: cpu"
    )
    from . import cache, memory

    out["memory"] = memory.describe()
    out["kernel_cache"] = cache.cache_dir() if cache.enabled() else "off (GPUDP_CACHE_DIR)"
    path = backends.rates.store_path()
    out["rates_file"] = path if path is not None else "none (GPUDP_CACHE_DIR off): kept for the process"
    out["rates"] = {f"{r['family']}/{r['backend']}": r["rate"].words() for r in backends.rate_table()}
    return out
