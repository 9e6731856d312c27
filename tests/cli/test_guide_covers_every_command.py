"""docs/technician-guide.md promises every tablectl command: each one (and each of its
actions) has a heading there, and each example block the capture tool fills exists."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from controller.cli import build_parser

GUIDE = (Path(__file__).resolve().parents[2] / "docs" / "technician-guide.md").read_text(
    encoding="utf-8")


def _commands(parser: argparse.ArgumentParser, prefix: str = "") -> list[str]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                path = f"{prefix}{name}"
                nested = _commands(sub, path + " ")
                found += nested or [path]
    return found


def test_every_command_has_a_heading_in_the_technician_guide():
    headings = "\n".join(line for line in GUIDE.splitlines() if line.startswith("### "))
    commands = _commands(build_parser())
    assert {"status", "config validate", "par-sheet", "simulate", "supervisor hash-pin",
            "support-bundle", "events verify", "fault acknowledge"} <= set(commands)
    missing = []
    for command in commands:
        *group, last = command.split(" ")
        # "### `tablectl test shoe | shuffler | ...`" covers every test at once.
        spelled = [f"tablectl {command}"] + ([f"| {last}"] if group else [])
        if not any(text in headings for text in spelled):
            missing.append(command)
    assert missing == []


def test_every_example_block_is_filled():
    names = re.findall(r"<!-- example:([\w-]+) -->\n(.*?)<!-- /example:\1 -->", GUIDE, re.S)
    assert names, "no example blocks"
    empty = [name for name, body in names if not body.strip()]
    assert empty == []
