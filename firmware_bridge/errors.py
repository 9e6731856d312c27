"""The one exception tree of firmware_bridge.

Every error mixes in the built-in it refines, so callers that only know the
standard library (``except ValueError``, ``except TimeoutError``,
``except ConnectionError``) still catch the right things, and callers that know
this package can be precise (``except CrcError``).  Errors raised because of
another error are raised ``from`` it.
"""

from __future__ import annotations


class BridgeError(Exception):
    """Base of every error raised by firmware_bridge."""


# --- framing (bytes -> frames) ------------------------------------------------


class FrameError(BridgeError, ValueError):
    """A frame on the wire is malformed; it is counted and dropped, never trusted."""


class CobsError(FrameError):
    """The COBS byte stuffing of a frame is invalid."""


class FrameLengthError(FrameError):
    """A frame is too short, too long, or its length field disagrees with its size."""


class CrcError(FrameError):
    """The CRC-16 of a frame does not match its contents."""


class UnknownFrameKindError(FrameError):
    """The frame kind byte is not one of the kinds in docs/protocol.md."""


# --- messages (payload -> typed message) -----------------------------------


class MessageError(BridgeError, ValueError):
    """A DATA payload is not a valid message (unknown id, bad length, bad field value)."""


class UnknownMessageError(MessageError):
    """The message id is not in the catalogue."""


class FieldValueError(MessageError):
    """A field is truncated, out of its allowed range, or not valid UTF-8."""


class MessageTooLargeError(MessageError):
    """An encoded message would not fit in one frame's payload."""


# --- link layer --------------------------------------------------------------


class LinkError(BridgeError):
    """The link to the peer cannot do what was asked."""


class LinkDownError(LinkError, ConnectionError):
    """The link is not up (never came up, failed, was reset, or was closed)."""


class LinkBusyError(LinkError):
    """The bounded send queue is full; the caller must slow down."""


class LinkTimeoutError(LinkError, TimeoutError):
    """The peer did not answer in time (handshake, acknowledgement, or silence)."""


class LinkRefusedError(LinkError):
    """The handshake ended in a refusal, by this side or by the peer."""


class IncompatibleVersionError(LinkRefusedError):
    """The peer speaks a protocol version this side does not; names both versions."""


class TransportError(BridgeError, OSError):
    """The serial port, pseudo-terminal or USB device under the link failed."""
