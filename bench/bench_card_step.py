"""CPU time of the daemon's step for one card, in-process, beside a bare SQLite commit.

    .venv/bin/python bench/bench_card_step.py [--shoes 3]

`bench_latency.py` times a card end to end through the daemon process, the
pseudo-terminal and a subscriber: on a busy machine those percentiles follow the
load. This benchmark times what the daemon's loop itself spends on a card: the
table's step for a CardDrawn (`Table.handle`: the rules, the store transaction with
its log entries, row digests and seal, the saved state) and the lines the control
socket sends two caught-up subscribers (`ControlServer.publish`, then what
`EventStreams.serve` writes), in the thread's own CPU time, which a busy machine
inflates far less than wall-clock time. Only cards decided inside a round are counted (those
answered by a "deal" prompt), not the round's last card, which settles and flushes. Garbage
is collected as the daemon collects it (controller/collector.py): between rounds.

The table's store lets a card's entries wait in memory (docs/rulings.md C31), as the daemon's
does while its shoe keeps its cards until they are committed (a 1.2 shoe); with a 1.1 shoe
the daemon writes each card's step at its end, which `--seal-every-step` approaches.

The same-run reference is the floor of any step: one transaction of one small row
in a store with the same settings (WAL, synchronous=NORMAL, unflushed), so the
ratio printed says how many such commits a card step costs here.
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import header, pi4, write_figures  # noqa: E402
from cards import BackColour, Card, Rank, Suit  # noqa: E402
from controller.collector import RoundCollector  # noqa: E402
from controller.config import load_config  # noqa: E402
from controller.control import ControlServer  # noqa: E402
from controller.memory.lifecycle import init_store, open_store  # noqa: E402
from controller.logsetup import configure_logging  # noqa: E402
from controller.rules.game import build_game  # noqa: E402
from controller.table.machine import TableState  # noqa: E402
from controller.table.rules_seam import RulesAdapter  # noqa: E402
from controller.table.table import Table  # noqa: E402
from drivers.protocols import CardDrawn, LockedOut, ShuffleComplete  # noqa: E402

CONFIG = ROOT / "config" / "simulated-table.toml"
WAGERS = ((1, "banker", 1000), (2, "player", 2500), (4, "tie", 500), (6, "banker", 5000),
          (8, "player", 1000))
IN_ROUND = (TableState.NO_MORE_BETS, TableState.DEALING, TableState.THIRD_CARDS)
SUBSCRIBERS = 2  # bench_latency's: the simulated dealer and the benchmark's watcher
TARGET_US = 50  # issue 31: a decided card's step, thread CPU p50 (bench/done_when.py too)


def card_steps(folder: Path, seed: int, counted: frozenset[int] | None = None, *,
               seal_every_step: bool = False) -> tuple[list[int], list[int]]:
    """Thread CPU ns of every decided card step of one shoe, on a new table's store, and
    those cards' indexes. With `counted` (indexes a first deal of the same seed found
    decided), each of those steps runs inside `functools.reduce`, the C function that
    callgrind counts instructions in (`--toggle-collect`), and nothing else does.
    `seal_every_step`: the store opened with `[store] seal_every_step` (docs/rulings.md C29)."""
    store = init_store(str(folder / "table.sqlite"), operator="bench", table_id="T1")
    if seal_every_step:
        store.close()
        store = open_store(str(folder / "table.sqlite"), seal_every_step=True)
    config = load_config(CONFIG)
    table = Table(table_id="T1", seats=14, rules=RulesAdapter(build_game(config.submission)),
                  store=store, lock_seats=lambda cause: LockedOut(cause, 0.0, frozenset()))
    server = ControlServer(str(folder / "control.sock"))
    server.set_history(store.events_from)
    server.follow(store)
    prompts: list[str] = []
    store.subscribe(lambda e: prompts.append(e.payload["action"]) if e.kind == "prompt" else None)
    deck = [Card(rank, suit) for rank in Rank for suit in Suit] * 8
    random.Random(seed).shuffle(deck)
    cards = iter(enumerate(deck))

    def draw() -> CardDrawn:
        index, card = next(cards)
        return CardDrawn("shoe", index, card, BackColour.RED, False)

    table.cmd_open()
    table.cmd_shuffle(8)
    table.handle(ShuffleComplete("shuffler", BackColour.RED, len(deck), 0, 0, 0))
    table.on_shoe_loaded(BackColour.RED)
    while table.state is TableState.BURN:
        table.handle(draw())
    sent = [0] * SUBSCRIBERS
    _stream(server, sent)
    # The daemon's garbage collection (controller/collector.py): what start-up built frozen,
    # young collections between rounds, not in a card's step.
    collector = RoundCollector()
    collector.start()
    samples: list[int] = []
    decided: list[int] = []
    while table.state is TableState.BETTING_OPEN and len(deck) - table.shoe.cards_drawn > 12:
        for seat, wager, cents in WAGERS:
            table.cmd_place_wager(seat, wager, cents)
        table.cmd_no_more_bets()
        _stream(server, sent)
        while table.state in IN_ROUND:
            event = draw()

            def step(_: object = None, __: object = None, event: CardDrawn = event) -> None:
                table.handle(event)
                _stream(server, sent)

            started = time.thread_time_ns()
            if counted is not None and event.index in counted:
                functools.reduce(step, [None], None)
            else:
                step()
            spent = time.thread_time_ns() - started
            if table.state in IN_ROUND and prompts[-1] == "deal":
                samples.append(spent)
                decided.append(event.index)
        _stream(server, sent)
        collector.between_rounds(table.state)
    collector.stop()
    store.close()
    return samples, decided


def _stream(server: ControlServer, sent: list[int]) -> None:
    """What each subscriber's stream does once woken (EventStreams.serve): the lines it
    sends, short of the socket."""
    for number, after in enumerate(sent):
        page = server.streams.stream_page(after)
        if page:
            b"".join(line for _, line in page)
            sent[number] = page[-1][0]


def bare_commit_ns(folder: Path, samples: int = 2000, *, counted: bool = False) -> list[int]:
    """One transaction of one small row, WAL, synchronous=NORMAL, no flush: the floor
    (with `counted`, each inside `functools.reduce`, as `card_steps` counts cards)."""
    db = sqlite3.connect(folder / "bare.sqlite", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
    spent = []

    def commit(number: int, _: object = None) -> int:
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO t(v) VALUES (?)", (f"row {number}",))
        db.execute("COMMIT")
        return number

    for number in range(samples):
        started = time.thread_time_ns()
        if counted:
            functools.reduce(commit, [None], number)
        else:
            commit(number)
        spent.append(time.thread_time_ns() - started)
    db.close()
    return spent


def quantiles(samples: list[int]) -> tuple[float, float, float]:
    ordered = sorted(samples)
    return (ordered[len(ordered) // 10] / 1e3, statistics.median(ordered) / 1e3,
            ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] / 1e3)


def counted_child(kind: str, seed: int, seal_every_step: bool) -> int:
    """Under callgrind: the steps to count, each inside functools.reduce; prints how many."""
    configure_logging(level="info", stream=open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115
    with tempfile.TemporaryDirectory() as tmp:
        if kind == "cards":
            (Path(tmp) / "dry").mkdir()
            (Path(tmp) / "counted").mkdir()
            _, decided = card_steps(Path(tmp) / "dry", seed,  # not counted: outside reduce
                                    seal_every_step=seal_every_step)
            card_steps(Path(tmp) / "counted", seed, frozenset(decided),
                       seal_every_step=seal_every_step)
            print(f"steps {len(decided)}")
        else:
            print(f"steps {len(bare_commit_ns(Path(tmp), 200, counted=True))}")
    return 0


def instructions(kind: str, seed: int, seal_every_step: bool = False) -> tuple[int, int]:
    """(instructions, steps) counted by callgrind in a child that runs `kind`'s steps."""
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", "--toggle-collect=functools_reduce",
             f"--callgrind-out-file={tmp}/callgrind.out", sys.executable, __file__,
             "--counted-child", kind, "--seed", str(seed),
             *(["--seal-every-step"] if seal_every_step else [])],
            capture_output=True, text=True, check=True)
    collected = re.search(r"Collected : (\d+)", run.stderr)
    steps = re.search(r"steps (\d+)", run.stdout)
    if collected is None or steps is None:
        raise SystemExit(f"callgrind gave no count:\n{run.stderr[-2000:]}")
    return int(collected.group(1)), int(steps.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shoes", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--callgrind", action="store_true",
                        help="also count instructions per card under valgrind's callgrind "
                             "(one more shoe, about a minute)")
    parser.add_argument("--seal-every-step", action="store_true",
                        help="the store with [store] seal_every_step = true: a card's step "
                             "sealed by itself (docs/rulings.md C29's option)")
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="also write the figures to PATH (bench/done_when.py reads them)")
    parser.add_argument("--counted-child", choices=("cards", "bare"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.counted_child:
        return counted_child(args.counted_child, args.seed, args.seal_every_step)
    header("bench_card_step: the daemon's CPU for one card, in-process" + (
        ", every step sealed ([store] seal_every_step)" if args.seal_every_step else ""))
    # The daemon's logging (a card's entries are below its level), written nowhere.
    configure_logging(level="info", stream=open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115
    steps: list[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        for shoe in range(args.shoes):
            folder = Path(tmp) / f"shoe{shoe}"
            folder.mkdir()
            steps += card_steps(folder, args.seed + shoe,
                                seal_every_step=args.seal_every_step)[0]
        bare = bare_commit_ns(Path(tmp))
    p10, p50, p99 = quantiles(steps)
    b10, b50, b99 = quantiles(bare)
    print(f"card step (thread CPU)      n={len(steps):5d}  p10 {p10:7.1f} us  p50 {p50:7.1f} us  "
          f"p99 {p99:7.1f} us   (Pi 4 estimate p50 {pi4(p50):7.1f} us)")
    print(f"reference: bare commit      n={len(bare):5d}  p10 {b10:7.1f} us  p50 {b50:7.1f} us  "
          f"p99 {b99:7.1f} us")
    print(f"card step / bare commit: p50 {p50 / b50:.1f}x  p10 {p10 / b10:.1f}x   (target p50 "
          f"<= {TARGET_US} us {'OK' if p50 <= TARGET_US else 'OVER'})")
    figures: dict[str, float] = {"card_step_p50_us": p50, "bare_commit_p50_us": b50,
                                 "card_steps": len(steps)}
    if args.callgrind:
        if shutil.which("valgrind") is None:
            print("callgrind: valgrind is not installed (apt install valgrind): not counted")
            return 1
        card_ir, cards = instructions("cards", args.seed, args.seal_every_step)
        bare_ir, bares = instructions("bare", args.seed)
        print(f"callgrind instructions: card step {card_ir / cards:,.0f} per decided card "
              f"(n={cards}); bare commit {bare_ir / bares:,.0f} (n={bares}); ratio "
              f"{card_ir / cards / (bare_ir / bares):.1f}x (deterministic: the same code gives "
              "the same count on any load)")
        figures.update(card_instructions=card_ir / cards, bare_instructions=bare_ir / bares)
    write_figures(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
