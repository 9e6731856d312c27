"""The witness's tests run against the real PostgreSQL on 127.0.0.1:5432: each test gets a
throwaway schema with its own roles (roles are the server's, not the database's, so their
names carry the schema's), dropped afterwards. Without the server they skip with the
reason; under CI=true its absence fails."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from controller.witness.server import Roles, add_table, apply_setup
from hil.witness_sim import drop_witness
from tests.progressive.conftest import PG_DSN, PG_HOST, PG_PORT, service_required

TABLE_ID = "SIM-BAC-01"


@dataclass
class WitnessDb:
    admin_dsn: str
    schema: str
    table_roles: list[str] = field(default_factory=list)

    def add_table(self, table_id: str = TABLE_ID) -> str:
        """The table's role, added as `tablewitness add-table` does; its DSN."""
        role = add_table(self.admin_dsn, table_id, schema=self.schema)
        self.table_roles.append(role)
        return self.dsn(role)

    def dsn(self, role: str, port: int = PG_PORT) -> str:
        return f"host={PG_HOST} port={port} dbname=test user={role}"

    @property
    def auditor_dsn(self) -> str:
        return self.dsn(Roles.of(self.schema).auditor)


@pytest.fixture
def witness_db() -> Iterator[WitnessDb]:
    service_required("PostgreSQL", PG_HOST, PG_PORT)
    db = WitnessDb(PG_DSN, f"wt_{secrets.token_hex(5)}")
    apply_setup(db.admin_dsn, db.schema)
    try:
        yield db
    finally:
        drop_witness(db.admin_dsn, db.schema, db.table_roles)
