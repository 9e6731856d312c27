"""The chain's check split over processes (critical.verify_chain with `workers`) finds what
a single pass finds, in the same words: each entry's MAC covers the previous MAC as stored
beside it, so ranges check alone and their joins are checked by the range after them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from controller.memory import chain as chain_check
from controller.memory import critical
from controller.memory.critical import IntegrityError
from controller.memory.store import GENESIS_MAC, Store

ENTRIES = 2_400


@pytest.fixture(scope="module")
def log_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("chain") / "log.sqlite"
    store = Store(path)
    with store.transaction():
        for n in range(ENTRIES):
            store.append_entry("card", {"index": n, "card": "9H"})
    store.close()
    return path


def check(path: Path, workers: int) -> int | str:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return critical.verify_chain(db, critical.DEVELOPMENT_KEY, 1, GENESIS_MAC,
                                     workers=workers)
    except IntegrityError as exc:
        return f"{exc.check}: {exc.detail}"
    finally:
        db.close()


def edited(log_file: Path, tmp_path: Path, sql: str) -> Path:
    copy = tmp_path / "edited.sqlite"
    copy.write_bytes(log_file.read_bytes())
    db = sqlite3.connect(copy)
    db.execute(sql)
    db.commit()
    db.close()
    return copy


@pytest.fixture(autouse=True)
def small_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chain_check, "PARALLEL_CHAIN_ENTRIES", 1_000)  # 2,400 entries split


def test_a_sound_log_counts_the_same_in_one_process_and_in_three(log_file: Path) -> None:
    assert check(log_file, 1) == check(log_file, 3) == ENTRIES


@pytest.mark.parametrize("seq", [1, 799, 800, 801, 1601, 2400])  # range starts, ends, joins
def test_an_edited_entry_is_named_alike_wherever_it_falls(log_file: Path, tmp_path: Path,
                                                          seq: int) -> None:
    copy = edited(log_file, tmp_path, f"UPDATE events SET payload = '{{}}' WHERE seq = {seq}")
    single, parallel = check(copy, 1), check(copy, 3)
    assert single == parallel
    assert isinstance(single, str) and single.startswith(f"event chain: entry {seq} (")


def test_a_missing_entry_at_a_join_is_named(log_file: Path, tmp_path: Path) -> None:
    copy = edited(log_file, tmp_path, "DELETE FROM events WHERE seq = 800")  # range 1's last
    assert check(copy, 1) == check(copy, 3) == ("event chain: entry 800 is missing (next "
                                                "present entry is 801)")


def test_a_relinked_entry_at_a_join_is_found(log_file: Path, tmp_path: Path) -> None:
    """Range 2's first entry names a previous MAC that is not range 1's last."""
    copy = edited(log_file, tmp_path, "UPDATE events SET prev_hash = '00' WHERE seq = 801")
    assert check(copy, 1) == check(copy, 3) == ("event chain: entry 801 does not link to "
                                                "entry 800 (prev_hash differs)")


def test_the_check_writes_out_entry_macs_material_for_every_kind_of_text(tmp_path: Path
                                                                          ) -> None:
    """chain.py writes an entry's MAC material out itself (its loop runs a million times at
    every start): it must accept exactly the entries entry_mac made, for every kind of text
    a field can hold (the alphabet of test_critical_memory's material test: quotes,
    backslashes, control characters, non-ASCII, U+2028), and name the one whose field
    differs by a character, in one process and in several."""
    import random

    from controller.memory.macs import entry_mac
    from controller.memory.tables import STORE_TABLES_SQL

    rng = random.Random(31)
    alphabet = ['"', "\\", "/", "\n", "\t", "\x00", "\x1f", "\x7f", "é", "♥", "\u2028",
                "\ud7ff", "😀", "a", "Z", " ", "{", "]"]
    path = tmp_path / "texts.sqlite"
    db = sqlite3.connect(path)
    db.executescript(STORE_TABLES_SQL)
    prev, rows = GENESIS_MAC, []
    for seq in range(1, 1_201):
        text = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))
                for _ in range(4)]
        at = rng.choice([0.0, -1.5e-300, float("inf"), rng.uniform(-1e12, 1e12),
                         1_790_000_000 + rng.random()])
        device, round_id = rng.choice([None, text[2]]), rng.choice([None, 0, -7, 2**33])
        mac = entry_mac(critical.DEVELOPMENT_KEY, prev, seq, at, text[0], text[1], device,
                        round_id, text[3])
        rows.append((seq, at, text[0], text[1], device, round_id, text[3], prev, mac))
        prev = mac
    db.executemany("INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)", rows)
    db.commit()
    db.close()
    assert check(path, 1) == check(path, 3) == 1_200
    for column in ("kind", "severity", "payload"):
        db = sqlite3.connect(path)
        db.execute(f"UPDATE events SET {column} = {column} || ' ' WHERE seq = 1000")
        db.commit()
        db.close()
        assert check(path, 1) == check(path, 3) == (f"event chain: entry 1000 ({rows[999][2]}"
                                                    f"{' ' if column == 'kind' else ''}) was "
                                                    "altered: its MAC does not match its "
                                                    "contents")
        db = sqlite3.connect(path)
        db.execute(f"UPDATE events SET {column} = substr({column}, 1, length({column}) - 1)"
                   " WHERE seq = 1000")
        db.commit()
        db.close()
    assert check(path, 1) == check(path, 3) == 1_200


ALTERED_900 = "event chain: entry 900 (card) was altered: its MAC does not match its contents"
RETYPED_900 = ("event chain: entry 900 (card) was altered: a field holds a value of another "
               "type than the entry was written with")


@pytest.mark.parametrize("column, value, found", [
    ("round_id", "'12,\"{\\'", RETYPED_900), ("round_id", 2.5, RETYPED_900),
    ("at", "'soon'", RETYPED_900), ("hash", "x'00'", ALTERED_900)])
def test_a_field_of_the_wrong_type_is_never_taken_for_a_sound_entry(
        log_file: Path, tmp_path: Path, column: str, value: object, found: str) -> None:
    """A stored value of another type than its field's fails the check, in one process and
    in several (a text in round_id must not be written out as it stands: it could shift the
    material's commas and pass for the round and part of the payload), and is named as the
    entry's alteration: it once stopped the check on Python's own TypeError."""
    copy = edited(log_file, tmp_path, f"UPDATE events SET {column} = {value} WHERE seq = 900")
    for workers in (1, 3):
        assert check(copy, workers) == found
