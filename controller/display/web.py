"""A small HTTP/1.1 server for the displays: GET only, static pages, server-sent events.

Standard library only (asyncio streams); why not a framework is in docs/dependencies.md.
The server answers five kinds of request and nothing else, with a cap on everything
a browser could send or make it hold:

- a request line and headers at most `MAX_HEADER_BYTES`, read within `HEADER_TIMEOUT_S`;
- `GET`/`HEAD` only (anything else is 405), no request body;
- at most `MAX_CLIENTS` connections at once (the next gets 503 and is closed);
- each event-stream browser has its own queue of `STREAM_QUEUE_LIMIT` messages; a browser
  that lets it fill (a stalled tab, a slow link) is disconnected, and its EventSource
  reconnects and starts again from a fresh snapshot. Nothing a browser does can hold up
  the daemon feed or another browser.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import formatdate
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

import structlog

log = structlog.get_logger("display.web")

MAX_HEADER_BYTES = 8 * 1024  # a browser's GET with cookies is well under 2 KiB
HEADER_TIMEOUT_S = 10.0  # a client that sends no full request in this long is dropped
MAX_CLIENTS = 64  # a pit has a handful of screens; this caps a runaway poller
STREAM_QUEUE_LIMIT = 32  # messages; a live round makes ~10 a second, so ~3 s of backlog
KEEPALIVE_S = 15.0  # an SSE comment this often lets both ends see a dead connection
RETRY_MS = 1000  # EventSource reconnect delay the server asks for
WRITE_TIMEOUT_S = 5.0  # a write that cannot drain in this long marks the browser as stalled

STATIC_PACKAGE = "controller.display.static"
CONTENT_TYPES = {".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8",
                 ".js": "text/javascript; charset=utf-8", ".svg": "image/svg+xml",
                 ".woff2": "font/woff2", ".png": "image/png"}


@dataclass
class Response:
    status: int
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    headers: Mapping[str, str] = field(default_factory=dict)


_REASONS = {200: "OK", 302: "Found", 400: "Bad Request", 404: "Not Found",
            405: "Method Not Allowed", 408: "Request Timeout",
            431: "Request Header Fields Too Large", 503: "Service Unavailable"}


def static_file(name: str) -> Response:
    """A file shipped in the package (controller/display/static/); no path outside it."""
    if "/" in name or "\\" in name or name.startswith(".") or not name:
        return Response(404, b"not found\n")
    suffix = name[name.rfind("."):] if "." in name else ""
    if suffix not in CONTENT_TYPES:
        return Response(404, b"not found\n")
    try:
        body = resources.files(STATIC_PACKAGE).joinpath(name).read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return Response(404, b"not found\n")
    return Response(200, body, CONTENT_TYPES[suffix], {"Cache-Control": "no-cache"})


class Stream:
    """One browser's event stream: a bounded queue the broadcaster fills."""

    def __init__(self, topics: frozenset[str]) -> None:
        self.topics = topics
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue(STREAM_QUEUE_LIMIT)
        self.dropped = False

    def offer(self, message: bytes) -> None:
        """Queue a message; a full queue drops the browser (never blocks the caller)."""
        if self.dropped:
            return
        try:
            self.queue.put_nowait(message)
        except asyncio.QueueFull:
            self.end()

    def end(self) -> None:
        """Make the writer close the connection after what it is sending now."""
        self.dropped = True
        while not self.queue.empty():  # what is queued will never be sent
            self.queue.get_nowait()
        self.queue.put_nowait(None)


def sse_message(topic: str, data: Any) -> bytes:
    return (f"event: {topic}\ndata: " + json.dumps(data, separators=(",", ":")) + "\n\n").encode()


Route = Callable[[str, Mapping[str, list[str]]], Response | None]


class WebServer:
    """Routes plain GETs through `route`; `/events` goes to the streams."""

    def __init__(self, route: Route, snapshot: Callable[[frozenset[str]], list[bytes]],
                 topics: frozenset[str]) -> None:
        self.route = route
        self.snapshot = snapshot  # the current state of the topics, for a new browser
        self.topics = topics
        self.streams: set[Stream] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self.clients = 0
        self.dropped_streams = 0
        self._server: asyncio.AbstractServer | None = None

    async def start(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(self._client, host, port,
                                                  limit=MAX_HEADER_BYTES)
        return int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        for stream in list(self.streams):
            stream.end()
        for writer in list(self._writers):  # a stalled browser would hold wait_closed()
            writer.transport.abort()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def publish(self, topic: str, message: bytes) -> None:
        for stream in list(self.streams):
            if topic in stream.topics:
                stream.offer(message)
                if stream.dropped:
                    self.streams.discard(stream)
                    self.dropped_streams += 1
                    log.warning("display_browser_dropped", reason="queue full")

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.clients += 1
        self._writers.add(writer)
        try:
            if self.clients > MAX_CLIENTS:
                await _write(writer, Response(503, b"too many connections\n"))
                return
            request = await self._read_request(reader, writer)
            if request is None:
                return
            method, target = request
            url = urlsplit(target)
            query = parse_qs(url.query)
            if url.path == "/events":
                await self._stream(writer, query)
                return
            response = self.route(url.path, query) or Response(404, b"not found\n")
            await _write(writer, response, head_only=method == "HEAD")
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            pass
        except Exception:  # one bad request must never take the service down
            log.exception("display_request_failed")
        finally:
            self.clients -= 1
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    async def _read_request(self, reader: asyncio.StreamReader,
                            writer: asyncio.StreamWriter) -> tuple[str, str] | None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEADER_TIMEOUT_S)
        except TimeoutError:
            await _write(writer, Response(408, b"request timeout\n"))
            return None
        except (asyncio.LimitOverrunError, ValueError):
            await _write(writer, Response(431, b"request headers too large\n"))
            return None
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            await _write(writer, Response(400, b"bad request line\n"))
            return None
        method, target = parts[0], parts[1]
        if method not in ("GET", "HEAD"):
            await _write(writer, Response(405, b"only GET and HEAD\n", headers={"Allow": "GET, HEAD"}))
            return None
        return method, target

    async def _stream(self, writer: asyncio.StreamWriter,
                      query: Mapping[str, list[str]]) -> None:
        wanted = frozenset(t for t in ",".join(query.get("topics", [])).split(",") if t)
        unknown = wanted - self.topics
        if unknown:
            shown = ", ".join(sorted(repr(t[:32]) for t in unknown)[:8])
            await _write(writer, Response(400, (
                f"unknown topics: {shown}; allowed: {', '.join(sorted(self.topics))} "
                "(comma-separated; none for all)\n").encode()))
            return
        topics = wanted or self.topics
        stream = Stream(topics)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     b"Cache-Control: no-store\r\nConnection: close\r\n"
                     b"X-Accel-Buffering: no\r\n\r\n" + f"retry: {RETRY_MS}\n\n".encode())
        for snapshot in self.snapshot(topics):  # a fresh browser starts from the present
            writer.write(snapshot)
        self.streams.add(stream)
        try:
            await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT_S)
            while True:
                message: bytes | None
                try:
                    message = await asyncio.wait_for(stream.queue.get(), KEEPALIVE_S)
                except TimeoutError:
                    message = b": keepalive\n\n"
                if message is None:
                    return
                writer.write(message)
                await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT_S)
        except TimeoutError:  # the browser stopped taking data: same as a full queue
            if not stream.dropped:
                stream.dropped = True
                self.dropped_streams += 1
                log.warning("display_browser_dropped", reason="write stalled")
        finally:
            self.streams.discard(stream)


async def _write(writer: asyncio.StreamWriter, response: Response, *,
                 head_only: bool = False) -> None:
    reason = _REASONS.get(response.status, "Error")
    headers = {"Content-Type": response.content_type, "Content-Length": str(len(response.body)),
               "Date": formatdate(usegmt=True), "Connection": "close",
               "X-Content-Type-Options": "nosniff",
               # Everything is served from here: the pages may load nothing from elsewhere.
               "Content-Security-Policy": "default-src 'self'; connect-src 'self'",
               **response.headers}
    head = f"HTTP/1.1 {response.status} {reason}\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    writer.write(head.encode("latin-1") + (b"" if head_only else response.body))
    await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT_S)

