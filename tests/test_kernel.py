"""The kernel object in front of the disk cache (gpudp.kernel): one table for the process, keyed by
named parts that no caller can leave out; every part of a key tells kernels apart; `gpudp cache
info` counts the table's kernels by family; a CUDA kernel's launches carry timing events."""

from __future__ import annotations

import numpy as np
import pytest

from gpudp import GridRecurrence, LayeredRecurrence, cache
from gpudp.kernel import KernelFactory, counts, factory, family
from gpudp.problems import lcs

PARTS = {"rec": GridRecurrence, "n_data": 2, "nrt": False}
OTHER = {"rec": LayeredRecurrence, "n_data": 3, "nrt": True}


def test_equal_parts_one_kernel_and_each_part_tells_kernels_apart():
    fam = KernelFactory("test.kernel.parts", *PARTS)
    k = fam.lookup(**PARTS)
    assert not k.ready and k.fn is None
    fn = object()
    assert k.keep(fn) is k and k.ready and k.fn is fn
    again = fam.lookup(**dict(reversed(PARTS.items())))  # named: the order of the call is free
    assert again is k and again.fn is fn
    assert k.parts == PARTS and k.family == "test.kernel.parts"
    for name in PARTS:  # a key that forgot any part would find k here
        other = fam.lookup(**{**PARTS, name: OTHER[name]})
        assert other is not k and not other.ready, name
    assert k.keep(object()) is k and k.fn is fn  # a second build of the same key: the first is kept
    assert fam.built() == [k]


def test_a_missing_or_unknown_part_is_an_error():
    fam = KernelFactory("test.kernel.strict", "rec", "n_data")
    with pytest.raises(KeyError, match=r"missing \['n_data'\]"):
        fam.lookup(rec=GridRecurrence)
    with pytest.raises(KeyError, match=r"unknown \['nrt'\]"):
        fam.lookup(rec=GridRecurrence, n_data=2, nrt=False)
    with pytest.raises(ValueError, match="declared with parts"):
        KernelFactory("test.kernel.strict", "rec")  # one family, one key
    with pytest.raises(ValueError, match="distinct"):
        KernelFactory("test.kernel.twice", "rec", "rec")


def test_a_factory_function_builds_once_per_arguments():
    built = []

    @factory("test.kernel.fn")
    def make(a, b=2):
        built.append((a, b))
        return [a, b]

    first = make(1)
    assert make(1) is first and make(1, 2) is first and make(b=2, a=1) is first
    assert make(1, 3) is not first and make(2) is not first
    assert built == [(1, 2), (1, 3), (2, 2)]
    assert make.family.parts == ("a", "b") and len(make.family.built()) == 3
    with pytest.raises(TypeError):
        make(1, c=4)
    with pytest.raises(TypeError):
        make()


def test_the_backends_sweeps_are_kernels_of_the_table():
    """A sweep's CPU runner is in the table under its family's named parts; the same key finds it,
    any other part does not; sweeping again builds nothing."""
    from gpudp.backends.cpu import tiled_runner

    a, b = np.array([0, 1, 2, 1, 3]), np.array([1, 2, 3, 1])
    assert lcs.solve(a, b, backend="cpu", method="wavefront").value == 3
    fam = family("cpu.tiled")
    # LCS's cell in 32 bits (gpudp.recurrence.narrow): the class the sweep compiled is the narrow one
    rec = next(
        k.parts["rec"] for k in fam.built() if getattr(k.parts["rec"], "_wide", None) is lcs.LCSRecurrence
    )
    k = fam.lookup(rec=rec, n_data=5, nrt=False, noalias=True)  # the data, the overflow flag
    assert k.ready and tiled_runner(rec, 5) is k.fn
    for name, other in (("rec", GridRecurrence), ("n_data", 6), ("nrt", True), ("noalias", False)):
        assert not fam.lookup(**{**k.parts, name: other}).ready, name
    before = counts()  # another instance of the same shape (a swapped one may plan another schedule)
    lcs.solve(a[::-1].copy(), b[::-1].copy(), backend="cpu", method="wavefront")
    assert counts() == before


def test_cache_info_counts_the_kernels_of_this_process(tmp_path, monkeypatch, capsys):
    from gpudp.cli import main

    monkeypatch.setenv("GPUDP_CACHE_DIR", str(tmp_path / "c"))
    fam = KernelFactory("test.kernel.info", "n")
    assert "test.kernel.info" not in cache.info()["in_process"]
    total = sum(cache.info()["in_process"].values())
    fam.lookup(n=1).keep(len)
    fam.lookup(n=2).keep(len)
    fam.lookup(n=1).keep(abs)  # the same key: no new kernel
    d = cache.info()
    assert d["in_process"]["test.kernel.info"] == 2 and sum(d["in_process"].values()) == total + 2
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert f"in this process: {total + 2} kernels" in out and "test.kernel.info 2" in out
    fam.forget()
    assert "test.kernel.info" not in cache.info()["in_process"]


@pytest.mark.sim
def test_a_cuda_kernels_launches_are_timed():
    from gpudp.backends.cuda import CudaKernel, cuda, generated_kernel, stream

    fam = KernelFactory("test.kernel.cuda", "step", kernel=CudaKernel)
    k = fam.lookup(step=3)
    src = "def add(x, s):\n    i = cuda.grid(1)\n    if i < x.size:\n        x[i] += s\n"
    k = k.keep(generated_kernel(src, "add", {"cuda": cuda}))
    assert isinstance(k, CudaKernel)
    st = stream()
    x = cuda.to_device(np.zeros(8, np.int64), stream=st)
    runs = k.launches(st)
    end = runs.launch(2, 4, (x, 3))
    runs.launch(1, 8, (x, 1))
    end.synchronize()
    assert runs.count == 2 and len(runs.elapsed_ms()) == 2  # (the simulator times nothing: -1)
    assert x.copy_to_host().tolist() == [4] * 8
    quiet = k.launches(st, timed=False)
    assert quiet.launch(1, 8, (x, 1)) is None and quiet.count == 1 and quiet.elapsed_ms() == []
    st.synchronize()
    assert x.copy_to_host().tolist() == [5] * 8


@pytest.mark.sim
@pytest.mark.parametrize(
    "dtype, value", [(np.float64, 0.0), (np.int32, -1), (np.uint16, 0), (np.int64, 7), (np.float32, -np.inf)]
)
def test_a_device_array_filled_on_a_stream(dtype, value):
    """One memset where the value's bytes repeat one byte (0, -1), numba's assignment otherwise."""
    from gpudp.backends.cuda import cuda, device_fill, stream

    st = stream()
    a = cuda.to_device(np.arange(12, dtype=dtype).reshape(3, 4), stream=st)
    device_fill(a, value, st)
    st.synchronize()
    assert (a.copy_to_host() == np.asarray(value, dtype)).all()


@pytest.mark.sim
@pytest.mark.parametrize("stage_max", [1 << 28, 100])
def test_an_upload_places_every_array(monkeypatch, stage_max):
    """Several arrays (one twice, a record's tuple, an empty one, a scalar) staged in one buffer,
    copied by chunks on numba's threads, page-locked up to STAGE_MAX bytes and pageable beyond."""
    from gpudp.backends.cuda import driver, stream, upload

    monkeypatch.setattr(driver, "STAGE_CHUNK", 64)
    monkeypatch.setattr(driver, "STAGE_MAX", stage_max)
    rng = np.random.default_rng(3)
    a = rng.integers(-(2**62), 2**62, (7, 9))
    b = rng.random(300).astype(np.float32)[::2]  # not contiguous: copied first
    rec = (np.arange(5, dtype=np.int16), np.full(3, -1.5))
    items = (a, 7, b, rec, a, np.zeros(0, np.uint8))
    for _ in range(2):  # the second upload reuses (or grows) the buffer
        st = stream()
        got = upload(items, st)
        assert got[1] == 7 and got[5].shape == (0,)
        for x, d in ((a, got[0]), (b, got[2]), (rec[0], got[3][0]), (rec[1], got[3][1]), (a, got[4])):
            assert d.dtype == x.dtype and np.array_equal(d.copy_to_host(), x)
        items = (*items[:2], rng.random(2000), *items[3:])
        b = items[2]
