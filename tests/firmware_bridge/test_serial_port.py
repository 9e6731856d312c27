"""A device's serial port whatever its descriptor's number, and a device that stops reading
(firmware_bridge/serial_port.py).

The daemon may hold thousands of descriptors (`[access] max_connections` 4096 under
`LimitNOFILE=16384`): a port opened during such a flood is numbered past 1023, where
pyserial's `select()` raised ValueError on every read. And pyserial's non-blocking write
spun on EAGAIN for as long as the device did not read, the event loop with it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import pytest
import serial
import serial_asyncio_fast

from firmware_bridge.aio import AsyncLink
from firmware_bridge.link import Role
from firmware_bridge.messages import CardDrawn, StatusRequest
from firmware_bridge.serial_port import SerialPort
from tests.descriptors import SELECT_LIMIT, descriptors_on, low_descriptors_taken

from .conftest import HOST_HELLO, SHOE_HELLO

pytestmark = pytest.mark.timeout(30)


@pytest.fixture(name="low_descriptors_taken")
def _low_descriptors_taken() -> Iterator[None]:
    with low_descriptors_taken():
        yield


async def test_a_port_numbered_past_1023_carries_the_link(
        pty_ends: tuple[int, int, str], low_descriptors_taken: None) -> None:
    master, slave, slave_path = pty_ends
    device = AsyncLink.over_fd(master, Role.DEVICE, SHOE_HELLO)
    host = await AsyncLink.open_serial(slave_path, Role.HOST, HOST_HELLO, baudrate=115200)
    try:
        opened = [fd for fd in descriptors_on(slave_path) if fd != slave]
        assert len(opened) == 1 and opened[0] >= SELECT_LIMIT, opened
        peers = await asyncio.gather(host.wait_up(5), device.wait_up(5))
        assert peers == [SHOE_HELLO, HOST_HELLO]
        cards = [CardDrawn(i, i % 13 + 1, i % 4, 0, False) for i in range(40)]
        for card in cards:
            await device.send(card)
        assert [await host.receive() for _ in cards] == cards
        await host.send(StatusRequest())
        assert await device.receive() == StatusRequest()
        assert host.counters["crc_errors"] == 0
    finally:
        await host.close()
        await device.close()


def test_an_idle_port_reads_nothing_and_a_waiting_byte_is_read(
        pty_ends: tuple[int, int, str], low_descriptors_taken: None) -> None:
    master, _, slave_path = pty_ends
    port = SerialPort(slave_path, 115200, timeout=0, write_timeout=0)
    try:
        assert port.fd >= SELECT_LIMIT
        assert port.read(64) == b""  # nothing there: nothing, not an error
        os.write(master, b"\x00\x05shoe\x00")
        assert port.read(64) == b"\x00\x05shoe\x00"
        assert port.read(64) == b""
    finally:
        port.close()


def test_a_port_whose_device_went_away_is_an_error(pty_ends: tuple[int, int, str]) -> None:
    master, slave, slave_path = pty_ends
    port = SerialPort(slave_path, 115200, timeout=0, write_timeout=0)
    try:
        os.close(slave)
        os.close(master)  # the pty's other end is gone: readable, and nothing comes
        with pytest.raises(serial.SerialException, match="read failed|returned no data"):
            port.read(64)
    finally:
        port.close()


def test_a_full_port_refuses_the_write_instead_of_spinning(
        pty_ends: tuple[int, int, str]) -> None:
    master, _, slave_path = pty_ends
    port = SerialPort(slave_path, 115200, timeout=0, write_timeout=0)
    taken = 0
    try:
        with pytest.raises(BlockingIOError):
            for _ in range(1000):  # far more than any tty buffer holds
                taken += port.write(b"\x55" * 4096)
        assert 0 < taken < 1000 * 4096
        read = b""
        while len(read) < taken:
            read += os.read(master, 65536)
        assert read == b"\x55" * taken  # what the port took, every byte
    finally:
        port.close()


async def fill_the_queue(slave: int) -> int:
    """Write to the tty until it takes nothing more for 50 ms (the kernel moves bytes on to
    the other end for a while after the first refusal); the bytes it took."""
    os.set_blocking(slave, False)
    queued, refused_since = 0, None
    loop = asyncio.get_running_loop()
    while refused_since is None or loop.time() - refused_since < 0.05:
        try:
            queued += os.write(slave, b"\xaa" * 4096)
            refused_since = None
        except BlockingIOError:
            refused_since = refused_since or loop.time()
            await asyncio.sleep(0.005)
    return queued


async def test_a_device_that_stops_reading_does_not_hold_the_event_loop(
        pty_ends: tuple[int, int, str]) -> None:
    """pyserial-asyncio-fast's transport over the port, with the port's output queue already
    full (the device reads nothing): 200 KB more written; the loop runs on meanwhile, and once
    the device reads, it gets every byte in order."""
    master, slave, slave_path = pty_ends
    loop = asyncio.get_running_loop()
    port = await loop.run_in_executor(
        None, lambda: SerialPort(slave_path, 115200, timeout=0, write_timeout=0))
    transport, _ = await serial_asyncio_fast.connection_for_serial(
        loop, asyncio.Protocol, port)
    try:
        queued = await fill_the_queue(slave)  # the same tty's queue, filled from the side
        sent = bytes(range(256)) * 800
        transport.write(sent)  # pyserial's write spun here until the device read
        ticks = 0
        for _ in range(5):  # the loop is free: these sleeps end
            await asyncio.sleep(0.01)
            ticks += 1
        assert ticks == 5
        assert transport.get_write_buffer_size() == len(sent)  # held for the device
        os.set_blocking(master, False)
        received = b""
        deadline = loop.time() + 10
        while len(received) < queued + len(sent) and loop.time() < deadline:
            try:
                received += os.read(master, 65536)
            except BlockingIOError:
                await asyncio.sleep(0.005)
        assert received == b"\xaa" * queued + sent
    finally:
        transport.close()
