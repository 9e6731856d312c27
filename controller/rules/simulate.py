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

from cards import shoe_of
from controller.rules.dealing import (
    Action, Bet, Cover, Draw, Lock, NewDealer, RoundProgressive, ShoeDealing,
)
from controller.rules.game import Game
from controller.rules.money import format_cents
from controller.rules.procedure import Phase
from controller.rules.settlement import PlacedWager
from controller.rules.shoe import PreparedShoe, cut_and_cover

SIM_SEAT = 1  # the one seat that holds every wager


@dataclass(frozen=True)
class SimulationOptions:
    shoes: int
    seed: int
    unit_cents: int = 10000
    # Irregularities the simulated dealer commits, per card or round, scaled by this
    # factor (0: none, the default): cards found face up (631a.15(d), 681a.9(a)), cards
    # lost to a reader outage (docs/rulings.md C7), new dealers (681a.7(c)) and cards
    # drawn by accident to a finished 21 Baccarat hand (681a.9(b)).
    irregularities: float = 0.0


FACE_UP_PER_CARD = 0.005
LOST_PER_CARD = 0.001
NEW_DEALER_PER_ROUND = 0.02
ACCIDENTAL_DRAW_PER_ROUND = 0.05
QUIET_CARDS_AT_THE_END = 20  # no irregularity this close to the end: the shoe must finish


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


def simulate(game: Game, options: SimulationOptions,
             progressive: RoundProgressive | None = None) -> Iterator[dict[str, Any]]:
    """Yield one JSON-ready object per round of `options.shoes` shoes."""
    for _, _, records in deal_shoes(game, options, progressive):
        yield from records


def deal_shoes(game: Game, options: SimulationOptions,
               progressive: RoundProgressive | None = None,
               ) -> Iterator[tuple[int, list[Action], list[dict[str, Any]]]]:
    """Each shoe's number, the dealer's actions in order, and its round records. With a
    `progressive` (the table's `[progressive.<name>]`), the seat also places one unit on it
    every round, and its meters carry over from shoe to shoe."""
    rng = random.Random(options.seed)
    # Irregularities draw from their own generator, so a seed deals the same cards with
    # or without them.
    irregular = random.Random(options.seed * 1_000_003 + 17)
    cfg = game.config
    stakes = tuple(PlacedWager(SIM_SEAT, key, stake_cents(game, key, options.unit_cents))
                   for key in game.wager_rules)
    if progressive is not None:
        stakes += (PlacedWager(SIM_SEAT, progressive.wager_key,
                               progressive.stake_cents(options.unit_cents)),)
    for shoe_no in range(1, options.shoes + 1):
        stack = shoe_of(cfg.decks)
        rng.shuffle(stack)
        n = len(stack)
        cut_at = rng.randint(cfg.cut.min_cut_cards, n - cfg.cut.min_cut_cards)
        shoe = cut_and_cover(stack, cut_at, cfg.cut.cover_card_from_bottom,
                             min_cut_cards=cfg.cut.min_cut_cards,
                             min_cover_from_bottom=cfg.cut.cover_card_from_bottom)
        actions: list[Action] = []
        records: list[dict[str, Any]] = []
        dealing = ShoeDealing(game, shoe_no, progressive)
        for action in _dealer(dealing, shoe, stakes, irregular, options.irregularities):
            actions.append(action)
            records += dealing.apply(action)
        yield shoe_no, actions, records


def _dealer(dealing: ShoeDealing, shoe: PreparedShoe, stakes: tuple[PlacedWager, ...],
            rng: random.Random, scale: float) -> Iterator[Action]:
    """What the simulated dealer does next, following the table's phase as a dealer follows
    the prompts; with `scale` > 0 the dealer also commits irregularities."""
    n, pos = len(shoe.cards), 0
    twenty_one = dealing.game.config.is_21

    def chance(rate: float) -> bool:
        return scale > 0 and pos < n - QUIET_CARDS_AT_THE_END and rng.random() < rate * scale

    def draw(face_up: bool = False, lost: bool = False) -> Iterator[Action]:
        nonlocal pos
        if pos == shoe.cover_index:
            yield Cover(pos)  # 631a.10(d), 681a.7(d): it comes out before this card
        yield Draw(pos, shoe.cards[pos], face_up, lost)
        pos += 1

    while not dealing.finished and pos < n:
        if dealing.phase is Phase.BURN:
            yield from draw()
        elif dealing.phase is Phase.BETTING and not dealing.wagers:
            if twenty_one and dealing.extra_card_window and chance(ACCIDENTAL_DRAW_PER_ROUND):
                yield from draw()  # 681a.9(b): drawn by accident to the finished hands
            if chance(NEW_DEALER_PER_ROUND):
                yield NewDealer()
                if twenty_one:
                    yield from draw()  # 681a.7(c): the new dealer's burn card
            yield Bet(stakes)
            if not twenty_one and chance(FACE_UP_PER_CARD * 10):
                yield from draw(face_up=True)  # 631a.15(d): opens a simulated round
        elif dealing.phase is Phase.BETTING:
            # "No more bets", or (627b.3(a)(2), docs/rulings.md C1) the first card locks.
            if chance(0.5):
                yield from draw()
            else:
                yield Lock()
        elif dealing.phase is Phase.DEALING and chance(FACE_UP_PER_CARD):
            yield from draw(face_up=True)
        elif dealing.phase in (Phase.DEALING, Phase.LOCKED) and chance(LOST_PER_CARD):
            yield from draw(lost=True)
        else:
            yield from draw()


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
