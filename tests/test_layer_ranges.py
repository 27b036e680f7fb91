"""The layered engine's active ranges and its "bands" decision codec, in general terms.

``Ranged`` mixes, per cell, two cells of the previous layer (clamped into that layer's active
range, as the contract asks) and records 2 decision bits; a memoised reference knows nothing of
ranges beyond the definition. The codec is tested alone (encode, then decode every cell) on random
and structured words, and through sweeps: both codecs must give the same decisions.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import ContractError, InputError, LayeredRecurrence
from gpudp.engine import sweep
from gpudp.store import BandStore, LayerLayout, band_decision, encode_bands, layer_decision

P = 1009


def clamp(k, lo, hi):
    return min(max(k, lo), hi - 1)


class Ranged(LayeredRecurrence):
    """Layer t has m cells, of which lo[t] <= k < hi[t] are computed. Cell (t, k) reads cells
    k - 1 and k + 1 of layer t - 1, each clamped into that layer's range (0 when it is empty)."""

    value_dtype = np.int64
    decision_bits = 2

    def __init__(self, h, lo, hi):
        self.h, self.lo, self.hi = h, np.asarray(lo), np.asarray(hi)

    def num_layers(self):
        return self.h.shape[0]

    def layer_size(self, t):
        return self.h.shape[1]

    def active_range(self):
        return self.lo, self.hi

    def data(self):
        return (self.h, self.lo, self.hi)

    @staticmethod
    def cell(t, k, prev, h, lo, hi):
        if t == 0 or lo[t - 1] >= hi[t - 1]:
            return h[t, k], 3
        a = prev[min(max(k - 1, lo[t - 1]), hi[t - 1] - 1)]
        b = prev[min(max(k + 1, lo[t - 1]), hi[t - 1] - 1)]
        if a >= b:
            return (h[t, k] + 2 * a + b) % 1009, 1
        return (h[t, k] + a + 2 * b) % 1009, 2

    @staticmethod
    def back(t, k, d, h, lo, hi):
        if d == 3:
            return -1, k
        step = -1 if d == 1 else 1
        return t - 1, min(max(k + step, lo[t - 1]), hi[t - 1] - 1)


class RangedBands(Ranged):
    decision_codec = "bands"


def reference(h, lo, hi, reads=lambda t, k: (k - 1, k + 1)):
    """Values and decisions of every computed cell (dicts keyed by (t, k)); ``reads(t, k)``: the
    two cells of layer t - 1 that cell (t, k) mixes, before clamping."""
    val, dec = {}, {}
    for t in range(h.shape[0]):
        for k in range(lo[t], hi[t]):
            if t == 0 or lo[t - 1] >= hi[t - 1]:
                val[t, k], dec[t, k] = int(h[t, k]), 3
                continue
            ka, kb = reads(t, k)
            a = val[t - 1, clamp(ka, lo[t - 1], hi[t - 1])]
            b = val[t - 1, clamp(kb, lo[t - 1], hi[t - 1])]
            if a >= b:
                val[t, k], dec[t, k] = (int(h[t, k]) + 2 * a + b) % P, 1
            else:
                val[t, k], dec[t, k] = (int(h[t, k]) + a + 2 * b) % P, 2
    return val, dec


def random_ranges(rng, n, m):
    lo = rng.integers(0, m + 1, n)
    hi = np.minimum(lo + rng.integers(0, m + 1, n), m)
    return lo, hi


def check_values(res, val, dec, lo, hi, shape):
    """The sweep's cell count, last layer and every decision against a reference's dicts."""
    n, m = shape
    assert res.stats.cells == int((hi - lo).sum())
    if n and hi[-1] > lo[-1]:
        assert res.last_layer[lo[-1] : hi[-1]].tolist() == [val[n - 1, k] for k in range(lo[-1], hi[-1])]
    for t in range(n):
        got = [res.decision(t, k) for k in range(m)]
        assert got == [dec.get((t, k), 0) for k in range(m)], t


def check_sweep(res, h, lo, hi):
    val, dec = reference(h, lo, hi)
    check_values(res, val, dec, lo, hi, h.shape)
    n = h.shape[0]
    if n and hi[-1] > lo[-1]:
        path = res.traceback((n - 1, lo[-1]))
        for t, k, d in path:
            assert lo[t] <= k < hi[t] and d == dec[t, k]


def cuda_backend(monkeypatch, **attrs):
    """The cuda backend's class attributes (its store rules, slab size) set for one test."""
    from gpudp import backends

    for name, value in attrs.items():
        monkeypatch.setattr(type(backends.get("cuda")), name, value)


@settings(max_examples=25)
@given(st.integers(0, 12), st.integers(1, 100), st.integers(0, 2**31 - 1))
def test_active_range_cpu_matches_reference(n, m, seed):
    rng = np.random.default_rng(seed)
    h = rng.integers(0, P, size=(n, m)).astype(np.int64)
    lo, hi = random_ranges(rng, n, m)
    plain = sweep(Ranged(h, lo, hi), backend="cpu", progress=False)
    check_sweep(plain, h, lo, hi)
    bands = sweep(RangedBands(h, lo, hi), backend="cpu", progress=False)
    assert bands.stats.extra["decision_codec"] == "bands"
    check_sweep(bands, h, lo, hi)


def test_no_active_range_computes_every_cell():
    class Full(Ranged):
        def active_range(self):
            return None

    h = np.random.default_rng(3).integers(0, P, size=(6, 40)).astype(np.int64)
    lo, hi = np.zeros(6, np.int64), np.full(6, 40)
    res = sweep(Full(h, lo, hi), backend="cpu", progress=False)
    check_sweep(res, h, lo, hi)


@pytest.mark.sim
def test_active_range_cuda_matches_reference():
    rng = np.random.default_rng(7)
    h = rng.integers(0, P, size=(5, 70)).astype(np.int64)
    lo = np.array([3, 0, 33, 40, 1])
    hi = np.array([60, 31, 64, 40, 70])
    for cls in (Ranged, RangedBands):
        check_sweep(sweep(cls(h, lo, hi), backend="cuda", progress=False), h, lo, hi)


@pytest.mark.sim
def test_plain_memory_store_through_staging(monkeypatch):
    """A decision store past the cuda backend's pinned_store_max is plain memory that the slabs'
    words land in from page-locked staging buffers, on every thread: the same decisions, values and
    path as the reference, in several chunks (slabs of 4 words)."""
    from gpudp.backends.cuda import is_page_locked, run

    cuda_backend(monkeypatch, pinned_store_max=0, slab_words_max=4)
    monkeypatch.setattr(run, "LAND_CHUNK", 3)
    rng = np.random.default_rng(9)
    h = rng.integers(0, P, size=(6, 70)).astype(np.int64)
    lo, hi = np.array([3, 0, 33, 40, 1, 0]), np.array([60, 31, 64, 40, 70, 70])
    res = sweep(Ranged(h, lo, hi), backend="cuda", progress=False)
    assert res.stats.extra["launches"] > 2 and not is_page_locked(res.store.words)
    check_sweep(res, h, lo, hi)


@pytest.mark.gpu
def test_active_range_gpu_matches_cpu_large():
    rng = np.random.default_rng(8)
    n, m = 60, 50_000
    h = rng.integers(0, P, size=(n, m)).astype(np.int64)
    lo, hi = random_ranges(rng, n, m)
    cpu = sweep(RangedBands(h, lo, hi), backend="cpu", progress=False)
    gpu = sweep(RangedBands(h, lo, hi), backend="cuda", progress=False)
    assert np.array_equal(cpu.last_layer[lo[-1] : hi[-1]], gpu.last_layer[lo[-1] : hi[-1]])
    for name in ("lead_n", "band_n", "lead_w", "trail_w"):
        assert np.array_equal(getattr(cpu.store, name), getattr(gpu.store, name)), name
    for t in range(n):
        a, b = cpu.store.band_off[t], gpu.store.band_off[t]
        k = cpu.store.band_n[t]
        assert np.array_equal(cpu.store.words[a : a + k], gpu.store.words[b : b + k])


def test_active_range_is_validated():
    h = np.zeros((3, 10), np.int64)
    for lo, hi, what in (
        ([0, 5, 0], [10, 4, 10], "layer 1"),
        ([0, 0, 0], [10, 11, 10], "layer 1"),
        ([-1, 0, 0], [10, 10, 10], "layer 0"),
        ([0, 0], [10, 10], "one value per layer"),
        ([0.5, 0, 0], [10, 10, 10], "integers"),
    ):
        with pytest.raises(ContractError, match=what):
            sweep(Ranged(h, np.asarray(lo), np.asarray(hi)), backend="cpu")

    class Single(Ranged):
        def active_range(self):
            return 3

    with pytest.raises(ContractError, match="pair"):
        sweep(Single(h, [0] * 3, [10] * 3), backend="cpu")

    class BadCodec(Ranged):
        decision_codec = "zip"

    with pytest.raises(TypeError, match="decision_codec"):
        sweep(BadCodec(h, [0] * 3, [10] * 3), backend="cpu")


def test_codec_option_matches_the_attribute():
    """``sweep(rec, codec=...)`` stores as the class attribute does (the same bands, the same
    decisions), overrides it both ways, and leaves a value-only sweep plain."""
    rng = np.random.default_rng(11)
    h = rng.integers(0, P, size=(7, 150)).astype(np.int64)
    lo, hi = random_ranges(rng, 7, 150)
    attr = sweep(RangedBands(h, lo, hi), backend="cpu", progress=False)
    opt = sweep(Ranged(h, lo, hi), backend="cpu", progress=False, codec="bands")
    assert attr.stats.extra["decision_codec"] == opt.stats.extra["decision_codec"] == "bands"
    for name in ("lead_n", "band_n", "band_off", "lead_w", "trail_w", "words"):
        assert np.array_equal(getattr(attr.store, name), getattr(opt.store, name)), name
    check_sweep(opt, h, lo, hi)
    plain = sweep(RangedBands(h, lo, hi), backend="cpu", progress=False, codec="plain")
    assert plain.stats.extra["decision_codec"] == "plain" and not isinstance(plain.store, BandStore)
    check_sweep(plain, h, lo, hi)
    values = sweep(Ranged(h, lo, hi), backend="cpu", progress=False, codec="bands", traceback=False)
    assert values.stats.extra["decision_codec"] == "plain"
    assert np.array_equal(values.last_layer[lo[-1] : hi[-1]], opt.last_layer[lo[-1] : hi[-1]])


@pytest.mark.parametrize("codec", ["zip", "Bands", 1])
def test_an_unknown_codec_option_is_an_input_error_naming_the_choices(codec):
    h = np.zeros((3, 10), np.int64)
    with pytest.raises(InputError, match="'plain', 'bands'") as e:
        sweep(Ranged(h, [0] * 3, [10] * 3), backend="cpu", codec=codec)
    assert e.value.field == "codec" and repr(codec) in str(e.value)


# ------------------------------------------------------------------------------------------------
# The codec alone


def encode_all(words, lo, hi, bits, budget=None):
    """Band-encode a plain store of the computed groups (LayerLayout over the active groups)."""
    first = lo // 32
    groups = np.where(hi > lo, -(-hi // 32) - first, 0)
    lay = LayerLayout(groups * 32, bits)
    store = BandStore(lo, hi, bits, budget=budget)
    out = np.zeros(max(lay.n_words, 1), np.uint32)
    n = encode_bands(
        words, lay.woff, 0, 0, len(lo), lo, hi, bits,
        store.lead_n, store.band_n, store.band_off, store.lead_w, store.trail_w, out,
    )  # fmt: skip
    store.band_off += store.append(out[:n])
    return store, lay


def expected_bits(words, lay, lo, hi, bits, t, k):
    if not lo[t] <= k < hi[t]:
        return 0
    return layer_decision(words, t, k - (lo[t] // 32) * 32, lay.woff, bits)


def assert_roundtrip(words, lo, hi, bits, budget=None):
    store, lay = encode_all(words, lo, hi, bits, budget)
    m = int(hi.max(initial=0)) + 40
    for t in range(len(lo)):
        got = [band_decision(store.words, t, k, *store.params()) for k in range(m)]
        assert got == [expected_bits(words, lay, lo, hi, bits, t, k) for k in range(m)], t
    return store


def structured_words(rng, lo, hi, bits, kind):
    first = lo // 32
    groups = np.where(hi > lo, -(-hi // 32) - first, 0)
    chunks = []
    for t, g in enumerate(groups):
        a = np.zeros((g, bits), np.uint32)
        if kind == "ones":
            a[:] = 0xFFFFFFFF
        elif kind == "step" and g:  # zeros, a noisy band, ones: the knapsack shape
            i, j = sorted(rng.integers(0, g + 1, 2))
            a[i:j] = rng.integers(0, 2**32, (j - i, bits), dtype=np.uint32)
            a[j:] = 0xFFFFFFFF
        # the cells outside [lo, hi) hold decision 0 in a plain store
        for q in range(g):
            for b in range(32):
                k = (first[t] + q) * 32 + b
                if not lo[t] <= k < hi[t]:
                    a[q] &= np.uint32(~(1 << b) & 0xFFFFFFFF)
        chunks.append(a.ravel())
    return np.concatenate(chunks) if chunks else np.zeros(0, np.uint32)


@settings(max_examples=40)
@given(
    st.integers(1, 8),
    st.integers(1, 300),
    st.integers(1, 3),
    st.sampled_from(["random", "zeros", "ones", "step"]),
    st.integers(0, 2**31 - 1),
)
def test_bands_decode_to_the_plain_bits(n, m, bits, kind, seed):
    rng = np.random.default_rng(seed)
    lo, hi = random_ranges(rng, n, m)
    if kind == "random":
        words = structured_words(rng, lo, hi, bits, "zeros")
        words[:] = rng.integers(0, 2**32, words.size, dtype=np.uint32)
    else:
        words = structured_words(rng, lo, hi, bits, kind)
    store = assert_roundtrip(words, lo, hi, bits)
    if kind in ("zeros", "ones"):
        assert store.size == 0  # one run per layer: nothing stored but the run values


def test_bands_grow_and_spill_to_disk():
    rng = np.random.default_rng(4)
    lo, hi = np.zeros(30, np.int64), np.full(30, 32 * 500)
    words = rng.integers(0, 2**32, 30 * 500, dtype=np.uint32)
    store = assert_roundtrip(words, lo, hi, 1, budget=4096)
    assert store.on_disk and store.size >= 29 * 498
    store.close()


def test_auto_codec_follows_the_active_ranges():
    """With no codec given, narrow active ranges (at most half of the cells) store bands, wide ones the
    plain words; each reads back the reference's decisions."""
    rng = np.random.default_rng(21)
    h = rng.integers(0, P, size=(9, 400)).astype(np.int64)
    lo = np.arange(9) * 20
    narrow = sweep(Ranged(h, lo, lo + 40), backend="cpu", progress=False)
    assert narrow.stats.extra["decision_codec"] == "bands" and isinstance(narrow.store, BandStore)
    check_sweep(narrow, h, lo, lo + 40)
    wide = sweep(Ranged(h, lo, np.full(9, 400)), backend="cpu", progress=False)
    assert wide.stats.extra["decision_codec"] == "plain" and not isinstance(wide.store, BandStore)
    check_sweep(wide, h, lo, np.full(9, 400))
    forced = sweep(Ranged(h, lo, lo + 40), backend="cpu", progress=False, codec="plain")
    assert forced.stats.extra["decision_codec"] == "plain"


def _wide(bits):
    class Wide(Ranged):
        """Ranged's layers with a decision of ``bits`` bits a cell, a known function of the cell:
        each one read back."""

        decision_bits = bits

        @staticmethod
        def cell(t, k, prev, h, lo, hi):
            return h[t, k], h[t, k]

    return Wide


@settings(max_examples=10, deadline=None)
@given(
    bits=st.sampled_from([2, 9, 17, 32]),
    m=st.integers(1, 100),
    n=st.integers(1, 5),
    seed=st.integers(0, 2**31 - 1),
)
def test_wide_decisions_read_back(bits, m, n, seed):
    """Decisions of 2 to 32 bits, active ranges cutting groups of 32 anywhere, the plain codec: every
    cell's decision reads back as the cell gave it, its top bit included."""
    rng = np.random.default_rng(seed)
    h = rng.integers(0, 1 << bits, size=(n, m), dtype=np.int64)
    lo = rng.integers(0, m + 1, n)
    hi = np.maximum(lo, rng.integers(0, m + 1, n))
    res = sweep(_wide(bits)(h, lo, hi), backend="cpu", progress=False, codec="plain")
    for t in range(n):
        for k in range(lo[t], hi[t]):
            assert res.decision(t, k) == h[t, k], (t, k, bits)


@pytest.mark.sim
def test_an_exception_mid_sweep_waits_for_the_streams(monkeypatch, record_streams):
    """A failure inside the chunks' loop (here the landing of a slab into a plain-memory store)
    waits for both streams' kernels and copies before it goes on: they write into the slabs, the
    page-locked staging and the store, which the unwinding lets go of."""
    from gpudp.backends.cuda import run

    def fails(*args):
        raise RuntimeError("a landing failed")

    cuda_backend(monkeypatch, pinned_store_max=0, slab_words_max=4)
    made = record_streams(run.cuda, "stream")
    monkeypatch.setattr(run, "copy_parallel", fails)
    h = np.random.default_rng(3).integers(0, P, size=(6, 70)).astype(np.int64)
    lo, hi = np.zeros(6, np.int64), np.full(6, 70)
    with pytest.raises(RuntimeError, match="a landing failed"):
        sweep(Ranged(h, lo, hi), backend="cuda", progress=False)
    compute, copier = made[:2]
    assert compute.waits >= 1 and copier.waits >= 1


class RangedSteps(Ranged):
    """Ranged with a walk state: the steps taken so far."""

    traceback_state = True

    @staticmethod
    def back(t, k, d, s, h, lo, hi):
        if d == 3:
            return -1, k, s + 1
        return t - 1, min(max(k + (-1 if d == 1 else 1), lo[t - 1]), hi[t - 1] - 1), s + 1


def test_device_store_pulls_each_run_of_missing_pages_once():
    """``ensure`` copies each run of adjacent pages the host lacks in one pull, never a page twice."""
    from gpudp.store import DeviceStore

    device = np.arange(1000, dtype=np.uint32)
    calls = []

    def pull(d, a, b, out):
        calls.append((a, b))
        out[:] = d[a:b]

    st = DeviceStore(1000, device, pull, page_shift=4)
    st.ensure(20, 21)
    st.ensure(100, 150)
    st.ensure(0, 999)
    assert calls == [(16, 32), (96, 160), (0, 16), (32, 96), (160, 1000)]
    assert (st.ensure_all() == device).all() and st.pulled == 4000 and len(calls) == 5


@pytest.mark.sim
def test_device_store_pulls_the_pages_the_walk_reads(monkeypatch):
    """Past pinned_store_max, where the walk's pulls cost less than landing the store, the cuda
    backend leaves the decisions on the device: the kernels write into the store, the walk pulls
    the pages it reads (here 4 words each) and goes on, the same path, states and decisions as
    the reference and the cpu; a decision read alone pulls its page; a tree walk all of them."""
    from gpudp import store

    cuda_backend(monkeypatch, pinned_store_max=0, plain_store_rate=1.0, slab_words_max=4)
    monkeypatch.setattr(store, "PAGE_SHIFT", 2)
    rng = np.random.default_rng(12)
    h = rng.integers(0, P, size=(6, 70)).astype(np.int64)
    lo, hi = np.array([3, 0, 33, 40, 1, 0]), np.array([60, 31, 64, 41, 70, 70])
    res = sweep(RangedSteps(h, lo, hi), backend="cuda", progress=False, codec="plain")
    cpu = sweep(RangedSteps(h, lo, hi), backend="cpu", progress=False, codec="plain")
    assert res.stats.extra["decision_store"] == "device" and cpu.stats.extra["decision_store"] == "memory"
    assert res.stats.extra["launches"] > 2 and "bytes_to_host" not in res.stats.extra
    assert res.stats.bytes_evicted == 0 and cpu.stats.bytes_evicted == res.store.nbytes
    path, end = res.walk((5, 2), 7)
    want, want_end = cpu.walk((5, 2), 7)
    assert path.tolist() == want.tolist() and end.tolist() == want_end.tolist()
    assert path[:, 3].tolist() == list(range(7, 7 + len(path))) and len(path) == 6
    assert 0 < res.store.pulled < res.store.nbytes  # the path's pages, not the store
    val, dec = reference(h, lo, hi)
    assert all(d == dec[t, k] for t, k, d, _ in path)
    check_values(res, val, dec, lo, hi, h.shape)
    fresh = sweep(Ranged(h, lo, hi), backend="cuda", progress=False, codec="plain")
    assert fresh.decision(4, 69) == cpu.decision(4, 69) and fresh.store.pulled == 16
    assert fresh.store.ensure_all() is fresh.store.words and fresh.store.have.all()


@pytest.mark.sim
@pytest.mark.parametrize(
    "attrs",
    [
        {},  # under pinned_store_max: page-locked host memory, its copies asynchronous DMA
        {"pinned_store_max": 0, "plain_store_rate": 1.0, "device_store_share": 0.0},  # no room
        {"pinned_store_max": 0, "plain_store_rate": 1e18},  # the pulls would cost more than landing
    ],
)
def test_decisions_stay_on_the_host_unless_the_device_store_pays(monkeypatch, attrs):
    cuda_backend(monkeypatch, **attrs)
    h = np.random.default_rng(13).integers(0, P, size=(3, 40)).astype(np.int64)
    lo, hi = np.array([0, 5, 2]), np.array([40, 33, 40])
    res = sweep(Ranged(h, lo, hi), backend="cuda", progress=False, codec="plain")
    assert res.stats.extra["decision_store"] == "memory" and res.stats.extra["bytes_to_host"] > 0
    check_sweep(res, h, lo, hi)


@pytest.mark.gpu
def test_device_store_on_the_gpu_equals_the_cpu(monkeypatch):
    """Layers of 200,000 cells whose decisions stay on the GPU (the rule's thresholds lowered, pages
    of 1,024 words): walks from the last layer's first cells pull a page a layer, not the store, and
    equal the cpu's, as do decisions read alone anywhere."""
    from gpudp import store

    cuda_backend(monkeypatch, pinned_store_max=0, plain_store_rate=1.0)
    monkeypatch.setattr(store, "PAGE_SHIFT", 10)
    rng = np.random.default_rng(14)
    n, m = 40, 200_000
    h = rng.integers(0, P, size=(n, m)).astype(np.int64)
    lo, hi = np.zeros(n, np.int64), np.full(n, m)
    gpu = sweep(RangedSteps(h, lo, hi), backend="cuda", progress=False, codec="plain")
    cpu = sweep(RangedSteps(h, lo, hi), backend="cpu", progress=False, codec="plain")
    assert gpu.stats.extra["decision_store"] == "device"
    for k in (0, 1):
        got, want = gpu.walk((n - 1, k), 0), cpu.walk((n - 1, k), 0)
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
    assert 0 < gpu.store.pulled <= 2 * n * 4096  # at most two pages a layer
    for t, k in zip(rng.integers(0, n, 50), rng.integers(0, m, 50), strict=True):
        assert gpu.decision(int(t), int(k)) == cpu.decision(int(t), int(k))
