"""The progressive tables of the table's SQLite store, their event kinds and row types.

Shared by the ledger that writes them (`controller.progressive.ledger`) and the check that
recomputes them from the log (`controller.progressive.ledger_verify`).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from controller.memory.store import Store

METER_EVENT = "progressive_meter"
AWARD_EVENT = "progressive_award"
WAGERS_EVENT = "progressive_wagers"
MYSTERY_ARMED_EVENT = "progressive_mystery_armed"
MYSTERY_REVEAL_EVENT = "progressive_mystery_reveal"

# Kinds of meter change. Only these may lower a meter (the task of 605a.7 meters: a meter
# never decreases except by an award or an audited adjustment).
SEED, INCREMENT, AWARD, RESEED, ADJUSTMENT, RESERVE_TRANSFER = (
    "seed", "increment", "award", "reseed", "adjustment", "reserve-transfer")
DECREASING_CHANGES = frozenset({AWARD, ADJUSTMENT, RESERVE_TRANSFER})

PENDING, VALIDATED, PAID = "pending", "validated", "paid"
AWARD_STATES = (PENDING, VALIDATED, PAID)

SCHEMA = """
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


@dataclass(frozen=True, slots=True)
class MeterRow:
    progressive: str
    level: str
    amount_cents: int
    frac: Fraction
    reset_cents: int
    increment_rate: Fraction
    version: int
    wagers_count: int
    wagers_cents: int
    contributed: Fraction
    awards_count: int
    awarded_cents: int
    paid_system_cents: int
    paid_attendant_cents: int
    paid_count: int
    reseeded: Fraction
    adjustments_cents: int

    @property
    def value(self) -> Fraction:
        return self.amount_cents + self.frac


@dataclass(frozen=True, slots=True)
class Award:
    """One progressive award; `state` moves pending -> validated -> paid, once."""

    award_id: int
    progressive: str
    level: str
    round_id: int
    seat: int
    amount_cents: int
    state: str
    label: str
    section: str
    pay_order: int
    validated_by: str | None = None
    paid_via: str | None = None
    linked_claim: str | None = None
    claimed: bool = True  # False: a linked hit whose amount the shared ledger has yet to give

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, for the control socket and tablectl."""
        return {name: getattr(self, name) for name in self.__slots__}


PROTECTED_TABLES = ("progressive_meters", "progressive_wagers", "progressive_awards",
                    "progressive_rounds", "progressive_mystery", "progressive_outbox")


def ensure_schema(store: Store) -> None:
    with store.transaction() as db:
        for statement in SCHEMA.split(";"):
            if statement.strip():
                db.execute(statement)
        store.protect(PROTECTED_TABLES)  # critical memory: keyed digests (controller/memory/critical.py)


def meter_row(row: sqlite3.Row) -> MeterRow:
    return MeterRow(row["progressive"], row["level"], row["amount_cents"],
                    Fraction(row["frac_num"], row["frac_den"]), row["reset_cents"],
                    Fraction(row["increment_rate"]), row["version"], row["wagers_count"],
                    row["wagers_cents"], Fraction(row["contributed"]), row["awards_count"],
                    row["awarded_cents"], row["paid_system_cents"], row["paid_attendant_cents"],
                    row["paid_count"], Fraction(row["reseeded"]), row["adjustments_cents"])


def award_row(row: sqlite3.Row) -> Award:
    return Award(row["award_id"], row["progressive"], row["level"], row["round_id"], row["seat"],
                 row["amount_cents"], row["state"], row["label"], row["section"],
                 row["pay_order"], row["validated_by"], row["paid_via"], row["linked_claim"],
                 bool(row["claimed"]))


