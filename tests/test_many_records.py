"""sweep_many of record cells and of offsets two cells back, against gpudp.sweep instance by instance.

A record cell (the affine-gap alignment of examples/affine_alignment.py: three int32 fields and a
stateful traceback; a local alignment whose reduction compares the first of two fields of different
types) runs in the batch kernels with its buffers as one array a field (:mod:`gpudp.values`); a grid
reading two cells back (the optimal string alignment distance's (-2, -2)) runs as the unit-offset
record class that carries the wider halo (:mod:`gpudp.grid.wide`), its results the user's own
values. On the cpu backend and in the CUDA simulator (tiny), with paths and values only.
"""

import numpy as np
import pytest
from examples_loader import load_example
from hypothesis import given, settings
from hypothesis import strategies as st
from test_records import RecordLocal
from test_wide_offsets import OSA, osa, path_cost

from gpudp import sweep, sweep_many
from gpudp.backends.cuda import sim_geometry
from gpudp.errors import ContractError

AF = load_example("affine_alignment")


def best_field(rec, value):
    """The walk's start state: the matrix (field) whose value at the last cell is best."""
    return int(np.argmax(list(value)))


def check_against_sweep(recs, backend, traceback=True, states=False):
    """Every instance's values, best cell and path equal to gpudp.sweep's; the batch's result."""
    res = sweep_many(recs, backend=backend, traceback=traceback, start_state=best_field if states else None)
    assert len(res) == len(recs) and not res.errors, res.errors
    values = res.values
    for rec, item, v in zip(recs, res, values, strict=True):
        ref = sweep(rec, backend="cpu")
        R, C = rec.shape()
        assert item.last_row.dtype == ref.last_row.dtype
        assert np.array_equal(item.last_row, ref.last_row) and np.array_equal(item.last_col, ref.last_col)
        assert (item.best_value, item.best_cell) == (ref.best_value, ref.best_cell)
        if not (R and C):
            assert item.value is None and v is None
            continue
        assert item.value == ref.last_row[-1]
        want = ref.last_row[-1]
        assert v == (want.item() if isinstance(want, np.generic) else want)  # a record's: a tuple
        if traceback and type(rec).decision_bits:
            start = ref.best_cell if type(rec).reduce else (R - 1, C - 1)
            path, ex = ref.walk(start, best_field(rec, ref.last_row[-1]) if states else None)
            assert np.array_equal(item.path, path), (item.path, path)
            assert item.exit == tuple(int(x) for x in ex)
        ref.close()
    return res


dna = st.text(alphabet="ACGT", min_size=0, max_size=9)


@settings(max_examples=3, deadline=None)
@given(st.lists(st.tuples(dna, dna), min_size=1, max_size=6), st.booleans())
def test_affine_records_equal_sweep(pairs, traceback):
    check_against_sweep([AF.Gotoh(a, b) for a, b in pairs], "cpu", traceback, states=True)


@settings(max_examples=3, deadline=None)
@given(st.lists(st.tuples(dna, dna), min_size=1, max_size=5))
def test_record_reduction_of_mixed_fields_equals_sweep(pairs):
    check_against_sweep([RecordLocal(a, b) for a, b in pairs], "cpu")


symbols = st.lists(st.integers(0, 2), min_size=0, max_size=9)


@settings(max_examples=4, deadline=None)
@given(st.lists(st.tuples(symbols, symbols), min_size=1, max_size=6))
def test_two_cells_back_equals_the_table_with_its_path(pairs):
    recs = [OSA(a, b) for a, b in pairs]
    res = check_against_sweep(recs, "cpu")
    for (a, b), item in zip(pairs, res, strict=True):
        assert int(item.value) == osa(a, b) and path_cost(item.path, a, b) == osa(a, b)
    assert res[0].last_row.dtype == np.int64  # the user's values, not the carried record
    values = sweep_many(recs, backend="cpu", traceback=False).values
    assert values == [osa(a, b) for a, b in pairs]


@pytest.mark.sim
def test_records_and_two_cells_back_in_the_simulator():
    """The block kernel with a record's diagonals in shared memory (one type a field) and in device
    memory (mixed types, or too large), and the warp kernel of values only."""
    pairs = [("ACGTA", "AGTT"), ("", "AC"), ("A", "T"), ("GAT", "TACG")]
    res = check_against_sweep([AF.Gotoh(a, b) for a, b in pairs], "cuda", states=True)
    info = res.stats.extra["cuda"]
    # (a real GPU's shared memory holds every diagonal here; the simulator's 64 bytes do not)
    assert info["shared_bytes_max"] > 0 and info["device_buffers"] >= sim_geometry(0, 1)
    res = check_against_sweep([AF.Gotoh(a, b) for a, b in pairs], "cuda", traceback=False)
    info = res.stats.extra["cuda"]
    assert info["warp_instances"] == len(pairs) and info["edges_on_device"] == res.stats.extra["chunks"]
    res = check_against_sweep([RecordLocal(a, b) for a, b in pairs[:2]], "cuda")
    assert res.stats.extra["cuda"]["shared_bytes_max"] == 0  # int32 beside int64: device memory
    osa_pairs = [([0, 1, 0, 1], [1, 0, 1, 2, 0]), ([2, 1], [1, 2, 0]), ([], [1])]
    res = check_against_sweep([OSA(a, b) for a, b in osa_pairs], "cuda")
    assert [int(v) for v in res.values] == [osa(a, b) for a, b in osa_pairs]


def test_offsets_three_cells_back_still_refused():
    class Far(OSA):
        offsets = ((-1, 0), (0, -1), (-1, -1), (-3, -3))

    with pytest.raises(ContractError, match=r"within two cells.*gpudp.sweep"):
        sweep_many([Far([1, 2], [2, 1])], backend="cpu")


@pytest.mark.gpu
def test_gpu_record_batches_equal_cpu():
    """Gotoh's record batch at lengths the simulator cannot reach (lanes of 32 rows in the warp
    kernel, diagonals of 1,024 in the block kernel), and the Damerau distance two cells back: the
    GPU's values (and paths) equal the cpu backend's."""
    rng = np.random.default_rng(2026)
    dna = lambda n: "".join(rng.choice(list("ACGT"), n))  # noqa: E731
    queries, choices = [dna(1000) for _ in range(8)], [dna(1001 - k % 3) for k in range(8)]
    template = AF.Gotoh("A", "C")
    for traceback in (False, True):
        got = sweep_many(
            template, "cuda", traceback, queries=queries, choices=choices, start_state=best_field
        )
        want = sweep_many(
            template, "cpu", traceback, queries=queries, choices=choices, start_state=best_field
        )
        assert got.stats.backend == "cuda" and got.values == want.values
        if traceback:
            assert all(np.array_equal(g.path, c.path) for g, c in zip(got, want, strict=True))
    recs = [OSA(rng.integers(0, 3, 700), rng.integers(0, 3, 650)) for _ in range(16)]
    got = sweep_many(recs, backend="cuda")
    assert got.values == sweep_many(recs, backend="cpu").values
    assert all(path_cost(g.path, r.a, r.b) == g.value for g, r in zip(got, recs, strict=True))
