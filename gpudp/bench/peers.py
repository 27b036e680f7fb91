"""Peers the batch benchmarks time beside gpudp on the same machine: StringZilla's cross-product
engines (``stringzillas``, CPU cores and, with ``stringzillas-cuda``, the GPU).

StringZilla 5.3's Python engines score the cross product of two ``Strs``: ``engine(queries,
choices, device=DeviceScope(...))`` gives a ``len(queries) x len(choices)`` array. It has no LCS
engine; the LCS row is its indel distance (``match=0, mismatch=2, open=1, extend=1``: a
substitution costs two gaps) turned into LCS lengths, ``(len(a) + len(b) - indel) / 2``.
"""

from __future__ import annotations

import os
import time

import numpy as np

__all__ = ["best_of", "stringzilla_cross"]


def best_of(fn, repeat: int) -> tuple[float, object]:
    """``(least seconds, last result)`` of ``repeat`` calls of ``fn`` after one warm-up call
    (compilation, a GPU's start)."""
    fn()
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def stringzilla_cross(problem: str, queries: list, choices: list, repeat: int) -> list[dict]:
    """StringZilla's scores of every query against every choice (``problem`` ``"lcs"`` or
    ``"edit"``), on the CPU's cores and on GPU 0 where its CUDA build is installed: one dict a
    device, ``run``, ``where``, ``seconds`` (the best of ``repeat`` after a warm-up), ``build_s``
    (making the two ``Strs``) and ``values`` (an int64 ``len(queries) x len(choices)`` array of LCS
    lengths or edit distances); or ``skipped`` with the reason."""
    name = f"stringzillas LevenshteinDistances{'(indel)' if problem == 'lcs' else ''}"
    try:
        import stringzilla as sz
        import stringzillas as szs
    except ImportError as e:
        return [{"run": name, "skipped": f"not installed ({e})"}]
    t = time.perf_counter()
    a, b = sz.Strs(queries), sz.Strs(choices)
    build_s = time.perf_counter() - t
    costs = {} if problem == "edit" else {"match": 0, "mismatch": 2, "open": 1, "extend": 1}
    scopes = [("cpu", lambda: szs.DeviceScope(cpu_cores=os.cpu_count()))]
    if "cuda" in getattr(szs, "__capabilities__", ()):
        scopes.append(("cuda", lambda: szs.DeviceScope(gpu_device=0)))
    rows = []
    for where, scope in scopes:
        run = f"{name} ({where})"
        try:
            dev = scope()
            engine = szs.LevenshteinDistances(**costs, capabilities=dev)
            s, got = best_of(lambda dev=dev, engine=engine: engine(a, b, device=dev), repeat)
        except Exception as e:  # a device the build cannot use: reported, not fatal
            rows.append({"run": run, "skipped": f"{type(e).__name__}: {e}"})
            continue
        got = np.asarray(got, np.int64).reshape(len(queries), len(choices))
        if problem == "lcs":  # indel distance -> LCS length
            la = np.array([len(x) for x in queries])[:, None]
            lb = np.array([len(y) for y in choices])[None, :]
            got = (la + lb - got) // 2
        rows.append({"run": run, "where": where, "seconds": s, "build_s": build_s, "values": got})
    return rows
