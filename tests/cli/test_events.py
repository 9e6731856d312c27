"""tablectl events (filters, --follow, --export) and events verify (daemon and --store)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from controller.cli import exitcodes, main
from controller.cli.event_commands import parse_since
from controller.memory.lifecycle import init_store, open_store
from controller.memory.store import SCHEMA_VERSION


def _fill(fake) -> None:
    fake.append("daemon_started", {"version": "0.1.0", "state": "closed"})
    fake.append("device_fault", {"code": "lid_open", "detail": "shoe lid open",
                                 "action": "close the lid"}, severity="error", device="shoe")
    fake.append("card", {"index": 0, "card": "9H", "hand": "player"}, device="shoe",
                round_id=4)
    fake.append("device_recovered", {"code": "lid_open"}, device="shoe")


def test_events_lists_the_log_one_line_each(fake, capsys):
    _fill(fake)
    assert main(["events", "--socket", fake.socket]) == exitcodes.OK
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == 4
    assert lines[1] == ("     2  2025-11-21T21:00:02.000Z  error     shoe      device_fault  "
                        "action=close the lid code=lid_open detail=shoe lid open")
    assert lines[2].endswith("card [round 4]  card=9H hand=player index=0")
    assert "4 event(s)" in captured.err


def test_events_filters_go_to_the_daemon(fake, capsys):
    _fill(fake)
    rc = main(["events", "--device", "shoe", "--severity", "error", "--kind", "device_fault",
               "--since", "2025-11-21T21:00:01Z", "--limit", "5", "--socket", fake.socket])
    assert rc == exitcodes.OK
    assert capsys.readouterr().out.count("\n") == 1
    name, args = fake.calls[-1]
    assert name == "events"
    assert args == {"limit": 5, "kind": "device_fault", "device": "shoe", "severity": "error",
                    "since": 1763758801.0}


def test_events_json_and_export_keep_the_hashes(fake, capsys, tmp_path):
    _fill(fake)
    export = tmp_path / "events.jsonl"
    rc = main(["events", "--json", "--export", str(export), "--socket", fake.socket])
    assert rc == exitcodes.OK
    listed = json.loads(capsys.readouterr().out)
    exported = [json.loads(line) for line in export.read_text().splitlines()]
    assert listed == exported
    assert [e["seq"] for e in exported] == [1, 2, 3, 4]
    assert all(len(e["hash"]) == 64 for e in exported)


def test_events_follow_prints_new_matching_entries(fake, capsys):
    _fill(fake)
    fake.on_next_subscribe(
        ("prompt", {"action": "deal"}, {}),
        ("card", {"index": 1, "card": "KS", "hand": "banker"}, {"device": "shoe"}))
    fake.on_next_subscribe_do(lambda: fake.loop.create_task(fake.server.close()))
    rc = main(["events", "--follow", "--kind", "card", "--socket", fake.socket])
    captured = capsys.readouterr()
    # The stream ends only because the fake daemon shut down.
    assert rc == exitcodes.DAEMON_NOT_RUNNING
    assert "the daemon closed the event stream" in captured.err
    lines = captured.out.splitlines()
    assert [line.split()[4] for line in lines] == ["card", "card"]
    assert "card=KS" in lines[1]


@pytest.mark.parametrize("text", ["yesterday", "2025-13-01", "10 parsecs"])
def test_bad_since_is_a_bad_argument(fake, capsys, text):
    assert main(["events", "--since", text, "--socket", fake.socket]) == exitcodes.BAD_ARGUMENTS
    assert "use e.g. 2026-11-21T20:00:00Z or 30m / 2h / 1d" in capsys.readouterr().err


@pytest.mark.parametrize(("text", "said"), [
    ("9" * 5000 + "d", "--since '999999999999999999999999999...999999999999999999999999999d': "
     "before 1970-01-01, older than any log"),
    ("36500d", "--since '36500d': before 1970-01-01, older than any log"),
    ("1969-12-31T23:59:59Z", "--since '1969-12-31T23:59:59Z': before 1970-01-01"),
    ("9" * 5000, "--since '999999999999999999999999999...9999999999999999999999999999': not a "
     "time")])
def test_a_since_too_far_back_or_too_long_is_refused_by_its_start_and_end(fake, capsys, text,
                                                                          said):
    """A time before 1970 went to the daemon, which refused it in its own words ('since' =
    -inf for 10**5000 days: an infinite float); a 5,000-digit --since was quoted whole."""
    assert main(["events", "--since", text, "--socket", fake.socket]) == exitcodes.BAD_ARGUMENTS
    err = " ".join(capsys.readouterr().err.split())
    assert said in err, err
    assert len(err) < 500


def test_since_forms():
    assert parse_since("2025-11-21T21:00:00Z") == 1763758800.0
    assert parse_since("2025-11-21T21:00:00") == 1763758800.0  # the log's UTC
    assert parse_since("2025-11-21T22:00:00+01:00") == 1763758800.0
    assert parse_since("90m", now=10_000.0) == 10_000.0 - 5400
    assert parse_since("1d", now=86_400.0) == 0.0  # the furthest back: 1970-01-01


def test_verify_through_the_daemon(fake, capsys):
    _fill(fake)
    assert main(["events", "verify", "--socket", fake.socket]) == exitcodes.OK
    assert "critical memory OK: 4 log entries verified by the daemon" in \
        capsys.readouterr().out


def test_verify_through_the_daemon_broken_chain(fake, capsys):
    _fill(fake)
    fake.call_in_loop(lambda: fake.store._db.execute(
        "UPDATE events SET payload = '{\"card\":\"9S\"}' WHERE seq = 3"))
    assert main(["events", "verify", "--socket", fake.socket]) == exitcodes.INTEGRITY_FAILURE
    out = capsys.readouterr().out
    assert "CRITICAL MEMORY CHECK FAILED (daemon on" in out
    assert "  event chain: entry 3 (card) was altered: its MAC does not match its contents" \
        in out


@pytest.fixture
def store_file(tmp_path):
    """An initialised table's store (entry 1 records the initialisation) with six cards."""
    path = tmp_path / "table.sqlite"
    init_store(str(path), operator="test", table_id="T1").close()
    store = open_store(str(path))  # entry 2: the boot check passed
    for n in range(6):
        store.append_entry("card", {"index": n, "card": "9H"}, device="shoe")
    store.close()
    return path


def test_offline_verify_of_an_intact_store(store_file, capsys):
    before = store_file.read_bytes()
    assert main(["events", "verify", "--store", str(store_file)]) == exitcodes.OK
    assert f"critical memory OK: 8 log entries verified in {store_file}; 2 sealed rows match" \
        in capsys.readouterr().out
    assert store_file.read_bytes() == before  # the evidence is never written to


def test_offline_verify_of_a_killed_tables_store_names_its_unsealed_cards(store_file,
                                                                          tmp_path, capsys):
    """A kill leaves a round's last card steps unsealed (ruling C29): the check passes
    and says how many entries wait for the seal the next money step would have written."""
    store = open_store(str(store_file))  # entry 9: this boot's check
    for n in range(6, 9):
        store.append_entry("card", {"index": n, "card": "9H"}, device="shoe")
    killed = tmp_path / "killed.sqlite"
    for suffix in ("", "-wal"):  # the files as a kill leaves them, nothing closed
        Path(f"{killed}{suffix}").write_bytes(Path(f"{store_file}{suffix}").read_bytes())
    shutil.copytree(store_file.with_suffix(".critical"), killed.with_suffix(".critical"))
    store.close()
    assert main(["events", "verify", "--store", str(killed)]) == exitcodes.OK
    assert (f"critical memory OK: 12 log entries verified in {killed}; 2 sealed rows match; "
            "the last 3 (cards and prompts waiting for the next flush) are not sealed yet, as "
            "ruling C29 allows") in capsys.readouterr().out
    assert main(["events", "verify", "--json", "--store", str(killed)]) == exitcodes.OK
    assert json.loads(capsys.readouterr().out)["unsealed"] == 3


def test_offline_verify_finds_an_edited_entry(store_file, capsys):
    db = sqlite3.connect(store_file)
    db.execute("UPDATE events SET payload = ? WHERE seq = 4",
               (json.dumps({"card": "KS", "index": 1}),))
    db.commit()
    db.close()
    rc = main(["events", "verify", "--store", str(store_file)])
    assert rc == exitcodes.INTEGRITY_FAILURE
    out = capsys.readouterr().out
    assert f"CRITICAL MEMORY CHECK FAILED ({store_file})" in out
    assert "  event chain: entry 4 (card) was altered: its MAC does not match its contents" \
        in out


def test_offline_verify_finds_a_deleted_entry_json(store_file, capsys):
    db = sqlite3.connect(store_file)
    db.execute("DELETE FROM events WHERE seq = 2")
    db.commit()
    db.close()
    rc = main(["events", "verify", "--json", "--store", str(store_file)])
    assert rc == exitcodes.INTEGRITY_FAILURE
    assert json.loads(capsys.readouterr().out) == {
        "ok": False, "source": str(store_file),
        "error": "event chain: entry 2 is missing (next present entry is 3); 1 of 8 entries "
                 "are gone"}


def test_offline_verify_of_a_file_that_is_not_a_store(tmp_path, capsys):
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"garbage" * 200)
    assert main(["events", "verify", "--store", str(junk)]) == exitcodes.BAD_ARGUMENTS
    captured = capsys.readouterr()
    assert captured.out == ""  # no "CHECK FAILED ... Do not play" for a wrong path
    assert f"{junk} is not a table store: it is not an SQLite database" in captured.err
    # A key folder named longer than the file system allows is no key (pathlib raised).
    assert main(["events", "verify", "--store", str(junk), "--critical-dir",
                 str(tmp_path / ("k" * 300))]) == exitcodes.BAD_ARGUMENTS
    assert f"{junk} is not a table store" in capsys.readouterr().err
    missing = tmp_path / "none.sqlite"
    assert main(["events", "verify", "--store", str(missing)]) == exitcodes.BAD_ARGUMENTS
    assert f"no store file at {missing}" in capsys.readouterr().err
    # Paths that name no file at all: a folder's '.', a name longer than the file system
    # allows (each raised out of pathlib: a ValueError and an OSError traceback).
    for nowhere in (".", "/", str(tmp_path / ("n" * 300))):
        assert main(["events", "verify", "--store", nowhere]) == exitcodes.BAD_ARGUMENTS
        assert capsys.readouterr().err == f"tablectl: no store file at {Path(nowhere)}\n"


def test_offline_verify_of_the_tables_own_store_damaged(store_file, capsys):
    """Beside its key the file is this table's store: damage is an integrity failure, in the
    words the daemon uses, not a wrong path."""
    store_file.write_bytes(b"garbage" * 200)
    assert main(["events", "verify", "--store", str(store_file)]) == exitcodes.INTEGRITY_FAILURE
    out = " ".join(capsys.readouterr().out.split())  # wrapped to the terminal
    assert f"store unusable: {store_file} is not a SQLite store: its header is damaged" in out
    store_file.unlink()
    assert main(["events", "verify", "--store", str(store_file)]) == exitcodes.INTEGRITY_FAILURE
    assert (f"store missing: no store at {store_file}, but this table was initialised and its "
            "anchor records commit" in " ".join(capsys.readouterr().out.split()))


def test_offline_verify_in_a_subprocess_with_the_daemon_down(store_file):
    import os
    import subprocess
    import sys

    db = sqlite3.connect(store_file)
    db.execute("UPDATE events SET hash = ? WHERE seq = 5", ("f" * 64,))
    db.commit()
    db.close()
    done = subprocess.run([sys.executable, "-m", "controller.cli", "events", "verify",
                           "--store", str(store_file)], capture_output=True, text=True,
                          timeout=30, env={**os.environ, "NO_COLOR": "1"},
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == exitcodes.INTEGRITY_FAILURE
    assert "entry 5 (card) was altered" in done.stdout


def test_offline_verify_of_a_store_a_newer_release_wrote_says_what_it_did_not_compare(
        store_file, tmp_path, capsys):
    """A tablectl older than the store checks the log and the sealed rows, but cannot compare
    the tables' definitions or the objects the store holds (rulings C28): a trigger added to
    such a store would pass unseen. It said "critical memory OK" and exited 0; it now says
    what it did not check and exits UNSUPPORTED, in its text, its JSON and the support
    bundle. (The daemon refuses such a store at boot: tests/controller/test_store_schema.)"""
    store = open_store(str(store_file))
    store.put_meta("schema_version", str(SCHEMA_VERSION + 1))  # as that release writes it
    store.close()
    raw = sqlite3.connect(store_file)  # and what the check would refuse in a store of its own
    raw.execute("CREATE TRIGGER credit AFTER INSERT ON events BEGIN SELECT 1; END")
    raw.commit()
    raw.close()
    assert main(["events", "verify", "--store", str(store_file)]) == exitcodes.UNSUPPORTED
    out = " ".join(capsys.readouterr().out.split())
    assert out == (
        f"critical memory OK: 9 log entries verified in {store_file}; 2 sealed rows match "
        f"NOT CHECKED: the store was written by a newer release (store schema "
        f"{SCHEMA_VERSION + 1}; this tablectl knows schema {SCHEMA_VERSION} and older), so "
        "its tables' definitions and any trigger, view or index added to it were not "
        "compared. The log and the sealed rows above were. Check it again with the tablectl "
        "of the release that wrote it.")
    assert main(["events", "verify", "--json", "--store", str(store_file)]) == \
        exitcodes.UNSUPPORTED
    found = json.loads(capsys.readouterr().out)
    assert (found["ok"], found["entries"], found["newer_schema"], found["known_schema"]) == (
        True, 9, SCHEMA_VERSION + 1, SCHEMA_VERSION)
    bundle = tmp_path / "bundle.txt"
    assert main(["support-bundle", "--socket", str(tmp_path / "x.sock"), "--config",
                 str(tmp_path / "none.toml"), "--log", str(tmp_path / "none.log"),
                 "--store", str(store_file), "-o", str(bundle)]) == exitcodes.OK
    text = bundle.read_text(encoding="utf-8")
    assert (f"critical memory OK: 9 log entries verified in {store_file} (every entry)\n"
            f"NOT CHECKED: the store was written by a newer release (store schema "
            f"{SCHEMA_VERSION + 1};") in text


def test_offline_verify_of_a_store_of_this_release_refuses_an_added_trigger(store_file,
                                                                              capsys):
    """The same trigger in a store of this release's schema: refused by name (C28)."""
    raw = sqlite3.connect(store_file)
    raw.execute("CREATE TRIGGER credit AFTER INSERT ON events BEGIN SELECT 1; END")
    raw.commit()
    raw.close()
    assert main(["events", "verify", "--store", str(store_file)]) == \
        exitcodes.INTEGRITY_FAILURE
    assert "schema: trigger 'credit' on 'events' is not one of the store's own" in \
        " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize(("column", "value"), [("payload", "not json"), ("payload", "[1]"),
                                               ("at", 1e300), ("payload", "[" * 100_000)])
def test_the_support_bundle_lists_an_entry_it_cannot_read_and_checks_the_store(
        store_file, tmp_path, column, value):
    """The bundle is taken from the table that most needs one: an entry damaged or edited so
    that its fields cannot be read (a payload not JSON or not an object, a time no clock
    has) stopped the whole bundle on a traceback. It is listed as unreadable, the entries
    around it as they are, and the offline check names the damage."""
    db = sqlite3.connect(store_file)
    db.execute(f"UPDATE events SET {column} = ? WHERE seq = 5", (value,))
    db.commit()
    db.close()
    bundle = tmp_path / "bundle.txt"
    assert main(["support-bundle", "--socket", str(tmp_path / "x.sock"), "--config",
                 str(tmp_path / "none.toml"), "--log", str(tmp_path / "none.log"),
                 "--store", str(store_file), "-o", str(bundle)]) == exitcodes.OK
    text = " ".join(bundle.read_text(encoding="utf-8").split())
    assert "5 - error - 'card' unreadable=this entry's fields cannot be read (damaged or " \
           "edited): see the check below" in text
    assert "6 " in text and "card=9H" in text  # the entries around it
    assert f"CRITICAL MEMORY CHECK FAILED ({store_file}): event chain: entry 5 (card) was " \
           "altered: its MAC does not match its contents" in text
