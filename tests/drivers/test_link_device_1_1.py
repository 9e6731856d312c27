"""Host rules H1-H3 of docs/protocol.md 4.4 (protocol 1.1), on the simulated shoe over a pty.

H1: one device reboot is one new session (the driver does not reopen the port on top
of the handshake the device's RESET began).  H2: a refused device that is re-flashed
is back as soon as it boots, without waiting for the 30 s re-probe.  H3 / 4.3: a fault
the device re-reports after a reconnect stays active (never cleared and raised again);
one it fixed while the link was down is cleared at its first Status."""

from __future__ import annotations

import asyncio
import random

import pytest

from cards import BackColour
from drivers.protocols import DeviceFault, DeviceFaultCleared, LinkChanged, LinkState
from drivers.reconnect import ReconnectPolicy
from drivers.shoe import SerialShoe
from firmware_bridge import messages as wire
from hil.recorder import Recorder
from hil.shoe_sim import SimulatedShoe, build_stack

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("no_leaked_threads")]

FAST = ReconnectPolicy(initial_delay_s=0.01, max_delay_s=0.02)  # refused re-probe stays 30 s
SETTLE_S = 1.0
"""After the link is back: time in which a second (spurious) session would have begun; the
buggy driver reopened the port 0.01-0.02 s after the drop."""


async def _reboot(sim: SimulatedShoe) -> None:
    """The shoe's watchdog fires: a fresh firmware link on the same port (a new RESET)."""
    await sim.stop_answering()
    await sim.resume_answering()


async def _status_replies(shoe: SerialShoe, count: int) -> None:
    while shoe.health().counters.get("status_replies", 0) < count:
        await asyncio.sleep(0.01)


async def _shoe_with_lid_open(sim: SimulatedShoe, recorder: Recorder) -> SerialShoe:
    """A connected shoe whose lid is open: the host has shoe_lid_open active."""
    shoe = SerialShoe("shoe", sim.port, reconnect=FAST)
    await shoe.start(recorder)
    await sim.wait_host(10)
    await sim.set_lid(True)
    await recorder.wait_for(DeviceFault, lambda e: e.code == "shoe_lid_open")
    await _status_replies(shoe, 1)
    return shoe


@pytest.fixture
async def sim() -> SimulatedShoe:
    stack, cover = build_stack(1, random.Random(5))
    device = SimulatedShoe(stack, BackColour.RED, cover)
    await device.start()
    yield device  # type: ignore[misc]
    await device.stop()


async def test_h1_one_device_reboot_is_one_session(sim: SimulatedShoe, recorder: Recorder) -> None:
    shoe = SerialShoe("shoe", sim.port, reconnect=FAST)
    await shoe.start(recorder)
    try:
        await sim.wait_host(10)
        await _status_replies(shoe, 1)
        await _reboot(sim)
        await asyncio.wait_for(_status_replies(shoe, 2), 10)
        await asyncio.sleep(SETTLE_S)
        counters = shoe.health().counters
        assert sim.handshakes == 2  # the first session and the one after the reboot
        assert sim.link.counters["resets_received"] == 0  # the host never sent a RESET of its own
        assert (counters["connects"], counters["connect_attempts"],
                counters.get("peer_restarts")) == (2, 1, 1)
        assert shoe.state is LinkState.UP
    finally:
        await shoe.stop()


async def test_h2_refused_device_is_revived_by_its_reset(recorder: Recorder) -> None:
    stack, cover = build_stack(1, random.Random(6))
    sim = SimulatedShoe(stack, BackColour.RED, cover, protocol_version=2)
    await sim.start()
    shoe = SerialShoe("shoe", sim.port, reconnect=FAST)
    await shoe.start(recorder)
    try:
        await recorder.wait_for(LinkChanged, lambda e: e.state is LinkState.REFUSED)
        sim.protocol_version = wire.PROTOCOL_VERSION  # the technician re-flashes the shoe
        await _reboot(sim)
        loop = asyncio.get_running_loop()
        started = loop.time()
        await shoe.wait_state(LinkState.UP, 5)  # the 1.0 driver needed ~30 s (re-probe)
        assert loop.time() - started < 5
        counters = shoe.health().counters
        assert (counters["connect_attempts"], counters.get("refused_reprobes", 0)) == (1, 0)
        assert await recorder.wait_for(DeviceFaultCleared, lambda e: e.code == "incompatible_device")
    finally:
        await shoe.stop()
        await sim.stop()


async def test_a_shoe_reflashed_with_old_firmware_holds_the_refusal_not_a_lost_link(
        sim: SimulatedShoe, recorder: Recorder) -> None:
    """An up shoe restarts on firmware of another protocol version (re-flashed on the open
    port): its session ends (link_down), then the new one is refused. The device answers,
    so the link_down ends, after the refusal is raised: the table holds one fault, whose
    action is the firmware's, never none in between (docs/technician-guide.md, wrong
    firmware version)."""
    shoe = SerialShoe("shoe", sim.port, reconnect=FAST)
    await shoe.start(recorder)
    try:
        await sim.wait_host(10)
        await _status_replies(shoe, 1)
        sim.firmware_version, sim.protocol_version = "shoe-fw 0.9", 0
        await _reboot(sim)
        await recorder.wait_for(DeviceFaultCleared, lambda e: e.code == "link_down")
        faults = [(type(e).__name__, e.code) for e in recorder.events
                  if isinstance(e, DeviceFault | DeviceFaultCleared)]
        assert faults == [("DeviceFault", "link_down"), ("DeviceFault", "incompatible_device"),
                          ("DeviceFaultCleared", "link_down")]
        assert shoe.state is LinkState.REFUSED
        sim.firmware_version, sim.protocol_version = "shoe-sim 1.0", wire.PROTOCOL_VERSION
        await _reboot(sim)  # flashed back: up at its first RESET (H2)
        await recorder.wait_for(DeviceFaultCleared, lambda e: e.code == "incompatible_device")
        assert shoe.state is LinkState.UP
    finally:
        await shoe.stop()


async def test_h3_fault_active_across_a_reboot_is_not_cleared_and_raised_again(
        sim: SimulatedShoe, recorder: Recorder) -> None:
    shoe = await _shoe_with_lid_open(sim, recorder)
    try:
        await _reboot(sim)
        await asyncio.wait_for(_status_replies(shoe, 2), 10)
        lid = [e for e in recorder.events if getattr(e, "code", None) == "shoe_lid_open"]
        assert [type(e).__name__ for e in lid] == ["DeviceFault"]  # one raise, no clear
        assert shoe.health().counters["fault_rereports"] == 1
    finally:
        await shoe.stop()


async def test_h3_fault_fixed_while_down_is_cleared_at_the_first_status(
        sim: SimulatedShoe, recorder: Recorder) -> None:
    shoe = await _shoe_with_lid_open(sim, recorder)
    try:
        await sim.stop_answering()
        sim.active_faults.clear()  # the lid is closed while the firmware restarts
        await sim.resume_answering()
        cleared = await recorder.wait_for(DeviceFaultCleared, lambda e: e.code == "shoe_lid_open")
        assert shoe.health().counters["status_replies"] == 2  # cleared at the first Status
        assert cleared.device == "shoe"
        lid = [type(e).__name__ for e in recorder.events if getattr(e, "code", None) == "shoe_lid_open"]
        assert lid == ["DeviceFault", "DeviceFaultCleared"]
    finally:
        await shoe.stop()


async def test_an_internal_error_ends_when_the_power_cycled_device_no_longer_reports_it(
        sim: SimulatedShoe, recorder: Recorder) -> None:
    """device_internal_error's exit (docs/faults.md): the technician power-cycles the shoe;
    its faults went with the firmware's memory, so it re-reports none after the handshake
    and the host clears the fault at the first Status. Nothing else sends the clear."""
    shoe = SerialShoe("shoe", sim.port, reconnect=FAST)
    await shoe.start(recorder)
    try:
        await sim.wait_host(10)
        await _status_replies(shoe, 1)
        await sim.fault(wire.FaultCode.DEVICE_INTERNAL_ERROR, "watchdog reset in the reader task")
        fault = await recorder.wait_for(DeviceFault, lambda e: e.code == "device_internal_error")
        await sim.unplug()  # power off
        sim.active_faults.clear()
        await sim.replug()  # power on: a fresh firmware, no fault to report
        cleared = await recorder.wait_for(
            DeviceFaultCleared, lambda e: e.code == "device_internal_error", timeout=10)
        assert (fault.device, fault.detail, fault.action) == (
            "shoe", "watchdog reset in the reader task",
            "The device's firmware failed: power-cycle it; if it repeats, replace the unit.")
        assert cleared == DeviceFaultCleared("shoe", "device_internal_error")
        assert shoe.health().counters["status_replies"] == 2  # cleared at the first Status
        events = [type(e).__name__ for e in recorder.events
                  if getattr(e, "code", None) == "device_internal_error"]
        assert events == ["DeviceFault", "DeviceFaultCleared"]
    finally:
        await shoe.stop()


@pytest.mark.parametrize("baud", [9600, 115200])
async def test_a_protocol_1_0_shoe_still_works_with_the_1_1_host(baud: int, recorder: Recorder) -> None:
    # 7: negotiation falls back to 1.0; the 1.0 firmware core (hil.misbehaviour.LEGACY_1_0:
    # no 1.1 bit, 1.0 refusal numbering, 1.0 stretched keepalive: 3 s at 9600) stays up
    from drivers.protocols import CardDrawn
    from hil.misbehaviour import legacy_endpoint

    stack, cover = build_stack(1, random.Random(7))
    sim = SimulatedShoe(stack, BackColour.RED, cover, endpoint_factory=legacy_endpoint,
                        baudrate=baud)
    await sim.start()
    shoe = SerialShoe("shoe", sim.port, baudrate=baud, reconnect=FAST)
    await shoe.start(recorder)
    try:
        await sim.wait_host(10)
        await shoe.wait_state(LinkState.UP, 10)
        assert shoe.peer is not None and shoe.peer.capabilities == 0  # a 1.0 device
        card = await sim.draw()
        assert (await recorder.wait_for(CardDrawn)).card == card
        await asyncio.sleep(4.0)  # longer than the 1.0 device's 3 s keepalive period at 9600
        assert shoe.state is LinkState.UP
        assert [e.state for e in recorder.of(LinkChanged)][-1] is LinkState.UP
        assert shoe.health().counters["connects"] == 1
    finally:
        await shoe.stop()
        await sim.stop()
