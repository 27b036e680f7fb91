"""The lowering registry (gpudp.lowering): declared families, lookups, and the errors that list what
exists."""

import pytest

from gpudp import lowering
from gpudp.errors import BackendError


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


# ----------------------------------------------------------------------------------------------------
# The plug-ins' own families: each step a plug-in runs per backend has a cpu and a cuda lowering

#: family -> the names its every lowering module must define (what the plug-in calls on it)
PLUGIN_FAMILIES = {
    "subset_sum.two_list": ("two_list", "generate_host", "prune_pairs", "free_memory", "BLOCK", "STEP_COST"),
    "lcs.lengths": ("launch", "READS_DEVICE_ARRAYS"),
    "lcs.subsequences": ("refusal", "subsequences"),
    "edit_distance.distances": ("launch", "READS_DEVICE_ARRAYS"),
    "tsp.batch": ("launch",),
    "knapsack.batch": ("launch_batch",),
    "knapsack.sparse.lists": ("DEVICE_LISTS",),
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
