"""How many rounds a second the progressive ledger books on this machine's disk.

    python bench/bench_progressive.py [rounds]

Each round: a lock-out with 14 seats on the sensors (Heavenly 9 + Mystery),
then the result; every money step is flushed before it returns, as on the Pi.
The same-run reference is the physical limit of the disk: the rounds' flushes
(counted by the store) times one bare write + fdatasync on the same file system.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.machine import header, pi4  # noqa: E402
from controller.progressive.config import parse_progressive_config
from controller.progressive.system import ProgressiveSystem
from controller.rules.baccarat import BaccaratCoup, NextCard
from cards import Card, Rank, Suit
from controller.memory.store import Store
from drivers.protocols import LockedOut

SEATS = 14
DEFAULT_ROUNDS = 500


def bare_flush_s(folder: Path, samples: int = 200) -> float:
    """One small write and fdatasync on the same file system: the disk's floor per flush."""
    fd = os.open(folder / "flush.probe", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        started = time.perf_counter()
        for _ in range(samples):
            os.write(fd, b"x" * 512)
            os.fdatasync(fd)
        return (time.perf_counter() - started) / samples
    finally:
        os.close(fd)


def main(rounds: int) -> None:
    config = parse_progressive_config({
        "table": {"id": "BENCH", "seats": SEATS},
        "progressive": {"h9": {"game": "heavenly_9", "mystery": "A",
                               "mystery_wager_dollars": 5}}}, "bench")
    rng = random.Random(7)
    cards = [Card(r, s) for _ in range(8) for r in Rank for s in Suit]
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "bench.sqlite")
        system = ProgressiveSystem(config, store)
        wagers = [{"seat": s, "wager": "banker", "amount_cents": 2500} for s in range(1, SEATS + 1)]
        started = time.perf_counter()
        for round_id in range(1, rounds + 1):
            if len(cards) < 10:
                cards = [Card(r, s) for _ in range(8) for r in Rank for s in Suit]
            rng.shuffle(cards)
            coup = BaccaratCoup()
            while coup.next_card() is not NextCard.NONE:
                coup.place(cards.pop())
            system.open_betting()
            system.on_lock(LockedOut("button", 0.0, frozenset(range(1, SEATS + 1))), wagers,
                           round_id)
            for award in system.on_round_result(round_id, coup.round_view(), []):
                if award.state == "pending":
                    system.validate_award(award.award_id, "bench")
        elapsed = time.perf_counter() - started
        flushes = store.durability.flushed_commits
        problems = system.verify()
        store.close()
        floor = bare_flush_s(Path(tmp)) * flushes
    header("bench_progressive: the progressive ledger's rounds on this machine's disk")
    print(f"{rounds} rounds in {elapsed:.2f} s: {rounds / elapsed:.0f} rounds/s, "
          f"{1000 * elapsed / rounds:.2f} ms/round (Pi 4 estimate of the CPU part "
          f"{1000 * pi4(elapsed - floor) / rounds:.2f} ms + its flushes); verify: "
          f"{problems or 'ok'}")
    print(f"flushes: {flushes} ({flushes / rounds:.1f} a round); the disk's floor for them "
          f"{floor:.2f} s; ratio to the floor {elapsed / floor:.1f}x")


def arguments(argv: list[str] | None = None) -> int:
    """The rounds to book, from the command line: a count of 1 or more."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rounds", nargs="?", type=int, default=DEFAULT_ROUNDS,
                        help=f"rounds to book (default {DEFAULT_ROUNDS}; 1 or more)")
    rounds: int = parser.parse_args(argv).rounds
    if rounds < 1:
        parser.error(f"rounds {rounds}: allowed: 1 or more")
    return rounds


if __name__ == "__main__":
    main(arguments())
