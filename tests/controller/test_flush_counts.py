"""What a round costs the disk (issue 31), counted by the store itself, and the anchor
written in two slots in place (controller/memory/anchor.py): one flush a write, a torn slot
read past, the earlier format still read and turned into slots, and a file in slots still
read by the releases before them (a rollback)."""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from controller.memory import anchor as anchor_module
from controller.memory.anchor import (
    ANCHOR_INTERVAL_S,
    ANCHOR_SLOT_BYTES,
    Anchor,
    AnchorFile,
    anchor_mac,
    read_anchor,
    write_anchor,
)
from controller.memory.critical import IntegrityError
from controller.memory.durability import CHECKPOINT_AFTER_COMMITS
from controller.memory.flush_in import FLUSH_IN, FLUSH_IN_THREAD
from controller.memory.lifecycle import init_store, open_store
from controller.memory.macs import canonical
from controller.memory.store import Store

KEY = b"k" * 32
WAGER = {"seat": 3, "wager": "banker", "amount_cents": 500}


def _anchor(commit_no: int) -> Anchor:
    return Anchor("key-1", commit_no, commit_no * 2, f"seal-{commit_no}")


class Syscalls:
    """The anchor module's fsync and fdatasync calls, counted, then made."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        for name in ("fsync", "fdatasync"):
            monkeypatch.setattr(anchor_module.os, name, self._counted(name, getattr(os, name)))

    def _counted(self, name: str, real: Callable[[int], None]) -> Callable[[int], None]:
        def call(fd: int) -> None:
            self.calls.append(name)
            real(fd)
        return call


def test_an_anchor_write_is_one_flush_of_the_older_slot_in_place(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "anchor"
    write_anchor(path, KEY, _anchor(1))  # as a table's initialisation makes it: both slots
    syscalls = Syscalls(monkeypatch)
    inode = path.stat().st_ino
    file = AnchorFile(path, KEY)
    for commit_no in (2, 3, 4):
        file.write(_anchor(commit_no))
        assert read_anchor(path, KEY) == _anchor(commit_no)
    assert syscalls.calls == ["fdatasync"] * 3  # no file flush and directory flush a write
    assert file.flushes == 3
    assert (path.stat().st_ino, path.stat().st_size) == (inode, 2 * ANCHOR_SLOT_BYTES)
    assert not (tmp_path / "anchor.tmp").exists()
    assert _slots(path) == [3, 4]  # 2 over the second copy of 1, 3 over the first, 4 over 2


def _slots(path: Path) -> list[int | None]:
    """The commit number in each slot of an anchor file (None: not this key's anchor)."""
    data = path.read_bytes()
    found = [anchor_module._genuine(data[i * ANCHOR_SLOT_BYTES:(i + 1) * ANCHOR_SLOT_BYTES],
                                    KEY) for i in (0, 1)]
    return [anchor.commit_no if anchor is not None else None for anchor in found]


def _tear(path: Path, slot: int) -> None:
    """A power cut in the middle of writing `slot`: half its block written."""
    with path.open("r+b") as fh:
        fh.seek(slot * ANCHOR_SLOT_BYTES + 20)
        fh.write(b"\0" * 100)


def test_a_torn_slot_is_read_past_and_written_over_next(tmp_path: Path) -> None:
    path = tmp_path / "anchor"
    write_anchor(path, KEY, _anchor(1))
    file = AnchorFile(path, KEY)
    file.write(_anchor(2))  # slot 1
    file.write(_anchor(3))  # slot 0
    _tear(path, 0)  # the write of 3 never finished
    assert _slots(path) == [None, 2]
    assert read_anchor(path, KEY) == _anchor(2)  # the anchor before it: the store is ahead
    reopened = AnchorFile(path, KEY)  # the daemon's next start
    reopened.write(_anchor(4))
    assert _slots(path) == [4, 2]  # over the torn slot, never over the newest genuine one
    reopened.write(_anchor(5))
    assert _slots(path) == [4, 5]
    assert read_anchor(path, KEY) == _anchor(5)


def test_an_anchor_file_with_no_genuine_slot_is_damaged(tmp_path: Path) -> None:
    path = tmp_path / "anchor"
    write_anchor(path, KEY, _anchor(1))
    _tear(path, 0)
    _tear(path, 1)
    with pytest.raises(IntegrityError, match="damaged or was not written with this"):
        read_anchor(path, KEY)
    write_anchor(path, b"another key".ljust(32, b"."), _anchor(1))
    with pytest.raises(IntegrityError, match="damaged or was not written with this"):
        read_anchor(path, KEY)


def test_an_anchor_of_the_earlier_format_is_read_and_its_first_write_makes_slots(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "anchor"
    old = _anchor(7)
    path.write_text(canonical({**old.body(), "mac": anchor_mac(KEY, old)}) + "\n")
    assert read_anchor(path, KEY) == old
    syscalls = Syscalls(monkeypatch)
    file = AnchorFile(path, KEY)
    file.write(_anchor(8))
    assert syscalls.calls == ["fsync", "fsync"]  # a new file: its data, then the directory
    assert _slots(path) == [8, 8]
    file.write(_anchor(9))
    assert syscalls.calls[2:] == ["fdatasync"]
    assert (_slots(path), file.flushes) == ([8, 9], 3)


def _read_as_releases_before_slots_did(path: Path) -> Anchor | None:
    """The anchor as a release before the slots reads it (its read_anchor): the whole file
    as one JSON object, its MAC checked; None where that release finds it damaged."""
    try:
        data = json.loads(path.read_text())
        anchor = Anchor(str(data["key_id"]), int(data["commit_no"]), int(data["log_seq"]),
                        str(data["seal_mac"]))
    except (ValueError, KeyError, TypeError):
        return None
    return anchor if hmac.compare_digest(str(data["mac"]), anchor_mac(KEY, anchor)) else None


def test_a_release_before_the_slots_reads_the_newest_anchor_or_the_one_before(
        tmp_path: Path) -> None:
    """After a rollback to such a release: the second slot's anchor, the newest or the one
    before it (the store at most one interval ahead, as after a power cut)."""
    path = tmp_path / "anchor"
    write_anchor(path, KEY, _anchor(1))
    assert _read_as_releases_before_slots_did(path) == _anchor(1)
    file = AnchorFile(path, KEY)
    seen = []
    for commit_no in (2, 3, 4, 5):
        file.write(_anchor(commit_no))
        seen.append((_slots(path), _read_as_releases_before_slots_did(path)))
    assert seen == [([1, 2], _anchor(2)), ([3, 2], _anchor(2)), ([3, 4], _anchor(4)),
                    ([5, 4], _anchor(4))]
    assert read_anchor(path, KEY) == _anchor(5)


# --- the store's flushes, by source ---------------------------------------------------------


def _step(store: Store, kind: str, payload: dict[str, Any] | None = None) -> None:
    with store.transaction():
        store.append_entry(kind, payload or {}, severity="info")


async def _durable(store: Store) -> None:
    done: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
    store.when_durable(lambda error: done.done() or done.set_result(error))
    assert await asyncio.wait_for(done, 30) is None


@pytest.mark.parametrize("flush_in", FLUSH_IN)
async def test_a_round_costs_three_flushes_of_its_steps_and_the_anchor_one_a_write(
        flush_in: str, tmp_path: Path) -> None:
    """A scripted round as the daemon records it, group commit on: five wagers sent together,
    the lock-out, five cards, the settlement with the round's last card. Three flushes of
    the WAL (the wagers' shared one, the lock's, the settlement's), no checkpoint, and every
    anchor write one flush."""
    store_path = str(tmp_path / "table.sqlite")
    init_store(store_path, operator="test", table_id="T1").close()
    store = open_store(store_path)
    try:
        store.group_commits(asyncio.get_running_loop(), flush_in=flush_in)
        before = store.durability.flushes()
        for seat in (1, 2, 4, 6, 8):  # one loop turn: what call_many's requests do
            _step(store, "wager_accepted", {**WAGER, "seat": seat})
        await _durable(store)
        _step(store, "no_more_bets", {"round_id": 1})
        await _durable(store)
        for index in range(4):
            _step(store, "card", {"index": index})  # grouped: no flush of its own
        with store.transaction():
            store.append_entry("card", {"index": 4}, severity="info")
            store.append_entry("round_settled", {"round_id": 1}, severity="info")
        await _durable(store)
        after = store.durability.flushes()
        assert after["steps"] - before["steps"] == 3
        assert after["checkpoints"] == before["checkpoints"] == 0
        writer = store.durability.anchor_writer
        assert writer is not None
    finally:
        store.close()
    # The anchor: each write one flush of the slot in place (the file was made with slots at
    # the initialisation), the last at close.
    assert store.durability.flushes()["anchor"] == writer.writes >= 1
    assert read_anchor(store.paths.anchor, store.key) is not None  # type: ignore[union-attr]


@pytest.mark.parametrize(("interval_s", "writes_while_open"), [(0.2, 4), (ANCHOR_INTERVAL_S, 1)])
def test_at_a_dealers_pace_the_anchor_writes_once_an_interval_not_once_a_group(
        tmp_path: Path, interval_s: float, writes_while_open: int) -> None:
    """docs/rulings.md C24, scaled down: a round's three durable groups (wagers, lock,
    settlement) each further apart than the interval (1 s against 0.2 s, as a minute's
    round against the second before C24) each cost an anchor write, after the one of the
    store's opening commit; the default minute writes that one and coalesces the rest, and
    the clean stop writes the last."""
    store_path = str(tmp_path / "table.sqlite")
    init_store(store_path, operator="test", table_id="T1").close()
    store = open_store(store_path, anchor_interval_s=interval_s)
    writer = store.durability.anchor_writer
    assert writer is not None
    # The opening commit's anchor is written by the writer's thread once it runs: the first
    # group waits for it, or a slow thread start coalesces the two (a loaded CI run did).
    _until(lambda: writer.writes >= 1)
    for kind in ("wager_accepted", "no_more_bets", "round_settled"):  # flushed, each
        time.sleep(1.0)  # the interval's five times since the last write: a loaded machine's
        _step(store, kind, WAGER if kind == "wager_accepted" else {"round_id": 1})
    _until(lambda: writer.writes >= writes_while_open)  # the last group's write is out
    time.sleep(0.5)  # and nothing more comes of the groups (the minute's case: still 1)
    assert writer.writes == writes_while_open
    store.close()
    assert writer.writes == writes_while_open + (writes_while_open == 1)
    db = sqlite3.connect(store_path)
    last_commit = db.execute("SELECT commit_no FROM critical_seal").fetchone()[0]
    db.close()
    anchor = read_anchor(store.paths.anchor, store.key)  # type: ignore[union-attr]
    assert anchor is not None and anchor.commit_no == last_commit


def _until(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the anchor's writer did not write in time"
        time.sleep(0.01)


def test_a_checkpoint_counts_the_three_flushes_sqlite_makes_for_it(tmp_path: Path) -> None:
    """The WAL before its frames are copied, the database after, and the WAL's new header
    when the write after the checkpoint starts it over (strace agrees: bench_latency.py
    prints both)."""
    store = Store(tmp_path / "t.sqlite")
    try:
        for index in range(CHECKPOINT_AFTER_COMMITS - 1):
            _step(store, "card", {"index": index})  # grouped: below the grouped threshold
        assert store.durability.checkpoints == 0
        _step(store, "wager_accepted", WAGER)  # the 2,000th commit, flushed: the checkpoint
        assert store.durability.checkpoints == 1
        assert store.durability.flushes()["checkpoints"] == 3
    finally:
        store.close()


@pytest.mark.parametrize("flush_in", FLUSH_IN)
async def test_the_checkpoint_a_flush_makes_due_runs_after_the_replies_waiting_for_it(
        flush_in: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wager's reply waits for its flush (group commit); the checkpoint that the same flush
    makes due runs in a loop callback of its own, after the reply's coroutine has gone on,
    so the reply does not wait for the checkpoint's three flushes as well."""
    from controller.memory import durability as durability_module
    from controller.memory.delivery import until_durable

    monkeypatch.setattr(durability_module, "CHECKPOINT_AFTER_COMMITS", 3)
    store = Store(tmp_path / "t.sqlite")
    order: list[str] = []
    real_checkpoint = store.durability._checkpoint

    def checkpoint() -> None:
        order.append("checkpoint")
        real_checkpoint()

    monkeypatch.setattr(store.durability, "_checkpoint", checkpoint)
    try:
        store.group_commits(asyncio.get_running_loop(), flush_in=flush_in)
        for seat in (1, 2):
            _step(store, "wager_accepted", {**WAGER, "seat": seat})
        # The third commit since the store opened, a round's end: the checkpoint is due.
        _step(store, "round_settled", {"round_id": 1})

        async def reply() -> None:
            assert await until_durable(store.when_durable) is None
            order.append("reply")

        await asyncio.wait_for(reply(), 30)
        for _ in range(3):  # the checkpoint's callback, if it has not run yet
            await asyncio.sleep(0)
        assert order == ["reply", "checkpoint"]
        assert store.durability.checkpoints == 1
    finally:
        store.close()


@pytest.mark.parametrize("flush_in", FLUSH_IN)
async def test_a_daemons_due_checkpoint_waits_for_a_rounds_end(
        flush_in: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With group commit (the daemon), a due checkpoint runs after the flush that gives out
    a round's end (its settlement or void), not after a wager's or a lock's, whose next
    lock-out or cards would wait for its flushes; after CHECKPOINT_WAITS_FOR_A_ROUND_END
    commits more with no round ending, at the next flushed step."""
    from controller.memory import durability as durability_module

    monkeypatch.setattr(durability_module, "CHECKPOINT_AFTER_COMMITS", 2)
    monkeypatch.setattr(durability_module, "CHECKPOINT_WAITS_FOR_A_ROUND_END", 3)
    store = Store(tmp_path / "t.sqlite")

    async def flushed(kind: str, payload: dict[str, Any]) -> int:
        """One flushed step, then the loop's turns after it: the checkpoints run so far."""
        _step(store, kind, payload)
        await _durable(store)
        for _ in range(3):
            await asyncio.sleep(0)
        return store.durability.checkpoints

    try:
        store.group_commits(asyncio.get_running_loop(), flush_in=flush_in)
        # The store's opening committed once: due from the first wager, waiting for a
        # round's end.
        after = [await flushed("wager_accepted", {**WAGER, "seat": seat}) for seat in (1, 2)]
        assert after == [0, 0]
        assert await flushed("no_more_bets", {"round_id": 1}) == 0
        assert await flushed("round_void", {"round_id": 1, "reason": "test"}) == 1
        # No round ends now: due after 2 commits, then 3 more waited for one (the bound).
        after = [await flushed("wager_accepted", {**WAGER, "seat": seat})
                 for seat in (1, 2, 4, 6, 8)]
        assert after == [1, 1, 1, 1, 2]
    finally:
        store.close()


def test_a_store_without_a_loop_checkpoints_when_due(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without group commit (tablectl, tools, a store's tests) nothing waits for a round:
    the checkpoint runs at the flushed step that makes it due, as before."""
    from controller.memory import durability as durability_module

    monkeypatch.setattr(durability_module, "CHECKPOINT_AFTER_COMMITS", 2)
    store = Store(tmp_path / "t.sqlite")
    try:
        counts = []
        for seat in (1, 2, 4, 6):
            _step(store, "wager_accepted", {**WAGER, "seat": seat})
            counts.append(store.durability.checkpoints)
        assert counts == [1, 1, 2, 2]  # the store's opening committed once
    finally:
        store.close()


@pytest.mark.parametrize("flush_in", FLUSH_IN)
async def test_the_anchor_is_handed_its_seal_after_the_report(
        flush_in: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Waking the anchor's thread (it takes the interpreter's lock to write) comes after the
    flushed entries are given out to the listeners that report them, not before."""
    order: list[str] = []
    real_submit = anchor_module.AnchorWriter.submit

    def submit(self: anchor_module.AnchorWriter[Anchor], anchor: Anchor) -> None:
        order.append("anchor")
        real_submit(self, anchor)

    monkeypatch.setattr(anchor_module.AnchorWriter, "submit", submit)
    store_path = str(tmp_path / "table.sqlite")
    init_store(store_path, operator="test", table_id="T1").close()
    store = open_store(store_path)
    try:
        store.subscribe(lambda event: order.append(event.kind))
        store.group_commits(asyncio.get_running_loop(), flush_in=flush_in)
        order.clear()
        _step(store, "wager_accepted", WAGER)
        await _durable(store)
        assert order == ["wager_accepted", "anchor"]
    finally:
        store.close()


async def test_the_collection_between_rounds_waits_for_the_settlements_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The step that settles a round leaves the table between rounds; with group commit its
    report waits for a flush that starts after the step's loop turn. The cyclic collector's
    run (controller/collector.py) comes after that report, in a turn of its own: not in
    front of the flush, and not at all if a card is expected by then."""
    import gc
    import threading
    import weakref

    from controller.collector import GC_BETWEEN_ROUNDS, RoundCollector
    from controller.table.machine import TableState

    class Table:
        state = TableState.BETTING_OPEN

    class Node:
        other: Any = None

    store = Store(tmp_path / "t.sqlite")
    gate = threading.Event()
    real_flush = store.durability.flush_in_thread

    def gated_flush(at_flush: Callable[[], object] | None = None) -> float:
        if at_flush is not None:
            at_flush()  # the thread is at its flush: the gate stands for the disk
        gate.wait(30)
        return real_flush()

    monkeypatch.setattr(store.durability, "flush_in_thread", gated_flush)
    collector, table = RoundCollector(), Table()
    enabled = gc.isenabled()
    gc.disable()  # only the collector's own run may free the cycle here
    try:
        store.group_commits(asyncio.get_running_loop(), flush_in=FLUSH_IN_THREAD)  # gated
        for expected_then, freed in ((TableState.BETTING_OPEN, True),
                                     (TableState.DEALING, False)):
            gc.collect()
            first, second = Node(), Node()
            first.other, second.other = second, first
            cycle = weakref.ref(first)
            del first, second
            kept = [Node() for _ in range(GC_BETWEEN_ROUNDS)]  # allocations since
            gate.clear()
            _step(store, "round_settled", {"round_id": 1})  # held for its flush
            collector.after_report(table, store.when_durable)
            await asyncio.sleep(0.05)  # the flush has started and waits at the gate
            assert cycle() is not None  # nothing collected before the report
            table.state = expected_then  # the dealer's next move, as the report went out
            gate.set()
            await _durable(store)
            await asyncio.sleep(0)  # the collection's own loop turn
            assert (cycle() is None) is freed, expected_then
            table.state = TableState.BETTING_OPEN
            del kept
    finally:
        if enabled:
            gc.enable()
        gate.set()
        store.close()
