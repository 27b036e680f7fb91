"""Many read pairs at once: the LCS length and the edit distance of every row of two arrays, by the
bit-parallel batch solvers, wherever the reads lie.

    python examples/read_pairs.py --pairs 100000 --length 150 [--where host|page-locked|gpu|arrow|strs]
                                  [--backend auto|cpu|cuda]

Pair ``p`` is row ``p`` of ``A`` and row ``p`` of ``B`` (bytes: one base a byte); ``B`` is ``A`` with
about 5% of its bases substituted. ``--where`` says where the reads lie when the batch starts:
``host`` (numpy arrays: the GPU batch stages them through page-locked memory), ``page-locked``
(copied once into page-locked memory, ``gpudp.backends.page_locked``, so the GPU reads them by
DMA) or ``gpu`` (copied once to the GPU, as numba device arrays: CuPy arrays and PyTorch CUDA
tensors do as well; the batch reads them there and copies nothing to the device) or ``arrow``
(two pyarrow binary arrays made over the same bytes, as a table's columns would hold them; needs
pyarrow: the batch reads their buffers) or ``strs`` (two StringZilla ``Strs``, split from one
string of the reads a side; needs stringzilla: the batch reads their tapes). Each batch re-solves a
few pairs by the checked one-pair path and compares.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from gpudp.problems import edit_distance, lcs

WHERE = ("host", "page-locked", "gpu", "arrow", "strs")


def reads(pairs: int, length: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(A, B)``: ``pairs`` random reads of ``length`` bases (bytes of ACGT) and their copies with
    about 5% of the bases substituted."""
    rng = np.random.default_rng(seed)
    acgt = np.frombuffer(b"ACGT", np.uint8)
    a = acgt[rng.integers(0, 4, (pairs, length))]
    b = np.where(rng.random((pairs, length)) < 0.05, acgt[rng.integers(0, 4, (pairs, length))], a)
    return a, b


def place(a: np.ndarray, b: np.ndarray, where: str):
    """The two arrays where ``where`` says (see the module's text)."""
    if where == "host":
        return a, b
    if where == "page-locked":
        from gpudp.backends import page_locked

        return page_locked(a), page_locked(b)
    if where == "gpu":
        from numba import cuda

        return cuda.to_device(a), cuda.to_device(b)
    if where == "arrow":  # a binary array over each array's bytes: the offsets made, nothing copied
        import pyarrow as pa

        def column(x):
            off = np.arange(0, x.size + 1, x.shape[1], dtype=np.int32)
            return pa.Array.from_buffers(pa.binary(), len(x), [None, pa.py_buffer(off), pa.py_buffer(x)])

        return column(a), column(b)
    if where == "strs":  # the reads as lines of one string, split by StringZilla into its tape
        import stringzilla as sz

        def lines(x):
            return sz.Str(np.concatenate([x, np.full((len(x), 1), ord("\n"), np.uint8)], 1).tobytes()).split(
                "\n"
            )[:-1]

        return lines(a), lines(b)
    raise ValueError(f"where: one of {', '.join(WHERE)}, got {where!r}")


def solve(a, b, backend: str = "auto"):
    """``(lengths, distances, seconds)``: the LCS length and the edit distance of every pair, and
    each batch's seconds."""
    t = time.perf_counter()
    lengths = lcs.solve_many((a, b), backend=backend).values
    t1 = time.perf_counter()
    distances = edit_distance.solve_many((a, b), backend=backend).values
    return lengths, distances, (t1 - t, time.perf_counter() - t1)


def main(argv=None):
    parser = argparse.ArgumentParser(description="LCS lengths and edit distances of many read pairs")
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--length", type=int, default=150)
    parser.add_argument("--where", default="host", choices=WHERE)
    parser.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    args = parser.parse_args(argv)
    a, b = place(*reads(args.pairs, args.length), args.where)
    lengths, distances, (t_lcs, t_ed) = solve(a, b, args.backend)
    print(f"{args.pairs} pairs of {args.length} bases ({args.where}):")
    print(f"  LCS lengths    mean {lengths.mean():.2f}, min {lengths.min()}  ({t_lcs:.3f} s)")
    print(f"  edit distances mean {distances.mean():.2f}, max {distances.max()}  ({t_ed:.3f} s)")


if __name__ == "__main__":
    main()
