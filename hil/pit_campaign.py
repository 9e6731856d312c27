"""The pit's tables, servers, page and faults (`python -m hil.pit`, hil/test_pit.py).

Every table is a `TableHarness` (a real daemon on simulated devices) playing its share of
the shoes; a fault task injects the shared servers' faults as the pit's progress reaches
each point of the plan, never while a forced hit is under way (a forced hit is a test of
the race between two tables, not of a link that happens to be down); then
`hil.pit_checks` checks the pit.

Two faults are dealt by the table's own play, not beside it: a pair's forced hit (both
tables lock out a suited 9 tie together; their claims wait at the pair's gate and are
released at once: hil/pit_race.py) and a kill (the dealer's chip on HIT_SEAT, the lock-out,
SIGKILL with the link sync held so the contribution is unsent: `kill_round`). Each daemon
runs with controller/progressive/link_seams.py's variables: every table the sync hold's
file (absent but for a kill), the pairs' tables their gate.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import random
import secrets
import signal
import sqlite3
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cards import Card
from controller.control import ControlError
from controller.progressive.link_seams import SYNC_HOLD_ENV
from hil.cuttable_proxy import CuttableProxy
from hil.pit_race import GATE_KEY_BASE, HitPair
from hil.pit_servers import PrivateBroker, PrivatePostgres
from hil.table_harness import PlayerPlan, TableHarness

SUPERVISOR = {"supervisor": "floor", "pin": "2468"}  # config/pit-table.toml's demo supervisor
# 631c.2(g)(1): a suited three-card 9 tie. Player A♠ 2♠ 6♠ = 9; Banker A♠ 3♠ = 4 draws on the
# Player's third card 6 (631a.11, Table 1) and takes 5♠ = 9.
SUITED_NINE_TIE = [Card.parse(c) for c in ("A♠", "A♠", "2♠", "3♠", "6♠", "5♠")]
# A seat the simulated players never use: a sensor pressed and released every round at full
# speed trips the seat panel's chatter rule (drivers/seats.py), which then ignores it.
HIT_SEAT = 5
# The chip is on the sensor this long before the dealer presses the lock-out, as at a real
# table: longer than the sensor's debounce (config/pit-table.toml's 20 ms) on a busy machine.
CHIP_BEFORE_LOCK_S = 0.2
ROUNDS_PER_SHOE = 70  # about what an 8-deck shoe deals: the progress the faults are spread on
LOCAL_DSN = "host=127.0.0.1 port=5432 dbname=test user=postgres"
LOCAL_BROKER = ("127.0.0.1", 1883)
LINK_UP_TIMEOUT_S = 60.0
AWARD_CLAIM_TIMEOUT_S = 60.0
# A round locked and not yet over: its contributions were booked at the lock-out.
IN_ROUND = ("no_more_bets", "dealing", "first_four_settled", "third_cards", "result",
            "settlement")
HOLD_FILE = "hold-link-sync"  # in a table's folder: its link sync is held while it exists
FAULT_SETTLE_S = 2 * 2.0  # two of the daemon's linked syncs (controller/daemon.py)
STARTS_AT_ONCE = 4  # daemons starting together: each start reads its whole store
UNTIL_STOPPED = 10**6  # shoes: play on until the `until` of the call holds


@dataclass(frozen=True)
class PitPlan:
    tables: int = 20
    shoes: int = 20  # in all, shared out over the tables
    rounds: int | None = None  # per table instead of whole shoes (the suite's short pit)
    pace_s: float = 0.0
    seed: int = 0
    faults: bool = True
    private: bool = True
    pg_restarts: int = 3
    broker_restarts: int = 2
    cut_s: float = 60.0
    hit_pairs: int = 5  # pairs of tables forced to hit the linked meter in the same instant
    kills: int = 2  # tables killed with SIGKILL just after a lock-out (its contribution unsent)
    progressive_chance: float = 0.3

    def but(self, **changes: Any) -> PitPlan:
        return dataclasses.replace(self, **changes)


# A second of betting a round: dealt flat out on a quiet machine the pit's shoes were over
# (72 s) before the faults, which wait for moments with no forced hit under way, had all
# landed (2 of 3 PostgreSQL restarts, 1 of 2 kills); at this pace they land mid-play.
CAMPAIGN = PitPlan(pace_s=1.0)
SHORT = PitPlan(tables=3, shoes=3, rounds=12, pg_restarts=1, broker_restarts=1, cut_s=4.0,
                hit_pairs=1, kills=1)


@dataclass
class PitTable:
    table_id: str
    harness: TableHarness
    proxy: CuttableProxy | None
    shoes: int
    hold: Path  # while this file exists the daemon's link sync sends nothing (link_seams)
    hits: list[tuple[int, HitPair]] = field(default_factory=list)
    kill: asyncio.Future[bool] | None = None  # a kill round the fault task asked for
    forced_hits: int = 0
    done: bool = False


@dataclass
class FaultLog:
    pg_restarts: int = 0
    broker_restarts: int = 0
    cut_s: float = 0.0
    cut_table: str | None = None
    cut_link_down_seen_s: float | None = None  # the table said "unavailable" this soon
    cut_dealing_s: float | None = None  # how long of the cut the table was still dealing
    cut_rounds: int = 0  # rounds it settled while cut off
    kills: list[tuple[str, int]] = field(default_factory=list)  # table, outbox rows unsent
    unsent_at_kills: list[tuple[str, int]] = field(default_factory=list)  # (table, seq)


class Pit:
    def __init__(self, plan: PitPlan, workdir: Path, config: Path, *,
                 say: Callable[[str], None] = print, page_port: int = 0,
                 keep_running: bool = False) -> None:
        self.plan, self.workdir, self.config, self.say = plan, workdir, config, say
        self.page_port, self.keep_running = page_port, keep_running
        self.rng = random.Random(plan.seed)
        self.tag = secrets.token_hex(3)
        self.site = f"pit-{self.tag}"
        self.linked_schema, self.witness_schema = f"pit_{self.tag}", f"pit_witness_{self.tag}"
        self.tables: list[PitTable] = []
        self.pairs: list[HitPair] = []
        self.faults = FaultLog()
        self.pg: PrivatePostgres | None = None
        self.broker: PrivateBroker | None = None
        self.admin_dsn = LOCAL_DSN
        self.broker_at = LOCAL_BROKER
        self.witness_roles: list[str] = []
        self.page: asyncio.subprocess.Process | None = None
        self.page_url = ""
        self.hits_under_way = 0
        self.finished = False
        self.faults_over = asyncio.Event()
        # A server fault and the time the tables take to see it and recover (two link
        # syncs): no forced hit starts meanwhile.
        self.fault_under_way = False

    # --- progress ----------------------------------------------------------------------

    def rounds_played(self) -> int:
        return sum(len(t.harness.result.rounds) for t in self.tables)

    def rounds_planned(self) -> int:
        if self.plan.rounds is not None:
            return self.plan.rounds * self.plan.tables
        return self.plan.shoes * ROUNDS_PER_SHOE

    async def reach(self, fraction: float) -> bool:
        """Wait until the pit has played this share of its rounds and no forced hit is under
        way; False if the pit finished first."""
        while not self.finished:
            if self.rounds_played() >= fraction * self.rounds_planned() and \
                    not self.hits_under_way:
                return True
            await asyncio.sleep(0.2)
        return False


async def start_servers(pit: Pit, stack: contextlib.AsyncExitStack) -> None:
    if pit.plan.private:
        pit.pg = await asyncio.to_thread(PrivatePostgres().__enter__)
        stack.push_async_callback(asyncio.to_thread, pit.pg.__exit__, None, None, None)
        pit.broker = await asyncio.to_thread(PrivateBroker(pit.workdir / "mosquitto").__enter__)
        stack.push_async_callback(asyncio.to_thread, pit.broker.__exit__, None, None, None)
        pit.admin_dsn, pit.broker_at = pit.pg.dsn, ("127.0.0.1", pit.broker.port)
    from controller.witness.server import apply_setup

    await asyncio.to_thread(apply_setup, pit.admin_dsn, pit.witness_schema)
    if not pit.plan.private:
        stack.push_async_callback(asyncio.to_thread, drop_schemas, pit)
    pit.say(f"Pit {pit.tag}: {pit.plan.tables} tables, seed {pit.plan.seed}; PostgreSQL "
            f"{pit.admin_dsn.split(' user')[0]} (linked schema {pit.linked_schema}, witness "
            f"schema {pit.witness_schema}); broker {pit.broker_at[0]}:{pit.broker_at[1]}, "
            f"site {pit.site}")


def drop_schemas(pit: Pit) -> None:
    """On the shared servers, the pit leaves nothing behind."""
    import psycopg

    from hil.mqtt_cleanup import clear_retained
    from hil.witness_sim import drop_witness

    drop_witness(pit.admin_dsn, pit.witness_schema, pit.witness_roles)
    with psycopg.connect(pit.admin_dsn, autocommit=True) as admin:
        admin.execute(f"DROP SCHEMA IF EXISTS {pit.linked_schema} CASCADE")
    for table in pit.tables:
        with contextlib.suppress(OSError, TimeoutError):
            clear_retained(*pit.broker_at, "casino", pit.site, table.table_id)


def table_overrides(pit: Pit, table_id: str, pg_port: int, role: str) -> list[str]:
    dbname = "postgres" if pit.plan.private else "test"
    server = f"host=127.0.0.1 port={pg_port} dbname={dbname}"
    return [f"table.id={table_id}", f"linked.dsn={server} user=postgres",
            f"linked.schema={pit.linked_schema}", f"linked.group=pit-{pit.tag}",
            f"mqtt.host={pit.broker_at[0]}", f"mqtt.port={pit.broker_at[1]}",
            f"mqtt.site={pit.site}", f"witness.dsn={server} user={role}",
            f"witness.schema={pit.witness_schema}"]


async def start_tables(pit: Pit, stack: contextlib.AsyncExitStack) -> None:
    from controller.witness.server import add_table

    plan = pit.plan
    ids = [f"PIT-{index + 1:02d}" for index in range(plan.tables)]
    if plan.faults:
        pit.pairs = [HitPair(pair, GATE_KEY_BASE + pair + 1, (ids[2 * pair], ids[2 * pair + 1]))
                     for pair in range(plan.hit_pairs)]
    for index, table_id in enumerate(ids):
        proxy = None
        pg_port = pit.pg.port if pit.pg is not None else 5432
        pairs = [p for p in pit.pairs if table_id in p.table_ids]
        # A pair's tables are never cut off: they reach PostgreSQL directly, since a hop
        # through a proxy thread in this (busy) process would only add its jitter to the
        # spacing of the pair's claims.
        if plan.private and not pairs:
            proxy = CuttableProxy(("127.0.0.1", pg_port))
            stack.callback(proxy.close)
            pg_port = proxy.port
        role = await asyncio.to_thread(add_table, pit.admin_dsn, table_id,
                                       schema=pit.witness_schema)
        pit.witness_roles.append(role)
        players = PlayerPlan(progressive=plan.progressive_chance, betting_s=plan.pace_s)
        hold = pit.workdir / table_id / HOLD_FILE
        # The test seams (controller/progressive/link_seams.py): the link sync's hold for the
        # kills, and a pair's claim gate for its forced hits.
        env = {SYNC_HOLD_ENV: str(hold)}
        for pair in pairs:
            env.update(pair.env(HIT_SEAT))
        harness = TableHarness(pit.config, pit.workdir / table_id, seed=plan.seed * 1000 + index,
                               players=players, extra_env=env,
                               extra_overrides=table_overrides(pit, table_id, pg_port, role))
        shoes = plan.shoes // plan.tables + (index < plan.shoes % plan.tables)
        pit.tables.append(PitTable(table_id, harness, proxy, shoes, hold,
                                   [(4 + 3 * p.index, p) for p in pairs]))
    gate = asyncio.Semaphore(STARTS_AT_ONCE)

    async def start(table: PitTable) -> None:
        async with gate:
            await stack.enter_async_context(table.harness)

    await asyncio.gather(*(start(t) for t in pit.tables))
    pit.say(f"{len(pit.tables)} daemons up: {', '.join(t.table_id for t in pit.tables)}")


async def start_page(pit: Pit, stack: contextlib.AsyncExitStack) -> None:
    port_file = pit.workdir / "pit-page.port"
    port_file.unlink(missing_ok=True)
    log = open(pit.workdir / "pit-page.log", "ab")  # noqa: SIM115 - handed to the child
    pit.page = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "controller.display.pit", "--broker",
        f"{pit.broker_at[0]}:{pit.broker_at[1]}", "--site", pit.site, "--listen",
        f"127.0.0.1:{pit.page_port}", "--port-file", str(port_file), stdout=log,
        stderr=asyncio.subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    log.close()
    page = pit.page

    async def stop() -> None:
        if page.returncode is None:
            page.send_signal(signal.SIGTERM)
            await page.wait()

    stack.push_async_callback(stop)
    deadline = time.monotonic() + 30
    while not port_file.exists():
        if page.returncode is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the pit page did not start; see {pit.workdir / 'pit-page.log'}")
        await asyncio.sleep(0.05)
    pit.page_url = f"http://127.0.0.1:{port_file.read_text().strip()}/pit"
    pit.say(f"Pit page: {pit.page_url}")


# --- the tables' play ----------------------------------------------------------------------

def read_store(store_path: str, sql: str, parameters: tuple[Any, ...] = ()
               ) -> list[tuple[Any, ...]]:
    """A table's store, read-only beside its running daemon (SQLite's WAL allows it)."""
    db = sqlite3.connect(f"file:{store_path}?mode=ro", uri=True, timeout=10)
    try:
        return db.execute(sql, parameters).fetchall()
    finally:
        db.close()


UNSENT_SEQS = "SELECT seq FROM progressive_outbox WHERE acked_at IS NULL"


def unsent_rows(store_path: str) -> int:
    return int(read_store(store_path, "SELECT COUNT(*) FROM progressive_outbox WHERE "
                                      "acked_at IS NULL")[0][0])


async def ask(h: TableHarness, command: str, **args: Any) -> Any:
    """A command on a connection of its own: the harness's own is busy with the dealer's
    play, and one connection takes one request at a time. None while the daemon is down
    (killed, restarting)."""
    from controller.control import ControlClient

    try:
        client = await ControlClient(h.socket).connect()
    except (OSError, ConnectionError):
        return None
    try:
        return await client.call(command, **args)
    except (OSError, ConnectionError):
        return None
    finally:
        await client.close()


async def stale(h: TableHarness) -> bool | None:
    """605a.8: whether the table shows its linked meter as stale (the wager unavailable)."""
    meters = await ask(h, "meters")
    return None if meters is None else any(m.get("stale") for m in meters)


def jackpots(events: Iterable[dict[str, Any]]) -> int:
    return sum(1 for e in events if e["kind"] == "prompt"
               and e["payload"].get("action") == "jackpot")


async def link_up(table: PitTable) -> None:
    """605a.8: the linked wager is offered again (the meters are not stale)."""
    deadline = time.monotonic() + LINK_UP_TIMEOUT_S
    while await stale(table.harness) is not False:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{table.table_id}: the link stayed down {LINK_UP_TIMEOUT_S} s")
        await asyncio.sleep(0.2)


async def forced_hit(pit: Pit, table: PitTable, pair: HitPair) -> float | None:
    """Both tables of the pair lock out a round with a Heavenly 9 wager at HIT_SEAT on a
    suited 9 tie in the same instant, and their claims are held at the pair's gate until both
    wait there (hil/pit_race.py); returns when this one's lock-out was pressed."""
    h = table.harness
    while pit.fault_under_way:
        await asyncio.sleep(0.1)
    pit.hits_under_way += 1
    try:
        await link_up(table)
        await h.resync()  # the play before stopped on its until (TableHarness.play's contract)
        # One round dealt with the link up: a betting round that opened while it was down
        # offers no linked wager (605a.8) and leaves the seats' sensors unarmed for it.
        settled = len(h.result.rounds)
        await h.play(shoes=1, until=lambda r: len(r.rounds) > settled)
        await h.wait_for_state("betting_open")
        await h.call("place_wager", seat=HIT_SEAT, wager="tie", amount_cents=500)
        sensor = next(s.sensor_pin for s in h.table_config.gpio.seats if s.seat == HIT_SEAT)
        await pair.hold(pit.admin_dsn)  # before either table can claim
        await asyncio.wait_for(pair.barrier.wait(), LINK_UP_TIMEOUT_S * 2)
        pressed = time.time()
        h.pins.press(sensor)
        await asyncio.sleep(CHIP_BEFORE_LOCK_S)
        h._press_lockout()
        h.pins.release(sensor)
        h.shoe.insert_next(SUITED_NINE_TIE)
        await h.resync()
        before, settled = jackpots(h.result.events), len(h.result.rounds)
        await h.play(shoes=1, until=lambda r: jackpots(r.events) > before
                     or len(r.rounds) > settled + 1)
        if jackpots(h.result.events) > before:
            table.forced_hits += 1
            return pressed
        accepted = [e["payload"] for e in h.result.events
                    if e["kind"] == "progressive_accepted"][-1:]
        pit.say(f"  {table.table_id}: the forced round did not hit; at its lock-out: {accepted}")
        return None
    finally:
        pair.done()
        pit.hits_under_way -= 1


async def validate_awards(table: PitTable) -> int:
    """A floor supervisor validates every pending award (631c.6(c)(5)); a linked one whose
    amount the shared ledger has yet to give is retried until it has."""
    h, paid = table.harness, 0
    deadline = time.monotonic() + AWARD_CLAIM_TIMEOUT_S
    while awards := await h.call("awards"):
        for award in awards:
            try:
                assert h.client is not None
                await h.client.call("validate_award", auth=SUPERVISOR, award_id=award["award_id"])
                paid += 1
            except ControlError as exc:
                if "awaits its amount" not in str(exc) or time.monotonic() > deadline:
                    raise
        await asyncio.sleep(0.5)
    return paid


async def play_table(pit: Pit, table: PitTable) -> None:
    h, plan = table.harness, pit.plan
    for hit_round, pair in table.hits:
        await h.play(shoes=1, until=lambda r, n=hit_round: len(r.rounds) >= n)  # type: ignore[misc]
        await forced_hit(pit, table, pair)
        await pair.settled()
        await validate_awards(table)
    rounds = plan.rounds
    while True:
        if rounds is not None:
            # A short pit plays on until the faults are over: each must land mid-play.
            await h.play(shoes=UNTIL_STOPPED, until=lambda r: (
                len(r.rounds) >= rounds and pit.faults_over.is_set()) or table.kill is not None)
            more = not pit.faults_over.is_set() or len(h.result.rounds) < rounds
        else:
            await h.play(shoes=max(0, table.shoes - h.result.shoes_completed),
                         until=lambda r: table.kill is not None)
            more = h.result.shoes_completed < table.shoes
        if table.kill is None or not more:
            break
        await kill_round(pit, table)
    table.done = True
    if table.kill is not None:  # asked as the table finished: the next victim's
        table.kill.set_result(False)
        table.kill = None


# --- the faults -------------------------------------------------------------------------------

async def cut_off(pit: Pit, table: PitTable) -> None:
    """The table's link to PostgreSQL cut for the whole `cut_s`: a table that finishes its
    shoes meanwhile stays up, cut off, until the end (the pit's end waits for it); how long
    it dealt while cut off and how many rounds are recorded."""
    assert table.proxy is not None
    f = pit.faults
    f.cut_table = table.table_id
    table.proxy.cut()
    started, rounds = time.monotonic(), len(table.harness.result.rounds)
    pit.say(f"  fault: {table.table_id} cut off from PostgreSQL for {pit.plan.cut_s:g} s")
    while time.monotonic() - started < pit.plan.cut_s:
        if f.cut_link_down_seen_s is None and await stale(table.harness):
            f.cut_link_down_seen_s = round(time.monotonic() - started, 1)
        if table.done and f.cut_dealing_s is None:
            f.cut_dealing_s = round(time.monotonic() - started, 1)
        await asyncio.sleep(0.2)
    table.proxy.restore()
    f.cut_s = round(time.monotonic() - started, 1)
    f.cut_dealing_s = f.cut_s if f.cut_dealing_s is None else f.cut_dealing_s
    f.cut_rounds = len(table.harness.result.rounds) - rounds


async def kill_after_lock(pit: Pit, table: PitTable) -> bool:
    """Ask the table's play for a kill round (`kill_round`); False if it finished first."""
    if table.done:
        return False
    table.kill = asyncio.get_running_loop().create_future()
    return await table.kill


async def kill_round(pit: Pit, table: PitTable) -> None:
    """SIGKILL the daemon right after a lock-out that booked a contribution, with it still
    in the outbox, not yet at the server; then restart it on the same store.

    Left to the simulated players this was luck: at full speed their chips trip the seat
    sensors' chatter rule (drivers/seats.py) after a few rounds, so most lock-outs book no
    contribution, and the link's sync (every 2 s) sent the few that were booked before a poll
    saw the round locked. So, as for a forced hit, the dealer's own chip goes on HIT_SEAT
    before the lock-out (the linked wager offered: the link up when betting opened), and
    the link's sync is held (link_seams' hold file) from before the lock-out to the kill:
    the lock-out's contribution is unsent at the kill, every time. The hold goes after the
    kill; the restarted daemon sends the contribution (the checks: once, none lost)."""
    assert table.kill is not None
    try:
        await _kill_round(pit, table)
    except BaseException:
        # The injector waits on this future: wake it (no kill) before the failure is raised.
        if table.kill is not None and not table.kill.done():
            table.kill.set_result(False)
        table.kill = None
        raise


async def _kill_round(pit: Pit, table: PitTable) -> None:
    h = table.harness
    assert table.kill is not None
    try:
        await link_up(table)
        # The play that stopped for this kill stopped on whatever event came next, a prompt
        # included, which it noted and did not act on: resync, as TableHarness.play asks.
        await h.resync()
        head = (await h.call("events", limit=1))[-1]["seq"]
        # The next betting round opened with the link up: its sensors are armed.
        await h.play(shoes=UNTIL_STOPPED, until=lambda r: r.events[-1]["seq"] > head
                     and r.events[-1]["kind"] == "prompt"
                     and r.events[-1]["payload"].get("action") == "place_bets")
        await h.wait_for_state("betting_open")
        await h.call("place_wager", seat=HIT_SEAT, wager="banker", amount_cents=500)
        sensor = next(s.sensor_pin for s in h.table_config.gpio.seats if s.seat == HIT_SEAT)
        table.hold.touch()
        h.pins.press(sensor)
        await asyncio.sleep(CHIP_BEFORE_LOCK_S)
        h._press_lockout()
        h.pins.release(sensor)
        await h.wait_for_state(*IN_ROUND)  # the lock-out's step has committed its outbox row
        daemon = h.daemon
        assert daemon is not None
        daemon.send_signal(signal.SIGKILL)
        await daemon.wait()  # nothing more reaches its store
        seqs = [int(r[0]) for r in read_store(h.store_path, UNSENT_SEQS)]
    finally:
        table.hold.unlink(missing_ok=True)
    pit.faults.unsent_at_kills += [(table.table_id, seq) for seq in seqs]
    pit.faults.kills.append((table.table_id, len(seqs)))
    pit.say(f"  fault: {table.table_id} killed right after a lock-out with {len(seqs)} "
            "contribution(s) unsent")
    await h.power_cut()  # the daemon is already dead: this restarts it
    await h.resync()  # the restored round is dealt on
    table.kill.set_result(True)
    table.kill = None


async def inject_faults(pit: Pit) -> None:
    plan = pit.plan
    points: list[tuple[float, str]] = [(0.12 + 0.26 * i, "pg") for i in range(plan.pg_restarts)]
    points += [(0.25 + 0.3 * i, "broker") for i in range(plan.broker_restarts)]
    points += [(0.2, "cut")] + [(0.3 + 0.12 * i, "kill") for i in range(plan.kills)]
    victims = [t for t in pit.tables if not t.hits]
    cut_task: asyncio.Task[None] | None = None
    for fraction, kind in sorted(points):
        if not await pit.reach(fraction):
            break
        pit.fault_under_way = True
        if kind == "pg" and pit.pg is not None:
            await asyncio.to_thread(pit.pg.restart)
            pit.faults.pg_restarts += 1
            pit.say(f"  fault: PostgreSQL restarted (immediate stop: as a crash) at "
                    f"{pit.rounds_played()} rounds")
        elif kind == "broker" and pit.broker is not None:
            await asyncio.to_thread(pit.broker.restart)
            pit.faults.broker_restarts += 1
            pit.say(f"  fault: broker killed and restarted at {pit.rounds_played()} rounds")
        elif kind == "cut" and victims:
            cut_task = asyncio.create_task(cut_off(pit, victims[-1]))
        elif kind == "kill" and victims:
            killed = len(pit.faults.kills)
            # The next victim whose shoe is still being dealt, if the first one finished.
            for step in range(len(victims)):
                if await kill_after_lock(pit, victims[(killed + step) % len(victims)]):
                    break
        await asyncio.sleep(FAULT_SETTLE_S)
        pit.fault_under_way = False
    if cut_task is not None:
        await cut_task
    pit.faults_over.set()
