"""One control connection's requests and replies, in order, with group commit.

Requests are read and run one after another. A reply that reports a step whose flush is
still on its way (group commit, controller/memory/delivery.py) is sent once that flush has
returned, after the replies before it, while the next request is already read and run: a
client may send several requests before reading their replies (`ControlClient.call_many`,
a round's wagers), and those run in one loop turn share one flush. A request already read
in runs at once (`asyncio.timeout`, not `wait_for`, which would run each read as a task of
its own, a loop turn a line).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from controller.control_wire import IDLE_CLOSED, send
from controller.memory.delivery import WhenDurable, until_durable


class Replies:
    """A connection's replies, in request order, each sent once what it reports is durable."""

    def __init__(self, writer: asyncio.StreamWriter, when_durable: WhenDurable | None) -> None:
        self._writer = writer
        self._when_durable = when_durable
        self._last: asyncio.Future[None] | None = None  # the last reply still to be sent

    async def send(self, response: dict[str, Any]) -> None:
        if self._last is not None and self._last.done():
            finished, self._last = self._last, None
            finished.result()  # a reply that could not be sent ends the connection
        if self._last is None and self._durable_now():
            await send(self._writer, response)
        else:  # its step waits for a shared flush: the next request is read meanwhile
            self._last = asyncio.ensure_future(self._send_when_durable(response, self._last))

    async def drain(self) -> None:
        """Every reply so far sent."""
        if self._last is not None:
            last, self._last = self._last, None
            await last

    def _durable_now(self) -> bool:
        answered: list[BaseException | None] = []
        if self._when_durable is not None:
            self._when_durable(answered.append)
        return self._when_durable is None or bool(answered)

    async def _send_when_durable(self, response: dict[str, Any],
                                 before: asyncio.Future[None] | None) -> None:
        if before is not None:
            await before
        assert self._when_durable is not None
        error = await until_durable(self._when_durable)
        if error is not None:  # the flush failed: nothing the request did is acknowledged
            response = {"id": response.get("id"), "ok": False, "code": "internal", "error": (
                f"not acknowledged: the store could not flush ({error}); see the table's log")}
        await send(self._writer, response)


async def serve_requests(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                         dispatch: Callable[[bytes], Awaitable[dict[str, Any]]],
                         subscribe: Callable[[dict[str, Any]], Awaitable[None] | None],
                         idle_timeout_s: float, max_request_bytes: int,
                         closing: Callable[[], bool], when_durable: WhenDurable | None) -> None:
    """Serve one connection until it closes, idles out or turns into an event stream
    (`subscribe` returns the stream's coroutine for a subscribe request, else None)."""
    replies = Replies(writer, when_durable)
    try:
        while not closing():
            try:
                async with asyncio.timeout(idle_timeout_s):
                    line = await reader.readline()
            except TimeoutError:
                await replies.drain()
                await send(writer, {"id": None, "ok": False, "code": "refused", "error": (
                    f"{IDLE_CLOSED} {idle_timeout_s:g} s ([access] idle_timeout_s); "
                    "reconnect to continue")})
                return
            except (asyncio.LimitOverrunError, ValueError):
                await replies.drain()
                await send(writer, {"id": None, "ok": False, "code": "bad_request",
                                    "error": f"request longer than {max_request_bytes} bytes; "
                                             "allowed: one JSON object per line, up to that"})
                return
            if not line:
                return
            response = await dispatch(line)
            stream = subscribe(response)
            if stream is not None:
                await replies.drain()
                await stream
                return
            await replies.send(response)
    finally:
        await replies.drain()  # every reply is sent before the connection ends
