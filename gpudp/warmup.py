"""``gpudp warmup [PROBLEM ...]``: compile the bundled plug-ins' kernels ahead of time.

Each bundled solver is run on small instances shaped to reach the kernels real instances use (the
CUDA backend's full-size tiles, both integer cell types where a solver picks one by magnitude),
on every backend that can run here. The compiled code lands in the persistent cache
(:mod:`gpudp.cache`), so that the first real solve of a process, or of a container built with
``RUN gpudp warmup``, starts at once.
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["PROBLEMS", "FAMILIES", "warmup", "calibrate"]


def _lcs(backend):
    from .problems import edit_distance, lcs

    rng = np.random.default_rng(0)
    a, b = ("".join(rng.choice(list("ACGT"), n)) for n in (300, 280))
    lcs.solve(a, b, backend=backend, progress=False, method="wavefront")  # the engine's kernels
    lcs.solve(a, b, backend=backend, progress=False)  # and the pair's bit vectors where they run
    for solver in (lcs, edit_distance):  # batches and cross products, lengths and distances
        solver.solve_many([(a, b), (b[:90], a[:70])], backend=backend)
        solver.cdist([a, b[:90]], [b, a[:70]], backend=backend)


def _knapsack(backend):
    from .problems import knapsack
    from .problems.knapsack.io import validate

    rng = np.random.default_rng(0)
    w = rng.integers(1, 60, 24)
    for p in (w + 10, (w + 10) * (1 << 40)):  # int32 and int64 cells
        inst = validate(p, w, int(w.sum() // 2))
        knapsack.solve_instance(inst, method="dp", backend=backend)
        knapsack.solve_instance(inst, method="bb", backend=backend, cpu_threshold=0)  # the GPU frontier too
        knapsack.solve_instance(inst, method="sparse")  # on the CPU whatever the backend
    real = validate(w + 0.5, w + 0.25, float(w.sum() / 2))
    knapsack.solve_instance(real, method="bb", backend=backend, cpu_threshold=0)
    from .problems.knapsack import reach

    reach.warm()  # auto's choice where the DP refuses and few items fit (on the CPU whatever the backend)


def _subset_sum(backend):
    from .problems import subset_sum

    rng = np.random.default_rng(0)
    w = rng.integers(1, 1000, 20)
    subset_sum.solve(w, int(w[::3].sum()), backend=backend)


def _tsp(backend):
    from .problems.tsp import held_karp as hk

    rng = np.random.default_rng(0)
    d = rng.integers(1, 100, (7, 7))
    hk.solve(d, backend=backend)
    hk.solve(d * (1 << 33), backend=backend)  # int64 cells
    hk.solve(d + 0.5, backend=backend)


PROBLEMS = {"lcs": _lcs, "knapsack": _knapsack, "subset-sum": _subset_sum, "tsp": _tsp}
#: the kernel families (gpudp.backends.rates) each bundled plug-in's ``auto`` predicts by
FAMILIES = {
    "lcs": ("grid", "bitparallel"),
    "knapsack": ("knapsack_dp",),
    "subset-sum": ("subset_sum",),
    "tsp": ("tsp",),
}


def _checked(problems) -> list[str]:
    problems = list(problems or PROBLEMS)
    unknown = [p for p in problems if p not in PROBLEMS]
    if unknown:
        from .errors import InputError

        raise InputError("problem", f"unknown {', '.join(unknown)}; choose from {', '.join(PROBLEMS)}")
    return problems


def warmup(problems=None, backends=None, log=None) -> list[dict]:
    """Compile the named bundled plug-ins (all by default) for the named backends (cpu, and cuda
    when a GPU is usable, by default). Returns one row per (problem, backend) with the seconds it
    took; ``log`` (a callable) is told of each row as it finishes."""
    from .backends import cuda_usable

    problems = _checked(problems)
    backends = list(backends or (["cpu", "cuda"] if cuda_usable() else ["cpu"]))
    rows = []
    for p in problems:
        for be in backends:
            t = time.perf_counter()
            PROBLEMS[p](be)
            row = {"problem": p, "backend": be, "seconds": round(time.perf_counter() - t, 3)}
            rows.append(row)
            if log:
                log(row)
    return rows


def calibrate(problems=None, backends=None, log=None) -> list[dict]:
    """Measure the rates of the kernel families the named bundled plug-ins (all by default) predict
    by, on the named backends (every usable one by default), and with cuda the GPU's start-up; store
    them beside the kernel cache for this machine (:mod:`gpudp.backends.rates`). Run it after
    :func:`warmup`: a measurement's first run at each size compiles or loads, and is not counted.

    Parameters
    ----------
    problems : iterable of names of :data:`PROBLEMS`, or None for all
    backends : iterable of backend names, or None for every usable one
    log : callable told of each row as it finishes, or None

    Returns
    -------
    list of dict, one per (family, backend): ``family``, ``backend``, ``rate``, ``unit``,
    ``seconds`` (what the measurement took)

    Raises
    ------
    InputError
        an unknown problem.
    """
    from . import backends as registry
    from .problems import knapsack, lcs, subset_sum, tsp  # noqa: F401  (each registers its measurements)

    problems = _checked(problems)
    families = [f for p in problems for f in FAMILIES[p]]
    return registry.calibrate(families, backends, log)
