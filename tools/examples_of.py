"""The project's examples (``examples/NAME.py``) and other scripts loaded as modules, for the tools
that time them (run as ``python tools/TOOL.py``, which puts this folder on ``sys.path``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def module(path: Path | str):
    """The Python file at ``path`` as a module, registered in ``sys.modules`` under its stem (so that
    numba's disk cache can import it again when it loads a kernel of its recurrence)."""
    path = Path(path)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    return mod


def example(name: str):
    """``examples/<name>.py`` as a module (:func:`module`)."""
    return module(EXAMPLES / f"{name}.py")
