"""Solvers built on gpudp; installed as ``gpudp.problems`` (the top-level folder ``problems/``)."""
