"""The control socket: JSON lines, clear errors, supervisor PINs, event streaming."""

from __future__ import annotations

import asyncio
import json
import os
import stat

import pytest

from controller.auth import authorise, hash_pin, verify_pin
from controller.control_args import whole
from controller.control import ControlClient, ControlError, ControlServer, event_json
from controller.memory.store import Store

FAST = 1000  # PBKDF2 iterations for tests; production uses auth.ITERATIONS


@pytest.fixture
async def server(tmp_path):
    store = Store(tmp_path / "t.sqlite")
    pins = {"ana": hash_pin("4321", iterations=FAST)}
    srv = ControlServer(str(tmp_path / "control.sock"), mode=0o600,
                        authorise=lambda who, pin: authorise(pins, who, pin),
                        on_supervisor_command=lambda who, cmd, args: store.append_entry(
                            "supervisor_command", {"supervisor": who, "command": cmd}))
    srv.register("status", lambda args: {"state": "closed"})
    srv.register("adjust", lambda args: {"done": args["cents"]}, supervisor=True,
                 args={"cents": whole(1, 100)})
    srv.set_history(store.events_from)
    srv.follow(store)
    await srv.start()
    yield srv, store
    await srv.close()
    store.close()


async def test_socket_is_owner_only(server):
    srv, _ = server
    assert stat.S_IMODE(os.stat(srv.path).st_mode) == 0o600


async def test_status_round_trip(server):
    srv, _ = server
    client = await ControlClient(srv.path).connect()
    assert await client.call("status") == {"state": "closed"}
    await client.close()


async def test_unknown_command_names_the_allowed_ones(server):
    srv, _ = server
    client = await ControlClient(srv.path).connect()
    with pytest.raises(ControlError) as caught:
        await client.call("open_the_vault")
    assert caught.value.code == "bad_request"
    assert "allowed: adjust, status, subscribe" in str(caught.value)
    await client.close()


async def test_garbage_line_gets_an_error_and_the_connection_survives(server):
    srv, _ = server
    reader, writer = await asyncio.open_unix_connection(srv.path)
    writer.write(b"\xff\xfe not json\n")
    await writer.drain()
    assert b'"code":"bad_request"' in await reader.readline()
    writer.write(b'{"id": 5, "cmd": "status"}\n')
    await writer.drain()
    assert await reader.readline() == b'{"id":5,"ok":true,"result":{"state":"closed"}}\n'
    writer.close()


async def test_supervisor_command_needs_the_right_pin_and_is_logged(server):
    srv, store = server
    client = await ControlClient(srv.path).connect()
    with pytest.raises(ControlError) as caught:
        await client.call("adjust", auth={"supervisor": "ana", "pin": "0000"}, cents=5)
    assert caught.value.code == "unauthorised"
    with pytest.raises(ControlError):
        await client.call("adjust", cents=5)
    assert await client.call("adjust", auth={"supervisor": "ana", "pin": "4321"},
                             cents=5) == {"done": 5}
    assert [(e.kind, e.payload) for e in store.events()] == [
        ("supervisor_command", {"supervisor": "ana", "command": "adjust"})]
    await client.close()


async def test_subscribe_replays_history_then_streams_live(server):
    srv, store = server
    store.append_entry("one")
    client = await ControlClient(srv.path).connect()
    stream = client.subscribe(0)
    first = await asyncio.wait_for(anext(stream), 5)
    store.append_entry("two")
    second = await asyncio.wait_for(anext(stream), 5)
    assert (first["seq"], first["kind"]) == (1, "one")
    assert (second["seq"], second["kind"]) == (2, "two")
    await client.close()


async def _raw_subscriber(srv, store, after_seq=0):
    """A subscriber on a plain non-blocking socket, read without yielding to the loop, and
    its stream on the server once that is caught up and waiting (live)."""
    import socket

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(srv.path)
    sock.setblocking(False)
    sock.sendall(b'{"id": 1, "cmd": "subscribe", "args": {"after_seq": %d}}\n' % after_seq)
    for _ in range(500):
        await asyncio.sleep(0.01)
        streams = [s for s in srv.streams.subscribers if s.live]
        if streams:
            return sock, streams[0]
    raise AssertionError("the stream never caught up")


def _received(sock) -> list[dict]:
    import json
    import socket

    data = b""
    while True:
        try:
            data += sock.recv(1 << 20, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return [json.loads(line) for line in data.splitlines()]


async def test_a_live_stream_is_sent_the_entry_by_the_commit_that_made_it(server):
    """A caught-up stream is written a new entry inside publish, before the commit's caller
    goes on: no wake-up of its task, no loop turn between the commit and the socket."""
    srv, store = server
    store.append_entry("one")
    sock, stream = await _raw_subscriber(srv, store)
    assert [item.get("result") or item["event"]["seq"] for item in _received(sock)] == [
        "subscribed", 1]
    store.append_entry("prompt", {"action": "deal", "next": "player"})  # no await after it
    (line,) = _received(sock)
    assert (line["event"]["seq"], line["event"]["kind"], line["event"]["payload"]) == (
        2, "prompt", {"action": "deal", "next": "player"})
    assert (stream.last, stream.live, stream.wake.is_set()) == (2, True, False)
    sock.close()


async def test_a_commits_entries_go_to_a_live_stream_in_one_write(server):
    """A card's step commits the card and the prompt together; a live stream is sent both
    in one write once the commit's entries are all given out, so its reader wakes once."""
    srv, store = server
    sock, stream = await _raw_subscriber(srv, store)
    _received(sock)
    writes: list[bytes] = []
    transport = stream.writer.transport
    write = transport.write
    transport.write = lambda data: (writes.append(data), write(data))[1]
    with store.transaction():
        store.append_entry("card", {"index": 4, "card": "9♠"}, device="shoe")
        store.append_entry("prompt", {"action": "deal", "next": "banker_first"})
        assert writes == []  # nothing before the commit
    assert len(writes) == 1
    assert [(e["event"]["seq"], e["event"]["kind"]) for e in _received(sock)] == [
        (1, "card"), (2, "prompt")]
    transport.write = write
    sock.close()


async def test_an_entry_published_on_its_own_reaches_a_live_stream(server):
    """publish() streams one entry of a log that is not a Store's (a scripted daemon's):
    it is written at once, not left for a commit's end that never comes."""
    from controller.memory.store import Event

    srv, store = server
    sock, stream = await _raw_subscriber(srv, store)
    _received(sock)
    srv.publish(Event(1, 1.5, "prompt", "info", None, None, {"action": "burn"}, "", "",
                      '{"action":"burn"}'))
    assert [(e["event"]["seq"], e["event"]["payload"]) for e in _received(sock)] == [
        (1, {"action": "burn"})]
    sock.close()


async def test_a_live_stream_that_backs_up_is_drained_by_its_task_with_nothing_lost(server):
    """When the socket stops taking a live stream's lines, the rest waits in the transport
    and the task takes over (paging, draining): every entry arrives once, in order."""
    srv, store = server
    sock, stream = await _raw_subscriber(srv, store)
    _received(sock)
    for n in range(3000):  # ~700 KB, one commit each: far more than the socket buffers hold
        store.append_entry("tick", {"n": n, "pad": "x" * 200})
    assert stream.live is False and stream.wake.is_set()  # handed to the task
    seqs: list[int] = []
    for _ in range(2000):
        seqs += [item["event"]["seq"] for item in _received(sock)]
        if len(seqs) >= 3000:
            break
        await asyncio.sleep(0.005)
    assert seqs == list(range(1, 3001))
    for _ in range(100):
        await asyncio.sleep(0.01)
        if stream.live:
            break
    assert stream.live  # caught up again: back on the direct path
    store.append_entry("after")
    assert [item["event"]["seq"] for item in _received(sock)] == [3001]
    sock.close()


async def test_an_entry_committed_while_the_task_drains_is_sent_once_by_the_task(
        server, monkeypatch):
    """Forced interleaving: a commit lands while the stream's task is suspended between its
    page and its wait (in the drain). The stream is not live then, so publish only wakes
    it; the task sends the entry on its next page, once."""
    srv, store = server
    store.append_entry("one")
    drained = srv.streams._drained
    committed = []

    async def drain_then_commit(writer, caller, last):
        result = await drained(writer, caller, last)
        if not committed:  # the first drain: after the history page
            committed.append(store.append_entry("during_drain"))
        return result

    monkeypatch.setattr(srv.streams, "_drained", drain_then_commit)
    sock, stream = await _raw_subscriber(srv, store)
    assert [item.get("result") or item["event"]["seq"] for item in _received(sock)] == [
        "subscribed", 1, 2]
    store.append_entry("three")
    assert [item["event"]["seq"] for item in _received(sock)] == [3]
    assert committed[0].seq == 2 and stream.last == 3
    sock.close()


def test_a_caught_up_stream_gets_the_same_lines_the_store_would_give(tmp_path):
    """Entries published as they commit are kept (RECENT_EVENTS of them) and encoded once for
    every caught-up stream; the lines are byte for byte those read back from the store, and a
    stream further behind than what is kept reads the store."""
    from controller.control import HISTORY_PAGE, RECENT_EVENTS

    store = Store(tmp_path / "t.sqlite")
    srv = ControlServer(str(tmp_path / "control.sock"))
    srv.set_history(store.events_from)
    store.append_entry("before_publishing")  # committed before the server followed the store
    srv.follow(store)
    with store.transaction():
        store.append_entry("card", {"index": 7, "card": "Q♥", "hand": "banker"}, device="shoe",
                           round_id=9)
        store.append_entry("prompt", {"action": "deal", "next": "player"})
    store.append_entry("round_settled", {"settlements": [{"seat": 2, "net_cents": -500}],
                                         "result": {"winner": "banker"}})
    kept = srv.streams.stream_page(1)
    srv.streams._recent.clear()
    assert kept == srv.streams.stream_page(1)  # the same (seq, line) pairs, now from the store
    assert [seq for seq, _ in kept] == [2, 3, 4]
    # Each line is {"event": event_json(entry)}, its payload the very text the MAC covers.
    stored = dict(store._db.execute("SELECT seq, payload FROM events").fetchall())
    for (seq, line), entry in zip(kept, store.events(after_seq=1)):
        assert json.loads(line) == {"event": event_json(entry)}
        assert line.endswith(b"\n") and b"\n" not in line[:-1]
        assert f'"payload":{stored[seq]},'.encode() in line
    assert '"card":"Q♥"'.encode() in kept[0][1]  # UTF-8 as stored, not re-escaped
    assert srv.streams.stream_page(4) == []
    assert srv.streams._recent_lines(0) is None  # entry 1 was never kept: the store has it
    for _ in range(RECENT_EVENTS + 1):
        store.append_entry("seat_sensor", {"seat": 1, "present": True})
    assert srv.streams._recent[0][0].seq == 4 + 1 + 1  # the oldest dropped, no gap
    assert [seq for seq, _ in srv.streams.stream_page(5)] == list(range(6, 6 + RECENT_EVENTS))
    # Entry 5 is no longer kept: one page of the store, as a stream behind has always read.
    assert [seq for seq, _ in srv.streams.stream_page(4)] == list(range(5, 5 + HISTORY_PAGE))
    store.close()


def test_pin_hash_verifies_only_the_same_pin():
    stored = hash_pin("123456", iterations=FAST)
    assert stored.startswith(f"pbkdf2_sha256${FAST}$")
    assert verify_pin("123456", stored)
    assert not verify_pin("123457", stored)
    assert not authorise({"ana": stored}, "bob", "123456")
    with pytest.raises(ValueError, match="4 to 12 digits 0-9"):
        hash_pin("12a4")


@pytest.mark.parametrize("pin", ["\u0661\u0662\u0663\u0664", "\uff11\uff12\uff13\uff14",
                                 "\u0967\u0968\u0969\u096a", "123\u0664"])
def test_a_pin_is_ascii_digits_only(pin):
    """Arabic-Indic, fullwidth and Devanagari digits are decimal to Python and hashed apart
    from the ASCII PIN they look like: refused, naming what is allowed."""
    assert pin.isdecimal()
    with pytest.raises(ValueError, match=r"^a PIN is 4 to 12 digits 0-9$"):
        hash_pin(pin, iterations=FAST)


async def test_closing_the_server_ends_every_connection_it_serves(server):
    """close() ends the connections already accepted, not only the listening socket: a
    client reads EOF, and no connection's task outlives the server (to be finalised later,
    after its loop has closed)."""
    srv, store = server
    idle_reader, idle_writer = await asyncio.open_unix_connection(srv.path)
    sock, stream = await _raw_subscriber(srv, store)
    assert len(srv._clients) == 2
    await srv.close()
    assert srv._clients == set() and srv.streams.subscribers == set()
    assert await asyncio.wait_for(idle_reader.read(), 5) == b""
    idle_writer.close()
    sock.close()
