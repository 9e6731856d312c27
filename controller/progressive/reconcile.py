"""One table's store against the shared ledger of linked progressives (605a.8, ruling P6).

The ledger's functions keep a table from moving the meter by more than the rows it writes
(controller/progressive/linked_sql.py), but a table whose box is in the wrong hands can
still write rows in its own name: contributions for wagers it never took, a hit it never
had. Each such row is in the ledger and not in the table's store, whose hash chain the
table's own check (and its witness) vouch for. This compares the two, row by row, for the
casino's auditor: `tablectl linked reconcile` (docs/technician-guide.md).

What is compared: the ledger's contributions and awards of this table under this store's
name (`MeterLedger.link_store`) with the store's outbox and its linked awards. A row on the
ledger only, a row acknowledged at the table but not on the ledger, and a row on both with
other content are findings; a row the table has not sent yet (or a hit not yet claimed) is
pending, not a finding. Rows of the same table from its other stores (a store replaced) are
counted and left to those stores' own reconciliation. Rows of the table in another group
than its configuration's are findings: a table plays one group (a table moved from one
group to another shows its rows in the old one so, for the auditor to account for). So is
another store of the table whose rows reached the ledger while this store's did: a store
replaced stops before its successor starts.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from typing import Any

from controller.progressive.ledger import LINK_STORE_META
from controller.progressive.linked import claim_prefix
from controller.progressive.linked_sql import identifier
from controller.text_files import loads_json


@dataclass(frozen=True, slots=True)
class Contribution:
    """One contribution row, as the store or the ledger holds it."""

    seq: int
    progressive: str
    level: str
    share: Fraction
    wagers_count: int
    wagers_cents: int
    round_id: int | None

    def describe(self) -> str:
        return (f"{self.progressive}/{self.level} {self.share} cents from {self.wagers_count} "
                f"wagers of {self.wagers_cents} cents, round {self.round_id}")


@dataclass(frozen=True, slots=True)
class StoreSide:
    """What a table's store says it told the ledger."""

    table_id: str | None  # from its first record (None: unreadable)
    name: str | None  # its name in the ledger's keys; None: it never spoke to a ledger
    contributions: dict[int, tuple[Contribution, bool]]  # seq -> (row, acknowledged)
    awards: dict[str, tuple[int, bool]]  # claim key -> (amount, claimed)


@dataclass(frozen=True, slots=True)
class LedgerSide:
    """This table's rows on the ledger, by the store that sent them."""

    contributions: dict[str, dict[int, tuple[Contribution, str | None]]]  # store -> seq -> row, login
    awards: dict[str, tuple[int, str | None]]  # claim key -> (amount, login)
    # Rows under this table id in groups other than its configuration's, by group:
    # (contributions, awards, the logins that wrote them).
    other_groups: dict[str, tuple[int, int, tuple[str, ...]]] = field(default_factory=dict)
    # When the ledger received each store's first and last contribution (server time).
    spans: dict[str, tuple[datetime, datetime]] = field(default_factory=dict)


@dataclass(slots=True)
class Reconciliation:
    table_id: str
    store: str | None  # None: the store never spoke to a linked ledger
    group: str
    contributions_matched: int = 0
    contributions_pending: list[int] = field(default_factory=list)
    awards_matched: int = 0
    awards_pending: list[str] = field(default_factory=list)
    other_stores: dict[str, int] = field(default_factory=dict)  # name -> contributions held
    findings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"table_id": self.table_id, "store": self.store, "group": self.group,
                "contributions_matched": self.contributions_matched,
                "contributions_pending": self.contributions_pending,
                "awards_matched": self.awards_matched, "awards_pending": self.awards_pending,
                "other_stores": self.other_stores, "findings": self.findings}


def read_store_side(db: sqlite3.Connection) -> StoreSide:
    """The store's side, from a read-only connection to a copy of it."""
    names = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    table_id = _first_record_table(db)
    if "progressive_outbox" not in names:
        return StoreSide(table_id, None, {}, {})
    contributions = {
        int(seq): (Contribution(int(seq), progressive, level, Fraction(int(num), int(den)),
                                int(count), int(cents), None if rid is None else int(rid)),
                   acked is not None)
        for seq, progressive, level, num, den, count, cents, rid, acked in db.execute(
            "SELECT seq, progressive, level, delta_num, delta_den, wagers_count, wagers_cents,"
            " round_id, acked_at FROM progressive_outbox")}
    awards = {str(key): (int(amount), bool(claimed)) for key, amount, claimed in db.execute(
        "SELECT linked_claim, amount_cents, claimed FROM progressive_awards"
        " WHERE linked_claim IS NOT NULL")}
    row = db.execute("SELECT value FROM meta WHERE key = ?", (LINK_STORE_META,)).fetchone()
    if row is not None:
        name: str | None = str(row[0])
    else:  # not started by a release that names stores: it would keep '' if it spoke
        name = "" if contributions or awards else None
    return StoreSide(table_id, name, contributions, awards)


def _first_record_table(db: sqlite3.Connection) -> str | None:
    row = db.execute("SELECT payload FROM events ORDER BY seq LIMIT 1").fetchone()
    try:  # read without the key: the store's own check says whether it is intact
        record = loads_json(row[0]) if row is not None else None
    except (ValueError, TypeError):
        return None
    table = record.get("table_id") if isinstance(record, dict) else None
    return table if isinstance(table, str) else None


def read_ledger_side(conn: Any, schema: str, group: str, table_id: str) -> LedgerSide:
    """This table's rows in the ledger, on a psycopg connection (read only)."""
    s = identifier(schema)
    columns = {(table, column) for table, column in conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns"
        " WHERE table_schema = %s AND table_name IN ('contributions', 'awards')", (s,))}
    # A ledger not yet brought up to date has none of these: its rows are the '' store's.
    store = "store" if ("contributions", "store") in columns else "''"
    sent_by = "sent_by" if ("contributions", "sent_by") in columns else "NULL"
    claimed_by = "claimed_by" if ("awards", "claimed_by") in columns else "NULL"
    contributions: dict[str, dict[int, tuple[Contribution, str | None]]] = {}
    spans: dict[str, tuple[datetime, datetime]] = {}
    for name, seq, progressive, level, num, den, count, cents, rid, login, at in conn.execute(
            f"SELECT {store}, seq, progressive, level, delta_num, delta_den, wagers_count,"
            f" wagers_cents, round_id, {sent_by}, received_at FROM {s}.contributions"
            " WHERE grp = %s AND table_id = %s", (group, table_id)):
        contributions.setdefault(str(name), {})[int(seq)] = (
            Contribution(int(seq), progressive, level, Fraction(int(num), int(den)), int(count),
                         int(cents), None if rid is None else int(rid)), login)
        first, last = spans.get(str(name), (at, at))
        spans[str(name)] = (min(first, at), max(last, at))
    awards = {str(key): (int(amount), login) for key, amount, login in conn.execute(
        f"SELECT claim_key, amount_cents, {claimed_by} FROM {s}.awards"
        " WHERE grp = %s AND table_id = %s", (group, table_id))}
    return LedgerSide(contributions, awards, _other_groups(conn, s, group, table_id,
                                                           sent_by, claimed_by), spans)


def _other_groups(conn: Any, s: str, group: str, table_id: str, sent_by: str,
                  claimed_by: str) -> dict[str, tuple[int, int, tuple[str, ...]]]:
    """This table's rows in the groups its configuration does not name: a table plays one
    group, and its store does not say which group a row went to, so a row elsewhere (a
    contribution to another pit's meter, a hit claimed from it) is not matched, only
    counted, with the logins that wrote it."""
    counts: dict[str, list[int]] = {}  # group -> [contributions, awards]
    logins: dict[str, set[str]] = {}
    for index, (table, login_column) in enumerate((("contributions", sent_by),
                                                   ("awards", claimed_by))):
        for grp, login, count in conn.execute(
                f"SELECT grp, {login_column}, count(*) FROM {s}.{table}"
                " WHERE table_id = %s AND grp <> %s GROUP BY 1, 2", (table_id, group)):
            counts.setdefault(grp, [0, 0])[index] += int(count)
            logins.setdefault(grp, set()).add(login or _UNRECORDED)
    return {grp: (rows, hits, tuple(sorted(logins[grp])))
            for grp, (rows, hits) in sorted(counts.items())}


def reconcile(table_id: str, group: str, store: StoreSide, ledger: LedgerSide
              ) -> Reconciliation:
    """The store's rows against the ledger's under its name (module docstring)."""
    name = store.name
    result = Reconciliation(table_id, name, group)
    held = ledger.contributions.get(name, {}) if name is not None else {}
    result.other_stores = {other: len(rows) for other, rows in ledger.contributions.items()
                           if other != name}
    for seq in sorted(set(held) | set(store.contributions)):
        on_ledger, ours = held.get(seq), store.contributions.get(seq)
        if on_ledger is None and ours is not None:
            if ours[1]:
                result.findings.append(
                    f"contribution {seq} ({ours[0].describe()}) was acknowledged at the table "
                    "but is not on the ledger")
            else:
                result.contributions_pending.append(seq)
        elif ours is None and on_ledger is not None:
            result.findings.append(
                f"contribution {seq} on the ledger ({on_ledger[0].describe()}; sent by "
                f"{on_ledger[1] or _UNRECORDED}) is not in this store")
        elif ours is not None and on_ledger is not None:
            if ours[0] != on_ledger[0]:
                result.findings.append(
                    f"contribution {seq} differs: the ledger holds {on_ledger[0].describe()} "
                    f"(sent by {on_ledger[1] or _UNRECORDED}), the store "
                    f"{ours[0].describe()}")
            else:
                result.contributions_matched += 1
    _reconcile_awards(result, table_id, name, store, ledger)
    _reconcile_spans(result, table_id, name, ledger)
    for other, (rows, hits, logins) in ledger.other_groups.items():
        result.findings.append(
            f"the ledger holds {rows} contributions and {hits} awards of table {table_id} in "
            f"group {other} (written by {', '.join(logins)}), which this table does not play "
            f"(its group is {group})")
    return result


def _reconcile_spans(result: Reconciliation, table_id: str, name: str | None,
                     ledger: LedgerSide) -> None:
    """A replaced store's rows all come before its successor's first: another store of this
    table whose rows reached the ledger while this one's did is a second box playing as this
    table at once (a copy of it, or two tables configured with one id), whose rows no store
    at hand accounts for."""
    ours = ledger.spans.get(name) if name is not None else None
    if ours is None:
        return
    for other, (first, last) in sorted(ledger.spans.items()):
        if other != name and first <= ours[1] and last >= ours[0]:
            result.findings.append(
                f"store {other or _EARLIER} of table {table_id} sent contributions from "
                f"{_when(first)} to {_when(last)}, while this store sent its own ("
                f"{_when(ours[0])} to {_when(ours[1])}): two boxes played as this table at "
                "once (a copy of this one, or two tables configured with one id)")


def _when(moment: datetime) -> str:
    return moment.astimezone().isoformat(sep=" ", timespec="seconds")


def _reconcile_awards(result: Reconciliation, table_id: str, name: str | None,
                      store: StoreSide, ledger: LedgerSide) -> None:
    ours = _keys_of(ledger.awards, table_id, name) if name is not None else set()
    for key in sorted(ours | set(store.awards)):
        on_ledger, mine = ledger.awards.get(key), store.awards.get(key)
        if mine is None and on_ledger is not None:
            result.findings.append(
                f"award {key} on the ledger ({on_ledger[0]} cents; claimed by "
                f"{on_ledger[1] or _UNRECORDED}) is not in this store")
        elif mine is not None and on_ledger is None:
            if mine[1]:
                result.findings.append(f"award {key} ({mine[0]} cents) was claimed at the "
                                       "table but is not on the ledger")
            else:
                result.awards_pending.append(key)
        elif mine is not None and on_ledger is not None:
            if not mine[1]:
                result.awards_pending.append(key)  # claimed; the table records it at its sync
            elif mine[0] != on_ledger[0]:
                result.findings.append(f"award {key} differs: the ledger paid {on_ledger[0]} "
                                       f"cents, the store recorded {mine[0]}")
            else:
                result.awards_matched += 1


def _keys_of(awards: Mapping[str, Any], table_id: str, name: str) -> set[str]:
    """The ledger's claim keys that this table's store made."""
    prefix = claim_prefix(table_id, name)
    return {key for key in awards if key.startswith(prefix)}


_EARLIER = "'' (an earlier release's store)"
_UNRECORDED = "an unrecorded login"  # a row written before the ledger recorded logins


def summary_lines(result: Reconciliation) -> Iterable[str]:
    """The reconciliation for a person."""
    shown = ("none (it never sent the ledger a row)" if result.store is None
             else result.store or _EARLIER)
    yield (f"Linked ledger reconciliation: table {result.table_id}, store {shown}, group "
           f"{result.group}")
    yield (f"contributions: {result.contributions_matched} on both, the same; "
           f"{len(result.contributions_pending)} not sent yet")
    yield (f"awards: {result.awards_matched} on both, the same; {len(result.awards_pending)} "
           "not claimed or not recorded yet")
    if result.other_stores:
        stores = ", ".join(f"{name or _EARLIER} ({count})"
                           for name, count in sorted(result.other_stores.items()))
        yield (f"this table's other stores on the ledger (contributions): {stores}: reconcile "
               "each with its own store")
    if result.findings:
        yield f"findings: {len(result.findings)}"
        yield from (f"  {finding}" for finding in result.findings)
    else:
        yield "findings: none"
