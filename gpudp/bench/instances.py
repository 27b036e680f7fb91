"""Instance generators of the benchmarks and the examples: the random classes of the seed papers,
each reproducible from its seed."""

from __future__ import annotations

import numpy as np

from gpudp.problems.tsp.tsplib import coord_matrix

__all__ = [
    "boyer_instance",
    "oconnell_instance",
    "lalami_instance",
    "shen_instance",
    "wan_instance",
    "random_euclidean",
    "tsp_instance",
    "random_dna",
]


def boyer_instance(n: int, seed: int = 0):
    """Boyer, El Baz & Elkihel's knapsack: w in [1, 1000], p = w + 50, C = sum(w) / 2."""
    rng = np.random.default_rng(seed)
    w = rng.integers(1, 1001, n)
    return w + 50, w, int(w.sum() // 2)


def oconnell_instance(n: int, capacity: int, seed: int = 0):
    """The same items with a given capacity (O'Connell & Mumford's sweep over C)."""
    rng = np.random.default_rng(seed)
    w = rng.integers(1, 1001, n)
    return w + 50, w, int(capacity)


def lalami_instance(n: int, seed: int):
    """Lalami & El Baz: strongly correlated, w in [1, 100], p = w + 10, C = sum(w) / 2."""
    rng = np.random.default_rng(seed)
    w = rng.integers(1, 101, n)
    return w + 10, w, int(w.sum() // 2)


def shen_instance(n: int, seed: int):
    """Shen et al.: w in [1, 10000], p = w + 1000 + uniform[-20, 20], C = sum(w) * 100 / 1001."""
    rng = np.random.default_rng(seed)
    w = rng.integers(1, 10001, n)
    p = w + 1000 + rng.integers(-20, 21, n)
    return p, w, int(w.sum() * 100 // 1001)


def wan_instance(n, seed, percent=50):
    """Wan et al.'s random instance: n weights uniform in [1, 10^8], target = percent% of their sum."""
    rng = np.random.default_rng([seed, n])
    w = rng.integers(1, 10**8, n, endpoint=True).tolist()
    return w, sum(w) * percent // 100


def random_euclidean(n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """n random points in [0, 1000)^2 with integer coordinates and their EUC_2D distance matrix."""
    xy = rng.integers(0, 1000, size=(n, 2)).astype(np.float64)
    return xy, coord_matrix(xy, "EUC_2D")


def tsp_instance(n: int, seed: int) -> np.ndarray:
    """The benchmark's distance matrix for n cities (the same for every run with this seed)."""
    return random_euclidean(n, np.random.default_rng([seed, n]))[1]


def random_dna(n: int, rng) -> np.ndarray:
    """n uniform random DNA bases (bytes of ACGT)."""
    return np.frombuffer(b"ACGT", dtype=np.uint8)[rng.integers(0, 4, n)]
