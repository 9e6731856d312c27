"""The message catalogue: every message any device or the host may send, declared as data.

A DATA frame's payload is ``message id u8 | fields``.  Integers are
little-endian, fixed width; strings are ``u8 byte length | UTF-8``; bools are
one byte, 0 or 1.  Each message below is a frozen dataclass whose fields carry
their wire type, allowed values, unit and meaning in ``wire(...)`` metadata;
``@message(id, ...)`` registers it.  docs/protocol.md is generated from the
same facts (``catalogue_markdown()``), so the table and the code cannot drift.

No message knows about baccarat beyond the integers the shoe and shuffler
report; ranks, suits and back colours use the values of cards.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from firmware_bridge.errors import (
    FieldValueError,
    MessageTooLargeError,
    UnknownMessageError,
)
from firmware_bridge.frame import MAX_PAYLOAD

PROTOCOL_VERSION = 1  # bump on any incompatible change to frames, link rules or this catalogue
PROTOCOL_MINOR = 1
"""Revision within PROTOCOL_VERSION (docs/protocol.md 7): 1.1 is wire-compatible with 1.0
and announced by the capability bit CAP_PROTOCOL_1_1, not by a new protocol_version."""

CAP_PROTOCOL_1_1 = 0x0000_0001
"""Hello.capabilities bit 0: the sender follows protocol 1.1 (vendor extension ranges,
refusal numbering, fault re-report order, per-baud timing).  A 1.0 peer sends 0."""

CAP_CARD_COMMIT = 0x0000_0002
"""Hello.capabilities bit 1 (protocol 1.2, docs/protocol.md 6.6): the sender takes part in
the card commit acknowledgement. A host that sets it sends CardsCommitted once the table
has durably committed cards; a shoe that sets it keeps every CardDrawn the host has not
yet committed and sends the kept ones again after each handshake. In use only when both
sides set it."""

VENDOR_MESSAGE_IDS = range(0xE0, 0xFF)
"""Message ids 0xE0..0xFE are the vendor extension range (6.1): a receiver that does not
know one acknowledges it and ignores it, it is never a bad message.  0xFF is reserved."""

VENDOR_FAULT_CODES = range(0x8000, 0x10000)
"""Fault codes 0x8000..0xFFFF are vendor-specific (6.3); codes 0x0000..0x7FFF not in
FaultCode are reserved for later revisions.  A host accepts any code (6.3)."""
NO_BACK_COLOUR = 255  # BatchStatus.held_back_colour when the shuffler holds no batch


class DeviceKind(enum.IntEnum):
    """What is at the other end of a link (Hello.device_kind)."""

    HOST = 0
    SHOE = 1
    SHUFFLER = 2
    DISPLAY = 3  # progressive meter display and win light board


class FaultCode(enum.IntEnum):
    """Every fault the catalogue names; high byte = device kind (0x0F = any device).

    Fault.code also carries codes not listed here (vendor 0x8000..0xFFFF, or reserved
    ones a newer device knows) as plain ints: see ``fault_name``."""

    SHOE_LID_OPEN = 0x0101  # the shoe's lid/door is open: card reading is not trustworthy
    SHOE_SENSOR_FAULT = 0x0102  # a card sensor failed its self-check or reads out of range
    SHOE_MISREAD = 0x0103  # a card left the shoe but its rank/suit could not be read
    SHOE_CARD_JAM = 0x0104  # a card is stuck in the exit slot
    SHOE_CARD_FACE_UP = 0x0105  # a card was found face up in the shoe (631a.15)
    SHUFFLER_JAM = 0x0201  # cards jammed in the mechanism
    SHUFFLER_MISCOUNT = 0x0202  # counted cards differ from the expected number
    SHUFFLER_CYCLE_INCOMPLETE = 0x0203  # a shuffle cycle stopped before finishing
    SHUFFLER_DOOR_OPEN = 0x0204  # the shuffler's door/lid is open
    SHUFFLER_BATCH_MISSING = 0x0205  # the requested batch is not in the shuffler
    DISPLAY_LAMP_FAILED = 0x0301  # a win light or meter segment draws no current
    DEVICE_OVERTEMP = 0x0F01  # the device is too hot to operate safely
    DEVICE_INTERNAL_ERROR = 0x0F02  # firmware assertion, watchdog reset, memory error


def fault_name(code: int) -> str:
    """Lower-case name of a fault code: the catalogue's, or ``vendor_fault_0x8123`` /
    ``unknown_fault_0x0106`` for codes it does not name (6.3: tolerated, never dropped)."""
    try:
        return FaultCode(code).name.lower()
    except ValueError:
        prefix = "vendor_fault" if code in VENDOR_FAULT_CODES else "unknown_fault"
        return f"{prefix}_0x{int(code):04x}"


def protocol_revision(hello: Hello) -> tuple[int, int]:
    """(major, minor) a peer speaks, from its Hello: 1.1 if it sets CAP_PROTOCOL_1_1."""
    minor = PROTOCOL_MINOR if hello.capabilities & CAP_PROTOCOL_1_1 else 0
    return hello.protocol_version, minor


class DeviceState(enum.IntEnum):
    """Status.state: what the device is doing."""

    READY = 0
    BUSY = 1  # e.g. shuffling, self-testing
    FAULTED = 2  # at least one fault is active (see Fault / FaultCleared)


class RefuseCode(enum.IntEnum):
    """Why a side refuses its peer during the handshake (Refuse.code)."""

    INCOMPATIBLE_VERSION = 1
    WRONG_DEVICE_KIND = 2
    NOT_ACCEPTED = 3  # any other reason given by the application (e.g. unexpected serial number)


# --- wire types ---------------------------------------------------------------


@dataclass(frozen=True)
class WireType:
    """How one field is laid out on the wire."""

    name: str  # as in docs/protocol.md: u8, u16, u32, u64, bool, str
    size: int  # fixed size in bytes; for str, the size of the length prefix
    python_type: type

    def pack(self, value: Any) -> bytes:
        if self.python_type is str:
            data: bytes = str(value).encode("utf-8")
            if len(data) > 255:
                raise FieldValueError(f"string of {len(data)} UTF-8 bytes exceeds 255")
            return bytes([len(data)]) + data
        if self.python_type is bool:
            return b"\x01" if value else b"\x00"
        return int(value).to_bytes(self.size, "little")

    def unpack(self, data: bytes, pos: int) -> tuple[Any, int]:
        """Value at ``pos`` and the position after it; FieldValueError if truncated or invalid."""
        end = pos + self.size
        if end > len(data):
            raise FieldValueError(f"{self.name} at offset {pos} runs past the payload end")
        if self.python_type is str:
            length = data[pos]
            start, end = end, end + length
            if end > len(data):
                raise FieldValueError(
                    f"string of {length} bytes at offset {pos} runs past the payload end"
                )
            try:
                return data[start:end].decode("utf-8"), end
            except UnicodeDecodeError as exc:
                raise FieldValueError(f"string at offset {pos} is not valid UTF-8") from exc
        if self.python_type is bool:
            if data[pos] > 1:
                raise FieldValueError(f"bool at offset {pos} is {data[pos]}, not 0 or 1")
            return data[pos] == 1, end
        return int.from_bytes(data[pos:end], "little"), end

    @property
    def max_int(self) -> int:
        return (1 << (8 * self.size)) - 1


U8 = WireType("u8", 1, int)
U16 = WireType("u16", 2, int)
U32 = WireType("u32", 4, int)
U64 = WireType("u64", 8, int)
BOOL = WireType("bool", 1, bool)
STR = WireType("str", 1, str)


@dataclass(frozen=True)
class FieldSpec:
    """One field of a message: wire type, allowed values, unit and meaning."""

    name: str
    wire: WireType
    doc: str
    unit: str = ""
    allowed: range | frozenset[int] | None = None  # for ints; None = the wire type's range
    enum: type[enum.IntEnum] | None = None  # decode into this enum; allowed = its members
    open_enum: bool = False  # any value of the wire type is allowed; known ones decode to enum

    def allowed_values(self) -> range | frozenset[int] | None:
        if self.enum is not None and not self.open_enum:
            return frozenset(int(member) for member in self.enum)
        return self.allowed

    def check(self, value: Any) -> None:
        """Raise FieldValueError unless ``value`` may be sent in this field."""
        expected = self.wire.python_type
        if expected is int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise FieldValueError(f"{self.name}: expected an int, got {value!r}")
            if not 0 <= value <= self.wire.max_int:
                raise FieldValueError(
                    f"{self.name}={value} does not fit {self.wire.name} (0..{self.wire.max_int})"
                )
            allowed = self.allowed_values()
            if allowed is not None and value not in allowed:
                raise FieldValueError(f"{self.name}={value} is not one of {_describe(allowed)}")
        elif not isinstance(value, expected):
            raise FieldValueError(f"{self.name}: expected {expected.__name__}, got {value!r}")

    def convert(self, value: Any) -> Any:
        """Wire value -> Python value (enum member where the field has one)."""
        if self.enum is None:
            return value
        if self.open_enum and value not in self.enum._value2member_map_:
            return value  # an extension code: kept as the integer
        return self.enum(value)


def _describe(allowed: range | frozenset[int]) -> str:
    if isinstance(allowed, range):
        return f"{allowed.start}..{allowed.stop - 1}"
    return "{" + ", ".join(str(value) for value in sorted(allowed)) + "}"


def wire(
    wire_type: WireType,
    doc: str,
    *,
    unit: str = "",
    allowed: range | frozenset[int] | None = None,
    enum: type[enum.IntEnum] | None = None,
    open_enum: bool = False,
) -> Any:
    """Declare a message field: its wire type, meaning, unit and allowed values (field metadata)."""
    spec = FieldSpec("", wire_type, doc, unit, allowed, enum, open_enum)
    return dataclasses.field(metadata={"wire": spec})


# --- the registry -------------------------------------------------------------


class Message:
    """Base of every catalogue message; subclasses are frozen dataclasses made by ``@message``."""

    ID: ClassVar[int]
    DESCRIPTION: ClassVar[str]
    SENDERS: ClassVar[frozenset[DeviceKind]]
    FIELDS: ClassVar[tuple[FieldSpec, ...]]


MESSAGES: dict[int, type[Message]] = {}
M = TypeVar("M", bound=type[Message])

ANY_DEVICE = frozenset({DeviceKind.SHOE, DeviceKind.SHUFFLER, DeviceKind.DISPLAY})
ANYONE = ANY_DEVICE | {DeviceKind.HOST}
HOST_ONLY = frozenset({DeviceKind.HOST})


def message(message_id: int, senders: Iterable[DeviceKind]) -> Callable[[M], M]:
    """Register a frozen dataclass as the message with this id, sent by these kinds of node."""

    def register(cls: M) -> M:
        if message_id in MESSAGES:
            raise RuntimeError(f"message id 0x{message_id:02X} used twice")
        if not 0 <= message_id <= 0xFF:
            raise RuntimeError(f"message id {message_id} does not fit u8")
        specs = []
        for dc_field in dataclasses.fields(cls):  # type: ignore[arg-type]
            spec = dc_field.metadata["wire"]
            specs.append(dataclasses.replace(spec, name=dc_field.name))
        cls.ID = message_id
        cls.SENDERS = frozenset(senders)
        cls.FIELDS = tuple(specs)
        cls.DESCRIPTION = (cls.__doc__ or "").strip().splitlines()[0]
        MESSAGES[message_id] = cls
        return cls

    return register


# --- session messages (any node) ----------------------------------------------------


@message(0x01, ANYONE)
@dataclass(frozen=True)
class Hello(Message):
    """Handshake: who I am and what I speak; the first DATA message of every session, both ways."""

    protocol_version: int = wire(U8, "protocol version spoken (PROTOCOL_VERSION)")
    device_kind: DeviceKind = wire(U8, "kind of node sending", enum=DeviceKind)
    serial_number: str = wire(STR, "unit serial number, as printed on its label")
    firmware_version: str = wire(STR, "firmware (or host software) version, free text")
    capabilities: int = wire(
        U32, "bit set: bit 0 = speaks protocol 1.1 (CAP_PROTOCOL_1_1), bit 1 = card commit "
        "acknowledgement (CAP_CARD_COMMIT, 6.6); send other bits 0, ignore unknown ones")


@message(0x02, ANYONE)
@dataclass(frozen=True)
class Refuse(Message):
    """Handshake: the sender will not talk to this peer; the link goes to REFUSED on both sides."""

    code: RefuseCode = wire(U8, "why", enum=RefuseCode)
    reason: str = wire(STR, "human-readable reason naming the offending values")


@message(0x03, HOST_ONLY)
@dataclass(frozen=True)
class StatusRequest(Message):
    """Host asks a device for its Status."""


@message(0x04, ANY_DEVICE)
@dataclass(frozen=True)
class Status(Message):
    """Device's reply to StatusRequest."""

    uptime_s: int = wire(U32, "time since the device booted", unit="s")
    state: DeviceState = wire(U8, "what the device is doing", enum=DeviceState)
    detail: str = wire(STR, "free text for the technician (e.g. active faults, batch held)")


@message(0x05, HOST_ONLY)
@dataclass(frozen=True)
class SelfTestRequest(Message):
    """Host asks a device to run its self-test; the answer is SelfTestResult."""


@message(0x06, ANY_DEVICE)
@dataclass(frozen=True)
class SelfTestResult(Message):
    """Device's result of the self-test requested by SelfTestRequest."""

    passed: bool = wire(BOOL, "true if every check passed")
    detail: str = wire(STR, "what was checked and what failed")


@message(0x07, ANY_DEVICE)
@dataclass(frozen=True)
class Fault(Message):
    """Device reports a fault became active (sent again for every active fault after each handshake)."""

    code: FaultCode | int = wire(U16, "which fault (any other code is tolerated, 6.3)",
                                 enum=FaultCode, open_enum=True)
    detail: str = wire(STR, "free text for the technician")


@message(0x08, ANY_DEVICE)
@dataclass(frozen=True)
class FaultCleared(Message):
    """Device reports a fault is no longer active."""

    code: FaultCode | int = wire(U16, "which fault (any other code is tolerated, 6.3)",
                                 enum=FaultCode, open_enum=True)


# --- shoe -> host ------------------------------------------------------------------

_RANKS = range(1, 14)  # ace=1 .. king=13, cards.Rank
_SUITS = range(0, 4)  # clubs, diamonds, hearts, spades, cards.Suit
_BACKS = range(0, 4)  # red, blue, green, black, cards.BackColour
SHOE = frozenset({DeviceKind.SHOE})
SHUFFLER = frozenset({DeviceKind.SHUFFLER})


@message(0x20, SHOE)
@dataclass(frozen=True)
class CardDrawn(Message):
    """A card left the shoe and was read."""

    index: int = wire(U16, "cards drawn since the shoe was loaded, from 0", unit="cards")
    rank: int = wire(U8, "1 ace .. 13 king", allowed=_RANKS)
    suit: int = wire(U8, "0 clubs, 1 diamonds, 2 hearts, 3 spades", allowed=_SUITS)
    back_colour: int = wire(U8, "0 red, 1 blue, 2 green, 3 black", allowed=_BACKS)
    face_up: bool = wire(BOOL, "the card was face up in the shoe (631a.15)")


@message(0x21, SHOE)
@dataclass(frozen=True)
class CoverCardDrawn(Message):
    """The cover (cut) card left the shoe."""

    index: int = wire(U16, "cards drawn before the cover card", unit="cards")


@message(0x22, SHOE)
@dataclass(frozen=True)
class ShoeLoaded(Message):
    """The shoe was loaded with a new batch; card index restarts at 0."""

    cards: int = wire(U16, "cards loaded (counted by the shoe)", unit="cards")
    back_colour: int = wire(U8, "0 red, 1 blue, 2 green, 3 black", allowed=_BACKS)


@message(0x23, HOST_ONLY)
@dataclass(frozen=True)
class CardsCommitted(Message):
    """Host tells the shoe that every card below next_index is durably committed (6.6; CAP_CARD_COMMIT)."""

    next_index: int = wire(U16, "CardDrawn indexes below this one are committed by the host "
                                "(of the batch since the last ShoeLoaded)", unit="cards")


# --- host <-> shuffler ----------------------------------------------------------------


@message(0x30, HOST_ONLY)
@dataclass(frozen=True)
class StartShuffle(Message):
    """Host asks the shuffler to shuffle and count the batch with this back colour (681a.3(b))."""

    back_colour: int = wire(U8, "batch to shuffle: 0 red, 1 blue, 2 green, 3 black", allowed=_BACKS)
    expected_cards: int = wire(U16, "cards the batch should hold", unit="cards")


@message(0x31, SHUFFLER)
@dataclass(frozen=True)
class ShuffleProgress(Message):
    """Shuffler reports counting progress during a shuffle."""

    cards_counted: int = wire(U16, "cards counted so far", unit="cards")
    cards_expected: int = wire(U16, "expected_cards of StartShuffle", unit="cards")


@message(0x32, SHUFFLER)
@dataclass(frozen=True)
class ShuffleComplete(Message):
    """Shuffler finished a shuffle; the batch is verified only if missing, extra and duplicates are 0."""

    back_colour: int = wire(U8, "batch shuffled", allowed=_BACKS)
    cards_counted: int = wire(U16, "cards counted", unit="cards")
    missing: int = wire(U16, "cards of a full batch not seen", unit="cards")
    extra: int = wire(U16, "cards seen that do not belong to the batch", unit="cards")
    duplicates: int = wire(U16, "cards seen more than once", unit="cards")


@message(0x33, SHUFFLER)
@dataclass(frozen=True)
class BatchStatus(Message):
    """Shuffler reports which batch it holds (after each handshake and whenever it changes)."""

    held_back_colour: int = wire(
        U8, "batch held: 0 red, 1 blue, 2 green, 3 black, 255 none",
        allowed=frozenset({0, 1, 2, 3, NO_BACK_COLOUR}),
    )


# --- host -> display --------------------------------------------------------------------

DISPLAY_ONLY = HOST_ONLY  # display messages are sent by the host only


@message(0x40, DISPLAY_ONLY)
@dataclass(frozen=True)
class ShowMeter(Message):
    """Host sets one progressive meter on the display."""

    level: str = wire(STR, "meter name as configured, e.g. 'royal9' or 'major'")
    amount_cents: int = wire(U64, "meter amount", unit="cents")


@message(0x41, DISPLAY_ONLY)
@dataclass(frozen=True)
class WinLight(Message):
    """Host switches a seat's win light (631c.6(c)(5))."""

    seat: int = wire(U8, "seat number as labelled on the table", allowed=range(1, 15))
    on: bool = wire(BOOL, "light on")


@message(0x42, DISPLAY_ONLY)
@dataclass(frozen=True)
class ShowPrompt(Message):
    """Host shows a prompt line for the dealer (empty text clears it)."""

    text: str = wire(STR, "text to show")


# --- codec -------------------------------------------------------------------


def encode_message(msg: Message) -> bytes:
    """Payload bytes of ``msg``; raises MessageError if a field is invalid or it is too large."""
    cls = type(msg)
    if MESSAGES.get(getattr(cls, "ID", -1)) is not cls:
        raise UnknownMessageError(f"{cls.__name__} is not a registered message")
    out = bytearray([cls.ID])
    for spec in cls.FIELDS:
        value = getattr(msg, spec.name)
        spec.check(value)
        out += spec.wire.pack(value)
    if len(out) > MAX_PAYLOAD:
        raise MessageTooLargeError(
            f"{cls.__name__} encodes to {len(out)} bytes; a frame carries at most {MAX_PAYLOAD}"
        )
    return bytes(out)


def decode_message(payload: bytes | bytearray | memoryview) -> Message:
    """Message in a DATA payload; raises MessageError on unknown id, bad length or bad values."""
    data = bytes(payload)
    if not data:
        raise FieldValueError("empty payload: no message id")
    cls = MESSAGES.get(data[0])
    if cls is None:
        raise UnknownMessageError(f"unknown message id 0x{data[0]:02X}")
    pos = 1
    values: dict[str, Any] = {}
    for spec in cls.FIELDS:
        try:
            raw, pos = spec.wire.unpack(data, pos)
        except FieldValueError as exc:
            raise FieldValueError(f"{cls.__name__}.{spec.name}: {exc}") from exc
        if spec.wire.python_type is int:
            allowed = spec.allowed_values()
            if allowed is not None and raw not in allowed:
                raise FieldValueError(
                    f"{cls.__name__}.{spec.name}={raw} is not one of {_describe(allowed)}"
                )
        values[spec.name] = spec.convert(raw)
    if pos != len(data):
        raise FieldValueError(
            f"{cls.__name__}: {len(data) - pos} unexpected bytes after the last field"
        )
    return cls(**values)


def catalogue_markdown() -> str:
    """The message catalogue as Markdown tables (docs/protocol.md embeds this output)."""
    lines: list[str] = []
    for message_id, cls in sorted(MESSAGES.items()):
        senders = ", ".join(kind.name.lower() for kind in sorted(cls.SENDERS))
        lines.append(f"#### 0x{message_id:02X} `{cls.__name__}` (sent by: {senders})")
        lines.append("")
        lines.append(cls.DESCRIPTION)
        lines.append("")
        if not cls.FIELDS:
            lines.append("No fields.")
            lines.append("")
            continue
        lines.append("| field | type | unit | allowed | meaning |")
        lines.append("| --- | --- | --- | --- | --- |")
        for spec in cls.FIELDS:
            allowed = spec.allowed_values()
            if spec.enum is not None:
                shown = ", ".join(f"{int(m)}={m.name}" for m in spec.enum)
                if spec.open_enum:
                    shown += f"; any other 0..{spec.wire.max_int} tolerated"
            elif allowed is not None:
                shown = _describe(allowed)
            elif spec.wire.python_type is int:
                shown = f"0..{spec.wire.max_int}"
            elif spec.wire.python_type is bool:
                shown = "0, 1"
            else:
                shown = "0..255 UTF-8 bytes"
            lines.append(
                f"| {spec.name} | {spec.wire.name} | {spec.unit or '-'} | {shown} | {spec.doc} |"
            )
        lines.append("")
    return "\n".join(lines)
