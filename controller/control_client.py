"""The reference client of the control socket, used by tablectl and the HIL harness."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from controller.control_wire import IDLE_CLOSED, ControlError
from controller.errors import ControllerError, shown
from controller.text_files import loads_json


class NotAControlSocket(ControllerError, ConnectionError):
    """What answered on the socket does not speak the control protocol: not tabled (a
    wrong --socket, another program's socket at the path)."""


def _answer(line: bytes, *wanted: str) -> dict[str, Any]:
    """One line the daemon sent: a JSON object holding one of the `wanted` keys, else
    NotAControlSocket (it was a traceback in tablectl: JSONDecodeError, AttributeError)."""
    try:
        answer = loads_json(line)
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or not any(key in answer for key in wanted):
        raise NotAControlSocket(f"it answered {shown(line.decode('utf-8', 'replace'))}, which "
                                "is not the control protocol")
    return answer


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
        self._next_id += 1
        request: dict[str, Any] = {"id": self._next_id, "cmd": cmd, "args": args}
        if auth:
            request["auth"] = dict(auth)
        try:
            response = await self._exchange(request)
        except NotAControlSocket:
            raise
        except ConnectionError:
            # Writing to a connection the daemon already closed can fail before the line it
            # left (why it closed) is read: read that line now, if there is one.
            assert self._reader is not None
            left = await self._reader.readline()
            if not left:
                raise
            response = _answer(left, "ok")
        if response.get("id") is None and str(response.get("error", "")).startswith(IDLE_CLOSED):
            # The daemon closed this connection for idleness before reading the request:
            # nothing was done, so asking again on a new connection is safe.
            await self.close()
            await self.connect()
            response = await self._exchange(request)
        if not response.get("ok"):
            raise ControlError(response.get("error", "refused"), response.get("code", "refused"))
        return response.get("result")

    async def call_many(self, calls: Sequence[tuple[str, Mapping[str, Any]]]
                        ) -> AsyncIterator[Any]:
        """Send every request at once, then yield each reply in order: its result, or the
        ControlError of a refused one. The daemon runs them in order, in one loop turn,
        and reports them after one shared flush (a round's wagers). A ConnectionError ends
        the replies: the requests not answered may or may not have been done."""
        assert self._reader is not None and self._writer is not None
        lines = []
        for cmd, args in calls:
            self._next_id += 1
            lines.append(json.dumps({"id": self._next_id, "cmd": cmd, "args": dict(args)}
                                    ).encode() + b"\n")
        self._writer.writelines(lines)
        await self._writer.drain()
        for _ in lines:
            line = await self._reader.readline()
            if not line:
                raise ConnectionError("the daemon closed the control connection")
            response = _answer(line, "ok")
            yield (response.get("result") if response.get("ok") else
                   ControlError(response.get("error", "refused"), response.get("code", "refused")))

    async def _exchange(self, request: Mapping[str, Any]) -> dict[str, Any]:
        assert self._reader is not None and self._writer is not None
        self._writer.write(json.dumps(request).encode() + b"\n")
        await self._writer.drain()
        line = await self._reader.readline()
        if not line:
            raise ConnectionError("the daemon closed the control connection")
        return _answer(line, "ok")

    async def subscribe(self, after_seq: int = 0) -> AsyncIterator[dict[str, Any]]:
        """Yield committed events (dicts) from after_seq on, until the daemon ends the stream
        (ConnectionError with its reason if it dropped this subscriber)."""
        await self.call("subscribe", after_seq=after_seq)
        assert self._reader is not None
        while True:
            line = await self._reader.readline()
            if not line:
                return
            item = _answer(line, "event", "closed")
            if "closed" in item:
                raise ConnectionError(f"the daemon ended the stream: {item['closed']}")
            yield item["event"]
