"""./run-simulated-table (hil/run.py) with and without a PostgreSQL to witness the table."""

from __future__ import annotations

import argparse
import sys

import pytest

import hil.run
from hil.practice_service import PracticeWitness
from hil.witness_sim import SimulatedWitness
from tests.progressive.conftest import PG_HOST, PG_PORT, service_required

ARGS = argparse.Namespace(config="config/simulated-table.toml", practice=False)


def test_with_no_server_the_table_is_said_to_be_unwitnessed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[str] = []
    monkeypatch.setattr(hil.run, "postgres_answers",
                        lambda: "no PostgreSQL on 127.0.0.1:5432 (Connection refused)")
    assert hil.run._witness(ARGS, False, said.append) == (None, [])
    assert said == ["The table is unwitnessed: no PostgreSQL on 127.0.0.1:5432 (Connection "
                    "refused); its heads are kept by no one off the table"]


def test_without_its_client_the_table_is_said_to_be_unwitnessed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL answers but psycopg does not import (an install without the `simulated`
    extra; pure-Python psycopg without libpq): the table runs unwitnessed and says why."""
    said: list[str] = []
    monkeypatch.setattr(hil.run, "postgres_answers", lambda: None)
    monkeypatch.setitem(sys.modules, "psycopg", None)  # an import of it fails
    assert hil.run._witness(ARGS, False, said.append) == (None, [])
    assert said == ["The table is unwitnessed: psycopg, the PostgreSQL client, cannot be "
                    "imported (import of psycopg halted; None in sys.modules); the simulated "
                    "tables' extra installs it: .venv/bin/pip install -e '.[simulated]'; its "
                    "heads are kept by no one off the table"]


def test_with_the_server_a_throwaway_witness_is_set_up() -> None:
    service_required("PostgreSQL", PG_HOST, PG_PORT)
    said: list[str] = []
    witness, overrides = hil.run._witness(ARGS, False, said.append)
    assert isinstance(witness, SimulatedWitness)
    try:
        assert overrides == [f"witness.dsn=host=127.0.0.1 port=5432 dbname=test user="
                             f"{witness.schema}_t_sim_bac_01",
                             f"witness.schema={witness.schema}"]
        assert said == [f"Witness: PostgreSQL on 127.0.0.1:5432, schema {witness.schema} (its "
                        "own roles; dropped at the end): every durable step's head is sent "
                        "there, signed"]
    finally:
        witness.drop()


def test_the_practice_table_reaches_its_witness_through_a_proxy_its_page_can_cut() -> None:
    """`--practice`: the page's "Take the witness down" cuts the proxy, for this table only."""
    service_required("PostgreSQL", PG_HOST, PG_PORT)
    said: list[str] = []
    practice = argparse.Namespace(config="config/simulated-table.toml", practice=True)
    witness, overrides = hil.run._witness(practice, False, said.append)
    assert isinstance(witness, PracticeWitness)
    try:
        schema = witness.current.schema
        assert overrides == [f"witness.dsn=host=127.0.0.1 port={witness.proxy.port} dbname=test "
                             f"user={schema}_t_sim_bac_01", f"witness.schema={schema}"]
        assert witness.proxy.port != PG_PORT
        assert said == [f"Witness: PostgreSQL on 127.0.0.1:5432, schema {schema} (its own "
                        "roles; dropped at the end): every durable step's head is sent there, "
                        "signed"]
    finally:
        witness.drop()
