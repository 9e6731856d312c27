"""A step that only appends entries that may wait for the next flush is sealed by the next
step that may not (docs/rulings.md C29; controller/memory/sealing.py): what the seal then
covers, what the check accepts after it, and what it still refuses."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from controller.memory.critical import IntegrityError
from controller.memory.flush_in import FLUSH_IN
from controller.memory.store import Store


def _seal(path: Path) -> tuple[int, int]:
    """(commit_no, log_seq) of the store's seal row, read as any reader would."""
    db = sqlite3.connect(path)
    try:
        commit_no, log_seq = db.execute("SELECT commit_no, log_seq FROM critical_seal").fetchone()
        return int(commit_no), int(log_seq)
    finally:
        db.close()


def _deal(store: Store, first: int, count: int) -> None:
    """`count` card steps inside a round, each a card and its prompt (two entries)."""
    for index in range(first, first + count):
        with store.transaction():
            store.append_entry("card", {"index": index})
            store.append_entry("prompt", {"action": "deal"})


def _killed_copy(path: Path, copy: Path) -> Path:
    """The store's files as a kill leaves them (the WAL as it stands, nothing closed)."""
    for suffix in ("", "-wal"):
        Path(f"{copy}{suffix}").write_bytes(Path(f"{path}{suffix}").read_bytes())
    return copy


def _edit(path: Path, sql: str, *args: object) -> None:
    """A write with plain sqlite3, without the key (what anyone holding the card can do)."""
    db = sqlite3.connect(path)
    db.execute(sql, args)
    db.commit()
    db.close()


@pytest.fixture
def dealt(tmp_path: Path) -> tuple[Store, Path]:
    """A store with one money step sealed (entry 1) and three card steps after it."""
    path = tmp_path / "t.sqlite"
    store = Store(path)
    with store.transaction():
        store.append_entry("no_more_bets", {"round_id": 1})
    _deal(store, 0, 3)
    yield store, path
    store.close()


def test_card_steps_are_not_sealed_and_the_next_money_step_seals_them(dealt):
    store, path = dealt
    opened, sealed = _seal(path)
    assert (store.log_seq, sealed) == (7, 1)  # entries 2-7: three cards and their prompts
    with store.transaction():
        store.append_entry("round_settled", {"round": 1})
    assert _seal(path) == (opened + 1, 8)
    assert store.verify().unsealed == 0


def test_a_store_the_daemon_closes_ends_sealed_and_a_removed_entry_is_found(dealt, tmp_path):
    store, path = dealt
    commit_no, _ = _seal(path)
    store.close()
    assert _seal(path) == (commit_no + 1, 7)  # one step of its own, flushed, at close
    _edit(path, "DELETE FROM events WHERE seq = 7")
    with pytest.raises(IntegrityError, match="entries were removed"):
        Store(path)


@pytest.mark.parametrize("flush_in", FLUSH_IN)
async def test_a_store_in_group_commit_closed_in_its_loop_seals_its_tail(flush_in: str, tmp_path):
    """The daemon's store (group commit): the seal's step at close is held for its flush,
    which the close itself makes."""
    path = tmp_path / "t.sqlite"
    store = Store(path)
    store.group_commits(asyncio.get_running_loop(), flush_in=flush_in)
    _deal(store, 0, 2)
    commit_no, sealed = _seal(path)
    store.close()
    assert (sealed, _seal(path)) == (0, (commit_no + 1, 4))


@pytest.mark.parametrize("flush_in", FLUSH_IN)
def test_a_store_whose_loop_is_gone_still_closes_and_reopens_whole(flush_in: str, tmp_path):
    """A daemon that fails after its loop closed: the seal's step cannot hand its flush to
    the loop, and the close goes on (its own flush takes the step); nothing is lost."""
    path = tmp_path / "t.sqlite"
    loop = asyncio.new_event_loop()
    store = Store(path)
    store.group_commits(loop, flush_in=flush_in)
    _deal(store, 0, 2)
    loop.close()
    store.close()  # logs store_seal_at_close_failed; does not raise
    again = Store(path)
    assert (again.log_seq, again.verified.unsealed) == (4, 0)
    again.close()


def test_a_killed_store_opens_with_its_tail_checked_and_then_sealed(dealt, tmp_path):
    store, path = dealt
    copy = _killed_copy(path, tmp_path / "killed.sqlite")
    commit_no, _ = _seal(copy)
    again = Store(copy)
    try:
        assert (again.verified.unsealed, again.verified.log_seq) == (6, 7)
        assert _seal(copy) == (commit_no + 1, 7)  # sealed as the store opened
        assert [e.kind for e in again.events()] == ["no_more_bets"] + ["card", "prompt"] * 3
    finally:
        again.close()
    reopened = Store(copy)  # nothing is owed any more: the next open finds no tail
    assert (reopened.verified.unsealed, _seal(copy)) == (0, (commit_no + 1, 7))
    reopened.close()


def test_an_unsealed_tail_cut_short_opens_as_a_power_cut_that_lost_it_would(dealt, tmp_path):
    """The tail's last entries are what a power cut before the next flush loses (ruling
    C7 voids the round at the shoe's next card): removing them is accepted as that loss."""
    store, path = dealt
    copy = _killed_copy(path, tmp_path / "killed.sqlite")
    _edit(copy, "DELETE FROM events WHERE seq >= 6")
    again = Store(copy)
    assert (again.verified.unsealed, again.log_seq) == (4, 5)
    again.close()


def test_a_tail_entry_edited_without_the_key_is_refused_even_when_the_chain_is_left_for_later(
        dealt, tmp_path):
    """The table restores its open round from the tail, so the tail is always checked, also
    at a start that leaves the rest of the log to the full check that follows it."""
    store, path = dealt
    copy = _killed_copy(path, tmp_path / "killed.sqlite")
    _edit(copy, "UPDATE events SET payload = ? WHERE seq = 4", '{"index":9}')
    with pytest.raises(IntegrityError, match=r"entry 4 \(card\) was altered"):
        Store(copy, chain_limit=0)


def test_a_tail_holding_an_entry_that_is_always_sealed_is_refused(dealt, tmp_path):
    """An earlier seal put back under a log that went on to a money step: the money step's
    entry is never left unsealed, so the tail is not one a power cut could leave."""
    store, path = dealt
    db = sqlite3.connect(path)
    earlier = db.execute("SELECT * FROM critical_seal").fetchone()
    db.close()
    with store.transaction():
        store.append_entry("round_settled", {"round": 1})  # a log entry only: digests unmoved
    copy = _killed_copy(path, tmp_path / "killed.sqlite")
    _edit(copy, "UPDATE critical_seal SET commit_no = ?, log_seq = ?, log_mac = ?, mac = ?",
          *earlier[1:])
    with pytest.raises(IntegrityError, match="entry 8 after it is a round_settled, which is "
                                             "always sealed"):
        Store(copy)


@pytest.mark.parametrize(("edit", "refused"), [
    pytest.param(("UPDATE events SET hash = ? WHERE seq = 1", "0" * 64),
                 "entry 1, the last one sealed, is not the one sealed",
                 id="the sealed entry under a tail rewritten"),
    pytest.param(("UPDATE events SET seq = 500006 WHERE seq = 6",),
                 "the log ends at entry 500006 but the seal records entry 1, and 6 entries "
                 "follow it: entries were removed or added",
                 id="an entry renumbered past an unsealed tail"),
])
def test_a_tail_edited_without_the_key_is_refused(dealt, tmp_path, edit, refused):
    store, path = dealt
    copy = _killed_copy(path, tmp_path / "killed.sqlite")
    _edit(copy, *edit)
    with pytest.raises(IntegrityError, match=refused):
        Store(copy)


def test_a_log_cut_below_its_seal_is_refused(dealt, tmp_path):
    store, path = dealt
    with store.transaction():
        store.append_entry("round_settled", {"round": 1})
    copy = _killed_copy(path, tmp_path / "killed.sqlite")
    _edit(copy, "DELETE FROM events WHERE seq = 8")
    with pytest.raises(IntegrityError, match="the log ends at entry 7 but the seal records "
                                             "entry 8: entries were removed"):
        Store(copy)


def test_with_seal_every_step_each_card_step_is_sealed_and_a_cut_card_is_found(tmp_path):
    """`[store] seal_every_step` (C29's option): a card step inside a round seals itself, as
    every step did before C29; a kill leaves no unsealed tail, and the last card's entries
    removed without the key are refused, not taken for a power cut's loss."""
    path = tmp_path / "t.sqlite"
    store = Store(path, seal_every_step=True)
    with store.transaction():
        store.append_entry("no_more_bets", {"round_id": 1})
    opened, _ = _seal(path)
    _deal(store, 0, 3)
    assert _seal(path) == (opened + 3, 7)  # each card step its own seal, over its prompt
    again = Store(_killed_copy(path, tmp_path / "killed.sqlite"), seal_every_step=True)
    assert (again.verified.unsealed, again.log_seq) == (0, 7)
    again.close()
    cut = _killed_copy(path, tmp_path / "cut.sqlite")
    _edit(cut, "DELETE FROM events WHERE seq > 5")  # without C29's option: a power cut's loss
    with pytest.raises(IntegrityError, match="entries were removed"):
        Store(cut)
    store.close()


def test_a_step_that_writes_nothing_is_not_sealed_with_seal_every_step(tmp_path):
    path = tmp_path / "t.sqlite"
    store = Store(path, seal_every_step=True)
    with store.transaction():
        store.append_entry("no_more_bets", {"round_id": 1})
    sealed = _seal(path)
    with store.transaction():
        pass
    assert _seal(path) == sealed
    store.close()
