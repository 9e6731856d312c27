"""The daemon in-process with stand-in devices: start-up integrity and the control commands."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from controller.config import load_config
from controller.control import ControlClient, ControlError
from controller.daemon import Daemon
from controller.memory.lifecycle import init_store, is_initialised, open_store
from drivers.protocols import DeviceHealth, LinkState
from hil.stand_in import StandInDevice

CONFIG = Path(__file__).parents[2] / "config" / "simulated-table.toml"


def config_for(tmp_path: Path):
    return load_config(CONFIG, [f"store.path={tmp_path / 'table.sqlite'}",
                                f"control.socket={tmp_path / 'control.sock'}"])


def initialise(config) -> None:  # noqa: ANN001
    """tabled --init-store, once per table: the daemon never makes a store by itself."""
    if not is_initialised(config.store_path, config.critical_dir):
        init_store(config.store_path, config.critical_dir, operator="test",
                   table_id=config.table_id).close()


@contextlib.asynccontextmanager
async def running(config, devices=None, prepare=None):  # noqa: ANN001
    """The daemon in this process with stand-in devices; yields a control client.
    `prepare(daemon)` runs before it starts (e.g. to say who the callers are)."""
    initialise(config)
    daemon = Daemon(config, devices=devices or {"shoe": StandInDevice("shoe")})
    if prepare is not None:
        prepare(daemon)
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    for _ in range(500):
        if Path(config.control_socket).exists():
            break
        await asyncio.sleep(0.01)  # the socket appears once the store is checked
    # The check of the whole history at start ends (passed or failed) before the body: its
    # entry and its verdict are then where every test expects them.
    await asyncio.wait_for(daemon.history_checked.wait(), 60)
    client = await ControlClient(config.control_socket).connect()
    try:
        yield client
    finally:
        await client.close()
        stop.set()
        await task


async def run_daemon(config, body):
    async with running(config) as client:
        return await body(client)


async def test_a_tampered_event_log_puts_the_table_out_of_order(tmp_path):
    config = config_for(tmp_path)
    initialise(config)
    store = open_store(config.store_path)  # entries 1 and 2: initialised, verified
    for n in range(3):
        store.append_entry("wager_accepted", {"seat": n + 1, "amount_cents": 500})
    store.close()
    raw = sqlite3.connect(config.store_path)
    raw.execute("""UPDATE events SET payload = '{"amount_cents":50000,"seat":2}' WHERE seq = 4""")
    raw.commit()
    raw.close()

    async def body(client):
        status = await client.call("status")
        assert status["state"] == "out_of_order"
        assert status["out_of_order"] == ("event chain: entry 4 (wager_accepted) was altered: its "
                                          "MAC does not match its contents")
        with pytest.raises(ControlError, match="not allowed while the table is out_of_order"):
            await client.call("open")
        return status

    await run_daemon(config, body)
    # Nothing is cleared automatically: a restart finds the same failure.
    again = await run_daemon(config, lambda client: client.call("status"))
    assert again["state"] == "out_of_order"


async def test_commands_report_clear_errors(tmp_path):
    async def body(client):
        assert (await client.call("status"))["state"] == "closed"
        with pytest.raises(ControlError, match="'seat' = 0: allowed: a whole number 1 to 14"):
            await client.call("place_wager", seat=0, wager="banker", amount_cents=500)
        with pytest.raises(ControlError, match="wagers are accepted only while betting is open"):
            await client.call("place_wager", seat=1, wager="banker", amount_cents=500)
        with pytest.raises(ControlError, match="no device 'lights'; allowed: shoe"):
            await client.call("self_test", device="lights")
        assert await client.call("self_test", device="shoe") == {
            "device": "shoe", "passed": True, "detail": "stand-in"}
        assert (await client.call("open"))["state"] == "opening"

    await run_daemon(config_for(tmp_path), body)


class StandInDisplay(StandInDevice):
    def __init__(self) -> None:
        super().__init__("display")
        self.lights: dict[int, bool] = {}
        self.confirmed: set[int] = set()
        self.meters: list[dict[str, int]] = []

    def win_light(self, seat: int, on: bool) -> None:
        self.lights[seat] = on

    def win_light_confirmed(self, seat: int) -> bool:
        return seat in self.confirmed

    def show_meters(self, meters) -> None:  # noqa: ANN001
        self.meters.append(dict(meters))

    def show_prompt(self, text: str) -> None:
        pass


async def test_an_award_waits_for_the_display_to_confirm_the_win_light_631c_6_c_5(tmp_path):
    from cards import BackColour, Card
    from drivers.protocols import CardDrawn, LockedOut, ShoeLoaded

    config = load_config(Path(__file__).parents[2] / "config" / "progressive-heavenly9-mystery.toml",
                         [f"store.path={tmp_path / 'table.sqlite'}",
                          f"control.socket={tmp_path / 'control.sock'}"])
    shoe, display = StandInDevice("shoe"), StandInDisplay()
    async with running(config, {"shoe": shoe, "display": display}) as client:

        async def settle(state: str) -> None:
            for _ in range(500):
                if (await client.call("status"))["state"] == state:
                    return
                await asyncio.sleep(0.01)
            raise AssertionError(f"table never reached {state}")

        index = 0

        def deal(*cards: str) -> None:
            nonlocal index
            for text in cards:
                shoe.emit(CardDrawn("shoe", index, Card.parse(text), BackColour.RED, False))
                index += 1

        await client.call("open")
        await client.call("shuffle", back="red")  # no shuffler configured: shuffled by hand
        await settle("cut")
        shoe.emit(ShoeLoaded("shoe", 416, BackColour.RED))
        await settle("burn")
        deal("A♣", "K♣")  # 631a.5(f): an ace burns one more
        await settle("betting_open")
        await client.call("place_wager", seat=4, wager="tie", amount_cents=500)
        shoe.emit(LockedOut("button", 0.0, frozenset({4})))  # seat 4's chip was on its sensor
        await settle("no_more_bets")
        deal("A♠", "A♠", "2♠", "3♠", "6♠", "5♠")  # suited three-card 9 tie: 631c.2(g)(1)
        await settle("betting_open")
        (award,) = await client.call("awards")
        assert (award["seat"], award["amount_cents"]) == (4, 1_000_000 + 50)
        assert display.lights == {4: True}
        auth = {"supervisor": "floor", "pin": "2468"}
        with pytest.raises(ControlError, match="win light for seat 4 is not confirmed lit"):
            await client.call("validate_award", auth=auth, award_id=award["award_id"])
        display.confirmed.add(4)
        paid = await client.call("validate_award", auth=auth, award_id=award["award_id"])
        assert (paid["state"], paid["validated_by"]) == ("paid", "floor")
        assert display.meters[-1]["heavenly9/progressive"] == 1_000_000


class UnpluggedShoe(StandInDevice):
    def health(self) -> DeviceHealth:
        return DeviceHealth(self.name, "stand-in", LinkState.REFUSED, "none",
                            last_error="protocol 0 is not supported; this controller speaks 1")


async def test_the_table_does_not_open_without_a_working_shoe(tmp_path):
    config = config_for(tmp_path)
    async with running(config, {"shoe": UnpluggedShoe("shoe")}) as client:
        with pytest.raises(ControlError, match=r"the shoe is refused \(protocol 0 is not "
                                               r"supported; this controller speaks 1\); the "
                                               r"table opens once it is up"):
            await client.call("open")
        assert (await client.call("status"))["state"] == "closed"


class StandInSeats(StandInDevice):
    def __init__(self) -> None:
        super().__init__("seats")
        self.leds: dict[int, Any] = {}
        self.history: list[tuple[int, str]] = []

    def led(self, seat: int) -> Any:
        from drivers.protocols import LedState
        return self.leds.get(seat, LedState.OFF)

    def set_led(self, seat: int, state: Any) -> None:
        self.leds[seat] = state
        self.history.append((seat, state.value))

    def open_betting(self, seats: frozenset[int]) -> None:
        pass

    def lock(self, cause: str) -> Any:
        from drivers.protocols import LockedOut
        return LockedOut(cause, 0.0, frozenset())


async def test_the_light_test_chases_every_seat_then_restores_them(tmp_path, monkeypatch):
    from drivers.protocols import LedState

    monkeypatch.setattr("controller.commands.device_tests.LIGHT_TEST_STEP_S", 0.0)
    monkeypatch.setattr("controller.commands.device_tests.LIGHT_TEST_ALL_ON_S", 0.0)
    config = config_for(tmp_path)
    seats, display = StandInSeats(), StandInDisplay()
    seats.leds[3] = LedState.UNAVAILABLE
    devices = {"shoe": StandInDevice("shoe"), "seats": seats, "display": display}
    async with running(config, devices) as client:
        result = await client.call("light_test")
        assert result == {"device": "lights", "passed": True,
                          "detail": "10 seat LEDs chased one by one, then all lit; win lights "
                                    "with them"}
        won = [seat for seat, state in seats.history if state == "won"]
        assert won == list(range(1, 11))
        assert seats.leds[3] is LedState.UNAVAILABLE and seats.leds[4] is LedState.OFF
        assert display.lights == {seat: False for seat in range(1, 11)}
        await client.call("open")
        with pytest.raises(ControlError) as refused:
            await client.call("light_test")
        assert str(refused.value) == (
            "the light test runs only when the table is closed, end_of_shoe, device_fault, "
            "out_of_order; the table is opening: run it at the end of the shoe or with the "
            "table closed")


async def test_an_event_filter_no_entry_can_match_is_refused_naming_the_known_ones(tmp_path):
    """A typo in `events --kind/--device/--severity` is a bad request, not "0 events"."""
    from controller.events import KINDS

    config = config_for(tmp_path)
    devices = {"shoe": StandInDevice("shoe"), "seats": StandInSeats()}
    async with running(config, devices) as client:
        with pytest.raises(ControlError) as kind:
            await client.call("events", kind="crad")
        assert kind.value.code == "bad_request"
        assert str(kind.value) == ("no event kind 'crad' (did you mean card?); allowed: "
                                   + ", ".join(sorted(KINDS)))
        with pytest.raises(ControlError) as device:
            await client.call("events", device="foo")
        assert (device.value.code, str(device.value)) == (
            "bad_request", "no event device 'foo'; allowed: seats, shoe")
        with pytest.raises(ControlError) as severity:
            await client.call("events", severity="loud")
        assert (severity.value.code, str(severity.value)) == (
            "bad_request", "'severity' = 'loud': allowed: info, warning, error, critical")
        started = await client.call("events", kind="daemon_started", device=None,
                                    severity="info")
        assert [e["kind"] for e in started] == ["daemon_started"]
        assert await client.call("events", device="seats") == []


async def test_an_event_the_table_cannot_handle_is_logged_and_play_goes_on(tmp_path):
    config = config_for(tmp_path)
    shoe = StandInDevice("shoe")
    async with running(config, {"shoe": shoe}) as client:
        shoe.emit("not an event")  # a driver bug
        for _ in range(200):
            errors = await client.call("events", kind="internal_error")
            if errors:
                break
            await asyncio.sleep(0.01)
        assert errors[0]["payload"] == {"event": "'not an event'"}
        assert errors[0]["severity"] == "error"
        assert (await client.call("open"))["state"] == "opening"  # the table still answers


async def test_device_events_reach_the_table_in_the_order_they_were_emitted(tmp_path):
    """A driver on the loop's thread (the shoe) queues its event at once; a GPIO callback's
    thread hands its event to the loop. An event a thread emitted first is still queued
    first, even when the loop has not yet run the thread's hand-over."""
    import threading

    from drivers.protocols import CardDrawn, LockedOut
    from cards import BackColour, Card

    config = config_for(tmp_path)
    initialise(config)
    daemon = Daemon(config, devices={"shoe": StandInDevice("shoe")})
    daemon.intake.loop, daemon.intake.loop_thread = asyncio.get_running_loop(), threading.get_ident()
    lock = LockedOut("button", 0.0, frozenset())
    card = CardDrawn("shoe", 0, Card.parse("9♠"), BackColour.RED, False)
    gpio = threading.Thread(target=daemon.intake.emit, args=(lock,))
    gpio.start()
    gpio.join()
    assert daemon.intake.queue.qsize() == 0  # the thread's event waits for the loop
    daemon.intake.emit(card)  # on the loop's thread, before the loop has turned
    assert [daemon.intake.queue.get_nowait() for _ in range(2)] == [lock, card]
    await asyncio.sleep(0)  # the thread's hand-over runs now, and finds nothing left
    assert daemon.intake.queue.qsize() == 0
    daemon.store.close()


async def test_a_card_is_decided_in_the_shoes_read_when_nothing_is_before_it(tmp_path):
    """A card emitted on the loop's thread while the table waits is handled before the emit
    returns (no loop turn before its prompt), and so is a thread's event in the loop's
    hand-over; one emitted during a step, or behind another event (queued, or a thread's not
    yet handed over), waits its turn in the queue, so the table sees every event once and in
    the order emitted (forced interleavings)."""
    import threading

    from drivers.protocols import CardDrawn, LockedOut
    from cards import BackColour, Card

    config = config_for(tmp_path)
    initialise(config)
    daemon = Daemon(config, devices={"shoe": StandInDevice("shoe")})
    daemon.intake.loop, daemon.intake.loop_thread = asyncio.get_running_loop(), threading.get_ident()
    daemon.history_checked.set()  # as Daemon.run's check of the history at start leaves it
    cards = [CardDrawn("shoe", n, Card.parse(text), BackColour.RED, False)
             for n, text in enumerate(["9♠", "2♦", "K♣", "4♥"])]
    lock = LockedOut("button", 0.0, frozenset())
    handled: list[object] = []
    steps_open = [0, 0]  # now, most ever (a step inside a step would make it 2)

    def handle(event):  # noqa: ANN001, ANN202
        steps_open[0] += 1
        steps_open[1] = max(steps_open)
        handled.append(event)
        if event is cards[0]:
            daemon.intake.emit(cards[1])  # a card arriving during a step: it waits for the step
        steps_open[0] -= 1

    daemon.table.handle = handle
    daemon.intake.emit(cards[0])  # no consumer yet (the daemon is starting): queued
    assert handled == [] and daemon.intake.queue.qsize() == 1
    daemon.intake.consumer = asyncio.create_task(daemon.intake.consume())
    await asyncio.sleep(0.01)
    assert handled == [cards[0], cards[1]] and daemon.intake.queue.empty()
    daemon.intake.emit(cards[2])  # the table waits: handled now, inside the emit
    assert handled[-1] is cards[2] and daemon.intake.queue.empty()
    gpio = threading.Thread(target=daemon.intake.emit, args=(lock,))
    gpio.start()
    gpio.join()  # the lock waits for the loop to hand it over
    daemon.intake.emit(cards[3])  # behind it: queued after it, not decided first
    assert handled[-1] is cards[2] and daemon.intake.queue.qsize() == 2
    await asyncio.sleep(0.01)
    assert handled == [cards[0], cards[1], cards[2], lock, cards[3]]
    # A thread's event the loop hands over to a waiting table: handled in the hand-over,
    # before the consumer (woken through the queue) could have run.
    again = LockedOut("button", 1.0, frozenset())
    gpio = threading.Thread(target=daemon.intake.emit, args=(again,))
    gpio.start()
    gpio.join()
    await asyncio.sleep(0)  # the hand-over was scheduled first: it has run, nothing else
    assert handled[-1] is again and daemon.intake.queue.empty()
    assert steps_open == [0, 1]
    assert daemon.store.events(kind="internal_error") == []
    daemon.intake.consumer.cancel()
    daemon.store.close()


def test_the_young_garbage_is_collected_between_rounds_not_in_a_card_step(tmp_path):
    """Python's collector runs by itself only after GC_YOUNG_LIMIT allocations; the daemon
    collects the young generations when a step leaves the table where no card is expected
    (a round has ended), not while a round is dealt, and every GC_FULL_AFTER times the old
    generation too."""
    import gc
    import weakref

    from controller.collector import GC_BETWEEN_ROUNDS, GC_FULL_AFTER
    from controller.table.machine import TableState

    config = config_for(tmp_path)
    initialise(config)
    daemon = Daemon(config, devices={"shoe": StandInDevice("shoe")})

    class Node:
        pass

    def garbage() -> weakref.ref:
        first, second = Node(), Node()
        first.other, second.other = second, first  # a cycle: only the collector frees it
        return weakref.ref(first)

    kept: list[list[Node]] = []  # the count is of objects allocated and still alive
    enabled = gc.isenabled()
    gc.disable()  # only the daemon's own collection may free the cycle here
    try:
        for state, freed in ((TableState.DEALING, False), (TableState.BETTING_OPEN, True)):
            daemon.table.machine.set_state(state)
            gc.collect()
            cycle = garbage()
            kept.append([Node() for _ in range(GC_BETWEEN_ROUNDS)])  # allocations since
            daemon.collector.between_rounds(daemon.table.state)
            assert (cycle() is None) is freed, state
        # Tenth time: the old generation too (a cycle that outlived young collections).
        held = [Node(), Node()]
        held[0].other, held[1].other = held[1], held[0]
        old = weakref.ref(held[0])
        gc.collect(1)  # still reachable: moved to the oldest generation
        del held
        gc.collect(1)  # unreachable now, but a young collection does not look there
        assert old() is not None
        for _ in range(GC_FULL_AFTER):
            kept.append([Node() for _ in range(GC_BETWEEN_ROUNDS)])
            daemon.collector.between_rounds(daemon.table.state)
        assert old() is None
    finally:
        if enabled:
            gc.enable()
    daemon.store.close()


async def test_status_names_a_configuration_given_relative_by_its_absolute_path(tmp_path,
                                                                                monkeypatch):
    """`tablectl support-bundle` reads the configuration status names, from wherever the
    technician runs it."""
    monkeypatch.chdir(CONFIG.parents[1])
    config = load_config(Path("config") / CONFIG.name,
                         [f"store.path={tmp_path / 'table.sqlite'}",
                          f"control.socket={tmp_path / 'control.sock'}"])
    assert config.source == "config/simulated-table.toml"
    async with running(config) as client:
        assert (await client.call("status"))["config"] == str(CONFIG)
