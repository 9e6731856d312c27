"""The anchor: the last durable commit's counter and seal, kept outside the store beside the
key and replaced atomically, so a store put back from an older copy is caught at boot.

Writing it costs two flushes (the file, then its directory), so writing it after every
durable step would triple the flushes of a shoe and put them in front of every wager, lock
and settlement. `AnchorWriter`, a thread of its own, writes the newest anchor handed to it,
then waits ANCHOR_INTERVAL_S before the next: the steps in between are coalesced into one
write. The anchor therefore lags the store by at most that interval (the store may be ahead
of its anchor, never behind: a power cut gives the same), and a clean stop writes the last
one before the store closes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import structlog

from controller.memory.errors import ACTION_UNUSABLE, IntegrityError
from controller.memory.macs import canonical


@dataclass(frozen=True, slots=True)
class Anchor:
    """Where the last durable commit left the store: kept beside the key, not in the store."""

    key_id: str
    commit_no: int
    log_seq: int
    seal_mac: str

    def body(self) -> dict[str, Any]:
        return {"key_id": self.key_id, "commit_no": self.commit_no, "log_seq": self.log_seq,
                "seal_mac": self.seal_mac}


def anchor_mac(key: bytes, anchor: Anchor) -> str:
    return hmac.new(key, canonical(["anchor", anchor.body()]).encode(), hashlib.sha256).hexdigest()


def write_anchor(path: Path, key: bytes, anchor: Anchor) -> None:
    """Atomically: write a temporary file, fsync it, rename it over the anchor, fsync the
    directory, so a power cut leaves either the old anchor or the new one, never half."""
    text = canonical({**anchor.body(), "mac": anchor_mac(key, anchor)}) + "\n"
    replace_durably(path, text.encode())


def replace_durably(path: Path, data: bytes) -> None:
    """`path` now holds `data`, whole, on the disk: a temporary file (mode 0600) written and
    flushed, renamed over `path`, and the directory flushed. A power cut leaves the old
    contents or the new, never half (the anchor, the witness's outbox)."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def read_anchor(path: Path, key: bytes) -> Anchor | None:
    """The anchor, or None if there is none; raises IntegrityError if it is not genuine."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise IntegrityError("anchor", f"cannot read {path}: {exc.strerror}",
                             ACTION_UNUSABLE) from None
    try:
        data = json.loads(text)
        anchor = Anchor(str(data["key_id"]), int(data["commit_no"]), int(data["log_seq"]),
                        str(data["seal_mac"]))
        genuine = hmac.compare_digest(str(data["mac"]), anchor_mac(key, anchor))
    except (ValueError, KeyError, TypeError):
        genuine = False
    if not genuine:
        raise IntegrityError("anchor", f"{path} is damaged or was not written with this "
                             "table's key")
    return anchor


# --- writing it: off the event loop, at most once a second -------------------------------


log = structlog.get_logger()

ANCHOR_INTERVAL_S = 1.0
"""The most a running table's anchor lags its store. A store rolled back by less than this
(and within a power cut of the stop) is not told apart from a power cut; anything older is."""

A = TypeVar("A")


class AnchorWriter(Generic[A]):
    """Writes the newest submitted anchor from its own thread, at most once per interval.

    Owned by the one Store that made it (its writing connection); only that Store's close()
    stops it. A read-only view of the store never has one (Store.reader)."""

    def __init__(self, write: Callable[[A], None], *,
                 interval_s: float = ANCHOR_INTERVAL_S) -> None:
        self._write = write
        self._interval_s = interval_s
        self._changed = threading.Condition()
        self._pending: A | None = None
        self._closing = False
        self.writes = 0
        """Anchors written (benchmarks and tests read it)."""
        self._thread = threading.Thread(target=self._run, name="anchor-writer", daemon=True)
        self._thread.start()

    def submit(self, anchor: A) -> None:
        """The newest durable commit's anchor; replaces one not yet written. After close()
        nothing would ever write it: that is a bug of the caller's, said at once."""
        with self._changed:
            if self._closing:
                raise RuntimeError("anchor writer already stopped: the store that owns it "
                                   "was closed")
            self._pending = anchor
            self._changed.notify()

    def close(self) -> None:
        """Stop the thread and write what is still pending, before the store closes."""
        with self._changed:
            self._closing = True
            self._changed.notify()
        self._thread.join()
        with self._changed:
            anchor, self._pending = self._pending, None
        if anchor is not None:
            self._write_logged(anchor)

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._pending is not None or self._closing)
                if self._closing:
                    return  # close() writes what is pending, from its own thread
                anchor, self._pending = self._pending, None
            if anchor is not None:  # wait_for returned on it: never None here
                self._write_logged(anchor)
            with self._changed:  # coalesce: what arrives meanwhile waits for one write
                self._changed.wait_for(lambda: self._closing, timeout=self._interval_s)

    def _write_logged(self, anchor: A) -> None:
        try:
            self._write(anchor)
            self.writes += 1
        except OSError as exc:  # the store is committed; the anchor catches up next time
            log.error("anchor_write_failed", error=str(exc))
