"""A Banker wager's settlement as the table records it (controller.events.records.
SettledWager), for tests that close a store's round by hand with a given net."""

from __future__ import annotations

from controller.events.records import SettledWager


def banker_wager(seat: int, amount_cents: int, net_cents: int) -> SettledWager:
    """631a.13(c): a win pays even money less the vigorish (here: the amount less the net);
    a loss is the amount; a net of 0 is a push."""
    if net_cents > 0:
        return SettledWager(seat, "banker", amount_cents, "win", "1", amount_cents,
                            amount_cents - net_cents, 0, net_cents, "Banker wins", "631a.13(c)")
    outcome = "lose" if net_cents < 0 else "push"
    return SettledWager(seat, "banker", amount_cents, outcome, "0", 0, 0, 0, net_cents,
                        "Banker " + outcome + "s", "631a.8(a)(1)")
