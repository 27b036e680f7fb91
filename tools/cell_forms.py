"""Time two ways of writing the same cell on the GPU: parameters in a data array with numba's
default 64-bit arithmetic (the gallery's form before 2026-11-26, written out here), and the form of
the gallery and of the tutorial's section 17 (parameters as scalars in ``data()``, arithmetic kept
in int32 with ``np.int32(...)``).

    python tools/cell_forms.py OUT.jsonl [--n 131072] [--tiles 64x128,128x128] [--repeat 3]

For Smith-Waterman (examples/local_alignment.py) and Gotoh (examples/affine_alignment.py): one JSON
line per (problem, form, tile) with the median whole time (sweep and traceback), kernel seconds,
GCUPS of both, registers a thread and the device. Every form's score and path must equal the
first form's (same recurrence, same ties), or the script stops.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import time

import numpy as np
from tile_sweep import _example  # tools/ is the script's folder

I32 = np.int32


sw = _example("local_alignment")
go = _example("affine_alignment")
NEG, M, X, Y = go.NEG, go.M, go.X, go.Y
STOP, DIAG, UP, LEFT = sw.STOP, sw.DIAG, sw.UP, sw.LEFT


class SmithWaterman64(sw.SmithWaterman):
    """The scores in an array, numba's default (64-bit) arithmetic."""

    def data(self):
        return (np.array(self.scores, np.int32),)

    @staticmethod
    def cell(i, j, up, left, diag, ri, cj, scores):
        h, how = diag + (scores[0] if ri == cj else scores[1]), DIAG
        if up - scores[2] > h:
            h, how = up - scores[2], UP
        if left - scores[2] > h:
            h, how = left - scores[2], LEFT
        if h <= 0:
            return 0, STOP
        return h, how

    @staticmethod
    def boundary(i, j, scores):
        return 0

    @staticmethod
    def back(i, j, how, scores):
        if how == DIAG:
            return i - 1, j - 1
        if how == UP:
            return i - 1, j
        if how == LEFT:
            return i, j - 1
        return -1, -1


class Gotoh64(go.Gotoh):
    """The scores in an array, numba's default (64-bit) arithmetic."""

    def data(self):
        return (np.array(self.scores, np.int32),)

    @staticmethod
    def cell(i, j, up, left, diag, ri, cj, scores):
        if i == 0 and j == 0:
            return (0, NEG, NEG), 0
        x, dx = max(up[M] - scores[2], NEG), 0
        if up[X] - scores[3] > x:
            x, dx = up[X] - scores[3], 1
        y, dy = max(left[M] - scores[2], NEG), 0
        if left[Y] - scores[3] > y:
            y, dy = left[Y] - scores[3], 1
        m, dm = diag[M], M
        if diag[X] > m:
            m, dm = diag[X], X
        if diag[Y] > m:
            m, dm = diag[Y], Y
        m = max(m + (scores[0] if ri == cj else scores[1]), NEG) if i > 0 and j > 0 else NEG
        return (m, x, y), dm | (dx << 2) | (dy << 3)

    @staticmethod
    def boundary(i, j, scores):
        return (NEG, NEG, NEG)

    @staticmethod
    def back(i, j, decision, state, scores):
        if state == M:
            if i == 0 and j == 0:
                return -1, -1, M
            return i - 1, j - 1, decision & 3
        if state == X:
            return i - 1, j, X if (decision >> 2) & 1 else M
        return i, j - 1, Y if (decision >> 3) & 1 else M


def _run(rec, problem, opts):
    from gpudp import sweep

    t = time.perf_counter()
    res = sweep(rec, **opts)
    res.stats.extra["sweep_seconds"] = time.perf_counter() - t
    if problem == "sw":
        score, path = int(res.best_value), res.traceback(res.best_cell)
    else:
        last = res.last_row[-1]
        scores = [int(last[f]) for f in ("m", "x", "y")]
        state = int(np.argmax(scores))
        score, path = scores[state], res.traceback((len(rec.a), len(rec.b)), state=state)
    res.close()
    return time.perf_counter() - t, score, path, res.stats


def main(argv=None):
    import gpudp

    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--n", type=int, default=131072)
    ap.add_argument("--tiles", default="64x128,128x128")
    ap.add_argument("--problems", default="sw,gotoh")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--forms", default="array-int64,scalars-int32")
    ap.add_argument("--store", default="auto", help="the sweeps' store= (auto, full, checkpoints)")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    a = "".join(rng.choice(list("ACGT"), args.n))
    b = "".join(rng.choice(list("ACGT"), args.n))
    forms = {
        "sw": {"array-int64": SmithWaterman64, "scalars-int32": sw.SmithWaterman},
        "gotoh": {"array-int64": Gotoh64, "scalars-int32": go.Gotoh},
    }
    with open(args.out, "a") as out:
        for problem in args.problems.split(","):
            for tile in args.tiles.split(","):
                bh, tw = (int(x) for x in tile.split("x"))
                opts = {"backend": args.backend, "tile": (bh, tw), "progress": False, "store": args.store}
                want = None
                for form, cls in forms[problem].items():
                    if form not in args.forms.split(","):
                        continue
                    _run(cls(a[:300], b[:300]), problem, opts)  # compile
                    times, kernels, parts = [], [], []
                    for _ in range(args.repeat):
                        s, score, path, stats = _run(cls(a, b), problem, opts)
                        times.append(s)
                        kernels.append(stats.kernel_seconds)
                        parts.append([stats.extra.get(k, 0.0) for k in ("sweep_seconds", "gpu_seconds")])
                    if want is None:
                        want = (score, path)
                    elif score != want[0] or not np.array_equal(path, want[1]):
                        raise SystemExit(f"{problem} {form}: score or path differs from the first form")
                    cells = args.n * args.n
                    med, kmed = statistics.median(times), statistics.median(kernels)
                    row = {
                        "problem": problem,
                        "form": form,
                        "n": args.n,
                        "tile": [bh, tw],
                        "seconds": med,
                        "gcups": cells / med / 1e9,
                        "kernel_seconds": kmed,
                        "gcups_kernels": cells / kmed / 1e9,
                        "registers_per_thread": stats.extra.get("registers_per_thread"),
                        # where the whole time goes: the sweep (its launches and copies, then the
                        # rest of the call), the traceback and the strings after it
                        "sweep_seconds": statistics.median(x[0] for x in parts),
                        "gpu_seconds": statistics.median(x[1] for x in parts),
                        "store": stats.extra.get("decision_store_bytes"),
                        "bytes_to_host": stats.extra.get("bytes_to_host"),
                        "codec": stats.extra.get("decision_codec"),
                        "device": stats.device,
                        "score": score,
                        "store_kind": args.store,
                        "gpudp": str(pathlib.Path(gpudp.__file__).parent),
                    }
                    print(json.dumps(row), flush=True)
                    out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
