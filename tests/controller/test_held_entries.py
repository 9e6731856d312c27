"""Entries that wait in memory (docs/rulings.md C31; controller/memory/steps.py): a table's
step that only appends entries of kinds that may wait for the next flush (a card inside a
round and its prompt) begins no transaction. Its entries are given out at once and written
by the next step that writes, first and in log order; a read of the log writes them before
it reads; a daemon that dies before then loses them, as a power cut loses such entries
written but not flushed (C7, C29).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest

from controller.memory.flush_in import FLUSH_IN_LOOP
from controller.memory.steps import UNWRITTEN_LIMIT, WRITTEN_AFTER_S
from controller.memory.store import Event, IntegrityError, Store


def _card(store: Store, index: int) -> None:
    """A card's step as the table takes it (`Store.step`): the card and its prompt."""
    with store.step():
        store.append_entry("card", {"index": index})
        store.append_entry("prompt", {"action": "deal", "index": index})


def _on_disk(path: Path) -> list[tuple[int, str]]:
    """The log as another connection reads it: what this store has written."""
    db = sqlite3.connect(path)
    try:
        return [(seq, kind) for seq, kind in db.execute("SELECT seq, kind FROM events")]
    finally:
        db.close()


@pytest.fixture
def store(tmp_path: Path):
    store = Store(tmp_path / "t.sqlite")
    with store.step():  # a money step: written, flushed and sealed at once
        store.append_entry("no_more_bets", {})
    yield store
    store.close()


def test_a_cards_step_writes_nothing_and_is_given_out_at_once(store: Store, tmp_path: Path):
    given: list[Event] = []
    store.subscribe(given.append)
    changes, written = store._db.total_changes, _on_disk(tmp_path / "t.sqlite")
    assert written == [(1, "no_more_bets")]
    _card(store, 4)
    _card(store, 5)
    assert store._db.total_changes == changes  # no statement wrote anything
    assert _on_disk(tmp_path / "t.sqlite") == written
    assert [(e.seq, e.kind) for e in given] == [(2, "card"), (3, "prompt"), (4, "card"),
                                                (5, "prompt")]
    assert store.log_seq == 5


def test_the_next_step_that_writes_writes_them_first_and_seals_them(store: Store, tmp_path):
    _card(store, 4)
    with store.step():  # the round's settlement: a money step
        store.append_entry("round_settled", {"round": 1})
    assert _on_disk(tmp_path / "t.sqlite") == [
        (1, "no_more_bets"), (2, "card"), (3, "prompt"), (4, "round_settled")]
    assert store.verify_chain() == 4
    assert store.verify().unsealed == 0  # the settlement's seal covers them


def test_a_read_of_the_log_writes_them_first(store: Store, tmp_path: Path):
    _card(store, 4)
    assert [e.kind for e in store.events()] == ["no_more_bets", "card", "prompt"]
    assert _on_disk(tmp_path / "t.sqlite")[-2:] == [(2, "card"), (3, "prompt")]
    assert store.verify().unsealed == 2  # written in a step that may wait: sealed later (C29)


def test_a_daemon_that_dies_loses_them_and_the_store_opens_as_after_a_power_cut(tmp_path):
    path = tmp_path / "t.sqlite"
    store = Store(path)
    with store.step():
        store.append_entry("no_more_bets", {})
    _card(store, 4)
    # Killed: the connection goes without the store's close (which writes and seals them).
    store._db.close()
    reopened = Store(path)
    try:
        assert [(e.seq, e.kind) for e in reopened.events()] == [(1, "no_more_bets")]
        assert reopened.verified.unsealed == 0
    finally:
        reopened.close()


def test_a_closed_store_writes_and_seals_them(tmp_path: Path):
    path = tmp_path / "t.sqlite"
    store = Store(path)
    _card(store, 4)
    store.close()
    reopened = Store(path)
    try:
        assert [e.kind for e in reopened.events()] == ["card", "prompt"]
        assert reopened.verified.unsealed == 0
    finally:
        reopened.close()


def test_a_step_that_fails_drops_its_own_and_keeps_those_before_it(store: Store, tmp_path):
    _card(store, 4)
    with pytest.raises(RuntimeError, match="a defect"):
        with store.step():
            store.append_entry("card", {"index": 5})
            raise RuntimeError("a defect")
    with pytest.raises(RuntimeError, match="another"):
        with store.step():  # one that began its transaction before it failed
            store.append_entry("card", {"index": 5})
            with store.transaction() as db:
                db.execute("INSERT INTO meta(key, value) VALUES ('x', '1')")
            raise RuntimeError("another")
    _card(store, 5)  # chained to the last entry kept: seq 4
    assert [(e.seq, e.kind, e.payload.get("index")) for e in store.events()] == [
        (1, "no_more_bets", None), (2, "card", 4), (3, "prompt", 4), (4, "card", 5),
        (5, "prompt", 5)]
    assert store.meta("x") is None
    assert store.verify_chain() == 5


def test_at_most_the_limit_wait(store: Store, tmp_path: Path):
    assert UNWRITTEN_LIMIT == 64
    for index in range(31):  # 62 entries wait
        _card(store, index)
    assert _on_disk(tmp_path / "t.sqlite") == [(1, "no_more_bets")]
    _card(store, 99)  # the 64th: this step writes them all, its own too
    assert len(_on_disk(tmp_path / "t.sqlite")) == 1 + 64
    _card(store, 100)
    assert len(_on_disk(tmp_path / "t.sqlite")) == 1 + 64  # waiting again


def test_seal_every_step_writes_and_seals_every_step(tmp_path: Path):
    """`[store] seal_every_step` (C29): no step waits for another, in memory either."""
    path = tmp_path / "t.sqlite"
    Store(path).close()
    store = Store(path, seal_every_step=True)
    try:
        _card(store, 4)
        assert _on_disk(path) == [(1, "card"), (2, "prompt")]
        assert store.verify().unsealed == 0
    finally:
        store.close()


def test_another_connection_that_commits_meanwhile_is_judged_by_the_check(store, tmp_path):
    """Entries of ours wait on the head this connection wrote; an entry another connection
    alters meanwhile is found by the chain's check, naming it, as without waiting entries."""
    _card(store, 4)
    raw = sqlite3.connect(tmp_path / "t.sqlite")
    raw.execute("UPDATE events SET payload = '{\"x\":1}' WHERE seq = 1")
    raw.commit()
    raw.close()
    _card(store, 5)
    with store.step():
        store.append_entry("round_settled", {"round": 1})
    assert [e.seq for e in store.events()] == [1, 2, 3, 4, 5, 6]
    with pytest.raises(IntegrityError, match="entry 1 "):
        store.verify_chain()


def test_a_step_that_appends_nothing_writes_nothing_and_owes_no_seal(store: Store):
    """A device event that changed nothing: no transaction, no seal owed for the close."""
    changes = store._db.total_changes
    with store.step():
        pass
    assert store._db.total_changes == changes
    assert store._seal.owed is False
    assert not store.in_transaction


async def test_in_the_daemon_they_are_written_after_a_pause(tmp_path: Path):
    """Group commit's loop (the daemon): entries that wait are written in a step of their
    own WRITTEN_AFTER_S after the last step left them, if no step wrote them first, so a
    daemon that dies between a dealer's cards loses none of them. Cards that come at once
    (no turn of the loop between them) still share one write."""
    path = tmp_path / "t.sqlite"
    store = Store(path)
    store.group_commits(asyncio.get_running_loop(), flush_in=FLUSH_IN_LOOP)
    try:
        with store.step():
            store.append_entry("no_more_bets", {})
        _card(store, 4)
        _card(store, 5)
        assert _on_disk(path) == [(1, "no_more_bets")]  # not at once
        deadline = time.monotonic() + 10  # a bound for a loaded machine, not a measure
        while len(_on_disk(path)) < 5 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert _on_disk(path) == [(1, "no_more_bets"), (2, "card"), (3, "prompt"),
                                  (4, "card"), (5, "prompt")]
        assert WRITTEN_AFTER_S == 0.05
    finally:
        store.close()
    reopened = Store(path)
    assert [e.kind for e in reopened.events()] == ["no_more_bets", "card", "prompt", "card",
                                                   "prompt"]
    reopened.close()


def test_they_wait_only_while_the_daemon_allows_it(store: Store, tmp_path: Path):
    """The daemon allows it while its shoe keeps its cards until they are committed (a 1.2
    shoe with CAP_CARD_COMMIT, controller/card_commits.py): with a 1.1 shoe a card's step is
    written at its end, and a daemon that dies loses none of it."""
    shoe_keeps_cards = [False]
    store.hold_when(lambda: shoe_keeps_cards[0])
    _card(store, 4)
    assert _on_disk(tmp_path / "t.sqlite")[-2:] == [(2, "card"), (3, "prompt")]
    shoe_keeps_cards[0] = True
    _card(store, 5)
    assert len(_on_disk(tmp_path / "t.sqlite")) == 3
