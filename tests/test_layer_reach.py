"""A layered recurrence that declares its reach, in general terms: the CUDA engine then runs it
temporally blocked (several layers per pass, each block updating a span of the layer in shared
memory, see gpudp.backends.cuda.layered.blocked_kernel). Both codecs, two value types, random reaches and
active ranges, against a memoised reference that knows nothing of passes or spans.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_layer_ranges import P, Ranged, check_values, reference

from gpudp import ContractError, InputError
from gpudp.engine import sweep


class Reaching(Ranged):
    """Cell (t, k) mixes cells k and k - r[t] of layer t - 1, each clamped into that layer's active
    range. The ranges are drawn so that the clamped reads stay within k - r[t] .. k (``lo`` never
    decreases, ``hi[t] <= hi[t - 1] + r[t]``), which is what ``reach`` promises."""

    def __init__(self, h, r, lo, hi):
        super().__init__(h, lo, hi)
        self.r = np.asarray(r)

    def reach(self):
        return self.r

    def data(self):
        return (self.h, self.r, self.lo, self.hi)

    @staticmethod
    def cell(t, k, prev, h, r, lo, hi):
        if t == 0 or lo[t - 1] >= hi[t - 1]:
            return h[t, k], 3
        a = prev[min(max(k, lo[t - 1]), hi[t - 1] - 1)]
        b = prev[min(max(k - r[t], lo[t - 1]), hi[t - 1] - 1)]
        if a >= b:
            return (h[t, k] + 2 * a + b) % 1009, 1
        return (h[t, k] + a + 2 * b) % 1009, 2

    @staticmethod
    def back(t, k, d, h, r, lo, hi):
        if d == 3:
            return -1, k
        return t - 1, min(max(k - (r[t] if d == 2 else 0), lo[t - 1]), hi[t - 1] - 1)


class ReachingBands(Reaching):
    decision_codec = "bands"


class Reaching32(Reaching):
    value_dtype = np.int32


def random_instance(rng, n, m, rmax):
    r = rng.integers(0, rmax + 1, n)
    lo, hi = np.zeros(n, np.int64), np.zeros(n, np.int64)
    for t in range(n):
        lo[t] = min(m, (lo[t - 1] if t else 0) + rng.integers(0, 3))
        cap = m if t == 0 else min(m, hi[t - 1] + r[t])
        hi[t] = max(lo[t], cap - rng.integers(0, 4) * rng.integers(0, 2))
    h = rng.integers(0, P, size=(n, m)).astype(np.int64)
    return h, r, lo, hi


def check(res, h, r, lo, hi):
    check_values(res, *reference(h, lo, hi, lambda t, k: (k, k - int(r[t]))), lo, hi, h.shape)


@settings(max_examples=20)
@given(st.integers(0, 10), st.integers(1, 90), st.integers(0, 12), st.integers(0, 2**31 - 1))
def test_reach_cpu_matches_reference(n, m, rmax, seed):
    h, r, lo, hi = random_instance(np.random.default_rng(seed), n, m, rmax)
    for cls in (Reaching, ReachingBands, Reaching32):
        check(sweep(cls(h, r, lo, hi), backend="cpu", progress=False), h, r, lo, hi)


@pytest.fixture
def small_window(monkeypatch):
    """The simulator's blocking on a real GPU too: a shared window of 256 cells (a span of 192
    and a halo of 64), so that tiny instances take several spans and several passes."""
    from gpudp.backends.cuda import layered as cb

    monkeypatch.setattr(cb, "BLOCK_SMEM", 256 * 8)
    monkeypatch.setattr(cb, "BLOCK_MIN_SPAN", 64)
    return cb


@pytest.mark.sim
@pytest.mark.parametrize("cls", [Reaching, ReachingBands, Reaching32])
def test_reach_cuda_blocked_matches_reference(cls, small_window):
    """Several spans and several passes per chunk."""
    if np.dtype(cls.value_dtype).itemsize == 4:
        small_window.BLOCK_SMEM = 256 * 4
    h, r, lo, hi = random_instance(np.random.default_rng(5), 9, 250, 16)
    res = sweep(cls(h, r, lo, hi), backend="cuda", progress=False)
    assert res.stats.extra["kernel"] == "blocked"
    assert res.stats.extra["blocked_passes"] > 1 and res.stats.extra["blocked_span"] < 250
    check(res, h, r, lo, hi)


@pytest.mark.sim
def test_reach_too_long_for_shared_memory_runs_the_plain_kernel(small_window):
    h, r, lo, hi = random_instance(np.random.default_rng(3), 4, 300, 5)
    r[2] = 250  # the simulator's window holds 256 cells
    res = sweep(Reaching(h, r, lo, hi), backend="cuda", progress=False)
    assert "kernel" not in res.stats.extra
    check(res, h, r, lo, hi)


class Unpromised(Reaching):
    """The same cells, with no ``reach()``: the promise comes as the sweep's option."""

    def reach(self):
        return None


@pytest.mark.sim
def test_reach_option_blocks_as_the_method_does(small_window):
    """``sweep(rec, reach=r)`` runs the blocked kernel as ``reach()`` does, with the same passes and
    the same values; without either the plain kernel runs."""
    h, r, lo, hi = random_instance(np.random.default_rng(6), 7, 220, 12)
    method = sweep(Reaching(h, r, lo, hi), backend="cuda", progress=False)
    option = sweep(Unpromised(h, r, lo, hi), backend="cuda", progress=False, reach=r)
    none = sweep(Unpromised(h, r, lo, hi), backend="cuda", progress=False)
    assert method.stats.extra["kernel"] == option.stats.extra["kernel"] == "blocked"
    assert "kernel" not in none.stats.extra
    for key in ("blocked_passes", "blocked_span"):
        assert method.stats.extra[key] == option.stats.extra[key], key
    check(option, h, r, lo, hi)


def test_reach_option_is_planned_and_validated():
    """The option takes the method's place in the plan (overriding it), and a malformed one is an
    InputError naming ``reach``."""
    from gpudp.engine import plan_sweep

    h, r, lo, hi = random_instance(np.random.default_rng(4), 5, 40, 6)
    assert plan_sweep(Unpromised(h, r, lo, hi), "cpu").reach is None
    assert plan_sweep(Unpromised(h, r, lo, hi), "cpu", reach=r).reach.tolist() == r.tolist()
    assert plan_sweep(Reaching(h, r, lo, hi), "cpu").reach.tolist() == r.tolist()
    assert plan_sweep(Reaching(h, r, lo, hi), "cpu", reach=r + 1).reach.tolist() == (r + 1).tolist()
    for bad, what in (([1, -1, 0, 0, 0], "layer 1"), ([1, 2], "one per layer"), ([0.5] * 5, "integers")):
        with pytest.raises(InputError, match=what) as e:
            sweep(Unpromised(h, r, lo, hi), backend="cpu", reach=np.asarray(bad))
        assert e.value.field == "reach"


@pytest.mark.gpu
def test_reach_gpu_matches_cpu_large():
    h, r, lo, hi = random_instance(np.random.default_rng(9), 300, 40_000, 700)
    cpu = sweep(ReachingBands(h, r, lo, hi), backend="cpu", progress=False)
    gpu = sweep(ReachingBands(h, r, lo, hi), backend="cuda", progress=False)
    assert gpu.stats.extra["kernel"] == "blocked"
    assert np.array_equal(cpu.last_layer[lo[-1] : hi[-1]], gpu.last_layer[lo[-1] : hi[-1]])
    for name in ("lead_n", "band_n", "lead_w", "trail_w"):
        assert np.array_equal(getattr(cpu.store, name), getattr(gpu.store, name)), name
    for t in range(len(r)):
        a, b, k = cpu.store.band_off[t], gpu.store.band_off[t], cpu.store.band_n[t]
        assert np.array_equal(cpu.store.words[a : a + k], gpu.store.words[b : b + k]), t


def test_reach_is_validated():
    h = np.zeros((3, 10), np.int64)
    lo, hi = np.zeros(3, np.int64), np.full(3, 10)
    for r, what in (([1, -1, 0], "layer 1"), ([1, 2], "one per layer"), ([0.5, 1, 1], "integers")):
        with pytest.raises(ContractError, match=what):
            sweep(Reaching(h, np.asarray(r), lo, hi), backend="cpu")

    class Wide(Reaching):
        window = 2

        @staticmethod
        def cell(t, k, p1, p2, h, r, lo, hi):
            return 0, 0

    with pytest.raises(ContractError, match="window = 1"):
        sweep(Wide(h, np.ones(3, np.int64), lo, hi), backend="cpu")
