"""The money steps' records and rows written out from kept texts of their parts.

A settlement (`SettledWager`) is in three texts: its settlement point's log entry, the
round's (`round_settled`) and the round's row; a wager on the layout (`Wager`) in the
lock's entry (`no_more_bets`) and the round's row. Encoded whole, a settling card's two
entries were a quarter of its step (issue 31): each 1 KB payload encoded with sorted keys,
read back by json.loads for its readers and escaped again as a JSON string for the entry's
MAC (`macs.entry_material`). Here a flat part (texts, whole numbers, booleans and nulls: a
settlement, a wager) is written out once from its values' kept texts, and a settlement,
which every one of those texts holds, keeps them; a record holding parts is written out
around them, its other fields encoded one by one.

The texts are those `canonical` gives (tests/controller/test_part_texts.py compares them
for every record written out here): its keys sorted, no spaces, UTF-8 as is. Escaping a
text as a JSON string escapes each character by itself (a quote, a backslash, a control
character), so a record's escaped text is its parts' escaped texts joined the same way. A
record whose kind or severity the catalogue does not list (`catalogue.kind_and_severity`),
or a part of another shape, is left to the general encoding (`entries.RecordEntries.entry`),
which refuses or encodes it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from controller.events.catalogue import kind_and_severity
from controller.events.codec import EventRecord, Payload, field_names, omitted_when, wire
from controller.events.parts import RoundResult, SettledWager, Wager
from controller.events.records import (
    NoMoreBets, RoundSettled, RoundVoid, SettledEndOfRound, SettledFirstFourCards,
)
from controller.memory.macs import canonical, int_text, json_string

Texts = tuple[str, str, Any]
"""(canonical JSON, that JSON escaped as inside a JSON string, the value as json.loads
reads the JSON back). A part's: its read-back a dict the caller copies before handing it
out, or None for a part that is not flat (read back from its JSON)."""

WRITTEN_OUT = frozenset({SettledFirstFourCards, SettledEndOfRound, RoundSettled, RoundVoid,
                         NoMoreBets})
"""The records written out here: those holding settlements or wagers."""

# The parts whose texts are kept on the part itself (a frozen dataclass: its values do not
# change): a settlement is written into two entries and the round's row, a round's result
# and the lock's wagers into their entry and the round's row.
_KEPT_ON_PART = frozenset({SettledWager, RoundResult, Wager})
_KEPT = "_texts"  # the attribute they are kept under (beside SettledWager's `_encoded`)

STRING_TEXTS: dict[str, tuple[str, str]] = {}
"""A text -> (its JSON string, that string escaped as inside a JSON string): the few dozen
texts of settlements and wagers (keys, labels, sections, odds, outcomes), and of a round's
cards (faces, hands, slots, backs: entries.py), each written out in every such entry."""


def string_texts(text: str) -> tuple[str, str]:
    """STRING_TEXTS[text], made and kept if it is not there yet."""
    strings = STRING_TEXTS.get(text)
    if strings is None:
        if len(STRING_TEXTS) >= 1024:
            STRING_TEXTS.clear()
        as_json = json_string(text)
        strings = STRING_TEXTS[text] = (as_json, json_string(as_json)[1:-1])
    return strings


# The payload keys the two written-out parts have, all of them always (no defaults), in
# sorted order: if a field is added or given a default, they are encoded the general way.
_SETTLED_KEYS = ("amount_cents", "label", "net_cents", "odds", "outcome", "seat", "section",
                 "vig_marked_cents", "vigorish_cents", "wager", "win_cents")
_WAGER_KEYS = ("amount_cents", "seat", "wager")
_WRITTEN = {part: tuple(sorted(field_names(part))) == keys and not omitted_when(part)
            for part, keys in ((SettledWager, _SETTLED_KEYS), (Wager, _WAGER_KEYS))}


def _settled_texts(s: SettledWager) -> Texts | None:
    """A settlement's texts written out from its values (its texts' JSON kept): under
    callgrind json's C encoder took 33,000 instructions for its eleven values with sorted
    keys, json.loads 31,000 and its sorted dict 26,000. None if a value is not a whole
    number or a text as the rules give them (the general way then)."""
    amount, net, seat, marked, vig, win = (s.amount_cents, s.net_cents, s.seat,
                                           s.vig_marked_cents, s.vigorish_cents, s.win_cents)
    label, odds, outcome, section, wager = s.label, s.odds, s.outcome, s.section, s.wager
    if not (type(amount) is int and type(net) is int and type(seat) is int
            and type(marked) is int and type(vig) is int and type(win) is int
            and type(label) is str and type(odds) is str and type(outcome) is str
            and type(section) is str and type(wager) is str):
        return None
    la, od, ou, se, wa = (STRING_TEXTS.get(label) or string_texts(label),
                          STRING_TEXTS.get(odds) or string_texts(odds),
                          STRING_TEXTS.get(outcome) or string_texts(outcome),
                          STRING_TEXTS.get(section) or string_texts(section),
                          STRING_TEXTS.get(wager) or string_texts(wager))
    numbers = (int_text(amount), int_text(net), int_text(seat),
               int_text(marked), int_text(vig), int_text(win))
    a, n, st, m, v, w = numbers
    return (f'{{"amount_cents":{a},"label":{la[0]},"net_cents":{n},"odds":{od[0]},'
            f'"outcome":{ou[0]},"seat":{st},"section":{se[0]},"vig_marked_cents":{m},'
            f'"vigorish_cents":{v},"wager":{wa[0]},"win_cents":{w}}}',
            f'{{\\"amount_cents\\":{a},\\"label\\":{la[1]},\\"net_cents\\":{n},'
            f'\\"odds\\":{od[1]},\\"outcome\\":{ou[1]},\\"seat\\":{st},'
            f'\\"section\\":{se[1]},\\"vig_marked_cents\\":{m},'
            f'\\"vigorish_cents\\":{v},\\"wager\\":{wa[1]},\\"win_cents\\":{w}}}',
            {"amount_cents": amount, "label": label, "net_cents": net, "odds": odds,
             "outcome": outcome, "seat": seat, "section": section, "vig_marked_cents": marked,
             "vigorish_cents": vig, "wager": wager, "win_cents": win})


def _wager_texts(w: Wager) -> Texts | None:
    """A wager's texts written out from its values (as `_settled_texts`)."""
    amount, seat, wager = w.amount_cents, w.seat, w.wager
    if not (type(amount) is int and type(seat) is int and type(wager) is str):
        return None
    wa = STRING_TEXTS.get(wager) or string_texts(wager)
    a, st = int_text(amount), int_text(seat)
    return (f'{{"amount_cents":{a},"seat":{st},"wager":{wa[0]}}}',
            f'{{\\"amount_cents\\":{a},\\"seat\\":{st},\\"wager\\":{wa[1]}}}',
            {"amount_cents": amount, "seat": seat, "wager": wager})


def part_texts(part: Payload) -> Texts:
    """A part's texts: kept on a settlement or a round's result, written out for a
    settlement or a wager, else encoded (its read-back None: read from its JSON)."""
    kept: Texts | None = part.__dict__.get(_KEPT)
    if kept is not None:
        return kept
    kind = type(part)
    texts = (_settled_texts(part) if kind is SettledWager and _WRITTEN[SettledWager]  # type: ignore[arg-type]
             else _wager_texts(part) if kind is Wager and _WRITTEN[Wager]  # type: ignore[arg-type]
             else None)
    if texts is None:
        text = canonical(part.payload())
        texts = (text, json_string(text)[1:-1], None)
    if kind in _KEPT_ON_PART:
        part.__dict__[_KEPT] = texts
    return texts


def _value_texts(value: Any) -> Texts:
    """A record's field's texts and its read-back, a value of its own."""
    kind = type(value)
    if kind is str:
        strings = STRING_TEXTS.get(value) or string_texts(value)
        return strings[0], strings[1], value
    if kind is int:
        text = int_text(value)
        return text, text, value
    if kind is bool:
        return ("true", "true", True) if value else ("false", "false", False)
    if value is None:
        return "null", "null", None
    if kind is tuple:
        if not value:
            return "[]", "[]", []
        first = type(value[0])
        if (first is SettledWager or first is Wager) and all(
                type(item) is first for item in value):
            items = [part_texts(item) for item in value]
            return (f"[{','.join([t[0] for t in items])}]",
                    f"[{','.join([t[1] for t in items])}]", [_fresh(t) for t in items])
        if first is int and all(type(item) is int for item in value):  # seats
            text = f"[{','.join(map(int_text, value))}]"
            return text, text, list(value)
    if isinstance(value, Payload):
        part = part_texts(value)
        return part[0], part[1], _fresh(part)
    wired = wire(value)  # any other value: the general way
    text = canonical(wired)
    return text, json_string(text)[1:-1], json.loads(text)


def _fresh(texts: Texts) -> Any:
    """A part's read-back for one reader, a value of its own: a flat part's dict copied (its
    values cannot change), another's read again from its text."""
    read_back = texts[2]
    return dict(read_back) if read_back is not None else json.loads(texts[0])


_ORDER: dict[type, tuple[tuple[str, bool, Any], ...]] = {}


def _order(cls: type[EventRecord]) -> tuple[tuple[str, bool, Any], ...]:
    """The record's fields in sorted order (its payload's keys), each with whether a value
    leaves it out and that value (`Payload.payload`)."""
    order = _ORDER.get(cls)
    if order is None:
        omitted = omitted_when(cls)
        order = _ORDER[cls] = tuple((name, name in omitted, omitted.get(name))
                                    for name in sorted(field_names(cls)))
    return order


def record_entry(record: EventRecord, severity: str | None
                 ) -> tuple[str, str, dict[str, Any], str, str] | None:
    """The entry of a record of WRITTEN_OUT (`entries.Entry`): kind, severity, payload as
    read back, its JSON and that JSON as a JSON string; None for a kind or severity the
    catalogue does not list (`kind_and_severity`), which the general way then refuses."""
    cls = type(record)
    try:
        kind, chosen = kind_and_severity(record, severity)
    except (TypeError, ValueError):
        return None
    values = record.__dict__
    as_json: list[str] = []
    escaped: list[str] = []
    read_back: dict[str, Any] = {}
    for name, may_omit, omitted in _order(cls):
        value = values[name]
        if may_omit and (value is omitted or (type(value) is type(omitted)
                                              and value == omitted)):
            continue
        value_json, value_escaped, read_back[name] = _value_texts(value)
        key_json, key_escaped = STRING_TEXTS.get(name) or string_texts(name)
        as_json.append(f"{key_json}:{value_json}")
        escaped.append(f"{key_escaped}:{value_escaped}")
    return (kind, chosen, read_back, f"{{{','.join(as_json)}}}",
            f'"{{{",".join(escaped)}}}"')


def parts_json(values: Sequence[Mapping[str, Any] | Payload]) -> str:
    """canonical of a list of parts or mappings (`value_json` each): a round's wagers or
    settlements in its row."""
    return f"[{','.join(map(value_json, values))}]"


def value_json(value: Mapping[str, Any] | Payload) -> str:
    """canonical of one part (its kept text: a round's result, a settlement, a wager, as
    its log entry wrote it) or of a mapping."""
    if isinstance(value, Payload):
        return part_texts(value)[0]
    return canonical(value)
