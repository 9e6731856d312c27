"""Every `tablectl` command of docs/technician-guide.md on an 80-column terminal.

The commands are the guide's own examples, run as tools/capture_cli_examples.py runs them
(tablectl as a process, COLUMNS=80, against the real daemon on the simulated table of
hil.table_harness, faults injected into the simulators), and every command that offers
--json with --json, stdout apart from stderr. A line longer than the terminal, a
traceback, or a --json answer that is not JSON fails.

Both run against one daemon with one shoe played (`played_table`, module-scoped: a daemon
start and a shoe less): the --json answers first, since they change nothing the guide's
examples read, then the guide's examples, which go on to fault the table, stop it and
tamper with its store. The file's order is that order.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from controller.cli import exitcodes

pytestmark = [pytest.mark.hil, pytest.mark.timeout(600)]
SHARED = pytest.mark.asyncio(loop_scope="module")  # the loop `played_table` runs on

ROOT = Path(__file__).resolve().parents[2]
COLUMNS = 80
CONFIG = ROOT / "config" / "simulated-table.toml"
RULES = ROOT / "config" / "baccarat-8deck.toml"
SEED = 7  # the guide's examples' seed (tools/capture_cli_examples.py)
# Wrong PINs are refused after a delay doubling from [access] pin_delay_s (1 s: 1 + 2 + 4 s
# for the three below); a short one keeps every delay and refusal, in a tenth of the time.
PIN_DELAY = "access.pin_delay_s=0.05"


def _capture_tool() -> Any:
    spec = importlib.util.spec_from_file_location(
        "capture_cli_examples", ROOT / "tools" / "capture_cli_examples.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def too_wide(text: str, width: int = COLUMNS) -> list[str]:
    """The lines of `text` longer than `width` that could have been wrapped: a line is let
    through only when a word in it is too long for a line of its own (a PIN hash to paste
    whole, a long path), since a word is never split."""
    wide = []
    for line in text.splitlines():
        if len(line) <= width:
            continue
        indent = len(line) - len(line.lstrip(" "))
        if max(len(word) for word in line.split()) > width - indent - 2:
            continue
        wide.append(line)
    return wide


def test_too_wide_lets_through_only_an_unbreakable_word() -> None:
    assert too_wide("x" * 80) == []
    assert too_wide("word " * 17) == ["word " * 17]
    assert too_wide('ana = "pbkdf2_sha256$600000$' + "0" * 90 + '"') == []


def _json_documents(argv: Sequence[str], out: str) -> None:
    """One JSON document; JSON Lines for the commands that stream (simulate, replay)."""
    if argv[0] in ("simulate", "replay"):
        for line in out.splitlines():
            json.loads(line)
    else:
        json.loads(out)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def played_table(tmp_path_factory):
    """The simulated table, its daemon running and one shoe played; "spent" once the
    guide's examples have begun with it."""
    from hil.table_harness import TableHarness

    async with TableHarness(CONFIG, tmp_path_factory.mktemp("table"), seed=SEED,
                            extra_overrides=[PIN_DELAY]) as table:
        await table.play(shoes=1)
        yield {"table": table, "spent": False}


async def _tablectl(argv: Sequence[str], stdin: str = "") -> tuple[int, str, str]:
    """tablectl ARGV as a process at 80 columns: (exit code, stdout, stderr)."""
    env = {**os.environ, "COLUMNS": str(COLUMNS), "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    env.pop("TABLECTL_SOCKET", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "controller.cli", *argv, cwd=ROOT, env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@SHARED
async def test_every_json_answer_is_one_json_document_whatever_happens(tmp_path, played_table):
    assert not played_table["spent"], "runs before the guide's examples (this file's order)"
    h = played_table["table"]
    s = ["--socket", h.socket]
    wrong_pin = "0000\n"
    cases: list[tuple[list[str], str, int]] = [
        ([*s, "status"], "", exitcodes.OK),
        (["status", *s], "", exitcodes.OK),
        ([*s, "devices"], "", exitcodes.OK),
        ([*s, "rounds", "--last", "2"], "", exitcodes.OK),
        ([*s, "events", "--kind", "card", "--limit", "3"], "", exitcodes.OK),
        ([*s, "events", "--kind", "crad"], "", exitcodes.BAD_ARGUMENTS),
        ([*s, "events", "--device", "foo"], "", exitcodes.BAD_ARGUMENTS),
        ([*s, "events", "--limit", "0"], "", exitcodes.BAD_ARGUMENTS),
        ([*s, "events", "verify"], "", exitcodes.OK),
        (["events", "verify", "--store", str(tmp_path / "none.sqlite")], "",
         exitcodes.BAD_ARGUMENTS),
        ([*s, "meters"], "", exitcodes.OK),
        ([*s, "jackpot", "pending"], "", exitcodes.OK),
        ([*s, "jackpot", "validate", "1", "--supervisor", "floor", "--pin-stdin"],
         wrong_pin, exitcodes.REFUSED),
        ([*s, "fault", "acknowledge", "--supervisor", "floor", "--pin-stdin"], wrong_pin,
         exitcodes.REFUSED),
        ([*s, "irregularity", "player-third", "--supervisor", "floor", "--pin-stdin"],
         wrong_pin, exitcodes.REFUSED),
        ([*s, "test", "shoe"], "", exitcodes.OK),
        ([*s, "test", "shuffler"], "", exitcodes.OK),
        ([*s, "test", "sensors", "--timeout", "1"], "", exitcodes.FAILURE),
        ([*s, "test", "lockout", "--timeout", "1"], "", exitcodes.FAILURE),
        ([*s, "test", "lights", "--yes"], "", exitcodes.OK),
        (["--socket", str(tmp_path / "gone.sock"), "status"], "",
         exitcodes.DAEMON_NOT_RUNNING),
        ([*s, "status", "--bogus"], "", exitcodes.BAD_ARGUMENTS),
        (["par-sheet", str(RULES)], "", exitcodes.OK),
        (["simulate", str(RULES), "--shoes", "1"], "", exitcodes.OK),
    ]
    # Four at a time: each is its own process and connection, none changes what another
    # reads, and most of their time is waiting (a process starting, a test's timeout, the
    # lights' steps, a wrong PIN's delay).
    at_once = asyncio.Semaphore(4)

    async def run(argv: list[str], stdin: str) -> tuple[int, str, str]:
        async with at_once:
            return await _tablectl(["--json", *argv], stdin)

    answers = await asyncio.gather(*(run(argv, stdin) for argv, stdin, _ in cases))
    problems = []
    for (argv, stdin, expected), (code, out, err) in zip(cases, answers):
        shown = "tablectl --json " + " ".join(argv)
        if code != expected:
            problems.append(f"{shown}: exit {code}, expected {expected}: {err}")
        if "Traceback" in out + err:
            problems.append(f"{shown}: a traceback:\n{err}")
        try:
            _json_documents(argv[2:] if argv[0] == "--socket" else argv, out)
        except ValueError as exc:
            problems.append(f"{shown}: not JSON ({exc}):\n{out!r}\n{err}")
        problems += [f"{shown} (stderr): {line}" for line in too_wide(err)]
    assert problems == [], "\n".join(problems)


@SHARED
async def test_every_guide_command_fits_80_columns_without_a_traceback(tmp_path, played_table):
    tool = _capture_tool()
    played_table["spent"] = True  # the examples fault, stop and tamper with it
    _, _, runs = await tool.capture_simulated_runs(tmp_path, SEED, played=played_table["table"])
    shown = {command.split()[1] for command, _, _ in runs if len(command.split()) > 1}
    # Every command of the guide's examples ran (the guide's own test checks that each
    # command has an example: tests/cli/test_guide_covers_every_command.py).
    assert {"status", "devices", "rounds", "events", "replay", "support-bundle", "test",
            "fault", "meters", "jackpot", "config", "par-sheet", "simulate", "supervisor",
            "--version"} <= shown
    problems = []
    for command, code, output in runs:
        if "Traceback" in output:
            problems.append(f"{command}: a traceback:\n{output}")
        if "--json" in command.split():
            try:
                _json_documents(command.split()[1:], output)
            except ValueError as exc:
                problems.append(f"{command}: --json answer is not JSON ({exc}):\n{output}")
            continue  # JSON is for programs: its lines are as long as its values
        problems += [f"{command} (exit {code}): {len(line)} columns: {line}"
                     for line in too_wide(output)]
    assert problems == [], "\n".join(problems)
