"""Issue 38: a batch given as a list of (str, str) against the same pairs as two 2-D arrays, and
rapidfuzz's cpdist beside (where installed). Median of --repeat warm calls each, JSON lines.

    python tools/str_forms.py OUT.json [--backend cuda] [--cases 100000x1000,1000000x100,50000x50-400]
"""

import argparse
import json
import statistics
import time
from functools import partial

import numpy as np

from gpudp.problems import edit_distance, lcs


def cases(spec):
    for item in spec.split(","):
        count, length = item.split("x")
        lo, _, hi = length.partition("-")
        yield int(count), int(lo), int(hi or lo)


def timed(fn, repeat):
    fn()
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--cases", default="100000x1000,1000000x100,50000x50-400")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for count, lo, hi in cases(args.cases):
        lens = rng.integers(lo, hi + 1, (2, count))
        buf = rng.integers(97, 101, int(lens.sum()), dtype=np.uint8).tobytes().decode()
        cut = np.concatenate([[0], np.cumsum(lens.ravel())])
        strs = [buf[cut[k] : cut[k + 1]] for k in range(2 * count)]
        pairs = list(zip(strs[:count], strs[count:], strict=True))
        arrays = None
        if lo == hi:
            flat = np.frombuffer(buf.encode(), np.uint8)
            arrays = (flat[: count * lo].reshape(count, lo), flat[count * lo :].reshape(count, lo))
        for name, mod in (("lcs", lcs), ("edit", edit_distance)):
            row = {"problem": name, "count": count, "length": [lo, hi], "backend": args.backend}
            solve = partial(mod.solve_many, backend=args.backend)
            row["str_s"], got = timed(partial(solve, pairs), args.repeat)
            if arrays is not None:
                row["arrays_s"], ref = timed(partial(solve, arrays), args.repeat)
                row["equal"] = bool(np.array_equal(np.asarray(got.values), np.asarray(ref.values)))
                row["str_over_arrays"] = row["str_s"] / row["arrays_s"]
            try:
                from rapidfuzz import distance, process

                scorer = distance.LCSseq.similarity if name == "lcs" else distance.Levenshtein.distance
                peer = partial(process.cpdist, strs[:count], strs[count:], scorer=scorer, workers=-1)
                row["rapidfuzz_cpdist_s"], _ = timed(peer, args.repeat)
            except ImportError:
                pass
            print(json.dumps(row), flush=True)
            rows.append(row)
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
