"""The lowering registry: which code runs a shape (or a plug-in's own step) on which backend.

A *family* is a shape of the engine (``"interval"``, ``"grid3"``, ``"many"``, ...) or a plug-in's
own step that has code per backend (``"subset_sum.merge"``). Its lowerings are modules, one a
backend, declared where the family lives::

    lowering.declare("interval", cpu="gpudp.interval.cpu", cuda="gpudp.interval.cuda")

and looked up by whoever runs it::

    run = lowering.get("interval", backend).run

A lowering module is imported on first use only (a ``cuda`` module imports the CUDA compiler: the
CPU never pays for it). Nobody outside the backends, the benchmarks and the command line branches on
a backend's name: it asks the registry, or the backend object (:mod:`gpudp.backends`) for what it
can do. A family or backend with no lowering is a :class:`~gpudp.errors.BackendError` that lists
what is declared.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import BackendError

__all__ = ["declare", "get", "declared", "missing"]

#: family -> {backend: module name}
_DECLARED: dict[str, dict[str, str]] = {}


def declare(family: str, **modules: str) -> None:
    """Declare ``family``'s lowering modules, one keyword a backend (``cpu="pkg.cpu"``). Declaring
    the same module again is harmless; another module for a declared pair is an error."""
    have = _DECLARED.setdefault(family, {})
    for backend, module in modules.items():
        if have.get(backend, module) != module:
            raise BackendError(f"{family!r} on {backend!r} is declared twice: {have[backend]} and {module}")
        have[backend] = module


def declared() -> dict[str, tuple[str, ...]]:
    """``{family: backends}`` of every declaration made so far (a family is declared when the
    module that owns it is imported)."""
    return {f: tuple(sorted(m)) for f, m in sorted(_DECLARED.items())}


def missing(backends: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """``{family: the backends of `backends` it has no lowering on}`` (families complete: left out)."""
    out = {f: tuple(b for b in backends if b not in m) for f, m in sorted(_DECLARED.items())}
    return {f: bs for f, bs in out.items() if bs}


def get(family: str, backend: str) -> ModuleType:
    """The module that lowers ``family`` on ``backend`` (imported now if it was not).

    Raises
    ------
    BackendError
        when ``family`` is not declared, or has no lowering on ``backend``: the message lists the
        families and backends that are.
    """
    have = _DECLARED.get(family)
    if have is None:
        known = ", ".join(f"{f} ({', '.join(b)})" for f, b in declared().items()) or "none"
        raise BackendError(f"no lowering of {family!r} is declared; declared: {known}")
    if backend not in have:
        raise BackendError(
            f"{family!r} has no lowering on backend {backend!r}; it runs on {', '.join(sorted(have))}"
        )
    return importlib.import_module(have[backend])
