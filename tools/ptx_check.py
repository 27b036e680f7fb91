"""Compile GPU kernels to PTX for sm_90 on a machine with no GPU: numba's CUDA typing and NVVM catch
what the CUDA simulator does not (the simulator runs Python: a ``cuda.shfl_up_sync`` of a uint64
passes there and fails numba's typing on a GPU, which shuffles only signed 32- and 64-bit integers
and floats).

Needs NVVM and NVRTC, which pip installs (not a project dependency)::

    pip install nvidia-nvvm nvidia-cuda-nvrtc     # the CUDA 13 wheels
    LIB=$(python -c "import nvidia; print(nvidia.__path__[0])")/cu13/lib
    LD_LIBRARY_PATH=$LIB python tools/ptx_check.py

Compiled: the LCS and the edit distance a warp a pair (:func:`gpudp.problems.lcs.cuda_code.lcs_long`,
:func:`gpudp.problems.edit_distance.cuda_code.levenshtein_long`; one and eight words a lane) and
the layered kernel of a recurrence with 2-D layers (examples/floyd_warshall.py), and sweep_many's
kernels for a record cell (examples/affine_alignment.py) and for interval batches
(examples/matrix_chain.py). Each line: the
kernel, its PTX lines and its local-memory loads and stores; a typing or NVVM error otherwise
(exit 1).
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

import numba
import numba.cuda.dispatcher as dispatcher
import numpy as np
from numba import cuda
from numba import types as T

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))


class NoDevice:
    """What numba's device-function compiler asks of the current device: its compute capability."""

    compute_capability = (9, 0)


def _report(name: str, fn, sig) -> None:
    ptx, _ = cuda.compile_ptx(fn, sig, cc=(9, 0))
    body = [
        ln for ln in ptx.splitlines() if ln.strip() and not ln.strip().startswith(("//", ".", "{", "}", "$"))
    ]
    local = sum(1 for ln in body if re.search(r"(ld|st)\.local", ln))
    print(f"{name:32s} PTX {len(body):5d} lines, local ld/st {local}")


def long_pairs() -> None:
    from gpudp.problems.edit_distance import cuda_code as ed_code
    from gpudp.problems.edit_distance.bitparallel import block_step
    from gpudp.problems.lcs import cuda_code
    from gpudp.problems.lcs.bitparallel import lane_masks, popcount64, span, word_step

    arr = lambda t: T.Array(t, 1, "C")  # noqa: E731
    u8, i64 = arr(T.uint8), arr(T.int64)
    # pat, pat_off, txt, txt_off, sigma, table, mapped, out
    sig = (u8, i64, u8, i64, T.int64, u8, T.boolean, i64)
    device = cuda.jit(device=True)
    for fn in (cuda_code.lcs_long, ed_code.levenshtein_long):
        for wpl in (1, 8):
            ns = {"cuda": cuda, "numba": numba, "WPL": wpl, "PMSIZE": 4 * wpl}
            ns.update(word_step=word_step, popcount64=popcount64, block_step=block_step)
            ns.update(lane_masks=lane_masks, span=span)
            ns.update(from_left=device(cuda_code.from_left), warp_sum=device(cuda_code.warp_sum))
            exec(compile(inspect.getsource(fn), fn.__name__, "exec"), ns)
            _report(f"{fn.__name__}, {wpl} word(s) a lane", ns[fn.__name__], sig)


def generated(module, build):
    """The one kernel ``build()`` makes through ``module.generated_kernel``, compiled from its
    source as a plain function (to be typed by :func:`cuda.compile_ptx`)."""
    from gpudp.codegen import compile_source

    got = {}

    def capture(src, name, ns, **kw):
        got[name] = (src, ns)
        return object()

    module.generated_kernel = capture
    build()
    ((name, (src, ns)),) = got.items()
    return compile_source(src, name, ns)


def layers_2d() -> None:
    import floyd_warshall as fw

    from gpudp.backends.cuda import layered

    cls = type(fw.FloydWarshall(fw.weights(5, fw.EDGES))._specialized())
    fn = generated(layered, lambda: layered.layered_kernel(cls, 2, None))  # data and overflow flags
    arr = lambda t, d=1: T.Array(t, d, "C")  # noqa: E731
    i64 = T.int64
    sig = (i64, i64, arr(i64, 3), *[arr(i64)] * 5, arr(T.uint32), i64, arr(i64), arr(i64), i64, i64)
    _report("layered, 2-D layers (Floyd-Warshall)", fn, (*sig, arr(i64), arr(i64, 2), arr(i64)))


def many_records() -> None:
    """sweep_many's block kernel (diagonals in shared memory and in device memory) and warp kernel
    for a record cell (examples/affine_alignment.py's Gotoh: three int32 fields), typed as a batch of
    two instances gives them."""
    import affine_alignment as af

    from gpudp.many import cuda as many_cuda
    from gpudp.many.intake import intake

    take = intake([af.Gotoh("ACGT", "AGT"), af.Gotoh("GATTACA", "TAC")])
    i64 = lambda *shape: np.zeros(shape or (2,), np.int64)  # noqa: E731
    f32 = lambda *shape: tuple(np.zeros(shape or (4,), np.int32) for _ in range(3))  # noqa: E731
    outs = (f32(), i64(), f32(), i64(), np.zeros((2, 1), np.int32), i64(2, 1, 2), i64(2, 4))
    head = (i64(), 2, i64(), take.shapes)
    for shared in (True, False):
        fn = generated(many_cuda, lambda s=shared: many_cuda.kernel(take.cls, take.kinds, take.n_sym, s))
        args = (*head, i64(), np.zeros(4, np.uint8), *outs, f32(1, 12), 4, *take.packed)
        _report(f"many, record, {'shared' if shared else 'device'}", fn, tuple(numba.typeof(a) for a in args))
    fn = generated(many_cuda, lambda: many_cuda.warp_kernel(take.cls, take.kinds, take.n_sym, 1))
    sig = tuple(numba.typeof(a) for a in (*head, *outs, *take.packed))
    _report("many, record, a warp an instance", fn, sig)


def many_intervals() -> None:
    """sweep_many's interval kernels (a thread and a warp an instance, its table a reshaped slice of
    the chunk's), for examples/matrix_chain.py's class, typed as a batch of two instances gives them."""
    import matrix_chain as mc

    from gpudp.many.intake import intake
    from gpudp.many.intervals import cuda as many_cuda

    take = intake([mc.MatrixChain([3, 4, 5]), mc.MatrixChain([2, 7, 1, 4])])
    i64, table = np.zeros(2, np.int64), np.zeros(13, np.int64)
    head, tail = (2, i64, take.shapes, i64, table), (np.zeros(13, np.uint16), np.zeros((2, 4), np.int64))
    fn = generated(many_cuda, lambda: many_cuda.interval_kernel(take.cls, take.kinds))
    _report(
        "many, intervals (matrix chain)", fn, tuple(numba.typeof(a) for a in (*head, *tail, *take.packed))
    )
    fn = generated(many_cuda, lambda: many_cuda.interval_warp_kernel(take.cls, take.kinds))
    sig = tuple(numba.typeof(a) for a in (*head, table, *tail, *take.packed))
    _report("many, intervals a warp an instance", fn, sig)


def main() -> int:
    dispatcher.get_current_device = lambda: NoDevice()  # compile for sm_90 with no device
    failed = 0
    for check in (long_pairs, layers_2d, many_records, many_intervals):
        try:
            check()
        except Exception as e:  # report every kernel, then fail
            failed += 1
            print(f"{check.__name__}: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
