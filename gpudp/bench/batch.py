"""``gpudp bench batch``: many moderate instances in one call (issue 15), written as JSON.

LCS lengths and Levenshtein distances of ``--pairs`` pairs of random DNA of ``--length`` x
``--length`` by :func:`gpudp.problems.lcs.solve_many` and
:func:`gpudp.problems.edit_distance.solve_many` (bit-parallel) on each backend, from a list of
pairs of byte arrays, from a list of ``(str, str)`` (what users hold; both lists are read in bulk)
and from two 2-D arrays, median of ``--repeat`` after a warm-up; beside them, on the same
machine, rapidfuzz's ``process.cpdist`` (``LCSseq.similarity``, ``Levenshtein.distance``) on every
core (where rapidfuzz is installed). Every value is compared with the peer's.

With their witnesses (``traceback=True``): the LCS of **every** pair with its subsequence (the
stored bit vectors walked back, every subsequence checked), from both forms on each backend, timed
end to end (pairs in host memory to the returned result holding the checked positions; the time to
make every subsequence a Python object is reported apart); beside it rapidfuzz's
``LCSseq.editops`` (one pair a call, one thread) on ``--traceback-pairs`` pairs. The edit distance
still solves each pair with its script by one engine sweep: timed on ``--traceback-pairs``.
"""

from __future__ import annotations

import datetime
import importlib
import os
import statistics
import time

import numpy as np

from gpudp.backends import device_name
from gpudp.errors import CheckError

from . import options
from .instances import random_dna


def bench_arguments(p):
    p.add_argument(
        "--problems",
        type=options.choice_list(*PROBLEMS),
        default="lcs,edit",
        help="comma-separated: lcs, edit (Levenshtein)",
    )
    p.add_argument("--pairs", type=options.positive_int, default=100_000, help="pairs in the batch")
    p.add_argument("--length", type=options.positive_int, default=1000, help="length of each sequence")
    p.add_argument("--repeat", type=options.positive_int, default=3, help="timed runs (median)")
    p.add_argument(
        "--traceback-pairs",
        type=options.non_negative_int,
        default=200,
        help="pairs timed one by one: rapidfuzz's LCSseq.editops, and the edit distance with traceback=True",
    )
    p.add_argument("--seed", type=options.seed, default=0)


def _timed(fn, repeat):
    out = fn()  # warm-up: compilation, the GPU's start
    runs = []
    for _ in range(repeat):
        out = None  # the last result goes first (a batch of subsequences gives its page-locked block back)
        t = time.perf_counter()
        out = fn()
        runs.append(time.perf_counter() - t)
    return out, runs


#: problem -> (module of solve_many, rapidfuzz scorer name, what the values are)
PROBLEMS = {
    "lcs": ("gpudp.problems.lcs", "LCSseq.similarity", "LCS lengths"),
    "edit": ("gpudp.problems.edit_distance", "Levenshtein.distance", "edit distances"),
}


def cli_bench(args) -> dict:
    backends = options.backend_list(args.backends)
    rng = np.random.default_rng(args.seed)
    n, length = args.pairs, args.length
    seqs = [(random_dna(length, rng), random_dna(length, rng)) for _ in range(n)]
    arrays = (np.stack([a for a, _ in seqs]), np.stack([b for _, b in seqs]))
    texts = [(a.tobytes().decode("ascii"), b.tobytes().decode("ascii")) for a, b in seqs]  # what users hold
    cells = n * length * length
    rows = []
    for problem in args.problems:
        module, scorer, what = PROBLEMS[problem]
        solve_many = importlib.import_module(module).solve_many
        reference = _peer(rows, problem, scorer, seqs, cells, args.repeat)
        forms = (("list of pairs", seqs), ("list of (str, str)", texts), ("two 2-D arrays", arrays))
        for backend, (form, batch) in [(b, f) for b in backends for f in forms]:
            res, runs = _timed(lambda b=backend, x=batch, f=solve_many: f(x, backend=b), args.repeat)
            if reference is None:
                reference = res.values
            if not np.array_equal(res.values, reference):
                raise CheckError(
                    f"{problem}, {backend}: {int((res.values != reference).sum())} {what} differ"
                )
            med = statistics.median(runs)
            rows.append(
                {
                    "problem": problem,
                    "run": f"solve_many, bit-parallel, {form}",
                    "backend": backend,
                    "device": device_name(backend),
                    "seconds": med,
                    "runs": runs,
                    "gcups": cells / med / 1e9,
                    "kernel_seconds": res.stats.kernel_seconds,
                    "gcups_kernel": cells / res.stats.kernel_seconds / 1e9
                    if res.stats.kernel_seconds
                    else None,
                    "verified_pairs": len(res.verified),
                }
            )
            _log(rows[-1])
            if problem == "lcs":
                rows.append(
                    _subsequences_row(solve_many, backend, form, batch, reference, cells, args.repeat)
                )
                _log(rows[-1])
            k = min(args.traceback_pairs, n)
            if k and form == "list of pairs" and problem != "lcs":
                sub = seqs[:k]
                res, runs = _timed(
                    lambda b=backend, s=sub, f=solve_many: f(s, backend=b, traceback=True, progress=False), 1
                )
                if not np.array_equal(res.values, reference[:k]):
                    raise CheckError(f"{problem}, {backend}, traceback=True: {what} differ from the batch's")
                rows.append(
                    {
                        "problem": problem,
                        "run": "solve_many, traceback=True (one sweep a pair)",
                        "backend": backend,
                        "pairs": k,
                        "seconds": runs[0],
                        "seconds_per_pair": runs[0] / k,
                        "gcups": k * length * length / runs[0] / 1e9,
                    }
                )
                _log(rows[-1])
        if problem == "lcs" and min(args.traceback_pairs, n):
            _editops_peer(rows, seqs[: min(args.traceback_pairs, n)], length)
    return {
        "benchmark": "batch",
        "date": datetime.date.today().isoformat(),
        "workload": {"problems": ",".join(args.problems), "pairs": n, "length": length, "cells": cells},
        "results": rows,
        "goal": "LCS and edit-distance scores of 100,000 pairs of 1,000 x 1,000: >= 1 TCUPS end to end; "
        "LCS subsequences of all of them: >= 200 GCUPS end to end",
    }


def _subsequences_row(solve_many, backend, form, batch, reference, cells, repeat) -> dict:
    """``solve_many(batch, traceback=True)`` on every pair, timed end to end (the result holds every
    pair's checked positions); its lengths against the reference, each subsequence's length against
    its pair's; then the time to make every subsequence a Python object."""
    res, runs = _timed(lambda: solve_many(batch, backend=backend, traceback=True), repeat)
    if not np.array_equal(res.values, reference):
        raise CheckError(
            f"lcs, {backend}, traceback=True: {int((res.values != reference).sum())} lengths differ"
        )
    t = time.perf_counter()
    subs = list(res.subsequences)
    objects_s = time.perf_counter() - t
    if [len(x) for x in subs] != res.values.tolist():
        raise CheckError(f"lcs, {backend}: a subsequence's length differs from its pair's LCS length")
    med = statistics.median(runs)
    st = res.stats
    return {
        "problem": "lcs",
        "run": f"solve_many, traceback=True (every pair's subsequence, checked), {form}",
        "backend": st.backend,
        "device": st.device,
        "seconds": med,
        "runs": runs,
        "gcups": cells / med / 1e9,
        "kernel_seconds": st.kernel_seconds,
        "gcups_kernel": cells / st.kernel_seconds / 1e9 if st.kernel_seconds else None,
        "vectors_and_walk_seconds": st.extra.get("vectors_and_walk_s"),
        "check_seconds": st.extra.get("check_s"),
        "chunks": st.extra.get("chunks"),
        "store_bytes": st.extra.get("store_bytes"),
        "matched_pairs": int(res.values.sum()),
        "subsequences_as_objects_seconds": objects_s,
    }


def _editops_peer(rows, seqs, length):
    """rapidfuzz's ``LCSseq.editops`` (its subsequence's edit operations), one pair a call on one
    thread: the CPU peer for the subsequences (it has no batch form)."""
    try:
        from rapidfuzz.distance import LCSseq
    except ImportError:
        rows.append({"problem": "lcs", "run": "rapidfuzz LCSseq.editops", "skipped": "not installed"})
        return
    qa = [a.tobytes().decode() for a, _ in seqs]
    qb = [b.tobytes().decode() for _, b in seqs]
    _, runs = _timed(lambda: [LCSseq.editops(x, y) for x, y in zip(qa, qb, strict=True)], 1)
    rows.append(
        {
            "problem": "lcs",
            "run": "rapidfuzz LCSseq.editops, one pair a call",
            "threads": 1,
            "pairs": len(seqs),
            "seconds": runs[0],
            "seconds_per_pair": runs[0] / len(seqs),
            "gcups": len(seqs) * length * length / runs[0] / 1e9,
        }
    )
    _log(rows[-1])


def _peer(rows, problem, scorer, seqs, cells, repeat):
    """rapidfuzz's ``process.cpdist`` on every core: its values (the reference), or None."""
    try:
        from rapidfuzz import distance, process
    except ImportError:
        rows.append({"problem": problem, "run": "rapidfuzz process.cpdist", "skipped": "not installed"})
        return None
    cls, fn = scorer.split(".")
    score = getattr(getattr(distance, cls), fn)
    qa = [a.tobytes().decode() for a, _ in seqs]
    qb = [b.tobytes().decode() for _, b in seqs]
    peer, runs = _timed(lambda: process.cpdist(qa, qb, scorer=score, workers=-1), repeat)
    med = statistics.median(runs)
    rows.append(
        {
            "problem": problem,
            "run": f"rapidfuzz process.cpdist {scorer}",
            "threads": os.cpu_count(),
            "seconds": med,
            "runs": runs,
            "gcups": cells / med / 1e9,
        }
    )
    _log(rows[-1])
    return np.asarray(peer, np.int64)


def _log(row):
    print(
        "  "
        + ", ".join(
            f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items() if k != "runs"
        ),
        flush=True,
    )
