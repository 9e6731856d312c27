"""`tablectl events` (list, --follow, --export) and `tablectl events verify`, through the
daemon or offline from the store file."""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from controller.cli import exitcodes
from controller.cli.client import Daemon
from controller.cli.storefile import copy_store, is_store_file, not_a_table_store
from controller.cli.output import fit, paint, print_json, record_width, when, with_progress, wrap
from controller.control import ControlError
from controller.errors import shown
from controller.cli.daemon_call import call_daemon, emit_json, json_error, socket_path, wants_json
from controller.cli.status_view import action_lines

_SEVERITY_STYLE = {"warning": ("yellow",), "error": ("red",), "critical": ("red", "bold")}
_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhd])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_since(text: str, now: float | None = None) -> float:
    """ISO 8601 (a time without an offset is UTC, like the log) or '10m' / '2h' / '1d' ago,
    as seconds since the epoch; ValueError with an example otherwise."""
    relative = _RELATIVE.match(text.strip())
    if relative:
        since = (time.time() if now is None else now) - float(
            relative[1]) * _UNIT_S[relative[2]]
    else:
        try:
            stamp = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"--since {shown(text)}: not a time; use e.g. "
                             "2026-11-21T20:00:00Z or 30m / 2h / 1d") from None
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=dt.timezone.utc)
        since = stamp.timestamp()
    # No log entry is older than 1970 (the daemon takes seconds since the epoch, >= 0), and
    # 10**5000 days ago is an infinite float, which went to the daemon as -Infinity.
    if not since >= 0:
        raise ValueError(f"--since {shown(text)}: before 1970-01-01, older than any log; use "
                         "e.g. 30m / 2h / 1d or 2026-11-21T20:00:00Z")
    return since


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
        if wants_json(args):
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
        if wants_json(args) and not args.follow:
            print_json(events)
            if export is not None:
                for e in events:
                    export.write(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n")
        else:
            for e in events:
                show(e)
        if not args.follow:
            if not wants_json(args):
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
        return call_daemon(args, body)
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
                                      source=f"daemon on {socket_path(args)}")
            raise
        return _report_verified(args, result, "by the daemon", "daemon")
    return call_daemon(args, body)


def _report_verified(args: argparse.Namespace, result: dict[str, Any], where: str,
                     source: str) -> int:
    entries = int(result.get("entries", 0))
    not_compared = newer_store_note(result)
    if not emit_json(args, {"ok": True, **result, "source": source}):
        first = int(result.get("from_seq", 1))
        span = (f" (entries {first} to {result['log_seq']}; the earlier ones passed the last "
                "full check)" if first > 1 and "log_seq" in result else "")
        rows = (f"; {result['state_rows']} sealed rows match"
                if "state_rows" in result else "")
        unsealed = int(result.get("unsealed", 0))
        tail = (f"; the last {unsealed} (cards and prompts waiting for the next flush) are "
                "not sealed yet, as ruling C29 allows" if unsealed else "")
        print(fit(paint("critical memory OK", "green", "bold")
                  + f": {entries} log entries verified {where}{span}{rows}{tail}"))
        if not_compared is not None:
            print(fit(paint("NOT CHECKED", "yellow", "bold") + f": {not_compared}"))
    # Not a pass a script may take as whole: the same code as a daemon older than tablectl.
    return exitcodes.OK if not_compared is None else exitcodes.UNSUPPORTED


def offline_result(verified: Any) -> dict[str, Any]:
    """An offline check's verdict (controller.memory.check.Verified) as tablectl reports it:
    the daemon's fields, and for a store a newer release wrote its schema and this one's."""
    from controller.memory.critical import as_mapping
    from controller.memory.tables import SCHEMA_VERSION

    result = dict(as_mapping(verified))
    if verified.newer_schema is not None:
        result.update(newer_schema=verified.newer_schema, known_schema=SCHEMA_VERSION)
    return result


def newer_store_note(result: Mapping[str, Any]) -> str | None:
    """What an offline check of a store a newer release wrote did not compare (its tables'
    definitions and the objects it holds, docs/rulings.md C28), or None for a whole check."""
    if "newer_schema" not in result:
        return None
    return (f"the store was written by a newer release (store schema {result['newer_schema']}; "
            f"this tablectl knows schema {result['known_schema']} and older), so its tables' "
            "definitions and any trigger, view or index added to it were not compared. The "
            "log and the sealed rows above were. Check it again with the tablectl of the "
            "release that wrote it.")


def _report_broken(args: argparse.Namespace, detail: str, *, source: str) -> int:
    if not emit_json(args, {"ok": False, "error": detail, "source": source}):
        print(paint("CRITICAL MEMORY CHECK FAILED", "red", "bold") + f" ({source})")
        print(wrap(detail, indent="  "))
        print(action_lines("the store was edited, damaged, lost or rolled back. Do not play: "
                           "the table is out of order until the store is restored from its "
                           "backup or a supervisor clears critical memory (tabled "
                           "--clear-store); keep the store and its critical-memory directory "
                           "as evidence and call the floor supervisor and the vendor."))
    return exitcodes.INTEGRITY_FAILURE


def _no_store_file(args: argparse.Namespace, source: Path) -> int:
    """No store file at --store: with this table's key still where it was, its store is gone
    (an integrity failure, in the boot check's own words); without, a wrong path."""
    from controller.memory.critical import CriticalPaths, IntegrityError, load_key
    from controller.memory.lifecycle import missing_store

    if source.name:  # '.' or '/' names no store, nor a key beside one
        paths = CriticalPaths.for_store(source, args.critical_dir)
        if os.path.exists(paths.key):  # os.path: a name too long is no key, not an error
            try:
                missing_store(paths, load_key(paths))
            except IntegrityError as exc:
                return _report_broken(args, f"{exc.check}: {exc.detail}", source=str(source))
    print(f"tablectl: no store file at {source}", file=sys.stderr)
    return exitcodes.BAD_ARGUMENTS


def _verify_offline(args: argparse.Namespace) -> int:
    """Verify a store file without the daemon. The file is copied first (with its WAL) so
    the check can never change the evidence; the key and anchor are read where they are."""
    from controller.memory.chain import full_check_workers
    from controller.memory.critical import CriticalPaths, IntegrityError, load_key
    from controller.memory.lifecycle import verify_file

    source = Path(args.store)
    if not is_store_file(source):
        return _no_store_file(args, source)
    paths = CriticalPaths.for_store(source, args.critical_dir)
    try:
        with tempfile.TemporaryDirectory(prefix="tablectl-verify-") as tmp:
            copy = copy_store(source, Path(tmp))
            refused = not_a_table_store(copy)
            if refused is not None and not os.path.exists(paths.key):
                # No key beside it: a wrong path, not this table's store (with its key it is
                # the table's own store, damaged, and the check below says how).
                print(f"tablectl: {refused.replace(str(copy), str(source))}; give the path of "
                      "the table's store (the [store] path in its configuration, e.g. "
                      "/var/lib/tabled/table.sqlite)", file=sys.stderr)
                json_error(args, refused.replace(str(copy), str(source)), "not_a_table_store")
                return exitcodes.BAD_ARGUMENTS
            key = load_key(paths)
            # Offline it is always the whole history: whoever checks a store without its
            # daemon (a technician after a fault, an auditor) cannot take the checkpoint,
            # which a running daemon moves at every start, as evidence of anything.
            result = offline_result(verify_file(str(copy), key, paths, full=True,
                                                private_copy=True, workers=full_check_workers()))
    except PermissionError as exc:
        print(f"tablectl: permission denied reading {exc.filename or source}; run as a member "
              "of the tabled group or with sudo", file=sys.stderr)
        return exitcodes.BAD_ARGUMENTS
    except IntegrityError as exc:
        return _report_broken(args, f"{exc.check}: {exc.detail}", source=str(source))
    return _report_verified(args, dict(result), f"in {source}", str(source))
