"""Property tests: totals 0-9 (631a.6(b)), at most three cards (631a.10(c)), cards consumed exactly,
money conserved between table and seats."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from controller.rules.baccarat import BaccaratCoup, NextCard
from cards import Card, Rank, Suit
from controller.rules.settlement import PlacedWager, VigorishLedger, settle_round
from controller.rules.twentyone import TwentyOneCoup
from controller.rules.wager import Outcome, SettlementPoint

from tests.rules.helpers import game_of

CARD = st.builds(Card, st.sampled_from(list(Rank)), st.sampled_from(list(Suit)))
SHOE = st.lists(CARD, min_size=30, max_size=30)
GAME = game_of({"tie": {}, "dragon_bonus_player": {"paytable": "B"},
                "dragon_bonus_banker": {"paytable": "B"}, "house_money": {}},
               vigorish={"collection": "marked", "round_up_to_25c": True})
SEAT_WAGERS = st.lists(st.tuples(st.integers(1, 14), st.sampled_from(list(GAME.wager_rules)),
                                 st.integers(1, 10_000_00)), min_size=1, max_size=12)


def play(shoe: list[Card]) -> tuple[BaccaratCoup, int]:
    coup = BaccaratCoup()
    used = 0
    while not coup.complete:
        coup.place(shoe[used])
        used += 1
    return coup, used


@settings(max_examples=150, deadline=None)
@given(SHOE)
def test_631a_6_b_totals_between_0_and_9(shoe: list[Card]) -> None:
    r = play(shoe)[0].result()
    assert 0 <= r.player_total <= 9 and 0 <= r.banker_total <= 9


@settings(max_examples=150, deadline=None)
@given(SHOE)
def test_631a_10_c_at_most_three_cards_per_hand(shoe: list[Card]) -> None:
    coup, _ = play(shoe)
    assert 2 <= len(coup.player) <= 3 and 2 <= len(coup.banker) <= 3


@settings(max_examples=150, deadline=None)
@given(SHOE)
def test_631a_9_c_round_consumes_exactly_the_cards_it_shows(shoe: list[Card]) -> None:
    coup, used = play(shoe)
    shown = list(coup.player) + list(coup.banker)
    assert len(shown) == used and sorted(map(str, shown)) == sorted(map(str, shoe[:used]))
    assert coup.player[:2] == [shoe[0], shoe[2]] and coup.banker[:2] == [shoe[1], shoe[3]]


@settings(max_examples=200, deadline=None)
@given(SHOE, st.booleans(), st.sampled_from(["one-card", "to-17"]))
def test_681a_7_round_consumes_exactly_the_cards_it_shows(shoe: list[Card], bonus: bool,
                                                          rule: str) -> None:
    coup = TwentyOneCoup(draw_rule=rule, bonus_wagered=bonus)
    used = 0
    while not coup.complete:
        coup.place(shoe[used])
        used += 1
    shown = coup.player + coup.banker + coup.player_extra + coup.banker_extra
    assert len(shown) == used == coup.cards_dealt
    if rule == "one-card":
        assert len(coup.player) + len(coup.player_extra) <= 3  # 681a.3(e) three-card hands
    assert coup.next_card() is NextCard.NONE


@settings(max_examples=200, deadline=None)
@given(SHOE, SEAT_WAGERS)
def test_631a_12_b_money_conserved_between_table_and_seats(shoe: list[Card], placed) -> None:  # type: ignore[no-untyped-def]
    wagers = [PlacedWager(seat, key, amount) for seat, key, amount in placed]
    coup, _ = play(shoe)
    first = settle_round(GAME, wagers, coup.round_view(), SettlementPoint.FIRST_FOUR_CARDS)
    end = settle_round(GAME, wagers, coup.round_view(), SettlementPoint.END_OF_ROUND)
    out = first + end
    assert len(out) == len(wagers)
    seats_before = sum(w.amount_cents for w in wagers)
    returned = sum(s.amount_cents + s.win_cents for s in out if s.outcome is not Outcome.LOSE)
    ledger = VigorishLedger().record(out)
    table_gain = sum(s.amount_cents for s in out if s.outcome is Outcome.LOSE) \
        - sum(s.win_cents for s in out) + ledger.total_cents
    seats_gain = sum(s.net_cents for s in out)
    assert seats_gain == -table_gain
    assert returned - ledger.total_cents - seats_before == seats_gain
    # 631a.12(b): at each settlement point, losers, then winners from the highest seat down
    for part in (first, end):
        outcomes = [s.outcome for s in part]
        assert outcomes == sorted(outcomes, key=lambda o: {Outcome.LOSE: 0, Outcome.WIN: 1,
                                                           Outcome.PUSH: 2}[o])
        win_seats = [s.seat for s in part if s.outcome is Outcome.WIN]
        assert win_seats == sorted(win_seats, reverse=True)
