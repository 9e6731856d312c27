"""A restart after any card, wager or lock finds the table as the step left it.

A card that moves only the shoe's position and the open round's cards does not save the
table's state: its log entry, committed in the same step, holds both, and a restart takes
them from the log (`RoundPlay.play_card`, `Table.restore`, `Store._open_round_cards`).
Nor do the state changes such cards imply (the deal begins, 631a.9(c); the first four are
out, 631a.9(e)): a restart makes them again from the cards
(`RoundPlay._redo_changes_implied_by_cards`). These tests copy the store after every card
of whole rounds, restart a table on the copy, and compare it with the live table field by
field. A wager saves no state either (`Table._wager_placed`): a restart replays the wagers
logged after the last save; the same comparison runs after every wager and every lock.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from pathlib import Path

from cards import BackColour, Card, Rank, Suit
from controller.rules.batches import BatchTracker
from controller.memory.store import Store
from controller.table.machine import TableState
from controller.table.state import SavedState
from controller.table.table import Table
from drivers.protocols import BatchHeld, CardDrawn, CoverCardDrawn, ShoeLoaded, ShuffleComplete
from tests.controller.test_table import make_table, submission_rules, table_for

WAGERS = (("banker", 1000), ("player", 2500), ("tie", 500))
S = TableState
# (state before, state after) of a card that saves no state: none, or one its cards imply.
UNSAVED_CHANGES = {(S.DEALING, S.DEALING), (S.THIRD_CARDS, S.THIRD_CARDS),
                   (S.NO_MORE_BETS, S.DEALING), (S.DEALING, S.THIRD_CARDS)}


def restarted(store: Store, folder: Path, build: Callable[[Store], Table]) -> tuple[Table, Store]:
    """A table restored from a copy of the store as it stands once the entries waiting in
    memory are written (a power cut now; one before they are written loses them, as
    tests/controller/test_held_entries.py shows)."""
    store.write_unwritten()
    copy = folder / "restart.sqlite"
    for leftover in folder.glob("restart.sqlite*"):
        leftover.unlink()
    source, target = sqlite3.connect(store.path), sqlite3.connect(copy)
    source.backup(target)
    source.close()
    target.close()
    reader = Store(copy)
    table = build(reader)
    table.restore()
    return table, reader


def same_table(live: Table, revived: Table, reader: Store) -> None:
    assert revived.state is live.state
    assert revived.saved.to_json() == live.saved.to_json()
    if live.coup is None:
        assert revived.coup is None
    else:
        assert revived.coup is not None
        assert revived.coup.next_card() == live.coup.next_card()
        assert revived.round_id is not None
        assert reader.round(revived.round_id)["cards"] == live.round_cards


def same_after_restart(table: Table, store: Store, folder: Path,
                       build: Callable[[Store], Table]) -> None:
    revived, reader = restarted(store, folder, build)
    try:
        same_table(table, revived, reader)
    finally:
        reader.close()


def betting_open(table: Table, burned: tuple[str, ...]) -> None:
    """A 631a table opened, shuffled, loaded and burned with these cards."""
    table.cmd_open()
    table.cmd_shuffle(8)
    table.handle(ShuffleComplete("shuffler", BackColour.RED, 416, 0, 0, 0))
    table.on_shoe_loaded()
    for index, text in enumerate(burned):
        table.handle(CardDrawn("shoe", index, Card.parse(text), BackColour.RED, False))
    assert table.state is TableState.BETTING_OPEN


def deal_checking_every_card(table: Table, store: Store, folder: Path,
                             build: Callable[[Store], Table], *, seed: int, rounds: int,
                             first_index: int, wagers: tuple[tuple[str, int], ...] = WAGERS,
                             settles_at_four: bool = False) -> int:
    """Deals `rounds` rounds of a shuffled shoe from betting open, restarting a copy after
    every card; returns how many cards did not save the state (checked against the rule).
    `settles_at_four`: a wager placed settles when the first four cards are out."""
    deck = [Card(rank, suit) for rank in Rank for suit in Suit] * 8
    random.Random(seed).shuffle(deck)
    saves: list[str] = []
    save = store.save_table_state
    store.save_table_state = lambda state, data: (saves.append(state), save(state, data))[1]
    index, unsaved = first_index, 0
    for number in range(rounds):
        assert table.state is TableState.BETTING_OPEN
        for offset, (wager, cents) in enumerate(wagers):
            # One seat a wager; a side wager goes beside its base wager (631c.3(c)).
            seat = 1 + number % 5 + (0 if settles_at_four else offset)
            saves[:] = []
            table.cmd_place_wager(seat, wager, cents)
            # A wager saves no state: its entry implies it, and a restart replays it.
            assert saves == []
            same_after_restart(table, store, folder, build)
        table.cmd_no_more_bets()
        same_after_restart(table, store, folder, build)
        while table.round_id is not None:
            before, saves[:] = table.state, []
            table.handle(CardDrawn("shoe", index, deck[index], BackColour.RED, False))
            index += 1
            if not saves:
                unsaved += 1
                # Only a card that changed nothing but the shoe, the round's cards and the
                # state changes they imply.
                assert (before, table.state) in UNSAVED_CHANGES
                assert table.round_id is not None
            same_after_restart(table, store, folder, build)
    store.save_table_state = save
    # Independently, from the rounds' rows: a round of n cards saves at its last card (the
    # hands are complete and settled) and, when a wager settles there, at its fourth (631a.9(e))
    # if that is not its last; its other cards save nothing.
    dealt = [len(r["cards"]) for r in store.rounds(limit=rounds)]
    assert unsaved == sum(n - 1 - (settles_at_four and n > 4) for n in dealt)
    return unsaved


def test_a_restart_after_any_card_finds_the_table_the_card_left(tmp_path):
    """Twelve rounds of a shuffled 8-deck shoe on the simulated table (631a), and the cover
    card's round: after every card, a restart on a copy of the store finds the same state,
    snapshot, round cards and next card (631a.9-631a.12) as the live table."""
    store = Store(tmp_path / "table.sqlite")
    table = make_table(store)
    betting_open(table, ("3♠", "2♣", "2♣", "2♣"))  # 631a.5(f): a 3 exposed, three burned
    unsaved = deal_checking_every_card(table, store, tmp_path, make_table, seed=1804,
                                       rounds=12, first_index=4)
    assert unsaved == 49  # this shoe's 12 rounds of 61 cards: all but their last
    table.handle(CoverCardDrawn("shoe", 80))
    revived, reader = restarted(store, tmp_path, make_table)
    same_table(table, revived, reader)
    reader.close()
    store.close()


def test_a_restart_after_any_card_of_a_21_baccarat_shoe_keeps_its_batches_681a_3_b(tmp_path):
    """The two-batch tracker (681a.3(b)) moves with the shoe's first cards; after every card
    of six 21 Baccarat rounds (681a) a restart finds the tracker and the round as they were."""
    rules = submission_rules(table=lambda t: t.update(seats=8),
                             game={"family": "21-baccarat", "decks": 8},
                             wagers={"player": {}, "banker": {}})

    def build(store: Store) -> Table:
        return table_for(store, rules, batches=BatchTracker(BackColour.RED, BackColour.BLUE))

    store = Store(tmp_path / "table.sqlite")
    table = build(store)
    table.handle(BatchHeld("shuffler", BackColour.RED))
    table.cmd_open()
    table.cmd_shuffle(8)
    table.handle(ShuffleComplete("shuffler", BackColour.RED, 416, 0, 0, 0))
    table.handle(ShoeLoaded("shoe", 416, BackColour.RED))
    table.handle(CardDrawn("shoe", 0, Card.parse("9♠"), BackColour.RED, False))  # 681a.7(c)
    assert table.state is TableState.BETTING_OPEN
    unsaved = deal_checking_every_card(table, store, tmp_path, build, seed=2101, rounds=6,
                                       first_index=1, wagers=WAGERS[:2])
    assert unsaved == 27  # these 6 rounds of 33 cards: all but their last (681a)
    store.close()


def test_a_settlement_at_the_first_four_cards_saves_the_state_631a_9_e(tmp_path):
    """A wager settled when the first four cards are out (Perfect Pairs, 631c.1) is money:
    that card saves the table's state, with the settlement in it, though the change to
    third cards is one the cards imply; a restart after any card still finds the table,
    its settlements included, as the card left it."""
    rules = submission_rules(wagers=lambda w: w.update(
        perfect_pairs_player={"paytable": "A", "min_cents": 500, "max_cents": 50000}))

    def build(store: Store) -> Table:
        return table_for(store, rules)

    store = Store(tmp_path / "table.sqlite")
    table = build(store)
    betting_open(table, ("2♠", "5♣", "5♣"))  # 631a.5(f): a 2 exposed, two burned
    unsaved = deal_checking_every_card(
        table, store, tmp_path, build, seed=631, rounds=10, first_index=3,
        wagers=(("banker", 2500), ("perfect_pairs_player", 500)), settles_at_four=True)
    # 10 rounds of 51 cards, 7 of them longer than four: all but their fourth and last.
    assert unsaved == 34
    assert len(store.events(kind="settled_first_four_cards")) == 10  # one a round
    store.close()


def test_a_simulated_round_opened_after_the_lock_survives_a_restart_at_any_card_631a_15_d(
        tmp_path):
    """A card found face up in the shoe after "no more bets" (631a.15(d)) closes the locked
    round void, its wagers standing for the next live round (docs/rulings.md C19), and opens
    a simulated round with it. No transition saves that change (the table stays locked, then
    deals), so the step saves it itself: a restart after each card of the simulated round,
    and after the live round that follows, finds the table as it was."""
    store = Store(tmp_path / "table.sqlite")
    table = make_table(store)
    betting_open(table, ("3♠", "2♣", "2♣", "2♣"))
    deck = [Card(rank, suit) for rank in Rank for suit in Suit] * 8
    random.Random(1515).shuffle(deck)
    for seat, (wager, cents) in enumerate(WAGERS, start=1):
        table.cmd_place_wager(seat, wager, cents)
    table.cmd_no_more_bets()
    locked_round = table.round_id
    index = 4
    table.handle(CardDrawn("shoe", index, deck[index], BackColour.RED, True))  # face up
    assert table.simulated and table.round_id != locked_round
    assert store.round(locked_round)["state"] == "void"
    while table.simulated:
        revived, reader = restarted(store, tmp_path, make_table)
        try:
            same_table(table, revived, reader)
            assert revived.simulated and revived.stashed_wagers == table.stashed_wagers
        finally:
            reader.close()
        index += 1
        table.handle(CardDrawn("shoe", index, deck[index], BackColour.RED, False))
    assert table.state is TableState.BETTING_OPEN and not table.simulated
    assert [w.amount_cents for w in table.wagers] == [cents for _, cents in WAGERS]  # they stand
    deal_checking_every_card(table, store, tmp_path, make_table, seed=1516, rounds=1,
                             first_index=index + 1, wagers=())
    store.close()


def _full_json(state: SavedState) -> dict[str, object]:
    """The saved state with every key, as versions before 2026-12-03 saved it."""
    from controller.table.state import card_event_json, colour_name, wager_json

    return {
        "shoe": vars(state.shoe).copy(), "round_id": state.round_id,
        "round_no": state.round_no, "wagers": [wager_json(w) for w in state.wagers],
        "round_settlements": [s.payload() for s in state.round_settlements],
        "progressive_seats": sorted(state.progressive_seats),
        "fault": state.fault, "faults": state.faults.to_list(),
        "verified_in_fault": colour_name(state.verified_in_fault),
        "resume_state": state.resume_state.value if state.resume_state else None,
        "out_of_order_reason": state.out_of_order_reason,
        "pending_simulated_card": card_event_json(state.pending_simulated_card)
        if state.pending_simulated_card else None,
        "simulated": state.simulated,
        "stashed_wagers": [wager_json(w) for w in state.stashed_wagers],
        "void_after_recovery": state.void_after_recovery,
        "void_after_recovery_section": state.void_after_recovery_section,
        "batch_in_shuffler": colour_name(state.batch_in_shuffler),
        "batch_shuffled": colour_name(state.batch_shuffled),
        "batches": state.batches.to_dict() if state.batches is not None else None,
        "round_cards": state.round_cards,
    }


def test_the_saved_state_leaves_out_defaults_and_reads_back_equal_as_an_older_save_does():
    """Issue 31: the state saved at the lock and each settlement leaves out what `from_json`
    reads with a default (half the text); a state saved with every key by an earlier version
    still restores the same, and one saved now reads back equal."""
    from controller.faults import FaultBook, HeldFault
    from controller.rules.settlement import PlacedWager
    from controller.table.state import ShoeProgress

    plain = SavedState(shoe=ShoeProgress(shoe_no=3, cards_drawn=17, burn_expected=0,
                                         burned=["K♥"], rounds_in_shoe=2, last_card_index=16,
                                         back=0),
                       round_id=9, round_no=3, wagers=[PlacedWager(2, "banker", 500)])
    saved = plain.to_json()
    assert saved == {"shoe": {"shoe_no": 3, "cards_drawn": 17, "burn_expected": 0,
                              "burned": ["K♥"], "rounds_in_shoe": 2, "last_card_index": 16,
                              "back": 0},
                     "round_id": 9, "round_no": 3,
                     "wagers": [{"seat": 2, "wager": "banker", "amount_cents": 500}],
                     "fault": None, "resume_state": None, "round_cards": []}
    faulted = SavedState(fault={"device": "shoe", "code": "jam"}, faults=FaultBook(),
                         simulated=True, progressive_seats=frozenset({4}),
                         resume_state=TableState.DEALING)
    lone_fault = SavedState(fault={"device": "shoe", "code": "jam"},
                            faults=FaultBook([HeldFault("shoe", "jam", "", "")]))
    for state in (plain, faulted, lone_fault, SavedState()):
        # Every field (`_full_json` writes each; a FaultBook compares by its list).
        assert _full_json(SavedState.from_json(state.to_json(), None)) == _full_json(state)
        assert _full_json(SavedState.from_json(_full_json(state), None)) == _full_json(state)
    # A fault with an empty book keeps the book's key: without it the fault would be read
    # as the book's one entry (`FaultBook.from_saved`).
    assert (faulted.to_json()["faults"], "faults" in lone_fault.to_json()) == ([], True)
    assert (faulted.to_json()["simulated"], faulted.to_json()["progressive_seats"]) == (True, [4])


def test_each_optional_key_is_saved_exactly_when_its_value_is_not_its_default_in_order():
    """Issue 31: `to_json` tests each field before making its value; the keys it writes, and
    their order (the saved text is not canonical: its order is the stored bytes'), are those
    whose saved value differs in value or type from `_OMITTED_WHEN`'s."""
    from controller.faults import FaultBook, HeldFault
    from controller.events.records import SettledWager
    from controller.rules.settlement import PlacedWager
    from controller.table.state import _OMITTED_WHEN, ShoeProgress

    settled = SettledWager(1, "tie", 500, "lose", "0", 0, 0, 0, -500, "Tie loses", "631a.12")
    every = SavedState(
        shoe=ShoeProgress(shoe_no=2, cover_card_misplaced="late"), round_settlements=[settled],
        progressive_seats=frozenset({3, 1}), fault={"device": "shoe", "code": "jam"},
        faults=FaultBook([HeldFault("shoe", "jam", "", "")]),
        verified_in_fault=BackColour.BLUE, out_of_order_reason="tamper",
        pending_simulated_card=CardDrawn("shoe", 4, Card.parse("K♥"), BackColour.RED, True),
        simulated=True, stashed_wagers=[PlacedWager(2, "banker", 500)],
        void_after_recovery="void", void_after_recovery_section="631a.15(e)",
        batch_in_shuffler=BackColour.RED, batch_shuffled=BackColour.BLUE,
        batches=BatchTracker(BackColour.RED, BackColour.BLUE))
    fault_only = SavedState(fault={"device": "shoe", "code": "jam"}, faults=FaultBook())
    for state in (every, fault_only, SavedState()):
        full = _full_json(state)
        required = ["shoe", "round_id", "round_no", "wagers", "fault", "resume_state",
                    "round_cards"]
        expected = required + [
            name for name, default in _OMITTED_WHEN.items()
            if not (type(full[name]) is type(default) and full[name] == default)
            or (name == "faults" and state.fault is not None)]
        saved = state.to_json()
        assert list(saved) == expected
        assert saved == {name: full[name] for name in expected} | {"shoe": saved["shoe"]}
    assert list(every.to_json()) == ["shoe", "round_id", "round_no", "wagers", "fault",
                                     "resume_state", "round_cards", *_OMITTED_WHEN]
    assert every.to_json()["shoe"] == {"shoe_no": 2, "cover_card_misplaced": "late"}


def test_the_state_encoder_gives_the_text_json_gives():
    """schema.state_json: json's own C encoder built once, without its circular check; the
    same text as the encoder it stands for."""
    import json

    from controller.memory.schema import state_json

    value = {"shoe": {"burned": ["K♥", "10♦"], "back": 0, "x": None}, "at": 1796281893.63084,
             "neg": -0.0, "ok": True, "text": 'a "quoted"\\ line\n', "nested": [[], {}, [1, [2]]]}
    assert state_json(value) == json.JSONEncoder(separators=(",", ":"),
                                                 ensure_ascii=False).encode(value)


def test_a_rounds_row_holds_its_settlements_as_their_entries_give_them_631a_9_e(tmp_path):
    """Issue 31: the round's row takes its settlements' JSON from the texts their log
    entries wrote (the first four cards' and the round's end, joined; controller/memory/
    part_texts.py), not encoded a third time: the same text as encoding them, for rounds
    settled at one point and at two."""
    import json

    from controller.memory.critical import canonical

    rules = submission_rules(wagers=lambda w: w.update(
        perfect_pairs_player={"paytable": "A", "min_cents": 500, "max_cents": 50000}))
    store = Store(tmp_path / "table.sqlite")
    table = table_for(store, rules)
    betting_open(table, ("2♠", "5♣", "5♣"))
    deck = [Card(rank, suit) for rank in Rank for suit in Suit] * 8
    random.Random(31).shuffle(deck)
    index = 3
    for number in range(6):
        table.cmd_place_wager(1, "banker", 2500)
        if number % 2:
            table.cmd_place_wager(1, "perfect_pairs_player", 500)
        table.cmd_no_more_bets()
        while table.round_id is not None:
            table.handle(CardDrawn("shoe", index, deck[index], BackColour.RED, False))
            index += 1
    rows = store._db.execute("SELECT round_id, settlements FROM rounds ORDER BY round_id")
    closed = rows.fetchall()
    assert len(closed) == 6
    for round_id, text in closed:
        logged = [s for kind in ("settled_first_four_cards", "settled_end_of_round")
                  for e in store.events(kind=kind) if e.round_id == round_id
                  for s in e.payload["settlements"]]
        assert text == canonical(logged)
        assert len(json.loads(text)) == 1 + (round_id % 2 == 0)  # the pair wager's rounds
    store.close()
