"""Deal complete shuffled shoes through the engine (`tablectl simulate`); format in docs/simulate-format.md.

Randomness is handed in (a `random.Random`), so a seed reproduces every card.
Each shoe: shuffle, cut (631a.5(c)/681a.5(c)), second cover card
(631a.5(d)/681a.5(d)), burn (631a.5(f)/681a.7(c)), then rounds until the
cover card's round and, for 631a, one more (631a.10(d)); a round the shoe
cannot complete is void (631a.15(e)). Every round settles one unit of each
offered wager at both settlement points.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from controller.rules.baccarat import Hand, NextCard
from cards import Card, shoe_of
from controller.rules.game import Game
from controller.rules.money import format_cents
from controller.rules.settlement import PlacedWager, settle_round, void_round
from controller.rules.shoe import ShoePhase, cut_and_cover, phase_after_round
from controller.rules.wager import Settlement, SettlementPoint

SIM_SEAT = 1  # the one seat that holds every wager


def _card_obj(card: Card, hand: str) -> dict[str, Any]:
    return {"rank": card.rank.label, "suit": "CDHS"[card.suit], "card": str(card), "hand": hand}


def _hand_of(slot: NextCard) -> str:
    if slot in (NextCard.PLAYER_BONUS_EXTRA, NextCard.BANKER_BONUS_EXTRA):
        return "extra"
    return "player" if slot.hand is Hand.PLAYER else "banker"


def _settlement_obj(s: Settlement) -> dict[str, Any]:
    return {"wager": s.wager, "amount_cents": s.amount_cents, "outcome": s.outcome.value,
            "odds": f"{s.odds.numerator} to {s.odds.denominator}" if s.win_cents else None,
            "win_cents": s.win_cents, "vigorish_cents": s.vigorish_cents,
            "net_cents": s.net_cents, "label": s.label, "section": s.section}


@dataclass(frozen=True)
class SimulationOptions:
    shoes: int
    seed: int
    unit_cents: int = 10000


def stake_cents(game: Game, key: str, unit_cents: int) -> int:
    """What the simulated seat wagers on `key`: `unit_cents` brought within the wager's table
    limits; a wager with one fixed amount (Royal 9's denomination, 627b.3(f)-(g)) at that."""
    fixed = getattr(game.wager_rules[key], "denomination_cents", None)
    if isinstance(fixed, int):
        return fixed
    limits = next((wc for wc in game.submission.wagers if wc.key == key), None)
    amount = unit_cents
    if limits is not None and limits.min_cents is not None:
        amount = max(amount, limits.min_cents)
    if limits is not None and limits.max_cents is not None:
        amount = min(amount, limits.max_cents)
    return amount


def simulate(game: Game, options: SimulationOptions) -> Iterator[dict[str, Any]]:
    """Yield one JSON-ready object per round of `options.shoes` shoes."""
    rng = random.Random(options.seed)
    cfg = game.config
    bonus_offered = any(k.startswith("bonus_") for k in game.wager_rules)
    stakes = {key: stake_cents(game, key, options.unit_cents) for key in game.wager_rules}
    for shoe_no in range(1, options.shoes + 1):
        stack = shoe_of(cfg.decks)
        rng.shuffle(stack)
        n = len(stack)
        cut_at = rng.randint(cfg.cut.min_cut_cards, n - cfg.cut.min_cut_cards)
        shoe = cut_and_cover(stack, cut_at, cfg.cut.cover_card_from_bottom,
                             min_cut_cards=cfg.cut.min_cut_cards,
                             min_cover_from_bottom=cfg.cut.cover_card_from_bottom)
        pos = 0
        first = shoe.cards[0]
        burned = [_card_obj(c, "burn") for c in shoe.cards[: 1 + game.burn_count(first)]]
        pos = len(burned)
        phase = ShoePhase.PLAYING
        round_no = 0
        while phase is not ShoePhase.FINISHED:
            round_no += 1
            cards: list[dict[str, Any]] = burned if round_no == 1 else []
            cover_seen = False
            coup = game.new_coup(bonus_wagered=bonus_offered)
            wagers = [PlacedWager(SIM_SEAT, key, stakes[key]) for key in game.wager_rules]
            settlements: list[Settlement] = []
            void = False
            while not coup.complete:
                if pos >= n:
                    void = True  # 631a.15(e)
                    break
                if pos == shoe.cover_index:
                    cover_seen = True  # 631a.10(d), 681a.7(d)
                slot = coup.place(shoe.cards[pos])
                cards.append(_card_obj(shoe.cards[pos], _hand_of(slot)))
                pos += 1
                if coup.cards_dealt == 4 and not void:
                    settlements += settle_round(game, wagers, coup.round_view(),
                                                SettlementPoint.FIRST_FOUR_CARDS)
            record: dict[str, Any] = {"shoe": shoe_no, "round": round_no,
                                      "last_hand": phase is ShoePhase.LAST_HAND,
                                      "cards": cards}
            if void:
                settlements = void_round(wagers)
                record.update(void=True, player_total=None, banker_total=None, outcome="void")
                phase = ShoePhase.FINISHED
            else:
                settlements += settle_round(game, wagers, coup.round_view(),
                                            SettlementPoint.END_OF_ROUND)
                result = coup.result()
                record.update(void=False, player_total=result.player_total,
                              banker_total=result.banker_total, outcome=result.winner.value)
                if not cfg.is_21:
                    record.update(dragon_7=result.dragon_7, panda_8=result.panda_8)
                phase = phase_after_round(phase, cover_seen,
                                          reshuffle_at_cover=game.reshuffles_at_cover_card)
            record["cover_card"] = cover_seen
            record["settlements"] = [_settlement_obj(s) for s in settlements]
            record["seat_net_cents"] = sum(s.net_cents for s in settlements)
            yield record


def human_line(record: dict[str, Any]) -> str:
    """One readable line per round for `tablectl simulate` without --json."""
    by_hand: dict[str, list[str]] = {}
    for c in record["cards"]:
        by_hand.setdefault(c["hand"], []).append(c["card"])
    hands = "  ".join(f"{h}: {' '.join(cs)}" for h, cs in by_hand.items())
    flags = "".join([" [cover card]" if record["cover_card"] else "",
                     " [last hand]" if record["last_hand"] else "",
                     " [VOID]" if record["void"] else ""])
    totals = "" if record["void"] else f"P {record['player_total']} B {record['banker_total']} "
    return (f"shoe {record['shoe']} round {record['round']:3d}: {totals}{record['outcome']:<6} "
            f"net {signed_dollars(record['seat_net_cents'])}  {hands}{flags}")


def signed_dollars(cents: int) -> str:
    """A seat's result for people: +$9.50, -$25.00, $0.00."""
    return ("+" if cents > 0 else "") + format_cents(cents)
