"""docs/tutorial.md: every snippet runs as shown, and what it quotes is what the examples say (a
file of its own: the suite's workers take a file each, and this one test takes as long as many)."""

from __future__ import annotations

import doctest
import linecache
import re
import shlex
import subprocess
import sys
import types
from pathlib import Path

TUTORIAL = Path(__file__).resolve().parent.parent / "docs" / "tutorial.md"
BLOCK = re.compile(r"(?:<!-- quoted from (\S+) -->\n)?```(\w+)\n(.*?)```", re.S)


def test_tutorial_snippets_run_as_shown(monkeypatch):
    text = TUTORIAL.read_text()
    root = TUTORIAL.parent.parent
    blocks = BLOCK.findall(text)
    assert {kind for _, kind, _ in blocks} == {"console", "python", "pycon"}
    # the snippets run in a module found in sys.modules, as a reader's script or session (__main__)
    # is: their kernels go to the disk cache, shared with the examples' tests and scripts
    module = types.ModuleType("tutorial")
    monkeypatch.setitem(sys.modules, "tutorial", module)
    namespace = module.__dict__
    for n, (quoted, _, code) in enumerate(blocks):
        if quoted:
            assert code in (root / quoted).read_text(), f"block {n} is not verbatim in {quoted}"
    # the console blocks (each a script in a process of its own, needing nothing of the others) run
    # first: a kernel a script compiles is cached naming the module __main__, which every process
    # has, so the snippets below that quote the script's recurrence load it; compiled by a snippet
    # first, it would name the module "tutorial", which the script cannot import, and compile again
    for code in [code for _, kind, code in blocks if kind == "console"]:
        command, *expected = code.splitlines()
        assert command.startswith("$ python ")
        args = [sys.executable, *shlex.split(command[len("$ python ") :])]
        out = subprocess.run(args, cwd=root, capture_output=True, text=True, check=True).stdout
        assert out.splitlines() == expected
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for n, (_, kind, code) in enumerate(blocks):
        if kind == "python":  # its lines kept, as a script's file keeps them (a record cell's source is read)
            name = f"{TUTORIAL}:block{n}"
            linecache.cache[name] = (len(code), None, code.splitlines(True), name)
            exec(compile(code, name, "exec"), namespace)
        elif kind == "pycon":
            test = parser.get_doctest(code, namespace, f"block{n}", str(TUTORIAL), 0)
            report = []
            result = runner.run(test, out=report.append, clear_globs=False)
            assert result.failed == 0, "".join(report)
            namespace.update(test.globs)
