"""The real UsbShuffler driver against the simulated shuffler through pyusb and our own backend."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from cards import BackColour
from drivers.errors import DriverConfigError, ShufflerBusyError, ShufflerNotConnectedError
from drivers.protocols import (
    BatchHeld,
    DeviceFault,
    DeviceFaultCleared,
    LinkChanged,
    LinkState,
    ShuffleComplete,
    ShuffleProgress,
    Shuffler,
)
from drivers.shuffler import UsbShuffler
from hil.conftest import EVENT_TIMEOUT_S, FAST_RECONNECT, ShufflerBench, left_as_found
from hil.recorder import Recorder

pytestmark = [pytest.mark.hil, pytest.mark.timeout(60), pytest.mark.usefixtures("no_leaked_threads")]

ONE_DECK = 52


@pytest.fixture
async def shuffler(shuffler_bench: ShufflerBench, recorder: Recorder) -> AsyncIterator[UsbShuffler]:
    driver = UsbShuffler("shuffler", shuffler_bench.vendor_id, shuffler_bench.product_id,
                         backend=shuffler_bench.backend, reconnect=FAST_RECONNECT)
    await driver.start(recorder)
    await recorder.wait_for(LinkChanged, lambda e: e.state is LinkState.UP, timeout=EVENT_TIMEOUT_S)
    on_rig = shuffler_bench.sim is None
    if on_rig:  # the batch it holds is part of the state the test must leave as found
        await recorder.wait_for(BatchHeld, timeout=EVENT_TIMEOUT_S)
    try:
        async with left_as_found(driver, on_rig):
            yield driver
    finally:
        await driver.stop()


async def test_681a_3_b_shuffle_counts_and_verifies_the_batch(
        known_batch: None, shuffler: UsbShuffler, recorder: Recorder,
        shuffler_bench: ShufflerBench) -> None:
    """The batch the shuffler holds is shuffled, counted and verified; on a rig it is the
    batch the bench holds ([shuffler] batch_cards, or the test skips before connecting)."""
    assert isinstance(shuffler, Shuffler)
    cards = shuffler_bench.batch_cards
    assert cards is not None
    held = await recorder.wait_for(BatchHeld, lambda e: e.back is not None, timeout=EVENT_TIMEOUT_S)
    assert held.back is not None and shuffler.held_batch is held.back
    if shuffler_bench.sim is not None:
        assert held == BatchHeld("shuffler", BackColour.BLUE)
    await shuffler.shuffle(held.back, cards)
    assert shuffler.shuffling is held.back
    progress = await recorder.wait_for(ShuffleProgress, timeout=EVENT_TIMEOUT_S)
    assert progress == ShuffleProgress("shuffler", 52, cards)
    done = await recorder.wait_for(ShuffleComplete, timeout=EVENT_TIMEOUT_S)
    assert done == ShuffleComplete("shuffler", held.back, cards, 0, 0, 0)
    assert done.verified and shuffler.shuffling is None
    assert not recorder.of(DeviceFault)


@pytest.mark.parametrize(("inject", "counted", "missing", "extra", "duplicates"), [
    ("remove_card", 51, 1, 0, 0),
    ("add_duplicate", 53, 0, 0, 1),
    ("add_foreign_card", 53, 0, 1, 0),
])
async def test_miscounted_batch_is_a_fault_not_a_warning(
        shuffler: UsbShuffler, recorder: Recorder, shuffler_bench: ShufflerBench, sim_only: None,
        inject: str, counted: int, missing: int, extra: int, duplicates: int) -> None:
    sim = shuffler_bench.simulator
    if inject == "add_foreign_card":
        sim.add_foreign_card(BackColour.BLUE, BackColour.RED)
    else:
        getattr(sim, inject)(BackColour.BLUE)
    await shuffler.shuffle(BackColour.BLUE, ONE_DECK)
    done = await recorder.wait_for(ShuffleComplete)
    assert (done.cards_counted, done.missing, done.extra, done.duplicates) == (
        counted, missing, extra, duplicates)
    assert not done.verified
    fault = await recorder.wait_for(DeviceFault, lambda e: e.code == "shuffler_miscount")
    assert fault.detail == (f"BLUE batch: {counted} cards counted, {missing} missing, "
                            f"{extra} extra, {duplicates} duplicate")
    assert fault.action.startswith("Do not deal this batch")
    # Once the batch is made good, a verified shuffle clears the fault.
    sim.restore_batch(BackColour.BLUE)
    await shuffler.shuffle(BackColour.BLUE, ONE_DECK)
    await recorder.wait_for(DeviceFaultCleared, lambda e: e.code == "shuffler_miscount")


async def test_681a_9_c_jam_is_a_fault_saying_reshuffle(
        shuffler: UsbShuffler, recorder: Recorder, shuffler_bench: ShufflerBench, sim_only: None) -> None:
    shuffler_bench.simulator.jam_next(after_cards=20)
    await shuffler.shuffle(BackColour.BLUE, ONE_DECK)
    fault = await recorder.wait_for(DeviceFault, lambda e: e.code == "shuffler_jam")
    assert fault.detail == "jammed at card 20"
    assert "681a.9(c)" in fault.action and "reshuffled" in fault.action
    assert shuffler.shuffling is None
    assert not recorder.of(ShuffleComplete)
    shuffler_bench.simulator.clear_jam()
    await recorder.wait_for(DeviceFaultCleared, lambda e: e.code == "shuffler_jam")


async def test_681a_9_c_cycle_not_completed_is_a_fault(
        shuffler: UsbShuffler, recorder: Recorder, shuffler_bench: ShufflerBench, sim_only: None) -> None:
    shuffler_bench.simulator.incomplete_next(after_cards=30)
    await shuffler.shuffle(BackColour.BLUE, ONE_DECK)
    fault = await recorder.wait_for(DeviceFault, lambda e: e.code == "shuffler_cycle_incomplete")
    assert fault.detail == "cycle stopped at card 30 of 52"
    assert "681a.9(c)" in fault.action


async def test_681a_9_c_silent_stall_is_caught_by_the_drivers_cycle_timeout(
        shuffler_bench: ShufflerBench, recorder: Recorder, sim_only: None) -> None:
    driver = UsbShuffler("shuffler", shuffler_bench.vendor_id, shuffler_bench.product_id,
                         backend=shuffler_bench.backend, reconnect=FAST_RECONNECT,
                         stall_timeout_s=0.3)
    await driver.start(recorder)
    try:
        await recorder.wait_for(LinkChanged, lambda e: e.state is LinkState.UP)
        shuffler_bench.simulator.stall_next(after_cards=10)
        await driver.shuffle(BackColour.BLUE, ONE_DECK)
        fault = await recorder.wait_for(DeviceFault, lambda e: e.code == "shuffler_cycle_incomplete")
        assert fault.detail == "no progress for 0.3 s while shuffling the BLUE batch"
        assert driver.shuffling is None
    finally:
        await driver.stop()


async def test_batch_not_in_the_shuffler_is_a_fault(
        shuffler: UsbShuffler, recorder: Recorder, sim_only: None) -> None:
    await shuffler.shuffle(BackColour.RED, ONE_DECK)
    fault = await recorder.wait_for(DeviceFault, lambda e: e.code == "shuffler_batch_missing")
    assert fault.detail == "asked to shuffle the RED batch; the shuffler holds the BLUE batch"
    assert shuffler.shuffling is None


async def test_dealer_swapping_batches_is_reported(
        shuffler: UsbShuffler, recorder: Recorder, shuffler_bench: ShufflerBench, sim_only: None) -> None:
    await recorder.wait_for(BatchHeld, lambda e: e.back is BackColour.BLUE)
    shuffler_bench.simulator.remove_batch()
    await recorder.wait_for(BatchHeld, lambda e: e.back is None)
    shuffler_bench.simulator.insert_batch(BackColour.RED)
    await recorder.wait_for(BatchHeld, lambda e: e.back is BackColour.RED)
    assert shuffler.held_batch is BackColour.RED


async def test_second_shuffle_while_busy_is_refused(
        shuffler: UsbShuffler, shuffler_bench: ShufflerBench, sim_only: None) -> None:
    shuffler_bench.simulator.stall_next(after_cards=1)
    await shuffler.shuffle(BackColour.BLUE, ONE_DECK)
    with pytest.raises(ShufflerBusyError, match="still shuffling the BLUE batch"):
        await shuffler.shuffle(BackColour.BLUE, ONE_DECK)


async def test_unplug_mid_shuffle_is_an_incomplete_cycle_and_replug_recovers(
        shuffler: UsbShuffler, recorder: Recorder, shuffler_bench: ShufflerBench, sim_only: None) -> None:
    sim = shuffler_bench.simulator
    sim.stall_next(after_cards=5)
    await shuffler.shuffle(BackColour.BLUE, ONE_DECK)
    mark = len(recorder.events)
    sim.unplug()
    await recorder.wait_for(LinkChanged, lambda e: e.state is LinkState.RETRYING, start=mark)
    fault = await recorder.wait_for(DeviceFault, lambda e: e.code == "shuffler_cycle_incomplete",
                                    start=mark)
    assert fault.detail.startswith("the link failed while the BLUE batch was being shuffled")
    await recorder.wait_for(DeviceFault, lambda e: e.code == "link_down", start=mark)
    with pytest.raises(ShufflerNotConnectedError):
        await shuffler.shuffle(BackColour.BLUE, ONE_DECK)
    sim.replug()
    await recorder.wait_for(LinkChanged, lambda e: e.state is LinkState.UP, start=mark,
                            timeout=EVENT_TIMEOUT_S)
    await recorder.wait_for(DeviceFaultCleared, lambda e: e.code == "link_down", start=mark)
    await shuffler.shuffle(BackColour.BLUE, ONE_DECK)
    assert (await recorder.wait_for(ShuffleComplete, start=mark)).verified


async def test_missing_at_start_up_is_retrying_then_found(
        shuffler_bench: ShufflerBench, recorder: Recorder, sim_only: None) -> None:
    sim = shuffler_bench.simulator
    sim.unplug()
    driver = UsbShuffler("shuffler", sim.vendor_id, sim.product_id,
                         backend=shuffler_bench.backend, reconnect=FAST_RECONNECT)
    await driver.start(recorder)
    try:
        await recorder.wait_for(LinkChanged, lambda e: e.state is LinkState.RETRYING)
        assert "no USB device 1209:0001" in driver.health().last_error
        sim.replug()
        await recorder.wait_for(LinkChanged, lambda e: e.state is LinkState.UP, timeout=EVENT_TIMEOUT_S)
    finally:
        await driver.stop()


def test_backend_import_path_errors_name_the_key() -> None:
    with pytest.raises(DriverConfigError, match="shuffler.backend = 'nowhere:thing': cannot import"):
        UsbShuffler("shuffler", 1, 2, backend="nowhere:thing")
    with pytest.raises(DriverConfigError, match="shuffler.vendor_id = 0x10000"):
        UsbShuffler("shuffler", 0x10000, 2)


async def test_health_names_the_device(
        shuffler: UsbShuffler, shuffler_bench: ShufflerBench) -> None:
    health = shuffler.health()
    assert health.link is LinkState.UP
    assert health.port == f"usb:{shuffler_bench.vendor_id:04x}:{shuffler_bench.product_id:04x}"
    if shuffler_bench.sim is not None:
        assert health.serial_number == "SIM-SHUF-0001"
    assert (await shuffler.self_test()).passed


async def test_fault_injection_from_another_process(
        recorder: Recorder, short_dir: str, monkeypatch: pytest.MonkeyPatch, sim_only: None) -> None:
    """The daemon owns the simulated shuffler (it is its pyusb backend); the HIL harness in
    another process injects a jam through TABLE_SIM_SHUFFLER_SOCKET."""
    import asyncio
    import sys

    from hil import usb_shuffler

    usb_shuffler.reset_backend()
    control = f"{short_dir}/shuffler.sock"
    monkeypatch.setenv(usb_shuffler.CONTROL_SOCKET_ENV, control)
    driver = UsbShuffler("shuffler", usb_shuffler.SIM_VENDOR_ID, usb_shuffler.SIM_PRODUCT_ID,
                         backend="hil.usb_shuffler:get_backend", reconnect=FAST_RECONNECT)
    await driver.start(recorder)
    try:
        await recorder.wait_for(LinkChanged, lambda e: e.state is LinkState.UP)
        code = ("from hil.usb_shuffler import ShufflerControlClient\n"
                f"c = ShufflerControlClient({control!r})\n"
                "c.request('JAM 20')\nprint(c.request('STATUS'))\n")
        proc = await asyncio.create_subprocess_exec(sys.executable, "-c", code,
                                                    stdout=asyncio.subprocess.PIPE)
        out, _ = await asyncio.wait_for(proc.communicate(), 30)
        assert out.decode().strip() == "held=BLUE plugged=1 host=1 shuffling=0"
        await driver.shuffle(BackColour.BLUE, 8 * ONE_DECK)
        fault = await recorder.wait_for(DeviceFault, lambda e: e.code == "shuffler_jam")
        assert fault.detail == "jammed at card 20"
    finally:
        await driver.stop()
        usb_shuffler.reset_backend()


async def test_firmware_restart_without_replug_reconnects_on_a_fresh_handle(
        shuffler: UsbShuffler, recorder: Recorder, shuffler_bench: ShufflerBench, sim_only: None) -> None:
    """The old pyusb handle must be released, or the new one finds interface 0 busy (EBUSY)."""
    mark = len(recorder.events)
    shuffler_bench.simulator.restart_firmware()
    await recorder.wait_for(DeviceFault, lambda e: e.code == "link_down", start=mark)
    await recorder.wait_for(DeviceFaultCleared, lambda e: e.code == "link_down", start=mark,
                            timeout=EVENT_TIMEOUT_S)
    assert shuffler.health().link is LinkState.UP
    await shuffler.shuffle(BackColour.BLUE, ONE_DECK)
    assert (await recorder.wait_for(ShuffleComplete, start=mark)).verified
