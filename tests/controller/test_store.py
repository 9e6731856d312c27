"""The durable store: WAL, one transaction per step, a hash-chained log."""

from __future__ import annotations

import sqlite3

import pytest

from controller.events.records import SettledWager
from controller.memory.store import (
    GENESIS_HASH, OPEN_ROUND_CARDS, IntegrityError, Store, StoreError, entry_hash,
)


@pytest.fixture
def store(tmp_path):
    clock = iter(float(t) for t in range(1_000_000))
    s = Store(tmp_path / "table.sqlite", clock=lambda: next(clock))
    yield s
    s.close()


def test_pragmas_are_wal_and_normal_sync_with_the_store_flushing_itself(store):
    db = sqlite3.connect(store.path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    # synchronous is per connection; the store's own connection is what matters. NORMAL:
    # the store flushes the WAL itself after each durable step (test_store_durability.py).
    assert store._db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL


def test_event_chain_links_each_entry_to_the_one_before(store):
    first = store.append_entry("table_opened")
    second = store.append_entry("wager_accepted", {"seat": 3, "amount_cents": 2500}, round_id=7)
    assert first.seq == 1 and first.prev_hash == GENESIS_HASH
    assert second.prev_hash == first.hash
    assert second.hash == entry_hash(store.key, first.hash, 2, second.at, "wager_accepted",
                                     "info", None, 7,
                                     '{"amount_cents":2500,"seat":3}')
    assert store.verify_chain() == 2


def test_an_altered_entry_is_named(store, tmp_path):
    for seat in range(1, 6):
        store.append_entry("wager_accepted", {"seat": seat, "amount_cents": 1000})
    raw = sqlite3.connect(store.path)
    raw.execute("""UPDATE events SET payload = '{"amount_cents":100000,"seat":3}' WHERE seq = 3""")
    raw.commit()
    with pytest.raises(IntegrityError) as caught:
        store.verify_chain()
    assert caught.value.check == "event chain"
    assert "entry 3 (wager_accepted) was altered" in caught.value.detail


def test_a_deleted_entry_is_named(store):
    for seat in range(1, 6):
        store.append_entry("wager_accepted", {"seat": seat})
    raw = sqlite3.connect(store.path)
    raw.execute("DELETE FROM events WHERE seq = 2")
    raw.commit()
    with pytest.raises(IntegrityError, match="entry 2 is missing"):
        store.verify_chain()


def test_a_failed_step_leaves_nothing_behind(store):
    seen = []
    store.subscribe(seen.append)
    with pytest.raises(RuntimeError), store.transaction():
        store.append_entry("wager_accepted", {"seat": 1})
        raise RuntimeError("power cut in the middle of the step")
    assert store.events() == []
    assert seen == []  # listeners only ever see committed entries
    store.append_entry("after")
    assert [e.seq for e in store.events()] == [1]


def test_a_round_is_settled_exactly_once(store):
    round_id = store.open_round(1, 1, [{"seat": 2, "wager": "banker", "amount_cents": 1000}])
    settlement = SettledWager(2, "banker", 1000, "win", "1", 1000, 50, 0, 950, "Banker wins",
                              "631a.13(c)")
    store.close_round(round_id, "settled", {"winner": "banker"}, [settlement], [])
    with pytest.raises(StoreError, match="cannot be closed twice"):
        store.close_round(round_id, "settled", {"winner": "banker"}, [settlement], [])
    assert store.seat_totals() == {2: {"net_cents": 950, "wagered_cents": 1000,
                                       "vig_owed_cents": 0}}


def test_a_seats_wagers_are_summed_into_one_write_of_its_totals(store):
    """A seat with several wagers in a round has its totals written once (each write fires
    its digest trigger); the totals and the digests are those of one write per wager."""
    earlier = store.open_round(1, 1, [])
    store.close_round(earlier, "settled", {}, [
        SettledWager(3, "player", 500, "lose", "0", 0, 0, 0, -500, "Banker wins",
                     "631a.8(a)(2)(ii)")], [])
    round_id = store.open_round(1, 2, [])
    settlements = [
        SettledWager(3, "banker", 2000, "win", "1", 2000, 100, 100, 2000, "Banker wins",
                     "631a.13(c)"),
        SettledWager(5, "player", 1000, "lose", "0", 0, 0, 0, -1000, "Banker wins",
                     "631a.8(a)(2)(ii)"),
        SettledWager(3, "tie", 500, "lose", "0", 0, 0, 0, -500, "No tie", "631a.8(a)(3)(ii)")]
    changes = store._db.total_changes
    store.close_round(round_id, "settled", {}, settlements, [])
    # The round's row and two seats' rows, each with its digest's row, and the seal: seven
    # (one write a wager: nine).
    assert store._db.total_changes - changes == 7
    assert store.seat_totals() == {
        3: {"net_cents": 1000, "wagered_cents": 3000, "vig_owed_cents": 100},
        5: {"net_cents": -1000, "wagered_cents": 1000, "vig_owed_cents": 0}}
    store.verify(full=True)  # every digest is the sum of its rows' MACs


def test_marked_vigorish_is_owed_until_collected(store):
    """631a.13(d)(2): vigorish marked per seat and collected later."""
    round_id = store.open_round(1, 1, [])
    store.close_round(round_id, "settled", {}, [
        SettledWager(4, "banker", 2000, "win", "1", 2000, 100, 100, 2000, "Banker wins",
                     "631a.13(c)")], [])
    assert store.seat_totals()[4]["vig_owed_cents"] == 100
    assert store.collect_vigorish(4) == 100
    assert store.seat_totals()[4] == {"net_cents": 1900, "wagered_cents": 2000,
                                      "vig_owed_cents": 0}
    assert store.events()[-1].kind == "vigorish_collected"


def test_table_state_round_trips(store):
    store.save_table_state("betting_open", {"round_no": 4})
    store.save_table_state("dealing", {"round_no": 5})
    assert store.load_table_state() == ("dealing", {"round_no": 5})


def test_a_step_rolled_back_leaves_the_next_step_reading_the_store_again(store):
    """The store keeps the log's head and the seal's commit counter from its own commits
    instead of reading them back at every step; a step that rolls back must not leave its
    entries' head or counter behind for the next one. (Wagers: a card inside a round is
    not sealed by its own step, ruling C29.)"""
    store.append_entry("wager_accepted", {"index": 0})
    sealed = store._db.execute("SELECT commit_no FROM critical_seal").fetchone()[0]
    with pytest.raises(RuntimeError, match="cut short"):
        with store.transaction():
            store.append_entry("wager_accepted", {"index": 1})
            raise RuntimeError("cut short")
    after = store.append_entry("wager_accepted", {"index": 1})
    assert [e.payload["index"] for e in store.events()] == [0, 1]
    assert after.seq == 2  # the rolled-back entry is gone
    assert store._db.execute("SELECT commit_no FROM critical_seal").fetchone()[0] == sealed + 1
    assert store.verify(full=True).log_seq == after.seq


def test_a_commit_by_another_connection_is_read_before_the_next_step(store):
    """Only the table's own connection writes its store, but if another one ever commits,
    what the store kept from its own commits (log head, commit counter) is read again, so
    the chain and the seal go on from what is really there."""
    store.append_entry("card", {"index": 0})
    other = Store(store.path)
    by_other = other.append_entry("card", {"index": 1})
    other.close()
    mine = store.append_entry("card", {"index": 2})
    assert (mine.seq, mine.prev_hash) == (by_other.seq + 1, by_other.hash)
    assert store.verify(full=True).log_seq == 3


def test_an_open_rounds_cards_are_the_saved_states_and_its_row_gets_them_at_close(store):
    """A card's step writes the table's saved state (with the open round's cards) and the
    log, not the round's row: readers of an open round get its cards from the saved state,
    and close_round writes them, as canonical JSON, into the row."""
    round_id = store.open_round(1, 1, [{"seat": 1, "wager": "banker", "amount_cents": 500}])
    cards = [{"index": 7, "card": "9♠", "hand": "player", "slot": "player_1"},
             {"index": 8, "card": "K♣", "hand": "banker", "slot": "banker_1"}]
    store.save_table_state("dealing", {"round_id": round_id, OPEN_ROUND_CARDS: cards})
    assert store.round(round_id)["cards"] == cards
    assert [r["cards"] for r in store.rounds()] == [cards]
    assert [r["cards"] for r in store.open_rounds()] == [cards]
    assert store._db.execute("SELECT cards FROM rounds WHERE round_id = ?", (round_id,)
                             ).fetchone()[0] == "[]"  # not written while the round is open
    store.close_round(round_id, "settled", {"winner": "banker"}, [], cards)
    store.save_table_state("betting_open", {"round_id": None, OPEN_ROUND_CARDS: cards})
    assert store._db.execute("SELECT cards FROM rounds WHERE round_id = ?", (round_id,)
                             ).fetchone()[0] == (
        '[{"card":"9♠","hand":"player","index":7,"slot":"player_1"},'
        '{"card":"K♣","hand":"banker","index":8,"slot":"banker_1"}]')
    assert store.round(round_id)["cards"] == cards
    assert store.verify(full=True).state_rows > 0


def test_an_open_rounds_cards_logged_after_the_saved_state_are_its_cards_too(store):
    """A card that moves only the shoe and the round's cards does not save the table's
    state: readers get the round's cards as saved, then its card entries logged after the
    save (not another round's, not an earlier one's), in the order they were dealt."""
    round_id = store.open_round(1, 1, [])
    other = store.open_round(1, 2, [])
    first = {"index": 7, "card": "9♠", "hand": "player", "slot": "player_first"}
    store.append_entry("card", {**first, "back": "red"}, round_id=round_id)
    store.save_table_state("dealing", {"round_id": round_id, OPEN_ROUND_CARDS: [first]})
    assert store.load_table_state() == ("dealing", {"round_id": round_id,
                                                    OPEN_ROUND_CARDS: [first]})
    with store.transaction():
        store.append_entry("card", {"index": 8, "card": "K♣", "hand": "banker",
                                    "slot": "banker_first", "back": "red"}, round_id=round_id)
        store.append_entry("card", {"index": 99, "card": "A♦", "hand": "player",
                                    "slot": "player_first", "back": "red"}, round_id=other)
        store.append_entry("prompt", {"action": "deal", "next": "player_second"},
                           round_id=round_id)
    store.append_entry("card", {"index": 9, "card": "2♥", "hand": "player",
                                "slot": "player_second", "back": "red"}, round_id=round_id)
    assert [c["card"] for c in store.round(round_id)["cards"]] == ["9♠", "K♣", "2♥"]
    assert store.round(round_id)["cards"][1] == {"index": 8, "card": "K♣", "hand": "banker",
                                                 "slot": "banker_first"}
    assert [c["card"] for c in store.round(other)["cards"]] == []  # not the saved round


def test_a_step_that_only_appends_to_the_log_seals_with_the_digests_it_last_read(store):
    """The seal covers the protected tables' digests. A step that only appends log entries
    (the log has no digest triggers: a wager's) changes none, so the store seals it with
    the digests its last seal read instead of reading them again; a step that writes any
    other row (its triggers move a digest) reads them. Each seal verifies in full."""
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)

    def digest_reads() -> int:
        found = sum("FROM critical_digest" in sql for sql in statements)
        statements.clear()
        return found

    store.append_entry("wager_accepted", {"index": 0})
    assert digest_reads() == 0  # as the store's creation step left them
    with store.transaction():
        store.append_entry("wager_accepted", {"index": 1})
        store.append_entry("prompt", {"action": "deal"})
    assert digest_reads() == 0
    assert store.verify(full=True).log_seq == 3
    statements.clear()
    store.save_table_state("dealing", {"round_id": None})  # a protected row
    assert digest_reads() == 1
    store.append_entry("wager_accepted", {"index": 2})
    assert digest_reads() == 0
    with store.transaction():
        store.append_entry("wager_accepted", {"index": 3})
        store.open_round(1, 1, [])  # the log and a protected row in one step
    assert digest_reads() == 1
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.save_table_state("betting_open", {"round_id": None})
            raise RuntimeError("rolled back")
    statements.clear()
    store.append_entry("wager_accepted", {"index": 4})  # after a rollback nothing kept is trusted
    assert digest_reads() == 1
    assert store.verify(full=True).log_seq == 6
