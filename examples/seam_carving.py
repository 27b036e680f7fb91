"""The minimum-energy vertical seam of an image (seam carving) as a gpudp recurrence.

    python examples/seam_carving.py [--rows 8] [--cols 12] [--seed 0] [--backend auto|cpu|cuda]

Cell ``(i, j)`` holds the least energy of a path from the top row down to pixel ``(i, j)`` that
moves at most one column per row. Every dependency, ``(-1, -1), (-1, 0), (-1, 1)``, goes back a
row, so the engine derives a *row* wavefront: all cells of a row are independent, and the sweep
runs on the engine's layered path (one layer per row), not the tiled one used by edit distance.
"""

from __future__ import annotations

import argparse

import numpy as np

from gpudp import GridRecurrence, InputError, sweep


class MinimumSeam(GridRecurrence):
    value_dtype = np.float64
    decision_bits = 2  # which of the three cells above the best path came from: 0, 1 or 2
    offsets = ((-1, -1), (-1, 0), (-1, 1))  # up-left, up, up-right

    def __init__(self, energy):
        self.energy = np.asarray(energy, dtype=np.float64)
        if self.energy.ndim != 2 or 0 in self.energy.shape:
            raise InputError("energy", f"need a non-empty 2-D array, got shape {self.energy.shape}")

    def shape(self):
        return self.energy.shape

    def data(self):
        return (self.energy,)

    @staticmethod
    def cell(i, j, up_left, up, up_right, energy):
        best, step = up_left, 0
        if up < best:
            best, step = up, 1
        if up_right < best:
            best, step = up_right, 2
        return energy[i, j] + best, step

    @staticmethod
    def boundary(i, j, energy):
        return 0.0 if i < 0 else np.inf  # above the image: free; left or right of it: no way

    @staticmethod
    def back(i, j, step, energy):
        return i - 1, j + step - 1


def min_seam(energy, **sweep_options):
    """The least seam energy and the seam (one column per row, top to bottom), plus the sweep's stats.

    ``sweep_options`` go to :func:`gpudp.sweep` (``backend``, ``memory_budget``, ...).
    """
    rec = MinimumSeam(energy)
    result = sweep(rec, **sweep_options)
    end = int(np.argmin(result.last_row))
    path = result.traceback((rec.energy.shape[0] - 1, end))  # rows (i, j, step), bottom row first
    result.close()
    return float(result.last_row[end]), path[::-1, 1].copy(), result.stats


def carve(image, seam):
    """The image with one pixel per row, the seam's, removed."""
    keep = np.ones(image.shape[:2], dtype=bool)
    keep[np.arange(image.shape[0]), seam] = False
    return image[keep].reshape(image.shape[0], image.shape[1] - 1, *image.shape[2:])


def main(argv=None):
    parser = argparse.ArgumentParser(description="minimum-energy vertical seam on gpudp")
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--cols", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    args = parser.parse_args(argv)
    energy = np.random.default_rng(args.seed).integers(0, 10, (args.rows, args.cols)).astype(np.float64)
    cost, seam, stats = min_seam(energy, backend=args.backend)
    print(f"schedule: {stats.extra['schedule']}, {stats.backend} backend")
    print(f"seam energy {cost:g}, columns {seam.tolist()}")
    for i, row in enumerate(energy.astype(int)):
        print(" ".join(f"[{v}]" if j == seam[i] else f" {v} " for j, v in enumerate(row)).rstrip())
    print(f"carved: {carve(energy, seam).shape}")


if __name__ == "__main__":
    main()
