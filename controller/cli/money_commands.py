"""`tablectl rounds`, `meters`, `jackpot` and the floor supervisor's rulings (`fault
acknowledge`, `irregularity player-third`): game recall and the money a ruling moves."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from controller.cli import exitcodes
from controller.cli.client import Daemon
from controller.cli.output import fit, generic, key_values, money, paint, table, when, with_progress
from controller.control import ControlError
from controller.cli.daemon_call import (
    call_daemon, emit_json, json_error, not_accepted, read_pin, show_listing,
)
from controller.cli.status_view import render_status, status_exit_code

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
        if emit_json(args, rounds):
            return exitcodes.OK
        if not rounds:
            print("no rounds recorded yet")
        print("\n\n".join(render_round(r) for r in rounds))
        return exitcodes.OK
    return call_daemon(args, body)


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
    return show_listing(args, "meters", render_meters, "no progressive meters at this table")


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
    return show_listing(args, "awards", render_awards, "no awards awaiting validation")


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
    """A supervisor's ruling: print `report` and the new status; exit as the status says."""
    def show(status: dict[str, Any]) -> None:
        report(status)
        print(render_status(status))
    return _with_supervisor(args, command, what, show, status_exit_code)


def _with_supervisor(args: argparse.Namespace, command: str, what: str,
                     show: Callable[[Any], None], exit_code: Callable[[Any], int],
                     **call_args: Any) -> int:
    """Send a command with the supervisor's name and PIN; `show` its answer (or --json)."""
    pin = read_pin(args)
    if pin is None:
        json_error(args, "no supervisor PIN was given", "no_pin")
        return exitcodes.BAD_ARGUMENTS

    async def body(d: Daemon) -> int:
        try:
            answer = await d.call(command, auth={"supervisor": args.supervisor, "pin": pin},
                                  **call_args)
        except ControlError as exc:
            if exc.code == "unauthorised":
                return not_accepted(args, what)
            raise
        if not emit_json(args, answer):
            show(answer)
        return exit_code(answer)
    return call_daemon(args, body)


def cmd_irregularity_player_third(args: argparse.Namespace) -> int:
    def report(status: dict[str, Any]) -> None:
        ruling = status["ruling"]
        what = "applied" if ruling["changed"] else "already where the table put it"
        print(f"{ruling['card']}: {ruling['decision']}; {what}")
    return _supervisor_ruling(args, "disclosed_player_third", "declared", report)


def cmd_jackpot_validate(args: argparse.Namespace) -> int:
    def show(award: dict[str, Any]) -> None:
        print(f"award {args.award_id} validated by {args.supervisor}")
        if award:
            print(render_award(award))
    return _with_supervisor(args, "validate_award", "validated", show,
                            lambda award: exitcodes.OK, award_id=args.award_id)
