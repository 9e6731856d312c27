"""A real witness for a simulated table: a schema of its own, with its own roles, on the
PostgreSQL that answers on 127.0.0.1:5432 (trust authentication, as on a developer's
machine and in CI), set up exactly as a casino's administrator would (`tablewitness setup`,
`tablewitness add-table`), and dropped afterwards. With no server there, the table runs
unwitnessed and says so."""

from __future__ import annotations

import importlib
import secrets
import socket
from dataclasses import dataclass, field

PG_HOST, PG_PORT = "127.0.0.1", 5432
ADMIN_DSN = f"host={PG_HOST} port={PG_PORT} dbname=test user=postgres"
PROBE_TIMEOUT_S = 2.0


CLIENTS = {"psycopg": ("psycopg", "the PostgreSQL client"),
           "paho.mqtt.client": ("paho-mqtt", "the MQTT client")}
"""Module -> (its distribution, what it is): what the simulated tables' services need beyond
the daemon's own dependencies, in the `simulated` extra that ./run-simulated-table and
./run-pit install (pyproject.toml; tests/test_quickstart_installs.py holds the two equal)."""


def clients_missing(*modules: str) -> str | None:
    """None when each of `modules` (keys of CLIENTS) imports; otherwise which does not, why,
    and what installs it. Pure-Python psycopg without the system's libpq (32-bit Raspberry Pi
    OS) is installed and still fails here, with psycopg's own reason."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            distribution, what = CLIENTS[module]
            return (f"{distribution}, {what}, cannot be imported ({exc}); the simulated "
                    "tables' extra installs it: .venv/bin/pip install -e '.[simulated]'")
    return None


def postgres_answers() -> str | None:
    """None when the server answers; otherwise why not."""
    try:
        with socket.create_connection((PG_HOST, PG_PORT), timeout=PROBE_TIMEOUT_S):
            return None
    except OSError as exc:
        return f"no PostgreSQL on {PG_HOST}:{PG_PORT} ({exc.strerror or exc})"


@dataclass
class SimulatedWitness:
    schema: str = field(default_factory=lambda: f"sim_witness_{secrets.token_hex(4)}")
    table_roles: list[str] = field(default_factory=list)

    def set_up(self, table_id: str) -> list[str]:
        """The schema, roles and the table's role; the table's `--set` overrides."""
        from controller.witness.server import add_table, apply_setup

        apply_setup(ADMIN_DSN, self.schema)
        role = add_table(ADMIN_DSN, table_id, schema=self.schema)
        self.table_roles.append(role)
        return [f"witness.dsn=host={PG_HOST} port={PG_PORT} dbname=test user={role}",
                f"witness.schema={self.schema}"]

    def verify(self, table_id: str, store_path: str) -> str:
        """What `tablewitness verify --table ID --store PATH` says of the table and its store."""
        import contextlib
        import io

        from controller.witness.cli import main as tablewitness

        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            tablewitness(["verify", "--dsn", ADMIN_DSN, "--schema", self.schema, "--table",
                          table_id, "--store", store_path])
        return out.getvalue().strip()

    def drop(self) -> None:
        drop_witness(ADMIN_DSN, self.schema, self.table_roles)


def drop_witness(admin_dsn: str, schema: str, table_roles: list[str]) -> None:
    """The schema and every role it made (roles belong to the server, not the database)."""
    import psycopg
    from psycopg import sql

    from controller.witness.server import Roles

    roles = Roles.of(schema)
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        for role in [*dict.fromkeys(table_roles), roles.tables, roles.auditor, roles.owner]:
            if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
                admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
                admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
