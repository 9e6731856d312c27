"""The checks of a pit after play (issue 30's Done-when), its printed report, and `run_pit`,
the whole pit from its servers to the checks.

- The linked meter equals its seed plus every contribution the tables hold as acknowledged
  (read from each table's own store) less every award plus every reseed, to the exact
  fraction of a cent; the server holds exactly those contributions, none twice (605a.8).
- Every hit is paid exactly once: each award row on the server is one award in one table's
  store, of the same amount, paid; no table holds an award the server did not make.
- Hits are ordered and each claimant got what the rules give it: each level replayed from its
  seed in commit order pays every award the meter's whole cents at its turn; each forced
  pair's claims were released together and raced at the server (hil/pit_race.py).
- The contributions unsent when a table was killed reached the server once, after its
  restart, and are acknowledged in its store.
- Every table's own tally: the rounds' table results and the seats' results balance to the
  cent, and the daemon's full check of its log and sealed tables passes.
- Every table's witness check (`tablewitness verify --store`) passes.
- The pit page shows every table, live.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import sqlite3
import time
import urllib.request
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from hil.pit_campaign import (
    HIT_SEAT, Pit, inject_faults, play_table, read_store, start_page, start_servers,
    start_tables, unsent_rows, validate_awards,
)
from controller.progressive.ledger import LINK_STORE_META
from hil.pit_race import START_BOUND_MS, PairRace, pair_races, replay_levels


@dataclass
class PitReport:
    seed: int
    counts: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    races: dict[int, PairRace] = field(default_factory=dict)  # each forced pair's, by index

    @property
    def ok(self) -> bool:
        return not self.problems

    def check(self, condition: bool, held: str, problem: str) -> None:
        (self.held if condition else self.problems).append(held if condition else problem)

    async def check_witness(self, pit: Pit) -> None:
        from controller.witness.cli import main as tablewitness

        passed = 0
        for table in pit.tables:
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                code = await asyncio.to_thread(tablewitness, [
                    "verify", "--dsn", pit.admin_dsn, "--schema", pit.witness_schema,
                    "--table", table.table_id, "--store", table.harness.store_path])
            if code == 0:
                passed += 1
            else:
                self.problems.append(f"{table.table_id}: the witness check failed: "
                                     f"{out.getvalue().strip()[-400:]}")
        self.counts["witness checks passed"] = f"{passed} of {len(pit.tables)}"
        self.check(passed == len(pit.tables), f"every table's witness check passed ({passed})",
                   f"witness checks passed: {passed} of {len(pit.tables)}")

    def render(self) -> str:
        lines = [f"\nPit seed {self.seed}: " + ("every check held" if self.ok else
                                                f"{len(self.problems)} check(s) failed")]
        lines += [f"  {name}: {value}" for name, value in self.counts.items()]
        lines += [f"  held: {line}" for line in self.held]
        lines += [f"  FAILED: {line}" for line in self.problems]
        return "\n".join(lines)


async def drained(pit: Pit, timeout_s: float = 60.0) -> int:
    """Wait for every table to have sent its outbox (the link syncs every 2 s)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        left = sum(unsent_rows(t.harness.store_path) for t in pit.tables)
        if not left or loop.time() > deadline:
            return left
        await asyncio.sleep(0.5)


@dataclass
class ServerRows:
    levels: list[Any]
    contributions: list[Any]
    awards: list[Any]
    races: dict[int, PairRace]
    replayed: int
    replay_problems: list[str]


def server_rows(pit: Pit) -> ServerRows:
    import psycopg

    s, group = pit.linked_schema, f"pit-{pit.tag}"
    with psycopg.connect(pit.admin_dsn) as conn:
        tracked = conn.execute("SHOW track_commit_timestamp").fetchone()[0] == "on"
        races = pair_races(conn, s, group, pit.pairs, HIT_SEAT) if pit.pairs else {}
        replayed, problems = replay_levels(conn, s, group) if tracked else (0, [])
        levels = conn.execute(f"SELECT progressive, level, amount_cents, frac_num, frac_den,"
                              f" seed_cents FROM {s}.levels WHERE grp = %s", (group,)).fetchall()
        contributions = conn.execute(f"SELECT table_id, store, seq, progressive, level,"
                                     f" delta_num, delta_den FROM {s}.contributions"
                                     " WHERE grp = %s",
                                     (group,)).fetchall()
        awards = conn.execute(f"SELECT claim_key, table_id, progressive, level, amount_cents,"
                              f" reseed_cents, claimed_at FROM {s}.awards WHERE grp = %s",
                              (group,)).fetchall()
    return ServerRows(levels, contributions, awards, races, replayed, problems)


def link_store(table: Any) -> str:
    """A table's store's name in the ledger's keys (MeterLedger.link_store)."""
    (name,), = read_store(table.harness.store_path, "SELECT value FROM meta WHERE key = ?",
                          (LINK_STORE_META,))
    return str(name)


def check_meter(report: PitReport, pit: Pit, levels: list[Any], contributions: list[Any],
                awards: list[Any]) -> None:
    """605a.8: the shared meter is its seed + the tables' acknowledged contributions - awards
    + reseeds, exactly; the server's contributions are exactly the tables' acknowledged ones."""
    acked: dict[tuple[str, str, int], tuple[str, str, int, int]] = {}
    for table in pit.tables:
        store = link_store(table)
        for seq, progressive, level, num, den in read_store(
                table.harness.store_path, "SELECT seq, progressive, level, delta_num, delta_den"
                " FROM progressive_outbox WHERE acked_at IS NOT NULL"):
            acked[(table.table_id, store, seq)] = (progressive, level, num, den)
    on_server = {(t, store, seq): (p, lvl, n, d)
                 for t, store, seq, p, lvl, n, d in contributions}
    report.counts["contributions acknowledged by the tables"] = len(acked)
    report.counts["contributions on the server"] = len(on_server)
    report.check(acked == on_server,
                 f"the server holds exactly the {len(acked)} contributions the tables hold as "
                 "acknowledged, none twice (605a.8)",
                 f"contributions differ: {len(set(acked) - set(on_server))} acknowledged but not "
                 f"on the server, {len(set(on_server) - set(acked))} on the server only, "
                 f"{sum(1 for k in acked if k in on_server and acked[k] != on_server[k])} "
                 "with another amount")
    for progressive, level, cents, num, den, seed in levels:
        expected = Fraction(seed) + sum(
            (Fraction(n, d) for p, lvl, n, d in acked.values() if (p, lvl) == (progressive, level)),
            Fraction(0))
        for _, _, p, lvl, amount, reseed, _ in awards:
            if (p, lvl) == (progressive, level):
                expected += int(reseed) - int(amount)
        shown = cents + Fraction(num, den)
        report.counts[f"linked meter {progressive}/{level}"] = f"{float(shown) / 100:,.4f} dollars"
        report.check(shown == expected,
                     f"linked meter {progressive}/{level} = seed + acknowledged contributions - "
                     f"awards + reseeds = {shown} cents, to the exact fraction",
                     f"linked meter {progressive}/{level} shows {shown} cents; seed + "
                     f"acknowledged contributions - awards + reseeds make {expected}")


def check_awards(report: PitReport, pit: Pit, awards: list[Any]) -> None:
    """Every hit paid exactly once: the server's claims and the tables' awards are one to one."""
    local: dict[str, tuple[str, int, str]] = {}
    doubles = 0
    for table in pit.tables:
        for key, amount, state in read_store(
                table.harness.store_path, "SELECT linked_claim, amount_cents, state FROM "
                "progressive_awards WHERE linked_claim IS NOT NULL"):
            doubles += key in local
            local[key] = (table.table_id, int(amount), str(state))
    server = {key: (table_id, int(amount)) for key, table_id, _, _, amount, _, _ in awards}
    forced = sum(t.forced_hits for t in pit.tables)
    report.counts["linked hits"] = f"{len(server)} ({forced} forced in simultaneous pairs)"
    wrong = [k for k in server if k not in local or local[k][:2] != server[k]
             or local[k][2] != "paid"]
    report.check(not wrong and not doubles and set(local) == set(server),
                 f"each of the {len(server)} linked hits paid exactly once, the amount the "
                 "server awarded (605a.8)",
                 f"hits: {len(wrong)} not paid once at the server's amount, {doubles} twice, "
                 f"{len(set(local) - set(server))} unknown to the server")


def check_order(report: PitReport, pit: Pit, rows: ServerRows) -> None:
    """605a.8: hits ordered, each claimant paid what the rules give it at its turn, and each
    forced pair's two claims released together and racing on the level's row lock."""
    if rows.replayed or rows.replay_problems:
        report.check(not rows.replay_problems,
                     f"each level replayed from its seed in commit order pays every one of the "
                     f"{rows.replayed} awards the meter's whole cents at its turn, in the level's "
                     "version order (the second of a pair: the reseeded meter and what reached "
                     "it between)", "; ".join(rows.replay_problems[:5]))
    elif pit.pairs:
        report.problems.append("the awards were not replayed: the server does not track "
                               "commit timestamps")
    if not pit.pairs:
        return
    report.counts["forced pairs at the server (claim transactions, server clock)"] = [
        race.render() for race in rows.races.values()]
    report.counts["forced pairs' claim starts apart (ms)"] = [
        race.start_gap_ms for race in rows.races.values()]
    unraced = [f"{p.table_ids}: {p.waiting_at_release} of 2 claims waiting at the release"
               for p in pit.pairs if p.waiting_at_release != 2]
    unraced += [f"{r.tables}: a claim began {r.after_release_ms} ms after the release"
                for r in rows.races.values() if not r.held_until_release]
    apart = [f"{r.tables}: {r.start_gap_ms} ms" for r in rows.races.values()
             if not r.overlapped and r.start_gap_ms > START_BOUND_MS]
    report.check(len(rows.races) == len(pit.pairs) and not unraced and not apart,
                 f"each of the {len(pit.pairs)} forced pairs' claims waited at the gate "
                 f"together and, released at once, overlapped at the server or started within "
                 f"{START_BOUND_MS:g} ms ({sum(r.overlapped for r in rows.races.values())} "
                 "overlapped)",
                 f"forced pairs: {len(rows.races)} of {len(pit.pairs)} both claimed; not "
                 f"released together: {unraced}; apart and not overlapping: {apart}")


def check_reconciled(report: PitReport, pit: Pit) -> None:
    """`tablectl linked reconcile`'s comparison for every table: its store and the ledger
    agree row for row (controller/progressive/reconcile.py), read in one snapshot."""
    import psycopg

    from controller.progressive.reconcile import read_ledger_side, read_store_side, reconcile

    group, agreed, findings = f"pit-{pit.tag}", 0, []
    with psycopg.connect(pit.admin_dsn) as conn:
        conn.read_only = True
        for table in pit.tables:
            db = sqlite3.connect(f"file:{table.harness.store_path}?mode=ro", uri=True,
                                 timeout=10)
            try:
                store = read_store_side(db)
            finally:
                db.close()
            ledger = read_ledger_side(conn, pit.linked_schema, group, table.table_id)
            result = reconcile(table.table_id, group, store, ledger)
            agreed += not result.findings and not result.contributions_pending
            findings += [f"{table.table_id}: {finding}" for finding in result.findings[:3]]
    report.check(agreed == len(pit.tables),
                 f"every table's store reconciles with the ledger row for row ({agreed}, "
                 "tablectl linked reconcile's comparison)",
                 f"{len(pit.tables) - agreed} tables' stores differ from the ledger: "
                 + "; ".join(findings[:5]))


def check_kills(report: PitReport, pit: Pit, contributions: list[Any]) -> None:
    """The contributions a killed table had not sent: on the server once, acknowledged."""
    unsent = pit.faults.unsent_at_kills
    if not pit.plan.faults or not pit.plan.kills:
        return
    stores = {table.table_id: link_store(table) for table in pit.tables}
    on_server = {(t, seq) for t, store, seq, *_ in contributions if stores.get(t) == store}
    acked = {(table.table_id, int(seq)) for table in pit.tables for (seq,) in read_store(
        table.harness.store_path, "SELECT seq FROM progressive_outbox WHERE acked_at IS NOT "
        "NULL")}
    missing = [k for k in unsent if k not in on_server or k not in acked]
    report.counts["contributions unsent at the kills"] = len(unsent)
    report.check(len(pit.faults.kills) == pit.plan.kills and not missing
                 and all(n >= 1 for _, n in pit.faults.kills),
                 f"the {len(unsent)} contributions unsent when the tables were killed reached "
                 "the server after the restarts and are acknowledged (none lost; the server "
                 "holds each once, its key (group, table, store, seq))",
                 f"kills {pit.faults.kills} of {pit.plan.kills} planned (each with >= 1 "
                 f"contribution unsent); of those unsent then, {missing} are not on the server "
                 "and acknowledged")


async def check_tally(report: PitReport, pit: Pit) -> None:
    from controller.control import ControlError

    balanced = verified = 0
    for table in pit.tables:
        result = table.harness.result
        balance = sum(r["table_net_cents"] for r in result.rounds) + sum(
            s["net_cents"] for r in result.rounds for s in r["settlements"])
        balanced += balance == 0
        if balance:
            report.problems.append(f"{table.table_id}: the table and the seats differ by "
                                   f"{balance} cents")
        try:
            await table.harness.call("verify_chain", full=True)
            status = await table.harness.call("status")
            verified += status["out_of_order"] is None
            if status["out_of_order"]:
                report.problems.append(f"{table.table_id}: out of order: {status['out_of_order']}")
        except ControlError as exc:
            report.problems.append(f"{table.table_id}: its own check failed: {exc}")
    report.check(balanced == verified == len(pit.tables),
                 f"every table's own tally balances to the cent and its full log check passes "
                 f"({len(pit.tables)})", f"tallies: {balanced} balanced, {verified} verified of "
                 f"{len(pit.tables)}")


def check_page(report: PitReport, pit: Pit) -> None:
    try:
        with urllib.request.urlopen(pit.page_url.replace("/pit", "/pit.json"), timeout=10) as r:
            page = json.load(r)
    except OSError as exc:
        report.problems.append(f"the pit page did not answer: {exc}")
        return
    live = {t["table_id"] for t in page["tables"] if t["alive"] == "online"}
    wanted = {t.table_id for t in pit.tables}
    report.check(wanted <= live, f"the pit page shows all {len(wanted)} tables live",
                 f"the pit page misses or shows as not live: {sorted(wanted - live)}")


async def check_pit(pit: Pit, played_s: float) -> PitReport:
    report = PitReport(pit.plan.seed)
    left = await drained(pit)
    report.check(left == 0, "every table's outbox reached the server",
                 f"{left} contributions still unsent after the play")
    rows = await asyncio.to_thread(server_rows, pit)
    levels, contributions, awards = rows.levels, rows.contributions, rows.awards
    f = pit.faults
    report.counts.update({
        "tables": len(pit.tables),
        "shoes completed": sum(t.harness.result.shoes_completed for t in pit.tables),
        "rounds settled": pit.rounds_played(),
        "played (s, busy machine)": round(played_s, 1),
        "PostgreSQL restarts": f.pg_restarts, "broker restarts": f.broker_restarts,
        "table cut off": f"{f.cut_table} for {f.cut_s} s (dealing for {f.cut_dealing_s} s of "
                         f"it, {f.cut_rounds} rounds); linked wager unavailable after "
                         f"{f.cut_link_down_seen_s} s" if f.cut_table else "none",
        "daemons killed after a lock-out (unsent rows)": f.kills,
        "daemons restarted after the kills": sum(t.harness.result.power_cuts
                                                 for t in pit.tables),
        "daemons that died unasked": sum(t.harness.result.crash_kills for t in pit.tables),
    })
    check_meter(report, pit, levels, contributions, awards)
    check_awards(report, pit, awards)
    report.races = rows.races
    check_order(report, pit, rows)
    check_kills(report, pit, contributions)
    await asyncio.to_thread(check_reconciled, report, pit)
    await check_tally(report, pit)
    check_page(report, pit)
    return report


async def run_pit(pit: Pit) -> PitReport:
    """The whole pit: servers, tables, page, play (and faults), the checks; then stop."""
    async with contextlib.AsyncExitStack() as stack:
        await start_servers(pit, stack)
        await start_tables(pit, stack)
        await start_page(pit, stack)
        faults = asyncio.create_task(inject_faults(pit)) if pit.plan.faults else None
        if faults is None:
            pit.faults_over.set()
        started = time.monotonic()
        try:
            await asyncio.gather(*(play_table(pit, t) for t in pit.tables))
        except BaseException:
            # A table's play failed: the injector may be waiting on that table (a kill it
            # asked for), so it is stopped rather than awaited, and the failure is raised.
            if faults is not None:
                faults.cancel()
            raise
        finally:
            pit.finished = True
            if faults is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await faults
        played_s = time.monotonic() - started
        for table in pit.tables:
            await validate_awards(table)  # natural hits too
        report = await check_pit(pit, played_s)
        if pit.keep_running:
            pit.say(f"\nThe shoes are done; the pit stays up until Ctrl-C: {pit.page_url}")
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.Event().wait()
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
        # Stopping the daemons (the stack) sends their last heads to the witness; then the
        # witness is checked against each store.
        for table in pit.tables:
            await table.harness.stop_daemon()
        await report.check_witness(pit)
    return report
