"""Private shared servers for a pit campaign: a PostgreSQL cluster and a Mosquitto broker of
the campaign's own, in a scratch folder on free loopback ports, which it may stop, kill and
restart at will without touching the servers other programs on the machine use.

PostgreSQL refuses to run as root: when this runs as root, the cluster's folder is given to
the `postgres` user and the server programs are run as that user (`runuser`).
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

START_TIMEOUT_S = 60  # initdb and a first start on a loaded machine take a few seconds
PG_USER = "postgres"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, timeout_s: float = START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing answers on 127.0.0.1:{port} after {timeout_s} s")
            time.sleep(0.05)


def postgres_bindir() -> Path | None:
    """Where initdb and pg_ctl are (Debian keeps them out of PATH), or None."""
    found = shutil.which("pg_ctl")
    candidates = [Path(found).parent] if found else []
    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    for directory in candidates:
        if (directory / "initdb").exists() and (directory / "pg_ctl").exists():
            return directory
    return None


def private_servers_missing() -> str | None:
    """None when a private PostgreSQL and Mosquitto can be run here; otherwise why not."""
    if postgres_bindir() is None:
        return "PostgreSQL's initdb and pg_ctl are not installed (Debian: postgresql)"
    if shutil.which("mosquitto") is None and not Path("/usr/sbin/mosquitto").exists():
        return "Mosquitto is not installed (Debian: mosquitto)"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser to start PostgreSQL as its own user"
    return None


def require_private_servers() -> None:
    """For a test: skip with the reason when they cannot run here; under CI=true, fail."""
    import pytest

    why = private_servers_missing()
    if why is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true requires the pit's own servers: {why}")
    pytest.skip(why)


class PrivatePostgres:
    """`with PrivatePostgres() as pg: pg.dsn ...; pg.restart()`."""

    def __init__(self) -> None:
        bindir = postgres_bindir()
        if bindir is None:
            raise RuntimeError(private_servers_missing() or "no PostgreSQL")
        self.bindir = bindir
        # A folder of its own in /tmp: the server's user must reach it, and a caller's
        # scratch folder is often private to the caller.
        self.root = Path(tempfile.mkdtemp(prefix="tabled-pit-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        self.port = free_port()
        self.restarts = 0

    @property
    def dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} dbname=postgres user={PG_USER}"

    def _run(self, *args: str) -> None:
        command = [str(self.bindir / args[0]), *args[1:]]
        if os.geteuid() == 0:
            command = ["runuser", "-u", PG_USER, "--", *command]
        done = subprocess.run(command, capture_output=True, timeout=START_TIMEOUT_S)
        if done.returncode:
            raise RuntimeError(f"{args[0]} failed ({done.returncode}): "
                               f"{(done.stderr or done.stdout).decode(errors='replace')[-500:]}")

    def __enter__(self) -> PrivatePostgres:
        self.root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.root, PG_USER)
        self._run("initdb", "-D", str(self.data), "-U", PG_USER, "--auth=trust", "-E", "UTF8",
                  "--no-sync")
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop(mode="immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def start(self) -> None:
        # fsync off: a campaign's server is scratch; a crash of the machine loses nothing
        # the campaign needs. The socket in the cluster's own folder, not /run. Commit
        # timestamps: when each claim committed (hil/pit_race.py's checks of the forced hits).
        options = (f"-p {self.port} -k {self.data} -c listen_addresses=127.0.0.1 -c fsync=off"
                   " -c max_connections=200 -c track_commit_timestamp=on")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w",
                  "-t", str(START_TIMEOUT_S), "start")
        wait_for_port(self.port)

    def stop(self, mode: str = "fast") -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")
        except RuntimeError:
            pass  # not running

    def restart(self, mode: str = "immediate") -> None:
        """`immediate`: as a crash would (every session cut, recovery at the start)."""
        self.stop(mode)
        self.start()
        self.restarts += 1


class PrivateBroker:
    """A Mosquitto of the campaign's own, without persistence (a restart forgets every
    retained message: the worst case the tables must repair)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root or tempfile.mkdtemp(prefix="tabled-pit-mqtt-"))
        self.port = free_port()
        self.config = self.root / "mosquitto.conf"
        self.log = self.root / "mosquitto.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.restarts = 0

    def __enter__(self) -> PrivateBroker:
        self.root.mkdir(parents=True, exist_ok=True)
        self.config.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous true\n"
                               "persistence false\n", encoding="utf-8")
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()
        shutil.rmtree(self.root, ignore_errors=True)

    def start(self) -> None:
        program = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen([program, "-c", str(self.config)], stdout=log,
                                            stderr=subprocess.STDOUT)
        wait_for_port(self.port)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=START_TIMEOUT_S)
        self.process = None

    def restart(self) -> None:
        self.kill()
        self.start()
        self.restarts += 1
