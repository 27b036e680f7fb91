"""What Held-Karp on ``n`` cities needs, and the refusals of what cannot run here.

The figures (states, transitions, bytes of decisions and of values, the H100's time) are exact
Python integers up to :data:`EXACT_FIGURES` cities, from the engine's plan of the layered sweep
(:func:`gpudp.footprint.layered_memory`), and estimates (``("log10", value)`` pairs) beyond, so that a
refusal of any size is instant. :func:`check_size` refuses what no computer can run (more than
:data:`MAX_CITIES` cities), :func:`check_memory` what cannot fit in this host's memory, disk or GPU,
before any kernel runs.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile

import numpy as np

from gpudp.errors import InputError
from gpudp.footprint import layered_memory
from gpudp.grid import device_memory
from gpudp.memory import available_memory, default_budget, parse_bytes

from .recurrence import DECISION_BITS

__all__ = [
    "EXACT_FIGURES",
    "H100_TRANSITIONS_PER_SECOND",
    "MAX_CITIES",
    "PRACTICAL_LIMIT",
    "check_memory",
    "check_size",
    "memory_needed",
    "transitions",
]

#: at most 33 cities (decisions of DECISION_BITS bits: an element 0..m-1)
MAX_CITIES = (1 << DECISION_BITS) + 1
#: the practical limit quoted in messages: n = 30 needs ~9 GB of device memory and ~5 GB of decisions
PRACTICAL_LIMIT = 30
#: memory figures are exact Python integers up to this many cities, from logarithms beyond
EXACT_FIGURES = 10_000
#: the H100's Held-Karp speed (docs/tsp.md), for the time figure of a refusal
H100_TRANSITIONS_PER_SECOND = 72e9
#: the kernel family whose rate predicts a solve, single or batch (gpudp.backends.rates)
FAMILY = "tsp"


def _log10(x: int) -> float:
    """``log10`` of a positive integer of any size (no conversion of the integer to a float)."""
    shift = max(x.bit_length() - 64, 0)
    return math.log10(x >> shift) + shift * math.log10(2)


def _sci(lg: float) -> str:
    """A number given by its ``log10``, as ``1.36e+86`` (or ``10^1.39e+18`` when even the exponent
    is too large for the mantissa to mean anything)."""
    if lg >= 1e12:
        return f"10^{lg:.3g}"
    e = math.floor(lg)
    mant = 10 ** (lg - e)
    if mant >= 9.995:
        mant, e = mant / 10, e + 1
    return f"{mant:.2f}e+{e:02d}"


def _fmt_count(x) -> str:
    """An exact integer (any size) or a ``("log10", value)`` figure, in three digits."""
    if isinstance(x, tuple):
        return _sci(x[1])
    return f"{x:.3g}" if x < 10**15 else _sci(_log10(x))


def _fmt_bytes(x) -> str:
    """Bytes: an exact integer (any size) or a ``("log10", value)`` figure."""
    if isinstance(x, tuple):
        return f"{_sci(x[1])} bytes"
    if x >= 1 << 70:
        return f"{_fmt_count(x)} bytes"
    for unit, k in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if x >= 1 << k:
            return f"{x / (1 << k):.2f} {unit}"
    return f"{x} bytes"


def _fmt_seconds(x) -> str:
    """Seconds: a float or a ``("log10", value)`` figure, in the unit that reads best."""
    lg = x[1] if isinstance(x, tuple) else math.log10(max(x, 1e-9))
    if lg >= 12:
        return f"{_sci(lg - math.log10(365.25 * 86400))} years"
    sec = 10**lg
    for limit, unit, size in ((120, "s", 1), (7200, "minutes", 60), (2 * 86400, "hours", 3600)):
        if sec < limit:
            return f"{sec / size:.2g} {unit}"
    if sec < 3 * 365.25 * 86400:
        return f"{sec / 86400:.3g} days"
    return f"{sec / (365.25 * 86400):.3g} years"


def _seconds(trans: int):
    """The H100's time for ``trans`` transitions, as seconds or a ``("log10", value)`` figure."""
    if trans < 10**200:
        return trans / H100_TRANSITIONS_PER_SECOND
    return ("log10", _log10(trans) - math.log10(H100_TRANSITIONS_PER_SECOND))


def _check_figures_size(n: int) -> int:
    """``n`` as an int: a whole number of cities 0 .. :data:`EXACT_FIGURES`, else an
    :class:`InputError` naming ``cities`` (-1 gave figures, ``True`` one city's, ``"5"`` a
    TypeError)."""
    if isinstance(n, bool | np.bool_) or not isinstance(n, int | np.integer) or n < 0:
        raise InputError("cities", f"{n!r}: a number of cities is a whole number >= 0")
    n = int(n)
    if n > EXACT_FIGURES:
        raise InputError(
            "cities",
            f"{n} cities: exact figures are computed up to {EXACT_FIGURES} cities (check_size refuses "
            f"more than {MAX_CITIES} with estimates)",
        )
    return n


def _layer_sizes(n: int) -> list[int]:
    """Cells of each layer, ``C(m, s) * s`` for ``s = 1..m`` (``m = n - 1``), exact."""
    m = max(n - 1, 0)
    sizes = []
    c = 1  # C(m, s), updated exactly layer by layer
    for s in range(1, m + 1):
        c = c * (m - s + 1) // s
        sizes.append(c * s)
    return sizes


def _plan_memory(n: int, dtype, backend: str, memory_budget=None):
    """The engine's plan of the sweep's memory (:func:`gpudp.footprint.layered_memory`, what
    :meth:`gpudp.grid.plan.Plan.memory` gives the recurrence's plan), from the layer sizes alone, so
    that it is exact at sizes no machine could run."""
    return layered_memory(
        _layer_sizes(n), DECISION_BITS, np.dtype(dtype).itemsize, 1, backend, "plain", memory_budget
    )


def memory_needed(n: int, dtype=np.int32, backend: str = "cuda") -> dict:
    """What Held-Karp on ``n`` cities needs, in bytes (exact Python integers, up to
    :data:`EXACT_FIGURES` cities; an :class:`InputError` beyond).

    ``decisions``: the host store (5-bit planes, whole words per 32 cells of a layer);
    ``values``: the engine's two layers of values (on the device for cuda, in RAM for cpu);
    ``device``: the values plus the two decision slabs the cuda backend alternates between.
    The bytes are the engine's plan of the layered sweep (:func:`gpudp.footprint.layered_memory`).
    """
    n = _check_figures_size(n)
    sizes = _layer_sizes(n)
    need = _plan_memory(n, dtype, backend, 1 << 62)
    return {
        "cities": n,
        "states": sum(sizes),
        "widest_layer": max(sizes, default=1),
        "transitions": transitions(n),
        "decisions": need.decisions,
        "values": need.values,
        "device": need.device,
    }


def transitions(n: int) -> int:
    """States times predecessors, summed over the layers (a first-layer state has one predecessor,
    city 0), plus the ``n - 1`` closing edges: ``m (m - 1) 2^(m - 2) + 2m`` for ``m = n - 1``
    (exact; up to :data:`EXACT_FIGURES` cities)."""
    n = _check_figures_size(n)
    m = max(n - 1, 0)
    return ((m * (m - 1)) << m >> 2) + 2 * m


def _estimates(n: int, dtype=np.int32) -> dict:
    """The figures of :func:`memory_needed` for any ``n``, in constant time: exact integers up to
    :data:`EXACT_FIGURES` cities, ``("log10", value)`` pairs beyond (from ``m 2^(m-1)`` states,
    ``m (m-1) 2^(m-2)`` transitions, 5/8 of a byte per state and ``lgamma`` for the widest layer)."""
    if n <= EXACT_FIGURES:
        need = memory_needed(n, dtype, "cpu")
        need["seconds"] = _seconds(need["transitions"])
        return need
    m = n - 1
    l2, ln10 = math.log10(2), math.log(10)
    k = (m - 1) // 2
    widest = math.log10(m) + (math.lgamma(m) - math.lgamma(k + 1) - math.lgamma(m - k)) / ln10
    states = math.log10(m) + (m - 1) * l2
    trans = math.log10(m) + math.log10(m - 1) + (m - 2) * l2
    return {
        "cities": n,
        "states": ("log10", states),
        "transitions": ("log10", trans),
        "decisions": ("log10", states + math.log10(5 / 8)),
        "values": ("log10", widest + math.log10(2 * np.dtype(dtype).itemsize)),
        "seconds": ("log10", trans - math.log10(H100_TRANSITIONS_PER_SECOND)),
    }


def _too_big(n: int, name: str, need: dict, why: str) -> InputError:
    what = f"{name} ({n} cities)" if name else f"{n} cities"
    try:  # the GPU's figures need the cuda backend's arithmetic; a refusal must not need CUDA
        practical = memory_needed(PRACTICAL_LIMIT, backend="cuda")
        gpu = f", {_fmt_bytes(practical['device'])} of GPU memory"
    except ImportError:
        practical, gpu = memory_needed(PRACTICAL_LIMIT, backend="cpu"), ""
    return InputError(
        "cities",
        f"{what}: Held-Karp needs {_fmt_count(need['states'])} states, {_fmt_count(need['transitions'])} "
        f"transitions (about {_fmt_seconds(need['seconds'])} at the H100's "
        f"{H100_TRANSITIONS_PER_SECOND / 1e9:.0f} G transitions/s), {_fmt_bytes(need['decisions'])} of "
        f"decisions and {_fmt_bytes(need['values'])} for two layers of values; {why}. "
        f"n ≈ {PRACTICAL_LIMIT} is the practical limit of exact Held-Karp on one GPU "
        f"({PRACTICAL_LIMIT} cities: {_fmt_bytes(practical['decisions'])} of decisions{gpu})",
    )


def check_size(n: int, name: str = ""):
    """Refuse sizes that no computer can run (decisions of more than 5 bits: n > 33), in constant
    time whatever ``n`` (the figures of the message are estimates beyond :data:`EXACT_FIGURES`)."""
    if n > MAX_CITIES:
        raise _too_big(
            n,
            name,
            _estimates(n),
            f"this solver takes at most {MAX_CITIES} cities ({DECISION_BITS}-bit decisions)",
        )


def check_memory(n: int, dtype, backend: str, memory_budget=None, name: str = "") -> dict:
    """Refuse, before any kernel runs, an instance whose memory cannot fit here; return the figures.

    Host memory is what :func:`gpudp.memory.available_memory` says this process may still use
    (free RAM, and the cgroup's and ``ulimit``'s limits); ``memory_budget`` (bytes, or a text like
    ``8G``; ``0`` keeps the decisions on disk) is checked by :func:`gpudp.memory.parse_bytes`."""
    check_size(n, name)
    budget = default_budget() if memory_budget is None else parse_bytes(memory_budget, "memory_budget")
    need = memory_needed(n, dtype, backend)
    need["seconds"] = _seconds(need["transitions"])
    plan = _plan_memory(n, dtype, backend, budget)  # the store's place under this budget, the host's share
    ram = available_memory()
    on_disk = plan.spill
    if on_disk:
        where = os.environ.get("GPUDP_SPILL_DIR") or tempfile.gettempdir()
        try:
            free = shutil.disk_usage(where).free
        except OSError as e:
            raise InputError("memory_budget", f"cannot see the free disk in {where}: {e}") from None
        if plan.disk > free:
            raise _too_big(
                n,
                name,
                need,
                f"the decisions are over the memory budget ({_fmt_bytes(budget)}) and the free disk "
                f"in {where} ({_fmt_bytes(free)})",
            )
    # as the engine plans it: the two layers of values (in RAM on the cpu backend, on the GPU on
    # cuda), staging, the result's copy, and the decisions unless they spill
    host = plan.host_total
    if host > ram:
        raise _too_big(
            n,
            name,
            need,
            f"that is {_fmt_bytes(host)} of host memory, and this process may use {_fmt_bytes(ram)} "
            "(free RAM, cgroup and ulimit limits counted)",
        )
    info = device_memory(backend)
    if info is not None:
        free_dev = info[0]
        if plan.device > free_dev:
            raise _too_big(
                n,
                name,
                need,
                f"the GPU needs {_fmt_bytes(plan.device)} and has {_fmt_bytes(free_dev)} free",
            )
    need["spills_to_disk"] = on_disk
    return need
