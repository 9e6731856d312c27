"""The progressive tables of the table's SQLite store, their event kinds and row types.

Shared by the ledger that writes them (`controller.progressive.ledger`) and the check that
recomputes them from the log (`controller.progressive.ledger_verify`). The tables' CREATE
statements are in controller/memory/tables.py with the store's others: the critical-memory
check compares a store's schema with them.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from controller.memory.store import Store
from controller.memory.tables import PROGRESSIVE_TABLES_SQL, statements

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
        for statement in statements(PROGRESSIVE_TABLES_SQL):
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


