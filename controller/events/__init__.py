"""The table's events: typed records (records.py, system_records.py,
progressive_records.py), how they are encoded for the signed log and decoded back
(codec.py), and the catalogue of kinds with their severities and meanings (catalogue.py)."""

from controller.events.catalogue import (
    ANY_DEVICE,
    CATALOGUE,
    DOC,
    KINDS,
    SEVERITIES,
    SHOE_CARD_KINDS,
    EventKind,
    document,
    entry_of,
    markdown_table,
)
from controller.events.codec import (
    ABSENT,
    UNDISCLOSED,
    Absent,
    EventDecodeError,
    EventRecord,
    Payload,
    Undisclosed,
    decode,
    decode_event,
)

__all__ = ["ABSENT", "ANY_DEVICE", "CATALOGUE", "DOC", "KINDS", "SEVERITIES", "SHOE_CARD_KINDS",
           "UNDISCLOSED", "Absent", "EventDecodeError", "EventKind", "EventRecord", "Payload",
           "Undisclosed", "decode", "decode_event", "document", "entry_of", "markdown_table"]
