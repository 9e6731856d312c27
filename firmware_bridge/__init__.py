"""The device wire protocol of the table controller (docs/protocol.md).

Sans-I/O core: ``crc``, ``cobs``, ``frame`` (framing), ``messages`` (catalogue),
``link`` (LinkEndpoint state machine); asyncio adapters in ``aio`` (AsyncLink
over a serial URL, a pty master fd, or pyusb bulk endpoints); test tools in
``impairment``.  Nothing here knows about baccarat.
"""

from __future__ import annotations

from firmware_bridge.errors import (
    BridgeError,
    CrcError,
    FrameError,
    IncompatibleVersionError,
    LinkBusyError,
    LinkDownError,
    LinkError,
    LinkRefusedError,
    LinkTimeoutError,
    MessageError,
    TransportError,
)
from firmware_bridge.link import LinkEndpoint, LinkState, LinkTiming, Role
from firmware_bridge.messages import PROTOCOL_VERSION, DeviceKind, FaultCode, Hello

__all__ = [
    "PROTOCOL_VERSION", "BridgeError", "CrcError", "DeviceKind", "FaultCode", "FrameError",
    "Hello", "IncompatibleVersionError", "LinkBusyError", "LinkDownError", "LinkEndpoint",
    "LinkError", "LinkRefusedError", "LinkState", "LinkTiming", "LinkTimeoutError",
    "MessageError", "Role", "TransportError",
]
