"""The persistent kernel cache: compile a generated sweep once per machine, not once per process.

A generated kernel is Python source that names the recurrence's functions and the engine's
compile-time constants. :func:`jit_generated` writes that source to a file whose name is a hash of
everything that changes the machine code, and hands the function defined there to numba (``njit``
or ``cuda.jit``) with ``cache=True``; numba then keeps the compiled code beside the file and loads it
in the next process instead of compiling. The hash covers:

- the kernel's own source (the engine's templates filled in: tile, window, offsets, decision bits);
- every value the source refers to, followed recursively (:func:`fingerprint`): the byte code and
  constants of the recurrence's static methods and of every function they call, the values of the
  globals they read (numba freezes those into the machine code), dtypes and numba types;
- the versions of gpudp, numba, numba-cuda, llvmlite and Python (numba adds the target: CPU model
  and features, or the GPU's compute capability);
- numba's settings that change the code it makes (:func:`_compiler_settings`: bounds checking,
  optimisation level, fast math, debug info), which numba's own cache does not key its entries by:
  ``NUMBA_BOUNDSCHECK=1`` gets kernels that check their indices, not the unchecked ones of an
  earlier run.

So an edited cell function, or a helper it calls, gets a new file and a new compile; stale code is
never served. Files are written atomically (a temporary name, then ``os.replace``), so processes
may share the cache; numba writes its own entries the same way. An entry numba cannot read is
compiled again (numba treats an unreadable index as a miss; :func:`guarded` covers the rest).

The cache lives in ``GPUDP_CACHE_DIR``, by default the user's cache folder (``$XDG_CACHE_HOME/gpudp``
or ``~/.cache/gpudp``); ``GPUDP_CACHE_DIR=off`` (or ``0``/``none``) switches it off (generated
source is then compiled in memory as before). ``gpudp cache info|clear`` shows or empties it
(``info`` also counts the kernels the running process holds in its table, :mod:`gpudp.kernel`,
which sits in front of this cache).

``GPUDP_CACHE_DIR`` may name a folder that holds other files (even ``$HOME``), so gpudp only ever
removes what it made: each folder it creates (the cache root, when it did not exist, and each
version's folder) holds a marker file, :data:`MARKER`, and ``clear`` removes marked version folders
and, when nothing else is left in it, a marked root. A version folder from before the marker is
recognised by its name *and* by holding nothing but what gpudp and numba write there (generated
sources, numba's index and data files, byte code); anything else is left alone and reported.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import types

from .errors import InputError
from .fingerprint import all_names, fingerprint

__all__ = ["cache_dir", "fingerprint", "guarded", "jit_generated", "info", "clear", "enabled"]

_OFF = ("off", "0", "none", "false", "no")


def enabled() -> bool:
    return os.environ.get("GPUDP_CACHE_DIR", "").strip().lower() not in _OFF


def root_dir() -> str:
    """The cache folder (every version's entries below it)."""
    env = os.environ.get("GPUDP_CACHE_DIR", "").strip()
    if env and env.lower() not in _OFF:
        return os.path.abspath(os.path.expanduser(env))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "gpudp")


def versions() -> str:
    """The versions the compiled code depends on, as one tag: gpudp, numba, numba-cuda, llvmlite
    and Python (this installation's folder name; the measured rates key machines by it too)."""
    from importlib.metadata import PackageNotFoundError, version

    import llvmlite
    import numba

    from ._version import __version__

    try:
        ncuda = version("numba-cuda")
    except PackageNotFoundError:
        ncuda = "none"
    py = "".join(map(str, sys.version_info[:2]))
    return f"gpudp{__version__}-numba{numba.__version__}-cuda{ncuda}-llvmlite{llvmlite.__version__}-py{py}"


_VERSION_TAG: list[str] = []


def cache_dir() -> str:
    """This installation's folder in the cache: one per set of versions, so an upgrade starts clean."""
    if not _VERSION_TAG:
        _VERSION_TAG.append(versions())
    return os.path.join(root_dir(), _VERSION_TAG[0])


#: the file in every folder gpudp makes in the cache: only such folders are ever removed
MARKER = ".gpudp-cache"
_MARKER_TEXT = "This folder was made by gpudp's kernel cache; `gpudp cache clear` may remove it.\n"
#: a version folder's name (:func:`versions`), for folders made before the marker existed
_VERSION_NAME = re.compile(r"gpudp[^/]*-numba[^/]*-llvmlite[^/]*-py\d+")
#: what gpudp and numba write in a version folder: sources, byte code, numba's index and data, the
#: measured rates (gpudp.backends.rates) and their lock
_OWN_FILE = re.compile(r".*\.(py|pyc|nbi|nbc)|\.tmp-.*|.*\.tmp\..*|rates\.json|\.rates\.lock")


def _made_dir(path: str) -> None:
    """Make ``path`` (a missing parent included) and mark it as gpudp's, if this call made it; a
    folder that already existed is left as it is, marked or not."""
    try:
        os.mkdir(path)
    except FileExistsError:
        return
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return _made_dir(path)
    with open(os.path.join(path, MARKER), "w") as f:
        f.write(_MARKER_TEXT)


def ensure_cache_dir() -> str:
    """This version's folder, made (and marked) with the root where they do not exist yet."""
    _made_dir(root_dir())
    d = cache_dir()
    _made_dir(d)
    return d


def _owned(path: str) -> bool:
    """Whether the version folder ``path`` is gpudp's: it holds the marker, or (made before the
    marker existed) has a version folder's name and nothing but files gpudp and numba write."""
    if os.path.isfile(os.path.join(path, MARKER)):
        return True
    if not _VERSION_NAME.fullmatch(os.path.basename(path)):
        return False
    for base, _, files in os.walk(path, onerror=_raise):
        for f in files:
            if not _OWN_FILE.fullmatch(f) or os.path.islink(os.path.join(base, f)):
                return False
    return True


def _raise(e: OSError):
    raise e


# ---------------------------------------------------------------------------------------------
# Generated source on disk, compiled with numba's cache
# ---------------------------------------------------------------------------------------------


def _write_atomic(path: str, text: str):
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=".py")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _load_module(path: str, modname: str, namespace: dict):
    """Import the generated file as module ``modname`` (registered in ``sys.modules``: numba finds a
    function's module there, and a cached kernel's environment by that name in later processes)."""
    mod = sys.modules.get(modname)
    if mod is not None and getattr(mod, "__file__", None) == path:
        return mod
    spec = importlib.util.spec_from_file_location(modname, path)
    mod = importlib.util.module_from_spec(spec)
    mod.__dict__.update(namespace)
    spec.loader.exec_module(mod)
    sys.modules[modname] = mod
    return mod


def _compiler_settings() -> str:
    """numba's settings (read from ``NUMBA_*`` when numba starts) that change the code it makes."""
    import numba

    c = numba.config
    names = ("BOUNDSCHECK", "OPT", "FASTMATH", "DEBUGINFO_DEFAULT", "CUDA_DEBUGINFO_DEFAULT")
    return ";".join(f"{n}={getattr(c, n, None)}" for n in names)


def generated_function(src: str, name: str, namespace: dict, kind: str):
    """The function ``name`` defined by ``src`` in ``namespace``, from a file in the cache whose name
    hashes the source, the namespace's fingerprints and the versions (see the module doc); None when
    the cache is off or its folder cannot be written."""
    if not enabled():
        return None
    h = hashlib.sha256()
    h.update(kind.encode() + b"\0" + src.encode() + b"\0" + _compiler_settings().encode())
    for k in sorted(namespace):
        if k.startswith("__"):
            continue
        h.update(b"\0" + k.encode() + b"=")
        fingerprint(namespace[k], h, set())
    digest = h.hexdigest()[:24]
    text = f"# gpudp generated kernel ({kind}); the file name hashes all it depends on\n" + src
    try:
        path = os.path.join(ensure_cache_dir(), kind, f"{name}_{digest}.py")
        try:
            with open(path) as f:
                intact = f.read() == text
        except (OSError, UnicodeDecodeError):
            intact = False
        if not intact:  # new, or damaged: (re)write it whole
            _write_atomic(path, text)
        mod = _load_module(path, f"gpudp_cache_{kind}_{name}_{digest}", namespace)
        return getattr(mod, name)
    except (OSError, SyntaxError, ValueError, AttributeError):
        return None


def jit_generated(src: str, name: str, namespace: dict, jit, kind: str = "cpu", **options):
    """Compile generated source with ``jit`` (``numba.njit``-like or ``cuda.jit``-like), cached on
    disk when the cache is on and everything the kernel inlines can be found again by a later process
    (:func:`_reloadable`); compiled in memory (as :func:`gpudp.codegen.compile_source` does)
    otherwise."""
    from .codegen import compile_source

    fn = generated_function(src, name, dict(namespace), kind) if _reloadable(namespace) else None
    if fn is None:
        return jit(compile_source(src, name, dict(namespace)), **options)
    try:
        disp = jit(fn, cache=True, **options)
    except Exception:  # numba found no way to cache it: compile without
        return jit(fn, **options)
    guarded(disp)
    return disp


def _reloadable(namespace: dict) -> bool:
    """Whether numba can rebuild, in a new process, the environment of every function the kernel
    calls: each must live in a module that is importable by name (not code exec'd in a bare dict,
    which numba calls ``<dynamic>``)."""
    seen = set()

    def ok(obj) -> bool:
        if id(obj) in seen:
            return True
        seen.add(id(obj))
        fn = getattr(obj, "py_func", None)
        if fn is None:
            fn = getattr(obj, "_defn", None)
        if not isinstance(fn, types.FunctionType):
            return True
        modname = fn.__globals__.get("__name__")
        if not modname or modname not in sys.modules:
            return False
        g = fn.__globals__
        return all(ok(g[n]) for n in all_names(fn.__code__) if n in g)

    return all(ok(v) for k, v in namespace.items() if not k.startswith("__"))


def _process_bound(sig) -> bool:
    """Whether a signature holds a type that names an object of this process (numba's ``WeakType``:
    a compiled function passed as an argument). numba's cache can never match such an entry in a
    later process (the type compares the object itself), so every process would add a stale entry
    to the index, and rewriting the index fails once one of those objects has been collected
    (``ReferenceError: underlying object has vanished``)."""
    from numba.core.types.functions import WeakType

    return any(isinstance(t, WeakType) for t in getattr(sig, "args", sig))


def guarded(disp):
    """Make a corrupt, truncated or unreadable cache entry a miss (the kernel is compiled again and
    the entry rewritten), never an error; a save that fails leaves the kernel uncached; a signature
    bound to this process (:func:`_process_bound`) is neither looked up nor saved."""
    cache = getattr(disp, "_cache", None)
    load = getattr(cache, "load_overload", None)
    save = getattr(cache, "save_overload", None)
    if load is None or save is None or getattr(cache, "_gpudp_guarded", False):
        return
    cache._gpudp_guarded = True

    def drop_index():
        cf = getattr(cache, "_cache_file", None)
        path = getattr(cf, "_index_path", None)
        if path:
            try:
                os.unlink(path)
            except OSError:
                pass

    def load_overload(sig, target_context):
        if _process_bound(sig):
            return None
        try:
            return load(sig, target_context)
        except Exception:
            drop_index()
            return None

    def save_overload(sig, data):
        if _process_bound(sig):
            return
        try:
            save(sig, data)
        except Exception:
            drop_index()
            try:
                save(sig, data)
            except Exception:
                pass

    cache.load_overload = load_overload
    cache.save_overload = save_overload


# ---------------------------------------------------------------------------------------------
# gpudp cache info | clear
# ---------------------------------------------------------------------------------------------


def _root() -> str:
    """The cache root, refused when it exists and is not a folder (``GPUDP_CACHE_DIR=/dev/null``)."""
    root = root_dir()
    if os.path.exists(root) and not os.path.isdir(root):
        raise InputError("GPUDP_CACHE_DIR", f"{root} is not a folder")
    return root


def _size(path: str) -> tuple[int, int, int]:
    """Bytes, generated sources and numba files under ``path``."""
    size = sources = entries = 0
    for base, _, files in os.walk(path):
        for f in files:
            try:
                size += os.path.getsize(os.path.join(base, f))
            except OSError:
                continue
            sources += f.endswith(".py") and not f.startswith(".tmp-")
            entries += f.endswith((".nbi", ".nbc"))
    return size, sources, entries


def info() -> dict:
    """Where the cache is, how big, and how many kernels it holds, per version folder of gpudp's
    (other entries of the root are listed by name in ``other``, never counted as the cache's); and
    ``in_process``: the kernels this process has built (or loaded), by family
    (:func:`gpudp.kernel.counts`)."""
    from .kernel import counts

    root = _root()
    out = {"path": root, "enabled": enabled(), "current": cache_dir(), "folders": [], "other": []}
    out["in_process"] = counts()
    if not os.path.isdir(root):
        return out
    for d in sorted(os.listdir(root)):
        full = os.path.join(root, d)
        if d == MARKER:
            continue
        if not (os.path.isdir(full) and not os.path.islink(full) and _owned(full)):
            out["other"].append(d)
            continue
        size, sources, entries = _size(full)
        out["folders"].append({"name": d, "bytes": size, "kernels": sources, "numba_files": entries})
    return out


def clear() -> dict:
    """Remove gpudp's version folders (see the module doc), and the root when gpudp made it and
    nothing else is left in it. Returns ``removed`` (paths), ``bytes`` freed, ``kept`` (the root's
    other entries, left alone) and ``root`` (whether the root went too)."""
    d = info()
    root = d["path"]
    out = {"removed": [], "bytes": 0, "kept": d["other"], "root": False}
    for f in d["folders"]:
        shutil.rmtree(os.path.join(root, f["name"]))
        out["removed"].append(os.path.join(root, f["name"]))
        out["bytes"] += f["bytes"]
    if os.path.isdir(root) and os.listdir(root) == [MARKER]:
        shutil.rmtree(root)
        out["root"] = True
    return out
