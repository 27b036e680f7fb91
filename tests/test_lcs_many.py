"""Batches of LCS lengths (``lcs.solve_many``): the bit-parallel path against a plain-Python DP, on
the cpu and (tiny) in the CUDA simulator; pattern lengths across word boundaries; big alphabets;
per-pair errors; the checked path with ``traceback=True``; the cross-check of ``verify``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_lcs import lcs_length  # the textbook table, in pure Python

from gpudp import CheckError, InputError
from gpudp.problems import lcs
from gpudp.problems.lcs import bitparallel

symbols = st.sampled_from([2, 4, 20, 256])


@st.composite
def batches(draw, max_len=150, max_pairs=12):
    sigma = draw(symbols)
    n = draw(st.integers(0, max_pairs))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        m, k = rng.integers(0, max_len + 1, 2)
        out.append(
            (
                rng.integers(0, sigma, m).astype(np.uint8 if sigma <= 256 else np.int64),
                rng.integers(0, sigma, k).astype(np.uint8 if sigma <= 256 else np.int64),
            )
        )
    return out


def reference(pairs):
    return [lcs_length(list(a), list(b)) for a, b in pairs]


@settings(max_examples=40)
@given(batches())
def test_cpu_lengths_match_the_reference(pairs):
    r = lcs.solve_many(pairs, backend="cpu", verify=1)
    assert r.values.tolist() == reference(pairs) and not r.errors
    assert r.stats.cells == sum(len(a) * len(b) for a, b in pairs)


@pytest.mark.parametrize("m", [1, 63, 64, 65, 127, 128, 129, 200])
def test_patterns_across_word_boundaries(m):
    rng = np.random.default_rng(m)
    pairs = [
        (rng.integers(0, 3, m).astype(np.uint8), rng.integers(0, 3, k).astype(np.uint8))
        for k in (m, 2 * m, 300)
    ]
    pairs.append((np.zeros(m, np.uint8), np.zeros(m + 5, np.uint8)))  # all equal: the whole pattern
    assert bitparallel.lengths_cpu(bitparallel.pack(pairs)).tolist() == reference(pairs)


def test_big_alphabets_and_mixed_types():
    rng = np.random.default_rng(3)
    a = rng.integers(-(2**62), 2**62, 300, dtype=np.int64)
    b = np.concatenate([a[::3], rng.integers(-(2**62), 2**62, 50, dtype=np.int64)])
    pairs = [
        (a, b),
        ("héllo wörld", "hello world"),
        ([1, 2, 3], np.array([3, 2, 1], np.uint64)),
        (b"abc", b"cab"),
    ]
    r = lcs.solve_many(pairs, backend="cpu")
    assert r.values.tolist() == [lcs.solve(x, y, backend="cpu").value for x, y in pairs]


def test_a_bad_pair_does_not_stop_the_batch():
    pairs = [("AC", "CA"), (np.array([0.5]), "x"), ("ab", b"ab"), ("only one",), ("GATTACA", "TACCA")]
    r = lcs.solve_many(pairs, backend="cpu")
    assert r.values.tolist() == [1, -1, -1, -1, 4]
    assert sorted(r.errors) == [1, 2, 3] and "float" in r.errors[1] and "str pairs only" in r.errors[2]


def test_traceback_gives_checked_solutions():
    pairs = [("GATTACA", "TACCA"), ("", "X"), ([1.5], [1])]
    r = lcs.solve_many(pairs, backend="cpu", traceback=True, progress=False)
    assert r.values.tolist() == [4, 0, -1] and list(r.errors) == [2]
    assert r.solutions[0].checked and r.solutions[0].solution == "TACA" and r.solutions[2] is None


def test_verify_catches_a_wrong_batch(monkeypatch):
    import dataclasses

    wrong = dataclasses.replace(lcs._SOLVER, cpu=lambda packed: np.zeros(len(packed.pat_off) - 1, np.int64))
    monkeypatch.setattr(lcs, "_SOLVER", wrong)
    with pytest.raises(CheckError, match="the batch gave LCS length 0"):
        lcs.solve_many([("AAA", "AAA")] * 4, backend="cpu", verify=2)


def test_empty_batch():
    r = lcs.solve_many([], backend="cpu")
    assert r.values.size == 0 and r.stats.cells == 0


@pytest.mark.sim
def test_cuda_lengths_match_the_reference():
    rng = np.random.default_rng(7)
    pairs = [
        (rng.integers(0, 4, m).astype(np.uint8), rng.integers(0, 4, k).astype(np.uint8))
        for m, k in [(0, 5), (5, 0), (1, 1), (40, 70), (64, 64), (65, 90), (130, 20), (3, 3)]
    ]
    r = lcs.solve_many(pairs, backend="cuda", verify=1)
    assert r.stats.backend == "cuda" and r.values.tolist() == reference(pairs)
    a, b = rng.integers(0, 3, (6, 70)).astype(np.uint8), rng.integers(0, 3, (6, 50)).astype(np.uint8)
    assert lcs.solve_many((a, b), backend="cuda").values.tolist() == reference(list(zip(a, b, strict=True)))


@pytest.mark.gpu
def test_gpu_lengths_match_the_cpu_at_scale():
    rng = np.random.default_rng(8)
    pairs = [
        (rng.integers(0, 4, 1000).astype(np.uint8), rng.integers(0, 4, 1000).astype(np.uint8))
        for _ in range(3000)
    ]
    gpu = lcs.solve_many(pairs, backend="cuda")
    cpu = lcs.solve_many(pairs, backend="cpu", verify=0)
    assert np.array_equal(gpu.values, cpu.values)


def test_two_arrays_of_rows_are_a_batch_of_pairs():
    rng = np.random.default_rng(11)
    a = rng.integers(0, 5, (30, 70)).astype(np.uint8)
    b = rng.integers(0, 5, (30, 90)).astype(np.int64)
    r = lcs.solve_many((a, b), backend="cpu")
    assert r.values.tolist() == reference(list(zip(a, b, strict=True))) and r.stats.extra["pairs"] == 30
    assert lcs.solve_many((b, a), backend="cpu").values.tolist() == r.values.tolist()
    with pytest.raises(InputError, match="rows"):
        lcs.solve_many((a, b[:3]), backend="cpu")
    with pytest.raises(InputError, match="integers"):
        lcs.solve_many((a.astype(float), b), backend="cpu")


def test_command_line_batches_over_fasta_records(tmp_path, capsys):
    import json

    from gpudp.cli import main

    a, b = tmp_path / "a.fa", tmp_path / "b.fa.gz"
    a.write_text(">r1\nGATTACA\n>r2 second\nacgt\nAC\n")
    import gzip

    b.write_bytes(gzip.compress(b">s1\nTACCA\n>s2\nTTTT\n"))
    assert main(["solve", "lcs", str(a), str(b), "--pairs", "all", "--backend", "cpu"]) == 0
    out = capsys.readouterr()
    rows = [line.split("\t") for line in out.out.splitlines()]
    assert rows[0] == ["name_a", "name_b", "len_a", "len_b", "lcs"]
    assert [r[4] for r in rows[1:]] == ["4", "2", "3", "1"] and rows[3][0] == "r2 second"
    assert "4 pairs" in out.err
    assert (
        main(["solve", "lcs", str(a), str(b), "--pairs", "zip", "--json", "--traceback", "--backend", "cpu"])
        == 0
    )
    got = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(g["lcs"], g["subsequence"]) for g in got] == [(4, "TACA"), (1, "T")]
    one = tmp_path / "one.txt"
    one.write_text("TACCA\n")
    assert main(["solve", "lcs", str(a), str(one), "--pairs", "zip", "--backend", "cpu"]) == 2
    assert "as many records" in capsys.readouterr().err
    assert lcs.read_fasta_records(one) == [("one.txt", "TACCA")]
    bad = tmp_path / "bad.fa"
    bad.write_text("junk\n>r1\nAC\n")
    with pytest.raises(InputError, match="line 1: text before the first"):
        lcs.read_fasta_records(bad)
