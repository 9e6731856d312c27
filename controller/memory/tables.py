"""The store's tables as this software creates them: the table's own, the critical-memory
digests' and seal's, and the progressive ledger's (controller/progressive/ledger_schema.py
creates those when a progressive is configured). One text each, so that what creates a
table and what checks a store's schema against it (controller/memory/check.py) cannot
differ; and which log entries may wait for the next flush, unsealed until then (the check
accepts only those after the seal). A numbered migration that changes a table's definition
(controller/memory/schema.py, MIGRATIONS) gives the check that schema number's definition
too: the check runs before a store is migrated."""

from __future__ import annotations

import re
import sqlite3

SCHEMA_VERSION = 2  # 2: keyed MACs, table digests and the seal (critical memory)

GROUPED_KINDS = frozenset({"card", "burn_card", "prompt", "seat_sensor", "shuffle_progress",
                           "late_sensor_change"})
"""Event kinds whose step may wait for the next flush. A lost card is found by the shoe's
card index: inside a round it voids the round, a lost burn card counts as burned (ruling
C7, docs/rulings.md); a lost prompt is issued again by the restored state; sensor and
shuffler progress are shown live, not relied on. Nothing here moves money or decides a
wager. None of a shoe's own steps is grouped (docs/rulings.md C26): the table's opening and
the shuffle requested are answered commands, the shuffle complete and the shoe loaded are
reported once and kept by no device, the cover card is kept only by a 1.2 shoe (docs/protocol.md
6.6), and the shoe's first card says how many to burn (631a.5(f)), which a shoe that lost
power with the table would not send again."""

STORE_TABLES_SQL = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    seq       INTEGER PRIMARY KEY,
    at        REAL    NOT NULL,
    kind      TEXT    NOT NULL,
    severity  TEXT    NOT NULL,
    device    TEXT,
    round_id  INTEGER,
    payload   TEXT    NOT NULL,
    prev_hash TEXT    NOT NULL,
    hash      TEXT    NOT NULL
);
CREATE TABLE IF NOT EXISTS rounds (
    round_id    INTEGER PRIMARY KEY,
    shoe_no     INTEGER NOT NULL,
    round_no    INTEGER NOT NULL,
    state       TEXT    NOT NULL,      -- open, settled, void
    simulated   INTEGER NOT NULL DEFAULT 0,
    wagers      TEXT    NOT NULL,      -- JSON list of {seat, wager, amount_cents}
    cards       TEXT    NOT NULL,      -- JSON list of {index, card, hand, slot}, at close
    result      TEXT,                  -- JSON
    settlements TEXT,                  -- JSON list
    opened_at   REAL    NOT NULL,
    settled_at  REAL
);
CREATE TABLE IF NOT EXISTS table_state (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    state TEXT NOT NULL,
    data  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS seat_totals (
    seat        INTEGER PRIMARY KEY,
    net_cents   INTEGER NOT NULL,
    wagered_cents INTEGER NOT NULL,
    vig_owed_cents INTEGER NOT NULL DEFAULT 0
);
"""

DIGEST_TABLES_SQL = """
CREATE TABLE IF NOT EXISTS critical_digest (
    name    TEXT PRIMARY KEY,    -- a protected table
    columns TEXT    NOT NULL,    -- JSON list of the columns its row MACs cover
    rows    INTEGER NOT NULL,
    acc     TEXT    NOT NULL     -- hex: sum of HMAC(key, table, row) mod 2**256
);
CREATE TABLE IF NOT EXISTS critical_seal (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    commit_no INTEGER NOT NULL,  -- transactions that wrote something, ever
    log_seq   INTEGER NOT NULL,  -- the last event-log entry at that commit
    log_mac   TEXT    NOT NULL,
    mac       TEXT    NOT NULL
);
"""

PROGRESSIVE_TABLES_SQL = """
CREATE TABLE IF NOT EXISTS progressive_meters (
    progressive     TEXT    NOT NULL,
    level           TEXT    NOT NULL,
    amount_cents    INTEGER NOT NULL,          -- whole cents on the meter
    frac_num        INTEGER NOT NULL,          -- exact sub-cent remainder frac_num/frac_den
    frac_den        INTEGER NOT NULL CHECK (frac_den > 0 AND frac_num >= 0 AND frac_num < frac_den),
    reset_cents     INTEGER NOT NULL,
    increment_rate  TEXT    NOT NULL,          -- exact Fraction, e.g. '1/10'
    version         INTEGER NOT NULL,          -- number of changes: the display feed's sequence
    wagers_count    INTEGER NOT NULL DEFAULT 0,
    wagers_cents    INTEGER NOT NULL DEFAULT 0,
    contributed     TEXT    NOT NULL DEFAULT '0',  -- exact Fraction of cents
    awards_count    INTEGER NOT NULL DEFAULT 0,
    awarded_cents   INTEGER NOT NULL DEFAULT 0,
    paid_system_cents    INTEGER NOT NULL DEFAULT 0,
    paid_attendant_cents INTEGER NOT NULL DEFAULT 0,
    paid_count      INTEGER NOT NULL DEFAULT 0,
    reseeded        TEXT    NOT NULL DEFAULT '0',   -- exact Fraction: seeds funded after awards
    adjustments_cents INTEGER NOT NULL DEFAULT 0,
    updated_at      REAL    NOT NULL,
    PRIMARY KEY (progressive, level)
);
CREATE TABLE IF NOT EXISTS progressive_wagers (
    round_id     INTEGER NOT NULL,
    progressive  TEXT    NOT NULL,
    seat         INTEGER NOT NULL,
    amount_cents INTEGER NOT NULL,
    accepted     INTEGER NOT NULL,
    reason       TEXT,
    PRIMARY KEY (round_id, progressive, seat)
);
CREATE TABLE IF NOT EXISTS progressive_awards (
    award_id     INTEGER PRIMARY KEY,
    progressive  TEXT    NOT NULL,
    level        TEXT    NOT NULL,
    round_id     INTEGER NOT NULL,
    seat         INTEGER NOT NULL,
    amount_cents INTEGER NOT NULL,
    state        TEXT    NOT NULL CHECK (state IN ('pending', 'validated', 'paid')),
    label        TEXT    NOT NULL,
    section      TEXT    NOT NULL,
    pay_order    INTEGER NOT NULL,
    linked_claim TEXT,
    claimed      INTEGER NOT NULL DEFAULT 1,  -- 0: a linked hit awaiting its claim (link down)
    created_at   REAL    NOT NULL,
    validated_by TEXT,
    validated_at REAL,
    paid_via     TEXT,
    paid_at      REAL,
    UNIQUE (progressive, level, round_id, seat)
);
CREATE TABLE IF NOT EXISTS progressive_rounds (
    round_id     INTEGER NOT NULL,
    progressive  TEXT    NOT NULL,
    locked_at    REAL    NOT NULL,
    void         INTEGER NOT NULL DEFAULT 0,   -- 631a.15(e): wagers returned, no hits
    PRIMARY KEY (round_id, progressive)
);
CREATE TABLE IF NOT EXISTS progressive_mystery (
    progressive  TEXT    NOT NULL,
    level        TEXT    NOT NULL,
    epoch        INTEGER NOT NULL,
    trigger_cents INTEGER NOT NULL,           -- secret until the hit, never logged before it
    nonce_hex    TEXT    NOT NULL,
    commitment   TEXT    NOT NULL,
    state        TEXT    NOT NULL CHECK (state IN ('armed', 'hit')),
    PRIMARY KEY (progressive, level, epoch)
);
CREATE TABLE IF NOT EXISTS progressive_outbox (
    seq          INTEGER PRIMARY KEY,         -- the per-table sequence number of 605a.8 sends
    progressive  TEXT    NOT NULL,
    level        TEXT    NOT NULL,
    delta_num    INTEGER NOT NULL,
    delta_den    INTEGER NOT NULL,
    wagers_count INTEGER NOT NULL,
    wagers_cents INTEGER NOT NULL,
    round_id     INTEGER,
    created_at   REAL    NOT NULL,
    acked_at     REAL
);
"""


def as_stored(statement: str) -> str:
    """A table's CREATE statement as it is compared: without its comments and without IF
    NOT EXISTS (SQLite keeps the rest of the text as given, in sqlite_master), its
    whitespace made single spaces and none beside a parenthesis or a comma."""
    text = re.sub(r"--[^\n]*", "", statement).replace("IF NOT EXISTS ", "")
    return re.sub(r" ?([(),]) ?", r"\1", " ".join(text.split()))


def statements(*texts: str) -> list[str]:
    """The CREATE statements of these texts, one each (what creates the tables runs them)."""
    return [s for s in "".join(texts).split(";") if s.strip()]


def stored_schema_number(db: sqlite3.Connection) -> int:
    """The schema number the store records (a sealed meta row); this release's when it holds
    none, or none that is a number (the meta table's own check names that edit)."""
    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    try:
        return int(row[0]) if row is not None else SCHEMA_VERSION
    except (TypeError, ValueError):
        return SCHEMA_VERSION


def _definitions() -> dict[str, str]:
    found = {}
    for statement in statements(STORE_TABLES_SQL, DIGEST_TABLES_SQL, PROGRESSIVE_TABLES_SQL):
        stored = as_stored(statement)
        found[stored.split()[2].split("(")[0]] = stored  # CREATE TABLE <name>(...
    return found


DEFINITIONS = _definitions()
"""Each table's CREATE statement as_stored, by the table's name (schema SCHEMA_VERSION)."""
