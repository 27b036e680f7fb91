"""``gpudp solve knapsack DIR|FILE.jsonl``: many knapsacks from files through
:func:`gpudp.problems.knapsack.solve_many`, one output line an instance, in input order.

Inputs (:func:`sources`):

- a **directory**: every regular file in it whose name does not start with ``.``, in name order,
  one instance a file, in any format :func:`~.io.read_knapsack` reads (Pisinger text, Jooken text,
  CSV, JSON; ``.gz``; detected a file, or the one ``--format`` names); subdirectories are skipped;
  an instance's name is its file's name;
- a **JSON-lines file** (a name ending in ``.jsonl`` or ``.ndjson``, optionally ``.gz``): one
  instance a line, ``{"name": ..., "profits": [...], "weights": [...], "capacity": ...}`` (the JSON
  format of :mod:`.io`: ``values`` for ``profits``, numbers as strings, an optional ``solution``;
  ``name`` optional, default ``FILE:LINE``); blank lines and ``#`` lines are skipped.

Output: TSV, a header and one line an instance (``name``, ``n``, ``capacity``, ``optimum``,
``weight``, the chosen items' 0-based indices joined by ``,`` or ``-`` for none, ``error``: ``-``),
or JSON lines with ``--json`` (the same keys, ``items`` a list, ``error`` null). An instance that
cannot be read or solved does not stop the batch: its line has ``-`` (JSON: null) where a figure is
unknown and its error in the ``error`` column. A summary goes to stderr; the exit status is 0 when
every instance was solved, 1 when some failed (2 for an error of the whole command: an unreadable
directory, no instance at all, a bad option).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time

import numpy as np

from gpudp.errors import GpudpError, InputError
from gpudp.inputs import read_text
from gpudp.progress import progress_bar

from .io import FORMATS, parse_knapsack, read_knapsack

__all__ = ["JSONL_SUFFIXES", "CHUNK", "is_batch", "sources", "cli_batch"]

#: names of JSON-lines files (lower case)
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz")
#: instances read, solved and printed at a time: the output streams and the memory stays bounded
CHUNK = 2048
HEADER = ("name", "n", "capacity", "optimum", "weight", "items", "error")


def is_batch(path) -> bool:
    """Whether ``path`` names a batch: a directory or a JSON-lines file."""
    p = os.fspath(path)
    return os.path.isdir(p) or p.lower().endswith(JSONL_SUFFIXES)


def _one_line(text) -> str:
    return " ".join(str(text).split())


def sources(path, format: str = "auto") -> list[tuple[str, object]]:
    """The batch's instances as ``(name, load)`` in input order; ``load()`` returns a
    :class:`~.io.KnapsackInstance` or raises the instance's own :class:`gpudp.InputError`.
    ``format`` (:data:`~.io.FORMATS`) is every file's of a directory; a JSON-lines file is JSON."""
    p = os.fspath(path)
    if format not in FORMATS:
        raise InputError("--format", f"must be one of {', '.join(FORMATS)}, not {format!r}")
    if os.path.isdir(p):
        try:
            entries = sorted(os.scandir(p), key=lambda e: e.name)
        except OSError as e:
            raise InputError("file", f"cannot list the directory {p}: {e.strerror or e}") from None
        out = [
            (e.name, lambda path=e.path: read_knapsack(path, format))
            for e in entries
            if not e.name.startswith(".") and e.is_file()
        ]
        what = f"the directory {p} holds no instance file"
    else:
        if format not in ("auto", "json"):
            raise InputError("--format", f"a JSON-lines file holds JSON instances, not {format}")
        base = os.path.basename(p)
        out = []
        for k, line in enumerate(read_text(p, "knapsack file").split("\n"), 1):
            s = line.strip()
            if s and not s.startswith("#"):
                out.append((f"{base}:{k}", lambda s=s, nm=f"{base}:{k}": _parse_line(s, nm)))
        what = f"{p} holds no instance line"
    if not out:
        raise InputError("file", what)
    return out


def _parse_line(line: str, name: str):
    if not line.startswith("{"):
        raise InputError("json", f"expected one JSON object a line, got {line[:40]!r}")
    return parse_knapsack(line, name)


def _number(v):
    """A figure for output: Python ints stay exact, reals are float64's shortest repr."""
    if isinstance(v, np.generic):
        v = v.item()
    return v


def _weight(sol, inst):
    w = sol.details.get("weight")
    if w is not None:
        return _number(w)
    chosen = inst.weights[np.asarray(sol.solution) == 1].tolist()
    return sum(chosen) if inst.weights.dtype.kind in "iu" else math.fsum(chosen)


def _row(name, inst, sol, error) -> dict:
    row = {
        "name": name if inst is None else (inst.name or name),
        "n": None if inst is None else inst.n,
        "capacity": None if inst is None else _number(inst.stated_capacity),
        "optimum": None,
        "weight": None,
        "items": None,
        "error": error,
    }
    if sol is not None:
        row.update(
            optimum=_number(sol.value),
            weight=_weight(sol, inst),
            items=np.flatnonzero(np.asarray(sol.solution) == 1).tolist(),
        )
    return row


def _tsv(row: dict) -> str:
    def cell(v):
        if v is None:
            return "-"
        if isinstance(v, list):
            return ",".join(map(str, v)) if v else "-"
        return _one_line(v) if isinstance(v, str) else str(v)

    return "\t".join(cell(row[k]) for k in HEADER)


def _solve_chunk(chunk, solve_many, backend: str) -> tuple[list[dict], dict]:
    """Read and solve ``chunk`` (``(name, load)`` pairs) by ``solve_many``: its output rows in
    order, and the batch's stats (an empty dict when nothing could be read)."""
    insts, errors = [], {}
    for q, (_, load) in enumerate(chunk):
        try:
            insts.append(load())
        except GpudpError as e:
            insts.append(None)
            errors[q] = str(e)
    good = [q for q, inst in enumerate(insts) if inst is not None]
    stats = {}
    sols = [None] * len(chunk)
    if good:
        res = solve_many(
            [(insts[q].profits, insts[q].weights, insts[q].capacity) for q in good],
            backend=backend,
            progress=False,
        )
        for i, q in enumerate(good):
            if i in res.errors:
                errors[q] = res.errors[i]
            else:
                sols[q] = res.solutions[i]
        stats = res.stats
    rows = [_row(name, insts[q], sols[q], errors.get(q)) for q, (name, _) in enumerate(chunk)]
    return rows, stats


def cli_batch(args, solve_many) -> int:
    """Run the batch ``args.file`` names through ``solve_many``
    (:func:`gpudp.problems.knapsack.solve_many`) and print its lines; the exit status (0: all
    solved, 1: some failed)."""
    for opt, given in (
        ("--method", args.method not in ("auto", "dp")),
        ("--memory-budget", args.memory_budget is not None),
        ("--host-budget", args.host_budget is not None),
        ("--time-limit", args.time_limit is not None),
    ):
        if given:
            raise InputError(
                opt,
                "applies to a single instance file; a batch runs one DP an instance (instances it "
                "cannot keep exact go to the single solve with --method auto)",
            )
    t0 = time.perf_counter()
    todo = sources(args.file, getattr(args, "format", "auto"))
    out = sys.stdout
    if not args.json:
        out.write("\t".join(HEADER) + "\n")
    bar = progress_bar(len(todo), None, "instance")
    failed, cells, kernel_s, used = 0, 0, 0.0, set()
    for a in range(0, len(todo), CHUNK):
        rows, st = _solve_chunk(todo[a : a + CHUNK], solve_many, args.backend)
        for row in rows:
            failed += row["error"] is not None
            out.write((json.dumps(row) if args.json else _tsv(row)) + "\n")
        out.flush()
        if st:
            cells += st.cells
            kernel_s += st.kernel_seconds
            used.add(st.backend)
        if bar is not None:
            bar.update(len(rows))
    if bar is not None:
        bar.close()
    print(
        f"# {len(todo)} instances, {failed} failed, {cells:.3g} cells, {time.perf_counter() - t0:.3f} s "
        f"on {'+'.join(sorted(used)) or '-'} ({kernel_s:.3f} s in the batch kernels)",
        file=sys.stderr,
    )
    return 1 if failed else 0
