"""What the scoreboard tells the floor beyond the roads: the banner the table's state
calls for, the hand number, the shoe's percentages and streaks, and the running totals
of the hand in play. Pure code: the Board (controller/display/board.py) calls it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cards import Card
from controller.display.roads import RoadRound, Winner
from controller.rules.baccarat import point_count
from controller.rules.hand21 import hand_total

# The states in which the hand being dealt (or about to be) still belongs to this shoe:
# "LAST HAND" is true only then. After the last hand's settlement the table is at the end
# of the shoe, shuffling, at the cut or burning the new shoe: the announcement is over.
ROUND_STATES = frozenset({"betting_open", "no_more_bets", "dealing", "first_four_settled",
                          "third_cards", "result", "settlement"})
# 631a.8(c): after the lock-out, until the round is settled, no wager may be placed.
LOCKED_STATES = frozenset({"no_more_bets", "dealing", "first_four_settled", "third_cards",
                           "result", "settlement"})
SHUFFLE_STATES = frozenset({"opening", "shuffling", "cut", "burn", "end_of_shoe"})
PAUSED_STATES = frozenset({"device_fault", "out_of_order"})


def banner(state: str, *, connected: bool, fault: bool) -> str:
    """The one announcement the scoreboard shows for the table's state: "open" (place your
    bets), "closed" (no more bets), "paused", "offline", "shuffle", "table_closed", or
    "none"."""
    if not connected:
        return "offline"
    if fault or state in PAUSED_STATES:
        return "paused"
    if state == "betting_open":
        return "open"
    if state in LOCKED_STATES:
        return "closed"
    if state == "closed":
        return "table_closed"
    if state in SHUFFLE_STATES:
        return "shuffle"
    return "none"


def last_hand_shown(state: str, last_hand: bool) -> bool:
    """631a.10(d), 681a.7(d): "last hand" is announced for the round after the cover card;
    it is not shown once that round is over (end of shoe, shuffle, cut, burn)."""
    return last_hand and state in ROUND_STATES


def percent(part: int, whole: int) -> int:
    """A share of the hands in whole percent, halves rounded up (0 when no hand)."""
    return (200 * part + whole) // (2 * whole) if whole else 0


def shoe_stats(rounds: Sequence[RoadRound]) -> dict[str, Any]:
    """Percentages of the hands and the streaks of the shoe. A streak counts consecutive
    Banker (or Player) wins; a tie neither extends nor breaks it, as on the Big Road."""
    n = len(rounds)
    wins = {w: sum(r.winner is w for r in rounds) for w in Winner}
    pairs = {"banker_pair": sum(r.banker_pair for r in rounds),
             "player_pair": sum(r.player_pair for r in rounds)}
    longest = {Winner.BANKER: 0, Winner.PLAYER: 0}
    current: Winner | None = None
    length = 0
    for r in rounds:
        if r.winner is Winner.TIE:
            continue
        length = length + 1 if r.winner is current else 1
        current = r.winner
        longest[current] = max(longest[current], length)
    ties_run = 0
    for r in reversed(rounds):
        if r.winner is not Winner.TIE:
            break
        ties_run += 1
    return {
        "percent": {**{w.value: percent(wins[w], n) for w in Winner},
                    **{k: percent(v, n) for k, v in pairs.items()}},
        "streak": {"winner": current.value if current else None, "length": length,
                   "longest_banker": longest[Winner.BANKER],
                   "longest_player": longest[Winner.PLAYER],
                   "ties_since": ties_run},
    }


def running_totals(game: str, cards: Sequence[dict[str, Any]]) -> dict[str, int | None]:
    """Each hand's total from the cards dealt to it so far (None before its first card):
    631a.6 Point Count in Baccarat, 681a.3(d) in 21 Baccarat. The dealer's screen shows
    them while the hand is dealt; after the settlement it shows the daemon's own."""
    totals: dict[str, int | None] = {}
    for hand in ("player", "banker"):
        try:
            dealt = [Card.parse(str(c["card"])) for c in cards if c.get("hand") == hand]
        except ValueError:  # never from the daemon; a total is not worth a broken page
            dealt = []
        if not dealt:
            totals[hand] = None
        elif game == "21-baccarat":
            totals[hand] = hand_total(int(c.rank) for c in dealt)[0]
        else:
            totals[hand] = point_count(dealt)
    return totals
