"""A round's money: the settlement points of the coup, and a round closed unplayed.

The amounts are the rules engine's (`RulesAdapter.settle`, `void_round`, and the seat's
net with marked vigorish, `Settlement.seat_net_cents`); this part records them as
`SettledWager` records, adds them to the round's record, and closes the round's row once
(its settlements' texts are those their log entries wrote: controller/memory/part_texts.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from controller.events import records as ev
from controller.events.progressive_records import ProgressiveWagersReturned
from controller.rules.game import Coup
from controller.rules.settlement import void_round
from controller.rules.wager import Settlement, SettlementPoint
from controller.table.parts import TableParts


class Settling:
    """Settles the open round at each point, or closes it void with its wagers returned."""

    def __init__(self, parts: TableParts, vig_collection: str) -> None:
        self._saved, self._rules, self._ports, self._journal, _ = parts
        self.vig_collection = vig_collection

    def settle_point(self, point: SettlementPoint, coup: Coup) -> None:
        """631a.9(e), 631a.12(b): what the coup settles at `point`, recorded and kept."""
        saved = self._saved
        settlements = self._settled(self._rules.settle(point, saved.wagers, coup))
        if settlements:
            self._journal.record(ev.SettledFirstFourCards(settlements)
                                 if point is SettlementPoint.FIRST_FOUR_CARDS
                                 else ev.SettledEndOfRound(settlements))
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
        settled = {(s.seat, s.wager) for s in saved.round_settlements}
        settlements = (*saved.round_settlements,
                       *self._settled(void_round(saved.wagers, section, settled=settled)))
        outcome = ev.VoidOutcome(reason, wagers_stand)
        self._ports.store.close_round(saved.round_id, "void", outcome, settlements,
                                      saved.round_cards)
        progressive = self._ports.progressive
        if progressive is not None and not saved.simulated:
            returned = progressive.on_round_void(saved.round_id, reason)
            if returned:
                self._journal.record(ProgressiveWagersReturned(tuple(
                    {"seat": seat, "cents": cents} for seat, cents in returned)))
        self._journal.record(ev.RoundVoid(reason, settlements, wagers_stand=wagers_stand))
        saved.round_id, saved.round_settlements, saved.round_cards = None, [], []

    def _settled(self, settlements: Iterable[Settlement]) -> tuple[ev.SettledWager, ...]:
        """631a.13(d)(1)-(2): each as the log and the round record carry it, with the
        vigorish marked at the seat when the Rules Submission marks it."""
        marked = self.vig_collection == "marked"
        return tuple(ev.SettledWager.of(s, vigorish_marked=marked) for s in settlements)
