"""``gpudp.sweep_many`` with the gallery's Needleman-Wunsch and Smith-Waterman cells (scores only)
beside StringZilla's ``NeedlemanWunschScores`` / ``SmithWatermanScores`` on the same card, on the
same cells (issue 37's batch goal).

StringZilla scores the cross product of two lists; so the batch here is the cross product of
``--side`` random DNA strings of ``--length`` bytes with ``--side`` others (316 x 316 = 99,856 pairs
of 1,000 by default), given to ``sweep_many`` as the template and the two lists (``queries=``,
``choices=``: :mod:`gpudp.many.pairs`) and as one instance a pair (a user's own list of objects;
``--forms``). Scores: Needleman-Wunsch match 1, mismatch -1, gap 1 (StringZilla open = extend
= -1: a linear gap); Smith-Waterman match 3, mismatch -3, gap 2; ``gotoh``: examples/affine_alignment.py's
record cell (match 2, mismatch -1, a gap of k symbols 3 + k), its score the best of its three fields,
beside StringZilla's affine gap (both readings of its ``open``). Every pair's score from both is
compared; medians of ``--repeat`` warm runs (each after one warm-up; a run is the call and its
scores read, ``ManyResult.values``), with the batch's intake (the instances read and packed),
kernel and whole seconds (the objects form: one run after its warm-up).

    python tools/many_peers.py OUT.json [--side 316] [--length 1000] [--repeat 3]
        [--problems nw,sw] [--backend cuda] [--forms pairs,objects]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
from examples_of import example

from gpudp import sweep_many
from gpudp.backends import device_name
from gpudp.info import info


def _stringzilla(local: bool, a: list, b: list, repeat: int, gaps=None):
    """StringZilla's cross-product scores on GPU 0 (seconds, scores), or (None, the reason);
    ``gaps``: (open, extend) for an affine gap (match 2, mismatch -1), else the linear gap."""
    try:
        import stringzilla as sz
        import stringzillas as szs
    except ImportError as e:
        return None, f"not importable: {e}"
    gpu = szs.DeviceScope(gpu_device=0)
    classes = (np.arange(256) % 32).astype(np.uint8)  # A C G T: distinct classes
    match, mismatch, gap = (3, -3, -2) if local else (1, -1, -1)
    opening = extend = gap
    if gaps is not None:
        (match, mismatch), (opening, extend) = (2, -1), gaps
    costs = np.full((32, 32), mismatch, np.int8)
    np.fill_diagonal(costs, match)
    kind = szs.SmithWatermanScores if local else szs.NeedlemanWunschScores
    engine = kind(classes, costs, open=opening, extend=extend, capabilities=gpu)
    qa, qb = sz.Strs(a), sz.Strs(b)
    engine(qa, qb, device=gpu)  # warm-up
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = engine(qa, qb, device=gpu)
        times.append(time.perf_counter() - t)
    return statistics.median(times), np.asarray(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--side", type=int, default=316)
    ap.add_argument("--length", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--problems", default="nw,sw")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--forms", default="pairs,objects", help="pairs: template and lists; objects")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    letters = np.frombuffer(b"ACGT", np.uint8)
    a = [letters[rng.integers(0, 4, args.length)].tobytes().decode() for _ in range(args.side)]
    b = [letters[rng.integers(0, 4, args.length)].tobytes().decode() for _ in range(args.side)]
    cells = args.side * args.side * args.length * args.length
    rows = []
    for problem in args.problems.split(","):
        local = problem == "sw"
        conventions = {None: None}
        if local:
            make = example("local_alignment").SmithWaterman
        elif (
            problem == "gotoh"
        ):  # a record cell of three int32 fields: match 2, mismatch -1, open 3, extend 1
            make = example("affine_alignment").Gotoh
            # StringZilla's open: the first gap symbol's cost, or the opening alone (which is the
            # same alignment is found by comparing the scores)
            conventions = {"open = first symbol": (-4, -1), "open = opening alone": (-3, -1)}
        else:
            make = example("many_alignments").GlobalAlignment
        peers = {name: _stringzilla(local, a, b, args.repeat, gaps) for name, gaps in conventions.items()}
        for form in args.forms.split(","):
            t = time.perf_counter()
            if form == "objects":  # one instance a pair, as a user's own list of objects
                recs = [make(x, y) for x in a for y in b]
                call = {"recs": recs}
            else:  # the template and the two lists (gpudp.many.pairs)
                call = {"recs": make("A", "C"), "queries": a, "choices": b}
            build = time.perf_counter() - t
            small = {"recs": recs[:4]} if form == "objects" else {**call, "queries": a[:2], "choices": b[:2]}
            sweep_many(**small, backend=args.backend, traceback=False, progress=False)  # compile
            times, res = [], None
            for _ in range(args.repeat if form == "pairs" else 1):
                t = time.perf_counter()
                res = sweep_many(**call, backend=args.backend, traceback=False, progress=False)
                scores = res.best_values if local else res.values  # the scores read: part of the call
                times.append(time.perf_counter() - t)
            assert not res.errors, list(res.errors.items())[:3]
            ours = np.array([max(v) for v in scores] if problem == "gotoh" else scores, np.int64)
            row = {
                "problem": problem,
                "form": form,
                "pairs": len(res),
                "length": args.length,
                "cells": cells,
                "backend": args.backend,
                "device": device_name(args.backend),
                "versions": info(),
                "instances_seconds": build,
                "seconds": statistics.median(times),
                "gcups": cells / statistics.median(times) / 1e9,
                "kernel_seconds": res.stats.kernel_seconds,
                "kernel_gcups": cells / max(res.stats.kernel_seconds, 1e-12) / 1e9,
                "stats": {k: v for k, v in res.stats.extra.items() if not isinstance(v, list | dict)},
            }
            for name, (peer_s, peer) in peers.items():
                if peer_s is None:
                    row["stringzilla"] = peer
                    continue
                equal = bool(np.array_equal(peer.reshape(-1).astype(np.int64), ours))
                if "equal" in row and not equal:
                    continue  # the other convention's
                row["stringzilla_seconds"] = peer_s
                row["stringzilla_gcups"] = cells / peer_s / 1e9
                row["equal"] = equal
                row["ours_over_stringzilla"] = peer_s / row["seconds"]
                if name is not None:
                    row["stringzilla_gaps"] = name
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k not in ("versions", "stats")}), flush=True)
    Path(args.out).write_text(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    main()
