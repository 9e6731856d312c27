"""Every benchmark and generator answers --help, and a bad argument is named with what is
allowed, not a traceback and not a run. Until 2026-12-07 bench_progressive.py and
bench_pit.py read sys.argv by hand (`--help` ended in ValueError), bench_protocol.py ran
the whole benchmark on `--help`, and tools/control_roles.py and tools/module_map.py took
any argument but `--check` (a typo such as `--chek` among them) for "rewrite the docs"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import bench_pit, bench_progressive

ROOT = Path(__file__).resolve().parents[1]
# Not run by hand: the daemon under cProfile, which bench_daemon.py starts with tabled's own
# arguments (`--profile`), and the helpers every benchmark imports.
NOT_RUN_BY_HAND = {"daemon_profiled.py", "machine.py"}
BENCHMARKS = sorted(p.name for p in (ROOT / "bench").glob("*.py") if p.name not in NOT_RUN_BY_HAND)

GENERATORS = [["tools/control_roles.py"], ["tools/module_map.py"], ["tools/bonus_readings.py"],
              ["-m", "controller.faults"], ["-m", "controller.diagram"],
              ["-m", "controller.rules.write_par_tables"], ["-m", "firmware_bridge.transcript"]]
ENTRY_POINTS = [[f"bench/{script}"] for script in BENCHMARKS] + GENERATORS


def _run(command: list[str], *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *command, *arguments], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)


def _changed_files() -> str:
    """The tracked files changed in the working tree (other tests' scratch files aside)."""
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                          capture_output=True, text=True, cwd=ROOT, check=True).stdout


@pytest.mark.parametrize("command", ENTRY_POINTS, ids=lambda c: c[-1])
def test_each_entry_point_answers_help(command: list[str]) -> None:
    done = _run(command, "--help")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("usage: "), done.stdout


def _description(help_text: str) -> str:
    """The paragraph argparse prints between the usage lines and the options, on one line."""
    paragraphs = help_text.split("\n\n")
    return " ".join(paragraphs[1].split()) if len(paragraphs) > 2 else ""


@pytest.mark.parametrize("command", ENTRY_POINTS + [["-m", "hil.soak"], ["-m", "hil.run"]],
                         ids=lambda c: c[-1])
def test_each_entry_point_describes_itself_in_whole_sentences(command: list[str]) -> None:
    # Until 2026-12-07 hil/soak.py and bench/bench_control.py gave argparse their
    # docstring's first line, which ends mid-sentence ("... recovered by a").
    description = _description(_run(command, "--help").stdout)
    assert description.endswith((".", ".)")), description


@pytest.mark.parametrize("command", GENERATORS, ids=lambda c: c[-1])
def test_a_generator_refuses_an_option_it_does_not_take_and_writes_nothing(
        command: list[str]) -> None:
    tracked = _changed_files()
    done = _run(command, "--chek")
    assert done.returncode == 2
    assert done.stderr.rstrip().endswith("error: unrecognized arguments: --chek"), done.stderr
    assert done.stdout == ""
    assert _changed_files() == tracked


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


def test_the_release_tools_help_keeps_an_example_whole_at_80_columns() -> None:
    """`--pip-arg=--extra-index-url=...` was broken at a hyphen into two lines."""
    done = subprocess.run([sys.executable, "-m", "tools.release", "build", "--help"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "COLUMNS": "80"})
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    help_lines = lines[next(n for n, line in enumerate(lines)
                            if line.startswith("  --pip-arg PIP_ARG")):]
    assert " ".join(" ".join(line.split()) for line in help_lines[:3]).startswith(
        "--pip-arg PIP_ARG passed to 'pip download', e.g. --pip-arg=--extra-index-url=URL "
        "for the URL https://www.piwheels.org/simple (repeatable)")
