"""tablectl subcommands that talk to the running daemon: the field technician's tools.

status, devices, test (shoe | shuffler | sensors | lockout | lights), rounds, meters,
jackpot validate, events (list, --follow, --export) and events verify (through the
daemon, or offline from the SQLite file with --store when the daemon is down).

Every command that talks to the daemon takes --socket; every read command takes
--json. Exit codes are the constants of controller.cli.exitcodes, documented in
docs/technician-guide.md.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import getpass
import json
import os
import re
import shutil
import sys
import tempfile
import textwrap
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from controller.cli import exitcodes
from controller.cli.client import (
    Daemon, DaemonUnavailable, EventFeed, UnsupportedCommand, default_socket,
)
from controller.cli.storefile import copy_store, not_a_table_store
from controller.cli.output import (
    ProgressBar, colour_enabled, duration, fit, generic, key_values, money, paint, print_json,
    record_width, table, terminal_width, when, with_progress, wrap,
)
from controller.control import ControlError
from controller.events import KINDS, SHOE_CARD_KINDS

# How long the guided tests wait for the technician by default. A technician walks round
# a 14-seat table touching each spot; two minutes is generous without hanging a script.
SENSOR_TEST_TIMEOUT_S = 120.0
LOCKOUT_TEST_TIMEOUT_S = 30.0
SHOE_TEST_TIMEOUT_S = 60.0
# An 8-deck batch takes a real shuffler about 90 s to shuffle, count and verify.
SHUFFLER_TEST_TIMEOUT_S = 300.0
POLL_S = 0.2  # polling `devices` for counters the daemon does not publish as events

# The daemon's device name behind each guided test.
TEST_DEVICES = {"shoe": "shoe", "shuffler": "shuffler", "sensors": "seats", "lockout": "seats",
                "lights": "seats"}

# What the technician should do for each table state that needs attention.
OUT_OF_ORDER_ACTION = ("do not play: the event log or the database failed its integrity "
                       "check. Run 'tablectl events verify' and call the floor supervisor and "
                       "the vendor; the table stays out of order until the store is restored")

_REFUSAL_CODES = {"refused", "unauthorised", "forbidden"}


# --- argument parsing ------------------------------------------------------------------


def register(subparsers: Any) -> None:
    """Add the daemon-facing subcommands to tablectl's parser."""
    conn = argparse.ArgumentParser(add_help=False)
    # SUPPRESS: a subcommand's default must not overwrite a value given before it
    # (`tablectl events --socket X verify`), so absent options stay absent; see _socket().
    conn.add_argument("--socket", default=argparse.SUPPRESS, metavar="PATH",
                      help="tabled's control socket (default: $TABLECTL_SOCKET or "
                           "/run/tabled/control.sock)")
    read = argparse.ArgumentParser(add_help=False, parents=[conn])
    read.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                      help="machine-readable JSON output")

    p = subparsers.add_parser("status", parents=[read], help="table state, shoe, round, fault",
                              description="The table's state, game, shoe position, round in "
                                          "progress and any fault with the action to take. "
                                          "Exit 4 in device_fault, 5 when out of order.")
    p.set_defaults(handler=cmd_status)

    p = subparsers.add_parser("devices", parents=[read], help="each device's link and firmware",
                              description="Link state, port, serial number, firmware, uptime "
                                          "and link counters of every device. Exit 4 if any "
                                          "device is not up.")
    p.set_defaults(handler=cmd_devices)

    test = subparsers.add_parser("test", help="guided device self-tests",
                                 description="Guided self-tests; exit 1 when a test fails.")
    tests = test.add_subparsers(dest="test_device", metavar="DEVICE")
    tests.required = True
    t = tests.add_parser("shoe", parents=[read], help="self-test, then show cards as they are read")
    t.add_argument("--cards", type=int, default=0, metavar="N",
                   help="stop after N cards (default: until Ctrl-C or --timeout)")
    t.add_argument("--timeout", type=float, default=SHOE_TEST_TIMEOUT_S, metavar="S")
    t.set_defaults(handler=cmd_test_shoe)
    t = tests.add_parser("shuffler", parents=[read],
                         help="self-test; with --shuffle, count and verify a batch")
    t.add_argument("--shuffle", metavar="BACK", choices=["red", "blue", "green", "black"],
                   help="shuffle, count and verify the batch with this back colour (only when "
                        "the table is opening or at the end of a shoe)")
    t.add_argument("--timeout", type=float, default=SHUFFLER_TEST_TIMEOUT_S, metavar="S")
    t.set_defaults(handler=cmd_test_shuffler)
    t = tests.add_parser("sensors", parents=[read],
                         help="show every seat's sensor live while you touch each spot")
    t.add_argument("--seats", type=int, default=None, metavar="N",
                   help="number of seats (default: from the daemon's status, else 14)")
    t.add_argument("--timeout", type=float, default=SENSOR_TEST_TIMEOUT_S, metavar="S")
    t.set_defaults(handler=cmd_test_sensors)
    t = tests.add_parser("lockout", parents=[read], help="self-test, then press the button")
    t.add_argument("--timeout", type=float, default=LOCKOUT_TEST_TIMEOUT_S, metavar="S")
    t.set_defaults(handler=cmd_test_lockout)
    t = tests.add_parser("lights", parents=[read],
                         help="run a light pattern and confirm what you see")
    t.add_argument("--yes", action="store_true",
                   help="do not ask; assume the lights were seen (non-interactive use)")
    t.set_defaults(handler=cmd_test_lights)

    p = subparsers.add_parser("rounds", parents=[read], help="game recall of the last rounds",
                              description="The last rounds with their cards, totals, wagers "
                                          "and settlements.")
    p.add_argument("--last", type=int, default=10, metavar="N", help="how many (default 10)")
    p.set_defaults(handler=cmd_rounds)

    p = subparsers.add_parser("meters", parents=[read], help="progressive meters")
    p.set_defaults(handler=cmd_meters)

    jp = subparsers.add_parser("jackpot", help="progressive jackpot awards")
    jps = jp.add_subparsers(dest="jackpot_action", metavar="ACTION")
    jps.required = True
    pend = jps.add_parser("pending", parents=[read], help="awards awaiting validation",
                          description="Progressive awards hit but not yet validated and paid.")
    pend.set_defaults(handler=cmd_jackpot_pending)
    v = jps.add_parser("validate", parents=[read], help="a supervisor validates an award",
                       description="Validate a progressive award; needs a floor supervisor's "
                                   "name and PIN (prompted, or one line on stdin).")
    v.add_argument("award_id", metavar="AWARD_ID", type=int,
                   help="the award's number, as the win light's event or 'tablectl meters' shows")
    _supervisor_arguments(v)
    v.set_defaults(handler=cmd_jackpot_validate)

    fa = subparsers.add_parser("fault", help="faults that need a floor supervisor")
    fas = fa.add_subparsers(dest="fault_action", metavar="ACTION")
    fas.required = True
    ack = fas.add_parser("acknowledge", parents=[read],
                         help="a supervisor's ruling on a fault no device clears (misread)",
                         description="Record a floor supervisor's acknowledgement of the "
                                     "table's fault (a misread card, a wrong batch): the round "
                                     "in play is void and the table resumes. Needs the "
                                     "supervisor's name and PIN.")
    _supervisor_arguments(ack)
    ack.set_defaults(handler=cmd_fault_acknowledge)

    ir = subparsers.add_parser("irregularity", help="a floor supervisor's 631a.15 declaration")
    irs = ir.add_subparsers(dest="irregularity_action", metavar="ACTION")
    irs.required = True
    p3 = irs.add_parser("player-third", parents=[read],
                        help="the last card was a Player third card dealt in error and shown",
                        description="Declare that the last card out of the shoe was a third "
                                    "card dealt to the Player's Hand in error and disclosed "
                                    "(631a.15(c)). The table applies the Rules Submission's "
                                    "procedure (game.irregularities.disclosed_player_third) or "
                                    "says why the card cannot be one. Needs the supervisor's "
                                    "name and PIN.")
    _supervisor_arguments(p3)
    p3.set_defaults(handler=cmd_irregularity_player_third)

    ev = subparsers.add_parser("events", parents=[read], help="the event log; 'events verify'",
                               description="List, follow or export the event log; "
                                           "'tablectl events verify' checks its hash chain.")
    ev.add_argument("--follow", "-f", action="store_true", help="keep printing new events")
    ev.add_argument("--device", metavar="D", help="only this device (shoe, shuffler, seats, ...)")
    ev.add_argument("--severity", metavar="S", help="only this severity (info, warning, error, "
                                                    "critical)")
    ev.add_argument("--since", metavar="ISO-TIME",
                    help="only from this time: 2026-11-21T20:00:00Z, or 10m / 2h / 1d ago")
    ev.add_argument("--kind", metavar="K", help="only this kind (card, device_fault, ...)")
    ev.add_argument("--limit", type=int, default=50, metavar="N",
                    help="the last N matching entries (default 50)")
    ev.add_argument("--export", metavar="FILE",
                    help="also write the entries to FILE as JSON lines (with their hashes)")
    ev.set_defaults(handler=cmd_events)
    evs = ev.add_subparsers(dest="events_action", metavar="ACTION")
    vf = evs.add_parser("verify", parents=[read], help="the critical-memory check: the event "
                        "log's MAC chain, the sealed tables and the anchor",
                        description="Run the daemon's boot check again (the log from the last "
                                    "full check on; --full: every entry), through the daemon, or "
                                    "offline from the store file with --store (as the daemon's "
                                    "user: it needs the key; offline every entry is checked). "
                                    "Exit 5 if anything fails.")
    vf.add_argument("--full", action="store_true",
                    help="recompute every entry's MAC, not only those since the last full check "
                         "(always so with --store)")
    vf.add_argument("--store", metavar="PATH",
                    help="check this SQLite store file directly (the daemon may be down)")
    vf.add_argument("--critical-dir", metavar="DIR",
                    help="with --store: the key and anchor (default: beside the store, "
                         "<name>.critical)")
    vf.set_defaults(handler=cmd_events_verify)


# --- running a command against the daemon ---------------------------------------------------


def _socket(args: argparse.Namespace) -> str:
    return getattr(args, "socket", None) or default_socket()


def _json(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "json", False))


def _run(args: argparse.Namespace, body: Callable[[Daemon], Awaitable[int]]) -> int:
    """Connect, run `body`, and turn every way of failing into a message and an exit code."""

    async def go() -> int:
        async with Daemon(_socket(args)) as daemon:
            return await body(daemon)

    try:
        return asyncio.run(go())
    except DaemonUnavailable as exc:
        print(fit(exc.explain()), file=sys.stderr)
        _json_error(args, str(exc), exc.reason, socket=exc.path)
        return exitcodes.DAEMON_NOT_RUNNING
    except UnsupportedCommand as exc:
        print(fit(f"tablectl: {exc}"), file=sys.stderr)
        _json_error(args, str(exc), "unsupported")
        return exitcodes.UNSUPPORTED
    except ControlError as exc:
        # bad_request: the daemon, which owns what is valid (an event kind, a device), says
        # what was wrong and what is allowed; to the technician that is a bad argument.
        print(wrap(f"tablectl: the daemon refused: {exc} ({exc.code})", hanging="  "),
              file=sys.stderr)
        _json_error(args, str(exc), exc.code)
        if exc.code == "bad_request":
            return exitcodes.BAD_ARGUMENTS
        return exitcodes.REFUSED if exc.code in _REFUSAL_CODES else exitcodes.FAILURE
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        _json_error(args, "interrupted (Ctrl-C)", "interrupted")
        return exitcodes.INTERRUPTED


def _json_error(args: argparse.Namespace, message: str, reason: str, **extra: Any) -> None:
    """With --json, a failure is a JSON document on stdout too: a script reading stdout
    must not be left with nothing to parse. The human text stays on stderr."""
    if _json(args):
        print_json({"ok": False, "error": message, "reason": reason, **extra})


def _emit_json(args: argparse.Namespace, obj: Any) -> bool:
    """Print `obj` as JSON if --json was given; returns whether it did."""
    if _json(args):
        print_json(obj)
        return True
    return False


# --- status ----------------------------------------------------------------------------------


_STATE_STYLE = {"device_fault": ("red", "bold"), "out_of_order": ("red", "bold"),
                "closed": ("dim",), "betting_open": ("green",)}


def status_exit_code(status: Mapping[str, Any]) -> int:
    """DEVICE_FAULT in device_fault, INTEGRITY_FAILURE when out of order, else OK."""
    state = status.get("state")
    if state == "out_of_order":
        return exitcodes.INTEGRITY_FAILURE
    if state == "device_fault":
        return exitcodes.DEVICE_FAULT
    return exitcodes.OK


_LABEL_WIDTH = 17  # one value column for every block of `status`

# What the table waits for in each state where play cannot go on by itself: a technician
# at a silent table must see whether it waits for a person or for a device.
_WAITING_FOR = {
    "closed": "the table to be opened (the pit's 'open' command)",
    "opening": "the decks to be inspected and a shuffle to be started",
    "shuffling": "the shuffler to finish shuffling, counting and verifying the batch "
                 "(a real shuffler takes about 90 s; 'tablectl test shuffler' shows its count)",
    "cut": "the dealer: offer the cut, insert the cover cards and load the shoe (the shoe "
           "reports it when the cards are in; then the first card is burned)",
    "burn": "the first card to be drawn and exposed, and the burn cards",
    "betting_open": "wagers, then 'no more bets' (the dealer's lock-out button)",
    "no_more_bets": "the first card from the shoe",
    "end_of_shoe": "a new shoe: shuffle the next batch",
}


def _history_check(check: Any) -> str | None:
    """The start's check of the whole history (docs/architecture.md, "Critical memory")."""
    if not isinstance(check, Mapping):
        return None
    state = str(check.get("state", "?"))
    if state == "passed":
        return f"passed ({check.get('entries')} entries in {check.get('seconds')} s)"
    if state == "running":
        return "running: nothing is settled and the table does not open until it passes"
    return state if state != "failed" else "FAILED (see OUT OF ORDER below)"


def _software(check: Any) -> str | None:
    """The start's check of the program against the release's manifest (controller/software.py)."""
    if not isinstance(check, Mapping):
        return None
    release = check.get("release") or "no release"
    if check.get("verified"):
        return f"{release}, verified ({check.get('files')} files)"
    return f"{release}, NOT VERIFIED ({check.get('mode')}): {check.get('detail')}"


def render_status(s: Mapping[str, Any]) -> str:
    """The human view of the daemon's `status` result, wrapped to the terminal."""
    width = terminal_width()
    state = str(s.get("state", "?"))
    head = (f"Table {s.get('table_id', '?')}: "
            + paint(state.replace("_", " ").upper(), *_STATE_STYLE.get(state, ("bold",))))
    game = s.get("game")
    if s.get("variant"):
        game = f"{game} ({s['variant']})"
    lines = [head, key_values([("waiting for", _WAITING_FOR.get(state)),
                               ("game", game), ("configuration", s.get("config")),
                               ("daemon version", s.get("version")),
                               ("software", _software(s.get("software"))),
                               ("daemon uptime", duration(s.get("uptime_s"))
                                if s.get("uptime_s") is not None else None),
                               ("history check", _history_check(s.get("history_check")))],
                              "  ", _LABEL_WIDTH, wrap_to=width)]
    shoe = s.get("shoe") or {}
    if shoe.get("shoe_no"):
        cover = "passed" if shoe.get("cover_card_seen") else "not yet"
        if shoe.get("cover_card_misplaced"):  # 631a.5(d), 681a.5(d): docs/rulings.md C22
            cover = f"MISPLACED: {shoe['cover_card_misplaced']}"
        last = "announced" if shoe.get("last_hand") else "not yet"
        lines.append(f"Shoe {shoe['shoe_no']}:")
        lines.append(key_values([
            ("cards dealt", shoe.get("cards_drawn")), ("cards left", shoe.get("cards_left")),
            ("cover card", cover), ("last hand", last),
            ("rounds this shoe", shoe.get("rounds"))], "  ", _LABEL_WIDTH, wrap_to=width))
    else:
        lines.append("Shoe: none loaded")
    batches = s.get("batches")
    if not isinstance(batches, Mapping) and (s.get("batch_in_play") or s.get("batch_in_shuffler")):
        batches = {"in_play": s.get("batch_in_play"), "in_shuffler": s.get("batch_in_shuffler")}
    if isinstance(batches, Mapping):
        lines.append("Batches:")
        lines.append(key_values([("in play", batches.get("in_play")),
                                 ("in the shuffler", batches.get("in_shuffler"))],
                                "  ", _LABEL_WIDTH, wrap_to=width))
    rnd = s.get("round") or {}
    if rnd.get("round_id") is not None:
        wagers = rnd.get("wagers") or []
        total = sum(int(w.get("amount_cents", 0)) for w in wagers)
        lines.append(f"Round in progress: round {rnd.get('round_no')} (id {rnd['round_id']})")
        lines.append(key_values([("next card", rnd.get("next")),
                                 ("wagers", f"{len(wagers)} totalling {money(total)}")],
                                "  ", _LABEL_WIDTH, wrap_to=width))
    elif rnd.get("wagers"):
        wagers = rnd["wagers"]
        total = sum(int(w.get("amount_cents", 0)) for w in wagers)
        lines.append(f"Betting: {len(wagers)} wagers totalling {money(total)}")
    else:
        lines.append("Round in progress: none")
    witness = s.get("witness")
    if isinstance(witness, Mapping):
        lines.append(_witness_line(witness, width))
    fault = s.get("fault")
    if fault:
        lines.append(paint(wrap(f"FAULT: {fault.get('device')}: {fault.get('detail')} "
                                f"[{fault.get('code')}]", width, hanging="  "), "red", "bold"))
        lines.append(action_lines(fault.get("action"), width))
    if s.get("out_of_order"):
        lines.append(paint(wrap(f"OUT OF ORDER: {s['out_of_order']}", width, hanging="  "),
                           "red", "bold"))
        lines.append(action_lines(OUT_OF_ORDER_ACTION, width))
    return "\n".join(line for line in lines if line)


def action_lines(action: Any, width: int | None = None) -> str:
    """A fault's `Action:` wrapped to the terminal under its label (the technician reads
    it whole at 3 a.m. on an 80-column console)."""
    return wrap(f"Action: {action}", width, indent="  ", hanging=" " * len("  Action: "))


def _witness_line(w: Mapping[str, Any], width: int | None = None) -> str:
    """The table's witness (controller/witness/): up, down since when, or none at all."""
    link = w.get("link")
    waiting = w.get("pending_heads") or 0
    if link == "up":
        return wrap(f"Witness: up; last witnessed {w.get('last_witnessed') or 'nothing yet'}"
                    + (f"; {waiting} heads being sent" if waiting else ""), width, hanging="  ")
    if link in ("down", "connecting"):
        limit = w.get("max_unwitnessed_minutes")
        return paint(wrap(f"Witness: DOWN for {duration(w.get('unwitnessed_s') or 0)}: "
                          f"{w.get('last_error') or 'not reached yet'}; {waiting} heads kept in "
                          "the outbox" + (f"; new rounds stop after {limit:g} min" if limit
                                          else ""), width, hanging="  "),
                     "yellow", "bold")
    if link == "failed":
        return paint(wrap(f"Witness: FAILED: {w.get('failure')}", width, hanging="  "),
                     "red", "bold")
    return paint(wrap(f"Witness: none, the table is unwitnessed ({w.get('detail')})", width,
                      hanging="  "), "yellow")


def cmd_status(args: argparse.Namespace) -> int:
    async def body(d: Daemon) -> int:
        status = await d.call("status")
        if not _emit_json(args, status):
            print(render_status(status))
        return status_exit_code(status)
    return _run(args, body)


# --- devices ---------------------------------------------------------------------------------

DEVICES_WIDTH = 80  # `devices` fits a serial console or a phone's SSH session

# The link counters a technician compares between visits; the rest are listed below the table.
_MAIN_COUNTERS = (("crc_errors", "CRC"), ("retransmits", "RETX"), ("resyncs", "RESYNC"),
                  ("reconnects", "RECONN"))


# What to do about a device whose link is not up, by link state (drivers/protocols.py).
_LINK_HINTS = {
    "retrying": "check its cable and power; the table reconnects by itself",
    "refused": "wrong firmware or protocol version: install approved firmware or connect the "
               "right device ('tablectl status' shows the action)",
    "connecting": "starting up; if it stays so, check its cable and power",
    "handshaking": "starting up; if it stays so, check its firmware",
    "stopped": "the daemon stopped the device: check 'journalctl -u tabled -n 50'",
}


def _counter(counters: Mapping[str, Any], key: str) -> Any:
    """A counter by name; the drivers prefix the link layer's own counters with 'link_'."""
    return counters.get(key, counters.get("link_" + key))


def render_devices(devices: Sequence[Mapping[str, Any]]) -> str:
    """The human view of the daemon's `devices` result."""
    # Two tables, so each fits an 80-column serial console: who the device is and where,
    # then how its link has behaved. Long ports and versions are shortened in the middle
    # (--json has them whole).
    width = min(DEVICES_WIDTH, shutil.get_terminal_size((DEVICES_WIDTH, 24)).columns)
    identity, link_rows = [], []
    for d in devices:
        link = str(d.get("link"))
        counters = d.get("counters") or {}
        identity.append([
            d.get("device"), paint(link, "green" if link == "up" else "red"), d.get("port"),
            d.get("serial_number") or None, d.get("firmware_version") or None])
        link_rows.append([
            d.get("device"), d.get("protocol_version"),
            duration(d.get("uptime_s")) if d.get("uptime_s") is not None else None,
            *[_counter(counters, key) for key, _ in _MAIN_COUNTERS]])
    out = [table(["DEVICE", "LINK", "PORT", "SERIAL", "FIRMWARE"], identity,
                 max_width=width, shrinkable=(2, 3, 4)),
           "",
           table(["DEVICE", "PROTO", "UPTIME", *[label for _, label in _MAIN_COUNTERS]],
                 link_rows, right=range(1, 7))]
    main_keys = {name for key, _ in _MAIN_COUNTERS for name in (key, "link_" + key)}
    for d in devices:
        others = {k: v for k, v in (d.get("counters") or {}).items()
                  if k not in main_keys and v}
        if others:
            # Wrapped to the terminal: a linked device has a dozen link-layer counters.
            out.append(textwrap.fill(
                ", ".join(f"{k}={v}" for k, v in sorted(others.items())), width=width,
                initial_indent=f"{d.get('device')} counters: ", subsequent_indent="  ",
                break_on_hyphens=False))
    for d in devices:
        if d.get("last_error"):
            out.append(paint(textwrap.fill(f"{d.get('device')} last error: {d['last_error']}",
                                           width=width, subsequent_indent="  "),
                             "red" if d.get("link") != "up" else "yellow"))
    for d in devices:
        link = d.get("link")
        if link != "up":
            label = f"NOT UP: {d.get('device')} ({link})"
            text = textwrap.fill(f"{label} - " + _LINK_HINTS.get(str(link), _LINK_HINTS["retrying"]),
                                 width=width, subsequent_indent="  ")
            out.append(paint(label, "red", "bold") + text[len(label):])
    return "\n".join(out)


def cmd_devices(args: argparse.Namespace) -> int:
    async def body(d: Daemon) -> int:
        devices = await d.call("devices")
        if not _emit_json(args, devices):
            print(render_devices(devices))
        return exitcodes.DEVICE_FAULT if any(x.get("link") != "up" for x in devices) \
            else exitcodes.OK
    return _run(args, body)


# --- guided self-tests ----------------------------------------------------------------------


async def _self_test(d: Daemon, device: str) -> dict[str, Any] | None:
    """Run the daemon's self-test of `device`; None (with a message) if the table has none."""
    try:
        return dict(await with_progress(f"self-test {device}", d.call("self_test", device=device)))
    except ControlError as exc:
        if exc.code == "bad_request" and str(exc).startswith("no device"):
            print(f"this table has no '{device}' device configured ({exc})", file=sys.stderr)
            return None
        raise


def _result_line(result: Mapping[str, Any]) -> str:
    verdict = paint("PASS", "green", "bold") if result["passed"] else paint("FAIL", "red", "bold")
    return f"{result['device']} self-test: {verdict} - {result['detail']}"


async def _events_after_now(d: Daemon, socket: str) -> EventFeed:
    """A feed, on a second connection, of only the events committed from now on."""
    head = await d.call("events", limit=1)
    return await EventFeed(socket, int(head[-1]["seq"]) if head else 0).start()


def cmd_test_shoe(args: argparse.Namespace) -> int:
    """Self-test, then show every card the shoe reads until --cards N, --timeout or Ctrl-C."""

    async def body(d: Daemon) -> int:
        result = await _self_test(d, "shoe")
        if result is None:
            return exitcodes.FAILURE
        cards: list[dict[str, Any]] = []
        if not _json(args):
            print(_result_line(result))
        listened = bool(result["passed"] and (args.cards or not _json(args)))
        if listened:
            # Listen before asking: a card drawn the moment the prompt appears still counts.
            feed = await _events_after_now(d, _socket(args))
            if not _json(args):
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
                    if not _json(args):
                        print(line, flush=True)
            except asyncio.CancelledError:
                pass  # Ctrl-C: asyncio.run cancels us; finish with the count
            finally:
                await feed.close()
        if _json(args):
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
    return _run(args, body)


class _Blank(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return ""


def shoe_event_line(event: Mapping[str, Any]) -> str | None:
    """One line for a shoe-related event, or None if the event is not about the shoe.

    Which events carry a card the shoe read, and what their line says, is the event
    catalogue's (controller/events.py)."""
    kind, p = event.get("kind"), event.get("payload") or {}
    index = p.get("index")
    at = f"#{index + 1:<3}" if isinstance(index, int) else "    "
    if kind in SHOE_CARD_KINDS:
        card = f"{p['card']}  " if p.get("card") else ""
        text = KINDS[str(kind)].shoe_card.format_map(_Blank(p))
        if kind == "card" and p.get("back") is not None:
            text += f" back {p['back']}"
        line = f"  card {at} {card}{text}".rstrip()
        return paint(line, "yellow") if event.get("severity") == "warning" else line
    if kind == "cover_card":
        return f"  cover card after {p.get('index')} cards"
    if kind == "device_fault" and event.get("device") == "shoe":
        return paint(f"  SHOE FAULT: {p.get('detail')} - {p.get('action')}", "red")
    if kind == "device_recovered" and event.get("device") == "shoe":
        return paint("  shoe recovered", "green")
    return None


def cmd_test_shuffler(args: argparse.Namespace) -> int:
    """Self-test; with --shuffle, start a shuffle and follow its count to verification."""

    async def body(d: Daemon) -> int:
        result = await _self_test(d, "shuffler")
        if result is None:
            return exitcodes.FAILURE
        if not _json(args):
            print(_result_line(result))
        if not result["passed"] or not args.shuffle:
            if _json(args):
                print_json(result)
            return exitcodes.OK if result["passed"] else exitcodes.FAILURE
        feed = await _events_after_now(d, _socket(args))
        try:
            await d.call("shuffle", back=args.shuffle)
            outcome = await _follow_shuffle(d, feed, args)
        finally:
            await feed.close()
        if _json(args):
            print_json({**result, "batch": outcome})
        if outcome is None:
            print(f"the shuffler did not report a verified batch within {args.timeout:g} s",
                  file=sys.stderr)
            return exitcodes.FAILURE
        if "fault" in outcome:
            if not _json(args):
                fault = outcome["fault"]
                print(paint(f"SHUFFLER FAULT: {fault.get('detail')} [{fault.get('code')}]",
                            "red", "bold"))
                print(action_lines(fault.get("action")))
            return exitcodes.FAILURE
        if not _json(args):
            print(render_batch(outcome))
        return exitcodes.OK if _batch_ok(outcome) else exitcodes.FAILURE
    return _run(args, body)


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
        result = await _self_test(d, "seats")
        if result is None:
            return exitcodes.FAILURE
        if not _json(args):
            print(_result_line(result))
        status = await d.call("status")
        seats = _seat_count(status, args.seats, str(result.get("detail", "")))
        if status.get("state") == "betting_open" and not _json(args):
            # While betting is open a touch is a wager, and today's daemon records sensor
            # changes only while betting is closed (late_sensor_change).
            print(paint("betting is open: touches now are wagers and may not be shown; run "
                        "this test with the table closed or at the end of a shoe", "yellow"))
        present: dict[int, bool] = {s: False for s in range(1, seats + 1)}
        touched: set[int] = set()
        released: set[int] = set()
        live = not _json(args) and colour_enabled(sys.stdout)
        # Listen before asking: a touch the moment the prompt appears still counts.
        feed = await _events_after_now(d, _socket(args))
        if not _json(args):
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
                            and not _json(args):
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
                if _json(args):
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
        if _json(args):
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
    return _run(args, body)


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
    p = event.get("payload") or {}
    try:
        return int(p["seat"]), bool(p["present"])
    except (KeyError, TypeError, ValueError):
        return None


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
        result = await _self_test(d, "seats")
        if result is None:
            return exitcodes.FAILURE
        # Listen (and read the press counter) before asking for the press.
        before = await _button_presses(d)
        feed = await _events_after_now(d, _socket(args))
        if not _json(args):
            print(_result_line(result))
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
        if _json(args):
            print_json({**result, "button_seen": bool(seen), "evidence": seen or None,
                        "passed": passed})
        elif seen:
            print(paint("lock-out button press seen", "green", "bold") + f" ({seen})")
        else:
            print(paint("no lock-out button press seen", "red", "bold")
                  + " - check the button and its cable (docs/wiring.md)")
        return exitcodes.OK if passed else exitcodes.FAILURE
    return _run(args, body)


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
                    if exc.code == "bad_request" and str(exc).startswith("no device"):
                        continue
                    raise
                ran.append(dict(res))
        if not _json(args):
            for res in ran:
                print(_result_line(res))
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
                    _json_error(args, "no answer: the input is closed", "needs_terminal",
                                tests=ran)
                    return exitcodes.BAD_ARGUMENTS
        ok = passed and bool(confirmed)
        if _json(args):
            print_json({"tests": ran, "confirmed": confirmed, "passed": ok})
        elif passed and not confirmed:
            print(paint("lights NOT confirmed by the technician", "red", "bold")
                  + " - note which light stayed dark; check its LED and cable (docs/wiring.md)")
        elif ok:
            print(paint("lights confirmed", "green", "bold"))
        return exitcodes.OK if ok else exitcodes.FAILURE
    return _run(args, body)


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


# --- rounds, meters, jackpots --------------------------------------------------------------

_WINNER = {"player": "PLAYER wins", "banker": "BANKER wins", "tie": "TIE"}


def render_round(r: Mapping[str, Any]) -> str:
    """One round of game recall: cards in dealing order, totals, result, wagers, settlements."""
    settled = when(r.get("settled_at")) if r.get("settled_at") else "not settled"
    flags = " (simulated, no wagers)" if r.get("simulated") else ""
    lines = [paint(f"Round {r.get('round_no')} of shoe {r.get('shoe_no')} (id {r.get('round_id')})"
                   f"  {str(r.get('state')).upper()}  {settled}{flags}", "bold")]
    cards = r.get("cards") or []
    if cards:
        dealt = [f"{c.get('card')} {str(c.get('hand', '?'))[:1].upper()}" for c in cards]
        lines.append("  cards:  " + "  ".join(dealt))
    result = r.get("result") or {}
    if r.get("state") == "void":
        lines.append(paint(f"  VOID: {result.get('reason', 'no reason recorded')}", "yellow"))
    elif result:
        for hand in ("player", "banker"):
            natural = " natural" if result.get(f"{hand}_natural") else ""
            lines.append(f"  {hand.capitalize():<7} {' '.join(result.get(hand, [])):<11} "
                         f"total {result.get(f'{hand}_total')}{natural}")
        extras = [label for key, label in (("dragon_7", "Dragon 7"), ("panda_8", "Panda 8"))
                  if result.get(key)]
        winner = str(result.get("winner"))
        lines.append("  result: " + _WINNER.get(winner, winner)
                     + (f" ({', '.join(extras)})" if extras else ""))
    settlements = r.get("settlements") or []
    if settlements:
        rows = [[s.get("seat"), s.get("wager"), money(s.get("amount_cents")), s.get("outcome"),
                 money(s.get("win_cents")), money(s.get("vigorish_cents")),
                 money(s.get("net_cents"), sign=True)]
                for s in sorted(settlements, key=lambda s: (s.get("seat", 0), s.get("wager", "")))]
        lines.append(table(["SEAT", "WAGER", "AMOUNT", "OUTCOME", "WIN", "VIG", "NET"], rows,
                           right=[0, 2, 4, 5, 6], indent="  "))
    elif r.get("wagers"):
        rows = [[w.get("seat"), w.get("wager"), money(w.get("amount_cents"))] for w in r["wagers"]]
        lines.append(table(["SEAT", "WAGER", "AMOUNT"], rows, right=[0, 2], indent="  "))
    else:
        lines.append("  no wagers")
    return "\n".join(lines)


def cmd_rounds(args: argparse.Namespace) -> int:
    if not 1 <= args.last <= 100_000:
        print("tablectl: --last must be a whole number 1 to 100000", file=sys.stderr)
        return exitcodes.BAD_ARGUMENTS

    async def body(d: Daemon) -> int:
        rounds = await with_progress("reading rounds", d.call("rounds", limit=args.last))
        if _emit_json(args, rounds):
            return exitcodes.OK
        if not rounds:
            print("no rounds recorded yet")
        print("\n\n".join(render_round(r) for r in rounds))
        return exitcodes.OK
    return _run(args, body)


def render_meters(meters: Sequence[Mapping[str, Any]]) -> str:
    """The progressive system's meters (ProgressiveSystem.meters()) as one table; a shape
    this tablectl does not know is shown generically rather than not at all."""
    if not all(isinstance(m, Mapping) and "progressive" in m for m in meters):
        return generic(list(meters))
    # Two tables, so each fits an 80-column terminal: the meter, then what it has paid.
    meter_rows, paid_rows = [], []
    for m in meters:
        state = "STALE" if m.get("stale") else "ok"
        meter_rows.append([m.get("progressive"), m.get("level"),
                           "linked" if m.get("linked") else "local",
                           money(m.get("amount_cents")) if "amount_cents" in m else "unknown",
                           money(m.get("reset_cents")), f"{m.get('increment_percent', '-')}%",
                           paint(state, "red" if m.get("stale") else "green")])
        paid_rows.append([m.get("progressive"), m.get("level"),
                          money(m.get("pending_awards_cents")), m.get("awards_count"),
                          money(m.get("cumulative_paid_cents")) if "cumulative_paid_cents" in m
                          else None])
    out = [table(["PROGRESSIVE", "LEVEL", "LINK", "AMOUNT", "RESET", "INCR", "STATE"],
                 meter_rows, right=range(3, 6)), "",
           table(["PROGRESSIVE", "LEVEL", "PENDING", "AWARDS", "PAID"], paid_rows,
                 right=range(2, 5))]
    for m in meters:
        bounds = m.get("trigger_range_cents")
        if bounds:
            out.append(fit(f"{m.get('progressive')} {m.get('level')}: must hit by "
                           f"{money(bounds[-1])} (trigger drawn in {money(bounds[0])} to "
                           f"{money(bounds[-1])}, commitment "
                           f"{m.get('trigger_commitment') or '-'})"))
    if any(m.get("stale") for m in meters):
        out.append(paint(fit("STALE: the linked ledger cannot be reached; the amount shown is "
                             "the last one received"), "red"))
    return "\n".join(out)


def cmd_meters(args: argparse.Namespace) -> int:
    async def body(d: Daemon) -> int:
        meters = await d.call("meters")
        if not _emit_json(args, meters):
            print(render_meters(meters) if meters else "no progressive meters at this table")
        return exitcodes.OK
    return _run(args, body)


def render_award(a: Mapping[str, Any]) -> str:
    """One award after validation (ledger.Award as the daemon returns it)."""
    if "amount_cents" not in a:
        return generic(a, "  ")
    text = (f"award {a.get('award_id')}: {a.get('progressive')} {a.get('level')}, "
            f"seat {a.get('seat')}, round {a.get('round_id')}: {money(a.get('amount_cents'))}"
            f"  {str(a.get('state', '')).upper()}")
    details = key_values([("validated by", a.get("validated_by")),
                          ("paid via", a.get("paid_via")), ("pays", a.get("label")),
                          ("section", a.get("section"))], "  ")
    return f"{text}\n{details}" if details else text


def render_awards(awards: Sequence[Mapping[str, Any]]) -> str:
    """Awards awaiting validation, in payment order."""
    if not all(isinstance(a, Mapping) and "award_id" in a for a in awards):
        return generic(list(awards))
    rows = [[a.get("award_id"), a.get("progressive"), a.get("level"), a.get("round_id"),
             a.get("seat"), money(a.get("amount_cents")) if a.get("claimed", True)
             else "awaiting ledger", a.get("state"), a.get("label")]
            for a in sorted(awards, key=lambda a: (a.get("pay_order") or 0, a["award_id"]))]
    return table(["AWARD", "PROGRESSIVE", "LEVEL", "ROUND", "SEAT", "AMOUNT", "STATE", "PAYS"],
                 rows, right=[0, 3, 4, 5])


def cmd_jackpot_pending(args: argparse.Namespace) -> int:
    async def body(d: Daemon) -> int:
        awards = await d.call("awards")
        if not _emit_json(args, awards):
            print(render_awards(awards) if awards else "no awards awaiting validation")
        return exitcodes.OK
    return _run(args, body)


def _supervisor_arguments(parser: argparse.ArgumentParser) -> None:
    """A floor supervisor's name; the PIN is asked for, or read from stdin."""
    parser.add_argument("--supervisor", required=True, metavar="NAME")
    parser.add_argument("--pin-stdin", action="store_true", help="read the PIN from stdin")


def _read_pin(args: argparse.Namespace) -> str | None:
    """The supervisor's PIN: one line of stdin with --pin-stdin, else asked without echo.
    None (after saying why) when there is none."""
    if args.pin_stdin:
        pin = sys.stdin.readline().rstrip("\r\n")
    else:
        try:
            pin = getpass.getpass(f"PIN for supervisor {args.supervisor}: ")
        except (EOFError, KeyboardInterrupt):
            print("\ntablectl: no PIN entered", file=sys.stderr)
            return None
    if not pin:
        print("tablectl: an empty PIN is not accepted", file=sys.stderr)
        return None
    return pin


def _not_accepted(args: argparse.Namespace, what: str) -> int:
    message = (f"supervisor {args.supervisor!r} and that PIN were not accepted; nothing was "
               f"{what}")
    print(f"tablectl: {message}", file=sys.stderr)
    _json_error(args, message, "unauthorised")
    return exitcodes.REFUSED


def cmd_fault_acknowledge(args: argparse.Namespace) -> int:
    def report(status: dict[str, Any]) -> None:
        print(f"fault acknowledged by {args.supervisor}")
        ack = status.get("acknowledgement") or {}
        for fault in ack.get("cleared", []):
            print(f"  cleared: {fault['device']} {fault['code']}")
        for fault in ack.get("still_held", []):  # docs/faults.md: what ends each one
            print(f"  still holding the table: {fault['device']} {fault['code']}: "
                  f"{fault['clears']}")
    return _supervisor_ruling(args, "acknowledge_fault", "acknowledged", report)


def _supervisor_ruling(args: argparse.Namespace, command: str, what: str,
                       report: Callable[[dict[str, Any]], None]) -> int:
    """Send a supervisor's command with name and PIN; print `report` and the new status."""
    pin = _read_pin(args)
    if pin is None:
        _json_error(args, "no supervisor PIN was given", "no_pin")
        return exitcodes.BAD_ARGUMENTS

    async def body(d: Daemon) -> int:
        try:
            status = await d.call(command, auth={"supervisor": args.supervisor, "pin": pin})
        except ControlError as exc:
            if exc.code == "unauthorised":
                return _not_accepted(args, what)
            raise
        if not _emit_json(args, status):
            report(status)
            print(render_status(status))
        return status_exit_code(status)
    return _run(args, body)


def cmd_irregularity_player_third(args: argparse.Namespace) -> int:
    def report(status: dict[str, Any]) -> None:
        ruling = status["ruling"]
        what = "applied" if ruling["changed"] else "already where the table put it"
        print(f"{ruling['card']}: {ruling['decision']}; {what}")
    return _supervisor_ruling(args, "disclosed_player_third", "declared", report)


def cmd_jackpot_validate(args: argparse.Namespace) -> int:
    pin = _read_pin(args)
    if pin is None:
        _json_error(args, "no supervisor PIN was given", "no_pin")
        return exitcodes.BAD_ARGUMENTS

    async def body(d: Daemon) -> int:
        try:
            result = await d.call("validate_award", auth={"supervisor": args.supervisor,
                                                          "pin": pin},
                                  award_id=args.award_id)
        except ControlError as exc:
            if exc.code == "unauthorised":
                return _not_accepted(args, "validated")
            raise
        if not _emit_json(args, result):
            print(f"award {args.award_id} validated by {args.supervisor}")
            if result:
                print(render_award(result))
        return exitcodes.OK
    return _run(args, body)


# --- events ------------------------------------------------------------------------------------

_SEVERITY_STYLE = {"warning": ("yellow",), "error": ("red",), "critical": ("red", "bold")}
_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhd])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_since(text: str, now: float | None = None) -> float:
    """ISO 8601 (a time without an offset is UTC, like the log) or '10m' / '2h' / '1d' ago,
    as seconds since the epoch; ValueError with an example otherwise."""
    relative = _RELATIVE.match(text.strip())
    if relative:
        return (time.time() if now is None else now) - float(relative[1]) * _UNIT_S[relative[2]]
    try:
        stamp = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"--since {text!r}: not a time; use e.g. 2026-11-21T20:00:00Z "
                         "or 30m / 2h / 1d") from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=dt.timezone.utc)
    return stamp.timestamp()


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# A human event stays readable: each value of its payload is shown as compact JSON (a
# settled round's result whole), cut past the first limit (a list says how many items it
# has), and the whole payload past the second; wrapped to the terminal under its header.
# `--json` and `--export` keep every byte.
EVENT_VALUE_CHARS = 240
EVENT_DETAIL_CHARS = 560
EVENT_HANGING = " " * 8  # the detail's next lines, under the time


_BARE = re.compile(r"^[^\s\[\]{},:\"]+$")  # a text that needs no quotes among the values


def readable(value: Any) -> str:
    """A payload value as compact JSON-like text a person reads and a terminal can wrap:
    `{banker: [A♦, 6♦], banker_total: 7, winner: tie}`; texts quoted only when they hold
    a space or a bracket."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {readable(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(readable(v) for v in value) + "]"
    if isinstance(value, str):
        return value if _BARE.match(value) else _compact(value)
    return _compact(value)


def _brief(value: Any) -> str:
    text = value if isinstance(value, str) else readable(value)
    if len(text) <= EVENT_VALUE_CHARS:
        return text
    count = f" ({len(value)} items)" if isinstance(value, list) else ""
    return text[:EVENT_VALUE_CHARS - 1 - len(count)] + "…" + count


def event_line(e: Mapping[str, Any], width: int | None = None) -> str:
    """One log entry: seq, time, severity, device, kind, then its payload's values; with
    `width`, wrapped to it with the payload's next lines indented."""
    payload = e.get("payload") or {}
    detail = " ".join(f"{k}={_brief(v)}" for k, v in payload.items())
    if len(detail) > EVENT_DETAIL_CHARS:
        detail = detail[:EVENT_DETAIL_CHARS - 12].rstrip() + " … (--json)"
    sev = str(e.get("severity"))
    text = (f"{e.get('seq'):>6}  {when(e.get('at'))}  {sev:<8}"
            f"  {str(e.get('device') or '-'):<8}  {e.get('kind')}")
    if e.get("round_id") is not None:
        text += f" [round {e['round_id']}]"
    line = f"{text}  {detail}".rstrip()
    wrapped = line if width is None else wrap(line, width, hanging=EVENT_HANGING)
    # The severity painted after wrapping: escape codes take no columns on the screen.
    return wrapped.replace(f"{sev:<8}", paint(f"{sev:<8}", *_SEVERITY_STYLE.get(sev, ())), 1)


def _matches(e: Mapping[str, Any], args: argparse.Namespace, since: float | None) -> bool:
    return ((args.kind is None or e.get("kind") == args.kind)
            and (args.device is None or e.get("device") == args.device)
            and (args.severity is None or e.get("severity") == args.severity)
            and (since is None or float(e.get("at", 0)) >= since))


def cmd_events(args: argparse.Namespace) -> int:
    if not 1 <= args.limit <= 100_000:
        print("tablectl: --limit must be a whole number 1 to 100000", file=sys.stderr)
        return exitcodes.BAD_ARGUMENTS
    try:
        since = parse_since(args.since) if args.since else None
    except ValueError as exc:
        print(f"tablectl: {exc}", file=sys.stderr)
        return exitcodes.BAD_ARGUMENTS
    export = None
    if args.export:
        try:
            export = open(args.export, "w", encoding="utf-8")  # noqa: SIM115 - closed below
        except OSError as exc:
            print(f"tablectl: cannot write {args.export}: {exc.strerror}", file=sys.stderr)
            return exitcodes.BAD_ARGUMENTS

    def show(e: Mapping[str, Any]) -> None:
        if export is not None:
            export.write(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n")
            export.flush()
        if _json(args):
            # One object per line when following (a stream); a list otherwise.
            print(json.dumps(e, ensure_ascii=False), flush=True)
        else:
            print(event_line(e, record_width()), flush=True)

    async def body(d: Daemon) -> int:
        query: dict[str, Any] = {"limit": args.limit}
        for key in ("kind", "device", "severity"):
            if getattr(args, key) is not None:
                query[key] = getattr(args, key)
        if since is not None:
            query["since"] = since
        events = await with_progress("reading the event log", d.call("events", **query))
        if _json(args) and not args.follow:
            print_json(events)
            if export is not None:
                for e in events:
                    export.write(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n")
        else:
            for e in events:
                show(e)
        if not args.follow:
            if not _json(args):
                print(f"{len(events)} event(s)" + (f" exported to {args.export}"
                                                    if export is not None else ""),
                      file=sys.stderr)
            return exitcodes.OK
        head = await d.call("events", limit=1)
        after = max([int(head[-1]["seq"])] if head else [0])
        try:
            async for e in await d.subscribe(after):
                if _matches(e, args, since):
                    show(e)
        except asyncio.CancelledError:
            return exitcodes.OK  # Ctrl-C ends --follow normally
        print("tablectl: the daemon closed the event stream (it stopped or restarted)",
              file=sys.stderr)
        return exitcodes.DAEMON_NOT_RUNNING

    try:
        return _run(args, body)
    finally:
        if export is not None:
            export.close()


def cmd_events_verify(args: argparse.Namespace) -> int:
    """The critical-memory check through the daemon, or offline from --store."""
    if args.store:
        return _verify_offline(args)

    async def body(d: Daemon) -> int:
        try:
            result = await with_progress("verifying critical memory",
                                         d.call("verify_chain", full=bool(args.full)))
        except ControlError as exc:
            # The daemon reports IntegrityError from its handler as an internal error whose
            # message starts with the exception's name; that is the broken-store answer.
            message = str(exc)
            if message.startswith("IntegrityError:"):
                return _report_broken(args, message.removeprefix("IntegrityError:").strip(),
                                      source=f"daemon on {_socket(args)}")
            raise
        return _report_verified(args, result, "by the daemon", "daemon")
    return _run(args, body)


def _report_verified(args: argparse.Namespace, result: dict[str, Any], where: str,
                     source: str) -> int:
    entries = int(result.get("entries", 0))
    if not _emit_json(args, {"ok": True, **result, "source": source}):
        first = int(result.get("from_seq", 1))
        span = (f" (entries {first} to {result['log_seq']}; the earlier ones passed the last "
                "full check)" if first > 1 and "log_seq" in result else "")
        rows = (f"; {result['state_rows']} sealed rows match"
                if "state_rows" in result else "")
        print(fit(paint("critical memory OK", "green", "bold")
                  + f": {entries} log entries verified {where}{span}{rows}"))
    return exitcodes.OK


def _report_broken(args: argparse.Namespace, detail: str, *, source: str) -> int:
    if not _emit_json(args, {"ok": False, "error": detail, "source": source}):
        print(paint("CRITICAL MEMORY CHECK FAILED", "red", "bold") + f" ({source})")
        print(wrap(detail, indent="  "))
        print(action_lines("the store was edited, damaged, lost or rolled back. Do not play: "
                           "the table is out of order until the store is restored from its "
                           "backup or a supervisor clears critical memory (tabled "
                           "--clear-store); keep the store and its critical-memory directory "
                           "as evidence and call the floor supervisor and the vendor."))
    return exitcodes.INTEGRITY_FAILURE


def _verify_offline(args: argparse.Namespace) -> int:
    """Verify a store file without the daemon. The file is copied first (with its WAL) so
    the check can never change the evidence; the key and anchor are read where they are."""
    from controller.memory.critical import CriticalPaths, IntegrityError, as_mapping, load_key
    from controller.memory.lifecycle import missing_store, verify_file

    source = Path(args.store)
    paths = CriticalPaths.for_store(source, args.critical_dir)
    if not source.is_file():
        if paths.key.exists():  # this table's store is gone: the boot check's own words
            try:
                missing_store(paths, load_key(paths))
            except IntegrityError as exc:
                return _report_broken(args, f"{exc.check}: {exc.detail}", source=str(source))
        print(f"tablectl: no store file at {source}", file=sys.stderr)
        return exitcodes.BAD_ARGUMENTS
    try:
        with tempfile.TemporaryDirectory(prefix="tablectl-verify-") as tmp:
            copy = copy_store(source, Path(tmp))
            refused = not_a_table_store(copy)
            if refused is not None and not paths.key.exists():
                # No key beside it: a wrong path, not this table's store (with its key it is
                # the table's own store, damaged, and the check below says how).
                print(f"tablectl: {refused.replace(str(copy), str(source))}; give the path of "
                      "the table's store (the [store] path in its configuration, e.g. "
                      "/var/lib/tabled/table.sqlite)", file=sys.stderr)
                _json_error(args, refused.replace(str(copy), str(source)), "not_a_table_store")
                return exitcodes.BAD_ARGUMENTS
            key = load_key(paths)
            # Offline it is always the whole history: whoever checks a store without its
            # daemon (a technician after a fault, an auditor) cannot take the checkpoint,
            # which a running daemon moves at every start, as evidence of anything.
            result = as_mapping(verify_file(str(copy), key, paths, full=True,
                                            workers=os.cpu_count() or 1))
    except PermissionError as exc:
        print(f"tablectl: permission denied reading {exc.filename or source}; run as a member "
              "of the tabled group or with sudo", file=sys.stderr)
        return exitcodes.BAD_ARGUMENTS
    except IntegrityError as exc:
        return _report_broken(args, f"{exc.check}: {exc.detail}", source=str(source))
    return _report_verified(args, dict(result), f"in {source}", str(source))
