"""The store's schema across releases: numbered migrations run once, in order, when a store
an earlier release wrote is opened; a store a newer release wrote is refused, so that a
rollback never misreads it (docs/deployment.md, "Upgrade and roll back")."""

from __future__ import annotations

import sqlite3

import pytest

from controller.memory import schema as store_module
from controller.memory.lifecycle import init_store, open_store
from controller.memory.store import SCHEMA_VERSION, IntegrityError
from tests.controller.test_daemon import config_for, running


def test_a_store_from_a_newer_release_is_refused_naming_both_schemas(tmp_path):
    """Named by its number, also when that release defines a table otherwise and adds an
    index, which in a store of this release's number the check refuses (rulings C28)."""
    path = str(tmp_path / "table.sqlite")
    store = init_store(path, "", operator="test", table_id="T1")
    store.put_meta("schema_version", str(SCHEMA_VERSION + 1))  # as that release writes it
    store.close()
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA writable_schema = ON")
    raw.execute("UPDATE sqlite_master SET sql = replace(sql, ' CHECK (id = 1)', '')"
                " WHERE name = 'table_state'")
    raw.execute("CREATE INDEX rounds_by_shoe ON rounds(shoe_no)")
    raw.commit()
    raw.close()
    with pytest.raises(IntegrityError) as caught:
        open_store(path).close()
    assert caught.value.check == "store schema"
    assert caught.value.detail == (
        f"{path} was written by a newer release (store schema {SCHEMA_VERSION + 1}); this "
        f"release reads schema {SCHEMA_VERSION} and older: run the release that wrote it, or "
        "restore the store's copy from before that upgrade")


async def test_the_daemon_stays_out_of_order_on_a_newer_store(tmp_path):
    config = config_for(tmp_path)
    store = init_store(config.store_path, config.critical_dir, operator="test",
                       table_id=config.table_id)
    store.put_meta("schema_version", str(SCHEMA_VERSION + 1))
    store.close()
    async with running(config) as client:
        status = await client.call("status")
    assert status["state"] == "out_of_order"
    assert status["out_of_order"].startswith(
        f"store schema: {config.store_path} was written by a newer release (store schema "
        f"{SCHEMA_VERSION + 1})")


def test_numbered_migrations_run_once_in_order_and_the_store_still_verifies(tmp_path,
                                                                           monkeypatch):
    path = str(tmp_path / "table.sqlite")
    store = init_store(path, "", operator="test", table_id="T1")
    store.append_entry("wager_accepted", {"seat": 1, "amount_cents": 500})
    store.close()
    ran: list[int] = []

    def add_notes(db: sqlite3.Connection) -> None:
        ran.append(SCHEMA_VERSION + 1)
        db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)")

    def fill_notes(db: sqlite3.Connection) -> None:
        ran.append(SCHEMA_VERSION + 2)
        db.execute("INSERT INTO notes(text) VALUES ('migrated')")

    # The next two releases' migrations, as they would be added.
    monkeypatch.setattr(store_module, "SCHEMA_VERSION", SCHEMA_VERSION + 2)
    monkeypatch.setattr(store_module, "MIGRATIONS", {SCHEMA_VERSION + 1: add_notes,
                                                     SCHEMA_VERSION + 2: fill_notes})
    upgraded = open_store(path)
    assert ran == [SCHEMA_VERSION + 1, SCHEMA_VERSION + 2]
    assert upgraded.meta("schema_version") == str(SCHEMA_VERSION + 2)
    assert [tuple(r) for r in upgraded._db.execute("SELECT text FROM notes")] == [("migrated",)]
    upgraded.close()
    again = open_store(path)  # the check passes over the migrated store; nothing reruns
    assert ran == [SCHEMA_VERSION + 1, SCHEMA_VERSION + 2]
    assert [e.payload for e in again.events(kind="wager_accepted")] == [
        {"seat": 1, "amount_cents": 500}]
    again.close()
