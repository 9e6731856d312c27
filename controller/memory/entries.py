"""A typed record's log entry, encoded once: its kind, severity, payload as readers get it
back and the payload's canonical JSON, the text the entry's MAC covers (`Store.append_event`).

A record the table appends again, the same object (the dealer's "deal" prompts are
constants, controller/table/rounds.py), is encoded once: a prompt's record, its payload
and their JSON were a fifth of a card's step. Only a record with a flat payload (text,
whole numbers, booleans and nulls: nothing a caller could change afterwards) is kept.
"""

from __future__ import annotations

import json
from typing import Any

from controller.events.catalogue import entry_of
from controller.events.codec import EventRecord
from controller.memory.macs import canonical
from controller.memory.schema import flat_read_back

KEPT_RECORDS = 256
"""Records kept with their entry; when full, all are let go (a shoe's cards are each seen
once and push the constant prompts out now and then, which costs one encoding each)."""

Entry = tuple[str, str, dict[str, Any], str]
"""(kind, severity, payload as read back, payload JSON)."""


class RecordEntries:
    """The entries of the records appended to one store's log, the repeated ones kept."""

    def __init__(self) -> None:
        # id(record) -> (the record, the severity asked for, kind, severity, payload, JSON);
        # the record is held, so its id is not another's while it is kept.
        self._kept: dict[int, tuple[EventRecord, str | None, str, str, dict[str, Any], str]] = {}

    def entry(self, record: EventRecord, severity: str | None) -> Entry:
        """The entry `record` is appended as, with `severity` if given (`entry_of` refuses
        what is not a catalogued record, or a severity its kind does not have). Its payload
        is a dict of its own: a listener may keep or change it."""
        kept = self._kept.get(id(record))
        if kept is not None and kept[0] is record and kept[1] == severity:
            return kept[2], kept[3], dict(kept[4]), kept[5]
        kind, chosen, payload = entry_of(record, severity)
        payload_json = canonical(payload)
        read_back = flat_read_back(payload)
        if read_back is None:
            return kind, chosen, dict(json.loads(payload_json)), payload_json
        if len(self._kept) >= KEPT_RECORDS:
            self._kept.clear()
        self._kept[id(record)] = (record, severity, kind, chosen, read_back, payload_json)
        return kind, chosen, dict(read_back), payload_json
