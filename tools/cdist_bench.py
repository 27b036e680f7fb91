"""Cross products, every query against every choice: ``lcs.cdist`` and ``edit_distance.cdist`` on the
cpu and cuda backends, beside rapidfuzz's ``process.cdist`` (every core) and StringZilla's engines
where they are installed; every peer's values compared with gpudp's.

    python tools/cdist_bench.py [--sizes 316x316x1000,1000x1000x100] [--problems lcs,edit]
                                [--backends cpu,cuda] [--repeat 3] [--out FILE.json]
                                [--variants before,kernel,host,default] [--cutoff none,0.1]

A size ``NxMxL`` is N queries and M choices of L random bytes (4 letters, ACGT). Each run is timed
after one warm-up call (compilation), ``--repeat`` times, the best kept; the JSON holds the device,
the versions, each run's seconds and GCUPS (N * M * L * L cell updates a second), and gpudp's
kernel seconds (``kernel_s``: its CUDA events, from the first chunk's masks to the last chunk's
cross kernels), the kernels it ran and where its whole call went (``host_s``: reading both sides,
making the result, the launch, the wait and copy back; ``cross.run``'s ``stats.extra``).

``--cutoff`` times each problem at each ``score_cutoff`` it names: ``none``, or a fraction ``F`` of
the length, a cutoff as tight as a search's (the edit distance's ``round(F * L)``, the LCS's
``round((1 - F) * L)``: ``0.1`` puts the edit distance at 10 % of the length, the LCS at 90 %), so
that the kernels' early stop (``STOP_EVERY``; variant ``nostop`` without it) shows; rapidfuzz gets
the same cutoff, StringZilla (no cutoff) has its values cut off before they are compared. GCUPS
count every cell of the table, computed or not.

``--variants`` runs the cuda backend once for each named setting of the launch's knobs
(:data:`VARIANTS`, :mod:`gpudp.problems.lcs.cross.cuda`: the short patterns' kernels, their texts
read 8 bytes at a time, the one upload, the page-locked result), in one process, so that an A/B
compares like with like; every variant's values are compared with the first run's.

StringZilla's Python engines (stringzillas 5.3: ``LevenshteinDistances``) score the cross product
of two ``Strs`` (``engine(queries, choices, device=DeviceScope(...))`` -> an N x M array; its
``help()`` on the GPU machine, 2026-12-06); building the two ``Strs`` is timed apart (``build_s``).
StringZilla has no LCS engine; its LCS row is the indel distance (``match=0, mismatch=2, open=1,
extend=1``: a substitution costs two gaps) turned into LCS lengths, ``(len(a) + len(b) - indel) /
2``. Every value is compared with gpudp's before its time is kept.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys

import numpy as np

from gpudp.bench.peers import best_of, stringzilla_cross
from gpudp.problems import edit_distance, lcs

#: the solver of each problem and whether its value is a distance (``cross.run``'s arguments)
SOLVERS = {"lcs": (lcs._SOLVER, False), "edit": (edit_distance._SOLVER, True)}
#: knob settings of :mod:`gpudp.problems.lcs.cross.cuda` by name (``default``: as the tree has them)
VARIANTS = {
    "default": {},
    "before": {"SHORT_WORDS": 0, "ONE_UPLOAD": False, "PINNED_RESULT_BYTES": 0},
    "kernel": {"ONE_UPLOAD": False, "PINNED_RESULT_BYTES": 0},
    "narrow": {"WIDE_READS": False},
    "host": {"SHORT_WORDS": 0},
    "short16": {"SHORT_WORDS": 16},
    "threads64": {"THREADS": 64},
    "threads256": {"THREADS": 256},
    "nostop": {"STOP_EVERY": 0},
}


def cdist(problem, q, c, backend, cutoff=None):
    """``(result, stats)`` of ``problem``'s cdist (as ``cdist(q, c, backend=backend,
    score_cutoff=cutoff, verify=0)``)."""
    from gpudp.problems.lcs import cross

    solver, distance = SOLVERS[problem]
    return cross.run(solver, q, c, backend, None, cutoff, 0, distance)


def score_cutoff(problem: str, fraction: str, length: int) -> int | None:
    """The ``score_cutoff`` that ``--cutoff``'s ``fraction`` (``none``, or ``F`` of the length)
    gives ``problem`` for sequences of ``length``: the edit distance's ``round(F * length)``, the
    LCS's ``round((1 - F) * length)``."""
    if fraction == "none":
        return None
    f = float(fraction)
    return round((f if SOLVERS[problem][1] else 1 - f) * length)


def cut_off(values: np.ndarray, problem: str, cutoff: int | None) -> np.ndarray:
    """``values`` as ``score_cutoff`` reports them (rapidfuzz's meaning: a distance above it as
    ``cutoff + 1``, a similarity below it as 0)."""
    if cutoff is None:
        return values
    if SOLVERS[problem][1]:
        return np.where(values > cutoff, cutoff + 1, values)
    return np.where(values < cutoff, 0, values)


def knobs(variant: str) -> dict:
    """Set the cross launch's knobs of ``variant``; returns their values before."""
    from gpudp.problems.lcs.cross import cuda as cross_cuda

    setting = VARIANTS[variant]
    before = {k: getattr(cross_cuda, k) for k in setting}
    for k, v in setting.items():
        setattr(cross_cuda, k, v)
    return before


def data(n: int, m: int, length: int, seed: int = 0) -> tuple[list[bytes], list[bytes]]:
    rng = np.random.default_rng(seed)
    acgt = np.frombuffer(b"ACGT", np.uint8)
    q = acgt[rng.integers(0, 4, (n, length))]
    c = acgt[rng.integers(0, 4, (m, length))]
    return [r.tobytes() for r in q], [r.tobytes() for r in c]


def versions() -> dict:
    out = {"python": platform.python_version(), "numpy": np.__version__}
    for name in ("gpudp", "numba", "numba_cuda", "rapidfuzz", "stringzilla", "stringzillas"):
        try:
            mod = __import__(name)
            out[name] = getattr(mod, "__version__", "?")
        except ImportError:
            out[name] = None
    return out


def device(backends: list[str]) -> dict:
    from gpudp.backends import device_name

    out = {"host": platform.node(), "cpu_count": os.cpu_count()}
    for b in backends:
        try:
            out[b] = device_name(b)
        except Exception as e:  # a backend asked for but not usable here
            out[b] = f"unavailable: {e}"
    return out


def gpudp_rows(
    problem, q, c, backends, repeat, cells, variants=(), cutoff=None
) -> tuple[list[dict], np.ndarray | None]:
    runs = [(b, None) for b in backends if b != "cuda" or not variants]
    runs += [("cuda", v) for v in variants if "cuda" in backends]
    rows, want = [], None
    for backend, variant in runs:
        name = f"gpudp cdist ({backend}{'' if variant is None else f', variant {variant}'})"
        before = knobs(variant) if variant else {}
        try:
            s, (got, stats) = best_of(lambda backend=backend: cdist(problem, q, c, backend, cutoff), repeat)
        except Exception as e:
            rows.append({"run": name, "skipped": f"{type(e).__name__}: {e}"})
            continue
        finally:
            if variant:
                from gpudp.problems.lcs.cross import cuda as cross_cuda

                for k, v in before.items():
                    setattr(cross_cuda, k, v)
        if want is None:
            want = got
        row = {"run": name, "seconds": s, "gcups": cells / s / 1e9, "equal": bool(np.array_equal(got, want))}
        if backend == "cuda":
            row.update(kernel_s=stats.kernel_seconds, kernels=stats.extra.get("kernels"))
            row.update(stop_every=stats.extra.get("stop_every"))
            row.update(host_s=stats.extra.get("host_s"))  # the best run's split of its whole call
        if variant:
            row.update(variant=variant, knobs=VARIANTS[variant])
        rows.append(row)
    return rows, want


def rapidfuzz_row(problem, q, c, repeat, cells, want, cutoff=None) -> dict:
    try:
        from rapidfuzz import process
        from rapidfuzz.distance import LCSseq, Levenshtein
    except ImportError:
        return {"run": "rapidfuzz process.cdist", "skipped": "not installed"}
    scorer = LCSseq.similarity if problem == "lcs" else Levenshtein.distance
    s, got = best_of(lambda: process.cdist(q, c, scorer=scorer, workers=-1, score_cutoff=cutoff), repeat)
    name = "LCSseq.similarity" if problem == "lcs" else "Levenshtein.distance"
    row = {"run": f"rapidfuzz process.cdist {name}, workers=-1", "seconds": s}
    row.update(gcups=cells / s / 1e9, equal=None if want is None else bool(np.array_equal(got, want)))
    return row


def stringzilla_rows(problem, q, c, repeat, cells, want, cutoff=None) -> list[dict]:
    """StringZilla's cross-product engines (:func:`gpudp.bench.peers.stringzilla_cross`; no cutoff:
    its values are cut off before they are compared)."""
    rows = []
    for r in stringzilla_cross(problem, q, c, repeat):
        if "values" in r:
            got = cut_off(r.pop("values"), problem, cutoff)
            r.pop("where")
            r.update(
                gcups=cells / r["seconds"] / 1e9,
                equal=None if want is None else bool(np.array_equal(got, want)),
            )
        rows.append(r)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="316x316x1000,1000x1000x100")
    ap.add_argument("--problems", default="lcs,edit")
    ap.add_argument("--backends", default="cpu,cuda")
    ap.add_argument("--peers", default="rapidfuzz,stringzilla", help="comma-separated; empty: none")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--variants",
        default="",
        help=f"comma-separated knob settings for the cuda runs, of {', '.join(VARIANTS)} (empty: the tree's)",
    )
    ap.add_argument(
        "--cutoff",
        default="none",
        help="comma-separated score_cutoffs: none, or a fraction F of the length (edit distance F * L, "
        "LCS (1 - F) * L)",
    )
    ap.add_argument("--out", default=None, help="JSON file (default: stdout)")
    args = ap.parse_args(argv)
    backends = [b for b in args.backends.split(",") if b]
    peers = {p for p in args.peers.split(",") if p}
    variants = [v for v in args.variants.split(",") if v]
    fractions = [f for f in args.cutoff.split(",") if f]
    for f in fractions:
        if f != "none" and not 0 <= _float(f) <= 1:
            ap.error(f"--cutoff {f!r}: none, or a fraction of the length from 0 to 1")
    for v in variants:
        if v not in VARIANTS:
            ap.error(f"unknown variant {v!r}: one of {', '.join(VARIANTS)}")
    report = {"tool": "tools/cdist_bench.py", "argv": sys.argv[1:], "device": device(backends)}
    report.update(versions=versions(), runs=[])
    for size in args.sizes.split(","):
        n, m, length = (int(x) for x in size.split("x"))
        q, c = data(n, m, length)
        cells = n * m * length * length
        for problem in args.problems.split(","):
            for fraction in fractions:
                cutoff = score_cutoff(problem, fraction, length)
                rows, want = gpudp_rows(problem, q, c, backends, args.repeat, cells, variants, cutoff)
                if "rapidfuzz" in peers:
                    rows.append(rapidfuzz_row(problem, q, c, args.repeat, cells, want, cutoff))
                if "stringzilla" in peers:
                    rows += stringzilla_rows(problem, q, c, args.repeat, cells, want, cutoff)
                for row in rows:
                    row.update(problem=problem, queries=n, choices=m, length=length, cells=cells)
                    row.update(score_cutoff=cutoff)
                    print(json.dumps(row), file=sys.stderr)
                report["runs"] += rows
    text = json.dumps(report, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return -1.0


if __name__ == "__main__":
    sys.exit(main())
