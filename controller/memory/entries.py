"""A typed record's log entry, encoded once: its kind, severity, payload as readers get it
back and the payload's canonical JSON, and that JSON as a JSON string, the way the entry's
MAC material writes it (`Store.append_event`, `macs.entry_material`).

A record the table appends again, the same object (the dealer's "deal" prompts are
constants, controller/table/rounds.py), is encoded once: a prompt's record, its payload
and their JSON were a fifth of a card's step. Only a record with a flat payload (text,
whole numbers, booleans and nulls: nothing a caller could change afterwards) is kept.

A card of a round (`CardDealt`, every card's entry) is a new record each time, made of
a few dozen texts (faces, hands, slots, backs): its canonical JSON is written out field by
field from those texts, each escaped once and kept, in the sorted order `canonical` gives
(tests/controller/test_store_entries.py compares the two for every face, slot and back).
"""

from __future__ import annotations

import json
from dataclasses import MISSING, fields
from typing import Any

from cards import BackColour, Card
from controller.events.catalogue import KINDS, entry_of
from controller.events.codec import EventRecord, wire
from controller.events.records import CardDealt
from controller.memory.macs import canonical, int_text, json_string
from controller.memory.part_texts import STRING_TEXTS, WRITTEN_OUT, record_entry, string_texts
from controller.memory.schema import flat_read_back

KEPT_RECORDS = 256
"""Records kept with their entry; when full, all are let go (a shoe's cards are each seen
once and push the constant prompts out now and then, which costs one encoding each)."""

Entry = tuple[str, str, dict[str, Any], str, str]
"""(kind, severity, payload as read back, payload JSON, the payload JSON as a JSON string)."""

_CARD_KIND = CardDealt.KIND
_CARD_SEVERITY = KINDS[_CARD_KIND].severities[0]
# The fields a card's payload has, all of them always (no defaults), and so in this order.
_CARD_FIELDS = ("back", "card", "hand", "index", "slot")
_CARD_WRITTEN_OUT = tuple(sorted(f.name for f in fields(CardDealt))) == _CARD_FIELDS and not any(
    f.default is not MISSING or f.default_factory is not MISSING for f in fields(CardDealt))
# A card's face, hand, slot and back texts are kept in part_texts.STRING_TEXTS.
_BACK_TEXTS = {back: wire(back) for back in BackColour}


class RecordEntries:
    """The entries of the records appended to one store's log, the repeated ones kept."""

    def __init__(self) -> None:
        # id(record) -> (the record, the severity asked for, kind, severity, payload, JSON,
        # JSON as a string); the record is held, so its id is not another's while it is kept.
        self._kept: dict[int, tuple[EventRecord, str | None, str, str, dict[str, Any], str,
                                    str]] = {}

    def entry(self, record: EventRecord, severity: str | None) -> Entry:
        """The entry `record` is appended as, with `severity` if given (`entry_of` refuses
        what is not a catalogued record, or a severity its kind does not have). Its payload
        is a dict of its own: a listener may keep or change it."""
        if type(record) is CardDealt and severity is None and _CARD_WRITTEN_OUT:
            card_entry = self._card_entry(record)
            if card_entry is not None:
                return card_entry
        if type(record) in WRITTEN_OUT:  # settlements' and wagers' records (part_texts.py)
            written = record_entry(record, severity)
            if written is not None:
                return written
        kept = self._kept.get(id(record))
        if kept is not None and kept[0] is record and kept[1] == severity:
            return kept[2], kept[3], dict(kept[4]), kept[5], kept[6]
        kind, chosen, payload = entry_of(record, severity)
        payload_json = canonical(payload)
        read_back = flat_read_back(payload)
        if read_back is None:
            return kind, chosen, dict(json.loads(payload_json)), payload_json, \
                json_string(payload_json)
        if len(self._kept) >= KEPT_RECORDS:
            self._kept.clear()
        as_string = json_string(payload_json)
        self._kept[id(record)] = (record, severity, kind, chosen, read_back, payload_json,
                                  as_string)
        return kind, chosen, dict(read_back), payload_json, as_string

    @staticmethod
    def _card_entry(record: CardDealt) -> Entry | None:
        """A round card's entry written out from its fields' kept texts (None: the general
        way, for a field of another type than a card's)."""
        index, hand, slot, back = record.index, record.hand, record.slot, record.back
        if type(index) is not int or type(hand) is not str or type(slot) is not str or \
                type(back) is not BackColour or type(record.card) is not Card:
            return None
        card = str(record.card)
        back_text = _BACK_TEXTS[back]
        # A local name: `STRING_TEXTS.get`, an imported name's method, is compiled as an
        # attribute read that makes a bound method at each call.
        texts = STRING_TEXTS
        b = texts.get(back_text) or string_texts(back_text)
        c = texts.get(card) or string_texts(card)
        h = texts.get(hand) or string_texts(hand)
        s = texts.get(slot) or string_texts(slot)
        number = int_text(index)
        return (_CARD_KIND, _CARD_SEVERITY,
                {"back": back_text, "card": card, "hand": hand, "index": index, "slot": slot},
                f'{{"back":{b[0]},"card":{c[0]},"hand":{h[0]},"index":{number},"slot":{s[0]}}}',
                f'"{{\\"back\\":{b[1]},\\"card\\":{c[1]},\\"hand\\":{h[1]},'
                f'\\"index\\":{number},\\"slot\\":{s[1]}}}"')
