"""The command line: solve, info, demo, bench, and one-line errors with a non-zero exit."""

import gzip
import json
import os
import subprocess
import sys

from gpudp.cli import main


def run(*args):
    return subprocess.run(
        [sys.executable, "-m", "gpudp.cli", *args], capture_output=True, text=True, timeout=600
    )


def test_solve_lcs_json(tmp_path):
    a, b = tmp_path / "a.fa", tmp_path / "b.fa"
    a.write_text(">a\nacgtacgt\n")
    b.write_text(">b\nTTACG\n")
    r = run("solve", "lcs", str(a), str(b), "--backend", "cpu", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["value"] == 4 and out["solution"] == "TACG" and out["stats"]["backend"] == "cpu"
    assert out["stats"]["method"].startswith("bit-parallel")  # the cpu's default here
    r = run("solve", "lcs", str(a), str(b), "--backend", "cpu", "--json", "--case-sensitive")
    assert json.loads(r.stdout)["value"] == 0
    assert main(["solve", "lcs", str(a), str(b), "--backend", "cpu", "--method", "wavefront", "--json"]) == 0


def test_errors_are_one_line_and_exit_nonzero(tmp_path, capsys):
    assert main(["solve", "lcs", str(tmp_path / "missing.fa"), str(tmp_path / "x.fa")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gpudp: error:")
    bad = tmp_path / "bad.fa"
    bad.write_bytes(b"\xff\xfe")
    assert main(["solve", "lcs", str(bad), str(bad)]) == 2
    assert "not ASCII" in capsys.readouterr().err


def test_an_error_about_a_typed_option_names_the_option(tmp_path, capsys):
    """A solver's InputError about a keyword the command line set names the option as typed."""
    a = tmp_path / "a.fa"
    a.write_text(">a\nACGTAC\n")
    for opt in (["--time-limit", "5"], ["--store=full"]):
        assert main(["solve", "lcs", str(a), str(a), "--method", "bitparallel", *opt]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"gpudp: error: {opt[0].split('=')[0]}: "), err


def test_info_and_demo(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "numba" in out and "default_backend" in out
    assert main(["demo", "--backend", "cpu", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["problem"] == "lcs" and d["value"] > 5000 and d["len_a"] == 9181


def test_bench_lcs_writes_json(tmp_path):
    out = tmp_path / "b.json"
    r = run("bench", "lcs", "--sizes", "512", "--repeat", "1", "--backends", "cpu", "--out", str(out))
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text())
    assert d["benchmark"] == "lcs" and d["results"][0]["gcups_solve"] > 0
    peers = {p.get("peer", "") for p in d["peers"]}
    assert any("numba" in p for p in peers) and any("rapidfuzz" in p for p in peers)
    lengths = {r["lcs_length"] for r in d["results"]} | {
        p["lcs_length"] for p in d["peers"] if "lcs_length" in p
    }
    assert len(lengths) == 1  # every backend and peer agrees on the length


def test_bench_knapsack_bb_auto_takes_the_rule(tmp_path):
    """`--method auto` runs the bench's instances through the knapsack front: Shen's small
    integer tables go to the dense DP, whose optima the B&B runs must agree with."""
    runs = {}
    for method in ("auto", "bb"):
        out = tmp_path / f"{method}.json"
        r = run(
            "bench", "knapsack-bb", "--classes", "shen", "--shen-sizes", "40", "--shen-seeds", "2",
            "--backends", "cpu", "--method", method, "--out", str(out),
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        runs[method] = json.loads(out.read_text())["runs"]
    assert [x["method"] for x in runs["auto"]] == ["dp", "dp"]
    assert [x["method"] for x in runs["bb"]] == ["bb", "bb"]
    assert all(x["solved"] for x in runs["auto"] + runs["bb"])
    assert [x["value"] for x in runs["auto"]] == [x["value"] for x in runs["bb"]]


def test_gzip_fasta_through_a_pipe(tmp_path, capsys):
    """A gzip FASTA given as a pipe (`/dev/stdin`, `<(zcat ...)`'s opposite) is known by its magic
    bytes, not by a name or a seek back, and read like the file."""
    b = tmp_path / "b.fa"
    b.write_text(">b\nTTACG\n")
    r, w = os.pipe()
    try:
        os.write(w, gzip.compress(b">a\nacgtacgt\n"))
        os.close(w)
        assert main(["solve", "lcs", f"/dev/fd/{r}", str(b), "--backend", "cpu", "--json"]) == 0
    finally:
        os.close(r)
    out = json.loads(capsys.readouterr().out)
    assert out["value"] == 4 and out["solution"] == "TACG"


def test_bench_out_is_checked_before_the_run(tmp_path, monkeypatch, capsys):
    import gpudp.bench.lcs as bench_lcs

    ran = []
    monkeypatch.setattr(bench_lcs, "cli_bench", lambda args: ran.append(args) or {})
    for out, why in [(tmp_path / "missing" / "x.json", "no folder"), (tmp_path, "is a folder")]:
        assert main(["bench", "lcs", "--backends", "cpu", "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("gpudp: error: --out:") and why in err[0], err
    assert ran == []
    assert main(["bench", "lcs", "--backends", "cpu", "--out", str(tmp_path / "b.json")]) == 0
    assert len(ran) == 1 and json.loads((tmp_path / "b.json").read_text()) == {}


def test_bench_json_on_stdout_stays_json(tmp_path, capsys):
    """Without --out the JSON is all of stdout: the lines a benchmark prints as it runs (bench
    batch's, the knapsack benches' JSON lines) go to stderr meanwhile; they came before the JSON on
    stdout, which no JSON reader could then read. With --out they stay on stdout, as before."""
    argv = ["bench", "batch", "--backends", "cpu", "--pairs", "4", "--length", "10", "--repeat", "1"]
    argv += ["--traceback-pairs", "1", "--peers", "none"]
    assert main(argv) == 0
    got = capsys.readouterr()
    assert json.loads(got.out)["benchmark"] == "batch"
    assert "problem lcs, run solve_many" in got.err
    assert main([*argv, "--out", str(tmp_path / "b.json")]) == 0
    assert "problem lcs, run solve_many" in capsys.readouterr().out
    assert json.loads((tmp_path / "b.json").read_text())["benchmark"] == "batch"


def test_a_closed_output_pipe_is_a_quiet_exit():
    """`gpudp solve lcs A B --pairs all | head -1`: the reader goes away early; the command stops
    with 141 (128 + SIGPIPE) and no message, not `gpudp: error: [Errno 32] Broken pipe` (`info`
    here, whose output is all still to come: a batch's compile would take seconds)."""
    p = subprocess.Popen(
        [sys.executable, "-m", "gpudp.cli", "info"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=600) == 141 and err == "", (p.returncode, err)
