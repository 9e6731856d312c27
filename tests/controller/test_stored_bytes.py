"""What the table stores and streams, byte for byte: a shoe dealt with a fixed clock and a
fixed key leaves the same rows (every table, and the saved state and digests after every
step) and the same stream lines as the code this digest was taken on (af1d934, 2026-12-03).
The card step's performance work (docs/performance.md, issue 31) changes how these bytes are
made, never what they are: a change that moves this digest changes the store's format.

The seal is pinned apart: since ruling C29 (docs/rulings.md) a card's step inside a round
is not sealed, so the seal row moves at fewer steps and counts fewer commits than at
af1d934, while every other byte stays as it was.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from pathlib import Path

from cards import BackColour, Card, Rank, Suit
from controller.config import load_config
from controller.control import ControlServer
from controller.memory.store import Store
from controller.rules.game import build_game
from controller.table.machine import TableState
from controller.table.rules_seam import RulesAdapter
from controller.table.table import Table
from drivers.protocols import CardDrawn, CoverCardDrawn, LockedOut, ShuffleComplete

ROOT = Path(__file__).resolve().parents[2]
WAGERS = ((1, "banker", 1000), (2, "player", 2500), (4, "tie", 500), (6, "banker", 5000),
          (8, "player", 1000))
IN_ROUND = (TableState.NO_MORE_BETS, TableState.DEALING, TableState.THIRD_CARDS)
# After each step: the rows a step rewrites in place (the last one would hide the others).
REWRITTEN = ("table_state", "critical_digest")
SEAL = "critical_seal"  # rewritten in place too, pinned apart (C29)


def test_a_shoe_stores_and_streams_the_same_bytes(tmp_path: Path) -> None:
    ticks = itertools.count()

    def clock() -> float:  # times whose texts have 10 to 17 digits, as a table's do
        tick = next(ticks)
        return 1764755000.0 + tick * 0.000731 + (tick % 7) * 1e-7

    digest = hashlib.sha256()
    seals = hashlib.sha256()  # the seal row after every step, and at the end
    store = Store(tmp_path / "table.sqlite", key=b"k" * 32, clock=clock)
    table = Table(table_id="T1", seats=14, store=store,
                  rules=RulesAdapter(build_game(load_config(
                      ROOT / "config" / "simulated-table.toml").submission)),
                  lock_seats=lambda cause: LockedOut(cause, 0.0, frozenset()))
    server = ControlServer(str(tmp_path / "control.sock"))
    server.set_history(store.events_from)
    server.follow(store)
    sent = [0, 0]  # two subscribers, as bench_card_step streams to
    lines = 0

    def after_step() -> None:
        nonlocal lines
        for name in REWRITTEN:
            for row in store._db.execute(f"SELECT * FROM {name} ORDER BY rowid"):
                digest.update(repr((name, tuple(row))).encode())
        for row in store._db.execute(f"SELECT * FROM {SEAL}"):
            seals.update(repr(tuple(row)).encode())
        for number, after in enumerate(sent):
            page = server.streams.stream_page(after)
            for _, line in page:
                digest.update(line)
                lines += 1
            if page:
                sent[number] = page[-1][0]

    deck = [Card(rank, suit) for rank in Rank for suit in Suit] * 8
    random.Random(7).shuffle(deck)
    cards = iter(enumerate(deck))

    def deal() -> None:
        index, card = next(cards)
        table.handle(CardDrawn("shoe", index, card, BackColour.RED, False))
        after_step()

    def rounds(until_left: int) -> None:
        while table.state is TableState.BETTING_OPEN and \
                len(deck) - table.shoe.cards_drawn > until_left:
            for seat, wager, cents in WAGERS:
                table.cmd_place_wager(seat, wager, cents)
            table.cmd_no_more_bets()
            after_step()
            while table.state in IN_ROUND:
                deal()

    table.cmd_open()
    table.cmd_shuffle(8)
    table.handle(ShuffleComplete("shuffler", BackColour.RED, len(deck), 0, 0, 0))
    table.on_shoe_loaded(BackColour.RED)
    after_step()
    while table.state is TableState.BURN:
        deal()
    rounds(40)
    table.handle(CoverCardDrawn("shoe", table.shoe.cards_drawn))
    after_step()
    rounds(8)
    assert table.state is TableState.END_OF_SHOE
    for name in [row[0] for row in store._db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]:
        for row in store._db.execute(f"SELECT * FROM {name} ORDER BY rowid"):
            (seals if name == SEAL else digest).update(repr((name, tuple(row))).encode())
    entries = store.log_seq
    commit_no, sealed_seq = store._db.execute(
        f"SELECT commit_no, log_seq FROM {SEAL}").fetchone()
    store.close()
    # Everything but the seal: the bytes of af1d934 (this split of the digest, run on da166e5,
    # the last code that sealed every step, gives the same value).
    assert (entries, lines, digest.hexdigest()) == (
        1457, 2914, "c99c46c7834ccf3199a45a4ace86c93f11f300eb910a9a8a41d5f8dee2edb1bb")
    # The seal: 842 commits sealed at da166e5, 542 now: 300 steps that only append entries
    # that may wait (the cards decided inside a round, the burn cards after the first) are
    # each sealed by the next step that must be flushed, not by their own (C29); the store
    # ends sealed at its last entry.
    assert (commit_no, sealed_seq, seals.hexdigest()) == (
        542, 1457, "ad477cd0c4efbebd2da77f3ea30617d2485d11f426056e7ecd5a3fc877a083ab")
