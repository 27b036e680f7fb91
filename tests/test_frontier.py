"""The frontier engine on its own: the host ring and its blocks, compaction and scan, other problems."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import frontier
from gpudp.frontier import BlockPool, BranchProblem, Ring, RingFull

NODE = 2 * 8 + 2 * 4  # bytes of a node of the rings below: int64 f0, f1 and two bit words


def _ring(cap, block, pool=None):
    """A ring of ``cap`` nodes' budget in blocks of ``block`` nodes (of two bit words)."""
    return Ring(np.int64, 2, max_cap=cap, block_bytes=block * NODE, pool=pool)


def _push_range(ring, lo, hi):
    v = np.arange(lo, hi, dtype=np.int64)
    ring.push(v, -v, np.column_stack([v.astype(np.uint32), (v * 7).astype(np.uint32)]))


def _pop_values(ring, count):
    segs = ring.pop(count)
    f0, f1, bits = ring.gather(segs)
    assert np.array_equal(f1, -f0) and np.array_equal(bits[:, 0], f0.astype(np.uint32))
    assert np.array_equal(bits[:, 1], (f0 * 7).astype(np.uint32))
    ring.release(len(f0))
    return f0.tolist()


def test_ring_empty():
    r = _ring(8, 8)
    assert r.available == 0 and r.pop(5) == [] and r.used == 0
    with pytest.raises(ValueError):
        r.release(1)


def test_ring_fifo_wraps_around_through_its_blocks():
    r = _ring(8, 4)
    _push_range(r, 0, 6)
    assert _pop_values(r, 4) == [0, 1, 2, 3]  # the first block is free again: back to the pool
    assert len(r.blocks) == 1 and r.nbytes == 4 * NODE
    _push_range(r, 6, 12)  # 2 left + 6 new = 8 = the whole budget, the freed block taken again
    assert r.used == 8 and r.nbytes == 8 * NODE and (r.new_blocks, r.reused_blocks) == (2, 1)
    segs = r.pop(8)
    assert [len(s.f0) for s in segs] == [4, 4]  # one segment per block
    f0, _, _ = r.gather(segs)
    assert f0.tolist() == list(range(4, 12))
    r.release(8)
    assert r.available == 0 and r.used == 0 and not r.blocks


def test_ring_full_raises_and_keeps_content():
    r = Ring(np.int64, 2, max_cap=5)  # one block: the whole budget
    _push_range(r, 0, 5)
    with pytest.raises(RingFull):
        _push_range(r, 5, 6)
    assert _pop_values(r, 10) == [0, 1, 2, 3, 4]


def test_ring_full_counts_whole_blocks():
    r = _ring(8, 4)
    _push_range(r, 0, 8)
    with pytest.raises(RingFull):
        _push_range(r, 8, 9)
    assert _pop_values(r, 1) == [0]
    with pytest.raises(RingFull):  # the first block still holds 1, 2, 3: it is not free
        _push_range(r, 8, 9)
    assert _pop_values(r, 3) == [1, 2, 3]
    _push_range(r, 8, 12)
    assert _pop_values(r, 100) == list(range(4, 12))


def test_ring_popped_slots_stay_reserved_until_release():
    r = _ring(4, 2)
    _push_range(r, 0, 4)
    segs = r.pop(2)
    with pytest.raises(RingFull):  # the popped two may still be read by an async copy
        _push_range(r, 4, 5)
    r.release(sum(len(s.f0) for s in segs))
    _push_range(r, 4, 6)
    assert _pop_values(r, 4) == [2, 3, 4, 5]


def test_ring_grows_block_by_block_without_moving_nodes():
    r = _ring(100, 4)
    _push_range(r, 0, 4)
    first = r.blocks[0].buf
    assert _pop_values(r, 3) == [0, 1, 2]
    _push_range(r, 4, 7)
    _push_range(r, 7, 20)  # grows: 5 blocks in all, the first one where it was
    assert len(r.blocks) == 5 and r.blocks[0].buf is first and r.new_blocks == 5
    assert r.largest_bytes == 5 * 4 * NODE
    assert _pop_values(r, 100) == list(range(3, 20))


def test_ring_segments_stay_inside_blocks():
    r = _ring(40, 4)
    _push_range(r, 0, 10)
    _push_range(r, 10, 17)
    segs = r.pop(3) + r.pop(9)
    assert [len(s.f0) for s in segs] == [3, 1, 4, 4]
    bufs = [b.buf for b in r.blocks]
    for s, owner in zip(segs, [0, 0, 1, 2], strict=True):  # each a view of its own block
        assert all(np.shares_memory(a, bufs[owner]) for a in s)
        assert not any(np.shares_memory(s.f0, bufs[j]) for j in range(len(bufs)) if j != owner)
    assert r.gather(segs)[0].tolist() == list(range(12))


def test_ring_takes_a_new_block_when_the_stride_grows():
    r = _ring(16, 4)
    v = np.arange(6, dtype=np.int64)
    r.push(v[:3], -v[:3], np.full((3, 1), 5, np.uint32))  # one word per node
    r.push(v[3:], -v[3:], np.column_stack([v[3:], 7 * v[3:]]).astype(np.uint32))  # two
    assert [b.stride for b in r.blocks] == [1, 2] and r.blocks[0].filled == 3
    segs = r.pop(6)
    assert [s.bits.shape for s in segs] == [(3, 1), (3, 2)]
    f0, f1, bits = r.gather(segs)
    assert f0.tolist() == list(range(6)) and np.array_equal(f1, -f0)
    assert bits[:3].tolist() == [[5, 0]] * 3 and bits[3:, 1].tolist() == [21, 28, 35]


def test_ring_stride_one_blocks_hold_more_nodes():
    r = _ring(4, 4)  # 96 B blocks: 4 nodes of 2 words, 4 of 1 word (20 B, rounded down)
    v = np.arange(4, dtype=np.int64)
    r.push(v, v, np.zeros((4, 1), np.uint32))
    assert len(r.blocks) == 1 and r.blocks[0].cap == 96 // 20


def test_block_pool_is_reused_across_rings_and_trimmed_to_the_budget():
    pool = BlockPool()
    r = _ring(40, 4, pool)
    _push_range(r, 0, 10)
    r.close()
    assert r.used == 0 and pool.nbytes == 3 * 4 * NODE
    r2 = _ring(40, 4, pool)
    _push_range(r2, 0, 12)
    assert (r2.new_blocks, r2.reused_blocks) == (0, 3) and pool.nbytes == 0
    assert _pop_values(r2, 12) == list(range(12))  # released blocks go back at once
    assert pool.nbytes == 3 * 4 * NODE
    _ring(8, 4, pool)  # a smaller budget: the pool keeps no more than it
    assert pool.nbytes == 8 * NODE
    pool.give(np.empty(2 * NODE, np.uint8))
    _ring(6, 2, pool)  # 10 nodes' worth for a budget of 6: blocks of the other size go first
    assert pool.nbytes == 6 * NODE and len(pool.spare[4 * NODE]) == 1 and len(pool.spare[2 * NODE]) == 1
    pool.trim(0)
    assert not pool.spare


@settings(max_examples=60)
@given(
    st.lists(st.tuples(st.booleans(), st.integers(0, 9)), max_size=40), st.integers(1, 4), st.integers(1, 4)
)
def test_ring_matches_a_queue(ops, block, nblocks):
    """A model: block j of the ring holds nodes base + j*block ...; ``base`` restarts when it empties."""
    cap = block * nblocks
    r = _ring(cap, block)
    model, nxt, base = [], 0, 0
    for is_push, k in ops:
        if is_push:
            start = nxt - len(model)
            if not model:
                base = start
            need = -(-(nxt + k - base) // block) - (start - base) // block
            if k and need > nblocks:
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
        assert r.available == len(model) and r.nbytes <= cap * NODE


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


def _window_child(level, cnt, tot, take, data, nvars):
    """Take at most one variable, only at levels data[0, 0] .. data[0, 1] - 1 (value 100 - level):
    the frontier widens there. The value counts as a lower bound at the last level only, so the
    incumbent comes out of the last level's kernels with its decisions carried through the ring."""
    ok = take == 0 or (cnt == 0 and data[0, 0] <= level < data[0, 1])
    s = tot + take * (100 - level)
    return ok, cnt + take, s, s + 100, s if level == nvars - 1 else 0


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.sim)])
def test_engine_streams_across_blocks_and_a_stride_change(backend):
    """Levels 31..35 hold 3..7 nodes: batches of 3 stream through ring blocks of 2 nodes (so batches
    and pushes span blocks), across the change from one bit word per node to two (level 33)."""
    prob = BranchProblem(36, np.array([[29, 36]], np.int64), _window_child)
    budget = 16 * (2 * 8 + 2 * 4)  # 16 nodes of two words: blocks of an eighth, 2 nodes
    res = frontier.solve(
        prob, backend=backend, batch=3, cpu_threshold=3, threads=32, host_budget_bytes=budget
    )
    st = res.stats
    assert res.complete and res.best == 71 and res.level == 35
    assert res.decisions().nonzero()[0].tolist() == [29]  # bit 29 of word 0 kept through stride 2
    assert st["host_block_bytes"] == 48 and st["largest_frontier"] == 7 and st["nodes_explored"] == 57
    if backend == "cuda":
        assert st["streamed_levels"] == 4 and st["bytes_h2d"] > 0 and st["bytes_d2h"] > 0
        again = frontier.solve(prob, backend="cuda", cpu_threshold=10**9, host_budget_bytes=budget)
        assert again.best == 71 and again.stats["host_blocks_new"] == 0  # the pool's blocks, reused
        assert again.stats["host_blocks_reused"] > 0


def _doubling_child(level, f0, f1, take, data, nvars):
    """Only the 'leave' son before level data[0, 0], both sons from there on; nothing is pruned."""
    c0 = f0 + take
    return take == 0 or level >= data[0, 0], c0, f1 + take * level, c0 + nvars, c0


def _stream_doubling(k, batch, budget):
    """1024 variables (32 bit words per node at the end), the frontier doubling over the last k + 1
    levels; levels up to a batch on the host, so every byte counted moves in a streamed level."""
    s = 1023 - k
    prob = BranchProblem(1024, np.array([[s]], np.int64), _doubling_child)
    res = frontier.solve(prob, "cuda", budget, batch, cpu_threshold=batch + 1)
    st = res.stats
    assert res.complete and res.best == k + 1 and res.fields == (k + 1, sum(range(s, 1024)))
    assert res.decisions().nonzero()[0].tolist() == list(range(s, 1024))  # the one all-take leaf
    assert st["largest_frontier"] == 1 << k and st["nodes_explored"] == s + (1 << (k + 1)) - 1
    streamed = [1 << j for j in range(k + 1) if 1 << j > batch]
    assert st["streamed_levels"] == len(streamed)
    assert st["bytes_h2d"] == 144 * sum(streamed) and st["bytes_d2h"] == 144 * sum(streamed[1:])
    return st


@pytest.mark.gpu
def test_gpu_streams_through_many_ring_blocks():
    """On the device, asynchronous for real: 2^15 nodes of 144 B stream in batches of 4096 through
    ring blocks of about 2 MiB (batches and pushes straddle blocks); every node and byte counts."""
    st = _stream_doubling(15, 1 << 12, 16 << 20)
    assert st["host_block_bytes"] // 144 < 4 << 12 and st["seconds_swap"] > 0  # < 4 batches a block


def test_a_lease_takes_the_smallest_spare_block_and_gives_it_back_when_dropped():
    pool = BlockPool()
    pool.give(np.empty(400, np.uint8))
    pool.give(np.empty(100, np.uint8))
    a = pool.lease(20, np.uint32)  # 80 bytes: the 100-byte block
    assert a.shape == (20,) and a.dtype == np.uint32 and sorted(pool.spare) == [400]
    view = a[5:]
    view[:] = 7
    del a
    assert 100 not in pool.spare  # a view still holds the lease
    del view
    # given back: the pool keeps max(keep = 0, 100) bytes, blocks of other sizes freed first
    assert pool.spare == {100: pool.spare[100]} and pool.nbytes == 100
    pool.keep = 1000  # a ring's budget: both blocks are worth keeping
    pool.give(np.empty(400, np.uint8))
    b = pool.lease(50)  # 200 bytes: the 400-byte block
    assert sorted(pool.spare) == [100]
    del b
    assert pool.nbytes == 500
    c = pool.lease(1000)  # no spare block holds it: a new one
    assert c.nbytes == 4000 and pool.nbytes == 500


@pytest.mark.sim
def test_a_batch_the_gpu_cannot_hold_is_refused_before_allocating():
    from gpudp import InputError

    data = np.zeros((2, 4), np.int64)
    data[0] = [3, 2, 2, 1]
    data[1, 0] = 2
    prob = BranchProblem(4, data, _cardinality_child)
    with pytest.raises(InputError, match="batch: a batch of 1000000000000000 nodes needs .* lower batch"):
        frontier.solve(prob, backend="cuda", batch=10**15, threads=32)
