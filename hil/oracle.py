"""An independent reading of 631a for HIL checks: it shares no code with the rules engine.

Table 1 is typed from the regulation a second time on purpose, and payouts are
recomputed from 631a.13 for the simulated table's configuration (Tie 8 to 1,
5% vigorish collected at payout, rounded up to the cent, no 25¢ round-up).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cards import Card

# 631a.11(c)(2)(iii), Table 1: row = Banker's two-card Point Count, column = value of
# the Player's third card; D draw, S stay.
TABLE_1 = {
    3: "DDDDDDDDSD",
    4: "SSDDDDDDSS",
    5: "SSSSDDDDSS",
    6: "SSSSSSDDSS",
}


def value(card: str) -> int:
    """631a.6(a)."""
    rank = Card.parse(card).rank
    return 0 if rank >= 10 else int(rank)


def points(cards: Iterable[str]) -> int:
    """631a.6(b)."""
    return sum(value(c) for c in cards) % 10


def expected_draws(player: list[str], banker: list[str]) -> tuple[bool, bool]:
    """Whether each hand should have a third card, from 631a.11 alone."""
    p2, b2 = points(player[:2]), points(banker[:2])
    if p2 >= 8 or b2 >= 8:  # 631a.11(a)
        return False, False
    if p2 > 5:  # 631a.11(b)(2)
        return False, b2 <= 5  # 631a.11(c)(1)
    third = value(player[2])
    if b2 <= 2:  # 631a.11(c)(2)(i)
        return True, True
    if b2 == 7:  # 631a.11(c)(2)(ii)
        return True, False
    return True, TABLE_1[b2][third] == "D"  # 631a.11(c)(2)(iii)


def expected_net(wager: str, amount: int, player_total: int, banker_total: int
                 ) -> tuple[int, int]:
    """(net cents to the seat, vigorish cents) under 631a.8(a) and 631a.13."""
    if player_total == banker_total:
        return (8 * amount, 0) if wager == "tie" else (0, 0)  # 631a.13(b); 631a.8(a)(1)(iii)
    banker_won = banker_total > player_total
    if wager == "tie":
        return -amount, 0  # 631a.8(a)(3)(ii)
    if wager == "player":
        return (amount, 0) if not banker_won else (-amount, 0)  # 631a.13(a)
    if banker_won:
        vig = -(-amount * 5 // 100)  # 631a.13(c): 5% of the amount won, up to the next cent
        return amount - vig, vig
    return -amount, 0


def check_round(record: Mapping[str, Any]) -> list[str]:
    """Everything wrong with one stored round, by the independent reading; [] if nothing."""
    problems: list[str] = []
    rid = record.get("round_id")
    if record["state"] == "void":
        # 631a.15(e): the Banker, Player and Tie wagers settle at the end of the round, so a
        # void returns them; a wager settled at the first four cards keeps its settlement
        # (docs/rulings.md C7), which this reading of the main game does not judge.
        for s in record["settlements"]:
            if s["wager"] in ("banker", "player", "tie") and s["net_cents"] != 0:
                problems.append(f"round {rid}: void but seat {s['seat']} moved {s['net_cents']}")
        return problems
    cards = record["cards"]
    player = [c["card"] for c in cards if c["hand"] == "player"]
    banker = [c["card"] for c in cards if c["hand"] == "banker"]
    order = ["player", "banker", "player", "banker"]
    if [c["hand"] for c in cards[:4]] != order[:min(4, len(cards))]:
        problems.append(f"round {rid}: first four cards not dealt P, B, P, B (631a.9(c))")
    if record["state"] == "open":
        return problems  # still being dealt: nothing settled yet
    if expected_draws(player, banker) != (len(player) == 3, len(banker) == 3):
        problems.append(f"round {rid}: draw breaks 631a.11 ({player} vs {banker})")
    result = record["result"]
    if (result["player_total"], result["banker_total"]) != (points(player), points(banker)):
        problems.append(f"round {rid}: totals differ from 631a.6")
    for s in record["settlements"]:
        net, vig = expected_net(s["wager"], s["amount_cents"], points(player), points(banker))
        if (s["net_cents"], s["vigorish_cents"]) != (net, vig):
            problems.append(f"round {rid}: seat {s['seat']} {s['wager']} {s['amount_cents']}¢ "
                            f"settled {s['net_cents']}/{s['vigorish_cents']}, expected {net}/{vig}")
    return problems
