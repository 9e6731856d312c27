"""A short coverage-guided fuzz run (atheris/libFuzzer) of firmware_bridge.fuzz_atheris.

Seeded with every golden vector of docs/protocol.md: it must finish without a crash
(libFuzzer exits non-zero on any uncaught exception or failed invariant), and the
coverage libFuzzer measures must grow from the seed corpus, which proves the harness
is instrumented.  The 1.0 harness was not: reproduced here with --no-instrument, where
libFuzzer warns and the corpus collapses to one byte.  Long runs: see the module
docstring of firmware_bridge/fuzz_atheris.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from firmware_bridge import fuzz_atheris

pytestmark = pytest.mark.timeout(240)

FUZZ_SEED = 16  # libFuzzer's -seed: the same mutations every run
SMOKE_RUNS = 2000  # ~6 s on one core
_STATS = re.compile(r"#(\d+)\s+(INITED|DONE)\s+(?:cov: (\d+) ft: (\d+) )?corp: (\d+)/")


def _have_atheris() -> None:
    try:
        import atheris  # noqa: F401
    except ImportError:
        reason = ("atheris is not installed: the test extra installs it on x86_64 Linux with "
                  "Python before 3.13 only (docs/dependencies.md)")
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def _fuzz(corpus: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, tuple[int, ...]]]:
    run = subprocess.run(
        [sys.executable, "-m", "firmware_bridge.fuzz_atheris", str(corpus), *args,
         f"-seed={FUZZ_SEED}", "-max_len=512", "-timeout=20", "-rss_limit_mb=2048"],
        capture_output=True, text=True, timeout=200, cwd=Path(__file__).resolve().parents[2])
    stats = {}
    for match in _STATS.finditer(run.stderr):
        runs, label, cov, ft, corp = match.groups()
        stats[label] = (int(runs), int(cov or 0), int(ft or 0), int(corp))
    return run, stats


def test_seed_corpus_is_the_golden_vectors(tmp_path: Path) -> None:
    vectors = fuzz_atheris.golden_vectors()
    assert len(vectors) >= 45  # section 8: its tables and the 8.3-8.6 transcripts, deduplicated
    assert bytes.fromhex("02 02 02 06 01 03 e7 2f 00") in vectors  # 8.1 ACK ack=6
    assert fuzz_atheris.make_corpus(tmp_path) == 4 * (len(vectors) + 5)


def test_fuzz_smoke_run_finds_no_crash_and_coverage_grows(tmp_path: Path) -> None:
    _have_atheris()
    seeds = fuzz_atheris.make_corpus(tmp_path)
    run, stats = _fuzz(tmp_path, f"-runs={SMOKE_RUNS}")
    assert run.returncode == 0, run.stderr[-3000:]  # a crash or a broken invariant
    assert "no interesting inputs" not in run.stderr
    _, start_cov, start_ft, start_corpus = stats["INITED"]
    runs, end_cov, end_ft, end_corpus = stats["DONE"]
    print(f"fuzz smoke: seed {FUZZ_SEED}, {runs} runs, {seeds} seed files; coverage "
          f"{start_cov} -> {end_cov} edges, features {start_ft} -> {end_ft}, corpus "
          f"{start_corpus} -> {end_corpus} inputs")
    # libFuzzer's count also holds the seed inputs it replayed at start, which vary with
    # the golden vectors: at least the runs asked for.
    assert runs >= SMOKE_RUNS
    assert start_cov >= 250  # the golden vectors already reach the decoders and the link
    assert end_cov > start_cov and end_ft > start_ft and end_corpus > start_corpus
    assert len(list(tmp_path.iterdir())) > seeds  # new inputs were kept


def test_finding_8_reproduced_without_instrumentation_the_fuzzer_is_blind(tmp_path: Path) -> None:
    _have_atheris()
    fuzz_atheris.make_corpus(tmp_path)
    run, stats = _fuzz(tmp_path, "--no-instrument", "-runs=300")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "no interesting inputs were found so far" in run.stderr
    assert stats["DONE"][3] == 1  # the corpus collapses to one input
