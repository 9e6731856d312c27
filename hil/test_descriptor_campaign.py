"""A table whose every descriptor below 1024 is in use, through random faults: the shoe
unplugged and replugged between rounds, the broker killed and started again. Each recovery
is made on a descriptor numbered past 1023 (the test fills every lower number the fault
freed with control connections first), where `select()` refuses it: before stop 62 the shoe
never came back (pyserial), nor the display feed (paho).

The daemon holds as many control connections as it takes (about 1,000; its cap is 4,096
under the unit's `LimitNOFILE=16384`); the pit page's side, this test's `Reader`, has its
own descriptors past 1023 too. The tally the daemon is compared with is the test's own:
the rounds the harness dealt, each stored round re-settled by the oracle (hil/oracle.py),
the descriptor the shoe and the broker connection were reopened on (read from /proc), and
the pit page's view of the table after each broker restart.

`./run-tests` runs 4 faults; a campaign:
`TABLE_DESCRIPTOR_FAULTS=200 ./run-tests hil/test_descriptor_campaign.py -s`
(`TABLE_DESCRIPTOR_SEED=N` replays).
"""

from __future__ import annotations

import asyncio
import os
import random
import resource
import secrets
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from controller.progressive.broker import BrokerLogin
from hil.broker_reader import Reader
from hil.oracle import check_round
from hil.pit_servers import PrivateBroker, require_private_servers
from hil.table_harness import TableHarness, poll_until
from tests.descriptors import SELECT_LIMIT, descriptors_on, open_descriptors

pytestmark = [pytest.mark.hil, pytest.mark.timeout(3600)]

CONFIG = Path(__file__).parents[1] / "config" / "simulated-table.toml"
TABLE_ID = "SIM-BAC-01"
FAULTS = int(os.environ.get("TABLE_DESCRIPTOR_FAULTS", "4"))
STATE_TIMEOUT_S = 60.0


def settled(result: Any) -> int:
    return len([r for r in result.rounds if not r.get("simulated")])


def broker_connection_fd(pid: int, broker_port: int) -> int | None:
    """The daemon's descriptor of its established TCP connection to the broker, if any."""
    inodes = set()
    with open(f"/proc/{pid}/net/tcp", encoding="ascii") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            if remote_port == broker_port and fields[3] == "01":  # ESTABLISHED
                inodes.add(f"socket:[{fields[9]}]")
    found = [fd for fd, link in open_descriptors(pid).items() if link in inodes]
    return found[0] if found else None


async def fill_low_descriptors(table: TableHarness, held: list[Any]) -> None:
    """Open control connections until the daemon has no free descriptor below 1024."""
    assert table.daemon is not None
    while True:
        in_use = set(open_descriptors(table.daemon.pid))
        free = [n for n in range(SELECT_LIMIT) if n not in in_use]
        if not free:
            return
        for _ in free:
            held.append(await asyncio.open_unix_connection(table.socket))
        await table.call("status")  # the daemon has accepted what was opened before it


async def deal_a_round(table: TableHarness) -> None:
    """One more round settled, a new shoe shuffled first if the last one ended."""
    target = settled(table.result) + 1
    await table.play(shoes=1_000, until=lambda r: settled(r) >= target)


async def between_rounds(table: TableHarness) -> None:
    """Betting open: where a shoe can be unplugged without voiding a round."""
    while (await table.wait_for_state("betting_open", "end_of_shoe"))["state"] != "betting_open":
        await deal_a_round(table)


async def shoe_fault(table: TableHarness, held: list[Any]) -> int:
    """Unplugged between rounds, replugged: the descriptor the daemon reopened it on."""
    assert table.daemon is not None
    await between_rounds(table)
    await table.shoe.unplug()
    await table.wait_for_state("device_fault")
    await fill_low_descriptors(table, held)
    await table.shoe.replug()
    await table.wait_for_state("betting_open", timeout=STATE_TIMEOUT_S)
    await table.resync()
    return descriptors_on(table.shoe.port, table.daemon.pid)[0]


async def broker_fault(table: TableHarness, held: list[Any], broker: PrivateBroker) -> int:
    """The broker killed and started again: the descriptor the feed reconnected on."""
    assert table.daemon is not None
    pid = table.daemon.pid

    async def feed(connected: bool) -> bool | None:
        return (await table.call("status"))["display_feed"]["connected"] is connected or None

    async def connection_fd() -> int | None:
        return broker_connection_fd(pid, broker.port)

    broker.kill()
    await poll_until(lambda: feed(False), STATE_TIMEOUT_S, lambda: "the feed saw the broker go")
    await fill_low_descriptors(table, held)
    broker.start()
    await poll_until(lambda: feed(True), STATE_TIMEOUT_S, lambda: "the feed reconnected")
    return await poll_until(connection_fd, STATE_TIMEOUT_S,
                            lambda: "the feed's connection in /proc")


def test_every_recovery_past_descriptor_1023(tmp_path: Path) -> None:
    require_private_servers(broker_only=True)
    seed = int(os.environ.get("TABLE_DESCRIPTOR_SEED", secrets.randbelow(2**32)))
    print(f"descriptor campaign: {FAULTS} faults, seed {seed} "
          f"(TABLE_DESCRIPTOR_SEED={seed} replays)")
    rng = random.Random(seed)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(16384, hard)), hard))
    started = time.monotonic()
    with PrivateBroker() as broker:
        reader = Reader(broker.port, BrokerLogin(), f"casino/fd/tables/{TABLE_ID}/#")
        try:
            outcome = asyncio.run(campaign(tmp_path, broker, reader, rng))
        finally:
            reader.close()
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    kinds, reopened, dealt, stored, seen, held = outcome
    log = (tmp_path / "tabled.log").read_text(errors="replace")
    print(f"{sum(kinds.values())} faults ({dict(kinds)}) with {held} connections held, "
          f"{dealt} rounds dealt, {len(stored)} stored; reopened on descriptors "
          f"{min(reopened)}-{max(reopened)}; {time.monotonic() - started:.0f} s")
    assert sum(kinds.values()) == FAULTS
    assert all(fd >= SELECT_LIMIT for fd in reopened), reopened
    assert len(reopened) == FAULTS
    assert [r["round_id"] for r in stored if r["state"] == "settled"] == sorted(
        r["round_id"] for r in stored if r["state"] == "settled")
    assert len([r for r in stored if r["state"] == "settled"]) == dealt
    assert [check_round(r) for r in stored] == [[] for _ in stored]
    view, expected = seen
    assert view == expected  # the pit page's view is where the table is
    for line in ("out of range", "Exception in callback", "mqtt_thread_error", "Traceback"):
        assert line not in log, line


async def campaign(tmp_path: Path, broker: PrivateBroker, reader: Reader,
                   rng: random.Random) -> tuple[Counter[str], list[int], int, list[Any],
                                                Any, int]:
    overrides = ["mqtt.host=127.0.0.1", f"mqtt.port={broker.port}", "mqtt.site=fd",
                 "access.max_connections_per_user=60000"]
    held: list[Any] = []
    kinds: Counter[str] = Counter()
    reopened: list[int] = []
    async with TableHarness(CONFIG, tmp_path, seed=rng.randrange(2**32),
                            extra_overrides=overrides) as table:
        try:
            await deal_a_round(table)
            await fill_low_descriptors(table, held)
            for _ in range(FAULTS):
                kind = rng.choice(("shoe", "broker"))
                kinds[kind] += 1
                reopened.append(await (shoe_fault(table, held) if kind == "shoe"
                                       else broker_fault(table, held, broker)))
                await deal_a_round(table)
            await between_rounds(table)
            stored = await table.call("rounds", limit=100_000)
            now = await table.call("status")  # between rounds: what the pit page must show
            now_round = now.get("round") or {}
            expected = {"round_id": now_round.get("round_id"),
                        "round_no": now_round.get("round_no")}
            view = await asyncio.to_thread(reader.wait_for,
                                           f"casino/fd/tables/{TABLE_ID}/status",
                                           state=now["state"], round=expected)
            seen = ((view or {}).get("round"), expected)
        finally:
            for _, writer in held:
                writer.close()
        return kinds, reopened, settled(table.result), sorted(
            stored, key=lambda r: r["round_id"]), seen, len(held)
