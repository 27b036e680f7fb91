"""The ``gpudp`` command: ``solve``, ``bench``, ``info`` and ``demo``.

Each problem is a plug-in module in :mod:`gpudp.problems` that provides
``cli_arguments(parser)`` and ``cli_solve(args) -> Solution`` (and, for benchmarks,
``bench_arguments(parser)`` and ``cli_bench(args) -> dict``). The tables below map command names
to modules; a new plug-in adds one line.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys

from .errors import GpudpError

SOLVERS = {
    "lcs": "gpudp.problems.lcs",
    "subset-sum": "gpudp.problems.subset_sum",
    "knapsack": "gpudp.problems.knapsack",
    "tsp": "gpudp.problems.tsp_held_karp",
}
BENCHES = {
    "lcs": "gpudp.problems.lcs_bench",
    "subset-sum": "gpudp.problems.subset_sum",
    "knapsack-bb": "gpudp.problems.knapsack_bb",
    "tsp": "gpudp.problems.tsp_bench",
    "knapsack": "gpudp.problems.knapsack_dp_bench",
}


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
    parser = argparse.ArgumentParser(prog="gpudp", description=__doc__.splitlines()[0])
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
        p.add_argument("--out", default=None, help="JSON file to write (default: stdout)")
        p.add_argument("--backends", default="auto", help="comma-separated; auto: cuda and cpu where usable")
        if argv[:1] == ["bench"] and name == chosen:
            _module(BENCHES, name).bench_arguments(p)

    sub.add_parser("info", help="backends, devices and versions")
    demo = sub.add_parser("demo", help="solve the bundled example (LCS of two real genomes)")
    _add_backend(demo)
    demo.add_argument("--json", action="store_true")
    return parser


def info() -> dict:
    import numba
    import numpy

    from . import __version__
    from .backends import cpu, cuda_usable

    out = {
        "gpudp": __version__,
        "python": sys.version.split()[0],
        "numpy": numpy.__version__,
        "numba": numba.__version__,
        "cpu": cpu.device_name(),
    }
    try:
        from importlib.metadata import version

        out["numba-cuda"] = version("numba-cuda")
    except Exception:
        out["numba-cuda"] = None
    from .backends import cuda as cuda_mod

    out["cuda_usable"] = cuda_usable()
    out["cuda_device"] = cuda_mod.device_name() if out["cuda_usable"] else cuda_mod.unavailable_reason()
    out["default_backend"] = "cuda" if out["cuda_usable"] else "cpu"
    return out


def _print_solution(sol, module, as_json: bool):
    if as_json:
        print(sol.to_json(indent=None))
        return
    print(module.summary(sol) if hasattr(module, "summary") else f"{sol.problem}: {sol.value}")


def main(argv=None) -> int:
    args = build_parser(argv).parse_args(argv)
    try:
        if args.command == "info":
            for k, v in info().items():
                print(f"{k:16s} {v}")
        elif args.command == "solve":
            module = _module(SOLVERS, args.problem)
            _print_solution(module.cli_solve(args), module, args.json)
        elif args.command == "demo":
            from .problems import lcs

            _print_solution(lcs.demo(backend=args.backend), lcs, args.json)
        elif args.command == "bench":
            result = _module(BENCHES, args.problem).cli_bench(args)
            text = json.dumps(result, indent=2, default=str)
            if args.out:
                with open(args.out, "w") as f:
                    f.write(text + "\n")
                print(f"wrote {args.out}", file=sys.stderr)
            else:
                print(text)
    except (GpudpError, OSError) as e:
        print(f"gpudp: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("gpudp: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
