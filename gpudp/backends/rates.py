"""Measured rates: how fast each kernel family runs on each backend of this machine, and what a GPU
costs to start (issue 40).

``auto`` (:func:`gpudp.backends.choose`) predicts a solve's time on each backend as its work
divided by the family's rate; these are the rates. A **family** is one kind of kernel with its own
unit of work (:data:`FAMILIES`): the generic grid and layered sweep (cells), the bit-parallel LCS and
edit distance of batches and cdist (cells), subset sum's two lists (steps), Held-Karp (transitions),
the knapsack DP (cells). A rate comes, in this order of precedence, from

1. the environment: ``GPUDP_CPU_CELL_RATE`` (unit cells a second per CPU thread, scaled by the
   family's cost) or ``GPUDP_GPU_START_S``; source ``GPUDP_...``;
2. the store: measured by :func:`calibrate` (``gpudp warmup --calibrate``), or lazily the first time
   a family's ``auto`` needs it and the measurement is cheap beside the predicted work (source
   ``measured``), then nudged by real solves that missed their prediction by more than 2x
   (:func:`observe`, source ``observed``); ``GPUDP_CALIBRATE=0`` turns both of these off;
3. the defaults of :data:`FAMILIES` (source ``assumed``).

A measurement runs the family's real kernels (a function the family's owner registers with
:func:`calibrator`) on small generated inputs, growing them (by up to :data:`MAX_JUMP` doublings at
a time, as the last run's time suggests) until one run computes for at least :data:`TARGET_S`,
compile time excluded (the first run at each size warms), best of :data:`REPEATS`. The GPU's
start-up is measured as what a fresh process's whole wall gains by one GPU solve, exit included
(:func:`measure_gpu_start`).

The store is one JSON file, ``rates.json``, in ``GPUDP_RATES_DIR`` when set, else beside the kernel
cache (:func:`gpudp.cache.cache_dir`; with the cache off, rates are kept for the process only). It
holds an entry per machine, keyed by the machine's fingerprint (:func:`machine`: CPU model, threads,
GPU names, library versions), so another machine, or the same one with another thread count,
measures again. Writers take a lock and replace the file atomically; a file that cannot be read is
ignored with a warning (and rewritten by the next measurement).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass

__all__ = [
    "FAMILIES",
    "Family",
    "Rate",
    "calibrate",
    "calibrator",
    "machine",
    "machine_key",
    "measure",
    "observe",
    "rate",
    "start_rate",
    "store_path",
    "table",
]

#: the store's file name, in its folder
FILE = "rates.json"
#: the store's format; a file of another format is ignored (and replaced by the next write)
FORMAT = 1
#: machines kept in one store (the least recently updated go first)
MAX_MACHINES = 8
#: a measurement grows its input until one run computes at least this long (seconds)
TARGET_S = 0.05
#: ... or until this many doublings (a calibrator caps its own sizes below what memory allows)
MAX_STEPS = 16
#: the most doublings one step of the growth jumps (each new size may compile new kernels)
MAX_JUMP = 4
#: runs at the final size; the best counts
REPEATS = 3
#: a lazy measurement runs only when the predicted work is at least this many times its cost
LAZY_SHARE = 10.0
#: what measuring one family on one backend costs, about (compile of a warm cache included)
MEASURE_COST_S = 0.5
#: a prediction is updated by a solve that computed at least this long and missed by more than
#: :data:`MISS` times either way
MIN_OBSERVED_S = 0.05
MISS = 2.0

#: Seconds a process pays before its first CUDA kernel and the CPU does not, when not measured:
#: importing numba-cuda, creating the context, loading the cached kernels, the first copies.
#: Measured on the H100 machine (2026-11-23, warm kernel cache, fresh processes): see "Start-up" in
#: docs/benchmarks.md. Override with GPUDP_GPU_START_S (seconds).
GPU_START_S = 1.5
#: Seconds a process that has already started CUDA pays for one more solve on the GPU (launches,
#: copies, synchronisation) beyond the kernels themselves.
GPU_LAUNCH_S = 0.02
#: Cell updates a second one CPU thread runs when nothing is measured (a cell of three reads, like
#: LCS or edit distance; measured on the H100 machine's CPU cores and on this project's CI machine,
#: see docs/benchmarks.md). A family's assumed CPU rate is this over its ``cpu_cost``. Override with
#: GPUDP_CPU_CELL_RATE (per thread).
CPU_CELLS_PER_THREAD_S = 2.0e8
#: The same for the GPU, conservatively (bundled kernels run 50-700 G cells/s on an H100).
GPU_CELLS_PER_S = 5.0e10


@dataclass(frozen=True)
class Family:
    """A kernel family: its unit of work and its assumed rates.

    Attributes
    ----------
    name : the family's key (``grid``, ``bitparallel``, ``subset_sum``, ``tsp``, ``knapsack_dp``)
    unit : what its work counts (``cells``, ``steps``, ``transitions``)
    words : the family in a few words, for ``gpudp info``
    cpu_cost : unit cells (a three-read cell of one CPU thread) a unit of work costs, by default
    threaded : whether the CPU kernels use every thread (the assumed rate scales with them)
    gpu_rate : work a second on the GPU, by default
    """

    name: str
    unit: str
    words: str
    cpu_cost: float
    threaded: bool
    gpu_rate: float


#: the families; the defaults are the figures gpudp assumed before it measured (docs/benchmarks.md)
FAMILIES = {
    f.name: f
    for f in (
        Family(
            "grid", "cells", "generic grid and layered sweeps (LCS, user sweeps)", 1.0, True, GPU_CELLS_PER_S
        ),
        Family(
            "bitparallel",
            "cells",
            "bit-parallel LCS / edit distance batches and cdist",
            1 / 32,
            True,
            32 * GPU_CELLS_PER_S,
        ),
        # the two lists' merges run on one thread: 3.4e7 steps in 1.6 s on the 2-core CI machine
        Family("subset_sum", "steps", "subset sum's two lists", 8.0, False, GPU_CELLS_PER_S),
        Family("tsp", "transitions", "Held-Karp (single and batches)", 1.0, True, 72e9),
        Family("knapsack_dp", "cells", "knapsack dense DP (single and batches)", 2.0, True, 1e11),
    )
}
#: the store's key of the GPU's start-up
START = "start"


@dataclass(frozen=True)
class Rate:
    """A rate and where it came from.

    Attributes
    ----------
    value : work a second (a family's rate) or seconds (the GPU's start-up)
    source : ``measured``, ``observed`` (a measured or assumed rate moved by real solves),
        ``assumed`` (the default), or the environment variable that set it
    at : when it was measured or last moved (UTC, ISO 8601), None for the others
    unit : ``cells/s``, ``steps/s``, ``transitions/s`` or ``s``
    """

    value: float
    source: str
    at: str | None
    unit: str

    def words(self) -> str:
        """The rate and its source in words: ``3.1e+09 cells/s measured 2026-12-06 11:50``."""
        when = f" {self.at[:16].replace('T', ' ')}" if self.at else ""
        return f"{self.value:.3g} {self.unit} {self.source}{when}"


# ---------------------------------------------------------------------------------------------
# The machine's fingerprint
# ---------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _static() -> tuple[str, str]:
    """What does not change while a process runs: the NVIDIA GPUs' names as the driver lists them
    (no CUDA import: a small solve must not pay it; ``none`` without a driver) and the libraries'
    versions (:func:`gpudp.cache.versions`), read once."""
    from ..cache import versions

    names = []
    base = "/proc/driver/nvidia/gpus"
    try:
        for d in sorted(os.listdir(base)):
            with open(os.path.join(base, d, "information")) as f:
                names += [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("Model:")]
    except OSError:
        pass
    return ", ".join(names) or "none", versions()


def _gpu_names() -> str:
    """The GPUs (:func:`_static`), ``CUDA_VISIBLE_DEVICES`` and the simulator switch."""
    out = _static()[0]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        out += f" (CUDA_VISIBLE_DEVICES={visible})"
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        out += " (simulator)"
    return out


def env_float(name: str, default):
    """The environment variable ``name`` as a number >= 0, or ``default`` when unset or empty.

    Raises
    ------
    BackendError
        a value that is not a number >= 0.
    """
    text = os.environ.get(name)
    if not text:
        return default
    from ..errors import BackendError

    try:
        x = float(text)
    except ValueError:
        raise BackendError(f"{name}={text!r} is not a number") from None
    if not x >= 0:
        raise BackendError(f"{name}={text!r} must be >= 0")
    return x


def machine() -> dict:
    """What the rates depend on: the CPU's model, the threads numba runs and the CPUs there are,
    the GPUs, the library versions (:func:`gpudp.cache.versions`).

    Returns
    -------
    dict of str: ``cpu`` (the model, numba's threads and the CPUs: ``gpudp.backends.device_name``),
    ``gpu``, ``versions``
    """
    from .cpu import device_name

    return {"cpu": device_name(), "gpu": _gpu_names(), "versions": _static()[1]}


def machine_key(fields: dict | None = None) -> str:
    """The store's key of a machine: a hash of :func:`machine` (or of ``fields``)."""
    text = json.dumps(fields if fields is not None else machine(), sort_keys=True)
    return _hashed(text)


@functools.lru_cache(maxsize=16)
def _hashed(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:20]


# ---------------------------------------------------------------------------------------------
# The store
# ---------------------------------------------------------------------------------------------

#: rates of this process when there is no store (the kernel cache off, no GPUDP_RATES_DIR)
_MEMORY: dict = {}
#: the last file read: (path, mtime_ns, size) -> its rates for this machine
_READ: dict = {}


def store_path() -> str | None:
    """The store's file: ``$GPUDP_RATES_DIR/rates.json``, else ``rates.json`` in the kernel cache's
    folder of this installation; None when neither is on (rates then live for the process)."""
    from .. import cache

    env = os.environ.get("GPUDP_RATES_DIR", "").strip()
    if env:
        return os.path.join(os.path.abspath(os.path.expanduser(env)), FILE)
    if not cache.enabled():
        return None
    return os.path.join(cache.cache_dir(), FILE)


def _read_file(path: str) -> dict:
    """The whole store, or an empty one when the file is missing; one that is not the store's JSON
    warns and reads as empty."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return {"format": FORMAT, "machines": {}}
    except (OSError, ValueError, RecursionError) as e:  # RecursionError: arrays nested past Python's stack
        warnings.warn(f"gpudp: ignoring the rates file {path} ({e}); rates are measured again", stacklevel=3)
        return {"format": FORMAT, "machines": {}}
    ok = isinstance(data, dict) and data.get("format") == FORMAT and isinstance(data.get("machines"), dict)
    if not ok:
        warnings.warn(f"gpudp: ignoring the rates file {path} (not a format-{FORMAT} store)", stacklevel=3)
        return {"format": FORMAT, "machines": {}}
    for key in [k for k, v in data["machines"].items() if not isinstance(v, dict)]:
        del data["machines"][key]  # no machine's entry: the next write would trip on it
    return data


def stored() -> dict:
    """This machine's stored entries, ``{"family/backend": entry}`` (``start/cuda`` the GPU's
    start-up), with those kept for the process only (no store, or one that could not be written);
    the file is read again only when it changed."""
    mkey = machine_key()
    path = store_path()
    try:
        st = os.stat(path) if path is not None else None
    except OSError:
        st = None
    if st is None:
        return dict(_MEMORY.get(mkey, {}))
    stamp = (path, mkey, st.st_ino, st.st_mtime_ns, st.st_size)  # each write is a new file
    if stamp not in _READ:
        entry = _read_file(path)["machines"].get(mkey, {})
        rates = entry.get("rates") if isinstance(entry, dict) else None
        _READ.clear()
        _READ[stamp] = rates if isinstance(rates, dict) else {}
    return {**_READ[stamp], **_MEMORY.get(mkey, {})}


@contextlib.contextmanager
def _locked(folder: str):
    """An exclusive lock of the store's folder (``.rates.lock``) where the system has ``fcntl``."""
    try:
        import fcntl
    except ImportError:  # no advisory locks: the atomic replace still keeps the file whole
        yield
        return
    with open(os.path.join(folder, ".rates.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def write(key: str, entry: dict) -> None:
    """Store ``entry`` under ``key`` (``family/backend``) for this machine: read, update and
    atomically replace the file under the folder's lock, so that concurrent writers lose nothing
    and a reader never sees half a file.

    Parameters
    ----------
    key : ``family/backend`` or ``start/cuda``
    entry : a JSON-able dict (``value``, ``source``, ``at``, ...)

    Raises
    ------
    OSError
        the folder cannot be made or written (the caller keeps the rate for the process).
    """
    path = store_path()
    mkey = machine_key()
    if path is None:
        _MEMORY.setdefault(mkey, {})[key] = entry
        return
    _MEMORY.get(mkey, {}).pop(key, None)
    folder = os.path.dirname(path)
    if os.environ.get("GPUDP_RATES_DIR", "").strip():
        os.makedirs(folder, exist_ok=True)
    else:
        from ..cache import ensure_cache_dir

        ensure_cache_dir()  # made and marked as the kernel cache's (gpudp cache clear removes it)
    with _locked(folder):
        data = _read_file(path)
        machines = data["machines"]
        mine = machines.get(mkey)
        if not isinstance(mine, dict) or not isinstance(mine.get("rates"), dict):
            mine = machines[mkey] = {"machine": machine(), "rates": {}}
        mine["rates"][key] = entry
        mine["updated"] = _now()
        for old in sorted(machines, key=lambda k: str(machines[k].get("updated", "")))[:-MAX_MACHINES]:
            del machines[old]
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-rates-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1, sort_keys=True)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# ---------------------------------------------------------------------------------------------
# Rates
# ---------------------------------------------------------------------------------------------


def _family(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        from ..errors import BackendError

        raise BackendError(f"unknown kernel family {name!r}; one of {', '.join(FAMILIES)}") from None


def _env(name: str) -> float | None:
    return env_float(name, None)


def assumed(family: str, backend: str, threads: int) -> float:
    """The family's default rate on ``backend`` (work a second): on the CPU its unit-cell rate
    (``GPUDP_CPU_CELL_RATE`` or 2e8 a thread, times the threads where its kernels use them) over its
    cost; on another backend the family's ``gpu_rate``."""
    f = _family(family)
    if backend == "cpu":
        per_thread = _env("GPUDP_CPU_CELL_RATE") or CPU_CELLS_PER_THREAD_S
        return per_thread * (threads if f.threaded else 1) / f.cpu_cost
    return f.gpu_rate


def rate(family: str, backend: str, threads: int) -> Rate:
    """The rate ``auto`` uses for ``family`` on ``backend``: the environment's, the stored one,
    else the assumed one (see the module doc).

    Parameters
    ----------
    family : a key of :data:`FAMILIES`
    backend : ``cpu`` or ``cuda``
    threads : the CPU threads the solve may use (the assumed CPU rates scale with them)

    Returns
    -------
    Rate (work a second)

    Raises
    ------
    BackendError
        an unknown family, or a nonsense ``GPUDP_CPU_CELL_RATE``.
    """
    f = _family(family)
    unit = f"{f.unit}/s"
    if backend == "cpu" and _env("GPUDP_CPU_CELL_RATE"):
        return Rate(assumed(family, backend, threads), "GPUDP_CPU_CELL_RATE", None, unit)
    got = _stored(f"{family}/{backend}", unit)
    return got or Rate(assumed(family, backend, threads), "assumed", None, unit)


def start_rate() -> Rate:
    """The seconds a process pays before its first CUDA kernel: ``GPUDP_GPU_START_S``, measured
    (:func:`measure_gpu_start`), else :data:`GPU_START_S` assumed."""
    env = _env("GPUDP_GPU_START_S")
    if env is not None:
        return Rate(env, "GPUDP_GPU_START_S", None, "s")
    return _stored(f"{START}/cuda", "s") or Rate(GPU_START_S, "assumed", None, "s")


def _stored(key: str, unit: str) -> Rate | None:
    """The stored rate of ``key`` (``family/backend``), or None where none is stored."""
    e = stored().get(key)
    if isinstance(e, dict) and _positive(e.get("value")):
        return Rate(float(e["value"]), str(e.get("source", "measured")), e.get("at"), unit)
    return None


def _positive(x) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) and x > 0


# ---------------------------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------------------------

#: family -> its measurement (:func:`calibrator`)
_CALIBRATORS: dict = {}
#: set while a measurement runs: its solves tell :func:`observe` nothing
_MEASURING: list = []


def calibrator(family: str, run) -> None:
    """Register the measurement of ``family``: ``run(backend, step)`` solves a generated input of
    size step ``step`` (0, 1, ...: each about twice the work of the one before) on ``backend`` with
    the family's real kernels, and returns ``(work, stats)``: the work in the family's unit, as its
    ``auto`` counts it, and the solve's :class:`gpudp.Stats`.

    Raises
    ------
    BackendError
        an unknown family.
    """
    _family(family)
    _CALIBRATORS[family] = run


def compute_seconds(stats) -> float:
    """The seconds a solve computed, as rates count them: its kernels' time where it reports one
    (compile and the GPU's start-up excluded), else its whole time."""
    return float(stats.kernel_seconds) if stats.kernel_seconds > 0 else float(stats.seconds)


def measure(family: str, backend: str, store: bool = True) -> Rate:
    """Measure ``family`` on ``backend`` now with its registered calibrator (see the module doc)
    and store the rate (``store``).

    Returns
    -------
    Rate (source ``measured``)

    Raises
    ------
    BackendError
        an unknown family, or one that has no calibrator registered (its module not imported).
    """
    f = _family(family)
    run = _CALIBRATORS.get(family)
    if run is None:
        from ..errors import BackendError

        raise BackendError(f"no measurement registered for the {family} kernels (import its solver first)")
    step = 0
    _MEASURING.append(family)
    try:
        while True:
            run(backend, step)  # compiles or loads the kernels of this size, warms the caches
            work, stats = run(backend, step)
            seconds = compute_seconds(stats)
            if seconds >= TARGET_S or step >= MAX_STEPS:
                break
            jump = int(math.log2(TARGET_S / max(seconds, 1e-6)))  # small sizes pay overheads: undershoots
            step = min(MAX_STEPS, step + min(MAX_JUMP, max(1, jump)))
        best = work / max(seconds, 1e-9)
        for _ in range(REPEATS - 1):
            work, stats = run(backend, step)
            best = max(best, work / max(compute_seconds(stats), 1e-9))
    finally:
        _MEASURING.pop()
    r = Rate(best, "measured", _now(), f"{f.unit}/s")
    if store:
        _keep(f"{family}/{backend}", {"value": best, "source": "measured", "at": r.at, "work": work})
    return r


def _keep(key: str, entry: dict) -> None:
    """Store an entry; a store that cannot be written warns and keeps it for the process."""
    try:
        write(key, entry)
    except OSError as e:
        warnings.warn(f"gpudp: rates not stored ({e}); kept for this process", stacklevel=3)
        _MEMORY.setdefault(machine_key(), {})[key] = entry


#: a fresh process's first use of CUDA, after what the CPU would pay too (gpudp and a CPU solve):
#: import, context, a cached kernel's load, a small LCS sweep (the generic grid kernels); then the
#: same sweep again (what one more solve costs). Prints whether a GPU answered and both times.
_START_CODE = """
import sys, time
import numpy as np
from gpudp.problems import lcs
a = np.random.default_rng(0).integers(0, 4, 1024).astype(np.uint8)
b = a[::-1].copy()
lcs.solve(a, b, backend="cpu", progress=False)
if sys.argv[1] == "cuda":
    from gpudp import backends
    ok = backends.cuda_usable()
    lcs.solve(a, b, backend="cuda", progress=False)
    t = time.perf_counter()
    lcs.solve(a, b, backend="cuda", progress=False)
    print(ok, time.perf_counter() - t)
"""


def _probe(backend: str) -> tuple[float, list[str]]:
    """The wall seconds of a fresh process running the start-up probe (:data:`_START_CODE`) on
    ``backend``, and what it printed."""
    from ..errors import BackendError

    t = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-c", _START_CODE, backend], capture_output=True, text=True, timeout=600
    )
    wall = time.perf_counter() - t
    if r.returncode:
        raise BackendError(f"measuring the GPU's start-up failed: {(r.stderr or r.stdout)[-800:]}")
    return wall, r.stdout.split()


def measure_gpu_start(store: bool = True, processes: int = 2) -> Rate:
    """Measure what a fresh process pays for its first GPU solve beyond the kernels: importing
    numba-cuda, the driver and the context, loading the cached kernels, the first copies, and the
    context's teardown at exit. Two fresh processes solve the same small LCS on the CPU; one of
    them then twice on the GPU. The start-up is the difference of their whole walls less the second
    GPU solve (what a warm process pays). The least of ``processes`` such pairs counts: the first
    may have compiled the probe's kernels into the cache, which later processes, like real ones
    after ``gpudp warmup``, only load.

    Returns
    -------
    Rate (seconds, source ``measured``)

    Raises
    ------
    BackendError
        a process failed or found no usable GPU.
    """
    from ..errors import BackendError

    seconds = math.inf
    for _ in range(max(1, processes)):
        wall_gpu, fields = _probe("cuda")
        if len(fields) != 2:
            raise BackendError(f"measuring the GPU's start-up: the probe printed {' '.join(fields)!r}")
        if fields[0] != "True":
            raise BackendError("measuring the GPU's start-up: no usable GPU in a fresh process")
        wall_cpu, _ = _probe("cpu")
        seconds = min(seconds, max(wall_gpu - float(fields[1]) - wall_cpu, 0.0))
    out = Rate(seconds, "measured", _now(), "s")
    if store:
        _keep(f"{START}/cuda", {"value": seconds, "source": "measured", "at": out.at})
    return out


def learning() -> bool:
    """Whether rates are measured lazily and moved by solves: unless ``GPUDP_CALIBRATE`` is ``0``
    (``off``, ``no``, ``false``), when only :func:`calibrate` measures them."""
    return os.environ.get("GPUDP_CALIBRATE", "").strip().lower() not in ("0", "off", "no", "false")


def lazily(family: str, backend: str, threads: int, predicted_s: float, cost: float = MEASURE_COST_S) -> Rate:
    """The rate of ``family`` on ``backend``, measured now when it never was, a calibrator is
    registered, :func:`learning` holds and the solve is predicted to take at least
    :data:`LAZY_SHARE` times what the measurement costs (``cost`` seconds); else, or when the
    measurement fails (a warning says why), :func:`rate` as it stands.

    Parameters
    ----------
    family, backend, threads : as :func:`rate` takes them
    predicted_s : the solve's predicted seconds, what the measurement is weighed against
    cost : what the measurement costs, about (seconds)

    Returns
    -------
    Rate
    """
    r = rate(family, backend, threads)
    if r.source == "assumed" and learning() and family in _CALIBRATORS and predicted_s >= LAZY_SHARE * cost:
        try:
            return measure(family, backend)
        except Exception as e:  # a measurement never fails the solve that asked for it
            msg = f"gpudp: measuring the {family} kernels on {backend} failed ({e}); assumed"
            warnings.warn(msg, stacklevel=3)
    return r


def observe(family: str, work: float, stats, threads: int) -> Rate | None:
    """Learn from a solve: when its compute time (:func:`compute_seconds`) missed the prediction
    at the family's rate by more than :data:`MISS` times either way, the stored rate moves to the
    geometric mean of itself and the solve's rate (one noisy run moves it at most halfway, in
    logarithms). Solves shorter than :data:`MIN_OBSERVED_S`, rates set by the environment, and all
    with ``GPUDP_CALIBRATE=0`` (:func:`learning`) are left alone.

    Parameters
    ----------
    family : a key of :data:`FAMILIES`
    work : the solve's work, in the family's unit, as its ``auto`` counted it
    stats : the solve's :class:`gpudp.Stats` (its ``backend`` says whose rate)
    threads : as :func:`rate` takes them

    Returns
    -------
    The new Rate, or None when the rate stays.
    """
    seconds = compute_seconds(stats)
    if _MEASURING or not learning() or not work or work <= 0 or seconds < MIN_OBSERVED_S or not stats.backend:
        return None
    r = rate(family, stats.backend, threads)
    if r.source.startswith("GPUDP_"):
        return None
    seen = work / seconds
    if 1 / MISS <= r.value / seen <= MISS:
        return None
    new = math.sqrt(r.value * seen)
    at = _now()
    entry = {"value": new, "source": "observed", "at": at, "was": r.value, "seen": seen}
    _keep(f"{family}/{stats.backend}", entry)
    return Rate(new, "observed", at, r.unit)


def calibrate(backends, families=None, log=None) -> list[dict]:
    """Measure the named families (every one with a calibrator registered, by default) on each of
    ``backends`` and, with cuda, the GPU's start-up (:func:`measure_gpu_start`); store them.

    Parameters
    ----------
    backends : iterable of usable backend names
    families : iterable of family names, or None for all registered
    log : callable told of each row as it finishes, or None

    Returns
    -------
    list of dict: ``family``, ``backend``, ``rate`` (work/s, or s for the start-up), ``unit``,
    ``seconds`` (what the measurement itself took)

    Raises
    ------
    BackendError
        an unknown family, or one without a calibrator.
    """
    families = list(families or _CALIBRATORS)
    rows = []

    def done(fam, be, r, t):
        row = {"family": fam, "backend": be, "rate": r.value, "unit": r.unit}
        row["seconds"] = round(time.perf_counter() - t, 3)
        rows.append(row)
        if log:
            log(row)

    for be in backends:
        for fam in families:
            t = time.perf_counter()
            done(fam, be, measure(fam, be), t)
        if be == "cuda":
            t = time.perf_counter()
            done(START, be, measure_gpu_start(), t)
    return rows


def table(backends, threads: int) -> list[dict]:
    """Every family's rate on each of ``backends``, and with cuda the GPU's start-up, with their
    sources (what ``gpudp info`` prints).

    Returns
    -------
    list of dict: ``family``, ``backend``, ``rate`` (a :class:`Rate`)
    """
    rows = [{"family": f, "backend": be, "rate": rate(f, be, threads)} for be in backends for f in FAMILIES]
    if "cuda" in backends:
        rows.append({"family": START, "backend": "cuda", "rate": start_rate()})
    return rows
