"""The example scripts (examples/*.py) as modules, for the tests that hold them to references."""

import importlib.util
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load_example(name: str):
    """``examples/<name>.py``, imported once per test module that asks, under its own name (``name``)
    in ``sys.modules``: its kernels go to the disk cache like a user's, and a cached kernel names
    that module, which numba imports again when it loads the kernel. ``python examples/<name>.py``
    finds a module of that name (its folder is first on its ``sys.path``), as do the Dask workers
    (tests/test_distributed.py puts examples/ on theirs), so the test modules and the subprocesses
    that run the example as a script share the kernels instead of compiling the same one in each.
    (Under any other name, say ``gpudp_example_<name>``, a script could not import it: numba would
    drop the entry and compile again.)"""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
