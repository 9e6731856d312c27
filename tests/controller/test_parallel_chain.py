"""The chain's check split over processes (critical.verify_chain with `workers`) finds what
a single pass finds, in the same words: each entry's MAC covers the previous MAC as stored
beside it, so ranges check alone and their joins are checked by the range after them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from controller.memory import check as chain_check
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
