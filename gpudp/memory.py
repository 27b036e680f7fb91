"""Memory in one place: how much this process may still allocate, byte sizes given by users, and
the pool that keeps expensive host blocks (page-locked ones) for reuse.

The operating system's free-RAM figure is not what a process may use: a container or batch scheduler
caps it with a cgroup (``memory.max`` in cgroup v2, ``memory.limit_in_bytes`` in v1), and a shell with
``ulimit -v`` (``RLIMIT_AS``) or ``ulimit -d`` (``RLIMIT_DATA``). :func:`available_memory` is the
smallest of what each of them leaves, so that a solver's pre-check refuses before it allocates,
instead of dying with ``MemoryError`` half way.

:class:`BlockPool` keeps host blocks for reuse. The cuda backend owns one process-wide pool of
page-locked blocks (:func:`gpudp.backends.cuda.pinned_pool`): the branch-and-bound ring takes blocks
of one size from it and the engine's decision stores lease one block of at least their size, so
that page-locking (about 0.1 s per GB) is paid once per process, not per solve.

:func:`copy_parallel` and :func:`fill_parallel` copy and fill large host arrays on every numba thread
(a staging copy before a transfer; an array's first writes, whose page faults then spread too).
"""

from __future__ import annotations

import gc
import math
import os
import re
import time
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np
from numba import prange

from .errors import InputError
from .jit import njit

__all__ = [
    "available_memory",
    "copy_parallel",
    "fill_parallel",
    "confirm",
    "one_reading",
    "default_budget",
    "parse_bytes",
    "limits",
    "describe",
    "BlockPool",
]

#: the largest size in bytes we accept anywhere (an int64 count of bytes, with room to add)
MAX_BYTES = 1 << 62


def _read_int(path: str, gone=None) -> int | None:
    """The integer in the file ``path``; None for ``max``, no integer, or a file that cannot be read
    (then ``gone()`` is called, when given)."""
    try:
        with open(path) as f:
            s = f.read(64).strip()
    except OSError:
        if gone is not None:
            gone()
        return None
    if not s or s == "max":
        return None
    try:
        return int(s)
    except ValueError:
        return None


def _proc_kib(path: str, field: str) -> int | None:
    """Bytes from a ``Field:  N kB`` line of a /proc file (``/proc/meminfo``, ``/proc/self/status``)."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


#: the cgroup files of this process's memory limits are found again after this many seconds (a
#: process moved to another group; a limit file that appeared), and when one cannot be read
LAYOUT_SECONDS = 10.0
#: ``[(monotonic time found, files)]``: the last :func:`_cgroup_files`, at most one
_LAYOUT: list = []


def _cgroup_files() -> tuple[tuple[tuple[str, str], ...], ...]:
    """The limit files that bound this process, as groups of ``(limit file, usage file)``: each
    cgroup v2 ancestor's ``memory.max`` a group of its own (every one applies), and for cgroup v1
    one group of the memory controller's ``memory.limit_in_bytes`` candidates (its group's, then
    the root's: the first that sets a limit applies). Only files that exist; kept for
    :data:`LAYOUT_SECONDS` (a memory reading then opens two or three files instead of seven)."""
    now = time.monotonic()
    known = next(iter(_LAYOUT), None)  # one read (another thread may clear it)
    if known is not None and now - known[0] < LAYOUT_SECONDS:
        return known[1]
    groups = []
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read(1 << 16).splitlines()
    except OSError:
        lines = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":  # cgroup v2: the limits of every ancestor apply
            p = path
            while True:
                base = "/sys/fs/cgroup" + (p if p != "/" else "")
                if os.path.exists(base + "/memory.max"):
                    groups.append(((base + "/memory.max", base + "/memory.current"),))
                if p in ("/", ""):
                    break
                p = os.path.dirname(p)
        elif "memory" in controllers.split(","):
            bases = ("/sys/fs/cgroup/memory" + path, "/sys/fs/cgroup/memory")
            found = tuple(
                (b + "/memory.limit_in_bytes", b + "/memory.usage_in_bytes")
                for b in bases
                if os.path.exists(b + "/memory.limit_in_bytes")
            )
            if found:
                groups.append(found)
    _LAYOUT[:] = [(now, tuple(groups))]
    return tuple(groups)


def _cgroup_room() -> tuple[int, str] | None:
    """Bytes the cgroup (v2: this process's group and its ancestors; v1: the memory controller's
    group) still allows, and which file said so; None when no limit is set or none can be read.
    The files are :func:`_cgroup_files`; each reading reads the limits and usages afresh."""
    best = None
    for group in _cgroup_files():
        for limit_file, usage_file in group:  # the first that sets a limit (one, for cgroup v2)
            limit = _read_int(limit_file, gone=_LAYOUT.clear)  # gone: find the files again
            if limit is not None and limit < MAX_BYTES:  # v1 says "no limit" with a huge number
                room = max(limit - (_read_int(usage_file) or 0), 0)
                if best is None or room < best[0]:
                    best = (room, limit_file)
                break
    return best


def _status_bytes(field: str) -> int | None:
    return _proc_kib("/proc/self/status", field)


def _rlimit_room() -> tuple[int, str] | None:
    """Bytes of address space (``ulimit -v``) or data segment (``ulimit -d``) this process has left."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on POSIX
        return None
    best = None
    for name, field in (("RLIMIT_AS", "VmSize"), ("RLIMIT_DATA", "VmData")):
        lim = getattr(resource, name, None)
        if lim is None:
            continue
        try:
            soft, _ = resource.getrlimit(lim)
        except (ValueError, OSError):
            continue
        if soft == resource.RLIM_INFINITY or soft < 0:
            continue
        used = _status_bytes(field) or 0
        room = max(soft - used, 0)
        if best is None or room < best[0]:
            best = (room, f"{name} (ulimit {'-v' if name == 'RLIMIT_AS' else '-d'})")
    return best


def limits() -> dict:
    """Every figure :func:`available_memory` weighs, for messages and ``gpudp info``: bytes free by
    the OS, and what the cgroup and the resource limits leave (None where none is set)."""
    free = _proc_kib("/proc/meminfo", "MemAvailable")
    if free is None:
        try:
            free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            free = None
    cg, rl = _cgroup_room(), _rlimit_room()
    return {
        "os_available": free,
        "cgroup_room": cg[0] if cg else None,
        "cgroup_file": cg[1] if cg else None,
        "rlimit_room": rl[0] if rl else None,
        "rlimit": rl[1] if rl else None,
    }


#: inside :func:`one_reading`: a list holding the figure read (and whether it is a recent one
#: reused, :func:`confirm`), then returned again
_READING: ContextVar[list | None] = ContextVar("gpudp_memory_reading", default=None)

#: a reading this recent (seconds) may serve a sweep again (:func:`one_reading` with ``reuse``)...
RECENT_SECONDS = 1.0
#: ...that weighs at most this share of it (:func:`confirm`); a larger one reads afresh
RECENT_SHARE = 1 / 16
#: ``[(time.monotonic() of the reading, its figure)]``: the last reading taken, at most one
_RECENT: list = []


def available_memory() -> int:
    """Bytes this process may still allocate: the least of the OS's available memory, the room the
    cgroup leaves and the room ``ulimit`` leaves (2 GiB when none of them can be read). Within
    :func:`one_reading`, the figure of its first call (or a recent one it reuses)."""
    held = _READING.get()
    if held:
        return held[0]
    lim = limits()
    known = [v for v in (lim["os_available"], lim["cgroup_room"], lim["rlimit_room"]) if v is not None]
    avail = min(known) if known else 2 << 30
    _RECENT[:] = [(time.monotonic(), avail)]
    if held is not None:
        held[:] = [avail, False]
    return avail


@contextmanager
def one_reading(reuse: bool = False):
    """Within it, :func:`available_memory` reads the host's figures once: a sweep's budget, plan,
    memory check and decision store weigh the same reading (each reading opens /proc and cgroup
    files: ~0.1 ms in a sweep). Nested uses keep the outer reading.

    ``reuse``: the reading may be the last one taken, if it is at most :data:`RECENT_SECONDS` old
    (small sweeps called in a loop then read nothing); only for a caller that :func:`confirm` s
    its bytes before it weighs them, so that a sweep not small beside that figure reads afresh."""
    if _READING.get() is not None:
        yield
        return
    recent = next(iter(_RECENT), None) if reuse else None
    young = recent is not None and time.monotonic() - recent[0] < RECENT_SECONDS
    token = _READING.set([recent[1], True] if young else [])
    try:
        yield
    finally:
        _READING.reset(token)


def confirm(nbytes: int) -> bool:
    """Within :func:`one_reading` with ``reuse``, where the figure is a recent one reused and
    ``nbytes`` (all that the sweep will weigh against it: its host memory and decision store)
    exceeds :data:`RECENT_SHARE` of it: read the figure afresh for the rest of the reading and
    return True (what the caller derived from the old one, a default budget, is to derive again);
    else False, the figure kept."""
    held = _READING.get()
    if not (held and held[1] and nbytes > held[0] * RECENT_SHARE):
        return False
    held.clear()
    available_memory()
    return True


def describe() -> str:
    """``available 12.3 GiB (the least of: OS 20.1 GiB, cgroup 12.3 GiB)`` for error messages."""
    lim = limits()
    parts = []
    if lim["os_available"] is not None:
        parts.append(f"OS {lim['os_available'] / 2**30:.2f} GiB")
    if lim["cgroup_room"] is not None:
        parts.append(f"cgroup {lim['cgroup_room'] / 2**30:.2f} GiB")
    if lim["rlimit_room"] is not None:
        parts.append(f"{lim['rlimit']} {lim['rlimit_room'] / 2**30:.2f} GiB")
    return f"{available_memory() / 2**30:.2f} GiB available ({', '.join(parts) or 'no figure'})"


def default_budget() -> int:
    """Host-memory budget for decision stores: GPUDP_MEMORY_BUDGET bytes, else half of what
    :func:`available_memory` reports."""
    env = os.environ.get("GPUDP_MEMORY_BUDGET")
    if env:
        return parse_bytes(env, "GPUDP_MEMORY_BUDGET")
    return available_memory() // 2


_SIZE = re.compile(r"^([0-9]+(?:\.[0-9]*)?(?:E[+-]?[0-9]+)?|\.[0-9]+(?:E[+-]?[0-9]+)?)\s*([KMGTP]?)(I?B)?$")
_MULT = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}


def parse_bytes(text, field: str = "memory_budget") -> int:
    """A size in bytes from an int or a text like ``512M``, ``8G``, ``1.5TiB`` or ``1e9``.

    Raises :class:`gpudp.InputError` naming ``field`` for anything that is not a finite, non-negative
    size below 2^62 bytes (NaN, infinity, ``1e400``, negative sizes, words).
    """
    if isinstance(text, bool):
        raise InputError(field, f"not a size in bytes: {text!r}")
    if isinstance(text, int) or (hasattr(text, "dtype") and getattr(text.dtype, "kind", "") in "iu"):
        v = int(text)
    elif isinstance(text, float) or (hasattr(text, "dtype") and getattr(text.dtype, "kind", "") == "f"):
        f = float(text)
        if not math.isfinite(f):
            raise InputError(field, f"must be a finite size in bytes, got {text!r}")
        v = int(f) if abs(f) < 2.0**63 else MAX_BYTES + 1
    else:
        s = str(text).strip().upper()
        if s.startswith("-"):
            raise InputError(field, f"must be >= 0 bytes, got {text!r}")
        m = _SIZE.match(s)
        if m is None:
            raise InputError(field, f"not a size in bytes: {text!r} (e.g. 512M, 8G, 1.5T, 1e9)")
        f = float(m.group(1)) * _MULT[m.group(2)]
        if not math.isfinite(f):
            raise InputError(field, f"{text!r} is too large a size")
        v = int(f) if f < 2.0**63 else MAX_BYTES + 1
    if v < 0:
        raise InputError(field, f"must be >= 0 bytes, got {text!r}")
    if v > MAX_BYTES:
        raise InputError(field, f"{text!r} is too large a size (at most 2^62 bytes)")
    return v


class BlockPool:
    """Spare host blocks (``uint8`` arrays made by ``alloc(nbytes, np.uint8)``), by byte size.

    ``keep`` is how many bytes of spare blocks the pool holds on to: a user that knows its working set
    (a ring: its host budget) sets it; a lease given back keeps at least its own block. Giving a block
    back never frees it at once; :meth:`trim` does.
    """

    def __init__(self, alloc=np.empty):
        self.alloc = alloc
        self.spare: dict[int, list] = {}
        self.keep = 0

    @property
    def nbytes(self) -> int:
        """Bytes of the spare blocks."""
        return sum(size * len(bufs) for size, bufs in self.spare.items())

    def take(self, nbytes: int, fit: bool = False):
        """A block of exactly ``nbytes`` bytes (with ``fit``: the smallest spare one of at least
        ``nbytes``), and whether it was allocated now rather than reused."""
        size = min((b for b in self.spare if b >= nbytes), default=nbytes) if fit else nbytes
        bufs = self.spare.get(size)
        if bufs:
            buf = bufs.pop()
            if not bufs:
                del self.spare[size]
            return buf, False
        return self.alloc(nbytes, np.uint8), True

    def give(self, buf):
        """Take back a block from :meth:`take` (no copy may still be using it)."""
        self.spare.setdefault(buf.nbytes, []).append(buf)

    def trim(self, keep: int, size: int | None = None):
        """Free spare blocks until at most ``keep`` bytes remain, those not of ``size`` bytes first."""
        for nbytes in sorted(self.spare, key=lambda b: b == size):
            bufs = self.spare[nbytes]
            while bufs and self.nbytes > keep:
                bufs.pop()
            if not bufs:
                del self.spare[nbytes]

    def lease(self, n: int, dtype=np.uint32) -> np.ndarray:
        """An array of ``n`` items of ``dtype`` (contents undefined) on the smallest spare block
        that holds it; the block comes back to the pool when the array (and every view of it) is
        dropped, and the pool then keeps at most ``max(keep, that block)`` spare bytes."""
        dtype = np.dtype(dtype)
        buf, _ = self.take(max(n, 1) * dtype.itemsize, fit=True)
        return _Lease(self, buf, n, dtype)


class _Lease(np.ndarray):
    """A view on a pooled block that gives the block back when the view is dropped."""

    def __new__(cls, pool, buf, n, dtype):
        obj = buf[: n * dtype.itemsize].view(dtype).view(cls)
        obj._lease = (pool, buf)
        return obj

    def __array_finalize__(self, obj):
        self._lease = None  # views of a lease hold it (their base) and give nothing back themselves

    def __del__(self):
        lease = getattr(self, "_lease", None)
        if lease is not None:
            pool, buf = lease
            pool.give(buf)
            pool.trim(max(pool.keep, buf.nbytes), buf.nbytes)


@contextmanager
def gc_paused():
    """The cyclic garbage collector off for a loop that makes thousands of small objects and frees
    none (a batch's solutions): left on, it walks every live object many times over (3 to 9 times
    the loop's own cost on 10,000 solutions, measured)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def copy_parallel(dst, src, n: int, chunk: int) -> None:
    """``dst[:n] = src[:n]`` (1-D arrays of one dtype) on every numba thread, ``chunk`` items a task
    (a slice each: vectorised). Faster than one thread's copy where the memory bandwidth allows, and
    where ``dst`` is fresh memory its first writes (page faults) spread over the threads too.

    Raises
    ------
    ValueError
        ``n`` outside ``0 .. min(len(dst), len(src))``, ``chunk`` below 1, or two dtypes (a copy
        into a narrower one would wrap silently)."""
    n, chunk = int(n), int(chunk)
    if dst.dtype != src.dtype or dst.ndim != 1 or src.ndim != 1:
        raise ValueError(
            f"copy_parallel: 1-D arrays of one dtype, got {dst.dtype} {dst.shape} and {src.dtype} {src.shape}"
        )
    if not 0 <= n <= min(len(dst), len(src)) or chunk < 1:
        raise ValueError(f"copy_parallel: n = {n} of {len(src)} into {len(dst)}, chunk = {chunk}")
    _copy_chunks(dst, src, n, chunk)


def fill_parallel(a, start: int, end: int, value, chunk: int) -> None:
    """``a[start:end] = value`` (1-D) on every numba thread, ``chunk`` items a task.

    Raises
    ------
    ValueError
        ``start .. end`` outside ``a``, ``chunk`` below 1, or a ``value`` that ``a``'s dtype does
        not hold exactly."""
    start, end, chunk = int(start), int(end), int(chunk)
    if a.ndim != 1 or not 0 <= start <= end <= len(a) or chunk < 1:
        raise ValueError(f"fill_parallel: [{start}, {end}) of {a.shape}, chunk = {chunk}")
    try:
        exact = a.dtype.type(value) == value
    except (OverflowError, TypeError, ValueError):
        exact = False
    if not exact:
        raise ValueError(f"fill_parallel: {value!r} is not exact as {a.dtype}")
    _fill_chunks(a, start, end, value, chunk)


@njit(parallel=True, cache=True)
def _copy_chunks(dst, src, n, chunk):
    for c in prange((n + chunk - 1) // chunk):
        lo = c * chunk
        hi = min(lo + chunk, n)
        dst[lo:hi] = src[lo:hi]


@njit(parallel=True, cache=True)
def _fill_chunks(a, start, end, value, chunk):
    for c in prange((end - start + chunk - 1) // chunk):
        lo = start + c * chunk
        a[lo : min(lo + chunk, end)] = value
