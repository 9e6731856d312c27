"""The technician guide's drills that need the table's service, its store or its witness,
on the practice table, as a technician follows them there.

The practice table is `./run-simulated-table --practice` (hil/run.py): the real daemon on
simulated devices after one shoe, with the page of controls (hil/practice.py,
hil/practice_service.py) and, when PostgreSQL answers on 127.0.0.1:5432, the simulated
witness the HIL tests use behind a proxy the page can cut. Each test is one drill of
docs/technician-guide.md: the page's button, then the `tablectl` commands (and the
`tabled` and shell lines) the guide lists, held to what the guide shows, then the
recovery the guide gives, ending with a round dealt on the table. The drills run in the
guide's order on one table, each leaving it playing for the next.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from hil.practice import PracticeControls, PracticePage
from hil.practice_drill import Practice
from hil.practice_service import BACKUP_DIR, EVIDENCE_DIR, PracticeWitness
from hil.table_harness import TableHarness
from hil.witness_sim import PG_HOST, PG_PORT, postgres_answers

pytestmark = [pytest.mark.hil, pytest.mark.timeout(300),
              pytest.mark.asyncio(loop_scope="module")]

ROOT = Path(__file__).parents[1]
CONFIG = ROOT / "config" / "simulated-table.toml"
GUIDE = ROOT / "docs" / "technician-guide.md"
TABLE_ID = "SIM-BAC-01"
SEED = 7
PIN = "2468"  # the simulated table's supervisor "floor" (config/simulated-table.toml)


class ServicePractice(Practice):
    def __init__(self, table: TableHarness, page: PracticePage,
                 witness: PracticeWitness | None) -> None:
        super().__init__(table, page)
        self.witness = witness
        self.workdir = Path(table.workdir)

    async def plays_a_round(self) -> None:
        """The end of every drill: the simulated dealer deals a round on the table, which
        settles, and the table is back to taking wagers with no fault."""
        answer = await self.press("/deal/round")
        assert re.fullmatch(r"round \d+ settled: (BANKER|PLAYER|TIE)", answer), answer
        code, out = await self.tablectl("status")
        assert code == 0, out
        assert out.splitlines()[0] == f"Table {TABLE_ID}: BETTING OPEN"
        assert "FAULT" not in out and "OUT OF ORDER" not in out

    async def tabled(self, *options: str, stdin: str | None = None) -> tuple[int, str]:
        """The table's own `tabled` line (what its service runs) with `options`, as the
        technician runs it by hand with the service stopped."""
        proc = await asyncio.create_subprocess_exec(
            *self.table.tabled_command(*options), stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin else b""), 120)
        assert proc.returncode is not None
        return proc.returncode, out.decode()

    async def witness_link(self) -> dict[str, Any]:
        return dict((await self.table.call("status"))["witness"])

    def needs_the_witness(self) -> PracticeWitness:
        from tests.progressive.conftest import service_required

        service_required("PostgreSQL", PG_HOST, PG_PORT)
        assert self.witness is not None, "PostgreSQL answers, yet the practice table has no witness"
        return self.witness


def flat(text: str) -> str:
    """Output with its wrapping undone (the guide's lines are wrapped at 80 columns)."""
    return " ".join(text.split())


def guide_commands(heading: str) -> list[str]:
    """The shell lines of the first ```sh block under `heading` in the technician guide,
    without their comments: the steps as the guide writes them."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text[text.index(heading):]
    block = section[section.index("```sh\n") + len("```sh\n"):]
    block = block[:block.index("```")]
    return [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def practice(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ServicePractice]:
    """As ./run-simulated-table --practice starts it: a witness when PostgreSQL answers."""
    witness = PracticeWitness() if postgres_answers() is None else None
    try:
        overrides = witness.set_up(TABLE_ID) if witness is not None else []
        async with TableHarness(CONFIG, tmp_path_factory.mktemp("practice-service"), seed=SEED,
                                extra_overrides=overrides) as table:
            await table.play(shoes=1)
            page = PracticePage(PracticeControls(table, seed=SEED, witness=witness))
            await page.start()
            try:
                yield ServicePractice(table, page, witness)
            finally:
                await page.close()
    finally:
        if witness is not None:
            witness.close()


async def test_the_page_lists_the_service_controls(practice: ServicePractice) -> None:
    page = practice.page.page()
    for path in ("/firmware/old", "/firmware/approved", "/gpio/hold", "/gpio/free",
                 "/service/stop", "/service/start", "/service/restart", "/store/backup",
                 "/store/damage", "/store/rollback", "/witness/down", "/witness/up",
                 "/table/new", "/deal/round"):
        assert f'action="{path}"' in page
    assert "--set store.path=" in page  # the service's own line, for --init-store


async def test_drill_wrong_firmware_version(practice: ServicePractice) -> None:
    """Guide, "Wrong firmware version" and its common-faults row: `devices` shows the shoe
    refused with the version it speaks, `events` the fault and its action, `status` the
    fault; flashed back, the shoe is up at its first restart and the table resumes."""
    before = (await practice.table.call("status"))["state"]
    port = practice.table.shoe.port
    assert await practice.press("/firmware/old") == \
        "the shoe restarted on firmware shoe-fw 0.9 (protocol version 0)"

    async def refused() -> bool:
        devices = await practice.table.call("devices")
        return next(d for d in devices if d["device"] == "shoe")["link"] == "refused"
    await practice.until("the shoe refused", refused)
    await practice.state("device_fault")
    code, out = await practice.tablectl("devices")
    assert code == 4, out
    assert out.splitlines()[1].split() == ["shoe", "refused", port, "SIM-SHOE-0001", "shoe-fw",
                                           "0.9"]
    assert "shoe last error: incompatible protocol version: shoe speaks version 0, this host " \
        "speaks version 1" in flat(out)
    assert flat(out).endswith("NOT UP: shoe (refused) - wrong firmware or protocol version: "
                              "install approved firmware or connect the right device "
                              "('tablectl status' shows the action)")
    action = (f"Install approved firmware speaking protocol version 1 on the shoe (or connect "
              f"the right device to {port}); the table connects as soon as the device "
              "restarts, and re-checks every 30 s.")
    code, out = await practice.tablectl("events", "--kind", "device_fault", "--limit", "1")
    assert code == 0, out
    assert flat(out).endswith(
        f"error shoe device_fault action={action} code=incompatible_device detail="
        "incompatible protocol version: shoe speaks version 0, this host speaks version 1 "
        "1 event(s)")
    code, out = await practice.tablectl("status")
    assert code == 4, out
    assert flat(out).endswith(
        "FAULT: shoe: incompatible protocol version: shoe speaks version 0, this host speaks "
        f"version 1 [incompatible_device] Action: {action}")

    assert await practice.press("/firmware/approved") == \
        "the shoe restarted on firmware shoe-sim 1.0 (protocol version 1)"
    await practice.state(before)
    code, out = await practice.tablectl("devices")
    assert code == 0, out
    assert out.splitlines()[1].split() == ["shoe", "up", port, "SIM-SHOE-0001", "shoe-sim",
                                           "1.0"]
    await practice.plays_a_round()


async def test_drill_seat_pins_unavailable(practice: ServicePractice) -> None:
    """Guide, common faults, seat pins unavailable: another program holds the pins when the
    service starts. `devices` shows the seats refused with the pin factory's error,
    `events` the warning, `test sensors` the failed self-test; the main game is not
    stopped. With the program ended and the service restarted, the seats are up and the
    lock-out button deals a round again."""
    refused = await practice.press("/gpio/hold", answer=409)
    assert refused == ("refused: the other program could not take the pins: refused: GPIO2 is "
                       "held by another program already; the table's service holds them while "
                       "it runs: stop it first")
    before = (await practice.table.call("status"))["state"]
    await practice.press("/service/stop")
    assert (await practice.press("/gpio/hold")).endswith("is holding GPIO2, GPIO3, GPIO4, GPIO5, "
                                                         "GPIO6, GPIO7, GPIO8, GPIO9, GPIO10, "
                                                         "GPIO11, GPIO12, GPIO13, GPIO16, GPIO17, "
                                                         "GPIO18, GPIO19, GPIO20, GPIO21, GPIO22, "
                                                         "GPIO23, GPIO26")
    assert await practice.press("/service/start") == \
        f"the table's service started: the table is {before}"
    why = "GPIOPinInUse: GPIO busy: GPIO2 is held by another program"

    async def seats_refused() -> bool:
        devices = await practice.table.call("devices")
        return next(d for d in devices if d["device"] == "seats")["link"] == "refused"
    await practice.until("the seats refused", seats_refused)
    code, out = await practice.tablectl("devices")
    assert code == 4, out
    assert out.splitlines()[2].split()[:2] == ["seats", "refused"]
    assert f"seats last error: {why}" in flat(out)
    assert flat(out).endswith("NOT UP: seats (refused) - the seat pins could not be claimed: "
                              "fix gpio.pin_factory or stop the program holding them, then "
                              "restart the table service")
    code, out = await practice.tablectl("events", "--device", "seats", "--kind",
                                        "device_fault", "--limit", "1")
    assert code == 0, out
    assert flat(out).endswith(
        "warning seats device_fault action=Check gpio.pin_factory (lgpio on a Pi) and that no "
        "other program holds the seat pins; then restart the table service. "
        f"code=gpio_unavailable detail={why} 1 event(s)")
    code, out = await practice.tablectl("test", "sensors", "--timeout", "3")
    assert code == 1, out
    assert out.splitlines()[0] == f"seats self-test: FAIL - GPIO not available: {why}"
    assert await practice.press("/button", answer=409) == (
        "refused: the daemon does not hold the seat pins (its service is stopped, or another "
        "program held them at its start): nothing at the seats reaches the table")
    code, out = await practice.tablectl("status")  # a warning: the main game is not stopped
    assert code == 0, out
    assert out.splitlines()[0] == f"Table {TABLE_ID}: {before.replace('_', ' ').upper()}"

    assert (await practice.press("/gpio/free")).startswith("the other program ended")
    await practice.press("/service/restart")
    code, out = await practice.tablectl("devices")
    assert code == 0, out
    assert out.splitlines()[2].split()[:2] == ["seats", "up"]
    await practice.plays_a_round()  # the lock-out button, through the claimed pins


async def test_drill_daemon_not_running(practice: ServicePractice) -> None:
    """Guide, "Daemon not running": with the service stopped every command says so, with
    the socket it looked for and where to look next (exit 3); started, the table is where
    it was."""
    before = (await practice.table.call("status"))["state"]
    assert (await practice.press("/service/stop")) == \
        "the table's service stopped (tabled exited with 0)"
    code, out = await practice.tablectl("status")
    assert code == 3, out
    assert flat(out) == (
        "tablectl: the daemon is not running: there is no control socket at "
        f"{practice.table.socket} (if tabled uses another socket, pass --socket PATH or set "
        "TABLECTL_SOCKET) Check the service: systemctl status tabled Recent daemon log: "
        "journalctl -u tabled -n 50")
    code, out = await practice.tablectl("devices")
    assert code == 3, out
    assert await practice.press("/service/start") == \
        f"the table's service started: the table is {before}"
    await practice.plays_a_round()


async def test_drill_broken_hash_chain(practice: ServicePractice) -> None:
    """Guide, "Broken hash chain (critical memory check failed)": a card in the stopped
    store altered without the key; the table comes up out of order saying which entry;
    with the service stopped the offline check says the same; the evidence is copied and
    the store restored from its backup by the guide's own lines; the table comes back
    where the backup left it and plays."""
    before = (await practice.table.call("status"))["state"]
    answer = await practice.press("/store/damage")
    match = re.fullmatch(r"the store and its table\.critical are backed up in (\S+); then log "
                         r"entry (\d+) \(the last card dealt\) was altered without the key; "
                         r"the table's service started: the table is out_of_order", answer)
    assert match is not None, answer
    backup, seq = Path(match[1]), int(match[2])
    assert backup == practice.workdir / BACKUP_DIR
    failed = f"event chain: entry {seq} (card) was altered: its MAC does not match its contents"
    code, out = await practice.tablectl("status")
    assert code == 5, out
    assert out.splitlines()[0] == f"Table {TABLE_ID}: OUT OF ORDER"
    assert f"OUT OF ORDER: {failed} Action: do not play: the event log or the database failed " \
        "its integrity check." in flat(out)
    code, out = await practice.tablectl("events", "verify")
    assert code == 5, out
    assert flat(out).startswith(f"CRITICAL MEMORY CHECK FAILED (daemon on "
                                f"{practice.table.socket}) {failed}")

    # "With the daemon down, check the store file directly".
    await practice.press("/service/stop")
    store = practice.table.store_path
    code, out = await practice.tablectl("events", "verify", "--store", store)
    assert code == 5, out
    assert flat(out).startswith(f"CRITICAL MEMORY CHECK FAILED ({store}) {failed} Action: "
                                "the store was edited, damaged, lost or rolled back. Do not "
                                "play"), out
    # "Copy /var/lib/tabled (the store, its -wal file and table.critical) before anything
    # else is done".
    evidence = practice.workdir / EVIDENCE_DIR
    evidence.mkdir()
    for path in practice.workdir.iterdir():
        if path.name.startswith("table.sqlite") or path.name == "table.critical":
            (shutil.copytree if path.is_dir() else shutil.copy2)(path, evidence / path.name)

    # "Restoring the store from its backup", line by line as the guide writes it.
    lines = guide_commands("**Restoring the store from its backup.**")
    assert lines == [
        "sudo systemctl stop tabled", "cd /var/lib/tabled",
        "sudo rm -rf table.sqlite table.sqlite-wal table.sqlite-shm table.critical",
        "sudo cp -a /path/to/backup/table.sqlite* /path/to/backup/table.critical .",
        "sudo -u tabled tablectl events verify --full --store /var/lib/tabled/table.sqlite",
        "sudo systemctl start tabled"]
    assert await practice.press("/service/stop", answer=409) == \
        "refused: the table's service is not running"  # stopped already, for the check
    for line in lines[2:4]:
        shell = await asyncio.create_subprocess_shell(
            line.removeprefix("sudo ").replace("/path/to/backup", str(backup)),
            cwd=practice.workdir)
        assert await shell.wait() == 0, line
    code, out = await practice.tablectl("events", "verify", "--full", "--store", store)
    assert code == 0, out
    assert flat(out).startswith("critical memory OK: ") and f"verified in {store}" in flat(out)
    started = await practice.press("/service/start")
    code, out = await practice.tablectl("status")
    assert started == f"the table's service started: the table is {before}", out
    assert code == 0, out
    assert re.search(r"history check: +passed \(\d+ entries", out), out
    code, out = await practice.tablectl("events", "verify", "--store",
                                        str(evidence / "table.sqlite"))
    assert code == 5 and f") {failed} Action: " in flat(out), out  # the evidence, kept
    await practice.plays_a_round()


async def test_drill_the_witness_down(practice: ServicePractice) -> None:
    """Guide, "The witness", down: play goes on, `status` says since when and how many heads
    wait in the outbox; back, the heads are sent in order and the witness holds the store's
    every head (the casino's `tablewitness verify --store`)."""
    witness = practice.needs_the_witness()
    assert (await practice.witness_link())["link"] == "up"
    await practice.press("/witness/down")
    await practice.plays_a_round()  # play goes on; its heads wait

    async def down() -> bool:
        return (await practice.witness_link())["link"] == "down"
    await practice.until("the witness seen down", down)
    code, out = await practice.tablectl("status")
    assert code == 0, out
    line = flat(out[out.index("Witness: "):])
    assert re.fullmatch(r"Witness: DOWN for \d\d:\d\d:\d\d: witness unreachable: .+; \d+ heads "
                        r"kept in the outbox", line), line
    assert int(line.split("; ")[-1].split()[0]) > 0

    await practice.press("/witness/up")

    # The link's return is itself logged (witness_up), a commit whose head follows the
    # drained outbox: `status` is read until it says every head is sent, as a technician
    # reads it again while it still says "N heads being sent".
    caught_up = re.compile(r"Witness: up; last witnessed commit \d+, log entry \d+ "
                           r"\(MAC [0-9a-f]+, state [0-9a-f]+\)")

    async def status_caught_up() -> bool:
        code, out = await practice.tablectl("status")
        assert code == 0, out
        return caught_up.fullmatch(flat(out[out.index("Witness: "):])) is not None
    await practice.until("status: the witness up with every head sent", status_caught_up)
    await practice.plays_a_round()
    verdict = witness.verify(TABLE_ID, practice.table.store_path)
    heads = int(re.search(r"(\d+) heads, every signature valid", verdict)[1])  # type: ignore[index]
    assert f"{heads} witnessed heads found in the store" in verdict, verdict


async def test_drill_the_table_out_of_order_for_the_witness(practice: ServicePractice) -> None:
    """Guide, "The witness", out of order for it: an older store put back with its whole
    table.critical is `store behind`; the backup does not reach the witnessed head, so a
    supervisor clears critical memory, which the witness records as a replaced store; the
    new store plays."""
    witness = practice.needs_the_witness()
    await practice.press("/store/backup")
    await practice.plays_a_round()  # the table moves on past the backup, witnessed

    async def witnessed() -> bool:
        return not (await practice.witness_link()).get("pending_heads")
    await practice.until("every head witnessed", witnessed)
    answer = await practice.press("/store/rollback")
    assert answer.endswith("the table's service started: the table is out_of_order"), answer
    code, out = await practice.tablectl("status")
    assert code == 5, out
    text = flat(out)
    assert re.search(r"OUT OF ORDER: witness: store behind: the store is at commit \d+, log "
                     r"entry \d+ \(MAC [0-9a-f]+, state [0-9a-f]+\) but the witness holds "
                     r"commit \d+, log entry \d+ \(MAC [0-9a-f]+, state [0-9a-f]+\), signed by "
                     r"this table: the store was rolled back or replaced Action: do not play; "
                     r"keep the store, its critical-memory directory and the witness's rows as "
                     r"evidence", text), out
    # The casino's check of a copy says the same; the backup does not reach the head either.
    copy = practice.workdir / "copy-for-the-casino.sqlite"
    shutil.copy2(practice.table.store_path, copy)
    assert "behind" in witness.verify(TABLE_ID, str(copy))

    await practice.press("/service/stop")
    code, out = await practice.tabled("--clear-store", "--supervisor", "floor", "--reason",
                                      "store behind the witness", "--pin-stdin", stdin=PIN + "\n")
    assert code == 0, out
    assert re.search(rf"tabled: critical memory of table {TABLE_ID} cleared by floor; the old "
                     r"files are kept in \S+table\.sqlite\.cleared-\d{8}T\d{6}Z", out), out
    assert await practice.press("/service/start") == \
        "the table's service started: the table is closed"
    code, out = await practice.tablectl("status")
    assert code == 0, out
    assert out.splitlines()[0] == f"Table {TABLE_ID}: CLOSED"
    assert "Witness: up; " in out
    await practice.plays_a_round()
    verdict = witness.verify(TABLE_ID, practice.table.store_path)
    assert "replaced" in verdict, verdict


async def test_drill_a_table_never_initialised(practice: ServicePractice) -> None:
    """Guide, common faults, table never initialised: `status` says so (exit 5) and what
    to do; `tabled --init-store` once, the service restarted, and the new table plays."""
    answer = await practice.press("/table/new")
    command = practice.page.controls.service.init_command()
    assert answer.endswith(f"the table's service started: the table is out_of_order. "
                           f"Initialise it: {command}"), answer
    store = practice.table.store_path
    code, out = await practice.tablectl("status")
    assert code == 5, out
    assert flat(out).endswith(
        f"OUT OF ORDER: not initialised: no store at {store} and no key at "
        f"{practice.workdir / 'table.critical' / 'key'} Action: a new table: initialise its "
        "critical memory once with 'tabled --config FILE --init-store' (docs/deployment.md), "
        "as the daemon's user; then restart the table service (sudo systemctl restart "
        "tabled)")
    code, out = await practice.tabled("--init-store")
    assert code == 0, out
    assert out.strip().endswith(
        f"tabled: critical memory of table {TABLE_ID} initialised: store {store}, key and "
        f"anchor in {practice.workdir / 'table.critical'}")
    assert await practice.press("/service/restart") == \
        "the table's service started: the table is closed"
    code, out = await practice.tablectl("status")
    assert code == 0, out
    assert out.splitlines()[0] == f"Table {TABLE_ID}: CLOSED"
    await practice.plays_a_round()
