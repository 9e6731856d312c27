"""hil.mock_pins: a MockFactory whose pins another process drives (the software relay board)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from drivers.protocols import LedState, LinkState, LockedOut
from drivers.seats import GpioSeatPanel
from hil.mock_pins import PinBridgeClient, PinBridgeError

from .conftest import LOCKOUT_PIN, TEN_SEATS, FakeClock, Recorder

pytestmark = pytest.mark.usefixtures("no_leaked_threads")


@pytest.fixture
def socket_path() -> Iterator[str]:
    # Unix socket paths are limited to 108 bytes; pytest's tmp_path can be longer.
    with tempfile.TemporaryDirectory(prefix="pins-", dir="/tmp") as tmp:
        yield str(Path(tmp) / "pins.sock")


async def _in_other_process(code: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    return out.decode().strip()


@pytest.mark.timeout(60)
async def test_another_process_places_chips_presses_lockout_and_reads_leds(
        socket_path: str, clock: FakeClock, recorder: Recorder) -> None:
    """631c.2(d)(2) end to end through the bridge: wagers before the button count, after do not."""
    async with _bridged_panel(socket_path, clock, recorder) as panel:
        panel.open_betting(frozenset(TEN_SEATS))
        s1, s2, led1 = TEN_SEATS[1].sensor_pin, TEN_SEATS[2].sensor_pin, TEN_SEATS[1].led_pin
        await _in_other_process(
            "from hil.mock_pins import PinBridgeClient\n"
            f"with PinBridgeClient({socket_path!r}) as pins:\n"
            f"    pins.press({s1}); pins.press({LOCKOUT_PIN}); pins.press({s2})\n")
        locked = await recorder.wait_for(LockedOut)
        assert locked.wagers == frozenset({1})
        assert panel.led(1) is LedState.LOCKED
        panel.set_led(1, LedState.ACCEPTED)
        level = await _in_other_process(
            "from hil.mock_pins import PinBridgeClient\n"
            f"print(PinBridgeClient({socket_path!r}).read_output({led1}))\n")
        assert level == "True"


async def test_bridge_rejects_driving_an_output_and_bad_requests(
        socket_path: str, clock: FakeClock, recorder: Recorder) -> None:
    async with _bridged_panel(socket_path, clock, recorder):
        with PinBridgeClient(socket_path) as pins:
            pins.ping()
            with pytest.raises(PinBridgeError, match="is an output; only inputs can be driven"):
                pins.set_input(TEN_SEATS[1].led_pin, True)
            with pytest.raises(PinBridgeError, match="PinInvalidPin"):
                pins.read_output(99)
            pins.ping()  # the bridge survives bad requests


async def test_a_tap_of_the_lockout_is_a_press_then_a_release_in_one_round_trip(
        socket_path: str, clock: FakeClock, recorder: Recorder) -> None:
    """The dealer's tap (press_and_release): both lines go in one write, the bridge runs them
    in order, so the panel sees the press (631c.2(d)(2): the wager on seat 1 counts, and
    the lock is reported) and the button is released after it, as with press() and
    release() one by one."""
    async with _bridged_panel(socket_path, clock, recorder) as panel:
        panel.open_betting(frozenset(TEN_SEATS))
        with PinBridgeClient(socket_path) as pins:
            pins.press(TEN_SEATS[1].sensor_pin)
            sent: list[bytes] = []
            pins._sock = _Recording(pins._sock, sent)  # type: ignore[assignment]
            pins.press_and_release(LOCKOUT_PIN)
            assert sent == [f"SET {LOCKOUT_PIN} 0\nSET {LOCKOUT_PIN} 1\n".encode()]
            assert pins.read_output(LOCKOUT_PIN) is True  # released: high, wired active-low
        locked = await recorder.wait_for(LockedOut)
        assert locked.wagers == frozenset({1})
        assert panel.health().counters["button_presses"] == 1


class _Recording:
    """A socket whose sendall calls are noted (what went in one write)."""

    def __init__(self, sock: object, sent: list[bytes]) -> None:
        self._sock, self._sent = sock, sent

    def sendall(self, data: bytes) -> None:
        self._sent.append(data)
        self._sock.sendall(data)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._sock, name)


def test_client_names_the_socket_it_cannot_reach(socket_path: str) -> None:
    with pytest.raises(PinBridgeError, match="pins.sock"):
        PinBridgeClient(socket_path)


@pytest.mark.timeout(60)
async def test_seat_pins_held_by_another_program_are_refused_until_it_ends(
        socket_path: str, clock: FakeClock, recorder: Recorder) -> None:
    """The simulated gpiochip lets one program at a time hold a line, as the kernel does:
    while another program (its own process) holds seat 3's sensor pin, the panel's start is
    refused with lgpio's words; once it has ended, the next start claims every pin."""
    held = TEN_SEATS[2].sensor_pin
    holder = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "hil.mock_pins", "hold", socket_path, str(held),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[2])
    assert holder.stdin is not None and holder.stdout is not None
    assert (await asyncio.wait_for(holder.stdout.readline(), 30)).decode() == \
        f"holding GPIO{held}\n"

    def panel() -> GpioSeatPanel:
        return GpioSeatPanel("seats", TEN_SEATS, LOCKOUT_PIN,
                             pin_factory="hil.mock_pins:BridgedMockFactory",
                             factory_options={"bridge_socket": socket_path}, clock=clock,
                             background=False)

    refused = panel()
    await refused.start(recorder)
    await refused.stop()
    (fault,) = [e for e in recorder.events if type(e).__name__ == "DeviceFault"]
    assert (fault.code, fault.detail) == (
        "gpio_unavailable", f"GPIOPinInUse: GPIO busy: GPIO{held} is held by another program")
    holder.stdin.close()  # the other program ends; the kernel frees its lines
    assert await asyncio.wait_for(holder.wait(), 30) == 0
    claimed = panel()
    await claimed.start(recorder)
    try:
        assert claimed.health().link is LinkState.UP
        # While the panel holds them, another program cannot take them.
        out = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "hil.mock_pins", "hold", socket_path, str(held),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            cwd=Path(__file__).resolve().parents[2])
        answer, _ = await asyncio.wait_for(out.communicate(), 30)
        assert (out.returncode, answer.decode()) == (
            1, f"refused: GPIO{held} is held by another program already\n")
    finally:
        await claimed.stop()


@contextlib.asynccontextmanager
async def _bridged_panel(socket_path: str, clock: FakeClock,
                         recorder: Recorder) -> AsyncIterator[GpioSeatPanel]:
    """The seat panel on the mock pins' bridge, started, and stopped after."""
    panel = GpioSeatPanel("seats", TEN_SEATS, LOCKOUT_PIN,
                          pin_factory="hil.mock_pins:BridgedMockFactory",
                          factory_options={"bridge_socket": socket_path}, clock=clock,
                          background=False)
    await panel.start(recorder)
    try:
        yield panel
    finally:
        await panel.stop()
