"""gpudp.primitives against numpy: binary search, merge path, merge (CPU, simulator, GPU), scan."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpudp import primitives as pr
from gpudp.backends import cuda_usable

sorted_ints = st.lists(st.integers(-50, 50), max_size=40).map(lambda v: np.array(sorted(v), np.int64))


@given(sorted_ints, st.integers(-60, 60))
def test_bounds_match_searchsorted(a, v):
    assert pr.lower_bound_cpu(a, 0, len(a), v) == np.searchsorted(a, v, side="left")
    assert pr.upper_bound_cpu(a, 0, len(a), v) == np.searchsorted(a, v, side="right")


def _reference_merge(x, xp, y, yp, yadd, yor):
    keys = np.concatenate([x, y + yadd])
    pay = np.concatenate([xp, yp | yor]).astype(xp.dtype)
    order = np.argsort(keys, kind="stable")  # stable: on equal keys x (first) precedes y
    return keys[order], pay[order]


@given(sorted_ints, sorted_ints, st.integers(-20, 20), st.data())
def test_corank_is_the_merge_split(x, y, yadd, data):
    keys, _ = _reference_merge(x, np.arange(len(x)), y, np.arange(len(y)) + 1000, yadd, 0)
    d = data.draw(st.integers(0, len(x) + len(y)))
    i = pr.corank_cpu(x, 0, len(x), y, 0, len(y), yadd, d)
    # the first d outputs are x[:i] and y[:d-i] + yadd: the same multiset as the reference's first d
    got = np.sort(np.concatenate([x[:i], y[: d - i] + yadd]))
    assert np.array_equal(got, keys[:d])
    assert 0 <= d - i <= len(y)


def _random_case(rng, m, n, shared):
    x = np.sort(rng.integers(0, 40, m)).astype(np.int64)
    xp = rng.integers(0, 2**31, m).astype(np.uint32)
    if shared:  # list generation: merge x with a prefix of x + w
        n = min(n, m)
        return x, xp, x, xp, n
    y = np.sort(rng.integers(0, 40, n)).astype(np.int64)
    yp = rng.integers(0, 2**31, n).astype(np.uint32)
    return x, xp, y, yp, n


@pytest.mark.parametrize("m,n", [(0, 0), (0, 5), (5, 0), (1, 1), (37, 20), (300, 299), (10000, 7000)])
@pytest.mark.parametrize("shared", [False, True])
def test_merge_shifted_cpu(m, n, shared):
    rng = np.random.default_rng(m * 31 + n)
    x, xp, y, yp, n = _random_case(rng, m, n, shared)
    outk = np.full(m + n, -7, np.int64)
    outp = np.zeros(m + n, np.uint32)
    pr.merge_shifted_cpu(x, xp, m, y, yp, n, 3, np.uint32(1 << 31), outk, outp)
    rk, rp = _reference_merge(x, xp, y[:n], yp[:n], 3, np.uint32(1 << 31))
    assert np.array_equal(outk, rk) and np.array_equal(outp, rp)


def test_exclusive_scan_cpu():
    a = np.arange(1, 11, dtype=np.int64)
    s, total = pr.exclusive_scan_cpu(a)
    assert s.tolist() == [0, 1, 3, 6, 10, 15, 21, 28, 36, 45] and total == 55
    assert pr.exclusive_scan_cpu(np.zeros(0, np.int64))[1] == 0


def _reference_max_scan(a, init):
    out, best = [], init
    for v in a.tolist():
        out.append(best)
        best = max(best, v)
    return out, best


@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=60), st.integers(-(2**63), 2**63 - 1))
def test_exclusive_max_scan_cpu(values, init):
    a = np.array(values, np.int64)
    s, total = pr.exclusive_max_scan_cpu(a, init)
    ref, ref_total = _reference_max_scan(a, init)
    assert s.tolist() == ref and total == ref_total
    s, total = pr.exclusive_max_scan_cpu(np.array([3, -1, 7, 2, 7, 9, -5], np.int64), -2)
    assert s.tolist() == [-2, 3, 3, 7, 7, 7, 9] and total == 9


def _prc():
    """The GPU twins (imported on use: importing them imports the CUDA compiler)."""
    from gpudp.primitives import cuda as prc

    return prc


def _merge_on_device(kern, x, xp, y, yp, m, n, yadd, yor):
    cuda = kern.cuda
    outk = cuda.to_device(np.full(max(m + n, 1), -7, np.int64))
    outp = cuda.to_device(np.zeros(max(m + n, 1), np.uint32))
    dx, dxp = cuda.to_device(x), cuda.to_device(xp)
    dy, dyp = (dx, dxp) if y is x else (cuda.to_device(y), cuda.to_device(yp))
    _prc().merge_shifted_cuda(dx, dxp, m, dy, dyp, n, yadd, yor, outk, outp, kernels=kern)
    return outk.copy_to_host()[: m + n], outp.copy_to_host()[: m + n]


@pytest.mark.sim
@pytest.mark.parametrize("m,n,shared", [(7, 5, False), (9, 4, True), (0, 3, False), (6, 0, False)])
def test_merge_and_scan_on_simulator_or_gpu(m, n, shared):
    kern = _prc().cuda_kernels(4, 3, 8)  # tiles of 12 outputs, scan blocks of 8: several blocks even here
    rng = np.random.default_rng(m + 10 * n)
    x, xp, y, yp, n = _random_case(rng, m, n, shared)
    yor = np.uint32(1 << 31)
    got = _merge_on_device(kern, x, xp, y, yp, m, n, -2, yor)
    ref = _reference_merge(x, xp, y[:n], yp[:n], -2, yor)
    assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1])
    a = rng.integers(0, 9, 3 + m + n).astype(np.int64)  # up to 3 scan blocks: the recursion runs
    out = kern.cuda.to_device(np.full(len(a), -1, np.int64))
    total = _prc().exclusive_scan_cuda(kern.cuda.to_device(a), len(a), out, kernels=kern)
    ref_s, ref_total = pr.exclusive_scan_cpu(a)
    assert np.array_equal(out.copy_to_host(), ref_s) and total == ref_total


@pytest.mark.sim
@pytest.mark.parametrize("n", [0, 1, 8, 9, 100])
def test_max_scan_on_simulator_or_gpu(n):
    """Scan blocks of 8: up to three levels of block maxima (100 entries: 13 blocks, then 2, then
    1), the init padding the last block; the init above some entries and below others."""
    kern = _prc().cuda_kernels(4, 3, 8)
    rng = np.random.default_rng(n)
    a = rng.integers(-1000, 1000, n).astype(np.int64)
    for init in (-1, -(2**63), 500):
        out = kern.cuda.to_device(np.full(max(n, 1), 7, np.int64))
        total = _prc().exclusive_max_scan_cuda(kern.cuda.to_device(a), n, out, init, kernels=kern)
        ref, ref_total = _reference_max_scan(a, init)
        assert out.copy_to_host()[:n].tolist() == ref and total == ref_total


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_usable(), reason="needs a real CUDA GPU")
def test_merge_and_scan_on_gpu_large():
    kern = _prc().cuda_kernels()
    rng = np.random.default_rng(5)
    for m, n, shared in [(1_000_003, 999_999, False), (2_000_000, 1_234_567, True)]:
        x, xp, y, yp, n = _random_case(rng, m, n, shared)
        got = _merge_on_device(kern, x, xp, y, yp, m, n, 5, np.uint32(4))
        ref = _reference_merge(x, xp, y[:n], yp[:n], 5, np.uint32(4))
        assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1])
    a = rng.integers(0, 1000, 3_000_001).astype(np.int64)
    out = kern.cuda.device_array(len(a), np.int64)
    total = _prc().exclusive_scan_cuda(kern.cuda.to_device(a), len(a), out, kernels=kern)
    ref_s, ref_total = pr.exclusive_scan_cpu(a)
    assert np.array_equal(out.copy_to_host(), ref_s) and total == ref_total
    a = rng.integers(-(10**15), 10**15, 3_000_001).astype(np.int64)
    total = _prc().exclusive_max_scan_cuda(kern.cuda.to_device(a), len(a), out, -(10**16), kernels=kern)
    ref_s, ref_total = pr.exclusive_max_scan_cpu(a, -(10**16))
    assert np.array_equal(out.copy_to_host(), ref_s) and total == ref_total
