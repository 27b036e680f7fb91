"""``gpudp bench knapsack-files FOLDER``: instance files solved, beside combo's published results.

Issue 41: the instances of Jooken, Leyman & De Causmaecker (EJOR 301(3), 2022), as their public
repository JorikJooken/knapsackProblemInstances lays them out: one folder an instance, holding
``test.in`` (the instance, Jooken text: :mod:`gpudp.problems.knapsack.io`), ``outp.out`` (combo's
output: the optimum on its first line, then one ``profit weight`` line an item it packed; or combo's
error message where it failed) and ``time.out`` (combo's seconds, ``-1`` where it did not finish).
Each ``FOLDER`` is such a folder or any folder above some (every ``test.in`` below them is one
instance, sorted by its folder's name); ``tools/jooken_subset.py`` builds one from the repository, by default
``.data/jooken`` (git-ignored), the default ``FOLDER``.

Each instance is solved by each of ``--methods`` (default ``auto``) on each backend of
``--backends``, with ``--time-limit`` seconds (``knapsack.solve_instance``, after every compiled
function they use is compiled: :func:`warm`), and checked here on its own:

- the 0/1 vector returned weighs at most the capacity and its items' profit is the value returned
  (Python integers);
- a proven optimum equals combo's (``outp.out``'s first line) where combo finished; an unproven
  value above it, or a proven upper bound below it, contradicts it. Each of these is an error: it is
  listed in the row and in the result's ``errors``, and the command exits with status 1 after the
  JSON is written;
- combo's own packing (``outp.out``'s item lines) is checked against the instance: its items are
  items of the instance (as a multiset of (profit, weight)), their profits sum to its optimum and
  their weights fit. A file that fails this is an error too (of the data, not of ours).

**combo's recorded seconds are not measured here.** They are the times the dataset's authors
recorded on their own machine (``time.out``; the repository does not state the machine or the limit
it ran under); ``combo_over_ours`` (combo's seconds over ours) compares two machines, and says how
far apart the two are, not which algorithm is faster on one machine. **``--combo PATH``** runs combo
itself (the repository's ``comboExecutable``) on each instance here, with ``--time-limit``
(:mod:`gpudp.bench.combo`): ``combo_here`` in each row (status ``proven``/``failed``/``time``, its
seconds, its optimum, held to the record's, ours held to it, its packing to the instance: each
disagreement an error), ``combo_here_over_ours`` where both proved it, and the same figures in the
summary: one machine, one comparison.

The JSON: the date, devices, core count, versions, the settings, one row an instance (its name,
``n``, ``c``; combo's optimum, seconds and whether it solved; per method and backend: the method
that ran, status ``proven``/``unproven``/``refused``/``error``, seconds, value, upper bound, gap,
the ratio) and a summary per method and backend: instances proven, unproven, refused, errors;
those combo solved, those both solved and the geometric mean, median, least and largest of
``combo_over_ours`` over them; those combo did not solve that were proven here (named).
"""

from __future__ import annotations

import fnmatch
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from gpudp.backends import device_name
from gpudp.errors import InputError
from gpudp.problems.knapsack import METHODS, read_knapsack, solve_instance

from . import combo, options
from .combo import Published, check_packing, read_published

#: what the JSON says of combo's figures wherever they appear
COMBO_NOTE = (
    "combo's seconds are those the dataset's authors recorded on their own machine (time.out of "
    "github.com/JorikJooken/knapsackProblemInstances), not measured on this machine: "
    "combo_over_ours compares two machines"
)


#: where tools/jooken_subset.py writes its subset (git-ignored), relative to the working folder
DEFAULT_FOLDER = ".data/jooken"
#: what became of one solve: proven optimal, stopped unproven, refused by the method, or a check failed
STATUSES = ("proven", "unproven", "refused", "error")


def bench_arguments(parser):
    parser.add_argument(
        "folders",
        nargs="*",
        default=[DEFAULT_FOLDER],
        metavar="FOLDER",
        help="instance folders (test.in, outp.out, time.out) or folders above such folders (default "
        f"{DEFAULT_FOLDER}, where tools/jooken_subset.py writes)",
    )
    parser.add_argument(
        "--methods",
        type=options.checked(options.choice_list(*METHODS), "method"),
        default="auto",
        help=f"comma list of {', '.join(METHODS)} (default auto)",
    )
    parser.add_argument(
        "--time-limit", type=options.seconds, default=60.0, help="limit each solve (s; default 60)"
    )
    parser.add_argument(
        "--names",
        default="",
        help="comma list of shell patterns on the instance folders' names (default: all)",
    )
    parser.add_argument(
        "--jobs",
        type=options.positive_int,
        default=1,
        help="instances solved at once, each in its own process (--backends cpu; default 1: the "
        "times then share the machine's cores and memory bandwidth)",
    )
    parser.add_argument(
        "--total-limit",
        type=options.seconds,
        default=None,
        help="start no instance after this many seconds (those left are listed as not run)",
    )
    combo.add_argument(parser, "--time-limit")


def check_ours(inst, sol) -> str | None:
    """The answer's 0/1 vector against the instance, in Python integers.

    Parameters
    ----------
    inst : the instance
    sol : the :class:`gpudp.Solution` returned for it

    Returns
    -------
    str or None : what is wrong (not n values 0/1, a weight over the capacity, a profit other than the
        value), or None
    """
    x = [int(v) for v in sol.solution]
    if len(x) != inst.n or any(v not in (0, 1) for v in x):
        return f"the answer is not {inst.n} values 0/1"
    weight = sum(int(w) for w, v in zip(inst.weights, x, strict=True) if v)
    profit = sum(int(p) for p, v in zip(inst.profits, x, strict=True) if v)
    if weight > int(inst.stated_capacity):
        return f"the answer's items weigh {weight}, over the capacity {inst.stated_capacity}"
    if profit != sol.value:
        return f"the answer's items are worth {profit}, not the value returned {sol.value}"
    return None


def compare(run: dict, pub: Published) -> str | None:
    """Our answer against combo's optimum: None where they agree (or there is none), else the error.

    Parameters
    ----------
    run : our result for one method and backend (``status``, ``value``, ``upper_bound``)
    pub : combo's results

    Returns
    -------
    str or None : a proven value other than combo's optimum, an unproven value above it, or a
        proven upper bound below it
    """
    opt = pub.optimum
    if opt is None or run["status"] not in ("proven", "unproven"):
        return None
    if run["status"] == "proven" and run["value"] != opt:
        return f"proven optimum {run['value']}, combo's {opt}"
    if run["value"] > opt:
        return f"a packing worth {run['value']}, above combo's optimum {opt}"
    ub = run.get("upper_bound")
    if ub is not None and ub < opt:
        return f"proven upper bound {ub}, below combo's optimum {opt}"
    return None


def instance_dirs(roots, names: str = "") -> list[Path]:
    """The instance folders at or below ``roots``: each folder holding ``test.in``, sorted by name.

    Parameters
    ----------
    roots : a folder, or a list of folders
    names : comma list of shell patterns on the folders' names (empty: all)

    Returns
    -------
    list of Path, each once

    Raises
    ------
    InputError : a root that is not a folder, or no instance folder (matching ``names``) below them
    """
    roots = [Path(r) for r in ([roots] if isinstance(roots, str | Path) else roots)]
    found = set()
    for root in roots:
        if not root.is_dir():
            raise InputError("folder", f"{root} is not a folder")
        found |= {p.parent.resolve() for p in root.rglob("test.in")}
    found = sorted(found, key=lambda d: (d.name, str(d)))
    pats = [s.strip() for s in names.split(",") if s.strip()]
    if pats:
        found = [d for d in found if any(fnmatch.fnmatchcase(d.name, pat) for pat in pats)]
    if not found:
        which = f" matching {names!r}" if pats else ""
        shown = ", ".join(map(str, roots))
        raise InputError("folder", f"no instance folder (holding test.in){which} at or below {shown}")
    return found


def _solve_one(inst, method: str, backend: str, time_limit: float) -> dict:
    t = time.perf_counter()
    try:
        sol = solve_instance(inst, method=method, backend=backend, time_limit=time_limit)
    except InputError as e:
        return {"status": "refused", "seconds": time.perf_counter() - t, "message": str(e)}
    secs = time.perf_counter() - t
    d = sol.details
    out = {
        "status": "proven" if sol.optimal else "unproven",
        "method": d.get("method"),
        "seconds": secs,
        "value": int(sol.value),
        "upper_bound": None if d.get("upper_bound") is None else int(d["upper_bound"]),
        "gap": d.get("gap"),
        "stopped": d.get("stopped"),
        "states_generated": d.get("states_generated"),
        "method_note": d.get("method_note"),
    }
    if sol.optimal:
        out["upper_bound"] = out["value"]
    wrong = check_ours(inst, sol)
    if wrong:
        out.update(status="error", error=wrong)
    return out


def run_instance(folder, methods, backends, time_limit: float, combo_exe: str | None = None) -> dict:
    """One instance folder read, checked against combo's record, solved by each method and backend.

    Parameters
    ----------
    folder : the instance's folder
    methods : names of :data:`~gpudp.problems.knapsack.METHODS`
    backends : ``cpu``/``cuda``
    time_limit : seconds for each solve
    combo_exe : combo's executable, run here on the instance too (``combo_here``: :func:`.combo.run`,
        its optimum held to the record's and ours to it, ``combo_here_over_ours`` where both proved)

    Returns
    -------
    dict : the row (the module doc); ``errors`` lists what disagreed (empty when nothing did)

    Raises
    ------
    InputError : ``test.in`` or combo's files cannot be read (the module doc's formats)
    """
    folder = Path(folder)
    inst = read_knapsack(folder / "test.in")
    pub = read_published(folder)
    row = {
        "name": folder.name,
        "n": inst.n,
        "capacity": int(inst.stated_capacity),
        "combo": {"solved": pub.solved, "seconds": pub.seconds, "optimum": pub.optimum},
        "errors": [],
    }
    if pub.note:
        row["combo"]["note"] = pub.note
    wrong = check_packing(inst, pub)
    if wrong:
        row["errors"].append(f"combo's file: {wrong}")
    here = None
    if combo_exe is not None:
        here, row["combo_here"] = combo.run(combo_exe, inst, time_limit)
        if row["combo_here"].get("error"):
            row["errors"].append(f"combo here: {row['combo_here']['error']}")
        elif here.solved and pub.solved and here.optimum != pub.optimum:
            row["errors"].append(f"combo here: optimum {here.optimum}, the record's {pub.optimum}")
    for method in methods:
        for be in backends:
            run = _solve_one(inst, method, be, time_limit)
            wrong = run.get("error") or compare(run, pub) or (here and compare(run, here))
            if wrong:
                run.update(status="error", error=wrong)
                row["errors"].append(f"{method}/{be}: {wrong}")
            if run["status"] == "proven" and pub.solved:
                run["combo_over_ours"] = pub.seconds / max(run["seconds"], 1e-9)
            if run["status"] == "proven" and here is not None and here.solved:
                run["combo_here_over_ours"] = here.seconds / max(run["seconds"], 1e-9)
            row[f"{method}/{be}"] = run
    return row


def _versions() -> dict:
    import numba
    import numpy

    from gpudp._version import __version__

    return {
        "gpudp": __version__,
        "python": sys.version.split()[0],
        "numpy": numpy.__version__,
        "numba": numba.__version__,
    }


def warm(methods, backends) -> None:
    """Compile what the methods run before anything is timed: the reachable-sums DP alone for
    ``reach``, else every knapsack search of :func:`gpudp.bench.knapsack_classes.warm`.

    Parameters
    ----------
    methods : the methods the bench runs
    backends : the backends it runs them on
    """
    if set(methods) == {"reach"}:
        from gpudp.problems.knapsack import reach

        reach.warm()
    else:
        from .knapsack_classes import warm as warm_all

        warm_all(backends)


def _one(folder, methods, backends, time_limit: float, deadline: float | None, combo_exe=None) -> dict:
    """:func:`run_instance`, or ``{"name", "not_run"}`` past ``deadline`` (``time.time()``)."""
    if deadline is not None and time.time() > deadline:
        return {"name": Path(folder).name, "not_run": True}
    return run_instance(folder, methods, backends, time_limit, combo_exe)


def _rows(folders, methods, backends, time_limit: float, deadline, jobs: int, combo_exe=None):
    """Each folder's row as it comes (:func:`_one`): in this process, or in ``jobs`` worker
    processes (started by spawn, each compiling first), in the order they finish."""
    if jobs == 1:
        warm(methods, backends)
        for folder in folders:
            yield _one(folder, methods, backends, time_limit, deadline, combo_exe)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(jobs, mp_context=ctx, initializer=warm, initargs=(methods, backends)) as ex:
        futures = [ex.submit(_one, f, methods, backends, time_limit, deadline, combo_exe) for f in folders]
        for fut in as_completed(futures):
            yield fut.result()


def cli_bench(args) -> dict:
    backends = options.backend_list(args.backends)
    if args.jobs > 1 and "cuda" in backends:
        raise InputError(
            "--jobs", "more than 1 runs on the CPU only (--backends cpu): processes would share a GPU"
        )
    folders = instance_dirs(args.folders, args.names)
    out = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "device": {b: device_name(b) for b in backends},
        "cpu_count": os.cpu_count(),
        "versions": _versions(),
        "combo_note": COMBO_NOTE,
        "settings": {
            "folders": [str(f) for f in args.folders],
            "names": args.names,
            "instances": len(folders),
            "methods": args.methods,
            "backends": backends,
            "time_limit": args.time_limit,
            "total_limit": args.total_limit,
            "jobs": args.jobs,
            "combo": args.combo,
        },
        "runs": [],
        "not_run": [],
    }
    deadline = None if args.total_limit is None else time.time() + args.total_limit
    for row in _rows(folders, args.methods, backends, args.time_limit, deadline, args.jobs, args.combo):
        if row.get("not_run"):
            out["not_run"].append(row["name"])
            continue
        out["runs"].append(row)
        print(json.dumps(row, default=str), flush=True)
    order = {f.name: k for k, f in enumerate(folders)}
    out["runs"].sort(key=lambda r: order[r["name"]])
    out["not_run"].sort(key=order.__getitem__)
    out["summary"] = summary(out["runs"], args.methods, backends)
    out["errors"] = [f"{r['name']}: {e}" for r in out["runs"] for e in r["errors"]]
    return out


def _ratios(both: list[float], key: str) -> dict:
    """The geometric mean, median, least and largest of ``both`` (``KEY_geomean`` ...)."""
    return {
        f"{key}_geomean": combo.geomean(both),
        f"{key}_median": statistics.median(both) if both else None,
        f"{key}_min": min(both, default=None),
        f"{key}_max": max(both, default=None),
    }


def summary(runs: list[dict], methods, backends) -> dict:
    """Per method and backend: the counts by status, our slowest proof, the comparison with combo.

    Parameters
    ----------
    runs : rows of :func:`run_instance`
    methods, backends : those the rows were solved with

    Returns
    -------
    dict : ``"METHOD/BACKEND"`` to its figures (the module doc), and ``combo``: instances combo
        solved, and its largest recorded seconds among them; with ``--combo``, ``combo_here`` the
        same of combo's runs here (and the figures against them in each ``"METHOD/BACKEND"``)
    """
    out = {}
    for method in methods:
        for be in backends:
            key = f"{method}/{be}"
            rs = [(r, r[key]) for r in runs if key in r]
            both = [x["combo_over_ours"] for _, x in rs if "combo_over_ours" in x]
            proven = [x for _, x in rs if x["status"] == "proven"]
            beyond = [r["name"] for r, x in rs if x["status"] == "proven" and not r["combo"]["solved"]]
            out[key] = {
                "instances": len(rs),
                **{s: sum(x["status"] == s for _, x in rs) for s in STATUSES},
                "max_proven_seconds": max((x["seconds"] for x in proven), default=None),
                "methods_ran": dict(Counter(x.get("method") for _, x in rs if x.get("method"))),
                "combo_solved": sum(r["combo"]["solved"] for r, _ in rs),
                "both_solved": len(both),
                **_ratios(both, "combo_over_ours"),
                "proven_where_combo_did_not": len(beyond),
                "proven_where_combo_did_not_names": beyond,
                "unproven_names": [r["name"] for r, x in rs if x["status"] == "unproven"],
            }
            here = [(r, x) for r, x in rs if "combo_here" in r]
            if here:
                beyond = [
                    r["name"]
                    for r, x in here
                    if x["status"] == "proven" and r["combo_here"]["status"] != "proven"
                ]
                both = [x["combo_here_over_ours"] for _, x in here if "combo_here_over_ours" in x]
                out[key].update(
                    combo_here_solved=sum(r["combo_here"]["status"] == "proven" for r, _ in here),
                    both_solved_here=len(both),
                    **_ratios(both, "combo_here_over_ours"),
                    proven_where_combo_here_did_not=len(beyond),
                    proven_where_combo_here_did_not_names=beyond,
                )
    solved = [r["combo"]["seconds"] for r in runs if r["combo"]["solved"]]
    out["combo"] = {
        "instances": len(runs),
        "solved": len(solved),
        "max_seconds": max(solved, default=None),
        "note": COMBO_NOTE,
    }
    here = [r["combo_here"] for r in runs if "combo_here" in r]
    if here:
        out["combo_here"] = {
            "instances": len(here),
            **{s: sum(h["status"] == s for h in here) for s in ("proven", "failed", "time")},
            "max_proven_seconds": max((h["seconds"] for h in here if h["status"] == "proven"), default=None),
            "note": "combo run on this machine by gpudp bench (--combo), wall seconds of its process",
        }
    return out
