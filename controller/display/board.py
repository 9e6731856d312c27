"""What the scoreboard and the dealer's screen show, folded from the daemon's events.

Sans-I/O: `Board.apply(event)` takes one event as the control socket streams it
(docs/control-api.md) and says which parts of the view changed; `status` and `meters`
answers are folded in with `apply_status` / `apply_meters`. The display service
(controller/display/service.py) does the I/O around it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from cards import Card
from controller.display.floor import banner, last_hand_shown, running_totals, shoe_stats
from controller.display.roads import RoadRound, Roads, Winner
from controller.events import EventDecodeError, decode
from controller.events import progressive_records as p
from controller.events import records as r
from controller.events import system_records as s

log = structlog.get_logger("display")

# The parts of the view, each pushed to the browsers as one server-sent event type.
ROADS = "roads"  # changes once per round: bead plate, big road, derived roads, counts
LIVE = "live"  # prompts, cards, state, faults, seats, meters: small and frequent
TOPICS = (ROADS, LIVE)

DELAY_BUCKETS_S = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
RECENT_HANDS = 12  # the 21 Baccarat results view lists this many hands

# Where the next card goes, as the dealer's page names it, for each prompt that calls
# for a card (the `deal` prompt names the hand itself).
_CARD_PROMPTS = {"burn": "burn", "discard": "discard", "set_aside": "discard"}

# What a dealer does about a fault when the daemon's prompt did not say (it always
# should: every device fault carries its action).
_NO_ACTION = "call a technician (tablectl status, tablectl events --severity error)"


def _is_pair(cards: Sequence[Card]) -> bool:
    return len(cards) >= 2 and cards[0].rank == cards[1].rank


def road_round(result: r.RoundResult) -> RoadRound:
    """A settled round's summary (`round_settled`'s `result`) as the roads see it."""
    winner = Winner(result.winner)
    total = result.banker_total if winner is Winner.BANKER else result.player_total
    return RoadRound(winner, banker_pair=_is_pair(result.banker),
                     player_pair=_is_pair(result.player), natural=result.natural,
                     winning_total=total)


# What the dealer's pay list shows of each settlement (records.SettledWager): the rules'
# own figures, never worked out again here.
_PAY_FIELDS = ("wager", "amount_cents", "outcome", "win_cents", "vigorish_cents",
               "vig_marked_cents", "net_cents", "label")


def pay_list(settlements: Sequence[r.SettledWager]) -> list[dict[str, Any]]:
    """A round's settlements by seat, highest seat first as 631a.12(b) pays them, each
    seat's wagers in the order they were settled."""
    seats: dict[int, list[dict[str, Any]]] = {}
    for settled in settlements:
        seats.setdefault(settled.seat, []).append({k: getattr(settled, k) for k in _PAY_FIELDS})
    return [{"seat": seat, "wagers": seats[seat]} for seat in sorted(seats, reverse=True)]


@dataclass
class Metrics:
    """Counters for the Prometheus endpoint (controller/display/metrics.py)."""

    events: Counter[str] = field(default_factory=Counter)  # by kind
    undecodable: Counter[str] = field(default_factory=Counter)  # by kind: shown, not folded
    faults: Counter[tuple[str, str]] = field(default_factory=Counter)  # (device, code)
    rounds_settled: int = 0
    rounds_void: int = 0
    awards: int = 0
    # Commit in the daemon -> seen here, for live events (not history replayed at connect):
    # a cumulative histogram, one count per bucket of DELAY_BUCKETS_S, plus sum and count.
    delay_buckets: list[int] = field(default_factory=lambda: [0] * len(DELAY_BUCKETS_S))
    delay_sum_s: float = 0.0
    delay_count: int = 0
    daemon_connects: int = 0

    def observe_delay(self, delay_s: float) -> None:
        for i, bound in enumerate(DELAY_BUCKETS_S):
            if delay_s <= bound:
                self.delay_buckets[i] += 1
        self.delay_sum_s += delay_s
        self.delay_count += 1


@dataclass
class Board:
    """The displays' model of one table."""

    table: dict[str, Any] = field(default_factory=dict)  # id, name, game, limits, ...
    daemon_connected: bool = False
    last_seq: int = 0
    last_mac: str | None = None  # the last entry's MAC: the log still holds it at a reconnect
    state: str = "unknown"
    shoe_no: int = 0
    cards_left: int | None = None
    rounds: list[RoadRound] = field(default_factory=list)
    hands: list[dict[str, Any]] = field(default_factory=list)  # recent results, newest last
    round_no: int = 0
    round_open: bool = False  # a round of this shoe is open: betting, or being dealt
    dealer: str | None = None  # the dealer at the table, as `new_dealer` named them
    cards: list[dict[str, Any]] = field(default_factory=list)  # this round's, in order
    prompt: dict[str, Any] | None = None
    next_card: str | None = None
    no_more_bets: bool = False
    last_hand: bool = False
    fault: dict[str, Any] | None = None
    wagers: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # seat -> wagers
    progressive_seats: list[int] = field(default_factory=list)
    progressive_wagers: dict[int, int] = field(default_factory=dict)  # seat -> cents
    seat_sensors: dict[int, bool] = field(default_factory=dict)
    meters: list[dict[str, Any]] = field(default_factory=list)
    award: dict[str, Any] | None = None  # a win light that is on, until validated
    pay: dict[str, Any] | None = None  # the last round's pay list, until the next round's card
    notice: str | None = None  # for the dealer until the shoe is replaced (a misplaced cover)
    devices: list[dict[str, Any]] = field(default_factory=list)
    software: dict[str, Any] = field(default_factory=dict)  # status' check of the release
    metrics: Metrics = field(default_factory=Metrics)
    witness_up: bool | None = None  # the table's witness, as its last witness event said
    _roads_cache: dict[str, Any] | None = None

    # --- folding in ---------------------------------------------------------------

    def apply(self, event: Mapping[str, Any], *, now: float | None = None) -> set[str]:
        """Fold one event in; returns the topics that changed. Replayed history (an event
        older than the last one seen) is ignored, so a reconnect may overlap safely.
        `now` (seconds since the epoch) is given for live events, to measure their delay."""
        seq = int(event["seq"])
        if seq <= self.last_seq:
            return set()
        self.last_seq, self.last_mac = seq, event.get("hash")
        kind = str(event["kind"])
        self.metrics.events[kind] += 1
        if now is not None:
            self.metrics.observe_delay(max(0.0, now - float(event["at"])))
        handler = getattr(self, "_on_" + kind, None)
        if handler is None:
            return {LIVE}
        try:
            record = decode(kind, event.get("payload") or {})
        except EventDecodeError as exc:
            # A daemon of another release, or a damaged line: counted and logged, never
            # folded in half-read (the status answer stays the authority).
            self.metrics.undecodable[kind] += 1
            log.warning("event_undecodable", seq=seq, detail=str(exc))
            return {LIVE}
        changed: set[str] = handler(record, event)
        return changed | {LIVE}

    def _on_witness_up(self, record: s.WitnessUp, event: Mapping[str, Any]) -> set[str]:
        self.witness_up = True
        return set()

    def _on_witness_down(self, record: s.WitnessDown, event: Mapping[str, Any]) -> set[str]:
        self.witness_up = False
        return set()

    def _on_shoe_loaded(self, record: r.ShoeLoaded, event: Mapping[str, Any]) -> set[str]:
        self.shoe_no = record.shoe_no
        self.rounds, self.hands, self.cards = [], [], []
        self.last_hand = self.round_open = False
        self.notice = None
        self._roads_cache = None
        return {ROADS}

    def _on_prompt(self, record: r.Prompt, event: Mapping[str, Any]) -> set[str]:
        action = record.action
        self.prompt = record.payload()
        if action == "deal":
            self.next_card = record.next or None
        elif action in _CARD_PROMPTS:
            self.next_card = _CARD_PROMPTS[action]
        else:
            self.next_card = None
        if action == "place_bets":
            self.no_more_bets = False
            self.round_open = True
            self.round_no = record.round_no if record.round_no is not None \
                else self.round_no + 1
            self.cards, self.wagers, self.progressive_seats = [], {}, []
            self.progressive_wagers = {}
            self.seat_sensors = {}
        elif action == "last_hand":
            self.last_hand = True
        elif action == "jackpot":
            self.award = {"award_id": record.award_id, "seat": record.seat,
                          "progressive": record.progressive, "level": record.level,
                          "amount_cents": record.amount_cents}
            self.metrics.awards += 1
        return set()

    def _on_no_more_bets(self, record: r.NoMoreBets, event: Mapping[str, Any]) -> set[str]:
        self.no_more_bets = True
        self.progressive_seats = sorted(record.progressive_seats)
        return set()

    def _on_wager_accepted(self, record: r.WagerAccepted, event: Mapping[str, Any]) -> set[str]:
        self.wagers.setdefault(record.seat, []).append(
            {"wager": record.wager, "amount_cents": record.amount_cents})
        return set()

    def _on_progressive_accepted(self, record: p.ProgressiveAccepted,
                                 event: Mapping[str, Any]) -> set[str]:
        # The progressive wagers at the lock: accepted [{seat, amount_cents}].
        accepted = {int(w["seat"]): int(w["amount_cents"]) for w in record.accepted}
        self.progressive_seats = sorted(set(self.progressive_seats) | set(accepted))
        self.progressive_wagers.update(accepted)
        return set()

    def _on_seat_sensor(self, record: r.SeatSensor, event: Mapping[str, Any]) -> set[str]:
        self.seat_sensors[record.seat] = record.present
        return set()

    def _on_card(self, record: r.CardDealt, event: Mapping[str, Any]) -> set[str]:
        self.cards.append({"card": str(record.card), "hand": record.hand, "slot": record.slot,
                           "index": record.index})
        self.cards_left = None if self.cards_left is None else self.cards_left - 1
        self.next_card = None  # until the table's next prompt says where the next one goes
        if record.hand in ("player", "banker"):
            self.pay = None  # the next round is being dealt: the last one is paid
        return set()

    def _on_round_settled(self, record: r.RoundSettled, event: Mapping[str, Any]) -> set[str]:
        if record.simulated:
            return set()  # 631a.15(d): a simulated round is not a result of the shoe
        result = record.result
        self.pay = {"round_no": record.round_no, "void": False, "winner": result.winner,
                    "player": [str(c) for c in result.player],
                    "banker": [str(c) for c in result.banker],
                    "player_total": result.player_total,
                    "banker_total": result.banker_total,
                    "seats": pay_list(record.settlements)}
        self.round_open = False
        self.rounds.append(road_round(result))
        self.hands.append({"round_no": record.round_no, **result.payload()})
        del self.hands[:-RECENT_HANDS]
        self.metrics.rounds_settled += 1
        self._roads_cache = None
        return {ROADS}

    def _on_round_void(self, record: r.RoundVoid, event: Mapping[str, Any]) -> set[str]:
        self.metrics.rounds_void += 1
        self.round_open = False
        # 631a.15(e): what the first four cards settled stands, the rest is returned.
        self.pay = {"round_no": self.round_no, "void": True, "reason": record.reason,
                    "seats": pay_list(record.settlements)}
        return set()

    def _on_new_dealer(self, record: r.NewDealer, event: Mapping[str, Any]) -> set[str]:
        self.dealer = record.dealer or None
        return set()

    def name_dealer(self, payload: Mapping[str, Any]) -> None:
        """The dealer named before the shoe the board starts from (the service, connecting):
        the `new_dealer` entry read as the stream's would be; one that does not decode names
        nobody."""
        try:
            self.dealer = r.NewDealer.decode(payload).dealer or None
        except EventDecodeError:
            self.dealer = None

    def _on_cover_card(self, record: r.CoverCard, event: Mapping[str, Any]) -> set[str]:
        return set()

    def _on_cover_card_misplaced(self, record: r.CoverCardMisplaced,
                                 event: Mapping[str, Any]) -> set[str]:
        self.notice = record.detail
        return set()

    def _on_device_fault(self, record: r.DeviceFaulted, event: Mapping[str, Any]) -> set[str]:
        device = str(event.get("device") or "table")
        self.fault = {"device": device, "code": record.code, "detail": record.detail,
                      "action": record.action or _NO_ACTION}
        self.metrics.faults[(device, record.code)] += 1
        return set()

    def _clear_fault(self, record: r.DeviceRecovered | r.DeviceFaultCleared,
                     event: Mapping[str, Any]) -> set[str]:
        self.fault = None
        return set()

    _on_device_recovered = _clear_fault
    _on_device_fault_cleared = _clear_fault

    def _on_jackpot_validated(self, record: p.JackpotValidated,
                              event: Mapping[str, Any]) -> set[str]:
        if self.award is not None and self.award.get("award_id") == record.award_id:
            self.award = None
        return set()

    def apply_status(self, status: Mapping[str, Any]) -> set[str]:
        """The daemon's `status` answer is the authority on state, shoe and fault."""
        self.state = str(status.get("state", self.state))
        shoe = status.get("shoe") or {}
        self.cards_left = shoe.get("cards_left", self.cards_left)
        self.last_hand = bool(shoe.get("last_hand", self.last_hand))
        self.fault = status.get("fault") or (None if self.state != "device_fault" else self.fault)
        if self.state == "betting_open":
            self.no_more_bets = False
        nxt = (status.get("round") or {}).get("next")
        if nxt and self.state in ("no_more_bets", "dealing", "third_cards"):
            self.next_card = str(nxt)
        for key in ("table_id", "game", "variant", "seats"):
            if key in status:
                self.table.setdefault(key, status[key])
        if isinstance(status.get("software"), Mapping):
            self.software = dict(status["software"])
        return {LIVE}

    def apply_meters(self, meters: Sequence[Mapping[str, Any]]) -> set[str]:
        self.meters = [dict(m) for m in meters]
        return {LIVE}

    def apply_devices(self, devices: Sequence[Mapping[str, Any]]) -> set[str]:
        self.devices = [dict(d) for d in devices]
        return {LIVE}

    def reset(self) -> None:
        """Forget the table's history (the daemon's store was replaced)."""
        fresh = Board(table=self.table, metrics=self.metrics)
        self.__dict__.update(fresh.__dict__)

    # --- views --------------------------------------------------------------------

    def roads_view(self) -> dict[str, Any]:
        if self._roads_cache is None:
            self._roads_cache = {"shoe_no": self.shoe_no, **Roads(tuple(self.rounds)).to_json(),
                                 **shoe_stats(self.rounds), "hands": list(self.hands)}
        return self._roads_cache

    def live_view(self) -> dict[str, Any]:
        return {
            "table": self.table, "daemon_connected": self.daemon_connected,
            "seq": self.last_seq, "state": self.state, "shoe_no": self.shoe_no,
            "cards_left": self.cards_left, "round_no": self.round_no, "cards": self.cards,
            # The hand of the shoe: the settled hands, and the one in play if any, so the
            # header never runs ahead of the counts (631a.10(d): none after the last).
            "hand_no": len(self.rounds) + self.round_open, "dealer": self.dealer,
            "banner": banner(self.state, connected=self.daemon_connected,
                             fault=self.fault is not None),
            "last_hand_shown": last_hand_shown(self.state, self.last_hand),
            "totals": running_totals(str(self.table.get("game", "")), self.cards),
            "prompt": self.prompt, "next_card": self.next_card,
            "no_more_bets": self.no_more_bets, "last_hand": self.last_hand,
            "fault": self.fault,
            "seats": [{"seat": seat, "wagers": self.wagers.get(seat, []),
                       "progressive": seat in self.progressive_seats,
                       "progressive_cents": self.progressive_wagers.get(seat, 0),
                       "sensor": self.seat_sensors.get(seat, False)}
                      for seat in range(1, int(self.table.get("seats", 0)) + 1)],
            "meters": self.meters, "award": self.award, "notice": self.notice,
            "pay": self.pay,
        }

    def view(self, topic: str) -> dict[str, Any]:
        return self.roads_view() if topic == ROADS else self.live_view()
