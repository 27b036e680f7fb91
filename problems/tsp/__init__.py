"""The travelling salesman problem, exactly: Held-Karp dynamic programming on the layered engine
(:mod:`.held_karp`), batches of small instances (:func:`solve_many`, :mod:`.batch`) and the TSPLIB
reader (:mod:`.tsplib`).

Example
-------
>>> import numpy as np
>>> from gpudp.problems import tsp
>>> d = np.array([[0, 2, 9, 10], [1, 0, 6, 4], [15, 7, 0, 8], [6, 3, 12, 0]])
>>> sol = tsp.solve(d, backend="cpu")
>>> sol.value, sol.solution
(21, [0, 2, 3, 1])
"""

from .batch import solve_many
from .held_karp import cli_arguments, cli_solve, solve, summary
from .instance import from_matrix, from_networkx, from_tsplib, load, tour_length
from .sizes import memory_needed
from .tsplib import coord_matrix, read_tsplib

__all__ = [
    "solve",
    "solve_many",
    "load",
    "from_matrix",
    "from_networkx",
    "from_tsplib",
    "read_tsplib",
    "coord_matrix",
    "memory_needed",
    "tour_length",
    "summary",
    "cli_arguments",
    "cli_solve",
]
