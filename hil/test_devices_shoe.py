"""The real SerialShoe driver against the simulated shoe through a real pseudo-terminal."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from cards import BackColour, Card
from drivers.protocols import (
    CardDrawn,
    CoverCardDrawn,
    DeviceFault,
    DeviceFaultCleared,
    LinkChanged,
    LinkState,
    Shoe,
    ShoeLoaded,
)
from drivers.shoe import SerialShoe
from firmware_bridge.messages import PROTOCOL_VERSION, FaultCode
from hil.conftest import EVENT_TIMEOUT_S, FAST_RECONNECT, ShoeBench, left_as_found, new_stack
from hil.recorder import Recorder
from hil.shoe_sim import SimulatedShoe

pytestmark = [pytest.mark.hil, pytest.mark.timeout(60), pytest.mark.usefixtures("no_leaked_threads")]


def index_is(index: int) -> Callable[[CardDrawn], bool]:
    return lambda event: event.index == index


@pytest.fixture
async def shoe(shoe_bench: ShoeBench, recorder: Recorder) -> AsyncIterator[SerialShoe]:
    driver = SerialShoe("shoe", shoe_bench.url, reconnect=FAST_RECONNECT)
    await driver.start(recorder)
    await recorder.wait_for(LinkChanged, lambda e: e.state is LinkState.UP, timeout=EVENT_TIMEOUT_S)
    if shoe_bench.sim is not None:
        await shoe_bench.sim.wait_host(EVENT_TIMEOUT_S)
    try:
        async with left_as_found(driver, on_rig=shoe_bench.sim is None):
            yield driver
    finally:
        await driver.stop()


async def deal(shoe_bench: ShoeBench, recorder: Recorder,
               count: int) -> tuple[list[Card | None], list[object]]:
    """Deal ``count`` times: the cards dealt (None on a rig, where the test cannot know them)
    and what the shoe reported for each (a card or the cover card), with any ShoeLoaded
    before it (a rig's feeder reloads an empty shoe)."""
    dealt: list[Card | None] = []
    reports: list[object] = []
    for _ in range(count):
        mark = len(recorder.events)
        dealt.append(await shoe_bench.draw())
        report = await recorder.wait_for((CardDrawn, CoverCardDrawn),  # type: ignore[arg-type]
                                         timeout=EVENT_TIMEOUT_S, start=mark)
        reports += [e for e in recorder.events[mark:] if isinstance(e, ShoeLoaded)] + [report]
    return dealt, reports


def indexes_run_on(reports: list[object]) -> list[int]:
    """The cards' indexes, checked to count on from the first one seen: protocol.md §4
    restarts them only at ShoeLoaded, and the cover card uses none."""
    expected: int | None = None
    seen = []
    for report in reports:
        if isinstance(report, ShoeLoaded):
            expected = 0
        elif isinstance(report, (CardDrawn, CoverCardDrawn)):
            assert expected is None or report.index == expected, f"{report} after index {expected}"
            if isinstance(report, CardDrawn):
                seen.append(report.index)
                expected = report.index + 1
            else:
                expected = report.index
    return seen


def test_card_indexes_count_on_from_the_first_seen_past_the_cover_card_and_a_reload() -> None:
    """How a rig run reads a part-dealt shoe: any first index, the cover card between two
    cards with no index of its own, and 0 again after the feeder reloads the shoe."""
    ace = new_stack(decks=1)[0][0]

    def card(index: int) -> CardDrawn:
        return CardDrawn("shoe", index, ace, BackColour.RED, False)

    reports: list[object] = [card(7), CoverCardDrawn("shoe", 8), card(8),
                             ShoeLoaded("shoe", 416, BackColour.RED), card(0), card(1)]
    assert indexes_run_on(reports) == [7, 8, 0, 1]
    with pytest.raises(AssertionError, match="index=9.* after index 8"):
        indexes_run_on([card(7), card(9)])  # a card the shoe never reported


async def test_every_card_arrives_with_rank_suit_back_and_index(
        shoe: SerialShoe, shoe_bench: ShoeBench, recorder: Recorder) -> None:
    """On a rig the shoe is wherever the last run left it, so the indexes are read from the
    first one seen; the simulator's shoe is fresh: 0 to 5, the very cards dealt."""
    assert isinstance(shoe, Shoe)
    dealt, reports = await deal(shoe_bench, recorder, 6)
    indexes = indexes_run_on(reports)
    cards = [r for r in reports if isinstance(r, CardDrawn)]
    assert len(cards) == 6 - sum(isinstance(r, CoverCardDrawn) for r in reports)
    assert not any(c.face_up for c in cards)
    if shoe_bench.sim is not None:
        assert indexes == [0, 1, 2, 3, 4, 5]
        assert [c.card for c in cards] == dealt
        assert {c.back for c in cards} == {BackColour.RED}
    elif not any(isinstance(r, ShoeLoaded) for r in reports):
        assert len({c.back for c in cards}) == 1  # one shoe, one back colour (681a.3(b))


async def test_cover_card_comes_out_where_it_was_placed(
        shoe: SerialShoe, shoe_bench: ShoeBench, recorder: Recorder, sim_only: None) -> None:
    sim = shoe_bench.simulator
    stack, _ = new_stack(seed=5, decks=1)
    sim.load(stack, BackColour.BLUE, cover_card_at=3)
    results = [await sim.draw() for _ in range(5)]
    assert results[3] is None and all(r is not None for r in results[:3] + results[4:])
    loaded = await recorder.wait_for(ShoeLoaded)
    assert loaded == ShoeLoaded("shoe", 52, BackColour.BLUE)
    assert await recorder.wait_for(CoverCardDrawn) == CoverCardDrawn("shoe", 3)
    after = await recorder.wait_for(CardDrawn, lambda e: e.index == 3 and e.back is BackColour.BLUE)
    assert after.card == results[4]
    assert sim.remaining == 52 - 4 and sim.drawn == 4


async def test_misread_is_a_fault_and_the_card_is_never_guessed(
        shoe: SerialShoe, shoe_bench: ShoeBench, recorder: Recorder, sim_only: None) -> None:
    sim = shoe_bench.simulator
    await sim.draw()
    sim.misread_next()
    await sim.draw()
    third = await sim.draw()
    fault = await recorder.wait_for(DeviceFault, lambda e: e.code == "shoe_misread")
    assert "not read" in fault.action and "does not guess" in fault.action
    nxt = await recorder.wait_for(CardDrawn, lambda e: e.index == 2)
    assert nxt.card == third
    assert [c.index for c in recorder.of(CardDrawn)] == [0, 2]  # index 1 never became a card
    assert not [f for f in recorder.of(DeviceFault) if f.code == "shoe_index_gap"]


async def test_631a_15_card_found_face_up_is_reported_face_up(
        shoe: SerialShoe, shoe_bench: ShoeBench, recorder: Recorder, sim_only: None) -> None:
    sim = shoe_bench.simulator
    sim.face_up_next()
    card = await sim.draw()
    event = await recorder.wait_for(CardDrawn)
    assert (event.card, event.face_up) == (card, True)


async def test_garbage_on_the_line_is_counted_and_dropped(
        shoe: SerialShoe, shoe_bench: ShoeBench, recorder: Recorder, sim_only: None) -> None:
    sim = shoe_bench.simulator
    sim.garbage()
    cards = []
    for _ in range(3):
        cards.append(await sim.draw())
        sim.garbage(b"\x00\x13\x37garbage\x00")
    events = [await recorder.wait_for(CardDrawn, index_is(i)) for i in range(3)]
    assert [e.card for e in events] == cards
    counters = shoe.health().counters
    assert counters["link_crc_errors"] + counters["link_framing_errors"] > 0


async def test_lid_open_and_close_faults(
        shoe: SerialShoe, shoe_bench: ShoeBench, recorder: Recorder, sim_only: None) -> None:
    sim = shoe_bench.simulator
    await sim.set_lid(True)
    fault = await recorder.wait_for(DeviceFault, lambda e: e.code == "shoe_lid_open")
    assert fault.action == "Close the shoe's lid; cards are not read while it is open."
    await sim.set_lid(False)
    assert await recorder.wait_for(DeviceFaultCleared) == DeviceFaultCleared("shoe", "shoe_lid_open")
    await sim.sensor_fault()
    sensor = await recorder.wait_for(DeviceFault, lambda e: e.code == "shoe_sensor_fault")
    assert sensor.action.startswith("Stop dealing")
    result = await shoe.self_test()
    assert not result.passed and "SHOE_SENSOR_FAULT" in result.detail


async def test_unplug_is_retrying_with_a_fault_and_replug_recovers(
        shoe: SerialShoe, shoe_bench: ShoeBench, recorder: Recorder, sim_only: None) -> None:
    sim = shoe_bench.simulator
    await sim.draw()
    await recorder.wait_for(CardDrawn)
    mark = len(recorder.events)
    await sim.unplug()
    await recorder.wait_for(LinkChanged, lambda e: e.state is LinkState.RETRYING, start=mark)
    down = await recorder.wait_for(DeviceFault, lambda e: e.code == "link_down", start=mark)
    assert "cable" in down.action
    lost = await sim.draw()  # dealt while the cable is out: its report never arrives
    assert lost is not None and sim.lost_reports == 1
    await sim.replug()
    await recorder.wait_for(LinkChanged, lambda e: e.state is LinkState.UP, start=mark)
    await recorder.wait_for(DeviceFaultCleared, lambda e: e.code == "link_down", start=mark)
    await sim.wait_host(EVENT_TIMEOUT_S)
    card = await sim.draw()
    arrived = await recorder.wait_for(CardDrawn, lambda e: e.index == 2)
    assert arrived.card == card
    gap = await recorder.wait_for(DeviceFault, lambda e: e.code == "shoe_index_gap")
    assert gap.detail == "card index 2 arrived where 1 was expected: 1 card(s) unaccounted for"
    assert shoe.health().counters["reconnects"] == 1


async def test_fault_active_across_a_reconnect_is_resent_and_stale_ones_clear(
        shoe: SerialShoe, shoe_bench: ShoeBench, recorder: Recorder, sim_only: None) -> None:
    sim = shoe_bench.simulator
    await sim.set_lid(True)
    await sim.sensor_fault()
    await recorder.wait_for(DeviceFault, lambda e: e.code == "shoe_sensor_fault")
    await sim.unplug()
    # While unplugged the reader was fixed; the lid is still open.
    sim.active_faults.pop(FaultCode.SHOE_SENSOR_FAULT)
    assert set(sim.active_faults) == {FaultCode.SHOE_LID_OPEN}
    mark = len(recorder.events)
    await sim.replug()
    await recorder.wait_for(DeviceFaultCleared, lambda e: e.code == "shoe_sensor_fault", start=mark)
    cleared = {e.code for e in recorder.events[mark:] if isinstance(e, DeviceFaultCleared)}
    assert "shoe_lid_open" not in cleared  # still open: re-sent after the handshake


async def test_device_missing_at_start_up_is_retrying_not_a_crash(
        recorder: Recorder, sim_only: None) -> None:
    stack, cover = new_stack()
    sim = SimulatedShoe(stack, BackColour.RED, cover)
    driver = SerialShoe("shoe", sim.port, reconnect=FAST_RECONNECT)
    await driver.start(recorder)
    try:
        await recorder.wait_for(LinkChanged, lambda e: e.state is LinkState.RETRYING)
        assert driver.health().link in (LinkState.RETRYING, LinkState.CONNECTING)
        assert "cannot open serial port" in driver.health().last_error
        await sim.start()
        await recorder.wait_for(LinkChanged, lambda e: e.state is LinkState.UP, timeout=EVENT_TIMEOUT_S)
    finally:
        await driver.stop()
        await sim.stop()


@pytest.mark.parametrize(("sim_kw", "driver_kw", "expected"), [
    ({"protocol_version": PROTOCOL_VERSION + 1}, {},
     f"shoe speaks version {PROTOCOL_VERSION + 1}, this host speaks version {PROTOCOL_VERSION}"),
    ({"firmware_version": "shoe 0.9-beta"}, {"firmware_versions": ["shoe 2.4.1"]},
     "firmware 'shoe 0.9-beta' of SIM-SHOE-0001 is not an approved version (shoe 2.4.1)"),
])
async def test_wrong_protocol_or_firmware_is_refused_with_what_to_do(
        recorder: Recorder, sim_only: None, sim_kw: dict[str, object],
        driver_kw: dict[str, object], expected: str) -> None:
    stack, cover = new_stack()
    sim = SimulatedShoe(stack, BackColour.RED, cover, **sim_kw)  # type: ignore[arg-type]
    await sim.start()
    driver = SerialShoe("shoe", sim.port, reconnect=FAST_RECONNECT, **driver_kw)  # type: ignore[arg-type]
    await driver.start(recorder)
    try:
        refused = await recorder.wait_for(LinkChanged, lambda e: e.state is LinkState.REFUSED)
        assert expected in refused.detail
        fault = await recorder.wait_for(DeviceFault, lambda e: e.code == "incompatible_device")
        assert fault.action.startswith(f"Install approved firmware speaking protocol version {PROTOCOL_VERSION}")
        assert driver.health().link is LinkState.REFUSED
        assert not (await driver.self_test()).passed
    finally:
        await driver.stop()
        await sim.stop()


async def test_health_and_self_test_report_the_device(
        shoe: SerialShoe, shoe_bench: ShoeBench) -> None:
    health = shoe.health()
    assert (health.device, health.kind, health.link, health.port) == (
        "shoe", "shoe", LinkState.UP, shoe_bench.url)
    assert health.protocol_version == PROTOCOL_VERSION
    if shoe_bench.sim is not None:
        assert (health.serial_number, health.firmware_version) == ("SIM-SHOE-0001", "shoe-sim 1.0")
    assert health.counters["link_messages_in"] >= 1
    assert (await shoe.self_test()).passed


async def test_port_is_locked_exclusively(
        shoe: SerialShoe, shoe_bench: ShoeBench, recorder: Recorder, sim_only: None) -> None:
    """A second program (or a second daemon) cannot open the shoe's port while the driver has it."""
    intruder_events = Recorder()
    intruder = SerialShoe("intruder", shoe_bench.url, reconnect=FAST_RECONNECT)
    await intruder.start(intruder_events)
    try:
        await intruder_events.wait_for(LinkChanged, lambda e: e.state is LinkState.RETRYING)
        assert "lock" in intruder.health().last_error.lower()
        assert shoe.health().link is LinkState.UP
    finally:
        await intruder.stop()


async def test_a_shoe_that_stops_answering_is_dropped_by_the_keepalive(
        shoe: SerialShoe, shoe_bench: ShoeBench, recorder: Recorder, sim_only: None) -> None:
    """Firmware hang: the port stays open, only the link's silence timeout (3 s) can tell."""
    sim = shoe_bench.simulator
    mark = len(recorder.events)
    await sim.stop_answering()
    down = await recorder.wait_for(DeviceFault, lambda e: e.code == "link_down", start=mark,
                                   timeout=EVENT_TIMEOUT_S)
    assert "silent" in down.detail
    await sim.resume_answering()
    await recorder.wait_for(LinkChanged, lambda e: e.state is LinkState.UP, start=mark,
                            timeout=EVENT_TIMEOUT_S)
    await sim.wait_host(EVENT_TIMEOUT_S)
    card = await sim.draw()
    assert (await recorder.wait_for(CardDrawn, start=mark)).card == card


@pytest.mark.parametrize(("inject", "code", "action_starts"), [
    ("set_lid", "shoe_lid_open", "Close the shoe's lid"),
    ("sensor_fault", "shoe_sensor_fault", "Stop dealing: the shoe's card reader failed"),
    ("card_jam", "shoe_card_jam", "A card is stuck in the shoe's exit"),
])
async def test_shoe_faults_come_and_go_with_an_action(
        shoe: SerialShoe, shoe_bench: ShoeBench, recorder: Recorder, sim_only: None,
        inject: str, code: str, action_starts: str) -> None:
    sim = shoe_bench.simulator
    await getattr(sim, inject)(True)
    fault = await recorder.wait_for(DeviceFault, lambda e: e.code == code)
    assert fault.device == "shoe" and fault.action.startswith(action_starts)
    await getattr(sim, inject)(False)
    assert await recorder.wait_for(DeviceFaultCleared) == DeviceFaultCleared("shoe", code)
