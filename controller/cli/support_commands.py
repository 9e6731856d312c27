"""`tablectl support-bundle`: everything a vendor asks for in a ticket, in one text file.

Status, devices, the recent event log, the daemon's log and the table's configuration
with its secrets removed. With the daemon down, the recent events are read from a copy
of the store file and the store gets the offline critical-memory check. Whatever cannot
be collected (the journal is not readable, no store file) is named in the bundle
instead, so the file is always written.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller import __version__
from controller.cli import exitcodes
from controller.cli.client import Daemon, DaemonUnavailable, default_socket
from controller.cli.output import fit

DEFAULT_CONFIG = "/etc/tabled/table.toml"
DEFAULT_EVENTS = 200  # about the last ten rounds with their cards
JOURNAL_LINES = 500
BUNDLE_WIDTH = 78  # a file read in any viewer: the width of its section rules
REMOVED = '"<removed>"'
# Keys whose values are secrets wherever they appear; every value of these sections is one.
# (Whole names: `lockout_pin` and `pin_factory` are wiring, not secrets.)
_SECRET_KEY = re.compile(r"^(\w+_)?(password|passwd|secret|token|credentials?|dsn|api_key|"
                         r"private_key)$|^pin(_hash)?$", re.IGNORECASE)
_SECRET_SECTIONS = ("supervisors", "secrets")
_USERINFO = re.compile(r"(\w+://)[^/@\s\"']+@")  # user:password@ inside a URL
_SECTION = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_ASSIGNMENT = re.compile(r"^(\s*)([A-Za-z0-9_.\"'-]+)(\s*=\s*)(.*)$")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "support-bundle", help="status, devices, events, log and configuration in one file",
        description="Write one text file for a support ticket: status, devices, the recent "
                    "event log, the daemon's log and the configuration with secrets removed. "
                    "Written even when the daemon is down (what is missing is named).")
    p.add_argument("--socket", default=None, metavar="PATH",
                   help="tabled's control socket (default: $TABLECTL_SOCKET or "
                        "/run/tabled/control.sock)")
    p.add_argument("--output", "-o", metavar="FILE",
                   help="where to write (default: tabled-support-TABLE-TIME.txt here)")
    p.add_argument("--config", metavar="PATH",
                   help=f"the configuration file (default: the daemon's, else {DEFAULT_CONFIG})")
    p.add_argument("--log", metavar="FILE",
                   help="the daemon's log file (default: journalctl -u tabled)")
    p.add_argument("--events", type=int, default=DEFAULT_EVENTS, metavar="N",
                   help=f"how many recent events (default {DEFAULT_EVENTS})")
    p.add_argument("--store", metavar="PATH",
                   help="when the daemon is down: the table's store file, whose events are "
                        "read and checked (default: the configuration's [store] path)")
    p.set_defaults(handler=cmd_support_bundle)


def redact_config(text: str) -> str:
    """The configuration with every secret value replaced (comments and layout kept)."""
    out = []
    section = ""
    for line in text.splitlines():
        header = _SECTION.match(line)
        if header:
            section = header.group(1).strip().strip('"')
            out.append(line)
            continue
        assignment = _ASSIGNMENT.match(line)
        if assignment:
            indent, key, equals, _value = assignment.groups()
            bare = key.strip("\"'").rsplit(".", 1)[-1]
            if section.split(".")[0] in _SECRET_SECTIONS or _SECRET_KEY.search(bare):
                out.append(f"{indent}{key}{equals}{REMOVED}")
                continue
        out.append(_USERINFO.sub(r"\1<removed>@", line))
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


async def _from_daemon(socket: str, events: int) -> dict[str, Any]:
    async with Daemon(socket) as d:
        return {"status": await d.call("status"), "devices": await d.call("devices"),
                "events": await d.call("events", limit=events)}


def _journal() -> tuple[str, str]:
    """(where from, text) of the daemon's recent journal."""
    if shutil.which("journalctl") is None:
        return "journalctl", "(not collected: journalctl is not installed here; give --log FILE)"
    try:
        done = subprocess.run(["journalctl", "-u", "tabled", "-n", str(JOURNAL_LINES),
                               "--no-pager", "-o", "short-iso"], capture_output=True,
                              text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return "journalctl", f"(not collected: {exc})"
    text = done.stdout or ""
    if done.returncode != 0 or not text.strip():
        return "journalctl -u tabled", ("(not collected: " + (done.stderr.strip() or
                                        "no entries") + "; run as a member of group adm or "
                                        "systemd-journal, or with sudo)")
    return f"journalctl -u tabled -n {JOURNAL_LINES}", text


def _last_lines(text: str) -> str:
    return "\n".join(text.splitlines()[-JOURNAL_LINES:])


def _read(path: Path, transform: Callable[[str], str] = lambda text: text) -> str:
    try:
        return transform(path.read_text(encoding="utf-8", errors="replace"))
    except OSError as exc:
        return f"(not collected: cannot read {path}: {exc.strerror or exc})"


def _store_of(config_path: str) -> tuple[str | None, str | None]:
    """(store path, critical-memory directory) named by the configuration's [store], read
    as plain TOML: a configuration the daemon would refuse still says where its store is."""
    from controller.text_files import read_toml

    try:
        store = read_toml(config_path).get("store") or {}
    except (OSError, ValueError):  # ValueError: not TOML
        return None, None
    path, critical_dir = store.get("path"), store.get("critical_dir")
    return (str(path) if path else None), (str(critical_dir) if critical_dir else None)


def _from_store(source: Path, critical_dir: str | None, events: int
                ) -> list[tuple[str, str]]:
    """With the daemon down: the last events read from a copy of its store, and the
    offline critical-memory check (as `tablectl events verify --store`), as sections."""
    import tempfile

    from controller.cli.event_commands import newer_store_note, offline_result
    from controller.cli.storefile import copy_store, is_store_file, not_a_table_store
    from controller.memory.critical import CriticalPaths, IntegrityError, load_key
    from controller.memory.lifecycle import verify_file

    if not is_store_file(source):
        return [("store", f"(not collected: no store file at {source}; give --store PATH)")]
    paths = CriticalPaths.for_store(source, critical_dir)
    try:
        with tempfile.TemporaryDirectory(prefix="tablectl-bundle-") as tmp:
            copy = copy_store(source, Path(tmp))  # the evidence itself is never opened
            refused = not_a_table_store(copy)
            if refused is not None:
                return [("store", f"(not collected: {refused.replace(str(copy), str(source))})")]
            read, lines = _last_events(copy, events)
            try:
                result = offline_result(verify_file(str(copy), load_key(paths), paths,
                                                    full=True, private_copy=True))
                check = (f"critical memory OK: {result.get('entries')} log entries verified "
                         f"in {source} (every entry)")
                not_compared = newer_store_note(result)
                if not_compared is not None:
                    check += f"\nNOT CHECKED: {not_compared}"
            except IntegrityError as exc:
                check = f"CRITICAL MEMORY CHECK FAILED ({source}): {exc.check}: {exc.detail}"
    except OSError as exc:
        return [("store", f"(not collected: cannot read {exc.filename or source}: "
                          f"{exc.strerror or exc}; run as a member of the tabled group or "
                          "with sudo)")]
    return [(f"last {len(read)} events, read from the store {source}", "\n".join(lines)),
            ("events read from the store, as JSON", json.dumps(read, indent=1,
                                                                 ensure_ascii=False)),
            ("critical-memory check of the store (offline, every entry)", check)]


def _last_events(copy: Path, count: int) -> tuple[list[dict[str, Any]], list[str]]:
    """The last `count` log entries of a store copy, as JSON-ready entries and as lines. The
    copy is read before (and whatever) its check says: an entry damaged or edited so that
    its fields cannot be read (payload not JSON, a time no clock has) is listed as such,
    where it stopped the whole bundle on a traceback, on the table that most needed one."""
    import sqlite3

    from controller.cli.event_commands import event_line
    from controller.control import event_json
    from controller.errors import shown
    from controller.memory.schema import event_of

    db = sqlite3.connect(f"file:{copy.absolute()}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    try:
        rows = db.execute("SELECT * FROM (SELECT * FROM events ORDER BY seq DESC LIMIT ?)"
                          " ORDER BY seq", (count,)).fetchall()
    finally:
        db.close()
    read, lines = [], []
    for row in rows:
        try:
            entry = event_json(event_of(row))
            line = event_line(entry, BUNDLE_WIDTH)
        except (ValueError, TypeError, AttributeError, OverflowError, OSError, RecursionError):
            entry = {"seq": row["seq"], "at": None, "kind": shown(row["kind"]),
                     "severity": "error", "device": None, "round_id": None,
                     "payload": {"unreadable": "this entry's fields cannot be read (damaged "
                                               "or edited): see the check below"},
                     "hash": shown(row["hash"])}
            line = event_line(entry, BUNDLE_WIDTH)
        read.append(entry)
        lines.append(line)
    return read, lines


def build_bundle(args: argparse.Namespace) -> tuple[str, str]:
    """(table id for the file name, the bundle's text)."""
    from controller.cli.event_commands import event_line
    from controller.cli.status_view import render_devices, render_status

    socket = args.socket or default_socket()
    try:
        daemon: dict[str, Any] | None = asyncio.run(_from_daemon(socket, args.events))
        unreachable = ""
    except DaemonUnavailable as exc:
        daemon, unreachable = None, str(exc)
    now = dt.datetime.now(dt.timezone.utc)
    parts = [f"tabled support bundle, written {now.isoformat(timespec='seconds')}",
             f"tablectl {__version__} on {platform.node()} ({platform.platform()}, "
             f"Python {platform.python_version()})", f"control socket: {socket}"]

    def section(title: str, body: str) -> None:
        parts.extend(["", "=" * BUNDLE_WIDTH, f"== {title}", "=" * BUNDLE_WIDTH,
                      body.rstrip("\n")])

    table_id = "table"
    config_path = args.config
    if daemon is None:
        section("daemon", f"not reachable: {unreachable}")
        store, critical_dir = _store_of(config_path or DEFAULT_CONFIG)
        store = args.store or store
        if store is None:
            section("store", "(not collected: no [store] path in the configuration; give "
                             "--store PATH)")
        else:
            for title, body in _from_store(Path(store), critical_dir, args.events):
                section(title, body)
    else:
        status = daemon["status"]
        table_id = str(status.get("table_id") or table_id)
        config_path = config_path or status.get("config")
        section("status", render_status(status))
        section("devices", render_devices(daemon["devices"]))
        section(f"last {len(daemon['events'])} events",
                "\n".join(event_line(e, BUNDLE_WIDTH) for e in daemon["events"]))
        section("status, devices and events as JSON",
                json.dumps({k: daemon[k] for k in ("status", "devices", "events")},
                           indent=1, ensure_ascii=False))
    if args.log:
        section(f"daemon log: {args.log} (the last {JOURNAL_LINES} lines)",
                _read(Path(args.log), _last_lines))
    else:
        where, text = _journal()
        section(f"daemon log: {where}", text)
    config_path = config_path or DEFAULT_CONFIG
    section(f"configuration: {config_path} (secrets removed)",
            _read(Path(config_path), redact_config))
    return table_id, "\n".join(parts) + "\n"


def cmd_support_bundle(args: argparse.Namespace) -> int:
    if not 1 <= args.events <= 100_000:
        print("tablectl: --events must be a whole number 1 to 100000", file=sys.stderr)
        return exitcodes.BAD_ARGUMENTS
    table_id, text = build_bundle(args)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    target = Path(args.output or f"tabled-support-{re.sub(r'[^A-Za-z0-9_-]', '_', table_id)}"
                  f"-{stamp}.txt")
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"tablectl: cannot write {target}: {exc.strerror or exc}; choose another place "
              "with --output FILE", file=sys.stderr)
        return exitcodes.BAD_ARGUMENTS
    print(fit(f"support bundle written to {target} ({len(text.encode('utf-8')):,} bytes); "
              "attach it to the ticket"))
    return exitcodes.OK
