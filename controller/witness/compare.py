"""A store against the heads its witness holds: behind, rewritten or diverging.

The store's own check (controller/memory/critical.py) proves that its log, tables and seal agree
under the table's key; it cannot tell a store re-sealed by someone holding that key from
the real one. The witness can, for every head it holds: a store behind a witnessed head
was rolled back or replaced; a log entry whose MAC differs from the witnessed one was
rewritten (the chain binds every entry before it, so the last witnessed head answers for
all of them); seat totals, meters, awards or rounds that differ at the same log entry
were changed with no entry to say so. What was changed before its head reached the witness, it cannot see.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from controller.memory.critical import IntegrityError
from controller.witness.heads import Head, state_digest

ACTION_WITNESS = ("do not play; keep the store, its critical-memory directory and the "
                  "witness's rows as evidence; call the floor supervisor and the vendor. Restore "
                  "the store from a backup that reaches the witnessed head, or have a supervisor "
                  "clear critical memory (tabled --clear-store), which registers the new store "
                  "with the witness (docs/technician-guide.md, 'The witness')")


@dataclass(frozen=True, slots=True)
class LocalHead:
    """Where the store is now: its seal and the digest of its money."""

    commit_no: int
    log_seq: int
    log_mac: str
    state_digest: str

    def describe(self) -> str:
        return (f"commit {self.commit_no}, log entry {self.log_seq} (MAC {self.log_mac[:16]}, "
                f"state {self.state_digest[:16]})")


def local_head(db: sqlite3.Connection) -> LocalHead:
    row = db.execute("SELECT commit_no, log_seq, log_mac FROM critical_seal WHERE id = 1"
                     ).fetchone()
    commit_no, log_seq, log_mac = (int(row[0]), int(row[1]), str(row[2])) if row else (0, 0, "")
    return LocalHead(commit_no, log_seq, log_mac, state_digest(db))


def entry_mac(db: sqlite3.Connection, seq: int) -> str | None:
    row = db.execute("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()
    return str(row[0]) if row else None


def compare(db: sqlite3.Connection, witnessed: Head, *, source: str = "the witness",
            opened_at_seq: int | None = None) -> None:
    """Raise IntegrityError naming both heads if the store on `db` does not contain the
    witnessed head. `db` must see one snapshot (a read transaction, or the loop's own
    connection between steps). `opened_at_seq`: the log's last entry when the daemon opened
    the store, if only its boot entries (which move no money) came after it."""
    here = local_head(db)
    theirs = f"{source} holds {witnessed.describe()}" + (", signed by this table"
                                                          if witnessed.signature else "")
    if witnessed.commit_no > here.commit_no or witnessed.log_seq > here.log_seq:
        raise IntegrityError("witness: store behind", f"the store is at {here.describe()} but "
                             f"{theirs}: the store was rolled back or replaced", ACTION_WITNESS)
    found = entry_mac(db, witnessed.log_seq) if witnessed.log_seq else witnessed.entry_mac
    if found != witnessed.entry_mac:
        shown = f"MAC {found[:16]}" if found else "no entry"
        raise IntegrityError("witness: log rewritten", f"log entry {witnessed.log_seq} in the "
                             f"store has {shown} but {theirs}: the log was rewritten at or "
                             f"before entry {witnessed.log_seq} (the store is at "
                             f"{here.describe()})", ACTION_WITNESS)
    quiet_since = {here.log_seq, opened_at_seq}  # no money step after these entries
    if witnessed.log_seq in quiet_since and here.state_digest != witnessed.state_digest:
        raise IntegrityError("witness: money diverges", "the seat totals, meters, awards or "
                             f"rounds differ from those witnessed at the same log entry: the store is at "
                             f"{here.describe()} but {theirs}: money was changed without a log "
                             "entry", ACTION_WITNESS)
