"""Benchmarks (``gpudp bench ...``) and the instance generators they share with the examples.

Each module gives ``bench_arguments(parser)`` and ``cli_bench(args) -> dict`` (the JSON written).
Only the command line imports this package; the solvers never do.
"""
