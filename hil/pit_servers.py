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
from collections.abc import Mapping
from dataclasses import dataclass
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
    if (broker := private_broker_missing()) is not None:
        return broker
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser to start PostgreSQL as its own user"
    return None


def private_broker_missing() -> str | None:
    """None when a private Mosquitto, with a password file, can be run here; otherwise why not."""
    if shutil.which("mosquitto") is None and not Path("/usr/sbin/mosquitto").exists():
        return "Mosquitto is not installed (Debian: mosquitto)"
    if shutil.which("mosquitto_passwd") is None and not Path("/usr/bin/mosquitto_passwd").exists():
        return "mosquitto_passwd is not installed (Debian: mosquitto)"
    return None


def require_private_servers(broker_only: bool = False) -> None:
    """For a test: skip with the reason when they cannot run here; under CI=true, fail."""
    import pytest

    why = private_broker_missing() if broker_only else private_servers_missing()
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


@dataclass(frozen=True)
class BrokerCertificates:
    """A CA of a test's own and a broker certificate it signed, as PEM."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes


def make_broker_certificates(hosts: tuple[str, ...] = ("127.0.0.1", "localhost")
                             ) -> BrokerCertificates:
    """A fresh CA and a certificate for `hosts` (addresses or names), valid for a day."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name("tabled test CA"))
          .issuer_name(name("tabled test CA")).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False,
                                       False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                         critical=False)
          .sign(ca_key, hashes.SHA256()))
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    cert = (x509.CertificateBuilder().subject_name(name(hosts[0])).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    return BrokerCertificates(
        ca.public_bytes(pem), cert.public_bytes(pem),
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                          serialization.NoEncryption()))


class PrivateBroker:
    """A Mosquitto of the campaign's own, without persistence (a restart forgets every
    retained message: the worst case the tables must repair). With `certificates` it speaks
    only TLS; with `passwords` (user: password) it lets in only those users."""

    def __init__(self, root: Path | None = None, *,
                 certificates: BrokerCertificates | None = None,
                 passwords: Mapping[str, str] | None = None) -> None:
        self.root = Path(root or tempfile.mkdtemp(prefix="tabled-pit-mqtt-"))
        self.certificates = certificates
        self.passwords = dict(passwords or {})
        self.port = free_port()
        self.config = self.root / "mosquitto.conf"
        self.log = self.root / "mosquitto.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.restarts = 0

    def __enter__(self) -> PrivateBroker:
        self.root.mkdir(parents=True, exist_ok=True)
        lines = [f"listener {self.port} 127.0.0.1", "persistence false"]
        if self.certificates is not None:
            for file, pem in (("broker.pem", self.certificates.cert_pem),
                              ("broker.key", self.certificates.key_pem)):
                (self.root / file).write_bytes(pem)
            lines += [f"certfile {self.root / 'broker.pem'}", f"keyfile {self.root / 'broker.key'}"]
        if self.passwords:
            self._write_password_file(self.root / "passwd")
            lines += [f"password_file {self.root / 'passwd'}", "allow_anonymous false"]
        else:
            lines.append("allow_anonymous true")
        if os.geteuid() == 0:
            # Mosquitto started as root drops to its own user before it reads the files
            # above; a scratch folder of the test's own is all it needs to read.
            self.root.chmod(0o755)
            for file in self.root.iterdir():
                file.chmod(0o644)
        self.config.write_text("\n".join(lines) + "\n", encoding="utf-8")
        self.start()
        return self

    def _write_password_file(self, path: Path) -> None:
        program = shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd"
        for user, password in self.passwords.items():
            create = [] if path.exists() else ["-c"]
            subprocess.run([program, *create, "-b", str(path), user, password], check=True,
                           capture_output=True, timeout=START_TIMEOUT_S)

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
