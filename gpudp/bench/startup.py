"""``gpudp bench startup``: what a user waits for, each command a fresh process, with an empty and a
warm kernel cache.

The instances are the sizes of the startup issue: the demo (9.2 k x 9.6 k LCS of two genomes), an
LCS of random DNA of 56 k x 72 k, a knapsack of n = 10,000 generated as Pisinger's knapPI_3 files are
(strongly correlated, weights up to 1000, C = sum(w) / 101), a subset sum of n = 54 (weights below
2^40, a reachable target), and a TSP of 21 random cities. Each command runs ``repeat`` times against
an empty cache folder (cold: everything compiles) and ``repeat`` times against the folder the first
run filled (warm); the JSON gives the wall time of each run, the solver's own seconds and kernel seconds, and
their medians.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from . import options

__all__ = ["bench_arguments", "cli_bench", "instances", "run_fresh"]

#: the commands timed, as :func:`instances` names them
COMMANDS = ("demo", "lcs", "knapsack", "subset-sum", "tsp")


def bench_arguments(parser):
    parser.add_argument(
        "--repeat", type=options.positive_int, default=3, help="fresh processes per command and cache state"
    )
    parser.add_argument(
        "--commands",
        type=options.choice_list(*COMMANDS),
        default=",".join(COMMANDS),
        help=f"comma list of {', '.join(COMMANDS)}",
    )
    parser.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--timeout", type=options.seconds, default=300.0, help="seconds per process")


def _fasta(path, name, seq):
    with open(path, "w") as f:
        f.write(f">{name}\n")
        for k in range(0, len(seq), 70):
            f.write(seq[k : k + 70] + "\n")


def instances(folder: str) -> dict:
    """Write the instances into ``folder``; the ``gpudp`` arguments of each command."""
    rng = np.random.default_rng(2026)
    a, b = os.path.join(folder, "a.fa"), os.path.join(folder, "b.fa")
    _fasta(a, "a", "".join(rng.choice(list("ACGT"), 56_000)))
    _fasta(b, "b", "".join(rng.choice(list("ACGT"), 72_000)))
    ks = os.path.join(folder, "knap.txt")  # Pisinger's class 3 (strongly correlated), R = 1000, h = 1
    w = rng.integers(1, 1001, 10_000)
    with open(ks, "w") as f:
        f.write(f"{len(w)}\n{int(w.sum() // 101)}\n" + "".join(f"{x + 100} {x}\n" for x in w))
    ss = os.path.join(folder, "subset.txt")
    ws = rng.integers(1, 1 << 40, 54)
    with open(ss, "w") as f:
        f.write(f"{int(ws[::3].sum())}\n" + "".join(f"{x}\n" for x in ws))
    tsp = os.path.join(folder, "r21.tsp")
    xy = rng.integers(0, 1000, (21, 2))
    with open(tsp, "w") as f:
        f.write("NAME: r21\nTYPE: TSP\nDIMENSION: 21\nEDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n")
        f.write("".join(f"{k + 1} {x} {y}\n" for k, (x, y) in enumerate(xy)) + "EOF\n")
    return {
        "demo": ["demo"],
        "lcs": ["solve", "lcs", a, b],
        "knapsack": ["solve", "knapsack", ks],
        "subset-sum": ["solve", "subset-sum", ss],
        "tsp": ["solve", "tsp", tsp],
    }


def run_fresh(argv, backend, cache_dir, timeout):
    """``gpudp ARGV --backend B --json`` in a fresh process with this kernel cache: wall time and the
    solver's own figures."""
    env = dict(os.environ, GPUDP_CACHE_DIR=cache_dir)
    t = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "gpudp.cli", *argv, "--backend", backend, "--json"],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    wall = time.perf_counter() - t
    row = {"wall_seconds": round(wall, 3), "exit": r.returncode}
    if r.returncode == 0:
        out = json.loads(r.stdout.strip().splitlines()[-1])
        st = out.get("stats", {})
        row.update(
            value=out.get("value"),
            backend=st.get("backend"),
            solve_seconds=st.get("seconds"),
            kernel_seconds=st.get("kernel_seconds"),
            compile_seconds=st.get("compile_seconds"),
            backend_choice=st.get("backend_choice"),
        )
    else:
        row["stderr"] = r.stderr[-500:]
    return row


def cli_bench(args) -> dict:
    from gpudp.info import info

    out = {"benchmark": "startup", "info": info(), "backend": args.backend, "repeat": args.repeat, "runs": []}
    with tempfile.TemporaryDirectory(prefix="gpudp-startup-") as folder:
        cmds = instances(folder)
        for name in args.commands:
            argv = cmds[name]
            for state in ("cold", "warm"):
                rows = []
                for _ in range(args.repeat):
                    cache_dir = os.path.join(folder, f"cache-{name}")
                    if state == "cold":
                        shutil.rmtree(cache_dir, ignore_errors=True)
                    rows.append(run_fresh(argv, args.backend, cache_dir, args.timeout))
                walls = [r["wall_seconds"] for r in rows]
                kern = [r.get("kernel_seconds") or 0.0 for r in rows]
                out["runs"].append(
                    {
                        "command": name,
                        "cache": state,
                        "median_wall_seconds": statistics.median(walls),
                        "median_kernel_seconds": statistics.median(kern),
                        "median_wall_beyond_kernels": statistics.median(
                            w - k for w, k in zip(walls, kern, strict=True)
                        ),
                        "runs": rows,
                    }
                )
                print(
                    f"{name:10s} {state}: median {statistics.median(walls):.2f} s wall "
                    f"({statistics.median(kern):.3f} s kernels)",
                    file=sys.stderr,
                    flush=True,
                )
    return out
