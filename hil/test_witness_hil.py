"""The witness through the daemon process on simulated hardware, with the real PostgreSQL
behind a proxy the test cuts in the middle of the shoe: the table keeps dealing and
reports the witness down; afterwards the witness holds a head for every settlement, in
order, and `tablewitness verify --store` finds the store and the heads in agreement."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from controller.control import ControlClient
from controller.witness.server import WitnessClient
from hil.table_harness import TableHarness
from hil.witness_sim import ADMIN_DSN, PG_HOST, PG_PORT, SimulatedWitness
from tests.progressive.conftest import service_required
from tests.witness.proxy import CuttableProxy

pytestmark = [pytest.mark.hil, pytest.mark.timeout(600)]

CONFIG = Path(__file__).parents[1] / "config" / "simulated-table.toml"
TABLE_ID = "SIM-BAC-01"
CUT_AFTER_ROUNDS = 10
OUTAGE_ROUNDS = 15  # rounds dealt while the witness is gone


async def test_the_daemon_deals_through_a_witness_outage_and_every_settlement_is_witnessed(
        tmp_path: Path) -> None:
    service_required("PostgreSQL", PG_HOST, PG_PORT)
    witness, proxy = SimulatedWitness(), CuttableProxy((PG_HOST, PG_PORT))
    overrides = [o.replace(f"port={PG_PORT}", f"port={proxy.port}")
                 for o in witness.set_up(TABLE_ID)]
    seen_down: dict[str, Any] = {}
    try:
        async with TableHarness(CONFIG, tmp_path, seed=11, extra_overrides=overrides) as table:
            async def settled_after(seq: int, count: int) -> int:
                while len(found := await watcher.call("events", kind="round_settled",
                                                      after_seq=seq)) < count:
                    await asyncio.sleep(0.2)
                return int(found[count - 1]["seq"])

            async def outage() -> None:
                last = await settled_after(0, CUT_AFTER_ROUNDS)
                proxy.cut()
                while not seen_down:
                    status = await watcher.call("status")
                    if status["witness"]["link"] == "down":
                        seen_down.update(status["witness"])
                    await asyncio.sleep(0.2)
                await settled_after(last, OUTAGE_ROUNDS)
                proxy.restore()

            # The harness's own client deals; this one watches, on a connection of its own.
            watcher = await ControlClient(table.socket).connect()
            cutting = asyncio.create_task(outage())
            result = await table.play(shoes=1)
            await asyncio.wait_for(cutting, 60)
            await watcher.close()
        assert result.shoes_completed == 1
        assert "witness unreachable" in seen_down["last_error"]
        db = sqlite3.connect(tmp_path / "table.sqlite")
        settled = [s for (s,) in db.execute(
            "SELECT seq FROM events WHERE kind = 'round_settled' ORDER BY seq")]
        seal = db.execute("SELECT commit_no, log_seq, log_mac FROM critical_seal").fetchone()
        down = db.execute("SELECT COUNT(*) FROM events WHERE kind = 'witness_down'").fetchone()
        db.close()
        client = WitnessClient(ADMIN_DSN, witness.schema, table_id=TABLE_ID)
        heads = client.heads()
        client.close()
        # The last head is the store's last commit (the stop's), sent before the daemon ended.
        assert (heads[-1].commit_no, heads[-1].log_seq, heads[-1].entry_mac) == tuple(seal)
        # Every settlement has a head of its own, those dealt during the outage included.
        witnessed = [h.log_seq for h in heads]
        for this, following in zip(settled, [*settled[1:], seal[1] + 1], strict=True):
            assert any(this <= seq < following for seq in witnessed), this
        assert len(settled) > CUT_AFTER_ROUNDS + OUTAGE_ROUNDS
        assert down[0] >= 1
        verdict = witness.verify(TABLE_ID, str(tmp_path / "table.sqlite"))
        assert f"{len(heads)} heads, every signature valid" in verdict
        assert f"{len(heads)} witnessed heads found in the store" in verdict
        print(f"witness outage: {len(settled)} rounds settled, {len(heads)} heads witnessed")
    finally:
        proxy.close()
        witness.drop()
