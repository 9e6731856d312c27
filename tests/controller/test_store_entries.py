"""A log entry encoded once (controller/memory/entries.py, macs.canonical, macs.float_text):
the texts the MACs cover are exactly what they were, whichever way they were made."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from cards import BackColour, Card
from controller.events import records as ev
from controller.memory import entries
from controller.memory.macs import canonical, float_text
from controller.memory.store import Store


def test_canonical_is_the_sorted_compact_utf8_json_of_any_value() -> None:
    reference = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    rng = random.Random(31)
    texts = ['"', "\\", "\n", "\x00", "é", "♥", "\u2028", "😀", "a", "", "0.5"]

    def value(depth: int) -> object:
        kind = rng.randrange(8 if depth < 3 else 6)
        if kind == 0:
            return rng.choice(texts) * rng.randrange(0, 3)
        if kind == 1:
            return rng.randrange(-2**70, 2**70)
        if kind == 2:
            return rng.choice([0.0, -0.0, 1e16, -1.5e-300, 1764227000.123456, rng.random()])
        if kind == 3:
            return rng.choice([True, False, None])
        if kind in (4, 5):
            return rng.choice(texts)
        if kind == 6:
            return [value(depth + 1) for _ in range(rng.randrange(0, 4))]
        return {rng.choice(texts) + str(n): value(depth + 1) for n in range(rng.randrange(0, 4))}

    for _ in range(2000):
        item = value(0)
        assert canonical(item) == reference.encode(item)
    assert canonical({"b": [1, {"d": 2, "c": "♥"}], "a": None}) == \
        '{"a":null,"b":[1,{"c":"♥","d":2}]}'


def test_a_floats_text_is_its_repr_and_each_zero_keeps_its_sign() -> None:
    for number in (0.0, -0.0, 1764227000.123456, 1e-320, float("inf")):
        assert float_text(number) == repr(number)
        assert float_text(number) == repr(number)  # the kept text, the second time
    assert (float_text(0.0), float_text(-0.0)) == ("0.0", "-0.0")


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "table.sqlite")


def _encodings_counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The kind of each record the store encodes from now on, in order."""
    encoded: list[str] = []
    real = entries.entry_of

    def counting(record: ev.EventRecord, severity: str | None) -> tuple[str, str, dict[str, object]]:
        encoded.append(record.KIND)
        return real(record, severity)

    monkeypatch.setattr(entries, "entry_of", counting)
    return encoded


def test_a_record_appended_again_is_encoded_once_and_each_entry_has_its_own_payload(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    encoded = _encodings_counted(monkeypatch)
    prompt = ev.Prompt.deal("banker_third")
    assert ev.Prompt.deal("banker_third") is prompt
    first = store.append_event(prompt, round_id=4)
    second = store.append_event(prompt, round_id=4)
    card = ev.CardDealt(7, Card.parse("10♥"), "player", "player_first", BackColour.RED)
    third = store.append_event(card, device="shoe", round_id=4)
    assert encoded == ["prompt"]  # a card's entry is written out from its fields' texts
    assert (first.payload, first.payload_json) == (second.payload, second.payload_json) == (
        {"action": "deal", "next": "banker_third"}, '{"action":"deal","next":"banker_third"}')
    assert first.payload is not second.payload
    first.payload["next"] = "changed by a listener"
    assert store.append_event(prompt).payload == {"action": "deal", "next": "banker_third"}
    assert third.payload_json == ('{"back":"red","card":"10♥","hand":"player","index":7,'
                                  '"slot":"player_first"}')
    # As the log gives them back, and each entry's MAC over the same text as before.
    assert [(e.kind, e.payload) for e in store.events()] == [
        ("prompt", {"action": "deal", "next": "banker_third"}),
        ("prompt", {"action": "deal", "next": "banker_third"}),
        ("card", {"back": "red", "card": "10♥", "hand": "player", "index": 7,
                  "slot": "player_first"}),
        ("prompt", {"action": "deal", "next": "banker_third"})]
    assert store.verify_chain() == 4
    store.close()


def test_a_record_whose_payload_is_not_flat_is_encoded_every_time(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    encoded = _encodings_counted(monkeypatch)
    prompt = ev.Prompt("collect_vigorish", reason="new shoe", seats=({"seat": 2, "cents": 50},))
    store.append_event(prompt)
    store.append_event(prompt)
    assert encoded == ["prompt", "prompt"]
    assert store.events()[-1].payload == {"action": "collect_vigorish", "reason": "new shoe",
                                          "seats": [{"cents": 50, "seat": 2}]}
    store.close()


def test_a_cards_entry_written_out_is_the_general_encoding_for_every_face_slot_and_back(
        ) -> None:
    """A round card's entry is written out field by field (entries.py); it must be what
    the general way gives (`entry_of`, `canonical`, the payload read back) and its JSON
    string what the MAC material escapes, for every face, hand, slot and back."""
    from controller.events.catalogue import entry_of
    from controller.memory.macs import json_string
    from controller.memory.schema import flat_read_back
    from controller.rules.baccarat import NextCard
    from controller.rules.dealing import hand_of

    written = entries.RecordEntries()
    faces = [Card.parse(f"{rank}{suit}") for rank in ("A", "2", "9", "10", "J", "Q", "K")
             for suit in "♠♥♦♣"]
    count = 0
    for index, card in enumerate(faces * 2):
        for slot in NextCard:
            if slot is NextCard.NONE:
                continue
            for back in BackColour:
                record = ev.CardDealt(index * 97, card, hand_of(slot), slot.name.lower(), back)
                kind, severity, payload = entry_of(record, None)
                payload_json = canonical(payload)
                assert written.entry(record, None) == (
                    kind, severity, flat_read_back(payload), payload_json,
                    json_string(payload_json))
                count += 1
    assert count == 56 * (len(NextCard) - 1) * len(BackColour)
    first = written.entry(ev.CardDealt(0, faces[0], "player", "player_first", BackColour.BLUE),
                          None)
    assert first == ("card", "info", {"back": "blue", "card": "A♠", "hand": "player",
                                      "index": 0, "slot": "player_first"},
                     '{"back":"blue","card":"A♠","hand":"player","index":0,"slot":"player_first"}',
                     '"{\\"back\\":\\"blue\\",\\"card\\":\\"A♠\\",\\"hand\\":\\"player\\",'
                     '\\"index\\":0,\\"slot\\":\\"player_first\\"}"')
