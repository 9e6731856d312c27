"""Registers every 631c and 627b wager with the wager registry (controller.rules.registry).

Imported by `load_rules()` with the rest of this package. Families: 631c
wagers are offered at `baccarat` tables, 627b wagers at `minibaccarat`
tables; the commission-free Banker and Tie replace the main wagers for
`variant = "commission-free"` only. Payout rounding follows
`[game] payout_rounding`.
"""

from __future__ import annotations

from collections.abc import Callable

from controller.rules.baccarat import Hand
from controller.rules.registry import wager_rule
from controller.rules.side.commission_free import (
    SIX_SIX_TIE_RULES, CommissionFreeBanker, CommissionFreeTie, LuckySix, commission_free_pair,
)
from controller.rules.side.common import SideWagerConfigError
from controller.rules.side.five_treasures import Treasure, make_five_treasures
from controller.rules.side.golden_talons import make_golden_talons
from controller.rules.side.harmony import make_harmony
from controller.rules.side.heavenly9 import MINIMUM_WAGER_CENTS as HEAVENLY_9_MINIMUM_CENTS
from controller.rules.side.heavenly9 import make_heavenly_9
from controller.rules.side.lucky_nines import make_lucky_nines
from controller.rules.side.majestic_match import MajesticMatch
from controller.rules.side.perfect_pairs import make_perfect_pairs
from controller.rules.side.rising_phoenix import (
    RISING_PHOENIX_BONUSES, RisingPhoenixBanker, RisingPhoenixBonus, rising_phoenix_pair,
)
from controller.rules.side.royal9 import make_royal_9
from controller.rules.submission_types import GameConfig, WagerConfig
from controller.rules.wager import WagerRule

BACCARAT, MINIBACCARAT = frozenset({"baccarat"}), frozenset({"minibaccarat"})
SECTION_BY_FAMILY = {"baccarat": ("631c.1", "631c.5"), "minibaccarat": ("627b.1", "627b.2")}
HANDS = {"player": Hand.PLAYER, "banker": Hand.BANKER}
Factory = Callable[[WagerConfig, GameConfig], WagerRule]


# --- Perfect Pairs, 631c.1 / 627b.1 -------------------------------------------------------------

def _perfect_pairs(hand: Hand) -> Factory:
    def make(config: WagerConfig, game: GameConfig) -> WagerRule:
        section = SECTION_BY_FAMILY[game.family][0]
        return make_perfect_pairs(config.key, section, hand, config.paytable,
                                  game.payout_rounding)
    return make


for _side, _hand in HANDS.items():
    for _family, (_pp, _cf) in SECTION_BY_FAMILY.items():
        wager_rule(f"perfect_pairs_{_side}", section=_pp, families={_family},
                   paytables=("A", "B", "C"),
                   description=f"Perfect Pairs on the {_side}'s hand")(_perfect_pairs(_hand))


# --- Commission-free, 631c.5 / 627b.2 -----------------------------------------------------------

def _cf_banker(config: WagerConfig, game: GameConfig) -> WagerRule:
    rising_phoenix = config.options.get("rising_phoenix", False)
    if not isinstance(rising_phoenix, bool) or (rising_phoenix and game.family != "minibaccarat"):
        raise SideWagerConfigError(config.key, "rising_phoenix", rising_phoenix,
                                   "true or false; true only for a minibaccarat table "
                                   "(627b.4(b))")
    if rising_phoenix:
        _rising_phoenix_decks(config, game)
        # 627b.4(g)(1)(iv) and (h)(1): a winning 3-card 7 pushes; no 1-to-2 on a 6.
        return RisingPhoenixBanker(config.key, True, game.payout_rounding)
    return CommissionFreeBanker(config.key, SECTION_BY_FAMILY[game.family][1],
                                game.payout_rounding)


for _family in SECTION_BY_FAMILY:
    _section = SECTION_BY_FAMILY[_family][1]
    wager_rule("banker", section=f"{_section}(i)", families={_family},
               variants={"commission-free"},
               options={"rising_phoenix": "true: the commission-free Rising Phoenix Banker "
                                           "of 627b.4(g)(1)(iv) (minibaccarat only)"},
               description="Banker's Hand, commission-free")(_cf_banker)


def _cf_tie(config: WagerConfig, game: GameConfig) -> WagerRule:
    if game.tie_odds != 8:
        raise SideWagerConfigError(config.key, "game.tie.odds", f"{game.tie_odds} to 1",
                                   "commission-free play pays a Tie at exactly 8 to 1 "
                                   "(631c.5(j), 627b.2(j))")
    return CommissionFreeTie(config.key, SECTION_BY_FAMILY[game.family][1], game.payout_rounding)


def _cf_pair(hand: Hand) -> Factory:
    def make(config: WagerConfig, game: GameConfig) -> WagerRule:
        return commission_free_pair(config.key, SECTION_BY_FAMILY[game.family][1], hand,
                                    game.payout_rounding)
    return make


def _lucky_six(config: WagerConfig, game: GameConfig) -> WagerRule:
    six_six = config.options.get("six_six_tie", "loses")
    if six_six not in SIX_SIX_TIE_RULES:
        raise SideWagerConfigError(config.key, "six_six_tie", six_six,
                                   f"one of {', '.join(map(repr, SIX_SIX_TIE_RULES))} "
                                   "(docs/rulings.md: Lucky Six on a 6-6 tie)")
    return LuckySix(config.key, SECTION_BY_FAMILY[game.family][1], game.payout_rounding,
                    six_six_tie=six_six)


for _family in SECTION_BY_FAMILY:
    _section = SECTION_BY_FAMILY[_family][1]
    wager_rule("tie", section=f"{_section}(j)", families={_family}, variants={"commission-free"},
               description="Tie, commission-free (8 to 1)")(_cf_tie)
    for _side, _hand in HANDS.items():
        wager_rule(f"{_side}_pair", section=f"{_section}(c)", families={_family},
                   variants={"commission-free"},
                   description=f"{_side.title()} Pair, 11 to 1")(_cf_pair(_hand))
    wager_rule("lucky_six", section=f"{_section}(c)(3)", families={_family},
               variants={"commission-free"}, description="Lucky Six",
               options={"six_six_tie": "'loses' (default) or 'returned': a 6-6 tie "
                                       "(docs/rulings.md)"})(_lucky_six)


# --- 631c: Heavenly 9, 5 Treasures, Lucky Nines, Majestic Match ---------------------------------

@wager_rule("heavenly_9_progressive", section="631c.2", families=BACCARAT, progressive=True,
            options={"mystery": "Must-Hit-By Mystery configuration 'A'..'D' (631c.6(c)(4))",
                     "mystery_wager_dollars": "1, 2 or 5: the configuration's minimum "
                                              "progressive wager (631c.6(c)(4))"},
            description="Heavenly 9 progressive")
def _heavenly_9(config: WagerConfig, game: GameConfig) -> WagerRule:
    # 631c.2(c): a Heavenly 9 wager is no less than $5; refused here, not at settlement.
    if config.min_cents is None or config.min_cents < HEAVENLY_9_MINIMUM_CENTS:
        raise SideWagerConfigError(
            config.key, "min_cents", config.min_cents,
            f"required, at least {HEAVENLY_9_MINIMUM_CENTS} (631c.2(c): no less than $5)")
    return make_heavenly_9(config.key, config.options.get("mystery"),
                           config.options.get("mystery_wager_dollars"), game.payout_rounding)


def _treasure(treasure: Treasure) -> Factory:
    def make(config: WagerConfig, game: GameConfig) -> WagerRule:
        return make_five_treasures(treasure, config.paytable, game.payout_rounding)
    return make


for _treasure_kind in Treasure:
    wager_rule(_treasure_kind.key, section=_treasure_kind.clause, families=BACCARAT,
               paytables=("A", "B"),
               description=f"5 Treasures {_treasure_kind.name.replace('_', ' ').title()}"
               )(_treasure(_treasure_kind))


@wager_rule("lucky_nines", section="631c.4", families=BACCARAT, paytables=("A", "B", "C", "D"),
            description="Lucky Nines (fully automated tables only)")
def _lucky_nines(config: WagerConfig, game: GameConfig) -> WagerRule:
    return make_lucky_nines(config.key, config.paytable, game.fully_automated,
                            game.payout_rounding)


def _majestic(hand: Hand) -> Factory:
    def make(config: WagerConfig, game: GameConfig) -> WagerRule:
        return MajesticMatch(config.key, hand, game.payout_rounding)
    return make


for _side, _hand in HANDS.items():
    wager_rule(f"majestic_match_{_side}", section="631c.7", families=BACCARAT,
               description=f"Majestic Match on the {_side}'s hand")(_majestic(_hand))


# --- 627b: Royal 9, Rising Phoenix, Golden Talons, Harmony --------------------------------------

@wager_rule("royal_9_progressive", section="627b.3", families=MINIBACCARAT, progressive=True,
            options={
                "denomination_dollars": "1 or 5 (627b.3(f)-(g))",
                "meters": "mega/major/minor tables of reset_cents and increment_percent "
                          "(627b.3(f)(2), (g)(2))",
                "personal_combinations": "seat = 'KS9H' for every position (627b.3(e)(5)); "
                                         "default: the documented layout order",
                "positions": "how many positions the layout has (default 14)",
                "mystery": "mystery progressive configuration 1, 2 or 3 (627b.3(h))",
                "suited_tie_over_personal": "true (default): a Suited Royal 9 Tie that is also "
                                            "a personal Major/Minor pays the fixed amount "
                                            "(docs/rulings.md); false: the meter",
            },
            description="Royal 9 progressive")
def _royal_9(config: WagerConfig, game: GameConfig) -> WagerRule:
    positions = config.options.get("positions", 14)
    if isinstance(positions, bool) or not isinstance(positions, int) or not 1 <= positions <= 16:
        raise SideWagerConfigError(config.key, "positions", positions,
                                   "an integer 1..16 (one unique King 9 per position)")
    return make_royal_9(config.key, config.options.get("denomination_dollars"),
                        config.options.get("meters"), config.options.get("personal_combinations"),
                        config.options.get("mystery"), positions, game.payout_rounding,
                        config.options.get("suited_tie_over_personal", True))


def _rising_phoenix_decks(config: WagerConfig, game: GameConfig) -> None:
    """627b.4(f): Rising Phoenix is dealt from six or eight decks (seven is not allowed)."""
    if game.decks not in (6, 8):
        raise SideWagerConfigError(config.key, "game.decks", game.decks,
                                   "Rising Phoenix is played with 6 or 8 decks (627b.4(f))")


def _phoenix(bonus_index: int) -> Factory:
    def make(config: WagerConfig, game: GameConfig) -> WagerRule:
        _rising_phoenix_decks(config, game)
        return RisingPhoenixBonus(config.key, RISING_PHOENIX_BONUSES[bonus_index],
                                  game.payout_rounding)
    return make


for _i, _bonus in enumerate(RISING_PHOENIX_BONUSES):
    wager_rule(f"rising_phoenix_{_bonus.key}", section=_bonus.clause, families=MINIBACCARAT,
               description=f"Rising Phoenix {_bonus.label}")(_phoenix(_i))


def _phoenix_pair(name: str) -> Factory:
    def make(config: WagerConfig, game: GameConfig) -> WagerRule:
        _rising_phoenix_decks(config, game)
        return rising_phoenix_pair(name, config.key, game.payout_rounding)
    return make


for _name in ("player_pair", "banker_pair"):
    wager_rule(f"rising_phoenix_{_name}", section="627b.4(g)(4)", families=MINIBACCARAT,
               description=f"Rising Phoenix {_name.replace('_', ' ')}")(_phoenix_pair(_name))


def _golden_talons(hand: Hand) -> Factory:
    def make(config: WagerConfig, game: GameConfig) -> WagerRule:
        return make_golden_talons(config.key, hand, config.paytable, game.payout_rounding)
    return make


for _side, _hand in HANDS.items():
    wager_rule(f"golden_talons_{_side}", section="627b.5", families=MINIBACCARAT,
               paytables=tuple("ABCDE"),
               description=f"Golden Talons on the {_side}'s hand")(_golden_talons(_hand))


@wager_rule("harmony_progressive", section="627b.6", families=MINIBACCARAT, progressive=True,
            paytables=tuple("ABCDEFGHI"),
            options={"reseed_cents": "the meter's seed and reseed amount in cents"},
            description="Harmony progressive")
def _harmony(config: WagerConfig, game: GameConfig) -> WagerRule:
    return make_harmony(config.key, config.paytable, config.options.get("reseed_cents"),
                        game.payout_rounding, config.min_cents or 500)
