"""Message catalogue: every message round-trips; bad payloads raise MessageError only."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_bridge.errors import (
    FieldValueError,
    MessageError,
    MessageTooLargeError,
    UnknownMessageError,
)
from firmware_bridge.messages import (
    BOOL,
    MESSAGES,
    STR,
    CardDrawn,
    DeviceKind,
    FaultCode,
    FieldSpec,
    Hello,
    Message,
    ShowMeter,
    catalogue_markdown,
    decode_message,
    encode_message,
)


def field_values(spec: FieldSpec) -> st.SearchStrategy[Any]:
    if spec.wire is STR:
        return st.text(max_size=30)
    if spec.wire is BOOL:
        return st.booleans()
    if spec.enum is not None:
        return st.sampled_from(list(spec.enum))
    allowed = spec.allowed_values()
    if allowed is not None:
        return st.sampled_from(sorted(allowed))
    return st.integers(0, spec.wire.max_int)


def messages_of(cls: type[Message]) -> st.SearchStrategy[Message]:
    return st.builds(cls, **{spec.name: field_values(spec) for spec in cls.FIELDS})


any_message = st.one_of([messages_of(cls) for cls in MESSAGES.values()])


@given(any_message)
def test_every_message_round_trips(message: Message) -> None:
    payload = encode_message(message)
    assert payload[0] == type(message).ID
    assert decode_message(payload) == message


def test_catalogue_declares_every_message_as_data() -> None:
    ids = [cls.ID for cls in MESSAGES.values()]
    assert len(ids) == len(set(ids))
    for cls in MESSAGES.values():
        assert cls.DESCRIPTION and cls.SENDERS
        assert dataclasses.is_dataclass(cls)
        assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert "CardDrawn" in catalogue_markdown()


def test_faults_cover_every_device() -> None:
    names = {code.name for code in FaultCode}
    for required in ["SHOE_LID_OPEN", "SHOE_SENSOR_FAULT", "SHOE_MISREAD", "SHOE_CARD_JAM",
                     "SHOE_CARD_FACE_UP", "SHUFFLER_JAM", "SHUFFLER_MISCOUNT",
                     "SHUFFLER_CYCLE_INCOMPLETE", "SHUFFLER_DOOR_OPEN", "SHUFFLER_BATCH_MISSING",
                     "DISPLAY_LAMP_FAILED", "DEVICE_OVERTEMP", "DEVICE_INTERNAL_ERROR"]:
        assert required in names


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        (b"", FieldValueError),
        (b"\xee", UnknownMessageError),
        (bytes.fromhex("20 0000 0e 00 00 00"), FieldValueError),  # rank 14
        (bytes.fromhex("20 0000 01 04 00 00"), FieldValueError),  # suit 4
        (bytes.fromhex("20 0000 01 00 00 02"), FieldValueError),  # bool 2
        (bytes.fromhex("20 0000 01 00 00"), FieldValueError),  # truncated
        (bytes.fromhex("20 0000 01 00 00 00 00"), FieldValueError),  # trailing byte
        (bytes.fromhex("42 05 41"), FieldValueError),  # string runs past the end
        (bytes.fromhex("42 02 c3 28"), FieldValueError),  # invalid UTF-8
    ],
)
def test_bad_payloads_raise_message_errors(payload: bytes, error: type[MessageError]) -> None:
    with pytest.raises(error):
        decode_message(payload)


def test_encoder_refuses_invalid_values() -> None:
    with pytest.raises(FieldValueError):
        encode_message(CardDrawn(0, 14, 0, 0, False))
    with pytest.raises(FieldValueError):
        encode_message(CardDrawn(70000, 1, 0, 0, False))
    with pytest.raises(FieldValueError):
        encode_message(ShowMeter("major", -1))
    with pytest.raises(MessageTooLargeError):
        encode_message(Hello(1, DeviceKind.SHOE, "x" * 200, "y" * 200, 0))


def test_unregistered_message_is_rejected() -> None:
    with pytest.raises(UnknownMessageError):
        encode_message(Message())


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=260),
                 st.builds(lambda i, rest: bytes([i]) + rest,
                           st.sampled_from(sorted(MESSAGES)), st.binary(max_size=40))))
def test_fuzz_decode_message_only_raises_message_errors(payload: bytes) -> None:
    try:
        decode_message(payload)
    except MessageError:
        pass
