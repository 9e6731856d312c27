"""The witness on the casino's PostgreSQL: its set-up (`sql/v1.sql`) and its client.

The schema, its roles and grants are set up once by the casino's database administrator
(`tablewitness setup`), each table's login role added with `tablewitness add-table`; a
table's daemon then speaks only through `WitnessClient`, as its own role: it registers its
public key once, inserts heads, and reads back its own last head to compare its store with.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from controller.errors import LinkError
from controller.witness.heads import Head

SCHEMA_VERSION = 1
DEFAULT_SCHEMA = "witness"
CONNECT_TIMEOUT_S = 3  # libpq's connect_timeout: the casino's LAN answers in milliseconds
_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,40}$")


class WitnessUnreachable(LinkError):
    """The witness could not be reached or did not answer (the link is down)."""


class WitnessRefused(LinkError):
    """The witness answered and refused what the table sent: a head that does not extend
    the last, a head of a closed epoch, a second registration without a supervisor."""


class WitnessMisconfigured(WitnessUnreachable):
    """The witness answered but cannot be used as configured (a table it does not know, a
    role without its grants, no schema): the link is down with the reason, not a finding
    about the store."""


REFUSALS = ("WT003", "WT004", "WT005")  # sql/v1.sql's codes that judge what was sent


def check_identifier(name: str, what: str) -> str:
    if not _IDENT.match(name):
        raise ValueError(f"{what} {name!r}: allowed: a lower-case SQL identifier (letters, "
                         "digits, _; at most 41 characters, not starting with a digit)")
    return name


@dataclass(frozen=True, slots=True)
class Roles:
    owner: str
    tables: str
    auditor: str

    @classmethod
    def of(cls, schema: str) -> Roles:
        check_identifier(schema, "schema")
        return cls(f"{schema}_owner", f"{schema}_tables", f"{schema}_auditor")


def setup_sql(schema: str) -> str:
    """The versioned set-up file with this schema's names put in."""
    roles = Roles.of(schema)
    text = resources.files("controller.witness").joinpath(f"sql/v{SCHEMA_VERSION}.sql")\
        .read_text(encoding="utf-8")
    for token, name in (("@schema@", schema), ("@owner@", roles.owner),
                        ("@tables@", roles.tables), ("@auditor@", roles.auditor)):
        text = text.replace(token, name)
    return text


def table_role(schema: str, table_id: str) -> str:
    """The default login role of a table: the schema, `_t_`, the table id in lower case with
    anything but letters and digits as `_`."""
    return check_identifier(f"{schema}_t_{re.sub(r'[^a-z0-9]', '_', table_id.lower())}"[:63],
                            "role")


def _connect(dsn: str, *, application: str, timeout_s: float = 5.0) -> Any:
    import psycopg

    try:
        return psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT_S, autocommit=False,
                               application_name=application[:63],
                               options=f"-c statement_timeout={int(timeout_s * 1000)}")
    except psycopg.Error as exc:
        raise WitnessUnreachable(f"witness unreachable: {_short(exc)}") from exc


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"


def apply_setup(admin_dsn: str, schema: str = DEFAULT_SCHEMA) -> int:
    """Create or bring up to date the witness's schema, roles and grants (idempotent).
    Returns the schema version now in place."""
    import psycopg

    sql = setup_sql(schema)
    with _connect(admin_dsn, application="tablewitness-setup") as conn:
        try:
            with conn.transaction():
                # Two set-ups at once would race in the catalogue: one at a time.
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))",
                             (f"tablewitness setup {schema}",))
                conn.execute(sql)
        except psycopg.Error as exc:
            raise WitnessRefused(f"set-up of schema {schema} failed: {_short(exc)}") from exc
        row = conn.execute(f"SELECT max(version) FROM {schema}.schema_version").fetchone()
    return int(row[0])


def add_table(admin_dsn: str, table_id: str, *, schema: str = DEFAULT_SCHEMA,
              role: str | None = None) -> str:
    """A table's login role, in the tables' group, recorded as the one that speaks for it
    (idempotent). Returns the role's name; its password or certificate is the casino's
    (docs/deployment.md)."""
    import psycopg
    from psycopg import sql

    if not table_id or len(table_id) > 64:
        raise ValueError(f"table id {table_id!r}: allowed: 1 to 64 characters")
    name = check_identifier(role, "role") if role else table_role(schema, table_id)
    roles = Roles.of(schema)
    with _connect(admin_dsn, application="tablewitness-add-table") as conn:
        try:
            with conn.transaction():
                known = conn.execute(f"SELECT role_name FROM {schema}.table_roles WHERE "
                                     "table_id = %s", (table_id,)).fetchone()
                if known is not None and known[0] != name:
                    raise WitnessRefused(f"table {table_id} already speaks as role {known[0]}")
                exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s",
                                      (name,)).fetchone()
                if exists is None:
                    conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(name)))
                conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(roles.tables),
                                                              sql.Identifier(name)))
                conn.execute(f"INSERT INTO {schema}.table_roles(table_id, role_name) VALUES "
                             "(%s, %s) ON CONFLICT DO NOTHING", (table_id, name))
        except psycopg.Error as exc:
            raise WitnessRefused(f"adding table {table_id} failed: {_short(exc)}") from exc
    return name


@dataclass(frozen=True, slots=True)
class Registration:
    table_id: str
    epoch: int
    public_key: str
    key_id: str
    supervisor: str
    reason: str
    last_witnessed: dict[str, Any] | None
    registered_by: str
    registered_at: str


class WitnessClient:
    """One connection to the witness, as one table's role (or an auditor's). Any connection
    problem raises WitnessUnreachable and drops the connection; the next call reconnects.
    Owned by one thread."""

    def __init__(self, dsn: str, schema: str = DEFAULT_SCHEMA, *, table_id: str = "",
                 timeout_s: float = 5.0) -> None:
        self.dsn = dsn
        self.schema = check_identifier(schema, "schema")
        self.table_id = table_id
        self.timeout_s = timeout_s
        self._conn: Any = None

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None

    def _run(self, work: Any) -> Any:
        import psycopg

        if self._conn is None or self._conn.closed:
            self._conn = _connect(self.dsn, application=f"tabled-witness-{self.table_id}",
                                  timeout_s=self.timeout_s)
        try:
            with self._conn.transaction():
                return work(self._conn)
        except psycopg.Error as exc:
            if getattr(exc, "sqlstate", None) in REFUSALS:
                raise WitnessRefused(_server_message(exc)) from exc
            if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
                self.close()
                raise WitnessUnreachable(f"witness unreachable: {_short(exc)}") from exc
            raise WitnessMisconfigured(f"witness unusable: {_server_message(exc)}") from exc

    # --- a table's calls -----------------------------------------------------------------

    def register(self, public_key: str, key_id: str, *, supervisor: str = "",
                 reason: str = "") -> Registration:
        """Register this table's public key: the first registration needs nobody; a table
        the witness knows (a replaced store) needs the supervisor and reason, which the
        witness records with the last head it held."""
        def work(conn: Any) -> Registration:
            row = conn.execute(
                f"INSERT INTO {self.schema}.registrations(table_id, epoch, public_key, key_id,"
                " supervisor, reason) VALUES (%s, 0, %s, %s, %s, %s) RETURNING epoch",
                (self.table_id, public_key, key_id, supervisor, reason)).fetchone()
            return self._registration(conn, int(row[0]))
        result: Registration = self._run(work)
        return result

    def registrations(self, table_id: str | None = None) -> list[Registration]:
        def work(conn: Any) -> list[Registration]:
            rows = conn.execute(f"SELECT epoch FROM {self.schema}.registrations WHERE "
                                "table_id = %s ORDER BY epoch",
                                (table_id or self.table_id,)).fetchall()
            return [self._registration(conn, int(r[0]), table_id) for r in rows]
        result: list[Registration] = self._run(work)
        return result

    def _registration(self, conn: Any, epoch: int, table_id: str | None = None
                      ) -> Registration:
        row = conn.execute(
            f"SELECT table_id, epoch, public_key, key_id, supervisor, reason, last_witnessed,"
            f" registered_by, registered_at::text FROM {self.schema}.registrations"
            " WHERE table_id = %s AND epoch = %s", (table_id or self.table_id, epoch)).fetchone()
        last = row[6]
        return Registration(row[0], int(row[1]), row[2], row[3], row[4], row[5],
                            json.loads(last) if isinstance(last, str) else last, row[7], row[8])

    def insert_heads(self, heads: Sequence[Head]) -> None:
        """Heads in order, in one transaction: all are witnessed or none."""
        def work(conn: Any) -> None:
            with conn.cursor() as cursor:
                cursor.executemany(
                    f"INSERT INTO {self.schema}.heads(table_id, epoch, commit_no, log_seq,"
                    " entry_mac, state_digest, signature) VALUES (%s,%s,%s,%s,%s,%s,%s)",
                    [(h.table_id, h.epoch, h.commit_no, h.log_seq, h.entry_mac,
                      h.state_digest, h.signature) for h in heads])
        self._run(work)

    def last_head(self, epoch: int, table_id: str | None = None) -> Head | None:
        def work(conn: Any) -> Head | None:
            row = conn.execute(
                f"SELECT table_id, epoch, commit_no, log_seq, entry_mac, state_digest, signature"
                f" FROM {self.schema}.heads WHERE table_id = %s AND epoch = %s"
                " ORDER BY commit_no DESC LIMIT 1", (table_id or self.table_id, epoch)).fetchone()
            return _head(row) if row else None
        result: Head | None = self._run(work)
        return result

    def heads(self, table_id: str | None = None, epoch: int | None = None) -> list[Head]:
        """Every head of the table (of one epoch, or all), oldest first."""
        def work(conn: Any) -> list[Head]:
            sql = (f"SELECT table_id, epoch, commit_no, log_seq, entry_mac, state_digest,"
                   f" signature FROM {self.schema}.heads WHERE table_id = %s")
            args: list[Any] = [table_id or self.table_id]
            if epoch is not None:
                sql += " AND epoch = %s"
                args.append(epoch)
            return [_head(r) for r in conn.execute(sql + " ORDER BY epoch, commit_no", args)]
        result: list[Head] = self._run(work)
        return result


def _head(row: Sequence[Any]) -> Head:
    return Head(str(row[0]), int(row[1]), int(row[2]), int(row[3]), str(row[4]), str(row[5]),
                str(row[6]))


def _server_message(exc: BaseException) -> str:
    diag = getattr(exc, "diag", None)
    primary = getattr(diag, "message_primary", None) if diag is not None else None
    return str(primary or " ".join(str(exc).split()))
