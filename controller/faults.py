"""Every fault that can stop the table, what causes it and what clears it.

Two things live here, both pure (no I/O, no state machine):

* ``CATALOGUE``: for every fault code a device or the table can raise, its cause,
  its exits (the device recovers, a technician's test, a floor supervisor's
  acknowledgement, a restart as the last resort) and the test that takes each
  exit. ``docs/faults.md`` is generated from it (``python -m controller.faults
  --write``); a test fails when the document is stale or a named test is missing.
* ``FaultBook``: the faults holding the table right now. The table stops on the
  first fault and resumes only when the book is empty, so a second fault raised
  while the first holds is never forgotten when the first clears, and an
  acknowledgement says exactly which faults it cleared and which still hold (and
  what clears them).

Why a fault stops play at all (which device the current step needs) stays with
the table; this module only says how each one ends.
"""

from __future__ import annotations

import argparse
import enum
import sys
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


class Exit(enum.Enum):
    """How a fault can end, in the order a technician should try them."""

    DEVICE = "the device recovers"
    TECHNICIAN = "a technician's test"
    SUPERVISOR = "a floor supervisor's acknowledgement"
    RESTART = "a restart (last resort)"


ANY_DEVICE = "any"

LINK_FAULTS = frozenset({"link_down", "incompatible_device"})
"""Faults that the device's link coming back up clears (the driver re-sends the others)."""

REDONE_BY_A_VERIFIED_SHUFFLE = frozenset({
    "shuffler_jam", "shuffler_miscount", "shuffler_cycle_incomplete", "shuffler_batch_missing",
    "shuffle_request_failed"})
"""681a.9(c): a shuffle that failed is redone; a verified count of the batch ends the fault."""


@dataclass(frozen=True)
class FaultExits:
    """One row of the fault table."""

    code: str
    device: str
    cause: str
    exits: tuple[Exit, ...]
    clears: str
    """What clears it, as the technician or supervisor does it."""
    tests: tuple[str, ...]
    """Test functions (``path::name``) that take these exits."""
    stops_play: str = "yes"

    @property
    def acknowledged(self) -> bool:
        return Exit.SUPERVISOR in self.exits


_T_TABLE = "tests/controller/test_faults.py"
_T_HIL = "hil/test_table_faults.py"
_DEVICE_TEST = f"{_T_TABLE}::test_every_fault_a_device_clears_ends_when_it_clears"
_ACK_TEST = f"{_T_TABLE}::test_every_acknowledgeable_fault_ends_with_the_supervisors_acknowledgement"
_ACK_REFUSED_TEST = f"{_T_TABLE}::test_an_acknowledgement_names_every_fault_that_still_holds"
_TECH_TEST = f"{_T_TABLE}::test_a_technicians_shuffle_ends_every_shuffle_fault"
_SHUFFLE_BACK = f"{_T_TABLE}::test_a_table_back_in_shuffling_asks_for_the_reshuffle_681a_9_c"
_T_EXITS = "hil/test_fault_exits.py"  # the same exits through the daemon process
_T_LINK = "tests/drivers/test_link_device_1_1.py"  # the driver's half: what sends the clear
_T_DRILL = "hil/test_practice_service_drills.py"  # the guide's drills on the practice table

CATALOGUE: tuple[FaultExits, ...] = (
    # --- every device on a firmware_bridge link -------------------------------------------
    FaultExits("link_down", ANY_DEVICE,
               "the device's cable, power or firmware stopped answering",
               (Exit.DEVICE,),
               "reseat the cable / power; the link coming back up clears it (drivers retry "
               "with backoff)",
               (_DEVICE_TEST, f"{_T_HIL}::test_shoe_unplugged_between_rounds_stops_then_resumes_by_itself"),
               "shoe: always; shuffler: while shuffling"),
    FaultExits("incompatible_device", ANY_DEVICE,
               "the device's firmware or protocol version is not approved, or the wrong device "
               "is on the port", (Exit.DEVICE,),
               "install approved firmware or plug in the right device; re-probed every 30 s",
               (_DEVICE_TEST, f"{_T_LINK}::test_h2_refused_device_is_revived_by_its_reset",
                f"{_T_DRILL}::test_drill_wrong_firmware_version"),
               "shoe: always; shuffler: while shuffling"),
    FaultExits("device_overtemp", ANY_DEVICE, "the device is too hot", (Exit.DEVICE,),
               "cool the device; it reports the fault cleared", (_DEVICE_TEST,),
               "shoe: always; shuffler: while shuffling"),
    FaultExits("device_internal_error", ANY_DEVICE, "the device's firmware failed",
               (Exit.DEVICE,),
               "power-cycle the device: after it reconnects, a fault it no longer reports is "
               "cleared by the status reconciliation", (
                   _DEVICE_TEST, f"{_T_LINK}::"
                   "test_an_internal_error_ends_when_the_power_cycled_device_no_longer_reports_it"),
               "shoe: always; shuffler: while shuffling"),
    # --- card-reading shoe ------------------------------------------------------------
    FaultExits("shoe_lid_open", "shoe", "the shoe's lid is open: its reading is not trusted",
               (Exit.DEVICE,), "close the lid", (_DEVICE_TEST, _ACK_REFUSED_TEST)),
    FaultExits("shoe_sensor_fault", "shoe", "a card sensor failed its self-check",
               (Exit.DEVICE,), "the shoe reports the sensor good again (clean or replace it)",
               (_DEVICE_TEST,)),
    FaultExits("shoe_card_jam", "shoe", "a card is stuck in the exit slot", (Exit.DEVICE,),
               "free the card", (_DEVICE_TEST,)),
    FaultExits("shoe_card_face_up", "shoe", "the shoe found a card face up (631a.15)",
               (Exit.DEVICE, Exit.SUPERVISOR),
               "the shoe clears it when the card is out; otherwise the supervisor rules",
               (_DEVICE_TEST, _ACK_TEST)),
    FaultExits("shoe_misread", "shoe",
               "a card left the shoe unread: the table never guesses it", (Exit.SUPERVISOR,),
               "a floor supervisor acknowledges; a round it was part of is void (631a.15(e))",
               (_ACK_TEST, f"{_T_HIL}::test_a_misread_card_voids_the_round_after_the_supervisor_rules")),
    FaultExits("shoe_index_gap", "shoe",
               "card indexes skipped: cards left the shoe unseen by the controller",
               (Exit.SUPERVISOR,),
               "a floor supervisor checks the cards dealt against the discard rack and "
               "acknowledges", (_ACK_TEST,)),
    # --- automated batch shuffler (681a.3, 681a.9(c)) ---------------------------------
    FaultExits("shuffler_jam", "shuffler", "cards jammed in the mechanism",
               (Exit.DEVICE, Exit.TECHNICIAN),
               "clear the jam (the shuffler reports it cleared), then the batch is reshuffled "
               "(681a.9(c)); or a technician's verified shuffle", (
                   _DEVICE_TEST, _TECH_TEST, _SHUFFLE_BACK,
                   f"{_T_EXITS}::test_681a_9_c_a_jam_held_after_the_acknowledgement_says_what_clears_it"),
               "while shuffling"),
    FaultExits("shuffler_miscount", "shuffler",
               "the batch did not count out exactly (missing, extra or duplicate cards)",
               (Exit.TECHNICIAN, Exit.SUPERVISOR),
               "count the batch by hand, replace missing or foreign cards; a technician's "
               "verified shuffle, or the supervisor's acknowledgement and the table reshuffles",
               (_TECH_TEST, _ACK_TEST, _SHUFFLE_BACK), "while shuffling"),
    FaultExits("shuffler_cycle_incomplete", "shuffler",
               "a shuffle stopped before its cycle finished (reported, no progress for 30 s, or "
               "the link failed mid-shuffle)", (Exit.DEVICE, Exit.TECHNICIAN, Exit.SUPERVISOR),
               "681a.9(c): the batch is reshuffled: by the table once a replugged shuffler "
               "answers without the interrupted shuffle, after a technician's verified "
               "shuffle, or after the supervisor's acknowledgement",
               (_DEVICE_TEST, _TECH_TEST, _ACK_TEST, _SHUFFLE_BACK,
                f"{_T_EXITS}::test_681a_9_c_an_incomplete_cycle_is_acknowledged_and_the_table_reshuffles"),
               "while shuffling"),
    FaultExits("shuffler_door_open", "shuffler", "the shuffler's door is open", (Exit.DEVICE,),
               "close the door", (_DEVICE_TEST,), "while shuffling"),
    FaultExits("shuffler_batch_missing", "shuffler",
               "the batch asked for is not in the shuffler (681a.3(b))",
               (Exit.TECHNICIAN, Exit.SUPERVISOR),
               "load the right batch and run the technician's shuffle with it, or the "
               "supervisor acknowledges and the table shuffles the batch the shuffler holds",
               (_TECH_TEST, _ACK_TEST, _SHUFFLE_BACK, f"{_T_EXITS}::"
                "test_681a_3_b_a_shuffle_asked_for_the_batch_not_in_the_shuffler_has_two_exits"),
               "while shuffling"),
    FaultExits("shuffle_request_failed", "shuffler",
               "the daemon could not ask the shuffler for the shuffle", (
                   Exit.TECHNICIAN, Exit.SUPERVISOR),
               "check the shuffler, then a technician's shuffle or the supervisor's "
               "acknowledgement (the table asks again)", (_TECH_TEST, _ACK_TEST, _SHUFFLE_BACK),
               "while shuffling"),
    FaultExits("batch_mismatch", ANY_DEVICE,
               "cards of the wrong batch at the table (681a.3(b))", (Exit.SUPERVISOR,),
               "a floor supervisor sorts the batches and acknowledges", (_ACK_TEST,)),
    # --- seat panel and display: they never stop the main game ----------------------
    FaultExits("seat_sensor_chatter", "seats", "a progressive sensor chatters", (Exit.DEVICE,),
               "the sensor goes quiet (check its cable); the seat's progressive wagers are "
               "refused meanwhile", ("tests/drivers/test_seats.py::test_chattering_sensor_is_taken_out_of_play",), "no"),
    FaultExits("seat_sensor_present_at_open", "seats",
               "a progressive sensor reads a chip as betting opens (stuck or a leftover chip)",
               (Exit.DEVICE,), "clear the spot; the seat is readmitted when it reads empty",
               ("tests/drivers/test_seats.py::"
                "test_sensor_reading_a_wager_when_betting_opens_is_a_fault_until_cleared",), "no"),
    FaultExits("gpio_unavailable", "seats",
               "the GPIO pins could not be claimed (wrong pin factory, pins held elsewhere)",
               (Exit.RESTART,),
               "fix gpio.pin_factory or free the pins, then restart the table service: the "
               "pins are claimed only at start",
               ("tests/drivers/test_seats.py::test_unavailable_gpio_is_refused_not_a_crash",
                f"{_T_EXITS}::"
                "test_gpio_unavailable_ends_when_the_pin_factory_is_fixed_and_the_table_restarts",
                f"{_T_DRILL}::test_drill_seat_pins_unavailable"),
               "no"),
    FaultExits("display_lamp_failed", "display", "a win light or meter segment draws no current",
               (Exit.DEVICE,), "replace the lamp; the display reports it cleared",
               ("hil/test_devices_display.py::"
                "test_631c_6_c_5_failed_win_lamp_is_a_fault_until_the_lamp_is_replaced",), "no"),
    # --- the table itself ---------------------------------------------------------------
    FaultExits("out_of_order", "table",
               "the store failed its integrity check (quick_check, event chain, meters)",
               (Exit.RESTART,),
               "tablectl events verify names what failed; with the daemon stopped a technician "
               "restores the store with its table.critical directory from a backup taken "
               "together (docs/technician-guide.md), or a floor supervisor clears critical "
               "memory (tabled --clear-store); the restart re-runs the check, which must pass",
               ("tests/controller/test_daemon.py::"
                "test_a_tampered_event_log_puts_the_table_out_of_order",
                f"{_T_EXITS}::test_out_of_order_ends_when_the_store_is_restored_from_its_backup_"
                "and_the_table_restarts",
                f"{_T_EXITS}::test_out_of_order_ends_when_a_supervisor_clears_the_store_and_"
                "the_table_restarts", f"{_T_DRILL}::test_drill_broken_hash_chain",
                f"{_T_DRILL}::test_drill_the_table_out_of_order_for_the_witness",
                f"{_T_DRILL}::test_drill_a_table_never_initialised"),
               "yes, every device event is ignored"),
)


def lookup(device: str, code: str) -> FaultExits | None:
    """The catalogue row of a fault; seat codes carry their seat (``seat_sensor_chatter:3``)."""
    base = code.split(":", 1)[0]
    for row in CATALOGUE:
        if row.code == base and row.device in (device, ANY_DEVICE):
            return row
    return None


def how_it_clears(device: str, code: str) -> str:
    row = lookup(device, code)
    if row is None:
        return ("an unlisted fault: a floor supervisor acknowledges it once the device is "
                "checked")
    return row.clears


def acknowledgeable(device: str, code: str) -> bool:
    """A fault the catalogue does not know is one a supervisor may rule on: never a wedge."""
    row = lookup(device, code)
    return row is None or row.acknowledged


@dataclass(frozen=True)
class HeldFault:
    device: str
    code: str
    detail: str
    action: str

    def as_dict(self) -> dict[str, str]:
        return asdict(self)

    def holding(self) -> dict[str, str]:
        """What an acknowledgement that could not clear it answers."""
        return {"device": self.device, "code": self.code,
                "clears": how_it_clears(self.device, self.code)}


@dataclass(frozen=True)
class Acknowledgement:
    cleared: tuple[HeldFault, ...]
    still_held: tuple[HeldFault, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"cleared": [f.as_dict() for f in self.cleared],
                "still_held": [f.holding() for f in self.still_held]}


class FaultBook:
    """The faults holding the table, first one first (the one the dealer was told about)."""

    def __init__(self, held: Iterable[HeldFault] = ()) -> None:
        self._held: list[HeldFault] = list(held)

    @property
    def held(self) -> tuple[HeldFault, ...]:
        return tuple(self._held)

    def __bool__(self) -> bool:
        return bool(self._held)

    def first(self) -> dict[str, str] | None:
        return self._held[0].as_dict() if self._held else None

    def hold(self, fault: HeldFault) -> bool:
        """Add a fault; False if that device's code already holds (a repeat)."""
        if any((f.device, f.code) == (fault.device, fault.code) for f in self._held):
            return False
        self._held.append(fault)
        return True

    def clear(self, device: str, code: str | None) -> tuple[HeldFault, ...]:
        """The device cleared ``code``; ``None``: its link came back up (its link faults end)."""
        gone = tuple(f for f in self._held if f.device == device and (
            f.code == code if code is not None else f.code in LINK_FAULTS))
        self._drop(gone)
        return gone

    def verified_shuffle(self) -> tuple[HeldFault, ...]:
        """681a.9(c): a verified count of a batch ends the shuffle faults."""
        gone = tuple(f for f in self._held
                     if f.device == "shuffler" and f.code in REDONE_BY_A_VERIFIED_SHUFFLE)
        self._drop(gone)
        return gone

    def technician_may_shuffle(self) -> bool:
        """Every fault holding the table is one a verified shuffle ends (or the shuffler's
        link, which the shuffle request waits for)."""
        return bool(self._held) and all(
            f.device == "shuffler" and (f.code in REDONE_BY_A_VERIFIED_SHUFFLE
                                        or f.code in LINK_FAULTS) for f in self._held)

    def acknowledge(self) -> Acknowledgement:
        cleared = tuple(f for f in self._held if acknowledgeable(f.device, f.code))
        self._drop(cleared)
        return Acknowledgement(cleared, tuple(self._held))

    def reset(self) -> None:
        self._held.clear()

    def to_list(self) -> list[dict[str, str]]:
        return [f.as_dict() for f in self._held]

    @classmethod
    def from_saved(cls, saved: Iterable[Mapping[str, str]] | None,
                   first: Mapping[str, str] | None) -> FaultBook:
        """From a snapshot; one saved before the book existed has only its first fault."""
        rows = list(saved) if saved is not None else ([first] if first else [])
        return cls(HeldFault(r["device"], r["code"], r.get("detail", ""), r.get("action", ""))
                   for r in rows)

    def _drop(self, gone: Iterable[HeldFault]) -> None:
        gone_keys = {(f.device, f.code) for f in gone}
        self._held = [f for f in self._held if (f.device, f.code) not in gone_keys]


# --- docs/faults.md -------------------------------------------------------------------------

DOC = Path(__file__).resolve().parents[1] / "docs" / "faults.md"


def render_markdown() -> str:
    lines = [
        "# Faults and their exits",
        "",
        "Generated from `controller/faults.py` by `python -m controller.faults --write`; "
        "do not edit by hand (tests/controller/test_faults.py fails when it is stale).",
        "",
        "A fault that stops play puts the table in DEVICE_FAULT; it resumes the step it",
        "interrupted once **every** fault holding it has ended. A supervisor's",
        "acknowledgement (`tablectl fault acknowledge`) clears the faults it can and names",
        "each one that still holds with what clears it. A table back in SHUFFLING after a",
        "fault asks the shuffler for the batch again (681a.9(c)), or goes on to the cut if a",
        "technician's shuffle already verified it (`tablectl test shuffler --shuffle`: it puts",
        "cards back into play, so the account needs the dealer's group as well as the",
        "technician's, docs/technician-guide.md). `python -m hil.soak --shoes 500` takes",
        "these exits at random on the simulated table (hil/soak.py). Exits, in the order to",
        "try them:",
        "",
    ]
    lines += [f"- **{e.name.lower()}**: {e.value}" for e in Exit]
    lines += ["", "| fault | device | stops play | cause | exits | what clears it | tested by |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for row in CATALOGUE:
        tests = "<br>".join(f"`{t}`" for t in row.tests)
        lines.append(f"| `{row.code}` | {row.device} | {row.stops_play} | {row.cause} | "
                     f"{', '.join(e.name.lower() for e in row.exits)} | {row.clears} | "
                     f"{tests} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m controller.faults",
                                     description="docs/faults.md from the fault catalogue: "
                                     "printed, written, or checked.")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--write", action="store_true", help=f"write {DOC.name}")
    what.add_argument("--check", action="store_true",
                      help=f"write nothing; exit 1 if {DOC.name} is stale")
    args = parser.parse_args(argv[1:])
    text = render_markdown()
    if args.write:
        DOC.write_text(text, encoding="utf-8")
        print(f"wrote {DOC}")
        return 0
    if args.check:
        current = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
        if current != text:
            print(f"{DOC} is stale: run python -m controller.faults --write", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
