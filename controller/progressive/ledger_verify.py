"""The progressive meters recomputed from the hash-chained log (the start-up check)."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import TypeVar

from controller.events.codec import EventDecodeError, EventRecord
from controller.events.progressive_records import (
    ProgressiveMeter,
    ProgressiveMysteryArmed,
    ProgressiveMysteryReveal,
)
from controller.memory.store import Event, Store
from controller.progressive.ledger_schema import (
    ADJUSTMENT, AWARD, DECREASING_CHANGES, ensure_schema, meter_row,
)

R = TypeVar("R", bound=EventRecord)


def _logged(store: Store, record: type[R], problems: list[str]) -> Iterator[tuple[Event, R]]:
    """The log's entries of `record`'s kind, as records; one that does not decode is a
    problem named, not a crash."""
    for event in store.events(kind=record.KIND):
        try:
            yield event, record.decode(event.payload)
        except EventDecodeError as exc:
            problems.append(f"log entry {event.seq}: {exc}")


def verify_meters(store: Store) -> list[str]:
    """Every problem found recomputing the meters from the hash-chained log (empty: intact).

    For each meter: its exact value equals the sum of its logged changes (seed,
    increments, reseeds, awards, audited adjustments); its version equals the
    number of changes; its award counters equal its award rows; no logged
    change lowered it unless an award or an audited adjustment; every revealed
    mystery trigger matches the commitment logged when it was armed.
    """
    from controller.progressive.core import commitment

    ensure_schema(store)
    problems: list[str] = []
    totals: dict[tuple[str, str], Fraction] = {}
    counts: dict[tuple[str, str], int] = {}
    award_deltas: dict[tuple[str, str], Fraction] = {}
    for event, meter in _logged(store, ProgressiveMeter, problems):
        key = (meter.progressive, meter.level)
        delta = Fraction(meter.delta_num, meter.delta_den)
        if delta < 0 and meter.change not in DECREASING_CHANGES:
            problems.append(f"meter {key[0]}/{key[1]}: log entry {event.seq} lowers it by "
                            f"{-delta} cents in a {meter.change!r}")
        if meter.change == ADJUSTMENT and not meter.supervisor:
            problems.append(f"meter {key[0]}/{key[1]}: adjustment at log entry {event.seq} names "
                            "no supervisor")
        if meter.change == AWARD:
            award_deltas[key] = award_deltas.get(key, Fraction(0)) - delta
        totals[key] = totals.get(key, Fraction(0)) + delta
        counts[key] = counts.get(key, 0) + 1
    with store.transaction() as db:
        rows = {(r["progressive"], r["level"]): meter_row(r)
                for r in db.execute("SELECT * FROM progressive_meters")}
        award_rows = db.execute(
            "SELECT progressive, level, COUNT(*) AS n, SUM(amount_cents) AS cents,"
            " SUM(CASE WHEN state = 'paid' THEN amount_cents ELSE 0 END) AS paid"
            " FROM progressive_awards GROUP BY progressive, level").fetchall()
        reveals = [(r["progressive"], r["level"], r["epoch"], r["trigger_cents"], r["nonce_hex"],
                    r["commitment"]) for r in db.execute(
                        "SELECT * FROM progressive_mystery WHERE state = 'hit'")]
    for key in sorted(set(rows) | set(totals)):
        name = f"meter {key[0]}/{key[1]}"
        row = rows.get(key)
        if row is None:
            problems.append(f"{name}: logged changes but no meter row")
            continue
        logged = totals.get(key, Fraction(0))
        if row.value != logged:
            problems.append(f"{name}: shows {row.amount_cents} cents (+{row.frac}) but its seed, "
                            f"increments, awards and adjustments in the log make "
                            f"{float(logged):.4f} cents")
        if row.version != counts.get(key, 0):
            problems.append(f"{name}: version {row.version} but {counts.get(key, 0)} logged changes")
        if row.value < 0:
            problems.append(f"{name}: negative ({row.value} cents)")
        if award_deltas.get(key, Fraction(0)) != row.awarded_cents and key[1] != "reserve":
            problems.append(f"{name}: {row.awarded_cents} cents awarded on its companion meter but "
                            f"{award_deltas.get(key, Fraction(0))} cents of awards in the log")
    for r in award_rows:
        row = rows.get((r["progressive"], r["level"]))
        if row is None:
            continue  # a linked level: its meter lives in the shared ledger
        if row.awards_count != r["n"] or row.awarded_cents != r["cents"]:
            problems.append(f"meter {r['progressive']}/{r['level']}: companion meters say "
                            f"{row.awards_count} awards, {row.awarded_cents} cents; award rows say "
                            f"{r['n']}, {r['cents']} cents")
        if row.paid_system_cents + row.paid_attendant_cents != r["paid"]:
            problems.append(f"meter {r['progressive']}/{r['level']}: paid companions "
                            f"{row.paid_system_cents + row.paid_attendant_cents} cents but paid "
                            f"award rows {r['paid']} cents")
    for progressive, level, epoch, trigger, nonce_hex, commit in reveals:
        if commitment(progressive, level, epoch, trigger, bytes.fromhex(nonce_hex)) != commit:
            problems.append(f"mystery {progressive}/{level} epoch {epoch}: the revealed trigger "
                            "does not match its commitment")
    armed: dict[tuple[str, str, int], str] = {}
    for _, arming in _logged(store, ProgressiveMysteryArmed, problems):
        armed[(arming.progressive, arming.level, arming.epoch)] = arming.commitment
    for event, reveal in _logged(store, ProgressiveMysteryReveal, problems):
        logged_commit = armed.get((reveal.progressive, reveal.level, reveal.epoch))
        recomputed = commitment(reveal.progressive, reveal.level, reveal.epoch,
                                reveal.trigger_cents, bytes.fromhex(reveal.nonce_hex))
        if logged_commit != recomputed:
            problems.append(f"mystery {reveal.progressive}/{reveal.level} epoch {reveal.epoch}: "
                            f"the reveal at log entry {event.seq} does not match the armed "
                            "commitment")
    return problems

