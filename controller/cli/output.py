"""How tablectl shows things: aligned tables, colour, money, times, progress bars and JSON.

Colour only when the stream is a terminal and NO_COLOR is unset (https://no-color.org),
so piped output and captured test output are plain text. Progress bars go to stderr,
only on a terminal and only once an operation has run for more than a second, so a
quick command never flickers and stdout stays clean for `| grep`.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import sys
import textwrap
import time
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from typing import IO, Any, TypeVar

T = TypeVar("T")

PROGRESS_DELAY_S = 1.0  # STYLE/issue 8: a bar only for operations longer than a second
PROGRESS_REFRESH_S = 0.1  # redraw rate; faster only burns the Pi's CPU on a serial console

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


def colour_enabled(stream: IO[str] | None = None) -> bool:
    """True when `stream` (default stdout) is a terminal and the user has not set NO_COLOR."""
    stream = stream if stream is not None else sys.stdout
    if os.environ.get("NO_COLOR", "") != "" or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, *styles: str, stream: IO[str] | None = None) -> str:
    """Wrap text in ANSI styles (names from _CODES) when colour is enabled for `stream`."""
    if not styles or not colour_enabled(stream):
        return text
    codes = ";".join(_CODES[s] for s in styles)
    return f"\x1b[{codes}m{text}\x1b[0m"


def visible_len(text: str) -> int:
    """Length as the terminal shows it (ANSI escapes take no columns)."""
    return len(_ANSI.sub("", text))


def shorten(text: str, width: int) -> str:
    """`text` cut to `width` columns with an ellipsis in the middle, so that both the start
    and the end (a port's device name, a firmware's version number) stay readable."""
    if visible_len(text) <= width:
        return text
    plain = _ANSI.sub("", text)
    head = (width - 1 + 1) // 2
    tail = width - 1 - head
    return plain[:head] + "…" + (plain[-tail:] if tail else "")


def terminal_width() -> int:
    """The terminal's width in columns: $COLUMNS if set, else the terminal's, else 80 (a
    pipe, a serial console whose size is unknown)."""
    return shutil.get_terminal_size((80, 24)).columns


def record_width() -> int | None:
    """The width to wrap a stream of records (event lines) to: the terminal's, or $COLUMNS
    when set; None when piped without $COLUMNS, so that each record stays one line for
    `grep` (--json is the form for scripts)."""
    if os.environ.get("COLUMNS", "").isdecimal() or sys.stdout.isatty():
        return terminal_width()
    return None


def wrap(text: str, width: int | None = None, *, indent: str = "",
         hanging: str | None = None) -> str:
    """`text` wrapped at word boundaries to `width` (default: the terminal's), the first line
    after `indent`, the others after `hanging` (default: as deep as `indent`). A word longer
    than the line (a path, a hash) stays whole on its own line rather than split."""
    width = width or terminal_width()
    return textwrap.fill(text, width=width, initial_indent=indent,
                         subsequent_indent=indent if hanging is None else hanging,
                         break_long_words=False, break_on_hyphens=False)


def fit(text: str, width: int | None = None) -> str:
    """Each line of `text` longer than `width` (default: the terminal's) wrapped at word
    boundaries, its next lines two columns deeper than its own indent; short lines as they
    are. For messages and reports whose lines are sentences, not table rows."""
    width = width or terminal_width()
    lines = []
    for line in text.split("\n"):
        if visible_len(line) <= width:
            lines.append(line)
            continue
        indent = line[:len(line) - len(line.lstrip(" "))]
        lines.append(wrap(line.lstrip(" "), width, indent=indent, hanging=indent + "  "))
    return "\n".join(lines)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]],
          right: Iterable[int] = (), indent: str = "", max_width: int | None = None,
          shrinkable: Iterable[int] = ()) -> str:
    """Render rows under headers with aligned columns; columns in `right` align right
    (numbers and money read best that way). None shows as '-'. With `max_width`, the
    columns in `shrinkable` (free text such as ports and versions) are narrowed, widest
    first and never below their header, until a line fits; their cells are shortened."""
    right_cols = set(right)
    cells = [[str(h) for h in headers]] + [["-" if c is None else str(c) for c in row]
                                            for row in rows]
    widths = [max(visible_len(row[i]) for row in cells) for i in range(len(headers))]
    if max_width is not None:
        narrow = [i for i in shrinkable if 0 <= i < len(headers)]

        def total() -> int:
            return len(indent) + sum(widths) + 2 * (len(widths) - 1)

        while total() > max_width:
            candidates = [i for i in narrow if widths[i] > max(len(str(headers[i])), 6)]
            if not candidates:
                break
            widest = max(candidates, key=lambda i: widths[i])
            widths[widest] -= 1
        for row in cells[1:]:
            for i in narrow:
                row[i] = shorten(row[i], widths[i])
    lines = []
    for n, row in enumerate(cells):
        parts = []
        for i, cell in enumerate(row):
            pad = " " * (widths[i] - visible_len(cell))
            parts.append(pad + cell if i in right_cols else cell + pad)
        line = indent + "  ".join(parts).rstrip()
        lines.append(paint(line, "bold") if n == 0 else line)
    return "\n".join(lines)


def key_values(pairs: Iterable[tuple[str, Any]], indent: str = "",
               width: int | None = None, *, wrap_to: int | None = None) -> str:
    """`label: value` lines with the values aligned (at `width`, else after the longest
    label), skipping pairs whose value is None. With `wrap_to`, a long value is wrapped to
    that many columns, its next lines starting under its first (a hanging indent)."""
    kept = [(k, v) for k, v in pairs if v is not None]
    if not kept:
        return ""
    width = width or max(len(k) for k, _ in kept) + 1
    lines = []
    for k, v in kept:
        label = f"{indent}{(k + ':'):<{width}} "
        if wrap_to is None or visible_len(str(v)) + len(label) <= wrap_to:
            lines.append(f"{label}{v}")
        else:
            lines.append(wrap(str(v), wrap_to, indent=label, hanging=" " * len(label)))
    return "\n".join(lines)


def money(cents: int | None, *, sign: bool = False) -> str:
    """Integer cents as dollars: 123456 -> $1,234.56 (never through float)."""
    if cents is None:
        return "-"
    text = f"${abs(cents) // 100:,}.{abs(cents) % 100:02d}"
    if cents < 0:
        return "-" + text
    return "+" + text if sign and cents > 0 else text


def when(epoch: float | None) -> str:
    """A log timestamp (seconds since the epoch) as ISO 8601 UTC to the millisecond."""
    if epoch is None:
        return "-"
    stamp = dt.datetime.fromtimestamp(epoch, dt.timezone.utc)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def duration(seconds: float | None) -> str:
    """Uptime-style duration: 3d 04:05:06, or 04:05:06 under a day."""
    if seconds is None:
        return "-"
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}d {clock}" if days else clock


def print_json(obj: Any, stream: IO[str] | None = None) -> None:
    """Machine-readable output: one indented JSON document, keys in the daemon's order."""
    print(json.dumps(obj, indent=2, ensure_ascii=False), file=stream or sys.stdout)


def generic(obj: Any, indent: str = "") -> str:
    """Render a result whose shape tablectl does not know in detail (e.g. meters from a newer
    daemon): lists of objects as a table, objects as key/value lines, *_cents as money."""
    if isinstance(obj, list) and obj and all(isinstance(x, Mapping) for x in obj):
        keys: list[str] = []
        for item in obj:
            keys += [k for k in item if k not in keys]
        rows = [[_scalar(k, item.get(k)) for k in keys] for item in obj]
        right = [i for i, k in enumerate(keys) if k.endswith("_cents")]
        return table([_label(k) for k in keys], rows, right=right, indent=indent)
    if isinstance(obj, Mapping):
        width = max((len(_label(k)) for k in obj), default=0) + 1  # one value column
        lines = []
        for key, value in obj.items():
            if isinstance(value, (list, Mapping)) and value:
                lines.append(f"{indent}{_label(key)}:")
                lines.append(generic(value, indent + "  "))
            else:
                lines.append(key_values([(_label(key), _scalar(key, value))], indent, width))
        return "\n".join(lines)
    return f"{indent}{obj}"


def _label(key: str) -> str:
    return key.removesuffix("_cents").replace("_", " ")


def _scalar(key: str, value: Any) -> str:
    if value is None:
        return "-"
    if key.endswith("_cents") and isinstance(value, int) and not isinstance(value, bool):
        return money(value)
    if isinstance(value, (list, Mapping)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


class ProgressBar:
    """A one-line progress bar on stderr, drawn only on a terminal and only after
    PROGRESS_DELAY_S; `total=None` draws an elapsed-time bar for work of unknown length."""

    def __init__(self, label: str, total: int | None = None, *,
                 stream: IO[str] | None = None, clock: Any = time.monotonic) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self._stream = stream if stream is not None else sys.stderr
        self._clock = clock
        self._started = clock()
        self._drawn = False
        self._enabled = bool(getattr(self._stream, "isatty", lambda: False)())

    def update(self, done: int, total: int | None = None) -> None:
        """Record progress and redraw if the bar is due."""
        self.done = done
        if total is not None:
            self.total = total
        self.draw()

    def draw(self) -> None:
        if not self._enabled or self._clock() - self._started < PROGRESS_DELAY_S:
            return
        width = max(10, min(40, shutil.get_terminal_size((80, 24)).columns - 40))
        elapsed = self._clock() - self._started
        if self.total:
            filled = min(width, width * self.done // self.total)
            bar = "#" * filled + "-" * (width - filled)
            text = f"{self.label} [{bar}] {self.done}/{self.total}"
        else:
            pos = int(elapsed * 8) % width
            bar = "-" * pos + "#" + "-" * (width - pos - 1)
            text = f"{self.label} [{bar}] {elapsed:.0f} s"
        self._stream.write("\r" + text + "\x1b[K")
        self._stream.flush()
        self._drawn = True

    def finish(self) -> None:
        """Clear the bar's line so the result that follows starts on a clean line."""
        if self._drawn:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
            self._drawn = False


async def with_progress(label: str, work: Awaitable[T]) -> T:
    """Await `work`, showing an elapsed-time bar if it takes longer than a second."""
    import asyncio  # here: tablectl's offline commands load this module without asyncio

    bar = ProgressBar(label)
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=PROGRESS_REFRESH_S)
            if done:
                return task.result()
            bar.draw()
    finally:
        bar.finish()
        if not task.done():
            task.cancel()
