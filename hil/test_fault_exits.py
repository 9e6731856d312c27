"""Issue 13's exits, taken through the daemon process and the simulated devices.

The shuffler's wedges once needed a daemon restart; each must now leave its fault by
the exit docs/faults.md gives it, with the table going on to the cut by itself. The two
faults whose only exit is a restart (gpio_unavailable, out_of_order) are taken the way
a technician does it: the cause is fixed with the daemon stopped, the table service is
started again, and the table must then work, not merely start.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from cards import Card
from controller.control import ControlError
from hil.practice_service import copy_store, restore_store
from hil.table_harness import TableHarness
from hil.tablectl_process import run_tablectl

pytestmark = [pytest.mark.hil, pytest.mark.timeout(300)]

CONFIG = Path(__file__).parents[1] / "config" / "simulated-table.toml"
SUPERVISOR = {"supervisor": "floor", "pin": "2468"}  # config/simulated-table.toml


async def shuffle_fault(table: TableHarness, **shuffle_args: str) -> dict:
    await table.call("open")
    await table.call("shuffle", **shuffle_args)
    return await table.wait_for_state("device_fault")


async def acknowledge(table: TableHarness) -> dict:
    """The floor supervisor's acknowledgement: what it cleared and what still holds."""
    assert table.client is not None
    return (await table.client.call("acknowledge_fault", auth=SUPERVISOR))["acknowledgement"]


@pytest.mark.parametrize("exit_", ["technician", "supervisor"])
def test_681a_3_b_a_shuffle_asked_for_the_batch_not_in_the_shuffler_has_two_exits(
        tmp_path, exit_):
    """`tablectl test shuffler --shuffle red` while the shuffler holds blue: the technician's
    re-run with blue, or the supervisor's acknowledgement (the table then shuffles the batch
    the shuffler holds), ends the fault and the table reaches the cut."""
    async def scenario():
        async with TableHarness(CONFIG, tmp_path, seed=3) as table:
            assert table.shuffler("STATUS").startswith("held=BLUE")
            fault = await shuffle_fault(table, back="red")
            if exit_ == "technician":
                await table.call("shuffle", back="blue")
                answer = None
            else:
                answer = await acknowledge(table)
            cut = await table.wait_for_state("cut")
            return fault, answer, cut

    fault, answer, cut = asyncio.run(scenario())
    assert (fault["fault"]["device"], fault["fault"]["code"]) == (
        "shuffler", "shuffler_batch_missing")
    if answer is not None:
        assert [f["code"] for f in answer["cleared"]] == ["shuffler_batch_missing"]
        assert answer["still_held"] == []
    assert cut["fault"] is None
    assert cut["batches"]["shuffled"] == "blue"


def test_681a_9_c_an_incomplete_cycle_is_acknowledged_and_the_table_reshuffles(tmp_path):
    """The field wedge: after the fault the table sat in SHUFFLING with nothing running."""
    async def scenario():
        async with TableHarness(CONFIG, tmp_path, seed=4) as table:
            table.shuffler("INCOMPLETE 30")
            fault = await shuffle_fault(table)
            answer = await acknowledge(table)
            cut = await table.wait_for_state("cut")
            return fault, answer, cut, await table.call("events", kind="prompt", limit=5)

    fault, answer, cut, prompts = asyncio.run(scenario())
    assert fault["fault"]["code"] == "shuffler_cycle_incomplete"
    assert [f["code"] for f in answer["cleared"]] == ["shuffler_cycle_incomplete"]
    assert [p["payload"]["action"] for p in prompts][-2:] == ["reshuffle", "cut"]
    assert cut["fault"] is None


def test_681a_9_c_a_jam_held_after_the_acknowledgement_says_what_clears_it(tmp_path):
    async def scenario():
        async with TableHarness(CONFIG, tmp_path, seed=5) as table:
            table.shuffler("JAM 25")
            fault = await shuffle_fault(table)
            answer = await acknowledge(table)
            still = await table.call("status")
            table.shuffler("CLEAR_JAM")
            cut = await table.wait_for_state("cut")
            return fault, answer, still, cut

    fault, answer, still, cut = asyncio.run(scenario())
    assert fault["fault"]["code"] == "shuffler_jam"
    assert answer["cleared"] == []
    assert answer["still_held"] == [{
        "device": "shuffler", "code": "shuffler_jam",
        "clears": "clear the jam (the shuffler reports it cleared), then the batch is "
                  "reshuffled (681a.9(c)); or a technician's verified shuffle"}]
    assert still["state"] == "device_fault"
    assert cut["fault"] is None


# --- the exits that are a restart ---------------------------------------------------------

# gpiozero's own MockFactory in place of the simulator's bridged one: a wrong
# gpio.pin_factory that the configuration check accepts (it imports) but that cannot
# take the table's factory options, so the pins cannot be claimed at start.
WRONG_PIN_FACTORY = "gpio.pin_factory=mock"


def test_gpio_unavailable_ends_when_the_pin_factory_is_fixed_and_the_table_restarts(tmp_path):
    async def scenario():
        async with TableHarness(CONFIG, tmp_path, seed=9, extra_overrides=[WRONG_PIN_FACTORY],
                                gpio_claimed=False) as table:
            devices = {d["device"]: d for d in await table.call("devices")}
            (fault,) = [e for e in await table.call("events", kind="device_fault")
                        if e["device"] == "seats"]
            refused_test = await table.call("self_test", device="seats")
            try:  # no LED can be lit: the light test says so instead of passing
                await table.call("light_test")
                refused_lights = ""
            except ControlError as exc:
                refused_lights = str(exc)
            # The seats never stop the main game: the table opens without them.
            opened = await table.call("open")

            def fix_the_pin_factory() -> None:
                table.extra_overrides.remove(WRONG_PIN_FACTORY)
                table.gpio_claimed = True

            await table.restart(fix_the_pin_factory)
            restarted = {d["device"]: d for d in await table.call("devices")}
            passed_test = await table.call("self_test", device="seats")
            mark = (await table.call("events", limit=1))[-1]["seq"]
            # `tablectl test sensors`: a chip on seat 3's spot and off again, betting closed.
            sensor = {w.seat: w.sensor_pin for w in table.table_config.gpio.seats}[3]
            table.pins.press(sensor)
            table.pins.release(sensor)
            seen = await table.wait_for_events("late_sensor_change", 2, after_seq=mark)
            return (devices, fault, refused_test, refused_lights, opened, restarted,
                    passed_test, seen, await table.call("status"))

    (devices, fault, refused_test, refused_lights, opened, restarted, passed_test, seen,
     status) = asyncio.run(scenario())
    why = "TypeError: MockFactory.__init__() got an unexpected keyword argument 'bridge_socket'"
    assert (devices["seats"]["link"], devices["seats"]["last_error"]) == ("refused", why)
    assert devices["shoe"]["link"] == "up"
    assert (fault["device"], fault["severity"]) == ("seats", "warning")
    assert fault["payload"] == {
        "code": "gpio_unavailable", "detail": why,
        "action": "Check gpio.pin_factory (lgpio on a Pi) and that no other program holds the "
                  "seat pins; then restart the table service."}
    # The technician's test of the seats is refused for as long as the pins are not held.
    assert refused_test == {"device": "seats", "passed": False,
                            "detail": f"GPIO not available: {why}"}
    assert refused_lights == (
        f"seat LEDs not driven: GPIO not available: {why}; fix the seats' wiring or "
        "gpio.pin_factory and restart the table service (docs/faults.md gpio_unavailable)")
    assert (opened["state"], opened["fault"]) == ("opening", None)
    # After the restart the pins are claimed: the seats are up and pass their test, and a
    # chip on a sensor reaches the table (late: betting is closed while the table opens).
    assert (restarted["seats"]["link"], restarted["seats"]["last_error"]) == ("up", "")
    assert passed_test == {"device": "seats", "passed": True,
                           "detail": "10 seats, LEDs and sensors ok"}
    assert [(e["device"], e["payload"]) for e in seen] == [
        ("seats", {"seat": 3, "present": True}), ("seats", {"seat": 3, "present": False})]
    assert (status["state"], status["fault"]) == ("opening", None)


def alter_first_wager(store: Path) -> int:
    """Someone edits a stopped store: the first accepted wager becomes $500 (the harness's
    players wager $5 to $100); returns the entry's number."""
    db = sqlite3.connect(store)
    try:
        seq, payload = db.execute("SELECT seq, payload FROM events WHERE kind = 'wager_accepted' "
                                  "ORDER BY seq LIMIT 1").fetchone()
        wager = json.loads(payload)
        assert wager["amount_cents"] != 50_000, wager
        altered = json.dumps({**wager, "amount_cents": 50_000}, separators=(",", ":"))
        db.execute("UPDATE events SET payload = ? WHERE seq = ?", (altered, seq))
        db.commit()
    finally:
        db.close()
    return int(seq)


# Player 5♥ 3♣ = 8, Banker 4♠ 5♦ = 9: both naturals, so no third card; Banker wins.
BANKER_NATURAL_NINE = [Card.parse(c) for c in ("5♥", "4♠", "3♣", "5♦")]
WAGERS = ((1, "banker", 10_000), (2, "player", 2_500), (3, "tie", 1_000))


async def deal_banker_natural_nine(table: TableHarness, wagers: Sequence[tuple[int, str, int]]
                                   ) -> tuple[dict[str, Any], dict[str, Any]]:
    """A round with known cards on a table open for bets: `wagers` (seat, wager, cents),
    the lock-out, BANKER_NATURAL_NINE from the shoe. The status after it and its record."""
    for seat, wager, cents in wagers:
        await table.call("place_wager", seat=seat, wager=wager, amount_cents=cents)
    await table.call("no_more_bets")
    table.shoe.insert_next(BANKER_NATURAL_NINE)
    for _ in BANKER_NATURAL_NINE:
        await table.shoe.draw()
    after = await table.wait_for_state("betting_open")
    (played,) = await table.call("rounds", limit=1)
    return after, played


def test_out_of_order_ends_when_the_store_is_restored_from_its_backup_and_the_table_restarts(
        tmp_path):
    workdir, backup, evidence = tmp_path / "table", tmp_path / "backup", tmp_path / "evidence"
    altered: list[int] = []

    async def scenario():
        async with TableHarness(CONFIG, workdir, seed=10) as table:
            await table.play(until=lambda result: len(result.rounds) >= 1)
            await table.wait_for_state("betting_open")

            def back_up_then_tamper() -> None:
                copy_store(workdir, backup)  # the backup, taken with the daemon stopped
                altered.append(alter_first_wager(workdir / "table.sqlite"))

            await table.restart(back_up_then_tamper)
            broken = await table.call("status")
            with pytest.raises(ControlError) as refused:
                await table.call("open")
            with pytest.raises(ControlError) as verify:
                await table.call("verify_chain")

            def restore_from_the_backup() -> None:
                copy_store(workdir, evidence)  # the damaged store is kept as evidence first
                restore_store(backup, workdir)

            await table.restart(restore_from_the_backup)
            restored = await table.call("status")
            verified = await table.call("verify_chain", full=True)
            # A round with known cards on the restored table.
            after, played = await deal_banker_natural_nine(table, WAGERS)
            return broken, str(refused.value), str(verify.value), restored, verified, after, played

    broken, refused, verify, restored, verified, after, played = asyncio.run(scenario())
    (seq,) = altered
    failed = (f"event chain: entry {seq} (wager_accepted) was altered: its MAC does not match "
              "its contents")
    assert (broken["state"], broken["out_of_order"]) == ("out_of_order", failed)
    assert refused == "not allowed while the table is out_of_order"
    assert verify == f"IntegrityError: {failed}"
    # The damaged store kept as evidence still fails the technician's offline check.
    code, output = asyncio.run(run_tablectl(
        ["events", "verify", "--store", str(evidence / "table.sqlite")], socket=None))
    assert code == 5
    assert output.splitlines()[:2] == [
        f"CRITICAL MEMORY CHECK FAILED ({evidence / 'table.sqlite'})", f"  {failed}"]
    # The restored store passes the boot check and a full check of every entry (the
    # anchor may lag the running table by up to a second, so how far is not asserted),
    # and the table is where the backup left it: round 1 settled, betting open for round 2.
    assert (restored["state"], restored["out_of_order"]) == ("betting_open", None)
    assert restored["round"]["round_no"] == 1
    assert (verified["from_seq"], verified["entries"]) == (1, verified["log_seq"])
    assert verified["log_seq"] > seq
    assert (after["state"], after["out_of_order"]) == ("betting_open", None)
    assert played["round_no"] == 2 and played["state"] == "settled"
    assert [c["card"] for c in played["cards"]] == ["5♥", "4♠", "3♣", "5♦"]
    assert (played["result"]["player_total"], played["result"]["banker_total"],
            played["result"]["winner"]) == (8, 9, "banker")
    assert sorted((s["seat"], s["wager"], s["amount_cents"], s["outcome"], s["net_cents"],
                   s["vigorish_cents"]) for s in played["settlements"]) == [
        (1, "banker", 10_000, "win", 9_500, 500),
        (2, "player", 2_500, "lose", -2_500, 0),
        (3, "tie", 1_000, "lose", -1_000, 0)]


def test_out_of_order_ends_when_a_supervisor_clears_the_store_and_the_table_restarts(tmp_path):
    """The other exit of out_of_order when no good backup exists: a floor supervisor clears
    critical memory (`tabled --clear-store`, with their PIN). The damaged store is kept as
    evidence, the new store opens with a record naming the failure and the old values, and
    the restarted table opens, deals and settles a round to the cent."""
    workdir = tmp_path / "table"
    altered: list[int] = []
    cleared: list[subprocess.CompletedProcess[str]] = []

    async def scenario():
        async with TableHarness(CONFIG, workdir, seed=10) as table:
            await table.play(until=lambda result: len(result.rounds) >= 1)
            await table.wait_for_state("betting_open")
            await table.restart(
                lambda: altered.append(alter_first_wager(workdir / "table.sqlite")))
            broken = await table.call("status")

            def clear_the_store() -> None:  # as the supervisor runs it, beside the unit
                cleared.append(subprocess.run(table.tabled_command(
                    "--clear-store", "--supervisor", "floor",
                    "--reason", "edited while stopped, no backup", "--pin-stdin"),
                    input="2468\n", capture_output=True, text=True, timeout=120))

            await table.restart(clear_the_store)
            await table.follow_a_new_log()
            fresh = await table.call("status")
            (record,) = await table.call("events", kind="critical_memory_cleared")
            verified = await table.call("verify_chain", full=True)
            # The dealer opens the new store's table and plays up to its first round; then a
            # round with known cards.
            await table.play(until=lambda result: len(result.rounds) >= 2)
            await table.wait_for_state("betting_open")
            after, played = await deal_banker_natural_nine(table, WAGERS[:2])
            return broken, fresh, record, verified, after, played

    broken, fresh, record, verified, after, played = asyncio.run(scenario())
    (seq,) = altered
    (run,) = cleared
    failed = (f"event chain: entry {seq} (wager_accepted) was altered: its MAC does not match "
              "its contents")
    assert (broken["state"], broken["out_of_order"]) == ("out_of_order", failed)
    assert run.returncode == 0, run.stderr
    assert "cleared by floor; the old files are kept in" in run.stdout
    evidence = Path(record["payload"]["evidence"])
    assert evidence.parent == workdir and (evidence / "table.sqlite").exists()
    assert (record["severity"], record["payload"]["supervisor"], record["payload"]["reason"],
            record["payload"]["failure"]) == (
        "critical", "floor", "edited while stopped, no backup", failed)
    # The new store starts from nothing but that record; the table is closed, not broken.
    assert (fresh["state"], fresh["out_of_order"]) == ("closed", None)
    assert (verified["from_seq"], verified["entries"]) == (1, verified["log_seq"])
    assert (after["state"], after["out_of_order"]) == ("betting_open", None)
    assert played["state"] == "settled"
    assert [c["card"] for c in played["cards"]] == ["5♥", "4♠", "3♣", "5♦"]
    assert sorted((s["seat"], s["wager"], s["amount_cents"], s["outcome"], s["net_cents"],
                   s["vigorish_cents"]) for s in played["settlements"]) == [
        (1, "banker", 10_000, "win", 9_500, 500),
        (2, "player", 2_500, "lose", -2_500, 0)]
