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
compiled again (numba treats an unreadable index as a miss; :func:`_guarded` covers the rest).

The cache lives in ``GPUDP_CACHE_DIR``, by default the user's cache folder (``$XDG_CACHE_HOME/gpudp``
or ``~/.cache/gpudp``); ``GPUDP_CACHE_DIR=off`` (or ``0``/``none``) switches it off (generated
source is then compiled in memory as before). ``gpudp cache info|clear`` shows or empties it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
import types

from .fingerprint import all_names, fingerprint

__all__ = ["cache_dir", "fingerprint", "jit_generated", "info", "clear", "enabled"]

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


def _versions() -> str:
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
        _VERSION_TAG.append(_versions())
    return os.path.join(root_dir(), _VERSION_TAG[0])


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
    folder = os.path.join(cache_dir(), kind)
    path = os.path.join(folder, f"{name}_{digest}.py")
    text = f"# gpudp generated kernel ({kind}); the file name hashes all it depends on\n" + src
    try:
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
    _guarded(disp)
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


def _guarded(disp):
    """Make a corrupt, truncated or unreadable cache entry a miss (the kernel is compiled again and
    the entry rewritten), never an error; a save that fails leaves the kernel uncached."""
    cache = getattr(disp, "_cache", None)
    load = getattr(cache, "load_overload", None)
    save = getattr(cache, "save_overload", None)
    if load is None or save is None:
        return

    def drop_index():
        cf = getattr(cache, "_cache_file", None)
        path = getattr(cf, "_index_path", None)
        if path:
            try:
                os.unlink(path)
            except OSError:
                pass

    def load_overload(sig, target_context):
        try:
            return load(sig, target_context)
        except Exception:
            drop_index()
            return None

    def save_overload(sig, data):
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


def info() -> dict:
    """Where the cache is, how big, and how many kernels it holds, per version folder."""
    root = root_dir()
    out = {"path": root, "enabled": enabled(), "current": cache_dir(), "folders": []}
    if not os.path.isdir(root):
        return out
    for d in sorted(os.listdir(root)):
        full = os.path.join(root, d)
        if not os.path.isdir(full):
            continue
        size = sources = entries = 0
        for base, _, files in os.walk(full):
            for f in files:
                try:
                    size += os.path.getsize(os.path.join(base, f))
                except OSError:
                    continue
                sources += f.endswith(".py") and not f.startswith(".tmp-")
                entries += f.endswith((".nbc", ".nbi"))
        out["folders"].append({"name": d, "bytes": size, "kernels": sources, "numba_files": entries})
    return out


def clear() -> int:
    """Remove the whole cache (every version's folder); returns the bytes freed."""
    root = root_dir()
    freed = sum(f["bytes"] for f in info()["folders"])
    if os.path.isdir(root):
        shutil.rmtree(root, ignore_errors=True)
    return freed
