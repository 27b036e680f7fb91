"""The engine and the command line under hostile conditions: decisions that do not fit, budgets that
are nonsense, memory that a process limit withholds, signals, threads, unexpected exceptions."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from gpudp import ContractError, GridRecurrence, InputError, LayeredRecurrence
from gpudp import memory as gmem
from gpudp import store as gstore
from gpudp.cli import main
from gpudp.engine import sweep


class WideGrid(GridRecurrence):
    """Decision = (i * 7 + j) % 5 at the cells where h says so, else 0; declared 2 bits (0..3)."""

    value_dtype = np.int64
    decision_bits = 2
    offsets = ((-1, 0), (0, -1), (-1, -1))

    def __init__(self, h):
        self.h = h

    def shape(self):
        return self.h.shape

    def data(self):
        return (self.h,)

    @staticmethod
    def cell(i, j, up, left, diag, h):
        return up + left - diag + h[i, j], h[i, j] * 4

    @staticmethod
    def back(i, j, d, h):
        return i - 1, j


class WideLayers(LayeredRecurrence):
    """300 states a layer, the decision the argmax state (9 bits) but 8 declared: the issue's Viterbi."""

    value_dtype = np.int64
    decision_bits = 8
    window = 1

    def __init__(self, states, steps):
        self.states, self.steps = states, steps

    def num_layers(self):
        return self.steps

    def layer_size(self, t):
        return self.states

    @staticmethod
    def cell(t, k, prev):
        if t == 0:
            return k, 0
        best, arg = prev[0], 0
        for q in range(1, prev.shape[0]):
            if prev[q] > best:
                best, arg = prev[q], q
        return best, arg

    @staticmethod
    def back(t, k, d):
        return t - 1, d


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.sim)])
def test_a_decision_wider_than_declared_raises(backend):
    h = np.zeros((8, 40), np.int64)
    assert sweep(WideGrid(h), backend=backend, progress=False).decision(3, 3) == 0  # fits: no error
    h[5, 33] = 1  # decision 4 does not fit 2 bits
    with pytest.raises(ContractError, match=r"decision 4 at cell \(i, j\) = \(5, 33\).*decision_bits = 2"):
        sweep(WideGrid(h), backend=backend, progress=False)


def test_decision_errors_say_where_and_how_many():
    """One wording on every shape: the cell's coordinates named, the count in words."""
    from gpudp.errors import decision_too_wide

    one = str(decision_too_wide("V", 300, "t, k", (2, 7), 8, 1))
    assert "decision 300 at cell (t, k) = (2, 7)" in one and "(0 .. 255; 1 cell did so)" in one
    many = str(decision_too_wide("G", 9, "i, j, k", (1, 2, 3), 3, 5))
    assert "at cell (i, j, k) = (1, 2, 3)" in many and "5 cells did so, this one among them" in many


def test_the_package_lists_its_lazy_names():
    import gpudp

    assert {"GridRecurrence", "IntervalRecurrence", "sweep", "sweep_many"} <= set(dir(gpudp))


def test_negative_decisions_raise():
    h = np.zeros((3, 3), np.int64)
    h[1, 2] = -1
    with pytest.raises(ContractError, match="decision -4"):
        sweep(WideGrid(h), backend="cpu", progress=False)


@pytest.mark.parametrize("backend", ["cpu", pytest.param("cuda", marks=pytest.mark.sim)])
def test_layered_decisions_too_wide_raise(backend):
    steps = 3 if backend == "cuda" else 5
    with pytest.raises(ContractError, match="decision_bits = 8"):
        sweep(WideLayers(300, steps), backend=backend, progress=False)
    assert sweep(WideLayers(256, steps), backend=backend, progress=False).decision(1, 7) == 255


# ---------------------------------------------------------------------------------------------
# budgets and memory


@pytest.mark.parametrize("bad", ["inf", "1e400", "nan", "-5", "-1G", "lots", float("nan"), -1, float("inf")])
def test_nonsense_budgets_are_refused(bad):
    with pytest.raises(InputError, match="memory_budget"):
        gmem.parse_bytes(bad)
    with pytest.raises(InputError, match="memory_budget"):
        sweep(WideGrid(np.zeros((4, 4), np.int64)), backend="cpu", memory_budget=bad, progress=False)


def test_budget_from_the_environment_is_checked(monkeypatch):
    monkeypatch.setenv("GPUDP_MEMORY_BUDGET", "inf")
    with pytest.raises(InputError, match="GPUDP_MEMORY_BUDGET"):
        gmem.default_budget()


def test_sizes_parse():
    assert gmem.parse_bytes("8G") == 8 << 30 and gmem.parse_bytes("1.5KiB") == 1536
    assert (
        gmem.parse_bytes("1e3") == 1000 and gmem.parse_bytes(0) == 0 and gmem.parse_bytes(" 2 mb ") == 2 << 20
    )


def test_a_budget_above_the_memory_spills_instead_of_failing(monkeypatch):
    """A budget is a ceiling: a store larger than the memory this process may use goes to disk."""
    monkeypatch.setattr(gstore, "available_memory", lambda: 1000)
    s = gstore.DecisionStore(10_000, budget="1000T")
    try:
        assert s.on_disk and os.path.isdir(s._dir)
    finally:
        s.close()
    monkeypatch.setattr(gstore, "available_memory", lambda: 10**12)
    assert not gstore.DecisionStore(10_000, budget="1000T").on_disk


def test_a_store_neither_memory_nor_disk_can_hold_is_refused_with_figures(monkeypatch):
    monkeypatch.setattr(gstore, "available_memory", lambda: 1 << 20)
    with pytest.raises(InputError, match=r"GiB.*free disk"):
        gstore.DecisionStore(1 << 60, budget="1000T")


def test_cgroup_and_ulimit_are_honoured():
    """``ulimit -v`` lowers available_memory() in a child process."""
    code = textwrap.dedent(
        """
        import resource
        from gpudp import memory
        before = memory.available_memory()
        cap = memory._status_bytes("VmSize") + (256 << 20)
        resource.setrlimit(resource.RLIMIT_AS, (cap, resource.RLIM_INFINITY))
        after = memory.available_memory()
        print(before, after, memory.limits()["rlimit"])
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    before, after, what = out.stdout.split(maxsplit=2)
    assert int(after) <= 256 << 20 < int(before) and "RLIMIT_AS" in what


def test_a_sweep_reads_the_memory_figures_once(monkeypatch):
    """Inside one_reading (every sweep), available_memory() is the first reading's figure; outside
    it, and in a later sweep (one that reuses no recent reading), the host is read again."""
    readings = []

    def limits():
        readings.append(1)
        return {"os_available": (64 << 30) - len(readings), "cgroup_room": None, "rlimit_room": None}

    monkeypatch.setattr(gmem, "limits", limits)
    with gmem.one_reading():
        first = gmem.available_memory()
        with gmem.one_reading():  # nested: the outer reading
            assert gmem.available_memory() == first
        assert gmem.available_memory() == first and len(readings) == 1
    assert gmem.available_memory() == first - 1  # read again
    n = len(readings)
    monkeypatch.setattr(gmem, "RECENT_SECONDS", 0.0)  # none reused (tests/test_fixed_cost.py)
    sweep(WideGrid(np.zeros((8, 8), np.int64)), backend="cpu", progress=False).close()
    sweep(WideGrid(np.zeros((8, 8), np.int64)), backend="cpu", progress=False).close()
    assert len(readings) == n + 2  # budget, plan, memory check and store: one reading a sweep


def _no_room(fd, offset, length):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_spill_the_disk_cannot_hold_is_refused_not_killed(tmp_path, monkeypatch):
    """The disk may fill after the free-space check (two solves on one small tmpfs): a write through
    a memmap of a sparse file then dies of SIGBUS. The blocks are reserved first, so the failure is
    an InputError naming the file and its size, and the spill folder goes."""
    monkeypatch.setattr(os, "posix_fallocate", _no_room)
    with pytest.raises(InputError, match=r"cannot reserve 0\.00 GiB .*gpudp-store-.*decisions\.u32.*space"):
        gstore.DecisionStore(1 << 16, budget=0, spill_dir=str(tmp_path))
    bands = gstore.BandStore(
        np.zeros(2, np.int64), np.zeros(2, np.int64), 1, budget=0, spill_dir=str(tmp_path)
    )
    with pytest.raises(InputError, match=r"gpudp-bands-.*bands\.u32"):
        bands.append(np.ones(1 << 17, gstore.WORD))
    assert os.listdir(tmp_path) == []


def test_a_spill_is_reserved_where_fallocate_is_not_supported(tmp_path, monkeypatch):
    def unsupported(fd, offset, length):
        raise OSError(errno.EOPNOTSUPP, "not supported")

    monkeypatch.setattr(os, "posix_fallocate", unsupported)
    s = gstore.DecisionStore(300_000, budget=0, spill_dir=str(tmp_path))
    try:
        st = os.stat(s.words.filename)
        assert st.st_size == 1_200_000 and st.st_blocks * 512 >= 1_200_000  # written, not sparse
        s.words[-1] = 7
        assert s.words[-1] == 7 and s.words[0] == 0
    finally:
        s.close()
    assert os.listdir(tmp_path) == []


def test_cli_a_full_spill_disk_is_one_line(tmp_path, monkeypatch, capsys):
    a = tmp_path / "a.fa"
    a.write_text(">a\n" + "ACGT" * 100 + "\n")
    spill = tmp_path / "spill"
    spill.mkdir()
    monkeypatch.setenv("GPUDP_SPILL_DIR", str(spill))
    monkeypatch.setenv("GPUDP_MEMORY_BUDGET", "0")
    monkeypatch.setattr(os, "posix_fallocate", _no_room)
    assert main(["solve", "lcs", str(a), str(a), "--backend", "cpu", "--store", "full"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gpudp: error: spill_dir: cannot reserve"), err
    assert os.listdir(spill) == []


# ---------------------------------------------------------------------------------------------
# signals and spill folders


def _default_signals():
    """A child's start: the stop signals at their default action, whatever the runner set (CI's may
    ignore SIGTERM; nohup ignores SIGHUP), as these tests assume."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


_SPILLER = """
import sys, time, numpy as np
from gpudp import store
s = store.DecisionStore(1 << 20, budget=0, spill_dir=sys.argv[1])
print(s._dir, flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signals_remove_the_spill_folder(tmp_path, sig):
    # The child starts with default dispositions: under ``nohup`` SIGHUP is inherited as ignored,
    # and a process that ignores a signal rightly neither dies of it nor cleans up.
    p = subprocess.Popen(
        [sys.executable, "-c", _SPILLER, str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(sig, signal.SIG_DFL),
    )
    folder = p.stdout.readline().strip()
    assert os.path.isdir(folder)
    p.send_signal(sig)
    p.wait(timeout=60)
    assert not os.path.exists(folder), f"left behind after {sig.name}"
    assert os.listdir(tmp_path) == []


def test_cli_sigterm_cleans_up_and_says_so(tmp_path):
    """`gpudp solve` killed by SIGTERM mid-run: one line, exit 143, no spill folder left."""
    a = tmp_path / "a.fa"
    b = tmp_path / "b.fa"
    rng = np.random.default_rng(0)
    for f in (a, b):
        f.write_text(">x\n" + "".join(rng.choice(list("ACGT"), 3000)) + "\n")
    spill = tmp_path / "spill"
    spill.mkdir()
    env = dict(os.environ, GPUDP_SPILL_DIR=str(spill), GPUDP_MEMORY_BUDGET="0")
    code = (
        "import sys, time\n"
        "import gpudp.backends.cpu as cpu\n"
        "real = cpu._run_plan\n"
        "def slow(*a, **k):\n"
        "    out = real(*a, **k)\n"
        "    print('swept', flush=True)\n"
        "    time.sleep(60)\n"
        "    return out\n"
        "cpu._run_plan = slow\n"
        "from gpudp.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code, "solve", "lcs", str(a), str(b), "--backend", "cpu", "--store", "full"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_default_signals,  # a runner that ignores SIGTERM passes that on (as nohup does SIGHUP)
    )
    _expect_line(p, "swept")
    assert os.listdir(spill), "the decisions should have spilled"
    _stopped_by_sigterm(p, signal.SIGTERM)
    assert os.listdir(spill) == []


def _expect_line(p: subprocess.Popen, marker: str):
    """The child's next line of output is ``marker`` (else it is killed, its stderr shown)."""
    line = p.stdout.readline().strip()
    if line != marker:
        p.kill()
        raise AssertionError((line, p.communicate()[1][-3000:]))


def _stopped_by_sigterm(p: subprocess.Popen, *signals):
    """Send ``signals`` to the child: it ends within a minute with 143 and the CLI's one line."""
    try:
        for sig in signals:
            p.send_signal(sig)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 143 and err.strip().splitlines() == ["gpudp: stopped by SIGTERM"], err[-2000:]


_SLOW_STOP = """
import atexit, sys, time
import gpudp.backends.cpu as cpu
import gpudp.store as store

atexit.register(lambda: (print("exiting", flush=True), time.sleep(1)))  # runs last
real_run, real_close = cpu._run_plan, store._Spilling.close


def slow_run(*a, **k):
    out = real_run(*a, **k)
    print("swept", flush=True)
    time.sleep(60)
    return out


def slow_close(self):
    if self._dir is not None:
        print("closing", flush=True)
        time.sleep(1)
    real_close(self)


cpu._run_plan, store._Spilling.close = slow_run, slow_close
from gpudp.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_cli_the_first_signal_wins_and_later_ones_do_not_cut_the_cleanup(tmp_path):
    """SIGTERM, then Ctrl-C while the spill folder is being removed and SIGTERM again while the
    process exits: the cleanup runs to its end, and the first signal gives the status (143, not
    Ctrl-C's 130, nor a death by the signal) and the one line."""
    a = tmp_path / "a.fa"
    a.write_text(">x\n" + "".join(np.random.default_rng(0).choice(list("ACGT"), 3000)) + "\n")
    spill = tmp_path / "spill"
    spill.mkdir()
    env = dict(os.environ, GPUDP_SPILL_DIR=str(spill), GPUDP_MEMORY_BUDGET="0")
    argv = ["solve", "lcs", str(a), str(a), "--backend", "cpu", "--store", "full"]
    p = subprocess.Popen(
        [sys.executable, "-c", _SLOW_STOP, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_default_signals,
    )
    _expect_line(p, "swept")
    assert os.listdir(spill), "the decisions should have spilled"
    p.send_signal(signal.SIGTERM)
    _expect_line(p, "closing")
    p.send_signal(signal.SIGINT)
    _expect_line(p, "exiting")
    _stopped_by_sigterm(p, signal.SIGTERM)
    assert os.listdir(spill) == []


@pytest.mark.parametrize("nohup", [False, True])
def test_cli_a_signal_during_start_up_is_handled(nohup):
    """The handlers are the first thing main() sets up: SIGTERM while the arguments are parsed (or
    a plug-in imported) is the same one line and 143, not a death by the signal. Under ``nohup``
    (SIGHUP ignored by the parent) a SIGHUP stays ignored."""
    code = (
        "import sys, time\n"
        "import gpudp.cli as cli\n"
        "real = cli.build_parser\n"
        "def slow(argv=None):\n"
        "    print('parsing', flush=True)\n"
        "    time.sleep(60)\n"
        "    return real(argv)\n"
        "cli.build_parser = slow\n"
        "sys.exit(cli.main(sys.argv[1:]))\n"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code, "info"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: (_default_signals(), nohup and signal.signal(signal.SIGHUP, signal.SIG_IGN)),
    )
    _expect_line(p, "parsing")
    _stopped_by_sigterm(p, *([signal.SIGHUP] if nohup else []), signal.SIGTERM)


# ---------------------------------------------------------------------------------------------
# threads


def test_two_solves_in_two_threads():
    """Parallel CPU sweeps from two threads: the same answers, never an abort (numba's workqueue
    layer aborts on concurrent parallel regions; the CPU backend serialises them)."""
    from gpudp.problems import lcs

    rng = np.random.default_rng(1)
    pairs = [(rng.integers(0, 4, 700), rng.integers(0, 4, 650)) for _ in range(4)]
    want = [lcs.solve(a, b, backend="cpu").value for a, b in pairs]
    got = [None] * 4

    def work(k):
        got[k] = lcs.solve(*pairs[k], backend="cpu").value

    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=300)
    assert got == want


def test_workqueue_layer_in_threads_does_not_abort():
    code = textwrap.dedent(
        """
        import threading, numpy as np
        from gpudp.problems import lcs
        rng = np.random.default_rng(2)
        a, b = rng.integers(0, 4, 3000), rng.integers(0, 4, 3000)
        v = lcs.solve(a, b, backend="cpu").value
        out = []
        job = lambda: out.append(lcs.solve(a, b, backend="cpu").value)
        ts = [threading.Thread(target=job) for _ in range(3)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        import numba
        print(numba.threading_layer(), out == [v] * 3)
        """
    )
    env = dict(os.environ, NUMBA_THREADING_LAYER="workqueue")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["workqueue", "True"]


# ---------------------------------------------------------------------------------------------
# the command line's promise


def test_unexpected_exceptions_are_one_line(monkeypatch, capsys, tmp_path):
    from gpudp.problems import lcs

    def boom(*a, **k):
        raise ZeroDivisionError("a bug\nover two lines")

    monkeypatch.setattr(lcs, "cli_solve", boom)
    f = tmp_path / "a.fa"
    f.write_text(">a\nACGT\n")
    assert main(["solve", "lcs", str(f), str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gpudp: error: internal error ZeroDivisionError: a bug over")
    assert "--debug" in err[0]
    assert main(["--debug", "solve", "lcs", str(f), str(f)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.strip().splitlines()[-1].startswith("gpudp: error: internal error")


def test_memory_errors_are_one_line(monkeypatch, capsys, tmp_path):
    from gpudp.problems import lcs

    def oom(*a, **k):
        raise MemoryError

    monkeypatch.setattr(lcs, "cli_solve", oom)
    f = tmp_path / "a.fa"
    f.write_text(">a\nACGT\n")
    assert main(["solve", "lcs", str(f), str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "out of memory" in err[0]


@pytest.mark.parametrize(
    "argv",
    [
        ["solve", "knapsack", "x", "--method", "nope"],
        ["solve"],
        ["frobnicate"],
        ["solve", "lcs", "a"],
        ["solve", "tsp", "x", "--backend", "tpu"],
    ],
)
def test_command_line_mistakes_are_one_line(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gpudp: error:")


def test_interrupt_latency_between_chunks():
    """A sweep checks for Ctrl-C between chunks: a long layer is cut into pieces on the CPU.

    The signal comes from this process, as a terminal's would: a thread inside the child could be
    starved of the GIL by the kernels and fire only after the solve."""
    code = textwrap.dedent(
        """
        import sys
        import numpy as np
        from gpudp.problems.tsp import held_karp as hk
        rng = np.random.default_rng(0)
        d = rng.integers(1, 100, (23, 23))  # about 5 s on one core of a 2026 laptop
        hk.solve(d[:6, :6], backend="cpu")  # compile
        print("go", flush=True)
        try:
            hk.solve(d, backend="cpu")
            print("finished", flush=True)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # even when started under nohup
    )
    try:
        assert child.stdout.readline().strip() == "go", child.stderr.read()[-2000:]
        time.sleep(0.5)
        t = time.perf_counter()
        child.send_signal(signal.SIGINT)
        out = child.stdout.readline().strip()
        latency = time.perf_counter() - t
        assert child.wait(timeout=600) == 0, child.stderr.read()[-2000:]
    finally:
        if child.poll() is None:
            child.kill()
    assert out != "finished", "the solve was too quick to interrupt: make it larger"
    assert out == "interrupted" and latency < 2.0, f"Ctrl-C took {latency:.2f} s to act ({out!r})"


def test_value_only_recurrences_carry_no_flag():
    """A value-only recurrence carries no flag (kernels keep their argument lists)."""
    from gpudp.codegen import spec_of

    class V(WideGrid):
        decision_bits = 0

        @staticmethod
        def cell(i, j, up, left, diag, h):
            return up + left - diag + h[i, j]

    assert spec_of(V).flags == 0 and spec_of(WideGrid).flags == 1
    r = sweep(V(np.ones((5, 6), np.int64)), backend="cpu", progress=False)
    assert r.store is None and r.last_row.tolist() == [5, 10, 15, 20, 25, 30]
