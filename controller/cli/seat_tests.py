"""`tablectl test sensors`, `test lockout` and `test lights`: the guided tests of the
seats' sensors, the lock-out button and the lights, with the technician at the table."""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from controller.cli import exitcodes
from controller.cli.client import Daemon, UnsupportedCommand
from controller.cli.output import colour_enabled, fit, paint, print_json, with_progress
from controller.control import ControlError
from controller.events import decode_event
from controller.events.records import LateSensorChange, SeatSensor
from controller.cli.daemon_call import call_daemon, json_error, socket_path, wants_json
from controller.cli.device_tests import (
    POLL_S, device_self_test, events_after_now, no_such_device, result_line,
)

# How long the guided tests wait for the technician by default. A technician walks round
# a 14-seat table touching each spot; two minutes is generous without hanging a script.
SENSOR_TEST_TIMEOUT_S = 120.0
LOCKOUT_TEST_TIMEOUT_S = 30.0

PINS_NOT_CLAIMED = "GPIO not available"  # the seats' self-test (drivers/seats.py)


def _seat_count(status: Mapping[str, Any], given: int | None, self_test_detail: str) -> int:
    """--seats, else the daemon's status `seats`, else the seat panel's self-test detail
    ("10 seats, LEDs and sensors ok"), else 14 (the most 631a.2(a) allows)."""
    if given:
        return given
    seats = status.get("seats")
    if isinstance(seats, int) and seats > 0:
        return seats
    from_detail = re.match(r"(\d+) seats\b", self_test_detail)
    return int(from_detail[1]) if from_detail else 14


def cmd_test_sensors(args: argparse.Namespace) -> int:
    """Self-test the seat panel, then show every seat's sensor live until each spot has been
    touched (a wager seen and then lifted), --timeout, or Ctrl-C."""

    async def body(d: Daemon) -> int:
        result = await device_self_test(d, "seats")
        if result is None:
            return exitcodes.FAILURE
        if not wants_json(args):
            print(result_line(result))
        if str(result.get("detail", "")).startswith(PINS_NOT_CLAIMED):
            # No sensor can be read through pins the daemon does not hold: asking the
            # technician to touch every spot would only end in "never seen" for all.
            if wants_json(args):
                print_json({**result, "device": result.get("device", "seats")})
            else:
                print(fit("no sensor can be read until the daemon holds the seat pins: fix "
                          "gpio.pin_factory or stop the program holding them, then restart "
                          "the table service"))
            return exitcodes.FAILURE
        status = await d.call("status")
        seats = _seat_count(status, args.seats, str(result.get("detail", "")))
        if status.get("state") == "betting_open" and not wants_json(args):
            # While betting is open a touch is a wager, and today's daemon records sensor
            # changes only while betting is closed (late_sensor_change).
            print(paint("betting is open: touches now are wagers and may not be shown; run "
                        "this test with the table closed or at the end of a shoe", "yellow"))
        present: dict[int, bool] = {s: False for s in range(1, seats + 1)}
        touched: set[int] = set()
        released: set[int] = set()
        live = not wants_json(args) and colour_enabled(sys.stdout)
        # Listen before asking: a touch the moment the prompt appears still counts.
        feed = await events_after_now(d, socket_path(args))
        if not wants_json(args):
            print(fit(f"Touch each seat's progressive spot with a chip, then lift it "
                      f"({seats} seats; Ctrl-C to stop, or after {args.timeout:g} s)."))
            print(sensor_grid(present, touched), flush=True)
        try:
            deadline = asyncio.get_running_loop().time() + args.timeout
            while released < set(present):
                event = await feed.next(deadline)
                if event is None:
                    break
                change = seat_sensor_change(event)
                if change is None:
                    if event["kind"] == "device_fault" and event.get("device") == "seats" \
                            and not wants_json(args):
                        p = event["payload"]
                        print(paint(f"  SENSOR FAULT: {p.get('detail')} - {p.get('action')}",
                                    "red"))
                        if live:  # the grid below the message is the one redrawn next
                            print(sensor_grid(present, touched), flush=True)
                    continue
                seat, is_present = change
                if seat not in present:
                    continue
                present[seat] = is_present
                if is_present:
                    touched.add(seat)
                elif seat in touched:
                    released.add(seat)
                if wants_json(args):
                    continue
                if live:
                    # Redraw the grid in place: two lines up, so the technician sees one table.
                    sys.stdout.write("\x1b[2A\r")
                    print(sensor_grid(present, touched), flush=True)
                else:
                    print(f"  seat {seat:>2}: {'wager present' if is_present else 'clear'}",
                          flush=True)
        except asyncio.CancelledError:
            pass  # Ctrl-C: asyncio.run cancels us; finish with the summary
        finally:
            await feed.close()
        missing = [s for s in present if s not in touched]
        stuck = [s for s in present if present[s]]
        passed = bool(result["passed"]) and not missing and not stuck
        if wants_json(args):
            # `detail` is the verdict of the whole test; the panel's own self-test (which can
            # pass while a sensor never responds) is kept apart under `self_test`.
            print_json({"device": result.get("device", "seats"), "passed": passed,
                        "detail": _sensor_verdict(result, missing, stuck),
                        "self_test": {k: result[k] for k in ("passed", "detail") if k in result},
                        "seats": seats, "touched": sorted(touched), "never_seen": missing,
                        "still_present": stuck})
        else:
            if not live:
                print(sensor_grid(present, touched))
            if missing:
                print(paint(f"seats never seen with a wager: {_ranges(missing)}", "red")
                      + " - check those sensors and their cables (docs/wiring.md)")
            if stuck:
                print(paint(f"seats still reading a wager: {_ranges(stuck)}", "red")
                      + " - lift the chips; if the spot is empty the sensor is stuck")
            if passed:
                print(paint("all seat sensors respond", "green", "bold"))
        return exitcodes.OK if passed else exitcodes.FAILURE
    return call_daemon(args, body)


def _sensor_verdict(self_test: Mapping[str, Any], missing: Sequence[int],
                    stuck: Sequence[int]) -> str:
    """One sentence for the sensors test's result, agreeing with its pass/fail."""
    problems = []
    if not self_test.get("passed"):
        problems.append(f"self-test failed: {self_test.get('detail')}")
    if missing:
        problems.append(f"seats never seen with a wager: {_ranges(missing)}")
    if stuck:
        problems.append(f"seats still reading a wager: {_ranges(stuck)}")
    return "; ".join(problems) if problems else "all seat sensors respond"


def seat_sensor_change(event: Mapping[str, Any]) -> tuple[int, bool] | None:
    """(seat, present) from a sensor event: "seat_sensor" (the diagnostic event we asked the
    daemon for) or "late_sensor_change" (what today's daemon records while betting is closed)."""
    if event.get("kind") not in ("seat_sensor", "late_sensor_change"):
        return None
    record = decode_event(event)
    if not isinstance(record, SeatSensor | LateSensorChange):
        return None
    return record.seat, record.present


def sensor_grid(present: Mapping[int, bool], touched: set[int]) -> str:
    """Two aligned lines: seat numbers, and each seat's state (# wager now, + seen, . not yet)."""
    numbers = " ".join(f"{s:>2}" for s in present)
    marks = []
    for seat, now in present.items():
        mark = "#" if now else ("+" if seat in touched else ".")
        style = ("yellow",) if now else ("green",) if seat in touched else ()
        marks.append(paint(f"{mark:>2}", *style))
    return f"seat   {numbers}\nsensor {' '.join(marks)}"


def _ranges(seats: Sequence[int]) -> str:
    return ", ".join(str(s) for s in seats)


def cmd_test_lockout(args: argparse.Namespace) -> int:
    """Self-test the seat panel, then wait for the technician to press the lock-out button."""

    async def body(d: Daemon) -> int:
        result = await device_self_test(d, "seats")
        if result is None:
            return exitcodes.FAILURE
        # Listen (and read the press counter) before asking for the press.
        before = await _button_presses(d)
        feed = await events_after_now(d, socket_path(args))
        if not wants_json(args):
            print(result_line(result))
            print(fit(f"Press the dealer's lock-out (no more bets) button now "
                      f"(waiting {args.timeout:g} s)."), flush=True)
        seen = ""
        try:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + args.timeout
            while not seen and loop.time() < deadline:
                event = await feed.next(min(deadline, loop.time() + POLL_S))
                if event is not None:
                    p = event.get("payload") or {}
                    if event["kind"] == "lockout_button" or (
                            event["kind"] == "no_more_bets" and p.get("cause") == "button"):
                        seen = f"event {event['kind']} #{event['seq']}"
                presses = await _button_presses(d)
                if not seen and presses is not None and before is not None and presses > before:
                    seen = f"button presses {before} -> {presses}"
        except asyncio.CancelledError:
            pass  # Ctrl-C: asyncio.run cancels us; finish with the summary
        finally:
            await feed.close()
        passed = bool(result["passed"]) and bool(seen)
        if wants_json(args):
            print_json({**result, "button_seen": bool(seen), "evidence": seen or None,
                        "passed": passed})
        elif seen:
            print(paint("lock-out button press seen", "green", "bold") + f" ({seen})")
        else:
            print(paint("no lock-out button press seen", "red", "bold")
                  + " - check the button and its cable (docs/wiring.md)")
        return exitcodes.OK if passed else exitcodes.FAILURE
    return call_daemon(args, body)


async def _button_presses(d: Daemon) -> int | None:
    for dev in await d.call("devices"):
        if dev.get("device") == "seats":
            value = (dev.get("counters") or {}).get("button_presses")
            return int(value) if value is not None else 0
    return None


def cmd_test_lights(args: argparse.Namespace) -> int:
    """Run the daemon's light pattern (or the seat panel's lamp test), then ask the technician
    whether every light lit."""

    async def body(d: Daemon) -> int:
        ran: list[dict[str, Any]] = []
        try:
            ran.append(dict(await with_progress("light pattern", d.call("light_test"))))
            ran[-1].setdefault("device", "lights")
            ran[-1].setdefault("passed", True)
            ran[-1].setdefault("detail", "pattern shown")
        except UnsupportedCommand:
            # Today's daemon: the seat panel's lamp test (each LED on, read back, off) and the
            # display's self-test if it has one; too quick to watch, so say so.
            for device in ("seats", "display"):
                try:
                    res = await d.call("self_test", device=device)
                except ControlError as exc:
                    if no_such_device(exc):
                        continue
                    raise
                ran.append(dict(res))
        if not wants_json(args):
            for res in ran:
                print(result_line(res))
        passed = all(r.get("passed") for r in ran) and bool(ran)
        confirmed: bool | None = None
        if passed:
            if args.yes:
                confirmed = True
            else:
                confirmed = _ask("Did every seat LED (and the win light) light up? [y/n] ")
                if confirmed is None:
                    print("tablectl: 'test lights' asks the technician what they saw and needs "
                          "a terminal to ask on (its input is closed); run it in a terminal, "
                          "or pass --yes after watching the lights", file=sys.stderr)
                    json_error(args, "no answer: the input is closed", "needs_terminal",
                                tests=ran)
                    return exitcodes.BAD_ARGUMENTS
        ok = passed and bool(confirmed)
        if wants_json(args):
            print_json({"tests": ran, "confirmed": confirmed, "passed": ok})
        elif passed and not confirmed:
            print(paint("lights NOT confirmed by the technician", "red", "bold")
                  + " - note which light stayed dark; check its LED and cable (docs/wiring.md)")
        elif ok:
            print(paint("lights confirmed", "green", "bold"))
        return exitcodes.OK if ok else exitcodes.FAILURE
    return call_daemon(args, body)


def _ask(question: str) -> bool | None:
    """A y/n question on the terminal; None when the input is closed (no one to answer)."""
    while True:
        # The question goes to stderr so that stdout stays clean (--json).
        print(question, end="", file=sys.stderr, flush=True)
        line = sys.stdin.readline()
        if not line:
            print(file=sys.stderr)
            return None
        answer = line.strip().lower()
        if not sys.stdin.isatty():
            print(answer, file=sys.stderr)  # a piped answer is not echoed; show it
        if answer in ("y", "yes"):
            return True
        if answer in ("n", "no"):
            return False
