"""A control connection's replies with group commit (controller/control_session.py): each is
written once the flush that covers its step has returned, in request order, and a flush that
fails turns every reply it covered into a refusal that acknowledges nothing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from controller.control import ControlServer
from controller.control_args import whole
from controller.memory.flush_in import FLUSH_IN_THREAD
from controller.memory.store import Store
from tests.controller.test_group_commit import GatedFlushes, _step

WAGER = {"seat": 3, "wager": "banker", "amount_cents": 500}


async def _served(tmp_path: Path) -> tuple[Store, GatedFlushes, ControlServer]:
    store = Store(tmp_path / "t.sqlite")
    flushes = GatedFlushes(store)
    store.group_commits(asyncio.get_running_loop(), flush_in=FLUSH_IN_THREAD)  # gated
    srv = ControlServer(str(tmp_path / "control.sock"))

    def place(args: Any) -> dict[str, int]:
        _step(store, "wager_accepted", {**WAGER, "seat": args["seat"]})
        return {"seat": args["seat"]}

    srv.register("place_wager", place, args={"seat": whole(1, 14)})
    srv.register("ping", lambda args: "pong")
    srv.follow(store)
    srv.set_history(store.events_from)
    await srv.start()
    return store, flushes, srv


async def _requests(writer: asyncio.StreamWriter, *calls: tuple[int, str, dict[str, Any]]
                    ) -> None:
    writer.write(b"".join(json.dumps({"id": n, "cmd": cmd, "args": args}).encode() + b"\n"
                          for n, cmd, args in calls))
    await writer.drain()


async def _replies(reader: asyncio.StreamReader, count: int) -> list[dict[str, Any]]:
    return [json.loads(await asyncio.wait_for(reader.readline(), 30)) for _ in range(count)]


async def test_replies_wait_for_their_flush_and_keep_the_requests_order(tmp_path: Path) -> None:
    """Two wagers and a read, sent at once while the flush is held back: nothing is answered
    (not even the read, which reports nothing but must not overtake them) until the flush
    returns; then all three, in order."""
    store, flushes, srv = await _served(tmp_path)
    flushes.gate.clear()
    reader, writer = await asyncio.open_unix_connection(srv.path)
    await _requests(writer, (1, "place_wager", {"seat": 1}), (2, "place_wager", {"seat": 2}),
                    (3, "ping", {}))
    for _ in range(50):  # the three requests are read and run; the flush waits at its gate
        await asyncio.sleep(0.01)
        if flushes.started:
            break
    assert flushes.started == 1
    assert len(store.events(kind="wager_accepted")) == 2
    assert not reader.at_eof() and reader._buffer == b""  # type: ignore[attr-defined]
    flushes.gate.set()
    assert await _replies(reader, 3) == [
        {"id": 1, "ok": True, "result": {"seat": 1}},
        {"id": 2, "ok": True, "result": {"seat": 2}},
        {"id": 3, "ok": True, "result": "pong"}]
    writer.close()
    await srv.close()
    store.close()


async def test_a_failed_flush_acknowledges_none_of_the_replies_it_covered(tmp_path: Path) -> None:
    """The flush of two pipelined wagers fails: both are answered as not acknowledged (the
    store tries the flush again with the next step), in order; the connection goes on, and
    the next wager, flushed, is acknowledged."""
    store, flushes, srv = await _served(tmp_path)
    flushes.fail_next = OSError(5, "Input/output error")
    reader, writer = await asyncio.open_unix_connection(srv.path)
    await _requests(writer, (1, "place_wager", {"seat": 1}), (2, "place_wager", {"seat": 2}))
    failed = await _replies(reader, 2)
    assert [(r["id"], r["ok"], r["code"]) for r in failed] == [(1, False, "internal"),
                                                                 (2, False, "internal")]
    assert all(r["error"].startswith("not acknowledged: the store could not flush (")
               and "Input/output error" in r["error"] for r in failed)
    await _requests(writer, (3, "place_wager", {"seat": 4}))
    assert await _replies(reader, 1) == [{"id": 3, "ok": True, "result": {"seat": 4}}]
    assert flushes.started == 2  # the failed one, and the one that covered all three
    writer.close()
    await srv.close()
    store.close()


async def test_a_client_that_leaves_before_its_replies_ends_only_its_connection(
        tmp_path: Path) -> None:
    """A client sends a wager and closes at once: its reply, written after the flush, goes
    nowhere; the server goes on serving the next connection."""
    store, flushes, srv = await _served(tmp_path)
    flushes.gate.clear()
    reader, writer = await asyncio.open_unix_connection(srv.path)
    await _requests(writer, (1, "place_wager", {"seat": 1}))
    for _ in range(50):
        await asyncio.sleep(0.01)
        if flushes.started:
            break
    writer.close()
    await writer.wait_closed()
    flushes.gate.set()
    reader2, writer2 = await asyncio.open_unix_connection(srv.path)
    await _requests(writer2, (7, "place_wager", {"seat": 2}))
    assert await _replies(reader2, 1) == [{"id": 7, "ok": True, "result": {"seat": 2}}]
    assert [e.payload["seat"] for e in store.events(kind="wager_accepted")] == [1, 2]
    writer2.close()
    await srv.close()
    store.close()


class _Writer:
    """A connection's writer that notes each write (a system call on a real socket)."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    async def drain(self) -> None:
        return None


async def test_the_replies_one_flush_answers_go_out_in_one_write() -> None:
    """A round's wagers, pipelined and answered by one flush: their three replies are
    written together, in order, in one write (one system call and one wake-up of the
    client, not three), by a callback of their own right after the delivery that answered
    them; drain() returns only once they are written. A reply answered at once (nothing
    held) is written at once."""
    from controller.control_session import Replies

    held: list[Any] = []
    holding = True

    def when_durable(waiter: Any) -> None:
        if holding:
            held.append(waiter)
        else:
            waiter(None)

    writer = _Writer()
    replies = Replies(writer, when_durable)  # type: ignore[arg-type]
    for n in (1, 2, 3):
        await replies.send({"id": n, "ok": True, "result": n})
    assert writer.writes == []
    drained = asyncio.ensure_future(replies.drain())
    await asyncio.sleep(0)
    assert not drained.done()
    for waiter in held:  # the flush returned: the delivery answers them, in order
        waiter(None)
    assert writer.writes == []
    await asyncio.sleep(0)
    assert writer.writes == [b'{"id":1,"ok":true,"result":1}\n{"id":2,"ok":true,"result":2}\n'
                             b'{"id":3,"ok":true,"result":3}\n']
    await asyncio.wait_for(drained, 5)
    holding = False
    await replies.send({"id": 4, "ok": True, "result": 4})
    assert writer.writes[1:] == [b'{"id":4,"ok":true,"result":4}\n']
