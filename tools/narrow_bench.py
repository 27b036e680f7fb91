"""Cells written as plain Python (no casts), swept with the int32 rewrite (gpudp.recurrence.narrow)
and without it (GPUDP_NARROW=0), in one process, passes alternating; the kernels' SASS read for
Hopper's DPX instructions.

    python tools/narrow_bench.py OUT.json [--sizes 16384,32768] [--backend cuda] [--repeat 3]
        [--problems sw,gotoh,osa]

- sw: Smith-Waterman, linear gap, 2-bit decisions, the best cell by the engine's reduction;
- gotoh: affine gaps in a record of three int32 fields (values only: no decisions);
- osa: the optimal-string-alignment (restricted Damerau) distance, offsets up to (-2, -2), swept by
  tiles through a widened record cell (gpudp/grid/wide.py).

Each row: median seconds of the whole sweep and of its kernels (stats.kernel_seconds), GCUPS, the
arithmetic the engine reports, and the two answers (equal, or the run fails). With ``--sass`` (a real
GPU with nvdisasm), the opcode counts of the tiled kernels of each class.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter

import numpy as np

from gpudp import GridRecurrence, sweep
from gpudp.info import info

NEG = -(1 << 29)


class Pair(GridRecurrence):
    """Two byte sequences; the row and column symbols (255 and 254 before them: no match)."""

    symbols = True

    def shape(self):
        return len(self.a) + 1, len(self.b) + 1

    def row_symbols(self):
        return np.concatenate(([255], self.a)).astype(np.uint8)

    def col_symbols(self):
        return np.concatenate(([254], self.b)).astype(np.uint8)


class SW(Pair):
    value_dtype = np.int32
    decision_bits = 2
    reduce = "max"

    def __init__(self, a, b):
        self.a, self.b = a, b
        self.scores = (np.int32(2), np.int32(-1), np.int32(2))

    def data(self):
        return self.scores

    @staticmethod
    def cell(i, j, up, left, diag, ri, cj, match, mismatch, gap):
        if i == 0 or j == 0:
            return 0, 0
        h = max(diag + (match if ri == cj else mismatch), 0)
        d = 1
        if up - gap > h:
            h, d = up - gap, 2
        if left - gap > h:
            h, d = left - gap, 3
        return (h, 0) if h == 0 else (h, d)


class Gotoh(Pair):
    value_dtype = np.dtype([("m", np.int32), ("x", np.int32), ("y", np.int32)])
    fill = NEG

    def __init__(self, a, b):
        self.a, self.b = a, b
        self.scores = (np.int32(2), np.int32(-1), np.int32(4), np.int32(1))

    def data(self):
        return self.scores

    @staticmethod
    def cell(i, j, up, left, diag, ri, cj, match, mismatch, opening, extend):
        if i == 0 and j == 0:
            return (0, NEG, NEG)
        x = max(up[0] - opening, up[1] - extend, NEG)
        y = max(left[0] - opening, left[2] - extend, NEG)
        m = NEG
        if i > 0 and j > 0:
            m = max(diag[0], diag[1], diag[2]) + (match if ri == cj else mismatch)
        return (max(m, NEG), x, y)

    @staticmethod
    def boundary(i, j, match, mismatch, opening, extend):
        return (NEG, NEG, NEG)


class OSA(GridRecurrence):
    value_dtype = np.int32
    offsets = ((-1, 0), (0, -1), (-1, -1), (-2, -2))

    def __init__(self, a, b):
        self.a, self.b = a, b

    def shape(self):
        return len(self.a) + 1, len(self.b) + 1

    def data(self):
        return self.a, self.b

    @staticmethod
    def cell(i, j, up, left, diag, diag2, a, b):
        if i == 0:
            return j
        if j == 0:
            return i
        cost = 0 if a[i - 1] == b[j - 1] else 1
        d = min(up + 1, left + 1, diag + cost)
        if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
            d = min(d, diag2 + 1)
        return d

    @staticmethod
    def boundary(i, j, a, b):
        return i + j + 2


PROBLEMS = {"sw": SW, "gotoh": Gotoh, "osa": OSA}


def _answer(name, r):
    if name == "sw":
        return [int(r.best_value), list(r.best_cell)]
    return np.asarray(r.last_row).tolist()[-3:]


def _time(name, cls, a, b, backend, narrow):
    os.environ["GPUDP_NARROW"] = "1" if narrow else "0"
    t = time.perf_counter()
    r = sweep(cls(a, b), backend=backend, traceback=False)
    wall = time.perf_counter() - t
    return wall, r.stats.kernel_seconds, r.stats.extra.get("arithmetic"), _answer(name, r)


def _sass(classes) -> dict:
    """Opcode counts of the tiled kernels built for each class (by name and arithmetic)."""
    from gpudp.backends.cuda.tiled import _KERNELS

    out = {}
    for k in _KERNELS.built():
        rec = k.parts["rec"]
        label = f"{rec.__name__} ({'narrow' if getattr(rec, '_narrow', None) else 'as written'})"
        try:
            texts = k.fn.inspect_sass()
        except Exception as e:  # no nvdisasm
            out[label] = {"error": repr(e)}
            continue
        ops = Counter()
        for text in texts.values() if isinstance(texts, dict) else [texts]:
            for line in text.splitlines():
                parts = line.split("*/")
                if len(parts) < 2:
                    continue
                body = parts[1].strip().lstrip("@!P0123456789 ").split()
                if body:
                    ops[body[0].split(".")[0]] += 1
        keep = ("VIADDMNMX", "VIMNMX", "VIMNMX3", "IMNMX", "IADD3", "ISETP", "SEL", "IMAD", "SHFL")
        out[label] = {o: ops.get(o, 0) for o in keep} | {"total": sum(ops.values())}
    del classes
    return out


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--sizes", default="16384")
    p.add_argument("--backend", default="cuda")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--problems", default="sw,gotoh,osa")
    p.add_argument("--sass", action="store_true")
    args = p.parse_args(argv)
    rng = np.random.default_rng(7)
    rows = []
    for name in args.problems.split(","):
        cls = PROBLEMS[name]
        for n in (int(x) for x in args.sizes.split(",")):
            a = rng.integers(0, 4, n).astype(np.uint8)
            b = rng.integers(0, 4, n).astype(np.uint8)
            if name == "osa":
                a, b = a.astype(np.int32), b.astype(np.int32)
            runs = {True: [], False: []}
            answers = {}
            for narrow in (True, False):  # warm-up: compile both
                answers[narrow] = _time(name, cls, a, b, args.backend, narrow)[3]
            if answers[True] != answers[False]:
                sys.exit(f"{name} n={n}: narrow {answers[True]} != as written {answers[False]}")
            for _ in range(args.repeat):
                for narrow in (True, False):
                    runs[narrow].append(_time(name, cls, a, b, args.backend, narrow))
            cells = (n + 1) ** 2
            for narrow in (True, False):
                wall = statistics.median(r[0] for r in runs[narrow])
                kern = statistics.median(r[1] for r in runs[narrow])
                row = {
                    "problem": name,
                    "n": n,
                    "backend": args.backend,
                    "narrow": narrow,
                    "arithmetic": runs[narrow][-1][2],
                    "seconds": wall,
                    "kernel_seconds": kern,
                    "gcups": cells / wall / 1e9,
                    "kernel_gcups": cells / kern / 1e9 if kern else None,
                    "answer": answers[narrow],
                }
                rows.append(row)
                print(
                    f"{name:6} n={n:6} {'narrow' if narrow else 'wide  '} {wall:8.4f} s "
                    f"{row['gcups']:7.1f} GCUPS (kernels {kern:8.4f} s) {row['arithmetic']}",
                    flush=True,
                )
    out = {"info": info(), "rows": rows}
    if args.sass:
        out["sass"] = _sass(PROBLEMS)
        for label, ops in out["sass"].items():
            print(label, ops)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1, default=str)


if __name__ == "__main__":
    main()
