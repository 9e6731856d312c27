"""The witness's schema on the real PostgreSQL: INSERT-only grants, the trigger that takes
only a head extending the last, registrations, and `tablewitness verify`'s signatures."""

from __future__ import annotations

import hashlib

import psycopg
import pytest

from controller.witness.cli import main as tablewitness
from controller.witness.heads import Head, Signer
from controller.witness.server import (
    WitnessClient, WitnessMisconfigured, WitnessRefused, apply_setup, setup_sql,
)
from tests.witness.conftest import TABLE_ID, WitnessDb

SEED = bytes(range(32))
OTHER_SEED = bytes(range(1, 33))


def mac(n: int) -> str:
    return hashlib.sha256(f"entry {n}".encode()).hexdigest()


DIGEST = hashlib.sha256(b"money").hexdigest()


def head(signer: Signer, commit: int, seq: int, entry: int | None = None, epoch: int = 1,
         digest: str = DIGEST) -> Head:
    return signer.sign(Head(TABLE_ID, epoch, commit, seq, mac(seq if entry is None else entry),
                            digest))


def registered(witness_db: WitnessDb, seed: bytes = SEED) -> tuple[WitnessClient, Signer]:
    client = WitnessClient(witness_db.add_table(), witness_db.schema, table_id=TABLE_ID)
    signer = Signer(seed)
    client.register(signer.public_key, "key-id")
    return client, signer


def witnessed(client: WitnessClient) -> list[tuple[int, int, str]]:
    return [(h.commit_no, h.log_seq, h.entry_mac) for h in client.heads()]


def test_setup_is_idempotent_and_versioned(witness_db: WitnessDb) -> None:
    assert apply_setup(witness_db.admin_dsn, witness_db.schema) == 1
    assert apply_setup(witness_db.admin_dsn, witness_db.schema) == 1
    assert "@" not in setup_sql(witness_db.schema)  # every placeholder filled
    with psycopg.connect(witness_db.admin_dsn) as admin:
        versions = admin.execute(f"SELECT version FROM {witness_db.schema}.schema_version"
                                 ).fetchall()
    assert versions == [(1,)]


@pytest.mark.parametrize("statement", [
    "UPDATE {s}.heads SET log_seq = 99",
    "DELETE FROM {s}.heads",
    "TRUNCATE {s}.heads",
    "UPDATE {s}.registrations SET public_key = repeat('a', 64)",
    "DELETE FROM {s}.registrations",
    "INSERT INTO {s}.table_roles(table_id, role_name) VALUES ('X', 'x')",
])
def test_a_tables_role_may_only_insert(witness_db: WitnessDb, statement: str) -> None:
    client, signer = registered(witness_db)
    client.insert_heads([head(signer, 1, 1)])
    with psycopg.connect(client.dsn) as conn, pytest.raises(
            psycopg.errors.InsufficientPrivilege, match="permission denied for table"):
        conn.execute(statement.format(s=witness_db.schema))
    assert witnessed(client) == [(1, 1, mac(1))]


def test_even_the_owner_cannot_change_a_head(witness_db: WitnessDb) -> None:
    client, signer = registered(witness_db)
    client.insert_heads([head(signer, 1, 1)])
    with psycopg.connect(witness_db.admin_dsn) as admin, pytest.raises(
            psycopg.Error, match="UPDATE on .*heads refused: the witness only grows"):
        admin.execute(f"UPDATE {witness_db.schema}.heads SET log_seq = 99")


def test_a_role_cannot_write_for_another_table(witness_db: WitnessDb) -> None:
    client, signer = registered(witness_db)
    other = WitnessClient(witness_db.add_table("SIM-BAC-02"), witness_db.schema,
                          table_id=TABLE_ID)  # table 2's role claiming to be table 1
    # A configuration error at the table, not a finding about its store: the link is down.
    with pytest.raises(WitnessMisconfigured, match=f"may not write for table {TABLE_ID}"):
        other.insert_heads([head(signer, 1, 1)])
    with pytest.raises(WitnessMisconfigured, match=f"may not write for table {TABLE_ID}"):
        other.register(Signer(OTHER_SEED).public_key, "key-id")
    assert witnessed(client) == []


def test_the_trigger_takes_only_a_head_extending_the_last(witness_db: WitnessDb) -> None:
    client, signer = registered(witness_db)
    client.insert_heads([head(signer, 3, 10), head(signer, 5, 14)])
    client.insert_heads([head(signer, 5, 14)])  # the same head again: ignored, not doubled
    client.insert_heads([head(signer, 6, 14)])  # a commit with no log entry: same entry, MAC
    refused = {
        "commit behind": head(signer, 4, 20),
        "log entry behind": head(signer, 7, 13),
        "same entry, another MAC": head(signer, 7, 14, entry=99),
        "same commit, another entry": head(signer, 6, 15),
    }
    for bad in refused.values():
        with pytest.raises(WitnessRefused, match=(
                rf"head refused for table {TABLE_ID}: commit {bad.commit_no}, log entry "
                rf"{bad.log_seq} .* does not extend the last witnessed head, commit 6, log "
                r"entry 14")):
            client.insert_heads([bad])
    with pytest.raises(WitnessRefused, match="for epoch 2 refused: its current registration "
                                             "is epoch 1"):
        client.insert_heads([head(signer, 7, 15, epoch=2)])
    client.insert_heads([head(signer, 7, 15)])
    assert witnessed(client) == [(3, 10, mac(10)), (5, 14, mac(14)), (6, 14, mac(14)),
                                 (7, 15, mac(15))]


def test_a_second_registration_needs_a_supervisor_and_is_recorded(
        witness_db: WitnessDb) -> None:
    client, signer = registered(witness_db)
    last = head(signer, 8, 21)
    client.insert_heads([head(signer, 2, 3), last])
    new_key = Signer(OTHER_SEED).public_key
    with pytest.raises(WitnessRefused, match=f"table {TABLE_ID} is already registered \\(epoch "
                                             "1\\): a new store needs a floor supervisor"):
        client.register(new_key, "key-2")
    again = client.register(new_key, "key-2", supervisor="ann", reason="SD card failed")
    assert (again.epoch, again.supervisor, again.reason) == (2, "ann", "SD card failed")
    assert again.last_witnessed == {"table_id": TABLE_ID, "epoch": 1, "commit_no": 8,
                                    "log_seq": 21, "entry_mac": mac(21),
                                    "state_digest": DIGEST, "signature": last.signature}
    # The old epoch is closed: its heads are refused, the new epoch starts afresh.
    with pytest.raises(WitnessRefused, match="for epoch 1 refused"):
        client.insert_heads([head(signer, 9, 22)])
    client.insert_heads([head(Signer(OTHER_SEED), 1, 1, epoch=2)])


def test_verify_checks_every_signature(witness_db: WitnessDb,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    client, signer = registered(witness_db)
    client.insert_heads([head(signer, n, 2 * n) for n in range(1, 6)])
    args = ["verify", "--dsn", witness_db.admin_dsn, "--schema", witness_db.schema,
            "--table", TABLE_ID]
    assert tablewitness(args) == 0
    assert (f"table {TABLE_ID}: 1 registration(s), 5 heads, every signature valid"
            in capsys.readouterr().out)
    # Whoever holds the table's role but not its key (the signature is not checked by the
    # server) can insert a head; verification names it as forged.
    forged = Signer(OTHER_SEED).sign(Head(TABLE_ID, 1, 6, 12, mac(12), DIGEST))
    client.insert_heads([forged])
    assert tablewitness(args) == 1
    assert (f"head commit 6, log entry 12 (MAC {mac(12)[:16]}, state {DIGEST[:16]}) (epoch 1) "
            f"is not signed by the table's registered key {signer.public_key[:16]}: forged or "
            "altered") in capsys.readouterr().err


def test_the_auditor_role_reads_but_cannot_insert(witness_db: WitnessDb) -> None:
    client, signer = registered(witness_db)
    client.insert_heads([head(signer, 1, 1)])
    import psycopg.sql as sql

    from controller.witness.server import Roles

    auditor = Roles.of(witness_db.schema).auditor
    with psycopg.connect(witness_db.admin_dsn) as admin:
        admin.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(auditor)))
        assert admin.execute(f"SELECT commit_no FROM {witness_db.schema}.heads").fetchall() \
            == [(1,)]
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            admin.execute(f"INSERT INTO {witness_db.schema}.heads SELECT * FROM "
                          f"{witness_db.schema}.heads")


def test_tablewitness_sets_up_adds_a_table_and_says_when_it_cannot_read(
        witness_db: WitnessDb, capsys: pytest.CaptureFixture[str]) -> None:
    schema = witness_db.schema
    admin = ["--dsn", witness_db.admin_dsn, "--schema", schema]
    assert tablewitness(["setup", *admin]) == 0
    assert capsys.readouterr().out == (f"tablewitness: schema {schema} at version 1; roles "
                                       f"{schema}_owner, {schema}_tables, {schema}_auditor\n")
    assert tablewitness(["add-table", *admin, "--table", "BAC-07"]) == 0
    witness_db.table_roles.append(f"{schema}_t_bac_07")
    assert capsys.readouterr().out.startswith(
        f"tablewitness: table BAC-07 speaks as role {schema}_t_bac_07 (INSERT only)")
    assert tablewitness(["add-table", *admin, "--table", "BAC-07", "--role", "other"]) == 2
    assert (f"table BAC-07 already speaks as role {schema}_t_bac_07"
            in capsys.readouterr().err)
    unreachable = "host=127.0.0.1 port=1 dbname=test user=postgres"
    assert tablewitness(["verify", "--dsn", unreachable, "--schema", schema, "--table",
                         "BAC-07"]) == 2
    assert "witness unreachable" in capsys.readouterr().err
    assert tablewitness(["verify", *admin, "--table", "BAC-07"]) == 1
    assert ("the witness has no registration of table BAC-07"
            in capsys.readouterr().err)


@pytest.mark.parametrize(("epoch", "said"), [
    ("9" * 5000, "argument --epoch: '999999999999999999999999999...9999999999999999999999999999':"
                 " allowed: an epoch, 1 to 1000000000000"),
    ("0", "argument --epoch: '0': allowed: an epoch, 1 to 1000000000000"),
])
def test_tablewitness_refuses_an_epoch_no_registration_has_by_its_start_and_end(
        capsys: pytest.CaptureFixture[str], epoch: str, said: str) -> None:
    """An epoch is 1 or more; 5,000 digits were printed whole in argparse's refusal."""
    with pytest.raises(SystemExit) as stopped:
        tablewitness(["verify", "--dsn", "host=127.0.0.1", "--table", "T", "--epoch", epoch])
    assert stopped.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"tablewitness verify: error: {said}"
