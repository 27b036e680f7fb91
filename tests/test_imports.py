"""The layers stay as docs/architecture.md draws them: who may import whom, and no cycles.

    cli, warmup -> bench -> problems -> engine, frontier, primitives, store, ... -> backends

Every import counts, also those inside functions (a lazy import is still a dependency). A module
named ``cuda`` (a feature's own CUDA code) may import the cuda backend; nothing else outside the
engine's core may. A plug-in may use the backends' registry, ``gpudp.backends`` (the backend
choice, a backend object's figures), never a backend itself. Outside the backends, a backend is used
through its kit only: the names its ``__all__`` lists (a package's, in its ``__init__``), never its
inner modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"gpudp": ROOT / "gpudp", "gpudp.problems": ROOT / "problems"}


def _modules() -> dict[str, Path]:
    out = {}
    for pkg, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            name = ".".join([pkg, *parts])
            if pkg == "gpudp" and parts[:1] == ["problems"]:
                continue
            out[name] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The gpudp modules ``name`` imports (resolved to modules where the name is one)."""
    tree = ast.parse(path.read_text(), str(path))
    is_pkg = path.name == "__init__.py"
    here = name.split(".") if is_pkg else name.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = (node.module or "").split(".") if node.module else []
            if node.level:
                base = here[: len(here) - node.level + 1] + base
            mod = ".".join(base)
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in MODULES else mod for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in MODULES:  # "gpudp.backends.cuda.cuda" -> "gpudp.backends.cuda"
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


#: the commands' own modules: they drive the plug-ins, as the command line does
COMMANDS = {"gpudp.cli", "gpudp.warmup"}


def _layer(name: str) -> str:
    if name in COMMANDS:
        return "cli"
    if name.startswith("gpudp.bench"):
        return "bench"
    if name.startswith("gpudp.problems"):
        return "problems"
    if name.startswith("gpudp.backends"):
        return "backends"
    return "core"


#: which layers each layer may import
ALLOWED = {
    "cli": {"cli", "bench", "problems", "core", "backends"},
    "bench": {"bench", "problems", "core", "backends"},
    "problems": {"problems", "core"},
    "core": {"core", "backends"},
    "backends": {"backends", "core"},
}
#: the core modules a backend may use (what kernels are made of), never the engine that drives it
BACKEND_MAY_USE = {
    "gpudp.cache",
    "gpudp.codegen",
    "gpudp.errors",
    "gpudp.jit",
    "gpudp.kernel",
    "gpudp.lazy_deps",
    "gpudp.memory",
    "gpudp.store",
    "gpudp.values",
}


def test_the_graph_is_read():
    assert "gpudp.engine" in GRAPH and "gpudp.problems.lcs" in GRAPH
    assert "gpudp.engine" in GRAPH["gpudp.problems.lcs"]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_layers(name):
    bad = []
    for target in sorted(GRAPH[name]):
        src, dst = _layer(name), _layer(target)
        ok = dst in ALLOWED[src]
        if src == "problems" and target == "gpudp.backends":
            ok = True  # the registry: the backend choice, a backend object's figures (never a backend)
        if src == "problems" and dst == "backends" and name.rsplit(".", 1)[-1] == "cuda":
            ok = target in ("gpudp.backends", "gpudp.backends.cuda")  # a feature's own CUDA module
        if src == "core" and dst == "backends" and name.rsplit(".", 1)[-1] == "cuda":
            ok = True
        if src == "backends" and dst == "core":
            ok = target in BACKEND_MAY_USE
        if not ok:
            bad.append(f"{name} ({src}) imports {target} ({dst})")
    assert not bad, "; ".join(bad)


def test_cuda_lives_in_cuda_modules():
    """Only the backends and modules named ``cuda`` import the CUDA compiler's home (and benchmarks,
    which may time the device directly)."""
    users = {n for n, deps in GRAPH.items() if "gpudp.backends.cuda" in deps}
    allowed = {
        n for n in users if n.startswith(("gpudp.backends", "gpudp.bench")) or n.rsplit(".", 1)[-1] == "cuda"
    }
    assert users == allowed, sorted(users - allowed)


#: the backends whose ``__all__`` is their kit (gpudp.backends.MODULES)
KITS = {"gpudp.backends.cpu", "gpudp.backends.cuda"}


def _declared_all(module: str) -> list[str]:
    """The literal ``__all__`` of ``module`` (read, not imported)."""
    for node in ast.parse(MODULES[module].read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return []


def _kit_uses(name: str, path: Path) -> tuple[dict[str, set[str]], list[str]]:
    """The names ``name`` takes from each backend (``from B import x``, and ``b.x`` where ``b`` is
    the backend's module bound by an import), and its imports of a backend's inner modules."""
    tree = ast.parse(path.read_text(), str(path))
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    uses: dict[str, set[str]] = {k: set() for k in KITS}
    inner, bound = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = (node.module or "").split(".") if node.module else []
            if node.level:
                base = here[: len(here) - node.level + 1] + base
            mod = ".".join(base)
            for a in node.names:
                if mod in KITS:
                    uses[mod].add(a.name)
                elif f"{mod}.{a.name}" in KITS:
                    bound[a.asname or a.name] = f"{mod}.{a.name}"
                elif any(mod.startswith(k + ".") for k in KITS):
                    inner.append(f"{name} imports from {mod}")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in KITS and a.asname:
                    bound[a.asname] = a.name
                elif any(a.name.startswith(k + ".") for k in KITS):
                    inner.append(f"{name} imports {a.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
            uses[bound[node.value.id]].add(node.attr)
    return uses, inner


def test_outside_the_backends_only_the_kit_is_used():
    """A shape, a feature or a plug-in takes from a backend only the names its ``__all__`` declares,
    from the backend itself (``gpudp.backends.cuda``, not ``gpudp.backends.cuda.driver``); and the kit
    holds no name that nothing outside uses (it is the exact list)."""
    kits = {k: set(_declared_all(k)) for k in KITS}
    bad, used = [], {k: set() for k in KITS}
    for name, path in sorted(MODULES.items()):
        if name.startswith("gpudp.backends"):
            continue
        uses, inner = _kit_uses(name, path)
        bad += inner
        for k, names in uses.items():
            used[k] |= names
            bad += [f"{name} uses {k}.{n}, not in its __all__" for n in sorted(names - kits[k])]
    bad += [
        f"{k}.__all__ lists {n}, which nothing outside the backends uses"
        for k in KITS
        for n in kits[k] - used[k]
    ]
    assert not bad, "; ".join(bad)


def test_every_kit_name_exists():
    import importlib

    for k in KITS:
        mod = importlib.import_module(k)
        missing = [n for n in mod.__all__ if not hasattr(mod, n) or n.startswith("_")]
        assert not missing, (k, missing)


def test_one_simulator_switch_and_one_pinned_pool():
    """The simulator is asked about in the backends only (features take ``sim_geometry``), and
    page-locked memory is allocated in the cuda backend only (its one pool and its own staging)."""
    bad = []
    for name, path in MODULES.items():
        if name.startswith("gpudp.backends"):
            continue
        text = path.read_text()
        for word in ("NUMBA_ENABLE_CUDASIM", "is_simulator", "pinned_array", "pinned_empty", "mapped_array"):
            if word in text:
                bad.append(f"{name} uses {word}")
    assert not bad, bad


def test_no_cycles():
    """No module imports a module that (through others) imports it back."""
    index, low, stack, on, cycles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


def test_the_engine_reaches_backends_through_the_registry():
    """The engine and the grid and layered shapes' package (whose lowerings are the backends
    themselves) ask backend objects (``gpudp.backends.get``); they import no backend's module."""
    for name in ("gpudp.engine", "gpudp.grid", "gpudp.grid.plan", "gpudp.grid.result"):
        assert {t for t in GRAPH[name] if t.startswith("gpudp.backends")} <= {"gpudp.backends"}, name
    assert "gpudp.backends" in GRAPH["gpudp.grid"]


def test_every_package_is_installed():
    """pyproject.toml lists the packages a wheel holds: a folder of modules missing from the list
    works in an editable install (as CI runs) and is absent from ``pip install .``."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {"gpudp.data"}
    for top, name in (("gpudp", "gpudp"), ("problems", "gpudp.problems")):
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top).parts
            found.add(".".join((name, *rel)))
    assert found == listed, {"not listed": sorted(found - listed), "listed, absent": sorted(listed - found)}


def test_no_module_binds_a_constant_twice():
    """A module-level ``NAME = ...`` (an upper-case tuning constant) is bound once: a second binding
    further down silently changes the first's users (the blocked layered kernel once ran with the
    traceback blocks' thread count through a shared ``BLOCK_THREADS``)."""
    twice = []
    for name, path in sorted(MODULES.items()):
        seen: dict[str, int] = {}
        for node in ast.parse(path.read_text(), str(path)).body:
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            for t in targets:
                if isinstance(t, ast.Name) and t.id.isupper():
                    if t.id in seen:
                        twice.append(f"{name}.{t.id} (lines {seen[t.id]} and {node.lineno})")
                    seen.setdefault(t.id, node.lineno)
    assert not twice, "; ".join(twice)


def test_no_module_past_800_lines():
    """One idea a module (issue 36): a file of gpudp/ or problems/ that grows past 800 lines is split
    by idea, not left to grow."""
    root = Path(__file__).resolve().parent.parent
    long = {
        str(p.relative_to(root)): n
        for folder in ("gpudp", "problems")
        for p in (root / folder).rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 800
    }
    assert not long, f"split these by idea: {long}"


#: the backends' names: a branch on one of them belongs in the backends, the benchmarks or the
#: command line's option handling; elsewhere code asks the lowering registry (gpudp.lowering) or
#: the backend object (gpudp.backends.get(name)) what to run
BACKEND_NAMES = {"cpu", "cuda"}


def _names_a_backend(node) -> bool:
    """Whether ``node`` is the string of a backend's name, or a tuple/list/set holding one."""
    if isinstance(node, ast.Constant):
        return node.value in BACKEND_NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_a_backend(e) for e in node.elts)
    return False


def _may_name_backends(name: str) -> bool:
    return name in COMMANDS or name.startswith(("gpudp.backends", "gpudp.bench"))


def test_no_branch_on_a_backends_name():
    """Issue 36: no ``backend == "cuda"`` (``!=``, ``in (...)``, ``match``) outside the backends, the
    benchmarks and the command line: a new backend is a driver plus its lowerings, found through the
    registry, and no shape or plug-in has to learn its name."""
    bad = []
    for name, path in sorted(MODULES.items()):
        if _may_name_backends(name):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Compare) and any(
                isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn, ast.Is, ast.IsNot)) for op in node.ops
            ):
                if any(_names_a_backend(x) for x in (node.left, *node.comparators)):
                    bad.append(f"{name}:{node.lineno}")
            elif isinstance(node, ast.MatchValue) and _names_a_backend(node.value):
                bad.append(f"{name}:{node.lineno}")
    assert not bad, "branches on a backend's name: " + ", ".join(bad)


def test_no_underscore_name_taken_across_modules():
    """Issue 36: a module uses another module's public names only (``from m import _x`` and
    ``m._x`` are private reaches: make the name public on the layer below, or move it)."""
    bad = []
    for name, path in sorted(MODULES.items()):
        tree = ast.parse(path.read_text(), str(path))
        bound = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        bad.append(f"{name}:{node.lineno} imports {a.name}")
                    bound[a.asname or a.name] = True
            elif isinstance(node, ast.Import):
                for a in node.names:
                    bound[(a.asname or a.name).split(".")[0]] = True
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in bound
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                bad.append(f"{name}:{node.lineno} uses {node.value.id}.{node.attr}")
    assert not bad, "; ".join(bad)
