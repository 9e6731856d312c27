"""Critical memory beyond the tamper campaign: power cuts are not tampering, initialisation is
explicit, a supervisor's clear leaves a record, the incremental check and the full one."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from controller.memory.anchor import ANCHOR_INTERVAL_RANGE_S
from controller.memory.critical import CriticalPaths, IntegrityError, read_anchor
from controller.memory.lifecycle import (
    CLEARED_EVENT,
    INITIALISED_EVENT,
    clear_store,
    init_store,
    load_key_for,
    open_store,
)
from controller.memory.store import Store
from tests.controller.test_daemon import CONFIG, config_for, run_daemon
from tests.settled import banker_wager

ROOT = Path(__file__).resolve().parents[2]


def _initialised(tmp_path: Path) -> Store:
    config = config_for(tmp_path)
    init_store(config.store_path, operator="test", table_id="T1").close()
    # The shortest interval a table may set (a table's default is a minute, docs/rulings.md
    # C24): these tests wait for the writer to catch up with commit after commit.
    return open_store(config.store_path, anchor_interval_s=ANCHOR_INTERVAL_RANGE_S[0])


def _anchor_at_last_commit(store: Store) -> None:
    """Wait (generously) for the anchor writer's thread to record the last commit: it writes
    at most once an interval (a second here, controller/memory/anchor.py)."""
    import time

    assert store.paths is not None
    seal = store._db.execute("SELECT commit_no FROM critical_seal").fetchone()[0]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        anchor = read_anchor(store.paths.anchor, store.key)
        if anchor is not None and anchor.commit_no == seal:
            return
        time.sleep(0.05)
    raise AssertionError(f"the anchor never reached commit {seal}")


def test_a_power_cut_that_loses_the_unflushed_cards_is_not_tampering(tmp_path):
    """Cards inside a round ride with the next flush (docs/architecture.md, "Durable
    writes"); losing them loses a suffix of commits that the anchor never recorded."""
    store = _initialised(tmp_path)
    store.append_entry("wager_locked", {"seat": 1, "amount_cents": 500})  # flushed: the anchor
    _anchor_at_last_commit(store)
    wal = Path(store.path + "-wal")
    durable_size = wal.stat().st_size
    anchor = read_anchor(store.paths.anchor, store.key)
    store.append_entry("card", {"index": 0, "card": "9H"})  # grouped: not flushed
    import time
    time.sleep(1.5)  # past the anchor writer's interval: a grouped commit never moves it
    assert read_anchor(store.paths.anchor, store.key) == anchor
    shutil.copyfile(store.path, tmp_path / "cut.sqlite")
    shutil.copyfile(wal, tmp_path / "cut.sqlite-wal")
    with (tmp_path / "cut.sqlite-wal").open("r+b") as fh:
        fh.truncate(durable_size)  # the power cut: the card's frames never reached the disk
    shutil.copytree(store.paths.directory, tmp_path / "cut.critical")
    store.close()
    after = Store(tmp_path / "cut.sqlite", key=store.key,
                  paths=CriticalPaths.for_store(tmp_path / "cut.sqlite"), create=False)
    assert after.verified is not None and after.verified.anchor_behind == 0
    assert [e.kind for e in after.events()][-1] == "wager_locked"
    after.close()


def test_a_power_cut_between_the_commit_and_the_anchor_is_not_tampering(tmp_path):
    store = _initialised(tmp_path)
    paths = store.paths
    assert paths is not None
    _anchor_at_last_commit(store)
    old_anchor = paths.anchor.read_bytes()
    store.append_entry("wager_locked", {"seat": 1, "amount_cents": 500})
    store.close()
    paths.anchor.write_bytes(old_anchor)  # the anchor's rename never happened
    reopened = open_store(str(paths.store), anchor_interval_s=ANCHOR_INTERVAL_RANGE_S[0])
    assert reopened.verified is not None and reopened.verified.anchor_behind == 1
    _anchor_at_last_commit(reopened)  # caught up after the first flushed commit
    reopened.close()


def test_the_daemon_never_makes_a_store_by_itself(tmp_path):
    config = config_for(tmp_path)  # no --init-store

    async def body(client):
        return await client.call("status")

    from controller.daemon import Daemon
    from tests.controller.test_daemon import StandInDevice

    async def run() -> dict:
        daemon = Daemon(config, devices={"shoe": StandInDevice("shoe")})
        stop = asyncio.Event()
        task = asyncio.create_task(daemon.run(stop))
        from controller.control import ControlClient
        for _ in range(500):
            if Path(config.control_socket).exists():
                break
            await asyncio.sleep(0.01)
        client = await ControlClient(config.control_socket).connect()
        status = await client.call("status")
        await client.close()
        stop.set()
        await task
        return status

    status = asyncio.run(run())
    assert status["state"] == "out_of_order"
    assert status["out_of_order"] == (
        f"not initialised: no store at {config.store_path} and no key at "
        f"{tmp_path / 'table.critical' / 'key'}")
    assert not Path(config.store_path).exists()  # no fresh, empty table appeared


def _tabled(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """tabled as the technician runs it (its own process: it sets up its own logging)."""
    return subprocess.run([sys.executable, "-m", "controller.daemon", "--config", str(CONFIG),
                           *args], cwd=ROOT, input=stdin, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_initialisation_is_explicit_logged_and_once(tmp_path):
    config = config_for(tmp_path)
    where = ("--set", f"store.path={config.store_path}")
    done = _tabled(*where, "--init-store")
    assert done.returncode == 0, done.stderr
    key = tmp_path / "table.critical" / "key"
    assert done.stdout == (f"tabled: critical memory of table SIM-BAC-01 initialised: store "
                           f"{config.store_path}, key and anchor in {key.parent}\n")
    assert oct(key.stat().st_mode & 0o777) == "0o600"  # the daemon's user only
    assert oct(key.parent.stat().st_mode & 0o777) == "0o700"
    store = open_store(config.store_path)
    first = store.events()[0]
    assert (first.seq, first.kind, first.payload["table_id"]) == (1, INITIALISED_EVENT,
                                                                  "SIM-BAC-01")
    store.close()
    again = _tabled(*where, "--init-store")
    assert again.returncode == 5
    assert again.stderr == (
        f"tabled: already initialised: a store already exists at {config.store_path}\n"
        "Next: this table's critical memory exists; to start over, a supervisor clears it "
        "(tabled --clear-store)\n")


def test_a_supervised_clear_keeps_the_evidence_and_records_the_last_values(tmp_path):
    from fractions import Fraction

    from controller.progressive.ledger import MeterLedger

    store = _initialised(tmp_path)
    ledger = MeterLedger(store)
    with store.transaction():
        ledger.seed("h9", "grand", 1_000_000, Fraction(1, 10))
        ledger.change("h9", "grand", Fraction(1234), "increment", seats=[2], wagers_cents=12_340)
    store.close()
    path = store.path
    Path(path).unlink()  # the store is lost

    with pytest.raises(IntegrityError, match="supervisor 'ana' was not authorised"):
        clear_store(path, supervisor="ana", reason="store lost", table_id="T1",
                    authorised=lambda: False)
    with pytest.raises(IntegrityError, match="a reason is required"):
        clear_store(path, supervisor="ana", reason=" ", table_id="T1", authorised=lambda: True)
    assert not Path(path).exists()  # refused: nothing changed
    new, evidence = clear_store(path, supervisor="ana", reason="store lost", table_id="T1",
                                authorised=lambda: True, now=lambda: 1_800_000_000.0)
    assert evidence.name == "table.sqlite.cleared-20270115T080000Z"
    assert sorted(p.name for p in evidence.iterdir()) == ["anchor"]  # all that was left
    cleared = new.events()
    assert [e.kind for e in cleared] == [CLEARED_EVENT]
    assert cleared[0].payload["supervisor"] == "ana"
    assert cleared[0].payload["failure"] == "store missing"
    new.close()
    assert open_store(path).verified is not None  # the new store passes its check


def test_a_clear_records_the_meters_found_in_a_damaged_store(tmp_path):
    from fractions import Fraction

    from controller.progressive.ledger import MeterLedger

    store = _initialised(tmp_path)
    ledger = MeterLedger(store)
    with store.transaction():
        ledger.seed("h9", "grand", 1_000_000, Fraction(1, 10))
        ledger.change("h9", "grand", Fraction(1234), "increment", seats=[2], wagers_cents=12_340)
    store.close()
    db = sqlite3.connect(store.path)
    db.execute("DROP TRIGGER cm_upd_seat_totals")
    db.commit()
    db.close()
    new, evidence = clear_store(store.path, supervisor="ana", reason="digest triggers removed",
                                table_id="T1", authorised=lambda: True)
    payload = new.events()[0].payload
    assert payload["failure"] == "table seat_totals: its digest triggers were removed or changed"
    assert payload["last_values"]["progressive_meters"] == [
        {"progressive": "h9", "level": "grand", "amount_cents": 1_001_234, "frac_num": 0,
         "frac_den": 1, "version": 2, "awarded_cents": 0, "paid_count": 0}]
    assert (evidence / "table.sqlite").exists()
    new.close()


def test_a_clear_records_what_the_store_left_off_the_shared_ledger(tmp_path):
    """605a.8: a cleared store's linked contributions not yet sent and its linked hits not
    yet claimed would be lost to the shared meter without a word (the new store starts an
    outbox of its own); the clear's record names each, and the old store's name in the
    ledger's keys, and the supervisor is told."""
    from fractions import Fraction

    from controller.memory.lifecycle import linked_left_behind
    from controller.progressive.ledger import MeterLedger

    store = _initialised(tmp_path)
    ledger = MeterLedger(store)
    name = ledger.link_store()
    with store.transaction():
        ledger.enqueue("h9", "progressive", Fraction(100), 2, 1000, 7)
        ledger.create_award("h9", "progressive", 7, 5, 0, "suited nines", "631c.2(g)(1)", 1,
                            linked_claim=f"T1@{name}/7/5/h9/progressive", claimed=False)
    store.close()
    new, _ = clear_store(store.path, supervisor="ana", reason="card replaced", table_id="T1",
                         authorised=lambda: True)
    last = new.events()[0].payload["last_values"]
    new.close()
    assert last["linked_unsent"] == [
        {"seq": 1, "progressive": "h9", "level": "progressive", "delta_num": 100,
         "delta_den": 1, "wagers_count": 2, "wagers_cents": 1000, "round_id": 7}]
    assert last["linked_store"] == [{"value": name}]
    assert last["pending_awards"] == [
        {"award_id": 1, "progressive": "h9", "level": "progressive", "round_id": 7, "seat": 5,
         "amount_cents": 0, "state": "pending", "linked_claim": f"T1@{name}/7/5/h9/progressive",
         "claimed": 0}]
    assert linked_left_behind(last) == (
        "the old store left 1 linked contribution(s) (1000 cents of wagers) unsent and 1 "
        "linked hit(s) unclaimed on the shared ledger: they are in the new store's first "
        "record (last_values); the casino credits them at the server (tablectl linked "
        "reconcile on the old store lists them as not sent)")
    assert linked_left_behind({"linked_unsent": [], "pending_awards": []}) == ""


def test_clear_store_needs_the_supervisors_pin(tmp_path):
    """The simulated table's supervisor "floor" has the PIN 2468 (its configuration)."""
    config = config_for(tmp_path)
    init_store(config.store_path, operator="test", table_id="T1").close()
    args = ("--set", f"store.path={config.store_path}", "--clear-store", "--supervisor",
            "floor", "--reason", "test", "--pin-stdin")
    wrong = _tabled(*args, stdin="1111\n")
    assert wrong.returncode == 5
    assert "supervisor 'floor' was not authorised (wrong name or PIN)" in wrong.stderr
    assert Path(config.store_path).exists()  # refused: nothing moved
    right = _tabled(*args, stdin="2468\n")
    assert right.returncode == 0, right.stderr
    assert "cleared by floor; the old files are kept in" in right.stdout


def test_tableds_help_names_every_step_that_takes_a_supervisor():
    """--init-store and --register-witness take the supervisor too, for a table its witness
    already knows (docs/deployment.md, "The witness"); the help said --clear-store only."""
    from controller.daemon_args import command_line

    helps = {a.dest: a.help for a in command_line()._actions}
    said = "with --clear-store, or --init-store and --register-witness for a table the " \
           "witness already knows"
    assert (helps["supervisor"], helps["reason"], helps["pin_stdin"]) == (
        f"{said}: the supervisor's name", f"{said}: why",
        f"{said}: read the PIN from standard input")


def test_every_start_checks_the_whole_history_before_the_table_opens(tmp_path):
    """Ready does not wait on the history (the start reads at most BOOT_CHAIN_LIMIT entries
    since the last full check), but every start then checks all of it before anything is
    settled: an entry edited long before the last full check is found at the next start,
    not at the next daily check. Each passing start moves the checkpoint."""
    config = config_for(tmp_path)

    async def fill_and_verify(client):
        return await client.call("verify_chain", full=True)

    full = asyncio.run(run_daemon(config, fill_and_verify))
    assert full["from_seq"] == 1 and full["entries"] == full["log_seq"]

    async def incremental_and_status(client):
        return await client.call("verify_chain"), await client.call("status")

    again, status = asyncio.run(run_daemon(config, incremental_and_status))
    assert status["history_check"]["state"] == "passed"
    assert status["history_check"]["entries"] > full["log_seq"]  # the whole log, again
    assert again["from_seq"] > full["log_seq"] + 1  # the start's full check moved it
    db = sqlite3.connect(config.store_path)
    db.execute("UPDATE events SET payload = '{}' WHERE seq = 1")
    db.commit()
    db.close()

    async def after_tamper(client):
        from controller.control import ControlError
        with pytest.raises(ControlError) as caught:
            await client.call("open")
        return await client.call("status"), str(caught.value)

    after, refused = asyncio.run(run_daemon(config, after_tamper))
    assert after["state"] == "out_of_order"
    assert after["out_of_order"] == ("event chain: entry 1 (critical_memory_initialised) was "
                                     "altered: its MAC does not match its contents")
    assert after["history_check"] == {"state": "failed", "detail": (
        "IntegrityError: event chain: entry 1 (critical_memory_initialised) was altered: its "
        "MAC does not match its contents")}
    assert refused == "not allowed while the table is out_of_order"


# --- the real daemon process: no traceback, no exit, no restart loop -------------------------


def _daemon_process(config, **popen) -> tuple[dict, str, int | None]:  # noqa: ANN001
    """Start tabled, wait for its socket, ask its status through tablectl, stop it:
    (status, the daemon's output, its exit status)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "controller.daemon", "--config", str(CONFIG),
         "--set", f"store.path={config.store_path}",
         "--set", f"control.socket={config.control_socket}",
         "--set", "shoe.url=/dev/null"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, **popen)
    try:
        status = ""
        for _ in range(600):
            if Path(config.control_socket).exists() or proc.poll() is not None:
                break
            import time
            time.sleep(0.05)
        if proc.poll() is None:
            done = subprocess.run([sys.executable, "-m", "controller.cli", "status", "--json",
                                   "--socket", config.control_socket], cwd=ROOT, env=env,
                                  capture_output=True, text=True, timeout=60)
            status = done.stdout
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    return json.loads(status) if status else {}, out, proc.returncode


def test_a_zeroed_header_puts_the_table_out_of_order_without_a_traceback(tmp_path):
    config = config_for(tmp_path)
    init_store(config.store_path, operator="test", table_id="T1").close()
    with open(config.store_path, "r+b") as fh:
        fh.write(b"\x00" * 100)
    status, output, code = _daemon_process(config)
    assert code == 0, output  # it stayed up until told to stop: no exit, no restart loop
    assert "Traceback" not in output
    assert status["out_of_order"] == (
        f"store unusable: {config.store_path} is not a SQLite store: its header is damaged")
    assert "Next: do not play; check the disk and the file named" in output


def test_a_store_the_daemon_cannot_write_is_named(tmp_path):
    """A store file that cannot be written (a wrong owner or mode after a restore; here
    chmod, or for root, who ignores modes, the immutable attribute). The configuration's
    check of store.path finds it first: exit 6, which systemd does not restart."""
    config = config_for(tmp_path)
    init_store(config.store_path, operator="test", table_id="T1").close()
    if os.geteuid() == 0:
        made = subprocess.run(["chattr", "+i", config.store_path], capture_output=True,
                              text=True)
        if made.returncode != 0:
            pytest.skip(f"root here cannot make a file unwritable: {made.stderr.strip()}")
    else:
        os.chmod(config.store_path, 0o444)
    try:
        status, output, code = _daemon_process(config)
    finally:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", config.store_path], check=True)
    assert code == 6, output
    assert status == {}
    assert "Traceback" not in output
    assert (f"store.path = '{config.store_path}': not allowed; allowed: a writable file path "
            f"whose folder exists or can be made, e.g. /var/lib/tabled/table.sqlite "
            f"({config.store_path} is not writable by this account") in output


def test_a_store_that_cannot_grow_is_named(tmp_path):
    """RLIMIT_FSIZE makes every write past the limit fail as a full disk does."""
    import resource

    config = config_for(tmp_path)
    init_store(config.store_path, operator="test", table_id="T1").close()

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a signal
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))

    status, output, code = _daemon_process(config, preexec_fn=small_files)
    assert code == 0, output
    assert "Traceback" not in output
    assert status["out_of_order"] == (
        f"store unusable: {config.store_path} cannot be written or read (disk I/O error: a "
        "full, read-only or failing disk)")


def test_a_store_that_fails_in_play_puts_the_table_out_of_order(tmp_path, monkeypatch):
    """SQLite's answer when the disk fills mid-shift; the daemon must not die of it."""
    from controller.control import ControlClient
    from controller.daemon import Daemon
    from drivers.protocols import DeviceFault
    from tests.controller.test_daemon import StandInDevice, initialise

    config = config_for(tmp_path)
    initialise(config)

    async def run() -> tuple[dict, bool]:
        daemon = Daemon(config, devices={"shoe": StandInDevice("shoe")})

        def full(event: object) -> None:
            raise sqlite3.OperationalError("database or disk is full")

        monkeypatch.setattr(daemon.table, "handle", full)
        stop = asyncio.Event()
        task = asyncio.create_task(daemon.run(stop))
        for _ in range(500):
            if Path(config.control_socket).exists():
                break
            await asyncio.sleep(0.01)
        daemon.intake.enqueue(DeviceFault("shoe", "jam", "a card is stuck", "clear the jam"))
        client = await ControlClient(config.control_socket).connect()
        for _ in range(500):
            status = await client.call("status")
            if status["state"] == "out_of_order":
                break
            await asyncio.sleep(0.01)
        await client.close()
        alive = daemon.health().ok
        stop.set()
        await task
        return status, alive

    status, alive = asyncio.run(run())
    assert status["out_of_order"] == f"store unusable: the disk holding {config.store_path} is full"
    assert alive  # the consumer lives on: no watchdog restart


def test_settled_rounds_are_read_again_by_the_full_check_only(tmp_path):
    """After a full check, boot re-reads only the rounds after the settled prefix it found
    (critical.SETTLED_PREFIX); an edit inside the prefix waits for the next full check."""
    path = tmp_path / "t.sqlite"
    store = Store(path)
    for n in (1, 2, 3):
        rid = store.open_round(1, n, [{"seat": 1, "wager": "banker", "amount_cents": 1000}])
        store.close_round(rid, "settled", {"winner": "banker"},
                          [banker_wager(1, 1000, 950)], [])
    store.open_round(1, 4, [{"seat": 1, "wager": "banker", "amount_cents": 1000}])  # open
    store.append_entry("wager_locked", {"seat": 1})
    full = store.verify(full=True)
    assert full.settled == {"rounds": {"last_rowid": 3, "rows": 3,
                                       "acc": full.settled["rounds"]["acc"]}}
    head = store.events()[-1]
    store.set_checkpoint(head.seq, head.hash, full.settled)
    store.close()

    def edit(sql: str) -> None:
        """Drop the digest triggers, edit, put the same triggers back: all but the keyed
        digest looks untouched."""
        db = sqlite3.connect(path)
        triggers = db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"
                              ).fetchall()
        for name, _ in triggers:
            db.execute(f'DROP TRIGGER "{name}"')
        db.execute(sql)
        for _, statement in triggers:
            db.execute(statement)
        db.commit()
        db.close()

    shutil.copyfile(path, tmp_path / "clean.sqlite")
    edit("UPDATE rounds SET settlements = '[]' WHERE round_id = 2")  # inside the prefix
    booted = Store(path)  # boot reads rounds from 4 on: this edit waits for the full check
    with pytest.raises(IntegrityError, match="table rounds: a row differs from what was sealed"):
        booted.verify(full=True)
    booted.close()
    shutil.copyfile(tmp_path / "clean.sqlite", path)
    edit("UPDATE rounds SET wagers = '[]' WHERE round_id = 4")  # after the prefix
    with pytest.raises(IntegrityError, match="table rounds: a row differs from what was sealed"):
        Store(path)


def test_a_durable_commit_during_a_check_is_not_a_rollback(tmp_path, monkeypatch):
    """Forced interleaving (issue 11): the check on its own connection while the table
    commits. The table makes a durable commit and its anchor reaches the disk exactly when
    the check reads the anchor; the check's snapshot must not be older than that anchor,
    or the store looks rolled back behind it."""
    from controller.memory import check
    from controller.memory.lifecycle import verify_file

    store = _initialised(tmp_path)
    assert store.paths is not None
    real_read_anchor = check.read_anchor
    commits: list[int] = []

    def table_commits_meanwhile(path, key):  # noqa: ANN001, ANN202
        with store.transaction():
            store.append_entry("seat_leaves", {"seat": len(commits) + 1})  # flushed
        _anchor_at_last_commit(store)
        commits.append(store._db.execute("SELECT commit_no FROM critical_seal").fetchone()[0])
        return real_read_anchor(path, key)

    monkeypatch.setattr(check, "read_anchor", table_commits_meanwhile)
    verified = verify_file(store.path, store.key, store.paths, full=True)
    store.close()
    assert len(commits) == 1
    assert (verified.commit_no, verified.anchor_behind) == (commits[0], 0)
    assert verified.log_seq == verified.entries


def test_a_rows_remembered_mac_is_the_mac_of_the_same_material():
    """cm_mix remembers MACs by what row_mac covers (the table and the values' repr), so
    equal values of another type or sign (1 and 1.0 and True, 0.0 and -0.0) are other rows,
    and a remembered MAC is the one row_mac gives."""
    import sqlite3

    from controller.memory.digests import install_functions
    from controller.memory.macs import DEVELOPMENT_KEY, MODULUS, row_mac

    db = sqlite3.connect(":memory:")
    install_functions(db, DEVELOPMENT_KEY)
    zero = "0" * 64
    for values in ((1, "open", None, 2.5, b"x"), (1,), (1.0,), (True,), (0.0,), (-0.0,)):
        marks = ", ".join("?" * len(values))
        for _ in range(2):  # the second time, from what it remembers
            mixed = db.execute(f"SELECT cm_mix(?, 1, 't', {marks})", (zero, *values)
                               ).fetchone()[0]
            # SQLite hands True back as 1: the MAC is of what the trigger sees.
            seen = tuple(int(v) if type(v) is bool else v for v in values)
            assert int(mixed, 16) == row_mac(DEVELOPMENT_KEY, "t", seen) % MODULUS


def test_digests_stay_exact_when_equal_values_of_another_repr_are_taken_out(tmp_path):
    """The digest triggers take out a row's old values and add its new ones; through the
    remembered MAC of the last values added, rows whose values are equal but print otherwise
    (a float and an int, 0.0 and -0.0) must still be told apart, or the digest drifts from
    its rows and the next check fails."""
    store = Store(tmp_path / "table.sqlite")
    with store.transaction() as db:
        db.execute("CREATE TABLE probe (v)")  # no type, no key: SQLite keeps what it is given
    store.protect(("probe",))
    for first, second in ((1.0, 1), (-0.0, 0.0)):
        with store.transaction() as db:
            db.execute("DELETE FROM probe")
            db.execute("INSERT INTO probe(rowid, v) VALUES (1, ?)", (first,))
            db.execute("INSERT INTO probe(rowid, v) VALUES (2, ?)", (second,))  # remembered
            db.execute("UPDATE probe SET v = 'changed' WHERE rowid = 1")  # takes out `first`
        assert store.verify(full=True).state_rows == 4  # meta's two rows and probe's two
    store.close()


def test_an_entrys_mac_covers_the_canonical_list_the_docs_give_auditors():
    """entry_mac writes its material out field by field; it must be byte for byte the
    canonical JSON list an auditor computes (docs: [previous MAC, seq, repr(time), kind,
    severity, device, round, payload JSON]), for every kind of text a field can hold."""
    import hashlib
    import hmac
    import random

    from controller.memory.critical import DEVELOPMENT_KEY, canonical, entry_mac, entry_material

    rng = random.Random(18)
    alphabet = ['"', "\\", "/", "\n", "\t", "\x00", "\x1f", "\x7f", "é", "♥", "\u2028",
                "\ud7ff", "😀", "a", "Z", " ", "{", "]"]
    cases = [("0" * 64, 1, 0.0, "card", "info", None, None, "{}"),
             ("f" * 64, 2**62, -1.5e-300, "prompt", "warning", "shoe", 0, '{"a":"\\u0000"}')]
    for _ in range(500):
        text = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))
                for _ in range(5)]
        cases.append((text[0], rng.randrange(1, 2**40), rng.uniform(-1e12, 1e12), text[1],
                      text[2], rng.choice([None, text[3]]), rng.choice([None, -7, 2**33]),
                      text[4]))
    for prev, seq, at, kind, severity, device, round_id, payload in cases:
        listed = canonical([prev, seq, repr(at), kind, severity, device, round_id, payload])
        assert entry_material(prev, seq, at, kind, severity, device, round_id,
                              payload) == listed
        assert entry_mac(DEVELOPMENT_KEY, prev, seq, at, kind, severity, device, round_id,
                         payload) == hmac.new(DEVELOPMENT_KEY, listed.encode("utf-8"),
                                              hashlib.sha256).hexdigest()


def test_a_seals_mac_covers_the_canonical_list_and_the_row_macs_are_plain_hmacs():
    """seal_mac writes its material out field by field, and every MAC copies a keyed
    HMAC state (critical.mac_of): the seal must still be the MAC of canonical(["seal",
    commit, log seq, log MAC, sorted digests]) the docs give auditors, and a row's MAC the
    plain HMAC-SHA256 of its table, NUL and repr, for any text a name or digest holds."""
    import hashlib
    import hmac
    import random

    from controller.memory.critical import DEVELOPMENT_KEY, canonical, row_mac, seal_mac, seal_material

    rng = random.Random(1818)
    alphabet = ['"', "\\", "\n", "\x00", "\x1f", "é", "♥", "\u2028", "😀", "a", " ", "["]

    def text() -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 10)))

    for number in range(300):
        digests = [(text(), text(), rng.randrange(0, 2**40), text())
                   for _ in range(rng.randrange(0, 6))]
        commit, seq, head = rng.randrange(1, 2**40), rng.randrange(0, 2**40), text()
        listed = canonical(["seal", commit, seq, head, sorted(digests)])
        assert seal_material(commit, seq, head, digests) == listed
        key = DEVELOPMENT_KEY if number % 2 else bytes(rng.randrange(256) for _ in range(32))
        assert seal_mac(key, commit, seq, head, digests) == hmac.new(
            key, listed.encode("utf-8"), hashlib.sha256).hexdigest()
        values = (number, text(), None, rng.uniform(-1e9, 1e9), text().encode())
        assert row_mac(key, "rounds", values) == int.from_bytes(hmac.digest(
            key, f"rounds\x00{values!r}".encode(), "sha256"), "big")


def test_a_key_file_damaged_into_bytes_that_are_not_text_is_named_not_a_crash(tmp_path):
    """The key is 64 hex digits. A key file of other bytes (a damaged card, an editor's
    other encoding) stopped `load_key` on UnicodeDecodeError, so the daemon's start and
    `tablectl events verify --store` on a traceback; it is a key that is not a key, named
    as one that is too short is."""
    from controller.memory.critical import load_key

    paths = CriticalPaths.for_store(tmp_path / "table.sqlite")
    paths.directory.mkdir()
    for damaged in (b"\xff\xfe" + b"ab" * 31, "é".encode("latin-1") * 64, b"0" * 63):
        paths.key.write_bytes(damaged)
        with pytest.raises(IntegrityError) as refused:
            load_key(paths)
        assert (refused.value.check, refused.value.detail) == (
            "key", f"{paths.key} does not hold a 32-byte key in hex")
    paths.key.write_bytes(b"ab" * 32 + b"\n")
    assert load_key(paths) == bytes.fromhex("ab" * 32)


def test_a_schema_damaged_into_bytes_that_are_not_text_is_named_not_a_crash(tmp_path, capsys):
    """A bit flip in the schema (found by a campaign of random flips in stopped stores): a
    table's name in sqlite_master no longer UTF-8 and its statement no longer SQL. SQLite's
    complaint quotes the name, and Python's sqlite3 raised UnicodeDecodeError while making
    its DatabaseError: the daemon's start and `tablectl events verify --store` stopped on a
    traceback instead of naming the store unusable."""
    from controller.cli import exitcodes
    from controller.cli import main as tablectl_main

    store = tmp_path / "table.sqlite"
    init_store(str(store), operator="test", table_id="T1").close()
    data = bytearray(store.read_bytes())
    statement = data.find(b"CREATE TABLE seat_totals")
    name = data.rfind(b"tableseat_totals", 0, statement) + len(b"table")
    data[name + 2] = 0xE3  # "se\xe3t_totals": a lead byte with no continuation
    data[statement + len(b"CREATE ")] = ord("!")  # "CREATE !ABLE": no longer parses
    store.write_bytes(bytes(data))
    detail = (f"{store}: malformed database schema (SQLite's message about it is not UTF-8 "
              "text) (damaged pages)")
    with pytest.raises(IntegrityError) as refused:
        open_store(str(store))
    assert (refused.value.check, refused.value.detail) == ("store unusable", detail)
    assert tablectl_main(["events", "verify", "--json", "--store", str(store)]) == (
        exitcodes.INTEGRITY_FAILURE)
    assert json.loads(capsys.readouterr().out)["error"] == f"store unusable: {detail}"
    # Without its key beside it the file is not known to be a table's store: named so.
    shutil.rmtree(CriticalPaths.for_store(store).directory)
    assert tablectl_main(["events", "verify", "--store", str(store)]) == exitcodes.BAD_ARGUMENTS
    assert capsys.readouterr().err.startswith(
        f"tablectl: {store} is not a readable table store: malformed database schema "
        "(SQLite's message about it is not UTF-8 text); give the path")


def _refusal_at_open(store: Path, *statements: str) -> tuple[str, str]:
    """Run `statements` on the store with plain sqlite3 (no key), then open it: the
    (check, detail) it is refused with."""
    raw = sqlite3.connect(store)
    for statement in statements:
        raw.execute(statement)
    raw.commit()
    raw.close()
    with pytest.raises(IntegrityError) as refused:
        open_store(str(store))
    return refused.value.check, refused.value.detail


def test_a_trigger_added_without_the_key_is_refused_before_it_can_run(tmp_path):
    """The schema is the store's too. A trigger added with plain sqlite3 (no key, no data
    touched) passed every check: the next step the software made ran it, and the seal the
    software then wrote covered what it wrote. Before this check the store below opened
    twice with seat 3 credited $10,000. Now any trigger but the digests' own, and any view
    or index the software does not make, holds the table."""
    store = tmp_path / "table.sqlite"
    init_store(str(store), operator="test", table_id="T1").close()
    assert _refusal_at_open(store, (
        "CREATE TRIGGER pay_me AFTER INSERT ON events BEGIN INSERT OR REPLACE INTO"
        " seat_totals(seat, net_cents, wagered_cents) VALUES (3, 1000000, 0); END")) == (
        "schema", "trigger 'pay_me' on 'events' is not one of the store's own: a trigger "
        "added outside the software runs in the table's own steps, and what it writes would "
        "be sealed with them")
    assert sqlite3.connect(store).execute("SELECT COUNT(*) FROM seat_totals").fetchone() == (0,)
    assert _refusal_at_open(store, "DROP TRIGGER pay_me",
                            "CREATE VIEW winners AS SELECT * FROM rounds",
                            "CREATE INDEX by_kind ON events(kind)") == (
        "schema", "index 'by_kind' on 'events' (and 1 more) is not one of the store's own: "
        "the software makes no views and no indexes of its own: the schema was edited "
        "outside it")
    raw = sqlite3.connect(store)
    raw.execute("DROP VIEW winners")
    raw.execute("DROP INDEX by_kind")
    raw.commit()
    raw.close()
    open_store(str(store)).close()  # the schema as the software made it opens again


def test_a_table_defined_otherwise_than_the_software_creates_it_is_refused(tmp_path):
    """A table's CREATE text is compared with the one controller/memory/tables.py gives
    (comments and spacing aside). A bit flipped in the schema made meta's `value TEXT`
    `value TUXT` (another type affinity; found by the random-flip campaign, seed 2) and the
    store opened; a constraint removed with writable_schema changes no row either."""
    store = tmp_path / "table.sqlite"
    init_store(str(store), operator="test", table_id="T1").close()
    changed = ("table meta", "its definition differs from the one this software creates (a "
               "column's type or a constraint changed)")
    assert _refusal_at_open(store, "PRAGMA writable_schema = ON", (
        "UPDATE sqlite_master SET sql = replace(sql, 'value TEXT', 'value TUXT')"
        " WHERE name = 'meta'")) == changed
    assert _refusal_at_open(store, "PRAGMA writable_schema = ON", (
        "UPDATE sqlite_master SET sql = replace(sql, 'value TUXT', 'value TEXT')"
        " WHERE name = 'meta'"), (
        "UPDATE sqlite_master SET sql = replace(sql, ' CHECK (id = 1)', '')"
        " WHERE name = 'table_state'")) == ("table table_state", changed[1])
    raw = sqlite3.connect(store)
    raw.execute("PRAGMA writable_schema = ON")
    # The text as created, with its comments and spacing changed: the same definition.
    raw.execute("UPDATE sqlite_master SET sql = 'CREATE TABLE table_state (id INTEGER PRIMARY"
                " KEY CHECK (id = 1), -- one row\n state TEXT NOT NULL, data TEXT NOT NULL)'"
                " WHERE name = 'table_state'")
    raw.commit()
    raw.close()
    open_store(str(store)).close()


def test_a_definition_damaged_under_its_constraint_gets_the_boots_words_offline(tmp_path,
                                                                                 capsys):
    """SQLite reads a schema more leniently on a read-only connection: a column renamed
    under a CHECK constraint that still names it fails at boot (read-write) and passed the
    offline check's read-only one, which then named something else (the corruption
    campaign, seed 7: 3 of 1,000 flipped copies). Offline, the copy is opened as boot opens
    the store, and the technician reads the same reason in both."""
    from controller.cli import exitcodes
    from controller.cli import main as tablectl_main

    store = tmp_path / "table.sqlite"
    init_store(str(store), operator="test", table_id="T1").close()
    boot = _refusal_at_open(store, "PRAGMA writable_schema = ON", (
        "UPDATE sqlite_master SET sql = replace(sql, 'id    INTEGER', 'ix    INTEGER')"
        " WHERE name = 'table_state'"))
    assert boot == ("store unusable", f"{store}: malformed database schema (table_state) - no "
                    "such column: id (damaged pages)")
    assert tablectl_main(["events", "verify", "--json", "--store", str(store)]) == (
        exitcodes.INTEGRITY_FAILURE)
    assert json.loads(capsys.readouterr().out)["error"] == ": ".join(boot)


def _damage_an_index_page(path: str) -> int:
    """The progressive wagers' index page made no b-tree page (its type byte), after a
    checkpoint put it in the file; returns its page number. Every record still reads."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size, = db.execute("PRAGMA page_size").fetchone()
    root, = db.execute("SELECT rootpage FROM sqlite_master WHERE name ="
                       " 'sqlite_autoindex_progressive_wagers_1'").fetchone()
    db.close()
    with open(path, "r+b") as file:
        file.seek((root - 1) * page_size)
        file.write(b"\x00")
    return int(root)


def test_the_full_check_finds_damage_on_pages_no_record_is_read_from(tmp_path):
    """An index's page damaged on the disk: every record still reads, so the check at start
    passes, but a query through that index would fail mid-shift. The full (daily) check
    also runs SQLite's own check of every page and names it (before: it passed)."""
    from controller.memory.check import verify_file
    from controller.progressive.ledger import MeterLedger

    store = _initialised(tmp_path)
    MeterLedger(store).record_wagers(1, "h9", [(seat, 500, True, None) for seat in range(1, 8)])
    store.close()
    root = _damage_an_index_page(store.path)
    paths = CriticalPaths.for_store(Path(store.path))
    key = load_key_for(store.path)
    assert verify_file(store.path, key, paths, full=False).log_seq > 0  # the start's: passes
    with pytest.raises(IntegrityError) as found:
        verify_file(store.path, key, paths, full=True)
    assert found.value.check == "store unusable"
    assert found.value.detail.startswith(
        "SQLite's own check of the file found damaged pages no record is read from: "
        f"*** in database main ***\nPage {root}: ")


def test_the_page_check_runs_beside_the_chain_and_is_named_after_it(tmp_path, monkeypatch):
    """Issue 31: SQLite's page check (a full check's) runs while the chain's workers check the
    log, not after them, where it ran alone on one of two cores (a tenth of the full check);
    what it finds is still named after what the chain finds. Before the change the order
    of the calls was chain, then pages."""
    import controller.memory.check as check
    from controller.progressive.ledger import MeterLedger

    store = _initialised(tmp_path)
    MeterLedger(store).record_wagers(1, "h9", [(seat, 500, True, None) for seat in range(1, 8)])
    store.close()
    calls: list[str] = []
    page_check, chain_run = check._sqlite_check, check.ChainRun

    class RecordedRun(chain_run):  # type: ignore[misc, valid-type]
        def result(self, progress=None):
            calls.append("chain's result awaited")
            return super().result(progress)

    def recorded_pages(db):
        calls.append("pages checked")
        return page_check(db)

    monkeypatch.setattr(check, "ChainRun", RecordedRun)
    monkeypatch.setattr(check, "_sqlite_check", recorded_pages)
    paths = CriticalPaths.for_store(Path(store.path))
    key = load_key_for(store.path)
    assert check.verify_file(store.path, key, paths, full=True).log_seq > 0
    assert calls == ["pages checked", "chain's result awaited"]

    # A log entry edited without the key and a damaged page: the chain's finding is named,
    # as it was when the pages were checked last.
    db = sqlite3.connect(store.path)
    db.execute("UPDATE events SET payload = '{}' WHERE seq = 2")
    db.commit()
    db.close()
    _damage_an_index_page(store.path)
    calls.clear()
    with pytest.raises(IntegrityError) as found:
        check.verify_file(store.path, key, paths, full=True)
    assert calls == ["pages checked", "chain's result awaited"]
    assert (found.value.check, found.value.detail.split(" was altered")[0]) == (
        "event chain", "entry 2 (critical_memory_verified)")
