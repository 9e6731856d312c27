"""The display service's HTTP side: what it serves, what it refuses, and a browser that
stops reading is dropped without holding up the others."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Mapping

import pytest

from controller.display.board import Board
from controller.display.metrics import render_metrics
from controller.display.web import (
    MAX_HEADER_BYTES, STREAM_QUEUE_LIMIT, Response, Stream, WebServer, sse_message, static_file,
)


def route(path: str, query: Mapping[str, list[str]]) -> Response | None:
    if path == "/scoreboard":
        return static_file("scoreboard.html")
    if path.startswith("/static/"):
        return static_file(path[len("/static/"):])
    return None


@pytest.fixture
async def server() -> AsyncIterator[tuple[WebServer, int]]:
    web = WebServer(route, lambda topics: [sse_message(t, {"hello": t}) for t in sorted(topics)],
                    frozenset({"roads", "live"}))
    port = await web.start("127.0.0.1", 0)
    try:
        yield web, port
    finally:
        await web.close()


async def request(port: int, raw: bytes) -> tuple[str, dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return lines[0], headers, body


async def test_pages_and_static_files_come_from_the_package(server: tuple[WebServer, int]) -> None:
    _, port = server
    status, headers, body = await request(port, b"GET /scoreboard HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == "HTTP/1.1 200 OK"
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert headers["Content-Security-Policy"] == "default-src 'self'; connect-src 'self'"
    assert b'<script src="/static/scoreboard.js"></script>' in body
    status, headers, body = await request(port, b"GET /static/display.css HTTP/1.1\r\n\r\n")
    assert (status, headers["Content-Type"]) == ("HTTP/1.1 200 OK", "text/css; charset=utf-8")
    # No web fonts, no CDN: nothing the pages load names another host.
    for name in ("scoreboard.html", "dealer.html", "display.css", "common.js", "scoreboard.js",
                 "dealer.js"):
        text = static_file(name).body.decode()
        assert "http://" not in text and "https://" not in text and "@import" not in text


@pytest.mark.parametrize("raw, expected", [
    (b"GET /static/../service.py HTTP/1.1\r\n\r\n", "HTTP/1.1 404 Not Found"),
    (b"GET /static/__init__.py HTTP/1.1\r\n\r\n", "HTTP/1.1 404 Not Found"),
    (b"GET /nothing HTTP/1.1\r\n\r\n", "HTTP/1.1 404 Not Found"),
    (b"POST /scoreboard HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi", "HTTP/1.1 405 Method Not Allowed"),
    (b"GARBAGE\r\n\r\n", "HTTP/1.1 400 Bad Request"),
    (b"GET / HTTP/1.1\r\nX: " + b"a" * MAX_HEADER_BYTES + b"\r\n\r\n",
     "HTTP/1.1 431 Request Header Fields Too Large"),
])
async def test_anything_else_is_refused_plainly(server: tuple[WebServer, int], raw: bytes,
                                                expected: str) -> None:
    status, _, _ = await request(server[1], raw)
    assert status == expected


async def test_an_unknown_topic_is_refused_naming_the_known_ones(
        server: tuple[WebServer, int]) -> None:
    status, _, body = await request(server[1], b"GET /events?topics=live,bogus HTTP/1.1\r\n\r\n")
    assert (status, body) == ("HTTP/1.1 400 Bad Request", b"unknown topics: 'bogus'; allowed: "
                              b"live, roads (comma-separated; none for all)\n")


def test_a_full_queue_ends_the_stream_instead_of_blocking() -> None:
    stream = Stream(frozenset({"live"}))
    for i in range(STREAM_QUEUE_LIMIT):
        stream.offer(b"%d" % i)
    assert not stream.dropped
    stream.offer(b"one too many")
    assert stream.dropped
    assert stream.queue.qsize() == 1 and stream.queue.get_nowait() is None


async def test_a_browser_that_stops_reading_is_dropped_the_others_get_everything(
        server: tuple[WebServer, int]) -> None:
    web, port = server
    stalled_reader, stalled = await asyncio.open_connection("127.0.0.1", port)
    stalled.write(b"GET /events?topics=live HTTP/1.1\r\n\r\n")
    reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
    writer.write(b"GET /events?topics=live HTTP/1.1\r\n\r\n")
    await reader.readuntil(b'event: live\ndata: {"hello":"live"}\n\n')  # the snapshot
    while len(web.streams) < 2:
        await asyncio.sleep(0.01)
    big = "x" * 60_000  # each message ~60 kB: the stalled socket's buffers fill in a few MB
    received = 0
    messages = 0
    # Lockstep: the reading browser takes each message before the next is published, so
    # only the stalled one can fall behind, however slow this machine is.
    while len(web.streams) == 2:
        messages += 1
        assert messages < 2000, "the stalled browser was never dropped"
        web.publish("live", sse_message("live", {"n": messages, "pad": big}))
        await reader.readuntil(b"\n\n")
        received += 1
    assert web.dropped_streams == 1 and len(web.streams) == 1
    print(f"stalled browser dropped after {messages} messages of ~60 kB")
    # The reading browser carries on.
    web.publish("live", sse_message("live", {"n": "after"}))
    assert b'"n":"after"' in await asyncio.wait_for(reader.readuntil(b"\n\n"), 10)
    assert received == messages
    stalled.close()
    writer.close()


def test_metrics_text() -> None:
    board = Board(table={"table_id": "T1", "seats": 2})
    board.daemon_connected = True
    board.apply_status({"state": "dealing", "shoe": {}, "round": {},
                        "software": {"mode": "enforce", "release": "v0.2.0", "verified": True}})
    board.apply_meters([{"progressive": "heavenly9", "level": "progressive",
                         "amount_cents": 1_000_150}])
    board.apply_devices([{"device": "shoe", "link": "up", "counters": {"crc_errors": 2}}])
    board.apply({"seq": 1, "at": 5.0, "kind": "device_fault", "device": "shoe",
                 "payload": {"code": "lid_open", "detail": "", "action": "close it"}}, now=5.02)

    class Web:
        streams = {1, 2}
        dropped_streams = 3
        refused = Counter({"per_address": 484, "header_timeout": 16})

    text = render_metrics(board, Web(), uptime_s=12.5)  # type: ignore[arg-type]
    lines = set(text.splitlines())
    for expected in [
        'tabled_up{table="T1"} 1',
        'tabled_table_state{table="T1",state="dealing"} 1',
        'tabled_table_state{table="T1",state="closed"} 0',
        'tabled_software_verified{table="T1"} 1',
        'tabled_software_info{table="T1",release="v0.2.0",mode="enforce"} 1',
        'tabled_device_link{table="T1",device="shoe",state="up"} 1',
        'tabled_device_counter_total{table="T1",device="shoe",counter="crc_errors"} 2',
        'tabled_fault_active{table="T1"} 1',
        'tabled_fault_info{table="T1",device="shoe",code="lid_open"} 1',
        'tabled_faults_total{table="T1",device="shoe",code="lid_open"} 1',
        'tabled_progressive_meter_cents{table="T1",progressive="heavenly9",level="progressive"}'
        ' 1000150',
        'tabledisplay_event_delay_seconds_bucket{table="T1",le="0.025"} 1',
        'tabledisplay_event_delay_seconds_bucket{table="T1",le="0.01"} 0',
        'tabledisplay_event_delay_seconds_count{table="T1"} 1',
        'tabledisplay_browsers{table="T1"} 2',
        'tabledisplay_browsers_dropped_total{table="T1"} 3',
        'tabledisplay_connections_refused_total{table="T1",reason="per_address"} 484',
        'tabledisplay_connections_refused_total{table="T1",reason="header_timeout"} 16',
        'tabledisplay_connections_refused_total{table="T1",reason="global"} 0',
        'tabledisplay_uptime_seconds{table="T1"} 12.5',
        "# TYPE tabled_faults_total counter",
    ]:
        assert expected in lines, expected


@pytest.mark.parametrize("target", [b"//[x", b"http://[::1", b"//a]b[/"])
async def test_a_request_target_no_url_parser_reads_is_400_not_a_traceback(
        server: tuple[WebServer, int], target: bytes) -> None:
    """A bracketed host that is not an address makes urlsplit raise: the connection was
    closed with no answer and the journal got an exception trace for each such request
    (any host on the LAN could fill it). It is a 400 like any bad request line."""
    import structlog

    _, port = server
    with structlog.testing.capture_logs() as logs:
        status, _, body = await request(port, b"GET " + target + b" HTTP/1.1\r\nHost: t\r\n\r\n")
    assert (status, body) == ("HTTP/1.1 400 Bad Request", b"bad request target\n")
    assert [entry["event"] for entry in logs] == []
