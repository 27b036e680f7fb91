"""The example scripts (examples/*.py) as modules, for the tests that hold them to references."""

import importlib.util
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load_example(name: str):
    """``examples/<name>.py``, imported once per test module that asks. The module is registered in
    ``sys.modules`` (as a script's ``__main__`` is), so its kernels go to the disk cache like a user's:
    the test modules and the subprocesses that run the example as a script share them, instead of
    compiling the same kernel in each."""
    spec = importlib.util.spec_from_file_location(f"gpudp_example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
