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
from typing import Any

from controller.cli.arg_types import seconds, whole
from controller.cli.daemon_call import supervisor_arguments
from controller.cli.device_tests import (
    SHOE_TEST_TIMEOUT_S, SHUFFLER_TEST_TIMEOUT_S, cmd_test_shoe, cmd_test_shuffler,
)
from controller.cli.event_commands import cmd_events, cmd_events_verify
from controller.cli.money_commands import (
    cmd_fault_acknowledge, cmd_irregularity_player_third, cmd_jackpot_pending,
    cmd_jackpot_validate, cmd_meters, cmd_rounds,
)
from controller.cli.seat_tests import (
    LOCKOUT_TEST_TIMEOUT_S, SENSOR_TEST_TIMEOUT_S, cmd_test_lights, cmd_test_lockout,
    cmd_test_sensors,
)
from controller.cli.status_view import cmd_devices, cmd_status
from controller.config import MAX_SEATS

# A guided test waits up to this long for the technician (a sensor round of a whole table,
# a batch through the shuffler): a day at most, and nan, inf or a negative wait not at all.
TEST_SECONDS = seconds(0.1, 86_400)


def _timeout(default_s: float) -> str:
    return f"how long the test waits, in seconds (0.1 to 86400; default {default_s:g})"


def register(subparsers: Any) -> None:
    """Add the daemon-facing subcommands to tablectl's parser."""
    conn = argparse.ArgumentParser(add_help=False)
    # SUPPRESS: a subcommand's default must not overwrite a value given before it
    # (`tablectl events --socket X verify`), so absent options stay absent; see socket_path().
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
    t.add_argument("--cards", type=whole(0, 10_000, "a number of cards, 0 for no limit"),
                   default=0, metavar="N",
                   help="stop after N cards (default: until Ctrl-C or --timeout)")
    t.add_argument("--timeout", type=TEST_SECONDS, default=SHOE_TEST_TIMEOUT_S, metavar="S",
                   help=_timeout(SHOE_TEST_TIMEOUT_S))
    t.set_defaults(handler=cmd_test_shoe)
    t = tests.add_parser("shuffler", parents=[read],
                         help="self-test; with --shuffle, count and verify a batch")
    t.add_argument("--shuffle", metavar="BACK", choices=["red", "blue", "green", "black"],
                   help="shuffle, count and verify the batch with this back colour (red, "
                        "blue, green or black; when the table is opening or at the end of a "
                        "shoe, or in device_fault after a fault stopped a shuffle, if a "
                        "verified shuffle ends every fault holding the table; needs the "
                        "dealer role too)")
    t.add_argument("--timeout", type=TEST_SECONDS, default=SHUFFLER_TEST_TIMEOUT_S,
                   metavar="S", help=_timeout(SHUFFLER_TEST_TIMEOUT_S))
    t.set_defaults(handler=cmd_test_shuffler)
    t = tests.add_parser("sensors", parents=[read],
                         help="show every seat's sensor live while you touch each spot")
    t.add_argument("--seats", type=whole(1, MAX_SEATS, "a number of seats"), default=None,
                   metavar="N",
                   help="number of seats (default: the table's, as the daemon reports it, "
                        "else 14)")
    t.add_argument("--timeout", type=TEST_SECONDS, default=SENSOR_TEST_TIMEOUT_S, metavar="S",
                   help=_timeout(SENSOR_TEST_TIMEOUT_S))
    t.set_defaults(handler=cmd_test_sensors)
    t = tests.add_parser("lockout", parents=[read], help="self-test, then press the button")
    t.add_argument("--timeout", type=TEST_SECONDS, default=LOCKOUT_TEST_TIMEOUT_S, metavar="S",
                   help=_timeout(LOCKOUT_TEST_TIMEOUT_S))
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
    v.add_argument("award_id", metavar="AWARD_ID", type=whole(1, 10**12, "an award id"),
                   help="the award's number, as the win light's event or 'tablectl jackpot "
                        "pending' shows")
    supervisor_arguments(v)
    v.set_defaults(handler=cmd_jackpot_validate)

    fa = subparsers.add_parser("fault", help="faults that need a floor supervisor")
    fas = fa.add_subparsers(dest="fault_action", metavar="ACTION")
    fas.required = True
    ack = fas.add_parser("acknowledge", parents=[read],
                         help="a supervisor's ruling on the faults holding the table",
                         description="Record a floor supervisor's ruling on the faults holding "
                                     "the table (device_fault only): every fault a ruling can "
                                     "end is cleared (a misread card, a wrong batch, a shuffle "
                                     "to redo: docs/faults.md), each fault that still holds "
                                     "is named with what clears it, and the new status is "
                                     "shown (exit as for status). Once no fault holds the "
                                     "table resumes; a round a misread card was part of is "
                                     "then void. Needs the supervisor's name and PIN.")
    supervisor_arguments(ack)
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
    supervisor_arguments(p3)
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
