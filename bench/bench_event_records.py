"""CPU cost of a typed event record on the way into the log, beside the dict it replaced.

    .venv/bin/python bench/bench_event_records.py [--events 200000]

The store writes an entry's payload as canonical JSON (`critical.canonical`). Before
controller/events/ the table built that payload as a dict; now it builds the kind's
frozen dataclass, which the store checks against the catalogue and encodes once
(`entry_of`: `payload()`). Both paths are timed here for the two entries a round writes
most (a card, a prompt) and the costliest one it writes once (the round's settlement),
in the thread's own CPU time; the same-run reference is the dict path, so the ratios
say what the records cost on top of it. A card step as a whole (bench_card_step.py) is
dozens of times the dict path's figure.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cards import BackColour, Card  # noqa: E402
from controller.events import entry_of  # noqa: E402
from controller.events.records import (  # noqa: E402
    CardDealt,
    Prompt,
    RoundResult,
    RoundSettled,
    SettledWager,
)
from controller.memory.critical import canonical  # noqa: E402
from controller.rules.wager import Outcome, Settlement  # noqa: E402

CARD = Card.parse("10♥")
WON = Settlement("banker", 3, 5000, Outcome.WIN, Fraction(1), 5000, 250, "Banker wins",
                 "631a.13(c)")


def card_dict() -> str:
    return canonical({"index": 12, "card": str(CARD), "hand": "banker",
                      "slot": "banker_second", "back": BackColour.RED.name.lower()})


def card_record() -> str:
    return canonical(entry_of(CardDealt(12, CARD, "banker", "banker_second",
                                        BackColour.RED))[2])


def prompt_dict() -> str:
    return canonical({"action": "deal", "next": "player_third"})


def prompt_record() -> str:
    return canonical(entry_of(Prompt("deal", next="player_third"))[2])


def _settlement(s: Settlement) -> dict[str, object]:
    return {"seat": s.seat, "wager": s.wager, "amount_cents": s.amount_cents,
            "outcome": s.outcome.value, "odds": str(s.odds), "win_cents": s.win_cents,
            "vigorish_cents": s.vigorish_cents, "vig_marked_cents": 0,
            "net_cents": s.net_cents, "label": s.label, "section": s.section}


def settled_dict() -> str:
    settlements = [_settlement(WON) for _ in range(6)]
    return canonical({"round_no": 7, "simulated": False, "settlements": settlements,
                      "table_net_cents": -WON.net_cents * len(settlements),
                      "result": {"player": [str(CARD)] * 2, "banker": [str(CARD)] * 3,
                                 "player_total": 0, "banker_total": 0, "winner": "banker",
                                 "player_natural": False, "banker_natural": False}})


def settled_record() -> str:
    settlements = tuple(SettledWager.of(WON, vigorish_marked=False) for _ in range(6))
    result = RoundResult((CARD,) * 2, (CARD,) * 3, 0, 0, "banker", player_natural=False,
                         banker_natural=False)
    return canonical(entry_of(RoundSettled.of(7, False, result, settlements))[2])


def cpu_us(fn: Callable[[], str], n: int) -> float:
    fn()
    started = time.thread_time()
    for _ in range(n):
        fn()
    return (time.thread_time() - started) / n * 1e6


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200_000)
    n = parser.parse_args(argv).events
    print(f"{n} of each, thread CPU time (busy machines inflate both columns alike)")
    print(f"{'entry':<14}{'dict us':>9}{'record us':>11}{'ratio':>8}")
    for name, as_dict, as_record, count in (
            ("card", card_dict, card_record, n), ("prompt", prompt_dict, prompt_record, n),
            ("round_settled", settled_dict, settled_record, max(1, n // 20))):
        assert as_dict() == as_record(), name  # the same bytes either way
        plain, typed = cpu_us(as_dict, count), cpu_us(as_record, count)
        print(f"{name:<14}{plain:>9.2f}{typed:>11.2f}{typed / plain:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
