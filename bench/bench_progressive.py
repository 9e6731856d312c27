"""How many rounds a second the progressive ledger books on this machine's disk.

    python bench/bench_progressive.py [rounds]

Each round: a lock-out with 14 seats on the sensors (Heavenly 9 + Mystery),
then the result; every step fsyncs (WAL, synchronous=FULL), as on the Pi.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

from controller.progressive.config import parse_progressive_config
from controller.progressive.system import ProgressiveSystem
from controller.rules.baccarat import BaccaratCoup, NextCard
from cards import Card, Rank, Suit
from controller.store import Store
from drivers.protocols import LockedOut

SEATS = 14
DEFAULT_ROUNDS = 500


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
        problems = system.verify()
        store.close()
    print(f"{rounds} rounds in {elapsed:.2f} s: {rounds / elapsed:.0f} rounds/s, "
          f"{1000 * elapsed / rounds:.1f} ms/round; verify: {problems or 'ok'}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_ROUNDS)
