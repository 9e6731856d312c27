"""The practice table's service controls: what a technician meets beyond the devices.

The practice page (hil/practice.py) puts these beside the devices' controls. They are
what happens to a table's service, its store and its witness, as docs/technician-guide.md's
drills describe them: the shoe flashed with old firmware, another program holding the
seat pins, the service stopped and started (the practice harness owns the daemon process
as systemd does: SIGTERM, then a new `tabled` on the same store, never initialising
one), the store's hash chain damaged without the key, a backup put back in place of a
newer store, the witness unreachable, a table that was never initialised. The
technician's part (`tablectl`, `tabled --init-store`, `tabled --clear-store`, the restore's
`rm` and `cp`) is left to the technician, exactly as the guide lists it.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import sqlite3
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from hil.practice_actions import Action, PracticeError

APPROVED_FIRMWARE = ("shoe-sim 1.0", None)  # None: the protocol version this host speaks
OLD_FIRMWARE = ("shoe-fw 0.9", 0)
EVIDENCE_DIR = "evidence"  # beside the store: where the technician keeps the damaged copy
BACKUP_DIR = "backup"


def store_files(workdir: Path) -> list[Path]:
    """The store, its sidecar files and its critical-memory directory (docs/deployment.md,
    "Critical memory"): what a backup holds and what a restore puts back."""
    from controller.memory.lifecycle import paths_for

    store = workdir / "table.sqlite"
    return [store, store.with_name(store.name + "-wal"), store.with_name(store.name + "-shm"),
            paths_for(str(store)).directory]


def copy_store(source: Path, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for path in store_files(source):
        if path.is_dir():
            shutil.copytree(path, target / path.name, dirs_exist_ok=True)
        elif path.exists():
            shutil.copy2(path, target / path.name)


def remove_store(workdir: Path) -> None:
    """Every file of the store, its sidecars too: SQLite reads a WAL it finds beside a store
    as part of it, so one left from a damaged store would be read into a restored one."""
    for path in store_files(workdir):
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)


def restore_store(backup: Path, workdir: Path) -> None:
    remove_store(workdir)
    copy_store(backup, workdir)


def tamper(store: str, *, latest: bool = False) -> int:
    """Edit one card in the log as a fraudster with SQLite would (no key: the entry's MAC
    stays as it was), so the chain must break; returns the entry's number. The fourth card
    of the log, or with `latest` the last card dealt."""
    db = sqlite3.connect(store)
    try:
        seq = db.execute("SELECT seq FROM events WHERE kind = 'card' ORDER BY seq "
                         + ("DESC LIMIT 1" if latest else "LIMIT 1 OFFSET 3")).fetchone()[0]
        payload = db.execute("SELECT payload FROM events WHERE seq = ?", (seq,)).fetchone()[0]
        db.execute("UPDATE events SET payload = ? WHERE seq = ?",
                   (re.sub(r'"card":"[^"]+"', '"card":"9D"', payload), seq))
        db.commit()
    finally:
        db.close()
    return int(seq)


class PracticeWitness:
    """The simulated witness the HIL tests use (hil/witness_sim.py: a schema of its own on
    the local PostgreSQL) behind a proxy that can be cut: the witness taken down for this
    table only, and brought back."""

    def __init__(self) -> None:
        from hil.cuttable_proxy import CuttableProxy
        from hil.witness_sim import PG_HOST, PG_PORT

        self.proxy = CuttableProxy((PG_HOST, PG_PORT))
        self.witnesses: list[Any] = []  # every schema set up here, dropped at close()
        self.down = False

    @property
    def current(self) -> Any:
        return self.witnesses[-1]

    def set_up(self, table_id: str) -> list[str]:
        """A witness that has never heard of `table_id` (the casino's `tablewitness setup` and
        `add-table`); the table's `--set` overrides, through the proxy."""
        from hil.witness_sim import PG_PORT, SimulatedWitness

        witness = SimulatedWitness()
        self.witnesses.append(witness)
        return [o.replace(f"port={PG_PORT}", f"port={self.proxy.port}")
                for o in witness.set_up(table_id)]

    def take_down(self) -> None:
        self.proxy.cut()
        self.down = True

    def bring_back(self) -> None:
        self.proxy.restore()
        self.down = False

    def verify(self, table_id: str, store_path: str) -> str:
        """`tablewitness verify --table ID --store PATH` against the table's witness now."""
        return str(self.current.verify(table_id, store_path))

    def close(self) -> None:
        self.proxy.close()
        for witness in self.witnesses:
            witness.drop()

    drop = close  # as hil.witness_sim.SimulatedWitness is dropped at the end of a run


class ServiceControls:
    """The table's service, store and witness, as the practice page's buttons."""

    def __init__(self, harness: Any, witness: PracticeWitness | None = None) -> None:
        self.h = harness
        self.witness = witness
        self.workdir = Path(harness.workdir)
        self.backup = self.workdir / BACKUP_DIR
        self.holder: asyncio.subprocess.Process | None = None
        self.actions = [
            Action("/firmware/old", "Flash the shoe with old firmware (protocol version 0)",
                   self._flash(*OLD_FIRMWARE)),
            Action("/firmware/approved", "Flash the shoe back with approved firmware",
                   self._flash(*APPROVED_FIRMWARE)),
            Action("/gpio/hold", "Let another program hold the seat pins", self.hold_pins),
            Action("/gpio/free", "End that program: free the seat pins", self.free_pins),
            Action("/service/stop", "Stop the table's service (systemctl stop tabled)",
                   self.stop),
            Action("/service/start", "Start the table's service (systemctl start tabled)",
                   self.start),
            Action("/service/restart", "Restart the table's service (systemctl restart "
                   "tabled)", self.restart),
            Action("/store/backup", "Back up the store (the service stopped for the copy)",
                   self.back_up),
            Action("/store/damage", "Damage the store's hash chain (the service stopped, "
                   "the store backed up, a card in the log altered without the key, the "
                   "service started)", self.damage),
            Action("/store/rollback", "Put the backup back in place of the newer store "
                   "(with its table.critical)", self.roll_back),
            Action("/witness/down", "Take the witness down", self._witness(True)),
            Action("/witness/up", "Bring the witness back", self._witness(False)),
            Action("/table/new", "A table never initialised (the service stopped, no store "
                   "and no key, the service started)", self.new_table),
        ]

    # --- the shoe's firmware ----------------------------------------------------------

    def _flash(self, version: str, protocol: int | None
               ) -> Callable[[dict[str, str]], Awaitable[str]]:
        async def act(form: dict[str, str]) -> str:
            from firmware_bridge import messages as wire

            shoe = self.h.shoe
            if not shoe.plugged_in:
                raise PracticeError("the shoe's cable is out: plug it back in to flash it")
            # Flashing ends with the device restarting on its new firmware: a new session
            # on the same port, with the new Hello (docs/protocol.md 4.4, H1 and H2).
            shoe.firmware_version = version
            shoe.protocol_version = wire.PROTOCOL_VERSION if protocol is None else protocol
            await shoe.stop_answering()
            await shoe.resume_answering()
            return (f"the shoe restarted on firmware {version} (protocol version "
                    f"{shoe.protocol_version})")
        return act

    # --- the seat pins ------------------------------------------------------------------

    def _seat_pins(self) -> list[int]:
        gpio = self.h.table_config.gpio
        return sorted({gpio.lockout_pin, *(w.sensor_pin for w in gpio.seats),
                       *(w.led_pin for w in gpio.seats)})

    async def hold_pins(self, form: dict[str, str]) -> str:
        """Another program (its own process, as a left-over test script would be) claims
        the seat pins; the daemon claims them only at its start."""
        if self.holder is not None:
            raise PracticeError("another program holds the seat pins already")
        pins = self._seat_pins()
        holder = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "hil.mock_pins", "hold", self.h.gpio_socket,
            *map(str, pins), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT, cwd=Path(__file__).resolve().parents[1])
        assert holder.stdout is not None
        answer = (await asyncio.wait_for(holder.stdout.readline(), 30)).decode().strip()
        if not answer.startswith("holding"):
            await holder.wait()
            raise PracticeError(f"the other program could not take the pins: {answer}; "
                                "the table's service holds them while it runs: stop it first")
        self.holder = holder
        return f"another program (pid {holder.pid}) is {answer}"

    async def free_pins(self, form: dict[str, str]) -> str:
        holder, self.holder = self.holder, None
        if holder is None:
            raise PracticeError("no other program holds the seat pins")
        assert holder.stdin is not None
        holder.stdin.close()  # it ends at the end of its input; its lines are freed
        await asyncio.wait_for(holder.wait(), 30)
        return "the other program ended: the seat pins are free (the daemon claims them " \
               "at its next start)"

    async def close(self) -> None:
        """The practice ends: the other program, if it still holds the pins, ends too."""
        if self.holder is not None:
            await self.free_pins({})

    # --- the service ----------------------------------------------------------------------

    @property
    def running(self) -> bool:
        daemon = self.h.daemon
        return daemon is not None and daemon.returncode is None

    async def stop(self, form: dict[str, str] | None = None) -> str:
        if not self.running:
            raise PracticeError("the table's service is not running")
        code = await self.h.stop_daemon()
        return f"the table's service stopped (tabled exited with {code})"

    async def start(self, form: dict[str, str] | None = None) -> str:
        """As systemd starts it: `tabled` on the store in place, never making one; ready when
        its control socket answers (the devices come up by themselves)."""
        if self.running:
            raise PracticeError("the table's service is running already")
        # The harness connects to the pin bridge only if the daemon could claim the pins.
        self.h.gpio_claimed = self.holder is None
        try:
            await self.h.start_daemon(initialise=False)
        except (RuntimeError, TimeoutError) as exc:
            raise PracticeError(f"the table's service did not start: {exc}") from exc
        head = await self.h.call("events", limit=1)
        if (head[-1]["seq"] if head else 0) < self.h.last_seq:
            await self.h.follow_a_new_log()  # a new store (initialised, or cleared)
        status = await self.h.call("status")
        return f"the table's service started: the table is {status['state']}"

    async def restart(self, form: dict[str, str] | None = None) -> str:
        await self.stop()
        return await self.start()

    # --- the store --------------------------------------------------------------------------

    async def _while_stopped(self, work: Callable[[], str]) -> str:
        if self.running:
            await self.stop()
        said = work()
        started = await self.start()
        return f"{said}; {started}"

    def _copy_to_backup(self) -> str:
        shutil.rmtree(self.backup, ignore_errors=True)
        copy_store(self.workdir, self.backup)
        return f"the store and its table.critical are backed up in {self.backup}"

    async def back_up(self, form: dict[str, str]) -> str:
        return await self._while_stopped(self._copy_to_backup)

    async def damage(self, form: dict[str, str]) -> str:
        """The night's backup is taken with the service stopped, then someone alters the
        stopped store: a backup that reaches the witnessed head, to restore from."""
        def alter() -> str:
            backed_up = self._copy_to_backup()
            seq = tamper(str(self.workdir / "table.sqlite"), latest=True)
            return (f"{backed_up}; then log entry {seq} (the last card dealt) was altered "
                    "without the key")
        return await self._while_stopped(alter)

    async def roll_back(self, form: dict[str, str]) -> str:
        if not (self.backup / "table.sqlite").exists():
            raise PracticeError(f"no backup in {self.backup} yet: Back up the store first")

        def put_back() -> str:
            restore_store(self.backup, self.workdir)
            return f"the backup in {self.backup} is back in place of the store"
        return await self._while_stopped(put_back)

    async def new_table(self, form: dict[str, str]) -> str:
        """A table as delivered: no store, no key. With a witness, the casino has set up a
        witness that has never heard of it (docs/deployment.md, "The witness")."""
        def clear() -> str:
            remove_store(self.workdir)
            said = f"no store and no key in {self.workdir}"
            if self.witness is not None:
                fresh = self.witness.set_up(self.h.table_config.table_id)
                self.h.extra_overrides = [o for o in self.h.extra_overrides
                                          if not o.startswith("witness.")] + fresh
                said += "; a new witness is set up for it"
            return said
        said = await self._while_stopped(clear)
        return f"{said}. Initialise it: {self.init_command()}"

    def init_command(self) -> str:
        return self.command("--init-store")

    def command(self, *options: str) -> str:
        """The exact `tabled` line of this table's service (its --set overrides), with
        `options` after it: what `--init-store` and `--clear-store` are added to."""
        import shlex

        return " ".join(map(shlex.quote, self.h.tabled_command(*options)))

    # --- the witness ------------------------------------------------------------------------

    def _witness(self, down: bool) -> Callable[[dict[str, str]], Awaitable[str]]:
        async def act(form: dict[str, str]) -> str:
            if self.witness is None:
                raise PracticeError("this practice table has no witness (no PostgreSQL on "
                                    "127.0.0.1:5432 when it started)")
            if down:
                self.witness.take_down()
                return "the witness does not answer this table any more"
            self.witness.bring_back()
            return "the witness answers again"
        return act
