"""The heads the witness has not yet acknowledged, in a file beside the table's key.

One JSON line per head, appended and flushed (fsync) by the witness link's thread before it
sends them, so a head outlives an outage and a restart; rewritten atomically without the
heads the witness holds. A line cut by a power cut (the last one, half written) is dropped
when the file is read: it was never acknowledged, and the next durable commit's head
covers it (a head names the whole log up to its entry). Any other line that cannot be read
was damaged, not cut: it is dropped too (a later head covers it, as for a cut one), and
its line number kept in `damaged` for the table to name in its journal. A file a power cut
left without its last line end is rewritten whole when it is opened: a head appended after
the cut-short line would otherwise join it, and be dropped with it at the next start.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from controller.memory.critical import replace_durably
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
        lines = "".join(json.dumps(h.as_dict(), sort_keys=True) + "\n" for h in heads)
        if not lines:
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, lines.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        self.pending.extend(_parse(lines)[0])

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
            heads.append(Head.from_dict(json.loads(line)))
        except (ValueError, KeyError, TypeError):
            if number < len(lines):  # a whole line, ended: damaged, not cut short
                damaged.append(number)
    return heads, damaged


def _replace(path: Path, heads: list[Head]) -> None:
    replace_durably(path, "".join(json.dumps(h.as_dict(), sort_keys=True) + "\n"
                                  for h in heads).encode())
