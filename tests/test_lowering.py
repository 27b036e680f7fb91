"""The lowering registry (gpudp.lowering): declared families, lookups, and the errors that list what
exists; every shape lowered on both backends, and gpudp.sweep's dispatch by a class's family."""

import pytest

from gpudp import (
    GridRecurrence,
    IntervalRecurrence,
    Recurrence,
    engine,
    frontier,
    grid,
    grid3,
    interval,
    lowering,
    many,
    sweep,
)
from gpudp.errors import BackendError, ContractError

#: the packages that declare their lowerings when imported: imported above, before any test swaps
#: the registry's table out (the first test), so that their declarations land in the real one
PACKAGES = (engine, frontier, grid, grid3, interval, many)


def test_declared_lowerings_are_found_and_missing_ones_listed(monkeypatch):
    monkeypatch.setattr(lowering, "_DECLARED", {})
    lowering.declare("toy", cpu="gpudp.errors")
    lowering.declare("toy", cpu="gpudp.errors")  # again, the same: harmless
    assert lowering.get("toy", "cpu").__name__ == "gpudp.errors"
    assert lowering.declared() == {"toy": ("cpu",)}
    assert lowering.missing(("cpu", "cuda")) == {"toy": ("cuda",)}
    with pytest.raises(BackendError, match=r"'toy' has no lowering on backend 'cuda'; it runs on cpu"):
        lowering.get("toy", "cuda")
    with pytest.raises(BackendError, match=r"no lowering of 'other' is declared; declared: toy \(cpu\)"):
        lowering.get("other", "cpu")
    with pytest.raises(BackendError, match="declared twice"):
        lowering.declare("toy", cpu="gpudp.inputs")


#: every shape of the engine, and the engines beside it, with the module that lowers it on each
#: backend and the name the driver takes from that module
LOWERINGS = {
    "grid": ("gpudp.backends.cpu", "gpudp.backends.cuda", "BACKEND"),
    "layered": ("gpudp.backends.cpu", "gpudp.backends.cuda", "BACKEND"),
    "interval": ("gpudp.interval.cpu", "gpudp.interval.cuda", "run"),
    "grid3": ("gpudp.grid3.cpu", "gpudp.grid3.cuda", "run"),
    "many": ("gpudp.many.cpu", "gpudp.many.cuda", "Runner"),
    "frontier": ("gpudp.frontier.search", "gpudp.frontier.cuda", "make_search"),
}


def test_every_shape_is_lowered_on_both_backends():
    assert set(engine.SHAPES) == {"grid", "layered", "interval", "grid3"}  # a new one: list it above
    missing = lowering.missing(("cpu", "cuda"))
    assert {f: missing[f] for f in LOWERINGS if f in missing} == {}
    declared = lowering.declared()
    assert {f: declared.get(f) for f in LOWERINGS} == {f: ("cpu", "cuda") for f in LOWERINGS}
    for family, (cpu, _, entry) in LOWERINGS.items():
        module = lowering.get(family, "cpu")
        assert module.__name__ == cpu, family
        assert hasattr(module, entry), (family, entry)


@pytest.mark.sim
def test_every_cuda_lowering_has_its_entry_point():
    for family, (_, cuda, entry) in LOWERINGS.items():
        module = lowering.get(family, "cuda")
        assert module.__name__ == cuda, family
        assert hasattr(module, entry), (family, entry)


class Torus(GridRecurrence):
    """A grid that names a shape the engine does not have."""

    family = "torus"

    def shape(self):
        return (2, 2)

    @staticmethod
    def cell(i, j, up, left, diag):
        return up + 1


class Bare(Recurrence):
    """A recurrence of no shape: it subclasses the common base only."""

    @staticmethod
    def cell(i, j):
        return 0


def test_a_class_naming_no_known_shape_is_refused_with_the_shapes_listed():
    shapes = "the engine's shapes are grid, layered, interval, grid3"
    torus = f"Torus.family names the shape 'torus', which the engine does not have: {shapes}"
    with pytest.raises(ContractError, match=torus):
        sweep(Torus(), backend="cpu")
    with pytest.raises(ContractError, match=f"Bare.family names no shape: {shapes}"):
        sweep(Bare(), backend="cpu")
    with pytest.raises(ContractError, match="Torus.family names the shape 'torus'"):
        engine.plan_sweep(Torus(), "cpu")


class Chain(IntervalRecurrence):
    def size(self):
        return 3

    @staticmethod
    def cell(i, j, T):
        return j - i


def test_sweep_and_plan_sweep_dispatch_by_family_through_the_table(monkeypatch):
    """A recurrence reaches its shape's driver by its family alone: a class of a shape added to the
    table is swept by that shape's driver, whatever its base class."""
    calls = []
    toy = engine.Shape(lambda call: calls.append((type(call.rec).__name__, call.backend)) or "swept")
    monkeypatch.setitem(engine.SHAPES, "torus", toy)
    assert sweep(Torus(), backend="cpu", progress=False) == "swept"
    assert calls == [("Torus", "cpu")]
    with pytest.raises(ContractError, match="Torus is of the 'torus' shape, which its own driver plans"):
        engine.plan_sweep(Torus(), "cpu")
    with pytest.raises(ContractError, match="Chain is of the 'interval' shape"):
        engine.plan_sweep(Chain(), "cpu")
    assert sweep(Chain(), backend="cpu").value(0, 2) == 2  # the interval driver, by its family


# ----------------------------------------------------------------------------------------------------
# The plug-ins' own families: each step a plug-in runs per backend has a cpu and a cuda lowering

#: family -> the names its every lowering module must define (what the plug-in calls on it)
PLUGIN_FAMILIES = {
    "subset_sum.two_list": ("two_list", "generate_host", "prune_pairs", "free_memory", "BLOCK"),
    "lcs.lengths": ("launch",),
    "lcs.subsequences": ("refusal", "subsequences"),
    "edit_distance.distances": ("launch",),
    "tsp.batch": ("launch",),
    "knapsack.batch": ("launch_batch",),
}


def _import_plugins():
    """The plug-ins as a user imports them (their families are declared on import)."""
    import gpudp.problems.edit_distance
    import gpudp.problems.knapsack
    import gpudp.problems.knapsack.sparse
    import gpudp.problems.lcs
    import gpudp.problems.subset_sum
    import gpudp.problems.tsp  # noqa: F401


def test_every_plugin_family_has_a_cpu_and_a_cuda_lowering():
    _import_plugins()
    declared = lowering.declared()
    assert sorted(f for f in PLUGIN_FAMILIES if f not in declared) == []
    missing = lowering.missing(("cpu", "cuda"))
    assert {f: missing[f] for f in PLUGIN_FAMILIES if f in missing} == {}


@pytest.mark.parametrize("family", sorted(PLUGIN_FAMILIES))
def test_a_plugin_family_s_cpu_lowering_imports_and_has_its_steps(family):
    _import_plugins()
    module = lowering.get(family, "cpu")
    assert [name for name in PLUGIN_FAMILIES[family] if not hasattr(module, name)] == []


@pytest.mark.sim
@pytest.mark.parametrize("family", sorted(PLUGIN_FAMILIES))
def test_a_plugin_family_s_cuda_lowering_has_the_same_steps(family):
    _import_plugins()
    module = lowering.get(family, "cuda")
    assert [name for name in PLUGIN_FAMILIES[family] if not hasattr(module, name)] == []
