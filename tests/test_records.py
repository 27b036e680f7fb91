"""Record cells (gpudp.values): several named fields a cell, each of its own type, kept as
structure of arrays. Against independent references on the cpu and the CUDA simulator; the
contract's errors; the macro expansion that keeps scalar kernels as they were."""

import numpy as np
import pytest
from examples_loader import load_example
from hypothesis import given, settings
from hypothesis import strategies as st

from gpudp import ContractError, GridRecurrence, LayeredRecurrence, sweep
from gpudp.values import expand

counting = load_example("alignment_count")
gotoh = load_example("affine_alignment")


def count_reference(a: str, b: str) -> tuple[int, int]:
    """Edit distance and the number of optimal alignments, Python integers (no cap)."""
    n, m = len(a), len(b)
    D = [[0] * (m + 1) for _ in range(n + 1)]
    N = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        for j in range(m + 1):
            if i == 0 and j == 0:
                N[i][j] = 1
                continue
            cands = []
            if i:
                cands.append((D[i - 1][j] + 1, N[i - 1][j]))
            if j:
                cands.append((D[i][j - 1] + 1, N[i][j - 1]))
            if i and j:
                cands.append((D[i - 1][j - 1] + (a[i - 1] != b[j - 1]), N[i - 1][j - 1]))
            D[i][j] = min(d for d, _ in cands)
            N[i][j] = sum(c for d, c in cands if d == D[i][j])
    return D[n][m], N[n][m]


@settings(max_examples=15)
@given(st.text("ACG", max_size=12), st.text("ACG", max_size=12))
def test_count_cpu_matches_reference(a, b):
    d, n, exact = counting.count(a, b, backend="cpu")
    assert (d, n) == count_reference(a, b) and exact


def test_count_tiles_and_saturation():
    """Several tiles (the record's fields cross tile edges), and a count past 2^62 saturates."""
    rng = np.random.default_rng(3)
    a = "".join(rng.choice(list("AC"), 150))
    b = "".join(rng.choice(list("AC"), 140))
    ref = count_reference(a, b)
    d, n, exact = counting.count(a, b, backend="cpu", tile=(16, 32))
    assert d == ref[0]
    assert n == min(ref[1], counting.CAP) and exact == (ref[1] < counting.CAP)
    d, n, exact = counting.count("A" * 70, "A" * 35, backend="cpu")  # C(70, 35) > 2^62
    assert (d, n, exact) == (35, counting.CAP, False)


@pytest.mark.sim
def test_count_cuda():
    d, n, exact = counting.count("GATTACA", "GCATG", backend="cuda")
    assert (d, n) == count_reference("GATTACA", "GCATG")


class RecordLocal(GridRecurrence):
    """Smith-Waterman with a record (score, length of the alignment ending here) and a reduction
    by the first field: its best cell must be the scalar example's."""

    value_dtype = np.dtype([("h", np.int32), ("n", np.int64)])
    offsets = ((-1, 0), (0, -1), (-1, -1))
    reduce = "max"

    def __init__(self, a, b):
        self.a = np.frombuffer(a.encode(), np.uint8)
        self.b = np.frombuffer(b.encode(), np.uint8)

    def shape(self):
        return len(self.a), len(self.b)

    def data(self):
        return self.a, self.b

    @staticmethod
    def cell(i, j, up, left, diag, a, b):
        h, n = diag[0] + (3 if a[i] == b[j] else -3), diag[1] + 1
        if up[0] - 2 > h:
            h, n = up[0] - 2, up[1] + 1
        if left[0] - 2 > h:
            h, n = left[0] - 2, left[1] + 1
        if h <= 0:
            return 0, 0
        return h, n

    @staticmethod
    def boundary(i, j, a, b):
        return 0, 0


local = load_example("local_alignment")


@settings(max_examples=10)
@given(st.text("ACGT", max_size=40), st.text("ACGT", max_size=40))
def test_record_reduction_is_by_the_first_field(a, b):
    rec = sweep(RecordLocal(a, b), backend="cpu", tile=(8, 32))
    ref = sweep(local.SmithWaterman(a, b), backend="cpu", traceback=False)
    assert rec.best_value == ref.best_value and rec.best_cell == ref.best_cell


@pytest.mark.sim
def test_record_reduction_cuda():
    a, b = "TGTTACGGAT", "GGTTGACTAT"
    rec = sweep(RecordLocal(a, b), backend="cuda")
    ref = sweep(local.SmithWaterman(a, b), backend="cpu", traceback=False)
    assert rec.best_value == ref.best_value and rec.best_cell == ref.best_cell
    assert rec.last_row.dtype == RecordLocal.value_dtype


def test_gotoh_record_checkpoints_cpu():
    """A record cell's checkpoints (one array per field) and the blocks swept again from them give
    the full store's alignment (the cuda kernels' checkpoints: the GPU test below; in the simulator
    a grid with checkpoints takes half a minute)."""
    rng = np.random.default_rng(3)
    a, b = ("".join(rng.choice(list("ACGT"), n)) for n in (150, 130))
    full = gotoh.align(a, b, backend="cpu")
    ck = gotoh.align(a, b, backend="cpu", store="checkpoints", checkpoint_every=32, tile=(32, 32))
    assert ck[:2] == full[:2] and ck[-1].extra["checkpoint_bytes"] > 0


@pytest.mark.gpu
def test_gotoh_record_checkpoints_cuda():
    """The same on the GPU."""
    rng = np.random.default_rng(3)
    a, b = ("".join(rng.choice(list("ACGT"), n)) for n in (700, 650))
    full = gotoh.align(a, b, backend="cpu")
    ck = gotoh.align(a, b, backend="cuda", store="checkpoints", checkpoint_every=256, tile=(128, 256))
    assert ck[:2] == full[:2] and ck[-1].extra["checkpoint_bytes"] > 0


@pytest.mark.gpu
def test_gotoh_record_gpu_equals_cpu():
    rng = np.random.default_rng(7)
    a = "".join(rng.choice(list("ACGT"), 3000))
    b = "".join(rng.choice(list("ACGT"), 2500))
    assert gotoh.align(a, b, backend="cuda")[:2] == gotoh.align(a, b, backend="cpu")[:2]
    ck = gotoh.align(a, b, backend="cuda", store="checkpoints", checkpoint_every=1024)
    assert ck[:2] == gotoh.align(a, b, backend="cpu")[:2]


# -- the contract ---------------------------------------------------------------------------------


def _grid(**attrs):
    base = {
        "value_dtype": np.dtype([("a", np.int32), ("b", np.int32)]),
        "offsets": ((-1, 0), (0, -1)),
        "shape": lambda self: (3, 3),
        "cell": staticmethod(lambda i, j, up, left: (up[0] + 1, left[1] + 1)),
        "boundary": staticmethod(lambda i, j: (0, 0)),
    }
    base.update(attrs)
    return type("G", (GridRecurrence,), base)()


def test_record_contract_errors():
    with pytest.raises(ContractError, match="field 'a'"):
        sweep(_grid(value_dtype=np.dtype([("a", np.int8), ("b", np.int32)])), backend="cpu")
    with pytest.raises(ContractError, match="fill"):
        sweep(_grid(fill=(1, 2, 3)), backend="cpu")
    with pytest.raises(ContractError, match="tuple of 2 numbers"):
        sweep(_grid(cell=staticmethod(lambda i, j, up, left: up[0] + 1)), backend="cpu")
    with pytest.raises(ContractError, match="record cells run on grids swept by tiles"):
        sweep(
            _grid(offsets=((-1, 1), (-1, 0), (-1, -1)), cell=staticmethod(lambda i, j, x, y, z: x)),
            backend="cpu",
        )
    r = sweep(_grid(), backend="cpu")  # a record without decisions: a plain value sweep
    assert r.last_row.dtype.names == ("a", "b") and r.last_row["a"].tolist() == [3, 3, 3]


def test_layered_record_refused():
    class L(LayeredRecurrence):
        value_dtype = np.dtype([("a", np.int32), ("b", np.int64)])

        def num_layers(self):
            return 2

        def layer_size(self, t):
            return 4

        @staticmethod
        def cell(t, k, prev):
            return prev[k] + 1

    with pytest.raises(ContractError, match="record"):
        sweep(L(), backend="cpu")


def test_macros_leave_scalar_source_alone_and_split_records():
    class S:
        value_dtype = np.int32
        fill = 0

    class R:
        value_dtype = np.dtype([("a", np.int32), ("b", np.float64)])
        fill = 0

    src = "ST(ck, (m, i0 + 1), LD(up, jj + 1))\nx = SHUP(v)\ny = SHFL(t, (s + 1))"
    scalar = "ck[m, i0 + 1] = up[jj + 1]\nx = cuda.shfl_up_sync(FULL, v, 1)\n"
    assert expand(src, S) == scalar + "y = cuda.shfl_sync(FULL, t, (s + 1))"
    out = expand(src, R)
    assert "ck[0][m, i0 + 1] = st_[0]; ck[1][m, i0 + 1] = st_[1]" in out
    assert "cuda.shfl_sync(FULL, t[1], (s + 1))" in out
