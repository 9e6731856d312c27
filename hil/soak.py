"""A soak with faults: N shoes through the daemon, faults injected at random, recovered by a
simulated technician and floor supervisor, and everything checked against our own tally.

    python -m hil.soak --shoes 500 --seed 1234          # a casino's week (issue 13)
    TABLE_SOAK_SHOES=20 ./run-tests hil/test_soak.py    # what CI runs (the default; a 0.5 s
                                                        # shoe reconnect cap: hil/test_soak.py)

Faults (``KINDS``): the shoe unplugged and replugged between rounds and mid-round, the
shoe's frames lost (its firmware stops answering until the keepalive notices) and
corrupted (line noise), the shuffler jammed, asked for the wrong batch, short of a card
and unplugged mid-shuffle, the lock-out button bouncing, a card found face up. Each is
recovered by the exit docs/faults.md gives it: the device recovering, the technician's
test (a shuffle of the right batch) or the supervisor's acknowledgement, chosen at random
where there are two. A fault that the table does not leave within the harness's timeout
is a wedge, and the run fails there.

At the end the rounds, seat totals, wagers and event log of the daemon must equal what
the harness saw and did (``Tally``); every stored round is re-settled by hil/oracle.py.
The seed is printed first: ``--seed`` replays a run exactly as far as the dealer's and
the injector's choices go. The shoe is a protocol 1.1 shoe; ``--shoe 1.2`` runs one with
the card commit acknowledgement (docs/protocol.md 6.6), which sends its uncommitted cards
and cover card again after every reconnect, for the driver to drop those the table has.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import random
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.control import ControlError
from controller.events import decode_event
from controller.events.records import SettledWager
from hil.oracle import check_round
from hil.table_harness import HarnessResult, TableHarness

CONFIG = Path(__file__).parents[1] / "config" / "simulated-table.toml"
SUPERVISOR = {"supervisor": "floor", "pin": "2468"}  # config/simulated-table.toml
ROUNDS_PER_SHOE = 76  # an 8-deck shoe, measured (README); spaces the faults out
FAULT_TIMEOUT_S = 30.0  # a fault not raised or not left within this is a failure
PAGE = 2_000  # rounds or events per control reply when reading them all back
KEEP_EVENTS = 20_000
"""The newest events the harness keeps (about five shoes'): the soak looks back only to its
last mark, and a week's events kept whole were 1.1 GiB of this process by shoe 300."""

# Where each fault is injected: the prompt the harness pauses at before acting on it.
BETTING, DEALING, SHOE_END = "place_bets", "deal", "shoe_complete"


@dataclass
class SoakResult:
    seed: int
    shoes: int = 0
    injected: collections.Counter[str] = field(default_factory=collections.Counter)
    exits: collections.Counter[str] = field(default_factory=collections.Counter)
    acknowledgements: int = 0
    rounds_settled: int = 0
    rounds_simulated: int = 0
    rounds_void: int = 0
    seconds: float = 0.0

    @property
    def faults(self) -> int:
        return sum(self.injected.values())

    def summary(self) -> str:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.injected.items()))
        exits = ", ".join(f"{k} {n}" for k, n in sorted(self.exits.items()))
        return (f"soak seed {self.seed}: {self.shoes} shoes, {self.rounds_settled} rounds settled "
                f"({self.rounds_simulated} simulated, {self.rounds_void} void), "
                f"{self.faults} faults [{kinds}], exits [{exits}], "
                f"{self.acknowledgements} acknowledgements, {self.seconds:.0f} s")


class Soak:
    """The simulated technician and supervisor around a ``TableHarness``."""

    def __init__(self, table: TableHarness, seed: int, *, faults_per_shoe: float = 1.5,
                 say: Callable[[str], None] = lambda line: None) -> None:
        self.table = table
        self.rng = random.Random(seed)
        self.result = SoakResult(seed)
        self.mean_gap = max(1, round(ROUNDS_PER_SHOE / faults_per_shoe))
        self.say = say
        self.kinds: dict[str, tuple[str, Callable[[], Awaitable[None]]]] = {
            "shoe_unplugged": (BETTING, self._shoe_unplugged),
            "shoe_unplugged_mid_round": (DEALING, self._shoe_unplugged),
            "shoe_frames_lost": (BETTING, self._shoe_frames_lost),
            "shoe_frames_corrupted": (BETTING, self._shoe_frames_corrupted),
            "lockout_bounce": (BETTING, self._lockout_bounce),
            "card_face_up": (BETTING, self._card_face_up),
            "shuffler_jam": (SHOE_END, self._shuffler_jam),
            "shuffler_wrong_batch": (SHOE_END, self._shuffler_wrong_batch),
            "shuffler_miscount": (SHOE_END, self._shuffler_miscount),
            "shuffler_unplugged": (SHOE_END, self._shuffler_unplugged),
        }

    async def run(self, shoes: int) -> SoakResult:
        started = time.monotonic()
        table = self.table
        while table.result.shoes_completed < shoes:
            kind = self.rng.choice(sorted(self.kinds))
            trigger, inject = self.kinds[kind]
            skip = 0 if trigger == SHOE_END else self.rng.randint(0, 2 * self.mean_gap)
            await table.play(shoes=shoes - table.result.shoes_completed,
                             until=_at_prompt(trigger, skip, len(table.result.events)))
            if table.result.shoes_completed >= shoes:
                break
            self.say(f"  ## fault {self.result.faults + 1}: {kind} "
                     f"(shoe {table.result.shoes_completed + 1})")
            await inject()
            self.result.injected[kind] += 1
            await table.resync()
        self.result.seconds = time.monotonic() - started
        self.result.shoes = table.result.shoes_completed
        rounds = table.result.rounds
        self.result.rounds_settled = sum(1 for r in rounds if not r.get("simulated"))
        self.result.rounds_simulated = len(rounds) - self.result.rounds_settled
        self.result.rounds_void = len(table.result.void_rounds)
        return self.result

    # --- the faults and their exits --------------------------------------------------------

    async def _fault(self, *codes: str) -> dict[str, Any]:
        status = await self.table.wait_for_state("device_fault", timeout=FAULT_TIMEOUT_S)
        held = {f["code"] for f in status["faults_holding"]}
        assert held & set(codes), (codes, status["faults_holding"])
        return status

    async def _left_fault(self, *states: str) -> None:
        await self.table.wait_for_state(*states, timeout=FAULT_TIMEOUT_S)

    async def _acknowledge(self) -> dict[str, Any]:
        assert self.table.client is not None
        answer = await self.table.client.call("acknowledge_fault", auth=SUPERVISOR)
        self.result.acknowledgements += 1
        return dict(answer["acknowledgement"])

    async def _shoe_unplugged(self) -> None:
        state = (await self.table.call("status"))["state"]
        await self.table.shoe.unplug()
        await self._fault("link_down")
        await self.table.shoe.replug()
        await self._left_fault(state)
        self.result.exits["device"] += 1

    async def _shoe_frames_lost(self) -> None:
        await self.table.shoe.stop_answering()  # frames go nowhere until the link notices
        await self._fault("link_down")
        await self.table.shoe.resume_answering()
        await self._left_fault("betting_open")
        self.result.exits["device"] += 1

    async def _shoe_frames_corrupted(self) -> None:
        before = _line_errors(await self.table.call("devices"))
        noise = bytes(self.rng.randrange(1, 256) for _ in range(self.rng.randint(8, 300)))
        self.table.shoe.garbage(noise)
        deadline = time.monotonic() + FAULT_TIMEOUT_S
        while _line_errors(await self.table.call("devices")) <= before:  # the link saw it
            assert time.monotonic() < deadline, "the shoe's link never counted the noise"
            await asyncio.sleep(0.01)
        # No fault: the link discards the noise; the frames after it arrive intact.
        status = await self.table.call("status")
        assert status["state"] == "betting_open" and not status["faults_holding"], status
        self.result.exits["none (counted)"] += 1

    async def _lockout_bounce(self) -> None:
        status = await self.table.call("status")
        await self.table._place_bets(status["round"]["round_no"] + 1)  # presses lock-out once
        self.table._press_lockout()  # the contact bounces: a second press, same round
        await self.table.wait_for_state("no_more_bets", "dealing", timeout=FAULT_TIMEOUT_S)
        self.result.exits["none (idempotent)"] += 1

    async def _card_face_up(self) -> None:
        self.table.shoe.face_up_next()
        await self.table.shoe.draw()  # 631a.15(d): opens a simulated round
        self.result.exits["none (simulated round)"] += 1

    async def _held_batch(self) -> str:
        return self.table.shuffler("STATUS").split()[0].removeprefix("held=").lower()

    async def _shuffle_fault_then(self, code: str, request: dict[str, str],
                                  technician: Callable[[], Awaitable[None]] | None) -> None:
        """Ask for a shuffle that faults with ``code``; then the technician's test or, at
        random where the catalogue allows both, the supervisor's acknowledgement."""
        await self.table.call("shuffle", **request)
        await self._fault(code)
        if technician is not None and self.rng.random() < 0.5:
            await technician()
            self.result.exits["technician"] += 1
        else:
            answer = await self._acknowledge()
            assert [f["code"] for f in answer["cleared"]] == [code], answer
            self.result.exits["supervisor"] += 1
        await self._left_fault("cut")

    async def _shuffler_jam(self) -> None:
        self.table.shuffler(f"JAM {self.rng.randint(5, 400)}")
        await self.table.call("shuffle")
        await self._fault("shuffler_jam")
        answer = await self._acknowledge()  # the supervisor may ask: the jam still holds
        assert [f["code"] for f in answer["still_held"]] == ["shuffler_jam"], answer
        self.table.shuffler("CLEAR_JAM")
        await self._left_fault("cut")
        self.result.exits["device"] += 1

    async def _shuffler_wrong_batch(self) -> None:
        held = await self._held_batch()
        wrong = "red" if held == "blue" else "blue"

        async def right_batch() -> None:
            await self.table.call("shuffle", back=held)

        await self._shuffle_fault_then("shuffler_batch_missing", {"back": wrong}, right_batch)

    async def _shuffler_miscount(self) -> None:
        held = await self._held_batch()
        self.table.shuffler(f"REMOVE_CARD {held} 1")
        await self.table.call("shuffle")
        await self._fault("shuffler_miscount")
        self.table.shuffler(f"RESTORE {held}")  # the technician finds and replaces the card
        if self.rng.random() < 0.5:
            await self.table.call("shuffle", back=held)
            self.result.exits["technician"] += 1
        else:
            await self._acknowledge()
            self.result.exits["supervisor"] += 1
        await self._left_fault("cut")

    async def _shuffler_unplugged(self) -> None:
        await self.table.call("shuffle")
        await _until(lambda: "shuffling=1" in self.table.shuffler("STATUS"))
        self.table.shuffler("UNPLUG")
        await self._fault("shuffler_cycle_incomplete", "link_down")
        self.table.shuffler("REPLUG")
        # 681a.9(c): the cycle was cut short. Once the shuffler answers again its driver
        # finds the interrupted shuffle gone and clears the fault (the table reshuffles);
        # if the supervisor gets there first, the acknowledgement ends it.
        deadline = time.monotonic() + FAULT_TIMEOUT_S
        while (status := await self.table.call("status"))["state"] != "cut":
            assert time.monotonic() < deadline, f"wedged after a shuffler replug: {status}"
            held = [f["code"] for f in status["faults_holding"]]
            if held == ["shuffler_cycle_incomplete"] and self.rng.random() < 0.5:
                with contextlib.suppress(ControlError):  # the device may have been first
                    await self._acknowledge()
                    self.result.exits["supervisor"] += 1
                    continue
            await asyncio.sleep(0.05)
        self.result.exits["device"] += 1


def _at_prompt(action: str, skip: int, start: int) -> Callable[[HarnessResult], bool]:
    """Pause play at the ``skip``+1-th prompt ``action`` after event number ``start``."""
    seen = 0
    checked = start

    def until(result: HarnessResult) -> bool:
        nonlocal seen, checked
        for event in result.events[checked:]:
            if event["kind"] == "prompt" and event["payload"]["action"] == action:
                seen += 1
        checked = len(result.events)
        last = result.events[-1] if result.events else None
        return (seen > skip and last is not None and last["kind"] == "prompt"
                and last["payload"]["action"] == action)

    return until


async def _until(condition: Callable[[], bool], timeout: float = FAULT_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"condition not met within {timeout:g} s")
        await asyncio.sleep(0.01)


def _line_errors(devices: list[dict[str, Any]]) -> int:
    shoe = next(d for d in devices if d["device"] == "shoe")
    return sum(v for k, v in shoe["counters"].items() if "crc" in k or "resync" in k or "bad" in k)


# --- the independent tally ------------------------------------------------------------------


async def all_events(table: TableHarness) -> list[dict[str, Any]]:
    """The whole log, a page at a time (the control API returns at most 100,000 per call)."""
    log: list[dict[str, Any]] = []
    while True:
        page = await table.call("events", after_seq=log[-1]["seq"] if log else 0, limit=PAGE,
                                oldest_first=True)
        if not page:
            return log
        log += page


@dataclass
class LogTally:
    """What the tally needs of the whole log, read a page at a time: a week's log (about
    2 million entries) held whole was most of the soak process's memory."""

    entries: int = 0
    last_seq: int = 0
    kinds: collections.Counter[str] = field(default_factory=collections.Counter)
    untyped: list[str] = field(default_factory=list)  # the first few, for the report

    def add(self, event: dict[str, Any]) -> None:
        self.entries += 1
        self.last_seq = event["seq"]
        self.kinds[event["kind"]] += 1
        if len(self.untyped) < 5 and decode_event(event) is None:
            self.untyped.append(f"{event['seq']} {event['kind']}")


async def log_tally(table: TableHarness) -> LogTally:
    tally = LogTally()
    while True:
        page = await table.call("events", after_seq=tally.last_seq, limit=PAGE,
                                oldest_first=True)
        if not page:
            return tally
        for event in page:
            tally.add(event)


async def all_rounds(table: TableHarness) -> list[dict[str, Any]]:
    """Every stored round, a page at a time (a casino week's rounds in one reply would be
    far over the control socket's reply size)."""
    rounds: list[dict[str, Any]] = []
    while True:
        page = await table.call("rounds", limit=PAGE,
                                after_round_id=rounds[-1]["round_id"] if rounds else 0)
        if not page:
            return rounds
        rounds += page


Wager = tuple[int, str, int]  # (seat, wager, cents)


def wagers_in_rounds(stored: list[dict[str, Any]]) -> collections.Counter[Wager]:
    """(seat, wager, cents) of every wager the store holds in a live round, each placement
    once: a round closed void with its wagers standing for the next live round
    (docs/rulings.md C19, C20) holds the same wagers as that next round."""
    return collections.Counter(
        (w["seat"], w["wager"], w["amount_cents"]) for r in stored
        if not r["simulated"] and not (r["result"] or {}).get("wagers_stand")
        for w in r["wagers"])


def wager_discrepancies(result: HarnessResult, stored: list[dict[str, Any]],
                        status: dict[str, Any]) -> tuple[collections.Counter[Wager],
                                                         collections.Counter[Wager]]:
    """(wagers the daemon acknowledged that the store holds nowhere, wagers the store holds
    that were never acknowledged, beyond those whose reply a kill cut: in doubt). Held means
    in a stored live round, or on the layout while no round is open (an open round's
    wagers are in its stored record already). Both empty when nothing was lost or made up."""
    held = wagers_in_rounds(stored)
    if status["round"]["round_id"] is None:
        held.update((w["seat"], w["wager"], w["amount_cents"]) for w in status["round"]["wagers"])
    placed = collections.Counter(w[1:] for w in result.wagers_placed)
    doubt = collections.Counter(w[1:] for w in result.wagers_in_doubt)
    return placed - held, held - placed - doubt


async def check_tally(table: TableHarness, soak: SoakResult) -> list[str]:
    """What the daemon stored against what the harness saw and did; [] when they agree."""
    problems: list[str] = []
    # The table as the last shoe left it, read before anything else: the simulated devices
    # answer from this process's event loop, and a tally that held it for seconds would
    # itself make the shoe's link fall silent (a week's 40,000 rounds re-settled at once did:
    # link_down at the very end of seed 2500769141).
    status = await table.call("status")
    stored = await all_rounds(table)
    by_id = {r["round_id"]: r for r in stored}
    seen = {r["round_id"]: r for r in table.result.rounds}
    voided = {r["round_id"]: r for r in table.result.void_rounds}
    for n, record in enumerate(stored):
        for problem in check_round(record):
            problems.append(f"round {record['round_id']}: {problem}")
        if n % 500 == 0:
            await asyncio.sleep(0)  # let the simulated devices answer their keepalives
    settled = {i for i, r in by_id.items() if r["state"] == "settled"}
    void = {i for i, r in by_id.items() if r["state"] == "void"}
    if settled != set(seen):
        problems.append(f"settled rounds: store {len(settled)}, harness {len(seen)}; "
                        f"only in store {sorted(settled - set(seen))[:5]}, "
                        f"only seen {sorted(set(seen) - settled)[:5]}")
    if void != set(voided):
        problems.append(f"void rounds: store {sorted(void)}, harness {sorted(voided)}")
    for round_id, payload in seen.items():
        if round_id in by_id and by_id[round_id]["settlements"] != payload["settlements"]:
            problems.append(f"round {round_id}: stored settlements differ from the log's")
    # Seat totals: the sum of every closed round's settlements the harness saw, to the cent.
    expected: collections.Counter[str] = collections.Counter()
    for payload in [*seen.values(), *voided.values()]:
        for settled_wager in map(SettledWager.decode, payload["settlements"]):
            expected[str(settled_wager.seat)] += settled_wager.net_cents
    totals = {seat: t["net_cents"] for seat, t in (await table.call("seat_totals")).items()}
    if {k: v for k, v in totals.items() if v} != {k: v for k, v in expected.items() if v}:
        problems.append(f"seat totals: store {totals}, harness {dict(expected)}")
    # Every wager the daemon acknowledged is in exactly one live round, or still on the layout.
    lost, unexplained = wager_discrepancies(table.result, stored, status)
    if lost or unexplained:
        problems.append(f"wagers: acknowledged but stored nowhere {dict(lost)}, stored but "
                        f"never acknowledged {dict(unexplained)}")
    # The log: its chain verifies, and it says what the harness did. It is read first and
    # the chain verified after, in full: the table keeps writing (prompts, device health),
    # so the check's own snapshot may end later than the log read, never earlier, and every
    # entry from the first must verify.
    log = await log_tally(table)
    chain = await table.call("verify_chain", full=True)
    kinds = log.kinds
    if log.untyped:
        problems.append(f"log entries that are not their kind's typed record "
                        f"(controller/events): {log.untyped}")
    if not (chain["from_seq"] == 1 and chain["entries"] == chain["log_seq"] >= log.entries
            and log.last_seq == log.entries):
        problems.append(f"event chain verified {chain} but the log has {log.entries} "
                        f"entries up to seq {log.last_seq}")
    if kinds["shoe_complete"] != table.result.shoes_completed:
        problems.append(f"shoes: log {kinds['shoe_complete']}, harness "
                        f"{table.result.shoes_completed}")
    if kinds["round_settled"] != len(table.result.rounds):
        problems.append(f"round_settled: log {kinds['round_settled']}, harness "
                        f"{len(table.result.rounds)}")
    acknowledged = kinds["fault_acknowledged"]
    if acknowledged != soak.acknowledgements:
        problems.append(f"acknowledgements: log {acknowledged}, harness {soak.acknowledgements}")
    if status["state"] == "device_fault" or status["faults_holding"]:
        problems.append(f"the table ends in a fault: {status['faults_holding']}")
    return problems


async def soak(shoes: int, seed: int, workdir: Path, *, faults_per_shoe: float = 1.5,
               say: Callable[[str], None] = lambda line: None,
               config: Path = CONFIG, overrides: Sequence[str] = (), card_commit: bool = False,
               ) -> tuple[SoakResult, list[str]]:
    """``overrides``: ``--set`` settings for the daemon (the CI soak's shorter shoe
    reconnect cap, hil/test_soak.py); ``card_commit``: a protocol 1.2 shoe."""
    async with TableHarness(config, workdir, seed=seed, extra_overrides=overrides,
                            keep_events=KEEP_EVENTS, card_commit=card_commit) as table:
        runner = Soak(table, seed, faults_per_shoe=faults_per_shoe, say=say)
        result = await runner.run(shoes)
        problems = await check_tally(table, result)
    return result, problems


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m hil.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--shoes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=None, help="replay a run (default: random)")
    parser.add_argument("--faults-per-shoe", type=float, default=1.5)
    parser.add_argument("--workdir", help="keep the store and the daemon's log here")
    parser.add_argument("--shoe", choices=("1.1", "1.2"), default="1.1",
                        help="the simulated shoe's protocol (default 1.1; 1.2 keeps its cards "
                             "until the table commits them)")
    args = parser.parse_args()
    if args.shoes < 1 or args.faults_per_shoe <= 0:
        parser.error("--shoes must be 1 or more and --faults-per-shoe more than 0")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    print(f"soak: {args.shoes} shoes, seed {seed} (replay: --seed {seed}), protocol {args.shoe} "
          "shoe", flush=True)

    async def run(workdir: Path) -> int:
        result, problems = await soak(args.shoes, seed, workdir,
                                      faults_per_shoe=args.faults_per_shoe,
                                      say=lambda line: print(line, flush=True),
                                      card_commit=args.shoe == "1.2")
        print(result.summary())
        for problem in problems:
            print("MISMATCH", problem)
        print("tally: " + ("exact" if not problems else f"{len(problems)} mismatches"))
        return 0 if not problems and result.shoes == args.shoes else 1

    if args.workdir:
        return asyncio.run(run(Path(args.workdir)))
    with tempfile.TemporaryDirectory(prefix="tabled-soak-") as tmp:
        return asyncio.run(run(Path(tmp)))


if __name__ == "__main__":
    sys.exit(main())
