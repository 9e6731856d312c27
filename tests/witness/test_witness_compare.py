"""The comparison of a store with a witnessed head, on a store's own tables: the money
digest covers seat totals, meters and each award's state, so a paid award set back to
pending with the key (no log entry) is named as money diverging."""

from __future__ import annotations

import sqlite3

import pytest

from controller.memory.critical import IntegrityError
from controller.witness.compare import compare, local_head
from controller.witness.heads import Head, state_digest

SCHEMA = """
CREATE TABLE events (seq INTEGER PRIMARY KEY, hash TEXT);
CREATE TABLE critical_seal (id INTEGER PRIMARY KEY, commit_no INTEGER, log_seq INTEGER,
                            log_mac TEXT);
CREATE TABLE seat_totals (seat INTEGER PRIMARY KEY, net_cents INTEGER, wagered_cents INTEGER,
                          vig_owed_cents INTEGER);
CREATE TABLE progressive_meters (progressive TEXT, level TEXT, amount_cents INTEGER,
                                 frac_num INTEGER, frac_den INTEGER, awarded_cents INTEGER,
                                 paid_count INTEGER);
CREATE TABLE progressive_awards (award_id INTEGER PRIMARY KEY, progressive TEXT, level TEXT,
                                 seat INTEGER, amount_cents INTEGER, state TEXT);
CREATE TABLE critical_digest (name TEXT PRIMARY KEY, columns TEXT, rows INTEGER, acc TEXT);
INSERT INTO critical_digest VALUES ('rounds', 'round_id,state', 2, 'ee');
INSERT INTO events VALUES (1, 'aa'), (2, 'bb');
INSERT INTO critical_seal VALUES (1, 7, 2, 'bb');
INSERT INTO seat_totals VALUES (3, -33675, 50000, 0);
INSERT INTO progressive_meters VALUES ('h9', 'progressive', 1000000, 0, 1, 1000050, 1);
INSERT INTO progressive_awards VALUES (1, 'h9', 'progressive', 4, 1000050, 'paid');
"""


@pytest.fixture
def db() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA)
    return conn


def witnessed(db: sqlite3.Connection) -> Head:
    here = local_head(db)
    return Head("T1", 1, here.commit_no, here.log_seq, here.log_mac, here.state_digest, "ab")


def test_the_same_store_passes(db: sqlite3.Connection) -> None:
    compare(db, witnessed(db))


@pytest.mark.parametrize("edit", [
    "UPDATE progressive_awards SET state = 'pending' WHERE award_id = 1",
    "UPDATE seat_totals SET net_cents = 76325 WHERE seat = 3",
    "UPDATE progressive_meters SET amount_cents = 5",
])
def test_money_changed_at_the_same_log_entry_is_named(db: sqlite3.Connection,
                                                      edit: str) -> None:
    head = witnessed(db)
    db.execute(edit)
    db.execute("UPDATE critical_seal SET commit_no = 8")  # re-sealed with the key
    with pytest.raises(IntegrityError) as found:
        compare(db, head)
    assert found.value.check == "witness: money diverges"
    assert found.value.detail.startswith("the seat totals, meters, awards or rounds differ "
                                         "from those witnessed at the same log entry: the store is "
                                         "at commit 8, log entry 2 (MAC bb, state ")


def test_behind_and_rewritten_are_named(db: sqlite3.Connection) -> None:
    head = Head("T1", 1, 9, 3, "cc", local_head(db).state_digest, "ab")
    with pytest.raises(IntegrityError, match="the store is at commit 7, log entry 2 .* but the "
                                             "witness holds commit 9, log entry 3"):
        compare(db, head)
    rewritten = Head("T1", 1, 7, 2, "dd", local_head(db).state_digest, "ab")
    with pytest.raises(IntegrityError, match="log entry 2 in the store has MAC bb but the "
                                             "witness holds commit 7, log entry 2 \\(MAC dd"):
        compare(db, rewritten)


def test_a_store_without_progressives_has_empty_meters_and_awards(db: sqlite3.Connection
                                                                   ) -> None:
    db.execute("DELETE FROM progressive_meters")
    db.execute("DELETE FROM progressive_awards")
    empty = state_digest(db)
    db.execute("DROP TABLE progressive_meters")
    db.execute("DROP TABLE progressive_awards")
    assert state_digest(db) == empty


@pytest.mark.parametrize("table", ["seat_totals", "critical_digest"])
def test_money_that_cannot_be_read_is_not_digested_as_empty(db: sqlite3.Connection,
                                                            table: str) -> None:
    """Every store has these tables: one that cannot be read is an error, never a digest of
    no money that the witness would be sent, signed."""
    db.execute(f"DROP TABLE {table}")
    with pytest.raises(sqlite3.OperationalError, match=f"no such table: {table}"):
        state_digest(db)
