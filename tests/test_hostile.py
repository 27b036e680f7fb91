"""The hostile-input corpus (tests/data/hostile/): every case gets its checked right answer or one line
``gpudp: error: ...`` and exit 2 from the command line, never a traceback or a wrong value, and
leaves nothing behind: no file in the temporary folder, no child process."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from gpudp.cli import main

HERE = Path(__file__).parent / "data" / "hostile"


def _makers(tmp: Path) -> dict:
    """Inputs made at test time: too large, binary or not a regular file to keep in the repo."""

    def truncated_gz():
        p = tmp / "truncated.fa.gz"
        p.write_bytes(gzip.compress(b">x\n" + b"ACGT" * 5000 + b"\n")[:60])
        return str(p)

    def corrupt_gz():
        p = tmp / "corrupt.fa.gz"
        good = bytearray(gzip.compress(b">x\n" + b"ACGT" * 500 + b"\n"))
        good[20:30] = b"\xff" * 10
        p.write_bytes(bytes(good))
        return str(p)

    return {"dev-zero": lambda: "/dev/zero", "truncated-gz": truncated_gz, "corrupt-gz": corrupt_gz}


def _cases():
    out = []
    for folder in sorted(p for p in HERE.iterdir() if p.is_dir()):
        spec = json.loads((folder / "expected.json").read_text())
        for name, case in spec.items():
            if not name.startswith("_"):
                out.append(pytest.param(folder.name, name, case, id=f"{folder.name}/{name}"))
    return out


def _children() -> set[int]:
    """This process's child processes (zombies too: a child never waited for is left behind)."""
    out = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                out.update(int(p) for p in f.read().split())
        except OSError:
            continue
    return out


@contextlib.contextmanager
def _nothing_left(tmp: Path, monkeypatch):
    """Temporary files and spill folders go to ``tmp`` (TMPDIR, GPUDP_SPILL_DIR), which must be empty
    again at the end, and no child process may outlive the block."""
    tmp.mkdir()
    for var in ("TMPDIR", "GPUDP_SPILL_DIR"):
        monkeypatch.setenv(var, str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    before = _children()
    yield
    assert sorted(os.listdir(tmp)) == [], "left behind in the temporary folder"
    assert _children() - before == set(), "child processes left behind"


def test_the_harness_sees_what_is_left_behind(tmp_path, monkeypatch):
    with pytest.raises(AssertionError, match="temporary folder"):
        with _nothing_left(tmp_path / "a", monkeypatch):
            tempfile.mkdtemp(prefix="gpudp-store-")
    child = None
    try:
        with pytest.raises(AssertionError, match="child processes"):
            with _nothing_left(tmp_path / "b", monkeypatch):
                child = subprocess.Popen(["sleep", "30"])
    finally:
        if child is not None:
            child.kill()
            child.wait()


@pytest.mark.parametrize("command, name, case", _cases())
def test_hostile(command, name, case, tmp_path, capsys, monkeypatch):
    with _nothing_left(tmp_path / "tmp", monkeypatch):
        _check_case(command, name, case, tmp_path, capsys)


def _check_case(command, name, case, tmp_path, capsys):
    folder = HERE / command
    makers = _makers(tmp_path)
    files = []
    for f in case.get("files", [name]):
        files.append(makers[f[5:]]() if f.startswith("make:") else str(folder / f))
    argv = ["solve", command, *files, "--backend", "cpu", "--json", *case.get("args", [])]
    code = main(argv)
    out, err = capsys.readouterr()
    if "error" in case:
        lines = err.strip().splitlines()
        assert code == 2, f"exit {code}, stdout {out[:300]!r}, stderr {err[-1500:]!r}"
        assert len(lines) == 1 and lines[0].startswith("gpudp: error:"), err[-1500:]
        assert case["error"].lower() in lines[0].lower(), lines[0]
    else:
        assert code == 0, err[-1500:]
        got = json.loads(out)
        assert got["value"] == case["value"], (got["value"], case["value"])
        assert got.get("optimal", True) is True
