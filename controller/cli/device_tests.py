"""`tablectl test shoe` and `tablectl test shuffler`: a device's self-test, then what it
reports live; and the pieces every guided test shares."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Mapping
from typing import Any

from controller.cli import exitcodes
from controller.cli.client import Daemon, EventFeed
from controller.cli.output import ProgressBar, fit, paint, print_json, with_progress
from controller.control import ControlError
from controller.events import KINDS, SHOE_CARD_KINDS, decode_event
from controller.events.records import CardDealt, CoverCard, DeviceFaulted
from controller.cli.daemon_call import call_daemon, socket_path, wants_json
from controller.cli.status_view import action_lines

# How long the guided tests wait for the technician by default (the seats' tests:
# controller/cli/seat_tests.py).
SHOE_TEST_TIMEOUT_S = 60.0
# An 8-deck batch takes a real shuffler about 90 s to shuffle, count and verify.
SHUFFLER_TEST_TIMEOUT_S = 300.0
POLL_S = 0.2  # polling `devices` for counters the daemon does not publish as events

# The daemon's device name behind each guided test.
TEST_DEVICES = {"shoe": "shoe", "shuffler": "shuffler", "sensors": "seats", "lockout": "seats",
                "lights": "seats"}


def no_such_device(exc: ControlError) -> bool:
    """The daemon's refusal of a self-test of a device this table has not configured."""
    return exc.code == "bad_request" and str(exc).startswith("no device")


async def device_self_test(d: Daemon, device: str) -> dict[str, Any] | None:
    """Run the daemon's self-test of `device`; None (with a message) if the table has none."""
    try:
        return dict(await with_progress(f"self-test {device}", d.call("self_test", device=device)))
    except ControlError as exc:
        if no_such_device(exc):
            print(f"this table has no '{device}' device configured ({exc})", file=sys.stderr)
            return None
        raise


def result_line(result: Mapping[str, Any]) -> str:
    verdict = paint("PASS", "green", "bold") if result["passed"] else paint("FAIL", "red", "bold")
    return f"{result['device']} self-test: {verdict} - {result['detail']}"


async def events_after_now(d: Daemon, socket: str) -> EventFeed:
    """A feed, on a second connection, of only the events committed from now on."""
    head = await d.call("events", limit=1)
    return await EventFeed(socket, int(head[-1]["seq"]) if head else 0).start()


def cmd_test_shoe(args: argparse.Namespace) -> int:
    """Self-test, then show every card the shoe reads until --cards N, --timeout or Ctrl-C."""

    async def body(d: Daemon) -> int:
        result = await device_self_test(d, "shoe")
        if result is None:
            return exitcodes.FAILURE
        cards: list[dict[str, Any]] = []
        if not wants_json(args):
            print(result_line(result))
        listened = bool(result["passed"] and (args.cards or not wants_json(args)))
        if listened:
            # Listen before asking: a card drawn the moment the prompt appears still counts.
            feed = await events_after_now(d, socket_path(args))
            if not wants_json(args):
                until = f"stops after {args.cards} cards" if args.cards else "Ctrl-C to stop"
                print(fit(f"Draw cards from the shoe; each card it reads is shown here "
                          f"({until}, or after {args.timeout:g} s)."), flush=True)
            try:
                deadline = asyncio.get_running_loop().time() + args.timeout
                while not args.cards or len(cards) < args.cards:
                    event = await feed.next(deadline)
                    if event is None:
                        break
                    line = shoe_event_line(event)
                    if line is None:
                        continue
                    if event["kind"] in SHOE_CARD_KINDS:
                        cards.append({"seq": event["seq"], "kind": event["kind"],
                                      **event["payload"]})
                    if not wants_json(args):
                        print(line, flush=True)
            except asyncio.CancelledError:
                pass  # Ctrl-C: asyncio.run cancels us; finish with the count
            finally:
                await feed.close()
        if wants_json(args):
            print_json({**result, "cards": cards})
        elif cards or args.cards:
            print(f"{len(cards)} card(s) read")
        if not result["passed"]:
            return exitcodes.FAILURE
        if args.cards and len(cards) < args.cards:
            print(f"only {len(cards)} of {args.cards} cards were read before the timeout",
                  file=sys.stderr)
            return exitcodes.FAILURE
        if listened and not cards:
            # Silence is the shoe's most common failure (dirty reader, cable): never a pass.
            print(paint(f"no card was read in {args.timeout:g} s", "red", "bold")
                  + " - draw a card slowly; if none shows, check the shoe's reader window "
                    "and cable ('tablectl devices')", file=sys.stderr)
            return exitcodes.FAILURE
        return exitcodes.OK
    return call_daemon(args, body)


class _Blank(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return ""


def shoe_event_line(event: Mapping[str, Any]) -> str | None:
    """One line for a shoe-related event, or None if the event is not about the shoe.

    Which events carry a card the shoe read, and what their line says, is the event
    catalogue's (controller/events/catalogue.py); each is read as its typed record."""
    kind, device = str(event.get("kind")), event.get("device")
    if kind == "device_recovered" and device == "shoe":
        return paint("  shoe recovered", "green")
    if kind not in SHOE_CARD_KINDS and kind not in ("cover_card", "device_fault"):
        return None
    record = decode_event(event)
    if isinstance(record, CoverCard):
        return f"  cover card after {record.index} cards"
    if isinstance(record, DeviceFaulted):
        return paint(f"  SHOE FAULT: {record.detail} - {record.action}", "red") \
            if device == "shoe" else None
    if record is None:
        return None
    fields = vars(record)
    index = fields.get("index")
    at = f"#{index + 1:<3}" if isinstance(index, int) else "    "
    card = f"{fields['card']}  " if fields.get("card") else ""
    text = KINDS[kind].shoe_card.format_map(_Blank(fields))
    if isinstance(record, CardDealt):
        text += f" back {record.back.name.lower()}"
    line = f"  card {at} {card}{text}".rstrip()
    return paint(line, "yellow") if event.get("severity") == "warning" else line


def cmd_test_shuffler(args: argparse.Namespace) -> int:
    """Self-test; with --shuffle, start a shuffle and follow its count to verification."""

    async def body(d: Daemon) -> int:
        result = await device_self_test(d, "shuffler")
        if result is None:
            return exitcodes.FAILURE
        if not wants_json(args):
            print(result_line(result))
        if not result["passed"] or not args.shuffle:
            if wants_json(args):
                print_json(result)
            return exitcodes.OK if result["passed"] else exitcodes.FAILURE
        feed = await events_after_now(d, socket_path(args))
        try:
            await d.call("shuffle", back=args.shuffle)
            outcome = await _follow_shuffle(d, feed, args)
        finally:
            await feed.close()
        if wants_json(args):
            print_json({**result, "batch": outcome})
        if outcome is None:
            print(f"the shuffler did not report a verified batch within {args.timeout:g} s",
                  file=sys.stderr)
            return exitcodes.FAILURE
        if "fault" in outcome:
            if not wants_json(args):
                fault = outcome["fault"]
                print(paint(f"SHUFFLER FAULT: {fault.get('detail')} [{fault.get('code')}]",
                            "red", "bold"))
                print(action_lines(fault.get("action")))
            return exitcodes.FAILURE
        if not wants_json(args):
            print(render_batch(outcome))
        return exitcodes.OK if _batch_ok(outcome) else exitcodes.FAILURE
    return call_daemon(args, body)


def _batch_ok(batch: Mapping[str, Any]) -> bool:
    return "fault" not in batch and not (batch.get("missing") or batch.get("extra")
                                         or batch.get("duplicates"))


def render_batch(b: Mapping[str, Any]) -> str:
    """The shuffler's count of a batch, and whether it verified."""
    verdict = (paint("VERIFIED", "green", "bold") if _batch_ok(b)
               else paint("NOT VERIFIED", "red", "bold"))
    text = (f"batch {b.get('back')}: {b.get('cards_counted')} cards counted, "
            f"{b.get('missing', 0)} missing, {b.get('extra', 0)} extra, "
            f"{b.get('duplicates', 0)} duplicates - {verdict}")
    if not _batch_ok(b):
        text += "\n" + action_lines("do not use this batch; recount by hand, replace missing "
                                    "or damaged cards and shuffle again (681a.9(c))")
    return text


async def _follow_shuffle(d: Daemon, feed: EventFeed,
                          args: argparse.Namespace) -> dict[str, Any] | None:
    """Wait for shuffle_complete, drawing a progress bar from shuffle_progress events or,
    failing those, from the shuffler's cards_counted/cards_expected health counters."""
    bar = ProgressBar(f"counting {args.shuffle} batch")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + args.timeout
    next_poll = loop.time()
    try:
        while True:
            event = await feed.next(min(deadline, loop.time() + POLL_S))
            if event is not None:
                p = event.get("payload") or {}
                if event["kind"] == "shuffle_progress":
                    bar.update(int(p.get("cards_counted", 0)), p.get("cards_expected"))
                elif event["kind"] == "shuffle_complete":
                    bar.finish()
                    return dict(p)
                elif event["kind"] == "device_fault" and event.get("device") == "shuffler":
                    # A jam or an incomplete cycle ends this shuffle: no count will come.
                    return {"fault": dict(p)}
            if loop.time() >= deadline:
                return None
            if loop.time() >= next_poll:
                next_poll = loop.time() + POLL_S
                for dev in await d.call("devices"):
                    c = dev.get("counters") or {}
                    if dev.get("device") == "shuffler" and "cards_counted" in c:
                        bar.update(int(c["cards_counted"]), c.get("cards_expected"))
                bar.draw()
    finally:
        bar.finish()
