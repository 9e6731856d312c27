"""The progressive meters in the table's SQLite store, and their integrity check.

Every meter change is one row update plus one `progressive_meter` entry in
the hash-chained event log, inside the caller's `Store.transaction()`. The
entry carries the exact change (numerator/denominator of cents), so
`verify_meters` can recompute every meter from the tamper-evident log alone.

Sub-cent remainders are kept as an exact Fraction (`frac_num`/`frac_den`, with
0 <= frac < 1): rates such as 3.5% of 250 cents give 8.75 cents, and a Rules
Submission may state any decimal rate, so a fixed micro-cent unit could still
lose a remainder; a Fraction never does (docs/progressive.md).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any

from controller.events.progressive_records import (
    ProgressiveAward,
    ProgressiveLinkedContribution,
    ProgressiveMeter,
    ProgressiveMysteryArmed,
    ProgressiveMysteryReveal,
)
from controller.progressive.core import split
from controller.progressive.errors import AwardError, MeterError
from controller.progressive.ledger_schema import (
    ADJUSTMENT, AWARD, AWARD_EVENT, AWARD_STATES, DECREASING_CHANGES, INCREMENT, METER_EVENT,
    MYSTERY_ARMED_EVENT, MYSTERY_REVEAL_EVENT, PAID, PENDING, PROTECTED_TABLES, RESEED,
    RESERVE_TRANSFER, SEED, VALIDATED, WAGERS_EVENT, Award, MeterRow, ensure_schema,
)
from controller.progressive.ledger_schema import award_row as _award
from controller.progressive.ledger_schema import meter_row as _meter
from controller.progressive.ledger_verify import verify_meters
from controller.memory.store import Store

# What the ledger's callers import from here (the schema and the check live beside it).
__all__ = [
    "ADJUSTMENT", "AWARD", "AWARD_EVENT", "AWARD_STATES", "DECREASING_CHANGES", "INCREMENT",
    "METER_EVENT", "MYSTERY_ARMED_EVENT", "MYSTERY_REVEAL_EVENT", "PAID", "PENDING",
    "PROTECTED_TABLES", "RESEED", "RESERVE_TRANSFER", "SEED", "VALIDATED",
    "WAGERS_EVENT", "Award", "MeterLedger", "MeterRow", "ensure_schema", "verify_meters",
]


# The store's name in the shared ledger's keys (`link_store`), kept in its meta table.
LINK_STORE_META = "progressive_link_store"


class MeterLedger:
    """The meters, awards, mystery secrets and link outbox of one table, in its Store."""

    def __init__(self, store: Store, clock: Any = None) -> None:
        self.store = store
        self._clock = clock or store._clock  # the store's clock stamps its own rows too
        ensure_schema(store)

    # --- reads ---------------------------------------------------------------------------

    def meter(self, progressive: str, level: str) -> MeterRow | None:
        with self.store.reading() as db:
            row = db.execute("SELECT * FROM progressive_meters WHERE progressive = ? AND level = ?",
                             (progressive, level)).fetchone()
        return _meter(row) if row else None

    def all_meters(self) -> list[MeterRow]:
        with self.store.reading() as db:
            rows = db.execute("SELECT * FROM progressive_meters ORDER BY progressive, level")
            return [_meter(r) for r in rows]

    def award(self, award_id: int) -> Award:
        with self.store.reading() as db:
            row = db.execute("SELECT * FROM progressive_awards WHERE award_id = ?",
                             (award_id,)).fetchone()
        if row is None:
            raise AwardError(f"award {award_id} does not exist")
        return _award(row)

    def awards(self, *, states: Iterable[str] = AWARD_STATES, round_id: int | None = None
               ) -> list[Award]:
        wanted = tuple(states)
        sql = (f"SELECT * FROM progressive_awards WHERE state IN ({','.join('?' * len(wanted))})")
        args: list[Any] = list(wanted)
        if round_id is not None:
            sql += " AND round_id = ?"
            args.append(round_id)
        with self.store.reading() as db:
            return [_award(r) for r in db.execute(sql + " ORDER BY award_id", args)]

    # --- meter changes (call inside store.transaction()) -------------------------------------

    def seed(self, progressive: str, level: str, reset_cents: int, rate: Fraction) -> MeterRow:
        """Create a meter at its seed (first start of this progressive); no-op if it exists."""
        existing = self.meter(progressive, level)
        if existing is not None:
            return existing
        with self.store.transaction() as db:
            db.execute(
                "INSERT INTO progressive_meters(progressive, level, amount_cents, frac_num, frac_den,"
                " reset_cents, increment_rate, version, updated_at) VALUES (?,?,0,0,1,?,?,0,?)",
                (progressive, level, reset_cents, str(rate), self._clock()))
            return self.change(progressive, level, Fraction(reset_cents), SEED)

    def change(self, progressive: str, level: str, delta: Fraction, kind: str, *,
               round_id: int | None = None, seats: Sequence[int] = (),
               wagers_cents: int = 0, award_id: int | None = None,
               supervisor: str | None = None, reason: str | None = None) -> MeterRow:
        """Apply one change to a meter and log it, in the current transaction."""
        if delta < 0 and kind not in DECREASING_CHANGES:
            raise MeterError(f"{progressive}/{level}: a {kind} of {delta} cents would lower the "
                             "meter; only an award or an audited adjustment may (605a.7)")
        if kind == ADJUSTMENT and not (supervisor and reason):
            raise MeterError("an adjustment needs the supervisor's name and a reason (605a.7)")
        with self.store.transaction() as db:
            row = db.execute("SELECT * FROM progressive_meters WHERE progressive = ? AND level = ?",
                             (progressive, level)).fetchone()
            if row is None:
                raise MeterError(f"meter {progressive}/{level} does not exist")
            before = _meter(row)
            after = before.value + delta
            if after < 0:
                raise MeterError(f"{progressive}/{level}: {kind} of {delta} cents would take the "
                                 f"meter below zero ({before.value})")
            cents, num, den = split(after)
            contributed = before.contributed + (delta if kind == INCREMENT else 0)
            reseeded = before.reseeded + (delta if kind in (RESEED,) else 0)
            db.execute(
                "UPDATE progressive_meters SET amount_cents = ?, frac_num = ?, frac_den = ?,"
                " version = version + 1, wagers_count = wagers_count + ?,"
                " wagers_cents = wagers_cents + ?, contributed = ?, reseeded = ?,"
                " adjustments_cents = adjustments_cents + ?, updated_at = ?"
                " WHERE progressive = ? AND level = ?",
                (cents, num, den, len(seats) if kind == INCREMENT else 0,
                 wagers_cents if kind == INCREMENT else 0, str(contributed), str(reseeded),
                 int(delta) if kind == ADJUSTMENT else 0, self._clock(), progressive, level))
            self.store.append_event(ProgressiveMeter(
                progressive, level, kind, delta.numerator, delta.denominator, cents, num, den,
                before.version + 1, seats=tuple(seats), wagers_cents=wagers_cents,
                award_id=award_id, supervisor=supervisor, reason=reason), round_id=round_id)
            updated = db.execute("SELECT * FROM progressive_meters WHERE progressive = ? AND "
                                 "level = ?", (progressive, level)).fetchone()
            return _meter(updated)

    # --- awards ---------------------------------------------------------------------------

    def create_award(self, progressive: str, level: str, round_id: int, seat: int,
                     amount_cents: int, label: str, section: str, pay_order: int,
                     linked_claim: str | None = None, claimed: bool = True) -> Award:
        """A pending award (idempotent on (progressive, level, round, seat))."""
        with self.store.transaction() as db:
            row = db.execute("SELECT * FROM progressive_awards WHERE progressive = ? AND level = ?"
                             " AND round_id = ? AND seat = ?",
                             (progressive, level, round_id, seat)).fetchone()
            if row is not None:
                return _award(row)
            cursor = db.execute(
                "INSERT INTO progressive_awards(progressive, level, round_id, seat, amount_cents,"
                " state, label, section, pay_order, linked_claim, claimed, created_at)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (progressive, level, round_id, seat, amount_cents, PENDING, label, section,
                 pay_order, linked_claim, int(claimed), self._clock()))
            award_id = int(cursor.lastrowid or 0)
            db.execute("UPDATE progressive_meters SET awards_count = awards_count + 1,"
                       " awarded_cents = awarded_cents + ? WHERE progressive = ? AND level = ?",
                       (amount_cents, progressive, level))
            self.store.append_event(ProgressiveAward(
                award_id, progressive, level, seat, amount_cents, PENDING, label=label,
                section=section, pay_order=pay_order, linked_claim=linked_claim,
                claimed=claimed), round_id=round_id)
            return self.award(award_id)

    def find_award(self, progressive: str, level: str, round_id: int, seat: int) -> Award | None:
        with self.store.reading() as db:
            row = db.execute("SELECT * FROM progressive_awards WHERE progressive = ? AND level = ?"
                             " AND round_id = ? AND seat = ?",
                             (progressive, level, round_id, seat)).fetchone()
        return _award(row) if row else None

    def set_claimed(self, award_id: int, amount_cents: int) -> Award:
        """A linked hit's amount arrived from the shared ledger (claimed after the link returned)."""
        with self.store.transaction() as db:
            db.execute("UPDATE progressive_awards SET amount_cents = ?, claimed = 1"
                       " WHERE award_id = ? AND claimed = 0", (amount_cents, award_id))
            award = self.award(award_id)
            self.store.append_event(ProgressiveAward(
                award_id, award.progressive, award.level, award.seat, amount_cents, award.state,
                claimed=True, linked_claim=award.linked_claim), round_id=award.round_id)
            return award

    def next_pay_order(self, round_id: int) -> int:
        with self.store.reading() as db:
            row = db.execute("SELECT COALESCE(MAX(pay_order), 0) AS n FROM progressive_awards"
                             " WHERE round_id = ?", (round_id,)).fetchone()
        return int(row["n"]) + 1

    def mark_round(self, round_id: int, progressive: str) -> bool:
        """Record that this round's wagers were booked; False if they already were."""
        with self.store.transaction() as db:
            cursor = db.execute("INSERT OR IGNORE INTO progressive_rounds(round_id, progressive,"
                                " locked_at) VALUES (?,?,?)", (round_id, progressive, self._clock()))
            return cursor.rowcount == 1

    def void_round(self, round_id: int, progressive: str) -> None:
        with self.store.transaction() as db:
            db.execute("UPDATE progressive_rounds SET void = 1 WHERE round_id = ? AND progressive = ?",
                       (round_id, progressive))

    def is_void(self, round_id: int, progressive: str) -> bool:
        with self.store.reading() as db:
            row = db.execute("SELECT void FROM progressive_rounds WHERE round_id = ? AND"
                             " progressive = ?", (round_id, progressive)).fetchone()
        return bool(row and row["void"])

    def round_wagers(self, round_id: int, progressive: str
                     ) -> list[tuple[int, int, bool, str | None]]:
        with self.store.reading() as db:
            rows = db.execute("SELECT * FROM progressive_wagers WHERE round_id = ? AND"
                              " progressive = ? ORDER BY seat", (round_id, progressive))
            return [(r["seat"], r["amount_cents"], bool(r["accepted"]), r["reason"]) for r in rows]

    def advance_award(self, award_id: int, to_state: str, *, supervisor: str | None = None,
                      paid_via: str | None = None) -> Award:
        """Move an award one step; a repeated step is a no-op (exactly once after a crash)."""
        with self.store.transaction() as db:
            award = self.award(award_id)
            order = AWARD_STATES.index
            if order(award.state) >= order(to_state):
                return award
            if order(to_state) != order(award.state) + 1:
                raise AwardError(f"award {award_id} is {award.state}; it cannot become {to_state}")
            now = self._clock()
            if to_state == VALIDATED:
                db.execute("UPDATE progressive_awards SET state = ?, validated_by = ?,"
                           " validated_at = ? WHERE award_id = ?",
                           (VALIDATED, supervisor, now, award_id))
            else:
                column = ("paid_attendant_cents" if paid_via == "jackpot-slip"
                          else "paid_system_cents")
                db.execute("UPDATE progressive_awards SET state = ?, paid_via = ?, paid_at = ?"
                           " WHERE award_id = ?", (PAID, paid_via, now, award_id))
                db.execute(f"UPDATE progressive_meters SET {column} = {column} + ?,"
                           " paid_count = paid_count + 1 WHERE progressive = ? AND level = ?",
                           (award.amount_cents, award.progressive, award.level))
            self.store.append_event(ProgressiveAward(
                award_id, award.progressive, award.level, award.seat, award.amount_cents,
                to_state, supervisor=supervisor or award.validated_by, paid_via=paid_via),
                round_id=award.round_id)
            return self.award(award_id)

    # --- mystery secrets ----------------------------------------------------------------------

    def arm_mystery(self, progressive: str, level: str, epoch: int, trigger_cents: int,
                    nonce: bytes, commitment: str) -> None:
        with self.store.transaction() as db:
            db.execute("INSERT INTO progressive_mystery(progressive, level, epoch, trigger_cents,"
                       " nonce_hex, commitment, state) VALUES (?,?,?,?,?,?,'armed')",
                       (progressive, level, epoch, trigger_cents, nonce.hex(), commitment))
            # Only the commitment enters the log now; the trigger is revealed at the hit.
            self.store.append_event(ProgressiveMysteryArmed(progressive, level, epoch,
                                                            commitment, scheme="sha256"))

    def armed_mystery(self, progressive: str, level: str) -> tuple[int, int, str, str] | None:
        """(epoch, trigger cents, nonce hex, commitment) of the armed trigger, if any."""
        with self.store.reading() as db:
            row = db.execute("SELECT * FROM progressive_mystery WHERE progressive = ? AND level = ?"
                             " AND state = 'armed' ORDER BY epoch DESC LIMIT 1",
                             (progressive, level)).fetchone()
        if row is None:
            return None
        return row["epoch"], row["trigger_cents"], row["nonce_hex"], row["commitment"]

    def last_epoch(self, progressive: str, level: str) -> int:
        with self.store.reading() as db:
            row = db.execute("SELECT MAX(epoch) AS e FROM progressive_mystery WHERE progressive = ?"
                             " AND level = ?", (progressive, level)).fetchone()
        return int(row["e"] or 0)

    def reveal_mystery(self, progressive: str, level: str, epoch: int, award_id: int,
                       round_id: int) -> None:
        with self.store.transaction() as db:
            row = db.execute("SELECT * FROM progressive_mystery WHERE progressive = ? AND level = ?"
                             " AND epoch = ?", (progressive, level, epoch)).fetchone()
            db.execute("UPDATE progressive_mystery SET state = 'hit' WHERE progressive = ? AND "
                       "level = ? AND epoch = ?", (progressive, level, epoch))
            self.store.append_event(ProgressiveMysteryReveal(
                progressive, level, epoch, row["trigger_cents"], row["nonce_hex"],
                row["commitment"], award_id), round_id=round_id)

    # --- wagers and the link outbox ---------------------------------------------------------

    def record_wagers(self, round_id: int, progressive: str,
                      rows: Iterable[tuple[int, int, bool, str | None]]) -> None:
        with self.store.transaction() as db:
            db.executemany(
                "INSERT OR REPLACE INTO progressive_wagers(round_id, progressive, seat, amount_cents,"
                " accepted, reason) VALUES (?,?,?,?,?,?)",
                [(round_id, progressive, seat, cents, int(ok), reason)
                 for seat, cents, ok, reason in rows])

    def accepted_wagers(self, round_id: int, progressive: str) -> dict[int, int]:
        with self.store.reading() as db:
            rows = db.execute("SELECT seat, amount_cents FROM progressive_wagers WHERE round_id = ?"
                              " AND progressive = ? AND accepted = 1", (round_id, progressive))
            return {r["seat"]: r["amount_cents"] for r in rows}

    def enqueue(self, progressive: str, level: str, delta: Fraction, wagers_count: int,
                wagers_cents: int, round_id: int | None) -> int:
        with self.store.transaction() as db:
            cursor = db.execute(
                "INSERT INTO progressive_outbox(progressive, level, delta_num, delta_den,"
                " wagers_count, wagers_cents, round_id, created_at) VALUES (?,?,?,?,?,?,?,?)",
                (progressive, level, delta.numerator, delta.denominator, wagers_count,
                 wagers_cents, round_id, self._clock()))
            seq = int(cursor.lastrowid or 0)
            self.store.append_event(ProgressiveLinkedContribution(
                progressive, level, seq, delta.numerator, delta.denominator, wagers_count,
                wagers_cents), round_id=round_id)
            return seq

    def link_store(self) -> str:
        """This store's name in the shared ledger's keys (605a.8): a store numbers its
        contributions and rounds from 1, so the ledger tells a replaced store's rows from
        the old one's by it (controller/progressive/linked_sql.py). Made once, at random,
        for a store that has told the ledger nothing; a store that has (an earlier release's,
        whose rows the ledger holds under no name) keeps the empty name, so none of its rows
        or claims changes its key."""
        with self.store.transaction() as db:
            named = self.store.meta(LINK_STORE_META)
            if named is None:
                spoke = db.execute(
                    "SELECT EXISTS (SELECT 1 FROM progressive_outbox) OR EXISTS (SELECT 1"
                    " FROM progressive_awards WHERE linked_claim IS NOT NULL)").fetchone()[0]
                named = "" if spoke else secrets.token_hex(8)
                self.store.put_meta(LINK_STORE_META, named)
            return named

    def unacked(self, limit: int = 500) -> list[dict[str, Any]]:
        with self.store.reading() as db:
            rows = db.execute("SELECT * FROM progressive_outbox WHERE acked_at IS NULL"
                              " ORDER BY seq LIMIT ?", (limit,))
            return [dict(r) for r in rows]

    def ack(self, seqs: Sequence[int]) -> None:
        if not seqs:
            return
        with self.store.transaction() as db:
            db.executemany("UPDATE progressive_outbox SET acked_at = ? WHERE seq = ?",
                           [(self._clock(), s) for s in seqs])
