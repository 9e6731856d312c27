"""`tablectl conformance shoe|shuffler|display PORT-OR-URL`: the device vendor's conformance kit.

Runs the device conformance suite of firmware_bridge.conformance against a device
on a serial port (any pyserial URL: /dev/ttyUSB0, a pty, socket://host:port) or on
USB (``usb:VID:PID``, the shuffler), at the device's baud rate, and writes the
report a vendor can send: JSON and plain text (docs/conformance.md).  The table's
daemon must not hold the port meanwhile: the suite opens it exclusively.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from controller.cli import exitcodes

KINDS = ("shoe", "shuffler", "display")
BAUD_RATES = (9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "conformance", help="check a shoe, shuffler or display against the wire protocol",
        description="Run the device conformance suite (docs/protocol.md 1.2) against a device "
                    "and write a report for its vendor (JSON and text). Stop the table's "
                    "daemon first, or unplug the device from it: the port is opened exclusively.")
    p.add_argument("kind", choices=KINDS, help="what the device is")
    p.add_argument("port", metavar="PORT-OR-URL",
                   help="serial port or pyserial URL (/dev/ttyUSB0, socket://host:port), or "
                        "usb:VID:PID (hex) for a USB bulk device such as the shuffler")
    p.add_argument("--baud", type=int, default=115200, metavar="N",
                   help="the device's baud rate (default 115200; the timing checks use the "
                        "protocol's constants for this rate)")
    p.add_argument("--slack", type=float, default=None, metavar="SECONDS",
                   help="measurement slack added to the upper timing bounds (default 0.05 s); the "
                        "report prints it. Lower bounds (MUST NOT before) never widen")
    p.add_argument("--output", "-o", metavar="DIR", default=".",
                   help="folder for the report files (default: here)")
    p.add_argument("--interactive", action="store_true",
                   help="ask the operator for physical actions (e.g. open the shoe's lid) so the "
                        "fault re-report and event checks can run")
    p.add_argument("--fault-active", action="store_true",
                   help="a fault is already active on the device (e.g. its lid is open): run the "
                        "fault re-report check without asking")
    p.set_defaults(handler=cmd_conformance)


def _operator(args: argparse.Namespace) -> Any:
    prompts = {
        "fault": {"shoe": "open the shoe's lid and leave it open",
                  "shuffler": "open the shuffler's door and leave it open",
                  "display": "unplug one win-light lamp (or otherwise raise a lamp fault)"},
        "event": {"shoe": "deal one card out of the shoe"},
        "cover": {"shoe": "deal until the cover card leaves the shoe (place it near the top first)"},
    }

    def ask(action: str) -> bool:
        if action == "fault" and args.fault_active:
            return True
        text = prompts.get(action, {}).get(args.kind)
        if not args.interactive or text is None:
            return False
        print(f"\n>>> Please {text}, then press Enter (or type 'skip').", flush=True)
        line = sys.stdin.readline()
        # end of input (no operator at the keyboard) is a step not taken, like 'skip'; the
        # suite also checks the step took effect (a Fault, a CardDrawn) before judging it
        return line != "" and line.strip().lower() != "skip"

    return ask


def _open_wire(args: argparse.Namespace) -> Any:
    from firmware_bridge.conformance.wire import SerialWire, UsbWire

    if args.port.startswith("usb:"):
        try:
            vid, pid = (int(part, 16) for part in args.port[4:].split(":"))
        except ValueError:
            raise ValueError(f"USB device {args.port!r}: expected usb:VID:PID in hex, "
                             "e.g. usb:1209:0001") from None
        wire: Any = UsbWire(vid, pid, operator=_operator(args))
    else:
        wire = SerialWire(args.port, args.baud, operator=_operator(args))
    if args.slack is not None:
        wire.slack = args.slack
    return wire


def cmd_conformance(args: argparse.Namespace) -> int:
    from firmware_bridge.conformance import run_suite
    from firmware_bridge.conformance.report import NO_DEVICE
    from firmware_bridge.messages import DeviceKind

    if args.slack is not None and not 0 <= args.slack <= 5:
        print(f"tablectl conformance: --slack {args.slack} must be 0..5 seconds", file=sys.stderr)
        return exitcodes.BAD_ARGUMENTS
    if args.baud not in BAUD_RATES:
        print(f"tablectl conformance: --baud {args.baud} is not a standard rate; use one of "
              f"{', '.join(map(str, BAUD_RATES))}", file=sys.stderr)
        return exitcodes.BAD_ARGUMENTS
    out_dir = Path(args.output)
    if not out_dir.is_dir():
        print(f"tablectl conformance: --output {out_dir} is not a folder", file=sys.stderr)
        return exitcodes.BAD_ARGUMENTS
    try:
        wire = _open_wire(args)
    except (ConnectionError, ValueError, OSError) as exc:
        print(f"tablectl conformance: {exc}", file=sys.stderr)
        return exitcodes.BAD_ARGUMENTS
    print(f"checking the {args.kind} on {args.port} at {args.baud} baud (about a minute; "
          "longer at low rates)...", flush=True)
    try:
        report = run_suite(wire, DeviceKind[args.kind.upper()], args.baud, port=args.port)
    finally:
        wire.close()
    serial = str(report.device.get("serial_number") or "unknown").replace("/", "_") or "unknown"
    stem = out_dir / f"conformance-{args.kind}-{serial}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    text = report.to_text()
    Path(f"{stem}.json").write_text(report.to_json() + "\n", encoding="utf-8")
    Path(f"{stem}.txt").write_text(text, encoding="utf-8")
    print(text, end="")
    print(f"report written to {stem}.json and {stem}.txt")
    if report.presence == NO_DEVICE:
        return exitcodes.NO_DEVICE
    return exitcodes.OK if report.passed else exitcodes.FAILURE
