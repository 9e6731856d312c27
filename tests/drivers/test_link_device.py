"""LinkedDevice: a bug in a driver's message handling reconnects, it never ends the device's task."""

from __future__ import annotations

import random

import pytest

from cards import BackColour
from drivers.protocols import CardDrawn, DeviceFault, LinkChanged, LinkState
from drivers.reconnect import ReconnectPolicy
from drivers.shoe import SerialShoe
from firmware_bridge import messages as wire
from hil.recorder import Recorder
from hil.shoe_sim import SimulatedShoe, build_stack

pytestmark = [pytest.mark.timeout(30), pytest.mark.usefixtures("no_leaked_threads")]


class BuggyShoe(SerialShoe):
    """Fails on the first card it handles, as a driver bug would."""

    failed = False

    async def _on_message(self, message: wire.Message) -> None:
        if isinstance(message, wire.CardDrawn) and not self.failed:
            self.failed = True
            raise ZeroDivisionError("bug")
        await super()._on_message(message)


async def test_a_driver_bug_is_a_link_fault_and_the_driver_reconnects(recorder: Recorder) -> None:
    stack, cover = build_stack(1, random.Random(3))
    sim = SimulatedShoe(stack, BackColour.RED, cover)
    await sim.start()
    shoe = BuggyShoe("shoe", sim.port, reconnect=ReconnectPolicy(initial_delay_s=0.05, max_delay_s=0.1))
    await shoe.start(recorder)
    try:
        await sim.wait_host(10)
        await sim.draw()  # the buggy handler raises on this one
        fault = await recorder.wait_for(DeviceFault, lambda e: e.code == "link_down")
        assert fault.detail.endswith("driver error ZeroDivisionError: bug")
        after_fault = recorder.events.index(fault)
        await recorder.wait_for(LinkChanged, lambda e: e.state is LinkState.UP, start=after_fault)
        await sim.wait_host(10)
        card = await sim.draw()
        assert (await recorder.wait_for(CardDrawn)).card == card
    finally:
        await shoe.stop()
        await sim.stop()


async def test_a_device_that_stays_missing_is_reported_once_not_every_retry(
        recorder: Recorder) -> None:
    shoe = SerialShoe("shoe", "/dev/does-not-exist-shoe",
                      reconnect=ReconnectPolicy(initial_delay_s=0.01, max_delay_s=0.02))
    await shoe.start(recorder)
    try:
        await recorder.wait_for(LinkChanged, lambda e: e.state is LinkState.RETRYING)
        # Let it retry a dozen times; each attempt fails the same way.
        while shoe.health().counters["connect_attempts"] < 12:
            await shoe.wait_state(LinkState.CONNECTING, 5)
            await shoe.wait_state(LinkState.RETRYING, 5)
        states = [e.state for e in recorder.of(LinkChanged)]
        assert states == [LinkState.CONNECTING, LinkState.RETRYING]
        assert len(recorder.of(DeviceFault)) == 1
    finally:
        await shoe.stop()


@pytest.mark.parametrize(("baud", "seconds"), [(115200, 15.0), (19200, 15.0), (9600, 22.0)])
def test_a_self_test_gets_at_least_the_handshake_timeout_of_its_baud(baud: int,
                                                                    seconds: float) -> None:
    # docs/protocol.md 6.2 [M-6.2a]: a device answers SelfTestRequest within the handshake
    # timeout of 5.9, 22 s at 9600; the host gave every rate 15 s
    from types import SimpleNamespace

    from drivers.link_device import LinkedDevice
    from firmware_bridge.link import LinkTiming

    link = SimpleNamespace(endpoint=SimpleNamespace(timing=LinkTiming.for_baudrate(baud)))
    assert LinkedDevice._self_test_wait(link) == seconds
