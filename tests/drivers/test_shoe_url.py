"""SerialShoe opens any pyserial URL: here ``socket://`` to a shoe behind a serial server."""

from __future__ import annotations

import asyncio
import socket

import pytest

from cards import BackColour, Card, Rank, Suit
from drivers.protocols import CardDrawn, LinkChanged, LinkState
from drivers.reconnect import ReconnectPolicy
from drivers.shoe import SerialShoe
from firmware_bridge import messages as wire
from firmware_bridge.aio import AsyncLink
from firmware_bridge.link import Role
from hil.recorder import Recorder

pytestmark = [pytest.mark.timeout(30), pytest.mark.usefixtures("no_leaked_threads")]


async def test_shoe_behind_a_tcp_serial_server(recorder: Recorder) -> None:
    loop = asyncio.get_running_loop()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    driver = SerialShoe("shoe", f"socket://127.0.0.1:{port}",
                        reconnect=ReconnectPolicy(initial_delay_s=0.05, max_delay_s=0.2))
    await driver.start(recorder)
    conn, _ = await asyncio.wait_for(loop.sock_accept(listener), 10)
    hello = wire.Hello(wire.PROTOCOL_VERSION, wire.DeviceKind.SHOE, "TCP-SHOE-7", "2.4.1", 0)
    device = AsyncLink.over_fd(conn.fileno(), Role.DEVICE, hello)
    try:
        await device.wait_up(10)
        await recorder.wait_for(LinkChanged, lambda e: e.state is LinkState.UP)
        await device.send(wire.CardDrawn(0, 12, 2, 3, False))
        event = await recorder.wait_for(CardDrawn)
        assert event == CardDrawn("shoe", 0, Card(Rank.QUEEN, Suit.HEARTS), BackColour.BLACK, False)
        assert driver.health().serial_number == "TCP-SHOE-7"
    finally:
        await driver.stop()
        await device.close()
        conn.close()
        listener.close()
