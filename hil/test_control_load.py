"""2,000 connections held open on the control socket while the simulated table deals:
the daemon still answers `tablectl status` within a second and keeps dealing; and a shoe
replugged while they are held is opened on a descriptor numbered past 1023 and deals on.

Before issue 12, 1,100 idle connections used up the daemon's 1,024 descriptors: tablectl
timed out and a replugged shoe could not reopen its port. Until stop 62 the shoe could
reopen it, but pyserial read the port through select(), which refuses a descriptor past
1023: every turn of the daemon's event loop logged that ValueError (222,949 lines in
30 s) and the shoe never came back (firmware_bridge/serial_port.py).
"""

from __future__ import annotations

import asyncio
import json
import resource
import time
from pathlib import Path

import pytest

from controller.control import ControlClient
from hil.oracle import check_round
from hil.table_harness import TableHarness
from hil.tablectl_process import run_tablectl
from tests.descriptors import descriptors_on

pytestmark = [pytest.mark.hil, pytest.mark.timeout(300)]

CONFIG = Path(__file__).parents[1] / "config" / "simulated-table.toml"
HELD = 2000
ANSWER_WITHIN_S = 1.0  # the requirement for `tablectl status`
DESCRIPTORS = HELD + 1024  # the held connections on each side, plus everything else


def settled(result) -> int:  # noqa: ANN001
    return len([r for r in result.rounds if not r.get("simulated")])


@pytest.fixture
def descriptors():
    """The test process and the daemon it starts (which inherits the limit, as systemd's
    LimitNOFILE= gives it one) each need a descriptor per held connection."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < DESCRIPTORS:
        pytest.fail(f"RLIMIT_NOFILE hard limit {hard} < {DESCRIPTORS}: raise it to run this")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, DESCRIPTORS), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_2000_connections_held_while_dealing_and_status_still_answers(tmp_path, descriptors):
    async def scenario():  # noqa: ANN202
        # Every connection here is root's: root is held to the per-user cap too (issue 33),
        # raised here so that the total is what is tested.
        async with TableHarness(CONFIG, tmp_path, seed=12, extra_overrides=[
                "access.max_connections_per_user=60000"]) as table:
            # The table deals on until the connections have been served and it has settled
            # two rounds more than it had then: opening 2,000 connections may take as long
            # as several rounds, so a fixed round count could end the dealing first.
            served: list[int] = []
            dealing = asyncio.create_task(table.play(
                until=lambda r: bool(served) and settled(r) >= served[0] + 2))
            while settled(table.result) < 2:  # the table is dealing
                assert not dealing.done(), dealing
                await asyncio.sleep(0.05)
            held = [await asyncio.open_unix_connection(table.socket) for _ in range(HELD)]
            assert not dealing.done(), dealing
            started = time.monotonic()
            code, output = await run_tablectl(["status"], socket=table.socket)
            tablectl_s = time.monotonic() - started
            started = time.monotonic()
            fresh = await ControlClient(table.socket).connect()
            status = await fresh.call("status")
            answer_s = time.monotonic() - started
            await fresh.close()
            # every held connection was accepted and is served, not refused or dropped
            answers = []
            for reader, writer in held:
                writer.write(b'{"id": 1, "cmd": "status"}\n')
            for reader, writer in held:
                answers.append(json.loads(await reader.readline())["ok"])
                writer.close()
            served.append(settled(table.result))
            result = await dealing
            return (code, output, tablectl_s, answer_s, status, answers,
                    settled(result) - served[0])

    code, output, tablectl_s, answer_s, status, answers, rounds = asyncio.run(scenario())
    print(f"with {HELD} connections held: tablectl status took {tablectl_s:.2f} s (process "
          f"start included), a status round trip {answer_s * 1000:.1f} ms (shared machine)")
    assert code == 0, output
    assert "SIM-BAC-01" in output
    assert status["table_id"] == "SIM-BAC-01"
    assert answer_s < ANSWER_WITHIN_S
    assert answers == [True] * HELD
    assert rounds >= 2  # and the table dealt on through it and after


def test_a_shoe_replugged_while_2000_connections_are_held_deals_on(tmp_path, descriptors):
    """The shoe is unplugged between rounds, 2,000 connections take every low descriptor
    number the daemon had free, and the shoe is plugged back in: the daemon opens it past
    1023, the table reopens by itself and deals three more rounds, every one correct."""
    async def scenario():  # noqa: ANN202
        async with TableHarness(CONFIG, tmp_path, seed=21, extra_overrides=[
                "access.max_connections_per_user=60000"]) as table:
            assert table.daemon is not None
            await table.play(until=lambda r: settled(r) >= 2)
            await table.wait_for_state("betting_open")
            await table.shoe.unplug()
            fault = await table.wait_for_state("device_fault")
            held = [await asyncio.open_unix_connection(table.socket) for _ in range(HELD)]
            try:
                await table.call("status")  # every held one accepted before the replug
                await table.shoe.replug()
                resumed = await table.wait_for_state("betting_open")
                port_fds = descriptors_on(table.shoe.port, table.daemon.pid)
                await table.resync()
                await table.play(until=lambda r: settled(r) >= 5)
            finally:
                for _, writer in held:
                    writer.close()
            return fault, resumed, port_fds, await table.call("rounds", limit=100)

    fault, resumed, port_fds, stored = asyncio.run(scenario())
    log = (tmp_path / "tabled.log").read_text(errors="replace")
    print(f"shoe reopened on descriptor {port_fds} with {HELD} connections held; "
          f"{len(log.splitlines())} log lines")
    assert fault["fault"]["device"] == "shoe"
    assert resumed["fault"] is None
    assert len(port_fds) == 1 and port_fds[0] >= 1024, port_fds
    assert "out of range" not in log and "Exception in callback" not in log
    assert all(check_round(r) == [] for r in stored)
    assert len([r for r in stored if r["state"] == "settled"]) >= 5
