"""Every kind of entry in the table's event log, declared once: its record, severity,
device and meaning.

Each entry names its record (controller/events/records.py and beside it), the frozen
dataclass that emitters build and readers decode; the payload's keys are that record's
fields. The event table of docs/control-api.md is generated from `CATALOGUE`
(`python -m controller.events --write`), `tablectl` takes from it which events are about
a card the shoe read (`SHOE_CARD_KINDS`) and how to show them, the store refuses a record
whose kind or severity is not here, and tests/controller/test_event_catalogue.py fails when
a record is not catalogued, or a catalogued record is never built where events are emitted.

Adding an event kind is a record class and one entry in `CATALOGUE`.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from controller.events import progressive_records as p
from controller.events import records as r
from controller.events import system_records as s
from controller.events.codec import EventRecord, field_names, omitted_when

ANY_DEVICE = "the device"  # the device that reported it (shoe, shuffler, seats, display)


@dataclass(frozen=True)
class EventKind:
    record: type[EventRecord]
    severity: str  # "info", "warning", "error", "critical"; "a / b" when it depends
    device: str  # "-" when no device reports it
    meaning: str
    shoe_card: str = ""  # a card the shoe read: how `tablectl test shoe` shows it

    @property
    def kind(self) -> str:
        return self.record.KIND

    @cached_property
    def severities(self) -> tuple[str, ...]:
        """The severities an entry of this kind may have; the first unless it says."""
        return tuple(self.severity.split(" / "))

    @property
    def fields(self) -> tuple[str, ...]:
        """The payload's keys: the record's fields; a key some entries leave out (a field
        with a default, while it holds it) ends in '?'."""
        omitted = omitted_when(self.record)
        return tuple(name + ("?" if name in omitted else "") for name in field_names(self.record))


E = EventKind
CATALOGUE: tuple[EventKind, ...] = (
    # --- the daemon ---------------------------------------------------------------------
    E(s.DaemonStarted, "info", "-",
      "the daemon is up; the release it runs and whether its files matched the signed "
      "manifest (docs/deployment.md, \"Verify the software\")"),
    E(s.SoftwareStaged, "info", "-",
      "a release was installed beside the running one (tablectl software stage)"),
    E(s.SoftwareActivated, "warning", "-",
      "a floor supervisor allowed a release's activation, between shoes; the daemon restarts "
      "into it"),
    E(s.SoftwareRolledBack, "warning", "-",
      "the previous release was put back: by a supervisor, or by itself after the activated "
      "one failed to start (automatic)"),
    E(s.DaemonStopping, "info", "-",
      "the daemon stops (SIGTERM)"),
    E(s.Restored, "info", "-",
      "the table resumed after a restart"),
    E(s.InternalError, "error", "-",
      "an event the table could not handle"),
    E(s.EventIgnoredOutOfOrder, "info", "-",
      "a device event while the table is out of order"),
    E(s.SupervisorCommand, "info", "-",
      "a supervisor command (the PIN never is)"),
    E(s.LightTest, "info", "-",
      "the seat LEDs and win lights chased"),
    E(s.PinHashesExposed, "warning", "-",
      "at start: supervisor PIN hashes are in the configuration file"),
    # --- access (who may do what) -------------------------------------------------------
    E(s.CommandRefused, "warning", "-",
      "a command refused: the caller's role does not allow it, no or a wrong PIN, or a "
      "supervisor command's arguments or `auth` text failed the check; repeats aggregated "
      "(`count` in `window_s`)"),
    E(s.PinFailed, "warning", "-",
      "a wrong supervisor PIN"),
    E(s.PinLockout, "error", "-",
      "a supervisor locked out after repeated wrong PINs"),
    E(s.PinDelay, "warning", "-",
      "a caller made to wait after wrong PINs; repeats aggregated (`count` in `window_s`)"),
    E(s.PinGuardResumed, "warning", "-",
      "at start: each supervisor name's wrong-PIN count and lockout seconds left, as the "
      "guard last saved them in the store"),
    E(s.PinRefused, "warning", "-",
      "a PIN check refused (locked out, or another check from this caller running); repeats "
      "aggregated (`count` in `window_s`)"),
    E(s.SubscriberDropped, "warning", "-",
      "an event subscriber that could not keep up was disconnected"),
    E(s.OutOfOrder, "critical", "-",
      "an integrity check failed"),
    # --- the dealer's steps -------------------------------------------------------------
    E(r.Prompt, "info", "-",
      "what the dealer must do next (`inspect_cards`, `cut`, `burn`, `place_bets`, `deal`, "
      "`set_aside`, `discard`, `last_hand`, `shoe_complete`, `collect_vigorish`, `jackpot`, "
      "`stop`, `resume`, `reshuffle`: the shuffle a fault interrupted is done again, "
      "681a.9(c))"),
    E(r.TableOpened, "info", "-",
      "the table opened (631a.4 card inspection follows)"),
    E(r.ShuffleRequested, "info", "-",
      "a shuffle was asked for"),
    E(r.NewDealer, "info", "-",
      "a new dealer took over; `burn` when 681a.7(c) asks for a burn card"),
    E(r.WagerAccepted, "info", "-",
      "a wager on the layout"),
    E(r.NoMoreBets, "info", "-",
      "every seat locked (`cause`: dealer, button, first-card); the round opens"),
    # --- the shoe and its cards ---------------------------------------------------------
    E(r.ShoeLoadDeclared, "info", "-",
      "the dealer's `shoe_loaded` command, before its batch check"),
    E(r.ShoeLoaded, "info", "-",
      "a new shoe (631a.5(e), 681a.7(a))"),
    E(r.ShoeLoadedOutOfTurn, "warning", ANY_DEVICE,
      "the shoe reported a load when the table expected none"),
    E(r.BurnFirstCard, "info", "-",
      "the exposed first card and how many more are burned (631a.5(f), 681a.7(c))",
      shoe_card="exposed first card: burn {burn} more"),
    E(r.BurnCard, "info", "-",
      "a card burned face down",
      shoe_card="(burned face down)"),
    E(r.CardDealt, "info", ANY_DEVICE,
      "a card dealt to a hand", shoe_card="{hand}"),
    E(r.CoverCard, "info", ANY_DEVICE,
      "the cover card (631a.10(d), 681a.7(d))"),
    E(r.CoverCardMisplaced, "warning", ANY_DEVICE,
      "the cover card came out nearer the bottom than 631a.5(d) / 681a.5(d) allow; shown to "
      "the dealer until the shoe is replaced (docs/rulings.md C22)"),
    E(r.CardFaceUp, "warning", ANY_DEVICE,
      "a card found face up mid-round, set aside for a simulated round (631a.15(d))",
      shoe_card="FACE UP in the shoe: set aside (631a.15(d))"),
    E(r.SimulatedRound, "warning", ANY_DEVICE,
      "a disclosed card opened a simulated round (631a.15(d))"),
    E(r.PlayerThirdDisclosed, "warning", "-",
      "the floor declared the last card a Player third card dealt in error and disclosed; "
      "`changed` when the table undid where it had put the card (631a.15(c); docs/rulings.md "
      "C20)"),
    E(r.CardDiscarded, "warning", ANY_DEVICE,
      "a card placed in the discard rack, in no round (631a.3(b), 681a.7(c), 681a.9; "
      "docs/rulings.md C5, C7, C16-C18)", shoe_card="discarded: {ruling}"),
    E(r.CardDuringFault, "error", ANY_DEVICE,
      "a card while a device fault stopped the table"),
    E(r.CardGap, "error", ANY_DEVICE,
      "cards left the shoe unseen (docs/rulings.md C7)"),
    E(r.ShoeReconciled, "info / error", ANY_DEVICE,
      "the shoe's cards against the shuffler's count of its batch"),
    E(r.ShoeComplete, "info", "-",
      "the shoe is finished (631a.10(d), 681a.7(d))"),
    # --- rounds and money ---------------------------------------------------------------
    E(r.SettledFirstFourCards, "info", "-",
      "wagers settled after the first four cards (631a.9(e))"),
    E(r.SettledEndOfRound, "info", "-",
      "wagers settled at the end of the round (631a.12(b))"),
    E(r.RoundSettled, "info", "-",
      "a round's result and every settlement"),
    E(r.RoundVoid, "warning", "-",
      "a void round: the round's settlements, every wager not yet settled returned and "
      "those the first four cards settled standing (631a.15(e); docs/rulings.md C6-C7); "
      "`wagers_stand` (only when true): the wagers stay on the layout for the next live "
      "round (C19, C20), whose record holds them again"),
    E(r.VigorishCollected, "info", "-",
      "marked vigorish collected (631a.13(d)(2))"),
    # --- devices and faults -------------------------------------------------------------
    E(r.DeviceFaulted, "error / warning", ANY_DEVICE,
      "a device fault (docs/faults.md); an error when it stops play"),
    E(r.DeviceFaultCleared, "info", ANY_DEVICE,
      "the device cleared a fault"),
    E(r.DeviceRecovered, "info", ANY_DEVICE,
      "play resumes after a fault"),
    E(r.FaultStillHeld, "info", ANY_DEVICE,
      "a fault cleared while others still hold the table"),
    E(r.FaultAcknowledged, "info", "-",
      "a floor supervisor's ruling on the fault"),
    E(r.SeatSensor, "info", "seats",
      "a debounced sensor change while betting is open"),
    E(r.LateSensorChange, "warning", "seats",
      "a sensor change after the lock: never a wager (631c.2(d)(2))"),
    E(r.ShuffleProgress, "info", ANY_DEVICE,
      "the shuffler's count so far"),
    E(r.ShuffleComplete, "info", ANY_DEVICE,
      "a shuffle finished"),
    E(r.BatchHeld, "info", ANY_DEVICE,
      "the batch the shuffler holds (681a.3(b))"),
    # --- progressives -------------------------------------------------------------------
    E(p.ProgressiveAccepted, "info", "-",
      "the progressive wagers the lock accepted"),
    E(p.ProgressiveWagers, "info", "seats",
      "the progressive wagers booked at the lock"),
    E(p.ProgressiveWagersReturned, "info", "-",
      "progressive wagers returned with a void round"),
    E(p.ProgressiveRoundVoid, "warning", "-",
      "a progressive's side of a void round"),
    E(p.ProgressiveMeter, "info / warning", "-",
      "a progressive meter changed (605a.7)"),
    E(p.ProgressiveAward, "warning", "-",
      "a progressive award, pending, validated or paid (631c.6(c)(5))"),
    E(p.ProgressiveMysteryArmed, "info", "-",
      "a Must-Hit-By trigger committed (631c.6)"),
    E(p.ProgressiveMysteryReveal, "info", "-",
      "a Must-Hit-By trigger revealed"),
    E(p.ProgressiveLinkedContribution, "info", "-",
      "a contribution sent to a linked meter (605a.8)"),
    E(p.JackpotValidated, "info", "-",
      "a floor supervisor validated and paid an award"),
    # --- the critical store -------------------------------------------------------------
    E(s.CriticalMemoryInitialised, "warning", "-",
      "a new keyed store was initialised"),
    E(s.CriticalMemoryCleared, "critical", "-",
      "the critical memory was cleared by a supervisor"),
    E(s.CriticalMemoryVerified, "info", "-",
      "the critical memory verified"),
    E(s.HistoryVerified, "info", "-",
      "at start: the whole history checked (every entry's MAC, every sealed row); the table "
      "settles nothing before it"),
    E(s.CriticalMemoryRechecked, "critical", "-",
      "a verification during play failed, and the same check on a fresh snapshot passed"),
    # --- the witness (controller/witness/) ----------------------------------------------
    E(s.WitnessDown, "warning / error", "-",
      "the witness cannot be reached or cannot be used: heads wait in the outbox"),
    E(s.WitnessUp, "info", "-",
      "the witness answers again; the outbox's heads are sent in order"),
)

KINDS: dict[str, EventKind] = {e.kind: e for e in CATALOGUE}
SEVERITIES = ("info", "warning", "error", "critical")  # every entry has one of these
SHOE_CARD_KINDS = frozenset(e.kind for e in CATALOGUE if e.shoe_card)

DOC = Path(__file__).resolve().parents[2] / "docs" / "control-api.md"
_SECTION = re.compile(r"(## Event kinds\n\n)(.*?)(\n## )", re.S)


def entry_of(record: EventRecord, severity: str | None = None
             ) -> tuple[str, str, dict[str, Any]]:
    """The kind, severity and payload a record is appended to the log with
    (`kind_and_severity`, then its payload)."""
    kind, chosen = kind_and_severity(record, severity)
    return kind, chosen, record.payload()


def kind_and_severity(record: EventRecord, severity: str | None = None) -> tuple[str, str]:
    """The kind and severity a record is appended to the log with. Anything but a
    catalogued record (a dict, a kind's name) is refused (TypeError), and so is a severity
    the catalogue does not list for its kind (ValueError): `severity` given, else the
    record's own, else the kind's first."""
    if not isinstance(record, EventRecord):
        raise TypeError(f"the event log takes a typed event record (controller/events), not "
                        f"a {type(record).__name__}: build the kind's record where the event "
                        "happens")
    kind = record.KIND
    entry = KINDS.get(kind)
    if entry is None or entry.record is not type(record):
        raise TypeError(f"event record {type(record).__name__} ({kind!r}) is not the "
                        "catalogue's (controller/events/catalogue.py)")
    chosen = severity or record.severity or entry.severities[0]
    if chosen not in entry.severities:
        raise ValueError(f"event {kind!r} with severity {chosen!r}: allowed: "
                         f"{', '.join(entry.severities)} (controller/events/catalogue.py)")
    return kind, chosen


def markdown_table() -> str:
    """The event table of docs/control-api.md."""
    rows = ["Generated from `controller/events/catalogue.py` by `python -m controller.events "
            "--write`; do not edit by hand. The payload's keys are the fields of the kind's "
            "record (controller/events/); a key ending in `?` is left out of the entries that "
            "do not carry it.", "",
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


STALE = ("docs/control-api.md: the event table is stale; run "
         "python -m controller.events --write")


def main(argv: list[str]) -> None:
    """`python -m controller.events [--write | --check]`: print the table, write it into the
    doc, or exit 1 (writing nothing) if the doc's table is not the catalogue's."""
    current = DOC.read_text(encoding="utf-8")
    if "--check" in argv:
        if document(current) != current:
            sys.exit(STALE)
    elif "--write" in argv:
        DOC.write_text(document(current), encoding="utf-8")
    else:
        sys.stdout.write(markdown_table())
