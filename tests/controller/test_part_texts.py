"""The money steps' records and round rows written out from their parts' kept texts
(controller/memory/part_texts.py): the same texts, MAC material and read-back as the general
encoding (`entry_of`, `canonical`, json.loads), for every record written out that way."""

from __future__ import annotations

import json
import random

import pytest

from cards import Card
from controller.events import records as ev
from controller.events.catalogue import entry_of
from controller.memory import part_texts
from controller.memory.entries import RecordEntries
from controller.memory.macs import canonical, json_string

TEXTS = ['"', "\\", "\n", "\x00", "é", "♥", "\u2028", "😀", "a", "", "19:20", "631a.12(b)(2)"]


def _settlement(rng: random.Random, seat: int) -> ev.SettledWager:
    def text() -> str:
        return "".join(rng.choice(TEXTS) for _ in range(rng.randrange(0, 4)))

    def cents() -> int:
        return rng.choice([0, -2500, 2375, 2**70, -1])

    return ev.SettledWager(seat, text(), cents(), text(), text(), cents(), cents(), cents(),
                           cents(), text(), text())


def _result(rng: random.Random) -> ev.RoundResult:
    cards = (Card.parse("K♥"), Card.parse("10♦"), Card.parse("5♣"))
    flags = rng.choice([{}, {"player_natural": True, "banker_natural": False},
                        {"dragon_7": False, "panda_8": True}])
    return ev.RoundResult(cards[:2], cards[1:], 5, 9, rng.choice(["banker", "tie"]),
                          extra=rng.choice([(), cards[:1]]), **flags)


def _records(rng: random.Random) -> list[ev.EventRecord]:
    settlements = tuple(_settlement(rng, seat) for seat in range(1, rng.randrange(1, 7)))
    wagers = tuple(ev.Wager(seat, rng.choice(TEXTS), rng.choice([500, 2**40]))
                   for seat in range(rng.randrange(0, 6)))
    return [ev.SettledFirstFourCards(settlements), ev.SettledEndOfRound(settlements),
            ev.SettledEndOfRound(()),
            ev.RoundSettled.of(rng.randrange(1, 90), rng.random() < 0.5, _result(rng),
                               settlements),
            ev.RoundVoid(rng.choice(TEXTS), settlements, wagers_stand=rng.random() < 0.5),
            ev.NoMoreBets(rng.choice(TEXTS), 7, wagers, tuple(range(rng.randrange(0, 3))))]


def _general(record: ev.EventRecord) -> tuple[str, str, dict[str, object], str, str]:
    kind, severity, payload = entry_of(record)
    text = canonical(payload)
    return kind, severity, json.loads(text), text, json_string(text)


def test_each_record_written_out_is_the_general_encoding_631a_12_b() -> None:
    rng = random.Random(31)
    for _ in range(300):
        for record in _records(rng):
            assert type(record) in part_texts.WRITTEN_OUT
            written = part_texts.record_entry(record, None)
            assert written == _general(record)
            # The read-back's keys in the JSON's order, nested too (json.loads's order).
            assert written is not None
            assert json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode(
                written[2]) == written[3]
            # Written again from the kept texts: the same.
            assert part_texts.record_entry(record, None) == written


def test_a_settlements_texts_are_kept_on_it_and_its_read_back_is_each_readers_own() -> None:
    settlement = ev.SettledWager(3, "banker", 2500, "win", "19:20", 2375, 125, 0, 2375,
                                 "Banker", "631a.12(b)(2)")
    record = ev.SettledEndOfRound((settlement,))
    first = part_texts.record_entry(record, None)
    assert first is not None
    assert first[3] == ('{"settlements":[{"amount_cents":2500,"label":"Banker","net_cents":2375,'
                        '"odds":"19:20","outcome":"win","seat":3,"section":"631a.12(b)(2)",'
                        '"vig_marked_cents":0,"vigorish_cents":125,"wager":"banker",'
                        '"win_cents":2375}]}')
    assert first[4] == json_string(first[3])
    first[2]["settlements"][0]["net_cents"] = 0  # a reader changing its payload
    again = part_texts.record_entry(ev.RoundVoid("x", (settlement,)), None)
    assert again is not None and again[2]["settlements"][0]["net_cents"] == 2375
    assert part_texts.parts_json([settlement, settlement]) == \
        canonical([settlement.payload(), settlement.payload()])


def test_a_part_with_a_value_of_another_type_is_encoded_the_general_way() -> None:
    odd = ev.SettledWager(True, "banker", 2500, "win", "1:1", 2500, 0, 0, 2500, "B", "s")
    record = ev.RoundVoid("void", (odd,), wagers_stand=True)
    assert part_texts.record_entry(record, None) == _general(record)
    assert '"seat":true' in part_texts.parts_json([odd])
    wager = ev.NoMoreBets("dealer", 1, (ev.Wager(1, "tie", 2.5),), ())  # type: ignore[arg-type]
    assert part_texts.record_entry(wager, None) == _general(wager)


def test_a_severity_its_kind_does_not_have_is_refused_as_before() -> None:
    record = ev.SettledEndOfRound(())
    assert part_texts.record_entry(record, "critical") is None
    with pytest.raises(ValueError, match="severity 'critical'"):
        RecordEntries().entry(record, "critical")
    assert RecordEntries().entry(ev.RoundVoid("r", ()), None)[1] == "warning"


def test_a_rounds_result_is_its_entrys_text() -> None:
    result = _result(random.Random(7))
    assert part_texts.value_json(result) == canonical(result.payload())
    assert part_texts.value_json({"reason": "é"}) == canonical({"reason": "é"})


def test_a_settlement_made_from_the_rules_is_the_dataclass_its_fields_make() -> None:
    from fractions import Fraction

    from controller.rules.wager import Outcome, Settlement

    rules = Settlement(seat=4, wager="banker", amount_cents=2000, outcome=Outcome.WIN,
                       odds=Fraction(19, 20), win_cents=1900, vigorish_cents=100,
                       label="Banker", section="631a.12(b)(2)")
    for marked in (False, True):
        made = ev.SettledWager.of(rules, vigorish_marked=marked)
        fields = (4, "banker", 2000, "win", str(Fraction(19, 20)), 1900, 100,
                  rules.marked_vigorish_cents(vigorish_marked=marked),
                  rules.seat_net_cents(vigorish_marked=marked), "Banker", "631a.12(b)(2)")
        assert made == ev.SettledWager(*fields)
        assert list(vars(made)) == list(vars(ev.SettledWager(*fields)))
        assert hash(made) == hash(ev.SettledWager(*fields))
        with pytest.raises(AttributeError):
            made.seat = 5  # type: ignore[misc]
