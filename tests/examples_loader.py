"""The example scripts (examples/*.py) as modules, for the tests that hold them to references."""

import importlib.util
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load_example(name: str):
    """``examples/<name>.py``, imported once per test module that asks."""
    spec = importlib.util.spec_from_file_location(f"gpudp_example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
