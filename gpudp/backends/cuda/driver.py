"""The CUDA driver: the device (is there one, its name, its memory figures), the simulator switch and
the geometry a kernel takes under it, page-locked host memory (the one pool of the process),
uploads, streams, events and cooperative launches. Everything here talks to numba-cuda; nothing
here generates a kernel.
"""

from __future__ import annotations

import contextlib
import os
import threading

import numpy as np
from numba import cuda

from ... import values
from ...memory import BlockPool, copy_parallel


def is_simulator() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def sim_geometry(real, simulated):
    """``simulated`` under the CUDA simulator, else ``real``: the one place a feature's kernels take
    a smaller geometry there (the simulator runs a thread per Python thread, and tiny test instances
    should still span several blocks)."""
    return simulated if is_simulator() else real


def stride_grid(items: int, most: int = 4096) -> tuple[int, int]:
    """``(blocks, threads)`` for a grid-stride kernel over ``items`` (``for i in range(cuda.grid(1),
    items, cuda.gridsize(1))``): 256 threads a block (32 in the simulator), enough blocks for one
    item a thread, at most ``most``, at least one."""
    threads = sim_geometry(256, 32)
    return max(1, min(most, -(-int(items) // threads))), threads


def resident_threads() -> int:
    """Threads the device holds at once (its SMs times the threads an SM holds; 0 under the
    simulator): what the driver reserves each thread's local memory for."""
    if is_simulator():
        return 0
    dev = cuda.get_current_device()
    per_sm = 2048  # every sm_70 .. sm_90 part; the attribute's name differs between numba-cuda versions
    for name in ("MAX_THREADS_PER_MULTIPROCESSOR", "MAX_THREADS_PER_MULTI_PROCESSOR"):
        try:
            per_sm = int(getattr(dev, name))
            break
        except AttributeError:
            continue
    return per_sm * dev.MULTIPROCESSOR_COUNT


#: share of an SM's shared-memory capacity that the resident threads' local memory may fill
#: (:func:`cached_grid`): L1 and shared memory are one array of each SM, the shared part's attribute
#: the nearest the driver tells of the L1's size. H100, one pair a thread, 640 / 768 bytes of local
#: memory a thread: fastest at 256 resident threads an SM (160 / 196 KiB), 1.3x slower at 512 / 384,
#: 2.4-4x at 1,024 / 512 (docs/benchmarks.md, "Batch kernels and the L1 cache")
L1_LOCAL_SHARE = 7 / 8

_L1_BLOCKS: dict = {}


def cached_grid(kernel, args: tuple, threads: int, want: int) -> int:
    """The grid for ``want`` blocks of ``threads`` threads of a grid-stride ``kernel`` (each thread
    loops over its items, so any grid covers them) whose threads work in local memory (per-thread
    arrays): at most as many blocks an SM as keep the resident threads' local memory within the
    SM's L1 cache (:data:`L1_LOCAL_SHARE`). Past it every thread's arrays go out to L2 and the
    kernel runs several times slower. ``want`` for a kernel with no local memory, or under the
    simulator. Found once a kernel and block size (its local arrays' sizes are the kernel's
    compile-time constants, the same for every argument type), the kernel compiled for ``args``
    then if it was not (through its own dispatcher, so the disk cache serves it)."""
    if is_simulator():
        return want
    key = (kernel, threads)
    per_sm = _L1_BLOCKS.get(key)
    if per_sm is None:
        argtypes = tuple(kernel.typeof_pyval(a) for a in args)
        kernel.compile(argtypes)
        local = int(kernel.overloads[argtypes].local_mem_per_thread)
        dev = cuda.get_current_device()
        sms = int(dev.MULTIPROCESSOR_COUNT)
        fit = int(dev.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR * L1_LOCAL_SHARE) // max(threads * local, 1)
        # a cap at or above the blocks an SM holds anyway would only cut the last wave short
        per_sm = max(1, fit) * sms if fit < resident_threads() // (sms * threads) else 0
        _L1_BLOCKS[key] = per_sm
    return max(1, min(want, per_sm)) if per_sm else want


def shared_memory_optin(simulated: int) -> int:
    """The dynamic shared memory a block may opt in to, in bytes (``simulated`` under the
    simulator: tiny test instances then spill to device memory as large ones do on a GPU)."""
    if is_simulator():
        return simulated
    try:
        return int(cuda.get_current_device().MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
    except Exception:  # an attribute this numba-cuda does not know: the default every GPU allows
        return 48 * 1024


_REASON: list[str] = []
#: set once a GPU (or the simulator) answered in this process: CUDA's start-up is paid
STARTED = False


def available() -> bool:
    """True when kernels can run: a real GPU, or the CUDA simulator when it is switched on."""
    global STARTED
    try:
        ok = bool(cuda.is_available())
    except Exception as e:  # a broken driver raises rather than answering False
        _REASON[:] = [f"{type(e).__name__}: {e}"]
        return False
    if not ok and not _REASON:
        _REASON.append("numba.cuda.is_available() is False: no GPU or no CUDA driver")
    STARTED = STARTED or ok
    return ok


def unavailable_reason() -> str:
    available()
    return _REASON[0] if _REASON else "CUDA is available"


def device_name() -> str:
    if is_simulator():
        return "CUDA simulator (NUMBA_ENABLE_CUDASIM=1)"
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    cc = ".".join(map(str, dev.compute_capability))
    return f"{name} (sm {cc}, {dev.MULTIPROCESSOR_COUNT} SMs)"


def memory_info() -> tuple[int, int]:
    """(free, total) bytes of device memory; the host's when running under the simulator."""
    if is_simulator():
        from ...memory import available_memory

        return available_memory(), available_memory()
    free, total = cuda.current_context().get_memory_info()
    return int(free), int(total)


class _SimLocked(bytearray):
    """Plain memory that stands for page-locked memory under the simulator (so that the code paths
    taken for page-locked arrays run there too)."""


def pinned_empty(shape, dtype) -> np.ndarray:
    """Page-locked host memory (fast, asynchronous DMA); plain memory under the simulator."""
    if is_simulator():
        dtype = np.dtype(dtype)
        n = int(np.prod(shape, dtype=np.int64))
        return np.ndarray(shape, dtype, buffer=_SimLocked(max(n, 1) * dtype.itemsize))
    return cuda.pinned_array(shape, dtype=dtype)


def is_page_locked(x) -> bool:
    """Whether the numpy array ``x`` (or the array it is a view of) lies in page-locked host memory
    that CUDA allocated (:func:`pinned_empty`, ``cuda.pinned_array``): its copies to the device go by
    DMA from where it lies, asynchronously. False for anything else (pageable memory, memory
    page-locked by other means: those are copied the pageable way, correctly, only slower)."""
    base = x
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, _SimLocked):
        return True
    if is_simulator():
        return False
    from numba.cuda.cudadrv.driver import PinnedMemory

    return isinstance(base, PinnedMemory)


def as_device_array(x):
    """``x``, an array in GPU memory (:func:`gpudp.backends.is_device_array`: CuPy, a PyTorch CUDA
    tensor, numba's), as a numba device array over the same memory (no copy)."""
    return x if is_simulator() else cuda.as_cuda_array(x)


def page_locked_copy(x: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of ``x`` in page-locked memory (:func:`pinned_empty`); ``x`` itself when it
    is already such an array."""
    if is_page_locked(x) and x.flags.c_contiguous:
        return x
    out = pinned_empty(x.shape, x.dtype)
    out[...] = x
    return out


def mapped_empty(shape, dtype) -> np.ndarray:
    if is_simulator():
        return np.empty(shape, dtype)
    return cuda.mapped_array(shape, dtype=dtype)


def stream():
    return cuda.stream()


def event(timing: bool = True):
    """A CUDA event (the simulator's take no arguments)."""
    return cuda.event() if is_simulator() else cuda.event(timing=timing)


def max_cooperative_blocks(kernel, threads: int, fallback: int) -> int:
    """How many blocks of ``threads`` a cooperative (grid-synchronised) launch may have."""
    if is_simulator():
        return fallback
    try:
        return int(kernel.max_cooperative_grid_blocks(threads))
    except Exception:
        return fallback


# ---------------------------------------------------------------------------------------------
# Page-locked host memory: one pool per process (page-locking GBs costs ~0.1 s/GB)
# ---------------------------------------------------------------------------------------------

_PINNED: list = []


#: alignment of each array in an upload's one device allocation (:func:`upload`)
UPLOAD_ALIGN = 256
#: the most bytes an upload stages in the process's page-locked buffer (kept, grown to the largest
#: upload up to this); a larger one is staged in pageable memory
STAGE_MAX = 1 << 28
#: bytes a thread copies at a time into the staging buffer; an upload of fewer copies on one thread
STAGE_CHUNK = 1 << 20
_STAGE: list = []
_STAGE_LOCK = threading.Lock()


def _stage(total: int) -> np.ndarray:
    """``total`` bytes to stage an upload in: the page-locked buffer (grown to ``total``, at least
    doubling) up to :data:`STAGE_MAX`, else pageable memory. Call under ``_STAGE_LOCK``."""
    if total > STAGE_MAX:
        return np.empty(total, np.uint8)
    if not _STAGE or len(_STAGE[0]) < total:
        size = min(STAGE_MAX, max(total, 2 * len(_STAGE[0]) if _STAGE else 0))
        _STAGE[:] = [pinned_empty(size, np.uint8)]
    return _STAGE[0][:total]


def upload(items, stream) -> tuple:
    """Device copies of ``items``: each a host array, a tuple of them (a record's fields), or
    anything else (passed through). One device allocation, one staging copy into one host buffer
    and one transfer for all the arrays, where ``cuda.to_device`` allocates and copies each (about
    0.25 ms apiece on the H100 machine, 2026-11-26: 2-3 ms a sweep). The staging buffer is
    page-locked and kept by the process (:data:`STAGE_MAX`), filled on every numba thread: an 18 MB
    table went up in ~2.5 ms from pageable memory (H100 machine, 2026-12-07). Returns when the copy
    is done."""
    arrays = [
        a for it in items for a in (it if isinstance(it, tuple) else (it,)) if isinstance(a, np.ndarray)
    ]
    offsets, total = {}, 0
    for a in arrays:
        if id(a) not in offsets:
            offsets[id(a)] = total
            total += -(-max(a.nbytes, 1) // UPLOAD_ALIGN) * UPLOAD_ALIGN
    if not arrays:
        return tuple(items)
    dev = cuda.device_array(total, np.uint8, stream=stream)
    # a buffer of its own: the pinned pool keeps only the block given back last (a small one given
    # back here made the next traceback page-lock its rounds' buffer again)
    with _STAGE_LOCK:
        stage = _stage(total)
        for a in arrays:
            off = offsets[id(a)]
            flat = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
            if flat.nbytes > STAGE_CHUNK:
                copy_parallel(stage[off : off + a.nbytes], flat, flat.nbytes, STAGE_CHUNK)
            else:
                stage[off : off + a.nbytes] = flat
        dev.copy_to_device(stage, stream=stream)
        out = _placed(items, offsets, dev, stream)
        stream.synchronize()  # (the buffer free for the next upload)
    return out


def _placed(items, offsets, dev, stream) -> tuple:
    """``items`` with each host array replaced by its place in the upload's allocation ``dev``."""

    def on_device(a):
        if not isinstance(a, np.ndarray):
            return a
        if not a.size:
            return cuda.device_array(a.shape, a.dtype, stream=stream)
        off = offsets[id(a)]
        return dev[off : off + a.nbytes].view(a.dtype).reshape(a.shape)

    return tuple(values.map_buf(it, on_device) for it in items)


def device_fill(arr, value, stream) -> None:
    """Every item of the C-contiguous device array ``arr`` set to ``value``, queued on ``stream``: one
    memset where the value's bytes are one byte repeated (0, -1, 0.0, ...), else numba's assignment
    on the default stream (which copies the value up, launches a kernel and waits for it: ~1 ms a
    call on the H100 machine, 2026-12-07)."""
    from numba.cuda.cudadrv.driver import device_memset

    raw = np.asarray(value, arr.dtype).tobytes()
    if raw == raw[:1] * len(raw):
        device_memset(arr, raw[0], arr.nbytes, stream)
    else:
        arr[:] = value


def pinned_pool() -> BlockPool:
    """The process-wide pool of page-locked host blocks: the decision stores' leases and the
    branch-and-bound rings draw from it (see :class:`gpudp.memory.BlockPool`);
    ``pinned_pool().trim(0)`` gives its spare blocks back to the system."""
    if not _PINNED:
        _PINNED.append(BlockPool(pinned_empty))
    return _PINNED[0]


def pinned_words(n: int) -> np.ndarray:
    """A page-locked uint32 array of ``n`` words leased from :func:`pinned_pool`."""
    return pinned_pool().lease(n, np.uint32)


def kernel_resources(launcher) -> dict:
    """Registers and local memory per thread of the compiled kernel (where numba-cuda says)."""
    out = {}
    for key, name in (
        ("registers_per_thread", "get_regs_per_thread"),
        ("local_bytes_per_thread", "get_local_mem_per_thread"),
    ):
        try:
            val = getattr(launcher, name)()
            out[key] = next(iter(val.values())) if isinstance(val, dict) else val
        except Exception:
            pass
    return out


#: the kernel of the last sweep, specialised (for diagnostics: resources, SASS)
LAST_LAUNCHER: list = []


def coop_blocks(kernel, args, threads: int, want: int, smem: int = 0) -> tuple[object, int]:
    """Specialise the kernel for these arguments; cap the grid at what a cooperative launch allows
    (with ``smem`` bytes of dynamic shared memory per block, which the kernel is allowed to use)."""
    if is_simulator():
        return kernel, 1  # the simulator runs cooperative grids of one block only
    # compile through the dispatcher itself: ``specialize`` makes a new one without the disk cache
    argtypes = tuple(kernel.typeof_pyval(a) for a in args)
    kernel.compile(argtypes)
    overload = kernel.overloads[argtypes]
    spec = kernel
    if smem > 48 * 1024:  # beyond 48 KiB a kernel must opt in
        from numba.cuda.cudadrv.driver import binding, driver

        fn = overload._codelibrary.get_cufunc()
        attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        driver.cuKernelSetAttribute(attr, int(smem), fn.handle, fn.device.id)
    limit = 0
    try:
        limit = int(overload.max_cooperative_grid_blocks(threads, smem))
    except Exception:
        pass
    if limit <= 0:
        limit = cuda.get_current_device().MULTIPROCESSOR_COUNT * 4
    return spec, max(1, min(want, limit))


def launch_known(cache: dict, kernel, grid: int, threads: int, stream, args: tuple):
    """``kernel[grid, threads, stream](*args)``, through the compiled kernel that the first launch
    found (kept in ``cache``, for arguments of the same types every time): numba types every
    argument again at each launch (about 0.3 ms for the blocks kernel's twenty, which a
    traceback's rounds launch again and again)."""
    known = cache.get(("launch", kernel))
    if known is not None:
        known.launch(args, grid, threads, stream, 0)
        return
    kernel[grid, threads, stream](*args)
    if not is_simulator():
        cache[("launch", kernel)] = kernel.overloads[tuple(kernel.typeof_pyval(a) for a in args)]


@contextlib.contextmanager
def drained(*streams):
    """On an exception (a time limit, an interrupt, a failed landing), wait for the kernels and
    copies queued on ``streams`` (none given: on the whole device) before it goes on: they write
    into device slabs, page-locked staging and the store, which the caller's unwinding lets go of
    (freeing page-locked memory that a copy still writes into is undefined). A failure of the wait
    itself leaves the first exception to tell."""
    try:
        yield
    except BaseException:
        for wait in [s.synchronize for s in streams] or [cuda.synchronize]:
            with contextlib.suppress(Exception):
                wait()
        raise
