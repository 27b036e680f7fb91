"""The project's CPU compiler: ``numba.njit`` with gpudp's defaults, used by the engine's helpers,
the cpu backend and the plug-ins' CPU kernels alike."""

from __future__ import annotations

import functools
import inspect

import numba


def njit(fn=None, **kw):
    """numba.njit with the project's defaults (no Python fallback, fastmath off: exact DP, Python's
    error model: an integer division by zero raises ZeroDivisionError).

    The error model is set on every function, not left to numba's default: a function that does not
    set it takes the model of the compile under way when numba compiles it (numba/core/cpu.py,
    ``flags.inherit_if_not_set("error_model", default="python")``), and numba compiles a parallel
    loop's body with numpy's (numba/parfors/parfor_lowering.py: ``flags.error_model = "numpy"``,
    a division by zero giving 0). A cell first compiled from inside a ``prange`` (for the loop's
    unsigned index, say) took it so: its division by zero gave 0, silently, there and in every later
    call of that compiled version.

    ``cache=True`` is dropped when the kernel cache is off (``GPUDP_CACHE_DIR=off``) or numba finds
    no writable place for it (a read-only installation): caching is a speed-up, never a failure
    (a damaged entry is compiled again, :func:`gpudp.cache.guarded`)."""
    kw.setdefault("nogil", True)
    kw.setdefault("error_model", "python")
    if fn is None:
        return lambda f: njit(f, **kw)
    if kw.get("cache"):
        from .cache import enabled, guarded

        if not enabled():
            kw.pop("cache")
        else:
            try:
                disp = numba.njit(**kw)(fn)
            except RuntimeError:  # "cannot cache function ...: no locator available"
                kw.pop("cache")
            else:
                guarded(disp)
                return disp
    return numba.njit(**kw)(fn)


@functools.cache
def _typing_compiler():
    """A numba compiler (``pipeline_class``) that stops after type inference: the untyped passes
    and numba's nopython type inference, then one pass that hands back the return type it found
    as the compile's result (no lowering, no LLVM: about a fifth of a full compile's time)."""
    from numba.core.compiler import CompilerBase, DefaultPassBuilder
    from numba.core.compiler_machinery import FunctionPass, PassManager, register_pass
    from numba.core.typed_passes import NopythonTypeInference

    @register_pass(mutates_CFG=False, analysis_only=True)
    class ReturnTypeOnly(FunctionPass):
        _name = "gpudp_return_type_only"

        def __init__(self):
            FunctionPass.__init__(self)

        def run_pass(self, state):
            state.cr = state.return_type  # the pipeline ends on a result: the type
            return False

    class TypingCompiler(CompilerBase):
        def define_pipelines(self):
            pm = PassManager("gpudp_typing")
            pm.passes.extend(DefaultPassBuilder.define_untyped_pipeline(self.state).passes)
            pm.add_pass(NopythonTypeInference, "nopython frontend")
            pm.add_pass(ReturnTypeOnly, "the return type")
            pm.finalize()
            return [pm]

    return TypingCompiler


def return_type(fn, argtypes: tuple):
    """The type numba's CPU typing gives ``fn``'s return for the argument types ``argtypes``
    (numba types): every path's return unified, as a compile would type it, without compiling
    (type inference only, :func:`_typing_compiler`). Backend-independent: the CUDA simulator types
    nothing, and this needs no GPU. None when numba cannot type it so (the compile of the backend
    that runs it then says why)."""
    from numba.core import types
    from numba.core.compiler import Flags, compile_extra
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target

    argtypes = tuple(argtypes)
    try:
        params = list(inspect.signature(fn).parameters.values())
        star = [k for k, p in enumerate(params) if p.kind == p.VAR_POSITIONAL]
        if star:  # ``*data``: its arguments as one tuple, as numba's dispatcher folds them
            argtypes = (*argtypes[: star[0]], types.StarArgTuple.from_types(argtypes[star[0] :]))
        with global_compiler_lock:
            typing, target = cpu_target.typing_context, cpu_target.target_context
            typing.refresh()
            target.refresh()
            flags = Flags()
            flags.nrt = True
            out = compile_extra(
                typing, target, fn, argtypes, None, flags, {}, pipeline_class=_typing_compiler()
            )
    except Exception:
        return None
    return types.unliteral(out) if isinstance(out, types.Type) else None
