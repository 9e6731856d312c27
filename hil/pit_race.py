"""A pit campaign's forced simultaneous hits (605a.8: hits are ordered and each is paid once),
made simultaneous at the server, and the checks of how they raced.

Two tables of a pair lock out a suited 9 tie at HIT_SEAT together, but each daemon then deals
its round at its own pace: left alone their claims reach PostgreSQL 35 to 1,021 ms apart, one
after the other, and never race. So each pair's daemons run with the claim gate
(controller/progressive/link_seams.py, ``TABLE_LINKED_CLAIM_GATE=key:HIT_SEAT``): `HitPair`
holds the pair's advisory lock exclusively from before the lock-outs, watches `pg_locks` until
both daemons' claims wait on it in shared mode, and lets go: PostgreSQL grants both waiters at
the same release, and the two claim transactions start together; the second queues on the
level's row lock when it starts before the first commits. (A pair's tables reach PostgreSQL
directly, not through a cuttable proxy in the harness's busy process, whose hop only added
jitter: 0.2 to 41 ms between the starts with it, on a machine at load 19.)

The checks read the server's own clocks: `awards.claimed_at` is `now()`, the start of the
claim's transaction, and the commit is `pg_xact_commit_timestamp(xmin)` (the pit's PostgreSQL
runs with `track_commit_timestamp = on`, hil/pit_servers.py). `replay_levels` then replays
each linked level in commit order from its seed: every award must be the meter's whole cents
at its turn (the pit's Heavenly 9 pays 100% of the meter, 631c.2(g)(1)), the second of a
pair the reseeded meter plus what reached it between the two.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from typing import Any

from controller.progressive.link_seams import CLAIM_GATE_ENV

GATE_KEY_BASE = 30_000  # a pit's pairs use keys base + 1, + 2 ... on its own server
RELEASE_TIMEOUT_S = 50.0  # below link_seams.GATE_TIMEOUT_S: the harness lets go first
POLL_S = 0.01
# A pair's claims are released by one server event; after it each daemon makes two loopback
# round trips (the gate's COMMIT, the claim's BEGIN), well under a millisecond on an idle
# machine. What still separates their starts is the scheduling of two daemons and two
# backends, each woken twice, on a loaded 2-core machine: in the campaigns here (load 11 to
# 21) a claim began 0.7 to 55 ms after the release, and the two of a pair 0.1 to 43 ms
# apart. A pair whose transactions did not overlap (a claim's transaction takes 2 to 50 ms
# here) must have started within twice the worst of those; without the gate they were 35
# to 1,021 ms apart, at the pace of two daemons dealing their rounds.
START_BOUND_MS = 100.0


@dataclass
class HitPair:
    """Two tables forced to hit the linked meter together, and their claim gate."""

    index: int
    key: int
    table_ids: tuple[str, str]
    barrier: asyncio.Barrier = field(default_factory=lambda: asyncio.Barrier(2))
    released_at: datetime | None = None  # the server's clock when the harness let go
    waiting_at_release: int = 0  # the pair's claims waiting on the gate then (2: a race)
    finished: int = 0
    _holder: Any = None
    _releaser: asyncio.Task[None] | None = None
    _taking: asyncio.Lock = field(default_factory=asyncio.Lock)

    def env(self, seat: int) -> dict[str, str]:
        return {CLAIM_GATE_ENV: f"{self.key}:{seat}"}

    async def hold(self, admin_dsn: str) -> None:
        """Take the gate's lock (once for the pair) before either table locks out."""
        async with self._taking:
            if self._holder is None:
                self._holder = await asyncio.to_thread(_hold, admin_dsn, self.key)
                self._releaser = asyncio.create_task(self._release_when_both_wait())

    def done(self) -> None:
        """One table's forced round is over (with or without a hit)."""
        self.finished += 1

    async def settled(self) -> None:
        if self._releaser is not None:
            await self._releaser

    async def _release_when_both_wait(self) -> None:
        deadline = time.monotonic() + RELEASE_TIMEOUT_S
        try:
            while self.finished == 0 and time.monotonic() < deadline:
                if await asyncio.to_thread(_waiting, self._holder, self.key,
                                           self.table_ids) == 2:
                    break
                await asyncio.sleep(POLL_S)
            # A table whose forced round did not hit finishes without a claim: its partner
            # must not wait for it.
            self.waiting_at_release, self.released_at = await asyncio.to_thread(
                _release, self._holder, self.key, self.table_ids)
        finally:
            await asyncio.to_thread(self._holder.close)


def _hold(dsn: str, key: int) -> Any:
    import psycopg

    conn = psycopg.connect(dsn, autocommit=True, application_name="pit-hit-gate")
    conn.execute("SELECT pg_advisory_lock(%s)", (key,))
    return conn


_WAITING = ("SELECT count(DISTINCT a.application_name) FROM pg_locks l JOIN pg_stat_activity a"
            " ON a.pid = l.pid WHERE l.locktype = 'advisory' AND NOT l.granted AND l.mode ="
            " 'ShareLock' AND l.classid = 0 AND l.objid = %s AND a.application_name = ANY(%s)")


def _waiting(conn: Any, key: int, table_ids: tuple[str, str]) -> int:
    names = [f"tabled-{t}" for t in table_ids]
    return int(conn.execute(_WAITING, (key, names)).fetchone()[0])


def _release(conn: Any, key: int, table_ids: tuple[str, str]) -> tuple[int, datetime]:
    waiting = _waiting(conn, key, table_ids)
    released = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
    return waiting, released


# --- the checks ------------------------------------------------------------------------------

@dataclass(frozen=True)
class PairRace:
    """How a pair's two claims met at the server, first claimant (row-lock order) first."""

    tables: tuple[str, str]
    amounts: tuple[int, int]
    versions: tuple[int, int]
    start_gap_ms: float
    commit_gap_ms: float  # the second's commit after the first's
    first_held_ms: float  # the first claim's transaction, start to commit
    overlapped: bool  # the second began before the first committed: it queued on the row lock
    after_release_ms: float  # the earlier start, after the gate's release
    held_until_release: bool  # both began after the release (server clock, unrounded)

    def render(self) -> str:
        a, b = self.tables
        how = "overlapped" if self.overlapped else "did not overlap"
        return (f"{a} then {b}: the first start {self.after_release_ms:.1f} ms after the "
                f"gate's release, starts {self.start_gap_ms:.1f} ms apart, {how} (the first "
                f"committed {self.first_held_ms:.1f} ms after its start, the second "
                f"{self.commit_gap_ms:.1f} ms after the first); paid {self.amounts[0]} then "
                f"{self.amounts[1]} cents")


def pair_races(conn: Any, schema: str, group: str, pairs: list[HitPair],
               seat: int) -> dict[int, PairRace]:
    """Each pair whose two tables both claimed at `seat`: its race, by pair index."""
    rows = conn.execute(
        f"SELECT table_id, claimed_at, pg_xact_commit_timestamp(xmin), amount_cents,"
        f" level_version FROM {schema}.awards WHERE grp = %s AND seat = %s",
        (group, seat)).fetchall()
    by_table = {r[0]: r for r in rows}
    races = {}
    for pair in pairs:
        if not all(t in by_table for t in pair.table_ids):
            continue
        first, second = sorted((by_table[t] for t in pair.table_ids), key=lambda r: r[4])
        if first[2] is None or second[2] is None:
            raise RuntimeError("the pit's PostgreSQL does not track commit timestamps")
        released = pair.released_at or min(first[1], second[1])
        races[pair.index] = PairRace(
            (first[0], second[0]), (int(first[3]), int(second[3])),
            (int(first[4]), int(second[4])), _ms(abs(second[1] - first[1])),
            _ms(second[2] - first[2]), _ms(first[2] - first[1]), second[1] < first[2],
            _ms(min(first[1], second[1]) - released),
            pair.released_at is not None and min(first[1], second[1]) > pair.released_at)
    return races


def _ms(delta: Any) -> float:
    return round(delta.total_seconds() * 1000, 1)


def replay_levels(conn: Any, schema: str, group: str) -> tuple[int, list[str]]:
    """Replay each level from its seed in commit order: (awards replayed, problems).

    Every change of a level is one transaction holding its row lock (linked.py), so the
    commit order is the lock order: contributions add their delta; an award must be paid the
    meter's whole cents at its turn and leaves the remainder plus the reseed."""
    seeds = {(p, lvl): Fraction(seed) for p, lvl, seed in conn.execute(
        f"SELECT progressive, level, seed_cents FROM {schema}.levels WHERE grp = %s", (group,))}
    changes: dict[tuple[str, str], list[tuple[Any, int, int, Any]]] = {k: [] for k in seeds}
    for xid, at, p, lvl, num, den in conn.execute(
            f"SELECT xmin::text::bigint, pg_xact_commit_timestamp(xmin), progressive, level,"
            f" delta_num, delta_den FROM {schema}.contributions WHERE grp = %s", (group,)):
        changes[(p, lvl)].append((at, xid, 0, Fraction(num, den)))
    for xid, at, p, lvl, key, amount, reseed, used, version in conn.execute(
            f"SELECT xmin::text::bigint, pg_xact_commit_timestamp(xmin), progressive, level,"
            f" claim_key, amount_cents, reseed_cents, reserve_used, level_version"
            f" FROM {schema}.awards WHERE grp = %s", (group,)):
        changes[(p, lvl)].append((at, xid, 1, (key, int(amount), int(reseed), Fraction(used),
                                               int(version))))
    problems, replayed = [], 0
    for level, rows in changes.items():
        if any(at is None for at, *_ in rows):
            return 0, ["the pit's PostgreSQL does not track commit timestamps"]
        value, last_version = seeds[level], 0
        for _, _, kind, change in sorted(rows, key=lambda r: r[:3]):
            if kind == 0:
                value += change
                continue
            key, amount, reseed, used, version = change
            whole = value.numerator // value.denominator
            replayed += 1
            if amount != whole or version <= last_version:
                problems.append(f"{key}: paid {amount} cents (level version {version}); at its "
                                f"turn the meter held {whole} whole cents (after version "
                                f"{last_version})")
            value, last_version = value - amount + reseed + used, version
    return replayed, problems
