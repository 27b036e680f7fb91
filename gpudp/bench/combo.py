"""Pisinger's combo, the knapsack solver the field trusts, run on this machine beside gpudp (issue 41):
``--combo PATH`` of ``gpudp bench knapsack-classes`` and ``gpudp bench knapsack-files``; and combo's
output as the files of Jooken et al.'s dataset record it (``outp.out``, ``time.out``).

The executable is the one github.com/JorikJooken/knapsackProblemInstances ships (``comboExecutable``,
Linux x86-64; combo's source is at http://hjemmesider.diku.dk/~pisinger/codes.html). It reads
``test.in`` (Jooken text: ``n``, then ``id profit weight`` lines, then ``c``) from its working folder
and prints its optimum on the first line, then ``profit weight`` for each item it packed; where it
fails, its message (``multiply, no space``: its state lists out of memory). :func:`run` writes the
instance into a fresh temporary folder, starts combo there, times it by the wall clock from start
to exit (the process's start included, about a millisecond), kills it past its time limit, and
checks its packing against the instance (:func:`check_packing`). These seconds are measured here,
on the machine that runs gpudp, unlike the dataset's ``time.out``.
"""

from __future__ import annotations

import math
import os
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from gpudp.errors import InputError

from . import options


@dataclass
class Published:
    """combo's results for one instance: as a dataset folder records them (:func:`read_published`)
    or as :func:`run` measured them here.

    ``seconds`` None where combo did not finish (``time.out`` is ``-1`` or absent; here: it failed or
    ran out of time); ``optimum`` the first line of its output where it finished, ``items`` its
    (profit, weight) lines; ``note`` combo's message where it failed (shortened)."""

    seconds: float | None
    optimum: int | None
    items: list[tuple[int, int]] = field(default_factory=list)
    note: str = ""

    @property
    def solved(self) -> bool:
        return self.seconds is not None


def _int(tok: str, where: str) -> int:
    t = tok.strip()
    if not t.lstrip("+-").isdigit() or not t.isascii():
        raise InputError(where, f"{t[:40]!r} is not an integer")
    return int(t)


def parse_output(text: str, where: str) -> tuple[int, list[tuple[int, int]]]:
    """combo's output of a finished run: its optimum and the (profit, weight) of each packed item.

    Parameters
    ----------
    text : what combo printed (``outp.out``)
    where : the file or run named in an error

    Returns
    -------
    tuple : the optimum and the items

    Raises
    ------
    InputError : a first line that is not one integer, or another line that is not two integers
    """
    lines = [ln.split() for ln in text.splitlines() if ln.strip()]
    if not lines or len(lines[0]) != 1:
        got = " ".join(lines[0])[:60] if lines else "nothing"
        raise InputError(where, f"expected combo's optimum alone on the first line, got {got!r}")
    items = []
    for k, ln in enumerate(lines[1:], start=2):
        if len(ln) != 2:
            raise InputError(where, f"line {k}: expected 'profit weight', got {' '.join(ln)[:60]!r}")
        items.append((_int(ln[0], f"{where} line {k}"), _int(ln[1], f"{where} line {k}")))
    return _int(lines[0][0], f"{where} line 1"), items


def read_published(folder) -> Published:
    """Read ``time.out`` and ``outp.out`` of one instance folder of Jooken et al.'s dataset.

    Parameters
    ----------
    folder : path of the instance's folder

    Returns
    -------
    Published : combo's seconds, optimum and packed items where ``time.out`` holds a time of at
        least 0; seconds and optimum None (``outp.out``'s text as ``note``) where it holds ``-1`` or
        is absent; the optimum None where ``outp.out`` is absent

    Raises
    ------
    InputError : ``time.out`` that is not one number (or is negative other than ``-1``), or
        ``outp.out`` of a finished run that :func:`parse_output` refuses
    """
    folder = Path(folder)
    t_path, o_path = folder / "time.out", folder / "outp.out"
    out_text = o_path.read_text(errors="replace") if o_path.is_file() else None
    if not t_path.is_file():
        return Published(None, None, note=(out_text or "").strip()[:200])
    words = t_path.read_text().split()
    try:
        secs = float(words[0]) if len(words) == 1 else math.nan
    except ValueError:
        secs = math.nan
    if not (math.isfinite(secs) and (secs >= 0 or secs == -1)):
        raise InputError(str(t_path), f"expected one number of seconds (or -1), got {' '.join(words)[:60]!r}")
    if secs == -1:
        return Published(None, None, note=(out_text or "").strip()[:200])
    if out_text is None:
        return Published(secs, None)
    return Published(secs, *parse_output(out_text, str(o_path)))


def check_packing(inst, pub: Published) -> str | None:
    """Whether combo's packing is one of ``inst`` worth its optimum.

    Parameters
    ----------
    inst : the instance (:class:`~gpudp.problems.knapsack.KnapsackInstance`)
    pub : combo's results

    Returns
    -------
    str or None : what is wrong (items not in the instance, a profit sum other than the optimum, a
        weight over the capacity), or None when it holds or there is no packing to check
    """
    if pub.optimum is None or not pub.items:
        return None
    left = Counter(zip(map(int, inst.profits), map(int, inst.weights), strict=True))
    missing = Counter(pub.items) - left
    if missing:
        (p, w), k = next(iter(missing.items()))
        return f"combo's packing holds (profit {p}, weight {w}) {k} more time(s) than the instance"
    profit = sum(p for p, _ in pub.items)
    weight = sum(w for _, w in pub.items)
    if profit != pub.optimum:
        return f"combo's packed items are worth {profit}, not its optimum {pub.optimum}"
    if weight > int(inst.stated_capacity):
        return f"combo's packed items weigh {weight}, over the capacity {inst.stated_capacity}"
    return None


def geomean(ratios) -> float | None:
    """The geometric mean of positive ``ratios`` (combo's seconds over ours), None without any."""
    ratios = list(ratios)
    return math.exp(statistics.fmean(map(math.log, ratios))) if ratios else None


def executable(path: str) -> str:
    """``--combo``'s argument: an executable file, its absolute path returned.

    Raises
    ------
    InputError : no such file, or not executable
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise InputError("--combo", f"{path}: no such file (the executable comboExecutable of "
                         "github.com/JorikJooken/knapsackProblemInstances)")  # fmt: skip
    if not os.access(p, os.X_OK):
        raise InputError("--combo", f"{path}: not executable (chmod +x it)")
    return str(p.resolve())


def add_argument(parser, limit: str) -> None:
    """A bench's ``--combo PATH`` option (:func:`executable`), combo then limited by ``limit``."""
    parser.add_argument(
        "--combo",
        type=options.checked(executable, "executable"),
        default=None,
        metavar="PATH",
        help="also run combo (comboExecutable of github.com/JorikJooken/knapsackProblemInstances) on "
        f"each instance, on this machine, for at most {limit} seconds",
    )


def write_instance(path, profits, weights, capacity) -> None:
    """The instance in Jooken text (``n``; ``id profit weight`` lines, ids from 0; ``c``), integers
    only (combo reads C ``long``s)."""
    lines = [
        str(len(profits)),
        *(f"{k} {int(p)} {int(w)}" for k, (p, w) in enumerate(zip(profits, weights, strict=True))),
    ]
    Path(path).write_text("\n".join([*lines, str(int(capacity))]) + "\n")


def run(exe: str, inst, time_limit: float) -> tuple[Published, dict]:
    """combo on ``inst`` here: in a fresh temporary folder, killed after ``time_limit`` seconds.

    Parameters
    ----------
    exe : combo's executable (:func:`executable`)
    inst : the instance (integer profits and weights; the capacity as stated)
    time_limit : seconds

    Returns
    -------
    tuple : its results (:class:`Published`: seconds None where it failed or ran out of time) and
        the row's figures: ``status`` (``proven``, ``failed``: it stopped without an optimum, or
        ``time``), ``seconds`` (wall, start to exit or kill), ``optimum``, ``note`` (its message),
        ``error`` (what is wrong with its packing: :func:`check_packing`)
    """
    with tempfile.TemporaryDirectory(prefix="gpudp-combo-") as d:
        write_instance(os.path.join(d, "test.in"), inst.profits, inst.weights, inst.stated_capacity)
        t = time.perf_counter()
        try:
            done = subprocess.run(
                [exe], cwd=d, capture_output=True, text=True, errors="replace", timeout=time_limit
            )
        except subprocess.TimeoutExpired:
            secs = time.perf_counter() - t
            return Published(None, None, note="time"), {"status": "time", "seconds": secs, "optimum": None}
        secs = time.perf_counter() - t
    text = done.stdout
    try:
        optimum, items = parse_output(text, "combo's output")
    except InputError:
        note = (text + done.stderr).strip()[:200] or f"exit status {done.returncode}, no output"
        return Published(None, None, note=note), {
            "status": "failed",
            "seconds": secs,
            "optimum": None,
            "note": note,
        }
    pub = Published(secs, optimum, items)
    row = {"status": "proven", "seconds": secs, "optimum": optimum}
    wrong = check_packing(inst, pub)
    if wrong:
        row["error"] = wrong
    return pub, row
