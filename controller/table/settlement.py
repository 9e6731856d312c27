"""A round's money: the settlement points of the coup, and a round closed unplayed.

The amounts are the rules engine's (`RulesAdapter.settle`, `void_round`); this part
records them, adds them to the round's record, and closes the round's row once.
"""

from __future__ import annotations

from typing import Any

from controller.rules.game import Coup
from controller.rules.settlement import void_round
from controller.rules.wager import Outcome, Settlement, SettlementPoint
from controller.table.parts import TableParts


class Settling:
    """Settles the open round at each point, or closes it void with its wagers returned."""

    def __init__(self, parts: TableParts, vig_collection: str) -> None:
        self._saved, self._rules, self._ports, self._journal, _ = parts
        self.vig_collection = vig_collection

    def settle_point(self, point: SettlementPoint, coup: Coup) -> None:
        """631a.9(e), 631a.12(b): what the coup settles at `point`, recorded and kept."""
        saved = self._saved
        settlements = [settlement_json(s, self.vig_collection)
                       for s in self._rules.settle(point, saved.wagers, coup)]
        if settlements:
            self._journal.record("settled_first_four_cards"
                                 if point is SettlementPoint.FIRST_FOUR_CARDS
                                 else "settled_end_of_round", {"settlements": settlements})
            saved.round_settlements.extend(settlements)
            self._journal.state_changed()  # money: its state change may be one the cards imply

    def close_unplayed(self, reason: str, section: str, *, wagers_stand: bool = False) -> None:
        """Close the open round void, every wager not yet settled returned (`section`); what
        the first four cards settled stands, so the record holds those settlements and the
        returns (`void_round`). The table's state and the wagers on the layout are the
        caller's to decide. No round is ever left open.

        `wagers_stand`: the caller keeps these wagers on the layout for the next live round
        (docs/rulings.md C19, C20), so they will be stored again in that round; the record
        says so, or an audit summing wagers over rounds would count them twice."""
        saved = self._saved
        assert saved.round_id is not None
        settled = {(s["seat"], s["wager"]) for s in saved.round_settlements}
        settlements = saved.round_settlements + [
            settlement_json(s, self.vig_collection)
            for s in void_round(saved.wagers, section, settled=settled)]
        outcome: dict[str, Any] = {"reason": reason}
        if wagers_stand:
            outcome["wagers_stand"] = True
        self._ports.store.close_round(saved.round_id, "void", outcome, settlements,
                                      saved.round_cards)
        progressive = self._ports.progressive
        if progressive is not None and not saved.simulated:
            returned = progressive.on_round_void(saved.round_id, reason)
            if returned:
                self._journal.record("progressive_wagers_returned",
                                     {"seats": [{"seat": seat, "cents": cents}
                                                for seat, cents in returned]})
        self._journal.record("round_void", {**outcome, "settlements": settlements},
                             severity="warning")
        saved.round_id, saved.round_settlements = None, []


def settlement_json(s: Settlement, vig_collection: str) -> dict[str, Any]:
    marked = s.vigorish_cents if vig_collection == "marked" else 0
    return {
        "seat": s.seat, "wager": s.wager, "amount_cents": s.amount_cents,
        "outcome": s.outcome.value, "odds": str(s.odds), "win_cents": s.win_cents,
        "vigorish_cents": s.vigorish_cents, "vig_marked_cents": marked,
        # With marked vigorish (631a.13(d)(2)) the seat keeps the full win until collection.
        "net_cents": s.net_cents + marked if s.outcome is Outcome.WIN else s.net_cents,
        "label": s.label, "section": s.section,
    }
