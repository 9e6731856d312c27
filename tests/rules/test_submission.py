"""Rules Submission parsing (601a.2 by reference): every error named with file, key, value, allowed."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from controller.rules.game import build_game
from controller.rules.money import Rounding
from controller.rules.submission import (
    OTHER_OWNED_SECTIONS, SubmissionError, load_submission, parse_submission,
)
from controller.rules.submission_types import VigorishConfig

from tests.rules.helpers import CONFIG

SHIPPED = sorted(CONFIG.glob("*.toml"))
MINE = ["baccarat-8deck.toml", "baccarat-ez.toml", "baccarat-6deck-marked-vig.toml",
        "baccarat-house-money.toml", "21-baccarat-4deck.toml", "21-baccarat-8deck.toml"]


def base(**game: Any) -> dict[str, Any]:
    g: dict[str, Any] = {"family": "baccarat", "decks": 8, "variant": "standard",
                         "vigorish": {"collection": "at-payout"}}
    g.update(game)
    return {"table": {"id": "T1", "seats": 14}, "game": g,
            "wagers": {"banker": {}, "player": {}, "tie": {}}}


def errors(data: dict[str, Any]) -> list[str]:
    with pytest.raises(SubmissionError) as info:
        parse_submission(data, "t.toml")
    assert all(line.startswith("t.toml: ") for line in info.value.errors)
    return list(info.value.errors)


@pytest.mark.parametrize("name", MINE)
def test_shipped_configurations_are_valid(name: str) -> None:
    build_game(load_submission(CONFIG / name))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_config_in_config_dir_parses(path: Path) -> None:
    load_submission(path)


def test_other_owned_sections_are_ignored() -> None:
    data = base()
    for name in OTHER_OWNED_SECTIONS:
        data[name] = {"anything": 1}
    parse_submission(data, "t.toml")


def test_unknown_keys_are_errors_with_dotted_path() -> None:
    data = base()
    data["game"]["colour"] = "red"
    data["wagers"]["tie"]["colour"] = "red"
    data["extra"] = {}
    errs = errors(data)
    assert any("game.colour = 'red': unknown key" in e for e in errs)
    assert any("wagers.tie.colour" in e for e in errs)
    assert any(e.startswith("t.toml: extra = ") for e in errs)


@pytest.mark.parametrize("seats,ok", [(9, False), (10, True), (14, True), (15, False)],
                         ids=lambda x: f"631a.2(a)-{x}")
def test_631a_2_a_ten_to_fourteen_seats(seats: int, ok: bool) -> None:
    data = base()
    data["table"]["seats"] = seats
    if ok:
        parse_submission(data, "t.toml")
    else:
        assert any("table.seats" in e and "10..14" in e for e in errors(data))


@pytest.mark.parametrize("decks,ok", [(5, False), (6, True), (7, True), (8, True), (9, False)])
def test_631a_3_a_six_to_eight_decks(decks: int, ok: bool) -> None:
    data = base(decks=decks)
    if ok:
        parse_submission(data, "t.toml")
    else:
        assert any("game.decks" in e and "631a.3(a)" in e for e in errors(data))


@pytest.mark.parametrize("decks,ok", [(4, True), (6, False), (8, True)])
def test_681a_3_a_four_or_eight_decks(decks: int, ok: bool) -> None:
    data = {"table": {"id": "T", "seats": 8}, "game": {"family": "21-baccarat", "decks": decks},
            "wagers": {"banker": {}, "player": {}}}
    if ok:
        parse_submission(data, "t.toml")
    else:
        assert any("681a.3(a)" in e for e in errors(data))


def test_681a_2_a_no_more_than_eight_players() -> None:
    data = {"table": {"id": "T", "seats": 9}, "game": {"family": "21-baccarat", "decks": 8},
            "wagers": {"banker": {}, "player": {}}}
    assert any("681a.2(a)" in e for e in errors(data))


@pytest.mark.parametrize("odds,ok", [("7 to 1", False), ("8 to 1", True), ("9 to 1", True),
                                     ("8 for 1", False)])
def test_631a_13_b_tie_at_least_8_to_1(odds: str, ok: bool) -> None:
    data = base(tie={"odds": odds})
    if ok:
        assert parse_submission(data, "t.toml").game.tie_odds >= 8
    else:
        assert any("game.tie.odds" in e for e in errors(data))


def test_681a_8_b_tie_must_be_10_to_1() -> None:
    data = {"table": {"id": "T", "seats": 8},
            "game": {"family": "21-baccarat", "decks": 8, "tie": {"odds": "8 to 1"}},
            "wagers": {"banker": {}, "player": {}}}
    assert any("681a.8(b)" in e for e in errors(data))


@pytest.mark.parametrize("collection", ["at-payout", "marked"],
                         ids=["631a.13(d)(1)", "631a.13(d)(2)"])
def test_631a_13_d_collection_choice(collection: str) -> None:
    sub = parse_submission(base(vigorish={"collection": collection}), "t.toml")
    assert sub.game.vigorish is not None and sub.game.vigorish.collection == collection


def test_631a_13_d_collection_required_for_standard_game() -> None:
    data = base()
    del data["game"]["vigorish"]
    assert any("game.vigorish" in e and "631a.13(d)" in e for e in errors(data))


def test_631a_13_c_ez_forbids_vigorish() -> None:
    assert any("EZ" in e for e in errors(base(variant="ez")))


def test_631a_8_a_5_ez_only_wagers_rejected_on_standard_table() -> None:
    data = base()
    data["wagers"]["dragon_7"] = {}
    assert any("wagers.dragon_7" in e and "no such wager" in e for e in errors(data))


def test_631a_13_e_dragon_bonus_paytable_letter() -> None:
    data = base()
    data["wagers"]["dragon_bonus_player"] = {"paytable": "D"}
    assert any("wagers.dragon_bonus_player.paytable = 'D'" in e and "'A', 'B', 'C'" in e
               for e in errors(data))


def test_681a_8_c_bonus_paytable_letters_by_deck_count() -> None:
    data = {"table": {"id": "T", "seats": 8}, "game": {"family": "21-baccarat", "decks": 8},
            "wagers": {"banker": {}, "player": {}, "bonus_player": {"paytable": "A"}}}
    assert any("'D', 'E', 'F'" in e for e in errors(data))


def test_681a_1_natural_rule_choices() -> None:
    """681a.1/681a.3(d): how naturals compare is the Rules Submission's choice (docs/rulings.md)."""
    def data(naturals: object, family: str = "21-baccarat") -> dict:
        return {"table": {"id": "T", "seats": 8},
                "game": {"family": family, "decks": 8, "naturals": naturals},
                "wagers": {"banker": {}, "player": {}}}

    assert parse_submission(data({}), "t.toml").game.natural_rule == "natural-wins"
    assert parse_submission(data({"rule": "as-21"}), "t.toml").game.natural_rule == "as-21"
    assert errors(data({"rule": "blackjack"})) == [
        "t.toml: game.naturals.rule = 'blackjack': must be one of 'natural-wins', 'as-21', "
        "'by-total' (681a.1, 681a.3(d), docs/rulings.md)"]
    assert any("game.naturals" in e and "only for game.family = '21-baccarat'" in e
               for e in errors(base(naturals={"rule": "as-21"})))


def test_631a_15_c_irregularity_option() -> None:
    sub = parse_submission(base(irregularities={"disclosed_player_third": "simulated-round"}),
                           "t.toml")
    assert sub.game.disclosed_player_third == "simulated-round"
    assert any("631a.15(c)" in e for e in errors(base(irregularities={
        "disclosed_player_third": "burn"})))


@pytest.mark.parametrize("cut,cover,ok", [(9, 14, False), (10, 14, True), (10, 13, False)],
                         ids=["631a.5(c)-9", "631a.5(d)-14", "631a.5(d)-13"])
def test_631a_5_cut_and_cover_card_limits(cut: int, cover: int, ok: bool) -> None:
    data = base(cut={"min_cut_cards": cut, "cover_card_from_bottom": cover})
    if ok:
        parse_submission(data, "t.toml")
    else:
        errors(data)


def test_all_errors_collected_not_just_first() -> None:
    data = base(decks=3, variant="nope", payout_rounding="sideways")
    data["table"] = {"id": 5, "seats": "many"}
    data["wagers"]["banker"] = {"min_cents": 500, "max_cents": 100}
    errs = errors(data)
    for key in ("game.decks", "game.variant", "game.payout_rounding", "table.id", "table.seats",
                "wagers.banker.max_cents"):
        assert any(f": {key} = " in e for e in errs), key


def test_house_money_ride_percent_validated() -> None:
    data = base()
    data["wagers"]["house_money"] = {"ride_percent": 0}
    assert any("wagers.house_money.ride_percent = 0" in e and "631a.9(e)" in e
               for e in errors(data))


def test_missing_required_wager_and_tables() -> None:
    data = base()
    del data["wagers"]["player"]
    assert any("wagers.player = (missing)" in e for e in errors(data))
    assert any("game = (missing)" in e for e in errors({"table": {"id": "x", "seats": 10}}))


def test_load_submission_reports_bad_toml_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[table\n")
    with pytest.raises(SubmissionError, match="not valid TOML"):
        load_submission(bad)
    with pytest.raises(SubmissionError, match="cannot read"):
        load_submission(tmp_path / "missing.toml")


ONE_PAYTABLE_CASES = [
    ("baccarat", ("dragon_bonus_player", "dragon_bonus_banker"), ("A", "B"), "631a.13(e)"),
    ("baccarat", ("perfect_pairs_player", "perfect_pairs_banker"), ("A", "C"), "631c.1(d)"),
    ("minibaccarat", ("perfect_pairs_player", "perfect_pairs_banker"), ("B", "A"), "627b.1(e)"),
    ("minibaccarat", ("golden_talons_player", "golden_talons_banker"), ("A", "E"), "627b.5(f)"),
    ("baccarat", ("five_treasures_fortune_7", "five_treasures_cover_all"), ("A", "B"), "631c.3(h)"),
]


@pytest.mark.parametrize("family,keys,letters,section", ONE_PAYTABLE_CASES,
                         ids=[f"{c[3]}-{c[1][0]}" for c in ONE_PAYTABLE_CASES])
def test_one_paytable_per_wager_across_its_sides(family: str, keys: tuple[str, str],
                                                 letters: tuple[str, str], section: str) -> None:
    """Each section pays "at the odds in one of the following paytables": one letter for the
    Player and Banker sides (and for all five 5 Treasures wagers)."""
    data = base(family=family)
    data["wagers"].update({keys[0]: {"paytable": letters[0]}, keys[1]: {"paytable": letters[1]}})
    assert errors(data) == [
        f"t.toml: wagers.{keys[1]}.paytable = {letters[1]!r}: must be {letters[0]!r} like "
        f"wagers.{keys[0]}.paytable ({section}: one paytable for the wager)"]
    data["wagers"][keys[1]]["paytable"] = letters[0]
    parse_submission(data, "t.toml")


def test_681a_8_c_one_bonus_paytable_for_both_hands() -> None:
    data = {"table": {"id": "T", "seats": 8}, "game": {"family": "21-baccarat", "decks": 4},
            "wagers": {"banker": {}, "player": {}, "bonus_player": {"paytable": "A"},
                       "bonus_banker": {"paytable": "C"}}}
    assert errors(data) == [
        "t.toml: wagers.bonus_banker.paytable = 'C': must be 'A' like "
        "wagers.bonus_player.paytable (681a.8(c): one paytable for the wager)"]


@pytest.mark.parametrize("min_cents", [None, 100, 499])
def test_631c_2_c_heavenly_9_minimum_refused_at_validation(min_cents: int | None) -> None:
    """631c.2(c): a Heavenly 9 wager is no less than $5; a lower table minimum is refused
    when the submission is read, not by a ValueError when such a wager is settled."""
    data = base()
    data["wagers"]["heavenly_9_progressive"] = {} if min_cents is None else {
        "min_cents": min_cents}
    assert errors(data) == [
        f"t.toml: wagers.heavenly_9_progressive.min_cents = {min_cents!r}: required, at least "
        "500 (631c.2(c): no less than $5)"]
    data["wagers"]["heavenly_9_progressive"] = {"min_cents": 500}
    parse_submission(data, "t.toml")


def test_a_whole_table_configuration_is_read_as_its_rules_submission() -> None:
    """`tablectl par-sheet`, `simulate` and `replay` take a table's configuration: its
    [metrics], [witness], [software] and [display_service] are skipped like the devices'
    (they were refused as unknown keys)."""
    data = base()
    data["metrics"] = {"listen": "127.0.0.1:9464"}
    data["witness"] = {"dsn": "host=witness.casino.lan"}
    data["software"] = {"verify": "warn"}
    data["display_service"] = {"listen": "127.0.0.1:8080"}
    assert parse_submission(data, "t.toml").table.id == "T1"


def test_631a_13_c_vigorish_is_5_percent_and_the_roundings_default_as_ruled() -> None:
    """docs/rulings.md, "Vigorish rate" and "Rounding": `rate_percent` states 631a.13(c)'s 5%
    and any other value is refused; payouts round down and vigorish rounds up by default,
    with no 25-cent round-up unless asked for."""
    game = parse_submission(base(), "t.toml").game
    assert game.payout_rounding is Rounding.DOWN
    assert game.vigorish == VigorishConfig(rate=Fraction(5, 100), round_up_to_25c=False,
                                           collection="at-payout", rounding=Rounding.UP)
    for rate in (4, 6):
        assert errors(base(vigorish={"collection": "at-payout", "rate_percent": rate})) == [
            f"t.toml: game.vigorish.rate_percent = {rate}: must be one of 5 (631a.13(c) "
            "fixes 5%)"]


@pytest.mark.parametrize("seats,decks,problem", [
    (1, 6, None), (14, 8, None), (7, 7, None),
    (0, 8, "table.seats = 0: must be 1..14 (ruling, game.family = 'minibaccarat')"),
    (15, 8, "table.seats = 15: must be 1..14 (ruling, game.family = 'minibaccarat')"),
    (6, 5, "game.decks = 5: must be one of 6, 7, 8 (631a.3(a))"),
])
def test_minibaccarat_takes_1_to_14_seats_and_631a_3_a_decks(seats: int, decks: int,
                                                             problem: str | None) -> None:
    """docs/rulings.md, "Minibaccarat": 627a is not implemented; 1 to 14 seats, decks as in
    631a.3(a)."""
    data = base(family="minibaccarat", decks=decks)
    data["table"]["seats"] = seats
    if problem is None:
        assert parse_submission(data, "t.toml").table.seats == seats
    else:
        assert errors(data) == [f"t.toml: {problem}"]


def test_631a_9_d_squeeze_is_recorded_and_deals_the_same_round() -> None:
    """docs/rulings.md, "Squeeze procedure": the key records the procedure; the cards reach
    the hands in the same order, so the same cards settle alike."""
    from controller.rules.settlement import PlacedWager, settle_round
    from controller.rules.wager import SettlementPoint

    from tests.rules.helpers import deal

    plain, squeezed = (build_game(parse_submission(base(**extra), "t.toml"))
                       for extra in ({}, {"squeeze": True}))
    assert (plain.config.squeeze, squeezed.config.squeeze) == (False, True)
    coup = deal("2C 3D 4H 4S")  # Player 6, Banker 7
    wagers = [PlacedWager(3, "banker", 1000), PlacedWager(5, "player", 1000)]
    for game in (plain, squeezed):
        out = settle_round(game, wagers, coup.round_view(), SettlementPoint.END_OF_ROUND)
        assert [(s.seat, s.outcome.value, s.net_cents) for s in out] == [
            (5, "lose", -1000), (3, "win", 950)]
