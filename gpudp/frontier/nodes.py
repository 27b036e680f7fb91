"""What a branching problem gives the frontier engine, what a search returns, and the node helpers
shared by its CPU and CUDA paths (plain Python: both compilers take them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

__all__ = ["BranchProblem", "FrontierResult", "lowest", "stride", "node_key", "node_hash"]


@dataclass
class BranchProblem:
    """What the engine needs to know of a 0/1 maximisation problem (see :mod:`gpudp.frontier`)."""

    n_vars: int
    data: np.ndarray
    child: Callable
    slack: float = 0.0
    root: tuple = (0, 0)
    symmetric: np.ndarray | None = None
    key_bits: int = 0

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype


@dataclass
class FrontierResult:
    best: float | int | None
    level: int
    fields: tuple
    bits: np.ndarray
    complete: bool
    message: str
    stats: dict = field(default_factory=dict)

    def decisions(self) -> np.ndarray:
        """The incumbent node's 0/1 decisions of variables ``0 .. level`` (its whole path)."""
        k = np.arange(self.level + 1)
        return ((self.bits[k >> 5] >> (k & 31).astype(np.uint32)) & 1).astype(np.int8)


def lowest(dtype):
    """The value below every value of ``dtype``: the incumbent before the first."""
    dtype = np.dtype(dtype)
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def stride(level: int) -> int:
    """Bit words stored per node of ``level``: those in use (decisions 0 .. level-1), at least one."""
    return max(1, (level + 31) // 32)


_GOLDEN = np.uint64(11400714819323198485)


def node_key(c0, c1, bit, kb):
    """One int64 of a node's fields (``c1`` takes ``kb`` bits) and one decision bit."""
    return (np.int64(c0) << (kb + 1)) | (np.int64(c1) << 1) | bit


def node_hash(key, mask):
    """The slot of ``key`` in a table of ``mask + 1`` slots (Fibonacci hashing)."""
    return np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(32)) & mask
