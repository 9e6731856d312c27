"""The anchor: the last durable commit's counter and seal, kept outside the store beside the
key, so a store put back from an older copy is caught at boot.

The file holds the anchor twice, in two slots of ANCHOR_SLOT_BYTES each (a block of its own,
so writing one never rewrites the other's block). A write replaces the older slot in place
and flushes the file's data once (`AnchorFile`): a power cut during it can tear only that
slot, and the other still holds the anchor before it, which the store is never behind. The
reader takes the newest genuine slot. A file of another size is an anchor of the earlier
format (one JSON line, replaced by a rename); the first write turns it into slots.

The two slots together are still one JSON object, so a release before the slots (which
reads the file as one object, the last value of a repeated key winning) reads the second
slot's anchor after a rollback: the first slot is `{` and its fields and a comma, the
second its fields and `}`, each padded with spaces. That anchor is the newest or the one
before it, which the store is at most one interval ahead of, as after a power cut.

`AnchorWriter`, a thread of its own, writes the newest anchor handed to it, then waits its
interval (`[store] anchor_interval_s`, ANCHOR_INTERVAL_S by default: docs/rulings.md C24)
before the next: the steps in between are coalesced into one write. The anchor therefore
lags the store by at most that interval (the store may be ahead of its anchor, never
behind: a power cut gives the same), and a clean stop writes the last one before the store
closes.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from controller.memory.errors import ACTION_UNUSABLE, IntegrityError
from controller.memory.macs import canonical
from controller.text_files import loads_json


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


ANCHOR_SLOT_BYTES = 4096
"""One slot of the anchor file: a filesystem block, so the two slots never share one."""


def _slot(key: bytes, anchor: Anchor, index: int) -> bytes:
    """Slot `index` (0 or 1) holding `anchor`: the two make one JSON object (above)."""
    fields = canonical({**anchor.body(), "mac": anchor_mac(key, anchor)})[1:-1]
    text = ("{" + fields + "," if index == 0 else fields + "}\n").encode()
    if len(text) >= ANCHOR_SLOT_BYTES:  # about 250 bytes: a longer one would spill over
        raise ValueError(f"an anchor of {len(text)} bytes does not fit its slot")
    return text.ljust(ANCHOR_SLOT_BYTES, b" ")


def write_anchor(path: Path, key: bytes, anchor: Anchor) -> None:
    """A new anchor file holding `anchor` in both slots, put in place atomically (a
    temporary file flushed, renamed, the directory flushed): at a table's initialisation,
    and where a file of the earlier format is replaced."""
    replace_durably(path, _slot(key, anchor, 0) + _slot(key, anchor, 1))


class AnchorFile:
    """The anchor file of one store, written by one thread (the anchor writer's). Each write
    after the first puts the anchor over the older slot in place and flushes the file's data:
    one flush, where a replaced file costs two (its data, then its directory)."""

    def __init__(self, path: Path, key: bytes) -> None:
        self._path = path
        self._key = key
        self._next_slot: int | None = None  # the older slot; None: not known to be slots
        self.flushes = 0
        """fsync and fdatasync calls made (benchmarks print them by source)."""

    def write(self, anchor: Anchor) -> None:
        if self._next_slot is None:
            self._next_slot = self._older_slot()
        if self._next_slot is None:  # no file, or the earlier format: a new file in slots
            write_anchor(self._path, self._key, anchor)
            self.flushes += 2
            self._next_slot = 1
            return
        fd = os.open(self._path, os.O_WRONLY)
        try:
            os.pwrite(fd, _slot(self._key, anchor, self._next_slot),
                      self._next_slot * ANCHOR_SLOT_BYTES)
            self.flushes += 1
            os.fdatasync(fd)  # in place, same size: the data is all there is to flush
        except BaseException:
            self._next_slot = None  # the slot may be torn: read the file again next time
            raise
        finally:
            os.close(fd)
        self._next_slot ^= 1

    def _older_slot(self) -> int | None:
        """The slot to write next: the one not holding the newest genuine anchor."""
        try:
            data = self._path.read_bytes()
        except FileNotFoundError:
            return None
        if len(data) != 2 * ANCHOR_SLOT_BYTES:
            return None
        slots = [_genuine(data[i * ANCHOR_SLOT_BYTES:(i + 1) * ANCHOR_SLOT_BYTES], self._key)
                 for i in (0, 1)]
        first, second = slots
        if first is None and second is None:
            return None  # neither is this key's: start the file over
        if first is None:
            return 0
        if second is None:
            return 1
        return 0 if first.commit_no < second.commit_no else 1


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


def _genuine(text: bytes, key: bytes) -> Anchor | None:
    """The anchor in one slot (or a file of the earlier format), if it is this key's."""
    fields = text.strip(b" \n")  # a slot's padding; a torn slot's zeros stay and fail
    fields = fields[1:] if fields.startswith(b"{") else fields
    fields = fields[:-1] if fields.endswith((b",", b"}")) else fields
    try:
        data = loads_json(b"{" + fields + b"}")
        anchor = Anchor(str(data["key_id"]), int(data["commit_no"]), int(data["log_seq"]),
                        str(data["seal_mac"]))
        if hmac.compare_digest(str(data["mac"]), anchor_mac(key, anchor)):
            return anchor
    except (ValueError, KeyError, TypeError):
        pass
    return None


def read_anchor(path: Path, key: bytes) -> Anchor | None:
    """The anchor, or None if there is none: the newer of the two slots that are genuine (a
    power cut may have torn the one being written); raises IntegrityError if neither is."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise IntegrityError("anchor", f"cannot read {path}: {exc.strerror}",
                             ACTION_UNUSABLE) from None
    if len(data) == 2 * ANCHOR_SLOT_BYTES:
        found = [anchor for anchor in (_genuine(data[:ANCHOR_SLOT_BYTES], key),
                                       _genuine(data[ANCHOR_SLOT_BYTES:], key))
                 if anchor is not None]
        newest = max(found, key=lambda anchor: anchor.commit_no, default=None)
    else:
        newest = _genuine(data, key)  # the earlier format: one JSON line
    if newest is None:
        raise IntegrityError("anchor", f"{path} is damaged or was not written with this "
                             "table's key")
    return newest


# --- writing it: off the event loop, at most once an interval ----------------------------


ANCHOR_INTERVAL_S = 60.0
"""The most a running table's anchor lags its store, by default (`[store] anchor_interval_s`,
ANCHOR_INTERVAL_RANGE_S). A store rolled back by less than this (and within a power cut of
the stop) is not told apart from a power cut when no witness is configured; anything older
is. A minute, not a second (docs/rulings.md C24): at a dealer's pace (a round a minute)
every durable group is more than a second after the last, so a one-second interval wrote
the anchor after each of them, three flushes a round more on an SD card; the witness, not
the anchor, is what catches a deliberate rollback."""

ANCHOR_INTERVAL_RANGE_S = (1.0, 3600.0)
"""What `[store] anchor_interval_s` may be: a second (the interval before C24) to an hour."""

A = TypeVar("A")


class AnchorWriter(Generic[A]):
    """Writes the newest submitted anchor from its own thread, at most once per interval
    (`interval_s`: the table's `[store] anchor_interval_s`; tests pass 0 or an hour).

    Owned by the one Store that made it (its writing connection); only that Store's close()
    stops it. A read-only view of the store never has one (Store.reader)."""

    def __init__(self, write: Callable[[A], None], *,
                 interval_s: float = ANCHOR_INTERVAL_S) -> None:
        self._write = write
        self._interval_s = interval_s
        self._changed = threading.Condition()
        self._pending: A | None = None
        self._closing = False
        # True while the thread waits for an anchor, not while it sleeps out its interval:
        # only then does a submit wake it (woken at every durable step of the interval, it
        # would take the interpreter's lock from the loop only to find nothing due).
        self._awaiting = False
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
            if self._awaiting:
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
                self._awaiting = True
                self._changed.wait_for(lambda: self._pending is not None or self._closing)
                self._awaiting = False
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
            # structlog imported here, not with this module: the check of a store reads the
            # anchor in a fresh interpreter of its own (controller/memory/check.py) whose start
            # comes before its chain workers', and structlog (asyncio, ssl) was three quarters
            # of that start's imports. The daemon, which writes anchors, has it loaded.
            import structlog

            structlog.get_logger().error("anchor_write_failed", error=str(exc))
