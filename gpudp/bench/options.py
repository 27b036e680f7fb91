"""The benchmarks' option types: a wrong value fails in argparse itself, before any work starts.

Each is an ``argparse`` ``type=``: it takes the option's text and returns its value, or raises
:class:`argparse.ArgumentTypeError` saying what was expected; the CLI's parser turns that into one
line ``gpudp: error: gpudp bench lcs: argument --sizes: ...`` and exit 2. argparse sends a default
given as text through the same function, so a bench always reads the parsed value (a list for a
comma list). Numbers are ASCII decimals only (``٣`` or ``1_000`` are not numbers here).
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable

from gpudp.errors import InputError

_INT = re.compile(r"[+-]?[0-9]+")
#: the largest whole number an option takes (a count, a size, a seed): every product stays exact
INT_MAX = (1 << 63) - 1

#: ``--backends`` (added for every bench by gpudp/cli.py): ``auto`` (cuda where usable, and cpu),
#: backends by name, or ``none`` (bench tsp: only its peer)
BACKENDS = ("auto", "cpu", "cuda", "none")
_ALONE = ("auto", "none")


def _fail(text: str) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(text)


def _whole(text: str, lo: int, hi: int = INT_MAX) -> int:
    """One whole number in ``lo..hi``; the message says which range."""
    t = text.strip()
    want = f"a whole number >= {lo}" if hi == INT_MAX else f"a whole number in {lo}..{hi}"
    if not _INT.fullmatch(t) or len(t.lstrip("+-")) > 19:
        raise _fail(f"{text!r} is not {want}")
    v = int(t)
    if not lo <= v <= hi:
        raise _fail(f"{v} is not {want}")
    return v


def int_in(lo: int, hi: int = INT_MAX) -> Callable[[str], int]:
    """A whole number in ``lo..hi``."""

    def parse(text: str) -> int:
        return _whole(text, lo, hi)

    return parse


positive_int = int_in(1)
non_negative_int = int_in(0)
#: a random generator's seed
seed = non_negative_int


def seconds(text: str) -> float:
    """A time in seconds: a finite number above 0."""
    try:
        v = float(text)
    except ValueError:
        raise _fail(f"{text!r} is not a number of seconds") from None
    if not (v > 0 and math.isfinite(v)):
        raise _fail(f"{text!r}: seconds must be finite and above 0")
    return v


def seconds_or_inf(text: str) -> float:
    """A time in seconds above 0, ``inf`` for none."""
    if text.strip().lower() in ("inf", "infinity"):
        return math.inf
    return seconds(text)


def int_list(
    lo: int = 1, hi: int = INT_MAX, empty: bool = False, count: int | None = None
) -> Callable[[str], list[int]]:
    """A comma-separated list of whole numbers in ``lo..hi`` (``empty``: ``''`` is the empty list;
    ``count``: exactly so many)."""

    def parse(text: str) -> list[int]:
        parts = [s.strip() for s in text.split(",")]
        if parts == [""] and empty:
            return []
        if "" in parts:
            raise _fail(f"{text!r}: a comma-separated list of whole numbers, with none left empty")
        if count is not None and len(parts) != count:
            raise _fail(f"{text!r}: {count} comma-separated whole numbers")
        return [_whole(s, lo, hi) for s in parts]

    return parse


def whole_list(lo: int, hi: int) -> Callable[[str], list[int]]:
    """A comma-separated list of numbers with whole values in ``lo..hi``, written as integers or as
    reals (``1e6``)."""

    def parse(text: str) -> list[int]:
        out = []
        for part in (s.strip() for s in text.split(",")):
            try:
                v = float(part)
            except ValueError:
                raise _fail(f"{part!r} (in {text!r}) is not a number") from None
            if _INT.fullmatch(part):
                v = int(part)  # exact, whatever its size
            if not (math.isfinite(v) and v == int(v) and lo <= int(v) <= hi):
                raise _fail(f"{part!r} is not a whole number in {lo}..{hi}")
            out.append(int(v))
        return out

    return parse


def choice_list(*choices: str, alone: tuple[str, ...] = ()) -> Callable[[str], list[str]]:
    """A comma-separated list of names from ``choices``, repeats dropped; a name in ``alone`` (such as
    ``auto``) must be the only one."""

    def parse(text: str) -> list[str]:
        names = list(dict.fromkeys(s.strip() for s in text.split(",")))
        for name in names:
            if name not in choices:
                where = f" (in {text!r})" if name != text.strip() else ""
                raise _fail(f"{name!r}{where} is not one of {', '.join(choices)}")
        both = [n for n in names if n in alone]
        if both and len(names) > 1:
            raise _fail(f"{text!r}: {both[0]} stands alone, not in a list")
        return names

    return parse


def checked(read: Callable[[str], object], what: str) -> Callable[[str], object]:
    """``read`` as an option type: its ValueError (an InputError too) becomes argparse's error with
    the same message, and an empty result (a list naming nothing) is refused as naming no ``what``."""

    def parse(text: str):
        try:
            out = read(text)
        except ValueError as e:
            text_e = str(e)
            if isinstance(e, InputError):  # argparse names the option: not its field again
                text_e = text_e.removeprefix(f"{e.field}: ")
            raise _fail(text_e) from None
        if isinstance(out, list) and not out:
            raise _fail(f"{text!r} names no {what}")
        return out

    return parse


_backend_names = choice_list(*BACKENDS, alone=_ALONE)


def backends(text: str) -> str:
    """``--backends``: a comma list of ``auto``, ``cpu``, ``cuda`` (or ``none``), checked; returned
    as text (normalised), which each bench turns into backends with :func:`backend_list`."""
    return ",".join(_backend_names(text))


def backend_list(text: str, none: bool = False, auto: list[str] | None = None) -> list[str]:
    """The backends ``--backends`` names; ``auto`` stands for the ``auto`` argument where one is given
    (bench scale: cpu), else for cuda (where a GPU is usable) and cpu.

    ``none`` (an empty list) only where the bench allows it. An InputError naming ``--backends`` for
    a wrong value: gpudp/cli.py checks it in argparse with :func:`backends`, this is the same check
    for a caller that builds ``args`` itself."""
    try:
        names = _backend_names(text)
    except argparse.ArgumentTypeError as e:
        raise InputError("--backends", str(e)) from None
    if names == ["none"]:
        if not none:
            raise InputError("--backends", "none: this bench times gpudp's backends, name one or auto")
        return []
    if names == ["auto"] and auto is not None:
        return list(auto)
    if names == ["auto"]:
        from gpudp.backends import cuda_usable

        return (["cuda"] if cuda_usable() else []) + ["cpu"]
    return names
