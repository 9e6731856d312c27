"""The arguments each control command takes, checked before any handler runs
(controller/control_args.py); a command not named here takes none."""

from __future__ import annotations

from collections.abc import Mapping

from cards import BackColour
from controller.control_args import FLAG, Arg, choice, number, printable_name, text, whole
from controller.events import SEVERITIES

MAX_DEALER_CHARS = 40
BACK_COLOURS = tuple(colour.name.lower() for colour in BackColour)
_SEAT = whole(1, 14, required=True)
_RELEASE = text("a release tag, e.g. v0.2.0", max_chars=64, required=True)
COMMAND_ARGS: Mapping[str, Mapping[str, Arg]] = {
    "rounds": {"limit": whole(1, 100_000, default=10), "after_round_id": whole(0, 2**63 - 1)},
    "events": {
        "after_seq": whole(0, 2**62, default=0), "limit": whole(1, 100_000, default=50),
        "kind": text("an event kind, e.g. card, device_fault, prompt", max_chars=64),
        "device": text("a device name: shoe, shuffler, seats, display", max_chars=64),
        "severity": choice(SEVERITIES),
        "since": number(0, 2**40, "seconds since the epoch (a number >= 0)"),
        "oldest_first": FLAG,
    },
    "verify_chain": {"full": FLAG},
    "shuffle": {"back": choice(BACK_COLOURS)},
    "shoe_loaded": {"back": choice(BACK_COLOURS)},
    "place_wager": {"seat": _SEAT,
                    "wager": text("a wager the rules offer, e.g. banker, player, tie",
                                  required=True),
                    "amount_cents": whole(1, 10**9, required=True)},
    # The scoreboard's header shows it whole beside the game (hil/test_scoreboard_browser).
    "new_dealer": {"dealer": printable_name("the dealer's name", max_chars=MAX_DEALER_CHARS,
                                              default="")},
    "self_test": {"device": text("a configured device (tablectl devices)", max_chars=64,
                                 required=True)},
    "seat_leaves": {"seat": _SEAT},
    "adjust_meter": {"progressive": text("a progressive's name (tablectl meters)", required=True),
                     "level": text("a level of that progressive (tablectl meters)",
                                   required=True),
                     "delta_cents": whole(-10**12, 10**12, required=True, nonzero=True),
                     "reason": text("why the meter is corrected", required=True)},
    "validate_award": {"award_id": whole(1, 2**62, required=True)},
    "software_change": {"action": choice(("activate", "rollback"), required=True),
                        "release": _RELEASE},
    "software_record": {"event": choice(("staged", "automatic_rollback"), required=True),
                        "release": _RELEASE,
                        "from_release": text("the release that did not start", max_chars=64,
                                             default="")},
}


def back_colour(value: str | None) -> BackColour | None:
    """A `back` argument (already checked against BACK_COLOURS) as the batch's colour."""
    return BackColour[value.upper()] if value is not None else None
