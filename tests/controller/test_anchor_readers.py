"""No read stops the critical-memory anchor.

A read-only view of the store (`Store.reader`, used by every long read: events, rounds, the
critical-memory check) once was a copy of the store and shared its anchor writer: closing the
view after one `events` call stopped the writer, and the anchor then lagged the store by
seconds to minutes, so a store rolled back by that much passed the boot check. Here reads of
every kind run during play and the anchor is measured against the store: it may lag by the
writer's interval (controller/memory/anchor.py), never more than ANCHOR_LAG_LIMIT_S.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from controller.memory.anchor import ANCHOR_INTERVAL_RANGE_S
from controller.memory.critical import read_anchor
from controller.control import ControlClient
from controller.memory.lifecycle import init_store, open_store
from controller.daemon import Daemon
from controller.memory.store import Store
from controller.config import load_config
from tests.controller.test_daemon import CONFIG, config_for, running

ANCHOR_LAG_LIMIT_S = 2.0  # the writer's interval (1 s here) and a busy machine's scheduling


def _commit_no(store: Store) -> int:
    return int(store._db.execute("SELECT commit_no FROM critical_seal").fetchone()[0])


def _anchored(store: Store) -> int:
    assert store.paths is not None
    anchor = read_anchor(store.paths.anchor, store.key)
    return anchor.commit_no if anchor is not None else -1


def test_a_closed_reader_leaves_the_anchor_writer_running(tmp_path: Path) -> None:
    config = config_for(tmp_path)
    init_store(config.store_path, operator="test", table_id="T1").close()
    # The shortest interval a table may set (its default is a minute, docs/rulings.md C24):
    # the second commit's anchor is what is waited for.
    interval_s = ANCHOR_INTERVAL_RANGE_S[0]
    store = open_store(config.store_path, anchor_interval_s=interval_s)
    try:
        store.append_entry("wager_locked", {"seat": 1, "amount_cents": 500})  # flushed
        reader = store.reader()
        assert [e.kind for e in reader.events(limit=1)] == ["wager_locked"]
        reader.close()
        store.append_entry("wager_locked", {"seat": 2, "amount_cents": 700})
        deadline = time.monotonic() + interval_s + 10
        while _anchored(store) != _commit_no(store) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _anchored(store) == _commit_no(store)
    finally:
        store.close()


def test_a_reader_shares_no_pending_write_with_its_store(tmp_path: Path) -> None:
    config = config_for(tmp_path)
    init_store(config.store_path, operator="test", table_id="T1").close()
    store = open_store(config.store_path)
    try:
        reader = store.reader()
        assert reader._durability.anchor_writer is None and reader._delivery.listeners == []
        assert reader._steps is not store._steps
        assert reader._steps.hooks is not store._steps.hooks
        assert reader._steps.pending is not store._steps.pending
        reader.close()
    finally:
        store.close()


async def test_reads_of_every_kind_during_play_never_stop_the_anchor(tmp_path: Path) -> None:
    """Money steps commit every 50 ms for 6 s while callers read through every read path
    (events, rounds, seat totals, the critical-memory check, a subscriber connecting as the
    display does). Each durable commit's lag is the time from its commit until the anchor
    names it or a later one."""
    # The shortest interval a table may set (its default is a minute, docs/rulings.md C24):
    # a lag beyond it is what a frozen writer would show.
    config = load_config(CONFIG, [f"store.path={tmp_path / 'table.sqlite'}",
                                  f"control.socket={tmp_path / 'control.sock'}",
                                  f"store.anchor_interval_s={ANCHOR_INTERVAL_RANGE_S[0]:g}"])
    daemons: list[Daemon] = []
    async with running(config, prepare=daemons.append) as client:
        store = daemons[0].store
        committed: dict[int, float] = {}  # commit number -> when it committed
        lags: list[float] = []
        reads = 0

        async def play() -> None:
            for step in range(120):
                store.append_entry("wager_locked", {"seat": 1 + step % 10, "amount_cents": 500})
                committed[_commit_no(store)] = time.monotonic()
                await asyncio.sleep(0.05)

        async def read() -> None:
            nonlocal reads
            while True:
                await client.call("events", limit=1)
                await client.call("rounds", limit=5)
                await client.call("seat_totals")
                await client.call("verify_chain")
                subscriber = await ControlClient(config.control_socket).connect()
                async for _ in subscriber.subscribe(after_seq=0):  # the display's connect
                    break
                await subscriber.close()
                reads += 5
                await asyncio.sleep(0.1)

        def sample() -> None:
            anchored, now = _anchored(store), time.monotonic()
            for commit_no in [c for c in committed if c <= anchored]:
                lags.append(now - committed.pop(commit_no))

        async def sampling() -> None:
            while True:
                sample()
                await asyncio.sleep(0.02)

        tasks = [asyncio.create_task(read()), asyncio.create_task(sampling())]
        await play()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        deadline = time.monotonic() + ANCHOR_LAG_LIMIT_S + 5
        while committed and time.monotonic() < deadline:
            sample()
            await asyncio.sleep(0.02)
    assert reads >= 10
    assert not committed, f"commits {sorted(committed)[:5]}... never anchored"
    assert len(lags) == 120
    assert max(lags) <= ANCHOR_LAG_LIMIT_S, f"anchor lagged {max(lags):.2f} s after {reads} reads"
