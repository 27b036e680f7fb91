"""The frontier engine on its own: the circular buffer, the compaction and scan, a non-knapsack problem."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import frontier
from gpudp.frontier import BranchProblem, Ring, RingFull


def _push_range(ring, lo, hi):
    v = np.arange(lo, hi, dtype=np.int64)
    bits = np.vstack([v.astype(np.uint32), (v * 7).astype(np.uint32)])
    ring.push(v, -v, bits)


def _pop_values(ring, count):
    segs = ring.pop(count)
    f0, f1, bits = ring.gather(segs)
    assert np.array_equal(f1, -f0) and np.array_equal(bits[0], f0.astype(np.uint32))
    assert np.array_equal(bits[1], (f0 * 7).astype(np.uint32))
    ring.release(len(f0))
    return f0.tolist()


def test_ring_empty():
    r = Ring(np.int64, 2, max_cap=8, initial=8)
    assert r.available == 0 and r.pop(5) == [] and r.used == 0
    with pytest.raises(ValueError):
        r.release(1)


def test_ring_fifo_wraps_around():
    r = Ring(np.int64, 2, max_cap=8, initial=8)
    _push_range(r, 0, 6)
    assert _pop_values(r, 4) == [0, 1, 2, 3]
    _push_range(r, 6, 12)  # tail wraps: 2 left + 6 new = 8 = full
    assert r.used == 8 and r.cap == 8
    segs = r.pop(8)
    assert len(segs) == 2  # the popped region spans the end of the storage
    f0, _, _ = r.gather(segs)
    assert f0.tolist() == list(range(4, 12))
    r.release(8)
    assert r.available == 0 and r.used == 0


def test_ring_full_raises_and_keeps_content():
    r = Ring(np.int64, 2, max_cap=5, initial=5)
    _push_range(r, 0, 5)
    with pytest.raises(RingFull):
        _push_range(r, 5, 6)
    assert _pop_values(r, 10) == [0, 1, 2, 3, 4]


def test_ring_popped_slots_stay_reserved_until_release():
    r = Ring(np.int64, 2, max_cap=4, initial=4)
    _push_range(r, 0, 4)
    segs = r.pop(2)
    with pytest.raises(RingFull):  # the popped two may still be read by an async copy
        _push_range(r, 4, 5)
    r.release(sum(b - a for a, b in segs))
    _push_range(r, 4, 6)
    assert _pop_values(r, 4) == [2, 3, 4, 5]


def test_ring_grows_by_doubling_keeping_order_across_a_wrap():
    r = Ring(np.int64, 2, max_cap=100, initial=4)
    _push_range(r, 0, 4)
    assert _pop_values(r, 3) == [0, 1, 2]
    _push_range(r, 4, 7)  # wraps inside the 4-slot storage
    _push_range(r, 7, 20)  # grows
    assert r.cap >= 17
    assert _pop_values(r, 100) == list(range(3, 20))


@settings(max_examples=40)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 9)), max_size=40), st.integers(1, 12))
def test_ring_matches_a_queue(ops, cap):
    r = Ring(np.int64, 2, max_cap=cap, initial=1)
    model, nxt = [], 0
    for is_push, k in ops:
        if is_push:
            if len(model) + k > cap:
                with pytest.raises(RingFull):
                    _push_range(r, nxt, nxt + k)
            else:
                _push_range(r, nxt, nxt + k)
                model += list(range(nxt, nxt + k))
                nxt += k
        else:
            got = _pop_values(r, k)
            assert got == model[:k]
            model = model[k:]
        assert r.available == len(model)


def test_compact_cpu():
    v = np.arange(10)
    f = (v % 3 == 0).astype(np.int8)
    assert frontier.compact(v, f, backend="cpu").tolist() == [0, 3, 6, 9]


@pytest.mark.sim
@pytest.mark.parametrize("m", [0, 1, 31, 70, 97])
def test_compact_on_device_several_blocks(m):
    rng = np.random.default_rng(m)
    v = rng.integers(-1000, 1000, m)
    f = rng.integers(0, 2, m).astype(np.int8)
    if m == 70:
        f[:] = 1  # full
    if m == 31:
        f[:] = 0  # empty output
    got = frontier.compact(v, f, backend="cuda", threads=32)
    assert got.tolist() == v[f != 0].tolist()


@pytest.mark.sim
def test_exclusive_scan_more_blocks_than_threads():
    counts = np.random.default_rng(1).integers(0, 65, 77)  # 77 > 32 threads: the chunk loop carries
    off, total = frontier.exclusive_scan(counts, threads=32)
    assert total == counts.sum()
    assert off.tolist() == (np.cumsum(counts) - counts).tolist()


# A problem that is not a knapsack: pick at most K of n non-negative values, maximise the sum.
# f0 = items picked so far, f1 = their sum; data[0] = values sorted decreasingly, data[1,0] = K.
def _cardinality_child(level, cnt, tot, take, data, nvars):
    k = data[1, 0]
    c = cnt + take
    s = tot + take * data[0, level]
    if c > k:
        return False, c, s, s, s
    ub = s
    lb = s
    room = k - c
    for t in range(level + 1, nvars):
        if room <= 0:
            break
        ub += data[0, t]
        lb += data[0, t]
        room -= 1
    return True, c, s, ub, lb


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.sim)])
def test_engine_runs_another_problem(backend):
    vals = np.array([9, 7, 7, 4, 2, 1], np.int64)
    k = 3
    data = np.zeros((2, len(vals)), np.int64)
    data[0] = vals
    data[1, 0] = k
    prob = BranchProblem(len(vals), data, _cardinality_child)
    res = frontier.solve(
        prob, backend=backend, cpu_threshold=0, batch=2, threads=32 if backend == "cuda" else None
    )
    best = max(sum(c) for r in range(k + 1) for c in itertools.combinations(vals.tolist(), r))
    assert res.complete and res.best == best == 23
    x = res.decisions()
    assert int(vals[: res.level + 1][x == 1].sum()) == res.fields[1]
    assert res.stats["nodes_explored"] > 0


def _loose_child(level, cnt, tot, take, data, nvars):
    """The same problem with a weak bound (all remaining values): wide frontiers."""
    c = cnt + take
    s = tot + take * data[0, level]
    if c > data[1, 0]:
        return False, c, s, s, s
    ub = s
    for t in range(level + 1, nvars):
        ub += data[0, t]
    return True, c, s, ub, s


def test_engine_time_limit_and_budget_stop():
    vals = np.arange(20, 0, -1, dtype=np.int64)
    data = np.zeros((2, 20), np.int64)
    data[0] = vals
    data[1, 0] = 10
    prob = BranchProblem(20, data, _loose_child)
    assert frontier.solve(prob, backend="cpu").best == sum(range(11, 21))
    res = frontier.solve(prob, backend="cpu", time_limit=0.0)
    assert not res.complete and "time limit" in res.message
    small = frontier.solve(prob, backend="cpu", host_budget_bytes=16 * 50)
    assert not small.complete and "host budget" in small.message and small.best is not None
    with pytest.raises(RingFull):
        frontier.solve(prob, backend="cpu", host_budget_bytes=5)
