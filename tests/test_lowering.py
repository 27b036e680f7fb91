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
