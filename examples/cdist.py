"""Every query against every choice: the LCS lengths and the edit distances of a cross product, as a
2-D array (rapidfuzz's ``process.cdist`` shape), no pair made.

    python examples/cdist.py [--queries 200 --choices 300 --length 60] [--cutoff K]
                             [--backend auto|cpu|cuda]

The choices are random words of about ``--length`` letters; each query is a choice with about a
tenth of its letters substituted, so that every query has one close choice. ``--cutoff``: the
largest edit distance of interest (rapidfuzz's ``score_cutoff``: a distance above it is reported as
``cutoff + 1``). A few cells of each product are re-solved by the checked one-pair path and
compared.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from gpudp.problems import edit_distance, lcs


def words(count: int, length: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """``(queries, choices)``: ``count[1]`` random lower-case words of ``length`` letters, give or take
    a fifth, and ``count[0]`` queries, each a choice with about a tenth of its letters replaced."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    choices = [
        "".join(rng.choice(letters, rng.integers(length * 4 // 5, length * 6 // 5 + 1)))
        for _ in range(count[1])
    ]
    queries = []
    for k in rng.integers(0, len(choices), count[0]):
        w = np.array(list(choices[k]))
        hit = rng.random(len(w)) < 0.1
        w[hit] = rng.choice(letters, hit.sum())
        queries.append("".join(w))
    return queries, choices


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--choices", type=int, default=300)
    ap.add_argument("--length", type=int, default=60)
    ap.add_argument("--cutoff", type=int, default=None)
    ap.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    args = ap.parse_args(argv)
    queries, choices = words((args.queries, args.choices), args.length)
    print(f"{len(queries)} queries x {len(choices)} choices of about {args.length} letters:")
    t = time.perf_counter()
    lengths = lcs.cdist(queries, choices, backend=args.backend)
    t_lcs = time.perf_counter() - t
    t = time.perf_counter()
    dist = edit_distance.cdist(queries, choices, backend=args.backend, score_cutoff=args.cutoff)
    t_ed = time.perf_counter() - t
    print(f"  LCS lengths {lengths.shape} {lengths.dtype} in {t_lcs:.3f} s")
    print(f"  edit distances {dist.shape} {dist.dtype} in {t_ed:.3f} s")
    best = dist.argmin(axis=1)
    for i in range(min(3, len(queries))):
        j = int(best[i])
        print(f"  {queries[i]!r}: nearest {choices[j]!r}, distance {dist[i, j]}, LCS {lengths[i, j]}")


if __name__ == "__main__":
    main()
