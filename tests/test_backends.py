"""Backend choice: ``auto`` keeps small work on the CPU without starting CUDA."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from gpudp import backends
from gpudp.errors import BackendError, InputError


def test_unknown_backend_is_refused():
    with pytest.raises(BackendError, match="unknown backend 'gpu'"):
        backends.choose("gpu")


def test_explicit_backends_are_kept():
    assert backends.choose("cpu", work=1e15) == ("cpu", "cpu: asked for")


@pytest.mark.parametrize("work", [0, 1, 1e6])
def test_small_work_stays_on_the_cpu(work):
    name, why = backends.choose("auto", work)
    assert name == "cpu" and why.startswith("auto: cpu,") and "predicted" in why


def test_the_crossover_follows_the_model(monkeypatch):
    """Below the GPU's start-up in predicted CPU seconds: cpu; above it the GPU when one is usable."""
    monkeypatch.setattr(backends, "cpu_threads", lambda: 4)
    monkeypatch.setattr(backends, "cuda_started", lambda: False)
    monkeypatch.setattr(backends, "cuda_usable", lambda: True)
    monkeypatch.setenv("GPUDP_GPU_START_S", "1.0")
    monkeypatch.setenv("GPUDP_CPU_CELL_RATE", "1e8")
    # 4 threads x 1e8 cells/s: 4e8 cells take 1 s on the CPU, and the GPU 1 s + 4e8 / 5e10 s
    assert backends.choose("auto", 3.9e8)[0] == "cpu"
    assert backends.choose("auto", 4.1e8)[0] == "cuda"
    # once CUDA is started in this process a GPU solve costs launches: the crossover moves down
    monkeypatch.setattr(backends, "cuda_started", lambda: True)
    assert backends.choose("auto", 4e7)[0] == "cuda"
    assert backends.choose("auto", 1e6)[0] == "cpu"
    # unknown work: the GPU when usable, the CPU otherwise
    assert backends.choose("auto")[0] == "cuda"
    monkeypatch.setattr(backends, "cuda_usable", lambda: False)
    monkeypatch.setattr(backends, "unavailable_reason", lambda: "no GPU here")
    name, why = backends.choose("auto", 1e12)
    assert name == "cpu" and why.startswith("auto: cpu, no usable GPU (no GPU here); 1e+12 cells of grid")
    assert why.endswith("at 4e+08 cells/s GPUDP_CPU_CELL_RATE")  # the rate used, and where it came from


@pytest.mark.parametrize("value", ["fast", "-1", "nan"])
def test_nonsense_calibration_is_refused(monkeypatch, value):
    monkeypatch.setenv("GPUDP_GPU_START_S", value)
    with pytest.raises(BackendError, match="GPUDP_GPU_START_S"):
        backends.choose("auto", 1e6)


def test_a_small_auto_solve_never_imports_the_cuda_compiler():
    """The start-up being saved is mostly ``import numba.cuda``: a small solve must not pay it."""
    code = (
        "import sys, numpy as np\n"
        "from gpudp.problems import lcs\n"
        "a, b = np.array([0, 1, 2, 3], np.uint8), np.array([1, 2, 3], np.uint8)\n"
        "s = lcs.solve(a, b, method='wavefront')\n"  # the engine's auto
        "t = lcs.solve(a, b)\n"  # the method's auto, which weighs the engine's backends too
        "print(s.value, s.stats.backend, s.stats.extra['backend_choice'].split(',')[0],\n"
        "      t.value, t.stats.backend, 'numba.cuda' in sys.modules)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["3", "cpu", "auto:", "cpu", "3", "cpu", "False"]


def test_backends_register_and_answer_the_engine():
    cpu = backends.get("cpu")
    assert cpu.name == "cpu" and cpu.memory() is None and cpu.available()
    assert cpu.fit_tile(cpu.default_tile, 5, 40) == (5, 64)
    assert cpu.allocate_words(3).dtype == np.uint32
    assert backends.device_name("cpu") == cpu.device_name()
    with pytest.raises(BackendError, match="unknown backend"):
        backends.get("tpu")


def test_the_plan_gives_the_memory_before_the_sweep(monkeypatch):
    from gpudp import engine, memory
    from gpudp.problems import lcs

    rec = lcs.LCSRecurrence(np.zeros(3000, np.uint8), np.zeros(4000, np.uint8))
    plan = engine.plan_sweep(rec, "cpu")
    need = plan.memory()
    assert need.decisions == plan.layout.n_words * 4 and need.device == 0 and not need.spill
    assert need.host >= need.values > 0 and need.disk == 0 and need.host_total == need.host + need.decisions
    spilled = plan.memory(memory_budget=0)
    assert spilled.spill and spilled.disk == need.decisions and spilled.host_total == need.host
    # the engine refuses what this process cannot hold, before any kernel runs
    monkeypatch.setattr("gpudp.checks.available_memory", lambda: need.host - 1)
    with pytest.raises(InputError, match="host memory"):
        lcs.solve(np.zeros(3000, np.uint8), np.zeros(4000, np.uint8), backend="cpu", method="wavefront")
    assert memory.available_memory() > need.host  # the real figure was not touched


@pytest.mark.parametrize("shape", [(3000, 4000), (70, 9000), (1, 1)])
@pytest.mark.parametrize("limit", [1, 1000, 1 << 20])
def test_the_planned_slab_holds_every_chunk(shape, limit):
    """The slab the memory plan counts (``Backend.slab_words``) holds every chunk the backend cuts
    (``Backend.chunk_limits``), whatever the slab limit."""
    from gpudp import engine
    from gpudp.problems import lcs

    be = type("Small", (backends.Backend,), {"name": "small", "slab_words_max": limit})()
    rec = lcs.LCSRecurrence(np.zeros(shape[0], np.uint8), np.zeros(shape[1], np.uint8))
    plan = engine.plan_sweep(rec, "cpu", tile=(32, 64))
    lay = plan.layout
    widest = max(lay.words_of(d, d + 1)[1] - lay.words_of(d, d + 1)[0] for d in range(plan.n_units))
    assert widest == min(lay.ni, lay.nj) * lay.words_per_tile
    plan.make_chunks(*be.chunk_limits(plan))
    assert plan.max_chunk_words() <= be.slab_words(lay.n_words, widest)
    assert plan.memory().slab_words == backends.get("cpu").slab_words(lay.n_words, widest)


def test_layered_memory_is_exact_at_any_size():
    from gpudp.footprint import layered_memory

    huge = [10**40, 3 * 10**40]
    need = layered_memory(huge, 5, 4, 1, "cpu", "plain", 0)
    assert need.values == 2 * 3 * 10**40 * 4
    assert need.decisions == sum(-(-x // 32) * 5 for x in huge) * 4 and need.spill


def test_a_layered_plan_counts_what_its_layout_holds():
    from gpudp import engine
    from gpudp.problems.knapsack import dp as kd

    w = np.array([3, 5, 7, 11] * 10)
    rec = kd.KnapsackDP(w, w + 1, 100, np.int32)
    plan = engine.plan_sweep(rec, "cpu", codec="bands")  # as the knapsack solver sweeps it
    need = plan.memory()
    assert need.decisions == plan.layout.n_words * 4  # bands: at most every computed word
    assert need.values == 2 * 101 * 4
    assert engine.plan_sweep(rec, "cpu").memory().decisions == len(w) * 4 * 4  # plain: 4 groups of 32


def test_cpu_cells_with_and_without_numba_runtime():
    """The cpu kernels compile the user's cell without numba's reference counting (fast), and take
    the runtime when the cell needs it (it allocates): both give the plain loop's edit distance, on
    the tiled and the layered schedule (a knapsack there)."""
    from gpudp import GridRecurrence, LayeredRecurrence, sweep

    a = np.frombuffer(b"GATTACAGATTACA", np.uint8)
    b = np.frombuffer(b"TACCAGTA", np.uint8)

    def plain():
        d = np.zeros((len(a) + 1, len(b) + 1), np.int64)
        d[:, 0], d[0, :] = np.arange(len(a) + 1), np.arange(len(b) + 1)
        for i in range(1, len(a) + 1):
            for j in range(1, len(b) + 1):
                d[i, j] = min(d[i - 1, j] + 1, d[i, j - 1] + 1, d[i - 1, j - 1] + (a[i - 1] != b[j - 1]))
        return d

    class Lean(GridRecurrence):
        value_dtype = np.int64
        offsets = ((-1, 0), (0, -1), (-1, -1))

        def shape(self):
            return len(a) + 1, len(b) + 1

        def data(self):
            return (a, b)

        @staticmethod
        def boundary(i, j, x, y):
            return max(i, j) + 1  # unreachable from inside: row and column 0 are cells

        @staticmethod
        def cell(i, j, up, left, diag, x, y):
            if i == 0 or j == 0:
                return i + j
            return min(up + 1, left + 1, diag + (x[i - 1] != y[j - 1]))

    class Allocating(Lean):
        @staticmethod
        def cell(i, j, up, left, diag, x, y):
            if i == 0 or j == 0:
                return i + j
            c = np.empty(3, np.int64)  # needs numba's runtime
            c[0], c[1], c[2] = up + 1, left + 1, diag + (x[i - 1] != y[j - 1])
            return c.min()

    w = np.array([3, 4, 2, 5, 1], np.int64)
    v = np.array([4, 5, 3, 8, 1], np.int64)
    cap = 9

    class Rows(LayeredRecurrence):  # a 0/1 knapsack, an item a layer
        value_dtype = np.int64
        window = 1

        def num_layers(self):
            return len(w) + 1

        def layer_size(self, t):
            return cap + 1

        def data(self):
            return (w, v)

        @staticmethod
        def cell(t, p, prev, w, v):
            if t == 0:
                return 0
            c = np.zeros(2, np.int64)  # needs numba's runtime
            c[0] = prev[p]
            if p >= w[t - 1]:
                c[1] = prev[p - w[t - 1]] + v[t - 1]
            return c.max()

    best = np.zeros(cap + 1, np.int64)
    for k in range(len(w)):
        best = np.maximum(best, np.concatenate([np.full(w[k], -1), best[: cap + 1 - w[k]] + v[k]]))
    want = plain()
    for cls in (Lean, Allocating):
        assert np.array_equal(sweep(cls(), backend="cpu", progress=False).last_row, want[-1])
    assert np.array_equal(sweep(Rows(), backend="cpu", progress=False).last_layer, best)


def _two_back(layers: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """F(t, k) = F(t - 1, k) + 2 F(t - 2, k - 1) + (k % 3) mod 1009 (5 for F(t - 2, -1)), the two
    layers before the first all ``fill`` (7); the decision: whether the t - 2 term is odd. Plain
    loops: ``(values, decisions)`` of every layer."""
    f = np.full((layers + 2, size), 7, np.int64)  # rows 0 and 1: the layers before the first
    d = np.zeros((layers, size), np.int64)
    for t in range(layers):
        for k in range(size):
            two = f[t, k - 1] if k > 0 else 5
            f[t + 2, k] = (f[t + 1, k] + 2 * two + k % 3) % 1009
            d[t, k] = two & 1
    return f[2:], d


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.sim)])
def test_a_window_of_two_layers(backend):
    """A layered recurrence whose cell reads the two previous layers: every layer's values and
    decisions equal a plain loop's (the cpu kernel takes the window's rows once a layer)."""
    from gpudp import LayeredRecurrence, sweep

    layers, size = (9, 70) if backend == "cpu" else (4, 40)

    class TwoBack(LayeredRecurrence):
        value_dtype = np.int64
        window = 2
        decision_bits = 1
        fill = 7

        def num_layers(self):
            return layers

        def layer_size(self, t):
            return size

        def data(self):
            return (np.int64(1009),)

        @staticmethod
        def cell(t, k, p1, p2, m):
            two = p2[k - 1] if k > 0 else 5
            return (p1[k] + 2 * two + k % 3) % m, two & 1

        @staticmethod
        def back(t, k, d, m):
            return t - 1, k

    want, dec = _two_back(layers, size)
    res = sweep(TwoBack(), backend=backend, progress=False)
    assert np.array_equal(res.last_layer, want[-1])
    got = [[res.decision(t, k) for k in range(size)] for t in range(layers)]
    assert np.array_equal(np.array(got), dec)


def test_large_layers_on_one_thread_and_on_all():
    """With one numba thread every layer runs as a plain loop (cpu.serial_groups): the same values
    and decisions as the threads' loop, on layers of hundreds of groups of 32 cells."""
    import numba

    from gpudp import LayeredRecurrence, sweep
    from gpudp.backends import cpu

    rng = np.random.default_rng(3)
    w, v = rng.integers(1, 900, 12), rng.integers(1, 1000, 12)
    cap = 20_000  # 625 groups a layer: past SERIAL_GROUPS

    class Knap(LayeredRecurrence):
        value_dtype = np.int64
        decision_bits = 1

        def num_layers(self):
            return len(w)

        def layer_size(self, t):
            return cap + 1

        def data(self):
            return (w, v)

        @staticmethod
        def cell(t, p, prev, w, v):
            skip = prev[p] if t > 0 else 0
            take = (prev[p - w[t]] if t > 0 else 0) + v[t] if p >= w[t] else -1
            return max(take, skip), int(take > skip)

        @staticmethod
        def back(t, p, taken, w, v):
            return t - 1, p - w[t] if taken else p

    best = np.zeros(cap + 1, np.int64)
    for k in range(len(w)):
        best = np.maximum(best, np.concatenate([np.full(w[k], -1), best[: cap + 1 - w[k]] + v[k]]))
    assert cpu.SERIAL_GROUPS < (cap + 1) // 32
    runs = {}
    before = numba.get_num_threads()
    try:
        for threads in sorted({1, numba.config.NUMBA_NUM_THREADS}):
            numba.set_num_threads(threads)
            assert (cpu.serial_groups() > 1 << 40) == (threads == 1)
            res = sweep(Knap(), backend="cpu", progress=False)
            runs[threads] = (res.last_layer.copy(), res.traceback((len(w) - 1, cap)))
            res.close()
    finally:
        numba.set_num_threads(before)
    for layer, path in runs.values():
        assert np.array_equal(layer, best)
        assert np.array_equal(path, runs[1][1])
        taken = [int(t) for t, _, d in path if d]
        assert int(v[taken].sum()) == best[-1] and int(w[taken].sum()) <= cap


def test_generated_sweeps_compile_with_arguments_noalias():
    """The cpu backend's sweeps are compiled by a pipeline that marks every array argument noalias
    (so that LLVM keeps data read from one array in registers across stores to another); a function
    compiled by it says so in its LLVM IR and computes what plain njit computes."""
    import numba

    from gpudp.backends import cpu

    def axpy(x, y, a):
        for i in range(len(x)):
            y[i] = y[i] + a[0] * x[i]

    plain = numba.njit(axpy)
    marked = numba.njit(pipeline_class=cpu.noalias_compiler())(axpy)
    x, a = np.arange(5.0), np.array([2.0])
    y1, y2 = np.ones(5), np.ones(5)
    plain(x, y1, a)
    marked(x, y2, a)
    assert np.array_equal(y1, y2)

    def data_pointer(fn):  # the attributes of x's data pointer in the function's definition
        ir = next(iter(fn.inspect_llvm().values()))
        return re.search(r"ptr ([^,%]*)%arg\.x\.4\b", ir).group(1)

    assert "noalias" in data_pointer(marked) and "noalias" not in data_pointer(plain)
    assert cpu.NOALIAS and "pipeline_class" in cpu._sweep_options(parallel=True)


def test_a_tiled_sweep_starts_no_more_threads_than_a_diagonal_has_tiles(monkeypatch):
    """threads_at_most caps numba's threads for the regions this thread starts and restores them;
    the tiled cpu sweep runs under it with the most tiles a tile anti-diagonal holds."""
    import numba

    from gpudp.backends import cpu

    was = numba.get_num_threads()
    with cpu.threads_at_most(1):
        assert numba.get_num_threads() == 1
    with cpu.threads_at_most(10**6):
        assert numba.get_num_threads() == was
    assert numba.get_num_threads() == was
    caps = []
    real = cpu.threads_at_most

    def spy(n):
        caps.append(n)
        return real(n)

    monkeypatch.setattr(cpu, "threads_at_most", spy)
    from gpudp.problems import lcs

    a, b = "ACGT" * 100, "GATTACA" * 60  # 400 x 420: one tile of 256 x 512 in each of 2 rows
    value = lcs.solve(a, b, backend="cpu", progress=False, method="wavefront").value
    assert caps == [1]
    row = [0] * (len(b) + 1)  # the textbook LCS table, row by row
    for x in a:
        prev, row = row, [0]
        for j, y in enumerate(b):
            row.append(prev[j] + 1 if x == y else max(prev[j + 1], row[j]))
    assert value == row[-1]
    assert numba.get_num_threads() == was
