"""Linked progressives (605a.8): the shared meters in PostgreSQL, and the table's side of the link.

Protocol (docs/progressive.md, "Linked progressives"):

- A table never changes a shared meter directly: the ledger's functions do
  (controller/progressive/linked_sql.py), run as the schema's owner, and a table's role may
  only call them and read. Its contributions go first into its own SQLite outbox (same
  transaction as the wager acceptance), each with a per-table sequence number. `flush()`
  sends unacknowledged rows to `contribute`, which inserts `(group, table_id, store, seq)`
  with ON CONFLICT DO NOTHING and applies only the rows it inserted, in one PostgreSQL
  transaction, so a row re-sent after a dropped connection (or after the table crashed
  between the server's commit and its local acknowledgement) is never counted twice. The
  store (`MeterLedger.link_store`) names which of the table's stores sent it: a replaced
  store numbers its rows from 1 again. A row held under the same key with other content is
  refused, not ignored (a store rewound to an earlier copy).
- An award is claimed in one PostgreSQL transaction that applies the outbox rows it is
  given (the table gives none: it claims inside its own transaction, docs/rulings.md P5),
  then calls `claim`, which locks the level row, pays the meter's whole cents, reseeds it
  and records the claim under a unique key (group, table, store, round, seat, level). Two
  tables hitting at once queue on the row lock: the first is paid the meter, the second
  the reseeded meter. Re-claiming the same key returns the recorded amount.
- Every table reads the levels after each flush and claim, so all of them
  show the new amount after a hit.

Each `LinkedLedger` has one psycopg connection and runs one transaction at a time on it
(a lock: the daemon's catch-up runs in a worker thread while the loop's thread may claim).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from controller.progressive import link_seams
from controller.progressive.errors import LinkDown
from controller.progressive.linked_functions import FUNCTIONS, HELPERS
from controller.progressive.linked_sql import (
    identifier,
    schema_sql,
    table_grants_sql,
    table_login_sql,
)

__all__ = ["Claim", "LinkedLedger", "LinkedLevel", "claim_key", "claim_prefix", "schema_sql",
           "table_grants_sql", "table_login_sql"]

CONNECT_TIMEOUT_S = 3  # libpq's connect_timeout: a LAN server answers in milliseconds


@dataclass(frozen=True, slots=True)
class LinkedLevel:
    progressive: str
    level: str
    amount_cents: int
    frac: Fraction
    reset_cents: int
    version: int
    awards_count: int
    awarded_cents: int
    contributed: Fraction


@dataclass(frozen=True, slots=True)
class Claim:
    claim_key: str
    amount_cents: int
    level_version: int  # the level's version after the reseed: the order of simultaneous hits


def claim_key(table_id: str, store: str, round_id: int, seat: int, progressive: str,
              level: str) -> str:
    """A hit's key in the shared ledger: unique per table, store, round, seat and level. A
    store numbers its rounds from 1, so a replaced store's round 5 is not the old store's;
    an earlier release's store (`store` '') keeps the keys it made."""
    return f"{claim_prefix(table_id, store)}{round_id}/{seat}/{progressive}/{level}"


def claim_prefix(table_id: str, store: str) -> str:
    """How every claim key of this table's store begins (`claim_key`)."""
    return f"{table_id}@{store}/" if store else f"{table_id}/"


class LinkedLedger:
    """The table's client of the shared ledger. Raises `LinkDown` (with the reason) on any
    connection problem; the next call reconnects."""

    def __init__(self, dsn: str, schema: str, group: str, table_id: str, *,
                 timeout_s: float = 5.0, connect: Callable[..., Any] | None = None) -> None:
        identifier(schema)
        self.dsn, self.schema, self.group, self.table_id = dsn, schema, group, table_id
        # Which of the table's stores speaks (`MeterLedger.link_store`): set by the table's
        # LinkSync before anything is sent; a row's key in the ledger carries it.
        self.store = ""
        self.timeout_s = timeout_s
        self._connect = connect
        self._conn: Any = None
        self.down_reason: str | None = "not connected yet"
        self.levels_cache: dict[tuple[str, str], LinkedLevel] = {}
        # One transaction at a time on the one connection: sync_async runs in a worker thread
        # while the loop thread may claim an award.
        self._mutex = threading.RLock()
        # Test seam: called after the server committed a flush and before the local ack,
        # the instant at which a crash must not lead to double counting.
        self.after_server_commit: Callable[[], None] | None = None
        self.claim_gate = link_seams.claim_gate()  # the pit campaign's only; None in service

    # --- connection ---------------------------------------------------------------------

    def _connection(self) -> Any:
        import psycopg

        if self._conn is not None and not self._conn.closed:
            return self._conn
        connect = self._connect or psycopg.connect
        try:
            self._conn = connect(
                self.dsn, connect_timeout=CONNECT_TIMEOUT_S, autocommit=False,
                application_name=f"tabled-{self.table_id}"[:63],
                options=f"-c statement_timeout={int(self.timeout_s * 1000)}")
        except psycopg.Error as exc:
            self._fail(exc)
        return self._conn

    def _fail(self, exc: BaseException) -> None:
        code = getattr(exc, "sqlstate", None) or ""
        if code.startswith("LK"):  # the ledger's own functions refused (linked_functions.py)
            said = getattr(getattr(exc, "diag", None), "message_primary", None) or str(exc)
            reason = f"linked ledger refused this table's request ({code}): {said.strip()[:400]}"
        else:
            reason = f"linked ledger unreachable: {type(exc).__name__}: {str(exc).strip()[:200]}"
        self.down_reason = reason
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # noqa: BLE001 - the connection is already broken
                pass
        self._conn = None
        raise LinkDown(reason) from exc

    def _run(self, work: Callable[[Any], Any]) -> Any:
        """One PostgreSQL transaction; any connection error marks the link down."""
        import psycopg

        with self._mutex:
            return self._run_locked(work, psycopg)

    def _run_locked(self, work: Callable[[Any], Any], psycopg: Any) -> Any:
        conn = self._connection()
        try:
            with conn.transaction():
                result = work(conn)
        except psycopg.Error as exc:
            # A dropped session, a timeout, or a server that refuses the statement: either way
            # the shared meter cannot be trusted from here until a fresh connection works.
            self._fail(exc)
        self.down_reason = None
        return result

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # --- set-up -----------------------------------------------------------------------

    def ensure_levels(self, levels: Iterable[tuple[str, str, int, Fraction]]) -> None:
        """Create the schema and any missing level at its seed and rate (first table to
        start); then this table's terms (each level's reset and increment rate) must be its
        group's, or the link is down saying which differ: the tables of a group share one
        meter, and a table with other terms would pay into it, or reseed it, by its own."""
        wanted = list(levels)

        def work(conn: Any) -> None:
            # The DDL only where the schema or its functions are missing (a ledger made by an
            # earlier release has no functions): a casino's table role may use the schema its
            # administrator made but not create one (docs/deployment.md). Tables starting at
            # once take their turn here.
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"{self.schema}.ddl",))
            # This release's functions and their helpers, each by its signature (a change
            # of one is a new one).
            tables, functions = conn.execute(
                "SELECT to_regclass(%s), bool_and(to_regprocedure(f) IS NOT NULL)"
                " FROM unnest(%s::text[]) AS f",
                (f"{self.schema}.awards",
                 [f"{self.schema}.{f}" for f in FUNCTIONS + HELPERS])
            ).fetchone()
            if not functions:  # no schema at all, or an earlier release's
                if tables is not None and not conn.execute(
                        "SELECT has_schema_privilege(%s, 'CREATE')", (self.schema,)
                        ).fetchone()[0]:
                    self.down_reason = (
                        f"linked ledger {self.schema} was made by an earlier release (its "
                        "functions are missing or older than this table's): its "
                        "administrator applies the schema and the grants again "
                        "(docs/deployment.md, 'A pit of tables')")
                    raise LinkDown(self.down_reason)
                for statement in schema_sql(self.schema):
                    conn.execute(statement)
            for progressive, level, reset, rate in wanted:
                conn.execute(f"SELECT {self.schema}.seed_level(%s, %s, %s, %s, %s)",
                             (self.group, progressive, level, reset, str(rate)))
            self._check_terms(conn, wanted)

        # A start that meets a server restarting is tried once more before the link is down.
        try:
            self._run(work)
        except LinkDown:
            self._run(work)
        self.refresh()

    def _check_terms(self, conn: Any, wanted: Sequence[tuple[str, str, int, Fraction]]) -> None:
        """LinkDown naming each level whose reset or rate is not the group's."""
        # The group's other levels are not this table's to judge (one an earlier release
        # seeded has no rate until a table of this release names it).
        group = {(p, lvl): (int(reset), Fraction(rate)) for p, lvl, reset, rate in conn.execute(
            f"SELECT progressive, level, reset_cents, increment_rate FROM {self.schema}.levels"
            " WHERE grp = %s AND (progressive, level) IN (SELECT * FROM unnest(%s::text[],"
            " %s::text[]))", (self.group, [w[0] for w in wanted], [w[1] for w in wanted]))}
        differ = [f"{p}/{lvl}: this table's reset {reset} cents and rate {rate}, the group's "
                  f"{group[(p, lvl)][0]} cents and {group[(p, lvl)][1]}"
                  for p, lvl, reset, rate in wanted if group[(p, lvl)] != (reset, rate)]
        if differ:
            self.down_reason = (
                f"linked group {self.group}: this table's terms are not its group's ("
                + "; ".join(differ) + "): every table of a group plays one Rules "
                "Submission's meters; correct the configuration")
            raise LinkDown(self.down_reason)

    # --- contributions ------------------------------------------------------------------

    def flush(self, outbox: Sequence[dict[str, Any]], ack: Callable[[Sequence[int]], None]) -> int:
        """Send outbox rows; apply the new ones; ack all of them locally. Returns rows applied."""
        if not outbox:
            self.refresh()
            return 0

        def work(conn: Any) -> int:
            return self._apply(conn, outbox)

        applied = self._run(work)
        if self.after_server_commit is not None:
            self.after_server_commit()
        ack([row["seq"] for row in outbox])
        self.refresh()
        return int(applied)

    def _apply(self, conn: Any, outbox: Sequence[dict[str, Any]]) -> int:
        """The rows to the ledger's `contribute`; how many it had not held before."""
        if not outbox:
            return 0
        columns = ("seq", "progressive", "level", "delta_num", "delta_den", "wagers_count",
                   "wagers_cents", "round_id")
        applied = conn.execute(
            f"SELECT {self.schema}.contribute(%s, %s, %s, %s::bigint[], %s::text[],"
            " %s::text[], %s::bigint[], %s::bigint[], %s::integer[], %s::bigint[],"
            " %s::bigint[])",
            (self.group, self.table_id, self.store,
             *([row[column] for row in outbox] for column in columns))).fetchone()
        return int(applied[0])

    # --- awards -------------------------------------------------------------------------

    def claim_key(self, round_id: int, seat: int, progressive: str, level: str) -> str:
        """This table's (and store's) key for a hit."""
        return claim_key(self.table_id, self.store, round_id, seat, progressive, level)

    def claim(self, outbox: Sequence[dict[str, Any]], ack: Callable[[Sequence[int]], None],
              key: str, progressive: str, level: str, round_id: int, seat: int,
              fraction: Fraction = Fraction(1), reserve_level: str | None = None) -> Claim:
        """Claim a hit under `key` (`claim_key`, or the key the hit was recorded with):
        apply pending contributions, lock the level, pay it, reseed it.

        With `reserve_level` (Harmony, 627b.6(j)) the reserve's whole balance is moved
        into the reseed, under the same transaction.
        """

        def work(conn: Any) -> Claim:
            self._apply(conn, outbox)
            # The ledger's `claim` queues behind any other claimant of the level, pays it
            # and reseeds it (with `reserve_level`, 627b.6(j)), or gives back this key's
            # award if it was claimed before.
            amount, version = conn.execute(
                f"SELECT amount_cents, level_version FROM {self.schema}.claim(%s, %s, %s, %s,"
                " %s, %s::bigint, %s::integer, %s::bigint, %s::bigint, %s::text)",
                (self.group, key, progressive, level, self.table_id, round_id, seat,
                 fraction.numerator, fraction.denominator, reserve_level)).fetchone()
            return Claim(key, int(amount), int(version))

        with self._mutex:  # the gate and the claim back to back: no sync between them
            if self.claim_gate is not None and self.claim_gate.holds(seat):
                self._run(self.claim_gate.wait)
            claim: Claim = self._run(work)
        ack([row["seq"] for row in outbox])
        self.refresh()
        return claim

    # --- reads ----------------------------------------------------------------------------

    def refresh(self) -> dict[tuple[str, str], LinkedLevel]:
        def work(conn: Any) -> list[Any]:
            return list(conn.execute(
                f"SELECT progressive, level, amount_cents, frac_num, frac_den, reset_cents, version,"
                f" awards_count, awarded_cents, contributed FROM {self.schema}.levels"
                " WHERE grp = %s", (self.group,)))

        rows = self._run(work)
        self.levels_cache = {
            (r[0], r[1]): LinkedLevel(r[0], r[1], int(r[2]), Fraction(r[3], r[4]), int(r[5]),
                                      int(r[6]), int(r[7]), int(r[8]), Fraction(r[9]))
            for r in rows}
        return self.levels_cache

    def verify(self) -> list[str]:
        """Each shared level equals seed + contributions - awards + reseeds (and a reserve
        level its seed + contributions - what it moved into reseeds), exactly."""
        s = self.schema

        def work(conn: Any) -> list[str]:
            problems = []
            levels = conn.execute(f"SELECT progressive, level, amount_cents, frac_num, frac_den,"
                                  f" seed_cents FROM {s}.levels WHERE grp = %s", (self.group,))
            for progressive, level, cents, num, den, seed in list(levels):
                total = Fraction(seed)
                for dn, dd in conn.execute(
                        f"SELECT delta_num, delta_den FROM {s}.contributions WHERE grp = %s AND"
                        " progressive = %s AND level = %s", (self.group, progressive, level)):
                    total += Fraction(dn, dd)
                for amount, reseed, used in conn.execute(
                        f"SELECT amount_cents, reseed_cents, reserve_used FROM {s}.awards"
                        " WHERE grp = %s AND progressive = %s AND level = %s",
                        (self.group, progressive, level)):
                    total += -int(amount) + int(reseed) + Fraction(used)
                for (used,) in conn.execute(
                        f"SELECT reserve_used FROM {s}.awards WHERE grp = %s AND progressive = %s"
                        " AND reserve_level = %s", (self.group, progressive, level)):
                    total -= Fraction(used)
                if cents + Fraction(num, den) != total:
                    problems.append(
                        f"linked meter {self.group}/{progressive}/{level}: shows "
                        f"{cents + Fraction(num, den)} cents but seed + contributions - awards + "
                        f"reseeds make {total}")
            return problems

        return list(self._run(work))
