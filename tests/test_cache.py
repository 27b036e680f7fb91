"""The persistent kernel cache: a second process loads instead of compiling, never serves stale code
(an edited cell, helper or constant gets a new answer), survives corrupt entries and concurrent
writers; one compiled sweep serves every grid shape."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpudp import cache

RECURRENCE = """
import numpy as np
from gpudp import GridRecurrence
from helper import bonus

STEP = {step}


class Walk(GridRecurrence):
    value_dtype = np.int64
    decision_bits = 1
    offsets = ((-1, 0), (0, -1))

    def __init__(self, h):
        self.h = h

    def shape(self):
        return self.h.shape

    def data(self):
        return (self.h,)

    @staticmethod
    def cell(i, j, up, left, h):
        if up >= left:
            return up + h[i, j] * STEP + bonus(i, j), 1
        return left + h[i, j] * STEP + bonus(i, j), 0

    @staticmethod
    def back(i, j, d, h):
        if d:
            return i - 1, j
        return i, j - 1
"""

HELPER = """
import numba


@numba.njit
def bonus(i, j):
    return {bonus}
"""

RUN = """
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from walk import Walk
from gpudp.engine import sweep
from gpudp.kernel import family
h = np.arange(12 * 40, dtype=np.int64).reshape(12, 40) % 7
r = sweep(Walk(h), backend="cpu", progress=False)
path = r.traceback((11, 39))
fn = family("cpu.tiled").lookup(rec=Walk, n_data=2, nrt=False, noalias=True).fn
print(json.dumps({"value": int(r.last_row[-1]), "path": len(path), "hits": sum(fn.stats.cache_hits.values()),
                  "misses": sum(fn.stats.cache_misses.values())}))
"""


def _write(folder: Path, step=1, bonus="0"):
    (folder / "walk.py").write_text(RECURRENCE.format(step=step))
    (folder / "helper.py").write_text(HELPER.format(bonus=bonus))
    for p in folder.glob("__pycache__"):  # python's own bytecode cache keys on mtime: drop it
        for f in p.iterdir():
            f.unlink()


def _run(folder: Path, cache_dir: Path) -> dict:
    env = dict(os.environ, GPUDP_CACHE_DIR=str(cache_dir))
    r = subprocess.run(
        [sys.executable, "-c", RUN, str(folder)], capture_output=True, text=True, timeout=600, env=env
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _reference(step, bonus):
    h = np.arange(12 * 40, dtype=np.int64).reshape(12, 40) % 7
    v = np.zeros((13, 41), np.int64)
    for i in range(12):
        for j in range(40):
            v[i + 1, j + 1] = max(v[i, j + 1], v[i + 1, j]) + h[i, j] * step + bonus(i, j)
    return int(v[12, 40])


def test_second_process_loads_and_edits_are_never_stale(tmp_path):
    code, store = tmp_path / "code", tmp_path / "cache"
    code.mkdir()
    _write(code)
    first = _run(code, store)
    assert first["value"] == _reference(1, lambda i, j: 0) and first["misses"] == 1
    again = _run(code, store)
    assert again == dict(first, hits=1, misses=0)  # loaded from disk, not compiled
    _write(code, step=3)  # the cell's global constant changes
    assert _run(code, store)["value"] == _reference(3, lambda i, j: 0)
    _write(code, step=3, bonus="i * j % 3")  # a helper the cell calls changes
    got = _run(code, store)
    assert got["value"] == _reference(3, lambda i, j: i * j % 3) and got["misses"] == 1


def test_corrupt_entries_are_recompiled(tmp_path):
    code, store = tmp_path / "code", tmp_path / "cache"
    code.mkdir()
    _write(code, bonus="1")
    want = _run(code, store)
    entries = [p for p in store.rglob("*") if p.suffix in (".nbi", ".nbc")]
    assert entries
    for p in entries:
        p.write_bytes(b"\x80\x04garbage" + os.urandom(64))
    assert _run(code, store)["value"] == want["value"]
    for p in store.rglob("*.py"):  # a truncated generated source
        p.write_text(p.read_text()[:40])
    assert _run(code, store)["value"] == want["value"]


def test_concurrent_processes_share_an_empty_cache(tmp_path):
    code, store = tmp_path / "code", tmp_path / "cache"
    code.mkdir()
    _write(code, bonus="j % 2")
    env = dict(os.environ, GPUDP_CACHE_DIR=str(store))
    procs = [
        subprocess.Popen([sys.executable, "-c", RUN, str(code)], stdout=subprocess.PIPE, text=True, env=env)
        for _ in range(3)
    ]
    outs = [json.loads(p.communicate(timeout=600)[0].strip().splitlines()[-1]) for p in procs]
    assert {o["value"] for o in outs} == {_reference(1, lambda i, j: j % 2)}
    assert _run(code, store)["hits"] == 1


def test_one_compile_serves_every_shape():
    from gpudp.kernel import family
    from gpudp.problems import lcs

    rng = np.random.default_rng(0)
    seen = []
    for n, m in [(5, 7), (40, 33), (300, 129), (1, 600)]:
        a, b = rng.integers(0, 4, n), rng.integers(0, 4, m)
        lcs.solve(a, b, backend="cpu")
        # LCS's narrow cell (gpudp.recurrence.narrow): its kernels (other tests may have built some
        # for other kinds of data), every signature they hold
        kernels = [
            k
            for k in family("cpu.tiled").built()
            if getattr(k.parts["rec"], "_wide", None) is lcs.LCSRecurrence and not k.parts["nrt"]
        ]
        seen.append(sum(len(k.fn.signatures) for k in kernels))
    assert seen == seen[:1] * 4  # other tests may have compiled other symbol types before: none added


def test_fingerprints_follow_code_and_values():
    def f(x):
        return x + 1

    def g(x):
        return x + 2

    assert cache.fingerprint(f) != cache.fingerprint(g)
    assert cache.fingerprint(np.arange(3)) != cache.fingerprint(np.arange(3) + 1)
    src = "def h(x):\n    return x * K\n"
    ns1, ns2 = {"K": 2}, {"K": 3}
    exec(src, ns1)
    exec(src, ns2)
    assert cache.fingerprint(ns1["h"]) != cache.fingerprint(ns2["h"])
    ns3 = {"K": 2}
    exec(compile(src, "<elsewhere>", "exec"), ns3)
    assert cache.fingerprint(ns1["h"]) == cache.fingerprint(ns3["h"])  # file names do not matter


def test_cache_off_and_cli(tmp_path, monkeypatch, capsys):
    from gpudp.cli import main

    monkeypatch.setenv("GPUDP_CACHE_DIR", "off")
    assert (
        not cache.enabled() and cache.generated_function("def f():\n    return 1\n", "f", {}, "cpu") is None
    )
    monkeypatch.setenv("GPUDP_CACHE_DIR", str(tmp_path / "c"))
    f = cache.generated_function("def f():\n    return K\n", "f", {"K": 4}, "cpu")
    assert f() == 4 and cache.info()["folders"][0]["kernels"] == 1
    assert main(["cache", "info"]) == 0
    assert "1 kernels" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert not (tmp_path / "c").exists()


def test_numba_settings_key_the_entries(tmp_path, monkeypatch):
    """numba's own cache does not key its entries by NUMBA_BOUNDSCHECK (and the like): ours does,
    so a run with bounds checking never gets an earlier run's unchecked kernel."""
    import numba

    monkeypatch.setenv("GPUDP_CACHE_DIR", str(tmp_path))
    src = "def f(x):\n    return x + 1\n"
    plain = cache.generated_function(src, "f", {}, "cpu")
    monkeypatch.setattr(numba.config, "BOUNDSCHECK", 1)
    checked = cache.generated_function(src, "f", {}, "cpu")
    assert plain.__module__ != checked.__module__ and plain(1) == checked(1) == 2
    monkeypatch.setattr(numba.config, "BOUNDSCHECK", None)
    assert cache.generated_function(src, "f", {}, "cpu").__module__ == plain.__module__


@pytest.mark.parametrize("problem", ["lcs", "tsp"])
def test_warmup_runs(problem, capsys):
    from gpudp.cli import main

    assert main(["warmup", problem, "--backend", "cpu"]) == 0
    assert capsys.readouterr().out.startswith(problem)


RUN_PLUGINS = """
import json
from gpudp import frontier, primitives as pr
from gpudp.bench.instances import shen_instance, wan_instance
from gpudp.problems import subset_sum
from gpudp.problems.knapsack import bb as knapsack_bb
from gpudp.problems.subset_sum import cpu as subset_sum_cpu
p, w, c = shen_instance(60, 1)
kb = knapsack_bb.solve(p, w, c, backend="cpu", cpu_threshold=1 << 30)
st = kb.stats.extra
w2, m2 = wan_instance(36, 0)
ss = subset_sum.solve(w2, m2, backend="cpu")
kernels = {"ss_" + k: f for k, f in zip(("ips", "narrow", "search", "prune"), subset_sum_cpu._cpu_funcs())}
for k in frontier.cpu.kernels.family.built():
    child, fns = k.parts["child"], k.fn
    kernels.update({child.__name__ + "_expand": fns[0], child.__name__ + "_host": fns[1]})
kernels.update(key=frontier.cpu.key_c, hash=frontier.cpu.hash_c, ub=pr.upper_bound_cpu, merge=pr._merge_range,
               merge_par=pr._merge_shifted_par)
print(json.dumps({
    "knapsack": [kb.value, kb.solution.tolist(), st["cpu_levels"], st["nodes_explored"]],
    "subset_sum": [ss.value, ss.solution],
    "compiled": {k: sum(f.stats.cache_misses.values()) for k, f in kernels.items()},
    "loaded": {k: sum(f.stats.cache_hits.values()) for k, f in kernels.items()},
}))
"""


def test_second_process_loads_the_plugins_kernels(tmp_path):
    """The knapsack B&B frontier (cpu) and subset sum (cpu): their kernels are closures no more, so a
    second process compiles nothing (the module-level helpers are cached by numba beside gpudp's
    source, the generated kernels in GPUDP_CACHE_DIR)."""
    env = dict(os.environ, GPUDP_CACHE_DIR=str(tmp_path / "cache"))

    def run():
        r = subprocess.run(
            [sys.executable, "-c", RUN_PLUGINS], capture_output=True, text=True, timeout=600, env=env
        )
        assert r.returncode == 0, r.stderr[-3000:]
        return json.loads(r.stdout.strip().splitlines()[-1])

    first = run()
    assert first["knapsack"][2] > 0 and first["knapsack"][3] > 0  # the CPU frontier ran
    for k in ("_child_int_expand", "_child_int_host", "ss_search"):
        assert first["compiled"][k] == 1, k  # a fresh cache folder: compiled once
    second = run()
    assert second["knapsack"] == first["knapsack"] and second["subset_sum"] == first["subset_sum"]
    assert not any(second["compiled"].values()), second["compiled"]
    for k in ("_child_int_expand", "_child_int_host", "ss_search", "ub", "merge", "merge_par"):
        assert second["loaded"][k] >= 1, k


def test_clear_removes_only_what_gpudp_made(tmp_path, monkeypatch, capsys):
    """GPUDP_CACHE_DIR may name a folder with the user's files (even $HOME): `cache clear` removes
    gpudp's marked version folders and old unmarked ones holding only gpudp's and numba's files,
    never a user's file or folder, nor the root that holds them; `cache info` lists only gpudp's."""
    from gpudp.cli import main

    root = tmp_path / "home"
    (root / "mydata").mkdir(parents=True)
    (root / "mydata" / "x.csv").write_text("1,2\n")
    (root / "notes.txt").write_text("keep me\n")
    old = root / "gpudp0.0.9-numba0.60.0-cuda0.1.0-llvmlite0.43.0-py311" / "cpu"  # before the marker
    (old / "__pycache__").mkdir(parents=True)
    (old / "walk_0b8b223ca63f858de06131c7.py").write_text("def walk():\n    pass\n")
    (old / "__pycache__" / "walk_0b8b223ca63f858de06131c7.walk-3.py311.nbi").write_bytes(b"\0")
    mine = root / "gpudp1.0-numba9-cuda9-llvmlite9-py399"  # a version's name, but a user's file inside
    mine.mkdir()
    (mine / "thesis.tex").write_text("keep me too\n")
    monkeypatch.setenv("GPUDP_CACHE_DIR", str(root))
    assert cache.generated_function("def f():\n    return K\n", "f", {"K": 5}, "cpu")() == 5
    names = {f["name"] for f in cache.info()["folders"]}
    assert names == {old.parent.name, os.path.basename(cache.cache_dir())}
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert "mydata" not in out.splitlines()[1] and "3 other entries" in out
    assert main(["cache", "clear"]) == 0
    out = capsys.readouterr().out
    assert sorted(p.name for p in root.iterdir()) == [mine.name, "mydata", "notes.txt"]
    assert (root / "mydata" / "x.csv").read_text() == "1,2\n" and (mine / "thesis.tex").exists()
    assert "kept 3 other entries" in out and "removed " + str(old.parent) in out


def test_clear_refuses_a_root_that_is_not_a_folder(monkeypatch, capsys):
    from gpudp.cli import main

    monkeypatch.setenv("GPUDP_CACHE_DIR", "/dev/null")
    for action in ("clear", "info"):
        assert main(["cache", action]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.strip().splitlines() == [
            "gpudp: error: GPUDP_CACHE_DIR: /dev/null is not a folder"
        ]
    assert os.path.exists("/dev/null")


PASSED_IN = """
import sys
sys.path.insert(0, sys.argv[1])
from gpudp.jit import njit
from twice import apply, double, triple
f = double if sys.argv[2] == "double" else triple
print(apply(f, 7), sum(apply.stats.cache_hits.values()))
"""

TWICE = """
from gpudp.jit import njit


@njit(cache=True)
def double(x):
    return 2 * x


@njit(cache=True)
def triple(x):
    return 3 * x


@njit(cache=True)
def apply(f, x):
    return f(x)
"""


def test_a_compiled_function_passed_in_is_never_cached(tmp_path):
    """A cached kernel given a compiled function as an argument: numba's cache keys that entry by the
    function object of one process, so it is compiled in each process and never written (numba would
    add a stale entry every process, and rewriting its index failed once one of them was collected:
    ``ReferenceError: underlying object has vanished``); the kernels it calls stay cached."""
    (tmp_path / "twice.py").write_text(TWICE)
    env = dict(os.environ, GPUDP_CACHE_DIR=str(tmp_path / "cache"), NUMBA_CACHE_DIR=str(tmp_path / "nb"))
    for name, want in [("double", 14), ("triple", 21), ("double", 14), ("triple", 21)]:
        r = subprocess.run(
            [sys.executable, "-c", PASSED_IN, str(tmp_path), name],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
        )
        assert r.returncode == 0, r.stderr[-3000:]
        assert r.stdout.split() == [str(want), "0"]
    index = [p.name for p in (tmp_path / "nb").rglob("*.nbi")]
    assert index and not any("apply" in p for p in index), index  # double and triple only


CROSS = """
import json
from gpudp.problems import edit_distance, lcs
from gpudp.problems.edit_distance import bitparallel as eb
from gpudp.problems.lcs import bitparallel as lb
from gpudp.problems.lcs.cross import cpu
got = [lcs.cdist(["ACGT", "GA"], ["AGT"], backend="cpu").tolist(),
       edit_distance.cdist(["ACGT", "GA"], ["AGT"], backend="cpu").tolist()]
ks = [cpu._kernel(lb.lcs_text, lb.lcs_bounds), cpu._kernel(eb.levenshtein_text, eb.levenshtein_bounds)]
print(json.dumps([got, [sum(k.stats.cache_hits.values()) for k in ks]]))
"""


def test_second_process_loads_the_cross_product_kernels(tmp_path):
    """lcs.cdist and edit_distance.cdist on the cpu: the loop is compiled once an algorithm and loaded
    by the next process."""
    env = dict(os.environ, GPUDP_CACHE_DIR=str(tmp_path / "cache"))
    runs = []
    for _ in range(2):
        r = subprocess.run(
            [sys.executable, "-c", CROSS], capture_output=True, text=True, timeout=600, env=env
        )
        assert r.returncode == 0, r.stderr[-3000:]
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    assert runs[0][0] == runs[1][0] == [[[3], [1]], [[1], [2]]]
    assert runs[0][1] == [0, 0] and runs[1][1] == [1, 1]


def test_warmup_compiles_the_cross_products_for_the_next_process(tmp_path):
    """`gpudp warmup lcs` builds the LCS and edit-distance cross products (and batches): the next
    process loads their kernels instead of compiling."""
    env = dict(os.environ, GPUDP_CACHE_DIR=str(tmp_path / "cache"))
    warm = "from gpudp.cli import main; raise SystemExit(main(['warmup', 'lcs', '--backend', 'cpu']))"
    r = subprocess.run([sys.executable, "-c", warm], capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    r = subprocess.run([sys.executable, "-c", CROSS], capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    got, loaded = json.loads(r.stdout.strip().splitlines()[-1])
    assert got == [[[3], [1]], [[1], [2]]] and loaded == [1, 1]
