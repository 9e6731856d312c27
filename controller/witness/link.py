"""The daemon's side of the witness: a thread that streams heads and checks the table.

Every durable commit hands its head to `WitnessLink.head_committed` on the event loop's
thread (a digest of the money and an append to a list: no I/O there). The link's own thread
writes the new heads to the outbox (flushed), signs them and sends them in order, in one
PostgreSQL transaction per batch: heads that arrive during a send wait for the next one,
at most `send_interval_s` later (coalesced, as the anchor writer coalesces anchors). While
the witness is unreachable the heads stay in the outbox, in order, and are sent when it
answers again; the witness holds then every head, with no gap.

The thread also compares the store with the witness's last head at start and every
`check_interval_s` (controller/witness/compare.py), on a read-only connection of its own;
a failure is handed to `on_failure` (the daemon puts the table out of order). A witness
that cannot be reached is not a failure: play goes on, `status()` says since when, and
the daemon may stop new rounds after `[witness] max_unwitnessed_minutes`.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import structlog

from controller.errors import LinkError
from controller.memory import critical
from controller.memory.critical import IntegrityError
from controller.memory.errors import STORE_ERRORS
from controller.witness.compare import ACTION_WITNESS, compare
from controller.witness.heads import Head, Signer, state_digest
from controller.witness.outbox import Outbox
from controller.witness.server import WitnessClient, WitnessRefused, WitnessUnreachable

log = structlog.get_logger("witness")

SEND_INTERVAL_S = 0.25  # heads committed within this are sent in one transaction
RETRY_S = 2.0  # an unreachable witness is tried again this often
CHECK_INTERVAL_S = 60.0
BATCH = 500  # heads per transaction when an outbox drains after an outage


class NotRegistered(LinkError):
    """The witness has no registration of this table's key."""


class WitnessLink:
    def __init__(self, client: WitnessClient, signer: Signer, outbox: Outbox, *,
                 store_path: str,
                 on_failure: Callable[[IntegrityError], None],
                 on_link: Callable[[bool, str], None] = lambda up, detail: None,
                 clock: Callable[[], float] = time.monotonic,
                 send_interval_s: float = SEND_INTERVAL_S, retry_s: float = RETRY_S,
                 check_interval_s: float = CHECK_INTERVAL_S,
                 opened_at_seq: int | None = None) -> None:
        """`opened_at_seq`: the log's last entry when the daemon opened the store (the first
        check compares the money witnessed there with the store's: compare.compare)."""
        self.client = client
        self.table_id = client.table_id
        self.signer = signer
        self.outbox = outbox
        self.store_path = store_path
        self._on_failure = on_failure
        self._on_link = on_link
        self._clock = clock
        self._send_interval_s = send_interval_s
        self._retry_s = retry_s
        self._check_interval_s = check_interval_s
        self._opened_at_seq = opened_at_seq
        self._changed = threading.Condition()
        self._new: list[Head] = []
        self._closing = False
        self._closed = False  # the thread is gone: heads go straight to the outbox
        self._check_wanted = True  # the first check runs as soon as the thread starts
        self.first_check = threading.Event()
        """Set once the first comparison ran or the witness proved unreachable."""
        self.epoch: int | None = None
        self.up: bool | None = None  # None: not tried yet
        self.down_since: float | None = None  # by `clock`: since when nothing reached it
        self.last_error = ""
        self.last_witnessed: Head | None = None
        self.last_check_ok: float | None = None
        self.failure: IntegrityError | None = None
        self.heads_sent = 0
        self._thread = threading.Thread(target=self._run, name="witness-link", daemon=True)

    def start(self) -> WitnessLink:
        self.down_since = self._clock()  # unwitnessed until the witness first answers
        self._thread.start()
        return self

    # --- the event loop's side ---------------------------------------------------------

    def head_committed(self, seal: critical.Seal, db: sqlite3.Connection) -> None:
        """Store.on_durable_commit's listener: this commit's head, for the thread to send."""
        head = Head(self.table_id, 0, seal.commit_no, seal.log_seq, seal.log_mac,
                    state_digest(db))
        with self._changed:
            if not self._closed:
                self._new.append(head)
                self._changed.notify()
                return
        try:
            self.outbox.append([head])  # after the thread stopped: kept for the next start
        except OSError as exc:  # the step is committed; its head is covered by the next one
            log.error("witness_outbox_failed", error=str(exc), heads_lost=1)

    def unwitnessed_s(self) -> float:
        """Seconds since the witness last answered (0 while it does)."""
        since = self.down_since
        return 0.0 if since is None else max(0.0, self._clock() - since)

    def status(self) -> dict[str, Any]:
        return {
            "link": ("failed" if self.failure is not None else "up" if self.up else
                     "connecting" if self.up is None else "down"),
            "epoch": self.epoch,
            "pending_heads": len(self.outbox.pending) + len(self._new),
            "last_witnessed": self.last_witnessed.describe() if self.last_witnessed else None,
            "unwitnessed_s": round(self.unwitnessed_s(), 1),
            "last_error": self.last_error or None,
            "failure": f"{self.failure.check}: {self.failure.detail}" if self.failure else None,
        }

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the thread; what is still pending is tried once and otherwise stays in the
        outbox for the next start."""
        with self._changed:
            self._closing = True
            self._changed.notify()
        self._thread.join(timeout_s)
        with self._changed:  # what came after the thread's last look waits in the outbox
            left, self._new, self._closed = self._new, [], True
        try:
            self.outbox.append(left)
        except OSError as exc:
            log.error("witness_outbox_failed", error=str(exc), heads_lost=len(left))
        self.client.close()

    # --- the thread --------------------------------------------------------------------

    def _run(self) -> None:
        next_send = next_check = 0.0
        while True:
            with self._changed:
                now = time.monotonic()
                due = min(next_check, next_send if (self.outbox.pending or self._new)
                          else float("inf"))
                self._changed.wait_for(lambda: self._closing or self._check_wanted
                                       or bool(self._new), timeout=max(0.0, due - now))
                new, self._new = self._new, []
                closing, check, self._check_wanted = self._closing, self._check_wanted, False
            if new:
                try:
                    self.outbox.append(new)
                except OSError as exc:  # a full disk: the heads wait in memory meanwhile
                    log.error("witness_outbox_failed", error=str(exc))
                    self._down(f"cannot write the outbox {self.outbox.path}: {exc.strerror}")
                    with self._changed:
                        self._new[:0] = new
                        if closing:
                            return  # close() tries the outbox once more
                        self._changed.wait_for(lambda: self._closing, timeout=self._retry_s)
                    continue
            if self.failure is not None:  # the table is out of order: keep the evidence only
                if closing:
                    return
                with self._changed:
                    self._changed.wait_for(lambda: self._closing or bool(self._new))
                continue
            now = time.monotonic()
            if self.outbox.pending and (now >= next_send or closing):
                next_send = now + (self._send_interval_s if self._attempt(self._send)
                                   else self._retry_s)
            if check or now >= next_check:
                self._attempt(self._check)
                self.first_check.set()
                next_check = now + self._check_interval_s
            if closing:
                return

    def _attempt(self, work: Callable[[], None]) -> bool:
        try:
            work()
        except WitnessUnreachable as exc:
            self._down(str(exc))
            return False
        except NotRegistered as exc:
            self._down(str(exc))
            return False
        except WitnessRefused as exc:
            self._fail(IntegrityError("witness: head refused", f"the witness refused this "
                                      f"table's head: {exc}", ACTION_WITNESS))
            return False
        except IntegrityError as exc:
            self._fail(exc)
            return False
        except STORE_ERRORS as exc:  # the store itself: the daemon's own check says
            self._down(f"cannot read the store to compare: {exc}")
            return False
        except Exception as exc:  # noqa: BLE001 - the link's thread must outlive any one call
            log.exception("witness_link_error")
            self._down(f"witness link error: {type(exc).__name__}: {exc}")
            return False
        self._up()
        return True

    def _up(self) -> None:
        if self.up is not True:
            self._on_link(True, "")
        self.up, self.down_since, self.last_error = True, None, ""

    def _down(self, reason: str) -> None:
        if self.up is not False:
            self.down_since = self.down_since if self.down_since is not None else self._clock()
            log.warning("witness_down", reason=reason)
            self._on_link(False, reason)
        self.up, self.last_error = False, reason
        self.first_check.set()

    def _fail(self, failure: IntegrityError) -> None:
        self.failure = failure
        log.critical("witness_failed", check=failure.check, detail=failure.detail)
        self.first_check.set()
        self._on_failure(failure)

    def _current_epoch(self) -> int:
        if self.epoch is not None:
            return self.epoch
        registrations = self.client.registrations()
        mine = [r for r in registrations if r.public_key == self.signer.public_key]
        if not mine:
            raise NotRegistered(f"the witness has no registration of table {self.table_id}'s "
                                "key: register it (tabled --register-witness, "
                                "docs/deployment.md)")
        latest = registrations[-1]
        if mine[-1].epoch != latest.epoch:
            raise IntegrityError(
                "witness: store replaced", f"the witness registered another store for table "
                f"{self.table_id} (epoch {latest.epoch}, by {latest.registered_by}, supervisor "
                f"{latest.supervisor!r}, reason {latest.reason!r}, at {latest.registered_at}) "
                f"after this one (epoch {mine[-1].epoch})", ACTION_WITNESS)
        self.epoch = latest.epoch
        return latest.epoch

    def _send(self) -> None:
        epoch = self._current_epoch()
        last = self.client.last_head(epoch)
        if last is not None:
            self._drop_witnessed(last)
        while self.outbox.pending:
            batch = [self.signer.sign(Head(self.table_id, epoch, h.commit_no, h.log_seq,
                                           h.entry_mac, h.state_digest))
                     for h in self.outbox.pending[:BATCH]]
            self.client.insert_heads(batch)
            self.outbox.drop_through(batch[-1].commit_no)
            self.last_witnessed = batch[-1]
            self.heads_sent += len(batch)

    def _drop_witnessed(self, last: Head) -> None:
        """Heads the witness already holds leave the outbox (a send whose acknowledgement was
        lost); one that contradicts the witness's is a failure naming both."""
        same = next((h for h in self.outbox.pending if h.commit_no == last.commit_no), None)
        if same is not None and (same.log_seq, same.entry_mac) != (last.log_seq,
                                                                   last.entry_mac):
            raise IntegrityError("witness: store diverges", f"this table's commit "
                                 f"{same.commit_no} is {same.describe()} but the witness holds "
                                 f"{last.describe()} for it", ACTION_WITNESS)
        self.outbox.drop_through(last.commit_no)
        self.last_witnessed = last

    def _check(self) -> None:
        epoch = self._current_epoch()
        last = self.client.last_head(epoch)
        if last is None:
            return
        self.last_witnessed = self.last_witnessed or last
        opened, self._opened_at_seq = self._opened_at_seq, None  # the first check's only
        check_store(self.store_path, last, opened_at_seq=opened)
        self.last_check_ok = time.monotonic()


def check_store(store_path: str, head: Head, *, source: str = "the witness",
                opened_at_seq: int | None = None) -> None:
    """Compare the store file with a head, in one read snapshot of its own connection."""
    db = sqlite3.connect(f"file:{Path(store_path).absolute()}?mode=ro", uri=True,
                         isolation_level=None, check_same_thread=False)
    try:
        db.execute("BEGIN")
        compare(db, head, source=source, opened_at_seq=opened_at_seq)
    finally:
        db.close()
