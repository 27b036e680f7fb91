"""The sparse-state DP's list step on the GPU (problems/knapsack/sparse/cuda.py) against the CPU step.

Under Numba's CUDA simulator (no GPU here) the kernels run as Python threads: lists of a few dozen
states, in blocks of 8 threads, so that every kernel spans several blocks and the scans recurse. On
the GPU machine the ``gpu`` tests run a step of a million states and whole solves whose lists pass
the GPU's threshold."""

import numpy as np
import pytest
from test_knapsack_dp import ref_dp

from gpudp.backends import cuda_usable
from gpudp.problems.knapsack import sparse as ks
from gpudp.problems.knapsack.classes import pisinger_instance
from gpudp.problems.knapsack.sparse import gpu as ksg
from gpudp.problems.knapsack.sparse import kernels as kk
from gpudp.problems.knapsack.sparse import search as kss


def _kc():
    """The GPU module (imported on use: importing it imports the CUDA compiler)."""
    from gpudp.problems.knapsack.sparse import cuda as sparse_cuda

    return sparse_cuda


def _random_list(rng, L, R, equal=(0, 0)):
    """An undominated list: weights and profits strictly increasing; with ``equal = (w, p)``, every
    third gap between weights is w (the list shifted by it meets itself: equal weights in the
    merge), and every sixth gap between profits is p as well (equal weights and equal profits)."""
    gw, gp = rng.integers(1, R, L), rng.integers(1, R, L)
    if equal[0]:
        gw[::3] = equal[0]
        gp[::6] = equal[1]
    return np.cumsum(gw).astype(np.int64), np.cumsum(gp).astype(np.int64)


def _both_steps(case, rng):
    """The CPU step (sparse.kernels.step) and the device step on the same list: both results, the lists
    each wrote (``(W, P, N, K)``, K where the states' relaxation is on) and the node arrays."""
    L, dk, wj, pj, lag_on, small, target_up, z_mode = case
    W, P = _random_list(rng, L, 9, equal=(wj, pj) if pj < 50 else (0, 0))
    N = rng.integers(-1, 20, L).astype(np.int64)
    K = rng.integers(5, 30, L).astype(np.int32)
    cap = int(W[L // 2])
    fit = int(np.searchsorted(W, cap, side="right")) - 1
    z = int(P[0]) if z_mode == "low" else int(P[fit]) - 1
    bnd = np.array([7, 6, 9, 8], np.int64)  # efficiencies 7/6 to add, 9/8 to remove
    j, nn0 = 5, 20
    size = 2 * L + 2

    def cpu_step(lag, lagc, z):
        SW, SP, SN = (np.zeros((2, size), np.int64) for _ in range(3))
        SK, F = np.zeros((2, size), np.int32), np.zeros(size, np.int8)
        SW[0, :L], SP[0, :L], SN[0, :L], SK[0, :L] = W, P, N, K
        par, itm = np.full(nn0 + L + 2, -9, np.int64), np.full(nn0 + L + 2, -9, np.int64)
        args = (dk * wj, dk * pj, dk, j, cap, z, 1, target, bnd, small, lag, lagc)
        return kk.step(SW, SP, SN, SK, F, 0, L, *args, par, itm, nn0), SW, SP, SN, SK, par, itm, args

    lag, lagc = np.zeros(4, np.int64), 0
    target = 0
    if z_mode == "tie":  # the best state that fits after the merge is worth z exactly: no improvement
        z = cpu_step(lag, 0, -1)[0][3]
    if target_up:
        target = z + 8
    if lag_on:  # S = 4, A = -3, U = 5: about half the states reach the threshold after the step
        z_after = cpu_step(lag, 0, z)[0][3]
        lag[:3] = 4, -3, 5
        lagc = 4 * max(z_after + 1, target) - int(np.median(4 * P + 3 * K - 5 * W))
    cpu, SW, SP, SN, SK, par, itm, args = cpu_step(lag, lagc, z)
    d = _kc().DeviceList(np.arange(1, 9, dtype=np.int64), np.arange(1, 9, dtype=np.int64), size, len(par))
    d.upload(W, P, N, K, L, np.full(len(par), -9, np.int64), np.full(len(par), -9, np.int64), len(par))
    gpu = _kc().step_cuda(d, L, *args, nn0)
    got = d.download(gpu[1], lag_on)
    want = (SW[1, : cpu[1]], SP[1, : cpu[1]], SN[1, : cpu[1]], SK[1, : cpu[1]] if lag_on else None)
    return cpu, gpu, got, want, (par, itm), d.download_nodes(len(par))


def _assert_same(cpu, gpu, got, want, nodes, gnodes, nn0=20):
    assert tuple(gpu) == tuple(cpu)
    for a, b in zip(got, want, strict=True):
        assert (a is None and b is None) or np.array_equal(a, b)
    nn = cpu[2]
    assert np.array_equal(gnodes[0][nn0:nn], nodes[0][nn0:nn]) and np.array_equal(
        gnodes[1][nn0:nn], nodes[1][nn0:nn]
    )


@pytest.mark.sim
@pytest.mark.parametrize(
    "case",
    [
        (30, 1, 11, 13, False, True, False, "low"),  # item added, equal weights merged, most states kept
        (26, -1, 11, 13, True, False, False, "low"),  # item removed, states' relaxation, 128-bit products
        (30, 1, 11, 13, True, True, True, "fit"),  # a probe's target above the incumbent
        (24, 1, 1, 50, False, True, False, "fit"),  # the incumbent improves: a flipped state, a new node
        (22, -1, 11, 13, False, False, False, "tie"),  # the best state that fits ties the incumbent
    ],
)
def test_gpu_step_equals_cpu_step(case):
    """Lists, counts, new nodes and results equal the CPU step's, entry for entry."""
    cpu, gpu, got, want, nodes, gnodes = _both_steps(case, np.random.default_rng(sum(case[:-1])))
    _assert_same(cpu, gpu, got, want, nodes, gnodes)
    m, m2, nn, z, znode = cpu
    assert m2 > 0 and m > m2  # states kept and states fathomed
    if case[3] == 50:
        assert znode >= 20  # a new node: the incumbent is a flipped state
    if case[-1] == "tie":
        assert znode == -2


@pytest.mark.sim
def test_gpu_pairing_equals_cpu_pairing():
    rng = np.random.default_rng(3)
    L, n = 20, 12
    W, P = _random_list(rng, L, 9)
    ws = rng.integers(1, 12, n).astype(np.int64)
    ps = rng.integers(1, 12, n).astype(np.int64)
    cap = int(W[L // 2])
    s, t = 4, 7
    for z in (int(P[0]), int(P[L // 2]) + 5, int(P[-1])):
        st = np.zeros(kk.NSLOTS, np.int64)
        st[kk.ST_S], st[kk.ST_T], st[kk.ST_LEN] = s, t, L
        st[kk.ST_Z], st[kk.ST_ZNODE], st[kk.ST_NN] = z, -1, 3
        SW, SP, SN = (np.zeros((2, L), np.int64) for _ in range(3))
        SW[0], SP[0], SN[0] = W, P, np.arange(L) + 100
        par, itm = np.full(8, -9, np.int64), np.full(8, -9, np.int64)
        kk.pair(ws, ps, cap, SW, SP, SN, par, itm, st)
        d = _kc().DeviceList(ws, ps, 2 * L, 8)
        d.upload(W, P, np.arange(L, dtype=np.int64) + 100, None, L, par, itm, 0)
        best = _kc().pair_cuda(d, L, cap, s, t, n, z)
        if st[kk.ST_Z] == z:
            assert best is None
        else:
            val, q, j = best
            assert val == st[kk.ST_Z] and par[3] == 100 + q and itm[3] == j


@pytest.mark.sim
def test_solve_with_gpu_steps_in_the_simulator(monkeypatch):
    """A whole solve whose larger lists go to the 'GPU' (lists of 8 states and more, tiny initial
    room: the device lists grow, the device's nodes are collected): the same optimum as the CPU. (On
    the GPU machine it runs on the GPU.)"""
    monkeypatch.setattr(ksg, "gpu_usable", lambda: True)
    monkeypatch.setattr(ksg, "GPU_AFTER_S", 0.0)
    monkeypatch.setattr(kss, "GPU_LIST", 8)
    monkeypatch.setattr(kss, "GPU_BACK", 8)
    monkeypatch.setattr(kss, "LIST_START", 2)
    monkeypatch.setattr(kss, "NODE_START", 2)
    calls = {"collect": 0, "grow": 0}
    kc = _kc()
    collect, grow = kss.Search._gpu_collect, kc.DeviceList.grow_lists

    def counted_collect(self):
        calls["collect"] += 1
        return collect(self)

    def counted_grow(self, *a):
        calls["grow"] += 1
        return grow(self, *a)

    monkeypatch.setattr(kss.Search, "_gpu_collect", counted_collect)
    monkeypatch.setattr(kc.DeviceList, "grow_lists", counted_grow)
    p, w, c = pisinger_instance(2, 20, 300, seed=3)
    sol = ks.solve(p, w, c, backend="cuda")
    assert sol.optimal and sol.checked and sol.value == ref_dp(p.tolist(), w.tolist(), c)
    assert sol.details["gpu"]["steps"] >= 3 and calls["collect"] >= 1
    assert sol.stats.backend == "cuda" and sol.details["gpu"]["device"] == sol.stats.device
    assert ks.solve(p, w, c, backend="cpu").details["gpu"]["steps"] == 0


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_usable(), reason="needs a real CUDA GPU")
def test_gpu_step_on_a_million_states():
    rng = np.random.default_rng(7)
    for case in [
        (1_000_000, 1, 11, 13, True, True, False, "low"),
        (700_001, -1, 11, 13, True, False, True, "fit"),
    ]:
        cpu, gpu, got, want, nodes, gnodes = _both_steps(case, rng)
        _assert_same(cpu, gpu, got, want, nodes, gnodes)
        assert cpu[1] > 1000


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_usable(), reason="needs a real CUDA GPU")
@pytest.mark.parametrize(
    "cls, n, R, seed", [(14, 1000, 10**6, 2), (16, 1000, 10**6, 1), (14, 1000, 10**6, 0)]
)
def test_large_lists_on_the_gpu(cls, n, R, seed):
    """mstr and circle instances whose lists pass 10^5 states: their steps on the GPU, the same
    optimum as on the CPU, proven."""
    p, w, c = pisinger_instance(cls, n, R, seed=seed)
    gpu = ks.solve(p, w, c, backend="cuda", time_limit=120)
    cpu = ks.solve(p, w, c, backend="cpu", time_limit=120)
    assert gpu.optimal and cpu.optimal and gpu.value == cpu.value
    assert gpu.details["gpu"]["steps"] > 0 and gpu.stats.backend == "cuda"
    print(
        cls, seed, "gpu", round(gpu.stats.seconds, 3), gpu.details["gpu"], "cpu", round(cpu.stats.seconds, 3)
    )
