"""The subset-sum instance file: one integer a line, the target (or capacity) first."""

from __future__ import annotations

import re

from gpudp.errors import InputError
from gpudp.inputs import read_text, short_repr

from .kernels import INT64_MAX
from .solver import MAX_ITEMS

#: the most numbers one instance file may hold (the solver uses at most 64 non-zero weights <= target)
MAX_FILE_NUMBERS = 10_000_000
_REAL = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|nan|inf|infinity)", re.I)


def _parse_number(text, where):
    """One non-negative integer written in ASCII digits (an optional '+'), parsed exactly."""
    body = text[1:] if text[:1] in "+-" else text
    if body.isascii() and body.isdigit():
        digits = body.lstrip("0")
        if text[0] == "-" and digits:
            raise InputError(
                "file", f"{where}: {short_repr(text)} is negative: the target and the weights are >= 0"
            )
        if len(digits) > 19 or int(digits or "0") > INT64_MAX:
            raise InputError("file", f"{where}: {short_repr(text)} is above 2**63 - 1 (int64 sums)")
        return int(digits or "0")
    if _REAL.fullmatch(text):
        raise InputError("file", f"{where}: {short_repr(text)} is not an integer (reals are not accepted)")
    raise InputError(
        "file", f"{where}: {short_repr(text)} is not an integer (one integer a line, # comments)"
    )


def read_instance(path):
    """One integer a line (blank lines and # comments skipped): the target (or capacity) first.

    Integers are ASCII digits with an optional ``+``, parsed exactly (never through a float);
    negative numbers, reals, NaN, numbers above 2**63 - 1, several numbers on a line, binary data
    and undecodable text raise :class:`~gpudp.InputError` with the line. A UTF-8 byte-order mark and
    LF, CRLF or CR line ends are accepted; at most ``MAX_FILE_NUMBERS`` numbers.
    """
    text = read_text(path, "file")
    nums = []
    for lineno, line in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), 1):
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        if len(nums) == MAX_FILE_NUMBERS:
            raise InputError(
                "file",
                f"{path} holds more than {MAX_FILE_NUMBERS:,} numbers (the solver uses at most {MAX_ITEMS} "
                "non-zero weights not above the target)",
            )
        nums.append(_parse_number(body, f"{path}:{lineno}"))
    if not nums:
        raise InputError("file", f"{path} holds no target (one integer a line: the target, then the weights)")
    return nums[0], nums[1:]
