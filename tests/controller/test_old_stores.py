"""A store an older release wrote still verifies and reads, through today's typed records.

The fixtures under tests/fixtures/stores/ are one simulated shoe (seed 7) played by the
daemon of commit 9d72e55 (the code issue 27 was read against) and of 9b19c01 (the main
the typed records were built on), written by tools/make_store_fixture.py: the store
byte for byte (gzipped), its key and its anchor. Both shoes dealt the same cards to the
same wagers, so their rounds and cents are the same; 9b19c01's log has two entries more
(the history check at start, and the witness coming up).
"""

from __future__ import annotations

import gzip
import shutil
from collections import Counter
from pathlib import Path

import pytest

from cards import BackColour, Card
from controller.memory import critical
from controller.memory.lifecycle import paths_for
from controller.events import ABSENT
from controller.events.records import BurnFirstCard, CardDealt, RoundSettled, SettledWager
from controller.events.system_records import DaemonStarted
from controller.memory.store import Store

FIXTURES = Path(__file__).parents[1] / "fixtures" / "stores"

KINDS_OF_THE_SHOE = {
    "critical_memory_initialised": 1, "critical_memory_verified": 1,
    "pin_hashes_exposed": 1, "daemon_started": 1, "batch_held": 1, "table_opened": 1,
    "prompt": 480, "shuffle_requested": 1, "shuffle_progress": 8, "shuffle_complete": 1,
    "shoe_loaded": 1, "burn_first_card": 1, "burn_card": 10, "wager_accepted": 385,
    "no_more_bets": 76, "card": 389, "settled_end_of_round": 76, "round_settled": 76,
    "cover_card": 1, "shoe_complete": 1, "daemon_stopping": 1}
LATER_KINDS = {"9d72e55": {}, "9b19c01": {"history_verified": 1, "witness_up": 1}}
SEAT_NET_CENTS = {1: 28_700, 2: 66_525, 4: -38_675, 6: -8_275, 8: 9_075, 10: 101_550}
SEAT_WAGERED_CENTS = {1: 242_000, 2: 265_000, 4: 223_500, 6: 200_000, 8: 235_500,
                      10: 189_000}


@pytest.fixture(params=sorted(LATER_KINDS))
def old_store(request, tmp_path):
    """The fixture copied out (a store is opened for writing: its check seals a reader's
    own steps), opened by today's code with its key and anchor."""
    source = FIXTURES / request.param
    (tmp_path / "table.critical").mkdir()
    with gzip.open(source / "table.sqlite.gz") as packed, \
            open(tmp_path / "table.sqlite", "wb") as store_file:
        shutil.copyfileobj(packed, store_file)
    for name in ("key", "anchor"):
        shutil.copyfile(source / name, tmp_path / "table.critical" / name)
    paths = paths_for(str(tmp_path / "table.sqlite"), "")
    store = Store(paths.store, key=critical.load_key(paths), paths=paths, create=False)
    yield request.param, store
    store.close()


def test_an_old_store_verifies_entry_by_entry(old_store):
    commit, store = old_store
    verified = store.verify(full=True)
    expected = sum(KINDS_OF_THE_SHOE.values()) + sum(LATER_KINDS[commit].values())
    assert (verified.entries, verified.log_seq) == (expected, expected) == (
        {"9d72e55": 1513, "9b19c01": 1515}[commit],) * 2


def test_every_old_entry_decodes_as_its_record(old_store):
    commit, store = old_store
    records = [event.record() for event in store.events()]
    assert Counter(r.KIND for r in records) == {**KINDS_OF_THE_SHOE, **LATER_KINDS[commit]}
    (started,) = [r for r in records if isinstance(r, DaemonStarted)]
    # 9d72e55 wrote no software check: its entry has neither key, and reads back so.
    assert (started.release, started.software_verified) == {
        "9d72e55": (ABSENT, ABSENT), "9b19c01": (None, False)}[commit]
    (first,) = [r for r in records if isinstance(r, BurnFirstCard)]
    assert first == BurnFirstCard(Card.parse("J♣"), index=0, burn=10, back=BackColour.BLUE)
    dealt = [r for r in records if isinstance(r, CardDealt)]
    assert [(c.index, c.card, c.slot) for c in dealt[:6]] == [
        (11, Card.parse("7♠"), "player_first"), (12, Card.parse("3♦"), "banker_first"),
        (13, Card.parse("8♣"), "player_second"), (14, Card.parse("9♠"), "banker_second"),
        (15, Card.parse("3♥"), "player_third"), (16, Card.parse("7♠"), "banker_third")]
    # Each entry re-encodes to the very text its MAC covers: one encoding, old and new.
    assert [critical.canonical(r.payload()) for r in records] == \
        [e.payload_json for e in store.events()]


def test_the_old_rounds_and_money_read_back_to_the_cent(old_store):
    """631a.12-631a.13: every settlement, the table's net and each seat's totals."""
    _, store = old_store
    rounds = store.rounds(limit=1000)
    assert Counter(r["state"] for r in rounds) == {"settled": 76}
    assert Counter(r["result"]["winner"] for r in rounds) == {"player": 38, "banker": 29,
                                                              "tie": 9}
    settled = [e.record() for e in store.events(kind="round_settled")]
    assert all(isinstance(r, RoundSettled) for r in settled)
    first = settled[0]
    assert (first.round_no, first.result.player, first.result.banker, first.result.winner) == (
        1, (Card.parse("7♠"), Card.parse("8♣"), Card.parse("3♥")),
        (Card.parse("3♦"), Card.parse("9♠"), Card.parse("7♠")), "banker")
    assert first.settlements[3] == SettledWager(
        8, "banker", 5000, "win", "1", 5000, 250, 0, 4750, "Banker wins", "631a.13(c)")
    assert first.table_net_cents == -1200
    wagers = [w for r in settled for w in r.settlements]
    assert (sum(w.amount_cents for w in wagers), sum(w.vigorish_cents for w in wagers),
            sum(r.table_net_cents for r in settled)) == (1_355_000, 14_600, -158_900)
    by_seat: Counter[int] = Counter()
    for w in wagers:
        by_seat[w.seat] += w.net_cents
    assert by_seat == SEAT_NET_CENTS
    # The store's own totals (seat_totals, kept from the rounds table) agree with the log.
    assert store.seat_totals() == {
        seat: {"net_cents": SEAT_NET_CENTS[seat], "wagered_cents": SEAT_WAGERED_CENTS[seat],
               "vig_owed_cents": 0} for seat in SEAT_NET_CENTS}
    assert [SettledWager.decode(s) for r in rounds for s in r["settlements"]] == wagers
