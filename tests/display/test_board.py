"""The displays' model: the daemon's events (docs/control-api.md) folded into what the
scoreboard and the dealer's page show."""

from __future__ import annotations

from typing import Any

from controller.display.board import LIVE, ROADS, Board, road_round
from controller.display.roads import RoadRound, Winner
from controller.events.records import RoundResult

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
    feed("no_more_bets", {"cause": "button", "round_no": 1,
                          "wagers": [{"seat": 2, "wager": "banker", "amount_cents": 2500},
                                     {"seat": 2, "wager": "tie", "amount_cents": 500}],
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
    assert road_round(RoundResult.decode({
        "winner": "tie", "player": ["A♠", "A♥", "7♣"], "banker": ["Q♦", "K♦"],
        "player_total": 9, "banker_total": 0})) == RoadRound(
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
    feed("jackpot_validated", {"award_id": 6, "supervisor": "ana", "amount_cents": 5_000,
                               "seat": 1})
    assert board.award is not None  # another award's validation leaves this light on
    feed("jackpot_validated", {"award_id": 7, "supervisor": "ana", "amount_cents": 1_000_000,
                               "seat": 3})
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
                       "witness_up", "witness_down", "new_dealer"}
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


# --- the dealer's pay list -----------------------------------------------------------
# The settlements are the rules' own (settle_round, void_round), recorded as the daemon
# records them (SettledWager): the board must show their figures to the cent.

def _settled_by_the_rules(game: Any, wagers: list[Any], round_view: Any, *,
                          vig_collection: str = "collected") -> list[dict[str, Any]]:
    from controller.rules.settlement import settle_round
    from controller.rules.wager import SettlementPoint
    from controller.events.records import SettledWager

    marked = vig_collection == "marked"
    return [SettledWager.of(s, vigorish_marked=marked).payload() for point in SettlementPoint
            for s in settle_round(game, wagers, round_view, point)]


def _payload(settlements: list[dict[str, Any]], winner: str, pt: int, bt: int,
             round_no: int = 1) -> dict[str, Any]:
    return {"round_no": round_no, "simulated": False, "settlements": settlements,
            "table_net_cents": -sum(s["net_cents"] for s in settlements),
            "result": {"player": [], "banker": [], "player_total": pt, "banker_total": bt,
                       "winner": winner, "player_natural": False, "banker_natural": False}}


def _money(pay: dict[str, Any]) -> list[tuple[int, str, str, int, int, int, int]]:
    return [(seat["seat"], w["wager"], w["outcome"], w["amount_cents"], w["win_cents"],
             w["vigorish_cents"], w["net_cents"]) for seat in pay["seats"] for w in seat["wagers"]]


def test_631a_12_b_631a_13_c_the_pay_list_highest_seat_first_with_vigorish_to_collect() -> None:
    """The dealer's screen shows each seat's result, payout and the 5% Banker commission
    (631a.13(c)) as soon as the round settles, seats in the order 631a.12(b) pays them."""
    from controller.rules.settlement import PlacedWager

    from tests.rules.helpers import game_of, view

    game = game_of({"tie": {}})
    wagers = [PlacedWager(3, "player", 1000), PlacedWager(7, "banker", 2500),
              PlacedWager(7, "tie", 500), PlacedWager(9, "banker", 1000)]
    board = Board(table=dict(TABLE, seats=10))
    feed = Feed(board)
    feed("prompt", {"action": "place_bets", "round_no": 4})
    feed("round_settled", _payload(_settled_by_the_rules(game, wagers, view("2S 3H", "4D 4C")),
                                   "banker", 5, 8, round_no=4))
    pay = board.live_view()["pay"]
    assert (pay["round_no"], pay["void"], pay["winner"], pay["player_total"],
            pay["banker_total"]) == (4, False, "banker", 5, 8)
    assert _money(pay) == [  # seat, wager, result, wagered, paid, commission, net
        (9, "banker", "win", 1000, 1000, 50, 950),
        (7, "tie", "lose", 500, 0, 0, -500),
        (7, "banker", "win", 2500, 2500, 125, 2375),
        (3, "player", "lose", 1000, 0, 0, -1000)]


def test_631a_13_d_2_marked_vigorish_is_shown_as_marked() -> None:
    """With marked vigorish (631a.13(d)(2)) the seat keeps its whole win until the
    commission is collected: the list shows the commission marked, net the full win."""
    from controller.rules.settlement import PlacedWager

    from tests.rules.helpers import game_of, view

    settlements = _settled_by_the_rules(game_of({}), [PlacedWager(2, "banker", 2000)],
                                        view("2S 3H", "4D 4C"), vig_collection="marked")
    board = Board(table=dict(TABLE))
    Feed(board)("round_settled", _payload(settlements, "banker", 5, 8))
    (line,) = board.live_view()["pay"]["seats"][0]["wagers"]
    assert (line["win_cents"], line["vigorish_cents"], line["vig_marked_cents"],
            line["net_cents"]) == (2000, 100, 100, 2000)


def test_631a_12_a_a_tie_pushes_player_and_banker_and_pays_the_tie() -> None:
    from controller.rules.settlement import PlacedWager

    from tests.rules.helpers import game_of, view

    wagers = [PlacedWager(1, "banker", 1000), PlacedWager(1, "tie", 500)]
    board = Board(table=dict(TABLE))
    Feed(board)("round_settled", _payload(
        _settled_by_the_rules(game_of({"tie": {}}), wagers, view("2S 5H", "4D 3C")),
        "tie", 7, 7))
    assert _money(board.live_view()["pay"]) == [(1, "tie", "win", 500, 4000, 0, 4000),
                                                (1, "banker", "push", 1000, 0, 0, 0)]


def test_the_pay_list_stays_up_until_the_next_rounds_first_card() -> None:
    from controller.rules.settlement import PlacedWager

    from tests.rules.helpers import game_of, view

    board = Board(table=dict(TABLE))
    feed = Feed(board)
    (settlement,) = _settled_by_the_rules(game_of({}), [PlacedWager(2, "player", 1500)],
                                          view("9S KH", "2D 2C"))
    feed("round_settled", _payload([settlement], "player", 9, 4))
    for kind, payload in (("prompt", {"action": "place_bets", "round_no": 2}),
                          ("wager_accepted", {"seat": 2, "wager": "player",
                                              "amount_cents": 1500}),
                          ("no_more_bets", {"cause": "button", "round_no": 2,
                                            "wagers": [{"seat": 2, "wager": "player",
                                                        "amount_cents": 1500}],
                                            "progressive_seats": []}),
                          ("prompt", {"action": "deal", "next": "player_first"})):
        feed(kind, payload)
        assert _money(board.live_view()["pay"]) == [(2, "player", "win", 1500, 1500, 0, 1500)]
    feed("card", {"index": 20, "card": "4♣", "hand": "player", "slot": "player_first",
                  "back": "red"})
    assert board.live_view()["pay"] is None
    # A simulated round (631a.15(d)) has no wagers of its own: it leaves the list alone.
    feed("round_settled", _payload([settlement], "player", 9, 4))
    feed("round_settled", {**_payload([], "banker", 0, 0), "simulated": True})
    assert _money(board.live_view()["pay"]) == [(2, "player", "win", 1500, 1500, 0, 1500)]


def test_631a_15_e_a_void_round_shows_its_returns_and_what_stands() -> None:
    """631a.15(e): every wager not yet settled is returned; a settlement made at the first
    four cards stands (docs/rulings.md C7), so the list shows both."""
    from controller.rules.settlement import PlacedWager, void_round
    from controller.events.records import SettledWager

    wagers = [PlacedWager(5, "banker", 3000), PlacedWager(2, "player", 1000),
              PlacedWager(2, "perfect_pairs_player", 500)]
    standing = {"seat": 2, "wager": "perfect_pairs_player", "amount_cents": 500,
                "outcome": "lose", "odds": "0", "win_cents": 0, "vigorish_cents": 0,
                "vig_marked_cents": 0, "net_cents": -500, "label": "no pair",
                "section": "631c"}
    returned = [SettledWager.of(s, vigorish_marked=False).payload() for s in void_round(
        wagers, settled={(2, "perfect_pairs_player")})]
    board = Board(table=dict(TABLE))
    feed = Feed(board)
    feed("prompt", {"action": "place_bets", "round_no": 6})
    feed("round_void", {"reason": "shoe cannot complete the round",
                        "settlements": [standing, *returned]})
    pay = board.live_view()["pay"]
    assert (pay["round_no"], pay["void"], pay["reason"]) == (
        6, True, "shoe cannot complete the round")
    assert _money(pay) == [(5, "banker", "push", 3000, 0, 0, 0),
                           (2, "perfect_pairs_player", "lose", 500, 0, 0, -500),
                           (2, "player", "push", 1000, 0, 0, 0)]
    assert pay["seats"][0]["wagers"][0]["label"] == "void round: wager returned"


def test_681a_7_h_the_pay_list_and_totals_of_a_21_baccarat_round() -> None:
    """681a.7(h): settled from the highest seat; the hands' 21-point totals beside it."""
    from controller.rules.settlement import PlacedWager

    from tests.rules.test_681a import g21, v21

    wagers = [PlacedWager(1, "player", 1000), PlacedWager(4, "player", 2500)]
    board = Board(table=dict(TABLE, game="21-baccarat", seats=6))
    Feed(board)("round_settled", _payload(
        _settled_by_the_rules(g21(), wagers, v21("KS 9H", "KD 8C")), "player", 19, 18))
    pay = board.live_view()["pay"]
    assert (pay["player_total"], pay["banker_total"]) == (19, 18)
    assert _money(pay) == [(4, "player", "win", 2500, 2500, 0, 2500),
                           (1, "player", "win", 1000, 1000, 0, 1000)]


def test_an_event_that_is_not_its_kinds_record_is_counted_and_not_folded_in() -> None:
    """The board reads each event through its typed record (controller/events): a card
    whose payload does not fit (a daemon of another release, a damaged line) changes
    nothing on the screens and is counted by kind."""
    board = Board(table=dict(TABLE))
    feed = Feed(board)
    feed("card", {"index": 3, "card": "4♣", "hand": "player", "slot": "player_first",
                  "back": "red"})
    assert feed("card", {"index": 4, "card": "XX", "hand": "banker"}) == {LIVE}
    assert [c["card"] for c in board.cards] == ["4♣"]
    assert board.metrics.undecodable == {"card": 1}
    assert board.metrics.events == {"card": 2}


def test_hand_number_banners_and_dealer_follow_the_shoe() -> None:
    """The header's hand number is the hands settled plus the one in play, so it never
    runs ahead of the counts; the banners follow the daemon's state (issue 29)."""
    board = Board(table=dict(TABLE))
    feed = Feed(board)
    board.daemon_connected = True
    feed("new_dealer", {"dealer": "Ana", "burn": False})
    feed("shoe_loaded", {"shoe_no": 1, "back": "red"})
    board.apply_status({"state": "betting_open", "shoe": {"last_hand": True}})
    feed("prompt", {"action": "place_bets", "round_no": 41})
    view = board.live_view()
    assert (view["hand_no"], view["round_no"], view["dealer"], view["banner"],
            view["last_hand_shown"]) == (1, 41, "Ana", "open", True)
    board.apply_status({"state": "dealing", "shoe": {"last_hand": True}})
    feed("card", {"index": 1, "card": "9♠", "hand": "player", "slot": "player_first",
                  "back": "red"})
    feed("card", {"index": 2, "card": "3♥", "hand": "banker", "slot": "banker_first",
                  "back": "red"})
    assert board.live_view()["totals"] == {"player": 9, "banker": 3}
    assert board.live_view()["banner"] == "closed"
    feed("round_settled", settled("player", ["9♠", "K♦"], ["3♥", "4♣"], 9, 7))
    board.apply_status({"state": "end_of_shoe", "shoe": {"last_hand": True}})
    view = board.live_view()
    assert (view["hand_no"], len(board.rounds), view["banner"], view["last_hand_shown"]) == \
        (1, 1, "shuffle", False)
    roads = board.roads_view()
    assert roads["percent"]["player"] == 100 and roads["streak"]["winner"] == "player"
    # A void round is no hand: the count and the hand number stay.
    board.apply_status({"state": "betting_open"})
    feed("prompt", {"action": "place_bets", "round_no": 42})
    assert board.live_view()["hand_no"] == 2
    feed("round_void", {"reason": "the shoe cannot complete the round", "settlements": []})
    assert board.live_view()["hand_no"] == 1
