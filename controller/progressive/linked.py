"""Linked progressives (605a.8): the shared meters in PostgreSQL, and the table's side of the link.

Protocol (docs/progressive.md, "Linked progressives"):

- A table never changes a shared meter directly. Its contributions go first
  into its own SQLite outbox (same transaction as the wager acceptance), each
  with a per-table sequence number. `flush()` sends unacknowledged rows; the
  server inserts `(group, table_id, seq)` with ON CONFLICT DO NOTHING and
  applies only the rows it inserted, all in one PostgreSQL transaction, so a
  row re-sent after a dropped connection (or after the table crashed between
  the server's commit and its local acknowledgement) is never counted twice.
- An award is claimed in one PostgreSQL transaction that first applies the
  table's pending contributions, then locks the level row (SELECT ... FOR
  UPDATE), pays the meter's whole cents, reseeds it and records the claim
  under a unique key (group, table, round, seat, level). Two tables hitting
  at once queue on the row lock: the first is paid the meter, the second the
  reseeded meter. Re-claiming the same key returns the recorded amount.
- Every table reads the levels after each flush and claim, so all of them
  show the new amount after a hit.

Each `LinkedLedger` belongs to one thread (one psycopg connection).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from controller.progressive.core import split
from controller.progressive import link_seams
from controller.progressive.errors import LinkDown

CONNECT_TIMEOUT_S = 3  # libpq's connect_timeout: a LAN server answers in milliseconds
_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


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


def schema_sql(schema: str) -> list[str]:
    if not _IDENT.match(schema):
        raise ValueError(f"schema {schema!r} is not a plain SQL identifier")
    s = schema
    return [
        f"CREATE SCHEMA IF NOT EXISTS {s}",
        f"""CREATE TABLE IF NOT EXISTS {s}.levels (
            grp text NOT NULL, progressive text NOT NULL, level text NOT NULL,
            amount_cents bigint NOT NULL, frac_num bigint NOT NULL, frac_den bigint NOT NULL,
            seed_cents bigint NOT NULL, reset_cents bigint NOT NULL, version bigint NOT NULL,
            contributed text NOT NULL DEFAULT '0', awards_count bigint NOT NULL DEFAULT 0,
            awarded_cents bigint NOT NULL DEFAULT 0,
            PRIMARY KEY (grp, progressive, level))""",
        f"""CREATE TABLE IF NOT EXISTS {s}.contributions (
            grp text NOT NULL, table_id text NOT NULL, seq bigint NOT NULL,
            progressive text NOT NULL, level text NOT NULL,
            delta_num bigint NOT NULL, delta_den bigint NOT NULL,
            wagers_count integer NOT NULL, wagers_cents bigint NOT NULL, round_id bigint,
            received_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (grp, table_id, seq))""",
        f"""CREATE TABLE IF NOT EXISTS {s}.awards (
            grp text NOT NULL, claim_key text NOT NULL, progressive text NOT NULL,
            level text NOT NULL, table_id text NOT NULL, round_id bigint NOT NULL,
            seat integer NOT NULL, amount_cents bigint NOT NULL, reseed_cents bigint NOT NULL,
            reserve_level text, reserve_used text NOT NULL DEFAULT '0',
            level_version bigint NOT NULL, claimed_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (grp, claim_key))""",
    ]


def table_grants_sql(schema: str, role: str) -> list[str]:
    """What a pit's tables' group role may do on the shared ledger (docs/deployment.md):
    read and move the meters, add contributions and claims; never delete or rewrite one."""
    for word in (schema, role):
        if not _IDENT.match(word):
            raise ValueError(f"{word!r} is not a plain SQL identifier")
    return [f"GRANT USAGE ON SCHEMA {schema} TO {role}",
            f"GRANT SELECT, INSERT, UPDATE ON {schema}.levels TO {role}",
            f"GRANT SELECT, INSERT ON {schema}.contributions, {schema}.awards TO {role}"]


def claim_key(table_id: str, round_id: int, seat: int, progressive: str, level: str) -> str:
    return f"{table_id}/{round_id}/{seat}/{progressive}/{level}"


class LinkedLedger:
    """The table's client of the shared ledger. Raises `LinkDown` (with the reason) on any
    connection problem; the next call reconnects."""

    def __init__(self, dsn: str, schema: str, group: str, table_id: str, *,
                 timeout_s: float = 5.0, connect: Callable[..., Any] | None = None) -> None:
        if not _IDENT.match(schema):
            raise ValueError(f"schema {schema!r} is not a plain SQL identifier")
        self.dsn, self.schema, self.group, self.table_id = dsn, schema, group, table_id
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

    def ensure_levels(self, levels: Iterable[tuple[str, str, int]]) -> None:
        """Create the schema and any missing level at its seed (first table to start)."""
        wanted = list(levels)

        def work(conn: Any) -> None:
            # The DDL only where the schema is missing: a casino's table role may use the
            # schema its administrator made but not create one (docs/deployment.md).
            made = conn.execute("SELECT to_regclass(%s)", (f"{self.schema}.awards",)).fetchone()
            if made is None or made[0] is None:
                for statement in schema_sql(self.schema):
                    conn.execute(statement)
            for progressive, level, reset in wanted:
                conn.execute(
                    f"INSERT INTO {self.schema}.levels(grp, progressive, level, amount_cents,"
                    " frac_num, frac_den, seed_cents, reset_cents, version)"
                    " VALUES (%s,%s,%s,%s,0,1,%s,%s,1) ON CONFLICT DO NOTHING",
                    (self.group, progressive, level, reset, reset, reset))

        # Concurrent CREATE ... IF NOT EXISTS can still collide in the catalogue; retry once.
        try:
            self._run(work)
        except LinkDown:
            self._run(work)
        self.refresh()

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
        s = self.schema
        new: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for row in outbox:
            inserted = conn.execute(
                f"INSERT INTO {s}.contributions(grp, table_id, seq, progressive, level, delta_num,"
                " delta_den, wagers_count, wagers_cents, round_id) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,"
                "%s,%s) ON CONFLICT DO NOTHING RETURNING seq",
                (self.group, self.table_id, row["seq"], row["progressive"], row["level"],
                 row["delta_num"], row["delta_den"], row["wagers_count"], row["wagers_cents"],
                 row["round_id"])).fetchone()
            if inserted is not None:
                new.setdefault((row["progressive"], row["level"]), []).append(row)
        # Lock levels in one global order so two tables flushing never deadlock.
        for progressive, level in sorted(new):
            locked = self._lock(conn, progressive, level)
            delta = sum((Fraction(r["delta_num"], r["delta_den"]) for r in new[(progressive, level)]),
                        Fraction(0))
            cents, num, den = split(locked["value"] + delta)
            conn.execute(
                f"UPDATE {s}.levels SET amount_cents = %s, frac_num = %s, frac_den = %s,"
                " version = version + 1, contributed = %s WHERE grp = %s AND progressive = %s"
                " AND level = %s",
                (cents, num, den, str(Fraction(locked["contributed"]) + delta), self.group,
                 progressive, level))
        return sum(len(v) for v in new.values())

    def _lock(self, conn: Any, progressive: str, level: str) -> dict[str, Any]:
        row = conn.execute(
            f"SELECT amount_cents, frac_num, frac_den, reset_cents, version, contributed"
            f" FROM {self.schema}.levels WHERE grp = %s AND progressive = %s AND level = %s"
            " FOR UPDATE", (self.group, progressive, level)).fetchone()
        if row is None:
            raise LinkDown(f"linked level {self.group}/{progressive}/{level} does not exist")
        return {"value": row[0] + Fraction(row[1], row[2]), "reset": row[3], "version": row[4],
                "contributed": row[5]}

    # --- awards -------------------------------------------------------------------------

    def claim(self, outbox: Sequence[dict[str, Any]], ack: Callable[[Sequence[int]], None],
              progressive: str, level: str, round_id: int, seat: int,
              fraction: Fraction = Fraction(1), reserve_level: str | None = None) -> Claim:
        """Claim a hit: apply pending contributions, lock the level, pay it, reseed it.

        With `reserve_level` (Harmony, 627b.6(j)) the reserve's whole balance is moved
        into the reseed, under the same transaction.
        """
        key = claim_key(self.table_id, round_id, seat, progressive, level)
        s = self.schema

        def work(conn: Any) -> Claim:
            self._apply(conn, outbox)
            locked = self._lock(conn, progressive, level)  # queue behind any other claimant
            done = conn.execute(f"SELECT amount_cents, level_version FROM {s}.awards WHERE grp = %s"
                                " AND claim_key = %s", (self.group, key)).fetchone()
            if done is not None:
                return Claim(key, int(done[0]), int(done[1]))
            value: Fraction = locked["value"]
            whole = value.numerator // value.denominator
            amount = int(fraction * whole) if fraction != 1 else whole
            reserve = Fraction(0)
            if reserve_level is not None and fraction == 1:
                # Locked after the level itself: the same (progressive, level) order as flush().
                reserve = self._lock(conn, progressive, reserve_level)["value"]
                conn.execute(
                    f"UPDATE {s}.levels SET amount_cents = 0, frac_num = 0, frac_den = 1,"
                    " version = version + 1 WHERE grp = %s AND progressive = %s AND level = %s",
                    (self.group, progressive, reserve_level))
            after = value - amount + (locked["reset"] + reserve if fraction == 1 else 0)
            cents, num, den = split(after)
            version = locked["version"] + 1
            conn.execute(
                f"UPDATE {s}.levels SET amount_cents = %s, frac_num = %s, frac_den = %s,"
                " version = %s, awards_count = awards_count + 1, awarded_cents = awarded_cents + %s"
                " WHERE grp = %s AND progressive = %s AND level = %s",
                (cents, num, den, version, amount, self.group, progressive, level))
            conn.execute(
                f"INSERT INTO {s}.awards(grp, claim_key, progressive, level, table_id, round_id,"
                " seat, amount_cents, reseed_cents, reserve_level, reserve_used, level_version)"
                " VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                (self.group, key, progressive, level, self.table_id, round_id, seat, amount,
                 locked["reset"] if fraction == 1 else 0, reserve_level, str(reserve), version))
            return Claim(key, amount, version)

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
