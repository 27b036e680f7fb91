"""Copy a subset of Jooken et al.'s published knapsack instances for ``gpudp bench knapsack-files``.

    python tools/jooken_subset.py SOURCE [--out .data/jooken] [--hardest 60] [--spread 1]
                                         [--unsolved all|K] [--max-mb 20]

``SOURCE`` is the repository github.com/JorikJooken/knapsackProblemInstances: a checkout (a folder
holding ``problemInstances/``) or a bare git directory (``fetch`` gives one; read with ``git
cat-file``). Its 3,240 instance folders each hold ``test.in``, ``outp.out`` (combo's optimum and
items, or its error) and ``time.out`` (combo's seconds on the authors' machine, ``-1`` where it did
not finish). Three groups are copied unchanged into ``OUT/<group>/<name>/``:

- ``hardest``: the ``--hardest`` instances with the largest ``time.out``;
- ``unsolved``: those combo did not solve (``time.out`` -1; ``--unsolved all``, or the first K by
  name);
- ``spread``: per (c, g, n), the ``--spread`` solved instances nearest the median time of that cell
  (easy and middling ones over the whole grid), none already chosen.

``optima.csv`` is read too and every chosen solved instance's ``outp.out`` optimum must equal its
line there (an error otherwise). ``OUT/selection.json`` names the source commit, each instance's
group, combo's seconds and optimum. The total is refused past ``--max-mb`` (the device machine
carries at most ~20 MB); ``OUT`` is replaced. ``.data/`` is git-ignored.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

FILES = ("test.in", "outp.out", "time.out")


class Source:
    """The repository's files, from a checkout or a bare git directory."""

    def __init__(self, path: str):
        self.path = Path(path)
        self.git = not (self.path / "problemInstances").is_dir()
        if self.git:
            self.commit = self._git("rev-parse", "HEAD").decode().strip()
            listing = self._git("ls-tree", "-r", "HEAD", "problemInstances").decode()
            self.blobs = {ln.split("\t")[1]: ln.split()[2] for ln in listing.splitlines()}
        else:
            self.commit = None
            root = self.path / "problemInstances"
            self.blobs = {
                f"problemInstances/{d.name}/{f}": None
                for d in root.iterdir()
                for f in FILES
                if (d / f).is_file()
            }

    def _git(self, *args: str, data: bytes | None = None) -> bytes:
        cmd = ["git", "--git-dir", str(self.path), *args]
        return subprocess.run(cmd, input=data, capture_output=True, check=True).stdout

    def names(self) -> list[str]:
        """The instance folders' names."""
        return sorted({p.split("/")[1] for p in self.blobs if p.endswith("/test.in")})

    def read_many(self, paths: list[str]) -> dict[str, bytes]:
        """The files at ``paths`` (relative to the repository), as bytes; those absent are left out."""
        paths = [p for p in paths if p in self.blobs]
        if not self.git:
            return {p: (self.path / p).read_bytes() for p in paths}
        blob = "".join(self.blobs[p] + "\n" for p in paths).encode()
        raw = self._git("cat-file", "--batch", data=blob)
        out, pos = {}, 0
        for p in paths:
            nl = raw.index(b"\n", pos)
            size = int(raw[pos:nl].split()[2])
            out[p] = raw[nl + 1 : nl + 1 + size]
            pos = nl + 1 + size + 1
        return out

    def read(self, path: str) -> bytes:
        """One file of the repository (relative to it), as bytes."""
        if self.git:
            return self._git("show", f"HEAD:{path}")
        return (self.path / path).read_bytes()


def parameters(name: str) -> dict:
    """The generator's parameters from an instance folder's name (``n_400_c_1000000_g_2_...``)."""
    parts = name.split("_")
    return dict(zip(parts[0::2], parts[1::2], strict=True))


def select(times: dict[str, float], hardest: int, unsolved: int | None, spread: int) -> dict[str, str]:
    """Each chosen instance's name to its group (the module doc)."""
    chosen = {}
    solved = sorted((t, n) for n, t in times.items() if t >= 0)
    for _, n in sorted(solved, reverse=True)[:hardest]:
        chosen[n] = "hardest"
    failed = sorted(n for n, t in times.items() if t < 0)
    for n in failed if unsolved is None else failed[:unsolved]:
        chosen[n] = "unsolved"
    cells = defaultdict(list)
    for t, n in solved:
        q = parameters(n)
        cells[(int(q["c"]), int(q["g"]), int(q["n"]))].append((t, n))
    for key in sorted(cells):
        ts = cells[key]
        mid = statistics.median(t for t, _ in ts)
        picks = [n for _, n in sorted(ts, key=lambda tn: (abs(tn[0] - mid), tn[1])) if n not in chosen]
        for n in picks[:spread]:
            chosen[n] = "spread"
    return chosen


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", help="the repository: a checkout or a bare git directory")
    ap.add_argument("--out", default=".data/jooken", help="the folder to (re)write (default .data/jooken)")
    ap.add_argument("--hardest", type=int, default=60, help="the instances of largest time.out (default 60)")
    ap.add_argument("--unsolved", default="all", help="all, or how many of those combo did not solve")
    ap.add_argument("--spread", type=int, default=1, help="instances per (c, g, n) near its median time")
    ap.add_argument("--max-mb", type=float, default=20.0, help="refuse a larger subset (default 20)")
    a = ap.parse_args(argv)
    src = Source(a.source)
    names = src.names()
    raw = src.read_many([f"problemInstances/{n}/time.out" for n in names])
    times = {n: float(raw[f"problemInstances/{n}/time.out"]) for n in names}
    optima = {
        r["name"]: int(r["optimum"]) for r in csv.DictReader(io.StringIO(src.read("optima.csv").decode()))
    }
    chosen = select(times, a.hardest, None if a.unsolved == "all" else int(a.unsolved), a.spread)
    files = src.read_many([f"problemInstances/{n}/{f}" for n in chosen for f in FILES])
    size = sum(map(len, files.values()))
    if size > a.max_mb * 1e6:
        print(f"{size / 1e6:.1f} MB chosen, over --max-mb {a.max_mb}: choose fewer", file=sys.stderr)
        return 2
    rows = []
    for n, group in sorted(chosen.items(), key=lambda kv: (kv[1], kv[0])):
        out = files.get(f"problemInstances/{n}/outp.out", b"")
        first = out.decode(errors="replace").split("\n", 1)[0].strip()
        optimum = int(first) if times[n] >= 0 else None
        if optimum is not None and optima.get(n) != optimum:
            print(f"{n}: outp.out says {optimum}, optima.csv {optima.get(n)}", file=sys.stderr)
            return 1
        rows.append({"name": n, "group": group, "combo_seconds": times[n], "combo_optimum": optimum})
    out = Path(a.out)
    if out.exists():
        shutil.rmtree(out)
    for r in rows:
        d = out / r["group"] / r["name"]
        d.mkdir(parents=True)
        for f in FILES:
            data = files.get(f"problemInstances/{r['name']}/{f}")
            if data is not None:
                (d / f).write_bytes(data)
    meta = {
        "source": "github.com/JorikJooken/knapsackProblemInstances",
        "commit": src.commit,
        "note": "combo's seconds (time.out) were recorded by the dataset's authors on their machine",
        "groups": {g: sum(r["group"] == g for r in rows) for g in ("hardest", "unsolved", "spread")},
        "bytes": size,
        "instances": rows,
    }
    (out / "selection.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"{len(rows)} instances ({meta['groups']}), {size / 1e6:.1f} MB, in {out}{os.sep}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
