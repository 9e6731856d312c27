"""`tablectl status` and `tablectl devices`: the table's state and each device's link,
rendered for a technician's terminal (or --json)."""

from __future__ import annotations

import argparse
import shutil
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from controller.cli import exitcodes
from controller.cli.client import Daemon
from controller.cli.output import (
    duration,
    key_values,
    money,
    paint,
    table,
    terminal_width,
    when,
    wrap,
)
from controller.cli.daemon_call import call_daemon, emit_json
from controller.memory.errors import ACTION_INIT

# What the technician should do for each table state that needs attention.
OUT_OF_ORDER_ACTION = ("do not play: the event log or the database failed its integrity "
                       "check. Run 'tablectl events verify' and call the floor supervisor and "
                       "the vendor; the table stays out of order until the store is restored")
# A table that never had critical memory has nothing to restore: it is initialised, once.
NOT_INITIALISED_ACTION = (f"{ACTION_INIT}, as the daemon's user; then restart the table "
                          "service (sudo systemctl restart tabled)")


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


def _milliseconds(value: Any) -> str:
    """A figure and its unit kept on one line when the view wraps (a no-break space)."""
    return f"{float(value):g}\u00a0ms"


def _storage(flushes: Any) -> str | None:
    """The store's flush times (controller/memory/flush_times.py): each money step's report
    waits for a flush, so slow storage is a slow table."""
    if not isinstance(flushes, Mapping):
        return None
    # [store] seal_every_step (docs/rulings.md C29): said only when it is set.
    options = "; every step sealed by itself ([store] seal_every_step)" if flushes.get(
        "seal_every_step") else ""
    # [store] flush_in (docs/rulings.md C30): said only when it is not the loop's thread,
    # and why, when a slow flush moved them.
    if isinstance(moved := flushes.get("flush_moved_after_ms"), int | float):
        options += (f"; flushed in a thread of their own since a {_milliseconds(moved)} "
                    "flush stopped the event loop (until the daemon restarts)")
    elif flushes.get("flush_in") == "thread":
        options += "; flushed in a thread of their own ([store] flush_in)"
    if not flushes.get("flushes"):
        return "no flush yet" + options
    half, most = flushes.get("half_within_ms"), flushes.get("p99_within_ms")
    text = (f"{int(flushes['flushes']):,} flushes since the start; half within "
            f"{_milliseconds(half) if half is not None else 'over 5 s'}, 99 % within "
            f"{_milliseconds(most) if most is not None else 'over 5 s'}; slowest "
            f"{_milliseconds(flushes.get('slowest_ms'))} at {when(flushes.get('slowest_at'))}")
    slow = int(flushes.get("slow") or 0)
    if slow:
        text += paint(f"; SLOW: {slow:,} took {_milliseconds(flushes.get('slow_threshold_ms'))}"
                      " or more (docs/technician-guide.md, 'Slow storage')", "yellow", "bold")
    return text + options


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
                               ("history check", _history_check(s.get("history_check"))),
                               ("storage", _storage(s.get("storage")))],
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
    feed = s.get("display_feed")
    if isinstance(feed, Mapping):
        lines.append(_feed_line(feed, width))
    fault = s.get("fault")
    if fault:
        lines.append(paint(wrap(f"FAULT: {fault.get('device')}: {fault.get('detail')} "
                                f"[{fault.get('code')}]", width, hanging="  "), "red", "bold"))
        lines.append(action_lines(fault.get("action"), width))
    if s.get("out_of_order"):
        lines.append(paint(wrap(f"OUT OF ORDER: {s['out_of_order']}", width, hanging="  "),
                           "red", "bold"))
        lines.append(action_lines(out_of_order_action(str(s["out_of_order"])), width))
    return "\n".join(line for line in lines if line)


def out_of_order_action(failure: str) -> str:
    """What to do, by what put the table out of order: the daemon's status names the check
    first (`not initialised: ...`, `witness: store behind: ...`, `event chain: ...`)."""
    if failure.startswith("not initialised:"):
        return NOT_INITIALISED_ACTION
    if failure.startswith("witness:"):
        from controller.witness.compare import ACTION_WITNESS

        return ACTION_WITNESS
    return OUT_OF_ORDER_ACTION


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


def _feed_line(feed: Mapping[str, Any], width: int | None = None) -> str:
    """The MQTT feed of the meters and the pit page ([mqtt]): not money, but a pit boss who
    sees the table as lost asks the technician why."""
    how = ", ".join(part for part in ("TLS" if feed.get("tls") else "",
                                      f"as {feed['username']}" if feed.get("username") else "")
                    if part)
    where = f"{feed.get('broker')}" + (f" ({how})" if how else "")
    if feed.get("connected"):
        return wrap(f"Display feed: connected to {where}", width, hanging="  ")
    return paint(wrap(f"Display feed: NOT CONNECTED to {where}: "
                      f"{feed.get('reason') or 'not reached yet'}; the meter displays and the "
                      "pit page miss this table's changes (money is not affected)", width,
                      hanging="  "), "yellow", "bold")


def cmd_status(args: argparse.Namespace) -> int:
    async def body(d: Daemon) -> int:
        status = await d.call("status")
        if not emit_json(args, status):
            print(render_status(status))
        return status_exit_code(status)
    return call_daemon(args, body)


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
# The seats have no firmware: refused, their pins could not be claimed at the start.
_SEATS_REFUSED = ("the seat pins could not be claimed: fix gpio.pin_factory or stop the "
                  "program holding them, then restart the table service")


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
        link_state = d.get("link")
        if link_state != "up":
            label = f"NOT UP: {d.get('device')} ({link_state})"
            hint = _SEATS_REFUSED if (link_state, d.get("kind")) == ("refused", "seats") \
                else _LINK_HINTS.get(str(link_state), _LINK_HINTS["retrying"])
            text = textwrap.fill(f"{label} - {hint}", width=width, subsequent_indent="  ")
            out.append(paint(label, "red", "bold") + text[len(label):])
    return "\n".join(out)


def cmd_devices(args: argparse.Namespace) -> int:
    async def body(d: Daemon) -> int:
        devices = await d.call("devices")
        if not emit_json(args, devices):
            print(render_devices(devices))
        return exitcodes.DEVICE_FAULT if any(x.get("link") != "up" for x in devices) \
            else exitcodes.OK
    return call_daemon(args, body)
