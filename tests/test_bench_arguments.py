"""Every benchmark answers --help, and a bad argument is named with what is allowed, not a
traceback (bench_progressive.py and bench_pit.py read sys.argv by hand until 2026-12-07:
`--help` ended in ValueError)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench import bench_pit, bench_progressive

ROOT = Path(__file__).resolve().parents[1]
# A tool bench_daemon.py starts (`--profile`), not a benchmark: its arguments are tabled's.
NOT_RUN_BY_HAND = {"daemon_profiled.py", "machine.py", "__init__.py"}
BENCHMARKS = sorted(p.name for p in (ROOT / "bench").glob("*.py") if p.name not in NOT_RUN_BY_HAND)


@pytest.mark.parametrize("script", BENCHMARKS)
def test_each_benchmark_answers_help(script: str) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / script), "--help"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("usage: "), done.stdout


def test_bench_progressive_takes_a_count_of_rounds(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_progressive.arguments([]) == 500
    assert bench_progressive.arguments(["20"]) == 20
    for bad, said in (["0"], "rounds 0: allowed: 1 or more"), (
            ["many"], "argument rounds: invalid int value: 'many'"):
        with pytest.raises(SystemExit) as stopped:
            bench_progressive.arguments(bad)
        assert stopped.value.code == 2
        assert capsys.readouterr().err.rstrip().endswith(said)


def test_bench_pit_takes_seconds_more_than_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_pit.arguments([]) == 4.0
    assert bench_pit.arguments(["0.5"]) == 0.5
    for bad, said in (["0"], "seconds 0: allowed: a number of seconds more than 0"), (
            ["nan"], "seconds nan: allowed: a number of seconds more than 0"), (
            ["-1"], "seconds -1: allowed: a number of seconds more than 0"):
        with pytest.raises(SystemExit) as stopped:
            bench_pit.arguments(bad)
        assert stopped.value.code == 2
        assert capsys.readouterr().err.rstrip().endswith(said)
