"""The control socket's wire format: one JSON object a line each way, the refusal a
request gets, and a log entry as a subscriber's stream line (controller/control.py serves
it, controller/control_client.py speaks it; docs/control-api.md documents it)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from controller.errors import CommandError, shown
from controller.memory.macs import KNOWN_JSON_STRINGS as _KNOWN
from controller.memory.macs import MAC_TEXTS as _MAC_TEXTS
from controller.memory.macs import float_text, int_text, json_string, known_json_string
from controller.memory.store import Event

IDLE_CLOSED = "closed: no request for"  # how the idle refusal starts; clients reconnect on it


class ControlError(CommandError):
    """A request the daemon refuses; `code` is the machine-readable reason."""

    def __init__(self, message: str, code: str = "refused") -> None:
        super().__init__(message)
        self.code = code



def event_json(event: Event) -> dict[str, Any]:
    return {"seq": event.seq, "at": event.at, "kind": event.kind, "severity": event.severity,
            "device": event.device, "round_id": event.round_id, "payload": event.payload,
            "hash": event.hash}


def bad_request(message: str) -> ControlError:
    return ControlError(message, "bad_request")


def parse_request(line: bytes) -> dict[str, Any]:
    try:
        request = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise bad_request(f"not a JSON object: {exc}") from exc
    except ValueError:  # Python reads no integer of more than 4,300 digits
        raise bad_request("not a JSON object the daemon reads: a number has more than 4300 "
                          "digits; allowed: the numbers each argument allows "
                          "(docs/control-api.md)") from None
    except RecursionError:
        raise bad_request("not a JSON object: nested too deeply; allowed: "
                          "{\"cmd\": NAME, \"args\": {...}}") from None
    if not isinstance(request, dict):
        raise bad_request("a request is a JSON object with 'cmd'")
    return request


def command_and_args(request: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    name = request.get("cmd")
    if not isinstance(name, str):
        raise bad_request(f"'cmd' = {shown(name)}: allowed: a command name (a string)")
    args = request.get("args")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise bad_request("'args' must be a JSON object")
    if "_supervisor" in args:
        raise bad_request("'_supervisor' is set by the daemon from 'auth', never by a client")
    return name, args


def auth_name(request: Mapping[str, Any]) -> str | None:
    """The supervisor a request names, if it names one as text (escaped when recorded)."""
    auth = request.get("auth")
    who = auth.get("supervisor") if isinstance(auth, Mapping) else None
    return who if isinstance(who, str) else None


_LINE = json.JSONEncoder(separators=(",", ":"))  # json.dumps would build one per line


def line(obj: Mapping[str, Any]) -> bytes:
    return _LINE.encode(obj).encode() + b"\n"


def event_line(event: Event) -> bytes:
    """A log entry as a subscriber's stream line: {"event": event_json(event)}, with the
    payload written as the store holds it, the text the entry's MAC covers, not encoded a
    second time (tests/controller/test_control.py checks the two agree), and the time's
    text as its MAC was computed with (`float_text`), not written out again."""
    seq, at, kind, severity, device, round_id, _, _, digest, payload_json = event
    # The kept texts' dicts as local names: a method of an imported name is compiled as an
    # attribute read (a bound method made at each call), of a local one as a method call.
    known, macs = _KNOWN, _MAC_TEXTS
    # Encoded in three parts, the same bytes as the whole line's: the payload's UTF-8 is
    # the one the store bound to its INSERT (kept by the text), and a card's payload (its
    # suit, not Latin-1) no longer widens and encodes the whole line.
    return b"".join((
        f'{{"event":{{"seq":{int_text(seq)},"at":{float_text(at)},'
        f'"kind":{known.get(kind) or known_json_string(kind)},'
        f'"severity":{known.get(severity) or known_json_string(severity)},'
        f'"device":'
        f'{"null" if device is None else known.get(device) or known_json_string(device)},'
        f'"round_id":{"null" if round_id is None else int_text(round_id)},'
        f'"payload":'.encode(), payload_json.encode(),
        f',"hash":{macs.get(digest) or json_string(digest)}}}}}\n'.encode()))


def kept_line(item: list[Any]) -> bytes:
    """A kept entry's stream line ([event, line or None]), encoded once, when first needed."""
    if item[1] is None:
        item[1] = event_line(item[0])
    line: bytes = item[1]
    return line


async def send(writer: asyncio.StreamWriter, obj: Mapping[str, Any]) -> None:
    writer.write(line(obj))
    await writer.drain()
