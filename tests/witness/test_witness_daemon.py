"""The witness through the daemon (in-process, stand-in devices) and `tabled --init-store`,
against the real PostgreSQL: the attacks of someone who holds the table's box, each of which
the store's own check passes, caught by comparing the store with its witness at boot."""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from controller.memory import critical
from controller.cli.status_view import render_status
from controller.config import load_config
from controller.control import ControlError
from controller.memory.lifecycle import EXIT_STORE, paths_for, run_once, verify_file
from controller.witness.cli import main as tablewitness
from controller.witness.server import WitnessClient
from tests.controller.test_daemon import CONFIG, running
from tests.witness.conftest import TABLE_ID, WitnessDb

PIN = "2468"  # the simulated table's supervisor "floor" (config/simulated-table.toml)
WITNESS_AWAY = "host=127.0.0.1 port=1 dbname=test user=nobody"  # nothing listens on port 1


def witnessed_config(tmp_path: Path, witness_db: WitnessDb, dsn: str | None = None,
                     *extra: str) -> Any:
    dsn = dsn or (witness_db.dsn(witness_db.table_roles[-1]) if witness_db.table_roles
                  else witness_db.add_table())
    return load_config(CONFIG, [f"store.path={tmp_path / 'table.sqlite'}",
                                f"control.socket={tmp_path / 'control.sock'}",
                                f"witness.dsn={dsn}", f"witness.schema={witness_db.schema}",
                                *extra])


def init_store(config: Any, monkeypatch: pytest.MonkeyPatch, *, supervisor: str | None = None,
               reason: str = "", pin: str = PIN, command: str = "init_store") -> int:
    """`tabled --config FILE --init-store [--supervisor NAME --reason TEXT --pin-stdin]`
    (or `--clear-store`, `--register-witness`)."""
    monkeypatch.setattr("sys.stdin", io.StringIO(pin + "\n"))
    chosen = {name: name == command for name in ("init_store", "clear_store",
                                                 "register_witness")}
    return run_once(config, argparse.Namespace(**chosen, supervisor=supervisor, reason=reason,
                                               pin_stdin=True))


def witness_heads(witness_db: WitnessDb) -> list[Any]:
    client = WitnessClient(witness_db.admin_dsn, witness_db.schema, table_id=TABLE_ID)
    try:
        return client.heads()
    finally:
        client.close()


def seal_of(store_path: Path) -> tuple[int, int, str]:
    db = sqlite3.connect(store_path)
    try:
        row = db.execute("SELECT commit_no, log_seq, log_mac FROM critical_seal").fetchone()
        return int(row[0]), int(row[1]), str(row[2])
    finally:
        db.close()


def first_record(store_path: Path) -> dict[str, Any]:
    import json

    db = sqlite3.connect(store_path)
    try:
        return dict(json.loads(db.execute("SELECT payload FROM events WHERE seq = 1"
                                          ).fetchone()[0]))
    finally:
        db.close()


async def play(config: Any) -> dict[str, Any]:
    """Start the daemon, open the table (durable steps), stop it: the witness gets every
    head, the last at the stop."""
    async with running(config) as client:
        if (await client.call("status"))["state"] == "closed":
            await client.call("open")
        await client.call("new_dealer", dealer="ann")
        status: dict[str, Any] = await client.call("status")
    return status


async def boot_status(config: Any) -> dict[str, Any]:
    async with running(config) as client:
        status: dict[str, Any] = await client.call("status")
        with pytest.raises(ControlError) as refused:
            await client.call("open")
        status["open_refused"] = str(refused.value)
    return status


def reseal_with_key(store_path: Path, edit: str, args: tuple[Any, ...] = (),
                    rewrite_from: int | None = None) -> None:
    """What someone holding the Pi can do: edit the store, recompute the chain's MACs from
    `rewrite_from`, re-seal and move the anchor, all with the table's key."""
    paths = paths_for(str(store_path))
    key = critical.load_key(paths)
    db = sqlite3.connect(store_path, isolation_level=None)
    critical.install_functions(db, key)
    db.execute("BEGIN IMMEDIATE")
    db.execute(edit, args)
    if rewrite_from is not None:
        prev = db.execute("SELECT hash FROM events WHERE seq = ?", (rewrite_from - 1,)
                          ).fetchone()[0]
        rows = db.execute("SELECT seq, at, kind, severity, device, round_id, payload FROM "
                          "events WHERE seq >= ? ORDER BY seq", (rewrite_from,)).fetchall()
        for seq, at, kind, severity, device, round_id, payload in rows:
            mac = critical.entry_mac(key, prev, seq, at, kind, severity, device, round_id,
                                     payload)
            db.execute("UPDATE events SET prev_hash = ?, hash = ? WHERE seq = ?",
                       (prev, mac, seq))
            prev = mac
        # The last full check's checkpoint names an entry and its MAC: rewritten with the
        # key too, or the table's own check (from that checkpoint) would find the edit.
        row = db.execute("SELECT value FROM meta WHERE key = ?",
                         (critical.CHECKPOINT_META,)).fetchone()
        if row is not None:
            seq = int(json.loads(row[0])["seq"])
            if seq >= rewrite_from:
                mac = db.execute("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()[0]
                db.execute("UPDATE meta SET value = ? WHERE key = ?", (
                    critical.checkpoint_value(key, seq, mac), critical.CHECKPOINT_META))
    # The settled rounds' sum the last full check kept (critical.SETTLED_PREFIX): made again
    # with the key too, or the table's own check would find an edited settled round.
    row = db.execute("SELECT value FROM meta WHERE key = ?",
                     (critical.SETTLED_META + "rounds",)).fetchone()
    if row is not None:
        last = int(json.loads(row[0])["last_rowid"])
        rows, acc = critical.digest_of(db, key, "rounds", critical.table_columns(db, "rounds"),
                                       up_to_rowid=last)
        db.execute("UPDATE meta SET value = ? WHERE key = ?", (critical.canonical(
            {"last_rowid": last, "rows": rows, "acc": acc}), critical.SETTLED_META + "rounds"))
    seal = critical.reseal(db, key)
    db.execute("COMMIT")
    db.close()
    critical.write_anchor(paths.anchor, key, critical.Anchor(
        critical.key_id(key), seal.commit_no, seal.log_seq, seal.mac))
    verify_file(str(store_path), key, paths, full=True)  # the store's own checks: pass
    verify_file(str(store_path), key, paths, full=False)


def verify_store(witness_db: WitnessDb, store_path: Path,
                 capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = tablewitness(["verify", "--dsn", witness_db.admin_dsn, "--schema",
                         witness_db.schema, "--table", TABLE_ID, "--store", str(store_path)])
    out = capsys.readouterr()
    return code, out.out + out.err


async def test_init_store_registers_the_table_and_the_daemon_streams_its_heads(
        tmp_path: Path, witness_db: WitnessDb, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    config = witnessed_config(tmp_path, witness_db)
    assert init_store(config, monkeypatch) == 0
    witness = first_record(tmp_path / "table.sqlite")["witness"]
    assert (witness["epoch"], witness["supervisor"], witness["last_witnessed"]) == (1, "", None)
    status = await play(config)
    assert status["witness"]["link"] == "up"
    assert status["witness"]["epoch"] == 1
    assert "Witness: up; last witnessed " in render_status(status)
    last = witness_heads(witness_db)[-1]
    # The last durable commit (the stop's own entries) is the last witnessed head.
    assert (last.commit_no, last.log_seq, last.entry_mac) == seal_of(tmp_path / "table.sqlite")
    code, text = verify_store(witness_db, tmp_path / "table.sqlite", capsys)
    assert code == 0, text
    assert "every signature valid" in text


async def test_a_store_put_back_with_its_whole_critical_directory_is_caught_at_boot(
        tmp_path: Path, witness_db: WitnessDb, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    config = witnessed_config(tmp_path, witness_db)
    assert init_store(config, monkeypatch) == 0
    await play(config)
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("table.sqlite", "table.critical"):  # the store, key, anchor and outbox
        (shutil.copytree if name.endswith("critical") else shutil.copy2)(
            tmp_path / name, copy / name)
    old = seal_of(tmp_path / "table.sqlite")
    await play(config)  # more play, witnessed
    last = witness_heads(witness_db)[-1]
    shutil.rmtree(tmp_path / "table.critical")
    for name in ("table.sqlite", "table.sqlite-wal", "table.sqlite-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    shutil.copy2(copy / "table.sqlite", tmp_path / "table.sqlite")
    shutil.copytree(copy / "table.critical", tmp_path / "table.critical")

    status = await boot_status(config)
    assert status["state"] == "out_of_order"
    # The old copy, and the boot's two entries before the check (verified, restored).
    booted = old[1] + 2
    booted_mac = sqlite3.connect(tmp_path / "table.sqlite").execute(
        "SELECT hash FROM events WHERE seq = ?", (booted,)).fetchone()[0]
    assert status["out_of_order"] == (
        f"witness: store behind: the store is at commit {old[0] + 2}, log entry {booted} "
        f"(MAC {booted_mac[:16]}, state {last.state_digest[:16]}) but the witness holds commit "
        f"{last.commit_no}, log entry {last.log_seq} (MAC {last.entry_mac[:16]}, state "
        f"{last.state_digest[:16]}), signed by this table: the store was rolled back or "
        "replaced")
    assert status["open_refused"] == "not allowed while the table is out_of_order"
    code, text = verify_store(witness_db, tmp_path / "table.sqlite", capsys)
    assert code == 1
    assert "witness: store behind: the store is at" in text


async def test_a_log_entry_rewritten_and_resealed_with_the_key_is_caught(
        tmp_path: Path, witness_db: WitnessDb, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    config = witnessed_config(tmp_path, witness_db)
    assert init_store(config, monkeypatch) == 0
    await play(config)
    store = tmp_path / "table.sqlite"
    last = witness_heads(witness_db)[-1]
    edited = 3  # an early entry; every MAC after it is recomputed with the key
    reseal_with_key(store, "UPDATE events SET payload = json_set(payload, '$.forged', 1) "
                    "WHERE seq = ?", (edited,), rewrite_from=edited)
    found = sqlite3.connect(store).execute("SELECT hash FROM events WHERE seq = ?",
                                           (last.log_seq,)).fetchone()[0]

    status = await boot_status(config)
    assert status["state"] == "out_of_order"
    assert status["out_of_order"].startswith(
        f"witness: log rewritten: log entry {last.log_seq} in the store has MAC {found[:16]} "
        f"but the witness holds commit {last.commit_no}, log entry {last.log_seq} (MAC "
        f"{last.entry_mac[:16]}")
    code, text = verify_store(witness_db, store, capsys)
    assert code == 1
    assert f"log entry {edited} in the store has MAC" in text  # the first witnessed one


async def test_money_changed_with_the_key_and_no_log_entry_is_caught(
        tmp_path: Path, witness_db: WitnessDb, monkeypatch: pytest.MonkeyPatch) -> None:
    config = witnessed_config(tmp_path, witness_db)
    assert init_store(config, monkeypatch) == 0
    await play(config)
    # Seat 3 credited $1,000.00 that no round paid, sealed with the key.
    reseal_with_key(tmp_path / "table.sqlite", "INSERT INTO seat_totals(seat, net_cents, "
                    "wagered_cents, vig_owed_cents) VALUES (3, 100000, 0, 0)")
    status = await boot_status(config)
    assert status["state"] == "out_of_order"
    assert status["out_of_order"].startswith(
        "witness: money diverges: the seat totals, meters, awards or rounds differ from "
        "those witnessed at the same log entry")


async def test_a_fresh_store_for_a_known_table_needs_a_supervisor_and_is_witnessed(
        tmp_path: Path, witness_db: WitnessDb, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    config = witnessed_config(tmp_path, witness_db)
    assert init_store(config, monkeypatch) == 0
    await play(config)
    last = witness_heads(witness_db)[-1]
    moved = tmp_path / "moved-away"
    moved.mkdir()
    for name in ("table.sqlite", "table.critical"):
        shutil.move(tmp_path / name, moved / name)

    assert init_store(config, monkeypatch) == EXIT_STORE
    assert (f"init refused: the witness already knows table {TABLE_ID} (epoch 1"
            in capsys.readouterr().err)
    assert not (tmp_path / "table.sqlite").exists()
    assert init_store(config, monkeypatch, supervisor="floor", reason="test", pin="0000") \
        == EXIT_STORE
    assert "supervisor 'floor' was not authorised" in capsys.readouterr().err

    assert init_store(config, monkeypatch, supervisor="floor", reason="SD card replaced") == 0
    witness = first_record(tmp_path / "table.sqlite")["witness"]
    assert (witness["epoch"], witness["supervisor"], witness["reason"]) == (
        2, "floor", "SD card replaced")
    assert witness["last_witnessed"] == {**last.as_dict()}
    status = await play(config)
    assert status["state"] == "opening"
    assert status["witness"]["epoch"] == 2
    code = tablewitness(["verify", "--dsn", witness_db.admin_dsn, "--schema",
                         witness_db.schema, "--table", TABLE_ID])
    out = capsys.readouterr().out
    assert code == 0
    assert "2 registration(s)" in out
    assert (f"epoch 2: store replaced at {witness['registered_at']} by "
            f"{witness_db.table_roles[-1]} (supervisor 'floor', reason 'SD card replaced'); "
            f"last head before: commit {last.commit_no}, log entry {last.log_seq}") in out


async def test_without_its_witness_the_table_plays_then_stops_new_rounds_after_the_limit(
        tmp_path: Path, witness_db: WitnessDb, monkeypatch: pytest.MonkeyPatch) -> None:
    config = witnessed_config(tmp_path, witness_db)
    assert init_store(config, monkeypatch) == 0
    gone = witnessed_config(tmp_path, witness_db, WITNESS_AWAY,
                            "witness.max_unwitnessed_minutes=0.001")  # 60 ms
    async with running(gone) as client:
        status = await client.call("status")
        assert status["state"] == "closed"
        assert status["witness"]["link"] == "down"
        assert "witness unreachable" in status["witness"]["last_error"]
        down = await client.call("events", kind="witness_down")
        assert "witness unreachable" in down[0]["payload"]["reason"]
        while (await client.call("status"))["witness"]["unwitnessed_s"] < 0.2:
            await asyncio.sleep(0.02)  # past the limit of 60 ms
        with pytest.raises(ControlError, match=r"new rounds are stopped: the witness has not "
                           r"answered for .* min \(more than \[witness\] "
                           r"max_unwitnessed_minutes = 0.001\)"):
            await client.call("place_wager", seat=1, wager="banker", amount_cents=500)
        assert (await client.call("open"))["state"] == "opening"  # the table itself runs
        shown = render_status(await client.call("status"))
        assert re.search(r"Witness: DOWN for \S+: witness unreachable: OperationalError: "
                         r"connection failed: .*; \d+ heads kept in the outbox; new rounds stop "
                         r"after 0.001 min", shown), shown


async def test_a_supervisors_clear_registers_the_new_store_with_the_witness(
        tmp_path: Path, witness_db: WitnessDb, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    config = witnessed_config(tmp_path, witness_db)
    assert init_store(config, monkeypatch) == 0
    await play(config)
    last = witness_heads(witness_db)[-1]
    assert init_store(config, monkeypatch, supervisor="floor", reason="store damaged",
                      command="clear_store") == 0
    record = first_record(tmp_path / "table.sqlite")
    assert record["supervisor"] == "floor"
    assert "witness_outbox" in record["moved"]  # the old store's heads go with it
    assert (record["witness"]["epoch"], record["witness"]["last_witnessed"]) == (
        2, last.as_dict())
    status = await play(config)
    assert (status["state"], status["witness"]["link"], status["witness"]["epoch"]) == (
        "opening", "up", 2)
    code, text = verify_store(witness_db, tmp_path / "table.sqlite", capsys)
    assert code == 0, text


async def test_a_table_initialised_before_its_witness_registers_once(
        tmp_path: Path, witness_db: WitnessDb, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = load_config(CONFIG, [f"store.path={tmp_path / 'table.sqlite'}",
                                 f"control.socket={tmp_path / 'control.sock'}"])
    assert init_store(plain, monkeypatch) == 0
    status = await play(plain)
    assert status["witness"] == {"link": "unwitnessed",
                                 "detail": "no [witness] in the configuration"}
    config = witnessed_config(tmp_path, witness_db)
    status = await play(config)
    assert status["witness"]["link"] == "unavailable"
    assert "register it once with 'tabled --config FILE --register-witness'" in \
        status["witness"]["detail"]
    assert status["state"] == "opening"  # play goes on, unwitnessed
    assert init_store(config, monkeypatch, command="register_witness") == 0
    status = await play(config)
    assert (status["witness"]["link"], status["witness"]["epoch"]) == ("up", 1)
    # Registered once: again is a replaced store's registration, a supervisor's.
    assert init_store(config, monkeypatch, command="register_witness") == EXIT_STORE


async def test_a_store_put_back_with_its_anchor_while_the_witness_is_away_is_caught(
        tmp_path: Path, witness_db: WitnessDb, monkeypatch: pytest.MonkeyPatch) -> None:
    config = witnessed_config(tmp_path, witness_db)
    assert init_store(config, monkeypatch) == 0
    away = witnessed_config(tmp_path, witness_db, WITNESS_AWAY)
    await play(away)
    shutil.copy2(tmp_path / "table.sqlite", tmp_path / "old.sqlite")
    shutil.copy2(tmp_path / "table.critical" / "anchor", tmp_path / "old.anchor")
    status = await play(away)  # the heads of this play wait in the outbox
    assert status["witness"]["link"] == "down"
    for name in ("table.sqlite-wal", "table.sqlite-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    shutil.copy2(tmp_path / "old.sqlite", tmp_path / "table.sqlite")
    shutil.copy2(tmp_path / "old.anchor", tmp_path / "table.critical" / "anchor")

    status = await boot_status(away)
    assert status["state"] == "out_of_order"
    assert status["out_of_order"].startswith("witness: store behind: the store is at commit ")
    assert "but this table's outbox holds commit " in status["out_of_order"]


async def test_a_damaged_outbox_line_is_named_and_never_reaches_the_witness(
        tmp_path: Path, witness_db: WitnessDb, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Heads wait in the outbox while the witness is away; the disk damages one of their
    lines into another readable head (one hex digit of its log entry's MAC). The next start
    names the file and the line in the journal and sends the heads around it, not that one
    (the link signs a head only as it sends it: before, the witness took the damaged head,
    signed, as one this table had, and `tablewitness verify --store` called the store
    diverging). The witness ends at the store's head, every head it holds found in the store."""
    import structlog

    config = witnessed_config(tmp_path, witness_db)
    assert init_store(config, monkeypatch) == 0
    away = witnessed_config(tmp_path, witness_db, WITNESS_AWAY)
    assert (await play(away))["witness"]["link"] == "down"
    outbox = tmp_path / "table.critical" / "witness_outbox"
    lines = outbox.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(lines) >= 3, lines
    head = json.loads(lines[1])
    mac = head["entry_mac"]
    lines[1] = lines[1].replace(mac, ("1" if mac[0] != "1" else "2") + mac[1:])
    outbox.write_text("".join(lines), encoding="utf-8")

    with structlog.testing.capture_logs() as logs:
        await play(config)
    damaged = [entry for entry in logs if entry["event"] == "witness_outbox_damaged"]
    assert [(e["log_level"], e["path"], e["lines"], e["heads_read"]) for e in damaged] == [
        ("warning", str(outbox), [2], len(lines) - 1)]
    commit_no, log_seq, log_mac = seal_of(tmp_path / "table.sqlite")
    held = witness_heads(witness_db)
    assert (held[-1].commit_no, held[-1].log_seq, held[-1].entry_mac) == (
        commit_no, log_seq, log_mac)
    assert head["commit_no"] not in [h.commit_no for h in held]
    code, text = verify_store(witness_db, tmp_path / "table.sqlite", capsys)
    assert code == 0, text
    assert f"{len(held)} witnessed heads found in the store" in text, text
