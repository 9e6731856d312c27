"""The seam between the table and the rules engine's `Game` (controller.rules.game)."""

from __future__ import annotations

from collections.abc import Sequence
from cards import Card
from controller.events.records import RoundResult
from controller.rules.game import Coup, Game
from controller.rules.settlement import PlacedWager, check_wager, settle_round
from controller.rules.wager import Settlement, SettlementPoint


class RulesAdapter:
    """What the table asks of the game: coups, the burn, wager checks and settlements."""

    def __init__(self, game: Game) -> None:
        self.game = game
        # Asked at every card (its facts, whether it is the shoe's last): the game is frozen.
        self._is_21 = game.config.is_21
        self.shoe_size = game.shoe_size

    def new_coup(self, wagers: Sequence[PlacedWager] = ()) -> Coup:
        # 681a.7(f)(2): the extra card after a natural is dealt only for Bonus wagers.
        return self.game.new_coup(bonus_wagered=any(w.wager.startswith("bonus_")
                                                    for w in wagers))

    @property
    def reshuffles_at_cover_card(self) -> bool:
        """681a: the shoe ends with the cover card's round; 631a.10(d) plays one more."""
        return self.game.reshuffles_at_cover_card

    @property
    def is_21(self) -> bool:
        """681a (21 Baccarat) rather than 631a: its irregularities are 681a.9's."""
        return self._is_21

    @property
    def disclosed_player_third(self) -> str:
        """The Rules Submission's 631a.15(c) choice: "discard" ((c)(1)) or "simulated-round"."""
        return self.game.config.disclosed_player_third

    def burn_count(self, first: Card) -> int:
        return self.game.burn_count(first)

    def offered(self) -> list[str]:
        return list(self.game.wager_rules)

    def without_base_wager(self, key: str) -> bool:
        """631c.7(b): the Rules Submission offers this wager without a Baccarat wager."""
        config = self.game.submission.wager(key)
        return bool(config is not None and config.without_base_wager)

    def check_wager(self, wager: PlacedWager) -> str | None:
        return check_wager(self.game, wager)

    def settle(self, point: SettlementPoint, wagers: Sequence[PlacedWager], coup: Coup
               ) -> list[Settlement]:
        return settle_round(self.game, wagers, coup.round_view(), point)

    @staticmethod
    def result_summary(coup: Coup) -> RoundResult:
        return RoundResult.of(coup.round_view(), coup.result())
