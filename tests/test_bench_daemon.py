"""The whole history's check's floor in bench/bench_daemon.py (`rows_read_and_maced`): the
ratio it prints is only honest if the floor reads every entry exactly once, whatever the
split into worker processes, and MACs as many SHA-256 blocks as the check does."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bench.bench_daemon import build_large_store, rows_read_and_maced, rows_read_and_maced_s
from controller.memory.chain import _ROWS
from controller.memory.lifecycle import load_key_for
from controller.memory.macs import entry_material

ENTRIES = 1_001  # not a multiple of three: the three workers' ranges differ by one entry


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("large")
    build_large_store(folder, ENTRIES)
    return str(folder / "table.sqlite")


def test_the_floor_reads_each_entry_once_however_the_log_is_split(store: str) -> None:
    key = load_key_for(store)
    assert rows_read_and_maced(store, key, 1, ENTRIES) == ENTRIES
    assert rows_read_and_maced(store, key, 334, 667) == 334
    # Three fresh processes, as the check's chain workers: 1-333, 334-667, 668-1,001.
    assert rows_read_and_maced_s(store, key, ENTRIES, 3) > 0


def test_a_floor_that_read_another_count_is_refused(store: str) -> None:
    with pytest.raises(SystemExit, match="the reference read 1,001 entries, not 1,002"):
        rows_read_and_maced_s(store, load_key_for(store), ENTRIES + 1, 2)


def test_the_floor_macs_as_many_sha256_blocks_as_the_entries_materials(store: str) -> None:
    db = sqlite3.connect(f"{Path(store).as_uri()}?mode=ro", uri=True)
    try:
        rows = db.execute(_ROWS, (11, ENTRIES)).fetchall()
    finally:
        db.close()

    def blocks(length: int) -> int:  # SHA-256 blocks of a message: its bits, 1, 64 bits
        return (length + 9 + 63) // 64

    material = [blocks(len(entry_material(prev, seq, at, kind, severity, device, round_id,
                                          payload).encode())) for
                seq, at, kind, severity, device, round_id, payload, prev, _ in rows]
    floor = [blocks(len((mac + prev + payload).encode())) for *_, payload, prev, mac in rows]
    assert len(rows) == ENTRIES - 10
    assert sum(floor) == sum(material)
