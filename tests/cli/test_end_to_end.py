"""tablectl against the real daemon on simulated hardware (hil.table_harness.TableHarness).

The daemon runs as its own process on the simulated shoe (pseudo-terminal), shuffler
(pyusb backend) and GPIO (bridged mock pins); tablectl runs as its own process too, as
a technician runs it. Faults are injected into the simulators, never into the daemon.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from controller.cli import exitcodes
from controller.control import ControlClient
from hil.tablectl_process import run_tablectl

pytestmark = [pytest.mark.hil, pytest.mark.timeout(180)]

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config" / "simulated-table.toml"
WAIT_S = 30.0  # a fault or a round reaches the log within a second; generous for CI


def simulated_table(workdir: Path) -> Any:
    """The simulated table (the daemon process and its simulated devices)."""
    from hil.table_harness import TableHarness

    return TableHarness(CONFIG, workdir, seed=11)


async def tablectl(socket: str, *argv: str, stdin: str | None = None,
                   during: Callable[[], Awaitable[None]] | None = None,
                   when: str = "") -> tuple[int, str]:
    """Run tablectl as a process; `during` runs once a line containing `when` has been
    printed (the technician acts on the prompt, not before)."""
    return await run_tablectl(argv, socket=socket, stdin=stdin, during=during, when=when)


async def _events(client: ControlClient, after_seq: int) -> AsyncIterator[dict[str, Any]]:
    try:
        async for event in client.subscribe(after_seq):
            yield event
    finally:
        await client.close()


async def wait_for(socket: str, predicate: Callable[[dict[str, Any]], bool],
                   action: Callable[[], Awaitable[Any]]) -> dict[str, Any]:
    """Subscribe, do `action`, and return the first new event matching `predicate`. The log's
    head is read before the action, so an event the action causes is in the stream however
    soon the daemon commits it (before the subscription is set up, it is in its history)."""
    client = await ControlClient(socket).connect()
    head = await client.call("events", limit=1)
    stream = _events(client, head[-1]["seq"] if head else 0)
    first = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0)  # let the subscription start before the action
    await action()

    async def find() -> dict[str, Any]:
        event = await first
        while not predicate(event):
            event = await anext(stream)
        return event
    try:
        return await asyncio.wait_for(find(), WAIT_S)
    finally:
        await stream.aclose()


async def play_one_round(h: Any) -> None:
    """Let the harness's dealer play until the first round is settled, then stop it."""
    settled = asyncio.Event()
    h.on_line = lambda line: settled.set() if line.startswith("Round") else None
    play = asyncio.ensure_future(h.play(shoes=1))
    try:
        done, _ = await asyncio.wait({play, asyncio.ensure_future(settled.wait())},
                                     timeout=120, return_when=asyncio.FIRST_COMPLETED)
        if play in done:
            play.result()  # raises what went wrong
        assert settled.is_set(), "no round settled within 120 s"
    finally:
        play.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await play


async def test_read_commands_after_a_round(tmp_path: Path) -> None:
    async with simulated_table(tmp_path) as h:
        # The light pattern runs only while the table is closed, at the end of a shoe or in a
        # fault (players would read it as a win), so before the table opens.
        code, out = await tablectl(h.socket, "test", "lights", "--yes")
        assert code == exitcodes.OK, out
        assert out == ("lights self-test: PASS - 10 seat LEDs chased one by one, then all lit\n"
                       "lights confirmed\n")

        await play_one_round(h)
        code, out = await tablectl(h.socket, "status")
        assert code == exitcodes.OK, out
        assert out.startswith("Table SIM-BAC-01: ")
        assert "  game:             baccarat (standard)" in out
        assert "Shoe 1:" in out

        code, out = await tablectl(h.socket, "devices")
        assert code == exitcodes.OK, out
        shoe_row = next(line for line in out.splitlines() if line.startswith("shoe "))
        assert shoe_row.split()[1] == "up"
        assert "SIM-SHOE-0001" in shoe_row

        code, out = await tablectl(h.socket, "rounds", "--last", "1000")
        assert code == exitcodes.OK, out
        assert out.startswith("Round 1 of shoe 1 (id 1)  SETTLED  20")
        assert "  result: " in out
        assert "  SEAT  WAGER" in out

        code, out = await tablectl(h.socket, "events", "--kind", "round_settled", "--limit", "1")
        assert code == exitcodes.OK, out
        assert len(out.splitlines()) == 2  # the entry, then the count
        assert " round_settled [round " in out

        code, out = await tablectl(h.socket, "events", "verify")
        assert code == exitcodes.OK, out
        assert "critical memory OK: " in out


async def test_shoe_unplugged_is_a_device_fault_and_recovers(tmp_path: Path) -> None:
    async with simulated_table(tmp_path) as h:
        await h.call("open")  # a device fault stops play only once the table is open
        await wait_for(h.socket, lambda e: e["kind"] == "device_fault"
                       and e["device"] == "shoe", h.shoe.unplug)
        code, out = await tablectl(h.socket, "status")
        assert code == exitcodes.DEVICE_FAULT, out
        assert "Table SIM-BAC-01: DEVICE FAULT" in out
        assert "FAULT: shoe: " in out
        assert "  Action: " in out
        code, out = await tablectl(h.socket, "devices")
        assert code == exitcodes.DEVICE_FAULT, out
        assert "NOT UP: shoe" in out

        await wait_for(h.socket, lambda e: e["kind"] == "device_recovered"
                       and e["device"] == "shoe", h.shoe.replug)
        code, out = await tablectl(h.socket, "status")
        assert code == exitcodes.OK, out
        assert "FAULT" not in out


async def test_sensors_and_lockout_button_through_the_gpio_bridge(tmp_path: Path) -> None:
    async with simulated_table(tmp_path) as h:
        gpio = h.table_config.gpio

        async def touch_every_seat() -> None:
            for wiring in gpio.seats:
                h.pins.press(wiring.sensor_pin)  # sensors are active-low
                await asyncio.sleep(0.1)  # longer than the debounce
                h.pins.release(wiring.sensor_pin)
                await asyncio.sleep(0.1)

        code, out = await tablectl(h.socket, "test", "sensors", "--seats", str(len(gpio.seats)),
                                   "--timeout", "20", during=touch_every_seat,
                                   when="Touch each seat")
        assert code == exitcodes.OK, out
        assert "all seat sensors respond" in out

        async def press() -> None:
            h.pins.press(gpio.lockout_pin)
            h.pins.release(gpio.lockout_pin)

        code, out = await tablectl(h.socket, "test", "lockout", "--timeout", "10", during=press,
                                   when="Press the dealer's lock-out")
        assert code == exitcodes.OK, out
        assert "lock-out button press seen" in out


async def test_broken_chain_offline_and_out_of_order(tmp_path: Path) -> None:
    async with simulated_table(tmp_path) as h:
        await h.call("open")
        await h.stop_daemon()
        code, out = await tablectl(h.socket, "status")
        assert code == exitcodes.DAEMON_NOT_RUNNING, out
        assert "the daemon is not running" in out

        db = sqlite3.connect(h.store_path)
        seq = db.execute("SELECT MIN(seq) FROM events WHERE kind = 'daemon_started'"
                         ).fetchone()[0]
        db.execute("UPDATE events SET payload = '{\"version\":\"9.9\"}' WHERE seq = ?", (seq,))
        db.commit()
        db.close()
        code, out = await tablectl(h.socket, "events", "verify", "--store", h.store_path)
        assert code == exitcodes.INTEGRITY_FAILURE, out
        assert f"entry {seq} (daemon_started) was altered" in out

        await h.start_daemon()
        # Older than the last start's check of the whole history, the edit is found by this
        # start's (after ready, before any settlement), not before ready.
        await h.wait_for_state("out_of_order")
        code, out = await tablectl(h.socket, "status")
        assert code == exitcodes.INTEGRITY_FAILURE, out
        assert f"OUT OF ORDER: event chain: entry {seq} (daemon_started) was altered" in out


async def test_shoe_with_old_firmware_is_refused(tmp_path: Path) -> None:
    harness = simulated_table(tmp_path)
    from hil.shoe_sim import SimulatedShoe

    class OldFirmwareShoe(type(harness)):  # type: ignore[misc]
        async def __aenter__(self) -> Any:
            self.shoe = SimulatedShoe([], self.back, 0, firmware_version="shoe-fw 0.9",
                                      protocol_version=0)
            await self.shoe.start()
            await self.start_daemon()
            return self

    async with OldFirmwareShoe(CONFIG, tmp_path, seed=11) as h:
        # The refusal happens at start-up, before anyone could listen: poll the link.
        deadline = asyncio.get_running_loop().time() + WAIT_S
        while next(d for d in await h.call("devices") if d["device"] == "shoe")["link"] \
                != "refused":
            assert asyncio.get_running_loop().time() < deadline, "the shoe was not refused"
            await asyncio.sleep(0.1)
        code, out = await tablectl(h.socket, "devices")
        assert code == exitcodes.DEVICE_FAULT, out
        shoe_row = next(line for line in out.splitlines() if line.startswith("shoe "))
        assert shoe_row.split()[1:2] == ["refused"]
        assert "shoe-fw 0.9" in shoe_row
        assert "shoe last error: incompatible protocol version: shoe speaks version 0" in out
        assert "NOT UP: shoe (refused) - wrong firmware or protocol version" in out
        code, out = await tablectl(h.socket, "events", "--kind", "device_fault", "--limit", "1")
        assert code == exitcodes.OK, out
        assert "code=incompatible_device" in out
        assert "action=Install approved firmware speaking protocol version 1" in out
