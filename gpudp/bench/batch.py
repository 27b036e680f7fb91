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

``--forms`` picks the forms (``pairs``, ``str``, ``arrays``; ``cdist``: the cross product of
``isqrt(--pairs)`` queries and as many choices by ``cdist``), ``--peers`` the peers (rapidfuzz;
``stringzilla``, whose engines compute cross products only: beside the ``cdist`` form; ``none``).
The JSON's ``side_by_side`` pairs every gpudp row with each peer's on the same pairs (``ratio``: the
peer's seconds over gpudp's).
"""

from __future__ import annotations

import datetime
import importlib
import math
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
    p.add_argument(
        "--forms",
        type=options.choice_list(*FORMS),
        default="pairs,str,arrays",
        help="comma-separated: pairs (a list of pairs of byte arrays), str (a list of (str, str)), arrays "
        "(two 2-D arrays), cdist (the cross product of isqrt(--pairs) queries and as many choices)",
    )
    p.add_argument(
        "--peers",
        type=options.choice_list(*PEERS, alone=("none",)),
        default="rapidfuzz",
        help="comma-separated: rapidfuzz (process.cpdist / cdist, every core), stringzilla (its "
        "cross-product engines: the cdist form only), or none",
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


#: the forms a batch is given in (--forms), by name: what the rows call them
FORMS = {"pairs": "list of pairs", "str": "list of (str, str)", "arrays": "two 2-D arrays", "cdist": "cdist"}
#: the peers --peers may name
PEERS = ("rapidfuzz", "stringzilla", "none")

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
        reference = None
        if "rapidfuzz" in args.peers:
            reference = _peer(rows, problem, scorer, seqs, cells, args.repeat)
        given = {"pairs": seqs, "str": texts, "arrays": arrays}
        forms = [(FORMS[f], given[f]) for f in args.forms if f != "cdist"]
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
        if problem == "lcs" and min(args.traceback_pairs, n) and "rapidfuzz" in args.peers:
            _editops_peer(rows, seqs[: min(args.traceback_pairs, n)], length)
        if "cdist" in args.forms:
            rows += _cross_rows(problem, texts, backends, args.peers, args.repeat)
    return {
        "benchmark": "batch",
        "date": datetime.date.today().isoformat(),
        "workload": {"problems": ",".join(args.problems), "pairs": n, "length": length, "cells": cells},
        "results": rows,
        "side_by_side": side_by_side(rows),
        "goal": "LCS and edit-distance scores of 100,000 pairs of 1,000 x 1,000: >= 1 TCUPS end to end; "
        "LCS subsequences of all of them: >= 200 GCUPS end to end",
    }


def _cross_rows(problem: str, texts: list, backends: list, peers: list, repeat: int) -> list[dict]:
    """The ``cdist`` form: ``problem``'s ``cdist`` of the first ``isqrt(len(texts))`` pairs' first
    sequences (the queries) against their second ones (the choices) on each backend, and the peers'
    cross products of the same (rapidfuzz's ``process.cdist`` on every core, StringZilla's engines);
    every peer's values compared with gpudp's first."""
    from .peers import best_of, stringzilla_cross

    side = math.isqrt(len(texts))
    q, c = [a for a, _ in texts[:side]], [b for _, b in texts[:side]]
    cells = sum(map(len, q)) * sum(map(len, c))
    cdist = importlib.import_module(PROBLEMS[problem][0]).cdist
    rows, want = [], None
    for backend in backends:
        s, got = best_of(lambda b=backend: cdist(q, c, backend=b), repeat)
        want = got if want is None else want
        if not np.array_equal(got, want):
            raise CheckError(f"{problem}, cdist on {backend}: {int((got != want).sum())} values differ")
        rows.append({"problem": problem, "run": "cdist", "backend": backend, "seconds": s})
        rows[-1]["device"] = device_name(backend)
    if "rapidfuzz" in peers:
        try:
            from rapidfuzz import distance, process
        except ImportError:
            rows.append({"problem": problem, "run": "rapidfuzz process.cdist", "skipped": "not installed"})
        else:
            cls, fn = PROBLEMS[problem][1].split(".")
            scorer = getattr(getattr(distance, cls), fn)
            s, got = best_of(lambda: process.cdist(q, c, scorer=scorer, workers=-1), repeat)
            rows.append({"problem": problem, "run": "rapidfuzz process.cdist", "seconds": s, "values": got})
    if "stringzilla" in peers:
        rows += [dict(r, problem=problem) for r in stringzilla_cross(problem, q, c, repeat)]
    for r in rows:
        r.update(form="cdist", queries=side, choices=side, cells=cells)
        if "values" in r:
            if not np.array_equal(np.asarray(r.pop("values"), np.int64), want):
                raise CheckError(f"{problem}, cdist: {r['run']} differs from gpudp's values")
            r["equal"] = True
        if "seconds" in r:
            r["gcups"] = cells / r["seconds"] / 1e9
        _log(r)
    return rows


def side_by_side(rows: list[dict]) -> list[dict]:
    """The table of the run: for each problem and form, gpudp's seconds on each backend beside each
    peer's on the same pairs (``ratio``: the peer's seconds over gpudp's; above 1, gpudp is faster)."""
    table = []
    timed = [r for r in rows if "seconds" in r and "traceback" not in r["run"]]
    for r in timed:
        if not (r["run"].startswith("solve_many, bit-parallel") or r["run"] == "cdist"):
            continue
        form = r.get("form") or r["run"].rsplit(", ", 1)[-1]
        cross = form == "cdist"
        for p in timed:
            same = p.get("form") == "cdist" if cross else "cpdist" in p["run"]
            if p["problem"] == r["problem"] and same and not p["run"].startswith(("cdist", "solve_many")):
                table.append(
                    {
                        "problem": r["problem"],
                        "form": form,
                        "backend": r["backend"],
                        "gpudp_s": r["seconds"],
                        "peer": p["run"],
                        "peer_s": p["seconds"],
                        "ratio": p["seconds"] / r["seconds"],
                    }
                )
    return table


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
