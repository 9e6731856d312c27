"""Reading the requirement ids of docs/protocol.md and the MUST table of docs/conformance.md."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
TAG = re.compile(r"\[(M-[0-9][0-9a-z.]*)\]")
KEY_WORD = re.compile(r"\bMUST\b")
ROW = re.compile(r"^\| (M-[0-9][0-9a-z.]*) \| ([^|]+) \| ([^|]+) \| ([^|]+) \|$", re.M)


def protocol_units() -> list[str]:
    """docs/protocol.md cut into paragraphs, list items and table rows, code blocks left out:
    the unit a requirement and its id must share."""
    text = re.sub(r"```.*?```", "", (DOCS / "protocol.md").read_text(encoding="utf-8"), flags=re.S)
    units: list[str] = []
    for line in text.splitlines():
        starts_unit = (not line.strip() or line.lstrip().startswith(("- ", "| "))
                       or re.match(r"\s*\d+\. ", line) is not None)
        if starts_unit or not units:
            units.append(line)
        else:
            units[-1] += "\n" + line
    return units


def protocol_ids() -> set[str]:
    return set(TAG.findall((DOCS / "protocol.md").read_text(encoding="utf-8")))


def must_table() -> dict[str, list[str]]:
    """docs/conformance.md's table: requirement id -> the checks (or host tests) named for it."""
    text = (DOCS / "conformance.md").read_text(encoding="utf-8")
    body = text[text.index("<!-- must-table:start -->"):text.index("<!-- must-table:end -->")]
    return {m.group(1): [c.strip() for c in m.group(4).split(",")] for m in ROW.finditer(body)}
