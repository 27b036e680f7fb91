"""The ``gpudp`` command: ``solve``, ``bench``, ``info`` and ``demo``.

Each problem is a plug-in module in :mod:`gpudp.problems` that provides
``cli_arguments(parser)`` and ``cli_solve(args) -> Solution`` (and, for benchmarks,
``bench_arguments(parser)`` and ``cli_bench(args) -> dict``). The tables below map command names
to modules; a new plug-in adds one line.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import select
import signal
import sys
import threading
import traceback

from .bench import options as bench_options
from .errors import GpudpError, InputError
from .info import info

SOLVERS = {
    "lcs": "gpudp.problems.lcs",
    "subset-sum": "gpudp.problems.subset_sum",
    "knapsack": "gpudp.problems.knapsack",
    "tsp": "gpudp.problems.tsp",
}
BENCHES = {
    "lcs": "gpudp.bench.lcs",
    "subset-sum": "gpudp.bench.subset_sum",
    "knapsack-bb": "gpudp.bench.knapsack_bb",
    "tsp": "gpudp.bench.tsp",
    "knapsack": "gpudp.bench.knapsack_dp",
    "knapsack-classes": "gpudp.bench.knapsack_classes",
    "knapsack-files": "gpudp.bench.knapsack_files",
    "startup": "gpudp.bench.startup",
    "batch": "gpudp.bench.batch",
    "scale": "gpudp.bench.scale",
}


class _Parser(argparse.ArgumentParser):
    """argparse with the CLI's promise: a mistake on the command line is one line and exit 2 (the
    usage is one ``--help`` away)."""

    def error(self, message):
        self.exit(2, f"gpudp: error: {self.prog}: {message} (see {self.prog} --help)\n")


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived (``timeout``, ``kill``, a batch scheduler, a closed terminal): like
    Ctrl-C, it unwinds the solve so that spill folders and other temporary files are removed."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


def _module(table, name):
    return importlib.import_module(table[name])


def _add_backend(p):
    p.add_argument(
        "--backend",
        default="auto",
        choices=["auto", "cpu", "cuda"],
        help="where to run: cuda when a GPU is usable (auto), else cpu",
    )


def build_parser(argv=None) -> argparse.ArgumentParser:
    """The parser; only the plug-in named on the command line is imported (for its options), so
    that a plug-in that fails to import breaks its own command only."""
    argv = sys.argv[1:] if argv is None else list(argv)
    chosen = argv[1] if len(argv) > 1 and argv[0] in ("solve", "bench") else None
    parser = _Parser(prog="gpudp", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show the Python traceback of an unexpected error (GPUDP_DEBUG=1)",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    solve = sub.add_parser("solve", help="solve an instance")
    solve_sub = solve.add_subparsers(dest="problem", required=True)
    for name in SOLVERS:
        p = solve_sub.add_parser(name, help=f"solve a {name} instance")
        _add_backend(p)
        p.add_argument("--json", action="store_true", help="print the result as JSON")
        if argv[:1] == ["solve"] and name == chosen:
            _module(SOLVERS, name).cli_arguments(p)

    bench = sub.add_parser("bench", help="run a benchmark and write JSON")
    bench_sub = bench.add_subparsers(dest="problem", required=True)
    for name in BENCHES:
        p = bench_sub.add_parser(name, help=f"benchmark {name}")
        p.add_argument(
            "--out",
            default=None,
            help="JSON file to write (default: stdout, the run's own lines then on stderr)",
        )
        p.add_argument(
            "--backends",
            type=bench_options.backends,
            default="auto",
            help="comma-separated; auto: cuda and cpu where usable",
        )
        if argv[:1] == ["bench"] and name == chosen:
            _module(BENCHES, name).bench_arguments(p)

    sub.add_parser("info", help="backends, devices, versions, memory and the kernel cache")
    cache = sub.add_parser("cache", help="the persistent kernel cache (GPUDP_CACHE_DIR)")
    cache.add_argument("action", choices=["info", "clear"], help="info: where and how big; clear: empty it")
    warm = sub.add_parser("warmup", help="compile the bundled solvers' kernels into the cache ahead of time")
    warm.add_argument("problems", nargs="*", help="lcs, knapsack, subset-sum, tsp (default: all)")
    warm.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"], help="auto: cpu and cuda")
    warm.add_argument(
        "--calibrate",
        action="store_true",
        help="then measure the kernels' rates (and the GPU's start-up) on this machine for auto's "
        "backend choice; gpudp info shows them",
    )
    demo = sub.add_parser("demo", help="solve the bundled example (LCS of two real genomes)")
    _add_backend(demo)
    demo.add_argument("--json", action="store_true")
    return parser


def _print_solution(sol, module, as_json: bool):
    if as_json:
        print(sol.to_json(indent=None))
        return
    print(module.summary(sol) if hasattr(module, "summary") else f"{sol.problem}: {sol.value}")


def main(argv=None) -> int:
    """Run the command line; returns the exit status: 0, 1 for a batch in which some instance failed
    (its line says why), a solve stopped by its time limit (its best proven bounds printed) or a
    bench whose checks of its answers failed (``errors`` in its JSON, written first), 2 for
    any other error (one line on stderr), 130 on Ctrl-C, 128 + the signal's number on SIGTERM or
    SIGHUP (the first such signal decides; see :class:`_Stops`), 141 (128 + SIGPIPE), quietly, when
    the reader of the output went away (``gpudp ... | head -1``)."""
    stops = _Stops()
    try:
        stops.install()  # first, so that a signal during start-up is handled like any other
        return _main(argv)
    except (KeyboardInterrupt, Terminated) as e:
        return stops.stopped(e)
    finally:
        stops.restore()


def _main(argv) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv or os.environ.get("GPUDP_DEBUG", "") not in ("", "0")
    argv = [a for a in argv if a != "--debug"]
    args = build_parser(argv).parse_args(argv)
    try:
        code = _run(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's last flush
        return code
    except BrokenPipeError:
        if not _stdout_closed():
            raise
        _quiet_stdout()
        return 128 + 13  # SIGPIPE's number on every POSIX system
    except (GpudpError, OSError) as e:
        if debug:
            traceback.print_exc()
        print(f"gpudp: error: {_one_line(_as_typed(e, argv))}", file=sys.stderr)
        return 2
    except MemoryError:
        if debug:
            traceback.print_exc()
        print(
            "gpudp: error: out of memory (lower --memory-budget, or free memory; the pre-checks missed "
            "this: please report it)",
            file=sys.stderr,
        )
        return 2
    except Exception as e:
        if debug:
            traceback.print_exc()
        where = "" if debug else "; --debug shows the traceback"
        text = _one_line(e)[:500]
        print(
            f"gpudp: error: internal error {type(e).__name__}: {text} (please report it{where})",
            file=sys.stderr,
        )
        return 2


def _stdout_closed() -> bool:
    """Whether standard output is a pipe or socket whose reader has gone (poll reports an error on
    it), as opposed to a broken pipe of the command's own (a worker's)."""
    try:
        fd = sys.stdout.fileno()
        p = select.poll()
        p.register(fd, 0)
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in p.poll(0))
    except (AttributeError, OSError, ValueError):
        return True  # no poll here, or stdout is not a file: the error came from writing it


def _quiet_stdout():
    """Point standard output at /dev/null, so that the interpreter's final flush of what is still
    buffered does not fail again with a message (the pattern Python's documentation gives)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):
        pass


class _Stops:
    """SIGINT, SIGTERM and SIGHUP while the command runs (installed first thing in :func:`main`, on
    the main thread; a signal the parent set to be ignored, as ``nohup`` does SIGHUP, stays ignored).

    The first one decides: it raises :class:`KeyboardInterrupt` (SIGINT) or :class:`Terminated`,
    which unwinds the command and removes its temporary files; any later one is ignored, so that it
    cannot cut that cleanup short or change the exit status (SIGTERM then Ctrl-C exits 143). After a
    stop the handlers stay in place, ignoring, until the process exits with that status."""

    NAMES = ("SIGINT", "SIGTERM", "SIGHUP")

    def __init__(self):
        self.first = None
        self.previous = {}

    def install(self):
        if threading.current_thread() is not threading.main_thread():
            return
        for name in self.NAMES:
            sig = getattr(signal, name, None)
            if sig is not None and signal.getsignal(sig) is not signal.SIG_IGN:
                self.previous[sig] = signal.signal(sig, self._handle)

    def _handle(self, signum, frame):
        if self.first is not None:
            return  # already stopping
        self.first = signum
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(signum)

    def stopped(self, e: BaseException) -> int:
        """Finish a stop: remove every spill folder still there, say so, return the exit status."""
        signum = self.first or getattr(e, "signum", signal.SIGINT)  # e: raised by other means
        store = sys.modules.get("gpudp.store")
        if store is not None:
            store.remove_spill_folders()
        if signum == signal.SIGINT:
            code, text = 130, "gpudp: interrupted"
        else:
            code, text = 128 + signum, f"gpudp: stopped by {signal.Signals(signum).name}"
        try:
            print(text, file=sys.stderr)
        except OSError:
            pass
        return code

    def restore(self):
        if self.first is None:
            for sig, handler in self.previous.items():
                signal.signal(sig, handler)


def _run(args) -> int:
    if args.command == "info":
        for k, v in info().items():
            if isinstance(v, dict):  # the rates: a line each
                print(k)
                for name, text in v.items():
                    print(f"  {name:22s} {text}")
            else:
                print(f"{k:16s} {v}")
    elif args.command == "solve":
        module = _module(SOLVERS, args.problem)
        sol = module.cli_solve(args)
        if isinstance(sol, int):  # a batch printed its own lines: 0 all solved, 1 some failed
            return sol
        if sol is not None:  # None: a batch printed its own lines
            _print_solution(sol, module, args.json)
            if not sol.optimal:  # stopped by --time-limit (or memory): proven bounds, not the optimum
                return 1
    elif args.command == "demo":
        from .problems import lcs

        _print_solution(lcs.demo(backend=args.backend), lcs, args.json)
    elif args.command == "cache":
        from . import cache

        if args.action == "clear":
            r = cache.clear()
            for path in r["removed"]:
                print(f"removed {path}")
            if r["root"]:
                print(f"removed {cache.root_dir()}")
            print(f"freed {r['bytes'] / 2**20:.1f} MiB" if r["removed"] else "nothing to remove")
            if r["kept"]:
                print(
                    f"kept {_other(r['kept'])} in {cache.root_dir()}: not known as gpudp's (an old "
                    "cache folder with other files in it is kept too: remove it by hand)"
                )
        else:
            d = cache.info()
            print(f"path     {d['path']} ({'on' if d['enabled'] else 'off: GPUDP_CACHE_DIR'})")
            for f in d["folders"]:
                mark = "*" if f["name"] == os.path.basename(d["current"]) else " "
                print(f"{mark} {f['name']}: {f['kernels']} kernels, {f['bytes'] / 2**20:.1f} MiB")
            if not d["folders"]:
                print("empty")
            if d["other"]:
                print(f"  (and {_other(d['other'])} not made by gpudp, never removed)")
            held = d["in_process"]
            by_family = ", ".join(f"{k} {n}" for k, n in held.items())
            print(f"in this process: {sum(held.values())} kernels" + (f" ({by_family})" if held else ""))
    elif args.command == "warmup":
        from .warmup import warmup

        backends = None if args.backend == "auto" else [args.backend]

        def log(row):
            print(f"{row['problem']:10s} {row['backend']:4s} {row['seconds']:7.2f} s", flush=True)

        warmup(args.problems or None, backends, log)
        if args.calibrate:
            from .warmup import calibrate

            def told(row):
                rate = f"{row['rate']:.3g} {row['unit']}"
                print(
                    f"rate {row['family']:11s} {row['backend']:4s} {rate:22s} ({row['seconds']:.2f} s)",
                    flush=True,
                )

            calibrate(args.problems or None, backends, told)
    elif args.command == "bench":
        if args.out:
            _check_writable(args.out)
            result = _module(BENCHES, args.problem).cli_bench(args)
        else:  # the JSON alone on stdout: what a benchmark prints as it runs goes to stderr meanwhile
            with contextlib.redirect_stdout(sys.stderr):
                result = _module(BENCHES, args.problem).cli_bench(args)
        text = json.dumps(result, indent=2, default=str)
        if args.out:
            with open(args.out, "w") as f:
                f.write(text + "\n")
            print(f"wrote {args.out}", file=sys.stderr)
        else:
            print(text)
        if result.get("errors"):  # a bench that checks its answers (knapsack-files): after the JSON
            shown = "; ".join(result["errors"][:3])
            print(f"gpudp: error: {len(result['errors'])} check(s) failed: {shown}", file=sys.stderr)
            return 1
    return 0


def _check_writable(path: str):
    """Refuse an ``--out`` that cannot be written before the benchmark runs, not after: a missing
    or unwritable folder, or a folder where the file should be."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise InputError("--out", f"{path} is a folder, not a file")
    if not os.path.isdir(folder):
        raise InputError("--out", f"cannot write {path}: no folder {folder}")
    if not os.access(path if os.path.exists(path) else folder, os.W_OK):
        raise InputError("--out", f"cannot write {path}: permission denied")


def _other(names: list) -> str:
    """A few of the cache root's foreign entries, by name."""
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"{len(names)} other entr{'y' if len(names) == 1 else 'ies'} ({shown})"


def _as_typed(e, argv) -> str:
    """An :class:`InputError` about a keyword that the command line set by its option names the
    option as typed (``--time-limit: ...``, not ``time_limit: ...``); other errors as they are."""
    field = getattr(e, "field", "")
    option = "--" + field.replace("_", "-")
    text = str(e)
    if not isinstance(e, InputError) or not field.isidentifier() or not text.startswith(f"{field}: "):
        return text
    if any(a == option or a.startswith(option + "=") for a in argv):
        return option + text[len(field) :]
    return text


def _one_line(text) -> str:
    return " ".join(str(text).split())


if __name__ == "__main__":
    sys.exit(main())
