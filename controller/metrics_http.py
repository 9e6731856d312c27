"""The daemon's own /metrics: a small HTTP endpoint on the loopback interface, off unless
`[metrics] listen` names one (docs/deployment.md).

It answers `GET /metrics` with the Prometheus text of `render` and nothing else, one request
per connection, with the same kind of caps as the display's server (controller/display/
web.py): a short request read within a timeout, a few connections at once. A scrape costs a
status read of the table, far less than one card's step.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import structlog

log = structlog.get_logger("metrics")

MAX_REQUEST_BYTES = 4096  # a scraper's GET is a few hundred bytes
REQUEST_TIMEOUT_S = 5.0
MAX_CLIENTS = 8  # a Prometheus server or two and a technician's curl
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class MetricsEndpoint:
    def __init__(self, render: Callable[[], str]) -> None:
        self.render = render
        self.clients = 0
        self._server: asyncio.AbstractServer | None = None

    async def start(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(self._client, host, port,
                                                  limit=MAX_REQUEST_BYTES)
        return int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.clients += 1
        try:
            status, body, content_type = 503, "too many connections\n", "text/plain"
            if self.clients <= MAX_CLIENTS:
                status, body, content_type = await self._answer(reader)
            head = (f"HTTP/1.1 {status} {REASONS[status]}\r\nContent-Type: {content_type}\r\n"
                    f"Content-Length: {len(body.encode())}\r\nConnection: close\r\n\r\n")
            writer.write(head.encode("latin-1") + body.encode())
            await asyncio.wait_for(writer.drain(), REQUEST_TIMEOUT_S)
        except (ConnectionError, TimeoutError, asyncio.IncompleteReadError):
            pass
        except Exception:  # a scrape must never take the daemon down
            log.exception("metrics_request_failed")
        finally:
            self.clients -= 1
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader) -> tuple[int, str, str]:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), REQUEST_TIMEOUT_S)
        except (asyncio.LimitOverrunError, ValueError):
            return 400, f"request over {MAX_REQUEST_BYTES} bytes\n", "text/plain"
        parts = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            return 400, "bad request line\n", "text/plain"
        if parts[0] != "GET":
            return 405, "only GET\n", "text/plain"
        if parts[1].split("?", 1)[0] != "/metrics":
            return 404, "only /metrics\n", "text/plain"
        return 200, self.render(), CONTENT_TYPE


REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
           503: "Service Unavailable"}
