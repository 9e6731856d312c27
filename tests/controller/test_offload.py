"""Where the daemon's checks of the store run (controller/offload.py): a short log in a
worker thread, a long one in a child process, with the same answer and the same failure."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest

from controller import offload
from controller.memory.critical import IntegrityError
from controller.memory.lifecycle import init_store, open_store
from controller.memory.store import Store
from controller.offload import StoreWork
from tests.controller.test_daemon import config_for


def _store_of(tmp_path: Path, entries: int) -> Store:
    """An initialised table's store (its two entries: initialised, and verified when
    opened) with `entries` seat entries after them."""
    config = config_for(tmp_path)
    init_store(config.store_path, operator="test", table_id="T1").close()
    store = open_store(config.store_path)
    for seat in range(entries):
        store.append_entry("seat_leaves", {"seat": seat % 14 + 1})
    # The anchor is written by a thread of its own: once its first write is out it holds
    # still for the interval (a minute), so checks made one after the other here read the
    # same anchor and say the same `anchor_behind`. Before it, one check could see no
    # anchor write yet and the next see it (a loaded machine did: 0 against 30).
    writer = store.durability.anchor_writer
    deadline = time.monotonic() + 10
    while writer is not None and writer.writes < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert writer is not None and writer.writes >= 1
    return store


class ChildStarts:
    """Counts the child processes StoreWork starts (each a fresh interpreter)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.made = 0
        real = offload.FreshProcess

        def counted(*args: object, **kwargs: object) -> object:
            self.made += 1
            return real(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(offload, "FreshProcess", counted)


def _verify(store: Store, *, full: bool = True) -> object:
    work = StoreWork(store)
    return asyncio.run(work.verify_file(store.path, store.key, store.paths, full=full))


def test_a_short_log_is_checked_in_a_thread_without_starting_a_child(tmp_path, monkeypatch):
    store = _store_of(tmp_path, 30)
    children = ChildStarts(monkeypatch)
    assert store.log_seq == 32
    verified = _verify(store)
    store.close()
    assert children.made == 0
    assert (verified.from_seq, verified.log_seq, verified.entries) == (1, 32, 32)


def test_a_long_log_is_checked_in_a_child_with_the_same_answer(tmp_path, monkeypatch):
    store = _store_of(tmp_path, 30)
    in_thread = _verify(store)
    monkeypatch.setattr(offload, "IN_THREAD_ENTRIES", 31)  # 32 entries: one too many
    children = ChildStarts(monkeypatch)
    in_child = _verify(store)
    store.close()
    assert children.made == 1
    assert in_child == in_thread


@pytest.mark.parametrize("in_thread_entries", [offload.IN_THREAD_ENTRIES, 0],
                         ids=["thread", "child"])
def test_an_altered_entry_fails_the_same_way_in_a_thread_and_in_a_child(
        tmp_path, monkeypatch, in_thread_entries):
    store = _store_of(tmp_path, 30)
    monkeypatch.setattr(offload, "IN_THREAD_ENTRIES", in_thread_entries)
    db = sqlite3.connect(store.path)
    db.execute("UPDATE events SET payload = '{\"seat\": 9}' WHERE seq = 12")
    db.commit()
    db.close()
    with pytest.raises(IntegrityError) as failed:
        _verify(store)
    store.close()
    assert failed.value.check == "event chain"
    assert failed.value.detail.startswith("entry 12 ")
