"""The displays' model: the daemon's events (docs/control-api.md) folded into what the
scoreboard and the dealer's page show."""

from __future__ import annotations

from typing import Any

from controller.display.board import LIVE, ROADS, Board, road_round
from controller.display.roads import RoadRound, Winner

TABLE = {"table_id": "T1", "seats": 3, "game": "baccarat"}


class Feed:
    """Numbers events like the daemon's log does."""

    def __init__(self, board: Board) -> None:
        self.board = board
        self.seq = 0

    def __call__(self, kind: str, payload: dict[str, Any] | None = None, *,
                 device: str | None = None, at: float = 100.0) -> set[str]:
        self.seq += 1
        return self.board.apply({"seq": self.seq, "at": at, "kind": kind, "device": device,
                                 "payload": payload or {}}, now=at + 0.02)


def settled(winner: str, player: list[str], banker: list[str], pt: int, bt: int,
            **flags: bool) -> dict[str, Any]:
    return {"round_no": 1, "simulated": False, "settlements": [], "table_net_cents": 0,
            "result": {"player": player, "banker": banker, "player_total": pt,
                       "banker_total": bt, "winner": winner, "player_natural": False,
                       "banker_natural": False, **flags}}


def test_a_round_from_bets_to_result() -> None:
    board = Board(table=dict(TABLE))
    feed = Feed(board)
    assert feed("shoe_loaded", {"shoe_no": 4, "back": "red"}) == {ROADS, LIVE}
    feed("prompt", {"action": "burn", "detail": "631a.5(f): expose the first card"})
    assert board.next_card == "burn"
    feed("prompt", {"action": "place_bets", "round_no": 1})
    feed("wager_accepted", {"seat": 2, "wager": "banker", "amount_cents": 2500})
    feed("wager_accepted", {"seat": 2, "wager": "tie", "amount_cents": 500})
    feed("no_more_bets", {"cause": "button", "round_no": 1, "wagers": 2,
                          "progressive_seats": [2]})
    feed("progressive_accepted", {"progressive": "heavenly9",
                                  "accepted": [{"seat": 2, "amount_cents": 500}],
                                  "refused": [], "leds": {}, "awards": []})
    assert feed("prompt", {"action": "deal", "next": "player_first"}) == {LIVE}
    live = board.live_view()
    assert live["next_card"] == "player_first" and live["no_more_bets"] is True
    assert live["seats"] == [
        {"seat": 1, "wagers": [], "progressive": False, "progressive_cents": 0, "sensor": False},
        {"seat": 2, "wagers": [{"wager": "banker", "amount_cents": 2500},
                               {"wager": "tie", "amount_cents": 500}],
         "progressive": True, "progressive_cents": 500, "sensor": False},
        {"seat": 3, "wagers": [], "progressive": False, "progressive_cents": 0, "sensor": False}]
    feed("card", {"index": 11, "card": "10♥", "hand": "player", "slot": "player_first",
                  "back": "red"}, device="shoe")
    assert board.next_card is None  # until the table says where the next one goes
    assert feed("round_settled", settled("banker", ["10♥", "10♠"], ["9♦", "K♣"], 0, 9,
                                         banker_natural=True)) == {ROADS, LIVE}
    roads = board.roads_view()
    assert roads["shoe_no"] == 4
    assert roads["counts"] == {"rounds": 1, "banker": 1, "player": 0, "tie": 0,
                               "banker_pairs": 0, "player_pairs": 1, "naturals": 1}
    assert roads["bead_plate"] == [{"col": 0, "row": 0, "winner": "banker", "banker_pair": False,
                                    "player_pair": True, "natural": True, "total": 9}]
    # The next round's bets clear the seats and the cards.
    feed("prompt", {"action": "place_bets", "round_no": 2})
    assert board.cards == [] and board.wagers == {} and board.progressive_seats == []


def test_pairs_and_totals_from_a_result() -> None:
    assert road_round({"winner": "tie", "player": ["A♠", "A♥", "7♣"], "banker": ["Q♦", "K♦"],
                       "player_total": 9, "banker_total": 0}) == RoadRound(
        Winner.TIE, banker_pair=False, player_pair=True, natural=False, winning_total=9)


def test_replayed_history_and_simulated_rounds_do_not_count() -> None:
    board = Board(table=dict(TABLE))
    feed = Feed(board)
    feed("round_settled", settled("player", ["9♠", "K♠"], ["2♦", "3♦"], 9, 5))
    # 631a.15(d): a simulated round is not a result of the shoe.
    feed("round_settled", {**settled("banker", [], [], 0, 0), "simulated": True})
    replay = {"seq": 1, "at": 1.0, "kind": "round_settled", "device": None,
              "payload": settled("banker", [], [], 0, 0)}
    assert board.apply(replay) == set()
    assert [r.winner for r in board.rounds] == [Winner.PLAYER]
    assert board.metrics.rounds_settled == 1


def test_a_fault_shows_what_to_do_until_the_device_recovers() -> None:
    board = Board(table=dict(TABLE))
    feed = Feed(board)
    feed("device_fault", {"code": "lid_open", "detail": "shoe lid is open",
                          "action": "close the shoe's lid"}, device="shoe")
    assert board.live_view()["fault"] == {"device": "shoe", "code": "lid_open",
                                          "detail": "shoe lid is open",
                                          "action": "close the shoe's lid"}
    assert board.metrics.faults == {("shoe", "lid_open"): 1}
    feed("device_recovered", {"code": "lid_open"}, device="shoe")
    assert board.fault is None


def test_the_win_light_stays_on_until_the_award_is_validated() -> None:
    board = Board(table=dict(TABLE))
    feed = Feed(board)
    feed("prompt", {"action": "jackpot", "award_id": 7, "seat": 3, "progressive": "heavenly9",
                    "level": "progressive", "amount_cents": 1_000_000, "detail": "..."})
    assert board.live_view()["award"] == {"award_id": 7, "seat": 3, "progressive": "heavenly9",
                                          "level": "progressive", "amount_cents": 1_000_000}
    feed("jackpot_validated", {"award_id": 6, "supervisor": "ana"})
    assert board.award is not None  # another award's validation leaves this light on
    feed("jackpot_validated", {"award_id": 7, "supervisor": "ana"})
    assert board.award is None


def test_a_new_shoe_starts_the_roads_again_and_last_hand_clears() -> None:
    board = Board(table=dict(TABLE))
    feed = Feed(board)
    feed("round_settled", settled("player", ["9♠", "K♠"], ["2♦", "3♦"], 9, 5))
    feed("prompt", {"action": "last_hand", "detail": "631a.10(d)"})
    assert board.live_view()["last_hand"] is True
    feed("shoe_loaded", {"shoe_no": 2, "back": "blue"})
    assert board.roads_view()["counts"]["rounds"] == 0
    assert board.live_view()["last_hand"] is False and board.shoe_no == 2


def test_status_is_the_authority_on_state_and_fault() -> None:
    board = Board(table=dict(TABLE))
    board.apply_status({"state": "dealing", "shoe": {"cards_left": 300, "last_hand": False},
                        "round": {"next": "banker_third"}, "fault": None})
    assert (board.state, board.cards_left, board.next_card) == ("dealing", 300, "banker_third")
    board.apply_status({"state": "device_fault", "shoe": {}, "round": {},
                        "fault": {"device": "shuffler", "code": "jam", "detail": "d",
                                  "action": "a"}})
    assert board.fault == {"device": "shuffler", "code": "jam", "detail": "d", "action": "a"}


def test_live_event_delays_are_a_cumulative_histogram() -> None:
    board = Board(table=dict(TABLE))
    board.apply({"seq": 1, "at": 10.0, "kind": "table_opened", "payload": {}}, now=10.03)
    board.apply({"seq": 2, "at": 10.0, "kind": "table_opened", "payload": {}}, now=10.7)
    board.apply({"seq": 3, "at": 10.0, "kind": "table_opened", "payload": {}})  # history
    m = board.metrics
    # Buckets 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5 s.
    assert m.delay_buckets == [0, 0, 1, 1, 1, 1, 2, 2]
    assert m.delay_count == 2 and round(m.delay_sum_s, 3) == 0.73


def test_every_kind_the_displays_follow_is_in_the_event_catalogue() -> None:
    # A kind renamed or dropped in the daemon (controller/events.py) fails here, not on a
    # scoreboard that silently stops changing.
    from controller.display.service import REFRESH_KINDS_DEVICES
    from controller.events import CATALOGUE

    handled = {name.removeprefix("_on_") for name in dir(Board) if name.startswith("_on_")}
    assert handled == {"shoe_loaded", "prompt", "no_more_bets", "wager_accepted",
                       "progressive_accepted", "seat_sensor", "card", "round_settled",
                       "round_void", "cover_card", "cover_card_misplaced", "device_fault",
                       "device_recovered", "device_fault_cleared", "jackpot_validated",
                       "witness_up", "witness_down"}
    assert (handled | REFRESH_KINDS_DEVICES) - {e.kind for e in CATALOGUE} == set()


def test_631a_5_d_a_misplaced_cover_card_stays_on_the_dealers_page_until_the_next_shoe() -> None:
    """The `cover_card_misplaced` event's detail is the dealer's notice (docs/rulings.md C22);
    the prompts go on underneath, and a new shoe clears it."""
    board = Board(table=dict(TABLE))
    feed = Feed(board)
    feed("shoe_loaded", {"shoe_no": 1, "back": "red"})
    assert board.live_view()["notice"] is None
    feed("cover_card_misplaced", {"index": 410, "cards_below": 6, "detail": "6 below"},
         device="shoe")
    feed("prompt", {"action": "deal", "next": "player_third"})
    assert (board.live_view()["notice"], board.live_view()["next_card"]) == (
        "6 below", "player_third")
    feed("shoe_loaded", {"shoe_no": 2, "back": "blue"})
    assert board.live_view()["notice"] is None
