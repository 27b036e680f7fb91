"""One kernel object in front of the disk cache: a kernel's key, the process's table, the build.

Everything gpudp compiles per recurrence class (a sweep kernel, a CPU runner, a traceback walker, a
filler, a block's recurrence class) is a :class:`Kernel` of a *family*, built once per process per
key. A family is a :class:`KernelFactory` that declares its key's part names once; a kernel is
looked up by naming every part::

    RUNNERS = KernelFactory("grid3.cpu.runner", "rec", "n_data", "nrt")

    k = RUNNERS.lookup(rec=rec_cls, n_data=n_data, nrt=nrt)
    if k.ready:
        return k.fn
    ...  # build it (through gpudp.cache.jit_generated: loaded from disk when it can be)
    return k.keep(fn).fn

A function that builds a kernel from its arguments alone is a family by itself, its parameters the
key's parts (:func:`factory`, in place of ``functools.cache``)::

    @factory("lcs.cuda.pair")
    def _kernel(spec, sigma: int, words: int): ...

A part left out or one the family does not declare is an error (:class:`KeyError`), so no caller
builds a key by hand and none can forget a component. The one table of the process (all families)
is what ``gpudp cache info`` counts (:func:`counts`); behind it is the disk cache
(:mod:`gpudp.cache`), which the build goes through. (Models: numba's ``cuda.reduce``, a plain
function made a kernel by a factory and cached by function and type; Triton's ``JITFunction``.)

A kernel with nothing to fill in is not a string of source: it is a plain function of a *kernel
module* (an ordinary .py file of numba code, which ruff, editors and coverage read), whose free
names (the build's constants and device functions) are placeholders there; :func:`load` compiles its
text in a build's namespace by the backend's compiler of generated source, the one way such a
function becomes a kernel.

A backend may give its families a subclass of :class:`Kernel` (``kernel=``): the CUDA backend's
adds the launch on a stream and its timing events (:mod:`gpudp.backends.cuda.kernels`).
"""

from __future__ import annotations

import functools
import inspect
import textwrap
import threading
from collections import Counter

__all__ = ["Kernel", "KernelFactory", "counts", "factory", "family", "load", "source"]

#: every kernel built in this process, by its key ``(family, *parts)``
_TABLE: dict[tuple, Kernel] = {}
#: the families, by name
_FAMILIES: dict[str, KernelFactory] = {}
_LOCK = threading.Lock()


class Kernel:
    """A kernel of a family: its key and, once built (:meth:`keep`), the built object ``fn`` (a
    numba dispatcher, or whatever the family builds)."""

    __slots__ = ("factory", "key", "fn")

    def __init__(self, factory: KernelFactory, key: tuple):
        self.factory, self.key, self.fn = factory, key, None

    @property
    def family(self) -> str:
        return self.key[0]

    @property
    def parts(self) -> dict:
        """The key's parts by name."""
        return dict(zip(self.factory.parts, self.key[1:], strict=True))

    @property
    def ready(self) -> bool:
        """Whether this kernel is built (it is then the table's)."""
        return _TABLE.get(self.key) is self

    def keep(self, fn) -> Kernel:
        """Keep ``fn`` as this kernel in the table and return the table's kernel: this one, or the
        one another thread built first (both are the same code)."""
        with _LOCK:
            known = _TABLE.get(self.key)
            if known is None:
                self.fn = fn
                _TABLE[self.key] = known = self
        return known

    def __repr__(self) -> str:
        parts = ", ".join(f"{k}={v!r}" for k, v in self.parts.items())
        return f"Kernel({self.family}: {parts}{'' if self.ready else ', not built'})"


class KernelFactory:
    """A family of kernels: its name and its key's part names (in order), declared once.
    ``kernel``: the class of its kernels (a backend's subclass of :class:`Kernel`)."""

    def __init__(self, name: str, *parts: str, kernel: type = Kernel):
        if len(set(parts)) != len(parts):
            raise ValueError(f"kernel family {name!r}: its key needs distinct part names, got {parts}")
        self.name, self.parts, self.kernel = name, tuple(parts), kernel
        with _LOCK:
            known = _FAMILIES.get(name)
            if known is not None and known.parts != self.parts:
                raise ValueError(f"kernel family {name!r} is declared with parts {known.parts} already")
            _FAMILIES[name] = self

    def key(self, parts: dict) -> tuple:
        """``(family, *parts)`` in the declared order; a missing or unknown part is a KeyError."""
        if len(parts) == len(self.parts):  # as many as declared: none unknown unless one is missing
            try:
                return (self.name, *(parts[p] for p in self.parts))
            except KeyError:
                pass
        missing = [p for p in self.parts if p not in parts]
        unknown = sorted(set(parts) - set(self.parts))
        if missing or unknown:
            what = [f"missing {missing}"] * bool(missing) + [f"unknown {unknown}"] * bool(unknown)
            raise KeyError(f"kernel family {self.name!r} is keyed by {self.parts}: {', '.join(what)}")
        return (self.name, *(parts[p] for p in self.parts))

    def lookup(self, **parts) -> Kernel:
        """The table's kernel of these parts, or a new one not built yet (``ready`` False)."""
        key = self.key(parts)
        found = _TABLE.get(key)
        return found if found is not None else self.kernel(self, key)

    def forget(self) -> None:
        """Drop this family's kernels from the table (a tuning script that changes what a module's
        constants make between builds)."""
        with _LOCK:
            for key in [k for k, v in _TABLE.items() if v.factory is self]:
                del _TABLE[key]

    def built(self) -> list[Kernel]:
        """This family's kernels built in this process."""
        return [k for k in list(_TABLE.values()) if k.factory is self]

    def __repr__(self) -> str:
        return f"KernelFactory({self.name!r}, parts={self.parts})"


def factory(name: str):
    """A decorator: the function builds a kernel of the family ``name`` whose key's parts are its
    parameters (defaults applied), so that what it builds depends on nothing its key leaves out;
    called again with equal arguments it returns the kernel it built, from the process's table
    (what ``functools.cache`` did, now counted by ``gpudp cache info``). Missing or unknown
    arguments are a TypeError, as for any call. The family is the wrapper's ``family``."""

    def wrap(build):
        sig = inspect.signature(build)
        fam = KernelFactory(name, *sig.parameters)
        n = len(sig.parameters)

        @functools.wraps(build)
        def get(*args, **kw):
            if not kw and len(args) == n:  # every part given in order: the key as it is
                found = _TABLE.get((name, *args))
                if found is not None:
                    return found.fn
            bound = sig.bind(*args, **kw)
            bound.apply_defaults()
            k = fam.lookup(**bound.arguments)
            if k.ready:
                return k.fn
            return k.keep(build(*bound.args, **bound.kwargs)).fn

        get.family = fam
        return get

    return wrap


def family(name: str) -> KernelFactory:
    """The family of that name (declared by the module that builds it)."""
    return _FAMILIES[name]


def counts() -> dict[str, int]:
    """Kernels built in this process, by family (``gpudp cache info``)."""
    return dict(sorted(Counter(k[0] for k in list(_TABLE)).items()))


def source(fn) -> str:
    """The text of ``fn``, a function of a kernel module, as generated source is handed to the
    compilers: after a blank line, as the string constants it replaced were written (so the disk
    cache's entries are the same)."""
    return "\n" + textwrap.dedent(inspect.getsource(fn))


def load(fn, namespace: dict, compiler, /, **options):
    """``fn`` (a function of a kernel module) compiled in ``namespace`` by ``compiler(source, name,
    namespace, **options)``: the backend's compiler of generated source (the CUDA kit's
    ``generated_kernel``, :func:`gpudp.cache.jit_generated` with ``njit``, or
    :func:`gpudp.codegen.compile_source` for a device function that its caller wraps)."""
    return compiler(source(fn), fn.__name__, namespace, **options)
