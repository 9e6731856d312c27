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

from controller.control_wire import IDLE_CLOSED, line, send
from controller.memory.delivery import WhenDurable


class Replies:
    """A connection's replies, in request order, each sent once what it reports is durable.

    A reply is handed to the store's `when_durable` as it is made: the store answers its
    waiters in the order they came, at once when nothing is held, so each reply is written
    after the ones before it (not by a task of its own: a round's five wagers were five
    tasks, each woken twice). A reply answered at once is written at once; the replies one
    flush answers are written together, in one write, by a callback of their own right
    after the one that answered them (a round's five wagers: one system call and one
    wake-up of the client, not five). The connection's loop awaits only the socket's
    drain, which surfaces a lost connection and holds back a client that does not read its
    replies."""

    def __init__(self, writer: asyncio.StreamWriter, when_durable: WhenDurable | None) -> None:
        self._writer = writer
        self._when_durable = when_durable
        self._waiting = 0  # replies handed to when_durable and not yet written
        self._written: asyncio.Future[None] | None = None  # done when none is waiting
        self._failed: BaseException | None = None  # a reply that could not be written
        self._answered: list[dict[str, Any]] = []  # answered, to be written together
        self._handing = False  # send() is handing a reply to when_durable now

    async def send(self, response: dict[str, Any]) -> None:
        self._raise_failure()
        if self._when_durable is None:
            await send(self._writer, response)
            return
        self._waiting += 1
        self._handing = True
        try:
            self._when_durable(lambda error: self._write(response, error))
        finally:
            self._handing = False
        await self._writer.drain()  # a reply is written (or waits for its flush) meanwhile
        self._raise_failure()

    async def drain(self) -> None:
        """Every reply so far sent."""
        if self._waiting:
            if self._written is None:
                self._written = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._written)
        self._raise_failure()
        await self._writer.drain()

    def _write(self, response: dict[str, Any], error: BaseException | None) -> None:
        """The store's answer for this reply's flush: write it (as the error it became if the
        flush failed), at once if it came while send() handed it over (nothing was held),
        else with the others the same flush answers, right after the callback that answers
        them. Called by the store's delivery, which must not see it raise."""
        if error is not None:  # the flush failed: nothing the request did is acknowledged
            response = {"id": response.get("id"), "ok": False, "code": "internal", "error": (
                f"not acknowledged: the store could not flush ({error}); see the table's log")}
        self._answered.append(response)
        if self._handing:
            self._write_answered()
        elif len(self._answered) == 1:
            try:
                asyncio.get_running_loop().call_soon(self._write_answered)
            except RuntimeError:  # no loop runs (the store closing after it): at once
                self._write_answered()

    def _write_answered(self) -> None:
        """Every reply answered and not yet written, in order, in one write."""
        answered, self._answered = self._answered, []
        if not answered:
            return  # written already, with a reply answered at once after them
        lines = []
        try:
            for response in answered:
                if self._failed is None:
                    lines.append(line(response))
            if lines:
                self._writer.write(b"".join(lines))
        except Exception as exc:  # the connection ends at its next request
            if self._failed is None:
                self._failed = exc
        finally:
            self._waiting -= len(answered)
            written = self._written
            if not self._waiting and written is not None:
                self._written = None
                if not written.done() and not written.get_loop().is_closed():
                    written.set_result(None)

    def _raise_failure(self) -> None:
        if self._failed is not None:
            raise self._failed


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
