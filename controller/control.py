"""The local control API: JSON lines over a Unix socket, for tablectl and the HIL harness.

Request:  {"id": 1, "cmd": "status", "args": {...}, "auth": {"supervisor": "ana", "pin": "1234"}}
Response: {"id": 1, "ok": true, "result": ...}  or  {"id": 1, "ok": false, "error": "...",
           "code": "bad_request" | "refused" | "unauthorised" | "internal"}
`subscribe` turns the connection into a stream of {"event": {...}} lines (committed
log entries, starting after `after_seq`). The protocol is documented in
docs/control-api.md.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from controller.store import Event

log = structlog.get_logger("control")

MAX_REQUEST_BYTES = 64 * 1024  # a request is a few hundred bytes; this caps a runaway client
SUBSCRIBER_QUEUE_LIMIT = 10_000  # events buffered per slow subscriber before it is dropped

Handler = Callable[[Mapping[str, Any]], Awaitable[Any] | Any]


class ControlError(Exception):
    """A request the daemon refuses; `code` is the machine-readable reason."""

    def __init__(self, message: str, code: str = "refused") -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Command:
    handler: Handler
    needs_supervisor: bool = False
    description: str = ""


def event_json(event: Event) -> dict[str, Any]:
    return {"seq": event.seq, "at": event.at, "kind": event.kind, "severity": event.severity,
            "device": event.device, "round_id": event.round_id, "payload": event.payload,
            "hash": event.hash}


class ControlServer:
    def __init__(self, path: str, *, mode: int = 0o660,
                 authorise: Callable[[str, str], bool] = lambda name, pin: False,
                 on_supervisor_command: Callable[[str, str, Mapping[str, Any]], None] | None = None,
                 ) -> None:
        self.path = path
        self.mode = mode
        self.commands: dict[str, Command] = {}
        self._authorise = authorise
        self._audit = on_supervisor_command
        self._server: asyncio.AbstractServer | None = None
        self._subscribers: set[asyncio.Queue[dict[str, Any] | None]] = set()
        self._history: Callable[[int], list[Event]] | None = None

    def register(self, name: str, handler: Handler, *, supervisor: bool = False,
                 description: str = "") -> None:
        self.commands[name] = Command(handler, supervisor, description)

    def set_history(self, history: Callable[[int], list[Event]]) -> None:
        self._history = history

    def publish(self, event: Event) -> None:
        """Called for every committed log entry; fans out to subscribers without blocking."""
        payload = event_json(event)
        for queue in list(self._subscribers):
            if queue.qsize() >= SUBSCRIBER_QUEUE_LIMIT:
                self._subscribers.discard(queue)
                queue.put_nowait(None)  # tell the stream to close: it fell too far behind
            else:
                queue.put_nowait(payload)

    async def start(self) -> None:
        socket_path = Path(self.path)
        socket_path.parent.mkdir(parents=True, exist_ok=True)
        if socket_path.exists() or socket_path.is_symlink():
            if not stat.S_ISSOCK(socket_path.lstat().st_mode):
                raise ControlError(f"{self.path} exists and is not a socket; refusing to replace it",
                                   "internal")
            socket_path.unlink()
        old_umask = os.umask(0o777 & ~self.mode)  # the socket is born with the right mode
        try:
            self._server = await asyncio.start_unix_server(self._client, path=self.path,
                                                           limit=MAX_REQUEST_BYTES)
        finally:
            os.umask(old_umask)
        os.chmod(self.path, self.mode)

    async def close(self) -> None:
        for queue in list(self._subscribers):
            queue.put_nowait(None)
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    line = await reader.readline()
                except (asyncio.LimitOverrunError, ValueError):
                    await _send(writer, {"ok": False, "code": "bad_request",
                                         "error": f"request longer than {MAX_REQUEST_BYTES} bytes"})
                    return
                if not line:
                    return
                response = await self._dispatch(line)
                if response.get("result") == _SUBSCRIBE:
                    await self._stream(response, writer)
                    return
                await _send(writer, response)
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()

    async def _dispatch(self, line: bytes) -> dict[str, Any]:
        request_id = None
        try:
            try:
                request = json.loads(line)
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise ControlError(f"not a JSON object: {exc}", "bad_request") from exc
            if not isinstance(request, dict):
                raise ControlError("a request is a JSON object with 'cmd'", "bad_request")
            request_id = request.get("id")
            name = str(request.get("cmd"))
            args = request.get("args") or {}
            if not isinstance(args, dict):
                raise ControlError("'args' must be a JSON object", "bad_request")
            if name == "subscribe":
                return {"id": request_id, "ok": True, "result": _SUBSCRIBE,
                        "after_seq": int(args.get("after_seq", 0))}
            command = self.commands.get(name)
            if command is None:
                raise ControlError(f"unknown command {name!r}; allowed: "
                                   f"{', '.join(sorted([*self.commands, 'subscribe']))}",
                                   "bad_request")
            if command.needs_supervisor:
                auth = request.get("auth") or {}
                who, pin = str(auth.get("supervisor", "")), str(auth.get("pin", ""))
                if not who or not await asyncio.to_thread(self._authorise, who, pin):
                    raise ControlError(f"{name} needs a floor supervisor's name and PIN",
                                       "unauthorised")
                if self._audit:
                    self._audit(who, name, args)
                args = {**args, "_supervisor": who}  # handlers record who authorised them
            result = command.handler(args)
            if asyncio.iscoroutine(result):
                result = await result
            return {"id": request_id, "ok": True, "result": result}
        except ControlError as exc:
            return {"id": request_id, "ok": False, "error": str(exc), "code": exc.code}
        except Exception as exc:  # a bug must not take the daemon down with it
            log.exception("control_command_failed")
            return {"id": request_id, "ok": False, "error": f"{type(exc).__name__}: {exc}",
                    "code": "internal"}

    async def _stream(self, response: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._subscribers.add(queue)  # before reading history so nothing falls in between
        try:
            await _send(writer, {"id": response["id"], "ok": True, "result": "subscribed"})
            last = response["after_seq"]
            for event in self._history(last) if self._history else []:
                await _send(writer, {"event": event_json(event)})
                last = event.seq
            while True:
                item = await queue.get()
                if item is None:
                    return
                if item["seq"] > last:
                    await _send(writer, {"event": item})
                    last = item["seq"]
        finally:
            self._subscribers.discard(queue)


_SUBSCRIBE = "__subscribe__"


async def _send(writer: asyncio.StreamWriter, obj: Mapping[str, Any]) -> None:
    writer.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")
    await writer.drain()


class ControlClient:
    """A small synchronous-feeling async client used by tablectl and the HIL harness."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._next_id = 0

    async def connect(self) -> ControlClient:
        self._reader, self._writer = await asyncio.open_unix_connection(self.path,
                                                                        limit=16 * 1024 * 1024)
        return self

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            try:
                await self._writer.wait_closed()
            except (ConnectionError, BrokenPipeError):
                pass

    async def call(self, cmd: str, auth: Mapping[str, str] | None = None, **args: Any) -> Any:
        assert self._reader is not None and self._writer is not None
        self._next_id += 1
        request: dict[str, Any] = {"id": self._next_id, "cmd": cmd, "args": args}
        if auth:
            request["auth"] = dict(auth)
        self._writer.write(json.dumps(request).encode() + b"\n")
        await self._writer.drain()
        line = await self._reader.readline()
        if not line:
            raise ConnectionError("the daemon closed the control connection")
        response = json.loads(line)
        if not response.get("ok"):
            raise ControlError(response.get("error", "refused"), response.get("code", "refused"))
        return response.get("result")

    async def subscribe(self, after_seq: int = 0):  # type: ignore[no-untyped-def]
        """Yield committed events (dicts) from after_seq on, forever."""
        await self.call("subscribe", after_seq=after_seq)
        assert self._reader is not None
        while True:
            line = await self._reader.readline()
            if not line:
                return
            yield json.loads(line)["event"]
