"""The heads the witness has not yet acknowledged, in a file beside the table's key.

One JSON line per head, appended and flushed (fsync) by the witness link's thread before it
sends them, so a head outlives an outage and a restart; rewritten atomically without the
heads the witness holds. Each line carries a check of its own (`check`: the start of the
SHA-256 of the rest of the line): the link signs a head only when it sends it, so a line
the disk damaged into another readable head (one hex digit of its MAC, a digit of its
commit number) would otherwise reach the witness signed, as a head this table never had,
and the table's next genuine head would be refused or its store called diverging. A line
without a check was written by an earlier release and is read as it was then.

A line cut by a power cut (the last one, half written) is dropped when the file is read:
it was never acknowledged, and the next durable commit's head covers it (a head names the
whole log up to its entry). Any other line that cannot be read, or fails its check, was
damaged, not cut: it is dropped too (a later head covers it, as for a cut one), and its
line number kept in `damaged` for the table to name in its journal. A file a power cut
left without its last line end is rewritten whole when it is opened: a head appended after
the cut-short line would otherwise join it, and be dropped with it at the next start.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

from controller.memory.critical import replace_durably
from controller.text_files import loads_json
from controller.witness.heads import Head

OUTBOX_FILE = "witness_outbox"


class Outbox:
    """Owned by one thread (the witness link's); `pending` is in commit order."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.pending, self.damaged, cut_short = _read(path)
        if cut_short:
            try:
                _replace(path, self.pending)
            except OSError:
                pass  # left as it was: the next head appended joins the cut line, as before

    def append(self, heads: Iterable[Head]) -> None:
        new = list(heads)
        if not new:
            return
        lines = "".join(_line(h) for h in new)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, lines.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        self.pending.extend(new)  # the heads themselves: what a read of the lines gives back

    def drop_through(self, commit_no: int) -> int:
        """Forget the heads up to this commit (the witness holds them). Returns how many."""
        keep = [h for h in self.pending if h.commit_no > commit_no]
        dropped = len(self.pending) - len(keep)
        if dropped:
            _replace(self.path, keep)
            self.pending = keep
        return dropped

    @property
    def last(self) -> Head | None:
        return self.pending[-1] if self.pending else None


def _read(path: Path) -> tuple[list[Head], list[int], bool]:
    """The heads, the damaged lines' numbers, and whether the last line lacks its end."""
    try:
        # A line damaged into bytes that are not UTF-8 is skipped as a cut-short one is.
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return [], [], False
    return (*_parse(text), not text.endswith("\n") and text != "")


def _parse(text: str) -> tuple[list[Head], list[int]]:
    """The heads of the complete lines, and the numbers (from 1) of the lines that could
    not be read other than a last one that a power cut left without its line end."""
    heads: list[Head] = []
    damaged: list[int] = []
    lines = text.split("\n")  # the last item is what follows the last line end: "" or a cut
    for number, line in enumerate(lines, start=1):
        if not line:
            continue
        try:
            heads.append(_head(loads_json(line)))
        except (ValueError, KeyError, TypeError):
            if number < len(lines):  # a whole line, ended: damaged, not cut short
                damaged.append(number)
    return heads, damaged


def _line(head: Head) -> str:
    fields = head.as_dict()
    return json.dumps({**fields, "check": _check(fields)}, sort_keys=True) + "\n"


def _check(fields: dict[str, object]) -> str:
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


_FIELDS = frozenset(field.name for field in dataclasses.fields(Head))
_HEX64 = re.compile(r"[0-9a-f]{64}")


def _head(data: object) -> Head:
    """The head of a line's fields; ValueError if its check does not match them or they
    are not exactly a head's (a damaged key name must not pass a line off as an earlier
    release's, which has no check)."""
    if not isinstance(data, dict):
        raise TypeError("a line is one JSON object")
    check = data.pop("check", None)
    if data.keys() != _FIELDS or (check is not None and check != _check(data)):
        raise ValueError("the line is not a head as written")
    head = Head.from_dict(data)
    if not (_HEX64.fullmatch(head.entry_mac) and _HEX64.fullmatch(head.state_digest)):
        raise ValueError("a MAC or digest is not 64 hex digits")
    return head


def _replace(path: Path, heads: list[Head]) -> None:
    replace_durably(path, "".join(_line(h) for h in heads).encode())
