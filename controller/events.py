"""Every kind of entry in the table's event log, declared once, with its fields.

The event table of docs/control-api.md is generated from `CATALOGUE`
(`python -m controller.events --write`), `tablectl` takes from it which
events are about a card the shoe read (`SHOE_CARD_KINDS`) and how to show
them, and tests/controller/test_event_catalogue.py fails when code emits a
kind that is missing here or this lists a kind that nothing emits.

Adding an event kind is one entry in `CATALOGUE`: the test's failure message
prints the line to add.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

ANY_DEVICE = "the device"  # the device that reported it (shoe, shuffler, seats, display)


@dataclass(frozen=True)
class EventKind:
    kind: str
    severity: str  # "info", "warning", "error", "critical"; "a / b" when it depends
    device: str  # "-" when no device reports it
    fields: tuple[str, ...]  # the payload's keys; "..." when it carries more
    meaning: str
    shoe_card: str = ""  # a card the shoe read: how `tablectl test shoe` shows it


E = EventKind
CATALOGUE: tuple[EventKind, ...] = (
    # --- the daemon ---------------------------------------------------------------------
    E("daemon_started", "info", "-", ("version", "state", "release", "software_verified"),
      "the daemon is up; the release it runs and whether its files matched the signed "
      "manifest (docs/deployment.md, \"Verify the software\")"),
    E("software_staged", "info", "-", ("release",),
      "a release was installed beside the running one (tablectl software stage)"),
    E("software_activated", "warning", "-", ("release", "from_release", "supervisor"),
      "a floor supervisor allowed a release's activation, between shoes; the daemon restarts "
      "into it"),
    E("software_rolled_back", "warning", "-",
      ("release", "from_release", "supervisor", "automatic"),
      "the previous release was put back: by a supervisor, or by itself after the activated "
      "one failed to start (automatic)"),
    E("daemon_stopping", "info", "-", ("state",), "the daemon stops (SIGTERM)"),
    E("restored", "info", "-", ("state", "round_id"), "the table resumed after a restart"),
    E("internal_error", "error", "-", ("event",), "an event the table could not handle"),
    E("event_ignored_out_of_order", "info", "-", ("device_event",),
      "a device event while the table is out of order"),
    E("supervisor_command", "info", "-", ("supervisor", "command", "args"),
      "a supervisor command (the PIN never is)"),
    E("light_test", "info", "-", ("seats", "display"), "the seat LEDs and win lights chased"),
    E("pin_hashes_exposed", "warning", "-", ("config", "reason"),
      "at start: supervisor PIN hashes are in the configuration file"),
    # --- access (who may do what) -------------------------------------------------------
    E("command_refused", "warning", "-",
      ("command", "role_needed", "reason", "caller", "supervisor", "count", "window_s"),
      "a command refused: the caller's role does not allow it, no or a wrong PIN, or a bad "
      "request for a supervisor command; repeats aggregated (`count` in `window_s`)"),
    E("pin_failed", "warning", "-", ("supervisor", "caller", "command", "failures"),
      "a wrong supervisor PIN"),
    E("pin_lockout", "error", "-",
      ("supervisor", "caller", "command", "after_failures", "lockout_s"),
      "a supervisor locked out after repeated wrong PINs"),
    E("pin_delay", "warning", "-",
      ("supervisor", "caller", "command", "caller_failures", "delay_s", "count", "window_s"),
      "a caller made to wait after wrong PINs; repeats aggregated (`count` in `window_s`)"),
    E("pin_guard_resumed", "warning", "-", ("supervisors",),
      "at start: each supervisor name's wrong-PIN count and lockout seconds left, as the "
      "guard last saved them in the store"),
    E("pin_refused", "warning", "-",
      ("supervisor", "caller", "command", "reason", "locked_for_s", "count", "window_s"),
      "a PIN check refused (locked out, or another check from this caller running); repeats "
      "aggregated (`count` in `window_s`)"),
    E("subscriber_dropped", "warning", "-", ("caller", "reason", "sent_up_to_seq"),
      "an event subscriber that could not keep up was disconnected"),
    E("out_of_order", "critical", "-", ("reason",), "an integrity check failed"),
    # --- the dealer's steps -------------------------------------------------------------
    E("prompt", "info", "-", ("action", "..."),
      "what the dealer must do next (`inspect_cards`, `cut`, `burn`, `place_bets`, `deal`, "
      "`set_aside`, `discard`, `last_hand`, `shoe_complete`, `collect_vigorish`, `jackpot`, "
      "`stop`, `resume`)"),
    E("table_opened", "info", "-", (), "the table opened (631a.4 card inspection follows)"),
    E("shuffle_requested", "info", "-", ("decks", "during_fault"), "a shuffle was asked for"),
    E("new_dealer", "info", "-", ("dealer", "burn"),
      "a new dealer took over; `burn` when 681a.7(c) asks for a burn card"),
    E("wager_accepted", "info", "-", ("seat", "wager", "amount_cents"), "a wager on the layout"),
    E("no_more_bets", "info", "-", ("cause", "round_no", "wagers", "progressive_seats"),
      "every seat locked (`cause`: dealer, button, first-card); the round opens"),
    # --- the shoe and its cards ---------------------------------------------------------
    E("shoe_load_declared", "info", "-", ("back", "by"),
      "the dealer's `shoe_loaded` command, before its batch check"),
    E("shoe_loaded", "info", "-", ("shoe_no", "back"), "a new shoe (631a.5(e), 681a.7(a))"),
    E("shoe_loaded_out_of_turn", "warning", ANY_DEVICE, ("state", "cards"),
      "the shoe reported a load when the table expected none"),
    E("burn_first_card", "info", "-", ("card", "index", "burn", "back"),
      "the exposed first card and how many more are burned (631a.5(f), 681a.7(c))",
      shoe_card="exposed first card: burn {burn} more"),
    E("burn_card", "info", "-", ("index", "back"), "a card burned face down",
      shoe_card="(burned face down)"),
    E("card", "info", ANY_DEVICE, ("index", "card", "hand", "slot", "back"),
      "a card dealt to a hand", shoe_card="{hand}"),
    E("cover_card", "info", ANY_DEVICE, ("index",), "the cover card (631a.10(d), 681a.7(d))"),
    E("cover_card_misplaced", "warning", ANY_DEVICE, ("index", "cards_below", "detail"),
      "the cover card came out nearer the bottom than 631a.5(d) / 681a.5(d) allow; shown to "
      "the dealer until the shoe is replaced (docs/rulings.md C22)"),
    E("card_face_up", "warning", ANY_DEVICE, ("index", "card", "ruling"),
      "a card found face up mid-round, set aside for a simulated round (631a.15(d))",
      shoe_card="FACE UP in the shoe: set aside (631a.15(d))"),
    E("simulated_round", "warning", ANY_DEVICE, ("card", "index", "ruling"),
      "a disclosed card opened a simulated round (631a.15(d))"),
    E("player_third_disclosed", "warning", "-",
      ("supervisor", "index", "card", "action", "section", "changed"),
      "the floor declared the last card a Player third card dealt in error and disclosed; "
      "`changed` when the table undid where it had put the card (631a.15(c); docs/rulings.md "
      "C20)"),
    E("card_discarded", "warning", ANY_DEVICE, ("index", "card", "state", "ruling"),
      "a card placed in the discard rack, in no round (631a.3(b), 681a.7(c), 681a.9; "
      "docs/rulings.md C5, C7, C16-C18)", shoe_card="discarded: {ruling}"),
    E("card_during_fault", "error", ANY_DEVICE, ("index", "card", "round_voided"),
      "a card while a device fault stopped the table"),
    E("card_gap", "error", ANY_DEVICE,
      ("expected_index", "received_index", "card", "lost_indexes", "action", "section"),
      "cards left the shoe unseen (docs/rulings.md C7)"),
    E("shoe_reconciled", "info / error", ANY_DEVICE,
      ("shoe_no", "back", "cards_drawn", "lost_indexes", "discarded", "cards_counted",
       "missing", "extra", "duplicates", "accounted"),
      "the shoe's cards against the shuffler's count of its batch"),
    E("shoe_complete", "info", "-", ("shoe_no", "rounds", "last_round_id"),
      "the shoe is finished (631a.10(d), 681a.7(d))"),
    # --- rounds and money ---------------------------------------------------------------
    E("settled_first_four_cards", "info", "-", ("settlements",),
      "wagers settled after the first four cards (631a.9(e))"),
    E("settled_end_of_round", "info", "-", ("settlements",),
      "wagers settled at the end of the round (631a.12(b))"),
    E("round_settled", "info", "-",
      ("round_no", "simulated", "result", "settlements", "table_net_cents"),
      "a round's result and every settlement"),
    E("round_void", "warning", "-", ("reason", "wagers_stand", "settlements"),
      "a void round: the round's settlements, every wager not yet settled returned and "
      "those the first four cards settled standing (631a.15(e); docs/rulings.md C6-C7); "
      "`wagers_stand` (only when true): the wagers stay on the layout for the next live "
      "round (C19, C20), whose record holds them again"),
    E("vigorish_collected", "info", "-", ("seat", "cents"),
      "marked vigorish collected (631a.13(d)(2))"),
    # --- devices and faults -------------------------------------------------------------
    E("device_fault", "error / warning", ANY_DEVICE, ("code", "detail", "action"),
      "a device fault (docs/faults.md); an error when it stops play"),
    E("device_fault_cleared", "info", ANY_DEVICE, ("code",), "the device cleared a fault"),
    E("device_recovered", "info", ANY_DEVICE, ("code",), "play resumes after a fault"),
    E("fault_still_held", "info", ANY_DEVICE, ("cleared", "still_held"),
      "a fault cleared while others still hold the table"),
    E("fault_acknowledged", "info", "-",
      ("device", "code", "detail", "action", "supervisor", "cleared", "still_held"),
      "a floor supervisor's ruling on the fault"),
    E("seat_sensor", "info", "seats", ("seat", "present"),
      "a debounced sensor change while betting is open"),
    E("late_sensor_change", "warning", "seats", ("seat", "present"),
      "a sensor change after the lock: never a wager (631c.2(d)(2))"),
    E("shuffle_progress", "info", ANY_DEVICE, ("cards_counted", "cards_expected"),
      "the shuffler's count so far"),
    E("shuffle_complete", "info", ANY_DEVICE,
      ("back", "cards_counted", "missing", "extra", "duplicates"), "a shuffle finished"),
    E("batch_held", "info", ANY_DEVICE, ("back",),
      "the batch the shuffler holds (681a.3(b))"),
    # --- progressives -------------------------------------------------------------------
    E("progressive_accepted", "info", "-",
      ("progressive", "accepted", "refused", "leds", "awards"),
      "the progressive wagers the lock accepted"),
    E("progressive_wagers", "info", "seats",
      ("progressive", "cause", "sensor_seats", "accepted", "refused"),
      "the progressive wagers booked at the lock"),
    E("progressive_wagers_returned", "info", "-", ("seats",),
      "progressive wagers returned with a void round"),
    E("progressive_round_void", "warning", "-", ("progressive", "reason", "returned"),
      "a progressive's side of a void round"),
    E("progressive_meter", "info", "-", ("...",), "a progressive meter changed (605a.7)"),
    E("progressive_award", "warning", "-",
      ("award_id", "progressive", "level", "seat", "amount_cents", "state", "..."),
      "a progressive award, pending, validated or paid (631c.6(c)(5))"),
    E("progressive_mystery_armed", "info", "-",
      ("progressive", "level", "epoch", "commitment", "scheme"),
      "a Must-Hit-By trigger committed (631c.6)"),
    E("progressive_mystery_reveal", "info", "-",
      ("progressive", "level", "epoch", "trigger_cents", "nonce_hex", "commitment",
       "award_id"), "a Must-Hit-By trigger revealed"),
    E("progressive_linked_contribution", "info", "-",
      ("progressive", "level", "seq", "delta_num", "delta_den", "wagers_count",
       "wagers_cents"), "a contribution sent to a linked meter (605a.8)"),
    E("jackpot_validated", "info", "-", ("award_id", "supervisor", "amount_cents", "seat"),
      "a floor supervisor validated and paid an award"),
    # --- the critical store -------------------------------------------------------------
    E("critical_memory_initialised", "warning", "-",
      ("table_id", "operator", "host", "key_id", "store", "anchor"),
      "a new keyed store was initialised"),
    E("critical_memory_cleared", "critical", "-",
      ("table_id", "supervisor", "reason", "failure", "evidence", "moved", "last_values"),
      "the critical memory was cleared by a supervisor"),
    E("critical_memory_verified", "info", "-", ("...",), "the critical memory verified"),
    E("history_verified", "info", "-", ("state", "entries", "seconds"),
      "at start: the whole history checked (every entry's MAC, every sealed row); the table "
      "settles nothing before it"),
    E("critical_memory_rechecked", "critical", "-", ("first", "recheck"),
      "a verification during play failed, and the same check on a fresh snapshot passed"),
    # --- the witness (controller/witness/) ----------------------------------------------
    E("witness_down", "warning / error", "-", ("reason",),
      "the witness cannot be reached or cannot be used: heads wait in the outbox"),
    E("witness_up", "info", "-", ("pending_heads",),
      "the witness answers again; the outbox's heads are sent in order"),
)

KINDS: dict[str, EventKind] = {e.kind: e for e in CATALOGUE}
SEVERITIES = ("info", "warning", "error", "critical")  # every entry has one of these
SHOE_CARD_KINDS = frozenset(e.kind for e in CATALOGUE if e.shoe_card)

DOC = Path(__file__).resolve().parents[1] / "docs" / "control-api.md"
_SECTION = re.compile(r"(## Event kinds\n\n)(.*?)(\n## )", re.S)


def markdown_table() -> str:
    """The event table of docs/control-api.md."""
    rows = ["Generated from `controller/events.py` by `python -m controller.events --write`; "
            "do not edit by hand.", "",
            "| kind | severity | device | payload | meaning |",
            "| --- | --- | --- | --- | --- |"]
    for e in CATALOGUE:
        fields = "`{" + ", ".join(e.fields) + "}`" if e.fields else "-"
        rows.append(f"| `{e.kind}` | {e.severity} | {e.device} | {fields} | {e.meaning} |")
    return "\n".join(rows) + "\n"


def document(text: str) -> str:
    """`text` (docs/control-api.md) with its event table regenerated."""
    if not _SECTION.search(text):
        raise ValueError("docs/control-api.md has no '## Event kinds' section followed by "
                         "another '## ' section")
    return _SECTION.sub(lambda m: m[1] + markdown_table() + m[3], text, count=1)


if __name__ == "__main__":
    current = DOC.read_text(encoding="utf-8")
    if "--write" in sys.argv[1:]:
        DOC.write_text(document(current), encoding="utf-8")
    else:
        sys.stdout.write(markdown_table())
