"""The control socket: JSON lines, clear errors, supervisor PINs, event streaming."""

from __future__ import annotations

import asyncio
import os
import stat

import pytest

from controller.auth import authorise, hash_pin, verify_pin
from controller.control import ControlClient, ControlError, ControlServer
from controller.store import Store

FAST = 1000  # PBKDF2 iterations for tests; production uses auth.ITERATIONS


@pytest.fixture
async def server(tmp_path):
    store = Store(tmp_path / "t.sqlite")
    pins = {"ana": hash_pin("4321", iterations=FAST)}
    srv = ControlServer(str(tmp_path / "control.sock"), mode=0o600,
                        authorise=lambda who, pin: authorise(pins, who, pin),
                        on_supervisor_command=lambda who, cmd, args: store.append_event(
                            "supervisor_command", {"supervisor": who, "command": cmd}))
    srv.register("status", lambda args: {"state": "closed"})
    srv.register("adjust", lambda args: {"done": args["cents"]}, supervisor=True)
    srv.set_history(store.events_from)
    store.subscribe(srv.publish)
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
    store.append_event("one")
    client = await ControlClient(srv.path).connect()
    stream = client.subscribe(0)
    first = await asyncio.wait_for(anext(stream), 5)
    store.append_event("two")
    second = await asyncio.wait_for(anext(stream), 5)
    assert (first["seq"], first["kind"]) == (1, "one")
    assert (second["seq"], second["kind"]) == (2, "two")
    await client.close()


def test_pin_hash_verifies_only_the_same_pin():
    stored = hash_pin("123456", iterations=FAST)
    assert stored.startswith(f"pbkdf2_sha256${FAST}$")
    assert verify_pin("123456", stored)
    assert not verify_pin("123457", stored)
    assert not authorise({"ana": stored}, "bob", "123456")
    with pytest.raises(ValueError, match="4 to 12 digits"):
        hash_pin("12a4")
