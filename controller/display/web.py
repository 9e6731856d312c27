"""A small HTTP/1.1 server for the displays: GET only, static pages, server-sent events.

Standard library only (asyncio streams); why not a framework is in docs/dependencies.md.
The server answers five kinds of request and nothing else, with a cap on everything
a browser could send or make it hold:

- a request line and headers at most `MAX_HEADER_BYTES`, read within the configured
  header timeout (an idle or trickling client is dropped with 408);
- `GET`/`HEAD` only (anything else is 405), no request body;
- at most `max_per_address` connections and `max_streams_per_address` event streams at
  once from one client address (the next gets 429 and is closed), and `max_clients`
  from everyone (503), so that no one host can take the screens away from the others
  (controller/display/settings.py: the `[display_service]` section);
- a page restricted to some addresses (`/dealer` to the dealer's station) is 403 for
  every other address;
- each event-stream browser has its own queue of `STREAM_QUEUE_LIMIT` messages; a browser
  that lets it fill (a stalled tab, a slow link) is disconnected, and its EventSource
  reconnects and starts again from a fresh snapshot. Nothing a browser does can hold up
  the daemon feed or another browser.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import formatdate
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

import structlog

from controller.display.settings import ClientLimits, address_allowed, client_address

log = structlog.get_logger("display.web")

MAX_HEADER_BYTES = 8 * 1024  # a browser's GET with cookies is well under 2 KiB
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


_REASONS = {200: "OK", 302: "Found", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
            405: "Method Not Allowed", 408: "Request Timeout", 429: "Too Many Requests",
            431: "Request Header Fields Too Large", 503: "Service Unavailable"}
# Why a connection was refused or dropped, counted for /metrics (a fixed set of labels).
REFUSAL_REASONS = ("per_address", "streams_per_address", "global", "header_timeout",
                   "forbidden")
# The pages only some addresses may load, and the limit that names those addresses.
RESTRICTED_PAGES = {"/dealer": "dealer_allowed"}


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
                 topics: frozenset[str], limits: ClientLimits | None = None) -> None:
        self.route = route
        self.snapshot = snapshot  # the current state of the topics, for a new browser
        self.topics = topics
        self.limits = limits or ClientLimits()
        self.streams: set[Stream] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._handlers: set[asyncio.Task[Any]] = set()
        self.clients = 0
        self.by_address: Counter[str] = Counter()  # open connections per client address
        self.streams_by_address: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()  # by REFUSAL_REASONS, for /metrics
        self.dropped_streams = 0
        self._server: asyncio.AbstractServer | None = None

    async def start(self, host: str, port: int) -> int:
        # A backlog above the default 100: a burst of connections from one host is
        # accepted and refused by the limits, not left in the kernel's queue ahead of the
        # other clients' connections.
        self._server = await asyncio.start_server(self._client, host, port,
                                                  limit=MAX_HEADER_BYTES, backlog=1024)
        return int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        for stream in list(self.streams):
            stream.end()
        for writer in list(self._writers):  # a stalled browser would hold wait_closed()
            writer.transport.abort()
        if self._handlers:  # each sees its connection gone and ends (never left pending)
            await asyncio.wait(self._handlers, timeout=WRITE_TIMEOUT_S)
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

    def _refusal(self, address: str) -> Response | None:
        """A new connection over a limit (the counts are of the connections admitted
        before it): one address's share first, so a host that floods is told it is the
        one over its limit (429) and never counts toward the global cap."""
        if self.by_address[address] >= self.limits.max_per_address:
            self.refused["per_address"] += 1
            return Response(429, b"too many connections from this address\n")
        if self.clients >= self.limits.max_clients:
            self.refused["global"] += 1
            return Response(503, b"too many connections\n")
        return None

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        address = client_address(str(peer[0])) if peer else "unknown"
        refusal = self._refusal(address)
        # A refused connection holds no share of either limit while it is told so.
        admitted = refusal is None
        self.clients += admitted
        self.by_address[address] += admitted
        self._writers.add(writer)
        handler = asyncio.current_task()
        if handler is not None:
            self._handlers.add(handler)
        try:
            if refusal is not None:
                await _write(writer, refusal)
                return
            request = await self._read_request(reader, writer)
            if request is None:
                return
            method, target = request
            try:
                url = urlsplit(target)
            except ValueError:  # '//[x': a bracketed host that is not an address
                await _write(writer, Response(400, b"bad request target\n"))
                return
            query = parse_qs(url.query)
            if url.path == "/events":
                await self._stream(reader, writer, query, address)
                return
            response = self._forbidden(url.path, address) or self.route(url.path, query) \
                or Response(404, b"not found\n")
            await _write(writer, response, head_only=method == "HEAD")
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            pass
        except Exception:  # one bad request must never take the service down
            log.exception("display_request_failed")
        finally:
            self.clients -= admitted
            self.by_address[address] -= admitted
            if not self.by_address[address]:
                del self.by_address[address]
            self._writers.discard(writer)
            if handler is not None:
                self._handlers.discard(handler)
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    def _forbidden(self, path: str, address: str) -> Response | None:
        limit = RESTRICTED_PAGES.get(path)
        networks = getattr(self.limits, limit) if limit is not None else None
        if networks is None or address_allowed(address, networks):
            return None
        self.refused["forbidden"] += 1
        return Response(403, f"{path} is served only to the addresses in "
                             f"[display_service] {limit}\n".encode())

    async def _read_request(self, reader: asyncio.StreamReader,
                            writer: asyncio.StreamWriter) -> tuple[str, str] | None:
        try:
            # The whole head within the timeout: a client trickling a byte at a time is
            # dropped as surely as one that sends nothing.
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"),
                                          self.limits.header_timeout_s)
        except TimeoutError:
            self.refused["header_timeout"] += 1
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

    async def _stream(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      query: Mapping[str, list[str]], address: str) -> None:
        wanted = frozenset(t for t in ",".join(query.get("topics", [])).split(",") if t)
        unknown = wanted - self.topics
        if unknown:
            shown = ", ".join(sorted(repr(t[:32]) for t in unknown)[:8])
            await _write(writer, Response(400, (
                f"unknown topics: {shown}; allowed: {', '.join(sorted(self.topics))} "
                "(comma-separated; none for all)\n").encode()))
            return
        if self.streams_by_address[address] >= self.limits.max_streams_per_address:
            self.refused["streams_per_address"] += 1
            await _write(writer, Response(429, b"too many event streams from this address\n"))
            return
        topics = wanted or self.topics
        stream = Stream(topics)
        self.streams_by_address[address] += 1
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     b"Cache-Control: no-store\r\nConnection: close\r\n"
                     b"X-Accel-Buffering: no\r\n\r\n" + f"retry: {RETRY_MS}\n\n".encode())
        for snapshot in self.snapshot(topics):  # a fresh browser starts from the present
            writer.write(snapshot)
        self.streams.add(stream)
        # A browser sends nothing after its request: the end of its input is it leaving
        # (a closed tab, a reload), seen at once rather than at the next keepalive, so its
        # stream stops counting toward the address's limit.
        gone = asyncio.ensure_future(_until_eof(reader))
        try:
            await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT_S)
            while True:
                message: bytes | None
                next_message = asyncio.ensure_future(stream.queue.get())
                done, _ = await asyncio.wait({next_message, gone}, timeout=KEEPALIVE_S,
                                             return_when=asyncio.FIRST_COMPLETED)
                if next_message in done:
                    message = next_message.result()
                else:
                    next_message.cancel()
                    message = None if gone in done else b": keepalive\n\n"
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
            gone.cancel()
            self.streams.discard(stream)
            self.streams_by_address[address] -= 1
            if not self.streams_by_address[address]:
                del self.streams_by_address[address]


async def _until_eof(reader: asyncio.StreamReader) -> None:
    while await reader.read(1024):  # anything a browser sends on a stream is ignored
        pass


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

