"""The real SerialDisplay driver against the simulated display through a real pseudo-terminal."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from drivers.display import SerialDisplay
from drivers.errors import DisplayError
from drivers.protocols import DeviceFault, DeviceFaultCleared, LinkChanged, LinkState, ProgressiveDisplay
from hil.conftest import EVENT_TIMEOUT_S, FAST_RECONNECT, DisplayBench, left_as_found
from hil.recorder import Recorder

pytestmark = [pytest.mark.hil, pytest.mark.timeout(60), pytest.mark.usefixtures("no_leaked_threads")]


@pytest.fixture
async def display(display_bench: DisplayBench, recorder: Recorder) -> AsyncIterator[SerialDisplay]:
    driver = SerialDisplay("display", display_bench.url, reconnect=FAST_RECONNECT)
    await driver.start(recorder)
    await recorder.wait_for(LinkChanged, lambda e: e.state is LinkState.UP, timeout=EVENT_TIMEOUT_S)
    try:
        async with left_as_found(driver, on_rig=display_bench.sim is None):
            yield driver
    finally:
        await driver.stop()


async def test_meters_and_prompt_are_shown_without_blocking_the_caller(
        display: SerialDisplay, display_bench: DisplayBench) -> None:
    assert isinstance(display, ProgressiveDisplay)
    display.show_meters({"royal9": 1_234_567, "major": 25_000_00})
    display.show_meters({"royal9": 1_234_592})  # a later value replaces the earlier one
    display.show_prompt("No more bets")
    await display.wait_synced(EVENT_TIMEOUT_S)
    if display_bench.sim is not None:
        assert display_bench.sim.meters == {"royal9": 1_234_592, "major": 2_500_000}
        assert display_bench.sim.prompt == "No more bets"
    display.show_prompt("")  # a rig's display keeps its prompt after the test: cleared
    await display.wait_synced(EVENT_TIMEOUT_S)
    if display_bench.sim is not None:
        assert display_bench.sim.prompt == ""


async def test_631c_6_c_5_win_light_is_confirmed_only_once_the_display_has_it(
        display: SerialDisplay, display_bench: DisplayBench) -> None:
    display.win_light(7, True)
    assert not display.win_light_confirmed(7)  # queued, not yet acknowledged
    await display.wait_synced(EVENT_TIMEOUT_S)
    assert display.win_light_confirmed(7)
    if display_bench.sim is not None:
        assert display_bench.sim.lit(7)
    display.win_light(7, False)
    await display.wait_synced(EVENT_TIMEOUT_S)
    if display_bench.sim is not None:
        assert not display_bench.sim.lit(7)


async def test_631c_6_c_5_failed_win_lamp_is_a_fault_until_the_lamp_is_replaced(
        display: SerialDisplay, display_bench: DisplayBench, recorder: Recorder, sim_only: None) -> None:
    assert display_bench.sim is not None
    display.win_light(3, True)
    await display.wait_synced(EVENT_TIMEOUT_S)
    await display_bench.sim.lamp_failed(3)
    fault = await recorder.wait_for(DeviceFault, lambda e: e.code == "display_lamp_failed")
    assert fault.detail == "win light of seat 3 draws no current"
    assert "631c.6(c)(5)" in fault.action
    assert not display_bench.sim.lit(3)
    # The fault's exit (docs/faults.md): the lamp is replaced and the display reports the
    # fault cleared; the light it was told to show is lit again.
    await display_bench.sim.lamp_replaced(3)
    cleared = await recorder.wait_for(DeviceFaultCleared, lambda e: e.code == "display_lamp_failed",
                                      timeout=EVENT_TIMEOUT_S)
    assert cleared == DeviceFaultCleared("display", "display_lamp_failed")
    assert display_bench.sim.lit(3)


async def test_everything_is_shown_again_after_a_reconnect(
        display: SerialDisplay, display_bench: DisplayBench, recorder: Recorder, sim_only: None) -> None:
    sim = display_bench.sim
    assert sim is not None
    display.show_meters({"royal9": 500_00})
    display.win_light(2, True)
    await display.wait_synced(EVENT_TIMEOUT_S)
    mark = len(recorder.events)
    await sim.unplug()
    await recorder.wait_for(LinkChanged, lambda e: e.state is LinkState.RETRYING, start=mark)
    assert not display.win_light_confirmed(2)
    display.show_meters({"royal9": 501_00})  # while disconnected: kept, not lost
    sim.meters.clear()
    sim.lights.clear()  # the display rebooted
    await sim.replug()
    await recorder.wait_for(LinkChanged, lambda e: e.state is LinkState.UP, start=mark,
                            timeout=EVENT_TIMEOUT_S)
    await display.wait_synced(EVENT_TIMEOUT_S)
    assert sim.meters == {"royal9": 501_00} and sim.lights == {2: True}


def test_bad_arguments_are_refused_at_once() -> None:
    driver = SerialDisplay("display", "/dev/null")
    with pytest.raises(DisplayError, match="seats are 1..14"):
        driver.win_light(15, True)
    with pytest.raises(DisplayError, match="must be a non-negative int of cents"):
        driver.show_meters({"royal9": 12.5})  # type: ignore[dict-item]


async def test_a_bench_test_leaving_its_device_changed_fails(
        display_bench: DisplayBench, recorder: Recorder, sim_only: None) -> None:
    """What the bench variants' device fixtures check (``left_as_found``), shown on the
    simulator, the only display a test can break on purpose: a lamp left failed."""
    sim = display_bench.sim
    assert sim is not None
    driver = SerialDisplay("display", display_bench.url, reconnect=FAST_RECONNECT)
    await driver.start(recorder)
    try:
        await recorder.wait_for(LinkChanged, lambda e: e.state is LinkState.UP, timeout=EVENT_TIMEOUT_S)
        with pytest.raises(AssertionError) as raised:
            async with left_as_found(driver, on_rig=True):
                await sim.lamp_failed(3)
                await recorder.wait_for(DeviceFault, lambda e: e.code == "display_lamp_failed")
        assert str(raised.value).splitlines()[0] == (
            "the test left the display changed: (False, 'active faults: DISPLAY_LAMP_FAILED', None); "
            "it found it (True, 'all checks passed', None)")
        await sim.lamp_replaced(3)
        async with left_as_found(driver, on_rig=True):  # a test that puts it back passes
            await sim.lamp_failed(3)
            await sim.lamp_replaced(3)
    finally:
        await driver.stop()
