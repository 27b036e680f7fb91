"""The progress bar that sweeps, tracebacks and batches share."""

from __future__ import annotations


def progress_bar(total: int, progress, unit: str = "cell"):
    """A tqdm bar on stderr over ``total`` units, shown after a second (``progress`` None: only on
    a terminal; False: none); None when there is nothing to show. Sweeps and batches share it."""
    if progress is False or total == 0:
        return None
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        unit=unit,
        unit_scale=True,
        delay=1.0,
        disable=None if progress is None else False,
        desc="gpudp",
        leave=False,
    )
