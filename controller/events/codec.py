"""How a typed event record becomes the payload the signed log stores, and back.

A record is a frozen dataclass (`EventRecord`, one per catalogue kind); a part of one
(a settlement, a round's result) is a `Payload`. `payload()` encodes once, to the same
JSON object the log has always stored: a card becomes its text ('10♥'), a back colour
its name ('red'), a tuple a list, and a field with a default is left out while it holds
that default (a key some entries never had). `decode(payload)` is the inverse,
driven by the fields' declared types, so a reader gets cards as cards again.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

from cards import BackColour, Card
from controller.errors import ControllerError

P = TypeVar("P", bound="Payload")


class EventDecodeError(ControllerError, ValueError):
    """A stored or streamed payload that does not fit its kind's record."""


class Absent(enum.Enum):
    """The default of a key some entries do not carry, where None is a value."""

    ABSENT = "absent"


ABSENT = Absent.ABSENT


class Undisclosed(enum.Enum):
    """A card the dealer must not disclose: written as '' (631a.15(c)(1))."""

    CARD = ""


UNDISCLOSED = Undisclosed.CARD

_FLAT = frozenset({str, int, bool, float, type(None)})
_COLOUR_NAMES = {back: back.name.lower() for back in BackColour}  # an IntEnum hashes as its int


def wire(value: Any) -> Any:
    """One field's value as JSON: the only place a card becomes text."""
    kind = type(value)
    if kind in _FLAT:
        return value
    if kind is Card:
        return str(value)
    if kind is BackColour:  # before the isinstance below: every card carries its back
        return _COLOUR_NAMES[value]
    if kind is tuple or kind is list:
        return [wire(v) for v in value]
    if kind is dict:
        return {k: wire(v) for k, v in value.items()}
    if isinstance(value, Payload):
        return value.payload()
    if value is UNDISCLOSED:
        return ""
    raise TypeError(f"a {kind.__name__} cannot go into an event's payload; allowed: text, "
                    "numbers, booleans, None, cards, back colours, tuples, dicts, records")


class Payload:
    """A typed JSON object of the log: a record or a part of one (a frozen dataclass). A
    field with a default is left out of the payload while it holds it, and a payload
    without it reads back as it (`omitted_when`)."""

    def payload(self) -> dict[str, Any]:
        """The JSON object the log stores (encoded once, here)."""
        values = self.__dict__
        out: dict[str, Any] = {}
        for name, omitted in _plan(type(self)):
            value = values[name]
            if omitted is not _KEPT and (value is omitted or (type(value) is type(omitted)
                                                              and value == omitted)):
                continue
            out[name] = value if type(value) in _FLAT else wire(value)
        return out

    @classmethod
    def made(cls: type[P], **fields: Any) -> P:
        """cls(**fields) with every field given, the same frozen object, made without the
        dataclass's __init__, which sets each field through object.__setattr__: for the
        records and parts a step makes many of (every card of a round, every settlement).
        Only for a class with no __post_init__ (tests/controller/test_part_texts.py and
        test_event_catalogue.py compare the two)."""
        made = object.__new__(cls)
        made.__dict__.update(fields)
        return made

    @classmethod
    def decode(cls: type[P], payload: Mapping[str, Any]) -> P:
        """The record from its payload; EventDecodeError names what does not fit."""
        if not isinstance(payload, Mapping):
            raise EventDecodeError(f"{_title(cls)}: payload {payload!r} is not a JSON object")
        decoders = _decoders(cls)
        unknown = set(payload) - set(decoders)
        if unknown:
            raise EventDecodeError(f"{_title(cls)}: unknown keys {sorted(unknown)}; allowed: "
                                   f"{', '.join(decoders)}")
        values: dict[str, Any] = {}
        for name, decode in decoders.items():
            if name in payload:
                try:
                    values[name] = decode(payload[name])
                except (TypeError, ValueError, KeyError) as exc:
                    raise EventDecodeError(f"{_title(cls)}: {name} = {payload[name]!r}: "
                                           f"{exc}") from None
            elif name not in omitted_when(cls):  # else the dataclass's default
                raise EventDecodeError(f"{_title(cls)}: the payload lacks {name!r}")
        return cls(**values)


def _title(cls: type) -> str:
    return f"event {getattr(cls, 'KIND', cls.__name__)!r}"


_KEPT = object()  # a field without a default: no value leaves it out
_PLANS: dict[type, tuple[tuple[str, object], ...]] = {}
_OMITTED: dict[type, dict[str, object]] = {}
_DECODERS: dict[type, dict[str, Callable[[Any], Any]]] = {}


def _plan(cls: type[Payload]) -> tuple[tuple[str, object], ...]:
    """Each field, in the record's order, with its default, the value that leaves it out
    of the payload (or `_KEPT`)."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = tuple(
            (f.name, _KEPT if f.default is dataclasses.MISSING else f.default)
            for f in dataclasses.fields(cls))  # type: ignore[arg-type]
    return plan


def field_names(cls: type[Payload]) -> tuple[str, ...]:
    """The payload's keys, in the record's order (a dataclass's fields)."""
    return tuple(name for name, _ in _plan(cls))


def omitted_when(cls: type[Payload]) -> Mapping[str, object]:
    """The keys some payloads leave out, each with the value (the field's default) that
    leaves it out and that a payload without it reads back as."""
    omitted = _OMITTED.get(cls)
    if omitted is None:
        omitted = _OMITTED[cls] = {name: default for name, default in _plan(cls)
                                   if default is not _KEPT}
    return omitted


def _decoders(cls: type[Payload]) -> dict[str, Callable[[Any], Any]]:
    found = _DECODERS.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls)
        found = _DECODERS[cls] = {name: _decoder(hints[name]) for name in field_names(cls)}
    return found


def _same_value(value: Any) -> Any:
    return value


def _back(text: Any) -> BackColour:
    if not isinstance(text, str) or text.upper() not in BackColour.__members__:
        raise ValueError(f"not a back colour; allowed: "
                         f"{', '.join(c.name.lower() for c in BackColour)}")
    return BackColour[text.upper()]


def _card(text: Any) -> Card | Undisclosed:
    if text == "":
        return UNDISCLOSED
    if not isinstance(text, str):
        raise ValueError("a card is text, e.g. '10♥'")
    return Card.parse(text)


def _decoder(hint: Any) -> Callable[[Any], Any]:
    """How a value of the declared type `hint` comes back from JSON."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Card:
        return _card
    if hint is BackColour:
        return _back
    if isinstance(hint, type) and issubclass(hint, Payload):
        return hint.decode
    if origin is typing.Union or origin is types.UnionType:
        kept = [a for a in args if a not in (type(None), Absent, Undisclosed)]
        inner = _card if Card in kept else _decoder(kept[0]) if len(kept) == 1 \
            else _same_value
        return lambda value: None if value is None else inner(value)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            each = _decoder(args[0])
            return lambda value: tuple(each(v) for v in _listed(value))
        parts = [_decoder(a) for a in args]
        return lambda value: tuple(d(v) for d, v in zip(parts, _listed(value), strict=True))
    if origin is dict or hint is dict:
        return _checked(dict)
    if hint in (int, str, bool, float):
        return _checked(hint)
    return _same_value


def _checked(kind: type) -> Callable[[Any], Any]:
    """A JSON value of exactly this type (a whole number for a float too; never a
    boolean for a number)."""
    def check(value: Any) -> Any:
        if type(value) is kind or (kind is float and type(value) is int):
            return value
        raise ValueError(f"expected {'an object' if kind is dict else kind.__name__}")
    return check


def _listed(value: Any) -> list[Any]:
    if not isinstance(value, list | tuple):
        raise ValueError("expected a list")
    return list(value)


class EventRecord(Payload):
    """One entry of the event log, as its emitter built it (controller/events/records.py).

    `KIND` names its catalogue entry; `severity` is None for the catalogue's (first)
    severity, or one the catalogue lists for the kind when the record decides it."""

    KIND: ClassVar[str]
    REGISTRY: ClassVar[dict[str, type[EventRecord]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        kind = cls.__dict__.get("KIND")
        if kind is not None:
            if kind in EventRecord.REGISTRY:
                raise TypeError(f"event kind {kind!r} has two records: "
                                f"{EventRecord.REGISTRY[kind].__name__} and {cls.__name__}")
            EventRecord.REGISTRY[kind] = cls

    @property
    def severity(self) -> str | None:
        return None


def decode(kind: str, payload: Mapping[str, Any]) -> EventRecord:
    """The typed record of a log entry or streamed event (`kind`, `payload`)."""
    record = EventRecord.REGISTRY.get(kind)
    if record is None:
        raise EventDecodeError(f"unknown event kind {kind!r}")
    return record.decode(payload)


def decode_event(event: Mapping[str, Any]) -> EventRecord | None:
    """The record of an event as the control socket streams it (`kind`, `payload`, ...),
    or None when it does not decode (a daemon of another release): a live reader shows
    what it can read and skips the rest; a check that must not skip calls `decode`."""
    try:
        return decode(str(event.get("kind")), event.get("payload") or {})
    except EventDecodeError:
        return None
